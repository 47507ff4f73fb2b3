//! The tun-read pipeline's events as trace records ([`crate::trace::record`]): the
//! pipeline turns its own types into data once; the text trace, the JSON lines, the
//! capture's packet comments and the comparison with a real arm are all derived from it.
//! The marks follow what userspace sees from tun_chr_read_iter (drivers/net/tun.c:
//! tun_put_user writes the PI, the vnet header and the frame; the device counters are
//! read from /sys/class/net/*/statistics): those fields are seen by both arms; the skb,
//! tun_put_user's own return, the op counts and the notes are the model's.

use crate::errno::Errno;
use crate::skb::{gso, OpCounters};
use crate::trace::record::{At, Field, Part, Record, Value};
use crate::trace::render::{counters_value, counters_value_in};
use crate::trace::scratch::Scratch;
use crate::tun::read::SkbInfo;
use crate::tun::{TunConfig, TunStats, XmitDrop, TUN_PI_LEN, TUN_PKT_STRIP};
use crate::wire::summary::{describe_into, vlan_tci_into};
use crate::wire::tun_pi::TunPi;
use crate::wire::virtio_net_hdr::{
    flags_names, gso_type_name, VirtioNetHdr, VirtioNetHdrRepr, VnetHdrLayout,
    VIRTIO_NET_HDR_GSO_NONE,
};

use super::tun_read::{Event, ReadRecord};

/// Reads and drops seen so far (the totals line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TunReadCounts {
    pub reads: u64,
    pub drops: u64,
    /// Frames the bridge did not deliver.
    pub bridge_drops: u64,
}

impl TunReadCounts {
    /// Count `e`.
    pub fn count(&mut self, e: &Event) {
        match e {
            Event::XmitDropped { .. } => self.drops += 1,
            Event::Read(_) => self.reads += 1,
            Event::BridgeDropped { .. } => self.bridge_drops += 1,
            Event::Queue { .. } => {}
        }
    }
}

/// `len 60 headlen 60 protocol 0x0800`, the tag, the checksum state and GSO.
fn skb_value(k: &SkbInfo, s: &mut Scratch) -> Value<'static> {
    let mut p = s.parts();
    p.extend([
        Part::named("len", Value::Int(k.len as u64)),
        Part::named("headlen", Value::Int(k.headlen as u64)),
        Part::named("protocol", Value::hex(u64::from(k.protocol), 4)),
    ]);
    if let Some(v) = k.vlan {
        let mut tag = s.string();
        vlan_tci_into(&mut tag, v.proto, v.tci);
        p.push(Part::named("hwaccel-tag", Value::text(tag)));
    }
    p.push(Part::bare(
        "ip_summed",
        Value::Word(k.ip_summed.kernel_name()),
    ));
    if k.ip_summed == crate::skb::IpSummed::Partial {
        p.push(Part::named("csum_start", Value::Int(k.csum_start as u64)));
        p.push(Part::named("csum_offset", Value::Int(k.csum_offset as u64)));
    }
    if k.gso_size != 0 {
        p.push(Part::named("gso", Value::text(gso::names(k.gso_type))));
        p.push(Part {
            name: "gso_size",
            label: Some("size"),
            value: Value::Int(u64::from(k.gso_size)),
        });
        p.push(Part {
            name: "gso_segs",
            label: Some("segs"),
            value: Value::Int(u64::from(k.gso_segs)),
        });
    }
    Value::Parts(p)
}

