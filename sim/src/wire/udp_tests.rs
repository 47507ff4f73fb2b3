//! Tests of udp.rs.

use std::net::Ipv4Addr;

use super::*;
use crate::wire::checksum;
use crate::wire::test_frames::UDP4;

fn addrs() -> (IpAddr, IpAddr) {
    (
        Ipv4Addr::new(10, 77, 0, 1).into(),
        Ipv4Addr::new(10, 77, 0, 2).into(),
    )
}

fn dgram() -> &'static [u8] {
    &UDP4[34..]
}

#[test]
fn captured_datagram_fields() {
    // tcpdump -vv: 10.77.0.1.58743 > 10.77.0.2.6001: [udp sum ok] UDP, length 1.
    let p = Packet::new_checked(dgram()).expect("valid");
    assert_eq!((p.src_port(), p.dst_port()), (58743, 6001));
    assert_eq!(p.len(), 9);
    assert!(!p.is_empty());
    assert_eq!(p.checksum(), 0xed56);
    let (src, dst) = addrs();
    assert!(p.verify_checksum(src, dst));
    assert!(!p.verify_checksum(src, Ipv4Addr::new(10, 77, 0, 3).into()));
    assert_eq!(p.payload(), &[0x01]);
    assert_eq!(
        Repr::parse(&p),
        Ok(Repr {
            src_port: 58743,
            dst_port: 6001,
            payload_len: 1
        })
    );
}

#[test]
fn lengths_and_padding() {
    for len in 0..HEADER_LEN {
        assert_eq!(Packet::new_checked(&dgram()[..len]), Err(Error::Truncated));
    }
    let mut b = dgram().to_vec();
    b[4..6].copy_from_slice(&7u16.to_be_bytes());
    let p = Packet::new_unchecked(&b[..]);
    assert!(matches!(p.check_header(), Err(Error::Malformed(_))));
    assert!(p.payload().is_empty());
    b[4..6].copy_from_slice(&100u16.to_be_bytes());
    let p = Packet::new_unchecked(&b[..]);
    assert_eq!(p.check_header(), Err(Error::Truncated));
    assert_eq!(p.payload(), &[0x01], "clamped to the buffer");
    let (src, dst) = addrs();
    assert!(!p.verify_checksum(src, dst));
    // Bytes past len (IP padding) are not the datagram's, nor in its checksum.
    let mut padded = dgram().to_vec();
    padded.extend_from_slice(&[0xee; 4]);
    let p = Packet::new_checked(&padded[..]).expect("valid");
    assert_eq!(p.payload(), &[0x01]);
    assert!(p.verify_checksum(src, dst));
    // Checksum 0: none sent, nothing to verify.
    let mut none = dgram().to_vec();
    none[6..8].fill(0);
    assert!(Packet::new_unchecked(&none[..]).verify_checksum(src, dst));
}

#[test]
fn emit_reproduces_the_captured_datagram() {
    let repr = Repr::parse(&Packet::new_checked(dgram()).expect("ok")).expect("ok");
    let mut out = [0u8; 9];
    out[8] = 0x01;
    let mut p = Packet::new_unchecked(&mut out[..]);
    repr.emit(&mut p).expect("room");
    let (src, dst) = addrs();
    p.fill_checksum(src, dst);
    assert_eq!(out[..], *dgram());
    let big = Repr {
        payload_len: 65528,
        ..repr
    };
    assert!(matches!(
        big.emit(&mut Packet::new_unchecked(&mut out[..])),
        Err(Error::Malformed(_))
    ));
}

#[test]
fn zero_sum_is_sent_as_csum_mangled_0() {
    let (src, dst) = addrs();
    let mut b = [0u8; 10];
    let mut p = Packet::new_unchecked(&mut b[..]);
    Repr {
        src_port: 1,
        dst_port: 2,
        payload_len: 2,
    }
    .emit(&mut p)
    .expect("room");
    // Pick the two payload bytes that make the folded sum 0xffff, so the complement is 0.
    let pseudo = checksum::pseudo_header(src, dst, crate::consts::IPPROTO_UDP, 10).expect("v4");
    let s = checksum::fold(checksum::ones_complement_sum(&b[..8], pseudo));
    b[8..].copy_from_slice(&(!s).to_be_bytes());
    let mut p = Packet::new_unchecked(&mut b[..]);
    p.fill_checksum(src, dst);
    assert_eq!(p.checksum(), CSUM_MANGLED_0);
    assert!(p.verify_checksum(src, dst));
}

#[test]
fn setters_write_their_fields() {
    let mut b = [0u8; 10];
    let mut p = Packet::new_unchecked(&mut b[..]);
    p.set_src_port(0x1234);
    p.set_dst_port(4789);
    p.set_len(10);
    p.set_checksum(0xabcd);
    p.payload_mut().copy_from_slice(&[7, 8]);
    assert_eq!(b, [0x12, 0x34, 0x12, 0xb5, 0, 10, 0xab, 0xcd, 7, 8]);
}
