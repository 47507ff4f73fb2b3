//! Running one scenario on the simulated backend: pcap in, trace and output pcap out.

use indicatif::ProgressBar;
use sim::pcap::{PcapFormat, PcapReader, PcapWriter};
use sim::pipeline::tun_read::{Event, TunReadRun};
use sim::scenario::{Pipeline, Scenario};
use sim::trace::{render_tun_read, trace_json, TraceHeader};

use crate::cli_error::CliError;

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
}

/// Replay `scenario` on the simulator. Bad input (pcap, frame, metadata recipe) is an
/// error naming the file.
pub fn run_sim(scenario: &Scenario, progress: Option<&ProgressBar>) -> Result<ScenarioOutput, CliError> {
    match scenario.pipeline {
        Pipeline::TunRead => run_tun_read(scenario, progress),
    }
}

fn run_tun_read(scenario: &Scenario, progress: Option<&ProgressBar>) -> Result<ScenarioOutput, CliError> {
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
            if frames % 4096 == 0 {
                pb.set_message(format!("{} frames", frames));
            }
        }
    }
    run.finish(&mut sink);
    let header = TraceHeader::for_scenario(scenario, "sim");
    let stats = run.stats();
    let device = &scenario.device;
    let trace = render_tun_read(&header, device, &events, &stats, Some(&run.ops));
    let json = trace_json(&header, device, &events, &stats);
    let mut writer = PcapWriter::new(Vec::new(), PcapFormat::Pcap)?;
    for e in &events {
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
    })
}
