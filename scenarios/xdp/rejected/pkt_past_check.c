// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
// REFUSED by the verifier: checks the Ethernet header against data_end, then reads the
// IPv4 protocol byte beyond it.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pkt_past_check(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);

	if (data + sizeof(struct ethhdr) > data_end)
		return XDP_PASS;
	return ip->protocol == IPPROTO_TCP ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
