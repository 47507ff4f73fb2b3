//! `skbsim exec --trace FILE --json FILE -o FILE`: the run's record written as the text
//! trace, JSON lines and a pcapng of the frames at tun_get_user / tun_put_user, the same
//! bytes on every run; outputs checked before the program runs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn skbsim(args: &[&str], prog: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .arg("exec")
        .args(args)
        .arg("--")
        .args(prog)
        .current_dir(dir)
        .output()
        .expect("run skbsim exec")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).expect("output written")
}

/// A shell that opens /dev/net/tun twice (fds 3 and 4) and exits: two opens, then the two
/// last closes when it exits (tun_chr_close on the last fput).
const TWO_OPENS: [&str; 3] = ["sh", "-c", "exec 3<>/dev/net/tun 4<>/dev/net/tun"];

#[test]
fn record_written_as_text_json_and_pcapng() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = ["--trace", "t.txt", "--json", "j.jsonl", "-o", "c.pcapng"];
    let out = skbsim(&args, &TWO_OPENS, dir.path());
    ok(&out);
    let trace = read(&dir.path().join("t.txt"));
    assert!(
        trace.starts_with("backend: sim\nprofile: linux-6.18\nfar-side: stack\n"),
        "{trace}"
    );
    let events: Vec<&str> = trace
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains(": ") && l.contains(' '))
        .filter(|l| {
            l.split(' ')
                .nth(1)
                .is_some_and(|n| n.ends_with(':') && n[..n.len() - 1].parse::<u64>().is_ok())
        })
        .collect();
    assert_eq!(
        events,
        [
            "open 0: file 0",
            "open 1: file 1",
            "close 2: file 0",
            "close 3: file 1"
        ]
    );
    // JSON lines: the header, then one line per event, each a JSON object.
    let json = read(&dir.path().join("j.jsonl"));
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["event"], "header");
    assert_eq!(lines[0]["backend"], "sim");
    assert_eq!(lines[2]["event"], "open");
    assert_eq!(lines[2]["result"]["file"], 1);
    assert_eq!(lines[2]["nonblock"], "no");
    // No frame was written or read: a pcapng with no packet.
    let frames = sim::pcap::read_all_with(dir.path().join("c.pcapng"), sim::pcap::LinkPolicy::Any)
        .expect("a readable pcapng");
    assert!(frames.is_empty());
    // The same run, the same bytes (no pid, time or address in the record).
    let again = tempfile::tempdir().expect("temp dir");
    ok(&skbsim(&args, &TWO_OPENS, again.path()));
    for f in ["t.txt", "j.jsonl", "c.pcapng"] {
        assert_eq!(
            std::fs::read(dir.path().join(f)).expect("first"),
            std::fs::read(again.path().join(f)).expect("second"),
            "{f} differs between two runs"
        );
    }
}

#[test]
fn an_output_that_cannot_be_written_stops_before_the_program_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = skbsim(
        &["--trace", "no/such/dir/t.txt"],
        &["sh", "-c", "touch ran"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no/such/dir/t.txt"), "{err}");
    assert!(!dir.path().join("ran").exists(), "the program ran");
    // Two outputs on stdout cannot both be read.
    let out = skbsim(&["--trace", "-", "--json", "-"], &["true"], dir.path());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[ignore = "gcc (ci/install.sh installs it): ci/test.sh runs it as root with --include-ignored"]
fn far_ping_recorded_with_its_frames() {
    skbsim_kernel::require_privileges();
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("far_ping");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../skbsim-exec/tests/c/far_ping.c");
    let built = Command::new("gcc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&prog)
        .arg(&src)
        .status();
    assert!(
        built.is_ok_and(|s| s.success()),
        "gcc could not build far_ping"
    );
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let args = ["--trace", "t.txt", "-o", "c.pcapng"];
    let out = skbsim(&args, &["./far_ping"], dir.path());
    ok(&out);
    let trace = read(&dir.path().join("t.txt"));
    // far_ping.c: TUNSETIFF fp0 IFF_TAP | IFF_NO_PI, SIOCSIFFLAGS IFF_UP, the 60-byte ARP
    // request, its reply (14 + 28 bytes), the 58-byte echo request, its reply (same
    // length), then exit.
    for want in [
        "open 0: file 0\n",
        "ioctl 1: TUNSETIFF -> 0\n  file: 0\n  cmd: 0x400454ca\n  arg: name fp0 flags 0x1002\n",
        "link 2: fp0 -> 0\n  dev: fp0\n  up: yes\n",
        "write 3: 60 bytes -> 60\n",
        "  skb: protocol 0x0806 len 60 gso_type 0 gso_size 0 gso_segs 0 csum CHECKSUM_NONE or CHECKSUM_COMPLETE (vnet flags 0)\n",
        "read 4: buffer 1600 -> 42\n",
        "write 5: 58 bytes -> 58\n",
        "  skb: protocol 0x0800 len 58 gso_type 0 gso_size 0 gso_segs 0 csum CHECKSUM_NONE or CHECKSUM_COMPLETE (vnet flags 0)\n",
        "read 6: buffer 1600 -> 58\n",
        "close 7: file 0\n",
    ] {
        assert!(trace.contains(want), "no {want:?} in\n{trace}");
    }
    let frames = sim::pcap::read_all_with(dir.path().join("c.pcapng"), sim::pcap::LinkPolicy::Any)
        .expect("a readable pcapng");
    let seen: Vec<(u32, usize, [u8; 2])> = frames
        .iter()
        .map(|f| (f.interface, f.data.len(), [f.data[12], f.data[13]]))
        .collect();
    // Interface 0: fp0 tun_get_user, 1: fp0 tun_put_user, in order of first use.
    assert_eq!(
        seen,
        [
            (0, 60, [0x08, 0x06]),
            (1, 42, [0x08, 0x06]),
            (0, 58, [0x08, 0x00]),
            (1, 58, [0x08, 0x00])
        ]
    );
}
