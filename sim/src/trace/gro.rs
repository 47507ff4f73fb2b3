//! The tap-gro trace: one block per skb the stack sees, in delivery order, with the
//! input frames it holds, its GSO fields, and for the frame that started it the named
//! rule that kept it from merging; then the totals.
//!
//! Observable by a real arm: `len`, `bytes`, `summary` (AF_PACKET on the tap), `gso` and
//! `csum` (a TSO/vnet reader behind a bridge), `vxlan_dev` / `gretap_dev` (AF_PACKET on
//! the vxlan or gretap device), the totals' `lengths`/`stack`/`tap`; the rest is marked
//! model-only on the records. A `deliver` record is the delivery event of
//! [`super::gro_delivery`] (the real arm's too) with the model's own fields added.

use std::fmt::Write as _;

use super::record::{At, Field, Part, Record, Value};
use crate::gro::napi::{Delivered, End};
use crate::skb::{gso, SkBuff};
use crate::text;

/// "0-9", "0-3 5 7-8" ([`text::ranges_into`]).
pub fn ranges(frames: &[u64]) -> String {
    let mut out = String::new();
    text::ranges_into(&mut out, frames.iter().copied());
    out
}

/// Why a delivered skb went up, appended to `out`.
fn end_into(out: &mut String, e: &End) {
    match e {
        End::Normal => out.push_str("passed up unheld (GRO_NORMAL)"),
        End::NapiComplete => out.push_str("napi_complete_done: flush all"),
        End::FragsComplete => {
            out.push_str("napi_complete after napi_gro_frags (IFF_NAPI_FRAGS): flush all")
        }
        End::NapiCompleteOld => {
            out.push_str("napi_complete_done: held in an older jiffy (gro_flush_timeout set)")
        }
        End::Timer => {
            out.push_str("gro_flush_timeout: the hrtimer fired, napi_complete_done(0) flushed all")
        }
        End::Budget => out.push_str("poll used its budget (64): napi_gro_flush"),
        End::BucketFull { frame } => {
            let _ = write!(
                out,
                "gro:bucket-full (frame {frame} needed a slot; gro_flush_oldest)"
            );
        }
        End::Frame {
            frame,
            reason,
            merged: true,
        } => {
            let _ = write!(
                out,
                "frame {frame} {} (merged, then forced the flush)",
                reason.name
            );
        }
        End::Frame {
            frame,
            reason,
            merged: false,
        } => {
            let _ = write!(out, "frame {frame} {} (did not merge)", reason.name);
        }
    }
}

/// The segments an skb stands for: GRO's count, or for a GSO skb from a vnet header
/// (SKB_GSO_DODGY, gso_segs 0 until the stack recounts it: tcp_gso_segment) its TCP
/// payload over gso_size, as a reader's virtio_net_hdr implies (outer TCP only).
pub fn segs_of(s: &SkBuff) -> u64 {
    if s.gso_size != 0 && s.gso_segs == 0 {
        let derived = super::gro_observed::derived_segs(&s.bytes(), s.gso_size, &[]);
        return derived.map_or(1, |n| n as u64);
    }
    if s.gso_size != 0 {
        return u64::from(s.gso_segs);
    }
    u64::from(s.cb.count.max(1))
}

/// "head {} frags {}", then the frag_list if any, appended to `t`.
pub(crate) fn layout_into(t: &mut String, s: &SkBuff) {
    let l = s.layout();
    t.push_str("head ");
    text::dec(t, s.headlen());
    t.push_str(" frags ");
    text::dec(t, l.frags);
    if !l.frag_list.is_empty() {
        let with_frags = l.frag_list.iter().filter(|n| **n > 0).count();
        let _ = write!(t, " frag_list {}", l.frag_list.len());
        if with_frags > 0 {
            let v: Vec<String> = l.frag_list.iter().map(|n| n.to_string()).collect();
            let _ = write!(t, " (frags {})", v.join(","));
        }
    }
}

pub(crate) fn encap_text(s: &SkBuff) -> String {
    if !s.encapsulation {
        return "none".into();
    }
    let o = |x: Option<usize>| {
        s.offset_from_data(x)
            .map_or("-".to_string(), |v| v.to_string())
    };
    format!(
        "inner_mac {} inner_network {} inner_transport {}",
        o(s.inner_mac_header),
        o(s.inner_network_header),
        o(s.inner_transport_header)
    )
}

/// The decapsulated length a vxlan device sees (outer Ethernet, IPv4, UDP, VXLAN off).
pub(crate) fn vxlan_dev_len(s: &SkBuff) -> Option<usize> {
    if s.gso_type & (gso::UDP_TUNNEL | gso::UDP_TUNNEL_CSUM) != 0 {
        return s.offset_from_data(s.inner_mac_header).map(|m| s.len() - m);
    }
    None
}

