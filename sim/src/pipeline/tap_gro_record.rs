//! A tap-gro run that records every event ([`TapGroRun`]): for the GRO unit tests and
//! the small in-memory runs, whose assertions look at the list of skbs GRO delivered.
//! The pipeline itself ([`TapGro`]) keeps no list; a streamed replay renders each event
//! and recycles it instead.

use std::ops::{Deref, DerefMut};

use crate::gro::napi::Delivered;
use crate::gro::plan::GroPlan;
use crate::profile::KernelProfile;
use crate::scenario::Scenario;
use crate::tun::napi::AfterGro;
use crate::tun::write::ModelError;

use super::frame_meta::RecipeError;
use super::tap_gro::{GroEvent, TapGro, WriteError, XdpBeforeGro};
use super::{Input, Pipeline};

/// [`TapGro`] with its events kept, one list per kind (it dereferences to the pipeline
/// for its counters, NAPI instance and gro_cells).
#[derive(Debug)]
pub struct TapGroRun {
    pub gro: TapGro,
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

impl TapGroRun {
    fn recording(gro: TapGro) -> TapGroRun {
        TapGroRun {
            gro,
            write_errors: Vec::new(),
            xdp_before: Vec::new(),
            after_gro: Vec::new(),
            record: true,
            delivered: Vec::new(),
        }
    }

    /// Plain frames into IFF_TAP | IFF_NO_PI | IFF_NAPI ([`TapGro::new`]).
    pub fn new(profile: &KernelProfile, plan: &GroPlan) -> TapGroRun {
        TapGroRun::recording(TapGro::new(profile, plan))
    }

    /// A run of `scenario` ([`TapGro::for_scenario`]).
    pub fn for_scenario(scenario: &Scenario) -> Result<TapGroRun, ModelError> {
        TapGro::for_scenario(scenario).map(TapGroRun::recording)
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

    fn input(&mut self, input: Input<'_>) -> Result<(), ModelError> {
        let mut got = Vec::new();
        let r = self.gro.handle(input, &mut |e| got.push(e));
        for e in got {
            match e {
                GroEvent::WriteError(w) => self.write_errors.push(w),
                GroEvent::XdpBeforeGro(x) => self.xdp_before.push(x),
                GroEvent::AfterGro(a) => self.after_gro.push(a),
                GroEvent::Deliver(d) if self.record => self.delivered.push(d),
                GroEvent::Deliver(d) => self.gro.recycle_delivered(d),
            }
        }
        r.map_err(|e| ModelError(e.why))
    }
}

/// What [`run_tap_gro`] returns: the text trace and the frames as the stack sees them.
#[derive(Debug, Clone)]
pub struct GroRunOutput {
    pub trace: String,
    pub delivered: Vec<(u64, Vec<u8>)>,
}

/// Replay `frames` (input index, timestamp, bytes) through the scenario's tap-gro path.
pub fn run_tap_gro(
    scenario: &Scenario,
    frames: impl Iterator<Item = (u64, u64, Vec<u8>)>,
) -> Result<GroRunOutput, RecipeError> {
    let mut run = TapGroRun::for_scenario(scenario).map_err(|e| RecipeError(e.0))?;
    for (index, ts, data) in frames {
        run.write_slice(index, ts, &data)
            .map_err(|e| RecipeError(format!("frame {index}: {}", e.0)))?;
    }
    run.finish();
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
