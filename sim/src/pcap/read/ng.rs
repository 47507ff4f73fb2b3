//! pcapng: section headers, interface descriptions (if_tsresol, if_tsoffset), and
//! enhanced, simple and obsolete packet blocks. Other blocks are skipped unbuffered.

use std::io::Read;

use super::{io_err, rd16, rd32, rd64, Loc, PcapReader};
use crate::pcap::{PcapError, MAX_CAPLEN};

pub(super) const NG_SHB: u32 = 0x0a0d_0d0a;
/// Largest pcapng block buffered whole (SHB, IDB, packet blocks). Other block types are
/// skipped by streaming past them, whatever their size.
const MAX_BLOCK_LEN: u32 = 1024 * 1024;
/// Interfaces one pcapng section may describe (bounds memory on hostile input).
const MAX_INTERFACES: usize = 65_536;
/// Bytes of an `if_name` kept (Npcap's `\Device\NPF_{GUID}` names have 50).
const MAX_NAME: usize = 64;

const NG_BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
const NG_IDB: u32 = 1;
const NG_OPB: u32 = 2;
const NG_SPB: u32 = 3;
const NG_EPB: u32 = 6;

const OPT_ENDOFOPT: u16 = 0;
const OPT_COMMENT: u16 = 1;
const OPT_IF_NAME: u16 = 2;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// How an interface's timestamp units become nanoseconds (if_tsresol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TsScale {
    Mul(u64),
    Div(u64),
    Pow2(u32),
    Zero,
}

impl TsScale {
    fn from_tsresol(v: u8) -> Self {
        if v & 0x80 != 0 {
            return TsScale::Pow2(u32::from(v & 0x7f));
        }
        let e = u32::from(v);
        match e {
            0..=9 => TsScale::Mul(10u64.pow(9 - e)),
            10..=28 => TsScale::Div(10u64.pow(e - 9)),
            // 10^-29 s and finer: every u64 count is below one nanosecond.
            _ => TsScale::Zero,
        }
    }

