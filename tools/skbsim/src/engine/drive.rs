//! A scenario's replay through the one loop every pipeline runs in
//! ([`sim::pipeline::drive`]): the pcap reader's frames are the source, the scenario's
//! [`Schedule`] adds the reads and kicks that follow each; every event goes at once to
//! the renderer of its kind, then back to the pipeline for reuse. The real arms' events go through the same
//! renderers ([`render_all`]).

use indicatif::ProgressBar;
use sim::pcap::{EthernetInput, SkipCounts};
use sim::pipeline::drive::{Consumer, DriveError};
use sim::pipeline::{Pipeline, PipelineError, Schedule};
use sim::scenario::Scenario;

use super::{Sinks, PROGRESS_EVERY};
use crate::cli_error::CliError;

/// Renders one kind of event into the sinks (the text trace, the JSON lines, the
/// capture), whichever arm produced it.
pub trait Render<E> {
    /// An input frame is about to be fed (a renderer that stamps captures with the first
    /// frame's time sees it here).
    #[inline]
    fn frame(&mut self, _index: u64, _ts_ns: u64) {}

    fn event(&mut self, sinks: &mut Sinks, e: &E) -> Result<(), CliError>;
}

/// Replay the scenario's pcap through `run` into `sinks` (the one loop:
/// [`sim::pipeline::drive`]); `err` names the scenario in a pipeline error. Returns the
/// number of input frames and the frames the input skipped.
pub fn drive<P: Pipeline>(
    scenario: &Scenario,
    run: &mut P,
    sinks: &mut Sinks,
    render: &mut impl Render<P::Event>,
    progress: Option<&ProgressBar>,
    err: impl Fn(PipelineError) -> CliError,
) -> Result<(u64, SkipCounts), CliError> {
    let mut reader = EthernetInput::open(&scenario.input, scenario.link)?;
    let mut out = Rendered {
        sinks,
        render,
        progress,
        frames: 0,
    };
    let schedule = Schedule::for_scenario(scenario);
    let frames =
        sim::pipeline::drive(run, schedule, &mut reader, &mut out).map_err(|e| match e {
            DriveError::Pipeline(p) => err(p),
            DriveError::Other(e) => e,
        })?;
    Ok((frames, *reader.skipped()))
}

/// The renderer and the sinks as the drive loop's consumer: every event rendered, then
/// handed back for reuse; the progress bar told every [`PROGRESS_EVERY`] frames.
struct Rendered<'a, R> {
    sinks: &'a mut Sinks,
    render: &'a mut R,
    progress: Option<&'a ProgressBar>,
    frames: u64,
}

impl<E, R: Render<E>> Consumer<E> for Rendered<'_, R> {
    type Error = CliError;

    #[inline]
    fn frame(&mut self, index: u64, ts_ns: u64) {
        self.render.frame(index, ts_ns);
        if self.frames & (PROGRESS_EVERY - 1) == 0 && self.frames > 0 {
            if let Some(pb) = self.progress {
                pb.set_message(format!("{} frames", self.frames));
            }
        }
        self.frames += 1;
    }

    #[inline]
    fn event(&mut self, e: E) -> Result<Option<E>, CliError> {
        self.render.event(self.sinks, &e)?;
        Ok(Some(e))
    }
}

/// A real arm's events, in order, through the renderer.
pub fn render_all<E>(
    sinks: &mut Sinks,
    render: &mut impl Render<E>,
    events: &[E],
) -> Result<(), CliError> {
    for e in events {
        render.event(sinks, e)?;
    }
    Ok(())
}
