// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// An action number no kernel defines: drivers call bpf_warn_invalid_xdp_action and
// treat it as XDP_ABORTED (tun_xdp_act).
SEC("xdp")
int xdp_unknown(struct xdp_md *ctx)
{
	return 7;
}

char _license[] SEC("license") = "GPL";
