//! GRE (RFC 2784, key and sequence from RFC 2890), as gre/gretap tunnels put it after
//! the outer IP header.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |C|R|K|S|s|Recur|A| Flags | Ver |         Protocol Type         |
//! |      Checksum (optional)      |     Reserved1 / Offset        |  if C or R
//! |                         Key (optional)                        |  if K
//! |                 Sequence Number (optional)                    |  if S
//! |              Acknowledgment Number (optional)                 |  if A, version 1
//! ```
//!
//! Bit values are the kernel's GRE_* (include/uapi/linux/if_tunnel.h); the optional
//! fields' order and size follow include/net/gre.h: gre_calc_hlen and
//! net/ipv4/gre_demux.c: gre_parse_header. RFC 1701 keeps the checksum word when only R
//! is set, so it is counted for C or R; the routing entries after it are not modelled,
//! and [`GreRepr::parse`] rejects R like gre_parse_header does. Version 1 is PPTP's
//! enhanced GRE (RFC 2637), whose ack number follows the sequence number.

use super::checksum;
use super::{be16_at, be32_at, Error, Result};

/// GRE_CSUM: checksum present.
pub const GRE_CSUM: u16 = 0x8000;
/// GRE_ROUTING: RFC 1701 routing present.
pub const GRE_ROUTING: u16 = 0x4000;
/// GRE_KEY: key present.
pub const GRE_KEY: u16 = 0x2000;
/// GRE_SEQ: sequence number present.
pub const GRE_SEQ: u16 = 0x1000;
/// GRE_STRICT: RFC 1701 strict source route.
pub const GRE_STRICT: u16 = 0x0800;
/// GRE_REC: RFC 1701 recursion control (3 bits).
pub const GRE_REC: u16 = 0x0700;
/// GRE_ACK: acknowledgment number present (enhanced GRE, version 1).
pub const GRE_ACK: u16 = 0x0080;
/// GRE_FLAGS: reserved flag bits.
pub const GRE_FLAGS: u16 = 0x0078;
/// GRE_VERSION: version number (3 bits).
pub const GRE_VERSION: u16 = 0x0007;

/// GREPROTO_MAX (include/net/gre.h): net/ipv4/gre_demux.c: gre_rcv drops versions >= 2.
pub const GREPROTO_MAX: u8 = 2;

/// Base header: flags word + protocol.
pub const GRE_BASE_LEN: usize = 4;

