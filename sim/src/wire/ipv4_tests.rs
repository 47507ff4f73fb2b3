//! Tests of ipv4.rs.

use super::*;
use crate::consts::{IPPROTO_TCP, IPPROTO_UDP};
use crate::wire::test_frames::{TCP4_SYN, UDP4};

fn ip(frame: &[u8]) -> &[u8] {
    &frame[14..]
}

#[test]
fn captured_header_fields() {
    // tcpdump -vv: tos 0x0, ttl 64, id 63617, offset 0, flags [DF], proto TCP (6),
    // length 60, 10.77.0.1 > 10.77.0.2 (and no "bad cksum").
    let p = Packet::new_checked(ip(&TCP4_SYN)).expect("valid");
    assert_eq!((p.version(), p.ihl(), p.header_len()), (4, 5, 20));
    assert_eq!((p.tos(), p.dscp(), p.ecn()), (0, 0, 0));
    assert_eq!(p.total_len(), 60);
    assert_eq!(p.ident(), 63617);
    assert!(p.dont_frag() && !p.more_frags() && !p.is_fragment());
    assert_eq!(p.frag_offset(), 0);
    assert_eq!(p.ttl(), 64);
    assert_eq!(p.protocol(), IPPROTO_TCP);
    assert_eq!(p.checksum(), 0x2d9e);
    assert!(p.verify_checksum());
    assert_eq!(p.src_addr(), Ipv4Addr::new(10, 77, 0, 1));
    assert_eq!(p.dst_addr(), Ipv4Addr::new(10, 77, 0, 2));
    assert!(p.options().is_empty());
    assert_eq!(p.payload().len(), 40);
    assert_eq!(
        p.payload()[..2],
        [0xe9, 0x3e],
        "TCP source port 59710 first"
    );

    // tcpdump -vv: ttl 64, id 44358, flags [DF], proto UDP (17), length 29.
    let p = Packet::new_checked(ip(&UDP4)).expect("valid");
    assert_eq!(
        (p.ident(), p.total_len(), p.protocol()),
        (44358, 29, IPPROTO_UDP)
    );
    assert!(p.verify_checksum());
    let repr = Repr::parse(&p).expect("valid");
    assert_eq!(repr.payload_len, 9);
}

#[test]
fn padding_past_tot_len_is_not_payload() {
    let mut padded = ip(&UDP4).to_vec();
    padded.resize(46, 0);
    let p = Packet::new_checked(&padded[..]).expect("padding is allowed");
    assert_eq!(p.payload(), &ip(&UDP4)[20..]);
}

#[test]
fn malformed_and_truncated_headers() {
    for len in 0..HEADER_LEN {
        assert_eq!(
            Packet::new_checked(&ip(&TCP4_SYN)[..len]),
            Err(Error::Truncated)
        );
    }
    // The datagram cut short: tot_len 60 in a 59-byte buffer.
    assert_eq!(
        Packet::new_checked(&ip(&TCP4_SYN)[..59]),
        Err(Error::Truncated)
    );
    let with = |i: usize, v: u8| {
        let mut b = ip(&TCP4_SYN).to_vec();
        b[i] = v;
        b
    };
    let bad_version = with(0, 0x65);
    assert!(matches!(
        Packet::new_checked(&bad_version[..]),
        Err(Error::Malformed(_))
    ));
    let ihl4 = with(0, 0x44);
    assert!(matches!(
        Packet::new_checked(&ihl4[..]),
        Err(Error::Malformed(_))
    ));
    // IHL 15 (60 bytes of header) in a 60-byte datagram whose tot_len is 60: fine as far
    // as lengths go; tot_len 19 is below even IHL 5.
    let short_total = {
        let mut b = ip(&TCP4_SYN).to_vec();
        b[2..4].copy_from_slice(&19u16.to_be_bytes());
        b
    };
    assert!(matches!(
        Packet::new_checked(&short_total[..]),
        Err(Error::Malformed(_))
    ));
    // IHL 15 with 40 bytes present after a 20-byte header: the header runs past the end.
    let ihl15 = with(0, 0x4f);
    let p = Packet::new_unchecked(&ihl15[..40]);
    assert_eq!(p.check_len(), Ok(()));
    assert_eq!(p.check_header(), Err(Error::Truncated));
    // The variable parts stay readable without a panic.
    assert!(p.options().len() <= 20);
    assert!(p.payload().is_empty());
    assert!(!p.verify_checksum());
    // A changed byte breaks the checksum, and Repr::parse says so.
    let ttl = with(8, 63);
    let p = Packet::new_checked(&ttl[..]).expect("lengths fine");
    assert!(!p.verify_checksum());
    assert!(matches!(Repr::parse(&p), Err(Error::Malformed(_))));
}

