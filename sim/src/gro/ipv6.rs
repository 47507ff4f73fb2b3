//! IPv6 GRO: net/ipv6/ip6_offload.c: ipv6_gro_receive / ipv6_gro_complete, and the IPv6
//! half of gro_receive_network_flush (include/net/gro.h: ipv6_gro_flush). TCP
//! (net/ipv6/tcpv6_offload.c) and UDP (net/ipv6/udp_offload.c, `udp6`) are carried past
//! the IPv6 header. Extension headers with
//! INET6_PROTO_GSO_EXTHDR (net/ipv6/exthdrs_offload.c: hop-by-hop, routing, destination
//! options) are walked first (ip6_offload.c: ipv6_gro_pull_exthdrs; ipv6_gso_pull_exthdrs
//! before 6.x), as many as there are; they become part of the network header, and held
//! skbs must carry the same bytes there (the memcmp after the address checks). A fragment
//! header, ICMPv6 and every other next header end GRO for the frame.
//!
//! GRE over IPv6 (ip6gretap): net/ipv4/gre_offload.c: gre_offload_init registers the one
//! gre_offload for inet6_offloads[IPPROTO_GRE] too, so an IPv6 outer header hands GRE to
//! the same gre_gro_receive / gre_gro_complete as IPv4 (docs/gro.md#tunnels-over-ipv6).

use super::udp6;
use super::{gre, reason, tcp, GroConfig, Reason, SkBuff, GRO_RECURSION_LIMIT};
use crate::consts::IPPROTO_GRE;
use crate::consts::{NEXTHDR_TCP, NEXTHDR_UDP};
use crate::wire::checksum as csum;
use crate::wire::ipv6::{ExtHeaders, ExtRule};
use crate::wire::Ipv6Packet;

pub use crate::wire::ipv6::HEADER_LEN as IPV6_HLEN;
/// The Version and Flow Label bits of the first word: a difference there is another flow.
const FLOW_BITS: u32 = 0xF00F_FFFF;
/// The Traffic Class bits of the first word.
const TC_BITS: u32 = 0x0FF0_0000;

fn pflush(p: &mut SkBuff, why: Reason) {
    p.cb.flush = true;
    if p.cb.flush_reason.is_none() {
        p.cb.flush_reason = Some(why);
    }
}

/// The fixed IPv6 header at `off` (from data), if the linear part holds it.
fn ip6h_at(skb: &SkBuff, off: usize) -> Option<Ipv6Packet<&[u8]>> {
    skb.hdr(off, IPV6_HLEN).map(Ipv6Packet::new_unchecked)
}

/// ipv6_gro_pull_exthdrs / ipv6_exthdrs_len: from the first next header `proto` over the
/// extension headers in `bytes` (what follows the fixed header), the protocol after them
/// and their length. A header that does not fit ends the walk at its own protocol: the
/// wire walk by [`ExtRule::GroPull`].
pub fn walk_exthdrs(bytes: &[u8], proto: u8) -> (u8, usize) {
    let mut walk = ExtHeaders::with_rule(ExtRule::GroPull, proto, bytes);
    walk.by_ref().take_while(|step| step.is_ok()).for_each(drop);
    (walk.next_header(), walk.offset())
}

