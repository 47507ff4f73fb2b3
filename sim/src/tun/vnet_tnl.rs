//! UDP-tunnel GSO in the 24-byte vnet header (struct virtio_net_hdr_v1_hash_tunnel), both
//! ways: include/linux/virtio_net.h: virtio_net_hdr_tnl_to_skb (the write path, from
//! drivers/net/tun_vnet.h: tun_vnet_hdr_tnl_to_skb) and virtio_net_hdr_tnl_from_skb (the
//! read path, from tun_vnet_hdr_tnl_from_skb). 288f30435132 "tun: enable gso over UDP
//! tunnel support" (v6.17) with "net: implement virtio helpers to handle UDP GSO
//! tunneling" of the same series. Rules: docs/tap-write.md#vnet-tunnel and
//! docs/tun-read.md#vnet-tunnel.

use crate::skb::{gso, SkBuff, ETH_HLEN, ETH_P_IPV6};
use crate::wire::virtio_net_hdr::{
    VirtioNetHdrRepr, VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM,
    VIRTIO_NET_HDR_GSO_ECN, VIRTIO_NET_HDR_GSO_TCPV6, VIRTIO_NET_HDR_GSO_UDP,
    VIRTIO_NET_HDR_GSO_UDP_L4, VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4,
    VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6,
};

use super::vnet::UnsupportedGso;
use super::vnet_to_skb::vnet_hdr_to_skb;
use crate::profile::{TunReadRules, TunWriteRules};

/// VIRTIO_NET_HDR_GSO_UDP_TUNNEL: both outer-family bits.
const GSO_UDP_TUNNEL: u8 = VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4 | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6;
/// sizeof(struct udphdr): the outer UDP header between outer_th and inner_nh.
const UDP_HLEN: usize = 8;

/// virtio_l3min: sizeof(struct ipv6hdr) or sizeof(struct iphdr).
fn l3min(is_ipv6: bool) -> usize {
    if is_ipv6 {
        40
    } else {
        20
    }
}

/// The skb is a UDP-tunnel GSO skb (SKB_GSO_UDP_TUNNEL or _CSUM in its gso_type, GSO or
/// not): what virtio_net_hdr_tnl_from_skb tests first.
pub fn is_udp_tunnel(skb: &SkBuff) -> bool {
    skb.gso_type & (gso::UDP_TUNNEL | gso::UDP_TUNNEL_CSUM) != 0
}

/// virtio_net_hdr_tnl_to_skb(skb, hdr, tnl_hdr_negotiated, tnl_csum_negotiated, ...).
/// tun passes both as `vnet_hdr_sz >= 24` (tun_vnet_hdr_guest_features), so one flag.
/// A header without a tunnel bit is plain virtio_net_hdr_to_skb.
pub(crate) fn vnet_hdr_tnl_to_skb(
    skb: &mut SkBuff,
    h: &VirtioNetHdrRepr,
    rules: &TunWriteRules,
    is_tap: bool,
    negotiated: bool,
) -> Result<(), &'static str> {
    let tunnel = h.gso_type & GSO_UDP_TUNNEL;
    if tunnel == 0 {
        return vnet_hdr_to_skb(skb, h, rules, is_tap);
    }
    // "Tunnel not supported/negotiated, but the hdr asks for it."
    if !negotiated {
        return Err("vnet UDP tunnel GSO with vnet_hdr_sz below 24");
    }
    // "Either ipv4 or ipv6."
    if tunnel == GSO_UDP_TUNNEL {
        return Err("vnet UDP tunnel with both the IPv4 and the IPv6 bit");
    }
    // "The UDP tunnel must carry a GSO packet, but no UFO."
    let inner = h.gso_type & !(VIRTIO_NET_HDR_GSO_ECN | GSO_UDP_TUNNEL);
    if inner == 0 || inner == VIRTIO_NET_HDR_GSO_UDP {
        return Err("vnet UDP tunnel without an inner GSO type, or with UFO");
    }
    // "Rely on csum being present."
    if h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM == 0 {
        return Err("vnet UDP tunnel GSO without NEEDS_CSUM");
    }
    // "Validate offsets": outer transport after an Ethernet and the smallest outer IP
    // header, inner network after the outer UDP header, inner transport (csum_start)
    // after the smallest inner IP header (IPv6 only for an inner TCPV6).
    let outer_isv6 = tunnel & VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6 != 0;
    let mut inner_isv6 = inner == VIRTIO_NET_HDR_GSO_TCPV6;
    let outer_th = usize::from(h.outer_th_offset);
    let inner_nh = usize::from(h.inner_nh_offset);
    let inner_th = usize::from(h.csum_start);
    if outer_th < ETH_HLEN + l3min(outer_isv6)
        || inner_nh < outer_th + UDP_HLEN
        || inner_th < inner_nh + l3min(inner_isv6)
    {
        return Err("vnet UDP tunnel offsets out of order");
    }
    // "Let the basic parsing deal with plain GSO features": the same header without the
    // tunnel bits (csum_start is the inner transport header).
    let plain = VirtioNetHdrRepr {
        gso_type: h.gso_type & !tunnel,
        ..*h
    };
    vnet_hdr_to_skb(skb, &plain, rules, is_tap)?;
    // USO does not say the inner family: the inner IP version nibble does.
    if inner == VIRTIO_NET_HDR_GSO_UDP_L4 {
        inner_isv6 = skb.byte(inner_nh).is_some_and(|b| b >> 4 == 6);
        if inner_th < inner_nh + l3min(inner_isv6) {
            return Err("vnet UDP tunnel inner IPv6 header longer than the offsets allow");
        }
    }
    // Set even when the packet was too small to be GSO (gso_size stays 0): the skb is
    // then a non-GSO skb with SKB_GSO_UDP_TUNNEL[_CSUM] in gso_type.
    if h.flags & VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM != 0 {
        skb.gso_type |= gso::UDP_TUNNEL_CSUM;
    } else {
        skb.gso_type |= gso::UDP_TUNNEL;
    }
    // skb_set_inner_protocol is not modelled (nothing read back shows it).
    skb.set_inner_transport_header(inner_th);
    skb.set_inner_network_header(inner_nh);
    skb.set_inner_mac_header(inner_nh);
    skb.set_transport_header(outer_th);
    skb.encapsulation = true;
    Ok(())
}

