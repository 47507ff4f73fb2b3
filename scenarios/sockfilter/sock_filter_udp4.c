// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
// A BPF_PROG_TYPE_SOCKET_FILTER program for TUNSETFILTEREBPF (tun-read [queues]
// filter): drivers/net/tun.c: tun_net_xmit -> run_ebpf_filter runs it on the skb the tap
// transmits (skb->data at the Ethernet header) and takes its return as the length to
// keep: 0 drops (SKB_DROP_REASON_TAP_FILTER, tx_dropped), at least skb->len keeps the
// frame whole (pskb_trim only shortens).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// IPv4/UDP dropped; IPv6 kept with 0xffffffff (more than any skb->len); anything else
// kept with exactly skb->len.
SEC("socket")
int sock_filter_udp4(struct __sk_buff *skb)
{
	__u8 proto;

	if (skb->protocol == bpf_htons(ETH_P_IPV6))
		return -1;
	if (skb->protocol == bpf_htons(ETH_P_IP) &&
	    !bpf_skb_load_bytes(skb, ETH_HLEN + 9, &proto, 1) &&
	    proto == IPPROTO_UDP)
		return 0;
	return skb->len;
}

char _license[] SEC("license") = "GPL";
