//! `skbsim lab`: the commands are the `skbsim-lab` crate's ([`skbsim_lab::commands`]);
//! this module hands them the rest of skbsim: the scenario loader, the two arms, the
//! conform comparison and stdout.

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

use sim::scenario::Scenario;
use sim::trace::diff::Divergence;
use sim::trace::record_diff::observed;
use skbsim::cli_error::CliError;
use skbsim::conform::compare_observed_outputs;
use skbsim::runner::{run_sim, run_tap, tap_ready, ScenarioOutput};
use skbsim::suite::load_scenarios;
use skbsim_lab::commands::{ArmOutput, LabArgs, Skbsim};

/// `skbsim lab ...`.
pub fn lab(args: &LabArgs) -> Result<ExitCode, CliError> {
    skbsim_lab::commands::lab(args, &Cli).map_err(CliError)
}

/// The CLI as the lab commands see it.
struct Cli;

/// The run as the lab carries it: its records reduced to what a real arm observes, each
/// field with its mark (what a guest sends back; see `skbsim_lab::commands::ArmOutput`).
fn arm(o: ScenarioOutput) -> ArmOutput {
    ArmOutput {
        observed: observed(&o.records),
        trace: o.trace,
        pcap: o.pcap,
        frames: o.frames,
        notes: o.notes,
    }
}

impl Skbsim for Cli {
    fn print(&self, text: fmt::Arguments<'_>) -> Result<(), String> {
        skbsim::stdout::write(text).map_err(|e| e.0)
    }

    fn load_scenarios(
        &self,
        paths: &[PathBuf],
        shard: Option<&str>,
    ) -> Result<Vec<Scenario>, String> {
        load_scenarios(paths, shard).map_err(|e| e.0)
    }

    fn tap_ready(&self, what: &str) -> Result<(), String> {
        tap_ready(what).map_err(|e| e.0)
    }

    fn run_sim(&self, s: &Scenario) -> Result<ArmOutput, String> {
        run_sim(s, None).map(arm).map_err(|e| e.0)
    }

    fn run_real(&self, s: &Scenario) -> Result<ArmOutput, String> {
        run_tap(s).map(arm).map_err(|e| e.0)
    }

    fn first_mismatch(
        &self,
        s: &Scenario,
        sim: &ArmOutput,
        real: &ArmOutput,
    ) -> Result<Option<Divergence>, String> {
        let m =
            compare_observed_outputs(s, (&sim.observed, &sim.pcap), (&real.observed, &real.pcap))
                .map_err(|e| e.0)?;
        Ok(m.map(|m| Divergence {
            event: m.read,
            field: m.field,
            left: m.sim,
            right: m.real,
        }))
    }
}
