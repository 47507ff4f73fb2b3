// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Push an 802.1Q tag (PCP 0, VID 100) in front of the EtherType with
// bpf_xdp_adjust_head(-4), then send the frame back (XDP_TX).
SEC("xdp")
int xdp_vlan_push(struct xdp_md *ctx)
{
	void *data, *data_end;
	unsigned char *p;

	if (bpf_xdp_adjust_head(ctx, -4))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	p = data;
	if ((void *)(p + ETH_HLEN + 4) > data_end)
		return XDP_ABORTED;
	__builtin_memmove(p, p + 4, 2 * ETH_ALEN);
	p[12] = 0x81;
	p[13] = 0x00;
	p[14] = 0x00;
	p[15] = 100;
	return XDP_TX;
}

char _license[] SEC("license") = "GPL";
