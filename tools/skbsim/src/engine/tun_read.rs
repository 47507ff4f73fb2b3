//! The tun-read pipeline through the engine: the simulator's events and the real arm's
//! go through the same renderer into the same sinks.

use indicatif::ProgressBar;
use sim::pipeline::tun_read::{Event, TunReadRun};
use sim::pipeline::tun_read_trace::{event_record_in, totals_record, TunReadCounts};
use sim::scenario::Scenario;
use sim::skb::OpCounters;
use sim::trace::scratch::Scratch;
use sim::trace::TraceHeader;
use sim::tun::TunStats;

use super::capture::Point;
use super::drive::{drive, render_all, Render};
use super::summary::{read_fate, Reason, Tally};
use super::{RunSummary, Sinks};
use crate::cli_error::CliError;

/// Renders tun-read events into the sinks: each event becomes one record
/// (`sim::pipeline::tun_read_trace`), written by the sinks' writers.
#[derive(Debug)]
pub struct TunReadRender<'s> {
    scenario: &'s Scenario,
    counts: TunReadCounts,
    /// What became of each frame, for the summary.
    tally: Tally,
    /// Each event's record is built in the last one's buffers.
    scratch: Scratch,
    /// Each frame's packet comment is written over the last one's.
    comment: String,
}

impl<'s> TunReadRender<'s> {
    pub fn begin(
        scenario: &'s Scenario,
        backend: &str,
        sinks: &mut Sinks,
    ) -> Result<TunReadRender<'s>, CliError> {
        let header = TraceHeader::for_scenario(scenario, backend);
        if sinks.wants_records() {
            sinks.record(&header.record())?;
        }
        sinks
            .capture
            .begin(&[Point::for_device("read", &scenario.device)])?;
        Ok(TunReadRender {
            scenario,
            counts: TunReadCounts::default(),
            tally: Tally::new(&[("read", "the tun reader")]),
            scratch: Scratch::default(),
            comment: String::new(),
        })
    }

    #[inline]
    pub fn event(&mut self, sinks: &mut Sinks, e: &Event) -> Result<(), CliError> {
        let device = &self.scenario.device;
        self.counts.count(e);
        let comments = sinks.capture.comments;
        let scratch = &mut self.scratch;
        let rec = (sinks.wants_records() || comments).then(|| event_record_in(e, device, scratch));
        if let Some(rec) = rec.as_ref().filter(|_| sinks.wants_records()) {
            sinks.record(rec)?;
        }
        match e {
            Event::XmitDropped { reason, .. } => self.tally.dropped(Reason::XmitDrop(*reason), 1),
            Event::Queue { purged, .. } => {
                self.tally.dropped(Reason::QueuePurged, purged.len() as u64)
            }
            Event::BridgeDropped { reason, .. } => self.tally.bridge_dropped(reason.as_ref()),
            Event::Read(r) => match read_fate(r) {
                Some(Ok(())) => self.tally.delivered(0, 1),
                Some(Err(errno)) => self.tally.dropped(Reason::ReadError(errno), 1),
                None => {}
            },
        }
        if let Event::Read(r) = e {
            if let (Ok(_), Some((_, ts))) = (r.result, r.frame) {
                let data = r.frame_bytes(device);
                // A short read keeps the frame's whole length as orig_len.
                let orig = r.model.as_ref().map_or(data.len(), |m| m.frame_len);
                let comment = rec.as_ref().filter(|_| comments).map(|rec| {
                    rec.comment_into(&mut self.comment);
                    self.comment.as_str()
                });
                sinks.capture.frame(0, ts, data, orig, comment)?;
            }
        }
        if let Some(rec) = rec {
            self.scratch.recycle(rec);
        }
        Ok(())
    }

    /// The totals; the tally comes back for the summary.
    pub fn end(
        self,
        sinks: &mut Sinks,
        stats: &TunStats,
        ops: Option<&OpCounters>,
    ) -> Result<Tally, CliError> {
        if sinks.wants_records() {
            sinks.record(&totals_record(&self.counts, stats, ops))?;
        }
        Ok(self.tally)
    }
}

impl Render<Event> for TunReadRender<'_> {
    #[inline]
    fn event(&mut self, sinks: &mut Sinks, e: &Event) -> Result<(), CliError> {
        TunReadRender::event(self, sinks, e)
    }
}

/// Replay a tun-read scenario on the simulator into `sinks`.
pub fn run_sim(
    scenario: &Scenario,
    sinks: &mut Sinks,
    progress: Option<&ProgressBar>,
) -> Result<RunSummary, CliError> {
    let mut run = TunReadRun::new(scenario);
    let mut render = TunReadRender::begin(scenario, "sim", sinks)?;
    let (frames, skipped) = drive(scenario, &mut run, sinks, &mut render, progress, |e| {
        CliError(format!("{}: {e}", scenario.input.display()))
    })?;
    let tally = render.end(sinks, &run.stats(), Some(&run.ops))?;
    Ok(RunSummary {
        frames,
        skipped,
        notes: Vec::new(),
        tally: tally.finish(frames),
    })
}

/// The real kernel's tun-read run into `sinks`.
pub fn run_real(scenario: &Scenario, sinks: &mut Sinks) -> Result<RunSummary, CliError> {
    use skbsim_kernel::arm::{self, ArmError};
    let real = arm::run_tun_read(scenario).map_err(|e| match e {
        ArmError::Kernel(k) => CliError(format!("{}: {k}", scenario.name)),
        other => CliError(format!("{}: {other}", scenario.name)),
    })?;
    let mut render = TunReadRender::begin(scenario, "tap", sinks)?;
    render_all(sinks, &mut render, &real.events)?;
    let tally = render.end(sinks, &real.stats, None)?;
    Ok(RunSummary {
        frames: real.frames,
        notes: real.notes,
        // The real arm's input skips are counted by `runner::replay_into`.
        skipped: Default::default(),
        tally: tally.finish(real.frames),
    })
}
