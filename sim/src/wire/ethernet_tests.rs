//! Tests of ethernet.rs.

use super::*;
use crate::consts::{ETH_P_8021AD, ETH_P_IP};
use crate::wire::test_frames::{QINQ_ARP, TCP4_SYN};

#[test]
fn captured_frame_fields() {
    // tcpdump: 02:00:5e:c0:00:0a > 02:00:5e:c0:00:0b, ethertype IPv4 (0x0800).
    let eth = Packet::new_checked(&TCP4_SYN[..]).expect("74 bytes");
    assert_eq!(eth.src_addr(), [0x02, 0x00, 0x5e, 0xc0, 0x00, 0x0a]);
    assert_eq!(eth.dst_addr(), [0x02, 0x00, 0x5e, 0xc0, 0x00, 0x0b]);
    assert_eq!(eth.ethertype(), ETH_P_IP);
    assert_eq!(eth.payload().len(), 74 - 14);
    assert_eq!(eth.payload()[0], 0x45);
    let repr = Repr::parse(&eth).expect("valid");
    assert_eq!(repr.buffer_len(), ETH_HLEN);
    // The QinQ frame: broadcast, the service TPID in h_proto.
    let eth = Packet::new_checked(&QINQ_ARP[..]).expect("50 bytes");
    assert_eq!(eth.dst_addr(), [0xff; 6]);
    assert_eq!(eth.ethertype(), ETH_P_8021AD);
}

#[test]
fn truncated_headers_are_refused_and_payload_never_panics() {
    for len in 0..ETH_HLEN {
        assert_eq!(Packet::new_checked(&TCP4_SYN[..len]), Err(Error::Truncated));
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&TCP4_SYN[..len])),
            Err(Error::Truncated)
        );
        assert_eq!(
            Packet::new_unchecked(&TCP4_SYN[..len]).payload(),
            &[] as &[u8]
        );
    }
    let bare = Packet::new_checked(&TCP4_SYN[..ETH_HLEN]).expect("header only");
    assert!(bare.payload().is_empty());
}

#[test]
fn emit_round_trip_and_setters() {
    let repr = Repr::parse(&Packet::new_checked(&TCP4_SYN[..]).expect("ok")).expect("ok");
    let mut out = [0u8; 20];
    repr.emit(&mut Packet::new_unchecked(&mut out[..]))
        .expect("room");
    assert_eq!(out[..14], TCP4_SYN[..14]);
    assert_eq!(out[14..], [0; 6], "emit writes only the header");
    let mut short = [0u8; 13];
    assert_eq!(
        repr.emit(&mut Packet::new_unchecked(&mut short[..])),
        Err(Error::Truncated)
    );

    let mut buf = [0u8; 16];
    let mut p = Packet::new_checked(&mut buf[..]).expect("ok");
    p.set_dst_addr([1, 2, 3, 4, 5, 6]);
    p.set_src_addr([7, 8, 9, 10, 11, 12]);
    p.set_ethertype(0x88b5);
    p.payload_mut().copy_from_slice(&[0xaa, 0xbb]);
    assert_eq!(
        buf,
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x88, 0xb5, 0xaa, 0xbb]
    );
}
