//! The simulated `tap-write`, `vhost-tx` and `tap-gro` pipelines: pcap in, trace and a
//! pcap of what the stack received out.

use indicatif::ProgressBar;
use sim::pcap::{PcapFormat, PcapReader, PcapWriter};
use sim::pipeline::tap_write::{TapWriteRun, WriteEvent};
use sim::scenario::Scenario;
use sim::trace::write::{render_tap_write, tap_write_json};
use sim::trace::TraceHeader;

use crate::cli_error::CliError;
use crate::runner::ScenarioOutput;

/// Feed every frame of the scenario's pcap to `step` (index, ts, bytes); a model error
/// names the pcap and the frame. Returns the frame count and the last (index, ts).
fn for_each_frame(
    scenario: &Scenario,
    progress: Option<&ProgressBar>,
    mut step: impl FnMut(u64, u64, &[u8]) -> Result<(), String>,
) -> Result<(u64, (u64, u64)), CliError> {
    let mut reader = PcapReader::open(&scenario.input)?;
    let (mut frames, mut last) = (0u64, (0, 0));
    while let Some(frame) = reader.next_frame() {
        let frame = frame?;
        last = (frame.index, frame.ts_ns);
        step(frame.index, frame.ts_ns, frame.data).map_err(|e| {
            CliError(format!(
                "{}: frame {}: {e}",
                scenario.input.display(),
                frame.index
            ))
        })?;
        frames += 1;
        if let Some(pb) = progress {
            if frames.is_multiple_of(4096) {
                pb.set_message(format!("{frames} frames"));
            }
        }
    }
    Ok((frames, last))
}

/// Replay a tap-write scenario on the simulator. The output pcap holds what the stack
/// received (as AF_PACKET on the written tap sees it), in order.
pub fn run_tap_write(
    scenario: &Scenario,
    progress: Option<&ProgressBar>,
) -> Result<ScenarioOutput, CliError> {
    let name = |e: String| CliError(format!("{}: {e}", scenario.path.display()));
    let mut run = TapWriteRun::new(scenario).map_err(|e| name(e.0))?;
    let mut events = Vec::new();
    let mut sink = |e: WriteEvent| events.push(e);
    let (frames, _) = for_each_frame(scenario, progress, |i, ts, data| {
        run.frame(i, ts, data, &mut sink).map_err(|e| e.0)
    })?;
    tap_write_output(scenario, "sim", &events, run.maps(), frames, Vec::new())
}

/// A tap-write run's events (the simulator's, or the real kernel's with `backend`
/// "tap") as the trace, its JSON and the pcap of what the stack received, each frame
/// stamped with the first write's timestamp.
pub fn tap_write_output(
    scenario: &Scenario,
    backend: &str,
    events: &[WriteEvent],
    maps: Option<&sim::bpf::Maps>,
    frames: u64,
    notes: Vec<String>,
) -> Result<ScenarioOutput, CliError> {
    let header = TraceHeader::for_scenario(scenario, backend);
    let trace = render_tap_write(&header, scenario, events, maps);
    let json = tap_write_json(&header, events);
    let ts = events
        .iter()
        .find_map(|w| match w {
            WriteEvent::Write(r) if r.write == 0 => Some(r.ts_ns),
            _ => None,
        })
        .unwrap_or(0);
    let mut writer = PcapWriter::new(Vec::new(), PcapFormat::Pcap)?;
    for e in events {
        if let WriteEvent::Stack { delivery, .. } = e {
            writer.write_frame(ts, &delivery.frame)?;
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

/// Replay a vhost-tx scenario on the simulator. The output pcap holds what the stack
/// received.
pub fn run_vhost_tx(
    scenario: &Scenario,
    progress: Option<&ProgressBar>,
) -> Result<ScenarioOutput, CliError> {
    use sim::pipeline::vhost_tx::{VhostTxEvent, VhostTxRun};
    let mut run = VhostTxRun::new(scenario)
        .map_err(|e| CliError(format!("{}: {}", scenario.path.display(), e.0)))?;
    let mut events = Vec::new();
    let mut sink = |e: VhostTxEvent| events.push(e);
    let (frames, last) = for_each_frame(scenario, progress, |i, ts, data| {
        run.frame(i, ts, data, &mut sink).map_err(|e| e.0)
    })?;
    run.finish(last, &mut sink)
        .map_err(|e| CliError(format!("{}: {}", scenario.input.display(), e.0)))?;
    let net = &run.host().net;
    let stats = (
        net.dev(sim::pipeline::tap_write::IFINDEX_DUT)
            .map(|d| d.stats)
            .unwrap_or_default(),
        net.dev(sim::pipeline::tap_write::IFINDEX_REDIRECT)
            .map(|d| d.stats),
    );
    vhost_tx_output(
        scenario,
        "sim",
        &events,
        &run.ops(),
        frames,
        run.host().maps(),
        stats,
        last.1,
        Vec::new(),
    )
}

/// A vhost-tx run's events (the simulator's, or the real kernel's with `backend` "tap":
/// kicks, used returns and the host's events, no op counts) as the trace, the host
/// events' JSON and the pcap of what the stack received, stamped with `last_ts`.
#[allow(clippy::too_many_arguments)]
pub fn vhost_tx_output(
    scenario: &Scenario,
    backend: &str,
    events: &[sim::pipeline::vhost_tx::VhostTxEvent],
    ops: &sim::vhost::VhostOps,
    frames: u64,
    maps: Option<&sim::bpf::Maps>,
    stats: (sim::tun::TunStats, Option<sim::tun::TunStats>),
    last_ts: u64,
    notes: Vec<String>,
) -> Result<ScenarioOutput, CliError> {
    use sim::pipeline::vhost_tx::VhostTxEvent;
    let header = TraceHeader::for_scenario(scenario, backend);
    let trace =
        sim::trace::vhost::render_vhost_tx(&header, scenario, events, ops, frames, maps, stats);
    let host: Vec<WriteEvent> = events
        .iter()
        .filter_map(|e| match e {
            VhostTxEvent::Host(h) => Some(h.clone()),
            VhostTxEvent::Worker(_) => None,
        })
        .collect();
    let json = tap_write_json(&header, &host);
    let mut writer = PcapWriter::new(Vec::new(), PcapFormat::Pcap)?;
    for e in &host {
        if let WriteEvent::Stack { delivery, .. } = e {
            writer.write_frame(last_ts, &delivery.frame)?;
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

/// Replay a tap-gro scenario on the simulator. The output pcap holds the skbs as the
/// stack sees them after GRO.
pub fn run_tap_gro(scenario: &Scenario) -> Result<ScenarioOutput, CliError> {
    let frames: Vec<sim::pcap::Frame> =
        PcapReader::open(&scenario.input)?.collect::<Result<_, _>>()?;
    let n = frames.len() as u64;
    let out = sim::pipeline::tap_gro::run_tap_gro(
        scenario,
        frames.into_iter().map(|f| (f.index, f.ts_ns, f.data)),
    )
    .map_err(|e| CliError(format!("{}: {}", scenario.input.display(), e.0)))?;
    let mut writer = PcapWriter::new(Vec::new(), PcapFormat::Pcap)?;
    for (ts, bytes) in &out.delivered {
        writer.write_frame(*ts, bytes)?;
    }
    Ok(ScenarioOutput {
        trace: out.trace,
        json: out.json,
        pcap: writer.finish()?,
        frames: n,
        notes: Vec::new(),
    })
}
