; Reserve 4 bytes of XDP metadata: XDP_PASS when the buffer supports metadata,
; XDP_DROP when bpf_xdp_adjust_meta fails (-ENOTSUPP: the driver marked it invalid).
r2 = -4
call bpf_xdp_adjust_meta
if r0 != 0 goto nometa
r0 = 2
exit
nometa:
r0 = 1
exit
