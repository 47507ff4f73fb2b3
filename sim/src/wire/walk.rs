//! The one header walker: an Ethernet header and its VLAN tags, IPv4 or IPv6 (with the
//! extension headers of an [`ExtRule`]), the transport header, and through one tunnel
//! (VXLAN, GRE-TEB, IP in IP) to the inner frame's. Every place that looks for a header
//! offset walks here, with the rule of its kernel counterpart ([`Rule`]): the kernel's
//! walks genuinely differ (which TPIDs are tags, whether an IPv4 header is checked, which
//! IPv6 extension headers are stepped over), so the rule is a parameter and each caller
//! names the kernel function it follows.
//!
//! Nothing here panics or reads out of bounds, whatever the bytes: a header the buffer
//! does not hold ends the walk.

use super::ipv6::{self, ExtHeaders, ExtRule};
use super::{be16_at, gre, tcp, udp, vlan};
use crate::consts::{
    ETH_HLEN, ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP, ETH_P_IPV6, ETH_P_QINQ1, ETH_P_TEB, IPPROTO_GRE,
    IPPROTO_IPIP, IPPROTO_IPV6, IPPROTO_TCP, IPPROTO_UDP, VLAN_HLEN, VXLAN_HLEN,
};

/// Which EtherTypes are VLAN tags (TPIDs) to a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpidRule {
    /// include/linux/if_vlan.h: eth_type_vlan: ETH_P_8021Q and ETH_P_8021AD, the two
    /// the kernel's receive path untags (skb_vlan_untag), GRO registers
    /// (vlan_gro_receive) and the flow dissector steps over (__skb_flow_dissect).
    EthTypeVlan,
    /// What capture tools decode as a tag: those two and ETH_P_QINQ1 (0x9100), as
    /// libpcap's gencode.c: gen_vlan_tpid_test and tcpdump's print-ether.c do. For the
    /// trace summaries and for reading a capture's frames, not for a kernel path.
    Capture,
}

impl TpidRule {
    /// Whether `ethertype` is a VLAN TPID under this rule.
    pub fn is_tag(self, ethertype: u16) -> bool {
        match self {
            TpidRule::EthTypeVlan => vlan::eth_type_vlan(ethertype),
            TpidRule::Capture => matches!(ethertype, ETH_P_8021Q | ETH_P_8021AD | ETH_P_QINQ1),
        }
    }
}

/// Where a run of VLAN tags ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tags {
    /// The EtherType after the tags (a TPID when the walk stopped at a tag).
    pub ethertype: u16,
    /// Where the packet of that EtherType starts; when `truncated`, where the tag the
    /// buffer cuts short starts.
    pub offset: usize,
    /// Tags stepped over.
    pub count: usize,
    /// A tag runs past the buffer.
    pub truncated: bool,
}

/// Steps over the VLAN tags (struct vlan_hdr, VLAN_HLEN bytes each) that start at `at`
/// after a type field that said `ethertype`, at most `max` of them.
pub fn vlan_tags(buf: &[u8], at: usize, ethertype: u16, rule: TpidRule, max: usize) -> Tags {
    let mut t = Tags {
        ethertype,
        offset: at,
        count: 0,
        truncated: false,
    };
    while t.count < max && rule.is_tag(t.ethertype) {
        let Ok(tag) = vlan::Packet::new_checked(buf.get(t.offset..).unwrap_or(&[])) else {
            t.truncated = true;
            break;
        };
        t.ethertype = tag.ethertype();
        t.offset += VLAN_HLEN;
        t.count += 1;
    }
    t
}

/// How a walk reads an IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv4Rule {
    /// net/ipv4/ip_input.c: ip_rcv_core: version 4, an IHL of at least 5 and the whole
    /// header in the buffer, or no transport header.
    Checked,
    /// The IHL as it is, the protocol byte present: what the GRO segment count and the
    /// bench's csum_start read from frames GRO already merged (inet_gro_receive
    /// checked them).
    AsIs,
}

/// The tunnels a walk goes through to the inner frame (one level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tunnels<'a> {
    /// UDP to one of these destination ports carries VXLAN (vxlan_rcv): the inner
    /// Ethernet frame follows the 8-byte VXLAN header.
    pub vxlan_ports: &'a [u16],
    /// GRE carrying ETH_P_TEB (gretap), as gre_parse_header accepts it: version 0, no
    /// routing; the inner Ethernet frame follows gre_calc_hlen's bytes.
    pub gre_teb: bool,
    /// IPPROTO_IPIP / IPPROTO_IPV6 (ipip, sit, ip6tnl): the inner IP header follows.
    pub ip_in_ip: bool,
}

