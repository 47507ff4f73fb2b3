//! What a written vnet header does to the skb: virtio_net_hdr_to_skb
//! (include/linux/virtio_net.h), reached from tun_get_user and tun_xdp_one through
//! drivers/net/tun_vnet.h: tun_vnet_hdr_to_skb. Which checks exist depends on the kernel
//! (`TunWriteRules::vnet_to_skb`).

use crate::profile::{TunWriteRules, VnetToSkbRule};
use crate::skb::{gso, IpSummed, SkBuff, ETH_HLEN};
use crate::wire::virtio_net_hdr::{
    VirtioNetHdrRepr, VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_ECN, VIRTIO_NET_HDR_GSO_NONE,
    VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_TCPV6, VIRTIO_NET_HDR_GSO_UDP,
    VIRTIO_NET_HDR_GSO_UDP_L4,
};

/// sizeof(struct tcphdr) and sizeof(struct udphdr): the `thlen` of a GSO type.
const TCP_HLEN: usize = 20;
const UDP_HLEN: usize = 8;
/// sizeof(struct iphdr) and sizeof(struct ipv6hdr): the smallest transport offset
/// (`nh_min_len`) of a NEEDS_CSUM header.
const IPV4_HLEN: usize = 20;
const IPV6_HLEN: usize = 40;
/// offsetof(struct tcphdr, check) and offsetof(struct udphdr, check).
const TCP_CHECK_OFFSET: u16 = 16;
const UDP_CHECK_OFFSET: u16 = 6;
/// GSO_BY_FRAGS (include/linux/skbuff.h): a gso_size the kernel reserves for SCTP.
const GSO_BY_FRAGS: u16 = 0xffff;
/// TCP_MIN_GSO_SIZE (include/net/tcp.h): TCP_MIN_SND_MSS 48 - MAX_TCP_OPTION_SPACE 40.
const TCP_MIN_GSO_SIZE: u16 = 8;
/// UDP_MAX_SEGMENTS (include/linux/udp.h, 128 since v6.11).
const UDP_MAX_SEGMENTS: usize = 128;

