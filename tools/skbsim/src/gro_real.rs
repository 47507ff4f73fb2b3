//! The `tap-gro` pipeline on the real kernel (`skbsim_kernel::arm::tap_gro`), and how its
//! output is compared with the simulator's or with the goldens.
//!
//! Two runs' traces are compared by their records' marks
//! (`sim::trace::record_diff::first_record_divergence`: the model's poll and time, its
//! own fields, a gso type beyond what a `virtio_net_hdr` carries are left out). A trace
//! that came as text (a golden, a lab guest's) first goes through
//! `sim::trace::gro_observed::observable`, then `first_divergence` skips
//! [`TEXT_IGNORED_FIELDS`]. The output pcaps are compared frame by frame, bytes and count
//! only: the real arm does not time deliveries, so their timestamps are not comparable.

use std::path::Path;

use sim::pcap::{LinkPolicy, PcapFormat, PcapReader, PcapWriter};
use sim::trace::diff::first_divergence;
use sim::trace::gro_observed::observable;
use sim::trace::record_diff::first_record_divergence;

use crate::cli_error::CliError;
use crate::conform::{compare_pcaps, Mismatch};
use crate::golden::{self, Verdict};
use crate::runner::ScenarioOutput;

/// The fields of a tap-gro trace that came as text (no records: a golden, a lab
/// guest's) left out of its comparison: the names `sim::pipeline::tap_gro_trace` and
/// `sim::trace::gro_delivery` mark as not seen by both arms (the model's, the real arm's
/// own `layout` and `ip_summed`, the `backend` label).
pub const TEXT_IGNORED_FIELDS: [&str; 10] = [
    "backend",
    "frames",
    "start",
    "rule",
    "end",
    "encap",
    "ip_summed",
    "layout",
    "held",
    "xdp",
];

/// [`TEXT_IGNORED_FIELDS`] as a list.
pub fn ignored_fields() -> Vec<&'static str> {
    TEXT_IGNORED_FIELDS.to_vec()
}

/// The first difference between a simulator tap-gro trace and a real one (see the
/// module docs).
pub fn compare_gro_traces(scenario: &str, sim: &str, real: &str) -> Option<Mismatch> {
    let (a, b) = (observable(sim), observable(real));
    first_divergence(a.trim_end(), b.trim_end(), &ignored_fields()).map(|d| Mismatch {
        scenario: scenario.to_string(),
        read: d.event,
        field: d.field,
        sim: d.left,
        real: d.right,
    })
}

/// `pcap` with every timestamp 0.
fn untimed(pcap: &[u8], what: &str) -> Result<Vec<u8>, CliError> {
    let mut w = PcapWriter::new(Vec::new(), PcapFormat::Pcap)?;
    for f in PcapReader::from_reader_with(pcap, what, LinkPolicy::Any)? {
        w.write_frame(0, &f?.data)?;
    }
    Ok(w.finish()?)
}

/// The first difference between the output pcaps, timestamps aside.
pub fn compare_gro_pcaps(
    scenario: &str,
    sim: &[u8],
    real: &[u8],
) -> Result<Option<Mismatch>, CliError> {
    compare_pcaps(
        scenario,
        &untimed(sim, "(sim pcap)")?,
        &untimed(real, "(real pcap)")?,
    )
}

/// Trace first, then pcap.
pub fn compare_gro_outputs(
    scenario: &str,
    sim: &ScenarioOutput,
    real: &ScenarioOutput,
) -> Result<Option<Mismatch>, CliError> {
    let trace = if !sim.records.is_empty() && !real.records.is_empty() {
        first_record_divergence(&sim.records, &real.records).map(|d| Mismatch {
            scenario: scenario.to_string(),
            read: d.event,
            field: d.field,
            sim: d.left,
            real: d.right,
        })
    } else {
        compare_gro_traces(scenario, &sim.trace, &real.trace)
    };
    if let Some(m) = trace {
        return Ok(Some(m));
    }
    compare_gro_pcaps(scenario, &sim.pcap, &real.pcap)
}

/// `skbsim run --backend tap` for a tap-gro scenario: the real replay against the
/// simulator's goldens in `dir`, compared as [`compare_gro_outputs`] does.
pub fn check_real_gro(dir: &Path, out: &ScenarioOutput) -> Result<Verdict, CliError> {
    let trace_path = dir.join(golden::TRACE_FILE);
    let pcap_path = dir.join(golden::PCAP_FILE);
    for p in [&trace_path, &pcap_path] {
        if !p.exists() {
            return Ok(Verdict::Missing(p.clone()));
        }
    }
    let text = golden::read_golden_trace(&trace_path)?;
    if let Some(m) = compare_gro_traces("", golden::snap_body(&text), &out.trace) {
        return Ok(Verdict::Mismatch(format!(
            "{} (- golden, + real kernel)\nfirst difference at `{}`, field `{}`:\n  - {}\n  + {}",
            trace_path.display(),
            m.read,
            m.field,
            m.sim,
            m.real
        )));
    }
    let pcap = golden::read_golden_pcap(&pcap_path)?;
    if let Some(m) = compare_gro_pcaps("", &pcap, &out.pcap)? {
        return Ok(Verdict::Mismatch(format!(
            "{} (- golden, + real kernel, timestamps aside)\n`{}`, {}: {} vs {}",
            pcap_path.display(),
            m.read,
            m.field,
            m.sim,
            m.real
        )));
    }
    Ok(Verdict::Pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIM: &str = "scenario: tap-gro/x\nbackend: sim\n\ndeliver 0 (poll 10, ts 1.001009000): len 13604\n  frames: 0-9 (10)\n  end: gro_flush_timeout\n  gso: TCPV4|UDP_TUNNEL size 1350 segs 10\n  csum: CHECKSUM_PARTIAL start 84 offset 16\n  encap: inner_mac 50 inner_network 64 inner_transport 84\n  vxlan_dev: len 13554\n  layout: head 1454 frags 0 frag_list 9\n  summary: s\n\ntotals: written 10 write_errors 0 delivered 1\n  lengths: [13604]\n  held: merged 9 held 1 normal 0 polls 11\n";
    const REAL: &str = "scenario: tap-gro/x\nbackend: real\n\ndeliver 0: len 13604\n  gso: TCPV4 size 1350 segs 10\n  csum: CHECKSUM_PARTIAL start 84 offset 16\n  vxlan_dev: len 13554\n  layout: head 1454 (vnet hdr_len)\n  summary: s\n\ntotals: written 10 write_errors 0 delivered 1\n  lengths: [13604]\n";

    #[test]
    fn model_only_and_unobservable_fields_do_not_count() {
        assert_eq!(compare_gro_traces("tap-gro/x", SIM, REAL), None);
        let real = REAL.replace("start 84", "start 34");
        let m = compare_gro_traces("tap-gro/x", SIM, &real).expect("csum differs");
        assert_eq!((m.read.as_str(), m.field.as_str()), ("deliver 0", "csum"));
        let real = REAL.replace("  vxlan_dev: len 13554\n", "");
        let m = compare_gro_traces("tap-gro/x", SIM, &real).expect("vxlan_dev missing");
        assert_eq!(m.field, "vxlan_dev");
        assert_eq!(m.sim, "vxlan_dev: len 13554");
    }
}
