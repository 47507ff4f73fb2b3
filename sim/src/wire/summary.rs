//! One-line, deterministic summaries of Ethernet frames for traces, tcpdump-like:
//!
//! ```text
//! 02:00:00:00:00:01 > 02:00:00:00:00:02, IPv4 10.0.0.1 > 10.0.0.2, TCP 1000 > 80 [A] seq 1 ack 0 win 512 len 100
//! ```
//!
//! The datapath under test produces malformed and truncated frames on purpose, so
//! [`describe`] must never panic. Each header is read through its view in this module
//! after the view's `check_len` (the fixed fields); the variable lengths (IHL, TCP data
//! offset, UDP length, IPv6 extension headers, GRE options) are judged here, so a bad
//! one is shown rather than refused, and the views' payload accessors clamp to the
//! buffer.

use std::fmt::Write as _;

use super::arp::{self, ARPOP_REPLY, ARPOP_REQUEST};
use super::gre::Gre;
use super::ipv6::{ExtHeaders, FRAG_HLEN};
use super::walk::TpidRule;
use super::{be16_at, ethernet, ipv4 as ip4, ipv6 as ip6, tcp as tcp_, udp as udp_, vlan, vxlan};
use crate::consts::{
    ETH_P_8021AD, ETH_P_8021Q, ETH_P_ARP, ETH_P_IP, ETH_P_IPV6, ETH_P_QINQ1, ETH_P_TEB,
};
use crate::consts::{
    ETH_P_802_3_MIN, IPPROTO_FRAGMENT, IPPROTO_GRE, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP,
    IPPROTO_UDP, VLAN_HLEN,
};
use crate::ethernet::eth_proto_is_802_3;
use crate::text;

/// How many tunnels deep `inner:` summaries go before eliding the rest.
pub const MAX_DEPTH: usize = 2;
/// How many stacked VLAN tags are shown before giving up (a frame of repeated TPIDs
/// would otherwise give a line as long as the frame).
pub const MAX_VLAN_TAGS: usize = 8;

/// LLC SAPs (include/net/llc_pdu.h) shown by name; the low bit of a DSAP is I/G, of an
/// SSAP C/R.
const LLC_SAP_IP: u8 = 0x06;
const LLC_SAP_BSPAN: u8 = 0x42;
const LLC_SAP_SNAP: u8 = 0xaa;
const LLC_SAP_IPX: u8 = 0xe0;
const LLC_SAP_NETBEUI: u8 = 0xf0;
const LLC_SAP_OSI: u8 = 0xfe;
/// LLC_PDU_TYPE_U (include/net/llc_pdu.h): the low two control bits of a U-format PDU,
/// whose control field is one byte (I and S formats have two).
const LLC_PDU_TYPE_U: u8 = 0x03;
/// The UI control byte of a SNAP header (LLC_1_PDU_CMD_UI).
const LLC_UI: u16 = 0x03;
/// A SNAP header after the LLC header: 3 bytes of OUI, 2 of protocol (RFC 1042).
const SNAP_HLEN: usize = 5;
use crate::consts::{IANA_VXLAN_UDP_PORT, VXLAN_HLEN};
/// sizeof(struct icmphdr) and sizeof(struct icmp6hdr).
const ICMP_HLEN: usize = 8;

/// Summarises an Ethernet frame on one line. Never panics, whatever the bytes.
pub fn describe(frame: &[u8]) -> String {
    let mut out = String::new();
    describe_into(&mut out, frame);
    out
}

/// [`describe`] appended to `out`, which must be empty or end in ": " (a trace line's
/// label), as the first part of a summary has no separator.
pub fn describe_into(out: &mut String, frame: &[u8]) {
    debug_assert!(out.is_empty() || out.ends_with(": "));
    ethernet(frame, 0, out);
}

