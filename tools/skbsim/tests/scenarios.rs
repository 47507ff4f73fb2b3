//! One test per scenario file: replay it on the simulator and compare with its goldens.
//! The trace golden is an insta snapshot (`cargo insta review` shows a changed trace to a
//! reviewer); the output pcap must match `read.pcap` byte for byte.
//!
//! `cargo nextest run --partition hash:K/N` shards this suite across machines.

use std::path::{Path, PathBuf};

use rstest::rstest;
use sim::scenario::Scenario;
use skbsim::golden::{golden_dir, PCAP_FILE};
use skbsim::runner::run_sim;

mod common;
use common::repo;

#[rstest]
fn scenario_matches_golden(
    #[files("../../scenarios/**/*.toml")]
    #[exclude("/pcaps/")]
    path: PathBuf,
) {
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let out = run_sim(&scenario, None).unwrap_or_else(|e| panic!("{e}"));
    let dir = golden_dir(&scenario, Some(&repo().join("golden"))).expect("a golden root");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(&dir);
    settings.set_prepend_module_to_snapshot(false);
    // insta writes the asserted expression (`trace`) and no `input_file` into the header:
    // the same header `skbsim bless` writes (`golden::SNAP_HEADER`), so `cargo insta
    // accept` and `skbsim bless` write the same bytes.
    let trace = &out.trace;
    settings.bind(|| insta::assert_snapshot!("trace", trace));
    let golden_pcap = std::fs::read(dir.join(PCAP_FILE)).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run `skbsim bless {}`)",
            dir.display(),
            path.display()
        )
    });
    if golden_pcap != out.pcap {
        let detail = skbsim::diff::pcap_divergence(
            &golden_pcap,
            &out.pcap,
            &dir.join(PCAP_FILE),
            Path::new("(replay)"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        panic!("{}: {}", scenario.name, detail.unwrap_or_default());
    }
}

#[test]
fn the_suite_has_at_least_twenty_read_path_scenarios() {
    let n = std::fs::read_dir(repo().join("scenarios/tun-read"))
        .expect("scenarios/tun-read")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))
        })
        .count();
    assert!(n >= 20, "only {n} tun-read scenarios");
}
