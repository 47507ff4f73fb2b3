#!/usr/bin/env bash
# The kernel lab in CI: the real arms this machine's kernel cannot run (GRE-TEB GRO,
# vhost_net, an 802.1Q device), and every other guest-capable scenario, inside Debian's
# 6.1 cloud kernel under QEMU. Nothing is installed on the host: `skbsim lab` downloads
# the packages with apt-get download into its cache. A missing package, a failed boot or
# a difference fails the run with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "ci/lab.sh: the lab needs root (namespaces and taps in the guest are fine, but apt lists and /dev/kvm probing need it)" >&2
  exit 2
fi
# apt-get download resolves versions from the package lists: refresh them once (its
# output to a log, printed only on failure, like ci/install.sh).
if ! apt-get update -qq >/tmp/skbsim-apt.log 2>&1; then
  cat /tmp/skbsim-apt.log >&2
  echo "ci/lab.sh: apt-get update failed" >&2
  exit 2
fi
skbsim() { cargo run --quiet --release --locked -p skbsim -- "$@"; }
echo "== lab: fetch (cached after the first run)"
skbsim lab fetch
echo "== lab: conform every scenario the guest kernel can run"
skbsim lab conform scenarios
echo "== lab: 802.1Q device over a tap"
skbsim lab vlan
echo "== lab: gretap between two namespaces"
skbsim lab gre