/// A walk's rule: every difference between the kernel's walks, named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule<'a> {
    pub tpid: TpidRule,
    /// At most this many tags per Ethernet header.
    pub max_tags: usize,
    pub ipv4: Ipv4Rule,
    /// The IPv6 extension headers stepped over; None: the fixed header's nexthdr is the
    /// transport protocol.
    pub ipv6_ext: Option<ExtRule>,
    pub tunnels: Tunnels<'a>,
}

/// A transport header: its protocol and offset in the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transport {
    pub proto: u8,
    pub offset: usize,
}

/// One layer of headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layer {
    /// The VLAN tags before the network header (none for a bare IP-in-IP header).
    pub tags: Tags,
    /// The network header's EtherType and offset (`tags.ethertype`, `tags.offset`).
    pub l3_proto: u16,
    pub l3_offset: usize,
    /// The transport header, when the network header is IPv4 or IPv6 and holds it.
    pub transport: Option<Transport>,
}

/// The transport header after the IPv4 or IPv6 header at `at`, by `rule`.
pub fn ip_transport(frame: &[u8], at: usize, ethertype: u16, rule: &Rule) -> Option<Transport> {
    let ip = frame.get(at..)?;
    match ethertype {
        ETH_P_IP => {
            let vihl = *ip.first()?;
            let ihl = usize::from(vihl & 0x0f) * 4;
            let ok = rule.ipv4 == Ipv4Rule::AsIs
                || (vihl >> 4 == 4 && ihl >= super::ipv4::HEADER_LEN && ip.len() >= ihl);
            ok.then_some(())?;
            let proto = *ip.get(9)?;
            Some(Transport {
                proto,
                offset: at + ihl,
            })
        }
        ETH_P_IPV6 => {
            // The fixed header only: payload_len is not the walk's business.
            let p = ipv6::Packet::new_unchecked(ip.get(..ipv6::HEADER_LEN)?);
            let (proto, ext) = match rule.ipv6_ext {
                None => (p.next_header(), 0),
                Some(r) => {
                    let rest = &ip[ipv6::HEADER_LEN..];
                    let mut walk = ExtHeaders::with_rule(r, p.next_header(), rest);
                    walk.by_ref().take_while(|step| step.is_ok()).for_each(drop);
                    (walk.next_header(), walk.offset())
                }
            };
            Some(Transport {
                proto,
                offset: at + ipv6::HEADER_LEN + ext,
            })
        }
        _ => None,
    }
}

/// The Ethernet header at `at`, its tags and what follows; None when the buffer ends
/// before the type field.
pub fn ethernet(frame: &[u8], at: usize, rule: &Rule) -> Option<Layer> {
    let ethertype = be16_at(frame, at.checked_add(ETH_HLEN - 2)?)?;
    let tags = vlan_tags(frame, at + ETH_HLEN, ethertype, rule.tpid, rule.max_tags);
    Some(Layer {
        tags,
        l3_proto: tags.ethertype,
        l3_offset: tags.offset,
        transport: if tags.truncated {
            None
        } else {
            ip_transport(frame, tags.offset, tags.ethertype, rule)
        },
    })
}

/// What a layer's transport header leads to, under `rule`'s tunnels.
enum Inner {
    Ethernet(usize),
    Ip(usize, u16),
}

fn tunnel(frame: &[u8], t: Transport, tunnels: &Tunnels) -> Option<Inner> {
    match t.proto {
        IPPROTO_UDP => {
            let u = udp::Packet::new_unchecked(frame.get(t.offset..)?);
            u.check_len().ok()?;
            tunnels
                .vxlan_ports
                .contains(&u.dst_port())
                .then_some(Inner::Ethernet(t.offset + udp::HEADER_LEN + VXLAN_HLEN))
        }
        IPPROTO_GRE if tunnels.gre_teb => {
            let g = gre::Gre::new_unchecked(frame.get(t.offset..)?);
            let teb = g.protocol() == ETH_P_TEB && g.version() == 0 && !g.routing_present();
            (teb && frame.len() >= t.offset + gre::GRE_BASE_LEN)
                .then_some(Inner::Ethernet(t.offset + g.header_len()))
        }
        IPPROTO_IPIP if tunnels.ip_in_ip => Some(Inner::Ip(t.offset, ETH_P_IP)),
        IPPROTO_IPV6 if tunnels.ip_in_ip => Some(Inner::Ip(t.offset, ETH_P_IPV6)),
        _ => None,
    }
}