/// ipv6_gro_receive.
///
/// `payload_len` must be the rest of the packet (a soft flush otherwise: padding). A held
/// skb is another flow when the version, flow label, next header or either address
/// differs. Before 6.10 (the profiles with the 4.19 or 3.12 IP ID rules) the hop limit is
/// part of that comparison (`*(u16 *)&iph->nexthdr`), a Traffic Class difference flushes
/// the held skb here and the new skb is atomic (no IP ID); since then both checks are
/// tcp_gro_receive's ([`network_flush`]).
pub fn ipv6_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let off = skb.cb.data_offset;
    let Some(iph) = skb.hdr(off, IPV6_HLEN) else {
        skb.flush(reason::IPV6_HDR);
        return None;
    };
    // A copy, so the skb's control block can change while the header is read.
    let iph = Ipv6Packet::new_unchecked(<[u8; IPV6_HLEN]>::try_from(iph).unwrap_or([0; IPV6_HLEN]));
    // ops = inet6_offloads[proto]: TCP, UDP and GRE have gro_receive themselves; anything
    // else is walked over as extension headers first.
    let (proto, ext_len) = match iph.next_header() {
        p if has_l4(cfg, p) => (p, 0),
        first => walk_exthdrs(skb.hdr_from(off + IPV6_HLEN), first),
    };
    if !has_l4(cfg, proto) {
        skb.flush(reason::IPV6_NO_L4);
        return None;
    }
    skb.cb.proto = proto;
    // nlen: the fixed header and the extension headers.
    let nlen = IPV6_HLEN + ext_len;
    let ext = skb.linear()[off + IPV6_HLEN..off + nlen].to_vec();
    let payload_len = usize::from(iph.payload_len());
    let soft = (payload_len + IPV6_HLEN != skb.gro_len()).then_some(reason::IPV6_LEN);
    let old_rules = !cfg.rules.ip_id.at_transport();
    let skb_atomic = skb.cb.is_atomic;
    let fw = iph.ver_tc_flow();
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        let Some(q) = ip6h_at(p, off) else {
            p.cb.same_flow = false;
            continue;
        };
        let diff = fw ^ q.ver_tc_flow();
        let other_flow = diff & FLOW_BITS != 0
            || q.next_header() != iph.next_header()
            || q.src_addr() != iph.src_addr()
            || q.dst_addr() != iph.dst_addr()
            || (old_rules && q.hop_limit() != iph.hop_limit());
        if other_flow {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::IPV6_FLOW);
            skb.saw_mismatch(reason::IPV6_FLOW);
            continue;
        }
        // memcmp(iph + 1, iph2 + 1, nlen - sizeof(struct ipv6hdr)).
        if ext_len > 0 && p.hdr(off + IPV6_HLEN, ext_len) != Some(ext.as_slice()) {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::IPV6_EXTHDR);
            skb.saw_mismatch(reason::IPV6_EXTHDR);
            continue;
        }
        if old_rules {
            if diff & TC_BITS != 0 {
                pflush(p, reason::IPV6_TC);
            }
            if let Some(r) = soft {
                pflush(p, r);
            }
            if skb_atomic {
                p.cb.flush_id = 0;
            }
        }
    }
    if old_rules {
        skb.cb.is_atomic = true;
    }
    if let Some(r) = soft {
        skb.flush(r);
    }
    let level = usize::from(skb.cb.encap_mark);
    skb.cb.network_offsets[level] = off;
    skb.set_network_header(off);
    // skb_gro_postpull_rcsum: the carried sum stops covering the IPv6 header and its
    // extension headers.
    super::core::postpull_rcsum(skb, off, nlen);
    skb.cb.data_offset += nlen;
    skb.set_transport_header(skb.cb.data_offset);
    skb.cb.recursion += 1;
    if skb.cb.recursion >= GRO_RECURSION_LIMIT {
        skb.flush(reason::RECURSION);
        return None;
    }
    skb.cb.depth += 1;
    match proto {
        IPPROTO_GRE => gre::gre_gro_receive(cfg, head, skb),
        NEXTHDR_UDP => udp6::udp6_gro_receive(cfg, head, skb),
        NEXTHDR_TCP => tcp::tcp6_gro_receive(cfg, head, skb),
        p => super::ipip::ipxip_gro_receive(cfg, head, skb, p),
    }
}

/// inet6_offloads[proto]->gro_receive exists in this kernel: tcpv6_offload, udpv6_offload
/// (where it has a gro_receive), and the gre_offload gre_offload_init adds for IPv6 too
/// (with GRE GRO at all).
fn has_l4(cfg: &GroConfig, proto: u8) -> bool {
    match proto {
        NEXTHDR_TCP => true,
        NEXTHDR_UDP => cfg.rules.udp_tunnel_gro,
        IPPROTO_GRE => cfg.rules.gre_gro,
        p => super::ipip::is_ipxip(cfg, p),
    }
}

/// ip6_gro_compute_pseudo for the innermost IP header seen so far.
pub fn gro_compute_pseudo(skb: &SkBuff, proto: u8) -> u32 {
    let nh = skb.cb.network_offsets[usize::from(skb.cb.encap_mark)];
    let (saddr, daddr) = addrs(skb, nh);
    csum::pseudo_v6(saddr, daddr, proto, skb.gro_len())
}

/// saddr and daddr of the IPv6 header at `nh` (offset from data), as the pseudo-header
/// sums take them; zeroes where the skb holds no header.
pub(crate) fn addrs(skb: &SkBuff, nh: usize) -> ([u8; 16], [u8; 16]) {
    ip6h_at(skb, nh).map_or(([0; 16], [0; 16]), |h| {
        (h.src_addr().octets(), h.dst_addr().octets())
    })
}