/// virtio_net_hdr_to_skb on `skb`, whose data starts at the frame (the MAC header for a
/// tap). Returns why the header was refused (the caller counts rx_frame_errors).
pub(crate) fn vnet_hdr_to_skb(
    skb: &mut SkBuff,
    h: &VirtioNetHdrRepr,
    rules: &TunWriteRules,
    is_tap: bool,
) -> Result<(), &'static str> {
    let base = h.gso_type & !VIRTIO_NET_HDR_GSO_ECN;
    let (gso_bits, thlen) = match base {
        VIRTIO_NET_HDR_GSO_NONE => (0, 0),
        VIRTIO_NET_HDR_GSO_TCPV4 => (gso::TCPV4, TCP_HLEN),
        VIRTIO_NET_HDR_GSO_TCPV6 => (gso::TCPV6, TCP_HLEN),
        VIRTIO_NET_HDR_GSO_UDP => (gso::UDP, UDP_HLEN),
        VIRTIO_NET_HDR_GSO_UDP_L4 => (gso::UDP_L4, UDP_HLEN),
        _ => return Err("vnet gso_type unknown"),
    };
    if gso_bits != 0 && h.gso_size == 0 {
        return Err("vnet gso_size 0");
    }
    let needs_csum = h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0;
    let start = usize::from(h.csum_start);
    let off = usize::from(h.csum_offset);
    let len = skb.len();
    // p_off: where the GSO payload begins (transport offset + the L4 header).
    let p_off = match rules.vnet_to_skb {
        VnetToSkbRule::PartialCsumOnly => {
            // skb_partial_csum_set alone: the checksum field inside the packet.
            if needs_csum {
                if start + off + 2 > len {
                    return Err("vnet csum_start/csum_offset beyond the packet");
                }
                skb.partial_csum_set(start, h.csum_offset);
            }
            None
        }
        VnetToSkbRule::TransportHeader => {
            transport_header_p_off(skb, h, rules, is_tap, base, thlen, gso_bits)?
        }
    };
    if gso_bits == 0 {
        return Ok(());
    }
    let mut nh_off = p_off;
    let mut gso_size = h.gso_size;
    if rules.vnet_to_skb == VnetToSkbRule::TransportHeader {
        match base {
            // "UFO may not include transport header in gso_size" (cf9acc90c80e).
            VIRTIO_NET_HDR_GSO_UDP => nh_off = nh_off.map(|p| p - thlen),
            VIRTIO_NET_HDR_GSO_UDP_L4 => {
                if !needs_csum || h.csum_offset != UDP_CHECK_OFFSET {
                    return Err("vnet UDP_L4 without the UDP checksum");
                }
                let payload = len - p_off.unwrap_or(0);
                if payload > usize::from(h.gso_size) * UDP_MAX_SEGMENTS {
                    return Err("vnet UDP_L4 beyond UDP_MAX_SEGMENTS");
                }
                if h.gso_type & VIRTIO_NET_HDR_GSO_ECN != 0 {
                    return Err("vnet UDP_L4 with ECN");
                }
            }
            _ => {
                if rules.vnet_tcp_csum_offset && needs_csum && h.csum_offset != TCP_CHECK_OFFSET {
                    return Err("vnet TCP GSO with a csum_offset other than 16");
                }
                // gso_size = max(gso_size, TCP_MIN_GSO_SIZE) (23d05d563b7e,
                // `TunWriteRules::vnet_tcp_min_gso_size`).
                if rules.vnet_tcp_min_gso_size {
                    gso_size = gso_size.max(TCP_MIN_GSO_SIZE);
                }
            }
        }
        if gso_size == GSO_BY_FRAGS {
            return Err("vnet gso_size GSO_BY_FRAGS");
        }
    }
    let ecn = if h.gso_type & VIRTIO_NET_HDR_GSO_ECN != 0 {
        gso::TCP_ECN
    } else {
        0
    };
    // "Too small packets are not really GSO ones" (6dd912f82680, 7c6d2ecbda83, v5.7):
    // GSO only when the payload after p_off exceeds gso_size. Before, every GSO header
    // made the skb GSO.
    let is_gso = match nh_off {
        Some(p) => len - p > usize::from(gso_size),
        None => true,
    };
    if is_gso {
        skb.gso_type = gso_bits | ecn | gso::DODGY;
        skb.gso_size = gso_size;
        skb.gso_segs = 0;
    }
    if skb.ip_summed != IpSummed::Partial {
        skb.ip_summed = IpSummed::None;
    }
    Ok(())
}

