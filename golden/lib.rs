//! No code. This package makes `golden/` a package directory: cargo-insta looks for pending
//! snapshots (`trace.snap.new`) only inside package directories, so without it
//! `cargo insta test` stays green on a changed golden and `cargo insta review` finds
//! nothing (see the README's reviewer workflow and `ci/insta-check.sh`).
