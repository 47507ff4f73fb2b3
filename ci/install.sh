#!/usr/bin/env bash
# Everything skbsim's CI and tests need on a fresh machine of this kind (Debian with the
# Rust toolchain from rustup). Idempotent: a second run installs nothing.
set -euo pipefail

need_apt=()
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
# clang 14 and libbpf's headers build the XDP programs under scenarios/xdp (ci/build-xdp.sh)
# and the eBPF loader's tests.
[ -x /usr/lib/llvm-14/bin/clang ] || need_apt+=(clang-14)
[ -f /usr/include/bpf/bpf_helpers.h ] || need_apt+=(libbpf-dev)
# tshark reads back the pcapng/pcap the writer emits (sim/src/pcap/tests_write.rs);
# tcpdump (libpcap) is the reference for how captures are read.
command -v tshark >/dev/null 2>&1 || need_apt+=(tshark)
command -v tcpdump >/dev/null 2>&1 || need_apt+=(tcpdump)
# gcc builds the C clients `skbsim exec` is tested with (tools/skbsim-exec/tests/c/); the
# tests run them as nobody through setpriv and on the real kernel through unshare
# (util-linux).
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
# Real clients under `skbsim exec` (tools/skbsim/tests/exec_clients.rs): socat's TUN
# address, and wireguard-go (configured over its UAPI socket with socat).
command -v socat >/dev/null 2>&1 || need_apt+=(socat)
# QEMU under `skbsim exec` (tools/skbsim/tests/exec_qemu.rs) is the lab's: Debian 12's
# qemu-system-x86, busybox and the 6.12 cloud kernel, fetched by the test itself
# (skbsim_lab::Lab::open, as `skbsim lab fetch --kernel 6.12`) into the lab cache with
# `apt-get download` (nothing installed); `timeout` (coreutils) bounds each boot.
command -v wireguard-go >/dev/null 2>&1 || need_apt+=(wireguard-go)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    # apt's output goes to a log, printed only when it fails, so it stays out of the
    # test log.
    log=/tmp/skbsim-apt.log
    echo "ci/install.sh: installing ${need_apt[*]} (log: $log)"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      echo "ci/install.sh: apt-get failed installing ${need_apt[*]}" >&2
      exit 2
    fi
  else
    echo "ci/install.sh: missing ${need_apt[*]} and not root to install them" >&2
    exit 2
  fi
fi

for component in rustfmt clippy; do
  # grep without -q reads all of rustup's output (no SIGPIPE under pipefail).
  if ! rustup component list --installed 2>/dev/null | grep "^${component}" >/dev/null; then
    rustup component add "$component"
  fi
done

# cargo-insta for ci/insta-check.sh (the README's reviewer workflow), at the version of the
# insta crate in Cargo.lock so the snapshot format it reads and writes is the tests' own.
insta_version=$(awk '$0 == "name = \"insta\"" { getline; gsub(/"/, "", $3); print $3 }' \
  "$(dirname "$0")/../Cargo.lock")
if [ -z "$insta_version" ]; then
  echo "ci/install.sh: no insta package in Cargo.lock" >&2
  exit 2
fi
if [ "$(cargo insta --version 2>/dev/null)" != "cargo-insta $insta_version" ]; then
  cargo install --locked --quiet "cargo-insta@$insta_version"
fi
