//! The one loop every pipeline runs in. A [`Source`] gives the input frames (a pcap for
//! the CLI's replay, frames in memory for the bench and the tests); the scenario's
//! [`Schedule`] adds the reads and kicks that follow each frame; [`Input::End`] ends the
//! input. Every event goes at once to a [`Consumer`] (the CLI's renderers, a recorder, a
//! counter), which hands back what it does not keep, and the reusable part of that
//! ([`Pipeline::spare`]) goes back to the pipeline after each input, so a long run
//! allocates nothing per frame.
//!
//! [`drive`] is the loop over a whole source; [`Driver::feed`] is one step of it, for a
//! caller that inspects the pipeline between inputs (the GRO unit tests' recorder).

use std::convert::Infallible;
use std::marker::PhantomData;

use super::{Input, Pipeline, PipelineError, Schedule};
use crate::pcap::{EthernetInput, PcapError};

/// Where input frames come from, each borrowed until the next call.
pub trait Source {
    type Error;

    /// The next input ([`Input::Frame`] as a rule), or `None` at the end of input.
    fn next_input(&mut self) -> Option<Result<Input<'_>, Self::Error>>;
}

/// The inputs of an iterator (frames in memory: nothing fails).
#[derive(Debug, Clone)]
pub struct Frames<'a, I> {
    inputs: I,
    /// The frames' lifetime, which outlives every borrow of the source.
    _frames: PhantomData<Input<'a>>,
}

impl<'a, I: Iterator<Item = Input<'a>>> Frames<'a, I> {
    pub fn new(inputs: I) -> Frames<'a, I> {
        Frames {
            inputs,
            _frames: PhantomData,
        }
    }
}

impl<'a, I: Iterator<Item = Input<'a>>> Source for Frames<'a, I> {
    type Error = Infallible;

    #[inline]
    fn next_input(&mut self) -> Option<Result<Input<'_>, Infallible>> {
        self.inputs.next().map(Ok)
    }
}

/// A capture's frames as Ethernet frames (the scenario's pcap).
impl Source for EthernetInput {
    type Error = PcapError;

    #[inline]
    fn next_input(&mut self) -> Option<Result<Input<'_>, PcapError>> {
        self.next_frame().map(|r| {
            r.map(|f| Input::Frame {
                index: f.index,
                ts_ns: f.ts_ns,
                bytes: f.data,
            })
        })
    }
}

/// Where a pipeline's events go.
pub trait Consumer<E> {
    type Error;

    /// Input frame `index` at `ts_ns` is about to be fed.
    #[inline]
    fn frame(&mut self, _index: u64, _ts_ns: u64) {}

    /// One event, in order. Return it to give its reusable part back to the pipeline;
    /// keep it (`None`) to record it.
    fn event(&mut self, e: E) -> Result<Option<E>, Self::Error>;
}

/// A closure that looks at each event and hands every one back (a counter, a bench
/// sink that keeps nothing).
impl<E, F: FnMut(&E)> Consumer<E> for F {
    type Error = Infallible;

    #[inline]
    fn event(&mut self, e: E) -> Result<Option<E>, Infallible> {
        self(&e);
        Ok(Some(e))
    }
}

/// Why a drive stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriveError<E> {
    /// The pipeline could not go on (the scenario's error, not the kernel's).
    Pipeline(PipelineError),
    /// The source or the consumer failed.
    Other(E),
}

impl DriveError<Infallible> {
    /// The pipeline's error, when nothing else can fail.
    pub fn pipeline(self) -> PipelineError {
        match self {
            DriveError::Pipeline(e) => e,
            DriveError::Other(never) => match never {},
        }
    }
}

/// The state of one drive: the schedule, and the spare parts of the events of the
/// input being fed.
#[derive(Debug)]
pub struct Driver<P: Pipeline> {
    schedule: Schedule,
    spare: Vec<P::Spare>,
}

impl<P: Pipeline> Driver<P> {
    pub fn new(schedule: Schedule) -> Driver<P> {
        Driver {
            schedule,
            spare: Vec::new(),
        }
    }

    /// Feed one input and, after a frame, the inputs the schedule says follow it; every
    /// event goes to `consumer`, then what it hands back to the pipeline. After a
    /// consumer error the input is still fed to its end (its events are recycled, not
    /// consumed), and the first error is returned.
    #[inline]
    pub fn feed<C: Consumer<P::Event>>(
        &mut self,
        run: &mut P,
        input: Input<'_>,
        consumer: &mut C,
    ) -> Result<(), DriveError<C::Error>> {
        let is_frame = if let Input::Frame { index, ts_ns, .. } = input {
            consumer.frame(index, ts_ns);
            true
        } else {
            false
        };
        let mut failed = None;
        let spare = &mut self.spare;
        let mut on_event = |e: P::Event| {
            let back = if failed.is_some() {
                Some(e)
            } else {
                consumer.event(e).unwrap_or_else(|x| {
                    failed = Some(x);
                    None
                })
            };
            spare.extend(back.and_then(P::spare));
        };
        let mut r = run.handle(input, &mut on_event);
        if is_frame {
            for next in self.schedule.after_frame() {
                if r.is_err() {
                    break;
                }
                r = run.handle(*next, &mut on_event);
            }
        }
        for s in self.spare.drain(..) {
            run.recycle(s);
        }
        r.map_err(DriveError::Pipeline)?;
        failed.map_or(Ok(()), |e| Err(DriveError::Other(e)))
    }
}

/// Drive `run` through every input of `source`, then [`Input::End`]. Returns the number
/// of inputs fed before the end; an error of the source or the consumer comes back as
/// the caller's `E`.
pub fn drive<P, S, C, E>(
    run: &mut P,
    schedule: Schedule,
    source: &mut S,
    consumer: &mut C,
) -> Result<u64, DriveError<E>>
where
    P: Pipeline,
    S: Source,
    C: Consumer<P::Event>,
    E: From<S::Error> + From<C::Error>,
{
    let other = |e: DriveError<C::Error>| match e {
        DriveError::Pipeline(p) => DriveError::Pipeline(p),
        DriveError::Other(c) => DriveError::Other(E::from(c)),
    };
    let mut driver = Driver::new(schedule);
    let mut n = 0u64;
    while let Some(input) = source.next_input() {
        let input = input.map_err(|e| DriveError::Other(E::from(e)))?;
        driver.feed(run, input, consumer).map_err(other)?;
        n += 1;
    }
    driver.feed(run, Input::End, consumer).map_err(other)?;
    Ok(n)
}

/// Keep every event, in order (a test's record of a run).
impl<E> Consumer<E> for Vec<E> {
    type Error = Infallible;

    fn event(&mut self, e: E) -> Result<Option<E>, Infallible> {
        self.push(e);
        Ok(None)
    }
}
