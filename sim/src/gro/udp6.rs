//! UDP GRO over IPv6: net/ipv6/udp_offload.c: udp6_gro_receive, udp6_gro_lookup_skb,
//! udp6_gro_complete. Everything after the checksum and the socket lookup is
//! net/ipv4/udp_offload.c's, shared with IPv4 (`udp`): udp_gro_receive's tunnel branch
//! (VXLAN over an IPv6 outer header) and plain UDP GRO (udp_gro_receive_segment,
//! fraglist), and udp_gro_complete.

use super::ipv6;
use super::rules::UdpCompleteIph;
use super::udp::{
    udp_gro_complete, udp_gro_complete_fraglist, udp_gro_receive, udp_gro_validate, udp_hdr,
    UdpSock,
};
use super::{GroConfig, SkBuff};
use crate::consts::NEXTHDR_UDP;
use crate::wire::checksum as csum;
use crate::wire::ipv6::Packet as Ipv6View;
use crate::wire::udp::HEADER_LEN as UDP_HLEN;

/// udp6_gro_lookup_skb: a VXLAN socket, or a UDP_GRO socket, bound to `dport`. The
/// model's sockets listen on both families (a socket bound to the wildcard address of
/// an AF_INET6 socket without IPV6_V6ONLY takes IPv4 too), so this is the IPv4 lookup.
pub fn udp6_gro_lookup_skb(cfg: &GroConfig, dport: u16) -> UdpSock {
    super::udp::udp4_gro_lookup_skb(cfg, dport)
}

/// udp6_gro_receive: verify a non-zero checksum against the IPv6 pseudo header
/// (ip6_gro_compute_pseudo), find the socket, udp_gro_receive.
pub fn udp6_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let psum = ipv6::gro_compute_pseudo(skb, NEXTHDR_UDP);
    let check = udp_gro_validate(skb, psum)?;
    let off = skb.cb.data_offset;
    let dport = udp_hdr(skb, off).map_or(0, |u| u.dst_port());
    let sk = udp6_gro_lookup_skb(cfg, dport);
    udp_gro_receive(cfg, head, skb, check, sk)
}

/// udp6_gro_complete(skb, nhoff = the UDP header): the fraglist case, else a non-zero
/// checksum becomes ~udp_v6_check(len, saddr, daddr, 0) with the addresses of
/// network_offsets[skb->encapsulation], then udp_gro_complete.
pub fn udp6_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    if skb.headlen() < nhoff + UDP_HLEN || udp_gro_complete_fraglist(skb, nhoff) {
        return;
    }
    // Before v6.8 ("net: gro: use cb instead of skb->network_header") ipv6_hdr(skb):
    // skb->network_header, which the innermost IP level's receive set last, so an
    // IPv4-in-VXLAN-over-IPv6 flow's outer checksum is seeded with 40 bytes from the
    // inner IPv4 header on (as udp4_gro_complete, `GroRules::udp_complete_iph`).
    let nh = match cfg.rules.udp_complete_iph {
        UdpCompleteIph::NetworkOffsets => skb.cb.network_offsets[usize::from(skb.encapsulation)],
        UdpCompleteIph::SkbNetworkHeader => skb.offset_from_data(skb.network_header).unwrap_or(0),
    };
    let addrs = skb
        .hdr(nh, ipv6::IPV6_HLEN)
        .map(Ipv6View::new_unchecked)
        .map(|ip| (ip.src_addr().octets(), ip.dst_addr().octets()));
    let len = skb.len() - nhoff;
    let check = udp_hdr(skb, nhoff).map_or(0, |u| u.checksum());
    if let (true, Some((src, dst))) = (check != 0, addrs) {
        let c = csum::fold(csum::pseudo_v6(src, dst, NEXTHDR_UDP, len));
        super::udp::set_udp_check(skb, nhoff, c);
    }
    let dport = udp_hdr(skb, nhoff).map_or(0, |u| u.dst_port());
    let tunnel = udp6_gro_lookup_skb(cfg, dport) == UdpSock::Tunnel;
    udp_gro_complete(cfg, skb, nhoff, check, tunnel);
}
