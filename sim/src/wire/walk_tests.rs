//! The walker on hand-made frames (smoltcp style): every expected offset is the sum of
//! the header lengths the layouts give (Ethernet 14, a tag 4, IPv4 IHL * 4, IPv6 40, an
//! extension header (hdrlen + 1) * 8, UDP 8, VXLAN 8, GRE 4 + 4 per C/K/S), written out
//! beside each assertion.

use super::*;

const MACS: [u8; 12] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];

/// Ethernet header with the type field `ty`.
fn eth(ty: u16) -> Vec<u8> {
    let mut f = MACS.to_vec();
    f.extend_from_slice(&ty.to_be_bytes());
    f
}

/// A VLAN tag's TCI and the next type field.
fn tag(f: &mut Vec<u8>, tci: u16, next: u16) {
    f.extend_from_slice(&tci.to_be_bytes());
    f.extend_from_slice(&next.to_be_bytes());
}

/// An IPv4 header of `ihl` words (options zero), version nibble `ver`, protocol `proto`.
fn ipv4(f: &mut Vec<u8>, ver: u8, ihl: u8, proto: u8) {
    let mut h = vec![0u8; usize::from(ihl) * 4];
    h[0] = ver << 4 | ihl;
    h[8] = 64;
    h[9] = proto;
    f.extend_from_slice(&h);
}

/// A fixed IPv6 header with next header `nh`.
fn ipv6(f: &mut Vec<u8>, nh: u8) {
    let mut h = [0u8; 40];
    h[0] = 0x60;
    h[6] = nh;
    h[7] = 64;
    f.extend_from_slice(&h);
}

/// A TCP header with data offset `doff` words.
fn tcp(f: &mut Vec<u8>, doff: u8) {
    let mut h = vec![0u8; usize::from(doff) * 4];
    h[12] = doff << 4;
    f.extend_from_slice(&h);
}

/// A UDP header to `dport`.
fn udp(f: &mut Vec<u8>, dport: u16) {
    f.extend_from_slice(&[0x30, 0x39]);
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 8, 0, 0]);
}

fn rule(tpid: TpidRule) -> Rule<'static> {
    Rule {
        tpid,
        max_tags: usize::MAX,
        ipv4: Ipv4Rule::Checked,
        ipv6_ext: None,
        tunnels: Tunnels::default(),
    }
}

#[test]
fn qinq_ipv4_options_tcp_options() {
    // 802.1ad then 802.1Q: the IPv4 header at 14 + 4 + 4 = 22; IHL 6: TCP at
    // 22 + 24 = 46; doff 8: 32 header bytes.
    let mut f = eth(0x88a8);
    tag(&mut f, 100, 0x8100);
    tag(&mut f, 5, 0x0800);
    ipv4(&mut f, 4, 6, 6);
    tcp(&mut f, 8);
    for r in [TpidRule::EthTypeVlan, TpidRule::Capture] {
        let l = ethernet(&f, 0, &rule(r)).unwrap();
        assert_eq!((l.tags.count, l.l3_proto, l.l3_offset), (2, 0x0800, 22));
        let t = l.transport.unwrap();
        assert_eq!((t.proto, t.offset), (6, 46));
        assert_eq!(transport_len(&f, t), Some(32));
        // One byte short of the TCP options: no transport length.
        assert_eq!(transport_len(&f[..77], t), None);
    }
    // At most one tag: the walk stops at the inner TPID at 18.
    let one = Rule {
        max_tags: 1,
        ..rule(TpidRule::EthTypeVlan)
    };
    let l = ethernet(&f, 0, &one).unwrap();
    assert_eq!((l.tags.count, l.l3_proto, l.l3_offset), (1, 0x8100, 18));
    assert_eq!(l.transport, None);
}

#[test]
fn the_9100_tpid_is_a_tag_to_capture_tools_only() {
    // eth_type_vlan: 0x9100 is the EtherType itself, at 14; libpcap: a tag, IPv4 at 18.
    let mut f = eth(0x9100);
    tag(&mut f, 7, 0x0800);
    ipv4(&mut f, 4, 5, 17);
    udp(&mut f, 53);
    let k = ethernet(&f, 0, &rule(TpidRule::EthTypeVlan)).unwrap();
    assert_eq!((k.tags.count, k.l3_proto, k.l3_offset), (0, 0x9100, 14));
    assert_eq!(k.transport, None);
    let c = ethernet(&f, 0, &rule(TpidRule::Capture)).unwrap();
    assert_eq!((c.tags.count, c.l3_proto, c.l3_offset), (1, 0x0800, 18));
    assert_eq!(
        c.transport,
        Some(Transport {
            proto: 17,
            offset: 38
        })
    );
    assert!(TpidRule::EthTypeVlan.is_tag(0x8100) && TpidRule::EthTypeVlan.is_tag(0x88a8));
    assert!(!TpidRule::EthTypeVlan.is_tag(0x9100) && TpidRule::Capture.is_tag(0x9100));
}

