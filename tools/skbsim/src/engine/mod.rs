//! The streaming replay engine: frames flow from the pcap reader through a pipeline, and
//! every event goes at once to the sinks that were asked for, so nothing grows with the
//! number of frames (only the pipeline's own state does: tx_ring, GRO buckets, the vhost
//! ring). `run`, `bless`, `replay`, `conform` and `diff` all drive it.
//!
//! The sinks:
//! - the text trace ([`TraceOut`]): to a file, to a golden comparator that compares block
//!   by block and stops rendering after the first difference, or to memory (tests and
//!   `conform`, whose scenarios are small);
//! - the JSON trace ([`JsonOut`]): JSON Lines, a header line, one line per event, a totals
//!   line;
//! - the output capture ([`CaptureOut`]): a pcap writer, a golden capture comparator, or
//!   memory.
//!
//! Every pipeline's header, events and totals are built once as records
//! (`sim::trace::record`), and [`Sinks::record`] writes each into the sinks that want it
//! (the text, the JSON line, a copy kept for `conform`); a renderer builds no record when
//! no sink wants one ([`Sinks::wants_records`]). Every pipeline runs in the one loop of
//! [`drive`] (`sim::pipeline::Pipeline`: inputs in, events out); the modules
//! [`tun_read`], [`tap_write`], [`vhost_tx`] and [`tap_gro`] hold the renderer of each
//! pipeline's events (a [`drive::Render`]), used by the simulator and the real arms
//! alike. A new stage adds events, not sinks.

pub mod background;
pub mod capture;
pub mod drive;
pub mod summary;
pub mod tap_gro;
pub mod tap_write;
pub mod tun_read;
pub mod vhost_tx;

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sim::trace::diff::Divergence;
use sim::trace::diff_stream::StreamDiff;
use sim::trace::record::Record;

use crate::cli_error::CliError;

pub use capture::CaptureOut;

/// A byte destination: memory, or a writer the user named (a file, a FIFO, stdout).
pub enum Dest {
    Memory(Vec<u8>),
    Writer { w: Box<dyn Finish>, name: PathBuf },
}

impl std::fmt::Debug for Dest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dest::Memory(v) => write!(f, "Memory({} bytes)", v.len()),
            Dest::Writer { name, .. } => write!(f, "Writer({})", name.display()),
        }
    }
}

/// A writer that is done only when finished: flushed, and a file it created kept (dropped
/// unfinished, an [`crate::output::Output`] removes a file it created).
pub trait Finish: Write {
    fn finish(self: Box<Self>) -> io::Result<()>;
}

impl Finish for io::BufWriter<File> {
    fn finish(self: Box<Self>) -> io::Result<()> {
        let f = self.into_inner().map_err(|e| e.into_error())?;
        f.sync_all().or(Ok(()))
    }
}

impl Finish for crate::output::Output {
    /// The bare I/O error: [`Dest::finish`] names the output.
    fn finish(self: Box<Self>) -> io::Result<()> {
        crate::output::Output::finish(*self)
    }
}

impl Finish for io::BufWriter<io::Stdout> {
    fn finish(mut self: Box<Self>) -> io::Result<()> {
        self.flush()
    }
}

impl Write for Dest {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Dest::Memory(v) => {
                v.extend_from_slice(buf);
                Ok(buf.len())
            }
            Dest::Writer { w, .. } => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Dest::Memory(v) => {
                v.extend_from_slice(buf);
                Ok(())
            }
            Dest::Writer { w, .. } => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Dest::Memory(_) => Ok(()),
            Dest::Writer { w, .. } => w.flush(),
        }
    }
}

impl Dest {
    pub fn name(&self) -> &Path {
        match self {
            Dest::Memory(_) => Path::new("(memory)"),
            Dest::Writer { name, .. } => name,
        }
    }

    fn io_err(&self, e: io::Error) -> CliError {
        CliError(format!("{}: cannot write: {e}", self.name().display()))
    }

