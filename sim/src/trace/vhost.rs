//! The trace of a vhost-tx run: the worker's kicks, batches, used-ring updates and
//! requeues; each packet's path and fate; what the host saw; the op counts.

use std::fmt::Write as _;

use crate::scenario::{GuestFill, Scenario};
use crate::vhost::{VhostEvent, VhostOps, Via};

use crate::text;

use super::write::{action_line, fate_into};

/// Fields that describe how packets were grouped, not what became of them: ignore these
/// (and the worker's blocks) to compare two profiles' verdicts and bytes.
pub const VHOST_GROUPING_FIELDS: [&str; 7] = [
    "via",
    "kick",
    "batch",
    "used",
    "requeue",
    "ops",
    "per_packet",
];

fn range(p: &[u64]) -> String {
    match (p.first(), p.last()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) if (b - a) as usize + 1 == p.len() => format!("{a}-{b}"),
        _ => p
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

pub fn render_worker(out: &mut String, e: &VhostEvent) {
    match e {
        VhostEvent::Kick { available } => {
            let _ = writeln!(out, "kick: {available} descriptors available");
        }
        VhostEvent::Batch {
            batch,
            packets,
            reason,
            xdp_flushes,
        } => {
            let _ = writeln!(
                out,
                "batch {batch}: {} packets in one TUN_MSG_PTR sendmsg",
                packets.len()
            );
            let _ = writeln!(out, "  packets: {}", range(packets));
            let _ = writeln!(out, "  reason: {}", reason.name());
            let _ = writeln!(out, "  xdp_do_flush: {xdp_flushes}");
        }
        VhostEvent::Packet(p) => {
            // A block per packet: by hand (see crate::text).
            out.push_str("packet ");
            text::dec(out, p.packet);
            out.push_str(" (ts ");
            text::ts(out, p.ts_ns);
            out.push_str("): ");
            match p.result {
                Ok(()) => out.push_str("ok"),
                Err(e) => out.push_str(e.name()),
            }
            out.push_str("\n  via: ");
            match p.via {
                Via::Batch(b) => {
                    out.push_str("batch ");
                    text::dec(out, b);
                }
                Via::Single { more: true } => out.push_str("sendmsg alone (MSG_MORE)"),
                Via::Single { more: false } => out.push_str("sendmsg alone"),
            }
            out.push('\n');
            if let Some(x) = &p.xdp {
                let _ = writeln!(out, "  xdp: {}", action_line(x));
            }
            out.push_str("  fate: ");
            fate_into(out, &p.fate);
            out.push('\n');
        }
        VhostEvent::Used { heads } => {
            let _ = writeln!(out, "used: {heads} heads, one vhost_add_used_and_signal_n");
        }
        VhostEvent::Requeue { packets, bytes } => {
            let _ = writeln!(
                out,
                "requeue: weight reached after {packets} packets, {bytes} bytes"
            );
        }
        VhostEvent::Stall { packet, errno } => {
            let _ = writeln!(out, "stall: packet {packet} put back after {errno}");
        }
    }
}

pub fn ops_lines(out: &mut String, o: &VhostOps, packets: u64) {
    let _ = writeln!(
        out,
        "  ops: sendmsg batched {} single {}, xdp_do_flush {}, used updates {}, signals {}, requeues {}, handle_tx runs {}, bytes copied {}, page puts {}",
        o.sendmsg_batched, o.sendmsg_single, o.xdp_flushes, o.used_updates, o.signals, o.requeues,
        o.handle_tx_runs, o.bytes_copied, o.page_puts
    );
    if packets > 0 {
        let per = |x: u64| x as f64 / packets as f64;
        let _ = writeln!(
            out,
            "  per_packet: sendmsg {:.4}, xdp_do_flush {:.4}, used updates {:.4}",
            per(o.sendmsg_batched + o.sendmsg_single),
            per(o.xdp_flushes),
            per(o.used_updates)
        );
    }
}

/// The `guest:` header line of a vhost-tx trace.
pub fn guest_line(out: &mut String, scenario: &Scenario) {
    if let Some(g) = &scenario.guest {
        let fill = match g.fill {
            GuestFill::All => "all at once".to_string(),
            GuestFill::Burst(n) => format!("bursts of {n}"),
            GuestFill::Trickle => "one packet per kick".to_string(),
        };
        let _ = writeln!(
            out,
            "guest: virtio_net_hdr {} bytes, fills {fill}",
            g.hdr_len
        );
    }
}

/// Blocks of a vhost-tx trace that only the model can produce: how the worker grouped
/// packets into TUN_MSG_PTR batches or single sendmsgs, each packet's path and verdict,
/// the weight requeues and put-back stalls. The real kernel shows none of them; the
/// conformance check lists them as model-only instead of comparing them.
pub const VHOST_MODEL_ONLY_BLOCKS: [&str; 4] = ["batch ", "packet ", "requeue:", "stall:"];

/// What of a vhost-tx trace the real kernel can show: the header, each kick, the
/// used-ring entries returned after it (the model's per-flush `used:` blocks summed: the
/// guest sees only the ring's idx move), the host's events, and the totals without the
/// op counts. Both the simulator's and the real arm's traces go through this before
/// they are compared.
pub fn observable(trace: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut used: Option<usize> = None;
    let flush = |out: &mut Vec<String>, used: &mut Option<usize>| {
        if let Some(n) = used.take() {
            out.push(format!("used: {n} descriptors returned to the guest"));
        }
    };
    for block in trace.split("\n\n") {
        let first = block.lines().next().unwrap_or("");
        if VHOST_MODEL_ONLY_BLOCKS.iter().any(|p| first.starts_with(p)) {
            continue;
        }
        if let Some(rest) = first.strip_prefix("used: ") {
            let n: usize = rest
                .split_whitespace()
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or(0);
            *used.get_or_insert(0) += n;
            continue;
        }
        flush(&mut out, &mut used);
        if first.starts_with("totals:") {
            let kept: Vec<&str> = block
                .lines()
                .filter(|l| !l.starts_with("  ops:") && !l.starts_with("  per_packet:"))
                .collect();
            out.push(kept.join("\n"));
        } else {
            out.push(block.trim_end_matches('\n').to_string());
        }
    }
    flush(&mut out, &mut used);
    let mut s = out.join("\n\n");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::observable;

    const TRACE: &str = "scenario: vhost-tx/x\nbackend: sim\n\nkick: 3 descriptors available\n\nbatch 0: 2 packets in one TUN_MSG_PTR sendmsg\n  packets: 0-1\n\npacket 0 (ts 1.000000000): ok\n  via: batch 0\n\nused: 2 heads, one vhost_add_used_and_signal_n\n\npacket 2 (ts 1.000002000): ok\n  via: sendmsg alone\n\nused: 1 heads, one vhost_add_used_and_signal_n\n\nread A 0 (frame 2, ts 1.000002000): buffer 100 -> 60\n  counters: tx_packets 1\n\ntotals:\n  counters A: tx_packets 1\n  ops: sendmsg batched 1 single 1\n  per_packet: sendmsg 0.6667\n";

    #[test]
    fn batches_and_packets_go_and_used_returns_are_summed_per_kick() {
        let o = observable(TRACE);
        assert_eq!(
            o,
            "scenario: vhost-tx/x\nbackend: sim\n\nkick: 3 descriptors available\n\nused: 3 descriptors returned to the guest\n\nread A 0 (frame 2, ts 1.000002000): buffer 100 -> 60\n  counters: tx_packets 1\n\ntotals:\n  counters A: tx_packets 1\n"
        );
        // The real arm's trace (one used block per kick, no batches) reduces to the same.
        let real = "scenario: vhost-tx/x\nbackend: sim\n\nkick: 3 descriptors available\n\nused: 3 heads, one vhost_add_used_and_signal_n\n\nread A 0 (frame 2, ts 1.000002000): buffer 100 -> 60\n  counters: tx_packets 1\n\ntotals:\n  counters A: tx_packets 1\n  ops: sendmsg batched 0 single 0\n";
        assert_eq!(observable(real), o);
    }

    #[test]
    fn a_kick_with_nothing_returned_shows_no_used_line() {
        let t = "kick: 1 descriptors available\n\nstall: packet 0 put back after EAGAIN\n\nkick: 2 descriptors available\n\nused: 2 heads, one vhost_add_used_and_signal_n\n";
        assert_eq!(
            observable(t),
            "kick: 1 descriptors available\n\nkick: 2 descriptors available\n\nused: 2 descriptors returned to the guest\n"
        );
    }
}