#[test]
fn cut_frames_end_the_walk_without_panicking() {
    // No type field: no layer.
    assert_eq!(ethernet(&MACS, 0, &rule(TpidRule::Capture)), None);
    assert_eq!(
        ethernet(&eth(0x8100), usize::MAX, &rule(TpidRule::Capture)),
        None
    );
    // A tag of two bytes: truncated where the tag starts (14), still the TPID.
    let mut f = eth(0x8100);
    f.extend_from_slice(&[0, 5]);
    let l = ethernet(&f, 0, &rule(TpidRule::EthTypeVlan)).unwrap();
    assert!(l.tags.truncated);
    assert_eq!((l.l3_proto, l.l3_offset, l.transport), (0x8100, 14, None));
    // IPv4 cut inside its header: Checked gives no transport, AsIs reads proto (byte 9).
    let mut f = eth(0x0800);
    ipv4(&mut f, 4, 5, 6);
    f.truncate(14 + 12);
    assert_eq!(
        ethernet(&f, 0, &rule(TpidRule::EthTypeVlan))
            .unwrap()
            .transport,
        None
    );
    let as_is = Rule {
        ipv4: Ipv4Rule::AsIs,
        ..rule(TpidRule::EthTypeVlan)
    };
    let t = ethernet(&f, 0, &as_is).unwrap().transport;
    assert_eq!(
        t,
        Some(Transport {
            proto: 6,
            offset: 34
        })
    );
    // IPv6 shorter than its 40 bytes: none.
    let mut f = eth(0x86dd);
    ipv6(&mut f, 6);
    f.truncate(14 + 39);
    assert_eq!(ethernet(&f, 0, &as_is).unwrap().transport, None);
}

#[test]
fn ip_rcv_core_rule_refuses_version_and_short_ihl() {
    // Version 5 or IHL 4 under an 0x0800 type: ip_rcv_core drops it, no transport.
    for (ver, ihl) in [(5, 5), (4, 4)] {
        let mut f = eth(0x0800);
        ipv4(&mut f, ver, ihl, 6);
        tcp(&mut f, 5);
        assert_eq!(
            ethernet(&f, 0, &rule(TpidRule::Capture)).unwrap().transport,
            None
        );
    }
}