/// `flags none gso_type NONE hdr_len 0 gso_size 0 csum_start 0 csum_offset 0`.
fn vnet_value(h: &VirtioNetHdrRepr, s: &mut Scratch) -> Value<'static> {
    let flags = if h.flags == 0 {
        Value::Word("none")
    } else {
        Value::text(flags_names(h.flags))
    };
    let gso_type = if h.gso_type == VIRTIO_NET_HDR_GSO_NONE {
        Value::Word("NONE")
    } else {
        Value::text(gso_type_name(h.gso_type))
    };
    let int = |n: u16| Value::Int(u64::from(n));
    s.parts_of([
        Part::named("flags", flags),
        Part::named("gso_type", gso_type),
        Part::named("hdr_len", int(h.hdr_len)),
        Part::named("gso_size", int(h.gso_size)),
        Part::named("csum_start", int(h.csum_start)),
        Part::named("csum_offset", int(h.csum_offset)),
    ])
}

/// `flags 0x0001 (TUN_PKT_STRIP) proto 0x0800`.
fn pi_value(flags: u16, proto: u16, s: &mut Scratch) -> Value<'static> {
    let mut p = s.parts();
    p.push(Part::named("flags", Value::hex(u64::from(flags), 4)));
    if flags & TUN_PKT_STRIP != 0 {
        p.push(Part::bare("strip", Value::Word("(TUN_PKT_STRIP)")));
    }
    p.push(Part::named("proto", Value::hex(u64::from(proto), 4)));
    Value::Parts(p)
}

/// The PI and the vnet header as userspace reads them from the buffer (a real arm's
/// read has nothing else), and the vnet area's bytes past the header.
fn userspace_fields<'r>(
    f: &mut Vec<Field<'r>>,
    r: &'r ReadRecord,
    dev: &TunConfig,
    s: &mut Scratch,
) {
    let mut pos = 0;
    if !dev.no_pi {
        if let Ok(pi) = TunPi::new_checked(&r.data[..]) {
            f.push(Field::both("pi", pi_value(pi.flags(), pi.proto(), s)).meta());
        }
        pos = TUN_PI_LEN;
    }
    if !(dev.vnet_hdr && r.result.is_ok() && r.data.len() >= pos + dev.vnet_hdr_sz) {
        return;
    }
    let area = &r.data[pos..pos + dev.vnet_hdr_sz];
    // With the UDP tunnel offload tun writes the 24-byte header
    // (docs/tun-read.md#vnet-tunnel).
    let layout = if dev.offloads.udp_tunnel_gso {
        VnetHdrLayout::HashTunnel
    } else {
        VnetHdrLayout::Basic
    };
    let Ok(view) = VirtioNetHdr::new_checked(area, layout, dev.vnet_endian) else {
        return;
    };
    let Ok(h) = VirtioNetHdrRepr::parse(&view) else {
        return;
    };
    f.push(Field::both("vnet", vnet_value(&h, s)).meta());
    if layout == VnetHdrLayout::HashTunnel {
        let n = |name, v: u64| Part::named(name, Value::Int(v));
        f.push(Field::both(
            "vnet_tunnel",
            Value::Parts(vec![
                n("num_buffers", h.num_buffers.into()),
                n("hash_value", h.hash_value.into()),
                n("hash_report", h.hash_report.into()),
                n("outer_th_offset", h.outer_th_offset.into()),
                n("inner_nh_offset", h.inner_nh_offset.into()),
            ]),
        ));
    }
    let pad = &area[layout.header_len()..];
    if !pad.is_empty() {
        let zero = if pad.iter().all(|b| *b == 0) {
            "zero"
        } else {
            "not zeroed"
        };
        f.push(Field::both(
            "vnet_pad",
            Value::Parts(vec![
                Part::bare("len", Value::Int(pad.len() as u64)),
                Part::word("bytes"),
                Part::bare("state", Value::Word(zero)),
            ]),
        ));
    }
}

/// `Ok(n)` as n, an error by its name.
pub fn result_value<T: Into<u64>>(r: Result<T, crate::errno::Errno>) -> Value<'static> {
    match r {
        Ok(n) => Value::Int(n.into()),
        Err(e) => Value::Word(e.name()),
    }
}

const XDP_FRAME_NO_PI: &str =
    "an xdp_frame, read by tun_put_user_xdp (zero vnet area, no offload metadata)";
