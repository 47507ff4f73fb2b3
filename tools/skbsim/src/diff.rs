//! `skbsim diff A B`: two traces compared field by field, or two pcaps frame by frame.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use sim::pcap::{Frame, LinkPolicy, PcapError, PcapReader};
use sim::trace::diff_stream::{first_divergence_streams, Side};
use sim::wire::summary::describe;

use crate::cli_error::CliError;
use crate::outln;

fn is_pcap(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("pcap" | "pcapng")
    )
}

/// The first differing frame of two pcaps, described for a reader: frame index, byte
/// offset, both byte values, and both frames decoded.
pub fn pcap_divergence(
    a: &[u8],
    b: &[u8],
    a_name: &Path,
    b_name: &Path,
) -> Result<Option<String>, CliError> {
    frames_divergence(
        PcapReader::from_reader_with(a, a_name, LinkPolicy::Any)?,
        PcapReader::from_reader_with(b, b_name, LinkPolicy::Any)?,
    )
}

/// [`pcap_divergence`] over two streams of frames: one frame of each in memory at a
/// time, so captures of any size compare.
pub fn frames_divergence(
    mut fa: impl Iterator<Item = Result<Frame, PcapError>>,
    mut fb: impl Iterator<Item = Result<Frame, PcapError>>,
) -> Result<Option<String>, CliError> {
    let mut i = 0u64;
    loop {
        let (x, y) = match (fa.next().transpose()?, fb.next().transpose()?) {
            (None, None) => return Ok(None),
            (Some(_), None) => {
                let more = count(fa)?;
                return Ok(Some(format!(
                    "frame counts differ: {} vs {i}",
                    i + 1 + more
                )));
            }
            (None, Some(_)) => {
                let more = count(fb)?;
                return Ok(Some(format!(
                    "frame counts differ: {i} vs {}",
                    i + 1 + more
                )));
            }
            (Some(x), Some(y)) => (x, y),
        };
        if x.interface != y.interface {
            return Ok(Some(format!(
                "first difference in frame {i}: seen on interface {} vs {} ({})",
                x.interface,
                y.interface,
                describe(&y.data)
            )));
        }
        if x.data != y.data {
            let off = x
                .data
                .iter()
                .zip(y.data.iter())
                .position(|(p, q)| p != q)
                .unwrap_or(x.data.len().min(y.data.len()));
            let byte = |d: &[u8]| {
                d.get(off)
                    .map(|v| format!("{v:#04x}"))
                    .unwrap_or_else(|| "end of frame".into())
            };
            return Ok(Some(format!(
                "first difference in frame {i} at byte {off}: {} vs {} (lengths {} and {})\n  - {}\n  + {}",
                byte(&x.data),
                byte(&y.data),
                x.data.len(),
                y.data.len(),
                describe(&x.data),
                describe(&y.data)
            )));
        }
        if x.ts_ns != y.ts_ns {
            return Ok(Some(format!(
                "first difference in frame {i}: timestamp {} ns vs {} ns",
                x.ts_ns, y.ts_ns
            )));
        }
        i += 1;
    }
}

/// The frames left in a stream (errors included: a corrupt tail is still reported).
fn count(frames: impl Iterator<Item = Result<Frame, PcapError>>) -> Result<u64, CliError> {
    let mut n = 0;
    for f in frames {
        f?;
        n += 1;
    }
    Ok(n)
}

/// Exit 0 when equal, 1 with the first difference printed. `ignore` names trace fields
/// and whole events to leave out (traces only).
pub fn diff(
    left: &Path,
    right: &Path,
    as_json: bool,
    ignore: &[String],
) -> Result<ExitCode, CliError> {
    let ignore: Vec<&str> = ignore.iter().map(String::as_str).collect();
    let found = if is_pcap(left) && is_pcap(right) {
        // Streamed, so no size limit; PcapReader::open refuses anything but a regular file.
        frames_divergence(
            PcapReader::open_with(left, LinkPolicy::Any)?,
            PcapReader::open_with(right, LinkPolicy::Any)?,
        )?
    } else {
        // Streamed block by block: traces of any size, one block of each held at a time.
        let open = |p: &Path| {
            crate::input::open_regular(p, "trace", crate::input::UNBOUNDED)
                .map(|f| std::io::BufReader::with_capacity(256 << 10, f))
        };
        let (a, b) = (open(left)?, open(right)?);
        let (d, _) = first_divergence_streams(a, b, &ignore).map_err(|side| {
            let (p, e) = match side {
                Side::Left(e) => (left, e),
                Side::Right(e) => (right, e),
            };
            if e.kind() == std::io::ErrorKind::InvalidData {
                CliError(format!("{}: not a text trace ({e})", p.display()))
            } else {
                CliError(format!("{}: cannot read: {e}", p.display()))
            }
        })?;
        d.map(|d| d.to_string())
    };
    if as_json {
        outln!(
            "{}",
            json!({"left": left, "right": right, "equal": found.is_none(), "difference": found})
        )?;
    } else {
        match &found {
            None => outln!("no difference"),
            Some(d) => outln!("--- {}\n+++ {}\n{d}", left.display(), right.display()),
        }?;
    }
    Ok(if found.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
