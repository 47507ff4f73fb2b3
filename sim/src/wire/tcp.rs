//! The TCP header (include/uapi/linux/tcp.h: struct tcphdr; RFC 9293) and its options.
//!
//! ```text
//! |          Source Port          |       Destination Port        |
//! |                        Sequence Number                        |
//! |                    Acknowledgment Number                      |
//! | Doff  | Rsvd  |C|E|U|A|P|R|S|F|            Window             |
//! |           Checksum            |         Urgent Pointer        |
//! |                    Options (doff > 5)                         |
//! ```
//!
//! As for IPv4, [`Packet::check_len`] covers the fixed 20 bytes and
//! [`Packet::check_header`] the data offset, so a trace can show a header whose doff is
//! wrong; [`Packet::options`] and [`Packet::payload`] never panic.

use std::net::IpAddr;

use super::checksum;
use super::{Error, Result};
use crate::consts::IPPROTO_TCP;

/// The fixed part of the header: doff 5.
pub const HEADER_LEN: usize = 20;

// TCPHDR_* (include/net/tcp.h): the flag bits of the 14th header byte.
/// TCPHDR_FIN.
pub const TCPHDR_FIN: u8 = 0x01;
/// TCPHDR_SYN.
pub const TCPHDR_SYN: u8 = 0x02;
/// TCPHDR_RST.
pub const TCPHDR_RST: u8 = 0x04;
/// TCPHDR_PSH.
pub const TCPHDR_PSH: u8 = 0x08;
/// TCPHDR_ACK.
pub const TCPHDR_ACK: u8 = 0x10;
/// TCPHDR_URG.
pub const TCPHDR_URG: u8 = 0x20;
/// TCPHDR_ECE.
pub const TCPHDR_ECE: u8 = 0x40;
/// TCPHDR_CWR.
pub const TCPHDR_CWR: u8 = 0x80;

// TCPOPT_* (include/net/tcp.h).
/// TCPOPT_EOL: end of the option list.
pub const TCPOPT_EOL: u8 = 0;
/// TCPOPT_NOP: padding.
pub const TCPOPT_NOP: u8 = 1;
/// TCPOPT_MSS.
pub const TCPOPT_MSS: u8 = 2;
/// TCPOPT_WINDOW: window scale.
pub const TCPOPT_WINDOW: u8 = 3;
/// TCPOPT_SACK_PERM.
pub const TCPOPT_SACK_PERM: u8 = 4;
/// TCPOPT_SACK.
pub const TCPOPT_SACK: u8 = 5;
/// TCPOPT_TIMESTAMP.
pub const TCPOPT_TIMESTAMP: u8 = 8;

mod field {
    use core::ops::Range;
    // Offsets of struct tcphdr.
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ: Range<usize> = 4..8;
    pub const ACK_SEQ: Range<usize> = 8..12;
    /// doff (high nibble) and the reserved bits (low nibble, AE/NS the lowest).
    pub const DOFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECK: Range<usize> = 16..18;
    pub const URG_PTR: Range<usize> = 18..20;
}

