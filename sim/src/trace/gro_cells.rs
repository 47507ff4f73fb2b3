//! The gro_cells part of a tap-gro trace (docs/gro.md#gro-cells), both arms: a `cells:`
//! header line, one `tunnel N` block per skb a vxlan or gretap device's stack received
//! (device by device, as [`crate::gro::cells::GroCells::deliveries`] orders them), and a
//! `tunnel-totals` block. With `tap_observer = "none"` nothing reads the tap, so the
//! tap's own deliveries are not in the trace and its totals keep only the counters.
//!
//! A `tunnel` record has the fields of a `deliver` record plus `dev`, marked the same way.

use crate::gro::cells::{segs, GroCells, TapObserver, TunnelDev, Unlisted, TUNNEL_LISTED_MAX};
use crate::gro::napi::Delivered;
use crate::gro::plan::GroPlan;

use super::gro_delivery::delivery_record;
use super::gro_observed::ObservedSkb;
use super::record::{Field, Part, Record, Value};

/// The header field (only when the plan runs gro_cells).
pub fn cells_field(rec: &mut Record<'_>, plan: &GroPlan) {
    if plan.cells() {
        let v = format!(
            "tap_observer {} tunnel devices gro on",
            plan.tap_observer.name()
        );
        rec.push(Field::both("cells", Value::text(v)));
    }
}

/// Whether the tap's deliveries are in the trace (something reads the tap).
pub fn tap_observed(plan: &GroPlan) -> bool {
    plan.tap_observer == TapObserver::AfPacket
}

/// A `deliver` record as a `tunnel` one, the device first.
fn as_tunnel(mut rec: Record<'static>, dev: String) -> Record<'static> {
    rec.kind = "tunnel";
    rec.fields.insert(0, Field::both("dev", Value::text(dev)));
    rec
}

/// One tunnel delivery of the model.
pub fn tunnel_record(n: usize, dev: &TunnelDev, d: &Delivered) -> Record<'static> {
    let p = super::gro_delivery::project(&d.skb);
    as_tunnel(delivery_record("deliver", n, &p, Some(d)), dev.describe())
}

/// The totals record of the tunnel deliveries: the listed ones' lengths, and those past
/// [`TUNNEL_LISTED_MAX`] counted.
pub fn tunnel_totals(lens: &[usize], segs: usize, more: Unlisted) -> Record<'static> {
    let bytes: usize = lens.iter().sum::<usize>() + more.bytes;
    let l: Vec<String> = lens.iter().map(|x| x.to_string()).collect();
    let mut rec = Record::new("tunnel-totals");
    let int = |n: usize| Value::Int(n as u64);
    rec.result = Some(Value::Parts(vec![
        Part::named("packets", int(lens.len() + more.packets)),
        Part::named("bytes", int(bytes)),
        Part::named("segs", int(segs + more.segs)),
    ]));
    rec.push(Field::both(
        "lengths",
        Value::text(format!("[{}]", l.join(", "))),
    ));
    if more.packets > 0 {
        let v = format!(
            "{} skbs after the first {TUNNEL_LISTED_MAX} (counted above)",
            more.packets
        );
        rec.push(Field::both("unlisted", Value::text(v)));
    }
    rec
}

/// The tap's totals when nothing reads the tap.
pub fn unobserved_tap_totals(
    written: u64,
    write_errors: u64,
    rx_packets: u64,
    rx_bytes: u64,
) -> Record<'static> {
    let mut rec = Record::new("totals");
    rec.result = Some(Value::Parts(vec![
        Part::named("written", Value::Int(written)),
        Part::named("write_errors", Value::Int(write_errors)),
        Part::named("delivered", Value::Word("(tap not observed)")),
    ]));
    rec.push(Field::both(
        "tap",
        Value::Parts(vec![
            Part::named("rx_packets", Value::Int(rx_packets)),
            Part::named("rx_bytes", Value::Int(rx_bytes)),
        ]),
    ));
    rec
}

/// The model's tunnel records and their totals.
pub fn cells_records(cells: &GroCells) -> Vec<Record<'static>> {
    let mut out = Vec::new();
    let mut lens = Vec::new();
    let mut n_segs = 0;
    for (n, (dev, d)) in cells.deliveries().enumerate() {
        out.push(tunnel_record(n, dev, d));
        lens.push(d.skb.len());
        n_segs += segs(&d.skb);
    }
    out.push(tunnel_totals(&lens, n_segs, cells.unlisted));
    out
}

/// The real arm's tunnel records (device description, skb) and their totals.
pub fn cells_records_observed(
    tunnel: &[(String, ObservedSkb)],
    ports: &[u16],
) -> Vec<Record<'static>> {
    let mut out = Vec::new();
    let (mut lens, mut n_segs, mut more) = (Vec::new(), 0, Unlisted::default());
    for (n, (dev, s)) in tunnel.iter().enumerate() {
        let segs = s.delivery(ports).segs();
        if n >= TUNNEL_LISTED_MAX {
            more.packets += 1;
            more.bytes += s.bytes.len();
            more.segs += segs;
            continue;
        }
        let rec = super::gro_observed::skb_record(n, s, ports);
        out.push(as_tunnel(rec, dev.clone()));
        lens.push(s.bytes.len());
        n_segs += segs;
    }
    out.push(tunnel_totals(&lens, n_segs, more));
    out
}
