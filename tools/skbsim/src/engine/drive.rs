//! The one loop every pipeline runs in: the pcap reader's frames become
//! [`Input::Frame`]s, the scenario's [`Schedule`] adds the reads and kicks that follow
//! each, [`Input::End`] ends the input; every event goes at once to the renderer of its
//! kind, then back to the pipeline for reuse. The real arms' events go through the same
//! renderers ([`render_all`]).

use indicatif::ProgressBar;
use sim::pcap::{EthernetInput, SkipCounts};
use sim::pipeline::{feed_frame, Input, Pipeline, PipelineError, Schedule};
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

/// Replay the scenario's pcap through `run` into `sinks`; `err` names the scenario in a
/// pipeline error. Returns the number of input frames and the frames the input skipped.
pub fn drive<P: Pipeline>(
    scenario: &Scenario,
    run: &mut P,
    sinks: &mut Sinks,
    render: &mut impl Render<P::Event>,
    progress: Option<&ProgressBar>,
    err: impl Fn(PipelineError) -> CliError,
) -> Result<(u64, SkipCounts), CliError> {
    let mut reader = EthernetInput::open(&scenario.input, scenario.link)?;
    let mut schedule = Schedule::for_scenario(scenario);
    let mut failed: Option<CliError> = None;
    // Rendered events, handed back to the pipeline after each input.
    let mut spare: Vec<P::Spare> = Vec::new();
    let mut frames = 0u64;
    while let Some(frame) = reader.next_frame() {
        let frame = frame?;
        render.frame(frame.index, frame.ts_ns);
        let input = Input::Frame {
            index: frame.index,
            ts_ns: frame.ts_ns,
            bytes: frame.data,
        };
        let r = feed_frame(run, &mut schedule, input, &mut |e| {
            if failed.is_none() {
                failed = render.event(sinks, &e).err();
            }
            spare.extend(P::spare(e));
        });
        for s in spare.drain(..) {
            run.recycle(s);
        }
        r.map_err(&err)?;
        if let Some(e) = failed.take() {
            return Err(e);
        }
        frames += 1;
        if frames & (PROGRESS_EVERY - 1) == 0 {
            if let Some(pb) = progress {
                pb.set_message(format!("{frames} frames"));
            }
        }
    }
    let r = run.handle(Input::End, &mut |e| {
        if failed.is_none() {
            failed = render.event(sinks, &e).err();
        }
    });
    r.map_err(&err)?;
    failed.map_or(Ok((frames, *reader.skipped())), Err)
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
