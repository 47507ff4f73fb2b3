//! Tests of vlan.rs.

use super::*;
use crate::consts::{ETH_P_ARP, ETH_P_IP, ETH_P_QINQ1};
use crate::wire::test_frames::{QINQ_ARP, VLAN_PRIO};

#[test]
fn captured_qinq_tags() {
    // tcpdump: 802.1Q-QinQ (0x88a8), vlan 200, p 0, ethertype 802.1Q (0x8100), vlan 100,
    // p 0, ethertype ARP (0x0806).
    let outer = Packet::new_checked(&QINQ_ARP[14..]).expect("tag");
    assert_eq!((outer.vid(), outer.pcp(), outer.dei()), (200, 0, false));
    assert_eq!(outer.tci(), 200);
    assert_eq!(outer.ethertype(), ETH_P_8021Q);
    let inner = Packet::new_checked(outer.payload()).expect("tag");
    assert_eq!((inner.vid(), inner.pcp()), (100, 0));
    assert_eq!(inner.ethertype(), ETH_P_ARP);
    assert_eq!(inner.payload().len(), 28);
    assert_eq!(
        Repr::parse(&inner),
        Ok(Repr {
            pcp: 0,
            dei: false,
            vid: 100,
            ethertype: ETH_P_ARP
        })
    );
}

#[test]
fn priority_and_dei_bits() {
    // tcpdump: vlan 0, p 5, ethertype IPv4.
    let tag = Packet::new_checked(&VLAN_PRIO[14..]).expect("tag");
    assert_eq!((tag.vid(), tag.pcp(), tag.dei()), (0, 5, false));
    assert_eq!(tag.ethertype(), ETH_P_IP);
    // TCI 0xffff: every bit set (pcp 7, DEI, vid 4095), each field on its own bits.
    let all = Packet::new_checked(&[0xff, 0xff, 0x08, 0x00][..]).expect("tag");
    assert_eq!((all.pcp(), all.dei(), all.vid()), (7, true, 4095));
}

#[test]
fn tpids() {
    assert!(eth_type_vlan(ETH_P_8021Q));
    assert!(eth_type_vlan(ETH_P_8021AD));
    // 0x9100 is not a TPID the kernel untags (eth_type_vlan).
    assert!(!eth_type_vlan(ETH_P_QINQ1));
    assert!(!eth_type_vlan(ETH_P_IP));
}

#[test]
fn truncated_refused() {
    for len in 0..VLAN_HLEN {
        assert_eq!(
            Packet::new_checked(&QINQ_ARP[14..14 + len]),
            Err(Error::Truncated)
        );
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&QINQ_ARP[14..14 + len])),
            Err(Error::Truncated)
        );
    }
}

#[test]
fn setters_keep_the_other_fields() {
    let mut buf = [0u8; 5];
    let mut p = Packet::new_checked(&mut buf[..]).expect("ok");
    p.set_vid(0x123);
    p.set_pcp(6);
    p.set_dei(true);
    p.set_ethertype(ETH_P_IP);
    p.payload_mut()[0] = 0x45;
    // 110 1 0001 0010 0011 = 0xd123.
    assert_eq!(buf, [0xd1, 0x23, 0x08, 0x00, 0x45]);
    let mut p = Packet::new_unchecked(&mut buf[..]);
    p.set_dei(false);
    p.set_vid(0xfff5); // only the low 12 bits
    assert_eq!(p.tci(), 0xcff5);
    p.set_pcp(9); // only the low 3 bits
    assert_eq!(p.pcp(), 1);
}

#[test]
fn emit_round_trip_and_range_errors() {
    let tag = Packet::new_checked(&VLAN_PRIO[14..]).expect("tag");
    let repr = Repr::parse(&tag).expect("ok");
    let mut out = [0u8; 4];
    repr.emit(&mut Packet::new_unchecked(&mut out[..]))
        .expect("room");
    assert_eq!(out, VLAN_PRIO[14..18]);
    for bad in [Repr { pcp: 8, ..repr }, Repr { vid: 4096, ..repr }] {
        assert!(matches!(
            bad.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed(_))
        ));
    }
    assert_eq!(
        repr.emit(&mut Packet::new_unchecked(&mut [0u8; 3][..])),
        Err(Error::Truncated)
    );
}
