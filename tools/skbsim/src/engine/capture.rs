//! The output capture sink: what userspace read or the stack received, written as it
//! arrives, or compared frame by frame with a golden capture.

use std::fs::File;
use std::path::{Path, PathBuf};

use sim::pcap::{PcapFormat, PcapReader, PcapWriter};
use sim::wire::summary::describe;

use super::Dest;
use crate::cli_error::CliError;

/// The golden capture being compared with, one frame at a time.
#[derive(Debug)]
pub struct GoldenCapture {
    path: PathBuf,
    reader: PcapReader<File>,
    frame: u64,
    divergence: Option<String>,
}

impl GoldenCapture {
    pub fn open(path: &Path) -> Result<GoldenCapture, CliError> {
        Ok(GoldenCapture {
            path: path.to_path_buf(),
            reader: PcapReader::open(path)?,
            frame: 0,
            divergence: None,
        })
    }

    fn frame(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), CliError> {
        if self.divergence.is_some() {
            return Ok(());
        }
        let i = self.frame;
        self.frame += 1;
        let Some(g) = self.reader.next_frame() else {
            self.divergence = Some(format!(
                "frame counts differ: {} vs more than {i} (frame {i} is new: {})",
                i,
                describe(data)
            ));
            return Ok(());
        };
        let g = g?;
        if g.data != data {
            let off = g
                .data
                .iter()
                .zip(data.iter())
                .position(|(p, q)| p != q)
                .unwrap_or(g.data.len().min(data.len()));
            let byte = |d: &[u8]| {
                d.get(off)
                    .map(|v| format!("{v:#04x}"))
                    .unwrap_or_else(|| "end of frame".into())
            };
            self.divergence = Some(format!(
                "first difference in frame {i} at byte {off}: {} vs {} (lengths {} and {})\n  - {}\n  + {}",
                byte(g.data),
                byte(data),
                g.data.len(),
                data.len(),
                describe(g.data),
                describe(data)
            ));
        } else if g.ts_ns != ts_ns {
            self.divergence = Some(format!(
                "first difference in frame {i}: timestamp {} ns vs {ts_ns} ns",
                g.ts_ns
            ));
        }
        Ok(())
    }

    fn finish(mut self) -> Result<CaptureVerdict, CliError> {
        if self.divergence.is_none() {
            if self.reader.format() != PcapFormat::Pcap {
                self.divergence = Some(format!(
                    "the golden is {}, the replay writes pcap",
                    self.reader.format()
                ));
            } else if let Some(g) = self.reader.next_frame() {
                g?;
                let mut n = self.frame + 1;
                while let Some(g) = self.reader.next_frame() {
                    g?;
                    n += 1;
                }
                self.divergence = Some(format!("frame counts differ: {n} vs {}", self.frame));
            }
        }
        Ok(CaptureVerdict {
            path: self.path,
            divergence: self.divergence,
        })
    }
}

/// How the capture compared with its golden.
#[derive(Debug)]
pub struct CaptureVerdict {
    pub path: PathBuf,
    pub divergence: Option<String>,
}

/// The capture sink.
#[derive(Debug, Default)]
pub struct CaptureOut {
    writer: Option<PcapWriter<Dest>>,
    golden: Option<GoldenCapture>,
    /// A destination whose header is not written yet.
    pending: Option<Dest>,
}

impl CaptureOut {
    pub fn off() -> CaptureOut {
        CaptureOut::default()
    }

    /// Write a classic pcap to `dest`.
    pub fn to(dest: Dest) -> CaptureOut {
        CaptureOut {
            pending: Some(dest),
            ..CaptureOut::default()
        }
    }

    pub fn compare(golden: GoldenCapture) -> CaptureOut {
        CaptureOut {
            golden: Some(golden),
            ..CaptureOut::default()
        }
    }

    pub fn on(&self) -> bool {
        self.writer.is_some() || self.pending.is_some() || self.golden.is_some()
    }

    fn start(&mut self) -> Result<(), CliError> {
        if let Some(dest) = self.pending.take() {
            let name = dest.name().to_path_buf();
            self.writer = Some(PcapWriter::with_name(dest, PcapFormat::Pcap, name)?);
        }
        Ok(())
    }

    /// One frame.
    #[inline]
    pub fn frame(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), CliError> {
        if self.pending.is_some() {
            self.start()?;
        }
        if let Some(w) = self.writer.as_mut() {
            w.write_frame(ts_ns, data)?;
        }
        if let Some(g) = self.golden.as_mut() {
            g.frame(ts_ns, data)?;
        }
        Ok(())
    }

    /// The end: memory's bytes and the golden verdict.
    pub fn finish(mut self) -> Result<(Vec<u8>, Option<CaptureVerdict>), CliError> {
        // An empty capture still gets its file header.
        self.start()?;
        let bytes = match self.writer {
            Some(w) => w.finish()?.finish()?,
            None => Vec::new(),
        };
        let verdict = self.golden.map(GoldenCapture::finish).transpose()?;
        Ok((bytes, verdict))
    }
}
