; A verdict by the queue a frame came in on (xdp_md->rx_queue_index, offset 16): queue 0
; passes it to the stack, queue 1 sends it back out (XDP_TX), any other queue drops it.
; rxq[queue] counts the frames of each queue below 4 (the trace's totals show the map).
.map rxq array 4 8 4
r6 = *(u32 *)(r1 + 16)
*(u32 *)(r10 - 4) = r6
r2 = r10
r2 += -4
r1 = map[rxq] ll
call bpf_map_lookup_elem
if r0 == 0 goto verdict
r1 = 1
lock *(u64 *)(r0 + 0) += r1
verdict:
r0 = 2
if r6 == 0 goto out
r0 = 3
if r6 == 1 goto out
r0 = 1
out:
exit