/// A read/write view of a TCP segment (header and payload).
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

    /// Ensures the fixed 20-byte header is present.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// The data offset is at least 5 words and within the buffer (net/ipv4/tcp_ipv4.c:
    /// tcp_v4_rcv drops `th->doff < sizeof(struct tcphdr) / 4`, then pulls doff * 4).
    pub fn check_header(&self) -> Result<()> {
        if self.header_len() < HEADER_LEN {
            return Err(Error::Malformed("TCP data offset below 5"));
        }
        if self.header_len() > self.buffer.as_ref().len() {
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

    fn be32(&self, r: core::ops::Range<usize>) -> u32 {
        let b = &self.buffer.as_ref()[r];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// source.
    pub fn src_port(&self) -> u16 {
        self.be16(field::SRC_PORT)
    }

    /// dest.
    pub fn dst_port(&self) -> u16 {
        self.be16(field::DST_PORT)
    }

    /// seq.
    pub fn seq_number(&self) -> u32 {
        self.be32(field::SEQ)
    }

    /// ack_seq.
    pub fn ack_number(&self) -> u32 {
        self.be32(field::ACK_SEQ)
    }

    /// doff in 32-bit words, as on the wire.
    pub fn data_offset(&self) -> u8 {
        self.buffer.as_ref()[field::DOFF] >> 4
    }

    /// Header length in bytes (doff * 4), whatever the buffer holds.
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }

    /// The four reserved bits after doff (res1; the lowest is AE, RFC 9768's AccECN bit).
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::DOFF] & 0x0f
    }

    /// The flag byte (TCPHDR_FIN .. TCPHDR_CWR), as include/net/tcp.h: tcp_flag_byte.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The 32-bit word holding doff, the reserved bits, the flags and the window
    /// (include/net/tcp.h: tcp_flag_word, which GRO compares between segments).
    pub fn flag_word(&self) -> u32 {
        self.be32(field::DOFF..field::WINDOW.end)
    }

    /// FIN.
    pub fn fin(&self) -> bool {
        self.flags() & TCPHDR_FIN != 0
    }

    /// SYN.
    pub fn syn(&self) -> bool {
        self.flags() & TCPHDR_SYN != 0
    }

    /// RST.
    pub fn rst(&self) -> bool {
        self.flags() & TCPHDR_RST != 0
    }

    /// PSH.
    pub fn psh(&self) -> bool {
        self.flags() & TCPHDR_PSH != 0
    }

    /// ACK.
    pub fn ack(&self) -> bool {
        self.flags() & TCPHDR_ACK != 0
    }

    /// URG.
    pub fn urg(&self) -> bool {
        self.flags() & TCPHDR_URG != 0
    }

    /// ECE.
    pub fn ece(&self) -> bool {
        self.flags() & TCPHDR_ECE != 0
    }

    /// CWR.
    pub fn cwr(&self) -> bool {
        self.flags() & TCPHDR_CWR != 0
    }

    /// window (unscaled).
    pub fn window_len(&self) -> u16 {
        self.be16(field::WINDOW)
    }

    /// check.
    pub fn checksum(&self) -> u16 {
        self.be16(field::CHECK)
    }

    /// urg_ptr.
    pub fn urgent_at(&self) -> u16 {
        self.be16(field::URG_PTR)
    }

    /// Whether the checksum over the pseudo-header and the whole buffer is right.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        let buf = self.buffer.as_ref();
        let Some(pseudo) = pseudo_sum(src, dst, buf.len()) else {
            return false;
        };
        checksum::fold(checksum::ones_complement_sum(buf, pseudo)) == 0xffff
    }
}

/// The pseudo-header sum for a TCP segment of `len` bytes (RFC 9293 section 3.1;
/// include/net/ip6_checksum.h: csum_ipv6_magic for IPv6). None when the two addresses
/// are of different families.
fn pseudo_sum(src: IpAddr, dst: IpAddr, len: usize) -> Option<u32> {
    checksum::pseudo_header(src, dst, IPPROTO_TCP, u32::try_from(len).ok()?)
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The option bytes (20..doff*4), empty when doff is under 5 or past the buffer.
    pub fn options(&self) -> &'a [u8] {
        self.buffer
            .as_ref()
            .get(HEADER_LEN..self.header_len())
            .unwrap_or(&[])
    }

    /// The options, one by one (see [`Options`]).
    pub fn options_iter(&self) -> Options<'a> {
        Options::new(self.options())
    }

    /// The bytes after doff*4 (empty when doff is under 5 or past the buffer).
    pub fn payload(&self) -> &'a [u8] {
        let hl = self.header_len();
        if hl < HEADER_LEN {
            return &[];
        }
        self.buffer.as_ref().get(hl..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_be16(&mut self, r: core::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    fn set_be32(&mut self, r: core::ops::Range<usize>, v: u32) {
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

    /// Sets seq.
    pub fn set_seq_number(&mut self, v: u32) {
        self.set_be32(field::SEQ, v);
    }

    /// Sets ack_seq.
    pub fn set_ack_number(&mut self, v: u32) {
        self.set_be32(field::ACK_SEQ, v);
    }

    /// Sets doff in words (low 4 bits of `words`), keeping the reserved bits.
    pub fn set_data_offset(&mut self, words: u8) {
        let b = &mut self.buffer.as_mut()[field::DOFF];
        *b = (*b & 0x0f) | (words << 4);
    }

    /// Sets the reserved bits (low 4 bits of `v`), keeping doff.
    pub fn set_reserved(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::DOFF];
        *b = (*b & 0xf0) | (v & 0x0f);
    }

    /// Sets the flag byte.
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }

    /// Sets window.
    pub fn set_window_len(&mut self, v: u16) {
        self.set_be16(field::WINDOW, v);
    }

    /// Sets check.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_be16(field::CHECK, v);
    }

    /// Sets urg_ptr.
    pub fn set_urgent_at(&mut self, v: u16) {
        self.set_be16(field::URG_PTR, v);
    }

    /// The option bytes, writable (empty when doff is under 5 or past the buffer).
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        self.buffer
            .as_mut()
            .get_mut(HEADER_LEN..hl)
            .unwrap_or(&mut [])
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        if hl < HEADER_LEN {
            return &mut [];
        }
        self.buffer.as_mut().get_mut(hl..).unwrap_or(&mut [])
    }

    /// Computes and stores the checksum over the pseudo-header and the whole buffer
    /// (header and payload, which must be in place). No-op for mixed address families.
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        let Some(pseudo) = pseudo_sum(src, dst, self.buffer.as_ref().len()) else {
            return;
        };
        self.set_checksum(0);
        let sum = !checksum::fold(checksum::ones_complement_sum(self.buffer.as_ref(), pseudo));
        self.set_checksum(sum);
    }
}

