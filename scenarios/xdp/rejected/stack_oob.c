// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
// REFUSED by the verifier: a store 8 bytes below the 512-byte stack (fp-520).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_stack_oob(struct xdp_md *ctx)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 520) = r1" ::: "r1");
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
