//! An exec scenario's `input` (docs/exec.md#scenarios, skbsim_exec::inject): the far
//! side sends the capture's frames directly on the program's device (dev_queue_xmit ->
//! tun_net_xmit) the first time it comes up, all of them, in order, before the
//! program's next operation; each is an `inject` event and a `tun_net_xmit` frame of the
//! capture, and the program reads them as it reads any frame. Frames the tx_ring has no
//! room for are dropped as tun_net_xmit drops them. A capture that cannot be sent is
//! one line, exit 2.

use std::fs;
use std::io::Cursor;
use std::process::Output;

use sim::pcap::{LinkPolicy, PcapReader};
use sim::scenario::Scenario;
use sim::tun::ioctl::iff_flags::{IFF_NO_PI, IFF_TAP};
use sim::tun::ioctl::{cmd, IoctlArg};
use skbsim::exec_scenario::caller;
use skbsim::runner::run_sim;
use skbsim_exec::{DeviceTun, FarInput, SimTun, Sink};

mod common;
use common::{repo, skbsim};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The frames of a repository capture, as the pcap holds them (not through skbsim_exec).
fn capture(name: &str) -> Vec<Vec<u8>> {
    sim::pcap::read_all(repo().join("scenarios/pcaps").join(name))
        .expect("capture")
        .into_iter()
        .map(|f| f.data)
        .collect()
}

/// The frames of a pcapng the run wrote, by interface id. Its interfaces are added as
/// their first frame comes (exec_scenario::write_capture): the injected frames come
/// first, so interface 0 is `DEV tun_net_xmit` and interface 1 `DEV tun_put_user`.
fn run_capture(pcap: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut r = PcapReader::from_reader_with(Cursor::new(pcap.to_vec()), "run", LinkPolicy::Any)
        .expect("a pcapng");
    let mut out = Vec::new();
    while let Some(f) = r.next_frame() {
        let f = f.expect("frame");
        out.push((f.interface, f.data.to_vec()));
    }
    out
}

/// `exec/NAME` under the model: the capture's frames (after the Ethernet header for a
/// tun) are sent on `dev` right after its `link 2` (the first IFF_UP), then read back in
/// order; tun_read_n.c exits 0 only when it read them all and then found the queue empty.
fn check_sent_and_read(name: &str, pcap: &str, dev: &str, strip: usize) {
    let s = Scenario::load(&repo().join(format!("scenarios/exec/{name}.toml"))).expect(name);
    let out = run_sim(&s, None).unwrap_or_else(|e| panic!("{e}"));
    let frames: Vec<Vec<u8>> = capture(pcap)
        .into_iter()
        .map(|f| f[strip..].to_vec())
        .collect();
    let n = frames.len();
    assert!(
        out.trace
            .contains(&format!("link 2: {dev} -> 0\n  dev: {dev}\n  up: yes\n")),
        "{}",
        out.trace
    );
    for (i, f) in frames.iter().enumerate() {
        let inject = format!("inject {}: {dev} -> {}\n  dev: {dev}\n", 3 + i, f.len());
        assert!(out.trace.contains(&inject), "{inject}: {}", out.trace);
        let read = format!("read {}: buffer 65536 -> {}\n", 3 + n + i, f.len());
        assert!(out.trace.contains(&read), "{read}: {}", out.trace);
    }
    assert_eq!(
        out.trace.matches("  fate: queued on queue 0\n").count(),
        n,
        "{}",
        out.trace
    );
    assert!(out
        .trace
        .contains(&format!("read {}: buffer 65536 -> EAGAIN\n", 3 + 2 * n)));
    assert!(out.trace.ends_with("\nexit: 0\n"), "{}", out.trace);
    let got = run_capture(&out.pcap);
    let at = |iface: u32| -> Vec<Vec<u8>> {
        got.iter()
            .filter(|g| g.0 == iface)
            .map(|g| g.1.clone())
            .collect()
    };
    assert_eq!(at(0), frames, "{name}: sent (tun_net_xmit)");
    assert_eq!(at(1), frames, "{name}: read (tun_put_user)");
    assert_eq!(got.len(), 2 * n, "{name}: nothing else captured");
}

#[test]
fn the_capture_is_sent_when_the_tap_first_comes_up_and_read_in_order() {
    check_sent_and_read("inject-tap", "untagged-mixed.pcap", "fi0", 0);
}

#[test]
fn on_a_tun_the_capture_is_sent_as_ip_packets() {
    check_sent_and_read("inject-tun", "untagged-tcp4.pcap", "fi1", 14);
}

fn tap(name: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    n[..name.len()].copy_from_slice(name.as_bytes());
    n
}

