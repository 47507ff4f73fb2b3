//! Builds frame bytes from a resolved [`FrameSpec`] with pnet_packet's mutable packets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use pnet_packet::ethernet::{EtherType, MutableEthernetPacket};
use pnet_packet::ip::IpNextHeaderProtocol;
use pnet_packet::ipv4::{self, Ipv4Flags, MutableIpv4Packet};
use pnet_packet::ipv6::MutableIpv6Packet;
use pnet_packet::tcp::{self, MutableTcpPacket};
use pnet_packet::udp::{self, MutableUdpPacket};
use pnet_packet::vlan::{ClassOfService, MutableVlanPacket};
use serde::Deserialize;
use sim::pcap::MAX_CAPLEN;
use sim::wire::checksum;

use sim::consts::{ETH_P_IP, ETH_P_IPV6, IPPROTO_NONE, IPPROTO_TCP, IPPROTO_UDP};

/// RFC 3692 experimental protocol number: IPv4 without TCP/UDP (the kernel names none).
const IPPROTO_EXPERIMENT: u8 = 253;

/// What to put in a checksum field.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Csum {
    /// The correct value.
    #[default]
    Good,
    /// The correct value with bit 8 flipped (never 0, so UDP still claims a checksum).
    Bad,
    /// 0 (for UDP over IPv4: "no checksum").
    Zero,
    /// TCP/UDP only: the folded pseudo-header sum, not complemented, as the kernel
    /// leaves it in a CHECKSUM_PARTIAL skb for the device (or virtio) to finish.
    Partial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    pub tpid: u16,
    pub pcp: u8,
    pub dei: u8,
    pub vid: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Spec {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub id: u16,
    pub tos: u8,
    pub df: bool,
    pub proto: Option<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Spec {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub flow_label: u32,
    pub next_header: Option<u8>,
    /// Extension headers between the fixed header and L4 (`ipv6_ext`).
    pub ext: Vec<crate::ipv6_ext::Ext>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum L3 {
    /// No IP header: the payload follows the (explicit) ethertype.
    None,
    V4(Ipv4Spec),
    V6(Ipv6Spec),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSpec {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub urg: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpSpec {
    pub sport: u16,
    pub dport: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum L4 {
    None,
    Tcp(TcpSpec),
    Udp(UdpSpec),
}

/// A frame with every default filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameSpec {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// Outermost first.
    pub vlans: Vec<VlanTag>,
    /// Overrides the ethertype `l3` implies (required when `l3` is `None`).
    pub ethertype: Option<u16>,
    pub l3: L3,
    pub l4: L4,
    /// Payload bytes after the last header; byte i is `i as u8`.
    pub payload_len: usize,
    /// Zero-pad the frame to at least this length (padding is outside the IP length).
    pub pad_to: usize,
    pub ip_csum: Csum,
    pub l4_csum: Csum,
    /// TCP options, IPv4 fragment bits, a tunnel around the frame.
    pub ext: crate::tunnel::Ext,
}

fn short(what: &str) -> String {
    format!("internal error: buffer too short for the {what} header")
}

/// Where a frame's headers end, before any tunnel around it.
struct Layout {
    /// Ethernet and VLAN headers.
    l2: usize,
    /// The IP header with any IPv6 extension headers.
    l3_hdr: usize,
    /// The TCP (with options) or UDP header.
    l4_hdr: usize,
    /// From the IP header to the end of the payload.
    l3_len: usize,
    /// From the TCP/UDP header to the end of the payload.
    l4_len: usize,
    /// The whole frame without padding.
    len: usize,
}

/// The header lengths of `spec`; errors when the frame exceeds the snaplen or an IP
/// length field.
fn layout(spec: &FrameSpec) -> Result<Layout, String> {
    let l2 = 14 + 4 * spec.vlans.len();
    let l3_hdr = match &spec.l3 {
        L3::None => 0,
        L3::V4(_) => 20,
        L3::V6(ip) => 40 + crate::ipv6_ext::total_len(&ip.ext),
    };
    let l4_hdr = match spec.l4 {
        L4::None => 0,
        L4::Tcp(_) => 20 + spec.ext.tcp_options.len(),
        L4::Udp(_) => 8,
    };
    // Saturating: absurd payload lengths must fail the size check, not overflow.
    let l4_len = spec.payload_len.saturating_add(l4_hdr);
    let l3_len = l4_len.saturating_add(l3_hdr);
    let len = l3_len.saturating_add(l2);
    if len.max(spec.pad_to) > MAX_CAPLEN as usize {
        return Err(format!(
            "the frame would be {} bytes, more than the {MAX_CAPLEN}-byte snaplen",
            len.max(spec.pad_to)
        ));
    }
    let ip_limit = match spec.l3 {
        L3::V4(_) => Some(("IPv4 total length", l3_len)),
        L3::V6(_) => Some(("IPv6 payload length", l3_len - 40)),
        L3::None => None,
    };
    if let Some((what, n)) = ip_limit.filter(|(_, n)| *n > 0xffff) {
        return Err(format!("{what} {n} does not fit in 16 bits"));
    }
    Ok(Layout {
        l2,
        l3_hdr,
        l4_hdr,
        l3_len,
        l4_len,
        len,
    })
}

/// Builds `spec` into `out` (cleared first). Errors name the length that does not fit.
pub fn build(spec: &FrameSpec, out: &mut Vec<u8>) -> Result<(), String> {
    let lay = layout(spec)?;
    out.clear();
    out.resize(lay.len.max(spec.pad_to), 0);
    let payload_at = lay.l2 + lay.l3_hdr + lay.l4_hdr;
    for (i, b) in out[payload_at..lay.len].iter_mut().enumerate() {
        *b = i as u8;
    }
    write_ethernet(spec, &mut out[..lay.l2])?;
    let proto = match spec.l4 {
        L4::Tcp(_) => Some(IPPROTO_TCP),
        L4::Udp(_) => Some(IPPROTO_UDP),
        L4::None => None,
    };
    debug_assert_eq!(lay.l3_len, lay.l3_hdr + lay.l4_len);
    let ip_packet = &mut out[lay.l2..lay.l2 + lay.l3_len];
    match &spec.l3 {
        L3::None => {}
        L3::V4(ip) => write_ipv4(spec, ip, proto, ip_packet)?,
        L3::V6(ip) => write_ipv6(spec, ip, proto, lay.l3_hdr, ip_packet)?,
    }
    if let Some(t) = &spec.ext.tunnel {
        crate::tunnel::wrap(t, out)?;
    }
    Ok(())
}

/// The Ethernet header and VLAN tags (`l2`, exactly their length).
fn write_ethernet(spec: &FrameSpec, l2: &mut [u8]) -> Result<(), String> {
    let inner_type = spec.ethertype.unwrap_or(match spec.l3 {
        L3::V6(_) => ETH_P_IPV6,
        _ => ETH_P_IP,
    });
    let mut eth = MutableEthernetPacket::new(l2).ok_or_else(|| short("Ethernet"))?;
    eth.set_destination(spec.dst.into());
    eth.set_source(spec.src.into());
    eth.set_ethertype(EtherType(spec.vlans.first().map_or(inner_type, |t| t.tpid)));
    for (i, tag) in spec.vlans.iter().enumerate() {
        let next = spec.vlans.get(i + 1).map_or(inner_type, |t| t.tpid);
        let at = 14 + 4 * i;
        let mut v = MutableVlanPacket::new(&mut l2[at..at + 4]).ok_or_else(|| short("VLAN"))?;
        v.set_priority_code_point(ClassOfService::new(tag.pcp));
        v.set_drop_eligible_indicator(tag.dei);
        v.set_vlan_identifier(tag.vid);
        v.set_ethertype(EtherType(next));
    }
    Ok(())
}

/// The IPv4 header of `pkt` (the IPv4 packet, payload already in place) and the TCP/UDP
/// header after it.
fn write_ipv4(
    spec: &FrameSpec,
    ip: &Ipv4Spec,
    proto: Option<u8>,
    pkt: &mut [u8],
) -> Result<(), String> {
    let p = IpNextHeaderProtocol(ip.proto.or(proto).unwrap_or(IPPROTO_EXPERIMENT));
    let addrs = (IpAddr::V4(ip.src), IpAddr::V4(ip.dst));
    fill_l4(spec, &mut pkt[20..], p, addrs, |t, u| match (t, u) {
        (Some(t), _) => tcp::ipv4_checksum(&t.to_immutable(), &ip.src, &ip.dst),
        (_, Some(u)) => udp::ipv4_checksum(&u.to_immutable(), &ip.src, &ip.dst),
        _ => 0,
    })?;
    let l3_len = pkt.len();
    let mut h = MutableIpv4Packet::new(pkt).ok_or_else(|| short("IPv4"))?;
    h.set_version(4);
    h.set_header_length(5);
    h.set_dscp(ip.tos >> 2);
    h.set_ecn(ip.tos & 3);
    h.set_total_length(l3_len as u16);
    h.set_identification(ip.id);
    let mf = if spec.ext.ip_mf {
        Ipv4Flags::MoreFragments
    } else {
        0
    };
    h.set_flags(if ip.df { Ipv4Flags::DontFragment } else { 0 } | mf);
    h.set_fragment_offset(spec.ext.ip_frag_offset);
    h.set_ttl(ip.ttl);
    h.set_next_level_protocol(p);
    h.set_source(ip.src);
    h.set_destination(ip.dst);
    let good = ipv4::checksum(&h.to_immutable());
    h.set_checksum(pick(spec.ip_csum, good, 0));
    Ok(())
}

/// The IPv6 header and extension headers of `pkt` (the IPv6 packet, `l3_hdr` bytes of
/// headers, payload already in place) and the TCP/UDP header after them.
fn write_ipv6(
    spec: &FrameSpec,
    ip: &Ipv6Spec,
    proto: Option<u8>,
    l3_hdr: usize,
    pkt: &mut [u8],
) -> Result<(), String> {
    let p = IpNextHeaderProtocol(ip.next_header.or(proto).unwrap_or(IPPROTO_NONE));
    let addrs = (IpAddr::V6(ip.src), IpAddr::V6(ip.dst));
    fill_l4(spec, &mut pkt[l3_hdr..], p, addrs, |t, u| match (t, u) {
        (Some(t), _) => tcp::ipv6_checksum(&t.to_immutable(), &ip.src, &ip.dst),
        (_, Some(u)) => udp::ipv6_checksum(&u.to_immutable(), &ip.src, &ip.dst),
        _ => 0,
    })?;
    let l3_len = pkt.len();
    let mut h = MutableIpv6Packet::new(pkt).ok_or_else(|| short("IPv6"))?;
    h.set_version(6);
    h.set_traffic_class(ip.traffic_class);
    h.set_flow_label(ip.flow_label);
    h.set_payload_length((l3_len - 40) as u16);
    h.set_next_header(
        ip.ext
            .first()
            .map_or(p, |e| IpNextHeaderProtocol(e.protocol())),
    );
    h.set_hop_limit(ip.hop_limit);
    h.set_source(ip.src);
    h.set_destination(ip.dst);
    crate::ipv6_ext::emit(&ip.ext, p.0, &mut pkt[40..l3_hdr]);
    Ok(())
}

/// Writes the TCP/UDP header into `l4` (header + payload) and its checksum.
/// `full` computes the correct checksum with pnet; "partial" is the folded pseudo-header
/// sum of `addrs` (sim's checksum module: the one pseudo-header of the project).
fn fill_l4(
    spec: &FrameSpec,
    l4: &mut [u8],
    proto: IpNextHeaderProtocol,
    addrs: (IpAddr, IpAddr),
    full: impl Fn(Option<&MutableTcpPacket>, Option<&MutableUdpPacket>) -> u16,
) -> Result<(), String> {
    let len = u32::try_from(l4.len()).unwrap_or(u32::MAX);
    let pseudo = checksum::pseudo_header(addrs.0, addrs.1, proto.0, len);
    let partial = checksum::fold(pseudo.unwrap_or(0));
    let l4_len = l4.len() as u16;
    match &spec.l4 {
        L4::None => {}
        L4::Tcp(t) => {
            let mut h = MutableTcpPacket::new(l4).ok_or_else(|| short("TCP"))?;
            h.set_source(t.sport);
            h.set_destination(t.dport);
            h.set_sequence(t.seq);
            h.set_acknowledgement(t.ack);
            h.set_data_offset(5 + (spec.ext.tcp_options.len() / 4) as u8);
            {
                use pnet_packet::MutablePacket;
                h.packet_mut()[20..20 + spec.ext.tcp_options.len()]
                    .copy_from_slice(&spec.ext.tcp_options);
            }
            h.set_flags(t.flags);
            h.set_window(t.window);
            h.set_urgent_ptr(t.urg);
            let good = full(Some(&h), None);
            h.set_checksum(pick(spec.l4_csum, good, partial));
        }
        L4::Udp(u) => {
            let mut h = MutableUdpPacket::new(l4).ok_or_else(|| short("UDP"))?;
            h.set_source(u.sport);
            h.set_destination(u.dport);
            h.set_length(l4_len);
            // RFC 768: a computed 0 is sent as all ones.
            let good = match full(None, Some(&h)) {
                0 => 0xffff,
                c => c,
            };
            h.set_checksum(pick(spec.l4_csum, good, partial));
        }
    }
    Ok(())
}

fn pick(c: Csum, good: u16, partial: u16) -> u16 {
    match c {
        Csum::Good => good,
        Csum::Zero => 0,
        Csum::Partial => partial,
        Csum::Bad => match good ^ 0x0100 {
            0 => good ^ 0x0200,
            b => b,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn spec(l3: L3, l4: L4, payload_len: usize) -> FrameSpec {
        FrameSpec {
            dst: [2, 0, 0, 0, 0, 2],
            src: [2, 0, 0, 0, 0, 1],
            vlans: Vec::new(),
            ethertype: None,
            l3,
            l4,
            payload_len,
            pad_to: 0,
            ip_csum: Csum::Good,
            l4_csum: Csum::Good,
            ext: Default::default(),
        }
    }

    fn v4() -> L3 {
        L3::V4(Ipv4Spec {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            ttl: 64,
            id: 1,
            tos: 0,
            df: true,
            proto: None,
        })
    }

    fn v6() -> L3 {
        L3::V6(Ipv6Spec {
            src: "fd00::1".parse().expect("addr"),
            dst: "fd00::2".parse().expect("addr"),
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
            next_header: None,
            ext: Vec::new(),
        })
    }

    fn tcp() -> L4 {
        L4::Tcp(TcpSpec {
            sport: 1000,
            dport: 80,
            seq: 1,
            ack: 0,
            flags: 0x10,
            window: 512,
            urg: 0,
        })
    }

    fn udp() -> L4 {
        L4::Udp(UdpSpec {
            sport: 5000,
            dport: 53,
        })
    }

    /// Independent ones-complement sum, folded.
    fn ones(parts: &[&[u8]]) -> u16 {
        let mut s: u64 = 0;
        for p in parts {
            for w in p.chunks(2) {
                s += u64::from(w[0]) << 8 | u64::from(*w.get(1).unwrap_or(&0));
            }
        }
        while s > 0xffff {
            s = (s >> 16) + (s & 0xffff);
        }
        s as u16
    }

    fn built(s: &FrameSpec) -> Vec<u8> {
        let mut out = Vec::new();
        build(s, &mut out).expect("builds");
        out
    }

    #[test]
    fn ipv4_tcp_checksums_verify() {
        for payload in [0, 1, 100, 1400, 4000] {
            let f = built(&spec(v4(), tcp(), payload));
            assert_eq!(f.len(), 54 + payload);
            assert_eq!(&f[12..14], &[0x08, 0x00]);
            let ip = &f[14..34];
            assert_eq!(ip[0], 0x45);
            assert_eq!(u16::from_be_bytes([ip[2], ip[3]]) as usize, 40 + payload);
            assert_eq!(ip[6], 0x40, "DF");
            assert_eq!(ones(&[ip]), 0xffff, "IPv4 header checksum");
            let l4 = &f[34..];
            let len = (l4.len() as u16).to_be_bytes();
            let pseudo = [&ip[12..20], &[0, 6], &len[..]].concat();
            assert_eq!(
                ones(&[&pseudo, l4]),
                0xffff,
                "TCP checksum, payload {payload}"
            );
            assert_eq!(l4[12], 0x50);
            assert_eq!(l4[13], 0x10);
            assert!(l4[20..].iter().enumerate().all(|(i, b)| *b == i as u8));
        }
    }

    #[test]
    fn ipv6_udp_checksum_verifies() {
        for payload in [0, 7, 200] {
            let f = built(&spec(v6(), udp(), payload));
            assert_eq!(&f[12..14], &[0x86, 0xdd]);
            let ip = &f[14..54];
            assert_eq!(ip[6], 17);
            let l4 = &f[54..];
            let len = (l4.len() as u32).to_be_bytes();
            let pseudo = [&ip[8..40], &len[..], &[0, 0, 0, 17]].concat();
            assert_eq!(ones(&[&pseudo, l4]), 0xffff);
            assert_eq!(u16::from_be_bytes([l4[4], l4[5]]) as usize, 8 + payload);
        }
    }

    #[test]
    fn vlan_tags_land_at_offset_12_in_order() {
        let mut s = spec(v4(), udp(), 10);
        s.vlans = vec![
            VlanTag {
                tpid: 0x88a8,
                pcp: 0,
                dei: 0,
                vid: 10,
            },
            VlanTag {
                tpid: 0x8100,
                pcp: 7,
                dei: 1,
                vid: 4095,
            },
        ];
        let f = built(&s);
        assert_eq!(
            &f[12..22],
            &[0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0xff, 0xff, 0x08, 0x00]
        );
        assert_eq!(f[22], 0x45);
        assert_eq!(f.len(), 22 + 20 + 8 + 10);
    }

    #[test]
    fn bad_zero_partial_and_padding() {
        let mut s = spec(v4(), udp(), 4);
        s.pad_to = 60;
        let good = built(&s);
        assert_eq!(good.len(), 60);
        assert!(good[46..].iter().all(|b| *b == 0), "padding is zeros");
        assert_eq!(
            u16::from_be_bytes([good[16], good[17]]),
            32,
            "padding is outside IP"
        );
        s.ip_csum = Csum::Bad;
        s.l4_csum = Csum::Bad;
        let bad = built(&s);
        assert_ne!(ones(&[&bad[14..34]]), 0xffff);
        assert_ne!(bad[40..42], good[40..42]);
        assert_ne!(bad[40..42], [0, 0]);
        s.l4_csum = Csum::Zero;
        assert_eq!(built(&s)[40..42], [0, 0]);
        s.l4_csum = Csum::Partial;
        let p = built(&s);
        let pseudo = [&p[26..34], &[0, 17, 0, 12]].concat();
        assert_eq!(u16::from_be_bytes([p[40], p[41]]), ones(&[&pseudo]));
    }

    #[test]
    fn raw_l3_and_limits() {
        let mut s = spec(L3::None, L4::None, 46);
        s.ethertype = Some(0x88cc);
        let f = built(&s);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[12..15], &[0x88, 0xcc, 0]);
        let e = build(&spec(v4(), udp(), 70_000), &mut Vec::new()).expect_err("too long");
        assert_eq!(e, "IPv4 total length 70028 does not fit in 16 bits");
        let e = build(&spec(v6(), tcp(), usize::MAX), &mut Vec::new()).expect_err("huge");
        assert!(e.starts_with("the frame would be"), "{e}");
    }
}
