//! The real tun-read arm with `[queues]` write events (docs/tun-read.md#automq-learned):
//! on this host's kernel, a flow whose reply was written on file N sends the far side's
//! frames of that flow to file N, whatever the per-boot hashrnd; the files and the
//! writes' answers are the ones the model gives (sim/tests/tun_automq.rs).

use std::path::Path;

use sim::errno::Errno;
use sim::pipeline::tun_read::Event;
use sim::scenario::Scenario;
use skbsim_kernel::arm::tun_read::run_tun_read;

/// (frame, file) of every read and (file, answer) of every write, on the real kernel.
#[allow(clippy::type_complexity)]
fn real(rel: &str) -> (Vec<(u64, usize)>, Vec<(usize, Result<usize, Errno>)>) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel);
    let s = Scenario::load(&p).expect("the scenario loads");
    let real = run_tun_read(&s).expect("the arm runs");
    assert!(
        real.notes.is_empty(),
        "the arm saw something the trace cannot say: {:?}",
        real.notes
    );
    let mut landed = Vec::new();
    let mut writes = Vec::new();
    for e in &real.events {
        match e {
            Event::Read(r) => {
                if let (Some((frame, _)), Some(file)) = (r.frame, r.queue) {
                    landed.push((frame, file));
                }
            }
            Event::Queue {
                file,
                written: Some(w),
                ..
            } => writes.push((*file, *w)),
            _ => {}
        }
    }
    (landed, writes)
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn written_flows_land_on_the_writers_files() {
    skbsim_kernel::require_privileges();
    let (landed, writes) = real("tun-read/mq-learned-flows.toml");
    assert_eq!(
        writes,
        [
            (1, Ok(54)),
            (2, Ok(46)),
            (1, Ok(74)),
            (0, Err(Errno::EINVAL))
        ]
    );
    assert_eq!(landed, [(0, 1), (1, 2), (2, 1), (3, 1), (4, 2), (5, 1)]);
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn a_detach_keeps_the_learned_entries() {
    skbsim_kernel::require_privileges();
    let (landed, writes) = real("tun-read/mq-learned-detach.toml");
    assert_eq!(writes, [(1, Ok(54)), (2, Ok(46)), (0, Ok(74)), (1, Ok(46))]);
    assert_eq!(landed, [(0, 1), (1, 2), (2, 0), (3, 2), (4, 0), (5, 0)]);
}
