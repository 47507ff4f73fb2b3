//! `skbsim conform [PATH...]`: every scenario replayed on the simulator and through the
//! real kernel, and the two traces compared field by field (without the fields only the
//! model knows), then the two output pcaps frame by frame. The real kernel is the
//! reference: a divergence is a bug in the model (or a scenario the real arm cannot
//! express, which then needs `sim_only = "<reason>"`).
//!
//! Scenarios of a pipeline the real backend has no arm for yet are listed (`no-arm`) and,
//! like `sim_only` ones, neither pass nor fail.
//!
//! Exit codes: 0 every runnable scenario agrees, 1 a divergence (the scenario, the first
//! diverging read, the field and both values are printed), 2 a failure to run (no root,
//! a kernel operation failed, bad input).

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};
use sim::pcap::{Frame, LinkPolicy, PcapReader};
use sim::scenario::{Pipeline, Scenario};
use sim::trace::diff::Divergence;
use sim::trace::record::Record;
use sim::trace::record_diff::{first_flat_divergence, observed, Flat};

use crate::cli_error::CliError;
use crate::outln;
use crate::progress;
use crate::runner::{run_sim, run_tap, tap_ready, ScenarioOutput};
use crate::suite::{in_scenario, load_entries};

#[derive(Debug, Args)]
pub struct ConformArgs {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(default_value = "scenarios")]
    pub paths: Vec<PathBuf>,
    /// Run only shard K of N (1-based), split by a stable hash of the scenario name.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Print results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Where the simulator and the real kernel first disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// `tun-read/vlan-8021q-pi`.
    pub scenario: String,
    /// The trace event (`read 0 (frame 0, ts 1.000000000)`, `header`, `totals`) or the
    /// output pcap frame (`pcap frame 2`).
    pub read: String,
    /// The trace field (`pi`, `vnet`, `counters`, `result`, `bytes+0010`, ...) or, for
    /// the pcap, `byte N`, `length`, `timestamp`, `frames`.
    pub field: String,
    /// The simulator's value.
    pub sim: String,
    /// The real kernel's value.
    pub real: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: `{}`, field `{}`:\n  sim:  {}\n  real: {}",
            self.scenario, self.read, self.field, self.sim, self.real
        )
    }
}

impl Mismatch {
    fn to_json(&self) -> Value {
        json!({"read": self.read, "field": self.field, "sim": self.sim, "real": self.real})
    }
}

/// How one scenario came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Both arms produced the same trace (model-only fields aside) and the same pcap.
    Agree {
        frames: u64,
        reads: usize,
        notes: Vec<String>,
    },
    /// The scenario is `sim_only`; the reason.
    SimOnly(String),
    /// The real backend has no arm for the scenario's pipeline yet; why.
    NoRealArm(String),
    /// The arm needs a kernel feature this kernel lacks (GRE, vhost_net, USO on tap);
    /// `skbsim lab conform` runs it in the guest kernel instead.
    NeedsKernel(String),
    /// The first difference.
    Diverge {
        mismatch: Mismatch,
        notes: Vec<String>,
    },
    /// One arm failed to run; the message names the operation.
    Error(String),
}

/// The first difference between the simulator's records of `scenario` and a real arm's,
/// over what both arms see: each field's and record's mark (`sim::trace::record::Seen`)
/// decides, no list of names (`sim::trace::record_diff`).
pub fn compare_traces(scenario: &str, sim: &[Record<'_>], real: &[Record<'_>]) -> Option<Mismatch> {
    compare_observed(scenario, &observed(sim), &observed(real))
}

/// [`compare_traces`] of two traces already reduced to what a real arm observes
/// (`sim::trace::record_diff::observed`; a lab guest's comes so).
pub fn compare_observed(scenario: &str, sim: &[Flat], real: &[Flat]) -> Option<Mismatch> {
    first_flat_divergence(sim, real).map(|d| mismatch(scenario, d))
}

fn mismatch(scenario: &str, d: Divergence) -> Mismatch {
    Mismatch {
        scenario: scenario.to_string(),
        read: d.event,
        field: d.field,
        sim: d.left,
        real: d.right,
    }
}

fn frames_of(pcap: &[u8], what: &str) -> Result<Vec<Frame>, CliError> {
    let reader = PcapReader::from_reader_with(pcap, what, LinkPolicy::Any)?;
    let mut out = Vec::new();
    for f in reader {
        out.push(f?);
    }
    Ok(out)
}

