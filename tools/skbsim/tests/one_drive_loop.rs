//! Every run of a pipeline goes through the one drive loop (`sim::pipeline::drive`,
//! issue 21 item 2): the CLI's replay, the bench, the tests' recorders. The scan reads the
//! sources of the model and the CLI: `Pipeline::handle` is called only by the loop
//! itself (sim/src/pipeline/drive.rs) and by the tests of the pipeline shape that the
//! loop is built on (sim/src/pipeline/shape_tests.rs); there is no second feeder; and
//! the model holds no bench code (the bench's streams and runs are the CLI's,
//! tools/skbsim/src/bench/gro_model.rs).

use std::fs;
use std::path::Path;

mod common;
use common::repo;

/// The `.rs` files under `dir`, relative to the repository root, sorted.
fn rust_files(root: &Path, dir: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("source directory") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).expect("under root");
                let text = fs::read_to_string(&p).expect("utf-8 source");
                out.push((rel.to_string_lossy().into_owned(), text));
            }
        }
    }
    out.sort();
    out
}

fn sources() -> Vec<(String, String)> {
    let root = repo();
    ["sim/src", "tools/skbsim/src", "tools/skbsim-kernel/src"]
        .iter()
        .flat_map(|d| rust_files(&root, d))
        .collect()
}

/// Lines of `text` that contain `needle`, as `file:line`.
fn hits(files: &[(String, String)], needle: &str, allowed: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        if allowed.contains(&path.as_str()) {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if line.contains(needle) {
                out.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn only_the_drive_loop_feeds_a_pipeline() {
    let files = sources();
    let allowed = [
        "sim/src/pipeline/drive.rs",
        "sim/src/pipeline/shape_tests.rs",
    ];
    let calls = hits(&files, ".handle(", &allowed);
    assert!(calls.is_empty(), "a second loop:\n{}", calls.join("\n"));
    let feeders = hits(&files, "feed_frame", &[]);
    assert!(
        feeders.is_empty(),
        "a second feeder:\n{}",
        feeders.join("\n")
    );
    // The loop is there and the CLI's replay is built on it.
    let drive = files
        .iter()
        .find(|(p, _)| p == "sim/src/pipeline/drive.rs")
        .expect("sim/src/pipeline/drive.rs");
    assert!(drive.1.contains("pub fn drive<"), "the loop");
    let engine = files
        .iter()
        .find(|(p, _)| p == "tools/skbsim/src/engine/drive.rs")
        .expect("tools/skbsim/src/engine/drive.rs");
    assert!(
        engine.1.contains("sim::pipeline::drive("),
        "the replay's loop"
    );
}

#[test]
fn the_model_holds_no_bench_code() {
    let files: Vec<_> = sources()
        .into_iter()
        .filter(|(p, _)| p.starts_with("sim/src/"))
        .collect();
    let mut found = hits(&files, "fn bench_", &[]);
    found.extend(hits(&files, "Bench", &[]));
    assert!(found.is_empty(), "bench code in sim:\n{}", found.join("\n"));
}

#[test]
fn tap_gro_sets_up_tap_writes_devices_and_none_of_its_own() {
    // tap-gro is tap-write with NAPI and GRO configured: its devices come from
    // tap_write::scenario_net / dut_net, not from a copy of that setup.
    let files: Vec<_> = sources()
        .into_iter()
        .filter(|(p, _)| p == "sim/src/pipeline/tap_gro.rs")
        .collect();
    assert_eq!(files.len(), 1, "sim/src/pipeline/tap_gro.rs");
    let mut copied = Vec::new();
    for needle in [
        "load_program",
        "fill_devmaps",
        "XdpAttachment",
        "enable_napi",
        "TunNapi::new",
        "Net::new",
    ] {
        copied.extend(hits(&files, needle, &[]));
    }
    assert!(copied.is_empty(), "copied setup:\n{}", copied.join("\n"));
    let text = &files[0].1;
    assert!(text.contains("scenario_net(scenario)"), "tap-write's setup");
}
