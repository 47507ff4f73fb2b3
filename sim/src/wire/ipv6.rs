//! The IPv6 fixed header (include/uapi/linux/ipv6.h: struct ipv6hdr; RFC 8200) and the
//! shape of the extension-header chain after it (struct ipv6_opt_hdr, struct frag_hdr,
//! struct ip_auth_hdr).
//!
//! ```text
//! |Version| Traffic Class |             Flow Label                |
//! |         Payload Length        |  Next Header  |   Hop Limit   |
//! |                 Source Address (16 bytes)                     |
//! |              Destination Address (16 bytes)                   |
//! ```
//!
//! Extension headers all start with a next-header byte. Hop-by-hop, routing and
//! destination options then give their length in 8-byte units not counting the first
//! (include/net/ipv6.h: ipv6_optlen), AH in 4-byte units not counting the first two
//! (ipv6_authlen), and the fragment header is always 8 bytes. [`ExtHeader`] is a view
//! of one of them; [`ExtHeaders`] walks the chain the way net/ipv6/exthdrs_core.c:
//! ipv6_skip_exthdr does, with a bound on the number of headers.

use std::net::Ipv6Addr;

use super::{Error, Result};
use crate::consts::{
    IPPROTO_AH, IPPROTO_DSTOPTS, IPPROTO_FRAGMENT, IPPROTO_HOPOPTS, IPPROTO_ROUTING,
};

/// sizeof(struct ipv6hdr).
pub const HEADER_LEN: usize = 40;

/// IP6_OFFSET (include/net/ipv6.h): the fragment offset bits of frag_off, in bytes
/// already (the low three bits are flags).
pub const IP6_OFFSET: u16 = 0xfff8;
/// IP6_MF (include/net/ipv6.h): more fragments.
pub const IP6_MF: u16 = 0x0001;

mod field {
    use core::ops::Range;
    // Offsets of struct ipv6hdr.
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    pub const NEXTHDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SADDR: Range<usize> = 8..24;
    pub const DADDR: Range<usize> = 24..40;

    // Offsets in an extension header (struct ipv6_opt_hdr, struct frag_hdr,
    // struct ipv6_rt_hdr).
    pub const EXT_NEXTHDR: usize = 0;
    pub const EXT_HDRLEN: usize = 1;
    pub const RT_TYPE: usize = 2;
    pub const RT_SEGMENTS_LEFT: usize = 3;
    pub const FRAG_OFF: Range<usize> = 2..4;
    pub const FRAG_ID: Range<usize> = 4..8;
}

/// sizeof(struct frag_hdr).
pub const FRAG_HLEN: usize = 8;

/// The next-header values [`ExtHeaders`] steps over: include/net/ipv6.h: ipv6_ext_hdr,
/// less NEXTHDR_NONE (which has no header to step over).
pub fn is_ext_header(nexthdr: u8) -> bool {
    matches!(
        nexthdr,
        IPPROTO_HOPOPTS | IPPROTO_ROUTING | IPPROTO_FRAGMENT | IPPROTO_AH | IPPROTO_DSTOPTS
    )
}