/// A VLAN tag as "802.1Q pcp 3 dei 0 vid 100" ("802.1Q vid 100" when pcp and dei are
/// 0), for tags in the frame and for hw-accelerated ones (skb->vlan_proto/vlan_tci).
/// The TCI layout is include/linux/if_vlan.h: VLAN_PRIO_MASK, VLAN_CFI_MASK, VLAN_VID_MASK.
pub fn describe_vlan_tci(tpid: u16, tci: u16) -> String {
    let mut s = String::new();
    vlan_tci_into(&mut s, tpid, tci);
    s
}

/// [`describe_vlan_tci`] appended to `out`.
pub fn vlan_tci_into(out: &mut String, tpid: u16, tci: u16) {
    match tpid {
        ETH_P_8021Q => out.push_str("802.1Q"),
        ETH_P_8021AD => out.push_str("802.1ad"),
        ETH_P_QINQ1 => out.push_str("QinQ"),
        other => out.push_str(&tpid_name(other)),
    }
    let (pcp, dei, vid) = (
        (tci & vlan::VLAN_PRIO_MASK) >> vlan::VLAN_PRIO_SHIFT,
        u16::from(tci & vlan::VLAN_CFI_MASK != 0),
        tci & vlan::VLAN_VID_MASK,
    );
    if pcp != 0 || dei != 0 {
        out.push_str(" pcp ");
        text::dec(out, pcp);
        out.push_str(" dei ");
        text::dec(out, dei);
    }
    out.push_str(" vid ");
    text::dec(out, vid);
}

fn tpid_name(tpid: u16) -> String {
    match tpid {
        ETH_P_8021Q => "802.1Q".to_string(),
        ETH_P_8021AD => "802.1ad".to_string(),
        ETH_P_QINQ1 => "QinQ".to_string(),
        other => format!("vlan 0x{other:04x}"),
    }
}

fn ethertype_name(ethertype: u16) -> String {
    match ethertype {
        ETH_P_IP => "IPv4".to_string(),
        ETH_P_IPV6 => "IPv6".to_string(),
        ETH_P_ARP => "ARP".to_string(),
        ETH_P_TEB => "TEB".to_string(),
        other => format!("0x{other:04x}"),
    }
}

/// Starts a new ", "-separated part, except at the very start or right after "inner: ".
fn sep(out: &mut String) {
    if !out.is_empty() && !out.ends_with(": ") {
        out.push_str(", ");
    }
}

/// Writes one ", "-separated part. Writing to a String cannot fail, so the
/// fmt::Result is ignored here and in the other `write!`s below.
macro_rules! part {
    ($out:expr, $($fmt:tt)*) => {{
        sep($out);
        let _ = write!($out, $($fmt)*);
    }};
}

fn truncated(out: &mut String, what: &str, needed: usize, present: usize) {
    part!(
        out,
        "truncated {what} ({needed} bytes needed, {present} present)"
    );
}

/// Runs `f` on an encapsulated packet one level deeper, or elides it at MAX_DEPTH.
fn inner(out: &mut String, depth: usize, buf: &[u8], f: fn(&[u8], usize, &mut String)) {
    sep(out);
    out.push_str("inner: ");
    if depth >= MAX_DEPTH {
        let _ = write!(out, "{} bytes not shown (depth limit)", buf.len());
    } else {
        f(buf, depth + 1, out);
    }
}

/// Summarises a packet that has no link-layer header (what an IFF_TUN device carries)
/// by `protocol`, its skb->protocol: IPv4, IPv6 and ARP as in [`describe`], any other
/// as its protocol and length. Never panics.
pub fn describe_l3_into(out: &mut String, protocol: u16, packet: &[u8]) {
    debug_assert!(out.is_empty() || out.ends_with(": "));
    match protocol {
        ETH_P_IP => ipv4(packet, 0, out),
        ETH_P_IPV6 => ipv6(packet, 0, out),
        ETH_P_ARP => arp(packet, out),
        other => part!(out, "protocol 0x{other:04x} len {}", packet.len()),
    }
}

fn ethernet(frame: &[u8], depth: usize, out: &mut String) {
    let Ok(eth) = ethernet::Packet::new_checked(frame) else {
        part!(out, "truncated Ethernet ({} bytes)", frame.len());
        return;
    };
    sep(out);
    text::mac(out, &eth.src_addr());
    out.push_str(" > ");
    text::mac(out, &eth.dst_addr());
    network(eth.ethertype(), eth.payload(), depth, out);
}

