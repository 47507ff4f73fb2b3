// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
// REFUSED by the verifier: reads the EtherType without checking data_end first.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("xdp")
int xdp_pkt_unchecked(struct xdp_md *ctx)
{
	struct ethhdr *eth = (void *)(long)ctx->data;

	return eth->h_proto == bpf_htons(ETH_P_IP) ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