/// A read/write view of an IPv6 packet (fixed header and payload).
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

    /// Ensures the fixed 40-byte header is present, so every getter is in bounds.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// net/ipv6/ip6_input.c: ip6_rcv_core's rules on a buffer that passed
    /// [`Packet::check_len`]: version 6 and payload_len within the buffer. (payload_len 0
    /// is a jumbogram, include/net/ipv6.h: ipv6_has_hopopt_jumbo, whose length the hop-by-hop
    /// option carries: accepted here with the buffer's length.)
    pub fn check_header(&self) -> Result<()> {
        if self.version() != 6 {
            return Err(Error::Malformed("IPv6 version is not 6"));
        }
        if HEADER_LEN + usize::from(self.payload_len()) > self.buffer.as_ref().len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The first 32-bit word (version, traffic class, flow label), as net/ipv6/ip6_offload.c:
    /// ipv6_gro_receive compares it between segments.
    pub fn ver_tc_flow(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Version (the high nibble).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Traffic class (priority nibble and the high nibble of `flow_lbl[0]`).
    pub fn traffic_class(&self) -> u8 {
        // Eight bits after the shift and mask, so the cast is lossless.
        ((self.ver_tc_flow() >> 20) & 0xff) as u8
    }

    /// Flow label, 20 bits.
    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & 0x000f_ffff
    }

    /// payload_len: bytes after the fixed header, extension headers included.
    pub fn payload_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PAYLOAD_LEN];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// nexthdr: the first extension header or the upper-layer protocol.
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXTHDR]
    }

    /// hop_limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// saddr.
    pub fn src_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::SADDR]);
        Ipv6Addr::from(a)
    }

    /// daddr.
    pub fn dst_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::DADDR]);
        Ipv6Addr::from(a)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The payload after the fixed header: payload_len bytes, clamped to the buffer;
    /// the whole rest of the buffer for payload_len 0 (a jumbogram). Never panics.
    pub fn payload(&self) -> &'a [u8] {
        let buf = self.buffer.as_ref();
        let avail = buf.len().saturating_sub(HEADER_LEN);
        let plen = usize::from(self.payload_len());
        let end = if plen == 0 { avail } else { plen.min(avail) };
        buf.get(HEADER_LEN..HEADER_LEN + end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the first 32-bit word whole.
    pub fn set_ver_tc_flow(&mut self, w: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&w.to_be_bytes());
    }

    /// Sets the version nibble (low 4 bits of `v`).
    pub fn set_version(&mut self, v: u8) {
        let w = self.ver_tc_flow() & 0x0fff_ffff | u32::from(v & 0x0f) << 28;
        self.set_ver_tc_flow(w);
    }

    /// Sets the traffic class.
    pub fn set_traffic_class(&mut self, tc: u8) {
        let w = self.ver_tc_flow() & 0xf00f_ffff | u32::from(tc) << 20;
        self.set_ver_tc_flow(w);
    }

    /// Sets the flow label (low 20 bits of `fl`).
    pub fn set_flow_label(&mut self, fl: u32) {
        let w = self.ver_tc_flow() & 0xfff0_0000 | fl & 0x000f_ffff;
        self.set_ver_tc_flow(w);
    }

    /// Sets payload_len.
    pub fn set_payload_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::PAYLOAD_LEN].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets nexthdr.
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::NEXTHDR] = v;
    }

    /// Sets hop_limit.
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    /// Sets saddr.
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SADDR].copy_from_slice(&a.octets());
    }

    /// Sets daddr.
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DADDR].copy_from_slice(&a.octets());
    }

    /// The payload (as [`Packet::payload`] bounds it), writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let plen = usize::from(self.payload_len());
        let buf = self.buffer.as_mut();
        let avail = buf.len().saturating_sub(HEADER_LEN);
        let end = if plen == 0 { avail } else { plen.min(avail) };
        buf.get_mut(HEADER_LEN..HEADER_LEN + end).unwrap_or(&mut [])
    }
}

/// The decoded contents of the fixed IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// saddr.
    pub src_addr: Ipv6Addr,
    /// daddr.
    pub dst_addr: Ipv6Addr,
    /// nexthdr.
    pub next_header: u8,
    /// payload_len.
    pub payload_len: usize,
    /// hop_limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
}