/// The decapsulated length a gretap device sees for a merged GRE-TEB skb: outer
/// Ethernet, IPv4 and the GRE header (with its csum/key/seq words) off, i.e. from the
/// inner Ethernet header on. net/ipv4/ip_gre.c: gre_rcv -> ipgre_rcv ->
/// ip_tunnel_rcv (the gretap's own tunnel) after __iptunnel_pull_header pulled the GRE
/// header; the packet socket on the gretap device then sees the frame from the inner MAC.
pub(crate) fn gretap_dev_len(s: &SkBuff) -> Option<usize> {
    if s.gso_type & (gso::GRE | gso::GRE_CSUM) != 0 {
        return s.offset_from_data(s.inner_mac_header).map(|m| s.len() - m);
    }
    None
}

/// The model-only fields after a delivery's title: frames, start and rule (for the
/// frame that started the skb), end.
pub(crate) fn model_head_fields(rec: &mut Record<'_>, d: &Delivered) {
    let s = &d.skb;
    // "{ranges} ({count})"
    let mut frames = String::new();
    let count = text::ranges_into(&mut frames, s.frames());
    frames.push_str(" (");
    text::dec(&mut frames, count);
    frames.push(')');
    rec.push(Field::model("frames", Value::text(frames)).meta());
    if let Some(r) = s.model.start {
        // "frame {} {}", then " (also {a}, {b})" if any
        let mut start = String::from("frame ");
        text::dec(&mut start, s.model.frame);
        start.push(' ');
        start.push_str(r.name);
        for (i, a) in s.model.start_also.iter().enumerate() {
            start.push_str(if i == 0 { " (also " } else { ", " });
            start.push_str(a.name);
        }
        if !s.model.start_also.is_empty() {
            start.push(')');
        }
        rec.push(Field::model("start", Value::text(start)));
        rec.push(Field::model("rule", Value::Word(r.rule)));
    }
    let mut end = String::new();
    end_into(&mut end, &d.end);
    rec.push(Field::model("end", Value::text(end)));
}

/// Why tun_get_user refused a write of a `len`-byte frame, as the trace says it.
pub fn write_error_why(len: usize) -> &'static str {
    if len < crate::skb::ETH_HLEN {
        "tun_get_user: a tap frame needs 14 bytes; nothing counted"
    } else {
        "tun_get_user refused the write"
    }
}

/// A refused write's record, either arm (`errno` by its name: "EINVAL").
pub fn write_error_record(frame: u64, ts_ns: u64, len: usize, errno: &str) -> Record<'static> {
    let mut rec = Record::new("write-error");
    rec.at = Some(At::Frame(frame, ts_ns));
    rec.result = Some(Value::text(errno.to_string()));
    let why = format!("{len} ({})", write_error_why(len));
    rec.push(Field::both("len", Value::text(why)));
    rec
}

/// Delivered lengths listed in the totals; a longer run lists its count instead (each
/// length is in its `deliver` block), so the totals stay bounded.
pub const TOTALS_LENGTHS_MAX: usize = 4096;

/// The totals' lines both arms have (`totals`, `tap`, `stack`, `lengths`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TotalsHead<'a> {
    pub written: u64,
    pub write_errors: u64,
    pub delivered: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// What the stack received: skbs, bytes, segments.
    pub stack: (u64, u64, u64),
    /// The first [`TOTALS_LENGTHS_MAX`] delivered lengths.
    pub lengths: &'a [usize],
}

/// The totals record's part both arms have: `totals`, `tap`, `stack`, `lengths`.
pub(crate) fn totals_record(h: &TotalsHead<'_>) -> Record<'static> {
    let mut rec = Record::new("totals");
    let int = |n: u64| Value::Int(n);
    rec.result = Some(Value::Parts(vec![
        Part::named("written", int(h.written)),
        Part::named("write_errors", int(h.write_errors)),
        Part::named("delivered", int(h.delivered)),
    ]));
    rec.push(Field::both(
        "tap",
        Value::Parts(vec![
            Part::named("rx_packets", int(h.rx_packets)),
            Part::named("rx_bytes", int(h.rx_bytes)),
        ]),
    ));
    let (packets, bytes, segs) = h.stack;
    rec.push(Field::both(
        "stack",
        Value::Parts(vec![
            Part::named("packets", int(packets)),
            Part::named("bytes", int(bytes)),
            Part::named("segs", int(segs)),
        ]),
    ));
    rec.push(Field::both(
        "lengths",
        lengths_value(h.delivered, h.lengths),
    ));
    rec
}

/// `[1454, 60]`, or past [`TOTALS_LENGTHS_MAX`] their count.
pub(crate) fn lengths_value(delivered: u64, lengths: &[usize]) -> Value<'static> {
    if delivered as usize <= TOTALS_LENGTHS_MAX {
        let lens: Vec<String> = lengths.iter().map(|l| l.to_string()).collect();
        Value::text(format!("[{}]", lens.join(", ")))
    } else {
        Value::text(format!("{delivered} skbs (each in its deliver block)"))
    }
}
