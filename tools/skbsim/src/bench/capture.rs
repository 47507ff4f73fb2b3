//! The benches' generated capture and scratch space: the frame mix (60-1514 B, a third
//! 802.1Q-tagged, IPv4 UDP/TCP), a temporary directory that is removed when the bench
//! ends (also on an error, and on Ctrl-C/SIGTERM/SIGHUP), and `--make-capture`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use sim::pcap::{PcapFormat, PcapReader, PcapWriter};
use tempfile::TempDir;

use crate::cli_error::CliError;
use crate::output::Output;

/// Frame sizes of the mix, before the optional 4-byte tag.
pub const SIZES: [usize; 8] = [60, 64, 128, 256, 590, 1024, 1280, 1514];

/// pcap file header and per-record header sizes (classic pcap, as [`PcapWriter`] writes).
const PCAP_FILE_HEADER: u64 = 24;
const PCAP_RECORD_HEADER: u64 = 16;

/// How much to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Frames(u64),
    /// Stop at the first frame that would take the file past this many bytes.
    Bytes(u64),
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    pub frames: u64,
    pub bytes: u64,
}

/// A deterministic mix: sizes 60..1514, a third 802.1Q-tagged, IPv4 UDP/TCP, written to
/// `path` as any output is ([`Output`]: in place; on an error or an interrupt a file
/// this created is removed).
pub fn generate(path: &Path, limit: Limit) -> Result<Generated, CliError> {
    generate_into(Output::create(path)?, limit)
}

fn generate_into(out: Output, limit: Limit) -> Result<Generated, CliError> {
    let path = out.path().to_path_buf();
    let mut w = PcapWriter::with_name(out, PcapFormat::Pcap, &path)?;
    let mut seed: u64 = 0x5eed;
    let mut buf = Vec::with_capacity(1600);
    let mut bytes = PCAP_FILE_HEADER;
    let mut i = 0u64;
    loop {
        if let Limit::Frames(n) = limit {
            if i >= n {
                break;
            }
        }
        if i.is_multiple_of(1 << 16) && interrupted() {
            return Err(CliError("interrupted".into()));
        }
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let size = SIZES[(seed >> 33) as usize % SIZES.len()];
        let tagged = (seed >> 40).is_multiple_of(3);
        let tcp = (seed >> 45) & 1 == 1;
        frame_into(&mut buf, size, tagged, tcp);
        let next = bytes + PCAP_RECORD_HEADER + buf.len() as u64;
        if let Limit::Bytes(b) = limit {
            if next > b {
                break;
            }
        }
        w.write_frame(1_000_000_000 + i * 1000, &buf)?;
        bytes = next;
        i += 1;
    }
    w.finish()?.commit()?;
    Ok(Generated { frames: i, bytes })
}

/// One IPv4 frame of `size` bytes before the optional 802.1Q tag (vid 100).
pub fn frame_into(buf: &mut Vec<u8>, size: usize, tagged: bool, tcp: bool) {
    buf.clear();
    buf.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
    if tagged {
        buf.extend_from_slice(&[0x81, 0x00, 0x00, 0x64]);
    }
    buf.extend_from_slice(&[0x08, 0x00]);
    let ip_len = (size - 14) as u16;
    let proto = if tcp { 6 } else { 17 };
    buf.extend_from_slice(&[
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        1,
        0x40,
        0,
        64,
        proto,
        0,
        0,
    ]);
    buf.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    if tcp {
        buf.extend_from_slice(&[
            0x03, 0xe8, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0x02, 0, 0, 0, 0, 0,
        ]);
    } else {
        let l = ip_len - 20;
        buf.extend_from_slice(&[0x13, 0x88, 0, 53, (l >> 8) as u8, l as u8, 0, 0]);
    }
    let target = size + if tagged { 4 } else { 0 };
    buf.resize(target, 0xab);
}

/// `--bytes`: a count with an optional K/M/G suffix (powers of 1024), e.g. `2G`.
pub fn parse_bytes(s: &str) -> Result<u64, CliError> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => 0,
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .filter(|_| mul > 0)
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n > PCAP_FILE_HEADER)
        .ok_or_else(|| {
            CliError(format!(
                "--bytes {s}: expected a size above 24 bytes such as 2G, 500M, 64K or 1000000"
            ))
        })
}

