; XDP_DROP for a frame longer than 1514 bytes (ETH_FRAME_LEN: what only a GRO-merged
; or GSO skb can be on a 1500-byte tap), XDP_PASS otherwise. Attached in generic mode
; (xdpgeneric) it runs after GRO and drops every merged skb; in native mode it runs on
; each written frame before GRO and passes them all.
r2 = *(u32 *)(r1 + 4)
r1 = *(u32 *)(r1 + 0)
r1 += 1515
if r1 > r2 goto pass
r0 = 1
exit
pass:
r0 = 2
exit
