//! The tap-gro pipeline's events as trace records ([`crate::trace::record`]): the header
//! in the real arm's terms, each delivered skb ([`crate::trace::gro_delivery`]), each
//! refused write, the totals with the model's own counts (NAPI's merged/held/normal and
//! the XDP verdicts that kept frames from GRO: drivers/net/tun.c tun_get_user ->
//! napi_gro_receive, net/core/gro.c), and the gro_cells records.

use crate::gro::napi::Delivered;
use crate::scenario::Scenario;
use crate::trace::gro::{ranges, totals_record as common_totals, write_error_record, TotalsHead};
use crate::trace::gro_cells::{cells_field, cells_records, tap_observed, unobserved_tap_totals};
use crate::trace::gro_delivery::{delivery_record_in, project};
use crate::trace::gro_observed::{header_record as setup_header, ObservedSetup, UdpGroSetup};
use crate::trace::record::{Field, Record, Value};
use crate::trace::scratch::Scratch;
use crate::trace::write::action_name;
use crate::tun::napi::AfterGro;

use super::tap_gro::{TapGro, TapGroRun, WriteError, XdpBeforeGro};

/// Delivered lengths listed in the totals; a longer run lists its count instead.
pub use crate::trace::gro::TOTALS_LENGTHS_MAX;

/// What the totals need of a streamed run: counted as the events go by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroTotals {
    pub write_errors: u64,
    pub delivered: u64,
    /// The first [`TOTALS_LENGTHS_MAX`] delivered lengths.
    pub lengths: Vec<usize>,
    /// The XDP verdicts that kept frames from GRO or the stack (model only; the totals'
    /// `xdp` field).
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

/// The model's run settings in the header's terms (those the real arm reads back).
fn sim_setup(run: &TapGro) -> ObservedSetup {
    let p = &run.plan;
    let (gro_max_size, gro_ipv4_max_size) =
        crate::gro::bigtcp::device_sizes(&run.cfg.rules, p.gro_max_size, p.gro_ipv4_max_size);
    ObservedSetup {
        backend: "sim".to_string(),
        feature: p.feature,
        teb_gro: p.teb_gro,
        vlan_gro: p.vlan_gro,
        vxlan_ports: p.vxlan_ports.clone(),
        burst: p.burst,
        flush_timeout_ns: p.flush_timeout_ns,
        hz: p.hz,
        weight: 64,
        udp_gro: UdpGroSetup {
            sockets: p.udp_gro_ports.clone(),
            forwarding: p.gro_udp_fwd,
            gro_list: p.gro_fraglist,
        },
        gro_max_size,
        gro_ipv4_max_size,
    }
}

/// The header of a tap-gro trace (with the `cells` field when the plan runs gro_cells).
pub fn header_record(sc: &Scenario, run: &TapGro) -> Record<'static> {
    let napi_note = if run.cfg.rules.tun_napi {
        ""
    } else {
        " (modelled: IFF_NAPI arrived in v4.15)"
    };
    let mut rec = setup_header(sc, &sim_setup(run), napi_note);
    cells_field(&mut rec, &run.plan);
    rec
}

/// One delivered skb: what a packet socket on the tap shows of it, with the model's own
/// fields.
pub fn delivered_record(n: usize, d: &Delivered) -> Record<'static> {
    delivered_record_in(n, d, &mut Scratch::default())
}

/// [`delivered_record`] in buffers from `s`.
pub fn delivered_record_in(n: usize, d: &Delivered, s: &mut Scratch) -> Record<'static> {
    delivery_record_in("deliver", n, &project(&d.skb), Some(d), s)
}

/// One write tun_get_user refused.
pub fn refused_record(e: &WriteError) -> Record<'static> {
    write_error_record(e.frame, e.ts_ns, e.len, e.errno.name())
}

