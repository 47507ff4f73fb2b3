//! Shared by the tests: the `skbsim` command, the privilege gate and the agreement check.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use sim::scenario::Scenario;
use skbsim::conform::{conform_one, Outcome};

/// This build's `skbsim ARGS` run in `cwd`, its output captured.
pub fn skbsim(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run skbsim")
}

/// `skbsim ARGS` in `cwd`, killed (and the test failed) if it outlives `deadline`: for
/// the checks whose old behaviour was a hang.
pub fn skbsim_deadline(args: &[&str], cwd: &Path, deadline: Duration) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn skbsim");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(out) => out.expect("wait for skbsim"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("skbsim {args:?} still running after {deadline:?}");
        }
    }
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's root")
}

/// An empty directory for the test `name` of this test file (under the target's tmpdir,
/// named after the test crate so two files' tests never share one).
pub fn scratch(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-{name}", env!("CARGO_CRATE_NAME")));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Exit code 2, no panic, and exactly one stderr line containing every `needle`; the line.
pub fn assert_bad_input(out: &Output, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} missing from: {err}");
    }
    err
}

/// The scenario's file stem.
pub fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Replay `scenario` on both backends and panic, naming the first divergence, unless
/// they agree. The caller has handled sim_only and the privilege gate.
pub fn assert_agrees(name: &str, scenario: &Scenario) {
    match conform_one(scenario) {
        Outcome::Agree {
            frames,
            reads,
            notes,
        } => {
            eprintln!("{name}: sim and real kernel agree ({frames} frames, {reads} reads)");
            for n in notes {
                eprintln!("  note: {n}");
            }
        }
        Outcome::Diverge { mismatch, notes } => {
            panic!(
                "{name}: the simulator and the real kernel disagree\n{mismatch}\nnotes: {notes:?}"
            )
        }
        Outcome::Error(e) => panic!("{name}: {e}"),
        Outcome::SimOnly(why) => panic!("{name}: unexpectedly sim-only: {why}"),
        Outcome::NoRealArm(why) => panic!("{name}: {why}"),
        Outcome::NeedsKernel(why) => {
            // Not a pass: the lab's guest kernel runs it (`skbsim lab conform`, in CI).
            // Only a feature the lab brings as a module may be missing here.
            let lab_brings = skbsim_kernel::features::required(scenario)
                .iter()
                .any(|f| f.module().is_some() && skbsim_kernel::features::probe(*f).is_err());
            assert!(
                lab_brings,
                "{name}: {why}, and the lab cannot bring it either"
            );
            eprintln!("not run here: {name}: {why}; checked in the guest by `skbsim lab conform`");
        }
    }
}

/// `out` as a model that got one value wrong would give it: the first field named
/// `field` whose text holds `from` holds `to` there instead, in the records (what the
/// comparisons read) and in the text written from them.
pub fn with_wrong_field(
    out: &skbsim::runner::ScenarioOutput,
    field: &str,
    from: &str,
    to: &str,
) -> skbsim::runner::ScenarioOutput {
    let mut records = out.records.clone();
    let hit = records
        .iter_mut()
        .flat_map(|r| r.fields.iter_mut())
        .find_map(|f| {
            let mut text = String::new();
            f.value.text_into(&mut text);
            (f.name == field && text.contains(from)).then_some((f, text))
        });
    let (f, text) = hit.unwrap_or_else(|| panic!("no `{field}` holds {from:?}"));
    f.value = sim::trace::record::Value::text(text.replacen(from, to, 1));
    let mut trace = String::new();
    for r in &records {
        r.write_text(&mut trace);
    }
    skbsim::runner::ScenarioOutput {
        trace,
        json: out.json.clone(),
        pcap: out.pcap.clone(),
        frames: out.frames,
        notes: out.notes.clone(),
        records,
    }
}
