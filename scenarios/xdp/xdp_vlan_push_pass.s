; bpf_xdp_adjust_head(-4), move the two MAC addresses 4 bytes down and write an 802.1Q
; tag (PCP 0, VID 100) before the EtherType, then XDP_PASS: the stack gets the frame
; from the moved head (xdp_vlan_push.c does the same and sends it back with XDP_TX).
r6 = r1
r2 = -4
call bpf_xdp_adjust_head
if r0 != 0 goto abort
r2 = *(u32 *)(r6 + 0)
r3 = *(u32 *)(r6 + 4)
r4 = r2
r4 += 18
if r4 > r3 goto abort
r5 = *(u32 *)(r2 + 4)
*(u32 *)(r2 + 0) = r5
r5 = *(u32 *)(r2 + 8)
*(u32 *)(r2 + 4) = r5
r5 = *(u32 *)(r2 + 12)
*(u32 *)(r2 + 8) = r5
*(u8 *)(r2 + 12) = 0x81
*(u8 *)(r2 + 13) = 0
*(u8 *)(r2 + 14) = 0
*(u8 *)(r2 + 15) = 100
r0 = 2
exit
abort:
r0 = 0
exit
