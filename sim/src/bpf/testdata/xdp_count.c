// SPDX-License-Identifier: GPL-2.0
// Per-verdict counters in a BTF-defined array map. Frames shorter than an Ethernet
// header are dropped, ARP frames are sent back with their MAC addresses swapped
// (XDP_TX), everything else passes. Built by the elf.rs test with
//   clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c xdp_count.c
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, __u64);
} verdicts SEC(".maps");

SEC("xdp")
int xdp_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 action = XDP_PASS;
	__u64 *cnt;

	if ((void *)(eth + 1) > data_end) {
		action = XDP_DROP;
	} else if (eth->h_proto == __builtin_bswap16(ETH_P_ARP)) {
		unsigned char tmp[ETH_ALEN];

		__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
		__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
		__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
		action = XDP_TX;
	}

	cnt = bpf_map_lookup_elem(&verdicts, &action);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return action;
}

char _license[] SEC("license") = "GPL";
