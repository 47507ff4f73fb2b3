// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Drop IPv4 TCP segments to port 80; pass everything else.
SEC("xdp")
int xdp_drop_tcp80(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct tcphdr *tcp;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	tcp = (void *)ip + ip->ihl * 4;
	if ((void *)(tcp + 1) > data_end)
		return XDP_PASS;
	return tcp->dest == bpf_htons(80) ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
