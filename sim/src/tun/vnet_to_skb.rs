//! What a written vnet header does to the skb: virtio_net_hdr_to_skb
//! (include/linux/virtio_net.h), reached from tun_get_user and tun_xdp_one through
//! drivers/net/tun_vnet.h: tun_vnet_hdr_to_skb. Which checks exist depends on the kernel
//! (`TunWriteRules::vnet_to_skb`).

use crate::profile::{TunWriteRules, VnetToSkbRule};
use crate::skb::{gso, IpSummed, SkBuff};
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
/// UDP_MAX_SEGMENTS (include/linux/udp.h, 128 since v6.11).
const UDP_MAX_SEGMENTS: usize = 128;

/// virtio_net_hdr_to_skb on `skb`, whose data starts at the frame (the MAC header for a
/// tap). Returns why the header was refused (the caller counts rx_frame_errors).
pub(crate) fn vnet_hdr_to_skb(
    skb: &mut SkBuff,
    h: &VirtioNetHdrRepr,
    rules: &TunWriteRules,
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
            let mut nh_min_len = if base == VIRTIO_NET_HDR_GSO_TCPV6 {
                IPV6_HLEN
            } else {
                IPV4_HLEN
            };
            if needs_csum {
                // pskb_may_pull(start + max(thlen, off + 2)): the L4 header of a GSO
                // packet and the checksum field must both be there (0f6925b3e8da).
                if start + thlen.max(off + 2) > len {
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
            }
        }
    };
    if gso_bits == 0 {
        return Ok(());
    }
    let mut nh_off = p_off;
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
                if needs_csum && h.csum_offset != TCP_CHECK_OFFSET {
                    return Err("vnet TCP GSO with a csum_offset other than 16");
                }
            }
        }
        if h.gso_size == GSO_BY_FRAGS {
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
        Some(p) => len - p > usize::from(h.gso_size),
        None => true,
    };
    if is_gso {
        skb.gso_type = gso_bits | ecn | gso::DODGY;
        skb.gso_size = h.gso_size;
        skb.gso_segs = 0;
    }
    if skb.ip_summed != IpSummed::Partial {
        skb.ip_summed = IpSummed::None;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{LINUX_4_19, LINUX_6_1, LINUX_6_18};
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
        // The case: gso_size 1000, TCP header at 34, payloads 999, 1000, 1001.
        // p_off = 34 + 20 = 54; hdr_len raised for the checksum would only be 52.
        for (payload, gso) in [(999, false), (1000, false), (1001, true)] {
            let mut s = skb(54 + payload);
            vnet_hdr_to_skb(&mut s, &tcp4(1000, 34, 16), &LINUX_6_18.tun_write).unwrap();
            assert_eq!(s.is_gso(), gso, "payload {payload}");
            if gso {
                assert_eq!(s.gso_type, gso::TCPV4 | gso::DODGY);
                assert_eq!((s.gso_size, s.gso_segs), (1000, 0));
            }
            assert_eq!(s.ip_summed, IpSummed::Partial);
        }
        // Before v5.7 every GSO header made the skb GSO.
        let mut s = skb(54 + 999);
        vnet_hdr_to_skb(&mut s, &tcp4(1000, 34, 16), &LINUX_4_19.tun_write).unwrap();
        assert!(s.is_gso());
    }

    #[test]
    fn a_gso_checksum_needs_the_whole_tcp_header_inside_the_packet() {
        // csum_start 82, csum_offset 16 in a 100-byte frame: 82 + max(20, 18) = 102.
        let mut s = skb(100);
        let e = vnet_hdr_to_skb(&mut s, &tcp4(20, 82, 16), &LINUX_6_18.tun_write);
        assert!(e.is_err());
        // Without GSO (thlen 0) the checksum field alone must fit: 82 + 18 = 100.
        let mut h = tcp4(0, 82, 16);
        h.gso_type = VIRTIO_NET_HDR_GSO_NONE;
        let mut s = skb(100);
        vnet_hdr_to_skb(&mut s, &h, &LINUX_6_18.tun_write).unwrap();
        assert_eq!(s.checksum_start_offset(), 82);
        // 4.19 checked only the checksum field.
        let mut s = skb(100);
        vnet_hdr_to_skb(&mut s, &tcp4(20, 82, 16), &LINUX_4_19.tun_write).unwrap();
        assert!(s.is_gso());
    }

    #[test]
    fn other_6_18_checks_refuse_what_4_19_accepted() {
        let rules = &LINUX_6_18.tun_write;
        // csum_start inside the smallest IPv4 header.
        let mut h = tcp4(0, 10, 16);
        h.gso_type = VIRTIO_NET_HDR_GSO_NONE;
        assert!(vnet_hdr_to_skb(&mut skb(154), &h, rules).is_err());
        assert!(vnet_hdr_to_skb(&mut skb(154), &h, &LINUX_6_1.tun_write).is_ok());
        assert!(vnet_hdr_to_skb(&mut skb(154), &h, &LINUX_4_19.tun_write).is_ok());
        // TCP GSO with a checksum elsewhere than tcphdr.check.
        assert!(vnet_hdr_to_skb(&mut skb(154), &tcp4(50, 34, 6), rules).is_err());
        // GSO_BY_FRAGS.
        assert!(vnet_hdr_to_skb(&mut skb(154), &tcp4(GSO_BY_FRAGS, 34, 16), rules).is_err());
        // GSO without NEEDS_CSUM: p_off = 20 + 20 (no flow dissection on tun's skb).
        let h = VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            gso_size: 113,
            ..VirtioNetHdrRepr::default()
        };
        let mut s = skb(154);
        vnet_hdr_to_skb(&mut s, &h, rules).unwrap();
        assert!(s.is_gso(), "154 - 40 = 114 > 113");
        let mut s = skb(154);
        vnet_hdr_to_skb(&mut s, &VirtioNetHdrRepr { gso_size: 114, ..h }, rules).unwrap();
        assert!(!s.is_gso());
        assert_eq!(s.ip_summed, IpSummed::None);
    }
}
