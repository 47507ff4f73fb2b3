//! `skbsim diff A B`: two traces compared field by field, or two pcaps frame by frame.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use sim::pcap::{Frame, PcapReader};
use sim::trace::diff::first_divergence;
use sim::wire::summary::describe;

use crate::cli_error::CliError;
use crate::golden::snap_body;

fn is_pcap(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("pcap" | "pcapng")
    )
}

fn frames_of(bytes: &[u8], name: &Path) -> Result<Vec<Frame>, CliError> {
    let reader = PcapReader::from_reader(bytes, name)?;
    let mut out = Vec::new();
    for f in reader {
        out.push(f?);
    }
    Ok(out)
}

/// The first differing frame of two pcaps, described for a reader: frame index, byte
/// offset, both byte values, and both frames decoded.
pub fn pcap_divergence(
    a: &[u8],
    b: &[u8],
    a_name: &Path,
    b_name: &Path,
) -> Result<Option<String>, CliError> {
    let (fa, fb) = (frames_of(a, a_name)?, frames_of(b, b_name)?);
    for (i, (x, y)) in fa.iter().zip(fb.iter()).enumerate() {
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
    }
    if fa.len() != fb.len() {
        return Ok(Some(format!(
            "frame counts differ: {} vs {}",
            fa.len(),
            fb.len()
        )));
    }
    Ok(None)
}

fn read(p: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(p).map_err(|e| CliError(format!("{}: cannot read: {e}", p.display())))
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
    let (a, b) = (read(left)?, read(right)?);
    let found = if is_pcap(left) && is_pcap(right) {
        pcap_divergence(&a, &b, left, right)?
    } else {
        let text = |bytes: Vec<u8>, p: &Path| {
            String::from_utf8(bytes)
                .map_err(|_| CliError(format!("{}: not a text trace (not UTF-8)", p.display())))
        };
        let (ta, tb) = (text(a, left)?, text(b, right)?);
        first_divergence(snap_body(&ta), snap_body(&tb), &ignore).map(|d| d.to_string())
    };
    if as_json {
        println!(
            "{}",
            json!({"left": left, "right": right, "equal": found.is_none(), "difference": found})
        );
    } else {
        match &found {
            None => println!("no difference"),
            Some(d) => println!("--- {}\n+++ {}\n{d}", left.display(), right.display()),
        }
    }
    Ok(if found.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
