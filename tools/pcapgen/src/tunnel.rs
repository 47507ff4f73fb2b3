//! Frame extensions for the GRO scenarios: TCP options, IPv4 fragment bits, and a tunnel
//! around the described frame (outer Ethernet + IPv4 + GRE with ETH_P_TEB, or + UDP +
//! VXLAN), which then becomes the inner Ethernet frame.
//!
//! ```toml
//! [[frame]]
//! ipv4 = {}
//! tcp = { sport = 40000, dport = 80, seq = 1000 }
//! tcp_options = "0101080a000003e800000000"     # hex, a multiple of 4 bytes
//! ipv4_frag = { mf = true, offset = 0 }        # offset in 8-byte units
//! tunnel = { kind = "gre", key = 42, seq = 7, csum = "good" }
//! # tunnel = { kind = "vxlan", vni = 42, sport = 50000, udp_csum = "zero" }
//! # outer fields (all optional): outer_src_mac, outer_dst_mac, outer_src = "192.168.0.1",
//! # outer_dst = "192.168.0.2", outer_ttl = 64, outer_tos = 0, outer_id = 100, outer_df = false,
//! # gre_flags = 0x3000 (the raw flags/version word, replacing the computed one)
//! # An IPv6 outer header instead (ip6gretap, VXLAN over IPv6): outer_src/outer_dst as
//! # IPv6 addresses (default fd00:1::1 -> fd00:1::2), outer_ttl is the hop limit,
//! # outer_tos the Traffic Class, outer_flow_label = 0x12345 (20 bits):
//! # tunnel = { kind = "gre", key = 42, outer_ip = 6, outer_flow_label = 7 }
//! # IP in IP (ipip, sit, ip6tnl): the inner IP packet without its Ethernet header:
//! # tunnel = { kind = "ipip", outer_ip = 6 }
//! ```
//! With `count`, the outer IPv4 ID and the GRE sequence number advance by one per copy.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Deserialize;

use crate::build::Csum;
use crate::desc::Mac;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TunnelKind {
    Gre,
    Vxlan,
    /// IP in IP: the inner frame's IP packet (its Ethernet header dropped) behind the
    /// outer IP header, protocol 4 (IPv4 inside) or 41 (IPv6 inside): ipip, sit, ip6tnl.
    Ipip,
}

/// `tunnel = { ... }` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelDesc {
    pub kind: TunnelKind,
    pub key: Option<u32>,
    pub seq: Option<u32>,
    pub csum: Option<Csum>,
    pub gre_flags: Option<u16>,
    pub vni: Option<u32>,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    pub udp_csum: Option<Csum>,
    pub outer_src_mac: Option<Mac>,
    pub outer_dst_mac: Option<Mac>,
    pub outer_src: Option<IpAddr>,
    pub outer_dst: Option<IpAddr>,
    pub outer_ttl: Option<u8>,
    pub outer_tos: Option<u8>,
    pub outer_id: Option<u16>,
    pub outer_df: Option<bool>,
    /// 4 (default) or 6.
    pub outer_ip: Option<u8>,
    pub outer_flow_label: Option<u32>,
}

/// `ipv4_frag = { ... }`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FragDesc {
    #[serde(default)]
    pub mf: bool,
    #[serde(default)]
    pub offset: u16,
}

/// Everything a frame carries beyond the base description.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ext {
    pub tcp_options: Vec<u8>,
    pub ip_mf: bool,
    pub ip_frag_offset: u16,
    pub tunnel: Option<Tunnel>,
}

/// A resolved tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    pub kind: TunnelKind,
    pub key: Option<u32>,
    pub seq: Option<u32>,
    pub csum: Option<Csum>,
    pub gre_flags: Option<u16>,
    pub vni: u32,
    pub sport: u16,
    pub dport: u16,
    pub udp_csum: Csum,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// Both of one family (the outer header's).
    pub src: IpAddr,
    pub dst: IpAddr,
    pub ttl: u8,
    pub tos: u8,
    pub id: u16,
    pub df: bool,
    pub flow_label: u32,
}

