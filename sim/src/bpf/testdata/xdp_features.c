// SPDX-License-Identifier: GPL-2.0
// Exercises the loader paths beyond a single map: a devmap redirect with a default
// action, a read-only global in .rodata, a counter in .bss, and a noinline
// subprogram that the compiler places in .text (a bpf-to-bpf call).
// Frames whose first byte is 0xff lose a 4-byte tag (bpf_xdp_adjust_head) and pass;
// others go to tx_ports[port_base + (first byte & 1)], XDP_DROP when that slot is empty.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} tx_ports SEC(".maps");

volatile const __u32 port_base = 3;
__u64 seen = 0;

static __attribute__((noinline)) int pop_tag(struct xdp_md *ctx, int len)
{
	return bpf_xdp_adjust_head(ctx, len);
}

SEC("xdp")
int xdp_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 first;

	if (data + 1 > data_end)
		return XDP_ABORTED;
	first = *(__u8 *)data;
	__sync_fetch_and_add(&seen, 1);
	if (first == 0xff)
		return pop_tag(ctx, 4) ? XDP_ABORTED : XDP_PASS;
	return bpf_redirect_map(&tx_ports, port_base + (first & 1), XDP_DROP);
}

char _license[] SEC("license") = "GPL";
