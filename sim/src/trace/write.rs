//! The trace of a tap-write run: a block per write, per frame the stack received, per read
//! on A and on B, then the final counters and the program's maps.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::bpf::xdp::XdpAction;
use crate::bpf::Maps;
use crate::pipeline::tap_write::{program_label, WriteEvent, WriteRecord};
use crate::scenario::Scenario;
use crate::text;
use crate::tun::write::Fate;
use crate::tun::{DeviceKind, TunStats};
use crate::wire::summary::{describe_into, describe_l3_into, vlan_tci_into};

use super::render::{counters, counters_into, describe_device, hexdump, result_into, stats_json};
use super::TraceHeader;
use crate::pipeline::tun_read_trace::render_read;

/// Trace fields only the model knows (besides the tun-read ones).
pub const WRITE_MODEL_ONLY_FIELDS: [&str; 4] = ["path", "xdp", "fate", "insns"];

fn action_name(a: u32) -> String {
    match XdpAction::from_u32(a) {
        Some(x) => x.name().to_string(),
        None => format!("unknown action {a}"),
    }
}

pub(crate) fn fate_line(f: &Fate) -> String {
    let mut s = String::new();
    fate_into(&mut s, f);
    s
}

/// What became of a frame, appended to `out`.
pub(crate) fn fate_into(out: &mut String, f: &Fate) {
    match f {
        Fate::Rejected => out.push_str("rejected before an skb existed"),
        Fate::Stack => out.push_str("delivered to the stack"),
        Fate::XdpDropped => out.push_str("dropped by XDP"),
        Fate::XdpTx => out.push_str("sent back out of A (XDP_TX)"),
        Fate::XdpRedirected { ifindex } => {
            out.push_str("redirected to ifindex ");
            crate::text::dec(out, *ifindex);
        }
        Fate::XdpError(e) => {
            let _ = write!(out, "XDP action failed: {e}");
        }
        Fate::Dropped(why) => {
            out.push_str("dropped: ");
            out.push_str(why);
        }
    }
}

pub(crate) fn action_line(x: &crate::tun::write::XdpReport) -> String {
    let redirect = x
        .redirect_to
        .map(|i| format!(" to ifindex {i}"))
        .unwrap_or_default();
    format!(
        "{} {}{redirect} len {} -> {} insns {}",
        x.place.name(),
        action_name(x.action),
        x.len_before,
        x.len_after,
        x.insns
    )
}

