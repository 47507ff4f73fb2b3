//! The checksum arithmetic GRO needs, kernel-shaped: a fast ones-complement sum for the
//! software validation of CHECKSUM_NONE skbs (skb_checksum), the pseudo-header
//! (csum_tcpudp_nofold), csum_replace2 for inet_gro_complete, and ip_fast_csum.
//!
//! Sums are 32-bit partial sums like the kernel's `__wsum`; [`fold`] folds without
//! complementing (`~csum_fold`), so a region holding a correct checksum folds to 0xffff.

use crate::wire::checksum::{add, fold as wire_fold};

/// Ones-complement sum of `data` as big-endian 16-bit words (an odd last byte is the
/// high byte of a zero-padded word), returned folded to 16 bits in a u32.
///
/// Equal (after folding) to `wire::checksum::ones_complement_sum`; faster: 32-bit
/// little-endian words are summed into a u64 and byte-swapped once at the end (RFC 1071
/// §2(B): the sum is byte-order independent).
pub fn sum(data: &[u8]) -> u32 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rem = chunks.remainder();
    let mut last = [0u8; 4];
    last[..rem.len()].copy_from_slice(rem);
    acc += u64::from(u32::from_le_bytes(last));
    // Fold 64 -> 16 bits (little-endian word order), then swap to big-endian order.
    let mut s = (acc & 0xffff_ffff) + (acc >> 32);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    let le = u16::try_from(s).unwrap_or(u16::MAX);
    u32::from(le.swap_bytes())
}

/// Folds a partial sum to 16 bits, not complemented (the kernel's `~csum_fold`).
pub fn fold(s: u32) -> u16 {
    wire_fold(s)
}

/// csum_add.
pub fn csum_add(a: u32, b: u32) -> u32 {
    add(a, b)
}

/// csum_tcpudp_nofold(saddr, daddr, len, proto, 0): the IPv4 pseudo-header sum.
pub fn pseudo_v4(saddr: [u8; 4], daddr: [u8; 4], proto: u8, len: usize) -> u32 {
    let w = |b: [u8; 4]| {
        u32::from(u16::from_be_bytes([b[0], b[1]])) + u32::from(u16::from_be_bytes([b[2], b[3]]))
    };
    // A length above 16 bits is carried like the kernel's 32-bit add.
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    csum_add(w(saddr) + w(daddr) + u32::from(proto), len)
}

/// csum_ipv6_magic's sum before folding: the IPv6 pseudo header (addresses, the 32-bit
/// upper-layer length, the next header) as 16-bit words.
pub fn pseudo_v6(saddr: [u8; 16], daddr: [u8; 16], proto: u8, len: usize) -> u32 {
    let words = saddr
        .chunks(2)
        .chain(daddr.chunks(2))
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])));
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    let s = words.fold(0u32, csum_add);
    csum_add(
        csum_add(csum_add(s, len >> 16), len & 0xffff),
        u32::from(proto),
    )
}

/// ip_fast_csum(iph, 5) == 0: the 20-byte header sums to 0xffff.
pub fn ipv4_header_ok(hdr: &[u8]) -> bool {
    fold(sum(hdr)) == 0xffff
}

/// csum16_add (include/net/checksum.h): 16-bit ones-complement add.
fn csum16_add(csum: u16, addend: u16) -> u16 {
    let (res, carry) = csum.overflowing_add(addend);
    res.wrapping_add(u16::from(carry))
}

/// csum_replace2(&check, old, new) (include/net/checksum.h):
/// `*sum = ~csum16_add(csum16_sub(~(*sum), old), new)`, RFC 1624 incremental update.
pub fn csum_replace2(check: u16, old: u16, new: u16) -> u16 {
    !csum16_add(csum16_add(!check, !old), new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::checksum::{checksum, ones_complement_sum};

    #[test]
    fn fast_sum_equals_the_reference_sum_for_every_length_and_alignment() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 37 + 11) as u8).collect();
        for start in 0..4 {
            for end in start..data.len() {
                let slice = &data[start..end];
                assert_eq!(
                    fold(sum(slice)),
                    fold(ones_complement_sum(slice, 0)),
                    "{start}..{end}"
                );
            }
        }
        assert_eq!(sum(&[]), 0);
        assert_eq!(fold(sum(&[0xff; 64])), 0xffff);
    }

    #[test]
    fn rfc1071_and_ipv4_header() {
        // RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2 after folding.
        assert_eq!(
            fold(sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])),
            0xddf2
        );
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert!(ipv4_header_ok(&hdr));
        let mut bad = hdr;
        bad[11] ^= 1;
        assert!(!ipv4_header_ok(&bad));
    }

    #[test]
    fn pseudo_header_by_hand() {
        // 10.0.0.1 -> 10.0.0.2, TCP, length 1420:
        // 0x0a00 + 0x0001 + 0x0a00 + 0x0002 + 0x0006 + 0x058c = 0x1995.
        assert_eq!(
            fold(pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, 1420)),
            0x1995
        );
    }

    #[test]
    fn replace2_matches_a_full_recompute() {
        // The header above with tot_len 0x0073 -> 0x36e8 (14056): recompute and compare.
        let mut hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let new = csum_replace2(0xb861, 0x0073, 0x36e8);
        hdr[2] = 0x36;
        hdr[3] = 0xe8;
        hdr[10] = 0;
        hdr[11] = 0;
        assert_eq!(new, checksum(&hdr));
        // Hand: ~0xb861 = 0x479e; + ~0x0073 (0xff8c) = 0x1472a, end-around 0x472b;
        // + 0x36e8 = 0x7e13; ~0x7e13 = 0x81ec.
        assert_eq!(new, 0x81ec);
    }
}
