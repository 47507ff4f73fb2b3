//! The tap-write pipeline's events (and vhost-tx's host side) as trace records
//! ([`crate::trace::record`]). Seen by both arms: what write() returned, what the stack
//! received on A (AF_PACKET with PACKET_AUXDATA: the tag, the protocol, the bytes), the
//! reads on A and B, the device counters and the XDP program's maps (read back with
//! BPF_MAP_GET_NEXT_KEY / LOOKUP_ELEM). The model's: which path tun_get_user took
//! (drivers/net/tun.c: tun_get_user / tun_xdp_one), each XDP run and the frame's fate.

use crate::bpf::Maps;
use crate::net::Delivery;
use crate::scenario::Scenario;
use crate::trace::record::{At, Field, Part, Record, Value};
use crate::trace::scratch::Scratch;
use crate::trace::write::{action_line, fate_into};
use crate::trace::{counters_value_in, describe_device, TraceHeader};
use crate::tun::{DeviceKind, TunStats};
use crate::wire::summary::{describe_into, describe_l3_into, vlan_tci_into};

use super::tap_write::{WriteEvent, WriteRecord};
use super::tun_read_trace::{queue_record, read_record_in, result_value};

/// The header of a tap-write or vhost-tx trace: B's device and the XDP program after A's.
pub fn header_record<'h>(header: &'h TraceHeader, scenario: &Scenario) -> Record<'h> {
    let mut after = Vec::new();
    if let Some(b) = &scenario.redirect {
        after.push(Field::both("redirect", Value::text(describe_device(b))));
    }
    if let Some(x) = &scenario.xdp {
        let prog = format!("{} {}", x.label(), x.mode.name());
        after.push(Field::both("xdp", Value::text(prog)));
    }
    header.record_with(after)
}

fn write_record<'w>(w: &'w WriteRecord, s: &mut Scratch) -> Record<'w> {
    let mut rec = s.record("write");
    rec.index = Some(w.write as u64);
    rec.at = Some(At::Frame(w.frame, w.ts_ns));
    let mode = if w.nonblocking {
        "nonblocking"
    } else {
        "blocking"
    };
    rec.result = Some(s.parts_of([
        Part::bare("len", Value::Int(w.len as u64)),
        Part::word("bytes"),
        Part::bare("mode", Value::Word(mode)),
        Part::word("->"),
        Part::bare("result", result_value(w.result.map(|n| n as u64))),
    ]));
    if let Some(file) = w.file {
        rec.push(Field::both("queue", Value::text(format!("file {file}"))));
    }
    if let Some(m) = &w.model {
        if let Some(p) = m.path {
            rec.push(Field::model("path", Value::Word(p.name())));
        }
        for x in &m.xdp {
            rec.push(Field::model("xdp", Value::text(action_line(x))));
        }
        let mut fate = s.string();
        fate_into(&mut fate, &m.fate);
        rec.push(Field::model("fate", Value::text(fate)));
    }
    counters_ab(&mut rec, &w.stats, w.redirect_stats.as_ref(), s);
    rec
}

/// `counters A` and, with a redirect device, `counters B`.
fn counters_ab(rec: &mut Record<'_>, a: &TunStats, b: Option<&TunStats>, s: &mut Scratch) {
    rec.push(Field::both("counters A", counters_value_in(a, s)));
    if let Some(b) = b {
        rec.push(Field::both("counters B", counters_value_in(b, s)));
    }
}

/// The record of one host-side event: a write, a frame the stack received, a read on A
/// or B.
pub fn host_event_record<'e>(scenario: &Scenario, e: &'e WriteEvent) -> Record<'e> {
    host_event_record_in(scenario, e, &mut Scratch::default())
}