/// A read/write view of a GRE packet (header and payload) at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gre<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Gre<T> {
    /// Wraps `buffer` without checking. Getters still never panic (fixed fields read 0
    /// and optional ones None past the end); only setters need a checked buffer.
    pub const fn new_unchecked(buffer: T) -> Gre<T> {
        Gre { buffer }
    }

    /// Wraps `buffer`, failing with [`Error::Truncated`] if it is shorter than the header
    /// its flags describe. Never panics, whatever the bytes.
    pub fn new_checked(buffer: T) -> Result<Gre<T>> {
        let gre = Self::new_unchecked(buffer);
        gre.check_len()?;
        Ok(gre)
    }

    /// Ensures the base header and every optional field the flags announce are present.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < GRE_BASE_LEN || len < self.header_len() {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The first 16 bits: C R K S s Recur A Flags Ver. Reads 0 on a buffer under 2 bytes.
    pub fn flags_word(&self) -> u16 {
        be16_at(self.buffer.as_ref(), 0).unwrap_or(0)
    }

    /// Checksum present (C).
    pub fn checksum_present(&self) -> bool {
        self.flags_word() & GRE_CSUM != 0
    }

    /// RFC 1701 routing present (R).
    pub fn routing_present(&self) -> bool {
        self.flags_word() & GRE_ROUTING != 0
    }

    /// Key present (K).
    pub fn key_present(&self) -> bool {
        self.flags_word() & GRE_KEY != 0
    }

    /// Sequence number present (S).
    pub fn sequence_present(&self) -> bool {
        self.flags_word() & GRE_SEQ != 0
    }

    /// RFC 1701 strict source route bit (s).
    pub fn strict_source_route(&self) -> bool {
        self.flags_word() & GRE_STRICT != 0
    }

    /// RFC 1701 recursion control, 0..=7.
    pub fn recursion_control(&self) -> u8 {
        // Masked to 3 bits, so the cast is lossless.
        ((self.flags_word() & GRE_REC) >> 8) as u8
    }

    /// Acknowledgment number present (A); only meaningful for version 1.
    pub fn ack_present(&self) -> bool {
        self.version() == 1 && self.flags_word() & GRE_ACK != 0
    }

    /// Version, 0..=7 (0 for RFC 2784, 1 for PPTP).
    pub fn version(&self) -> u8 {
        // Masked to 3 bits, so the cast is lossless.
        (self.flags_word() & GRE_VERSION) as u8
    }

    /// Protocol type (an ETH_P_* value). Reads 0 on a buffer under 4 bytes.
    pub fn protocol(&self) -> u16 {
        be16_at(self.buffer.as_ref(), 2).unwrap_or(0)
    }

    /// Header length implied by the flags (include/net/gre.h: gre_calc_hlen, plus the
    /// RFC 1701 R and version-1 A words). Excludes RFC 1701 routing entries.
    pub fn header_len(&self) -> usize {
        let f = self.flags_word();
        let mut len = GRE_BASE_LEN;
        if f & (GRE_CSUM | GRE_ROUTING) != 0 {
            len += 4;
        }
        if f & GRE_KEY != 0 {
            len += 4;
        }
        if f & GRE_SEQ != 0 {
            len += 4;
        }
        if self.ack_present() {
            len += 4;
        }
        len
    }

    /// Offset of the word after the checksum word and the flagged fields before `upto`.
    fn offset_of(&self, upto: u16) -> usize {
        let f = self.flags_word();
        let mut off = GRE_BASE_LEN;
        if f & (GRE_CSUM | GRE_ROUTING) != 0 {
            off += 4;
        }
        for bit in [GRE_KEY, GRE_SEQ] {
            if bit == upto {
                break;
            }
            if f & bit != 0 {
                off += 4;
            }
        }
        off
    }

    /// Checksum field, if C or R is set and the buffer holds it.
    pub fn checksum(&self) -> Option<u16> {
        (self.flags_word() & (GRE_CSUM | GRE_ROUTING) != 0)
            .then(|| be16_at(self.buffer.as_ref(), 4))
            .flatten()
    }

    /// Reserved1 (RFC 1701 offset) field, if C or R is set and the buffer holds it.
    pub fn reserved1(&self) -> Option<u16> {
        (self.flags_word() & (GRE_CSUM | GRE_ROUTING) != 0)
            .then(|| be16_at(self.buffer.as_ref(), 6))
            .flatten()
    }

    /// Key, if K is set and the buffer holds it.
    pub fn key(&self) -> Option<u32> {
        self.key_present()
            .then(|| be32_at(self.buffer.as_ref(), self.offset_of(GRE_KEY)))
            .flatten()
    }

    /// Sequence number, if S is set and the buffer holds it.
    pub fn sequence(&self) -> Option<u32> {
        self.sequence_present()
            .then(|| be32_at(self.buffer.as_ref(), self.offset_of(GRE_SEQ)))
            .flatten()
    }

    /// Acknowledgment number, if version 1 with A set and the buffer holds it.
    pub fn ack_number(&self) -> Option<u32> {
        self.ack_present()
            .then(|| be32_at(self.buffer.as_ref(), self.offset_of(0)))
            .flatten()
    }

    /// The bytes after the header (empty if the buffer is shorter than the header).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }

    /// Whether the checksum is right: with C set, the Internet checksum over the whole
    /// buffer (header with the checksum field, then payload) must fold to 0xffff, as
    /// gre_parse_header checks with skb_checksum_simple_validate. True when C is clear,
    /// since then there is nothing to verify.
    pub fn verify_checksum(&self) -> bool {
        if !self.checksum_present() {
            return true;
        }
        checksum::fold(checksum::ones_complement_sum(self.buffer.as_ref(), 0)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Gre<T> {
    /// Sets the whole flags word. The header length changes with it: re-check before
    /// trusting optional-field offsets.
    pub fn set_flags_word(&mut self, v: u16) {
        if let Some(b) = self.buffer.as_mut().get_mut(0..2) {
            b.copy_from_slice(&v.to_be_bytes());
        }
    }

    /// Sets the protocol type.
    pub fn set_protocol(&mut self, v: u16) {
        if let Some(b) = self.buffer.as_mut().get_mut(2..4) {
            b.copy_from_slice(&v.to_be_bytes());
        }
    }

    fn set_word(
        &mut self,
        present: bool,
        off: usize,
        bytes: &[u8],
        what: &'static str,
    ) -> Result<()> {
        if !present {
            return Err(Error::Malformed(what));
        }
        let end = off + bytes.len();
        let dst = self
            .buffer
            .as_mut()
            .get_mut(off..end)
            .ok_or(Error::Truncated)?;
        dst.copy_from_slice(bytes);
        Ok(())
    }

    /// Sets the checksum field (C or R must be set).
    pub fn set_checksum(&mut self, v: u16) -> Result<()> {
        let present = self.flags_word() & (GRE_CSUM | GRE_ROUTING) != 0;
        self.set_word(
            present,
            4,
            &v.to_be_bytes(),
            "GRE checksum field absent (C and R clear)",
        )
    }

    /// Sets the reserved1 field (C or R must be set).
    pub fn set_reserved1(&mut self, v: u16) -> Result<()> {
        let present = self.flags_word() & (GRE_CSUM | GRE_ROUTING) != 0;
        self.set_word(
            present,
            6,
            &v.to_be_bytes(),
            "GRE reserved1 field absent (C and R clear)",
        )
    }

    /// Sets the key (K must be set).
    pub fn set_key(&mut self, v: u32) -> Result<()> {
        let (present, off) = (self.key_present(), self.offset_of(GRE_KEY));
        self.set_word(present, off, &v.to_be_bytes(), "GRE key absent (K clear)")
    }

    /// Sets the sequence number (S must be set).
    pub fn set_sequence(&mut self, v: u32) -> Result<()> {
        let (present, off) = (self.sequence_present(), self.offset_of(GRE_SEQ));
        self.set_word(
            present,
            off,
            &v.to_be_bytes(),
            "GRE sequence absent (S clear)",
        )
    }

    /// Computes and stores the checksum over the whole buffer (header + payload) when C
    /// is set; the payload must already be in place. No-op when C is clear or the
    /// buffer is too short for the checksum field.
    pub fn fill_checksum(&mut self) {
        if !self.checksum_present() || self.set_checksum(0).is_err() {
            return;
        }
        let sum = checksum::checksum(self.buffer.as_ref());
        // set_checksum(0) just succeeded, so the field is in bounds.
        let _ = self.set_checksum(sum);
    }

    /// The bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        self.buffer.as_mut().get_mut(hl..).unwrap_or(&mut [])
    }
}

/// The decoded contents of a GRE header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GreRepr {
    /// C: a checksum covers header and payload.
    pub checksum_present: bool,
    /// K: the key, or None.
    pub key: Option<u32>,
    /// S: the sequence number, or None.
    pub sequence: Option<u32>,
    /// Protocol type (ETH_P_TEB for gretap, ETH_P_IP/ETH_P_IPV6 for gre).
    pub protocol: u16,
    /// 0 (RFC 2784) or 1 (PPTP).
    pub version: u8,
}