#[test]
fn fragment_bits() {
    let mut b = ip(&TCP4_SYN).to_vec();
    let mut p = Packet::new_unchecked(&mut b[..]);
    // MF and offset 185 units = 1480 bytes (a second fragment of a 1500-MTU datagram).
    p.set_frag_off(IP_MF | 185);
    assert!(p.more_frags() && !p.dont_frag() && p.is_fragment());
    assert_eq!(p.frag_offset(), 1480);
    p.set_frag_off(IP_CE);
    assert!(!p.is_fragment(), "IP_CE is no fragment bit");
    assert_eq!(b[6..8], [0x80, 0x00]);
}

#[test]
fn emit_reproduces_the_captured_header() {
    let p = Packet::new_checked(ip(&TCP4_SYN)).expect("valid");
    let repr = Repr::parse(&p).expect("valid");
    assert_eq!(
        repr,
        Repr {
            src_addr: Ipv4Addr::new(10, 77, 0, 1),
            dst_addr: Ipv4Addr::new(10, 77, 0, 2),
            protocol: IPPROTO_TCP,
            payload_len: 40,
            ttl: 64,
            tos: 0,
            ident: 63617,
            frag_off: IP_DF,
        }
    );
    let mut out = [0u8; 20];
    repr.emit(&mut Packet::new_unchecked(&mut out[..]))
        .expect("room");
    // The kernel's bytes, checksum included.
    assert_eq!(out, ip(&TCP4_SYN)[..20]);
    let big = Repr {
        payload_len: 65516,
        ..repr
    };
    assert!(matches!(
        big.emit(&mut Packet::new_unchecked(&mut out[..])),
        Err(Error::Malformed(_))
    ));
    assert_eq!(
        repr.emit(&mut Packet::new_unchecked(&mut [0u8; 19][..])),
        Err(Error::Truncated)
    );
}

#[test]
fn setters_write_their_fields() {
    let mut b = [0u8; 24];
    let mut p = Packet::new_unchecked(&mut b[..]);
    p.set_version(4);
    p.set_ihl(6);
    p.set_tos(0xb8);
    p.set_total_len(24);
    p.set_ident(0x1234);
    p.set_frag_off(IP_DF);
    p.set_ttl(1);
    p.set_protocol(IPPROTO_UDP);
    p.set_src_addr(Ipv4Addr::new(192, 0, 2, 1));
    p.set_dst_addr(Ipv4Addr::new(198, 51, 100, 2));
    p.fill_checksum();
    assert!(p.payload_mut().is_empty());
    let p = Packet::new_checked(&b[..]).expect("consistent");
    assert!(p.verify_checksum());
    assert_eq!((p.dscp(), p.ecn()), (46, 0));
    assert_eq!(p.options(), &[0, 0, 0, 0]);
    assert_eq!(
        b[..20],
        [
            0x46, 0xb8, 0, 24, 0x12, 0x34, 0x40, 0, 1, 17, b[10], b[11], 192, 0, 2, 1, 198, 51,
            100, 2
        ]
    );
}