impl Repr {
    /// Decodes a header that passes [`Packet::check_header`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&T>) -> Result<Repr> {
        p.check_len()?;
        p.check_header()?;
        Ok(Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            next_header: p.next_header(),
            payload_len: usize::from(p.payload_len()),
            hop_limit: p.hop_limit(),
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
        })
    }

    /// Header bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header. A payload over 65535 bytes or a flow label over 20 bits
    /// is [`Error::Malformed`]; a buffer under 40 bytes [`Error::Truncated`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        p: &mut Packet<&mut T>,
    ) -> Result<()> {
        p.check_len()?;
        let plen = u16::try_from(self.payload_len).map_err(|_| {
            Error::Malformed("IPv6 payload over 65535 bytes (jumbograms not emitted)")
        })?;
        if self.flow_label > 0x000f_ffff {
            return Err(Error::Malformed("IPv6 flow label over 20 bits"));
        }
        p.set_ver_tc_flow(6 << 28 | u32::from(self.traffic_class) << 20 | self.flow_label);
        p.set_payload_len(plen);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
        Ok(())
    }
}

/// A view of one extension header of kind `kind` (the next-header value that named it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtHeader<T: AsRef<[u8]>> {
    kind: u8,
    buffer: T,
}

impl<T: AsRef<[u8]>> ExtHeader<T> {
    /// Wraps `buffer` as a header of kind `kind` without checking.
    pub const fn new_unchecked(kind: u8, buffer: T) -> ExtHeader<T> {
        ExtHeader { kind, buffer }
    }

    /// Wraps `buffer`: [`Error::Malformed`] if `kind` is no extension header
    /// ([`is_ext_header`]), [`Error::Truncated`] if the buffer is shorter than
    /// [`ExtHeader::header_len`].
    pub fn new_checked(kind: u8, buffer: T) -> Result<ExtHeader<T>> {
        let h = Self::new_unchecked(kind, buffer);
        h.check_len()?;
        Ok(h)
    }

    /// Ensures the whole header, as its length byte gives it, is in the buffer.
    pub fn check_len(&self) -> Result<()> {
        if !is_ext_header(self.kind) {
            return Err(Error::Malformed("not an IPv6 extension header"));
        }
        if self.buffer.as_ref().len() < self.header_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The next-header value that named this header.
    pub fn kind(&self) -> u8 {
        self.kind
    }

    /// nexthdr: what follows this header.
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::EXT_NEXTHDR]
    }

    /// hdrlen as on the wire (reserved, normally 0, in a fragment header).
    pub fn hdr_ext_len(&self) -> u8 {
        self.buffer.as_ref()[field::EXT_HDRLEN]
    }

    /// The header's length in bytes: FRAG_HLEN for a fragment header, ipv6_authlen for
    /// AH, ipv6_optlen for the others. While the length byte is missing, the two bytes
    /// that would hold it (so [`ExtHeader::check_len`] asks for them first).
    pub fn header_len(&self) -> usize {
        if self.kind == IPPROTO_FRAGMENT {
            return FRAG_HLEN;
        }
        let Some(&l) = self.buffer.as_ref().get(field::EXT_HDRLEN) else {
            return 2;
        };
        if self.kind == IPPROTO_AH {
            (usize::from(l) + 2) * 4
        } else {
            (usize::from(l) + 1) * 8
        }
    }

    /// A routing header's type (struct ipv6_rt_hdr: type), None for other kinds.
    pub fn routing_type(&self) -> Option<u8> {
        (self.kind == IPPROTO_ROUTING).then(|| self.buffer.as_ref()[field::RT_TYPE])
    }

    /// A routing header's segments_left, None for other kinds.
    pub fn segments_left(&self) -> Option<u8> {
        (self.kind == IPPROTO_ROUTING).then(|| self.buffer.as_ref()[field::RT_SEGMENTS_LEFT])
    }

    /// A fragment header's frag_off word (offset, reserved bits, IP6_MF), None for others.
    pub fn frag_off(&self) -> Option<u16> {
        (self.kind == IPPROTO_FRAGMENT).then(|| {
            let b = &self.buffer.as_ref()[field::FRAG_OFF];
            u16::from_be_bytes([b[0], b[1]])
        })
    }

    /// A fragment header's offset in bytes (frag_off & IP6_OFFSET).
    pub fn frag_offset(&self) -> Option<usize> {
        self.frag_off().map(|f| usize::from(f & IP6_OFFSET))
    }

    /// A fragment header's IP6_MF.
    pub fn more_frags(&self) -> Option<bool> {
        self.frag_off().map(|f| f & IP6_MF != 0)
    }

    /// A fragment header's identification.
    pub fn frag_ident(&self) -> Option<u32> {
        (self.kind == IPPROTO_FRAGMENT).then(|| {
            let b = &self.buffer.as_ref()[field::FRAG_ID];
            u32::from_be_bytes([b[0], b[1], b[2], b[3]])
        })
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> ExtHeader<&'a T> {
    /// The header's bytes after nexthdr and hdrlen (options, routing data, ...), up to
    /// [`ExtHeader::header_len`], clamped to the buffer.
    pub fn data(&self) -> &'a [u8] {
        let buf = self.buffer.as_ref();
        buf.get(2..self.header_len().min(buf.len())).unwrap_or(&[])
    }

    /// The bytes after this header (empty on a short buffer).
    pub fn payload(&self) -> &'a [u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ExtHeader<T> {
    /// Sets nexthdr.
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::EXT_NEXTHDR] = v;
    }

    /// Sets hdrlen. The header length changes with it: re-check before trusting it.
    pub fn set_hdr_ext_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::EXT_HDRLEN] = v;
    }

    /// Sets a fragment header's frag_off word; [`Error::Malformed`] for other kinds.
    pub fn set_frag_off(&mut self, v: u16) -> Result<()> {
        if self.kind != IPPROTO_FRAGMENT {
            return Err(Error::Malformed("not a fragment header"));
        }
        self.buffer.as_mut()[field::FRAG_OFF].copy_from_slice(&v.to_be_bytes());
        Ok(())
    }

    /// Sets a fragment header's identification; [`Error::Malformed`] for other kinds.
    pub fn set_frag_ident(&mut self, v: u32) -> Result<()> {
        if self.kind != IPPROTO_FRAGMENT {
            return Err(Error::Malformed("not a fragment header"));
        }
        self.buffer.as_mut()[field::FRAG_ID].copy_from_slice(&v.to_be_bytes());
        Ok(())
    }
}