const XDP_FRAME_PI: &str = "an xdp_frame, read by tun_put_user_xdp: no PI is written, so a PI reader takes the frame's first 4 bytes for one";

/// The record of one read (`kind` `read`, or `read A` / `read B` on tap-write).
pub fn read_record<'r>(kind: &'static str, r: &'r ReadRecord, dev: &TunConfig) -> Record<'r> {
    read_record_in(kind, r, dev, &mut Scratch::default())
}

/// [`read_record`] in buffers from `s`.
pub fn read_record_in<'r>(
    kind: &'static str,
    r: &'r ReadRecord,
    dev: &TunConfig,
    s: &mut Scratch,
) -> Record<'r> {
    let mut rec = s.record(kind);
    rec.index = Some(r.read as u64);
    rec.at = r.frame.map(|(f, t)| At::Frame(f, t));
    rec.result = Some(s.parts_of([
        Part::named("buffer", Value::Int(r.buffer_len as u64)),
        Part::word("->"),
        Part::bare("result", result_value(r.result.map(|n| n as u64))),
    ]));
    let f = &mut rec.fields;
    if let Some(q) = r.queue {
        f.push(Field::both("queue", Value::text(format!("file {q}"))));
    }
    let skb = r.model.as_ref().filter(|m| m.skb.is_some());
    if let Some(k) = skb.and_then(|m| m.skb.as_ref()) {
        f.push(Field::model("skb", skb_value(k, s)).meta());
    }
    if r.model.as_ref().is_some_and(|m| m.xdp_frame) {
        let what = if dev.no_pi {
            XDP_FRAME_NO_PI
        } else {
            XDP_FRAME_PI
        };
        f.push(Field::model("note", Value::Word(what)));
    }
    userspace_fields(f, r, dev, s);
    if let Some(m) = skb {
        match m.put_user_ret {
            Some(ret) => {
                f.push(Field::model("put_user", Value::Int(ret as u64)));
                f.push(Field::model(
                    "frame",
                    s.parts_of([
                        Part::bare("frame_copied", Value::Int(m.frame_copied as u64)),
                        Part {
                            name: "frame_len",
                            label: Some("of"),
                            value: Value::Int(m.frame_len as u64),
                        },
                        Part::word("bytes"),
                    ]),
                ));
            }
            None => {
                let e = r.result.err().map_or("EINVAL", |e| e.name());
                f.push(Field::model(
                    "put_user",
                    Value::Text(format!("{e}, skb freed, no counter moves").into()),
                ))
            }
        }
    } else if r.model.is_some() && r.buffer_len == 0 {
        f.push(Field::model(
            "note",
            Value::Word("read(0) returns 0 and leaves the frame queued"),
        ));
    }
    if r.result.is_ok_and(|n| n > 0) {
        let mut t = s.string();
        describe_into(&mut t, r.frame_bytes(dev));
        f.push(Field::both("summary", Value::text(t)));
    }
    if let Some(m) = skb {
        let mut t = s.string();
        m.ops.text_into(&mut t);
        f.push(Field::model("ops", Value::text(t)));
    }
    f.push(Field::both("counters", counters_value_in(&r.stats, s)));
    if !r.data.is_empty() {
        f.push(Field::both("bytes", Value::Bytes(r.data.as_slice().into())));
    }
    rec
}