impl GreRepr {
    /// Decodes a GRE header, rejecting what the kernel's receive path rejects: routing
    /// (net/ipv4/gre_demux.c: gre_parse_header), versions >= GREPROTO_MAX (gre_rcv), and
    /// the version-1 ack number this repr does not carry. Does not verify the checksum:
    /// see [`Gre::verify_checksum`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(gre: &Gre<&T>) -> Result<GreRepr> {
        gre.check_len()?;
        if gre.routing_present() {
            return Err(Error::Malformed(
                "GRE routing present (rejected by gre_parse_header)",
            ));
        }
        if gre.version() >= GREPROTO_MAX {
            return Err(Error::Malformed("GRE version >= GREPROTO_MAX"));
        }
        if gre.ack_present() {
            return Err(Error::Malformed("GRE version-1 ack number not modelled"));
        }
        Ok(GreRepr {
            checksum_present: gre.checksum_present(),
            key: gre.key(),
            sequence: gre.sequence(),
            protocol: gre.protocol(),
            version: gre.version(),
        })
    }

    /// The flags word this repr emits (reserved, strict and recursion bits zero).
    pub fn flags_word(&self) -> u16 {
        let mut f = u16::from(self.version) & GRE_VERSION;
        if self.checksum_present {
            f |= GRE_CSUM;
        }
        if self.key.is_some() {
            f |= GRE_KEY;
        }
        if self.sequence.is_some() {
            f |= GRE_SEQ;
        }
        f
    }

    /// Header bytes (include/net/gre.h: gre_calc_hlen).
    pub fn buffer_len(&self) -> usize {
        4 + 4
            * (usize::from(self.checksum_present)
                + usize::from(self.key.is_some())
                + usize::from(self.sequence.is_some()))
    }

    /// Writes the header into `gre`, whose buffer must end where the GRE packet ends.
    /// With `checksum_present` the payload must already be behind the header: the
    /// checksum is computed over the whole buffer (net/ipv4/gre_offload.c and
    /// include/net/gre.h: gre_build_header fold the checksum the same way).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, gre: &mut Gre<&mut T>) -> Result<()> {
        if gre.buffer.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        gre.set_flags_word(self.flags_word());
        gre.set_protocol(self.protocol);
        if self.checksum_present {
            gre.set_checksum(0)?;
            gre.set_reserved1(0)?;
        }
        if let Some(k) = self.key {
            gre.set_key(k)?;
        }
        if let Some(s) = self.sequence {
            gre.set_sequence(s)?;
        }
        gre.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
#[path = "gre_tests.rs"]
mod tests;
