//! The tap-gro trace: one block per skb the stack sees, in delivery order, with the
//! input frames it holds, its GSO fields, and for the frame that started it the named
//! rule that kept it from merging; then the totals.
//!
//! Observable by a real arm: `len`, `bytes`, `summary` (AF_PACKET on the tap), `gso` and
//! `csum` (a TSO/vnet reader behind a bridge), `vxlan_dev` / `gretap_dev` (AF_PACKET on
//! the vxlan or gretap device), the totals' `lengths`/`stack`/`tap`. Model-only: [`GRO_MODEL_ONLY_FIELDS`].
//! A `deliver` block is the delivery event of [`super::gro_delivery`] (the real arm's
//! too) with the model's own lines added by the same renderer.

use std::fmt::Write as _;

use super::render::ts;

use serde_json::{json, Value};

use crate::gro::napi::{Delivered, End};
use crate::pipeline::tap_gro::{TapGro, TapGroRun, WriteError, XdpBeforeGro};
use crate::scenario::Scenario;
use crate::skb::{gso, SkBuff};
use crate::text;
use crate::tun::napi::AfterGro;

/// Trace fields only the model knows; a comparison with the real kernel skips them.
/// `encap` (tunnel offsets and the UDP_TUNNEL_CSUM bit) is not in a virtio header either.
pub const GRO_MODEL_ONLY_FIELDS: [&str; 11] = [
    "xdp",
    "backend",
    "encap",
    "frames",
    "start",
    "rule",
    "end",
    "layout",
    "ip_summed",
    "poll",
    "held",
];

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
fn layout_into(t: &mut String, s: &SkBuff) {
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

fn encap_text(s: &SkBuff) -> String {
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

/// The model's run settings in the header's terms (those the real arm reads back).
fn sim_setup(run: &TapGro) -> super::gro_observed::ObservedSetup {
    let p = &run.plan;
    let (gro_max_size, gro_ipv4_max_size) =
        crate::gro::bigtcp::device_sizes(&run.cfg.rules, p.gro_max_size, p.gro_ipv4_max_size);
    super::gro_observed::ObservedSetup {
        backend: "sim".to_string(),
        feature: p.feature,
        teb_gro: p.teb_gro,
        vlan_gro: p.vlan_gro,
        vxlan_ports: p.vxlan_ports.clone(),
        burst: p.burst,
        flush_timeout_ns: p.flush_timeout_ns,
        hz: p.hz,
        weight: 64,
        udp_gro: super::gro_observed::UdpGroSetup {
            sockets: p.udp_gro_ports.clone(),
            forwarding: p.gro_udp_fwd,
            gro_list: p.gro_fraglist,
        },
        gro_max_size,
        gro_ipv4_max_size,
    }
}

/// The header lines of a tap-gro trace.
pub fn tap_gro_header(out: &mut String, sc: &Scenario, run: &TapGro) {
    let setup = sim_setup(run);
    let napi_note = if run.cfg.rules.tun_napi {
        ""
    } else {
        " (modelled: IFF_NAPI arrived in v4.15)"
    };
    super::gro_observed::header(out, sc, &setup, napi_note);
}

/// One delivered skb's block (without the separator line): its observable part
/// ([`super::gro_delivery::project`]) with the model's own lines.
pub fn render_delivered(out: &mut String, n: usize, d: &Delivered) {
    super::gro_delivery::render_delivery(out, n, &super::gro_delivery::project(&d.skb), Some(d));
}

/// The model-only lines after a delivery's first: frames, start and rule (for the frame
/// that started the skb), end.
pub(crate) fn model_head_lines(out: &mut String, d: &Delivered) {
    let s = &d.skb;
    // "  frames: {ranges} ({count})"
    out.push_str("  frames: ");
    let count = text::ranges_into(out, s.frames());
    out.push_str(" (");
    text::dec(out, count);
    out.push_str(")\n");
    if let Some(r) = s.model.start {
        // "  start: frame {} {}", then " (also {a}, {b})" if any
        out.push_str("  start: frame ");
        text::dec(out, s.model.frame);
        out.push(' ');
        out.push_str(r.name);
        for (i, a) in s.model.start_also.iter().enumerate() {
            out.push_str(if i == 0 { " (also " } else { ", " });
            out.push_str(a.name);
        }
        if !s.model.start_also.is_empty() {
            out.push(')');
        }
        out.push_str("\n  rule: ");
        out.push_str(r.rule);
        out.push('\n');
    }
    out.push_str("  end: ");
    end_into(out, &d.end);
    out.push('\n');
}

/// The model-only `encap` line (no socket shows the inner header offsets).
pub(crate) fn model_encap_line(out: &mut String, s: &SkBuff) {
    out.push_str("  encap: ");
    if s.encapsulation {
        out.push_str(&encap_text(s));
    } else {
        out.push_str("none");
    }
    out.push('\n');
}

/// The model's `layout` line (head, frags, frag_list; a socket shows only hdr_len).
pub(crate) fn model_layout_line(out: &mut String, s: &SkBuff) {
    out.push_str("  layout: ");
    layout_into(out, s);
    out.push('\n');
}

/// Why tun_get_user refused a write of a `len`-byte frame, as the trace says it.
pub fn write_error_why(len: usize) -> &'static str {
    if len < crate::skb::ETH_HLEN {
        "tun_get_user: a tap frame needs 14 bytes; nothing counted"
    } else {
        "tun_get_user refused the write"
    }
}

/// One write tun_get_user refused (without the separator line).
pub fn render_write_error(out: &mut String, e: &WriteError) {
    write_error_lines(out, e.frame, e.ts_ns, e.len, e.errno.name());
}

/// A refused write's block, either arm (`errno` by its name: "EINVAL").
pub(crate) fn write_error_lines(out: &mut String, frame: u64, ts_ns: u64, len: usize, errno: &str) {
    let _ = writeln!(
        out,
        "write-error (frame {frame}, ts {}): {errno}",
        ts(ts_ns)
    );
    let _ = writeln!(out, "  len: {len} ({})", write_error_why(len));
}

/// Delivered lengths listed in the totals; a longer run lists its count instead (each
/// length is in its `deliver` block), so the totals stay bounded.
pub const TOTALS_LENGTHS_MAX: usize = 4096;

/// What the totals need of a streamed run: counted as the events go by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroTotals {
    pub write_errors: u64,
    pub delivered: u64,
    /// The first [`TOTALS_LENGTHS_MAX`] delivered lengths.
    pub lengths: Vec<usize>,
    /// The XDP verdicts that kept frames from GRO or the stack (model only; the totals'
    /// `xdp` line).
    pub xdp_before: Vec<XdpBeforeGro>,
    pub after_gro: Vec<AfterGro>,
}

