//! `skbsim diff A B`: two traces compared field by field, or two pcaps frame by frame
//! (bytes, then the skb metadata of their packet comments when both carry it).

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use sim::pcap::{LinkPolicy, PcapFormat, PcapReader};
use sim::trace::diff::Divergence;
use sim::trace::diff_comment::comment_divergence;
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
/// offset, both byte values, and both frames decoded. Frame bytes, interfaces and times
/// only: the packet comments' skb metadata is the model's alone (a golden against the
/// real kernel's capture); `skbsim diff` compares it too ([`compare_captures`]).
pub fn pcap_divergence(
    a: &[u8],
    b: &[u8],
    a_name: &Path,
    b_name: &Path,
) -> Result<Option<String>, CliError> {
    let found = compare_captures(
        PcapReader::from_reader_with(a, a_name, LinkPolicy::Any)?,
        PcapReader::from_reader_with(b, b_name, LinkPolicy::Any)?,
        None,
    )?;
    Ok(found.difference)
}

/// What [`compare_captures`] found.
#[derive(Debug, Default)]
pub struct CaptureDiff {
    /// The first difference, described for a reader.
    pub difference: Option<String>,
    /// When that difference is in the skb metadata: the frame, field and both values.
    pub field: Option<Divergence>,
    /// Whether each capture carried skb metadata (a packet comment) on a frame compared.
    pub metadata: [bool; 2],
}

/// Two captures compared frame by frame as they stream (one frame of each in memory,
/// so any size): interface, bytes, then, with `metadata` (the fields to ignore), the
/// skb metadata of the packet comments field by field, then the timestamp.
pub fn compare_captures(
    mut ra: PcapReader<impl Read>,
    mut rb: PcapReader<impl Read>,
    metadata: Option<&[&str]>,
) -> Result<CaptureDiff, CliError> {
    let mut meta = metadata.map(Metadata::new);
    let mut i = 0u64;
    let difference = loop {
        let (x, y) = match (ra.next_frame().transpose()?, rb.next_frame().transpose()?) {
            (None, None) => break None,
            (Some(_), None) => {
                let more = count(&mut ra)?;
                break Some(format!("frame counts differ: {} vs {i}", i + 1 + more));
            }
            (None, Some(_)) => {
                let more = count(&mut rb)?;
                break Some(format!("frame counts differ: {i} vs {}", i + 1 + more));
            }
            (Some(x), Some(y)) => (x, y),
        };
        if x.interface != y.interface {
            break Some(format!(
                "first difference in frame {i}: seen on interface {} vs {} ({})",
                x.interface,
                y.interface,
                describe(y.data)
            ));
        }
        if x.data != y.data {
            break Some(bytes_difference(i, x.data, y.data));
        }
        if let Some(d) = meta.as_mut().and_then(|m| m.frame(i, x.comment, y.comment)) {
            let text = d.to_string();
            return Ok(CaptureDiff {
                difference: Some(text),
                field: Some(d),
                metadata: [true, true],
            });
        }
        if x.ts_ns != y.ts_ns {
            break Some(format!(
                "first difference in frame {i}: timestamp {} ns vs {} ns",
                x.ts_ns, y.ts_ns
            ));
        }
        i += 1;
    };
    Ok(CaptureDiff {
        difference,
        field: None,
        metadata: meta.map_or([false; 2], |m| m.seen),
    })
}

fn bytes_difference(i: u64, x: &[u8], y: &[u8]) -> String {
    let off = x
        .iter()
        .zip(y.iter())
        .position(|(p, q)| p != q)
        .unwrap_or(x.len().min(y.len()));
    let byte = |d: &[u8]| {
        d.get(off)
            .map(|v| format!("{v:#04x}"))
            .unwrap_or_else(|| "end of frame".into())
    };
    format!(
        "first difference in frame {i} at byte {off}: {} vs {} (lengths {} and {})\n  - {}\n  + {}",
        byte(x),
        byte(y),
        x.len(),
        y.len(),
        describe(x),
        describe(y)
    )
}

/// The frames left in a capture (errors included: a corrupt tail is still reported).
fn count(r: &mut PcapReader<impl Read>) -> Result<u64, CliError> {
    let mut n = 0;
    while let Some(f) = r.next_frame() {
        f?;
        n += 1;
    }
    Ok(n)
}

/// The skb metadata of two captures' packet comments, frame by frame.
struct Metadata<'i> {
    ignore: &'i [&'i str],
    /// Each side has shown a comment.
    seen: [bool; 2],
    /// The first frame commented on one side only while the other (`.0`, 0 left) had
    /// shown none: a difference once that side shows one (it carries metadata after
    /// all), never otherwise (it carries none: frame bytes only).
    pending: Option<(usize, Divergence)>,
}

impl<'i> Metadata<'i> {
    fn new(ignore: &'i [&'i str]) -> Self {
        Metadata {
            ignore,
            seen: [false; 2],
            pending: None,
        }
    }

    /// Frame `i`'s comments: the difference to report now, if any.
    fn frame(&mut self, i: u64, a: Option<&[u8]>, b: Option<&[u8]>) -> Option<Divergence> {
        if a.is_none() && b.is_none() {
            return None;
        }
        let (a, b) = (
            a.map(String::from_utf8_lossy),
            b.map(String::from_utf8_lossy),
        );
        for (side, shown) in [a.is_some(), b.is_some()].into_iter().enumerate() {
            if shown && !self.seen[side] {
                self.seen[side] = true;
                if self.pending.as_ref().is_some_and(|p| p.0 == side) {
                    return self.pending.take().map(|p| p.1);
                }
            }
        }
        let d = comment_divergence(
            &format!("frame {i}"),
            a.as_deref(),
            b.as_deref(),
            self.ignore,
        )?;
        let absent = match (&a, &b) {
            (Some(_), Some(_)) => return Some(d),
            (None, _) => 0,
            (_, None) => 1,
        };
        if self.seen[absent] {
            return Some(d);
        }
        self.pending.get_or_insert((absent, d));
        None
    }
}

