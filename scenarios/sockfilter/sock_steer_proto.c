// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
// A BPF_PROG_TYPE_SOCKET_FILTER program for TUNSETSTEERINGEBPF (tun-read [queues]
// steering): skb->data is the Ethernet header of the frame the tap transmits.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// IPv4 TCP to queue 0, IPv4 UDP to queue 1, IPv6 to queue 2, anything else to queue 0.
SEC("socket")
int sock_steer_proto(struct __sk_buff *skb)
{
	__u8 proto;

	if (skb->protocol == bpf_htons(ETH_P_IPV6))
		return 2;
	if (skb->protocol != bpf_htons(ETH_P_IP) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN + 9, &proto, 1))
		return 0;
	return proto == IPPROTO_UDP ? 1 : 0;
}

char _license[] SEC("license") = "GPL";
