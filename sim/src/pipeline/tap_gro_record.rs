//! A tap-gro run that records every event ([`TapGroRun`]): for the GRO unit tests and
//! the small in-memory runs, whose assertions look at the list of skbs GRO delivered.
//! The pipeline itself ([`TapGro`]) keeps no list; a streamed replay renders each event
//! and recycles it instead.

use std::ops::{Deref, DerefMut};

use crate::gro::napi::Delivered;
use crate::gro::plan::GroPlan;
use crate::pcap::Frame;
use crate::profile::KernelProfile;
use crate::scenario::Scenario;
use crate::tun::napi::AfterGro;
use crate::tun::write::ModelError;

use super::drive::{Consumer, DriveError, Frames};
use super::frame_meta::RecipeError;
use super::tap_gro::{GroEvent, TapGro, WriteError, XdpBeforeGro};
use super::{drive, Driver, Input, Schedule};

/// [`TapGro`] with its events kept, one list per kind (it dereferences to the pipeline
/// for its counters, NAPI instance and gro_cells). Every input goes through the one
/// drive loop ([`Driver::feed`]).
#[derive(Debug)]
pub struct TapGroRun {
    pub gro: TapGro,
    driver: Driver<TapGro>,
    pub write_errors: Vec<WriteError>,
    pub xdp_before: Vec<XdpBeforeGro>,
    pub after_gro: Vec<AfterGro>,
    /// Keep every delivered skb; off: each is recycled at once.
    pub record: bool,
    pub delivered: Vec<Delivered>,
}

impl Deref for TapGroRun {
    type Target = TapGro;
    fn deref(&self) -> &TapGro {
        &self.gro
    }
}

impl DerefMut for TapGroRun {
    fn deref_mut(&mut self) -> &mut TapGro {
        &mut self.gro
    }
}

/// The recorder: each event into its list; a delivered skb not recorded goes back to
/// the pipeline.
struct Lists<'r> {
    write_errors: &'r mut Vec<WriteError>,
    xdp_before: &'r mut Vec<XdpBeforeGro>,
    after_gro: &'r mut Vec<AfterGro>,
    delivered: Option<&'r mut Vec<Delivered>>,
}

impl Consumer<GroEvent> for Lists<'_> {
    type Error = std::convert::Infallible;

    fn event(&mut self, e: GroEvent) -> Result<Option<GroEvent>, Self::Error> {
        match e {
            GroEvent::WriteError(w) => self.write_errors.push(w),
            GroEvent::XdpBeforeGro(x) => self.xdp_before.push(x),
            GroEvent::AfterGro(a) => self.after_gro.push(a),
            GroEvent::Deliver(d) => match &mut self.delivered {
                Some(list) => list.push(d),
                None => return Ok(Some(GroEvent::Deliver(d))),
            },
        }
        Ok(None)
    }
}

impl TapGroRun {
    fn recording(gro: TapGro, schedule: Schedule) -> TapGroRun {
        TapGroRun {
            gro,
            driver: Driver::new(schedule),
            write_errors: Vec::new(),
            xdp_before: Vec::new(),
            after_gro: Vec::new(),
            record: true,
            delivered: Vec::new(),
        }
    }

    /// Plain frames into IFF_TAP | IFF_NO_PI | IFF_NAPI ([`TapGro::new`]); tap-gro's
    /// schedule: nothing but the frames.
    pub fn new(profile: &KernelProfile, plan: &GroPlan) -> TapGroRun {
        TapGroRun::recording(TapGro::new(profile, plan), Schedule::Frames)
    }

    /// A run of `scenario` ([`TapGro::for_scenario`]).
    pub fn for_scenario(scenario: &Scenario) -> Result<TapGroRun, ModelError> {
        let schedule = Schedule::for_scenario(scenario);
        TapGro::for_scenario(scenario).map(|g| TapGroRun::recording(g, schedule))
    }

    /// write(fd, frame) at `ts_ns` for a run without a program ([`TapGroRun::new`]),
    /// where the write has no scenario error to report.
    pub fn write(&mut self, index: u64, ts_ns: u64, frame: Vec<u8>) {
        let r = self.write_slice(index, ts_ns, &frame);
        debug_assert!(r.is_ok(), "{r:?}");
    }

    /// [`TapGroRun::write`] from a borrowed frame; an `Err` is the scenario's.
    pub fn write_slice(&mut self, index: u64, ts_ns: u64, frame: &[u8]) -> Result<(), ModelError> {
        self.input(Input::Frame {
            index,
            ts_ns,
            bytes: frame,
        })
    }

    /// End of input: the last burst is polled and a pending hrtimer fires.
    pub fn finish(&mut self) {
        let _ = self.input(Input::End);
    }

    /// The recorder of this run's lists.
    fn lists(&mut self) -> (&mut TapGro, &mut Driver<TapGro>, Lists<'_>) {
        let TapGroRun {
            gro,
            driver,
            write_errors,
            xdp_before,
            after_gro,
            record,
            delivered,
        } = self;
        let lists = Lists {
            write_errors,
            xdp_before,
            after_gro,
            delivered: record.then_some(delivered),
        };
        (gro, driver, lists)
    }

    fn input(&mut self, input: Input<'_>) -> Result<(), ModelError> {
        let (gro, driver, mut lists) = self.lists();
        driver
            .feed(gro, input, &mut lists)
            .map_err(|e| ModelError(e.pipeline().why))
    }
}

/// What [`run_tap_gro`] returns: the text trace and the frames as the stack sees them.
#[derive(Debug, Clone)]
pub struct GroRunOutput {
    pub trace: String,
    pub delivered: Vec<(u64, Vec<u8>)>,
}

/// Replay `frames` through the scenario's tap-gro path.
pub fn run_tap_gro(scenario: &Scenario, frames: &[Frame]) -> Result<GroRunOutput, RecipeError> {
    let mut run = TapGroRun::for_scenario(scenario).map_err(|e| RecipeError(e.0))?;
    let inputs = frames.iter().map(|f| Input::Frame {
        index: f.index,
        ts_ns: f.ts_ns,
        bytes: &f.data,
    });
    let schedule = Schedule::for_scenario(scenario);
    let (gro, _, mut lists) = run.lists();
    drive(gro, schedule, &mut Frames::new(inputs), &mut lists)
        .map_err(|e| RecipeError(DriveError::pipeline(e).to_string()))?;
    let mut trace = String::new();
    for rec in super::tap_gro_trace::run_records(scenario, &run) {
        rec.write_text(&mut trace);
    }
    let delivered = run
        .delivered
        .iter()
        .map(|d| (d.ts_ns, d.skb.to_vec()))
        .collect();
    Ok(GroRunOutput { trace, delivered })
}
