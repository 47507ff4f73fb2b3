#!/usr/bin/env bash
# The test command of the README. Real-kernel tests run when root (CI is root); without
# root they print "skipped: <reason>" and do not count as passes.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