/// Resolve the extension keys of one frame; errors are (key, message).
pub fn resolve(
    tcp_options: Option<&str>,
    frag: Option<FragDesc>,
    tunnel: Option<&TunnelDesc>,
    has_tcp: bool,
    has_v4: bool,
) -> Result<Ext, (&'static str, String)> {
    let mut ext = Ext::default();
    if let Some(hex) = tcp_options {
        ext.tcp_options = resolve_tcp_options(hex, has_tcp)?;
    }
    if let Some(f) = frag {
        if !has_v4 {
            return Err(("ipv4_frag", "only applies to an `ipv4` frame".into()));
        }
        if f.offset > 0x1fff {
            return Err((
                "ipv4_frag",
                format!("offset {} does not fit in 13 bits", f.offset),
            ));
        }
        ext.ip_mf = f.mf;
        ext.ip_frag_offset = f.offset;
    }
    if let Some(t) = tunnel {
        ext.tunnel = Some(resolve_tunnel(t)?);
    }
    Ok(ext)
}

/// `tcp_options`: hex, a multiple of 4 bytes, at most 40 (a 60-byte TCP header).
fn resolve_tcp_options(hex: &str, has_tcp: bool) -> Result<Vec<u8>, (&'static str, String)> {
    if !has_tcp {
        return Err(("tcp_options", "only applies to a `tcp` frame".into()));
    }
    let b = crate::desc::parse_hex(hex).map_err(|m| ("tcp_options", m))?;
    if b.len() % 4 != 0 || b.len() > 40 {
        return Err((
            "tcp_options",
            format!("{} bytes: options are a multiple of 4, at most 40", b.len()),
        ));
    }
    Ok(b)
}

/// A `tunnel` with its defaults: the fields of its kind only, an outer header of one
/// IP family.
fn resolve_tunnel(t: &TunnelDesc) -> Result<Tunnel, (&'static str, String)> {
    check_kind_fields(t)?;
    let vni = t.vni.unwrap_or(42);
    if vni > 0xff_ffff {
        return Err(("tunnel", format!("vni {vni} is wider than 24 bits")));
    }
    let v6 = outer_is_v6(t)?;
    let flow_label = t.outer_flow_label.unwrap_or(0);
    if flow_label > 0xf_ffff {
        return Err((
            "tunnel",
            format!("outer_flow_label {flow_label:#x} is wider than 20 bits"),
        ));
    }
    let (src, dst) = outer_addrs(t, v6)?;
    Ok(Tunnel {
        kind: t.kind,
        key: t.key,
        seq: t.seq,
        csum: t.csum,
        gre_flags: t.gre_flags,
        vni,
        sport: t.sport.unwrap_or(50000),
        dport: t.dport.unwrap_or(4789),
        // RFC 8200 8.1: over IPv6 a zero UDP checksum is dropped unless the socket
        // allows it (vxlan's udp6zerocsumrx), so the default there is a good one.
        udp_csum: t
            .udp_csum
            .unwrap_or(if v6 { Csum::Good } else { Csum::Zero }),
        src_mac: t.outer_src_mac.map_or([2, 0, 0, 0, 1, 1], |m| m.0),
        dst_mac: t.outer_dst_mac.map_or([2, 0, 0, 0, 1, 2], |m| m.0),
        src,
        dst,
        ttl: t.outer_ttl.unwrap_or(64),
        tos: t.outer_tos.unwrap_or(0),
        id: t.outer_id.unwrap_or(100),
        df: t.outer_df.unwrap_or(false),
        flow_label,
    })
}

/// GRE fields only with kind = "gre", VXLAN fields only with "vxlan", neither with
/// "ipip"; the GRE csum is good or bad (it sets the C flag).
fn check_kind_fields(t: &TunnelDesc) -> Result<(), (&'static str, String)> {
    let gre = t.key.is_some() || t.seq.is_some() || t.csum.is_some() || t.gre_flags.is_some();
    let vxlan = t.vni.is_some() || t.sport.is_some() || t.dport.is_some() || t.udp_csum.is_some();
    if t.kind == TunnelKind::Gre && vxlan {
        return Err((
            "tunnel",
            "vni, sport, dport and udp_csum belong to kind = \"vxlan\"".into(),
        ));
    }
    if t.kind == TunnelKind::Ipip && (gre || vxlan) {
        return Err((
            "tunnel",
            "kind = \"ipip\" has no GRE or VXLAN fields (only the outer ones)".into(),
        ));
    }
    if t.kind == TunnelKind::Vxlan && gre {
        return Err((
            "tunnel",
            "key, seq, csum and gre_flags belong to kind = \"gre\"".into(),
        ));
    }
    if t.csum == Some(Csum::Partial) || t.csum == Some(Csum::Zero) {
        return Err((
            "tunnel",
            "csum is \"good\" or \"bad\" (it sets the C flag)".into(),
        ));
    }
    Ok(())
}

