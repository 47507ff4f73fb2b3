//! `skbsim exec --input PCAP` (issue 23, docs/exec.md#scenarios): the far side sends the
//! capture's frames on the program's device when it first comes up, the same injection
//! as an exec scenario's `input` (skbsim::exec_scenario::read_far_input, one definition);
//! a capture that cannot be sent is refused with one line naming it, exit 2, and the
//! program does not run.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::{repo, skbsim};

/// tools/skbsim-exec/tests/c/tun_read_n.c built into `dir`.
fn tun_read_n(dir: &Path) -> String {
    let prog = dir.join("tun_read_n");
    let src = repo().join("tools/skbsim-exec/tests/c/tun_read_n.c");
    let built = Command::new("gcc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&prog)
        .arg(&src)
        .status();
    assert!(built.is_ok_and(|s| s.success()), "gcc tun_read_n.c");
    prog.display().to_string()
}

/// The trace from its first event on, without a scenario's closing `exit` record.
fn events(trace: &str) -> &str {
    let start = trace.find("\nopen 0:").expect("an open event");
    let end = trace.find("\nexit:").unwrap_or(trace.len());
    &trace[start..end]
}

#[test]
fn input_sends_the_capture_as_a_scenarios_input_does() {
    let d = tempfile::tempdir().expect("temp dir");
    let prog = tun_read_n(d.path());
    let pcap = repo().join("scenarios/pcaps/untagged-mixed.pcap");
    let pcap = pcap.to_str().expect("utf-8 path");
    let out = skbsim(
        &[
            "exec",
            "--far-addr",
            "10.0.0.2/24",
            "--input",
            pcap,
            "--trace",
            "t.txt",
            "--json",
            "t.jsonl",
            "--",
            &prog,
            "fi0",
            "3",
        ],
        d.path(),
    );
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // Each read returned one of the capture's frames, whole, in order.
    let frames: Vec<String> = sim::pcap::read_all(pcap)
        .expect("the capture")
        .iter()
        .map(|f| sim::trace::hex_string(&f.data))
        .collect();
    let json = fs::read_to_string(d.path().join("t.jsonl")).expect("the JSON record");
    let reads: Vec<String> = json
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["event"] == "read" && e.get("bytes").is_some())
        .map(|e| e["bytes"].as_str().expect("hex").to_string())
        .collect();
    assert_eq!(frames.len(), 3);
    assert_eq!(reads, frames);
    // Event for event what the exec/inject-tap scenario (the same program, capture and
    // far address through `input`) recorded.
    let trace = fs::read_to_string(d.path().join("t.txt")).expect("the trace");
    let golden = fs::read_to_string(repo().join("golden/exec/inject-tap/trace.snap"))
        .expect("the scenario's golden");
    assert_eq!(events(&trace), events(&golden));
}

/// Exit 2, one line on stderr containing each of `want`, and the program not run.
fn refused(out: &Output, dir: &Path, want: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for w in want {
        assert!(err.contains(w), "no {w:?} in {err}");
    }
    assert!(!dir.join("ran").exists(), "the program ran");
}

#[test]
fn an_input_that_cannot_be_sent_is_one_line() {
    let d = tempfile::tempdir().expect("temp dir");
    let run = |input: &str, far_side: &str| {
        skbsim(
            &[
                "exec",
                "--far-side",
                far_side,
                "--input",
                input,
                "--",
                "sh",
                "-c",
                "touch ran",
            ],
            d.path(),
        )
    };
    let out = run("no-such.pcap", "stack");
    refused(&out, d.path(), &["--input", "no-such.pcap"]);

    // A LINKTYPE_RAW (101) capture of one 20-byte IPv4 header: not Ethernet frames. The
    // global header (magic, version 2.4, thiszone, sigfigs, snaplen, network), one record
    // header (ts_sec, ts_usec, caplen, len) and its bytes.
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
    fs::write(d.path().join("raw.pcap"), raw).expect("pcap");
    let out = run("raw.pcap", "sink");
    refused(&out, d.path(), &["raw.pcap", "is not Ethernet"]);

    let pcap = repo().join("scenarios/pcaps/untagged-mixed.pcap");
    let out = run(pcap.to_str().expect("utf-8 path"), "loopback");
    refused(&out, d.path(), &["the loopback far side sends no capture"]);
}

/// `--backend tap --input`: the capture sent out of the real tap from the stack side
/// (AF_PACKET) reaches the program's reads as in the model, event for event.
#[test]
#[ignore = "real kernel and gcc: needs root (a private network namespace, /dev/net/tun); ci/test.sh runs it as root with --include-ignored"]
fn input_on_a_real_tap_is_read_as_in_the_model() {
    skbsim_kernel::require_privileges();
    let d = tempfile::tempdir().expect("temp dir");
    let prog = tun_read_n(d.path());
    let pcap = repo().join("scenarios/pcaps/untagged-mixed.pcap");
    let trace = |backend: &str| {
        let name = format!("{backend}.txt");
        let out = skbsim(
            &[
                "exec",
                "--backend",
                backend,
                "--far-addr",
                "10.0.0.2/24",
                "--input",
                pcap.to_str().expect("utf-8 path"),
                "--trace",
                &name,
                "--",
                &prog,
                "fi0",
                "3",
            ],
            d.path(),
        );
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        fs::read_to_string(d.path().join(name)).expect("the trace")
    };
    let (sim, tap) = (trace("sim"), trace("tap"));
    assert_eq!(tap.matches("\ninject ").count(), 3, "{tap}");
    // `fate` (dev_queue_xmit's, the model's) is not in the tap arm's trace.
    let seen = |t: &str| -> String {
        events(t)
            .lines()
            .filter(|l| !l.starts_with("  fate:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(seen(&tap), seen(&sim));
}
