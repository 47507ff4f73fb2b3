// SPDX-License-Identifier: GPL-2.0
// Built by ci/build-xdp.sh: clang -O2 -g -target bpf -c NAME.c -o NAME.o
// REFUSED by the verifier: returns r7, which nothing wrote (R7 !read_ok).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_uninit_reg(struct xdp_md *ctx)
{
	int v;

	asm volatile("%0 = r7" : "=r"(v));
	return v;
}

char _license[] SEC("license") = "GPL";