/// VLAN tags, then the network layer named by `ethertype` (net/ethernet/eth.c:
/// eth_type_trans). A summary shows what a capture tool decodes, so the tags are
/// [`TpidRule::Capture`]'s (0x9100 too; the kernel's eth_type_vlan would stop there).
fn network(mut ethertype: u16, mut rest: &[u8], depth: usize, out: &mut String) {
    let mut tags = 0;
    while TpidRule::Capture.is_tag(ethertype) {
        if tags == MAX_VLAN_TAGS {
            part!(out, "more VLAN tags not shown, {} bytes", rest.len());
            return;
        }
        let Ok(tag) = vlan::Packet::new_checked(rest) else {
            return truncated(out, &tpid_name(ethertype), VLAN_HLEN, rest.len());
        };
        sep(out);
        vlan_tci_into(out, ethertype, tag.tci());
        ethertype = tag.ethertype();
        rest = tag.payload();
        tags += 1;
    }
    match ethertype {
        ETH_P_IP => ipv4(rest, depth, out),
        ETH_P_IPV6 => ipv6(rest, depth, out),
        ETH_P_ARP => arp(rest, out),
        len if len < ETH_P_802_3_MIN => ieee802_3(len, rest, out),
        other => part!(out, "ethertype 0x{other:04x} len {}", rest.len()),
    }
}

/// An 802.3 frame: the type field is the payload's length. The payload is Novell's raw
/// 802.3 when it starts with 0xffff (the eth_type_trans rule, on the bytes it reads),
/// else an 802.2 LLC header; bytes past the length are padding.
fn ieee802_3(len: u16, rest: &[u8], out: &mut String) {
    let len = usize::from(len);
    part!(out, "802.3 len {len}");
    if len > rest.len() {
        let _ = write!(out, " ({} present)", rest.len());
    } else if len < rest.len() {
        let _ = write!(out, " pad {}", rest.len() - len);
    }
    let data = rest.get(..len).unwrap_or(rest);
    if rest.get(..2) == Some(&[0xff, 0xff][..]) {
        part!(out, "raw 802.3 (IPX) len {}", data.len());
        return;
    }
    llc(data, out);
}

fn sap_name(sap: u8) -> Option<&'static str> {
    Some(match sap & !1 {
        LLC_SAP_IP => "IP",
        LLC_SAP_BSPAN => "STP",
        LLC_SAP_SNAP => "SNAP",
        LLC_SAP_IPX => "IPX",
        LLC_SAP_NETBEUI => "NetBIOS",
        LLC_SAP_OSI => "OSI",
        _ => return None,
    })
}

/// An 802.2 LLC header (include/net/llc_pdu.h: struct llc_pdu_un / llc_pdu_sn), and the
/// SNAP header a UI frame between SAPs 0xaa carries.
fn llc(data: &[u8], out: &mut String) {
    let (Some(&dsap), Some(&ssap), Some(&c0)) = (data.first(), data.get(1), data.get(2)) else {
        return truncated(out, "LLC", 3, data.len());
    };
    let (ctrl, hlen) = if c0 & LLC_PDU_TYPE_U == LLC_PDU_TYPE_U {
        (u16::from(c0), 3)
    } else {
        let Some(&c1) = data.get(3) else {
            return truncated(out, "LLC", 4, data.len());
        };
        (u16::from_be_bytes([c0, c1]), 4)
    };
    part!(
        out,
        "LLC dsap 0x{dsap:02x} ssap 0x{ssap:02x} ctrl 0x{ctrl:0w$x}",
        w = 2 * (hlen - 2)
    );
    if let Some(name) = sap_name(dsap) {
        let _ = write!(out, " ({name})");
    }
    let payload = data.get(hlen..).unwrap_or(&[]);
    if dsap == LLC_SAP_SNAP && ssap & !1 == LLC_SAP_SNAP && ctrl == LLC_UI {
        return snap(payload, out);
    }
    let _ = write!(out, " len {}", payload.len());
}

