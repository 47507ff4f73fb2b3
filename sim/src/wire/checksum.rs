//! The Internet checksum (RFC 1071): the one module for every sum, fold and
//! pseudo-header in skbsim (the wire views, GRO, the bridge, pcapgen).
//!
//! The kernel keeps a 32-bit partial sum (`__wsum`, include/linux/types.h) that
//! `csum_partial` (arch/x86/lib/csum-partial_64.c) accumulates and `csum_fold`
//! (include/asm-generic/checksum.h) folds to 16 bits *and complements*. Here the two
//! steps are split so callers can chain partial sums (pseudo-headers, scattered
//! buffers): [`ones_complement_sum`] accumulates, [`fold`] folds without complementing
//! (the kernel's `~csum_fold`, so a region holding a correct checksum folds to 0xffff),
//! and [`checksum`] is the complemented value that goes in a header field.

use std::net::IpAddr;

/// Adds `data`, as big-endian 16-bit words, to the partial sum `initial`; the result is
/// a partial sum (congruent, not equal, to the plain word sum: it is folded on the way).
///
/// An odd trailing byte is padded with a zero low byte (RFC 1071 section 4.1). `data` is
/// assumed to start at an even offset of the checksummed region: to chain a piece that
/// starts at an odd offset, the kernel's `csum_block_add` byte-swaps its sum, and so
/// must the caller.
///
/// Like csum_partial, 32-bit little-endian words are summed into a u64 and the folded
/// result byte-swapped once at the end (RFC 1071 section 2(B): the sum is byte-order
/// independent). A u64 cannot overflow for any buffer that fits in memory.
pub fn ones_complement_sum(data: &[u8], initial: u32) -> u32 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rem = chunks.remainder();
    let mut last = [0u8; 4];
    last[..rem.len()].copy_from_slice(rem);
    acc += u64::from(u32::from_le_bytes(last));
    // 64 -> 32 bits with end-around carry, then the 16-bit fold; swap to big-endian order.
    let acc = (acc & 0xffff_ffff) + (acc >> 32);
    let acc = (acc & 0xffff_ffff) + (acc >> 32);
    let le = fold(u32::try_from(acc).unwrap_or(u32::MAX));
    add(initial, u32::from(le.swap_bytes()))
}

/// Ones-complement addition of two partial sums (include/net/checksum.h: csum_add).
pub fn add(a: u32, b: u32) -> u32 {
    let (sum, carry) = a.overflowing_add(b);
    sum + u32::from(carry)
}

/// Folds a 32-bit partial sum to 16 bits with end-around carry, NOT complemented
/// (`~csum_fold`, include/asm-generic/checksum.h).
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

/// A length as the kernel adds it: a 32-bit value (above that, saturated).
fn len32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// csum_tcpudp_nofold(saddr, daddr, len, proto, 0) (include/asm-generic/checksum.h): the
/// IPv4 pseudo-header sum (RFC 9293 section 3.1: addresses, zero, protocol, 16-bit
/// length). A length above 16 bits is carried like the kernel's 32-bit add.
pub fn pseudo_v4(saddr: [u8; 4], daddr: [u8; 4], proto: u8, len: usize) -> u32 {
    let s = ones_complement_sum(&daddr, ones_complement_sum(&saddr, 0));
    add(add(s, u32::from(proto)), len32(len))
}

/// csum_ipv6_magic's sum before folding (include/net/ip6_checksum.h; RFC 8200 section
/// 8.1): addresses, the 32-bit upper-layer length, three zeros, the next header.
pub fn pseudo_v6(saddr: [u8; 16], daddr: [u8; 16], proto: u8, len: usize) -> u32 {
    let s = ones_complement_sum(&daddr, ones_complement_sum(&saddr, 0));
    let len = len32(len);
    add(add(add(s, len >> 16), len & 0xffff), u32::from(proto))
}

/// The pseudo-header sum for `src`/`dst` of either family ([`pseudo_v4`],
/// [`pseudo_v6`]); None for mixed families.
pub fn pseudo_header(src: IpAddr, dst: IpAddr, proto: u8, len: u32) -> Option<u32> {
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => Some(pseudo_v4(s.octets(), d.octets(), proto, len)),
        (IpAddr::V6(s), IpAddr::V6(d)) => Some(pseudo_v6(s.octets(), d.octets(), proto, len)),
        _ => None,
    }
}

/// ip_fast_csum(iph, ihl) == 0 (arch/x86/include/asm/checksum_64.h): the header sums to
/// 0xffff.
pub fn ipv4_header_ok(hdr: &[u8]) -> bool {
    fold(ones_complement_sum(hdr, 0)) == 0xffff
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
#[path = "checksum_tests.rs"]
mod tests;