/// virtio_net_hdr_to_skb's transport-header checks (`VnetToSkbRule::TransportHeader`):
/// the NEEDS_CSUM branch (skb_partial_csum_set after the pulls), else for a GSO header
/// the flow-dissector branch or the assumed smallest headers. Returns p_off, where the
/// GSO payload begins (None for a header with neither NEEDS_CSUM nor GSO).
fn transport_header_p_off(
    skb: &mut SkBuff,
    h: &VirtioNetHdrRepr,
    rules: &TunWriteRules,
    is_tap: bool,
    base: u8,
    thlen: usize,
    gso_bits: u32,
) -> Result<Option<usize>, &'static str> {
    let needs_csum = h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0;
    let start = usize::from(h.csum_start);
    let off = usize::from(h.csum_offset);
    let len = skb.len();
    let mut nh_min_len = if base == VIRTIO_NET_HDR_GSO_TCPV6 {
        IPV6_HLEN
    } else {
        IPV4_HLEN
    };
    let p_off = if needs_csum {
        let needed = start + thlen.max(off + 2);
        if rules.vnet_gso_tail_check && h.gso_size != 0 {
            gso_tail_check(len, usize::from(h.gso_size), needed)?;
        }
        // pskb_may_pull(start + max(thlen, off + 2)): the L4 header of a GSO
        // packet and the checksum field must both be there (0f6925b3e8da).
        if needed > len {
            return Err("vnet csum_start + transport header beyond the packet");
        }
        // The transport header cannot start inside the smallest IP header
        // (49d14b54a527, `TunWriteRules::vnet_csum_start_min`); before, the GSO
        // payload offset took the larger of the two (9181d6f8a2bb).
        if rules.vnet_csum_start_min && start < nh_min_len {
            return Err("vnet csum_start before the end of an IP header");
        }
        skb.partial_csum_set(start, h.csum_offset);
        nh_min_len = if rules.vnet_csum_start_min || !rules.vnet_nh_min_len {
            // Before 9181d6f8a2bb: skb_transport_offset(skb) + thlen.
            start
        } else {
            nh_min_len.max(start)
        };
        Some(nh_min_len + thlen)
    } else if gso_bits != 0 && rules.vnet_gso_dissect && is_tap {
        // The flow-dissector branch (`TunWriteRules::vnet_gso_dissect`).
        Some(dissected_p_off(skb, base, thlen)?)
    } else if gso_bits != 0 {
        // A GSO header without NEEDS_CSUM: tun's skb has no network header yet,
        // so the flow dissector is not asked; the payload is assumed to start
        // after the smallest IP and L4 headers (pskb_may_pull(p_off)), or before
        // 9181d6f8a2bb after thlen bytes (`TunWriteRules::vnet_nh_min_len`).
        let p = if rules.vnet_nh_min_len {
            nh_min_len + thlen
        } else {
            thlen
        };
        if p > len {
            return Err("vnet GSO packet shorter than its headers");
        }
        Some(p)
    } else {
        None
    };
    Ok(p_off)
}

/// e269d79c7d35 "net: missing check virtio" (`TunWriteRules::vnet_gso_tail_check`), in
/// virtio_net_hdr_to_skb's NEEDS_CSUM branch whenever hdr->gso_size is set, before the
/// pull of `needed` bytes:
///
/// ```c
/// ret = div64_u64_rem(skb->len, gso_size, &remainder);
/// if (!(ret && (hdr->gso_size > needed) &&
///             ((remainder > needed) || (remainder == 0))))
///         return -EINVAL;
/// ```
///
/// `len` is the whole written packet (the tap's Ethernet header included: tun_get_user
/// calls it before eth_type_trans). A packet shorter than one gso_size, or whose length
/// leaves a remainder of 1..=needed bytes, is refused, whatever its payload.
fn gso_tail_check(len: usize, gso_size: usize, needed: usize) -> Result<(), &'static str> {
    let (segments, remainder) = (len / gso_size, len % gso_size);
    if segments != 0 && gso_size > needed && (remainder > needed || remainder == 0) {
        Ok(())
    } else {
        Err("vnet GSO length against gso_size (e269d79c7d35)")
    }
}

