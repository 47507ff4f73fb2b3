//! Synthetic tunnel frames with an IPv6 outer header, for the GRO unit tests: the IPv6
//! twin of [`super::frames::Outer`] (ip6gretap's GRE-TEB, VXLAN over IPv6). The headers
//! are written through the `wire` views; checksums come from `wire::checksum`,
//! independently of the GRO code.

use std::net::Ipv6Addr;

use super::frames::{gre_teb_header_and, vxlan_udp_and};
use crate::consts::{ETH_P_IPV6, IPPROTO_GRE, IPPROTO_UDP};
use crate::wire::checksum::{fold, ones_complement_sum};
use crate::wire::ipv6;

/// The outer Ethernet + IPv6 of a tunnel (fd00:1::1 -> fd00:1::2).
#[derive(Debug, Clone)]
pub struct Outer6 {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub saddr: Ipv6Addr,
    pub daddr: Ipv6Addr,
    pub hop_limit: u8,
    /// Traffic Class (DSCP and ECN).
    pub tc: u8,
    pub flow_label: u32,
}

impl Default for Outer6 {
    fn default() -> Self {
        Outer6 {
            src_mac: [2, 0, 0, 0, 1, 1],
            dst_mac: [2, 0, 0, 0, 1, 2],
            saddr: Ipv6Addr::new(0xfd00, 1, 0, 0, 0, 0, 0, 1),
            daddr: Ipv6Addr::new(0xfd00, 1, 0, 0, 0, 0, 0, 2),
            hop_limit: 64,
            tc: 0,
            flow_label: 0,
        }
    }
}

impl Outer6 {
    fn wrap(&self, proto: u8, l4: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 14 + ipv6::HEADER_LEN];
        f[0..6].copy_from_slice(&self.dst_mac);
        f[6..12].copy_from_slice(&self.src_mac);
        f[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
        {
            let mut ip = ipv6::Packet::new_unchecked(&mut f[14..]);
            ip.set_version(6);
            ip.set_traffic_class(self.tc);
            ip.set_flow_label(self.flow_label);
            ip.set_payload_len(l4.len() as u16);
            ip.set_next_header(proto);
            ip.set_hop_limit(self.hop_limit);
            ip.set_src_addr(self.saddr);
            ip.set_dst_addr(self.daddr);
        }
        f.extend_from_slice(l4);
        f
    }

    /// Outer IPv6 + GRE (protocol ETH_P_TEB, optional key and checksum) + `inner`.
    pub fn gre_teb(&self, key: Option<u32>, csum: Option<bool>, inner: &[u8]) -> Vec<u8> {
        self.wrap(IPPROTO_GRE, &gre_teb_header_and(key, csum, inner))
    }

    /// Outer IPv6 + UDP to 4789 + VXLAN (I flag, `vni`) + `inner`; the UDP checksum over
    /// the RFC 8200 pseudo header when `udp_csum`, else zero.
    pub fn vxlan(&self, sport: u16, vni: u32, udp_csum: bool, inner: &[u8]) -> Vec<u8> {
        let mut u = vxlan_udp_and(sport, vni, inner);
        if udp_csum {
            let mut pseudo = Vec::with_capacity(40);
            pseudo.extend_from_slice(&self.saddr.octets());
            pseudo.extend_from_slice(&self.daddr.octets());
            pseudo.extend_from_slice(&(u.len() as u32).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, IPPROTO_UDP]);
            let c = match !fold(ones_complement_sum(&u, ones_complement_sum(&pseudo, 0))) {
                0 => 0xffff,
                c => c,
            };
            u[6..8].copy_from_slice(&c.to_be_bytes());
        }
        self.wrap(IPPROTO_UDP, &u)
    }
}
