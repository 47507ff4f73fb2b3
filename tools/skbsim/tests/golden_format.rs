//! Every golden trace is a file `skbsim bless` would write and `cargo insta accept` would
//! write the same bytes for: insta reads it back with the metadata of the assertion in
//! `tests/scenarios.rs` and saves it unchanged. (`ci/insta-check.sh` checks the whole
//! reviewer workflow end to end: a changed golden fails `cargo insta test`, and
//! `cargo insta accept` restores the blessed bytes.)

use std::path::{Path, PathBuf};

use skbsim::golden::{snap_body, to_snap, TRACE_FILE};

mod common;
use common::repo;

fn traces(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        if p.is_dir() {
            traces(&p, out);
        } else if p.file_name().is_some_and(|n| n == TRACE_FILE) {
            out.push(p);
        }
    }
}

#[test]
fn every_golden_trace_is_what_bless_and_insta_accept_write() {
    let mut files = Vec::new();
    traces(&repo().join("golden"), &mut files);
    files.sort();
    assert!(files.len() >= 100, "only {} golden traces", files.len());
    let tmp = std::env::temp_dir().join(format!("skbsim-golden-format-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let resaved = tmp.join(TRACE_FILE);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            to_snap(snap_body(&text)),
            "{}: not the bytes `skbsim bless` writes",
            path.display()
        );
        let snap = insta::Snapshot::from_file(path)
            .unwrap_or_else(|e| panic!("{}: insta cannot read it: {e}", path.display()));
        let md = snap.metadata();
        // What insta records for `assert_snapshot!("trace", trace)` in tests/scenarios.rs:
        // the test file relative to the workspace and the asserted expression.
        assert_eq!(md.source(), Some("tools/skbsim/tests/scenarios.rs"));
        assert!(repo().join(md.source().unwrap_or_default()).is_file());
        assert_eq!(md.expression(), Some("trace"), "{}", path.display());
        assert_eq!(md.input_file(), None, "{}", path.display());
        // `cargo insta accept` saves the pending snapshot through this same writer.
        snap.save(&resaved)
            .unwrap_or_else(|e| panic!("{}: {e}", resaved.display()));
        let again = std::fs::read_to_string(&resaved).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            again,
            text,
            "{}: insta writes it differently",
            path.display()
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
