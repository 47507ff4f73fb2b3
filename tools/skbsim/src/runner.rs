//! Running one scenario on a backend: pcap in, events out to the engine's sinks. The
//! simulator (`sim`) and the real kernel (`tap`, through `skbsim_kernel::arm`) produce
//! the same events, rendered by the same functions.

use indicatif::ProgressBar;
use sim::scenario::{Pipeline, Scenario};
use skbsim_kernel::arm::ArmError;

use crate::cli_error::CliError;
use crate::engine::{self, RunSummary, Sinks};

/// Where a scenario is replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The deterministic model.
    Sim,
    /// The real kernel: a writer tap bridged to the tap under test, in a private namespace
    /// (needs root and /dev/net/tun).
    Tap,
}

impl Backend {
    /// The name the trace header shows.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sim => "sim",
            Backend::Tap => "tap",
        }
    }
}

/// What one replay produced, in memory: for the test suite and `conform`, whose
/// scenarios are small. `run`, `bless` and `replay` stream into files and comparators
/// instead ([`replay_into`]).
#[derive(Debug)]
pub struct ScenarioOutput {
    /// The canonical text trace.
    pub trace: String,
    /// The same for machines: the JSON lines (header, events, totals) as an array.
    pub json: serde_json::Value,
    /// A pcap of the frames userspace read (after PI and vnet header).
    pub pcap: Vec<u8>,
    /// Input frames replayed.
    pub frames: u64,
    /// What the real arm noticed that the trace cannot show (empty for the simulator).
    pub notes: Vec<String>,
    /// The trace as records, with their marks (empty for a pipeline that does not build
    /// records yet, and for a trace that came as text from a lab guest).
    pub records: Vec<sim::trace::record::Record<'static>>,
}

impl From<ArmError> for CliError {
    fn from(e: ArmError) -> Self {
        CliError(e.to_string())
    }
}

/// `Ok(())` when the real kernel backend can run here; otherwise the one-line reason
/// (exit 2), prefixed with `what` ("--backend tap", "conform").
pub fn tap_ready(what: &str) -> Result<(), CliError> {
    skbsim_kernel::privileges_ok().map_err(|why| CliError(format!("{what}: {why}")))
}

/// Replay `scenario` on `backend` into `sinks`: the one engine every command drives.
pub fn replay_into(
    scenario: &Scenario,
    backend: Backend,
    sinks: &mut Sinks,
    progress: Option<&ProgressBar>,
) -> Result<RunSummary, CliError> {
    match (backend, scenario.pipeline) {
        (_, Pipeline::Exec) => Err(not_replayed(scenario)),
        (Backend::Sim, Pipeline::TunRead) => engine::tun_read::run_sim(scenario, sinks, progress),
        (Backend::Sim, Pipeline::TapWrite) => engine::tap_write::run_sim(scenario, sinks, progress),
        (Backend::Sim, Pipeline::VhostTx) => engine::vhost_tx::run_sim(scenario, sinks, progress),
        (Backend::Sim, Pipeline::TapGro) => engine::tap_gro::run_sim(scenario, sinks, progress),
        (Backend::Tap, _) => {
            let mut summary = match scenario.pipeline {
                Pipeline::TunRead => engine::tun_read::run_real(scenario, sinks),
                Pipeline::TapWrite => engine::tap_write::run_real(scenario, sinks),
                Pipeline::VhostTx => engine::vhost_tx::run_real(scenario, sinks),
                Pipeline::TapGro => engine::tap_gro::run_real(scenario, sinks),
                Pipeline::Exec => Err(not_replayed(scenario)),
            }?;
            // The real arms read their frames whole and drop the skipped ones; count those
            // here, with the simulator's reader.
            let mut input = sim::pcap::EthernetInput::open(&scenario.input, scenario.link)?;
            while let Some(f) = input.next_frame() {
                f?;
            }
            summary.skipped = *input.skipped();
            Ok(summary)
        }
    }
}

/// An exec scenario runs a program, not a capture: it is run whole ([`run_backend`],
/// crate::exec_scenario), never streamed into sinks.
fn not_replayed(scenario: &Scenario) -> CliError {
    CliError(format!(
        "{}: an exec scenario runs a program; `skbsim run`, `bless` and `conform` run it, `replay` cannot",
        scenario.path.display()
    ))
}

/// Replay `scenario` on `backend` with every sink in memory (an exec scenario: its
/// program run, crate::exec_scenario).
pub fn run_backend(
    scenario: &Scenario,
    backend: Backend,
    progress: Option<&ProgressBar>,
) -> Result<ScenarioOutput, CliError> {
    if scenario.pipeline == Pipeline::Exec {
        return crate::exec_scenario::run(scenario, backend);
    }
    let mut sinks = Sinks::memory();
    let summary = replay_into(scenario, backend, &mut sinks, progress)?;
    let done = sinks.finish()?;
    let json = String::from_utf8_lossy(&done.json)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Ok(ScenarioOutput {
        trace: String::from_utf8(done.trace)
            .map_err(|_| CliError(format!("{}: the trace is not UTF-8", scenario.name)))?,
        json: serde_json::Value::Array(json),
        pcap: done.capture,
        frames: summary.frames,
        notes: summary.notes,
        records: done.records,
    })
}

/// Replay `scenario` on the simulator, in memory. Bad input (pcap, frame, metadata
/// recipe) is an error naming the file.
pub fn run_sim(
    scenario: &Scenario,
    progress: Option<&ProgressBar>,
) -> Result<ScenarioOutput, CliError> {
    run_backend(scenario, Backend::Sim, progress)
}

/// Replay `scenario` through the real kernel, in memory. Kernel failures name the
/// operation ("TUNSETVNETBE on skbdut: Invalid argument (EINVAL)").
pub fn run_tap(scenario: &Scenario) -> Result<ScenarioOutput, CliError> {
    run_backend(scenario, Backend::Tap, None)
}
