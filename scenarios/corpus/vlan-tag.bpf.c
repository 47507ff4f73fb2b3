// SPDX-License-Identifier: GPL-2.0
// make-corpus.sh's VLAN tagger: tc (clsact) programs that make the kernel tag and untag
// frames with bpf_skb_vlan_push/pop (net/core/filter.c: bpf_skb_vlan_push ->
// net/core/skbuff.c: skb_vlan_push). This host has no 8021q module and no bridge VLAN
// filtering, so these helpers are how its kernel puts 802.1Q and 802.1ad tags on frames.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Egress: one 802.1Q tag, VID 100.
SEC("tc/push1q")
int push1q(struct __sk_buff *skb)
{
	bpf_skb_vlan_push(skb, bpf_htons(0x8100), 100);
	return TC_ACT_OK;
}

// Egress: QinQ, C-tag 802.1Q VID 100 inside an S-tag 802.1ad VID 200 (the second push
// moves the first tag from the skb's vlan_tci into the frame).
SEC("tc/pushqinq")
int pushqinq(struct __sk_buff *skb)
{
	bpf_skb_vlan_push(skb, bpf_htons(0x8100), 100);
	bpf_skb_vlan_push(skb, bpf_htons(0x88a8), 200);
	return TC_ACT_OK;
}

// Ingress: strip up to two tags so the stack sees the untagged frame.
SEC("tc/pop")
int pop(struct __sk_buff *skb)
{
	bpf_skb_vlan_pop(skb);
	bpf_skb_vlan_pop(skb);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