/// Frames in a pcap (a full read; bad input is an error naming the file).
pub fn count_frames(path: &Path) -> Result<u64, CliError> {
    let mut r = PcapReader::open(path)?;
    let mut n = 0;
    while let Some(f) = r.next_frame() {
        f?;
        n += 1;
    }
    Ok(n)
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The scratch directory alive now, for the signal handler's last resort.
static SCRATCH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Whether Ctrl-C (or SIGTERM/SIGHUP) arrived; long loops check it and return an error,
/// which drops (removes) the scratch directory.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Install the handler (once per process): it sets [`interrupted`] and sends SIGTERM to
/// the child being measured, then gives the main thread 2 s to unwind; a main thread in
/// a loop that does not check (the model bench's reads) gets the scratch directory
/// removed here and the process ended with 130. SIGINT, SIGTERM and SIGHUP are taken
/// even where the parent left them ignored (a script's background job ignores SIGINT):
/// a bench asked to stop stops and cleans up.
pub fn install_interrupt_handler() {
    let r = ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::SeqCst);
        skbsim_kernel::child::interrupt_running();
        std::thread::sleep(Duration::from_secs(2));
        let dir = SCRATCH.lock().ok().and_then(|mut d| d.take());
        if let Some(d) = dir {
            let _ = std::fs::remove_dir_all(d);
        }
        eprintln!("skbsim: interrupted");
        std::process::exit(130);
    });
    if let Err(e) = r {
        eprintln!("skbsim: warning: no interrupt handler ({e}); an interrupted bench leaves its temporary directory");
    }
}

/// A temporary directory for the bench's files (`skbsim-bench-*` under `parent` or the
/// system's), removed when this is dropped.
#[derive(Debug)]
pub struct Scratch {
    dir: TempDir,
}

impl Scratch {
    pub fn new(parent: Option<&Path>) -> Result<Scratch, CliError> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let dir = tempfile::Builder::new()
            .prefix("skbsim-bench-")
            .tempdir_in(&parent)
            .map_err(|e| {
                CliError(format!(
                    "{}: cannot create a temporary directory: {e}",
                    parent.display()
                ))
            })?;
        if let Ok(mut s) = SCRATCH.lock() {
            *s = Some(dir.path().to_path_buf());
        }
        Ok(Scratch { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Then `dir` is dropped, which removes it.
        if let Ok(mut s) = SCRATCH.lock() {
            *s = None;
        }
    }
}

/// The capture a bench runs on: the user's `--input`, or a generated one in `scratch`.
#[derive(Debug)]
pub struct Capture {
    pub path: PathBuf,
    pub frames: u64,
    pub bytes: u64,
    pub generated: bool,
}

impl Capture {
    /// `input` as is, or `limit` generated into `scratch/in.pcap`.
    pub fn prepare(
        input: Option<&Path>,
        limit: Limit,
        scratch: &Scratch,
    ) -> Result<Capture, CliError> {
        match input {
            Some(p) => {
                let bytes = std::fs::metadata(p)
                    .map_err(|e| CliError(format!("{}: {e}", p.display())))?
                    .len();
                Ok(Capture {
                    path: p.to_path_buf(),
                    frames: count_frames(p)?,
                    bytes,
                    generated: false,
                })
            }
            None => {
                let path = scratch.path().join("in.pcap");
                eprintln!("generating {} into {}", describe(limit), path.display());
                let g = generate(&path, limit)?;
                Ok(Capture {
                    path,
                    frames: g.frames,
                    bytes: g.bytes,
                    generated: true,
                })
            }
        }
    }
}

fn describe(limit: Limit) -> String {
    match limit {
        Limit::Frames(n) => format!("{n} frames"),
        Limit::Bytes(b) => format!("{:.1} MB of frames", b as f64 / 1e6),
    }
}

/// `skbsim bench --make-capture PATH [--frames N | --bytes SIZE]`: opened before the
/// progress line, so a bad PATH is the one line of its error.
pub fn make_capture(path: &Path, limit: Limit) -> Result<Generated, CliError> {
    let out = Output::create(path)?;
    eprintln!("generating {} into {}", describe(limit), path.display());
    generate_into(out, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_bytes("2G").ok(), Some(2 << 30));
        assert_eq!(parse_bytes("500m").ok(), Some(500 << 20));
        assert_eq!(parse_bytes("64K").ok(), Some(64 << 10));
        assert_eq!(parse_bytes("1000000").ok(), Some(1_000_000));
        for bad in ["", "G", "2X", "-1", "10", "1.5G"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_byte_limit_stops_below_it_and_the_mix_is_a_third_tagged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("c.pcap");
        let g = generate(&p, Limit::Bytes(1 << 20)).expect("generate");
        let len = std::fs::metadata(&p).expect("metadata").len();
        assert_eq!(len, g.bytes);
        assert!(len <= 1 << 20 && len > (1 << 20) - 1600, "{len}");
        let mut r = PcapReader::open(&p).expect("open");
        let (mut n, mut tagged, mut min, mut max) = (0u64, 0u64, usize::MAX, 0);
        while let Some(f) = r.next_frame() {
            let f = f.expect("frame");
            n += 1;
            tagged += u64::from(f.data[12..14] == [0x81, 0x00]);
            let untagged = f.data.len() - if f.data[12] == 0x81 { 4 } else { 0 };
            min = min.min(untagged);
            max = max.max(untagged);
        }
        assert_eq!(n, g.frames);
        assert_eq!((min, max), (60, 1514));
        let share = tagged as f64 / n as f64;
        assert!((0.28..0.39).contains(&share), "tagged share {share}");
    }
}
