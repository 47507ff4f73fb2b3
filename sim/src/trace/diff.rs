//! Field-level comparison of two traces: the first event and field where they part, so a
//! reviewer reads "read 3, field pi: 0x0001 vs 0x0000" instead of a wall of text.

use std::fmt;

/// Where two traces first differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The event (block header key, e.g. `read 3 (frame 2, ts 1.000002000)`), or `header`.
    pub event: String,
    pub field: String,
    pub left: String,
    pub right: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "first difference at `{}`, field `{}`:\n  - {}\n  + {}",
            self.event, self.field, self.left, self.right
        )
    }
}

#[derive(Debug)]
pub(crate) struct Block<'a> {
    pub(crate) event: &'a str,
    pub(crate) fields: Vec<(String, &'a str)>,
}

pub(crate) fn split_kv(line: &str) -> (String, &str) {
    let t = line.trim_start();
    match t.split_once(": ") {
        Some((k, v)) => {
            // Hexdump lines ("0010: 45 00 ...") are fields of the `bytes` dump.
            if k.len() == 4 && k.chars().all(|c| c.is_ascii_hexdigit()) {
                (format!("bytes+{k}"), v)
            } else {
                (k.to_string(), v)
            }
        }
        None => match t.strip_suffix(':') {
            Some(k) => (k.to_string(), ""),
            None => (t.to_string(), ""),
        },
    }
}

/// One block's text (no blank lines inside) as a [`Block`]; `header` for the trace's
/// first block. None for an empty text.
pub(crate) fn parse_block(text: &str, header: bool) -> Option<Block<'_>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let mut block = if header {
        Block {
            event: "header",
            fields: Vec::new(),
        }
    } else {
        let line = lines.next()?;
        let (event, value) = line.split_once(": ").unwrap_or((line, ""));
        Block {
            event,
            fields: vec![("result".to_string(), value)],
        }
    };
    for line in lines {
        block.fields.push(split_kv(line));
    }
    if header && block.fields.is_empty() {
        return None;
    }
    Some(block)
}

/// Whether `b` is a whole event `ignore` drops: its name is an entry, or starts with an
/// entry and a space (`batch` drops `batch 3`).
pub(crate) fn skipped(b: &Block<'_>, ignore: &[&str]) -> bool {
    ignore
        .iter()
        .any(|i| b.event == *i || b.event.strip_prefix(i).is_some_and(|r| r.starts_with(' ')))
}

fn kept_field(f: &(String, &str), ignore: &[&str]) -> bool {
    !ignore
        .iter()
        .any(|i| f.0 == *i || f.0.strip_prefix(i).is_some_and(|r| r.starts_with('+')))
}

/// The first difference between two kept blocks at the same position.
pub(crate) fn compare_blocks(
    ba: &Block<'_>,
    bb: &Block<'_>,
    ignore: &[&str],
) -> Option<Divergence> {
    if ba.event != bb.event {
        return Some(Divergence {
            event: ba.event.to_string(),
            field: "event".into(),
            left: ba.event.to_string(),
            right: bb.event.to_string(),
        });
    }
    let fa: Vec<_> = ba.fields.iter().filter(|f| kept_field(f, ignore)).collect();
    let fb: Vec<_> = bb.fields.iter().filter(|f| kept_field(f, ignore)).collect();
    for i in 0..fa.len().max(fb.len()) {
        match (fa.get(i), fb.get(i)) {
            (Some(x), Some(y)) if x == y => continue,
            (Some(x), Some(y)) if x.0 == y.0 => {
                return Some(Divergence {
                    event: ba.event.to_string(),
                    field: x.0.clone(),
                    left: x.1.to_string(),
                    right: y.1.to_string(),
                })
            }
            (x, y) => {
                let show = |f: Option<&&(String, &str)>| match f {
                    Some(f) => format!("{}: {}", f.0, f.1),
                    None => "(absent)".to_string(),
                };
                let field = x.or(y).map(|f| f.0.clone()).unwrap_or_default();
                return Some(Divergence {
                    event: ba.event.to_string(),
                    field,
                    left: show(x),
                    right: show(y),
                });
            }
        }
    }
    None
}

/// One side ran out of events: the other side's next event (or "(no more events)").
pub(crate) fn extra_event(left: Option<&Block<'_>>, right: Option<&Block<'_>>) -> Divergence {
    let name = |b: Option<&Block<'_>>| {
        b.map(|b| b.event.to_string())
            .unwrap_or_else(|| "(no more events)".into())
    };
    Divergence {
        event: name(left.or(right)),
        field: "event".into(),
        left: name(left),
        right: name(right),
    }
}

