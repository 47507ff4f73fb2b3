#!/usr/bin/env bash
# The README's reviewer workflow, on a copy of the repository: one byte changed in a golden
# trace makes `cargo insta test` fail and `cargo insta pending-snapshots` list that golden
# (cargo-insta only looks inside package directories: golden/ is one, see golden/Cargo.toml),
# and `cargo insta accept` then writes exactly the bytes `skbsim bless` writes.
# Needs cargo-insta (ci/install.sh). The copy shares this checkout's target directory, so
# only the workspace crates are rebuilt for it.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "ci/insta-check.sh: $*" >&2
  exit 1
}

# -m: the copy's files are newer than any artifact, so cargo rebuilds the copy's crates
# instead of reusing an earlier copy's (same artifact names, see below, but built in a
# directory that is gone).
tar --exclude=./target --exclude=./.git -cf - . | tar -C "$tmp" -m -xf -
cd "$tmp"
# awk reads the whole list: `head -n 1` would exit early and sort would die of SIGPIPE,
# which pipefail turns into a failed run (exit 141), depending on timing.
golden=$(find golden -name trace.snap | LC_ALL=C sort | awk 'NR == 1')
[ -n "$golden" ] || fail "no golden trace under golden/"
area_name=${golden#golden/}
scenario=scenarios/${area_name%/trace.snap}.toml
[ -f "$scenario" ] || fail "$golden: no scenario $scenario"

# One byte: the first digit of the trace's last line becomes an X.
sed -i -E '$ s/[0-9]/X/' "$golden"
[ "$(cmp -l "$golden" "$repo/$golden" | wc -l)" = 1 ] || fail "$golden: could not change one byte"

# The copy shares the target directory, where cargo names a workspace crate's artifacts by
# its path relative to the workspace: the copy's would replace this checkout's, and would
# not even be rebuilt though they embed this checkout's CARGO_MANIFEST_DIR (the tests find
# scenarios and goldens through it). Another version gives the copy's crates artifacts of
# their own (rebuilt on every run: tar -m above); the registry dependencies are reused.
sed -i -E '0,/^version = "([^"]*)"$/ s//version = "\1-insta-check"/' Cargo.toml
grep -q -- '-insta-check"$' Cargo.toml || fail "Cargo.toml: no workspace version to change"
cargo test --quiet --no-run --test scenarios
echo "== cargo insta test on a changed golden ($golden): must fail and leave it to review"
if CI=false cargo insta test --test scenarios >"$tmp/test.log" 2>&1; then
  cat "$tmp/test.log" >&2
  fail "cargo insta test passed with $golden changed"
fi
grep -q "1 snapshot to review" "$tmp/test.log" || {
  cat "$tmp/test.log" >&2
  fail "cargo insta test did not report the changed golden for review"
}
cargo insta pending-snapshots >"$tmp/pending.log" 2>&1 || true
grep -qF "  $golden" "$tmp/pending.log" || {
  cat "$tmp/pending.log" >&2
  fail "cargo insta pending-snapshots does not list $golden"
}

echo "== cargo insta test --check (what it does under CI): must fail"
if CI=true cargo insta test --check --test scenarios >"$tmp/check.log" 2>&1; then
  cat "$tmp/check.log" >&2
  fail "cargo insta test --check passed with $golden changed"
fi

echo "== cargo insta accept writes the bytes skbsim bless wrote"
cargo insta accept >/dev/null 2>&1
cmp "$golden" "$repo/$golden" || fail "cargo insta accept wrote $golden differently from skbsim bless"
[ -z "$(find golden -name '*.snap.new')" ] || fail "pending snapshots left after accept"

echo "== skbsim bless writes the bytes cargo insta accept wrote"
sed -i -E '$ s/[0-9]/X/' "$golden"
cargo run --quiet --locked -p skbsim -- bless "$scenario" >/dev/null
cmp "$golden" "$repo/$golden" || fail "skbsim bless wrote $golden differently from cargo insta accept"
echo "ci/insta-check.sh: ok ($golden)"
