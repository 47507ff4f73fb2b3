//! Tests of ipv6.rs.

use super::*;
use crate::consts::{IPPROTO_ICMPV6, IPPROTO_TCP, IPPROTO_UDP};
use crate::wire::test_frames::{MLD_HBH, TCP6_SYN, V6_EXT_CHAIN, V6_FRAG_TAIL};

fn ip(frame: &[u8]) -> &[u8] {
    &frame[14..]
}

fn addr(s: &str) -> Ipv6Addr {
    s.parse().expect("literal")
}

#[test]
fn captured_header_fields() {
    // tcpdump: flowlabel 0x80231, hlim 64, next-header TCP (6) payload length: 40,
    // fd00:77::1 > fd00:77::2 (no class printed: 0).
    let p = Packet::new_checked(ip(&TCP6_SYN)).expect("valid");
    assert_eq!(p.version(), 6);
    assert_eq!(p.traffic_class(), 0);
    assert_eq!(p.flow_label(), 0x80231);
    assert_eq!(p.ver_tc_flow(), 0x6008_0231);
    assert_eq!(p.payload_len(), 40);
    assert_eq!(p.next_header(), IPPROTO_TCP);
    assert_eq!(p.hop_limit(), 64);
    assert_eq!(p.src_addr(), addr("fd00:77::1"));
    assert_eq!(p.dst_addr(), addr("fd00:77::2"));
    assert_eq!(p.payload().len(), 40);
    assert_eq!(
        p.payload()[..2],
        [0xab, 0x0e],
        "TCP source port 43790 first"
    );
    // No extension headers: the walk yields nothing and stops at TCP.
    let mut walk = ExtHeaders::new(p.next_header(), p.payload());
    assert_eq!(walk.next(), None);
    assert_eq!((walk.next_header(), walk.offset()), (IPPROTO_TCP, 0));
}

#[test]
fn captured_hop_by_hop() {
    // tcpdump: hlim 1, next-header Options (0) payload length: 36; :: > ff02::16:
    // HBH (rtalert: 0x0000) (padn) ... ICMP6.
    let p = Packet::new_checked(ip(&MLD_HBH)).expect("valid");
    assert_eq!(
        (p.next_header(), p.payload_len(), p.hop_limit()),
        (IPPROTO_HOPOPTS, 36, 1)
    );
    assert_eq!(p.src_addr(), Ipv6Addr::UNSPECIFIED);
    assert_eq!(p.dst_addr(), addr("ff02::16"));
    let hbh = ExtHeader::new_checked(p.next_header(), p.payload()).expect("8 bytes");
    assert_eq!((hbh.hdr_ext_len(), hbh.header_len()), (0, 8));
    assert_eq!(hbh.next_header(), IPPROTO_ICMPV6);
    // Router alert (type 5, length 2, value 0), then PadN (type 1, length 0).
    assert_eq!(hbh.data(), &[0x05, 0x02, 0x00, 0x00, 0x01, 0x00]);
    assert_eq!(hbh.payload().first(), Some(&0x8f), "MLDv2 report type 143");
    let steps: Vec<_> = ExtHeaders::new(p.next_header(), p.payload()).collect();
    assert_eq!(
        steps,
        [Ok(ExtHeaderAt {
            kind: IPPROTO_HOPOPTS,
            offset: 0,
            len: 8,
            next_header: IPPROTO_ICMPV6
        })]
    );
}

#[test]
fn captured_fragment() {
    // tcpdump: next-header Fragment (44) payload length: 40; frag (0x8a1ff39e:1448|32).
    let p = Packet::new_checked(ip(&V6_FRAG_TAIL)).expect("valid");
    assert_eq!(p.next_header(), IPPROTO_FRAGMENT);
    let frag = ExtHeader::new_checked(IPPROTO_FRAGMENT, p.payload()).expect("8 bytes");
    assert_eq!(frag.header_len(), FRAG_HLEN);
    assert_eq!(frag.frag_ident(), Some(0x8a1f_f39e));
    assert_eq!(frag.frag_offset(), Some(1448));
    assert_eq!(frag.more_frags(), Some(false));
    assert_eq!(frag.next_header(), IPPROTO_UDP);
    assert_eq!(frag.payload().len(), 32);
    assert_eq!(frag.routing_type(), None);
}