/// SNAP (IEEE 802 clause 10): an OUI and a protocol id. OUI 00:00:00 (RFC 1042) and
/// 00:00:f8 (802.1H) carry an EtherType; Cisco's 00:00:0c its own protocols.
fn snap(p: &[u8], out: &mut String) {
    let (Some(oui), Some(pid)) = (p.get(..3), be16_at(p, 3)) else {
        return truncated(out, "SNAP", SNAP_HLEN, p.len());
    };
    part!(out, "SNAP oui {:02x}:{:02x}:{:02x}", oui[0], oui[1], oui[2]);
    let name = match (oui, pid) {
        ([0, 0, 0] | [0, 0, 0xf8], t) if eth_proto_is_802_3(t) => {
            Some(ethertype_name(t)).filter(|n| !n.starts_with("0x"))
        }
        ([0, 0, 0x0c], 0x2000) => Some("CDP".to_string()),
        ([0, 0, 0x0c], 0x2003) => Some("VTP".to_string()),
        ([0, 0, 0x0c], 0x2004) => Some("DTP".to_string()),
        ([0, 0, 0x0c], 0x010b) => Some("PVST+".to_string()),
        _ => None,
    };
    let _ = write!(out, " type 0x{pid:04x}");
    if let Some(name) = name {
        let _ = write!(out, " ({name})");
    }
    let _ = write!(out, " len {}", p.len() - SNAP_HLEN);
}

fn arp(buf: &[u8], out: &mut String) {
    let Ok(arp) = arp::Packet::new_checked(buf) else {
        return truncated(out, "ARP", arp::PACKET_LEN, buf.len());
    };
    let (spa, tpa) = (arp.sender_proto_addr(), arp.target_proto_addr());
    match arp.operation() {
        ARPOP_REQUEST => part!(out, "ARP who-has {tpa} tell {spa}"),
        ARPOP_REPLY => {
            part!(out, "ARP reply {spa} is-at ");
            text::mac(out, &arp.sender_hw_addr());
        }
        op => part!(out, "ARP op {op}"),
    }
}

fn ipv4(buf: &[u8], depth: usize, out: &mut String) {
    let ip = ip4::Packet::new_unchecked(buf);
    if ip.check_len().is_err() {
        return truncated(out, "IPv4", ip4::HEADER_LEN, buf.len());
    }
    sep(out);
    out.push_str("IPv4 ");
    text::ipv4(out, ip.src_addr().octets());
    out.push_str(" > ");
    text::ipv4(out, ip.dst_addr().octets());
    if ip.version() != 4 {
        let _ = write!(out, " bad version {}", ip.version());
        return;
    }
    let ihl = ip.header_len();
    if ihl < ip4::HEADER_LEN {
        let _ = write!(out, " bad ihl {ihl}");
        return;
    }
    if ihl > buf.len() {
        return truncated(out, "IPv4 options", ihl, buf.len());
    }
    let mut total = usize::from(ip.total_len());
    if total == 0 {
        // BIG TCP / GSO: tot_len 0 means "the rest of the skb" (include/net/ip.h:
        // iph_totlen).
        out.push_str(" tot_len 0");
        total = buf.len();
    }
    if total < ihl {
        let _ = write!(out, " bad total length {total}");
        return;
    }
    if total > buf.len() {
        let _ = write!(out, " len {total} ({} present)", buf.len());
    }
    // Frame padding past tot_len is not part of the datagram (ip_rcv_core trims it).
    let payload = buf.get(ihl..total.min(buf.len())).unwrap_or(&[]);
    let (more, offset) = (ip.more_frags(), ip.frag_offset());
    if more || offset != 0 {
        let plus = if more { "+" } else { "" };
        let _ = write!(out, " frag id {} off {offset}{plus}", ip.ident());
    }
    let proto = ip.protocol();
    if offset != 0 {
        part!(out, "{} fragment len {}", proto_name(proto), payload.len());
        return;
    }
    transport(proto, payload, depth, out);
}

