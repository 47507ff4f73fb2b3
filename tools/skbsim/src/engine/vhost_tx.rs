//! The vhost-tx pipeline through the engine: the worker's kicks, batches and used-ring
//! updates, then the host's events (rendered as tap-write's).

use indicatif::ProgressBar;
use sim::pcap::EthernetInput;
use sim::pipeline::vhost_tx::{VhostTxEvent, VhostTxRun};
use sim::scenario::Scenario;
use sim::trace::vhost::{guest_field, ops_fields, worker_record};
use sim::vhost::{VhostEvent, VhostOps};

use super::drive::{drive, render_all, Render};
use super::tap_write::{model_error, HostRender};
use super::{RunSummary, Sinks};
use crate::cli_error::CliError;

/// The worker's events, and the host's through [`HostRender`].
#[derive(Debug)]
struct VhostRender<'s> {
    host: HostRender<'s>,
    /// Packets the worker put back on the ring and has not sent since, with the errno
    /// (handle_tx_copy: vhost_discard_vq_desc).
    stalled: std::collections::BTreeMap<u64, sim::errno::Errno>,
}

impl VhostRender<'_> {
    /// The tally: each packet's fate, and what stayed on the guest's ring.
    fn count(&mut self, w: &VhostEvent) {
        match w {
            VhostEvent::Packet(p) => {
                self.stalled.remove(&p.packet);
                self.host.fate(&p.fate, p.result.err(), p.xdp.as_ref());
            }
            VhostEvent::Stall { packet, errno } => {
                self.stalled.insert(*packet, *errno);
            }
            _ => {}
        }
    }

    /// The host's tally with the packets never sent.
    fn tally(&self, mut t: super::summary::Tally) -> super::summary::Tally {
        for errno in self.stalled.values() {
            t.dropped(super::summary::Reason::VhostStalled(*errno), 1);
        }
        t
    }
}

impl Render<VhostTxEvent> for VhostRender<'_> {
    /// Every frame the stack received is stamped with the input's first frame's time in
    /// the output capture (a streamed capture cannot wait for the last one).
    #[inline]
    fn frame(&mut self, _index: u64, ts_ns: u64) {
        self.host.capture_ts.get_or_insert(ts_ns);
    }

    #[inline]
    fn event(&mut self, sinks: &mut Sinks, e: &VhostTxEvent) -> Result<(), CliError> {
        match e {
            VhostTxEvent::Worker(w) => {
                self.count(w);
                if sinks.wants_records() {
                    sinks.record(&worker_record(w))?;
                }
                Ok(())
            }
            VhostTxEvent::Host(h) => self.host.event(sinks, h),
        }
    }
}

/// The timestamp of the input's first frame (the real arm's run has no frames to see).
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
    let host = HostRender::begin(scenario, "sim", sinks, |rec| guest_field(rec, scenario))?;
    let mut render = VhostRender {
        host,
        stalled: Default::default(),
    };
    let (frames, skipped) = drive(
        scenario,
        &mut run,
        sinks,
        &mut render,
        progress,
        model_error(scenario),
    )?;
    let stats = run.host().dut_stats();
    let ops = run.ops();
    let tally = render
        .host
        .end(sinks, Some(stats), run.host().maps(), |rec| {
            ops_fields(rec, &ops, frames)
        })?;
    Ok(RunSummary {
        frames,
        skipped,
        notes: Vec::new(),
        tally: render.tally(tally).finish(frames),
    })
}

/// The real kernel's vhost-tx run (a userspace vhost client as the guest) into `sinks`.
pub fn run_real(scenario: &Scenario, sinks: &mut Sinks) -> Result<RunSummary, CliError> {
    let real = skbsim_kernel::arm::run_vhost_tx(scenario)
        .map_err(|e| CliError(format!("{}: {e}", scenario.name)))?;
    let host = HostRender::begin(scenario, "tap", sinks, |rec| guest_field(rec, scenario))?;
    let mut render = VhostRender {
        host,
        stalled: Default::default(),
    };
    render.host.capture_ts = Some(first_ts(scenario)?);
    render_all(sinks, &mut render, &real.events)?;
    let ops = VhostOps::default();
    let tally = render
        .host
        .end(sinks, Some(real.stats), real.maps.as_ref(), |rec| {
            ops_fields(rec, &ops, real.frames)
        })?;
    Ok(RunSummary {
        frames: real.frames,
        notes: real.notes,
        // The real arm's input skips are counted by `runner::replay_into`.
        skipped: Default::default(),
        tally: render.tally(tally).finish(real.frames),
    })
}