#[test]
fn walk_of_a_full_chain() {
    // Expected values from tshark -V (see test_frames.rs).
    let p = Packet::new_checked(ip(&V6_EXT_CHAIN)).expect("valid");
    assert_eq!(p.payload_len(), 60);
    let mut walk = ExtHeaders::new(p.next_header(), p.payload());
    let steps: Vec<_> = walk.by_ref().map(|s| s.expect("complete")).collect();
    let at = |kind, offset, len, next_header| ExtHeaderAt {
        kind,
        offset,
        len,
        next_header,
    };
    assert_eq!(
        steps,
        [
            at(IPPROTO_HOPOPTS, 0, 8, IPPROTO_ROUTING),
            at(IPPROTO_ROUTING, 8, 24, IPPROTO_DSTOPTS),
            at(IPPROTO_DSTOPTS, 32, 8, IPPROTO_FRAGMENT),
            at(IPPROTO_FRAGMENT, 40, 8, IPPROTO_UDP),
        ]
    );
    assert_eq!((walk.next_header(), walk.offset()), (IPPROTO_UDP, 48));
    assert_eq!(
        &p.payload()[48..52],
        &[0x03, 0xe8, 0x07, 0xd0],
        "UDP 1000 > 2000"
    );
    let rt = ExtHeader::new_checked(IPPROTO_ROUTING, &p.payload()[8..]).expect("24 bytes");
    assert_eq!(
        (rt.hdr_ext_len(), rt.routing_type(), rt.segments_left()),
        (2, Some(2), Some(1))
    );
    assert_eq!(rt.data()[6..], addr("fd00::3").octets());
    assert_eq!(rt.frag_off(), None);
    let frag = ExtHeader::new_checked(IPPROTO_FRAGMENT, &p.payload()[40..]).expect("8 bytes");
    assert_eq!(
        (frag.frag_offset(), frag.more_frags()),
        (Some(0), Some(true))
    );
    assert_eq!(frag.frag_ident(), Some(0x1234_5678));
}

#[test]
fn walk_stops_at_truncation_and_after_the_bound() {
    let payload = &ip(&V6_EXT_CHAIN)[HEADER_LEN..];
    // 20 bytes: the routing header (24 bytes from offset 8) runs past the end.
    let mut walk = ExtHeaders::new(IPPROTO_HOPOPTS, &payload[..20]);
    assert!(matches!(walk.next(), Some(Ok(_))));
    assert_eq!(walk.next(), Some(Err(Error::Truncated)));
    assert_eq!(walk.next(), None, "one error, then nothing");
    assert_eq!((walk.offset(), walk.current().header_len()), (8, 24));
    // 9 bytes: the routing header's length byte is missing; it needs 2 to say more.
    let mut walk = ExtHeaders::new(IPPROTO_HOPOPTS, &payload[..9]);
    walk.next();
    assert_eq!(walk.next(), Some(Err(Error::Truncated)));
    assert_eq!(walk.current().header_len(), 2);
    // A fragment header is 8 bytes whatever its second byte says.
    assert_eq!(
        ExtHeader::new_checked(IPPROTO_FRAGMENT, &payload[40..47]),
        Err(Error::Truncated)
    );
    // AH counts 4-byte units past the first two: hdrlen 1 is 12 bytes.
    let ah = [IPPROTO_TCP, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        ExtHeader::new_checked(IPPROTO_AH, &ah[..]).map(|h| h.header_len()),
        Ok(12)
    );
    // Ten empty destination-options headers, each naming the next: the walk stops
    // after MAX_EXT_HEADERS, still at a destination-options header.
    let chain: Vec<u8> = (0..10)
        .flat_map(|_| [IPPROTO_DSTOPTS, 0, 1, 4, 0, 0, 0, 0])
        .collect();
    let mut walk = ExtHeaders::new(IPPROTO_DSTOPTS, &chain);
    assert_eq!(walk.by_ref().count(), MAX_EXT_HEADERS);
    assert_eq!((walk.next_header(), walk.offset()), (IPPROTO_DSTOPTS, 64));
    // Not an extension header at all.
    assert!(matches!(
        ExtHeader::new_checked(IPPROTO_UDP, &chain[..]),
        Err(Error::Malformed(_))
    ));
}

