//! What the tun-read integration tests share: scenario paths, a scenario's input frames,
//! and a run of the pipeline into its events.
// Each test crate includes this module and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use sim::pcap::EthernetInput;
use sim::pipeline::drive::{drive, DriveError, Frames};
use sim::pipeline::tun_read::{Event, TunReadRun};
use sim::pipeline::{Input, Pipeline, Schedule};
use sim::scenario::Scenario;

/// `rel` under scenarios/.
pub fn path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(rel)
}

/// The scenario's input frames: (index, timestamp, bytes).
pub fn frames(s: &Scenario) -> Vec<(u64, u64, Vec<u8>)> {
    let mut input = EthernetInput::open(&s.input, s.link).expect("the pcap opens");
    let mut out = Vec::new();
    while let Some(f) = input.next_frame() {
        let f = f.expect("a frame");
        out.push((f.index, f.ts_ns, f.data.to_vec()));
    }
    out
}

/// Every event of `run` over the scenario's input, with the scenario's schedule.
pub fn drive_events<P: Pipeline>(s: &Scenario, run: &mut P) -> Vec<P::Event> {
    let frames = frames(s);
    let inputs = frames.iter().map(|(index, ts_ns, bytes)| Input::Frame {
        index: *index,
        ts_ns: *ts_ns,
        bytes,
    });
    let mut out = Vec::new();
    drive(
        run,
        Schedule::for_scenario(s),
        &mut Frames::new(inputs),
        &mut out,
    )
    .map_err(DriveError::pipeline)
    .expect("the scenario runs");
    out
}

/// The scenario at `rel` and every event of its tun-read run.
pub fn run(rel: &str) -> (Scenario, Vec<Event>) {
    let s = Scenario::load(&path(rel)).expect("the scenario loads");
    let mut run = TunReadRun::new(&s);
    let events = drive_events(&s, &mut run);
    (s, events)
}