impl GroTotals {
    pub fn delivered(&mut self, len: usize) {
        self.delivered += 1;
        if self.lengths.len() < TOTALS_LENGTHS_MAX {
            self.lengths.push(len);
        }
    }
}

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

/// The totals block's first lines (with its separator line).
pub(crate) fn totals_head(out: &mut String, h: &TotalsHead<'_>) {
    out.push('\n');
    let _ = writeln!(
        out,
        "totals: written {} write_errors {} delivered {}",
        h.written, h.write_errors, h.delivered
    );
    let _ = writeln!(
        out,
        "  tap: rx_packets {} rx_bytes {}",
        h.rx_packets, h.rx_bytes
    );
    let (packets, bytes, segs) = h.stack;
    let _ = writeln!(out, "  stack: packets {packets} bytes {bytes} segs {segs}");
    if h.delivered as usize <= TOTALS_LENGTHS_MAX {
        let lens: Vec<String> = h.lengths.iter().map(|l| l.to_string()).collect();
        let _ = writeln!(out, "  lengths: [{}]", lens.join(", "));
    } else {
        let _ = writeln!(
            out,
            "  lengths: {} skbs (each in its deliver block)",
            h.delivered
        );
    }
}

/// The totals block (with its separator line).
pub fn render_gro_totals(out: &mut String, run: &TapGro, t: &GroTotals) {
    let c = &run.counts;
    totals_head(
        out,
        &TotalsHead {
            written: c.frames,
            write_errors: t.write_errors,
            delivered: t.delivered,
            rx_packets: run.stats.rx_packets,
            rx_bytes: run.stats.rx_bytes,
            stack: (c.skbs, c.bytes, c.segs),
            lengths: &t.lengths,
        },
    );
    let _ = writeln!(
        out,
        "  held: merged {} held {} normal {} polls {}",
        run.napi().merged,
        run.napi().held,
        run.napi().normal,
        run.napi().polls
    );
    if !t.xdp_before.is_empty() || !t.after_gro.is_empty() {
        // Model only: the XDP verdicts that kept frames from GRO or the stack.
        let mut line = String::new();
        for x in &t.xdp_before {
            let _ = write!(
                line,
                " frame {} {} {};",
                x.frame,
                x.report.place.name(),
                super::write::action_name(x.report.action)
            );
        }
        for x in &t.after_gro {
            let _ = write!(
                line,
                " frames {} {} {};",
                ranges(&x.frames),
                x.report.place.name(),
                super::write::action_name(x.report.action)
            );
        }
        let _ = writeln!(out, "  xdp:{}", line.trim_end_matches(';'));
    }
}