/// The result line's notice when a capture carries no skb metadata: only frame bytes
/// were compared, and where the metadata is (the golden's trace beside it, or how to
/// get it). `sides`: each capture's name, format, and whether it carried metadata.
fn bytes_only_notice(sides: [(&Path, PcapFormat, bool); 2]) -> Option<String> {
    let lacking: Vec<_> = sides.iter().filter(|s| !s.2).collect();
    let why = |f: PcapFormat| match f {
        PcapFormat::Pcap => "classic pcap has no packet comments",
        PcapFormat::PcapNg => "its packets have no comments",
    };
    let who = match lacking.as_slice() {
        [] => return None,
        [(p, f, _)] => format!("{} carries no skb metadata ({})", p.display(), why(*f)),
        [(_, f, _), (_, g, _)] if f == g => {
            format!("neither capture carries skb metadata ({})", why(*f))
        }
        _ => "neither capture carries skb metadata".to_string(),
    };
    let traces: Vec<String> = lacking
        .iter()
        .filter_map(|(p, _, _)| {
            let t = p.parent()?.join(crate::golden::TRACE_FILE);
            t.is_file().then(|| t.display().to_string())
        })
        .collect();
    let place = match traces.len() {
        0 => "a trace (`skbsim replay --trace`) and a pcapng (`skbsim replay -o X.pcapng`) have it"
            .to_string(),
        1 => format!("the trace {} has it", traces[0]),
        _ => format!("the traces {} have it", traces.join(" and ")),
    };
    Some(format!("compared frame bytes only: {who}; {place}"))
}

/// What `skbsim diff` found, for the result line or JSON.
#[derive(Debug, Default)]
struct Outcome {
    difference: Option<String>,
    field: Option<Divergence>,
    /// Captures only: what was compared.
    compared: Option<&'static str>,
    notice: Option<String>,
}

/// Two captures: frame bytes, and the skb metadata when both carry it.
fn diff_captures(left: &Path, right: &Path, ignore: &[&str]) -> Result<Outcome, CliError> {
    // Streamed, so no size limit; PcapReader::open refuses anything but a regular file.
    let (ra, rb) = (
        PcapReader::open_with(left, LinkPolicy::Any)?,
        PcapReader::open_with(right, LinkPolicy::Any)?,
    );
    let formats = [ra.format(), rb.format()];
    let found = compare_captures(ra, rb, Some(ignore))?;
    // A pcapng that showed no comment before a difference stopped the comparison may
    // still carry metadata further on: only a finished comparison says it has none.
    let carried = |side: usize| {
        found.metadata[side] || (formats[side] == PcapFormat::PcapNg && found.difference.is_some())
    };
    let notice = bytes_only_notice([
        (left, formats[0], carried(0)),
        (right, formats[1], carried(1)),
    ]);
    Ok(Outcome {
        compared: Some(if notice.is_some() {
            "frame bytes only"
        } else {
            "frame bytes and skb metadata"
        }),
        difference: found.difference,
        field: found.field,
        notice,
    })
}

/// Two traces, field by field.
fn diff_traces(left: &Path, right: &Path, ignore: &[&str]) -> Result<Outcome, CliError> {
    // Streamed block by block: traces of any size, one block of each held at a time.
    let open = |p: &Path| {
        crate::input::open_regular(p, "trace", crate::input::UNBOUNDED)
            .map(|f| std::io::BufReader::with_capacity(256 << 10, f))
    };
    let (a, b) = (open(left)?, open(right)?);
    let (d, _) = first_divergence_streams(a, b, ignore).map_err(|side| {
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
    Ok(Outcome {
        difference: d.as_ref().map(Divergence::to_string),
        field: d,
        ..Outcome::default()
    })
}

/// Exit 0 when equal, 1 with the first difference printed. `ignore` names fields (of a
/// trace, or of the captures' skb metadata) and whole trace events to leave out.
pub fn diff(
    left: &Path,
    right: &Path,
    as_json: bool,
    ignore: &[String],
) -> Result<ExitCode, CliError> {
    let ignore: Vec<&str> = ignore.iter().map(String::as_str).collect();
    let o = if is_pcap(left) && is_pcap(right) {
        diff_captures(left, right, &ignore)?
    } else {
        diff_traces(left, right, &ignore)?
    };
    if as_json {
        let field = o
            .field
            .as_ref()
            .map(|d| json!({"event": d.event, "field": d.field, "left": d.left, "right": d.right}));
        let mut v = json!({"left": left, "right": right, "equal": o.difference.is_none(),
            "difference": o.difference, "field": field});
        if let Some(c) = o.compared {
            v["compared"] = json!(c);
            v["notice"] = json!(o.notice);
        }
        outln!("{v}")?;
    } else {
        match (&o.difference, &o.notice) {
            (None, None) if o.compared.is_some() => {
                outln!("no difference (frame bytes and skb metadata)")?
            }
            (None, None) => outln!("no difference")?,
            (None, Some(n)) => outln!("no difference; {n}")?,
            (Some(d), n) => {
                outln!("--- {}\n+++ {}\n{d}", left.display(), right.display())?;
                if let Some(n) = n {
                    outln!("{n}")?;
                }
            }
        }
    }
    Ok(if o.difference.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
