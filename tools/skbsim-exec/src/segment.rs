//! A written frame made fit for the far side's responder (src/stack.rs), which takes one
//! MTU-sized packet with its checksums filled in, where the device model hands the stack
//! what tun_get_user built from a virtio_net_hdr:
//!
//! - CHECKSUM_PARTIAL (VIRTIO_NET_HDR_F_NEEDS_CSUM): the checksum field holds the
//!   pseudo-header sum only; it is completed as net/core/dev.c: skb_checksum_help does
//!   (the sum from csum_start to the end, folded, 0 sent as CSUM_MANGLED_0).
//! - GSO TCP (SKB_GSO_TCPV4 / SKB_GSO_TCPV6: a virtio-net guest's TSO): cut into
//!   gso_size pieces as the software GSO path cuts it (net/core/gso.c: skb_gso_segment
//!   -> net/ipv4/af_inet.c: inet_gso_segment / net/ipv6/ip6_offload.c: ipv6_gso_segment
//!   -> net/ipv4/tcp_offload.c: tcp_gso_segment): each segment the headers with its
//!   length, IPv4 ID + i (not with SKB_GSO_TCP_FIXEDID), sequence number + i * gso_size,
//!   FIN and PSH on the last segment only, CWR on the first only, and its checksums
//!   complete (tcp_gso_segment leaves them CHECKSUM_PARTIAL; the device or
//!   skb_checksum_help completes them). The kernel's own TCP takes the whole GSO skb
//!   (tcp_v4_rcv handles a GRO-sized skb); smoltcp takes segments, which carry the same
//!   bytes.

use sim::wire::checksum::{fold, ones_complement_sum, pseudo_v4, pseudo_v6};

const IPPROTO_TCP: u8 = 6;
/// struct tcphdr: the flags byte and the checksum.
const TCP_FLAGS: usize = 13;
const TCP_CHECK: usize = 16;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;
/// include/net/checksum.h: a computed 0 is sent as all ones.
const CSUM_MANGLED_0: u16 = 0xffff;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// skb_checksum_help on `frame`: the checksum of `frame[start..]` (the field at `start +
/// offset` holding the pseudo-header sum) folded into that field. False when the field
/// is outside the frame (the kernel's skb_checksum_help fails with EINVAL).
pub fn checksum_help(frame: &mut [u8], start: usize, offset: usize) -> bool {
    let at = start + offset;
    if start >= frame.len() || at + 2 > frame.len() {
        return false;
    }
    let sum = !fold(ones_complement_sum(&frame[start..], 0));
    put16(frame, at, if sum == 0 { CSUM_MANGLED_0 } else { sum });
    true
}

/// The IP header of `frame` at `l3`: (header length, the TCP segment's end, IPv6), for a
/// TCP packet with no IPv6 extension header; None for anything else.
fn tcp_ip(frame: &[u8], l3: usize) -> Option<(usize, usize, bool)> {
    match frame.get(l3)? >> 4 {
        4 => {
            let ihl = usize::from(frame[l3] & 0x0f) * 4;
            let total = usize::from(be16(frame, l3 + 2)?);
            (*frame.get(l3 + 9)? == IPPROTO_TCP && ihl >= 20 && total >= ihl).then_some((
                ihl,
                l3 + total,
                false,
            ))
        }
        6 => {
            let payload = usize::from(be16(frame, l3 + 4)?);
            (*frame.get(l3 + 6)? == IPPROTO_TCP).then_some((40, l3 + 40 + payload, true))
        }
        _ => None,
    }
}

/// `frame` (an IPv4 or IPv6 TCP packet at `l3`, its payload more than `mss` bytes, as
/// a GSO skb carries it) cut into segments of `mss` payload bytes (the module docs);
/// None when it is not such a packet or `mss` is 0.
pub fn tcp_segments(frame: &[u8], l3: usize, mss: usize, fixed_id: bool) -> Option<Vec<Vec<u8>>> {
    let (iphl, end, v6) = tcp_ip(frame, l3)?;
    let l4 = l3 + iphl;
    let doff = usize::from(frame.get(l4 + 12)? >> 4) * 4;
    let hdr_end = l4 + doff;
    if mss == 0 || doff < 20 || end > frame.len() || hdr_end > end {
        return None;
    }
    let payload = &frame[hdr_end..end];
    let seq = u32::from_be_bytes(frame[l4 + 4..l4 + 8].try_into().ok()?);
    let id = be16(frame, l3 + 4)?;
    let flags = frame[l4 + TCP_FLAGS];
    let n = payload.len().div_ceil(mss);
    let mut out = Vec::with_capacity(n);
    for (i, chunk) in payload.chunks(mss).enumerate() {
        let mut seg = frame[..hdr_end].to_vec();
        seg.extend_from_slice(chunk);
        let tcp_len = doff + chunk.len();
        let mut f = flags;
        if i + 1 < n {
            f &= !(TCP_FIN | TCP_PSH);
        }
        if i > 0 {
            f &= !TCP_CWR;
        }
        seg[l4 + TCP_FLAGS] = f;
        let s = seq.wrapping_add((i * mss) as u32);
        seg[l4 + 4..l4 + 8].copy_from_slice(&s.to_be_bytes());
        let pseudo = if v6 {
            put16(&mut seg, l3 + 4, tcp_len as u16);
            let (src, dst) = (&seg[l3 + 8..l3 + 24], &seg[l3 + 24..l3 + 40]);
            pseudo_v6(
                src.try_into().ok()?,
                dst.try_into().ok()?,
                IPPROTO_TCP,
                tcp_len,
            )
        } else {
            put16(&mut seg, l3 + 2, (iphl + tcp_len) as u16);
            if !fixed_id {
                put16(&mut seg, l3 + 4, id.wrapping_add(i as u16));
            }
            put16(&mut seg, l3 + 10, 0);
            let check = !fold(ones_complement_sum(&seg[l3..l4], 0));
            put16(&mut seg, l3 + 10, check);
            let (src, dst) = (&seg[l3 + 12..l3 + 16], &seg[l3 + 16..l3 + 20]);
            pseudo_v4(
                src.try_into().ok()?,
                dst.try_into().ok()?,
                IPPROTO_TCP,
                tcp_len,
            )
        };
        put16(&mut seg, l4 + TCP_CHECK, 0);
        let check = !fold(ones_complement_sum(&seg[l4..], pseudo));
        put16(&mut seg, l4 + TCP_CHECK, check);
        out.push(seg);
    }
    Some(out)
}

#[cfg(test)]
#[path = "segment_tests.rs"]
mod tests;
