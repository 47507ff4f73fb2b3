// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
// A BPF_PROG_TYPE_SOCKET_FILTER program for TUNSETSTEERINGEBPF (tun-read [queues]
// steering): skb->data is the Ethernet header of the frame the tap transmits.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// The queue is the TCP or UDP destination port (tun takes it modulo the queues); a
// frame that is neither returns 0x10001, which tun_ebpf_select_queue truncates to u16
// (1) before the modulo.
SEC("socket")
int sock_steer_l4(struct __sk_buff *skb)
{
	__u8 proto, vihl;
	__u16 dport;
	__u32 l4;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1) ||
		    bpf_skb_load_bytes(skb, ETH_HLEN + 9, &proto, 1))
			return 0;
		l4 = ETH_HLEN + (vihl & 0xf) * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &proto, 1))
			return 0;
		l4 = ETH_HLEN + 40;
	} else {
		return 0x10001;
	}
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return 0x10001;
	if (bpf_skb_load_bytes(skb, l4 + 2, &dport, 2))
		return 0;
	return bpf_ntohs(dport);
}

char _license[] SEC("license") = "GPL";
