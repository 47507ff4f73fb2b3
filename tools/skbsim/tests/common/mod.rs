//! Shared by the tests: the `skbsim` command, the privilege gate and the agreement check.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

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
