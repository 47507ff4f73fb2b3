//! `skbsim lab`: the commands are the `skbsim-lab` crate's ([`skbsim_lab::commands`]);
//! this module hands them the rest of skbsim: the scenario loader, the two arms, the
//! conform comparison and stdout.

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

use sim::scenario::{Pipeline, Scenario};
use sim::trace::diff::Divergence;
use skbsim::cli_error::CliError;
use skbsim::conform::{comparable, compare_scenario_outputs};
use skbsim::runner::{run_sim, run_tap, tap_ready, ScenarioOutput};
use skbsim::suite::load_scenarios;
use skbsim_lab::commands::{ArmOutput, LabArgs, Skbsim};

/// `skbsim lab ...`.
pub fn lab(args: &LabArgs) -> Result<ExitCode, CliError> {
    skbsim_lab::commands::lab(args, &Cli).map_err(CliError)
}

/// The CLI as the lab commands see it.
struct Cli;

fn arm(o: ScenarioOutput) -> ArmOutput {
    ArmOutput {
        trace: o.trace,
        pcap: o.pcap,
        frames: o.frames,
        notes: o.notes,
    }
}

fn scenario_output(o: &ArmOutput) -> ScenarioOutput {
    ScenarioOutput {
        trace: o.trace.clone(),
        json: serde_json::Value::Null,
        pcap: o.pcap.clone(),
        frames: o.frames,
        notes: o.notes.clone(),
        // A guest's trace comes back as text, so lab comparisons are by text (with the
        // model-only field lists), not by records.
        records: Vec::new(),
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
        let m = compare_scenario_outputs(s, &scenario_output(sim), &scenario_output(real))
            .map_err(|e| e.0)?;
        Ok(m.map(|m| Divergence {
            event: m.read,
            field: m.field,
            left: m.sim,
            right: m.real,
        }))
    }

    fn comparable(&self, pipeline: Pipeline, trace: &str) -> (String, Vec<&'static str>) {
        comparable(pipeline, trace)
    }
}