/// The text trace of a finished run that kept its deliveries.
pub fn render_tap_gro(sc: &Scenario, run: &TapGroRun) -> String {
    let mut out = String::new();
    tap_gro_header(&mut out, sc, run);
    let mut t = GroTotals::default();
    for e in &run.write_errors {
        out.push('\n');
        render_write_error(&mut out, e);
        t.write_errors += 1;
    }
    for (n, d) in run.delivered.iter().enumerate() {
        out.push('\n');
        render_delivered(&mut out, n, d);
        t.delivered(d.skb.len());
    }
    t.xdp_before.clone_from(&run.xdp_before);
    t.after_gro.clone_from(&run.after_gro);
    render_gro_totals(&mut out, run, &t);
    out
}

fn end_json(e: &End) -> Value {
    match e {
        End::Normal => json!({"kind": "normal"}),
        End::NapiComplete => json!({"kind": "napi_complete_done"}),
        End::FragsComplete => json!({"kind": "napi_complete_frags"}),
        End::NapiCompleteOld => json!({"kind": "napi_complete_done_old"}),
        End::Timer => json!({"kind": "gro_flush_timeout"}),
        End::Budget => json!({"kind": "budget"}),
        End::BucketFull { frame } => json!({"kind": "bucket_full", "frame": frame}),
        End::Frame {
            frame,
            reason,
            merged,
        } => {
            json!({"kind": "frame", "frame": frame, "reason": reason.name, "merged": merged})
        }
    }
}

/// The JSON of one delivered skb: the observable fields
/// ([`super::gro_delivery::delivery_json`]) and the model's own.
pub fn delivered_json(n: usize, d: &Delivered) -> Value {
    let s = &d.skb;
    let mut v = super::gro_delivery::delivery_json(n, &super::gro_delivery::project(s));
    let model = json!({
        "poll": d.poll,
        "ts_ns": d.ts_ns,
        "frames": s.frames().collect::<Vec<u64>>(),
        "start": s.model.start.map(|r| json!({"frame": s.model.frame, "reason": r.name,
            "also": s.model.start_also.iter().map(|a| a.name).collect::<Vec<_>>()})),
        "end": end_json(&d.end),
        "ip_summed": s.ip_summed.kernel_name(),
        "csum_level": s.csum_level,
        "encapsulation": s.encapsulation,
        "layout": {"head": s.headlen(), "frags": s.nr_frags(), "frag_list": s.layout().frag_list},
    });
    if let (Some(v), Value::Object(m)) = (v.as_object_mut(), model) {
        v.extend(m);
    }
    v
}

/// A delivered skb's metadata for a pcapng packet comment.
pub fn delivered_comment(d: &Delivered) -> String {
    let s = &d.skb;
    let mut csum = String::new();
    super::gro_delivery::csum_value(&mut csum, super::gro_delivery::model_csum(s), Some(s));
    format!(
        "skb: len {} protocol {:#06x} gso {} {csum}; frames {}",
        s.len(),
        s.protocol,
        super::gro_delivery::gso_text(super::gro_delivery::model_gso(s).as_ref()),
        s.cb.count
    )
}

/// The JSON header of a tap-gro trace.
pub fn tap_gro_header_json(sc: &Scenario, run: &TapGro) -> Value {
    super::gro_observed::header_json(sc, &sim_setup(run))
}