fn ipv6(buf: &[u8], depth: usize, out: &mut String) {
    let ip = ip6::Packet::new_unchecked(buf);
    if ip.check_len().is_err() {
        return truncated(out, "IPv6", ip6::HEADER_LEN, buf.len());
    }
    part!(out, "IPv6 {} > {}", ip.src_addr(), ip.dst_addr());
    if ip.version() != 6 {
        let _ = write!(out, " bad version {}", ip.version());
        return;
    }
    let avail = buf.len() - ip6::HEADER_LEN;
    let plen = usize::from(ip.payload_len());
    if plen > avail {
        let _ = write!(out, " len {plen} ({avail} present)");
    }
    // payload() is payload_len bytes, or the buffer's for a BIG TCP jumbogram's 0
    // (include/net/ipv6.h: ipv6_has_hopopt_jumbo).
    let p = ip.payload();
    let mut walk = ExtHeaders::new(ip.next_header(), p);
    while let Some(step) = walk.next() {
        let Ok(h) = step else {
            let rest = p.len() - walk.offset();
            return truncated(
                out,
                "IPv6 extension header",
                walk.current().header_len(),
                rest,
            );
        };
        if h.kind == IPPROTO_FRAGMENT {
            let frag = ip6::ExtHeader::new_unchecked(h.kind, &p[h.offset..]);
            let (frag_off, more) = (
                frag.frag_offset().unwrap_or(0),
                frag.more_frags() == Some(true),
            );
            let id = frag.frag_ident().unwrap_or(0);
            let plus = if more { "+" } else { "" };
            let _ = write!(out, " frag id {id} off {frag_off}{plus}");
            if frag_off != 0 {
                let len = p.len() - (h.offset + FRAG_HLEN);
                part!(out, "{} fragment len {len}", proto_name(h.next_header));
                return;
            }
        }
    }
    transport(
        walk.next_header(),
        p.get(walk.offset()..).unwrap_or(&[]),
        depth,
        out,
    );
}

fn proto_name(proto: u8) -> String {
    match proto {
        IPPROTO_ICMP => "ICMP".to_string(),
        IPPROTO_TCP => "TCP".to_string(),
        IPPROTO_UDP => "UDP".to_string(),
        IPPROTO_GRE => "GRE".to_string(),
        IPPROTO_ICMPV6 => "ICMPv6".to_string(),
        other => format!("proto {other}"),
    }
}

fn transport(proto: u8, buf: &[u8], depth: usize, out: &mut String) {
    match proto {
        IPPROTO_TCP => tcp(buf, out),
        IPPROTO_UDP => udp(buf, depth, out),
        IPPROTO_GRE => gre(buf, depth, out),
        IPPROTO_ICMP | IPPROTO_ICMPV6 => {
            let name = proto_name(proto);
            match (buf.first(), buf.get(1)) {
                (Some(t), Some(c)) if buf.len() >= ICMP_HLEN => {
                    let len = buf.len() - ICMP_HLEN;
                    part!(out, "{name} type {t} code {c} len {len}");
                }
                _ => truncated(out, &name, ICMP_HLEN, buf.len()),
            }
        }
        other => part!(out, "{} len {}", proto_name(other), buf.len()),
    }
}

/// TCP flag letters, bit 0 (FIN) first as tcpdump orders them, with 'A' for ACK
/// (include/net/tcp.h: TCPHDR_FIN .. TCPHDR_CWR).
fn tcp_flags(out: &mut String, flags: u8) {
    if flags == 0 {
        out.push_str("none");
    }
    for (i, c) in "FSRPAUEW".chars().enumerate() {
        if flags & (1 << i) != 0 {
            out.push(c);
        }
    }
}