/// IPv6, hop-by-hop (hdrlen 0: 8 bytes), routing (hdrlen 1: 16), fragment (8) with
/// `frag_off`, then UDP.
fn ipv6_chain(frag_off: u16) -> Vec<u8> {
    let mut f = eth(0x86dd);
    ipv6(&mut f, 0);
    f.extend_from_slice(&[43, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&[44, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&[17, 0]);
    f.extend_from_slice(&frag_off.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 9]);
    udp(&mut f, 53);
    f
}

#[test]
fn ipv6_extension_headers_by_each_kernel_rule() {
    let f = ipv6_chain(0);
    let with = |r| Rule {
        ipv6_ext: r,
        ..rule(TpidRule::EthTypeVlan)
    };
    let at = |r, f: &[u8]| ethernet(f, 0, &with(r)).unwrap().transport.unwrap();
    // No walk: the fixed header's nexthdr (0) at 14 + 40 = 54.
    assert_eq!(
        at(None, &f),
        Transport {
            proto: 0,
            offset: 54
        }
    );
    // ipv6_gro_pull_exthdrs: hop-by-hop and routing (8 + 16), stops at the fragment
    // header: 54 + 24 = 78.
    assert_eq!(
        at(Some(ExtRule::GroPull), &f),
        Transport {
            proto: 44,
            offset: 78
        }
    );
    // ipv6_skip_exthdr and the view walk: all three (8 + 16 + 8): UDP at 86.
    for r in [ExtRule::SkipExthdr, ExtRule::View] {
        assert_eq!(
            at(Some(r), &f),
            Transport {
                proto: 17,
                offset: 86
            }
        );
    }
    // A later fragment (offset 8: frag_off 0x0008): ipv6_skip_exthdr stops at its
    // fragment header (78); the view walk steps over it.
    let later = ipv6_chain(0x0008);
    assert_eq!(
        at(Some(ExtRule::SkipExthdr), &later),
        Transport {
            proto: 44,
            offset: 78
        }
    );
    assert_eq!(
        at(Some(ExtRule::View), &later),
        Transport {
            proto: 17,
            offset: 86
        }
    );
}

#[test]
fn skip_exthdr_reads_two_bytes_of_a_header_the_others_the_whole() {
    // The routing header (16 bytes at payload offset 8) cut to 4 bytes.
    let f = ipv6_chain(0);
    let payload = &f[54..54 + 12];
    // ipv6_skip_exthdr steps over it on nexthdr and hdrlen alone and then finds no
    // fragment header bytes at 8 + 16 = 24: truncated.
    assert_eq!(
        ExtHeaders::skip(ExtRule::SkipExthdr, 0, payload),
        Err(super::super::Error::Truncated)
    );
    // Cut right after the routing header's two bytes and fragment: it still steps over.
    let mut walk = ExtHeaders::with_rule(ExtRule::SkipExthdr, 0, &f[54..54 + 10]);
    assert_eq!(walk.by_ref().filter(Result::is_ok).count(), 2);
    assert_eq!((walk.next_header(), walk.offset()), (44, 24));
    // GRO needs the whole routing header: the walk ends at it (43 at 8).
    let mut walk = ExtHeaders::with_rule(ExtRule::GroPull, 0, payload);
    assert_eq!(walk.by_ref().filter(Result::is_ok).count(), 1);
    assert_eq!((walk.next_header(), walk.offset()), (43, 8));
    // GRO does not step over an authentication header (51); ipv6_skip_exthdr does:
    // (hdrlen 1 + 2) * 4 = 12 bytes.
    let ah = [6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(ExtHeaders::skip(ExtRule::GroPull, 51, &ah), Ok((51, 0)));
    assert_eq!(ExtHeaders::skip(ExtRule::SkipExthdr, 51, &ah), Ok((6, 12)));
}

/// Outer Ethernet/IPv4 with protocol `proto`.
fn outer_v4(proto: u8) -> Vec<u8> {
    let mut f = eth(0x0800);
    ipv4(&mut f, 4, 5, proto);
    f
}

#[test]
fn through_vxlan_to_the_inner_tcp() {
    // 14 + 20 + UDP 8 + VXLAN 8 = 50: inner Ethernet; + 14 + 20: inner TCP at 84.
    let mut f = outer_v4(17);
    udp(&mut f, 4789);
    f.extend_from_slice(&[0x08, 0, 0, 0, 0, 0, 42, 0]);
    f.extend_from_slice(&eth(0x0800));
    ipv4(&mut f, 4, 5, 6);
    tcp(&mut f, 5);
    assert_eq!(innermost_tcp(&f, &[4789]), Some(84));
    let inner = innermost(&f, &gro_rule(&[4789])).unwrap();
    assert_eq!((inner.l3_proto, inner.l3_offset), (0x0800, 64));
    // Another port: no tunnel, the innermost transport is the outer UDP at 34.
    assert_eq!(innermost_tcp(&f, &[8472]), None);
    let outer = innermost(&f, &gro_rule(&[8472])).unwrap();
    assert_eq!(
        outer.transport,
        Some(Transport {
            proto: 17,
            offset: 34
        })
    );
    assert_eq!(plain_udp(&f), Some(34));
}

#[test]
fn through_gre_teb_by_its_flags() {
    // GRE C and K (0xa000): 4 + 4 + 4 = 12 bytes: inner Ethernet at 34 + 12 = 46; an
    // 802.1Q tag and IPv6: TCP at 46 + 14 + 4 + 40 = 104.
    let build = |flags: u16| {
        let mut f = outer_v4(47);
        f.extend_from_slice(&flags.to_be_bytes());
        f.extend_from_slice(&0x6558u16.to_be_bytes());
        f.extend_from_slice(&[0; 8]);
        let mut inner = eth(0x8100);
        tag(&mut inner, 3, 0x86dd);
        f.extend_from_slice(&inner);
        ipv6(&mut f, 6);
        tcp(&mut f, 5);
        f
    };
    assert_eq!(innermost_tcp(&build(0xa000), &[]), Some(104));
    // S instead of C: the same 12 bytes.
    assert_eq!(innermost_tcp(&build(0x3000), &[]), Some(104));
    // Routing (R) or version 1: gre_parse_header refuses it, no tunnel.
    assert_eq!(innermost_tcp(&build(0x6000), &[]), None);
    assert_eq!(innermost_tcp(&build(0x2001), &[]), None);
}

#[test]
fn through_ip_in_ip_and_at_most_two_tags() {
    // ipip: 14 + 20 + 20 = 54; sit (IPv6 in IPv4): 14 + 20 + 40 = 74.
    let mut f = outer_v4(4);
    ipv4(&mut f, 4, 5, 6);
    tcp(&mut f, 5);
    assert_eq!(innermost_tcp(&f, &[]), Some(54));
    let mut f = outer_v4(41);
    ipv6(&mut f, 6);
    tcp(&mut f, 5);
    assert_eq!(innermost_tcp(&f, &[]), Some(74));
    // Two tags: TCP at 14 + 8 + 20 = 42; three: the GRO rule stops at the third TPID.
    let tagged = |n: usize| {
        let mut f = eth(0x8100);
        for k in 0..n {
            tag(&mut f, 1, if k + 1 == n { 0x0800 } else { 0x8100 });
        }
        ipv4(&mut f, 4, 5, 6);
        tcp(&mut f, 5);
        f
    };
    assert_eq!(innermost_tcp(&tagged(2), &[]), Some(42));
    assert_eq!(innermost_tcp(&tagged(3), &[]), None);
    // plain UDP GRO sees untagged frames only.
    assert_eq!(plain_udp(&tagged(1)), None);
}