/// One TCP option: its kind and the bytes after the kind and length bytes (empty for
/// TCPOPT_EOL and TCPOPT_NOP, which are one byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpOption<'a> {
    /// TCPOPT_* kind.
    pub kind: u8,
    /// The option's data.
    pub data: &'a [u8],
}

/// Walks option bytes as net/ipv4/tcp_input.c: tcp_parse_options does: EOL ends the
/// list, NOP is one byte, every other option has a length byte counting kind and length.
/// A length under 2 or past the end yields one [`Error::Malformed`] and ends the walk.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    rest: &'a [u8],
}

impl<'a> Options<'a> {
    /// Walks `options` (the bytes after the fixed header).
    pub fn new(options: &'a [u8]) -> Options<'a> {
        Options { rest: options }
    }
}

impl<'a> Iterator for Options<'a> {
    type Item = Result<TcpOption<'a>>;

    fn next(&mut self) -> Option<Result<TcpOption<'a>>> {
        let (&kind, after) = self.rest.split_first()?;
        match kind {
            TCPOPT_EOL => {
                self.rest = &[];
                Some(Ok(TcpOption { kind, data: &[] }))
            }
            TCPOPT_NOP => {
                self.rest = after;
                Some(Ok(TcpOption { kind, data: &[] }))
            }
            _ => {
                let len = after.first().map(|l| usize::from(*l));
                match len {
                    Some(len) if len >= 2 && len <= self.rest.len() => {
                        let data = &self.rest[2..len];
                        self.rest = &self.rest[len..];
                        Some(Ok(TcpOption { kind, data }))
                    }
                    _ => {
                        self.rest = &[];
                        Some(Err(Error::Malformed("TCP option length")))
                    }
                }
            }
        }
    }
}

/// The decoded contents of a TCP header; options stay bytes, borrowed from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr<'a> {
    /// source.
    pub src_port: u16,
    /// dest.
    pub dst_port: u16,
    /// seq.
    pub seq_number: u32,
    /// ack_seq.
    pub ack_number: u32,
    /// The flag byte.
    pub flags: u8,
    /// window.
    pub window_len: u16,
    /// urg_ptr.
    pub urgent_at: u16,
    /// The option bytes, a multiple of 4 long (at most 40).
    pub options: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Decodes a header that passes [`Packet::check_header`] and whose options walk
    /// cleanly. Does not verify the checksum: see [`Packet::verify_checksum`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&'a T>) -> Result<Repr<'a>> {
        p.check_len()?;
        p.check_header()?;
        let inner: &'a T = p.buffer;
        let buf: &'a [u8] = T::as_ref(inner);
        let options = &buf[HEADER_LEN..p.header_len()];
        for opt in Options::new(options) {
            opt?;
        }
        Ok(Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq_number: p.seq_number(),
            ack_number: p.ack_number(),
            flags: p.flags(),
            window_len: p.window_len(),
            urgent_at: p.urgent_at(),
            options,
        })
    }

    /// Header bytes [`Repr::emit`] writes: 20 plus the options.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Writes the header (checksum 0: fill it with [`Packet::fill_checksum`] once the
    /// payload is in place). Options that are not a multiple of 4 or over 40 bytes are
    /// [`Error::Malformed`] (doff could not say their length).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        p: &mut Packet<&mut T>,
    ) -> Result<()> {
        if !self.options.len().is_multiple_of(4) || self.options.len() > 40 {
            return Err(Error::Malformed(
                "TCP options not a multiple of 4 up to 40 bytes",
            ));
        }
        if p.buffer.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_seq_number(self.seq_number);
        p.set_ack_number(self.ack_number);
        // At most 60 bytes, so at most 15 words.
        p.set_data_offset((self.buffer_len() / 4) as u8);
        p.set_reserved(0);
        p.set_flags(self.flags);
        p.set_window_len(self.window_len);
        p.set_checksum(0);
        p.set_urgent_at(self.urgent_at);
        p.options_mut().copy_from_slice(self.options);
        Ok(())
    }
}

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