/// The innermost layer of the frame: the outer Ethernet layer, or, when its transport
/// header is a tunnel of `rule`, the inner frame's (one level). None when a layer's
/// Ethernet header is cut short.
pub fn innermost(frame: &[u8], rule: &Rule) -> Option<Layer> {
    let outer = ethernet(frame, 0, rule)?;
    let Some(inner) = outer
        .transport
        .and_then(|t| tunnel(frame, t, &rule.tunnels))
    else {
        return Some(outer);
    };
    match inner {
        Inner::Ethernet(at) => ethernet(frame, at, rule),
        Inner::Ip(at, ethertype) => Some(Layer {
            tags: Tags {
                ethertype,
                offset: at,
                count: 0,
                truncated: false,
            },
            l3_proto: ethertype,
            l3_offset: at,
            transport: ip_transport(frame, at, ethertype, rule),
        }),
    }
}

/// The length of the TCP (doff * 4, at least 20) or UDP (8) header `t`, when the frame
/// holds all of it.
pub fn transport_len(frame: &[u8], t: Transport) -> Option<usize> {
    let h = frame.get(t.offset..)?;
    let len = match t.proto {
        // doff (struct tcphdr's 13th byte, high nibble) in 32-bit words.
        IPPROTO_TCP => {
            Some(usize::from(*h.get(12)? >> 4) * 4).filter(|&doff| doff >= tcp::HEADER_LEN)?
        }
        IPPROTO_UDP => udp::HEADER_LEN,
        _ => return None,
    };
    (h.len() >= len).then_some(len)
}

/// An untagged frame's network and transport headers as the receive path takes them
/// before a tunnel's handler sees them (net/ipv4/ip_input.c: ip_rcv_core checks the
/// IPv4 header; gre_rcv and vxlan_rcv then parse their own header with the views): no
/// tags, no extension headers, no tunnel followed. The real arms read the outer headers
/// of their tunnel frames by it.
pub const IP_RCV: Rule<'static> = Rule {
    tpid: TpidRule::EthTypeVlan,
    max_tags: 0,
    ipv4: Ipv4Rule::Checked,
    ipv6_ext: None,
    tunnels: Tunnels {
        vxlan_ports: &[],
        gre_teb: false,
        ip_in_ip: false,
    },
};

/// The transport header of protocol `proto` in an untagged Ethernet/IPv4 frame, by
/// [`IP_RCV`].
pub fn ipv4_transport(frame: &[u8], proto: u8) -> Option<usize> {
    let l = ethernet(frame, 0, &IP_RCV)?;
    let t = l.transport?;
    (l.l3_proto == ETH_P_IP && t.proto == proto).then_some(t.offset)
}

/// The rule of the GRO segment count and the tap-gro bench's csum_start
/// ([`innermost_tcp`]): eth_type_vlan tags (two at most: GRO's vlan_gro_receive is
/// called once per tag through the offload table), the IPv4 IHL as GRO accepted it,
/// IPv6 past ipv6_gro_pull_exthdrs's headers, and through VXLAN (to `vxlan_ports`),
/// GRE-TEB or IP in IP.
pub fn gro_rule(vxlan_ports: &[u16]) -> Rule<'_> {
    Rule {
        tpid: TpidRule::EthTypeVlan,
        max_tags: 2,
        ipv4: Ipv4Rule::AsIs,
        ipv6_ext: Some(ExtRule::GroPull),
        tunnels: Tunnels {
            vxlan_ports,
            gre_teb: true,
            ip_in_ip: true,
        },
    }
}

/// The offset of the innermost TCP header under [`gro_rule`] (NEEDS_CSUM's
/// csum_start for a merged skb), None when the innermost transport is not TCP.
pub fn innermost_tcp(frame: &[u8], vxlan_ports: &[u16]) -> Option<usize> {
    let t = innermost(frame, &gro_rule(vxlan_ports))?.transport?;
    (t.proto == IPPROTO_TCP).then_some(t.offset)
}

/// The offset of the UDP header of an untagged Ethernet/IPv4 or IPv6 frame (past the
/// extension headers ipv6_gro_pull_exthdrs steps over): plain UDP GRO's
/// (SKB_GSO_UDP_L4) transport header, for the segment count of a merged skb.
pub fn plain_udp(frame: &[u8]) -> Option<usize> {
    let rule = Rule {
        max_tags: 0,
        tunnels: Tunnels::default(),
        ..gro_rule(&[])
    };
    let t = ethernet(frame, 0, &rule)?.transport?;
    (t.proto == IPPROTO_UDP).then_some(t.offset)
}

#[cfg(test)]
#[path = "walk_tests.rs"]
mod tests;
