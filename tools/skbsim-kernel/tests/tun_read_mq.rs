//! The real tun-read arm with `[queues]` (docs/tun-read.md#multiqueue): what this
//! host's kernel does with an IFF_MULTI_QUEUE tap whose queues are detached and attached
//! between frames, seen by the arm (which file each frame landed in, the purge, the
//! no-queue drop), the same as the model's.

use std::path::Path;

use sim::pipeline::tun_read::Event;
use sim::scenario::Scenario;
use skbsim_kernel::arm::tun_read::run_tun_read;

fn load(rel: &str) -> Scenario {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel);
    Scenario::load(&p).expect("the scenario loads")
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn detach_purges_and_a_reattached_file_takes_the_rest() {
    skbsim_kernel::require_privileges();
    let s = load("tun-read/mq-detach-purge.toml");
    let real = run_tun_read(&s).expect("the arm runs");
    let shape: Vec<String> = real
        .events
        .iter()
        .map(|e| match e {
            Event::Queue {
                file, op, purged, ..
            } => format!("{} {file} purged {purged:?}", op.name()),
            Event::XmitDropped { frame, reason, .. } => format!("drop {frame} {reason:?}"),
            Event::Read(r) => format!("read {:?} file {:?}", r.frame.map(|(i, _)| i), r.queue),
            Event::BridgeDropped { frame, .. } => format!("bridge-drop {frame}"),
        })
        .collect();
    assert_eq!(
        shape,
        [
            "detach 1 purged []",
            "detach 0 purged [0, 1]",
            "drop 2 Some(DevReady)",
            "attach 1 purged []",
            "read Some(3) file Some(1)",
            "read Some(4) file Some(1)",
            "read Some(5) file Some(1)",
        ],
        "notes: {:?}",
        real.notes
    );
    assert_eq!(real.stats.tx_dropped, 1);
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn with_one_queue_left_every_flow_lands_on_the_moved_file() {
    skbsim_kernel::require_privileges();
    let s = load("tun-read/mq-one-attached.toml");
    let real = run_tun_read(&s).expect("the arm runs");
    let files: Vec<Option<usize>> = real
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Read(r) => Some(r.queue),
            _ => None,
        })
        .collect();
    assert_eq!(files, vec![Some(2); 6], "notes: {:?}", real.notes);
}
