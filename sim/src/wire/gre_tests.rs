//! Tests of gre.rs.

use super::*;
use crate::consts::{ETH_P_IP, ETH_P_TEB};

// C|K|S, TEB, checksum 0x4cd8 (over these 20 bytes), reserved1 0, key 42, seq 7,
// payload de ad be ef.
static CKS: [u8; 20] = [
    0xb0, 0x00, 0x65, 0x58, 0x4c, 0xd8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x07,
    0xde, 0xad, 0xbe, 0xef,
];

#[test]
fn parse_all_optional_fields() {
    let gre = Gre::new_checked(&CKS[..]).expect("complete");
    assert_eq!(gre.header_len(), 16);
    assert_eq!(gre.checksum(), Some(0x4cd8));
    assert_eq!(gre.reserved1(), Some(0));
    assert_eq!(gre.key(), Some(42));
    assert_eq!(gre.sequence(), Some(7));
    assert_eq!(gre.ack_number(), None);
    assert_eq!(gre.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    assert!(gre.verify_checksum());
    let repr = GreRepr::parse(&gre).expect("valid");
    assert_eq!(
        repr,
        GreRepr {
            checksum_present: true,
            key: Some(42),
            sequence: Some(7),
            protocol: ETH_P_TEB,
            version: 0
        }
    );
    assert_eq!(repr.buffer_len(), 16);
}

#[test]
fn bad_checksum_detected() {
    let mut bytes = CKS;
    bytes[19] ^= 1;
    assert!(!Gre::new_checked(&bytes[..]).expect("ok").verify_checksum());
}

#[test]
fn emit_fills_checksum() {
    let repr = GreRepr::parse(&Gre::new_checked(&CKS[..]).expect("ok")).expect("ok");
    let mut out = [0u8; 20];
    out[16..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    repr.emit(&mut Gre::new_unchecked(&mut out[..]))
        .expect("room");
    assert_eq!(out, CKS);
    let mut short = [0u8; 15];
    assert_eq!(
        repr.emit(&mut Gre::new_unchecked(&mut short[..])),
        Err(Error::Truncated)
    );
}

#[test]
fn key_only_and_plain() {
    // K, IPv4, key 0x2a.
    let k = [0x20, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x45];
    let gre = Gre::new_checked(&k[..]).expect("ok");
    assert_eq!(
        (gre.key(), gre.sequence(), gre.checksum()),
        (Some(0x2a), None, None)
    );
    assert_eq!(gre.protocol(), ETH_P_IP);
    assert!(gre.verify_checksum());
    // S only: sequence sits right after the base header.
    let s = [0x10, 0x00, 0x86, 0xdd, 0x00, 0x00, 0x01, 0x00];
    assert_eq!(Gre::new_checked(&s[..]).expect("ok").sequence(), Some(256));
    let plain = [0x00, 0x00, 0x65, 0x58];
    let repr = GreRepr::parse(&Gre::new_checked(&plain[..]).expect("ok")).expect("ok");
    assert_eq!(repr.buffer_len(), 4);
    assert_eq!(repr.flags_word(), 0);
}

#[test]
fn rejects_what_the_kernel_rejects() {
    let routing = [0x40, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00];
    let gre = Gre::new_checked(&routing[..]).expect("long enough");
    assert_eq!(gre.checksum(), Some(0));
    assert!(matches!(GreRepr::parse(&gre), Err(Error::Malformed(_))));
    let v2 = [0x00, 0x02, 0x08, 0x00];
    assert!(GreRepr::parse(&Gre::new_checked(&v2[..]).expect("ok")).is_err());
    // PPTP: version 1 with K, S and A: 16-byte header with an ack number.
    let pptp = [
        0x30, 0x81, 0x88, 0x0b, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
        0x04,
    ];
    let gre = Gre::new_checked(&pptp[..]).expect("ok");
    assert_eq!((gre.header_len(), gre.ack_number()), (16, Some(4)));
    assert!(GreRepr::parse(&gre).is_err());
    assert!(Gre::new_checked(&pptp[..15]).is_err());
}

#[test]
fn setters_check_flags() {
    let mut buf = [0u8; 8];
    let mut gre = Gre::new_checked(&mut buf[..]).expect("ok");
    assert!(gre.set_key(1).is_err());
    gre.set_flags_word(GRE_KEY | GRE_SEQ);
    assert_eq!(gre.set_key(9), Ok(()));
    // S announced, but the buffer ends before it: Truncated, and no panic.
    assert_eq!(gre.set_sequence(1), Err(Error::Truncated));
    assert_eq!(gre.sequence(), None);
    assert!(gre.check_len().is_err());
    assert_eq!(gre.payload(), &[] as &[u8]);
    assert!(gre.payload_mut().is_empty());
    gre.fill_checksum();
}

struct Lcg(u64);
impl Lcg {
    fn next_byte(&mut self) -> u8 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 56) as u8
    }
}

