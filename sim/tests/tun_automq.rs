//! tun-read `[queues]` write events and the automq flow table they teach
//! (docs/tun-read.md#automq-learned): a flow written on file N sends the far side's
//! frames of that flow (either direction: the hash is symmetric) to file N; a detach
//! deletes no entry (tun_flow_delete_by_queue(numqueues + 1)); a detached file's write
//! and a refused write teach nothing. The same outcomes are checked against this host's
//! kernel by `skbsim conform scenarios/tun-read/mq-learned-*.toml` and
//! tools/skbsim-kernel/tests/tun_automq.rs.

mod common;

use sim::errno::Errno;
use sim::pipeline::tun_read::{Event, TunReadRun};
use sim::scenario::Scenario;

fn events(s: &Scenario) -> Vec<Event> {
    common::drive_events(s, &mut TunReadRun::new(s))
}

/// (frame, file) of every read.
fn landed(ev: &[Event]) -> Vec<(u64, usize)> {
    ev.iter()
        .filter_map(|e| match e {
            Event::Read(r) => Some((r.frame?.0, r.queue?)),
            _ => None,
        })
        .collect()
}

/// (file, answer) of every write event.
fn writes(ev: &[Event]) -> Vec<(usize, Result<usize, Errno>)> {
    ev.iter()
        .filter_map(|e| match e {
            Event::Queue {
                file,
                written: Some(w),
                ..
            } => Some((*file, *w)),
            _ => None,
        })
        .collect()
}

fn load(rel: &str) -> Scenario {
    Scenario::load(&common::path(rel)).expect("the scenario loads")
}

#[test]
fn a_written_flow_sends_the_far_sides_frames_to_the_writers_file() {
    let ev = events(&load("tun-read/mq-learned-flows.toml"));
    // Replies of the TCP flow (frames 0, 3) and the IPv6 flow (2, 5) were written on
    // file 1, of the UDP flow (1, 4) on file 2; the 10-byte write is shorter than an
    // Ethernet header (tun_get_user: EINVAL) and teaches nothing.
    assert_eq!(
        writes(&ev),
        [
            (1, Ok(54)),
            (2, Ok(46)),
            (1, Ok(74)),
            (0, Err(Errno::EINVAL))
        ]
    );
    assert_eq!(
        landed(&ev),
        [(0, 1), (1, 2), (2, 1), (3, 1), (4, 2), (5, 1)]
    );
}

#[test]
fn a_detach_keeps_the_entries_and_a_detached_files_write_teaches_nothing() {
    let ev = events(&load("tun-read/mq-learned-detach.toml"));
    assert_eq!(
        writes(&ev),
        [(1, Ok(54)), (2, Ok(46)), (0, Ok(74)), (1, Ok(46))]
    );
    // After file 1 (index 1) leaves, file 2 holds index 1: the TCP flow's entry (1)
    // follows it; the UDP flow's (2) is past the two queues, netdev_cap_txqueue gives
    // queue 0 (file 0). Had the detached file's UDP write been learned, frame 4 would
    // have gone to its stale index 1, file 2.
    assert_eq!(
        landed(&ev),
        [(0, 1), (1, 2), (2, 0), (3, 2), (4, 0), (5, 0)]
    );
}

/// A scenario file in a fresh directory beside the pcap's absolute path; the load error.
fn load_err(name: &str, events: &str) -> String {
    let dir = std::env::temp_dir().join(format!("skbsim-automq-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let pcap = common::path("pcaps/mq-flows.pcap");
    let text = format!(
        "description = \"t\"\ninput = {:?}\npipeline = \"tun-read\"\n[device]\nno_pi = true\n[queues]\ncount = 2\n{events}",
        pcap.display().to_string()
    );
    let path = dir.join("s.toml");
    std::fs::write(&path, text).expect("write the scenario");
    let err = Scenario::load(&path).expect_err("the scenario is refused");
    std::fs::remove_dir_all(&dir).ok();
    let msg = err.to_string();
    assert!(msg.contains("s.toml"), "names the file: {msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
    msg
}

#[test]
fn write_events_are_checked_when_the_scenario_loads() {
    let ev = "[[queues.event]]\nbefore_frame = 0\nfile = 0\n";
    let m = load_err("nodata", &format!("{ev}op = \"write\"\n"));
    assert!(m.contains("needs data"), "{m}");
    let m = load_err(
        "detachdata",
        &format!("{ev}op = \"detach\"\ndata = \"00\"\n"),
    );
    assert!(m.contains("only op = \"write\" takes data"), "{m}");
    let m = load_err("odd", &format!("{ev}op = \"write\"\ndata = \"020\"\n"));
    assert!(m.contains("3 hex digits"), "{m}");
    let m = load_err("nothex", &format!("{ev}op = \"write\"\ndata = \"0g\"\n"));
    assert!(m.contains("\"0g\" is not a hex byte"), "{m}");
    let m = load_err("empty", &format!("{ev}op = \"write\"\ndata = \"\"\n"));
    assert!(m.contains("empty"), "{m}");
}
