//! The Internet checksum (RFC 1071), shared by GRE now and IPv4/TCP/UDP later.
//!
//! The kernel keeps a 32-bit partial sum (`__wsum`, include/linux/types.h) that
//! `csum_partial` (arch/x86/lib/csum-partial_64.c) accumulates and `csum_fold`
//! (include/asm-generic/checksum.h) folds to 16 bits *and complements*. Here the two
//! steps are split so callers can chain partial sums (pseudo-headers, scattered
//! buffers): [`ones_complement_sum`] accumulates, [`fold`] folds without complementing,
//! and [`checksum`] is the complemented value that goes in a header field.

use std::net::IpAddr;

/// Adds `data`, as big-endian 16-bit words, to the partial sum `initial`.
///
/// An odd trailing byte is padded with a zero low byte (RFC 1071 section 4.1). `data` is
/// assumed to start at an even offset of the checksummed region: to chain a piece that
/// starts at an odd offset, the kernel's `csum_block_add` byte-swaps its sum, and so
/// must the caller.
pub fn ones_complement_sum(data: &[u8], initial: u32) -> u32 {
    // A u64 accumulator cannot overflow for any buffer that fits in memory (2^48 words),
    // so the end-around carries can be folded once at the end.
    let mut acc = u64::from(initial);
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    while acc > 0xffff_ffff {
        acc = (acc & 0xffff_ffff) + (acc >> 32);
    }
    // The loop leaves acc <= 0xffff_ffff, so this conversion never fails.
    u32::try_from(acc).unwrap_or(u32::MAX)
}

/// Ones-complement addition of two partial sums (the kernel's `csum_add`).
pub fn add(a: u32, b: u32) -> u32 {
    let (sum, carry) = a.overflowing_add(b);
    sum + u32::from(carry)
}

/// Folds a 32-bit partial sum to 16 bits with end-around carry, NOT complemented.
///
/// A region that contains a correct checksum folds to 0xffff.
pub fn fold(sum: u32) -> u16 {
    let mut s = sum;
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    // The loop leaves s <= 0xffff.
    u16::try_from(s).unwrap_or(u16::MAX)
}

/// The value to store in a checksum field: the complement of the folded sum of `data`
/// (computed with the field itself zeroed).
pub fn checksum(data: &[u8]) -> u16 {
    !fold(ones_complement_sum(data, 0))
}

/// The partial sum of the TCP/UDP pseudo-header for a segment of `len` bytes of
/// protocol `proto` (RFC 9293 section 3.1 for IPv4: addresses, zero, protocol, 16-bit
/// length; RFC 8200 section 8.1 for IPv6: addresses, 32-bit length, three zeros, next
/// header; include/net/ip6_checksum.h: csum_ipv6_magic). None for mixed families.
pub fn pseudo_header(src: IpAddr, dst: IpAddr, proto: u8, len: u32) -> Option<u32> {
    let sum = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let s = ones_complement_sum(&s.octets(), 0);
            ones_complement_sum(&d.octets(), s)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let s = ones_complement_sum(&s.octets(), 0);
            ones_complement_sum(&d.octets(), s)
        }
        _ => return None,
    };
    // proto as the low byte of a 16-bit word; the length as one (IPv4) or two (IPv6)
    // words: both add the same to a ones-complement sum.
    Some(add(
        add(sum, u32::from(proto)),
        add(len >> 16, len & 0xffff),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: these 8 bytes sum to 0x2ddf0, which folds to 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(ones_complement_sum(&data, 0), 0x2ddf0);
        assert_eq!(fold(0x2ddf0), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn ipv4_header_verifies() {
        // A real IPv4 header with its checksum 0xb861 in place folds to 0xffff.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(fold(ones_complement_sum(&hdr, 0)), 0xffff);
        let mut zeroed = hdr;
        zeroed[10] = 0;
        zeroed[11] = 0;
        assert_eq!(checksum(&zeroed), 0xb861);
    }

    #[test]
    fn odd_length_and_chaining() {
        assert_eq!(ones_complement_sum(&[0xab], 0), 0xab00);
        let a = ones_complement_sum(&[0x12, 0x34], 0);
        let b = ones_complement_sum(&[0x56, 0x78], 0);
        assert_eq!(
            fold(add(a, b)),
            fold(ones_complement_sum(&[0x12, 0x34, 0x56, 0x78], 0))
        );
        assert_eq!(add(0xffff_ffff, 1), 1);
        assert_eq!(fold(0xffff_ffff), 0xffff);
    }

    #[test]
    fn large_buffer_does_not_overflow() {
        let data = vec![0xffu8; 200_000];
        assert_eq!(fold(ones_complement_sum(&data, 0xffff_ffff)), 0xffff);
    }
}
