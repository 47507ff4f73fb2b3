// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// A dual-stack L4 classifier, the same for IPv4 and IPv6:
// - a TCP SYN without ACK (a connection attempt): XDP_DROP;
// - UDP: MACs swapped, XDP_TX (reflected back to the writer);
// - everything else: XDP_PASS.
// IPv6 extension headers are walked as a stack would: hop-by-hop (0), routing (43) and
// destination options (60), up to MAX_EXT of them, each (hdrlen + 1) * 8 bytes. A
// fragment header (44), a fourth extension header or a truncated one ends the walk:
// the frame is passed, since the L4 header is out of reach.
#define MAX_EXT 3
#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_DEST 60

struct ext_hdr {
	__u8 nexthdr;
	__u8 hdrlen;
};

static __always_inline int l4_verdict(struct ethhdr *eth, void *l4, __u8 proto,
				      void *data_end)
{
	unsigned char tmp[ETH_ALEN];

	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > data_end)
			return XDP_PASS;
		return tcp->syn && !tcp->ack ? XDP_DROP : XDP_PASS;
	}
	if (proto == IPPROTO_UDP) {
		if (l4 + sizeof(struct udphdr) > data_end)
			return XDP_PASS;
		__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
		__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
		__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
		return XDP_TX;
	}
	return XDP_PASS;
}

SEC("xdp")
int xdp_l4_dual(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || ip->ihl < 5)
			return XDP_PASS;
		// A later fragment has no L4 header.
		if (ip->frag_off & bpf_htons(0x1fff))
			return XDP_PASS;
		return l4_verdict(eth, (void *)ip + ip->ihl * 4, ip->protocol, data_end);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		void *p;
		__u8 next;
		int i;

		if ((void *)(ip6 + 1) > data_end)
			return XDP_PASS;
		next = ip6->nexthdr;
		p = ip6 + 1;
#pragma unroll
		for (i = 0; i < MAX_EXT; i++) {
			struct ext_hdr *e = p;

			if (next != NEXTHDR_HOP && next != NEXTHDR_ROUTING && next != NEXTHDR_DEST)
				break;
			if ((void *)(e + 1) > data_end)
				return XDP_PASS;
			next = e->nexthdr;
			p += (e->hdrlen + 1) * 8;
		}
		if (next == NEXTHDR_HOP || next == NEXTHDR_ROUTING || next == NEXTHDR_DEST)
			return XDP_PASS;
		return l4_verdict(eth, p, next, data_end);
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
