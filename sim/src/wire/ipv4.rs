//! The IPv4 header (include/uapi/linux/ip.h: struct iphdr; RFC 791).
//!
//! ```text
//!  0                   1                   2                   3
//! |Version|  IHL  |    TOS (DSCP|ECN) |          Total Length         |
//! |         Identification        |Flags|      Fragment Offset        |
//! |  Time to Live |    Protocol   |         Header Checksum           |
//! |                       Source Address                              |
//! |                    Destination Address                            |
//! |                    Options (IHL > 5)                              |
//! ```
//!
//! Checks come in two steps, because traces and GRO read headers the kernel would drop
//! and must show them as they are: [`Packet::check_len`] covers the fixed 20 bytes (so
//! every fixed-field getter is safe, whatever IHL and tot_len say), and
//! [`Packet::check_header`] applies net/ipv4/ip_input.c: ip_rcv_core's length rules.
//! [`Packet::options`] and [`Packet::payload`] never panic, even on inconsistent lengths.

use std::net::Ipv4Addr;

use super::checksum;
use super::{Error, Result};

/// The fixed part of the header: IHL 5.
pub const HEADER_LEN: usize = 20;

/// IP_CE (include/net/ip.h): the reserved "congestion" flag bit of frag_off.
pub const IP_CE: u16 = 0x8000;
/// IP_DF (include/net/ip.h): don't fragment.
pub const IP_DF: u16 = 0x4000;
/// IP_MF (include/net/ip.h): more fragments.
pub const IP_MF: u16 = 0x2000;
/// IP_OFFSET (include/net/ip.h): the fragment offset bits, in 8-byte units.
pub const IP_OFFSET: u16 = 0x1fff;

mod field {
    use core::ops::Range;
    // Offsets of struct iphdr.
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const TOT_LEN: Range<usize> = 2..4;
    pub const ID: Range<usize> = 4..6;
    pub const FRAG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECK: Range<usize> = 10..12;
    pub const SADDR: Range<usize> = 12..16;
    pub const DADDR: Range<usize> = 16..20;
}

