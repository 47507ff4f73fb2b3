//! The one pipeline shape: nothing happens but what the inputs say (a frame, a kick, a
//! read, time, the end), and what happens comes out as events.

use super::tap_gro::{GroEvent, TapGro};
use super::tun_read::{Event, TunReadRun};
use super::vhost_tx::{VhostTxEvent, VhostTxRun};
use super::{Input, Pipeline};
use crate::gro::frames::Tcp4;
use crate::gro::napi::End;
use crate::gro::plan::GroPlan;
use crate::profile::LINUX_6_18;
use crate::scenario::Scenario;
use crate::vhost::VhostEvent;

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

/// A 60-byte Ethernet frame of an unhandled EtherType.
fn frame(k: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f[14] = k;
    f
}

fn input(index: u64, bytes: &[u8]) -> Input<'_> {
    Input::Frame {
        index,
        ts_ns: 1_000 + index,
        bytes,
    }
}

#[test]
fn tun_read_reads_only_when_told() {
    let s = scenario("tun-read", "attach = \"direct\"\n[device]\nno_pi = true\n");
    let mut run = TunReadRun::new(&s);
    let mut events = Vec::new();
    let frames: Vec<Vec<u8>> = (0..3).map(frame).collect();
    for (i, f) in frames.iter().enumerate() {
        run.handle(input(i as u64, f), &mut |e| events.push(e))
            .expect("frame");
    }
    // Three skbs wait on the tx_ring: no read has happened.
    assert!(events.is_empty());
    run.handle(Input::Read, &mut |e| events.push(e))
        .expect("read");
    let read: Vec<_> = events
        .iter()
        .map(|e| match e {
            Event::Read(r) => (r.frame, r.result),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        read,
        [
            (Some((0, 1_000)), Ok(60)),
            (Some((1, 1_001)), Ok(60)),
            (Some((2, 1_002)), Ok(60))
        ]
    );
    events.clear();
    run.handle(Input::End, &mut |e| events.push(e))
        .expect("end");
    assert!(events.is_empty(), "the ring was empty: {events:?}");
}

#[test]
fn vhost_tx_sends_nothing_before_the_kick() {
    let s = scenario("vhost-tx", "[vhost]\nhdr_len = 12\n");
    let mut run = VhostTxRun::new(&s).expect("run");
    let mut events = Vec::new();
    let frames: Vec<Vec<u8>> = (0..3).map(frame).collect();
    for (i, f) in frames.iter().enumerate() {
        run.handle(input(i as u64, f), &mut |e| events.push(e))
            .expect("frame");
    }
    assert!(events.is_empty(), "queued on the guest's ring only");
    run.handle(Input::Kick, &mut |e| events.push(e))
        .expect("kick");
    assert!(
        matches!(
            events.first(),
            Some(VhostTxEvent::Worker(VhostEvent::Kick {
                available: 3,
                queue: None
            }))
        ),
        "{events:?}"
    );
    // Without XDP each packet goes through tun_get_user to the stack.
    let stack = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                VhostTxEvent::Host(super::tap_write::WriteEvent::Stack { .. })
            )
        })
        .count();
    assert_eq!(stack, 3);
    events.clear();
    // Nothing is left for the last kick.
    run.handle(Input::End, &mut |e| events.push(e))
        .expect("end");
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn the_flush_timeout_fires_when_time_advances_without_a_write() {
    // One write per poll, a 1 ms gro_flush_timeout: three segments of one flow stay
    // held after the polls; the hrtimer, armed at the last poll (t = 1002 ns), fires
    // when time reaches 1002 ns + 1 ms and delivers one skb of 54 + 3 x 1400 bytes.
    let plan = GroPlan {
        burst: 1,
        flush_timeout_ns: 1_000_000,
        ..GroPlan::defaults(&LINUX_6_18.gro)
    };
    let mut run = TapGro::new(&LINUX_6_18, &plan);
    let mut events = Vec::new();
    for (i, f) in Tcp4::default().stream(3).iter().enumerate() {
        run.handle(input(i as u64, f), &mut |e| events.push(e))
            .expect("write");
    }
    assert!(events.is_empty(), "{events:?}");
    let half = Input::AdvanceTo {
        ts_ns: 1_002 + 500_000,
    };
    run.handle(half, &mut |e| events.push(e)).expect("advance");
    assert!(events.is_empty(), "not due yet: {events:?}");
    let due = Input::AdvanceTo {
        ts_ns: 1_002 + 1_000_000,
    };
    run.handle(due, &mut |e| events.push(e)).expect("advance");
    let got: Vec<_> = events
        .iter()
        .map(|e| match e {
            GroEvent::Deliver(d) => (d.skb.len(), d.end, d.ts_ns),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(got, [(4254, End::Timer, 1_002 + 1_000_000)]);
    events.clear();
    run.handle(Input::End, &mut |e| events.push(e))
        .expect("end");
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn a_refused_write_is_an_event_in_order() {
    let plan = GroPlan {
        burst: 2,
        ..GroPlan::defaults(&LINUX_6_18.gro)
    };
    let mut run = TapGro::new(&LINUX_6_18, &plan);
    let mut events = Vec::new();
    let short = [0u8; 10];
    run.handle(input(0, &short), &mut |e| events.push(e))
        .expect("write");
    let stream = Tcp4::default().stream(2);
    for (i, f) in stream.iter().enumerate() {
        run.handle(input(1 + i as u64, f), &mut |e| events.push(e))
            .expect("write");
    }
    run.handle(Input::End, &mut |e| events.push(e))
        .expect("end");
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            GroEvent::WriteError(w) => format!("error {} {}", w.frame, w.errno.name()),
            GroEvent::Deliver(d) => format!("deliver {}", d.skb.len()),
            other => format!("{other:?}"),
        })
        .collect();
    // tun_get_user refuses a tap frame shorter than ETH_HLEN with EINVAL; the two
    // segments merge into 54 + 2 x 1400 bytes.
    assert_eq!(kinds, ["error 0 EINVAL", "deliver 2854"]);
}