fn tcp(buf: &[u8], out: &mut String) {
    let tcp = tcp_::Packet::new_unchecked(buf);
    if tcp.check_len().is_err() {
        return truncated(out, "TCP", tcp_::HEADER_LEN, buf.len());
    }
    // "TCP {sport} > {dport} [{flags}] seq {} ack {} win {}", by hand (a line per frame).
    sep(out);
    out.push_str("TCP ");
    text::dec(out, tcp.src_port());
    out.push_str(" > ");
    text::dec(out, tcp.dst_port());
    out.push_str(" [");
    tcp_flags(out, tcp.flags());
    out.push_str("] seq ");
    text::dec(out, tcp.seq_number());
    out.push_str(" ack ");
    text::dec(out, tcp.ack_number());
    out.push_str(" win ");
    text::dec(out, tcp.window_len());
    let doff = tcp.header_len();
    if doff < tcp_::HEADER_LEN {
        let _ = write!(out, " bad data offset {doff}");
    } else if doff > buf.len() {
        truncated(out, "TCP options", doff, buf.len());
    } else {
        out.push_str(" len ");
        text::dec(out, buf.len() - doff);
    }
}

fn udp(buf: &[u8], depth: usize, out: &mut String) {
    let udp = udp_::Packet::new_unchecked(buf);
    if udp.check_len().is_err() {
        return truncated(out, "UDP", udp_::HEADER_LEN, buf.len());
    }
    let (sport, dport) = (udp.src_port(), udp.dst_port());
    sep(out);
    out.push_str("UDP ");
    text::dec(out, sport);
    out.push_str(" > ");
    text::dec(out, dport);
    let ulen = usize::from(udp.len());
    if ulen < udp_::HEADER_LEN {
        let _ = write!(out, " bad len {ulen}");
        return;
    }
    out.push_str(" len ");
    text::dec(out, ulen - udp_::HEADER_LEN);
    if ulen > buf.len() {
        let _ = write!(out, " ({} present)", buf.len() - udp_::HEADER_LEN);
    }
    if dport == IANA_VXLAN_UDP_PORT {
        vxlan(udp.payload(), depth, out);
    }
}

fn vxlan(buf: &[u8], depth: usize, out: &mut String) {
    let Ok(vxh) = vxlan::Packet::new_checked(buf) else {
        return truncated(out, "VXLAN", VXLAN_HLEN, buf.len());
    };
    part!(out, "VXLAN vni {}", vxh.vni());
    if !vxh.vni_valid() {
        out.push_str(" (I flag clear)");
    }
    inner(out, depth, vxh.payload(), ethernet);
}

fn gre(buf: &[u8], depth: usize, out: &mut String) {
    let Ok(gre) = Gre::new_checked(buf) else {
        // header_len() only reads the flags word, which Gre reads as 0 when absent.
        let needed = Gre::new_unchecked(buf).header_len();
        return truncated(out, "GRE", needed, buf.len());
    };
    sep(out);
    out.push_str("GRE");
    if gre.version() != 0 {
        let _ = write!(out, "v{}", gre.version());
    }
    let mut opts = Vec::new();
    if let (true, Some(c)) = (gre.checksum_present(), gre.checksum()) {
        let bad = if gre.verify_checksum() { "" } else { " bad" };
        opts.push(format!("C csum 0x{c:04x}{bad}"));
    }
    if gre.routing_present() {
        opts.push("R".to_string());
    }
    if let Some(k) = gre.key() {
        opts.push(format!("K key 0x{k:x}"));
    }
    if let Some(s) = gre.sequence() {
        opts.push(format!("S seq {s}"));
    }
    if let Some(a) = gre.ack_number() {
        opts.push(format!("A ack {a}"));
    }
    if !opts.is_empty() {
        let _ = write!(out, " [{}]", opts.join(" "));
    }
    let proto = gre.protocol();
    let _ = write!(out, " {}", ethertype_name(proto));
    let payload = gre.payload();
    if gre.routing_present() {
        // RFC 1701 source route entries precede the payload; not modelled.
        let _ = write!(out, " len {}", payload.len());
        return;
    }
    match proto {
        ETH_P_TEB => inner(out, depth, payload, ethernet),
        ETH_P_IP => inner(out, depth, payload, ipv4),
        ETH_P_IPV6 => inner(out, depth, payload, ipv6),
        _ => {
            let _ = write!(out, " len {}", payload.len());
        }
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
