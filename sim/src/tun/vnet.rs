//! The vnet header tun writes before a frame (include/linux/virtio_net.h:
//! virtio_net_hdr_from_skb, reached through drivers/net/tun_vnet.h: tun_vnet_hdr_from_skb).
//! The wire layout itself is `wire::virtio_net_hdr`.

use crate::profile::TunReadRules;
use crate::skb::{gso, IpSummed, SkBuff};
use crate::wire::virtio_net_hdr::{
    VirtioNetHdrRepr, VIRTIO_NET_HDR_F_DATA_VALID, VIRTIO_NET_HDR_F_NEEDS_CSUM,
    VIRTIO_NET_HDR_GSO_ECN, VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_TCPV6,
    VIRTIO_NET_HDR_GSO_UDP, VIRTIO_NET_HDR_GSO_UDP_L4,
};

/// Why tun refuses to describe an skb (the read returns -EINVAL, the skb is freed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsupportedGso(pub u32);

/// virtio_net_hdr_from_skb(skb, hdr, little_endian, has_data_valid = true, vlan_hlen).
pub fn vnet_hdr_from_skb(
    skb: &SkBuff,
    vlan_hlen: usize,
    rules: &TunReadRules,
) -> Result<VirtioNetHdrRepr, UnsupportedGso> {
    hdr_from_skb_fields(skb, skb.gso_type, vlan_hlen, rules, true)
}

/// virtio_net_hdr_from_skb for `skb` as if its gso_type were `gso_type`
/// (virtio_net_hdr_tnl_from_skb clears the tunnel bits around the call) and with
/// `has_data_valid` (false there).
pub(crate) fn hdr_from_skb_fields(
    skb: &SkBuff,
    gso_type: u32,
    vlan_hlen: usize,
    rules: &TunReadRules,
    has_data_valid: bool,
) -> Result<VirtioNetHdrRepr, UnsupportedGso> {
    let mut h = VirtioNetHdrRepr::default();
    if skb.is_gso() {
        // "This is a hint as to how much should be linear": skb_headlen, never adjusted
        // for the spliced tag.
        h.hdr_len = skb.headlen() as u16;
        h.gso_size = skb.gso_size;
        let t = gso_type;
        h.gso_type = if t & gso::TCPV4 != 0 {
            VIRTIO_NET_HDR_GSO_TCPV4
        } else if t & gso::TCPV6 != 0 {
            VIRTIO_NET_HDR_GSO_TCPV6
        } else if t & gso::UDP_L4 != 0 && rules.uso_on_read {
            VIRTIO_NET_HDR_GSO_UDP_L4
        } else if t & gso::UDP != 0 && rules.ufo_on_read {
            VIRTIO_NET_HDR_GSO_UDP
        } else {
            return Err(UnsupportedGso(t));
        };
        if t & gso::TCP_ECN != 0 {
            h.gso_type |= VIRTIO_NET_HDR_GSO_ECN;
        }
    }
    match skb.ip_summed {
        IpSummed::Partial => {
            h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
            let shift = if rules.csum_start_vlan_shift {
                vlan_hlen
            } else {
                0
            };
            h.csum_start = (skb.checksum_start_offset() + shift) as u16;
            h.csum_offset = skb.csum_offset;
        }
        // has_data_valid is true for tun. UNCERTAIN for 3.12 (kept as in later kernels;
        // the 3.12 source read shows no difference).
        IpSummed::Unnecessary if has_data_valid => h.flags = VIRTIO_NET_HDR_F_DATA_VALID,
        IpSummed::Unnecessary => {}
        IpSummed::None | IpSummed::Complete => {}
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{LINUX_3_12, LINUX_6_18};

    fn gso_skb(gso_type: u32) -> SkBuff {
        let frame = vec![0u8; 200];
        let mut skb = SkBuff::from_frame(&frame, 64, 54);
        skb.gso_size = 1448;
        skb.gso_type = gso_type;
        skb.partial_csum_set(34, 16);
        skb
    }

    #[test]
    fn gso_tcpv4_header_uses_headlen_and_shifts_csum_start_for_a_tag() {
        let skb = gso_skb(gso::TCPV4 | gso::TCP_ECN);
        let h = vnet_hdr_from_skb(&skb, 4, &LINUX_6_18.tun_read).unwrap();
        // docs/tun-read.md#vnet-fields: hdr_len = skb_headlen (54, not adjusted for the tag);
        // csum_start 34 + 4.
        assert_eq!(
            (
                h.flags,
                h.gso_type,
                h.hdr_len,
                h.gso_size,
                h.csum_start,
                h.csum_offset
            ),
            (1, 0x81, 54, 1448, 38, 16)
        );
        // docs/tun-read.md#history-3.12: 3.12 did not shift csum_start.
        let h = vnet_hdr_from_skb(&skb, 4, &LINUX_3_12.tun_read).unwrap();
        assert_eq!(h.csum_start, 34);
    }

    #[test]
    fn ufo_is_refused_by_modern_kernels_and_accepted_by_3_12() {
        let skb = gso_skb(gso::UDP);
        assert_eq!(
            vnet_hdr_from_skb(&skb, 0, &LINUX_6_18.tun_read),
            Err(UnsupportedGso(gso::UDP))
        );
        let h = vnet_hdr_from_skb(&skb, 0, &LINUX_3_12.tun_read).unwrap();
        assert_eq!(h.gso_type, VIRTIO_NET_HDR_GSO_UDP);
    }

    #[test]
    fn unnecessary_gives_data_valid_and_none_gives_zero() {
        let frame = [0u8; 60];
        let mut skb = SkBuff::from_frame(&frame, 64, 60);
        skb.ip_summed = IpSummed::Unnecessary;
        let h = vnet_hdr_from_skb(&skb, 0, &LINUX_6_18.tun_read).unwrap();
        assert_eq!(h.flags, VIRTIO_NET_HDR_F_DATA_VALID);
        skb.ip_summed = IpSummed::None;
        let h = vnet_hdr_from_skb(&skb, 0, &LINUX_6_18.tun_read).unwrap();
        assert_eq!(h, VirtioNetHdrRepr::default());
    }
}
