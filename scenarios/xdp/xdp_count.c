// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Per-verdict counters in an array map: IPv4 TCP passes, IPv4 UDP to port 9 (discard)
// is dropped, everything else is sent back (XDP_TX). verdicts[action] counts each.
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
	struct iphdr *ip;
	__u32 action = XDP_TX;
	__u64 *cnt;

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	ip = (void *)(eth + 1);
	if (eth->h_proto == bpf_htons(ETH_P_IP) && (void *)(ip + 1) <= data_end) {
		if (ip->protocol == IPPROTO_TCP) {
			action = XDP_PASS;
		} else if (ip->protocol == IPPROTO_UDP) {
			__u16 *dport = (void *)ip + ip->ihl * 4 + 2;

			if ((void *)(dport + 1) <= data_end && *dport == bpf_htons(9))
				action = XDP_DROP;
		}
	}
	cnt = bpf_map_lookup_elem(&verdicts, &action);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return action;
}

char _license[] SEC("license") = "GPL";
