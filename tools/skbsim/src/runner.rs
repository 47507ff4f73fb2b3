//! Running one scenario on a backend: pcap in, trace and output pcap out. The simulator
//! (`sim`) and the real kernel (`tap`, through `skbsim_kernel::arm`) produce the same
//! events, rendered by the same functions.

use indicatif::ProgressBar;
use sim::pcap::{PcapFormat, PcapReader, PcapWriter};
use sim::pipeline::tun_read::{Event, TunReadRun};
use sim::scenario::{Pipeline, Scenario};
use sim::skb::OpCounters;
use sim::trace::{render_tun_read, trace_json, TraceHeader};
use sim::tun::TunStats;
use skbsim_kernel::arm::{self, ArmError};

use crate::cli_error::CliError;

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

/// What one replay produced.
#[derive(Debug)]
pub struct ScenarioOutput {
    /// The canonical text trace.
    pub trace: String,
    /// The same for machines.
    pub json: serde_json::Value,
    /// A pcap of the frames userspace read (after PI and vnet header).
    pub pcap: Vec<u8>,
    /// Input frames replayed.
    pub frames: u64,
    /// What the real arm noticed that the trace cannot show (empty for the simulator).
    pub notes: Vec<String>,
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

/// Replay `scenario` on `backend`.
pub fn run_backend(
    scenario: &Scenario,
    backend: Backend,
    progress: Option<&ProgressBar>,
) -> Result<ScenarioOutput, CliError> {
    match backend {
        Backend::Sim => run_sim(scenario, progress),
        Backend::Tap => run_tap(scenario),
    }
}

/// Replay `scenario` on the simulator. Bad input (pcap, frame, metadata recipe) is an
/// error naming the file.
pub fn run_sim(
    scenario: &Scenario,
    progress: Option<&ProgressBar>,
) -> Result<ScenarioOutput, CliError> {
    match scenario.pipeline {
        Pipeline::TunRead => run_tun_read(scenario, progress),
        Pipeline::TapWrite => crate::write_runner::run_tap_write(scenario, progress),
        Pipeline::VhostTx => crate::write_runner::run_vhost_tx(scenario, progress),
        Pipeline::TapGro => crate::write_runner::run_tap_gro(scenario),
    }
}

/// Replay `scenario` through the real kernel. Kernel failures name the operation
/// ("TUNSETVNETBE on skbdut: Invalid argument (EINVAL)").
pub fn run_tap(scenario: &Scenario) -> Result<ScenarioOutput, CliError> {
    match scenario.pipeline {
        Pipeline::TunRead => {
            let real = arm::run_tun_read(scenario).map_err(|e| match e {
                ArmError::Kernel(k) => CliError(format!("{}: {k}", scenario.name)),
                other => CliError(format!("{}: {other}", scenario.name)),
            })?;
            output(
                scenario,
                Backend::Tap,
                &real.events,
                &real.stats,
                None,
                real.frames,
                real.notes,
            )
        }
        Pipeline::TapGro => crate::gro_real::run_tap_gro_real(scenario),
        Pipeline::TapWrite => {
            let real = arm::run_tap_write(scenario)
                .map_err(|e| CliError(format!("{}: {e}", scenario.name)))?;
            crate::write_runner::tap_write_output(
                scenario,
                Backend::Tap.name(),
                &real.events,
                real.maps.as_ref(),
                real.frames,
                real.notes,
            )
        }
        Pipeline::VhostTx => {
            let real = arm::run_vhost_tx(scenario)
                .map_err(|e| CliError(format!("{}: {e}", scenario.name)))?;
            let last_ts = PcapReader::open(&scenario.input)?
                .filter_map(Result::ok)
                .last()
                .map_or(0, |f| f.ts_ns);
            crate::write_runner::vhost_tx_output(
                scenario,
                Backend::Tap.name(),
                &real.events,
                &sim::vhost::VhostOps::default(),
                real.frames,
                real.maps.as_ref(),
                real.stats,
                last_ts,
                real.notes,
            )
        }
    }
}

fn run_tun_read(
    scenario: &Scenario,
    progress: Option<&ProgressBar>,
) -> Result<ScenarioOutput, CliError> {
    let mut reader = PcapReader::open(&scenario.input)?;
    let mut run = TunReadRun::new(scenario);
    let mut events = Vec::new();
    let mut sink = |e: Event| events.push(e);
    let mut frames = 0u64;
    while let Some(frame) = reader.next_frame() {
        let frame = frame?;
        run.frame(frame.index, frame.ts_ns, frame.data, &mut sink)
            .map_err(|e| CliError(format!("{}: {}", scenario.input.display(), e.0)))?;
        frames += 1;
        if let Some(pb) = progress {
            if frames.is_multiple_of(4096) {
                pb.set_message(format!("{} frames", frames));
            }
        }
    }
    run.finish(&mut sink);
    let stats = run.stats();
    output(
        scenario,
        Backend::Sim,
        &events,
        &stats,
        Some(&run.ops),
        frames,
        Vec::new(),
    )
}

/// Render events into the trace, its JSON and the output pcap.
fn output(
    scenario: &Scenario,
    backend: Backend,
    events: &[Event],
    stats: &TunStats,
    ops: Option<&OpCounters>,
    frames: u64,
    notes: Vec<String>,
) -> Result<ScenarioOutput, CliError> {
    let header = TraceHeader::for_scenario(scenario, backend.name());
    let device = &scenario.device;
    let trace = render_tun_read(&header, device, events, stats, ops);
    let json = trace_json(&header, device, events, stats);
    let mut writer = PcapWriter::new(Vec::new(), PcapFormat::Pcap)?;
    for e in events {
        if let Event::Read(r) = e {
            if let (Ok(_), Some((_, ts))) = (r.result, r.frame) {
                writer.write_frame(ts, r.frame_bytes(device))?;
            }
        }
    }
    let pcap = writer.finish()?;
    Ok(ScenarioOutput {
        trace,
        json,
        pcap,
        frames,
        notes,
    })
}
