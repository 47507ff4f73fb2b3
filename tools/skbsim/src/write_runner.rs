//! The simulated `tap-write` pipeline: pcap in, trace and a pcap of what the stack
//! received out.

use indicatif::ProgressBar;
use sim::pcap::{PcapFormat, PcapReader, PcapWriter};
use sim::pipeline::tap_write::{TapWriteRun, WriteEvent};
use sim::scenario::Scenario;
use sim::trace::write::{render_tap_write, tap_write_json};
use sim::trace::TraceHeader;

use crate::cli_error::CliError;
use crate::runner::ScenarioOutput;

/// Replay a tap-write scenario on the simulator. The output pcap holds what the stack
/// received (as AF_PACKET on the written tap sees it), in order.
pub fn run_tap_write(scenario: &Scenario, progress: Option<&ProgressBar>) -> Result<ScenarioOutput, CliError> {
    let mut reader = PcapReader::open(&scenario.input)?;
    let name = |e: String| CliError(format!("{}: {e}", scenario.path.display()));
    let mut run = TapWriteRun::new(scenario).map_err(|e| name(e.0))?;
    let mut events = Vec::new();
    let mut sink = |e: WriteEvent| events.push(e);
    let mut frames = 0u64;
    while let Some(frame) = reader.next_frame() {
        let frame = frame?;
        run.frame(frame.index, frame.ts_ns, frame.data, &mut sink)
            .map_err(|e| CliError(format!("{}: frame {}: {}", scenario.input.display(), frame.index, e.0)))?;
        frames += 1;
        if let Some(pb) = progress {
            if frames.is_multiple_of(4096) {
                pb.set_message(format!("{frames} frames"));
            }
        }
    }
    let header = TraceHeader::for_scenario(scenario, "sim");
    let trace = render_tap_write(&header, scenario, &events, run.maps());
    let json = tap_write_json(&header, &events);
    let mut writer = PcapWriter::new(Vec::new(), PcapFormat::Pcap)?;
    for e in &events {
        if let WriteEvent::Stack { delivery, .. } = e {
            let ts = events
                .iter()
                .find_map(|w| match w {
                    WriteEvent::Write(r) if r.write == 0 => Some(r.ts_ns),
                    _ => None,
                })
                .unwrap_or(0);
            writer.write_frame(ts, &delivery.frame)?;
        }
    }
    let pcap = writer.finish()?;
    Ok(ScenarioOutput {
        trace,
        json,
        pcap,
        frames,
        notes: Vec::new(),
    })
}