    /// Finish the writer; memory comes back.
    pub fn finish(self) -> Result<Vec<u8>, CliError> {
        match self {
            Dest::Memory(v) => Ok(v),
            Dest::Writer { w, name } => {
                w.finish()
                    .map_err(|e| CliError(format!("{}: cannot write: {e}", name.display())))?;
                Ok(Vec::new())
            }
        }
    }
}

/// The golden trace a replay is compared with, as it is rendered.
#[derive(Debug)]
pub struct GoldenTrace {
    pub path: PathBuf,
    diff: StreamDiff<BufReader<File>>,
}

impl GoldenTrace {
    /// Compare with `path`, leaving out `ignore` (the model-only fields for a real arm).
    pub fn open(path: &Path, ignore: &[&str]) -> Result<GoldenTrace, CliError> {
        let f = File::open(path)
            .map_err(|e| CliError(format!("{}: cannot read: {e}", path.display())))?;
        Ok(GoldenTrace {
            path: path.to_path_buf(),
            diff: StreamDiff::new(BufReader::with_capacity(64 * 1024, f), ignore),
        })
    }
}

/// The text trace sink.
#[derive(Debug, Default)]
pub struct TraceOut {
    /// The block being rendered; handed on and cleared after each event.
    pub buf: String,
    dest: Option<Dest>,
    golden: Option<GoldenTrace>,
}

impl TraceOut {
    /// No text trace.
    pub fn off() -> TraceOut {
        TraceOut::default()
    }

    pub fn to(dest: Dest) -> TraceOut {
        TraceOut {
            dest: Some(dest),
            ..TraceOut::default()
        }
    }

    pub fn compare(golden: GoldenTrace) -> TraceOut {
        TraceOut {
            golden: Some(golden),
            ..TraceOut::default()
        }
    }

    /// Whether anything still wants the text (a golden comparison that already found its
    /// difference does not).
    pub fn on(&self) -> bool {
        self.dest.is_some() || self.golden.as_ref().is_some_and(|g| !g.diff.diverged())
    }

    /// Hand the rendered text on.
    pub fn flush(&mut self) -> Result<(), CliError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(d) = self.dest.as_mut() {
            if let Err(e) = d.write_all(self.buf.as_bytes()) {
                return Err(d.io_err(e));
            }
        }
        if let Some(g) = self.golden.as_mut() {
            g.diff
                .push(&self.buf)
                .map_err(|e| CliError(format!("{}: cannot read: {e}", g.path.display())))?;
        }
        self.buf.clear();
        Ok(())
    }

    /// The end: what memory holds (tests, conform) and the golden verdict.
    pub fn finish(mut self) -> Result<(Vec<u8>, Option<TraceVerdict>), CliError> {
        self.flush()?;
        let bytes = match self.dest {
            Some(d) => d.finish()?,
            None => Vec::new(),
        };
        let verdict = match self.golden {
            None => None,
            Some(g) => {
                let (divergence, identical) = g
                    .diff
                    .finish()
                    .map_err(|e| CliError(format!("{}: cannot read: {e}", g.path.display())))?;
                Some(TraceVerdict {
                    path: g.path,
                    divergence,
                    identical,
                })
            }
        };
        Ok((bytes, verdict))
    }
}

/// How a rendered trace compared with its golden.
#[derive(Debug)]
pub struct TraceVerdict {
    pub path: PathBuf,
    pub divergence: Option<Divergence>,
    /// Every compared block was byte-identical.
    pub identical: bool,
}

/// The JSON Lines sink.
#[derive(Debug, Default)]
pub struct JsonOut {
    dest: Option<Dest>,
    /// The line being written, reused for every record.
    buf: Vec<u8>,
}

impl JsonOut {
    pub fn off() -> JsonOut {
        JsonOut::default()
    }

    pub fn to(dest: Dest) -> JsonOut {
        JsonOut {
            dest: Some(dest),
            buf: Vec::new(),
        }
    }

    pub fn on(&self) -> bool {
        self.dest.is_some()
    }