/// `queue: detach file 0 before frame 2`, and the frames the detach purged from the
/// file's ring (__tun_detach -> tun_queue_purge).
pub(super) fn queue_record(
    before_frame: u64,
    file: usize,
    op: &str,
    purged: &[u64],
    written: Option<Result<usize, Errno>>,
    stats: &TunStats,
) -> Record<'static> {
    let mut rec = Record::new("queue");
    rec.result = Some(Value::text(format!(
        "{op} file {file} before frame {before_frame}"
    )));
    // write(2)'s answer: `written: 54 bytes` or `written: EINVAL`.
    match written {
        Some(Ok(n)) => rec.push(Field::both("written", Value::text(format!("{n} bytes")))),
        Some(Err(e)) => rec.push(Field::both("written", Value::text(e.name().to_string()))),
        None => {}
    }
    if !purged.is_empty() {
        let list: Vec<String> = purged.iter().map(u64::to_string).collect();
        rec.push(Field::both(
            "purged",
            Value::text(format!("frames {}", list.join(", "))),
        ));
    }
    rec.push(Field::both("counters", counters_value(stats)));
    rec
}

/// What a drop record says when a real arm saw tx_dropped rise but cannot tell why.
pub const XMIT_DROP_UNSEEN: &str = "dropped, reason not seen (tx_ring full or TUNSETFILTEREBPF)";

/// A drop with no read: `xmit-drop (frame 2, ts ...): tx_ring full`.
fn drop_record(kind: &'static str, frame: u64, ts_ns: u64, what: &'static str) -> Record<'static> {
    let mut rec = Record::new(kind);
    rec.at = Some(At::Frame(frame, ts_ns));
    rec.result = Some(Value::Word(what));
    rec
}

/// The record of one tun-read event.
pub fn event_record<'e>(e: &'e Event, dev: &TunConfig) -> Record<'e> {
    event_record_in(e, dev, &mut Scratch::default())
}

/// [`event_record`] in buffers from `s` (a read, the event of nearly every frame).
pub fn event_record_in<'e>(e: &'e Event, dev: &TunConfig, s: &mut Scratch) -> Record<'e> {
    match e {
        Event::XmitDropped {
            frame,
            ts_ns,
            reason,
            stats,
        } => {
            // The reason is in the result, which both arms show and conform compares:
            // the real arm names it from what it saw (its module doc), or says it cannot.
            let what = reason.map_or(XMIT_DROP_UNSEEN, XmitDrop::what);
            let mut rec = drop_record("xmit-drop", *frame, *ts_ns, what);
            rec.push(Field::both("counters", counters_value_in(stats, s)));
            rec
        }
        Event::Read(r) => read_record_in("read", r, dev, s),
        Event::Queue {
            before_frame,
            file,
            op,
            purged,
            written,
            stats,
        } => queue_record(*before_frame, *file, op.name(), purged, *written, stats),
        Event::BridgeDropped {
            frame,
            ts_ns,
            reason,
            stats,
        } => {
            let mut rec = drop_record("bridge-drop", *frame, *ts_ns, "not delivered");
            if let Some(why) = reason {
                rec.push(Field::model("why", Value::text(why.to_string())));
            }
            rec.push(Field::both("counters", counters_value_in(stats, s)));
            rec
        }
    }
}

/// The totals: `totals: reads 1 xmit_drops 0`, the final counters, and the model's op
/// counts.
pub fn totals_record(
    n: &TunReadCounts,
    stats: &TunStats,
    ops: Option<&OpCounters>,
) -> Record<'static> {
    let mut rec = Record::new("totals");
    let mut p = vec![
        Part::named("reads", Value::Int(n.reads)),
        Part::named("xmit_drops", Value::Int(n.drops)),
    ];
    if n.bridge_drops > 0 {
        p.push(Part::named("bridge_drops", Value::Int(n.bridge_drops)));
    }
    rec.result = Some(Value::Parts(p));
    rec.push(Field::both("counters", counters_value(stats)));
    if let Some(ops) = ops {
        let mut s = String::new();
        ops.text_into(&mut s);
        rec.push(Field::model("ops", Value::text(s)));
    }
    rec
}

/// One read's block as text, without the blank line before it (tap-write's reads; see
/// [`read_record`]).
pub fn render_read(out: &mut String, kind: &'static str, r: &ReadRecord, dev: &TunConfig) {
    read_record(kind, r, dev).write_block(out);
}