/// The totals: what both arms count, then the model's NAPI counts and the XDP verdicts
/// that kept frames from GRO or the stack; with nothing reading the tap, its counters
/// only.
pub fn totals_record(run: &TapGro, t: &GroTotals) -> Record<'static> {
    let c = &run.counts;
    if !tap_observed(&run.plan) {
        return unobserved_tap_totals(
            c.frames,
            t.write_errors,
            run.stats.rx_packets,
            run.stats.rx_bytes,
        );
    }
    let mut rec = common_totals(&TotalsHead {
        written: c.frames,
        write_errors: t.write_errors,
        delivered: t.delivered,
        rx_packets: run.stats.rx_packets,
        rx_bytes: run.stats.rx_bytes,
        stack: (c.skbs, c.bytes, c.segs),
        lengths: &t.lengths,
    });
    let n = run.napi();
    let held = format!(
        "merged {} held {} normal {} polls {}",
        n.merged, n.held, n.normal, n.polls
    );
    rec.push(Field::model("held", Value::text(held)));
    if !t.xdp_before.is_empty() || !t.after_gro.is_empty() {
        let mut parts: Vec<String> = Vec::new();
        for x in &t.xdp_before {
            parts.push(format!(
                " frame {} {} {}",
                x.frame,
                x.report.place.name(),
                action_name(x.report.action)
            ));
        }
        for x in &t.after_gro {
            parts.push(format!(
                " frames {} {} {}",
                ranges(&x.frames),
                x.report.place.name(),
                action_name(x.report.action)
            ));
        }
        // "xdp: frame 3 generic XDP_DROP; frames 4-6 ..." (the text's leading space).
        let line = parts.join(";");
        rec.push(Field::model(
            "xdp",
            Value::text(line.trim_start().to_string()),
        ));
    }
    rec
}

/// Every record of a finished run that kept its deliveries: the refused writes first,
/// then the deliveries, the totals and the gro_cells records (one builder per record
/// with the streamed run).
pub fn run_records(sc: &Scenario, run: &TapGroRun) -> Vec<Record<'static>> {
    let mut out = vec![header_record(sc, run)];
    let mut t = GroTotals::default();
    for e in &run.write_errors {
        out.push(refused_record(e));
        t.write_errors += 1;
    }
    for (n, d) in run.delivered.iter().enumerate() {
        out.push(delivered_record(n, d));
        t.delivered(d.skb.len());
    }
    t.xdp_before.clone_from(&run.xdp_before);
    t.after_gro.clone_from(&run.after_gro);
    out.push(totals_record(run, &t));
    if let Some(c) = &run.cells {
        out.extend(cells_records(c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_block_and_the_kernel_s_view_of_the_same_skb_compare_equal() {
        use crate::gro::plan::GroPlan;
        use crate::pipeline::tap_gro::TapGroRun;
        use crate::profile::LINUX_6_18;
        use crate::trace::gro_observed::ObservedSkb;
        use crate::trace::record::Record;
        use crate::trace::record_diff::first_record_divergence;
        use crate::wire::virtio_net_hdr::VirtioNetHdrRepr;
        use crate::wire::virtio_net_hdr::{VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_TCPV4};
        // Ten 1400-byte segments held by a 1 ms gro_flush_timeout merge into one skb.
        let plan = GroPlan {
            burst: 1,
            flush_timeout_ns: 1_000_000,
            ..GroPlan::defaults(&LINUX_6_18.gro)
        };
        let mut r = TapGroRun::new(&LINUX_6_18, &plan);
        for (i, f) in crate::gro::frames::Tcp4::default()
            .stream(10)
            .into_iter()
            .enumerate()
        {
            r.write(i as u64, 1_000_000_000 + i as u64 * 1000, f);
        }
        r.finish();
        let d = &r.delivered[0];
        let model = [delivered_record(0, d)];
        // What tcp_gro_complete and virtio_net_hdr_from_skb give a packet socket:
        // TCPV4, gso_size 1400, NEEDS_CSUM at the TCP header (34, checksum at 16).
        let seen = ObservedSkb {
            bytes: d.skb.to_vec(),
            vnet: Some(VirtioNetHdrRepr {
                flags: VIRTIO_NET_HDR_F_NEEDS_CSUM,
                gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
                hdr_len: d.skb.headlen() as u16,
                gso_size: 1400,
                csum_start: 34,
                csum_offset: 16,
                ..VirtioNetHdrRepr::default()
            }),
            ..ObservedSkb::default()
        };
        let real = |s: &ObservedSkb| [crate::trace::gro_observed::skb_record(0, s, &[])];
        let cmp = |r: &[Record<'static>]| first_record_divergence(&model, r);
        assert_eq!(cmp(&real(&seen)), None, "{model:?}");
        let mut t = String::new();
        real(&seen)[0].write_block(&mut t);
        assert!(t.contains("  gso: TCPV4 size 1400 segs 10\n"), "{t}");
        let mut other = seen.clone();
        other.vnet.as_mut().unwrap().csum_start = 54;
        assert_eq!(
            cmp(&real(&other)).map(|d| d.field),
            Some("csum".to_string())
        );
    }
}
