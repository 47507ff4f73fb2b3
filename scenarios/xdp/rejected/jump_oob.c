// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
// REFUSED by the verifier: a jump 100 instructions forward, past the end of the program.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_jump_oob(struct xdp_md *ctx)
{
	asm volatile("goto +100");
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
