//! The gro_cells part of a tap-gro trace (docs/gro.md#gro-cells), both arms: a `cells:`
//! header line, one `tunnel N` block per skb a vxlan or gretap device's stack received
//! (device by device, as [`crate::gro::cells::GroCells::deliveries`] orders them), and a
//! `tunnel-totals` block. With `tap_observer = "none"` nothing reads the tap, so the
//! tap's own deliveries are not in the trace and its totals keep only the counters.
//!
//! A `tunnel` block has the fields of a `deliver` block plus `dev:`; `observable` strips
//! its poll number and time the same way.

use std::fmt::Write as _;

use crate::gro::cells::{segs, GroCells, TapObserver, TunnelDev, Unlisted, TUNNEL_LISTED_MAX};
use crate::gro::napi::Delivered;
use crate::gro::plan::GroPlan;

use super::gro_observed::ObservedSkb;

/// The header line (only when the plan runs gro_cells).
pub fn cells_header(out: &mut String, plan: &GroPlan) {
    if plan.cells() {
        let _ = writeln!(
            out,
            "cells: tap_observer {} tunnel devices gro on",
            plan.tap_observer.name()
        );
    }
}

/// Whether the tap's deliveries are in the trace (something reads the tap).
pub fn tap_observed(plan: &GroPlan) -> bool {
    plan.tap_observer == TapObserver::AfPacket
}

/// `block` (a `deliver N ...` block) as `tunnel N ...` with the device after the first line.
fn as_tunnel(out: &mut String, block: &str, dev: &str) {
    let rest = block.strip_prefix("deliver").unwrap_or(block);
    let (first, tail) = rest.split_once('\n').unwrap_or((rest, ""));
    out.push_str("tunnel");
    out.push_str(first);
    out.push_str("\n  dev: ");
    out.push_str(dev);
    out.push('\n');
    out.push_str(tail);
}

/// One tunnel delivery of the model (without the separator line).
pub fn render_tunnel(out: &mut String, n: usize, dev: &TunnelDev, d: &Delivered) {
    let mut b = String::new();
    super::gro::render_delivered(&mut b, n, d);
    as_tunnel(out, &b, &dev.describe());
}

/// One tunnel delivery a packet socket on the device read (without the separator line).
pub fn render_tunnel_observed(
    out: &mut String,
    n: usize,
    dev: &str,
    s: &ObservedSkb,
    ports: &[u16],
) {
    let mut b = String::new();
    super::gro_observed::render_skb(&mut b, n, s, ports);
    as_tunnel(out, &b, dev);
}

/// The totals block of the tunnel deliveries (with its separator line): the listed ones'
/// lengths, and those past [`TUNNEL_LISTED_MAX`] counted.
pub fn tunnel_totals(out: &mut String, lens: &[usize], segs: usize, more: Unlisted) {
    let bytes: usize = lens.iter().sum::<usize>() + more.bytes;
    let l: Vec<String> = lens.iter().map(|x| x.to_string()).collect();
    let _ = writeln!(
        out,
        "\ntunnel-totals: packets {} bytes {bytes} segs {}",
        lens.len() + more.packets,
        segs + more.segs
    );
    let _ = writeln!(out, "  lengths: [{}]", l.join(", "));
    if more.packets > 0 {
        let _ = writeln!(
            out,
            "  unlisted: {} skbs after the first {TUNNEL_LISTED_MAX} (counted above)",
            more.packets
        );
    }
}

/// The tap's totals when nothing reads the tap (with its separator line).
pub fn unobserved_tap_totals(
    out: &mut String,
    written: u64,
    write_errors: u64,
    rx_packets: u64,
    rx_bytes: u64,
) {
    let _ = writeln!(
        out,
        "\ntotals: written {written} write_errors {write_errors} delivered (tap not observed)"
    );
    let _ = writeln!(out, "  tap: rx_packets {rx_packets} rx_bytes {rx_bytes}");
}

/// The model's tunnel blocks and their totals.
pub fn render_cells(out: &mut String, cells: &GroCells) {
    let mut lens = Vec::new();
    let mut n_segs = 0;
    for (n, (dev, d)) in cells.deliveries().enumerate() {
        out.push('\n');
        render_tunnel(out, n, dev, d);
        lens.push(d.skb.len());
        n_segs += segs(&d.skb);
    }
    tunnel_totals(out, &lens, n_segs, cells.unlisted);
}

/// The real arm's tunnel blocks (device description, skb) and their totals.
pub fn render_cells_observed(out: &mut String, tunnel: &[(String, ObservedSkb)], ports: &[u16]) {
    let (mut lens, mut n_segs, mut more) = (Vec::new(), 0, Unlisted::default());
    for (n, (dev, s)) in tunnel.iter().enumerate() {
        let segs = s.delivery(ports).segs();
        if n >= TUNNEL_LISTED_MAX {
            more.packets += 1;
            more.bytes += s.bytes.len();
            more.segs += segs;
            continue;
        }
        out.push('\n');
        render_tunnel_observed(out, n, dev, s, ports);
        lens.push(s.bytes.len());
        n_segs += segs;
    }
    tunnel_totals(out, &lens, n_segs, more);
}