/// `outer_ip` (4 or 6), with the outer fields that belong to the other family refused.
fn outer_is_v6(t: &TunnelDesc) -> Result<bool, (&'static str, String)> {
    let v6 = match t.outer_ip.unwrap_or(4) {
        4 => false,
        6 => true,
        v => return Err(("tunnel", format!("outer_ip = {v}: 4 or 6"))),
    };
    if !v6 && (t.outer_flow_label.is_some()) {
        return Err(("tunnel", "outer_flow_label needs outer_ip = 6".into()));
    }
    if v6 && (t.outer_id.is_some() || t.outer_df.is_some()) {
        return Err((
            "tunnel",
            "outer_id and outer_df belong to an IPv4 outer header".into(),
        ));
    }
    Ok(v6)
}

/// `outer_src`/`outer_dst` or the family's defaults; both of the outer header's family.
fn outer_addrs(t: &TunnelDesc, v6: bool) -> Result<(IpAddr, IpAddr), (&'static str, String)> {
    let (dsrc, ddst): (IpAddr, IpAddr) = if v6 {
        let a = |n| IpAddr::V6(Ipv6Addr::new(0xfd00, 1, 0, 0, 0, 0, 0, n));
        (a(1), a(2))
    } else {
        (
            Ipv4Addr::new(192, 168, 0, 1).into(),
            Ipv4Addr::new(192, 168, 0, 2).into(),
        )
    };
    let (src, dst) = (t.outer_src.unwrap_or(dsrc), t.outer_dst.unwrap_or(ddst));
    if src.is_ipv6() != v6 || dst.is_ipv6() != v6 {
        return Err((
            "tunnel",
            format!(
                "outer_src {src} / outer_dst {dst}: an IPv{} outer header (outer_ip)",
                if v6 { 6 } else { 4 }
            ),
        ));
    }
    Ok((src, dst))
}

/// The `rep`-th copy: outer ID and GRE sequence advance by one.
pub fn repeat(ext: &mut Ext, rep: u32) {
    if let Some(t) = &mut ext.tunnel {
        t.id = t.id.wrapping_add(rep as u16);
        if let Some(s) = &mut t.seq {
            *s = s.wrapping_add(rep);
        }
    }
}