/// The first difference between traces `left` and `right`, ignoring fields named in
/// `ignore` (model-only fields when comparing with the real kernel) and whole events
/// whose name is, or starts with, an entry and a space (`batch` drops `batch 3`).
/// The one comparison engine, [`super::diff_stream`], on two texts in memory.
pub fn first_divergence(left: &str, right: &str, ignore: &[&str]) -> Option<Divergence> {
    match super::diff_stream::first_divergence_streams(left.as_bytes(), right.as_bytes(), ignore) {
        Ok((d, _)) => d,
        // Only a line over MAX_LINE bytes fails (no trace writes one): a difference.
        Err(e) => Some(Divergence {
            event: "(trace)".into(),
            field: "line".into(),
            left: format!("{e:?}"),
            right: String::new(),
        }),
    }
}

/// The blocks of `text` as the one engine reads them ([`super::diff_stream::BlockReader`]):
/// each block's text and whether it is the header.
fn block_texts(text: &str) -> Vec<(String, bool)> {
    let mut r = super::diff_stream::BlockReader::new(text.as_bytes());
    let mut out = Vec::new();
    // Reading from memory fails only on a line over MAX_LINE bytes: the blocks before it.
    while let Ok(Some((t, h))) = r.next_block() {
        out.push((t.to_string(), h));
    }
    out
}

/// Each block with its occurrence among blocks of its name.
fn keyed<'v, 'a>(blocks: &'v [Block<'a>]) -> Vec<(usize, &'v Block<'a>)> {
    let mut seen: std::collections::BTreeMap<&str, usize> = Default::default();
    blocks
        .iter()
        .map(|b| {
            let n = seen.entry(b.event).or_default();
            *n += 1;
            (*n - 1, b)
        })
        .collect()
}

fn find_block<'v, 'a>(
    v: &[(usize, &'v Block<'a>)],
    event: &str,
    n: usize,
) -> Option<&'v Block<'a>> {
    v.iter()
        .find(|(m, x)| x.event == event && *m == n)
        .map(|(_, x)| *x)
}

/// Every field where `left` and `right` differ, not just the first (`skbsim lab conform`
/// lists them all). Events are matched by name and, for a name that repeats (`stack
/// (after 0)` once per frame), by its occurrence; fields by key. `ignore` works as in
/// [`first_divergence`]; the `bytes` heading itself is no field. An event on one side
/// only is field `event`, `present` against `(absent)`.
pub fn all_differences(left: &str, right: &str, ignore: &[&str]) -> Vec<Divergence> {
    let (ta, tb) = (block_texts(left), block_texts(right));
    all_block_differences(&kept_blocks(&ta, ignore), &kept_blocks(&tb, ignore))
}

/// The blocks of `texts` and their fields that `ignore` keeps.
fn kept_blocks<'a>(texts: &'a [(String, bool)], ignore: &[&str]) -> Vec<Block<'a>> {
    texts
        .iter()
        .filter_map(|(t, h)| parse_block(t, *h))
        .filter(|b| !skipped(b, ignore))
        .map(|mut b| {
            b.fields.retain(|f| kept_field(f, ignore));
            b
        })
        .collect()
}

