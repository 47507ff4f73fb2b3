//! The vhost-tx pipeline through the engine: the worker's kicks, batches and used-ring
//! updates, then the host's events (rendered as tap-write's).

use indicatif::ProgressBar;
use sim::pcap::EthernetInput;
use sim::pipeline::tap_write::{IFINDEX_DUT, IFINDEX_REDIRECT};
use sim::pipeline::vhost_tx::{VhostTxEvent, VhostTxRun};
use sim::scenario::Scenario;
use sim::trace::vhost::{guest_line, ops_lines, render_worker};
use sim::vhost::VhostOps;

use super::tap_write::{for_each_frame, keep_buffer, model_error, HostRender};
use super::{RunSummary, Sinks};
use crate::cli_error::CliError;

#[inline]
fn event(render: &mut HostRender<'_>, sinks: &mut Sinks, e: &VhostTxEvent) -> Result<(), CliError> {
    match e {
        VhostTxEvent::Worker(w) => {
            if sinks.trace.on() {
                sinks.trace.buf.push('\n');
                render_worker(&mut sinks.trace.buf, w);
                sinks.trace.flush()?;
            }
            Ok(())
        }
        VhostTxEvent::Host(h) => render.event(sinks, h),
    }
}

/// The timestamp of the input's first frame: every frame the stack received is stamped
/// with it in the output capture (a streamed capture cannot wait for the last one).
fn first_ts(scenario: &Scenario) -> Result<u64, CliError> {
    let mut r = EthernetInput::open(&scenario.input, scenario.link)?;
    Ok(match r.next_frame() {
        Some(f) => f?.ts_ns,
        None => 0,
    })
}

/// Replay a vhost-tx scenario on the simulator into `sinks`.
pub fn run_sim(
    scenario: &Scenario,
    sinks: &mut Sinks,
    progress: Option<&ProgressBar>,
) -> Result<RunSummary, CliError> {
    let mut run = VhostTxRun::new(scenario)
        .map_err(|e| CliError(format!("{}: {}", scenario.path.display(), e.0)))?;
    let mut render = HostRender::begin(scenario, "sim", sinks, |out| guest_line(out, scenario))?;
    let mut first = true;
    let mut spare = Vec::new();
    let (frames, last) = for_each_frame(scenario, progress, |i, ts, data| {
        if first {
            render.capture_ts = Some(ts);
            first = false;
        }
        let mut failed = None;
        run.frame(i, ts, data, &mut |e| {
            if failed.is_none() {
                failed = event(&mut render, sinks, &e).err();
            }
            if let VhostTxEvent::Host(h) = e {
                keep_buffer(h, &mut spare);
            }
        })
        .map_err(|e| model_error(scenario, i, &e.0))?;
        for f in spare.drain(..) {
            run.recycle_frame(f);
        }
        failed.map_or(Ok(()), Err)
    })?;
    let mut failed = None;
    run.finish(last, &mut |e| {
        if failed.is_none() {
            failed = event(&mut render, sinks, &e).err();
        }
    })
    .map_err(|e| CliError(format!("{}: {}", scenario.input.display(), e.0)))?;
    if let Some(e) = failed {
        return Err(e);
    }
    let net = &run.host().net;
    let stats = (
        net.dev(IFINDEX_DUT).map(|d| d.stats).unwrap_or_default(),
        net.dev(IFINDEX_REDIRECT).map(|d| d.stats),
    );
    let ops = run.ops();
    render.end(sinks, Some(stats), run.host().maps(), |out| {
        ops_lines(out, &ops, frames)
    })?;
    Ok(RunSummary {
        frames,
        notes: Vec::new(),
    })
}

/// The real kernel's vhost-tx run (a userspace vhost client as the guest) into `sinks`.
pub fn run_real(scenario: &Scenario, sinks: &mut Sinks) -> Result<RunSummary, CliError> {
    let real = skbsim_kernel::arm::run_vhost_tx(scenario)
        .map_err(|e| CliError(format!("{}: {e}", scenario.name)))?;
    let mut render = HostRender::begin(scenario, "tap", sinks, |out| guest_line(out, scenario))?;
    render.capture_ts = Some(first_ts(scenario)?);
    for e in &real.events {
        event(&mut render, sinks, e)?;
    }
    let ops = VhostOps::default();
    render.end(sinks, Some(real.stats), real.maps.as_ref(), |out| {
        ops_lines(out, &ops, real.frames)
    })?;
    Ok(RunSummary {
        frames: real.frames,
        notes: real.notes,
    })
}