fn ones(data: &[u8], mut s: u32) -> u32 {
    for w in data.chunks(2) {
        s += u32::from(w[0]) << 8 | u32::from(w.get(1).copied().unwrap_or(0));
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

fn csum_value(c: Csum, good: u16) -> u16 {
    match c {
        Csum::Good | Csum::Partial => good,
        Csum::Zero => 0,
        Csum::Bad => match good ^ 0x0100 {
            0 => good ^ 0x0200,
            b => b,
        },
    }
}

/// The address bytes (4 for IPv4, 16 for IPv6).
fn octets(a: IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// Wrap the inner frame in `out` in the tunnel's outer headers.
pub fn wrap(t: &Tunnel, out: &mut Vec<u8>) -> Result<(), String> {
    let inner = std::mem::take(out);
    let mut l4 = Vec::with_capacity(inner.len() + 16);
    let proto = match t.kind {
        TunnelKind::Gre => {
            gre_encap(t, &inner, &mut l4);
            47u8
        }
        TunnelKind::Vxlan => {
            vxlan_encap(t, &inner, &mut l4)?;
            17u8
        }
        TunnelKind::Ipip => {
            // IPPROTO_IPIP for an inner IPv4 packet, IPPROTO_IPV6 for an inner IPv6 one.
            let proto = match inner.get(12..14) {
                Some([0x08, 0x00]) => 4u8,
                Some([0x86, 0xdd]) => 41u8,
                _ => return Err("kind = \"ipip\" needs an inner IPv4 or IPv6 frame".into()),
            };
            l4.extend_from_slice(&inner[14..]);
            proto
        }
    };
    out.extend_from_slice(&t.dst_mac);
    out.extend_from_slice(&t.src_mac);
    if let (IpAddr::V6(src), IpAddr::V6(dst)) = (t.src, t.dst) {
        return push_outer_v6(t, src, dst, proto, &l4, out);
    }
    push_outer_v4(t, proto, &l4, out)
}

/// The GRE header (RFC 2784/2890: C, K, S flags and their words; ETH_P_TEB) and the inner
/// frame, with its checksum over both when `csum` is set.
fn gre_encap(t: &Tunnel, inner: &[u8], l4: &mut Vec<u8>) {
    let mut flags = 0u16;
    if t.csum.is_some() {
        flags |= 0x8000;
    }
    if t.key.is_some() {
        flags |= 0x2000;
    }
    if t.seq.is_some() {
        flags |= 0x1000;
    }
    l4.extend_from_slice(&t.gre_flags.unwrap_or(flags).to_be_bytes());
    l4.extend_from_slice(&0x6558u16.to_be_bytes());
    if t.csum.is_some() {
        l4.extend_from_slice(&[0; 4]);
    }
    if let Some(k) = t.key {
        l4.extend_from_slice(&k.to_be_bytes());
    }
    if let Some(s) = t.seq {
        l4.extend_from_slice(&s.to_be_bytes());
    }
    l4.extend_from_slice(inner);
    if let Some(c) = t.csum {
        let good = !(ones(l4, 0) as u16);
        l4[4..6].copy_from_slice(&csum_value(c, good).to_be_bytes());
    }
}

/// The UDP and VXLAN headers (RFC 7348, I flag and the VNI) and the inner frame, with
/// the UDP checksum over the outer family's pseudo-header.
fn vxlan_encap(t: &Tunnel, inner: &[u8], l4: &mut Vec<u8>) -> Result<(), String> {
    let len = 16 + inner.len();
    if len > 0xffff {
        return Err(format!("UDP length {len} does not fit in 16 bits"));
    }
    l4.extend_from_slice(&t.sport.to_be_bytes());
    l4.extend_from_slice(&t.dport.to_be_bytes());
    l4.extend_from_slice(&(len as u16).to_be_bytes());
    l4.extend_from_slice(&[0, 0, 0x08, 0, 0, 0]);
    l4.extend_from_slice(&(t.vni << 8).to_be_bytes());
    l4.extend_from_slice(inner);
    let mut pseudo = Vec::with_capacity(40);
    match (t.src, t.dst) {
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            // RFC 8200 8.1: addresses, 32-bit length, 3 zero bytes, next header.
            pseudo.extend_from_slice(&s.octets());
            pseudo.extend_from_slice(&d.octets());
            pseudo.extend_from_slice(&(len as u32).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, 17]);
        }
        _ => {
            pseudo.extend_from_slice(&octets(t.src));
            pseudo.extend_from_slice(&octets(t.dst));
            pseudo.extend_from_slice(&[0, 17]);
            pseudo.extend_from_slice(&(len as u16).to_be_bytes());
        }
    }
    let good = match !(ones(l4, ones(&pseudo, 0)) as u16) {
        0 => 0xffff,
        c => c,
    };
    l4[6..8].copy_from_slice(&csum_value(t.udp_csum, good).to_be_bytes());
    Ok(())
}

/// The outer IPv6 header (ETH_P_IPV6) and its payload `l4`.
fn push_outer_v6(
    t: &Tunnel,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    proto: u8,
    l4: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if l4.len() > 0xffff {
        return Err(format!(
            "outer IPv6 payload length {} does not fit in 16 bits",
            l4.len()
        ));
    }
    out.extend_from_slice(&[0x86, 0xdd]);
    let word = (6u32 << 28) | (u32::from(t.tos) << 20) | t.flow_label;
    out.extend_from_slice(&word.to_be_bytes());
    out.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    out.extend_from_slice(&[proto, t.ttl]);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&dst.octets());
    out.extend_from_slice(l4);
    Ok(())
}

