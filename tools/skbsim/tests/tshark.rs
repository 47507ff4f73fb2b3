//! Every golden capture reads cleanly in tshark: no complaint about the file itself, and
//! no malformed frame unlike those the scenario's input already carried (a scenario may
//! replay a deliberately broken frame; the output must not add breakage of its own, such
//! as raw IP written as Ethernet or a truncated frame without its orig_len).
//!
//! The one allowed exception is an XDP_TX read-back on a tap with a PI (see below).
//!
//! Needs tshark (ci/install.sh installs it). Without it the test says so and passes,
//! except under CI, where a missing tshark fails it.

use std::path::{Path, PathBuf};
use std::process::Command;

use sim::scenario::Scenario;
use skbsim::golden::{golden_dir, PCAP_FILE};

mod common;
use common::repo;

/// tshark's complaints about the file (stderr without its "running as root" note) and
/// the frames it calls malformed, each as its length and protocol stack.
fn tshark(file: &Path) -> (String, Vec<String>) {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(file)
        .args(["-Y", "_ws.malformed", "-T", "fields"])
        .args(["-e", "frame.len", "-e", "frame.protocols"])
        .output()
        .unwrap_or_else(|e| panic!("tshark: {e}"));
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.contains("Running as user") && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let malformed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let status = if out.status.success() {
        stderr
    } else {
        format!("exit {:?}: {stderr}", out.status.code())
    };
    (status, malformed)
}

fn scenarios(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("scenarios dir").flatten() {
        let p = e.path();
        if p.is_dir() && p.file_name().is_some_and(|n| n != "pcaps") {
            scenarios(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

/// The problems of one scenario's golden capture; None when it has none.
fn check(f: &Path) -> Option<Vec<String>> {
    let s = Scenario::load(f).unwrap_or_else(|e| panic!("{e}"));
    let golden = golden_dir(&s, Some(&repo().join("golden")))
        .expect("a golden root")
        .join(PCAP_FILE);
    if !golden.exists() {
        return None;
    }
    let mut problems = Vec::new();
    let (complaint, malformed) = tshark(&golden);
    if !complaint.is_empty() {
        problems.push(format!("{}: {complaint}", golden.display()));
    }
    if !malformed.is_empty() {
        // No more malformed frames than the input carried; or, where a capture shows a
        // frame at several points (an exec scenario records an injected frame where it is
        // sent and where it is read), none unlike the input's malformed frames.
        let (_, input_malformed) = tshark(&s.input);
        let added = malformed
            .iter()
            .filter(|m| !input_malformed.contains(m))
            .count();
        // An XDP_TX frame read on a PI tap: tun_put_user_xdp writes no PI, so the
        // reader's "frame" starts 4 bytes in. That breakage is the kernel's, and the
        // trace says so for each such read.
        let trace =
            std::fs::read_to_string(golden.with_file_name("trace.snap")).unwrap_or_default();
        let no_pi_reads = trace.matches("no PI is written").count();
        if malformed.len() > input_malformed.len() + no_pi_reads && added > no_pi_reads {
            problems.push(format!(
                "{}: {} malformed frames ({added} unlike those of the input), the input {} has {}",
                golden.display(),
                malformed.len(),
                s.input.display(),
                input_malformed.len()
            ));
        }
    }
    Some(problems)
}

#[test]
#[ignore = "needs tshark, which ci/install.sh installs as root; ci/test.sh runs it as root with --include-ignored"]
fn golden_captures_read_cleanly_in_tshark() {
    assert!(
        Command::new("tshark").arg("--version").output().is_ok(),
        "tshark is not installed (ci/install.sh installs it)"
    );
    let mut files = Vec::new();
    scenarios(&repo().join("scenarios"), &mut files);
    files.sort();
    // One tshark per file, a few at a time (its start-up dominates).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(f) = files.get(i) else { break };
                let r = check(f);
                results.lock().expect("results").push((i, r));
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
    let checked = results.iter().filter(|(_, r)| r.is_some()).count();
    let problems: Vec<String> = results
        .into_iter()
        .filter_map(|(_, r)| r)
        .flatten()
        .collect();
    assert!(checked > 100, "only {checked} golden captures");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
