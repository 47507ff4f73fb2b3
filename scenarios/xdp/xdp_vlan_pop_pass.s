; Pop an outer 802.1Q tag: move the two MAC addresses 4 bytes up over the tag, then
; bpf_xdp_adjust_head(4), and XDP_PASS (an untagged frame passes unchanged). The stack
; gets the untagged frame from the moved head.
r6 = r1
r2 = *(u32 *)(r6 + 0)
r3 = *(u32 *)(r6 + 4)
r4 = r2
r4 += 18
if r4 > r3 goto pass
r5 = *(u8 *)(r2 + 12)
if r5 != 0x81 goto pass
r5 = *(u8 *)(r2 + 13)
if r5 != 0 goto pass
r5 = *(u32 *)(r2 + 8)
*(u32 *)(r2 + 12) = r5
r5 = *(u32 *)(r2 + 4)
*(u32 *)(r2 + 8) = r5
r5 = *(u32 *)(r2 + 0)
*(u32 *)(r2 + 4) = r5
r1 = r6
r2 = 4
call bpf_xdp_adjust_head
if r0 != 0 goto abort
pass:
r0 = 2
exit
abort:
r0 = 0
exit
