//! The UDP header (include/uapi/linux/udp.h: struct udphdr; RFC 768).
//!
//! ```text
//! |          Source Port          |       Destination Port        |
//! |            Length             |           Checksum            |
//! ```
//!
//! [`Packet::check_len`] covers the 8 bytes; [`Packet::check_header`] the length field
//! (net/ipv4/udp.c: __udp4_lib_rcv drops `ulen < sizeof(struct udphdr)` or past the
//! skb). [`Packet::payload`] never panics, whatever the length field says.

use std::net::IpAddr;

use super::checksum;
use super::{Error, Result};
use crate::consts::IPPROTO_UDP;

/// sizeof(struct udphdr).
pub const HEADER_LEN: usize = 8;

/// CSUM_MANGLED_0 (include/net/checksum.h): a computed UDP checksum of 0 is sent as
/// 0xffff, since 0 on the wire means "no checksum" (RFC 768).
pub const CSUM_MANGLED_0: u16 = 0xffff;

mod field {
    use core::ops::Range;
    // Offsets of struct udphdr.
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LEN: Range<usize> = 4..6;
    pub const CHECK: Range<usize> = 6..8;
}

/// A read/write view of a UDP datagram (header and payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking; getters panic under [`HEADER_LEN`].
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

    /// Ensures the 8-byte header is present.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// The length field is at least 8 and within the buffer.
    pub fn check_header(&self) -> Result<()> {
        let len = usize::from(self.len());
        if len < HEADER_LEN {
            return Err(Error::Malformed("UDP length below 8"));
        }
        if len > self.buffer.as_ref().len() {
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

    /// source.
    pub fn src_port(&self) -> u16 {
        self.be16(field::SRC_PORT)
    }

    /// dest.
    pub fn dst_port(&self) -> u16 {
        self.be16(field::DST_PORT)
    }

    /// len: header and payload bytes.
    pub fn len(&self) -> u16 {
        self.be16(field::LEN)
    }

    /// Whether the length field says 0 (never valid: it counts the header).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// check (0: none sent).
    pub fn checksum(&self) -> u16 {
        self.be16(field::CHECK)
    }

    /// Whether the checksum over the pseudo-header and the datagram (len bytes) is
    /// right; true when none was sent (0), false when len disagrees with the buffer.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let len = usize::from(self.len());
        let Some(dgram) = self
            .buffer
            .as_ref()
            .get(..len)
            .filter(|_| len >= HEADER_LEN)
        else {
            return false;
        };
        let Some(pseudo) = checksum::pseudo_header(src, dst, IPPROTO_UDP, u32::from(self.len()))
        else {
            return false;
        };
        checksum::fold(checksum::ones_complement_sum(dgram, pseudo)) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The payload: 8..len, clamped to the buffer; empty when len is under 8. The bytes
    /// past len are not the datagram's (the IP layer's padding).
    pub fn payload(&self) -> &'a [u8] {
        let buf = self.buffer.as_ref();
        let end = usize::from(self.len()).min(buf.len());
        buf.get(HEADER_LEN..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_be16(&mut self, r: core::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets source.
    pub fn set_src_port(&mut self, v: u16) {
        self.set_be16(field::SRC_PORT, v);
    }

    /// Sets dest.
    pub fn set_dst_port(&mut self, v: u16) {
        self.set_be16(field::DST_PORT, v);
    }

    /// Sets len.
    pub fn set_len(&mut self, v: u16) {
        self.set_be16(field::LEN, v);
    }

    /// Sets check.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_be16(field::CHECK, v);
    }

    /// The payload (as [`Packet::payload`] bounds it), writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.len());
        let buf = self.buffer.as_mut();
        let end = len.min(buf.len());
        buf.get_mut(HEADER_LEN..end).unwrap_or(&mut [])
    }

    /// Computes and stores the checksum over the pseudo-header and len bytes (payload in
    /// place), CSUM_MANGLED_0 for a zero sum. No-op when len disagrees with the buffer or
    /// the address families differ.
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        let len = usize::from(self.len());
        if len < HEADER_LEN || len > self.buffer.as_ref().len() {
            return;
        }
        let Some(pseudo) = checksum::pseudo_header(src, dst, IPPROTO_UDP, u32::from(self.len()))
        else {
            return;
        };
        self.set_checksum(0);
        let sum = !checksum::fold(checksum::ones_complement_sum(
            &self.buffer.as_ref()[..len],
            pseudo,
        ));
        self.set_checksum(if sum == 0 { CSUM_MANGLED_0 } else { sum });
    }
}

/// The decoded contents of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    /// source.
    pub src_port: u16,
    /// dest.
    pub dst_port: u16,
    /// Payload bytes (len minus 8).
    pub payload_len: usize,
}

impl Repr {
    /// Decodes a header that passes [`Packet::check_header`]. Does not verify the
    /// checksum: see [`Packet::verify_checksum`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&T>) -> Result<Repr> {
        p.check_len()?;
        p.check_header()?;
        Ok(Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: usize::from(p.len()) - HEADER_LEN,
        })
    }

    /// Header bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with checksum 0 (fill it with [`Packet::fill_checksum`] once
    /// the payload is in place). A payload over 65527 bytes is [`Error::Malformed`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        p: &mut Packet<&mut T>,
    ) -> Result<()> {
        p.check_len()?;
        let len = u16::try_from(HEADER_LEN + self.payload_len)
            .map_err(|_| Error::Malformed("UDP payload over 65527 bytes"))?;
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len(len);
        p.set_checksum(0);
        Ok(())
    }
}

#[cfg(test)]
#[path = "udp_tests.rs"]
mod tests;