#[test]
fn malformed_and_truncated_fixed_headers() {
    for len in 0..HEADER_LEN {
        assert_eq!(
            Packet::new_checked(&ip(&TCP6_SYN)[..len]),
            Err(Error::Truncated)
        );
    }
    // payload_len 40 with 39 bytes present.
    let short = &ip(&TCP6_SYN)[..HEADER_LEN + 39];
    assert_eq!(Packet::new_checked(short), Err(Error::Truncated));
    assert_eq!(
        Packet::new_unchecked(short).payload().len(),
        39,
        "clamped, no panic"
    );
    let mut v4 = ip(&TCP6_SYN).to_vec();
    v4[0] = 0x40;
    assert!(matches!(
        Packet::new_checked(&v4[..]),
        Err(Error::Malformed(_))
    ));
    // payload_len 0 (a jumbogram): the payload is the rest of the buffer.
    let mut jumbo = ip(&TCP6_SYN).to_vec();
    jumbo[4..6].fill(0);
    assert_eq!(
        Packet::new_checked(&jumbo[..]).expect("ok").payload().len(),
        40
    );
}

#[test]
fn emit_reproduces_the_captured_header_and_setters() {
    let repr = Repr::parse(&Packet::new_checked(ip(&TCP6_SYN)).expect("ok")).expect("ok");
    assert_eq!(
        (repr.flow_label, repr.payload_len, repr.next_header),
        (0x80231, 40, IPPROTO_TCP)
    );
    let mut out = [0u8; 40];
    repr.emit(&mut Packet::new_unchecked(&mut out[..]))
        .expect("room");
    assert_eq!(out, ip(&TCP6_SYN)[..40]);
    for bad in [
        Repr {
            payload_len: 65536,
            ..repr
        },
        Repr {
            flow_label: 0x10_0000,
            ..repr
        },
    ] {
        assert!(matches!(
            bad.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed(_))
        ));
    }

    let mut b = [0u8; 42];
    let mut p = Packet::new_unchecked(&mut b[..]);
    p.set_version(6);
    p.set_traffic_class(0xb8);
    p.set_flow_label(0xfffff);
    p.set_payload_len(2);
    p.set_next_header(IPPROTO_UDP);
    p.set_hop_limit(255);
    p.set_src_addr(addr("2001:db8::1"));
    p.set_dst_addr(addr("2001:db8::2"));
    p.payload_mut().copy_from_slice(&[9, 9]);
    p.set_traffic_class(0x01);
    assert_eq!(b[..8], [0x60, 0x1f, 0xff, 0xff, 0, 2, 17, 255]);
    assert_eq!(b[8..24], addr("2001:db8::1").octets());
    assert_eq!(b[40..], [9, 9]);

    let mut frag = [0u8; 8];
    let mut h = ExtHeader::new_unchecked(IPPROTO_FRAGMENT, &mut frag[..]);
    h.set_next_header(IPPROTO_TCP);
    h.set_frag_off(1448 | IP6_MF).expect("fragment");
    h.set_frag_ident(0xdead_beef).expect("fragment");
    assert_eq!(frag, [6, 0, 0x05, 0xa9, 0xde, 0xad, 0xbe, 0xef]);
    let mut opts = [0u8; 8];
    let mut h = ExtHeader::new_unchecked(IPPROTO_DSTOPTS, &mut opts[..]);
    h.set_hdr_ext_len(1);
    assert!(h.set_frag_off(0).is_err());
    assert_eq!(h.header_len(), 16);
}