/// The first difference between the output pcaps (what userspace read, frame per read).
pub fn compare_pcaps(
    scenario: &str,
    sim: &[u8],
    real: &[u8],
) -> Result<Option<Mismatch>, CliError> {
    let (a, b) = (
        frames_of(sim, "(sim pcap)")?,
        frames_of(real, "(real pcap)")?,
    );
    let m = |read: String, field: &str, sim: String, real: String| Mismatch {
        scenario: scenario.to_string(),
        read,
        field: field.to_string(),
        sim,
        real,
    };
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        if x.interface != y.interface {
            return Ok(Some(m(
                format!("pcap frame {i}"),
                "interface",
                x.interface.to_string(),
                y.interface.to_string(),
            )));
        }
        if x.data != y.data {
            let off = x.data.iter().zip(y.data.iter()).position(|(p, q)| p != q);
            return Ok(Some(match off {
                Some(o) => m(
                    format!("pcap frame {i}"),
                    &format!("byte {o}"),
                    format!("{:#04x}", x.data[o]),
                    format!("{:#04x}", y.data[o]),
                ),
                None => m(
                    format!("pcap frame {i}"),
                    "length",
                    x.data.len().to_string(),
                    y.data.len().to_string(),
                ),
            }));
        }
        if x.ts_ns != y.ts_ns {
            return Ok(Some(m(
                format!("pcap frame {i}"),
                "timestamp",
                x.ts_ns.to_string(),
                y.ts_ns.to_string(),
            )));
        }
    }
    if a.len() != b.len() {
        return Ok(Some(m(
            "output pcap".into(),
            "frames",
            a.len().to_string(),
            b.len().to_string(),
        )));
    }
    Ok(None)
}

/// Trace (by the records' marks) first, then pcap frame by frame.
pub fn compare_outputs(
    scenario: &str,
    sim: &ScenarioOutput,
    real: &ScenarioOutput,
) -> Result<Option<Mismatch>, CliError> {
    if let Some(m) = compare_traces(scenario, &sim.records, &real.records) {
        return Ok(Some(m));
    }
    compare_pcaps(scenario, &sim.pcap, &real.pcap)
}

/// [`compare_outputs`] for `scenario`'s pipeline: the records by their marks, then the
/// pcaps (tap-gro's without their timestamps, `crate::gro_real::compare_gro_pcaps`).
pub fn compare_scenario_outputs(
    scenario: &Scenario,
    sim: &ScenarioOutput,
    real: &ScenarioOutput,
) -> Result<Option<Mismatch>, CliError> {
    compare_observed_outputs(
        scenario,
        (&observed(&sim.records), &sim.pcap),
        (&observed(&real.records), &real.pcap),
    )
}

/// [`compare_scenario_outputs`] of two runs' traces already reduced to what a real arm
/// observes (`sim::trace::record_diff::observed`: a lab guest sends its real arm's so,
/// marks and all) and their pcaps. A side with no trace records is an error, not an
/// agreement.
pub fn compare_observed_outputs(
    scenario: &Scenario,
    (sim, sim_pcap): (&[Flat], &[u8]),
    (real, real_pcap): (&[Flat], &[u8]),
) -> Result<Option<Mismatch>, CliError> {
    for (side, flats) in [("simulator", sim), ("real arm", real)] {
        if flats.is_empty() {
            return Err(CliError(format!(
                "{}: the {side}'s trace has no records to compare",
                scenario.name
            )));
        }
    }
    if let Some(m) = compare_observed(&scenario.name, sim, real) {
        return Ok(Some(m));
    }
    if scenario.pipeline == Pipeline::TapGro {
        crate::gro_real::compare_gro_pcaps(&scenario.name, sim_pcap, real_pcap)
    } else {
        compare_pcaps(&scenario.name, sim_pcap, real_pcap)
    }
}

fn reads_in(trace: &str) -> usize {
    trace.lines().filter(|l| l.starts_with("read ")).count()
}

/// Run one scenario in both arms and compare. A failure of either arm is an
/// [`Outcome::Error`] (so the other scenarios still run), not an `Err`.
pub fn conform_one(scenario: &Scenario) -> Outcome {
    if let Some(reason) = &scenario.sim_only {
        return Outcome::SimOnly(reason.clone());
    }
    // An exec scenario's real arm is its program on real tun/tap files
    // (crate::exec_scenario), not one of skbsim_kernel::arm's replays.
    if scenario.pipeline == Pipeline::Exec {
        return conform_both(scenario);
    }
    if let Err(why) = skbsim_kernel::arm::real_arm(scenario.pipeline) {
        return Outcome::NoRealArm(why);
    }
    if let Some(why) = skbsim_kernel::features::missing(scenario) {
        return Outcome::NeedsKernel(why);
    }
    conform_both(scenario)
}