/// A read/write view of an IPv4 packet (header and payload) at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking; fixed-field getters panic under [`HEADER_LEN`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after [`Packet::check_len`] and [`Packet::check_header`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        p.check_header()?;
        Ok(p)
    }

    /// Ensures the fixed 20-byte header is present: every fixed-field getter is then in
    /// bounds, whatever the variable lengths say.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// The checks of ip_rcv_core on a buffer that passed [`Packet::check_len`]: version 4,
    /// IHL at least 5 and within the buffer, tot_len at least IHL and within the buffer.
    /// (tot_len 0 for a BIG TCP skb, include/net/ip.h: iph_totlen, needs the skb's GSO
    /// state, which the view does not have: callers that allow it check it themselves.)
    pub fn check_header(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if self.version() != 4 {
            return Err(Error::Malformed("IPv4 version is not 4"));
        }
        if self.header_len() < HEADER_LEN {
            return Err(Error::Malformed("IPv4 IHL below 5"));
        }
        if self.header_len() > len {
            return Err(Error::Truncated);
        }
        let total = usize::from(self.total_len());
        if total < self.header_len() {
            return Err(Error::Malformed(
                "IPv4 total length below the header length",
            ));
        }
        if total > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn be16(&self, r: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[r];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Version (the high nibble of the first byte).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// IHL in 32-bit words, as on the wire.
    pub fn ihl(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] & 0x0f
    }

    /// Header length in bytes (IHL * 4), whatever the buffer holds.
    pub fn header_len(&self) -> usize {
        usize::from(self.ihl()) * 4
    }

    /// TOS byte (DSCP in the high six bits, ECN in the low two).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    /// DSCP, the high six bits of TOS.
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// ECN, the low two bits of TOS (include/net/inet_ecn.h: INET_ECN_MASK).
    pub fn ecn(&self) -> u8 {
        self.tos() & 0x03
    }

    /// tot_len: header and payload bytes.
    pub fn total_len(&self) -> u16 {
        self.be16(field::TOT_LEN)
    }

    /// id.
    pub fn ident(&self) -> u16 {
        self.be16(field::ID)
    }

    /// The whole frag_off word: IP_CE, IP_DF, IP_MF and IP_OFFSET.
    pub fn frag_off(&self) -> u16 {
        self.be16(field::FRAG_OFF)
    }

    /// IP_DF.
    pub fn dont_frag(&self) -> bool {
        self.frag_off() & IP_DF != 0
    }

    /// IP_MF.
    pub fn more_frags(&self) -> bool {
        self.frag_off() & IP_MF != 0
    }

    /// The fragment offset in bytes (IP_OFFSET counts 8-byte units).
    pub fn frag_offset(&self) -> usize {
        usize::from(self.frag_off() & IP_OFFSET) * 8
    }

    /// include/net/ip.h: ip_is_fragment: IP_MF set or a non-zero offset.
    pub fn is_fragment(&self) -> bool {
        self.frag_off() & (IP_MF | IP_OFFSET) != 0
    }

    /// ttl.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// protocol (an IPPROTO_* value).
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// check, the header checksum.
    pub fn checksum(&self) -> u16 {
        self.be16(field::CHECK)
    }

    /// saddr.
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::SADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// daddr.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::DADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Whether the header checksum is right (include/net/ip.h: ip_fast_csum folds to 0
    /// over a correct header). False when IHL is under 5 or past the buffer.
    pub fn verify_checksum(&self) -> bool {
        let hl = self.header_len();
        match self.buffer.as_ref().get(..hl) {
            Some(h) if hl >= HEADER_LEN => {
                checksum::fold(checksum::ones_complement_sum(h, 0)) == 0xffff
            }
            _ => false,
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The option bytes (20..IHL*4), empty when IHL is under 5 or past the buffer.
    pub fn options(&self) -> &'a [u8] {
        self.buffer
            .as_ref()
            .get(HEADER_LEN..self.header_len())
            .unwrap_or(&[])
    }

    /// The payload: from IHL*4 to tot_len, clamped to the buffer (padding past tot_len
    /// is not the datagram's: ip_rcv_core trims it). Empty when the lengths disagree.
    pub fn payload(&self) -> &'a [u8] {
        let buf = self.buffer.as_ref();
        let end = usize::from(self.total_len()).min(buf.len());
        buf.get(self.header_len()..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_be16(&mut self, r: core::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the version nibble (low 4 bits of `v`), keeping IHL.
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// Sets IHL in 32-bit words (low 4 bits of `words`), keeping the version.
    pub fn set_ihl(&mut self, words: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | (words & 0x0f);
    }

    /// Sets the TOS byte.
    pub fn set_tos(&mut self, v: u8) {
        self.buffer.as_mut()[field::TOS] = v;
    }

    /// Sets tot_len.
    pub fn set_total_len(&mut self, v: u16) {
        self.set_be16(field::TOT_LEN, v);
    }

    /// Sets id.
    pub fn set_ident(&mut self, v: u16) {
        self.set_be16(field::ID, v);
    }

    /// Sets the whole frag_off word.
    pub fn set_frag_off(&mut self, v: u16) {
        self.set_be16(field::FRAG_OFF, v);
    }

    /// Sets ttl.
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets protocol.
    pub fn set_protocol(&mut self, v: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = v;
    }

    /// Sets check.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_be16(field::CHECK, v);
    }

    /// Sets saddr.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SADDR].copy_from_slice(&a.octets());
    }

    /// Sets daddr.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DADDR].copy_from_slice(&a.octets());
    }

    /// Computes and stores the header checksum over IHL*4 bytes (include/net/ip.h:
    /// ip_send_check). No-op when IHL is under 5 or past the buffer.
    pub fn fill_checksum(&mut self) {
        let hl = self.header_len();
        if hl < HEADER_LEN || hl > self.buffer.as_ref().len() {
            return;
        }
        self.set_checksum(0);
        let sum = checksum::checksum(&self.buffer.as_ref()[..hl]);
        self.set_checksum(sum);
    }

    /// The payload (IHL*4 to tot_len, clamped), writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (hl, total) = (self.header_len(), usize::from(self.total_len()));
        let buf = self.buffer.as_mut();
        let end = total.min(buf.len());
        buf.get_mut(hl..end).unwrap_or(&mut [])
    }
}

/// The decoded contents of an option-less IPv4 header (options are not modelled by the
/// repr: [`Repr::parse`] skips them, [`Repr::emit`] writes IHL 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// saddr.
    pub src_addr: Ipv4Addr,
    /// daddr.
    pub dst_addr: Ipv4Addr,
    /// protocol (IPPROTO_*).
    pub protocol: u8,
    /// Payload bytes (tot_len minus the header).
    pub payload_len: usize,
    /// ttl.
    pub ttl: u8,
    /// TOS byte.
    pub tos: u8,
    /// id.
    pub ident: u16,
    /// The whole frag_off word.
    pub frag_off: u16,
}

impl Repr {
    /// Decodes a header that passes [`Packet::check_header`] and whose checksum is right.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&T>) -> Result<Repr> {
        p.check_len()?;
        p.check_header()?;
        if !p.verify_checksum() {
            return Err(Error::Malformed("IPv4 header checksum"));
        }
        Ok(Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - p.header_len(),
            ttl: p.ttl(),
            tos: p.tos(),
            ident: p.ident(),
            frag_off: p.frag_off(),
        })
    }

    /// Header bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header with a correct checksum. A payload that does not fit
    /// tot_len is [`Error::Malformed`]; a buffer under 20 bytes [`Error::Truncated`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        p: &mut Packet<&mut T>,
    ) -> Result<()> {
        p.check_len()?;
        let total = u16::try_from(HEADER_LEN + self.payload_len)
            .map_err(|_| Error::Malformed("IPv4 payload over 65515 bytes"))?;
        p.set_version(4);
        p.set_ihl(5);
        p.set_tos(self.tos);
        p.set_total_len(total);
        p.set_ident(self.ident);
        p.set_frag_off(self.frag_off);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
        p.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
#[path = "ipv4_tests.rs"]
mod tests;