/// [`all_differences`] of two traces as blocks (what is left out already left out).
pub(crate) fn all_block_differences(a: &[Block<'_>], b: &[Block<'_>]) -> Vec<Divergence> {
    let (a, b) = (keyed(a), keyed(b));
    let absent = || "(absent)".to_string();
    let keep = |f: &&(String, &str)| f.0 != "bytes";
    let mut out = Vec::new();
    for (n, ba) in &a {
        let Some(bb) = find_block(&b, ba.event, *n) else {
            out.push(Divergence {
                event: ba.event.to_string(),
                field: "event".into(),
                left: "present".into(),
                right: absent(),
            });
            continue;
        };
        let fa: Vec<_> = ba.fields.iter().filter(keep).collect();
        let fb: Vec<_> = bb.fields.iter().filter(keep).collect();
        for (k, v) in &fa {
            let other = fb.iter().find(|f| &f.0 == k).map(|f| f.1);
            if other != Some(*v) {
                out.push(Divergence {
                    event: ba.event.to_string(),
                    field: k.clone(),
                    left: v.to_string(),
                    right: other.map_or_else(absent, str::to_string),
                });
            }
        }
        for (k, v) in &fb {
            if !fa.iter().any(|f| &f.0 == k) {
                out.push(Divergence {
                    event: ba.event.to_string(),
                    field: k.clone(),
                    left: absent(),
                    right: v.to_string(),
                });
            }
        }
    }
    for (n, bb) in &b {
        if find_block(&a, bb.event, *n).is_none() {
            out.push(Divergence {
                event: bb.event.to_string(),
                field: "event".into(),
                left: absent(),
                right: "present".into(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIM: &str = "scenario: tun-read/x\nbackend: sim\n\nread 0 (frame 0, ts 1.000000000): buffer 100 -> 64\n  skb: len 60\n  vnet: flags 0 csum_start 0\n  counters: tx_packets 1\n  bytes:\n    0000: 01 02\n    0010: 03 04\n\ntotals: reads 1\n";

    #[test]
    fn every_differing_field_is_listed() {
        let real = SIM
            .replace("backend: sim", "backend: tap")
            .replace("  skb: len 60\n", "")
            .replace("flags 0 csum_start 0", "flags 0 csum_start 4")
            .replace("0010: 03 04", "0010: 03 05")
            .replace("reads 1", "reads 2");
        let d = all_differences(SIM, &real, &["backend", "skb"]);
        let fields: Vec<(&str, &str)> = d
            .iter()
            .map(|x| (x.event.as_str(), x.field.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                ("read 0 (frame 0, ts 1.000000000)", "vnet"),
                ("read 0 (frame 0, ts 1.000000000)", "bytes+0010"),
                ("totals", "result"),
            ]
        );
        assert_eq!(d[0].right, "flags 0 csum_start 4");
        assert!(all_differences(SIM, SIM, &[]).is_empty());
    }

    #[test]
    fn missing_events_are_named() {
        let real = SIM.replace("totals: reads 1\n", "");
        let d = all_differences(SIM, &real, &[]);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].event.as_str(), d[0].right.as_str()),
            ("totals", "(absent)")
        );
    }

    #[test]
    fn repeated_event_names_are_matched_by_occurrence() {
        let a = "h: 1\n\nstack (after 0): x\n  len: 60\n\nstack (after 0): x\n  len: 61\n";
        let b = a.replace("len: 61", "len: 62");
        let d = all_differences(a, &b, &[]);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].left.as_str(), d[0].right.as_str()), ("61", "62"));
        // An ignored block name drops every block of that name.
        assert!(all_differences(a, &b, &["stack"]).is_empty());
    }

    const A: &str = "scenario: x\nprofile: linux-6.18\n\nread 0 (frame 0, ts 1.0): buffer 100 -> 64\n  pi: flags 0x0000 proto 0x0800\n  bytes:\n    0000: 00 01\n    0010: 02 03\n\ntotals: reads 1\n";

    #[test]
    fn identical_traces_have_no_divergence() {
        assert_eq!(first_divergence(A, A, &[]), None);
    }

    #[test]
    fn names_the_event_and_field() {
        let b = A.replace("flags 0x0000", "flags 0x0001");
        let d = first_divergence(A, &b, &[]).unwrap();
        assert_eq!(d.event, "read 0 (frame 0, ts 1.0)");
        assert_eq!(d.field, "pi");
        assert_eq!(d.left, "flags 0x0000 proto 0x0800");
        assert_eq!(d.right, "flags 0x0001 proto 0x0800");
        let b = A.replace("0010: 02 03", "0010: 02 04");
        assert_eq!(first_divergence(A, &b, &[]).unwrap().field, "bytes+0010");
        let b = A.replace("-> 64", "-> 60");
        assert_eq!(first_divergence(A, &b, &[]).unwrap().field, "result");
        let b = A.replace("linux-6.18", "linux-3.12");
        let d = first_divergence(A, &b, &[]).unwrap();
        assert_eq!((d.event.as_str(), d.field.as_str()), ("header", "profile"));
    }

    #[test]
    fn ignored_events_are_dropped_whole() {
        let b = A.replace(
            "\ntotals: reads 1\n",
            "\nbatch 0: 1 packets\n  reason: x\n\ntotals: reads 1\n",
        );
        assert!(first_divergence(A, &b, &[]).is_some());
        assert_eq!(first_divergence(A, &b, &["batch"]), None);
        // "batch" does not swallow "batched" or the header.
        assert!(first_divergence(A, &A.replace("totals", "batched"), &["batch"]).is_some());
    }

    #[test]
    fn ignored_fields_do_not_count_and_missing_events_do() {
        let b = A.replace("flags 0x0000", "flags 0x0001");
        assert_eq!(first_divergence(A, &b, &["pi"]), None);
        let short = A.replace("\ntotals: reads 1\n", "");
        let d = first_divergence(A, &short, &[]).unwrap();
        assert_eq!(d.event, "totals");
        assert_eq!(d.right, "(no more events)");
    }
}
