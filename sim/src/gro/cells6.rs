//! The tunnel receive paths with an IPv6 outer header, up to gro_cells_receive
//! (docs/gro.md#tunnels-over-ipv6): VXLAN over IPv6 (drivers/net/vxlan/vxlan_core.c:
//! vxlan_rcv on the device's IPv6 socket) and ip6gretap (net/ipv6/ip6_gre.c: gre_rcv ->
//! gre_parse_header, iptunnel_pull_header -> ip6gre_rcv -> ip6gre_tunnel_lookup ->
//! net/ipv6/ip6_tunnel.c: ip6_tnl_rcv -> __ip6_tnl_rcv -> gro_cells_receive).
//!
//! What they look at in the outer IPv6 header: the addresses (ip6gre_tunnel_lookup takes
//! the tunnel whose remote is the source and local the destination, with the same key;
//! a vxlan device's socket is bound to the destination port) and the ECN bits of the
//! Traffic Class (IP6_ECN_decapsulate / INET_ECN_decapsulate: CE over a not-ECT inner
//! packet is dropped, ECT over not-ECT only logged). The flow label, the hop limit and
//! the DSCP bits are not looked at (IP6_TNL_F_RCV_DSCP_COPY is off by default), and the
//! outer header is pulled before gro_cells_receive, so none of them reaches the cell's
//! GRO: one inner flow arriving under differing outer flow labels, hop limits or DSCPs
//! is one flow again in the cell.

use std::net::Ipv6Addr;

use super::cells::{Outer, TunnelDev};
use crate::consts::ETH_HLEN;
use crate::consts::{ETH_P_IPV6, ETH_P_TEB, IPPROTO_GRE, IPPROTO_UDP, VXLAN_HLEN};
use crate::wire::gre::{Gre, GRE_ROUTING, GRE_VERSION};
use crate::wire::vxlan::VXLAN_HF_VNI;
use crate::wire::{ethernet, ipv6, udp};

/// INET_ECN_MASK (include/net/inet_ecn.h).
const INET_ECN_MASK: u8 = 3;
/// INET_ECN_CE.
const INET_ECN_CE: u8 = 3;

/// The outer Ethernet/IPv6/UDP/VXLAN (to a port in `ports`, a non-zero UDP checksum) or
/// Ethernet/IPv6/GRE/TEB headers of `f`, as the receive paths accept them. The next
/// header must be UDP or GRE itself (no extension headers in front: the model's
/// scenarios carry none). None for anything else, for a zero UDP checksum
/// (net/ipv6/udp.c: __udp6_lib_rcv drops it: the vxlan device does not set
/// udp6zerocsumrx) and for CE over a not-ECT inner packet (__ip6_tnl_rcv and vxlan_rcv
/// drop it: rx_frame_errors).
pub fn outer_of_v6(f: &[u8], ports: &[u16]) -> Option<Outer> {
    let eth = ethernet::Packet::new_checked(f).ok()?;
    if eth.ethertype() != ETH_P_IPV6 {
        return None;
    }
    let ip = ipv6::Packet::new_checked(eth.payload()).ok()?;
    // The payload as payload_len says (the tap's skb carries no padding after it).
    let l4 = ip.payload();
    let l4_off = ETH_HLEN + ipv6::HEADER_LEN;
    let out = match ip.next_header() {
        IPPROTO_UDP => {
            let u = udp::Packet::new_checked(l4).ok()?;
            if !ports.contains(&u.dst_port()) || u.checksum() == 0 {
                return None;
            }
            let v = u.payload().get(..VXLAN_HLEN)?;
            if v[0] & VXLAN_HF_VNI == 0 {
                return None;
            }
            Outer {
                dev: TunnelDev::Vxlan6 {
                    port: u.dst_port(),
                    vni: u32::from_be_bytes([0, v[4], v[5], v[6]]),
                },
                inner: l4_off + udp::HEADER_LEN + VXLAN_HLEN,
                outer_csum: true,
            }
        }
        IPPROTO_GRE => {
            let g = Gre::new_checked(l4).ok()?;
            // gre_parse_header: version 0 (1 is PPTP), no routing; gretap: ETH_P_TEB.
            if g.flags_word() & (GRE_VERSION | GRE_ROUTING) != 0 || g.protocol() != ETH_P_TEB {
                return None;
            }
            Outer {
                dev: TunnelDev::Ip6gretap {
                    remote: ip.src_addr().octets(),
                    local: ip.dst_addr().octets(),
                    key: g.key().map(u32::to_be_bytes),
                },
                inner: l4_off + super::cells::gre_calc_hlen(&g),
                outer_csum: g.checksum_present(),
            }
        }
        _ => return None,
    };
    let inner = f.get(out.inner..)?;
    if inner.len() < ETH_HLEN || ce_over_not_ect(ip.traffic_class(), inner) {
        return None;
    }
    Some(out)
}

