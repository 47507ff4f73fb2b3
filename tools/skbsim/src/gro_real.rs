//! The `tap-gro` pipeline on the real kernel (`skbsim_kernel::arm::tap_gro`), and how its
//! output is compared with the simulator's or with the goldens.
//!
//! Two runs' traces are compared by their records' marks
//! (`sim::trace::record_diff`: the model's poll and time, its own fields, a gso type
//! beyond what a `virtio_net_hdr` carries are left out, `crate::conform::compare_traces`);
//! a golden, which is text, by the records of the simulator that wrote it
//! (`crate::suite::check_real_trace`). The output pcaps are compared frame by frame, bytes
//! and count only: the real arm does not time deliveries, so their timestamps are not
//! comparable.

use std::path::Path;

use sim::pcap::{LinkPolicy, PcapFormat, PcapReader, PcapWriter};
use sim::scenario::Scenario;

use crate::cli_error::CliError;
use crate::conform::{compare_pcaps, Mismatch};
use crate::golden::{self, Verdict};
use crate::runner::ScenarioOutput;

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

/// `skbsim run --backend tap` for a tap-gro scenario: the real replay against the
/// simulator's goldens in `dir`, the trace by its records' marks
/// ([`crate::suite::check_real_trace`]), the pcap without timestamps.
pub fn check_real_gro(
    dir: &Path,
    scenario: &Scenario,
    out: &ScenarioOutput,
) -> Result<Verdict, CliError> {
    let pcap_path = dir.join(golden::PCAP_FILE);
    if let Some(v) = crate::suite::check_real_trace(dir, scenario, out)? {
        return Ok(v);
    }
    if !pcap_path.exists() {
        return Ok(Verdict::Missing(pcap_path));
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
