#!/usr/bin/env bash
# The kernel lab in CI: the real arms this machine's kernel cannot run (GRE-TEB GRO,
# vhost_net, an 802.1Q device), and every other guest-capable scenario, inside Debian's
# 6.1 and 6.12 cloud kernels under QEMU. Nothing is installed on the host: `skbsim lab`
# downloads the packages with apt-get download into its cache (one directory per kernel,
# kept between runs; a fresh machine fetches them in about 15 s). A missing package, a
# failed boot or a difference fails the run with the reason.
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
timed() {
  local start=$SECONDS
  "$@"
  echo "   ($(( SECONDS - start )) s: $*)"
}
echo "== lab: the kernels (cached after the first run)"
timed skbsim lab fetch --kernel 6.1
timed skbsim lab fetch --kernel 6.12
skbsim lab kernels | sed -n '1,/^available/p'
for k in 6.1 6.12; do
  echo "== lab: conform every scenario the guest kernel $k can run"
  timed skbsim lab conform --kernel "$k" scenarios
done
echo "== lab: every tun ioctl (docs/tun-ioctl.md#conformance) in each guest, against the profile of its release"
for k in 6.1 6.12; do
  timed skbsim lab ioctl --kernel "$k"
done
echo "== lab: a tun.c patch rebuilt into tun.ko for 6.1: what it changes for userspace, and the model's prediction"
# Cold: linux-source-6.1 (140 MB), the headers and one module build, about 30 s; the
# module is cached per (kernel, patch), so a warm run only boots the two guests.
timed skbsim lab diff --kernel 6.1 --patch scenarios/kernel-patches/tun-zero-vnet-pad-6.1.patch \
  --profile-b linux-6.18 scenarios/tun-read
echo "== lab: the seeds' before states as 6.1 module patches, against the old profiles"
# vhost_net without XDP batching (4.19): the model says 4.19 and 4.20 look the same to
# userspace; tun XDP_TX through the device xmit (4.16): the read-back as 4.16 vs 4.19.
# The patch takes the batching out, not 4.19's put-back of a descriptor whose sendmsg
# failed, which vhost-tx/mq-napi-detached's EBUSY (a detached IFF_NAPI queue) would show:
# that scenario is left out.
timed skbsim lab diff --kernel 6.1 --patch scenarios/kernel-patches/vhost-net-no-xdp-batching-6.1.patch \
  --profile-a linux-4.20 --profile-b linux-4.19 $(ls scenarios/vhost-tx/*.toml | grep -v '/mq-napi-detached')
# The patch sends the skb to tun_net_xmit itself (queue 0) and keeps 6.1's rx accounting:
# 4.16's path for a one-queue tap, not for a multiqueue one (4.16's generic_xdp_tx picked
# the queue with tun_select_queue and counted no rx), so the mq-* scenarios are left out.
timed skbsim lab diff --kernel 6.1 --patch scenarios/kernel-patches/tun-xdp-tx-generic-6.1.patch \
  --profile-a linux-4.19 --profile-b linux-4.16 $(ls scenarios/tap-write/*.toml | grep -v '/mq-')
# And 4.16's XDP_TX whole (no rx accounting either): a real arm for the linux-4.16 scenario.
timed skbsim lab conform --kernel 6.1 --patch scenarios/kernel-patches/tun-xdp-tx-4.16-6.1.patch \
  --old-profiles scenarios/tap-write/xdp-tx-linux-4.16.toml
timed skbsim lab conform --kernel 6.1 --patch scenarios/kernel-patches/vhost-net-4.19-6.1.patch \
  --old-profiles scenarios/vhost-tx/xdp-*-linux-4.19.toml
timed skbsim lab conform --kernel 6.1 --patch scenarios/kernel-patches/tun-xdp-act-no-rx-stats-6.1.patch \
  --old-profiles scenarios/vhost-tx/xdp-*-linux-4.20.toml
echo "== lab: the 2024 stable GSO window (e269d79c7d35) put back into the 6.1 tun.ko, predicted by linux-6.1.106"
timed skbsim lab diff --kernel 6.1 --patch scenarios/kernel-patches/tun-vnet-missing-check-virtio-6.1.patch \
  --profile-b linux-6.1.106 scenarios/tap-write/vnet-gso-tail.toml
timed skbsim lab conform --kernel 6.1 --patch scenarios/kernel-patches/tun-vnet-missing-check-virtio-6.1.patch \
  --old-profiles scenarios/tap-write/vnet-gso-tail-linux-6.1.106.toml
echo "== lab: two builds of one series: an ip6gretap's gro_cells before and after the stable hard_header_len fix (6.12.111, 6.1.190), predicted by linux-6.12.107 and linux-6.1.187"
timed skbsim lab diff --kernel 6.12 --kernel linux-image-6.12.107+deb12-cloud-amd64 \
  scenarios/tap-gro/cells-gre6-hop-limit.toml scenarios/tap-gro/cells-gre6-tc.toml
timed skbsim lab diff --kernel 6.1 --kernel linux-image-6.1.0-53-cloud-amd64 \
  scenarios/tap-gro/cells-gre6-hop-limit.toml scenarios/tap-gro/cells-gre6-tc.toml
# The linux-6.12.107 scenarios' real arm (they fail on 6.12.117, which merges).
timed skbsim lab conform --kernel linux-image-6.12.107+deb12-cloud-amd64 --old-profiles \
  scenarios/tap-gro/*-linux-6.12.107.toml
echo "== lab: 802.1Q device over a tap"
skbsim lab vlan
echo "== lab: gretap between two namespaces"
skbsim lab gre