/// virtio_net_hdr_tnl_from_skb(skb, hdr, tnl_hdr_negotiated = dev->features &
/// NETIF_F_GSO_UDP_TUNNEL, little_endian, vlan_hlen, has_data_valid = true), as
/// tun_vnet_hdr_tnl_from_skb calls it. A non-tunnel skb is plain virtio_net_hdr_from_skb
/// (tun_read's `vnet_hdr_from_skb`). A tunnel skb without the feature is -EINVAL (with a
/// WARN_ON_ONCE). Otherwise the plain header of the skb without its tunnel bits
/// (`has_data_valid` false, `little_endian` true), then gso_type | 0x40 for an IPv6
/// skb->protocol, else 0x20 (even for a tunnel skb too small to be GSO: gso_type 0x20
/// with gso_size 0), flags | UDP_TUNNEL_CSUM for SKB_GSO_UDP_TUNNEL_CSUM, the hash fields
/// zero, inner_nh_offset and outer_th_offset the inner network and the transport header
/// counted from skb->data (no vlan_hlen added).
pub fn vnet_hdr_tnl_from_skb(
    skb: &SkBuff,
    vlan_hlen: usize,
    rules: &TunReadRules,
    has_tnl_offload: bool,
) -> Result<VirtioNetHdrRepr, UnsupportedGso> {
    if !is_udp_tunnel(skb) {
        return super::vnet::vnet_hdr_from_skb(skb, vlan_hlen, rules);
    }
    if !has_tnl_offload {
        return Err(UnsupportedGso(skb.gso_type));
    }
    let plain_type = skb.gso_type & !(gso::UDP_TUNNEL | gso::UDP_TUNNEL_CSUM);
    let mut h = super::vnet::hdr_from_skb_fields(skb, plain_type, vlan_hlen, rules, false)?;
    h.gso_type |= if skb.protocol == ETH_P_IPV6 {
        VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6
    } else {
        VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4
    };
    if skb.gso_type & gso::UDP_TUNNEL_CSUM != 0 {
        h.flags |= VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM;
    }
    // cpu_to_le16 of an unsigned int: the low 16 bits.
    let off = |hdr: Option<usize>| skb.offset_from_data(hdr).unwrap_or(0) as u16;
    h.inner_nh_offset = off(skb.inner_network_header);
    h.outer_th_offset = off(skb.transport_header);
    Ok(h)
}

#[cfg(test)]
#[path = "vnet_tnl_tests.rs"]
mod tests;