/// [`host_event_record`] in buffers from `s`.
pub fn host_event_record_in<'e>(
    scenario: &Scenario,
    e: &'e WriteEvent,
    s: &mut Scratch,
) -> Record<'e> {
    match e {
        WriteEvent::Write(w) => write_record(w, s),
        WriteEvent::Stack { write, delivery } => {
            let mut rec = s.record("stack");
            rec.at = Some(At::After(*write as u64));
            rec.result = Some(s.parts_of([
                Part::bare("len", Value::Int(delivery.frame.len() as u64)),
                Part::word("bytes"),
            ]));
            stack_meta(&mut rec, delivery);
            // An IFF_TUN device's stack sees the packet from the network header on.
            let mut summary = s.string();
            match scenario.device.kind {
                DeviceKind::Tap => describe_into(&mut summary, &delivery.frame),
                DeviceKind::Tun => {
                    describe_l3_into(&mut summary, delivery.protocol, &delivery.frame)
                }
            }
            rec.push(Field::both("summary", Value::text(summary)));
            rec.push(Field::both(
                "bytes",
                Value::Bytes(delivery.frame.as_slice().into()),
            ));
            rec
        }
        WriteEvent::Read {
            on_redirect,
            record,
        } => {
            if *on_redirect {
                let dev = scenario.redirect.as_ref().unwrap_or(&scenario.device);
                read_record_in("read B", record, dev, s)
            } else {
                read_record_in("read A", record, &scenario.device, s)
            }
        }
        WriteEvent::Queue {
            before_frame,
            file,
            op,
            stats,
        } => queue_record(*before_frame, *file, op.name(), &[], None, stats),
    }
}

/// The packet comment of a host-side event that puts a frame in the capture (a frame
/// the stack received, a read on A or B), as [`host_event_record`]'s `comment()`,
/// written into `out` (cleared first: `replay -o` reuses one buffer for every frame)
/// without building the fields the comment leaves out (a stack frame's summary and
/// bytes). False, `out` empty, for a write, which puts no frame in the capture.
pub fn host_event_comment_into(scenario: &Scenario, e: &WriteEvent, out: &mut String) -> bool {
    match e {
        WriteEvent::Write(_) | WriteEvent::Queue { .. } => {
            out.clear();
            false
        }
        WriteEvent::Stack { delivery, .. } => {
            stack_comment_into(out, delivery);
            true
        }
        WriteEvent::Read { .. } => {
            host_event_record(scenario, e).comment_into(out);
            true
        }
    }
}

/// A stack frame's comment, [`stack_meta`]'s fields as words (`protocol 0x0800 vlan
/// ...`: protocol at place 1, the tag at 2), written straight into `out` (cleared
/// first): a record, its field list and the tag's own string were most of tap-write
/// `replay -o`'s comment cost. `stack_comment_matches_the_record` holds the two equal.
fn stack_comment_into(out: &mut String, delivery: &Delivery) {
    out.clear();
    out.push_str("protocol ");
    crate::text::hex0x(out, u64::from(delivery.protocol), 4);
    if let Some(v) = delivery.vlan {
        out.push_str(" vlan ");
        vlan_tci_into(out, v.proto, v.tci);
    }
}

/// A stack frame's packet metadata, the fields of its comment (as words: `protocol
/// 0x0800 vlan ...`): what AF_PACKET's PACKET_AUXDATA gives (the tag, skb->protocol).
fn stack_meta(rec: &mut Record<'_>, delivery: &Delivery) {
    rec.comment_words = true;
    if let Some(v) = delivery.vlan {
        let mut tag = String::new();
        vlan_tci_into(&mut tag, v.proto, v.tci);
        rec.push(Field::both("vlan", Value::text(tag)).meta_at(2));
    }
    let protocol = Value::hex(u64::from(delivery.protocol), 4);
    rec.push(Field::both("protocol", protocol).meta());
}

/// A little-endian key or value as a number when it is 1-8 bytes, else hex.
fn le_num(b: &[u8]) -> String {
    if (1..=8).contains(&b.len()) {
        let mut v = [0u8; 8];
        v[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(v).to_string()
    } else {
        crate::trace::hex_string(b)
    }
}

/// The totals: the final counters of A and B and the program's maps (not the devmaps).
pub fn totals_record(a: &TunStats, b: Option<&TunStats>, maps: Option<&Maps>) -> Record<'static> {
    let mut rec = Record::new("totals");
    counters_ab(&mut rec, a, b, &mut Scratch::default());
    if let Some(maps) = maps {
        for m in maps.iter().filter(|m| !m.spec().map_type.is_devmap()) {
            for (k, v) in m.dump() {
                let name = format!("map {}[{}]", m.name(), le_num(&k));
                rec.push(Field::both(name, Value::text(le_num(&v))));
            }
        }
    }
    rec
}

#[cfg(test)]
#[path = "tap_write_trace_tests.rs"]
mod tests;