/// The outer IPv4 header (ETH_P_IP, with its checksum) and its payload `l4`.
fn push_outer_v4(t: &Tunnel, proto: u8, l4: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let tot = 20 + l4.len();
    if tot > 0xffff {
        return Err(format!(
            "outer IPv4 total length {tot} does not fit in 16 bits"
        ));
    }
    out.extend_from_slice(&[0x08, 0x00]);
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[1] = t.tos;
    ip[2..4].copy_from_slice(&(tot as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&t.id.to_be_bytes());
    ip[6] = if t.df { 0x40 } else { 0 };
    ip[8] = t.ttl;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&octets(t.src));
    ip[16..20].copy_from_slice(&octets(t.dst));
    let c = !(ones(&ip, 0) as u16);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&ip);
    out.extend_from_slice(l4);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tunnel(kind: TunnelKind) -> Tunnel {
        Tunnel {
            kind,
            key: Some(42),
            seq: None,
            csum: Some(Csum::Good),
            gre_flags: None,
            vni: 42,
            sport: 50000,
            dport: 4789,
            udp_csum: Csum::Good,
            src_mac: [2, 0, 0, 0, 1, 1],
            dst_mac: [2, 0, 0, 0, 1, 2],
            src: Ipv4Addr::new(192, 168, 0, 1).into(),
            dst: Ipv4Addr::new(192, 168, 0, 2).into(),
            ttl: 64,
            tos: 0,
            id: 100,
            df: false,
            flow_label: 0,
        }
    }

    fn v6(kind: TunnelKind) -> Tunnel {
        Tunnel {
            src: "fd00:1::1".parse().unwrap(),
            dst: "fd00:1::2".parse().unwrap(),
            tos: 0x20,
            flow_label: 0x12345,
            ttl: 63,
            ..tunnel(kind)
        }
    }

    #[test]
    fn gre_over_ipv6_has_the_fixed_header_and_payload_length() {
        let mut out = vec![0xabu8; 60];
        wrap(&v6(TunnelKind::Gre), &mut out).unwrap();
        // 14 + 40 + 12 (C, K) + 60.
        assert_eq!(out.len(), 126);
        assert_eq!(&out[12..14], &[0x86, 0xdd]);
        // Version 6, Traffic Class 0x20, flow label 0x12345.
        assert_eq!(&out[14..18], &[0x62, 0x01, 0x23, 0x45]);
        assert_eq!(u16::from_be_bytes([out[18], out[19]]), 12 + 60);
        assert_eq!((out[20], out[21]), (47, 63));
        assert_eq!(&out[54..58], &[0xa0, 0x00, 0x65, 0x58]);
        assert_eq!(ones(&out[54..], 0), 0xffff, "GRE checksum");
    }

    #[test]
    fn vxlan_over_ipv6_udp_checksum_verifies_with_the_rfc8200_pseudo_header() {
        let mut out = vec![0x11u8; 61];
        wrap(&v6(TunnelKind::Vxlan), &mut out).unwrap();
        assert_eq!(out.len(), 61 + 70);
        assert_eq!(out[20], 17);
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&out[22..54]);
        pseudo.extend_from_slice(&((61 + 16) as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, 17]);
        assert_eq!(ones(&out[54..], ones(&pseudo, 0)), 0xffff);
    }

    #[test]
    fn gre_with_key_and_checksum_verifies() {
        let mut out = vec![0xabu8; 60];
        wrap(&tunnel(TunnelKind::Gre), &mut out).unwrap();
        // 14 + 20 + 12 (C, K) + 60.
        assert_eq!(out.len(), 106);
        assert_eq!(&out[34..38], &[0xa0, 0x00, 0x65, 0x58]);
        assert_eq!(&out[42..46], &42u32.to_be_bytes());
        assert_eq!(ones(&out[34..], 0), 0xffff, "GRE checksum");
        assert_eq!(ones(&out[14..34], 0), 0xffff, "outer IPv4 checksum");
        assert_eq!(out[23], 47);
    }

    #[test]
    fn vxlan_udp_checksum_verifies() {
        let mut out = vec![0x11u8; 61];
        wrap(&tunnel(TunnelKind::Vxlan), &mut out).unwrap();
        assert_eq!(out.len(), 61 + 50);
        assert_eq!(&out[36..38], &4789u16.to_be_bytes());
        assert_eq!(&out[42..50], &[0x08, 0, 0, 0, 0, 0, 42, 0]);
        let mut pseudo = vec![192, 168, 0, 1, 192, 168, 0, 2, 0, 17];
        pseudo.extend_from_slice(&((61 + 16) as u16).to_be_bytes());
        assert_eq!(ones(&out[34..], ones(&pseudo, 0)), 0xffff);
    }
}
