#!/usr/bin/env bash
# The test command of the README. As root it first installs what the tests need
# (ci/install.sh is idempotent); real-kernel tests need root: without it they print
# "skipped: <reason>", and under CI (which runs as root) a skip is a failure.
# --no-fail-fast: one failing test binary does not hide the results of the others.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then
  bash ci/install.sh
fi
cargo test --workspace --locked --no-fail-fast
