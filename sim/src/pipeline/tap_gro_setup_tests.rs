//! tap-gro is tap-write with NAPI and GRO configured: the same devices
//! ([`super::super::tap_write::scenario_net`]), the same write, so a tap-write scenario
//! whose tap is IFF_NAPI delivers to the stack what tap-gro delivers.

use super::*;
use crate::gro::frames::Tcp4;
use crate::pipeline::drive::{DriveError, Frames};
use crate::pipeline::tap_write::{TapWriteRun, WriteEvent};
use crate::pipeline::{drive, Schedule};

fn scenario(pipeline: &str, extra: &str) -> Scenario {
    let text = format!(
        "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"{pipeline}\"\n{extra}"
    );
    Scenario::parse(
        std::path::Path::new(&format!("scenarios/{pipeline}/x.toml")),
        &text,
    )
    .expect("scenario")
}

fn inputs(frames: &[Vec<u8>]) -> Frames<'_, impl Iterator<Item = Input<'_>>> {
    Frames::new((0u64..).zip(frames).map(|(i, f)| Input::Frame {
        index: i,
        ts_ns: 1_000_000_000 + i * 1000,
        bytes: f,
    }))
}

/// The lengths of the skbs the stack sees from tap-gro, and from tap-write with tap-gro's
/// tap (IFF_TAP | IFF_NO_PI | IFF_NAPI) and `[gro]` plan.
fn both(gro_toml: &str, frames: &[Vec<u8>]) -> (Vec<usize>, Vec<usize>) {
    let gro = scenario("tap-gro", gro_toml);
    let mut run = TapGro::for_scenario(&gro).expect("tap-gro");
    let mut got = Vec::new();
    let mut lens = |e: &GroEvent| {
        if let GroEvent::Deliver(d) = e {
            got.push(d.skb.len());
        }
    };
    drive(
        &mut run,
        Schedule::for_scenario(&gro),
        &mut inputs(frames),
        &mut lens,
    )
    .map_err(DriveError::pipeline)
    .expect("runs");

    // tap-write's scenario file has no [gro]: its plan is set as tap-gro's.
    let mut write = scenario("tap-write", "[device]\nno_pi = true\nnapi = true\n");
    write.gro = gro.gro.clone();
    let mut run = TapWriteRun::new(&write).expect("tap-write");
    let mut stack = Vec::new();
    let mut lens = |e: &WriteEvent| {
        if let WriteEvent::Stack { delivery, .. } = e {
            stack.push(delivery.frame.len());
        }
    };
    drive(
        &mut run,
        Schedule::for_scenario(&write),
        &mut inputs(frames),
        &mut lens,
    )
    .map_err(DriveError::pipeline)
    .expect("runs");
    (got, stack)
}

#[test]
fn a_napi_tap_write_delivers_to_the_stack_what_tap_gro_delivers() {
    let frames = Tcp4::default().stream(10);
    // The defaults: every write polls and flushes, 10 skbs of 14 + 20 + 20 + 1400 bytes
    // (the real kernel's 10 packets, scenarios/tap-gro/tcp-napi-no-timeout).
    let (gro, write) = both("", &frames);
    assert_eq!(gro, [1454; 10]);
    assert_eq!(write, gro);
    // Ten segments of one flow in one 10-write NAPI poll: napi_gro_receive merges them
    // (net/ipv4/tcp_offload.c: tcp_gro_receive), napi_complete_done flushes one skb of
    // 54 + 10 x 1400 bytes (net/core/gro.c: napi_gro_complete).
    let (gro, write) = both("[gro]\nburst = 10\n", &frames);
    assert_eq!(gro, [14054]);
    assert_eq!(write, gro);
}

#[test]
fn tap_gro_refuses_a_tap_without_napi() {
    let write = scenario("tap-write", "[device]\nno_pi = true\n");
    let e = TapGro::for_scenario(&write).expect_err("no IFF_NAPI");
    assert!(e.0.contains("IFF_NAPI"), "{}", e.0);
}