/// The tx_ring holds dev->tx_queue_len skbs (tun_attach: ptr_ring_resize to
/// dev->tx_queue_len, TUN_READQ_SIZE = 500 at tun_setup): of 502 frames sent when the
/// device comes up, 500 are queued and the last 2 dropped by tun_net_xmit
/// (SKB_DROP_REASON_FULL_RING); a later down and up sends nothing again.
#[test]
fn frames_beyond_the_tx_ring_are_dropped_and_the_capture_is_sent_once() {
    let frame = capture("untagged-mixed.pcap").remove(0);
    let input = FarInput::new(vec![frame.clone(); 502]);
    let profile = sim::profile::KernelProfile::by_name("linux-6.18").expect("profile");
    let mut dev = DeviceTun::new(profile, caller(), Sink::default()).with_input(input);
    let f = dev.open(true);
    let arg = IoctlArg::Ifreq {
        name: tap("fi0"),
        flags: IFF_TAP | IFF_NO_PI,
    };
    dev.ioctl(f, cmd::TUNSETIFF, &arg).expect("TUNSETIFF");
    dev.set_link(b"fi0", Some(true), None).expect("up");
    let sent = dev.take_injected();
    assert_eq!(sent.len(), 502);
    assert!(sent.iter().all(|s| s.data == frame && s.dev == b"fi0"));
    let fates: Vec<_> = sent
        .iter()
        .map(|s| s.fate.clone().unwrap_or_default())
        .collect();
    assert!(
        fates[..500].iter().all(|f| f == "queued on queue 0"),
        "{fates:?}"
    );
    assert!(
        fates[500..]
            .iter()
            .all(|f| f == "dropped on queue 0: SKB_DROP_REASON_FULL_RING"),
        "{fates:?}"
    );
    assert_eq!(dev.xmit_lost(), 2);
    for _ in 0..500 {
        assert_eq!(dev.read(f, 2048).expect("a frame"), frame);
    }
    assert!(dev.read(f, 2048).is_err(), "nothing more");
    dev.set_link(b"fi0", Some(false), None).expect("down");
    dev.set_link(b"fi0", Some(true), None).expect("up");
    assert!(dev.take_injected().is_empty(), "sent once");
}

/// A scenario in a temp dir: scenarios/exec/x.toml with `input` and `far_side`.
fn scenario_with_input(input: &str, far_side: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(d.path().join("scenarios/exec")).expect("dir");
    let src = fs::canonicalize(repo().join("tools/skbsim-exec/tests/c/tun_read_n.c")).expect("c");
    let toml = format!(
        "description = \"d\"\ninput = \"{input}\"\npipeline = \"exec\"\n\n[exec]\nbuild = \"{}\"\nargs = [\"fi0\", \"1\"]\nfar_side = \"{far_side}\"\n",
        src.display()
    );
    fs::write(d.path().join("scenarios/exec/x.toml"), toml).expect("toml");
    d
}

/// One line naming the scenario file and `what`, exit 2.
fn one_line(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(out));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("scenarios/exec/x.toml"), "{stderr}");
    assert!(stderr.contains(what), "{what}: {stderr}");
}

#[test]
fn a_capture_that_cannot_be_sent_is_one_line() {
    // A LINKTYPE_RAW (101) capture of one 20-byte IPv4 header: not Ethernet frames.
    // The global header (magic, version 2.4, thiszone, sigfigs, snaplen, network), then
    // one record (ts_sec, ts_usec, caplen, len) and its bytes.
    let mut raw = Vec::new();
    for w in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 101] {
        raw.extend_from_slice(&w.to_le_bytes());
    }
    for w in [1u32, 0, 20, 20] {
        raw.extend_from_slice(&w.to_le_bytes());
    }
    raw.extend_from_slice(&[
        0x45, 0, 0, 20, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    let d = scenario_with_input("raw.pcap", "stack");
    fs::write(d.path().join("scenarios/exec/raw.pcap"), raw).expect("pcap");
    let out = skbsim(&["run", "scenarios"], d.path());
    one_line(&out, "is not Ethernet");

    let d = scenario_with_input("no-such.pcap", "stack");
    let out = skbsim(&["run", "scenarios"], d.path());
    one_line(&out, "no-such.pcap");

    let d = scenario_with_input(
        "../../../../scenarios/pcaps/untagged-mixed.pcap",
        "loopback",
    );
    let out = skbsim(&["run", "scenarios"], d.path());
    one_line(&out, "the loopback far side sends no capture");
}

/// conform: on a real tap and tun in a private namespace, the same frames sent out of
/// the device from the stack side (AF_PACKET) when it comes up reach the program's reads
/// as in the model, event for event.
#[test]
#[ignore = "real kernel: needs root (a private network namespace, /dev/net/tun); ci/test.sh runs it as root with --include-ignored"]
fn the_injected_frames_conform_on_this_kernel() {
    skbsim_kernel::require_privileges();
    let out = skbsim(
        &[
            "conform",
            "scenarios/exec/inject-tap.toml",
            "scenarios/exec/inject-tun.toml",
        ],
        &repo(),
    );
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("    pass  exec/inject-tap  (6 frames, 4 reads)"),
        "{t}"
    );
    assert!(
        t.contains("    pass  exec/inject-tun  (6 frames, 4 reads)"),
        "{t}"
    );
}
