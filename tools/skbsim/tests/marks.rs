//! Issue 21 item 1, the last name lists: what a real arm or a lab guest can compare is
//! decided by the mark on each field of the records (`sim::trace::record::Seen`), never by
//! the field's name. The header's `xdp` (the program and mode the arm attached, which
//! userspace sees) shares its name with each write's `xdp` (the model's verdict line); a
//! list of model-only names left both out, so a real run that attached the program in
//! the wrong mode passed `skbsim run --backend tap` against the golden, and a lab guest's
//! trace `skbsim lab conform`.

mod common;
use common::repo;

use std::path::PathBuf;

use sim::scenario::Scenario;
use sim::trace::record::Seen;
use sim::trace::record_diff::{observed, Flat};
use skbsim::conform::compare_observed_outputs;
use skbsim::golden::Verdict;
use skbsim::runner::run_sim;
use skbsim::suite::check_real;

fn tap_write(name: &str) -> (Scenario, PathBuf) {
    let s =
        Scenario::load(&repo().join(format!("scenarios/tap-write/{name}.toml"))).expect("scenario");
    (s, repo().join(format!("golden/tap-write/{name}")))
}

/// The marks of the fields named `name` in `records`, in order.
fn marks(out: &skbsim::runner::ScenarioOutput, name: &str) -> Vec<Seen> {
    out.records
        .iter()
        .flat_map(|r| r.fields.iter())
        .filter(|f| f.name == name)
        .map(|f| f.seen)
        .collect()
}

#[test]
fn a_real_run_against_the_golden_compares_the_header_s_xdp_program() {
    let (s, dir) = tap_write("xdp-count-native");
    let sim = run_sim(&s, None).expect("sim");
    // One `xdp` the real arm sees (the header's), the others the model's (per write).
    let m = marks(&sim, "xdp");
    assert_eq!(m.first(), Some(&Seen::Both), "{m:?}");
    assert!(
        m[1..].iter().all(|x| *x == Seen::ModelOnly) && m.len() > 1,
        "{m:?}"
    );
    assert_eq!(check_real(&dir, &s, &sim).expect("check"), Verdict::Pass);
    // A real arm that attached the program in generic mode (the header says so).
    let generic = common::with_wrong_field(&sim, "xdp", " native", " generic");
    assert_ne!(generic.trace, sim.trace);
    match check_real(&dir, &s, &generic).expect("check") {
        Verdict::Mismatch(m) => {
            assert!(m.contains("`header`, field `xdp`"), "{m}");
            assert!(m.contains(" generic"), "{m}");
        }
        v => panic!("the header's xdp mode is not compared: {v:?}"),
    }
    // The model's own verdict line on a write changed: not compared.
    let verdict = common::with_wrong_field(&sim, "xdp", "XDP_DROP", "XDP_PASS");
    assert_eq!(
        check_real(&dir, &s, &verdict).expect("check"),
        Verdict::Pass
    );
}

#[test]
fn a_lab_guest_s_records_keep_their_marks_across_the_serial_port() {
    let (s, _) = tap_write("xdp-count-native");
    let sim = run_sim(&s, None).expect("sim");
    let flats = observed(&sim.records);
    // As guest-conform sends them and the host reads them back.
    let line = serde_json::json!({ "observed": flats }).to_string();
    let back: serde_json::Value = serde_json::from_str(&line).expect("json");
    let shipped: Vec<Flat> = serde_json::from_value(back["observed"].clone()).expect("flats");
    assert_eq!(shipped, flats);
    let pcap = sim.pcap.as_slice();
    assert_eq!(
        compare_observed_outputs(&s, (&flats, pcap), (&shipped, pcap)).expect("compare"),
        None
    );
    let generic = observed(&common::with_wrong_field(&sim, "xdp", " native", " generic").records);
    let m = compare_observed_outputs(&s, (&flats, pcap), (&generic, pcap))
        .expect("compare")
        .expect("the header's xdp mode is compared");
    assert_eq!((m.read.as_str(), m.field.as_str()), ("header", "xdp"));
    // A guest that sent no records is no agreement.
    let e = compare_observed_outputs(&s, (&flats, pcap), (&[], pcap)).expect_err("no records");
    assert!(e.0.contains("no records"), "{}", e.0);
}
