//! A closed or full stdout (issue 20, item 2): `skbsim run | head -1` and the like end
//! quietly with 141 (as a tool SIGPIPE ended), `> /dev/full` is one line and exit 2;
//! never a panic (exit 101). Each case spawns the built binary with stdout a pipe whose
//! reader is already gone, or /dev/full.

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::{repo, scratch};

/// What `main` exits with when stdout's reader has gone: 128 + SIGPIPE.
const CLOSED: i32 = 141;
/// The one line a full disk gets (ENOSPC's words, without "(os error 28)").
const FULL: &str = "skbsim: stdout: cannot write: No space left on device\n";

/// Where the child's stdout goes.
enum To {
    /// A pipe whose read end is closed before the child starts: every write is EPIPE.
    ClosedPipe,
    DevFull,
}

fn skbsim(args: &[&str], cwd: &Path, to: To) -> Output {
    let stdout = match to {
        To::ClosedPipe => {
            let (reader, writer) = std::io::pipe().expect("pipe");
            drop(reader);
            Stdio::from(writer)
        }
        To::DevFull => Stdio::from(
            fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full"),
        ),
    };
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("run skbsim")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Ended quietly: exit 141, nothing on stderr (no panic, no message).
fn assert_quiet(out: &Output, what: &str) {
    assert_eq!(
        (out.status.code(), stderr(out).as_str()),
        (Some(CLOSED), ""),
        "{what}"
    );
}

/// Exit 2 with exactly the one-line write error.
fn assert_full(out: &Output, what: &str) {
    assert_eq!(
        (out.status.code(), stderr(out).as_str()),
        (Some(2), FULL),
        "{what}"
    );
}

/// `<d>/scenarios/tun-read/<name>.toml` for each name, with their pcaps, copied from
/// the repository (no goldens).
fn suite(d: &Path, names: &[&str]) {
    fs::create_dir_all(d.join("scenarios/tun-read")).expect("scenarios");
    fs::create_dir_all(d.join("scenarios/pcaps")).expect("pcaps");
    for n in names {
        let toml = fs::read_to_string(repo().join(format!("scenarios/tun-read/{n}.toml")))
            .expect("scenario");
        let pcap = toml
            .lines()
            .find_map(|l| l.strip_prefix("input = \"../pcaps/"))
            .and_then(|l| l.strip_suffix('"'))
            .expect("an input in ../pcaps");
        fs::write(d.join(format!("scenarios/tun-read/{n}.toml")), &toml).expect("write");
        fs::copy(
            repo().join("scenarios/pcaps").join(pcap),
            d.join("scenarios/pcaps").join(pcap),
        )
        .expect("copy pcap");
    }
}

#[test]
fn run_into_a_closed_pipe_ends_quietly() {
    // 50 scenarios: the first line fails while the others are still queued.
    let out = skbsim(&["run", "scenarios/tun-read"], &repo(), To::ClosedPipe);
    assert_quiet(&out, "run | head");
    let out = skbsim(
        &["run", "scenarios/tun-read", "--json"],
        &repo(),
        To::ClosedPipe,
    );
    assert_quiet(&out, "run --json | head");
}

#[test]
fn bless_into_a_closed_pipe_ends_quietly_and_leaves_whole_goldens() {
    let d = scratch("bless-pipe");
    let names = ["bridge-ageing", "vlan-8021q-pi", "vnet24-pi"];
    suite(&d, &names);
    let out = skbsim(&["bless", "scenarios"], &d, To::ClosedPipe);
    assert_quiet(&out, "bless | head");
    // Whatever was blessed before stdout failed is whole (both files); no bless
    // directory is left behind.
    for n in names {
        let g = d.join("golden/tun-read").join(n);
        assert_eq!(
            g.join("trace.snap").exists(),
            g.join("read.pcap").exists(),
            "{n}: half a golden"
        );
    }
    let left: Vec<String> = fs::read_dir(d.join("golden/tun-read"))
        .expect("golden dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn diff_and_replay_into_a_closed_pipe_end_quietly() {
    let g = "golden/tun-read/vlan-8021q-pi";
    let (a, b) = (
        format!("{g}/trace.snap"),
        "golden/tun-read/vnet24-pi/trace.snap",
    );
    let out = skbsim(&["diff", &a, b], &repo(), To::ClosedPipe);
    assert_quiet(&out, "diff | head");
    let out = skbsim(
        &[
            "replay",
            "scenarios/pcaps/vlan-8021q.pcap",
            "--pipeline",
            "tun-read",
            "-o",
            "-",
        ],
        &repo(),
        To::ClosedPipe,
    );
    assert_quiet(&out, "replay -o - | head");
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn conform_into_a_closed_pipe_ends_quietly() {
    skbsim_kernel::require_privileges();
    let out = skbsim(
        &["conform", "scenarios/tun-read/vlan-8021q-pi.toml"],
        &repo(),
        To::ClosedPipe,
    );
    assert_quiet(&out, "conform | head");
}

#[test]
fn a_full_stdout_is_one_line_and_exit_2() {
    let d = scratch("full");
    suite(&d, &["vlan-8021q-pi"]);
    // The repository's golden, so `run` has something to compare with.
    let g = d.join("golden/tun-read/vlan-8021q-pi");
    fs::create_dir_all(&g).expect("golden dir");
    for f in ["trace.snap", "read.pcap"] {
        fs::copy(
            repo().join("golden/tun-read/vlan-8021q-pi").join(f),
            g.join(f),
        )
        .expect("copy");
    }
    assert_full(&skbsim(&["run", "scenarios"], &d, To::DevFull), "run");
    assert_full(
        &skbsim(&["run", "scenarios", "--json"], &d, To::DevFull),
        "run --json",
    );
    let t = "golden/tun-read/vlan-8021q-pi/trace.snap";
    assert_full(&skbsim(&["diff", t, t], &d, To::DevFull), "diff");
    assert_full(
        &skbsim(&["diff", t, t, "--json"], &d, To::DevFull),
        "diff --json",
    );
}

#[test]
fn lab_kernels_into_a_full_stdout_is_one_line() {
    // Lists the lab's cache and what apt offers: no guest is booted.
    let d = scratch("lab");
    let cache = d.join("cache");
    let out = skbsim(
        &["lab", "kernels", "--cache", cache.to_str().expect("utf-8")],
        &d,
        To::DevFull,
    );
    assert_full(&out, "lab kernels");
}

#[test]
fn bench_into_a_full_stdout_ends_with_the_one_line() {
    let d = scratch("bench");
    let out = skbsim(
        &["bench", "--make-capture", "c.pcap", "--frames", "10"],
        &d,
        To::DevFull,
    );
    let err = stderr(&out);
    // Its progress line ("generating ..."), then the error.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.ends_with(FULL) && !err.contains("panicked"), "{err}");
    // The capture asked for is written whole before the summary line fails.
    assert!(d.join("c.pcap").exists());
}