/// The block of one write; its every-write lines by hand (see crate::text).
fn render_write(out: &mut String, w: &WriteRecord) {
    // "write {} (frame {}, ts {}): {} bytes {blocking} -> {result}"
    out.push_str("write ");
    text::dec(out, w.write);
    out.push_str(" (frame ");
    text::dec(out, w.frame);
    out.push_str(", ts ");
    text::ts(out, w.ts_ns);
    out.push_str("): ");
    text::dec(out, w.len);
    out.push_str(if w.nonblocking {
        " bytes nonblocking -> "
    } else {
        " bytes blocking -> "
    });
    result_into(out, w.result);
    out.push('\n');
    if let Some(m) = &w.model {
        if let Some(p) = m.path {
            out.push_str("  path: ");
            out.push_str(p.name());
            out.push('\n');
        }
        for x in &m.xdp {
            let redirect = x
                .redirect_to
                .map(|i| format!(" to ifindex {i}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  xdp: {} {}{redirect} len {} -> {} insns {}",
                x.place.name(),
                action_name(x.action),
                x.len_before,
                x.len_after,
                x.insns
            );
        }
        out.push_str("  fate: ");
        fate_into(out, &m.fate);
        out.push('\n');
    }
    out.push_str("  counters A: ");
    counters_into(out, &w.stats);
    out.push('\n');
    if let Some(b) = &w.redirect_stats {
        out.push_str("  counters B: ");
        counters_into(out, b);
        out.push('\n');
    }
}

/// The header lines of a tap-write or vhost-tx trace.
pub fn render_header(out: &mut String, header: &TraceHeader, scenario: &Scenario) {
    let _ = writeln!(out, "scenario: {}", header.scenario);
    let _ = writeln!(out, "description: {}", header.description);
    let _ = writeln!(out, "backend: {}", header.backend);
    let _ = writeln!(out, "profile: {}", header.profile);
    let _ = writeln!(out, "device: {}", header.device);
    if let Some(b) = &scenario.redirect {
        let _ = writeln!(out, "redirect: {}", describe_device(b));
    }
    if let Some(x) = &scenario.xdp {
        let _ = writeln!(out, "xdp: {} {}", program_label(x), x.mode.name());
    }
    let _ = writeln!(out, "reader: {}", header.reader);
    let _ = writeln!(out, "input: {}", header.input);
}

/// The final counters of A and B and the program's maps.
pub fn render_totals(out: &mut String, a: &TunStats, b: Option<&TunStats>, maps: Option<&Maps>) {
    let _ = writeln!(out, "  counters A: {}", counters(a));
    if let Some(b) = b {
        let _ = writeln!(out, "  counters B: {}", counters(b));
    }
    if let Some(maps) = maps {
        for m in maps.iter().filter(|m| !m.spec().map_type.is_devmap()) {
            for (k, v) in m.dump() {
                let _ = writeln!(out, "  map {}[{}]: {}", m.name(), le_num(&k), le_num(&v));
            }
        }
    }
}

/// One host-side event (a write, a stack delivery, a read on A or B), tracking the
/// latest counters of A and B.
pub fn render_host_event(
    out: &mut String,
    scenario: &Scenario,
    e: &WriteEvent,
    last_a: &mut TunStats,
    last_b: &mut Option<TunStats>,
) {
    match e {
        WriteEvent::Write(w) => {
            render_write(out, w);
            *last_a = w.stats;
            *last_b = w.redirect_stats;
        }
        WriteEvent::Stack { write, delivery } => {
            out.push_str("stack (after ");
            text::dec(out, *write);
            out.push_str("): ");
            text::dec(out, delivery.frame.len());
            out.push_str(" bytes\n");
            if let Some(v) = delivery.vlan {
                out.push_str("  vlan: ");
                vlan_tci_into(out, v.proto, v.tci);
                out.push('\n');
            }
            out.push_str("  protocol: ");
            text::hex0x(out, u64::from(delivery.protocol), 4);
            out.push_str("\n  summary: ");
            // An IFF_TUN device's stack sees the packet from the network header on.
            match scenario.device.kind {
                DeviceKind::Tap => describe_into(out, &delivery.frame),
                DeviceKind::Tun => describe_l3_into(out, delivery.protocol, &delivery.frame),
            }
            out.push('\n');
            out.push_str("  bytes:\n");
            hexdump(out, &delivery.frame);
        }
        WriteEvent::Read {
            on_redirect,
            record,
        } => {
            let (label, dev) = if *on_redirect {
                (
                    "read B",
                    scenario.redirect.as_ref().unwrap_or(&scenario.device),
                )
            } else {
                ("read A", &scenario.device)
            };
            render_read(out, label, record, dev);
            if *on_redirect {
                *last_b = Some(record.stats);
            } else {
                *last_a = record.stats;
            }
        }
    }
}

/// A little-endian key or value as a number when it is 1-8 bytes, else hex.
fn le_num(b: &[u8]) -> String {
    if (1..=8).contains(&b.len()) {
        let mut v = [0u8; 8];
        v[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(v).to_string()
    } else {
        super::render::hex_string(b)
    }
}

/// The JSON of one host-side event.
pub fn tap_write_event_json(e: &WriteEvent) -> Value {
    match e {
        WriteEvent::Write(w) => json!({
            "event": "write", "write": w.write, "frame": w.frame, "ts_ns": w.ts_ns,
            "len": w.len, "nonblocking": w.nonblocking,
            "result": match w.result { Ok(n) => json!(n), Err(e) => json!(e.name()) },
            "counters": stats_json(&w.stats),
            "redirect_counters": w.redirect_stats.as_ref().map(stats_json),
            "model": w.model.as_ref().map(|m| json!({
                "path": m.path.map(|p| p.name()),
                "xdp": m.xdp.iter().map(|x| json!({
                    "place": x.place.name(), "action": x.action,
                    "len_before": x.len_before, "len_after": x.len_after,
                    "redirect_to": x.redirect_to, "insns": x.insns,
                })).collect::<Vec<_>>(),
                "fate": fate_line(&m.fate),
            })),
        }),
        WriteEvent::Stack { write, delivery } => json!({
            "event": "stack", "write": write, "protocol": delivery.protocol,
            "vlan": delivery.vlan.map(|v| json!({"proto": v.proto, "tci": v.tci})),
            "bytes": super::render::hex_string(&delivery.frame),
        }),
        WriteEvent::Read {
            on_redirect,
            record,
        } => json!({
            "event": "read", "device": if *on_redirect { "B" } else { "A" },
            "read": record.read, "buffer": record.buffer_len,
            "result": match record.result { Ok(n) => json!(n), Err(e) => json!(e.name()) },
            "counters": stats_json(&record.stats),
            "bytes": super::render::hex_string(&record.data),
        }),
    }
}