/// The IPv6 check of gro_receive_network_flush (include/net/gro.h: ipv6_gro_flush, 6.10
/// on): a different Traffic Class or hop limit flushes.
pub fn network_flush(cfg: &GroConfig, skb: &SkBuff, p: &SkBuff, nh: usize) -> Option<Reason> {
    if !cfg.rules.ip_id.at_transport() {
        // Done in ipv6_gro_receive before 6.10.
        return None;
    }
    let (Some(a), Some(b)) = (ip6h_at(skb, nh), ip6h_at(p, nh)) else {
        return Some(reason::IPV6_HDR);
    };
    if (a.ver_tc_flow() ^ b.ver_tc_flow()) & TC_BITS != 0 {
        return Some(reason::IPV6_TC);
    }
    (a.hop_limit() != b.hop_limit()).then_some(reason::IPV6_HOPLIMIT)
}

/// ipv6_gro_complete(skb, nhoff): payload_len = the bytes after this header, then the L4
/// complete (tcp6_gro_complete).
pub fn ipv6_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    if skb.headlen() < nhoff + IPV6_HLEN {
        return;
    }
    if skb.encapsulation {
        skb.set_inner_network_header(nhoff);
    }
    // payload_len, or a BIG TCP jumbogram past IPV6_MAXPLEN (which adds a hop-by-hop
    // header: the next header is read after it).
    super::bigtcp::ipv6_set_payload_len(cfg, skb, nhoff);
    let Some(first) = skb
        .hdr(nhoff, IPV6_HLEN)
        .map(|h| Ipv6Packet::new_unchecked(h).next_header())
    else {
        return;
    };
    // nhoff += sizeof(*iph) + ipv6_exthdrs_len(iph, &ops).
    let (proto, ext_len) = walk_exthdrs(skb.hdr_from(nhoff + IPV6_HLEN), first);
    match proto {
        NEXTHDR_TCP => tcp::tcp6_gro_complete(cfg, skb, nhoff, nhoff + IPV6_HLEN + ext_len),
        NEXTHDR_UDP => udp6::udp6_gro_complete(cfg, skb, nhoff + IPV6_HLEN + ext_len),
        // gre_gro_complete: encapsulation = 1, gso_type = SKB_GSO_GRE; nothing marks the
        // outer header as IPv6 (no SKB_GSO_IPXIP6: that is ip6ip6/ip4ip6's).
        IPPROTO_GRE => gre::gre_gro_complete(cfg, skb, nhoff + IPV6_HLEN + ext_len),
        p if super::ipip::is_ipxip(cfg, p) => {
            super::ipip::ipxip_gro_complete(cfg, skb, nhoff + IPV6_HLEN + ext_len, p, true)
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::reason;
    use super::super::testutil::{lens, run};
    use crate::profile::{LINUX_4_19, LINUX_6_18};
    use crate::skb::gso;
    use crate::wire::checksum::checksum;

    /// One Ethernet/IPv6/TCP segment (ACK, 1400 payload bytes by default) with a correct
    /// TCP checksum over the RFC 8200 pseudo header, computed here from its bytes.
    struct Seg6 {
        flow: u32,
        tc: u8,
        hop: u8,
        next: u8,
        /// Extension headers after the fixed header (`next` names the first).
        ext: Vec<u8>,
        seq: u32,
        payload: usize,
    }

    impl Seg6 {
        fn new(k: u32) -> Seg6 {
            Seg6 {
                flow: 0x12345,
                tc: 0,
                hop: 64,
                next: 6,
                ext: Vec::new(),
                seq: 1000 + k * 1400,
                payload: 1400,
            }
        }

        fn build(&self) -> Vec<u8> {
            let (src, dst) = ([0xfd, 0, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], {
                let mut d = [0u8; 16];
                d[..4].copy_from_slice(&[0xfd, 0, 0, 0x77]);
                d[15] = 2;
                d
            });
            let mut l4 = Vec::new();
            l4.extend_from_slice(&5001u16.to_be_bytes());
            l4.extend_from_slice(&5002u16.to_be_bytes());
            l4.extend_from_slice(&self.seq.to_be_bytes());
            l4.extend_from_slice(&7u32.to_be_bytes());
            l4.extend_from_slice(&[0x50, 0x10, 0x01, 0x00, 0, 0, 0, 0]);
            l4.extend((0..self.payload).map(|i| i as u8));
            let mut pseudo = Vec::new();
            pseudo.extend_from_slice(&src);
            pseudo.extend_from_slice(&dst);
            pseudo.extend_from_slice(&(l4.len() as u32).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, 6]);
            let c = checksum(&[pseudo.as_slice(), &l4].concat());
            l4[16..18].copy_from_slice(&c.to_be_bytes());
            let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
            let word = (6u32 << 28) | (u32::from(self.tc) << 20) | self.flow;
            f.extend_from_slice(&word.to_be_bytes());
            f.extend_from_slice(&((self.ext.len() + l4.len()) as u16).to_be_bytes());
            f.extend_from_slice(&[self.next, self.hop]);
            f.extend_from_slice(&src);
            f.extend_from_slice(&dst);
            f.extend_from_slice(&self.ext);
            f.extend_from_slice(&l4);
            f
        }
    }

    /// Three segments of one flow; `edit` changes the last.
    fn three(edit: impl Fn(&mut Seg6)) -> Vec<Vec<u8>> {
        (0..3u32)
            .map(|k| {
                let mut s = Seg6::new(k);
                if k == 2 {
                    edit(&mut s);
                }
                s.build()
            })
            .collect()
    }

    const ONE: usize = 74 + 1400;
    const TWO: usize = 74 + 2800;

    #[test]
    fn one_flow_merges_into_one_tcpv6_skb_with_its_payload_length_rewritten() {
        let d = run(&LINUX_6_18, three(|_| {}));
        assert_eq!(lens(&d), vec![74 + 3 * 1400]);
        let skb = &d[0].skb;
        assert_eq!(skb.gso_type & gso::TCPV6, gso::TCPV6);
        assert_eq!(skb.gso_size, 1400);
        let bytes = skb.to_vec();
        assert_eq!(u16::from_be_bytes([bytes[18], bytes[19]]), 20 + 3 * 1400);
    }

    #[test]
    fn another_flow_label_starts_another_flow() {
        let d = run(&LINUX_6_18, three(|s| s.flow = 0x54321));
        assert_eq!(lens(&d), vec![TWO, ONE]);
        assert_eq!(d[1].skb.model.start, Some(reason::FLOW_NEW));
    }

    #[test]
    fn hop_limit_flushes_on_6_18_and_is_another_flow_before_6_10() {
        let d = run(&LINUX_6_18, three(|s| s.hop = 63));
        assert_eq!(lens(&d), vec![TWO, ONE]);
        assert_eq!(d[1].skb.model.start, Some(reason::IPV6_HOPLIMIT));
        let d = run(&LINUX_4_19, three(|s| s.hop = 63));
        assert_eq!(lens(&d), vec![TWO, ONE]);
        assert_eq!(d[1].skb.model.start, Some(reason::FLOW_NEW));
    }

    #[test]
    fn traffic_class_flushes_on_every_profile() {
        for p in [&LINUX_6_18, &LINUX_4_19] {
            let d = run(p, three(|s| s.tc = 0x10));
            assert_eq!(lens(&d), vec![TWO, ONE], "{}", p.name);
            assert_eq!(d[1].skb.model.start, Some(reason::IPV6_TC), "{}", p.name);
        }
    }

    #[test]
    fn other_next_headers_and_bad_checksums_go_up_before_the_held_flow() {
        // Next header 58 (ICMPv6) stands for every non-TCP next header.
        let d = run(&LINUX_6_18, three(|s| s.next = 58));
        assert_eq!(lens(&d), vec![ONE, TWO]);
        assert_eq!(d[0].skb.model.start, Some(reason::IPV6_NO_L4));
        let mut frames = three(|_| {});
        let last = frames[2].len() - 1;
        frames[2][last] ^= 0xff;
        let d = run(&LINUX_6_18, frames);
        assert_eq!(lens(&d), vec![ONE, TWO]);
        assert_eq!(d[0].skb.model.start, Some(reason::TCP_CSUM));
    }

    /// A hop-by-hop header (8 bytes: next = TCP, PadN) or, with `more`, 16 bytes.
    fn hbh(pad: u8, more: bool) -> Vec<u8> {
        let mut h = vec![6, u8::from(more), 1, 4, pad, 0, 0, 0];
        if more {
            h[3] = 12;
            h.extend_from_slice(&[0; 8]);
        }
        h
    }

    fn three_ext(ext: impl Fn(u32) -> (u8, Vec<u8>)) -> Vec<Vec<u8>> {
        (0..3u32)
            .map(|k| {
                let mut s = Seg6::new(k);
                (s.next, s.ext) = ext(k);
                s.build()
            })
            .collect()
    }

    #[test]
    fn a_hop_by_hop_header_is_walked_and_kept_in_the_merged_header() {
        let d = run(&LINUX_6_18, three_ext(|_| (0, hbh(0, true))));
        assert_eq!(lens(&d), vec![74 + 16 + 3 * 1400]);
        let skb = &d[0].skb;
        assert_eq!(skb.gso_type & gso::TCPV6, gso::TCPV6);
        assert_eq!(skb.gso_size, 1400);
        // tcp_gro_complete: the partial checksum starts at the TCP header, after the
        // 16 extension header bytes; payload_len counts them.
        assert_eq!(skb.csum_start - skb.data_offset(), 14 + 40 + 16);
        let bytes = skb.to_vec();
        assert_eq!(
            u16::from_be_bytes([bytes[18], bytes[19]]),
            16 + 20 + 3 * 1400
        );
        assert_eq!(bytes[20], 0, "next header: still hop-by-hop");
    }

    #[test]
    fn routing_then_destination_options_are_walked_too() {
        // Routing (43, type 0, segments left 0) -> destination options (60) -> TCP.
        let ext = |_| {
            let mut e = vec![60, 0, 0, 0, 0, 0, 0, 0];
            e.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
            (43, e)
        };
        let d = run(&LINUX_6_18, three_ext(ext));
        assert_eq!(lens(&d), vec![74 + 16 + 3 * 1400]);
    }

    #[test]
    fn different_extension_header_bytes_are_another_flow() {
        let d = run(
            &LINUX_6_18,
            three_ext(|k| (0, hbh(if k == 2 { 9 } else { 0 }, false))),
        );
        assert_eq!(lens(&d), vec![TWO + 8, ONE + 8]);
        assert_eq!(d[1].skb.model.start, Some(reason::FLOW_NEW));
    }

    #[test]
    fn a_fragment_header_or_a_truncated_option_header_ends_gro() {
        // Fragment header (44): offset 0, M set, next = TCP.
        let frag = |_| (44, vec![6, 0, 0, 1, 0, 0, 0, 7]);
        let d = run(&LINUX_6_18, three_ext(frag));
        assert_eq!(lens(&d), vec![ONE + 8; 3]);
        assert!(d
            .iter()
            .all(|x| x.skb.model.start == Some(reason::IPV6_NO_L4)));
        // A hop-by-hop header claiming 2048 bytes (hdrlen 255) in a short packet.
        let d = run(
            &LINUX_6_18,
            three_ext(|_| (0, vec![6, 255, 1, 4, 0, 0, 0, 0])),
        );
        assert_eq!(lens(&d), vec![ONE + 8; 3]);
        assert!(d
            .iter()
            .all(|x| x.skb.model.start == Some(reason::IPV6_NO_L4)));
    }

    #[test]
    fn the_walk_stops_at_the_first_non_option_header() {
        use super::walk_exthdrs;
        let mut b = vec![43, 0, 0, 0, 0, 0, 0, 0]; // hop-by-hop -> routing
        b.extend_from_slice(&[44, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // -> fragment
        b.extend_from_slice(&[6, 0, 0, 1, 0, 0, 0, 7]);
        assert_eq!(walk_exthdrs(&b, 0), (44, 24));
        assert_eq!(walk_exthdrs(&b, 6), (6, 0));
        assert_eq!(
            walk_exthdrs(&b[..20], 0),
            (43, 8),
            "routing header cut short"
        );
    }

    #[test]
    fn the_bench_ipv6_twin_is_valid_tcp_and_merges() {
        use crate::gro::frames::Tcp4;
        let frames: Vec<Vec<u8>> = (0..3u32)
            .map(|k| {
                Tcp4 {
                    seq: 1000 + k * 1400,
                    ..Tcp4::default()
                }
                .build_v6()
            })
            .collect();
        assert_eq!(frames[0].len(), 14 + 40 + 20 + 1400);
        let d = run(&LINUX_6_18, frames);
        assert_eq!(lens(&d), vec![74 + 3 * 1400]);
    }
}