/// virtio_net_hdr_to_skb's flow-dissector branch for a GSO header without NEEDS_CSUM:
/// the frame's EtherType (dev_parse_header_protocol: eth_header_parse_protocol, the
/// outer h_proto, tags not walked) must be the gso_type's family
/// (virtio_net_hdr_match_proto); skb_flow_dissect_flow_keys_basic finds the transport
/// offset and protocol, which must be the gso_type's (`keys.basic.ip_proto != ip_proto`:
/// -EINVAL); p_off = thoff + thlen must be inside the packet (pskb_may_pull).
fn dissected_p_off(skb: &SkBuff, base: u8, thlen: usize) -> Result<usize, &'static str> {
    use crate::consts::{IPPROTO_TCP, IPPROTO_UDP};
    use crate::skb::{ETH_P_IP, ETH_P_IPV6};
    let frame = skb.bytes();
    let lay = crate::pipeline::frame_meta::layout(&frame).ok_or("vnet GSO frame too short")?;
    let proto_ok = match base {
        VIRTIO_NET_HDR_GSO_TCPV4 => lay.l3_proto == ETH_P_IP,
        VIRTIO_NET_HDR_GSO_TCPV6 => lay.l3_proto == ETH_P_IPV6,
        _ => matches!(lay.l3_proto, ETH_P_IP | ETH_P_IPV6),
    };
    // Tags are not walked by dev_parse_header_protocol: a tagged frame's EtherType is
    // the TPID, which matches no gso_type.
    if !proto_ok || lay.l3_offset != ETH_HLEN {
        return Err("vnet GSO type does not match the frame's protocol");
    }
    let ip_proto = match base {
        VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_TCPV6 => IPPROTO_TCP,
        _ => IPPROTO_UDP,
    };
    if lay.l4_proto != Some(ip_proto) {
        return Err("vnet GSO type does not match the packet's transport protocol");
    }
    let p_off = lay.l4_offset + thlen;
    if p_off > frame.len() {
        return Err("vnet GSO packet shorter than its headers");
    }
    Ok(p_off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{
        LINUX_4_19, LINUX_6_1, LINUX_6_12, LINUX_6_18, LINUX_6_1_106, LINUX_6_1_99,
    };
    use crate::wire::virtio_net_hdr::VIRTIO_NET_HDR_F_NEEDS_CSUM;

    /// An skb of `len` bytes at the frame start, as tun_get_user has it.
    fn skb(len: usize) -> SkBuff {
        SkBuff::from_frame(&vec![0u8; len], 64, len)
    }

    fn tcp4(gso_size: u16, csum_start: u16, csum_offset: u16) -> VirtioNetHdrRepr {
        VirtioNetHdrRepr {
            flags: VIRTIO_NET_HDR_F_NEEDS_CSUM,
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            gso_size,
            csum_start,
            csum_offset,
            ..VirtioNetHdrRepr::default()
        }
    }

    #[test]
    fn gso_only_when_the_payload_after_the_tcp_header_exceeds_gso_size() {
        // The issue's case: gso_size 1000, TCP header at 34, payloads 999, 1000, 1001.
        // p_off = 34 + 20 = 54; hdr_len raised for the checksum would only be 52.
        for (payload, gso) in [(999, false), (1000, false), (1001, true)] {
            let mut s = skb(54 + payload);
            vnet_hdr_to_skb(&mut s, &tcp4(1000, 34, 16), &LINUX_6_18.tun_write, false).unwrap();
            assert_eq!(s.is_gso(), gso, "payload {payload}");
            if gso {
                assert_eq!(s.gso_type, gso::TCPV4 | gso::DODGY);
                assert_eq!((s.gso_size, s.gso_segs), (1000, 0));
            }
            assert_eq!(s.ip_summed, IpSummed::Partial);
        }
        // Before v5.7 every GSO header made the skb GSO.
        let mut s = skb(54 + 999);
        vnet_hdr_to_skb(&mut s, &tcp4(1000, 34, 16), &LINUX_4_19.tun_write, false).unwrap();
        assert!(s.is_gso());
    }

    #[test]
    fn a_gso_checksum_needs_the_whole_tcp_header_inside_the_packet() {
        // csum_start 82, csum_offset 16 in a 100-byte frame: 82 + max(20, 18) = 102.
        let mut s = skb(100);
        let e = vnet_hdr_to_skb(&mut s, &tcp4(20, 82, 16), &LINUX_6_18.tun_write, false);
        assert!(e.is_err());
        // Without GSO (thlen 0) the checksum field alone must fit: 82 + 18 = 100.
        let mut h = tcp4(0, 82, 16);
        h.gso_type = VIRTIO_NET_HDR_GSO_NONE;
        let mut s = skb(100);
        vnet_hdr_to_skb(&mut s, &h, &LINUX_6_18.tun_write, false).unwrap();
        assert_eq!(s.checksum_start_offset(), 82);
        // 4.19 checked only the checksum field.
        let mut s = skb(100);
        vnet_hdr_to_skb(&mut s, &tcp4(20, 82, 16), &LINUX_4_19.tun_write, false).unwrap();
        assert!(s.is_gso());
    }

    #[test]
    fn other_6_18_checks_refuse_what_4_19_accepted() {
        let rules = &LINUX_6_18.tun_write;
        // csum_start inside the smallest IPv4 header.
        let mut h = tcp4(0, 10, 16);
        h.gso_type = VIRTIO_NET_HDR_GSO_NONE;
        assert!(vnet_hdr_to_skb(&mut skb(154), &h, rules, false).is_err());
        assert!(vnet_hdr_to_skb(&mut skb(154), &h, &LINUX_6_1.tun_write, false).is_ok());
        assert!(vnet_hdr_to_skb(&mut skb(154), &h, &LINUX_4_19.tun_write, false).is_ok());
        // TCP GSO with a checksum elsewhere than tcphdr.check.
        assert!(vnet_hdr_to_skb(&mut skb(154), &tcp4(50, 34, 6), rules, false).is_err());
        // GSO_BY_FRAGS.
        assert!(vnet_hdr_to_skb(&mut skb(154), &tcp4(GSO_BY_FRAGS, 34, 16), rules, false).is_err());
        // GSO without NEEDS_CSUM: p_off = 20 + 20 (no flow dissection on tun's skb).
        let h = VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            gso_size: 113,
            ..VirtioNetHdrRepr::default()
        };
        let mut s = skb(154);
        vnet_hdr_to_skb(&mut s, &h, rules, false).unwrap();
        assert!(s.is_gso(), "154 - 40 = 114 > 113");
        let mut s = skb(154);
        vnet_hdr_to_skb(
            &mut s,
            &VirtioNetHdrRepr { gso_size: 114, ..h },
            rules,
            false,
        )
        .unwrap();
        assert!(!s.is_gso());
        assert_eq!(s.ip_summed, IpSummed::None);
    }

    /// A 154-byte Ethernet/IPv4/TCP frame (IHL 5, data offset 5): headers end at 54.
    fn tcp4_frame() -> Vec<u8> {
        let mut f = vec![0u8; 154];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[23] = 6; // IPPROTO_TCP
        f[34 + 12] = 5 << 4;
        f
    }

    #[test]
    fn a_tap_gso_header_without_needs_csum_is_dissected_on_6_18() {
        // tap-write/vnet-gso-threshold write 3 as the host kernel read it back: p_off =
        // thoff 34 + 20, so 100 payload bytes are not more than gso_size 110.
        let h = VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            gso_size: 110,
            ..VirtioNetHdrRepr::default()
        };
        let rules = &LINUX_6_18.tun_write;
        let f = tcp4_frame();
        let mut s = SkBuff::from_frame(&f, 64, f.len());
        vnet_hdr_to_skb(&mut s, &h, rules, true).unwrap();
        assert!(!s.is_gso(), "154 - 54 = 100 is not > 110");
        let mut s = SkBuff::from_frame(&f, 64, f.len());
        vnet_hdr_to_skb(&mut s, &VirtioNetHdrRepr { gso_size: 99, ..h }, rules, true).unwrap();
        assert!(s.is_gso(), "100 > 99");
        // The 6.12 profile keeps p_off = 20 + 20: 114 > 110.
        let mut s = SkBuff::from_frame(&f, 64, f.len());
        vnet_hdr_to_skb(&mut s, &h, &LINUX_6_12.tun_write, true).unwrap();
        assert!(s.is_gso());
        // TCPV6 on an IPv4 frame, and a UDP packet under TCPV4: virtio_net_hdr_match_proto
        // and the ip_proto check refuse them.
        let h6 = VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV6,
            ..h
        };
        let mut s = SkBuff::from_frame(&f, 64, f.len());
        assert!(vnet_hdr_to_skb(&mut s, &h6, rules, true).is_err());
        let mut u = f.clone();
        u[23] = 17;
        let mut s = SkBuff::from_frame(&u, 64, u.len());
        assert!(vnet_hdr_to_skb(&mut s, &h, rules, true).is_err());
    }
    #[test]
    fn the_2024_window_refuses_gso_writes_by_length_modulo_gso_size() {
        // e269d79c7d35's arithmetic, worked by hand for a tap frame: Ethernet 14 + IPv4 20
        // + TCP 20, csum_start 34, csum_offset 16: needed = 34 + max(20, 16 + 2) = 54.
        let window = &LINUX_6_1_106.tun_write;
        let cases = [
            // (frame length, gso_size, accepted in the window)
            (154, 100, false), // 154 = 1 * 100 + 54: remainder 54 is not > needed 54
            (155, 100, true),  // remainder 55 > 54
            (200, 100, true),  // remainder 0
            (99, 100, false),  // shorter than one gso_size: 99 / 100 = 0
            (216, 54, false),  // 216 = 4 * 54: remainder 0, but gso_size 54 is not > 54
            (220, 55, true),   // 220 = 4 * 55, gso_size 55 > 54
        ];
        for (len, gso_size, accepted) in cases {
            let h = tcp4(gso_size, 34, 16);
            let r = vnet_hdr_to_skb(&mut skb(len), &h, window, true);
            assert_eq!(r.is_ok(), accepted, "window: len {len} gso_size {gso_size}");
            // Before the window (6.1.99) and after it (today's 6.1, 6.18) all are accepted.
            for rules in [
                &LINUX_6_1_99.tun_write,
                &LINUX_6_1.tun_write,
                &LINUX_6_18.tun_write,
            ] {
                assert!(
                    vnet_hdr_to_skb(&mut skb(len), &h, rules, true).is_ok(),
                    "len {len}"
                );
            }
        }
        // Only NEEDS_CSUM headers are checked: the same 154 bytes without it pass.
        let plain = VirtioNetHdrRepr {
            flags: 0,
            csum_start: 0,
            csum_offset: 0,
            ..tcp4(100, 0, 0)
        };
        assert!(vnet_hdr_to_skb(&mut skb(154), &plain, window, false).is_ok());
        // A non-GSO header with a gso_size is checked too (`if (hdr->gso_size)`).
        let no_gso = VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_NONE,
            ..tcp4(100, 34, 16)
        };
        assert!(vnet_hdr_to_skb(&mut skb(99), &no_gso, window, true).is_err());
        assert!(vnet_hdr_to_skb(&mut skb(99), &no_gso, &LINUX_6_1.tun_write, true).is_ok());
    }

    #[test]
    fn tcp_gso_csum_offset_16_is_required_only_after_the_window() {
        // 89add40066f9 / 6513eb3d3191: TCP GSO with NEEDS_CSUM and csum_offset 6 (UDP's).
        let h = tcp4(50, 34, 6);
        assert!(vnet_hdr_to_skb(&mut skb(154), &h, &LINUX_6_1.tun_write, true).is_err());
        assert!(vnet_hdr_to_skb(&mut skb(154), &h, &LINUX_6_1_99.tun_write, true).is_ok());
    }

    #[test]
    fn a_tcp_gso_size_below_tcp_min_gso_size_is_raised_to_it() {
        // 23d05d563b7e on 6.12 (Debian's 6.12.118 source): gso_size 4 becomes 8. 54
        // header bytes + 9 payload: 9 > 8, GSO with gso_size 8; 8 payload bytes: 8 > 8 is
        // false, not GSO (with 4 it would be).
        let rules = &LINUX_6_12.tun_write;
        let mut s = skb(54 + 9);
        vnet_hdr_to_skb(&mut s, &tcp4(4, 34, 16), rules, true).unwrap();
        assert_eq!((s.is_gso(), s.gso_size), (true, 8));
        let mut s = skb(54 + 8);
        vnet_hdr_to_skb(&mut s, &tcp4(4, 34, 16), rules, true).unwrap();
        assert!(!s.is_gso());
        // The 6.18 host keeps 4 (tap-write/vnet-gso-tail, read A 4).
        let mut s = skb(54 + 8);
        vnet_hdr_to_skb(&mut s, &tcp4(4, 34, 16), &LINUX_6_18.tun_write, true).unwrap();
        assert_eq!((s.is_gso(), s.gso_size), (true, 4));
    }
}
