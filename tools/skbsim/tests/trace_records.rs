//! Issue 21 item 1 on tun-read: the trace is built once as records; the text trace and
//! the JSON lines are written from them, and `conform` compares the records by their
//! marks (only the fields both arms see), with no list of model-only fields.

mod common;

use std::path::{Path, PathBuf};

use sim::scenario::Scenario;
use sim::trace::record::{Seen, Value};
use skbsim::conform::compare_scenario_outputs;
use skbsim::runner::{run_sim, run_tap, ScenarioOutput};

fn scenario(name: &str) -> Scenario {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/tun-read")
        .join(format!("{name}.toml"));
    Scenario::load(&p).expect("scenario")
}

/// `out` with its records changed by `f` (the text and the rest kept).
fn with_records(
    out: &ScenarioOutput,
    f: impl Fn(&mut sim::trace::record::Field<'static>),
) -> ScenarioOutput {
    let mut records = out.records.clone();
    for r in &mut records {
        r.fields.iter_mut().for_each(&f);
    }
    ScenarioOutput {
        trace: out.trace.clone(),
        json: out.json.clone(),
        pcap: out.pcap.clone(),
        frames: out.frames,
        notes: Vec::new(),
        records,
    }
}

#[test]
fn the_text_and_the_json_lines_are_written_from_the_records() {
    let s = scenario("vlan-8021q-pi");
    let sim = run_sim(&s, None).expect("sim");
    // header, 3 reads, totals
    assert!(sim.records.len() >= 3, "{:?}", sim.records.len());
    let mut text = String::new();
    for r in &sim.records {
        r.write_text(&mut text);
    }
    assert_eq!(text, sim.trace);
    let json: Vec<_> = sim.records.iter().map(|r| r.to_json()).collect();
    assert_eq!(serde_json::Value::Array(json), sim.json);
    // The skb is the model's; the PI is what userspace reads.
    let read = &sim.records[1];
    let seen = |name: &str| read.fields.iter().find(|f| f.name == name).map(|f| f.seen);
    assert_eq!(seen("skb"), Some(Seen::ModelOnly));
    assert_eq!(seen("pi"), Some(Seen::Both));
}

#[test]
fn conform_compares_the_fields_both_arms_see_and_only_those() {
    let s = scenario("vlan-8021q-pi");
    let sim = run_sim(&s, None).expect("sim");
    assert_eq!(
        compare_scenario_outputs(&s, &sim, &sim).expect("compare"),
        None
    );
    // A model-only field (the skb) changed: not compared.
    let skb = with_records(&sim, |f| {
        if f.name == "skb" {
            f.value = Value::Word("len 1");
        }
    });
    assert_eq!(
        compare_scenario_outputs(&s, &skb, &sim).expect("compare"),
        None
    );
    // The PI's flags changed (a model that got TUN_PKT_STRIP wrong): caught, named.
    let pi = with_records(&sim, |f| {
        if f.name == "pi" {
            f.value = Value::Word("flags 0x0001 proto 0x0800");
        }
    });
    let m = compare_scenario_outputs(&s, &pi, &sim)
        .expect("compare")
        .expect("caught");
    assert_eq!(
        (m.read.as_str(), m.field.as_str(), m.sim.as_str()),
        (
            "read 0 (frame 0, ts 1.000000000)",
            "pi",
            "flags 0x0001 proto 0x0800"
        )
    );
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn the_real_arm_builds_the_same_records_without_the_model_s_fields() {
    skbsim_kernel::require_privileges();
    let s = scenario("vlan-8021q-pi");
    let sim = run_sim(&s, None).expect("sim");
    let real = run_tap(&s).expect("real kernel");
    assert_eq!(real.records.len(), sim.records.len());
    assert!(real
        .records
        .iter()
        .all(|r| r.fields.iter().all(|f| f.seen != Seen::ModelOnly)));
    assert_eq!(
        compare_scenario_outputs(&s, &sim, &real).expect("compare"),
        None
    );
    let pi = with_records(&sim, |f| {
        if f.name == "pi" {
            f.value = Value::Word("flags 0x0001 proto 0x0800");
        }
    });
    let m = compare_scenario_outputs(&s, &pi, &real)
        .expect("compare")
        .expect("caught");
    assert_eq!(
        (m.field.as_str(), m.real.as_str()),
        ("pi", "flags 0x0000 proto 0x0800")
    );
}
