use super::*;
use crate::trace::diff::{compare_blocks, extra_event, skipped, split_kv, Block};

// The whole-text comparison the streaming engine replaced, kept here as the reference
// the engine must agree with (written independently: every block at once).
fn blocks(text: &str) -> Vec<Block<'_>> {
    let mut out: Vec<Block<'_>> = Vec::new();
    let mut current: Option<Block<'_>> = None;
    let mut first = true;
    for line in text.lines() {
        if line.trim().is_empty() {
            if let Some(b) = current.take() {
                out.push(b);
            }
            first = false;
            continue;
        }
        let indented = line.starts_with(' ');
        if current.is_none() {
            if first {
                current = Some(Block {
                    event: "header",
                    fields: Vec::new(),
                });
            } else {
                let (event, value) = line.split_once(": ").unwrap_or((line, ""));
                current = Some(Block {
                    event,
                    fields: vec![("result".to_string(), value)],
                });
                continue;
            }
        }
        if let Some(b) = current.as_mut() {
            let _ = indented;
            let (k, v) = split_kv(line);
            b.fields.push((k, v));
        }
    }
    if let Some(b) = current {
        out.push(b);
    }
    out
}

/// The first difference between traces `left` and `right`, ignoring fields named in
/// `ignore` (model-only fields when comparing with the real kernel) and whole events
/// whose name is, or starts with, an entry and a space (`batch` drops `batch 3`).
fn first_divergence(left: &str, right: &str, ignore: &[&str]) -> Option<Divergence> {
    let a: Vec<Block<'_>> = blocks(left)
        .into_iter()
        .filter(|b| !skipped(b, ignore))
        .collect();
    let b: Vec<Block<'_>> = blocks(right)
        .into_iter()
        .filter(|b| !skipped(b, ignore))
        .collect();
    for (ba, bb) in a.iter().zip(b.iter()) {
        if let Some(d) = compare_blocks(ba, bb, ignore) {
            return Some(d);
        }
    }
    if a.len() != b.len() {
        let n = a.len().min(b.len());
        return Some(extra_event(a.get(n), b.get(n)));
    }
    None
}

const A: &str = "scenario: x\nprofile: linux-6.18\n\nread 0 (frame 0, ts 1.0): buffer 100 -> 64\n  pi: flags 0x0000 proto 0x0800\n  bytes:\n    0000: 00 01\n    0010: 02 03\n\nbatch 0: 1 packets\n  reason: x\n\ntotals: reads 1\n";

/// The streaming answer, the right side pushed in pieces of `chunk` bytes.
fn streamed(left: &str, right: &str, ignore: &[&str], chunk: usize) -> Option<Divergence> {
    let mut d = StreamDiff::new(left.as_bytes(), ignore);
    let mut rest = right;
    while !rest.is_empty() {
        let mut n = chunk.min(rest.len());
        while !rest.is_char_boundary(n) {
            n += 1;
        }
        d.push(&rest[..n]).unwrap();
        rest = &rest[n..];
    }
    d.finish().unwrap().0
}

fn variants(base: &str) -> Vec<String> {
    vec![
        base.to_string(),
        base.replace("flags 0x0000", "flags 0x0001"),
        base.replace("0010: 02 03", "0010: 02 04"),
        base.replace("-> 64", "-> 60"),
        base.replace("linux-6.18", "linux-3.12"),
        base.replace("\ntotals: reads 1\n", ""),
        base.replace("batch 0: 1 packets\n  reason: x\n\n", ""),
        base.replace("  pi: flags 0x0000 proto 0x0800\n", ""),
        format!("{base}\nextra 1: x\n"),
        base.replace("read 0", "read 1"),
    ]
}

#[test]
fn streaming_gives_the_answer_of_the_whole_text_comparison() {
    for ignore in [&[][..], &["batch"][..], &["pi", "profile"][..]] {
        for l in variants(A) {
            for r in variants(A) {
                let want = first_divergence(&l, &r, ignore);
                for chunk in [1, 7, 64, 10_000] {
                    assert_eq!(streamed(&l, &r, ignore, chunk), want, "{l:?} vs {r:?}");
                }
                let both = first_divergence_streams(l.as_bytes(), r.as_bytes(), ignore)
                    .map_err(|e| format!("{e:?}"))
                    .unwrap()
                    .0;
                assert_eq!(both, want, "{l:?} vs {r:?} (two readers)");
            }
        }
    }
}

#[test]
fn every_golden_streams_to_itself_and_to_a_changed_copy() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden");
    let mut seen = 0;
    for area in std::fs::read_dir(&root).unwrap() {
        let area = area.unwrap().path();
        if !area.is_dir() {
            continue;
        }
        for dir in std::fs::read_dir(area).unwrap() {
            let snap = dir.unwrap().path().join("trace.snap");
            let Ok(text) = std::fs::read_to_string(&snap) else {
                continue;
            };
            let body = text.splitn(3, "---\n").nth(2).unwrap_or(&text).to_string();
            let (d, same) =
                first_divergence_streams(text.as_bytes(), body.as_bytes(), &[]).unwrap();
            assert_eq!(d, None, "{}", snap.display());
            assert!(same, "{}", snap.display());
            // Change the last counters line: both comparisons name the same place.
            if let Some(pos) = body.rfind("tx_packets ") {
                let changed = format!("{}tx_packets 9{}", &body[..pos], &body[pos + 11..]);
                let want = first_divergence(&body, &changed, &[]);
                assert!(want.is_some(), "{}", snap.display());
                assert_eq!(
                    streamed(&text, &changed, &[], 4096),
                    want,
                    "{}",
                    snap.display()
                );
            }
            seen += 1;
        }
    }
    assert!(seen > 100, "only {seen} goldens");
}

#[test]
fn a_line_without_end_is_bounded() {
    let long = "x".repeat(MAX_LINE + 10);
    let mut r = BlockReader::new(long.as_bytes());
    assert!(r.next_block().is_err());
}
