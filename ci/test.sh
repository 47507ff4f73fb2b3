#!/usr/bin/env bash
# The test command of the README. Real-kernel tests are #[ignore]d (they need root and
# /dev/net/tun): as root this first installs what the tests need (ci/install.sh is
# idempotent) and runs them too, with --include-ignored; without root the test runner
# lists them as ignored, never as passed.
# --no-fail-fast: one failing test binary does not hide the results of the others.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then
  bash ci/install.sh
  cargo test --workspace --locked --no-fail-fast -- --include-ignored
else
  cargo test --workspace --locked --no-fail-fast
fi