    #[inline]
    fn to_ns(self, units: u64) -> u64 {
        match self {
            TsScale::Mul(m) => units.saturating_mul(m),
            TsScale::Div(d) => units / d,
            TsScale::Pow2(e) => {
                u64::try_from((u128::from(units) * 1_000_000_000) >> e).unwrap_or(u64::MAX)
            }
            TsScale::Zero => 0,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Iface {
    link_type: u32,
    /// The reader's [`LinkPolicy`](super::LinkPolicy) refuses `link_type`.
    refused: bool,
    snaplen: u32,
    scale: TsScale,
    /// if_tsoffset, seconds.
    offset_s: i64,
}

impl Iface {
    #[inline]
    fn ts_ns(&self, units: u64) -> u64 {
        let ns = self.scale.to_ns(units);
        if self.offset_s == 0 {
            return ns;
        }
        let t = i128::from(ns) + i128::from(self.offset_s) * 1_000_000_000;
        t.clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// pcapng state of the current section.
#[derive(Debug, Default)]
pub(super) struct Ng {
    be: bool,
    ifaces: Vec<Iface>,
    /// Each interface's `if_name` (empty without one), apart from [`Iface`] so that
    /// the per-packet lookup copies no string.
    names: Vec<String>,
}

impl<R> PcapReader<R> {
    /// The `if_name` of pcapng interface `id` of the current section (`None` for
    /// classic pcap, unknown ids and interfaces without a name).
    pub fn interface_name(&self, id: u32) -> Option<&str> {
        self.ng
            .names
            .get(id as usize)
            .map(String::as_str)
            .filter(|n| !n.is_empty())
    }

    /// The link type of pcapng interface `id` of the current section.
    pub fn interface_link_type(&self, id: u32) -> Option<u32> {
        self.ng.ifaces.get(id as usize).map(|i| i.link_type)
    }
}

impl<R: Read> PcapReader<R> {
    pub(super) fn next_ng(&mut self) -> Result<Option<Loc>, PcapError> {
        loop {
            let offset = self.src.offset();
            let got = self.src.fill(8).map_err(io_err(&self.path, offset))?;
            if got < 8 {
                if got == 0 {
                    return Ok(None);
                }
                return Err(PcapError::TruncatedRecordHeader {
                    path: self.path.clone(),
                    what: "pcapng block header",
                    offset,
                    frame: self.next_index,
                    got,
                    need: 8,
                });
            }
            let be = self.ng.be;
            let h = self.src.peek(8);
            let btype = rd32(h, 0, be);
            if btype == NG_SHB {
                self.read_shb(false)?;
                continue;
            }
            let blen = rd32(h, 4, be);
            if blen < 12 || !blen.is_multiple_of(4) {
                return Err(self.malformed(
                    offset,
                    format!(
                        "block type 0x{btype:x} has length {blen} (not a multiple of 4 of at \
                         least 12)"
                    ),
                ));
            }
            match btype {
                NG_EPB | NG_OPB | NG_SPB => return self.ng_packet(btype, blen, offset).map(Some),
                NG_IDB => self.ng_idb(blen, offset)?,
                _ => {
                    let skipped = self
                        .src
                        .skip(u64::from(blen))
                        .map_err(io_err(&self.path, offset))?;
                    if skipped < u64::from(blen) {
                        return Err(self.truncated_block(offset, blen, skipped));
                    }
                }
            }
        }
    }

    fn truncated_block(&self, offset: u64, blen: u32, remaining: u64) -> PcapError {
        PcapError::TruncatedRecord {
            path: self.path.clone(),
            offset,
            frame: self.next_index,
            claim: "block length",
            claimed: u64::from(blen),
            remaining,
        }
    }

    /// Buffers the whole block at the current position, checks its trailing length
    /// and returns its start in the buffer (not consumed).
    fn ng_block(&mut self, blen: u32, offset: u64, be: bool) -> Result<usize, PcapError> {
        if blen > MAX_BLOCK_LEN {
            return Err(self.malformed(
                offset,
                format!("block length {blen} exceeds the {MAX_BLOCK_LEN}-byte sanity limit"),
            ));
        }
        let n = blen as usize;
        let got = self.src.fill(n).map_err(io_err(&self.path, offset))?;
        if got < n {
            return Err(self.truncated_block(offset, blen, got as u64));
        }
        let trailer = rd32(self.src.peek(n), n - 4, be);
        if trailer != blen {
            return Err(self.malformed(
                offset,
                format!("block ends with length {trailer} but starts with {blen}"),
            ));
        }
        Ok(self.src.pos)
    }

    /// Section header block: byte order, version; forgets the previous section's
    /// interfaces.
    pub(super) fn read_shb(&mut self, first: bool) -> Result<(), PcapError> {
        let offset = self.src.offset();
        let what = "pcapng section header block";
        let got = self.src.fill(28).map_err(io_err(&self.path, offset))?;
        if got < 28 {
            return Err(if first {
                PcapError::TruncatedFileHeader {
                    path: self.path.clone(),
                    what,
                    got,
                    need: 28,
                }
            } else {
                PcapError::TruncatedRecordHeader {
                    path: self.path.clone(),
                    what,
                    offset,
                    frame: self.next_index,
                    got,
                    need: 28,
                }
            });
        }
        let h = self.src.peek(28);
        let be = match rd32(h, 8, false) {
            NG_BYTE_ORDER_MAGIC => false,
            m if m == NG_BYTE_ORDER_MAGIC.swap_bytes() => true,
            m => {
                return Err(self.malformed(
                    offset,
                    format!("section header byte-order magic 0x{m:08x} is not 0x1a2b3c4d"),
                ))
            }
        };
        let blen = rd32(h, 4, be);
        let (major, minor) = (rd16(h, 12, be), rd16(h, 14, be));
        if blen < 28 || !blen.is_multiple_of(4) {
            return Err(self.malformed(
                offset,
                format!("section header block length {blen} (not a multiple of 4 of at least 28)"),
            ));
        }
        if major != 1 {
            return Err(PcapError::Unsupported {
                path: self.path.clone(),
                what: format!("pcapng version {major}.{minor} (only 1.x exists)"),
            });
        }
        self.ng_block(blen, offset, be)?;
        self.ng.be = be;
        self.ng.ifaces.clear();
        self.ng.names.clear();
        self.src.consume(blen as usize);
        Ok(())
    }

    /// Interface description block: link type, snaplen, if_tsresol, if_tsoffset.
    fn ng_idb(&mut self, blen: u32, offset: u64) -> Result<(), PcapError> {
        let be = self.ng.be;
        let id = self.ng.ifaces.len();
        if blen < 20 {
            return Err(self.malformed(
                offset,
                format!("interface description block length {blen} is below 20"),
            ));
        }
        if id >= MAX_INTERFACES {
            return Err(self.malformed(
                offset,
                format!("more than {MAX_INTERFACES} interfaces in one section"),
            ));
        }
        let s = self.ng_block(blen, offset, be)?;
        let n = blen as usize;
        let b = &self.src.buf[s..s + n];
        let link_type = u32::from(rd16(b, 8, be));
        let mut iface = Iface {
            link_type,
            refused: self.policy.check(link_type).is_err(),
            snaplen: rd32(b, 12, be),
            scale: TsScale::from_tsresol(6),
            offset_s: 0,
        };
        let end = n - 4;
        let mut p = 16;
        let mut bad = None;
        let mut name = String::new();
        while p + 4 <= end {
            let code = rd16(b, p, be);
            let len = usize::from(rd16(b, p + 2, be));
            let v = p + 4;
            if v + len > end {
                bad = Some(format!(
                    "interface {id}: option {code} of length {len} overruns its block"
                ));
                break;
            }
            match (code, len) {
                (OPT_ENDOFOPT, _) => break,
                (OPT_IF_TSRESOL, 1) => iface.scale = TsScale::from_tsresol(b[v]),
                (OPT_IF_NAME, _) => {
                    // Kept to MAX_NAME bytes: 65536 interfaces of hostile input stay small.
                    let raw = &b[v..v + len.min(MAX_NAME)];
                    name = String::from_utf8_lossy(raw).into_owned();
                }
                (OPT_IF_TSOFFSET, 8) => iface.offset_s = rd64(b, v, be) as i64,
                (OPT_IF_TSRESOL | OPT_IF_TSOFFSET, _) => {
                    bad = Some(format!(
                        "interface {id}: option {code} has length {len}, expected {}",
                        if code == OPT_IF_TSRESOL { 1 } else { 8 }
                    ));
                    break;
                }
                _ => {}
            }
            p = v + ((len + 3) & !3);
        }
        if let Some(what) = bad {
            return Err(self.malformed(offset, what));
        }
        self.ng.ifaces.push(iface);
        self.ng.names.push(name);
        self.src.consume(n);
        Ok(())
    }

    /// Enhanced, simple or obsolete packet block.
    fn ng_packet(&mut self, btype: u32, blen: u32, offset: u64) -> Result<Loc, PcapError> {
        let be = self.ng.be;
        let frame = self.next_index;
        let (fixed, name) = match btype {
            NG_EPB => (28usize, "enhanced packet block"),
            NG_OPB => (28, "packet block"),
            _ => (12, "simple packet block"),
        };
        if (blen as usize) < fixed + 4 {
            return Err(self.malformed(
                offset,
                format!(
                    "{name} length {blen} is below its {}-byte minimum",
                    fixed + 4
                ),
            ));
        }
        let got = self.src.fill(fixed).map_err(io_err(&self.path, offset))?;
        if got < fixed {
            return Err(PcapError::TruncatedRecordHeader {
                path: self.path.clone(),
                what: name,
                offset,
                frame,
                got,
                need: fixed,
            });
        }
        let h = self.src.peek(fixed);
        let (if_id, units, caplen, orig_len) = match btype {
            NG_SPB => (0, None, 0, rd32(h, 8, be)),
            _ => {
                let id = if btype == NG_EPB {
                    rd32(h, 8, be)
                } else {
                    u32::from(rd16(h, 8, be))
                };
                let ts = (u64::from(rd32(h, 12, be)) << 32) | u64::from(rd32(h, 16, be));
                (id, Some(ts), rd32(h, 20, be), rd32(h, 24, be))
            }
        };
        let iface = self.ng_iface(if_id, name, offset)?;
        let caplen = if units.is_none() {
            // SPB: the data fills the block, cut to the packet and the snaplen.
            let mut c = orig_len.min(blen - 16);
            if iface.snaplen != 0 {
                c = c.min(iface.snaplen);
            }
            c
        } else {
            caplen
        };
        self.ng_check_caplen(caplen, iface.snaplen, offset, frame)?;
        let padded = (caplen as usize + 3) & !3;
        if fixed + padded + 4 > blen as usize {
            return Err(self.malformed(
                offset,
                format!("{name}: caplen {caplen} does not fit in block length {blen}"),
            ));
        }
        let s = self.ng_block(blen, offset, be)?;
        let comment = match units {
            // A simple packet block has no options.
            None => None,
            Some(_) => {
                let b = &self.src.buf[s..s + blen as usize];
                first_comment(b, fixed + padded, be).map(|(at, n)| (s + at, n))
            }
        };
        self.src.consume(blen as usize);
        Ok(Loc {
            start: s + fixed,
            len: caplen as usize,
            ts_ns: units.map_or(0, |u| iface.ts_ns(u)),
            orig_len,
            link_type: iface.link_type,
            interface: if_id,
            comment,
        })
    }

    /// The interface a packet block names, refused when its link type is (per policy).
    fn ng_iface(&self, if_id: u32, name: &str, offset: u64) -> Result<Iface, PcapError> {
        let Some(&iface) = self.ng.ifaces.get(if_id as usize) else {
            let has = match self.ng.ifaces.len() {
                0 => "no interface description block".to_string(),
                1 => "only 1 interface description block (interface 0)".to_string(),
                n => format!(
                    "only {n} interface description blocks (interfaces 0 to {})",
                    n - 1
                ),
            };
            return Err(self.malformed(
                offset,
                format!("{name} refers to interface {if_id} but the section has {has}"),
            ));
        };
        if iface.refused {
            if let Some(e) = self.policy.refuse(iface.link_type, &self.path, Some(if_id)) {
                return Err(e);
            }
        }
        Ok(iface)
    }

    /// A packet's caplen within the sanity limit and its interface's snaplen.
    fn ng_check_caplen(
        &self,
        caplen: u32,
        snaplen: u32,
        offset: u64,
        frame: u64,
    ) -> Result<(), PcapError> {
        if caplen > MAX_CAPLEN || (snaplen != 0 && caplen > snaplen) {
            let (limit, limit_name) = if caplen > MAX_CAPLEN {
                (MAX_CAPLEN, "256 KiB sanity limit")
            } else {
                (snaplen, "interface's snaplen")
            };
            return Err(PcapError::CaplenTooLarge {
                path: self.path.clone(),
                offset,
                frame,
                caplen,
                limit,
                limit_name,
            });
        }
        Ok(())
    }
}

/// The first `opt_comment` among the options of packet block `b` (the whole block,
/// trailing length included) that start at `from`: its start in `b` and length. Options
/// that overrun the block end the search without an error, as before options were read
/// (a packet's data never depends on them).
fn first_comment(b: &[u8], from: usize, be: bool) -> Option<(usize, usize)> {
    let end = b.len() - 4;
    let mut p = from;
    while p + 4 <= end {
        let code = rd16(b, p, be);
        let len = usize::from(rd16(b, p + 2, be));
        let v = p + 4;
        if code == OPT_ENDOFOPT || v + len > end {
            return None;
        }
        if code == OPT_COMMENT {
            return Some((v, len));
        }
        p = v + ((len + 3) & !3);
    }
    None
}
