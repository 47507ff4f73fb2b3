//! Every differing field between two text traces (not just the first, as `skbsim diff`
//! shows), and the hex encoding the guest uses for pcaps on the serial line.

use std::collections::HashMap;

pub(super) fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// One differing field between the simulator's and the guest's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDiff {
    /// `read 0 (frame 0, ts 1.000000000)`, `header`, `totals`.
    pub event: String,
    /// `vnet`, `counters`, `bytes+0010`, `result`, or `event` when a whole event is
    /// missing on one side.
    pub field: String,
    pub sim: String,
    pub real: String,
}

type Block = (String, Vec<(String, String)>);

/// The events of a text trace: the header, then each blank-line-separated block named by
/// its first line up to `: ` (its rest is the `result` field). Hexdump lines are
/// `bytes+XXXX` fields.
fn trace_blocks(text: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut current: Option<Block> = None;
    let mut first = true;
    for line in text.lines() {
        if line.trim().is_empty() {
            if let Some(b) = current.take() {
                out.push(b);
            }
            first = false;
            continue;
        }
        let t = line.trim_start();
        let (k, v) = match t.split_once(": ") {
            Some((k, v)) if k.len() == 4 && k.chars().all(|c| c.is_ascii_hexdigit()) => {
                (format!("bytes+{k}"), v.to_string())
            }
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (t.trim_end_matches(':').to_string(), String::new()),
        };
        match current.as_mut() {
            Some(b) => b.1.push((k, v)),
            None if first => current = Some(("header".into(), vec![(k, v)])),
            None => current = Some((k, vec![("result".into(), v)])),
        }
    }
    if let Some(b) = current {
        out.push(b);
    }
    out
}

/// Every field that differs between two traces, events matched by name, fields by key
/// (fields in `ignore` and the `bytes:` heading left out).
pub fn all_differences(sim: &str, real: &str, ignore: &[&str]) -> Vec<FieldDiff> {
    let keep = |k: &str| {
        k != "bytes"
            && !ignore
                .iter()
                .any(|i| k == *i || k.starts_with(&format!("{i}+")))
    };
    let a = trace_blocks(sim);
    let b = trace_blocks(real);
    let b_by_name: HashMap<&str, &Block> = b.iter().map(|x| (x.0.as_str(), x)).collect();
    let a_names: std::collections::HashSet<&str> = a.iter().map(|x| x.0.as_str()).collect();
    let mut out = Vec::new();
    let absent = "(absent)".to_string();
    for (event, fa) in &a {
        let Some((_, fb)) = b_by_name.get(event.as_str()) else {
            out.push(FieldDiff {
                event: event.clone(),
                field: "event".into(),
                sim: "present".into(),
                real: absent.clone(),
            });
            continue;
        };
        let ma: Vec<&(String, String)> = fa.iter().filter(|f| keep(&f.0)).collect();
        let mb: Vec<&(String, String)> = fb.iter().filter(|f| keep(&f.0)).collect();
        for (k, v) in &ma {
            let other = mb.iter().find(|f| &f.0 == k).map(|f| &f.1);
            if other != Some(v) {
                out.push(FieldDiff {
                    event: event.clone(),
                    field: k.clone(),
                    sim: v.clone(),
                    real: other.cloned().unwrap_or_else(|| absent.clone()),
                });
            }
        }
        for (k, v) in &mb {
            if !ma.iter().any(|f| &f.0 == k) {
                out.push(FieldDiff {
                    event: event.clone(),
                    field: k.clone(),
                    sim: absent.clone(),
                    real: v.clone(),
                });
            }
        }
    }
    for (event, _) in &b {
        if !a_names.contains(event.as_str()) {
            out.push(FieldDiff {
                event: event.clone(),
                field: "event".into(),
                sim: absent.clone(),
                real: "present".into(),
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
        assert_eq!(d[0].real, "flags 0 csum_start 4");
        assert!(all_differences(SIM, SIM, &[]).is_empty());
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(
            unhex(&hex(&[0, 1, 0xfe, 0xff])),
            Some(vec![0, 1, 0xfe, 0xff])
        );
        assert_eq!(unhex("abc"), None);
    }

    #[test]
    fn missing_events_are_named() {
        let real = SIM.replace("totals: reads 1\n", "");
        let d = all_differences(SIM, &real, &[]);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].event.as_str(), d[0].real.as_str()),
            ("totals", "(absent)")
        );
    }
}