/// __INET_ECN_decapsulate's drop (return 2): outer CE, inner IPv4 or IPv6 not-ECT. An
/// inner frame that is neither is not ECN-checked (IP6_ECN_decapsulate returns 0).
fn ce_over_not_ect(outer_tc: u8, inner: &[u8]) -> bool {
    if outer_tc & INET_ECN_MASK != INET_ECN_CE {
        return false;
    }
    let Ok(eth) = ethernet::Packet::new_checked(inner) else {
        return false;
    };
    let p = eth.payload();
    let dsfield = match eth.ethertype() {
        crate::consts::ETH_P_IP => p.get(1).copied(),
        ETH_P_IPV6 => ipv6::Packet::new_checked(p).ok().map(|h| h.traffic_class()),
        _ => None,
    };
    dsfield.is_some_and(|d| d & INET_ECN_MASK == 0)
}

/// An IPv6 address as `ip -6` prints it (RFC 5952), for the device descriptions.
pub fn ip6(a: [u8; 16]) -> String {
    Ipv6Addr::from(a).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gro::frames::Tcp4;
    use crate::gro::frames6::Outer6;

    #[test]
    fn ip6gretap_is_found_by_its_addresses_and_key() {
        let inner = Tcp4::default().build();
        let f = Outer6::default().gre_teb(Some(42), None, &inner);
        let o = outer_of_v6(&f, &[4789]).expect("ip6gretap");
        assert_eq!(o.inner, 14 + 40 + 8);
        assert!(!o.outer_csum);
        assert_eq!(
            o.dev.describe(),
            "ip6gretap remote fd00:1::1 local fd00:1::2 key 0x2a"
        );
        assert_eq!(&f[o.inner..], &inner[..]);
        let c = Outer6::default().gre_teb(None, Some(true), &inner);
        let o = outer_of_v6(&c, &[]).expect("ip6gretap with C");
        assert!(o.outer_csum);
        assert_eq!(o.inner, 14 + 40 + 8);
    }

    #[test]
    fn vxlan6_needs_its_port_the_i_flag_and_a_udp_checksum() {
        let inner = Tcp4::default().build();
        let f = Outer6::default().vxlan(50000, 42, true, &inner);
        let o = outer_of_v6(&f, &[4789]).expect("vxlan6");
        assert_eq!(o.dev.describe(), "vxlan6 port 4789 vni 42");
        assert_eq!(o.inner, 14 + 40 + 16);
        assert!(outer_of_v6(&f, &[8472]).is_none());
        let zero = Outer6::default().vxlan(50000, 42, false, &inner);
        assert!(outer_of_v6(&zero, &[4789]).is_none(), "zero UDP checksum");
    }

    #[test]
    fn outer_ce_over_a_not_ect_inner_packet_is_dropped_ect_is_not() {
        let inner = Tcp4::default().build();
        for (tc, kept) in [(0x03, false), (0x01, true), (0x02, true), (0xb8, true)] {
            let o = Outer6 {
                tc,
                ..Outer6::default()
            };
            let f = o.gre_teb(Some(42), None, &inner);
            assert_eq!(outer_of_v6(&f, &[]).is_some(), kept, "tc {tc:#x}");
        }
        // CE over an ECT(0) inner packet is kept (the inner one is marked CE).
        let ect = Tcp4 {
            tos: 0x02,
            ..Tcp4::default()
        }
        .build();
        let o = Outer6 {
            tc: 0x03,
            ..Outer6::default()
        };
        assert!(outer_of_v6(&o.gre_teb(Some(42), None, &ect), &[]).is_some());
    }
}