/// How many extension headers [`ExtRule::View`] steps over before it stops: a chain of
/// empty options headers could otherwise be as long as the packet.
pub const MAX_EXT_HEADERS: usize = 8;

/// Which extension headers a walk steps over and how much of each it needs: the kernel's
/// walks differ, and each caller names the one its kernel counterpart does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtRule {
    /// The views and the trace summaries: every [`is_ext_header`], each whole in the
    /// buffer, at most [`MAX_EXT_HEADERS`].
    View,
    /// net/ipv6/exthdrs_core.c: ipv6_skip_exthdr: every [`is_ext_header`], as many as
    /// there are, reading only nexthdr and hdrlen of each (and a fragment header's
    /// frag_off), and stopping at the fragment header of a non-first fragment.
    SkipExthdr,
    /// net/ipv6/ip6_offload.c: ipv6_gro_pull_exthdrs: only the protocols registered with
    /// INET6_PROTO_GSO_EXTHDR (hop-by-hop, routing, destination options), each whole, as
    /// many as there are.
    GroPull,
}

impl ExtRule {
    fn steps_over(self, nexthdr: u8) -> bool {
        match self {
            ExtRule::View | ExtRule::SkipExthdr => is_ext_header(nexthdr),
            ExtRule::GroPull => {
                matches!(nexthdr, IPPROTO_HOPOPTS | IPPROTO_ROUTING | IPPROTO_DSTOPTS)
            }
        }
    }

    /// The bytes of header `h` the walk reads before stepping over it.
    fn needs<T: AsRef<[u8]>>(self, h: &ExtHeader<T>) -> usize {
        match (self, h.kind()) {
            (ExtRule::SkipExthdr, IPPROTO_FRAGMENT) => 4,
            (ExtRule::SkipExthdr, _) => 2,
            _ => h.header_len(),
        }
    }
}

