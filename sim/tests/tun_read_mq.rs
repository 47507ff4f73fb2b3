//! The tun-read pipeline with `[queues]` (docs/tun-read.md#multiqueue): the scenarios'
//! outcomes as drivers/net/tun.c gives them (checked against this host's kernel by
//! `skbsim conform scenarios/tun-read/mq-*.toml`), and the table's own refusals.

mod common;

use common::path;
use sim::pipeline::drive::{drive, DriveError, Frames};
use sim::pipeline::tun_read::{Event, TunReadRun};
use sim::pipeline::{Input, Schedule};
use sim::scenario::Scenario;

/// Every event of the scenario, as one short line each.
fn shape(rel: &str) -> Vec<String> {
    let (_, events) = common::run(rel);
    events
        .iter()
        .map(|e| match e {
            Event::Read(r) => format!(
                "read frame {:?} file {:?} {:?}",
                r.frame.map(|(i, _)| i),
                r.queue,
                r.result
            ),
            Event::Queue {
                before_frame,
                file,
                op,
                purged,
                ..
            } => format!("{} {file} @{before_frame} purged {purged:?}", op.name()),
            Event::XmitDropped {
                frame,
                reason,
                stats,
                ..
            } => format!("drop {frame} {reason:?} tx_dropped {}", stats.tx_dropped),
            Event::BridgeDropped { frame, .. } => format!("bridge-drop {frame}"),
        })
        .collect()
}

#[test]
fn one_attached_queue_takes_every_flow_on_the_moved_file() {
    // __tun_detach moves the last file (2) into the leaving index; with one queue left
    // netdev_core_pick_tx does not call tun_select_queue at all.
    let got = shape("tun-read/mq-one-attached.toml");
    let mut want = vec![
        "detach 0 @0 purged []".to_string(),
        "detach 1 @0 purged []".to_string(),
    ];
    let lens = [168, 76, 148, 68, 86, 88];
    for (i, len) in lens.iter().enumerate() {
        want.push(format!("read frame Some({i}) file Some(2) Ok({len})"));
    }
    assert_eq!(got, want);
}

#[test]
fn detach_purges_the_ring_and_no_queue_drops() {
    let got = shape("tun-read/mq-detach-purge.toml");
    assert_eq!(
        got,
        [
            "detach 1 @0 purged []",
            "detach 0 @2 purged [0, 1]",
            "drop 2 Some(DevReady) tx_dropped 1",
            "attach 1 @3 purged []",
            "read frame Some(3) file Some(1) Ok(54)",
            "read frame Some(4) file Some(1) Ok(72)",
            "read frame Some(5) file Some(1) Ok(74)",
        ]
    );
}

#[test]
fn a_detached_file_gets_nothing_and_the_attached_one_everything() {
    let got = shape("tun-read/mq-swap-queue.toml");
    assert_eq!(
        got,
        [
            "detach 0 @0 purged []",
            "read frame Some(0) file Some(1) Ok(154)",
            "read frame Some(1) file Some(1) Ok(62)",
            "detach 1 @3 purged [2]",
            "attach 0 @3 purged []",
            "read frame Some(3) file Some(0) Ok(54)",
            "read frame Some(4) file Some(0) Ok(72)",
            "read frame Some(5) file Some(0) Ok(74)",
        ]
    );
}

fn parse_err(pipeline: &str, queues: &str) -> String {
    let text = format!(
        "description = \"d\"\ninput = \"../pcaps/mq-flows.pcap\"\npipeline = \"{pipeline}\"\n{queues}"
    );
    Scenario::parse(&path("tun-read/x.toml"), &text)
        .expect_err(queues)
        .to_string()
}

#[test]
fn bad_queue_tables_name_the_key() {
    let e = parse_err("tun-read", "[queues]\ncount = 0\n");
    assert!(e.contains("x.toml") && e.contains("count"), "{e}");
    let e = parse_err("tun-read", "[queues]\ncount = 257\n");
    assert!(e.contains("MAX_TAP_QUEUES"), "{e}");
    let ev = |f: u64, file: usize| {
        format!("[[queues.event]]\nbefore_frame = {f}\nfile = {file}\nop = \"detach\"\n")
    };
    let e = parse_err("tun-read", &format!("[queues]\ncount = 2\n{}", ev(0, 2)));
    assert!(e.contains("event[0].file"), "{e}");
    let e = parse_err(
        "tun-read",
        &format!("[queues]\ncount = 2\n{}{}", ev(3, 0), ev(1, 1)),
    );
    assert!(e.contains("event[1].before_frame"), "{e}");
    let e = parse_err("tap-gro", "[queues]\ncount = 2\n");
    assert!(
        e.contains("[queues] is not used by pipeline tap-gro"),
        "{e}"
    );
}

#[test]
fn a_detach_of_a_detached_file_is_the_kernels_einval() {
    let s = Scenario::parse(
        &path("tun-read/x.toml"),
        "description = \"d\"\ninput = \"../pcaps/mq-flows.pcap\"\npipeline = \"tun-read\"\n\
         [queues]\ncount = 2\n\
         [[queues.event]]\nbefore_frame = 0\nfile = 1\nop = \"detach\"\n\
         [[queues.event]]\nbefore_frame = 0\nfile = 1\nop = \"detach\"\n",
    )
    .expect("the scenario parses");
    let mut run = TunReadRun::new(&s);
    let frame = [0u8; 60];
    let one = [Input::Frame {
        index: 0,
        ts_ns: 0,
        bytes: &frame,
    }];
    let e = drive(
        &mut run,
        Schedule::for_scenario(&s),
        &mut Frames::new(one.into_iter()),
        &mut |_: &Event| {},
    )
    .map_err(DriveError::pipeline)
    .unwrap_err();
    assert!(
        e.why
            .contains("detach of file 1 before frame 0 answers EINVAL"),
        "{}",
        e.why
    );
}