/// Both arms of a scenario the real kernel here can run, compared.
fn conform_both(scenario: &Scenario) -> Outcome {
    let sim = match run_sim(scenario, None) {
        Ok(o) => o,
        Err(e) => {
            let e = in_scenario(&scenario.path, e);
            return Outcome::Error(format!("simulator: {e}"));
        }
    };
    let real = match run_tap(scenario) {
        Ok(o) => o,
        Err(e) => {
            // run_tap names the scenario for callers that do not; the conform line does.
            let prefix = format!("{}: ", scenario.name);
            let msg = e.0.strip_prefix(&prefix).unwrap_or(&e.0);
            return Outcome::Error(format!("real kernel: {msg}"));
        }
    };
    match compare_scenario_outputs(scenario, &sim, &real) {
        Ok(None) => Outcome::Agree {
            frames: real.frames,
            reads: reads_in(&real.trace),
            notes: real.notes,
        },
        Ok(Some(mismatch)) => Outcome::Diverge {
            mismatch,
            notes: real.notes,
        },
        Err(e) => Outcome::Error(format!("comparing the output pcaps: {e}")),
    }
}

pub fn conform(args: &ConformArgs) -> Result<ExitCode, CliError> {
    tap_ready("conform")?;
    let entries = load_entries(&args.paths, args.shard.as_deref())?;
    let pb = progress::bar(entries.len() as u64, "conform");
    let (mut passed, mut failed, mut sim_only, mut errors, mut no_arm) = (0, 0, 0, 0, 0);
    let mut other_kernel = 0;
    let mut results = Vec::new();
    for entry in &entries {
        let name = &entry.name;
        pb.set_message(name.clone());
        // A scenario file that does not load fails alone; the rest still run.
        let outcome = match &entry.scenario {
            Ok(s) => conform_one(s),
            Err(e) => Outcome::Error(e.0.clone()),
        };
        pb.inc(1);
        let text = match &outcome {
            Outcome::Agree {
                frames,
                reads,
                notes,
            } => {
                passed += 1;
                results.push(json!({"scenario": name, "status": "pass", "frames": frames, "reads": reads, "notes": notes}));
                with_notes(
                    format!("    pass  {}  ({frames} frames, {reads} reads)", name),
                    notes,
                )
            }
            Outcome::SimOnly(reason) => {
                sim_only += 1;
                results.push(json!({"scenario": name, "status": "sim-only", "reason": reason}));
                format!("sim-only  {}: {reason}", name)
            }
            Outcome::NoRealArm(why) => {
                no_arm += 1;
                results.push(json!({"scenario": name, "status": "no-real-arm", "reason": why}));
                format!(" no-arm  {}: {why}", name)
            }
            Outcome::NeedsKernel(why) => {
                other_kernel += 1;
                results.push(json!({"scenario": name, "status": "needs-kernel", "reason": why}));
                format!(
                    "  kernel  {}: {why}; `skbsim lab conform` runs it in the guest",
                    name
                )
            }
            Outcome::Diverge { mismatch, notes } => {
                failed += 1;
                results.push(json!({"scenario": name, "status": "fail", "divergence": mismatch.to_json(), "notes": notes}));
                with_notes(format!("    FAIL  {mismatch}"), notes)
            }
            Outcome::Error(e) => {
                failed += 1;
                errors += 1;
                results.push(json!({"scenario": name, "status": "error", "error": e}));
                format!("   error  {}: {e}", name)
            }
        };
        if !args.json {
            pb.suspend(|| outln!("{text}"))?;
        }
    }
    pb.finish_and_clear();
    if args.json {
        outln!(
            "{}",
            json!({"results": results, "passed": passed, "failed": failed, "sim_only": sim_only, "errors": errors, "no_real_arm": no_arm, "needs_kernel": other_kernel})
        )?;
    } else {
        let mut line = format!("{passed} passed, {failed} failed, {sim_only} sim-only");
        if other_kernel > 0 {
            line.push_str(&format!(", {other_kernel} for the lab's kernel"));
        }
        if no_arm > 0 {
            line.push_str(&format!(", {no_arm} without a real arm"));
        }
        outln!("{line}")?;
    }
    Ok(if errors > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn with_notes(mut line: String, notes: &[String]) -> String {
    for n in notes {
        line.push_str("\n          note: ");
        line.push_str(n);
    }
    line
}
