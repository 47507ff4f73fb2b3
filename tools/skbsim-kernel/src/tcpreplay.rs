//! tcpreplay through a real tap, for `skbsim bench`'s comparison: the same capture, the
//! same run, timed from outside as a whole process like `skbsim replay` is.
//!
//! Both paths run `tcpreplay --topspeed -i skbrpl0 FILE` in a private namespace, where
//! `skbrpl0` is an `IFF_TAP | IFF_NO_PI` device, up, whose queue fd this process holds
//! open (the device exists, and has carrier, only while a queue is attached). tcpreplay
//! sends every frame with an AF_PACKET socket: `packet_snd`,
//! `dev_queue_xmit`, `tun_net_xmit`, which queues the skb on the fd's ring
//! (`tx_queue_len`, 500) or drops it when the ring is full.
//!
//! - write path: nobody reads the fd. Every frame enters the kernel through the tap; past
//!   the first 500 `tun_net_xmit` drops them. Rate: frames tcpreplay sent over its wall
//!   time.
//! - read path: a reader thread drains the fd with `read(2)` as fast as it can. Rate:
//!   frames the reader got (counted by the reader; ring overflows are lost, not counted)
//!   over the time from spawning tcpreplay to the last frame read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::child::{run_measured, Measured};
use crate::error::{Cause, Errno, KernelError};
use crate::netns::Netns;
use crate::tap::{Tap, TapConfig};

/// The device tcpreplay sends on.
pub const TAP_NAME: &str = "skbrpl0";

/// Where tcpreplay is on `PATH`, if anywhere.
pub fn find_tcpreplay() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("tcpreplay"))
        .find(|p| p.is_file())
}

/// `tcpreplay --version`'s first line ("tcpreplay version: 4.4.3 (build git:v4.4.3)").
pub fn tcpreplay_version(program: &Path) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    // 4.x prints its version on stderr.
    let text = [out.stdout, out.stderr].concat();
    String::from_utf8_lossy(&text)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
}

/// One tcpreplay run.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpreplayRun {
    /// The process, timed from outside.
    pub process: Measured,
    /// Frames tcpreplay said it sent ("Actual: N packets").
    pub sent: u64,
    /// Frames the reader got (0 on the write path).
    pub read: u64,
    /// Spawn to the last frame read (read path) or to tcpreplay's exit (write path).
    pub secs: f64,
}

impl TcpreplayRun {
    /// The rate the path is measured by: sent frames/s (write), read frames/s (read).
    pub fn fps(&self, read_path: bool) -> f64 {
        let n = if read_path { self.read } else { self.sent };
        n as f64 / self.secs.max(1e-9)
    }
}

/// Every run of both paths, alternating (write, read, write, read, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct TcpreplayBench {
    pub write: Vec<TcpreplayRun>,
    pub read: Vec<TcpreplayRun>,
}

/// Frames sent, from tcpreplay's summary line "Actual: 2000 packets (...) sent in ...".
pub fn parse_sent(stdout: &str) -> Option<u64> {
    stdout.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("Actual:")?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn one_run(
    program: &Path,
    pcap: &Path,
    tap: &Tap,
    read_path: bool,
    scratch: &Path,
) -> Result<TcpreplayRun, KernelError> {
    let fail = |what: String| KernelError::new("tcpreplay", Cause::Protocol(what));
    tap.drain()
        .map_err(|e| KernelError::sys(format!("drain {}", tap.name()), e))?;
    let out_path = scratch.join("tcpreplay.out");
    let out = std::fs::File::create(&out_path)
        .map_err(|e| fail(format!("{}: {e}", out_path.display())))?;
    let mut cmd = Command::new(program);
    cmd.args(["--topspeed", "-i", TAP_NAME])
        .arg(pcap)
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            out.try_clone()
                .map_err(|e| fail(format!("{}: {e}", out_path.display())))?,
        ))
        .stderr(Stdio::from(out));
    let done = AtomicBool::new(false);
    let read = AtomicU64::new(0);
    let t0 = Instant::now();
    let (process, last_read) = std::thread::scope(|s| {
        let reader = read_path.then(|| {
            s.spawn(|| -> Result<Option<Instant>, Errno> {
                let mut buf = vec![0u8; 65536];
                let mut last = None;
                loop {
                    match tap.read(&mut buf) {
                        Ok(_) => {
                            read.fetch_add(1, Ordering::Relaxed);
                            last = Some(Instant::now());
                        }
                        Err(Errno::EAGAIN) => {
                            // Queue empty: once tcpreplay has exited, a quiet 200 ms means
                            // everything it sent that fit the ring has been read.
                            let finished = done.load(Ordering::SeqCst);
                            let timeout = Duration::from_millis(if finished { 200 } else { 50 });
                            if !tap.wait_readable(timeout)? && finished {
                                return Ok(last);
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
            })
        });
        let process = run_measured(&mut cmd);
        done.store(true, Ordering::SeqCst);
        let last = match reader {
            Some(h) => h.join().unwrap_or(Err(Errno::EIO)),
            None => Ok(None),
        };
        (process, last)
    });
    let process = process.map_err(|e| fail(format!("run {}: {e}", program.display())))?;
    let last_read =
        last_read.map_err(|e| KernelError::sys(format!("read from {}", tap.name()), e))?;
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    if !process.status.success() {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(fail(format!("{} ({})", process.status, first.trim())));
    }
    let sent = parse_sent(&text).ok_or_else(|| {
        fail(format!(
            "no \"Actual: N packets\" line in its output: {}",
            text.lines().next().unwrap_or("")
        ))
    })?;
    let end = match last_read {
        Some(t) if read_path => t.duration_since(t0).max(process.wall),
        _ => process.wall,
    };
    Ok(TcpreplayRun {
        process,
        sent,
        read: read.load(Ordering::Relaxed),
        secs: end.as_secs_f64(),
    })
}

/// `runs` runs of each path on `pcap`, alternating so both see the same background load.
/// `scratch` is a directory for tcpreplay's captured output (removed after each run).
pub fn tcpreplay_bench(
    program: &Path,
    pcap: &Path,
    runs: usize,
    scratch: &Path,
) -> Result<TcpreplayBench, KernelError> {
    Netns::run(|ns| {
        let tap = ns.tap_up(&TapConfig::tap(TAP_NAME).no_pi(true).nonblocking(true))?;
        let mut bench = TcpreplayBench {
            write: Vec::new(),
            read: Vec::new(),
        };
        for _ in 0..runs {
            bench
                .write
                .push(one_run(program, pcap, &tap, false, scratch)?);
            bench
                .read
                .push(one_run(program, pcap, &tap, true, scratch)?);
        }
        Ok(bench)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sent_is_read_from_the_actual_line() {
        let out = "Actual: 2000 packets (1263840 bytes) sent in 0.008046 seconds\nRated: 157077000.0 Bps, 1256.61 Mbps, 248570.72 pps\nStatistics for network device: skbrpl0\n\tSuccessful packets:        2000\n";
        assert_eq!(parse_sent(out), Some(2000));
        assert_eq!(parse_sent("Warning: nothing\n"), None);
    }
}