/// One step of [`ExtHeaders`]: a header of kind `kind` at `offset` (from the end of the
/// fixed header), `len` bytes, followed by `next_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtHeaderAt {
    /// The next-header value that named the header.
    pub kind: u8,
    /// Where it starts in the payload.
    pub offset: usize,
    /// Its length in bytes.
    pub len: usize,
    /// Its nexthdr.
    pub next_header: u8,
}

/// Walks the extension headers of an IPv6 payload by an [`ExtRule`] (the one walk of
/// the project), yielding each header, or one [`Error::Truncated`] and then nothing when
/// a header runs past the payload. After the walk, [`ExtHeaders::next_header`] and
/// [`ExtHeaders::offset`] name the upper-layer header (or the header the walk stopped
/// at).
#[derive(Debug, Clone)]
pub struct ExtHeaders<'a> {
    payload: &'a [u8],
    rule: ExtRule,
    next_header: u8,
    offset: usize,
    steps: usize,
    done: bool,
}

impl<'a> ExtHeaders<'a> {
    /// Starts at the fixed header's nexthdr and payload, walking by [`ExtRule::View`].
    pub fn new(next_header: u8, payload: &'a [u8]) -> ExtHeaders<'a> {
        Self::with_rule(ExtRule::View, next_header, payload)
    }

    /// Starts at `next_header` over `payload`, walking by `rule`.
    pub fn with_rule(rule: ExtRule, next_header: u8, payload: &'a [u8]) -> ExtHeaders<'a> {
        ExtHeaders {
            payload,
            rule,
            next_header,
            offset: 0,
            steps: 0,
            done: false,
        }
    }

    /// Walks to the end: the header after the ones `rule` steps over and its offset in
    /// `payload`, or [`Error::Truncated`] when one of them runs past it.
    pub fn skip(rule: ExtRule, next_header: u8, payload: &'a [u8]) -> Result<(u8, usize)> {
        let mut walk = Self::with_rule(rule, next_header, payload);
        for step in walk.by_ref() {
            step?;
        }
        Ok((walk.next_header, walk.offset))
    }

    /// The next header not yet stepped over.
    pub fn next_header(&self) -> u8 {
        self.next_header
    }

    /// Where that header starts in the payload.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The view of the header at [`ExtHeaders::offset`] (possibly truncated).
    pub fn current(&self) -> ExtHeader<&'a [u8]> {
        ExtHeader::new_unchecked(
            self.next_header,
            self.payload.get(self.offset..).unwrap_or(&[]),
        )
    }
}

impl<'a> Iterator for ExtHeaders<'a> {
    type Item = Result<ExtHeaderAt>;

    fn next(&mut self) -> Option<Result<ExtHeaderAt>> {
        let bounded = self.rule == ExtRule::View && self.steps == MAX_EXT_HEADERS;
        if self.done || bounded || !self.rule.steps_over(self.next_header) {
            return None;
        }
        let h = self.current();
        if self.payload.len().saturating_sub(self.offset) < self.rule.needs(&h) {
            self.done = true;
            return Some(Err(Error::Truncated));
        }
        // ipv6_skip_exthdr: `if (ntohs(*fp) & ~0x7) break;` a later fragment's payload is
        // no header.
        if self.rule == ExtRule::SkipExthdr && h.frag_off().is_some_and(|f| f & !0x7 != 0) {
            self.done = true;
            return None;
        }
        let at = ExtHeaderAt {
            kind: self.next_header,
            offset: self.offset,
            len: h.header_len(),
            next_header: h.next_header(),
        };
        self.offset += at.len;
        self.next_header = at.next_header;
        self.steps += 1;
        Some(Ok(at))
    }
}

#[cfg(test)]
#[path = "ipv6_tests.rs"]
mod tests;