fn touch_everything(buf: &[u8]) {
    let Ok(gre) = Gre::new_checked(buf) else {
        // Even an unchecked view must not panic on the Option getters.
        let gre = Gre::new_unchecked(buf);
        let _ = (
            gre.checksum(),
            gre.key(),
            gre.sequence(),
            gre.ack_number(),
            gre.payload(),
        );
        return;
    };
    assert!(gre.header_len() <= buf.len());
    let _ = (
        gre.flags_word(),
        gre.protocol(),
        gre.version(),
        gre.recursion_control(),
    );
    let _ = (
        gre.strict_source_route(),
        gre.routing_present(),
        gre.reserved1(),
    );
    if gre.checksum_present() {
        assert!(gre.checksum().is_some());
    }
    if gre.key_present() {
        assert!(gre.key().is_some());
    }
    if gre.sequence_present() {
        assert!(gre.sequence().is_some());
    }
    let _ = (gre.ack_number(), gre.payload(), gre.verify_checksum());
    if let Ok(repr) = GreRepr::parse(&gre) {
        let mut out = vec![0u8; buf.len()];
        let hl = repr.buffer_len();
        out[hl..].copy_from_slice(&buf[gre.header_len()..]);
        repr.emit(&mut Gre::new_unchecked(&mut out[..]))
            .expect("same size");
        let back = GreRepr::parse(&Gre::new_checked(&out[..]).expect("ok")).expect("ok");
        assert_eq!(back, repr);
    }
}

/// Checks that no GRE getter panics on any truncation of random bytes under every
/// layout-changing flag combination and every flags word (`touch_everything` only calls
/// them), and the error type's text.
#[test]
fn fuzz_never_panics() {
    let mut rng = Lcg(0x5eed_0000_0000_0001);
    for _ in 0..8 {
        let random: Vec<u8> = (0..64).map(|_| rng.next_byte()).collect();
        // Every truncation of the raw bytes.
        for len in 0..=random.len() {
            touch_everything(&random[..len]);
        }
        // Every combination of the layout-changing bits (C R K S A) and version,
        // at every length.
        for combo in 0u16..256 {
            let bits = [GRE_CSUM, GRE_ROUTING, GRE_KEY, GRE_SEQ, GRE_ACK];
            let flags = bits
                .iter()
                .enumerate()
                .filter(|(i, _)| combo & (1 << i) != 0)
                .fold(combo >> 5, |acc, (_, bit)| acc | bit);
            let mut b = random.clone();
            b[..2].copy_from_slice(&flags.to_be_bytes());
            for len in 0..=b.len() {
                touch_everything(&b[..len]);
            }
        }
        // Every 16-bit flags word, at a length that varies with it.
        let mut b = random.clone();
        for flags in 0..=u16::MAX {
            b[..2].copy_from_slice(&flags.to_be_bytes());
            touch_everything(&b[..usize::from(flags) % 65]);
        }
    }
}