    /// One line.
    pub fn line(&mut self, v: &Value) -> Result<(), CliError> {
        if let Some(d) = self.dest.as_mut() {
            let r = serde_json::to_writer(&mut *d, v)
                .map_err(io::Error::from)
                .and_then(|()| d.write_all(b"\n"));
            if let Err(e) = r {
                return Err(d.io_err(e));
            }
        }
        Ok(())
    }

    /// One record's line, written straight into the reused buffer
    /// ([`Record::write_json`]: no JSON tree per record).
    pub fn record(&mut self, rec: &Record<'_>) -> Result<(), CliError> {
        if let Some(d) = self.dest.as_mut() {
            self.buf.clear();
            rec.write_json(&mut self.buf);
            self.buf.push(b'\n');
            if let Err(e) = d.write_all(&self.buf) {
                return Err(d.io_err(e));
            }
        }
        Ok(())
    }

    pub fn finish(self) -> Result<Vec<u8>, CliError> {
        match self.dest {
            Some(d) => d.finish(),
            None => Ok(Vec::new()),
        }
    }
}

/// Every sink of one replay.
#[derive(Debug, Default)]
pub struct Sinks {
    pub trace: TraceOut,
    pub json: JsonOut,
    pub capture: CaptureOut,
    /// The records themselves, kept in memory (`conform` compares them by their marks);
    /// None: not kept.
    pub records: Option<Vec<Record<'static>>>,
}

/// What a finished replay reports (the sinks' own results come from [`Sinks::finish`]).
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Input frames replayed.
    pub frames: u64,
    /// Input frames skipped, by reason: frames of a supported link type that carry no
    /// packet (802.11 management frames, PPP control protocols, ...).
    pub skipped: sim::pcap::SkipCounts,
    /// What the real arm noticed that the trace cannot show (empty for the simulator).
    pub notes: Vec<String>,
    /// Frames delivered at each observation point and not delivered, by reason.
    pub tally: summary::Tally,
}

/// What the sinks hold after a replay.
#[derive(Debug)]
pub struct Finished {
    /// The text trace, when it went to memory.
    pub trace: Vec<u8>,
    pub trace_verdict: Option<TraceVerdict>,
    pub json: Vec<u8>,
    /// The capture, when it went to memory.
    pub capture: Vec<u8>,
    /// The first difference from the golden capture, if compared.
    pub capture_verdict: Option<capture::CaptureVerdict>,
    /// The records, when kept (pipelines that build records: tun-read).
    pub records: Vec<Record<'static>>,
}

impl Sinks {
    /// Everything to memory: the trace, the JSON lines and the capture.
    pub fn memory() -> Sinks {
        Sinks {
            trace: TraceOut::to(Dest::Memory(Vec::new())),
            json: JsonOut::to(Dest::Memory(Vec::new())),
            capture: CaptureOut::to(Dest::Memory(Vec::new()), sim::pcap::PcapFormat::Pcap),
            records: Some(Vec::new()),
        }
    }

    /// Whether any sink wants records (the text trace, the JSON lines, the kept records);
    /// the capture's comments are asked for separately.
    #[inline]
    pub fn wants_records(&self) -> bool {
        self.trace.on() || self.json.on() || self.records.is_some()
    }

    /// One record into every sink that wants it: its text, its JSON line, a copy kept.
    pub fn record(&mut self, rec: &Record<'_>) -> Result<(), CliError> {
        if self.trace.on() {
            rec.write_text(&mut self.trace.buf);
            self.trace.flush()?;
        }
        if self.json.on() {
            self.json.record(rec)?;
        }
        if let Some(kept) = self.records.as_mut() {
            kept.push(rec.clone().into_owned());
        }
        Ok(())
    }

    pub fn finish(self) -> Result<Finished, CliError> {
        let (trace, trace_verdict) = self.trace.finish()?;
        let json = self.json.finish()?;
        let (capture, capture_verdict) = self.capture.finish()?;
        Ok(Finished {
            trace,
            trace_verdict,
            json,
            capture,
            capture_verdict,
            records: self.records.unwrap_or_default(),
        })
    }
}

/// Progress every this many frames (a power of two: a mask test per frame).
pub const PROGRESS_EVERY: u64 = 1 << 14;
