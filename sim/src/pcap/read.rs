//! Streaming reader for classic pcap (both byte orders, µs/ns/"modified" magics) and
//! pcapng (SHB, IDB, EPB, SPB and the obsolete PB; every other block is skipped).

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::{PcapError, PcapFormat, LINKTYPE_ETHERNET, MAX_CAPLEN};

/// Initial size of the one read buffer; it grows only to hold a larger single record.
const INITIAL_BUF: usize = 512 * 1024;
/// Largest pcapng block buffered whole (SHB, IDB, packet blocks). Other block types are
/// skipped by streaming past them, whatever their size.
const MAX_BLOCK_LEN: u32 = 1024 * 1024;
/// Interfaces one pcapng section may describe (bounds memory on hostile input).
const MAX_INTERFACES: usize = 65_536;

const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// Alexey Kuznetzov's patched libpcap: 8 more bytes per record header.
const MAGIC_MODIFIED: u32 = 0xa1b2_cd34;

const NG_SHB: u32 = 0x0a0d_0d0a;
const NG_BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
const NG_IDB: u32 = 1;
const NG_OPB: u32 = 2;
const NG_SPB: u32 = 3;
const NG_EPB: u32 = 6;

const OPT_ENDOFOPT: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// One frame, borrowed from the reader's buffer until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef<'a> {
    /// 0-based position of the frame in the file (non-packet blocks do not count).
    pub index: u64,
    /// Capture time in nanoseconds since the Unix epoch (0 for pcapng simple packets).
    pub ts_ns: u64,
    /// Length of the frame on the wire; `data` may be shorter if it was truncated.
    pub orig_len: u32,
    /// The captured bytes, starting at the destination MAC.
    pub data: &'a [u8],
}

impl FrameRef<'_> {
    /// Copies the frame out of the reader's buffer.
    pub fn to_frame(&self) -> Frame {
        Frame {
            index: self.index,
            ts_ns: self.ts_ns,
            orig_len: self.orig_len,
            data: self.data.to_vec(),
        }
    }
}

/// An owned [`FrameRef`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub index: u64,
    pub ts_ns: u64,
    pub orig_len: u32,
    pub data: Vec<u8>,
}

impl Frame {
    /// Borrows this frame as a [`FrameRef`].
    pub fn frame_ref(&self) -> FrameRef<'_> {
        FrameRef {
            index: self.index,
            ts_ns: self.ts_ns,
            orig_len: self.orig_len,
            data: &self.data,
        }
    }
}

/// Reads every frame of the capture at `path` into memory (tests and small files).
pub fn read_all(path: impl AsRef<Path>) -> Result<Vec<Frame>, PcapError> {
    PcapReader::open(path)?.collect()
}

/// A buffered byte source that hands out slices of its one buffer.
struct Source<R> {
    inner: R,
    buf: Vec<u8>,
    /// Next unread byte in `buf`.
    pos: usize,
    /// End of valid bytes in `buf`.
    end: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
}

impl<R: Read> Source<R> {
    fn new(inner: R) -> Self {
        Source {
            inner,
            buf: vec![0; INITIAL_BUF],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes `n` bytes available at `pos` if the input has them; returns how many are
    /// (less than `n` only at end of input).
    #[inline]
    fn fill(&mut self, n: usize) -> io::Result<usize> {
        if self.end - self.pos >= n {
            Ok(n)
        } else {
            self.fill_slow(n)
        }
    }

    #[cold]
    #[inline(never)]
    fn fill_slow(&mut self, n: usize) -> io::Result<usize> {
        if self.pos + n > self.buf.len() {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
            if n > self.buf.len() {
                self.buf.resize(n, 0);
            }
        }
        while self.end - self.pos < n && !self.eof {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                // `min` keeps a misbehaving reader from pushing `end` past the buffer.
                Ok(k) => self.end = (self.end + k).min(self.buf.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok((self.end - self.pos).min(n))
    }

    /// The `n` bytes at `pos`; `fill(n)` must have returned `n`.
    #[inline]
    fn peek(&self, n: usize) -> &[u8] {
        &self.buf[self.pos..self.pos + n]
    }

    #[inline]
    fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    /// Consumes up to `n` bytes without keeping them; returns how many there were.
    fn skip(&mut self, n: u64) -> io::Result<u64> {
        let mut left = n;
        loop {
            let avail = (self.end - self.pos) as u64;
            if avail >= left {
                self.pos += left as usize;
                return Ok(n);
            }
            left -= avail;
            self.base += self.end as u64;
            self.pos = 0;
            self.end = 0;
            if self.eof {
                return Ok(n - left);
            }
            let want = left.min(self.buf.len() as u64) as usize;
            self.fill_slow(want)?;
        }
    }
}

/// Classic pcap parameters from the global header.
#[derive(Debug, Clone, Copy, Default)]
struct Classic {
    be: bool,
    nanos: bool,
    snaplen: u32,
    /// 16, or 24 for the "modified" format.
    rec_len: usize,
}

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
struct Ng {
    be: bool,
    ifaces: Vec<Iface>,
}

/// Where the frame the last call found lies in the buffer.
struct Loc {
    start: usize,
    len: usize,
    ts_ns: u64,
    orig_len: u32,
}

#[inline]
fn rd16(b: &[u8], at: usize, be: bool) -> u16 {
    let a = [b[at], b[at + 1]];
    if be {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

#[inline]
fn rd32(b: &[u8], at: usize, be: bool) -> u32 {
    let a = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if be {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

fn rd64(b: &[u8], at: usize, be: bool) -> u64 {
    let (hi, lo) = if be {
        (rd32(b, at, be), rd32(b, at + 4, be))
    } else {
        (rd32(b, at + 4, be), rd32(b, at, be))
    };
    (u64::from(hi) << 32) | u64::from(lo)
}

fn io_err(path: &Path, offset: u64) -> impl FnOnce(io::Error) -> PcapError + '_ {
    move |source| PcapError::Io {
        path: path.to_path_buf(),
        offset,
        source,
    }
}

/// Streaming capture reader. See the module docs; [`PcapReader::next_frame`] is the
/// fast path, the `Iterator` impl yields owned [`Frame`]s.
pub struct PcapReader<R = File> {
    src: Source<R>,
    path: PathBuf,
    format: PcapFormat,
    classic: Classic,
    ng: Ng,
    next_index: u64,
    done: bool,
}

impl<R> fmt::Debug for PcapReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PcapReader")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("offset", &(self.src.base + self.src.pos as u64))
            .field("next_index", &self.next_index)
            .finish_non_exhaustive()
    }
}

impl PcapReader<File> {
    /// Opens a capture file and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, PcapError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(io_err(path, 0))?;
        Self::from_reader(file, path)
    }
}

impl<R: Read> PcapReader<R> {
    /// Wraps any reader (no need for a `BufReader`: the reader buffers itself); `name`
    /// is what errors call the input.
    pub fn from_reader(reader: R, name: impl Into<PathBuf>) -> Result<Self, PcapError> {
        let mut r = PcapReader {
            src: Source::new(reader),
            path: name.into(),
            format: PcapFormat::Pcap,
            classic: Classic::default(),
            ng: Ng::default(),
            next_index: 0,
            done: false,
        };
        let got = r.src.fill(4).map_err(io_err(&r.path, 0))?;
        if got < 4 {
            return Err(PcapError::TruncatedFileHeader {
                path: r.path,
                what: "pcap global header",
                got,
                need: 24,
            });
        }
        let head = r.src.peek(4);
        let magic = [head[0], head[1], head[2], head[3]];
        let le = u32::from_le_bytes(magic);
        if le == NG_SHB {
            r.format = PcapFormat::PcapNg;
            r.read_shb(true)?;
            return Ok(r);
        }
        let (be, nanos, rec_len) = match le {
            MAGIC_US => (false, false, 16),
            MAGIC_NS => (false, true, 16),
            MAGIC_MODIFIED => (false, false, 24),
            m if m == MAGIC_US.swap_bytes() => (true, false, 16),
            m if m == MAGIC_NS.swap_bytes() => (true, true, 16),
            m if m == MAGIC_MODIFIED.swap_bytes() => (true, false, 24),
            _ => {
                return Err(PcapError::NotPcap {
                    path: r.path,
                    magic,
                })
            }
        };
        let got = r.src.fill(24).map_err(io_err(&r.path, 0))?;
        if got < 24 {
            return Err(PcapError::TruncatedFileHeader {
                path: r.path,
                what: "pcap global header",
                got,
                need: 24,
            });
        }
        let h = r.src.peek(24);
        let (major, minor) = (rd16(h, 4, be), rd16(h, 6, be));
        let snaplen = rd32(h, 16, be);
        let lt_field = rd32(h, 20, be);
        if major != 2 {
            return Err(PcapError::Unsupported {
                path: r.path,
                what: format!("pcap version {major}.{minor} (only 2.x exists)"),
            });
        }
        // The top bits carry an FCS length (pcap-savefile(5): LT_FCS_LENGTH_PRESENT).
        let link_type = lt_field & 0x03ff_ffff;
        if link_type != LINKTYPE_ETHERNET {
            return Err(PcapError::NotEthernet {
                path: r.path,
                link_type,
                interface: None,
            });
        }
        if lt_field & 0x0400_0000 != 0 {
            return Err(PcapError::Unsupported {
                path: r.path,
                what: format!(
                    "frames end in a {}-byte FCS; skbsim replays frames without one",
                    (lt_field >> 28) * 2
                ),
            });
        }
        r.classic = Classic {
            be,
            nanos,
            snaplen,
            rec_len,
        };
        r.src.consume(24);
        Ok(r)
    }

    /// The name errors use for this input.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which container the input turned out to be.
    pub fn format(&self) -> PcapFormat {
        self.format
    }

    /// Byte offset of the next unread record or block.
    pub fn offset(&self) -> u64 {
        self.src.offset()
    }

    /// How many frames have been returned so far.
    pub fn frames_read(&self) -> u64 {
        self.next_index
    }

    /// The next frame, borrowed from the reader's buffer. `None` at the end of the
    /// capture and after the first error.
    #[inline]
    pub fn next_frame(&mut self) -> Option<Result<FrameRef<'_>, PcapError>> {
        if self.done {
            return None;
        }
        let found = match self.format {
            PcapFormat::Pcap => self.next_classic(),
            PcapFormat::PcapNg => self.next_ng(),
        };
        match found {
            Ok(Some(loc)) => {
                let index = self.next_index;
                self.next_index += 1;
                Some(Ok(FrameRef {
                    index,
                    ts_ns: loc.ts_ns,
                    orig_len: loc.orig_len,
                    data: &self.src.buf[loc.start..loc.start + loc.len],
                }))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    #[inline]
    fn next_classic(&mut self) -> Result<Option<Loc>, PcapError> {
        let c = self.classic;
        let offset = self.src.offset();
        let frame = self.next_index;
        let hl = c.rec_len;
        let got = self.src.fill(hl).map_err(io_err(&self.path, offset))?;
        if got < hl {
            if got == 0 {
                return Ok(None);
            }
            return Err(PcapError::TruncatedRecordHeader {
                path: self.path.clone(),
                what: "record header",
                offset,
                frame,
                got,
                need: hl,
            });
        }
        let h = self.src.peek(hl);
        let sec = rd32(h, 0, c.be);
        let frac = rd32(h, 4, c.be);
        let caplen = rd32(h, 8, c.be);
        let orig_len = rd32(h, 12, c.be);
        if caplen > MAX_CAPLEN || (c.snaplen != 0 && caplen > c.snaplen) {
            let (limit, limit_name) = if caplen > MAX_CAPLEN {
                (MAX_CAPLEN, "256 KiB sanity limit")
            } else {
                (c.snaplen, "file's snaplen")
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
        let need = hl + caplen as usize;
        let got = self.src.fill(need).map_err(io_err(&self.path, offset))?;
        if got < need {
            return Err(PcapError::TruncatedRecord {
                path: self.path.clone(),
                offset,
                frame,
                claim: "caplen",
                claimed: u64::from(caplen),
                remaining: (got - hl) as u64,
            });
        }
        let start = self.src.pos + hl;
        self.src.consume(need);
        let sub_ns = if c.nanos {
            u64::from(frac)
        } else {
            u64::from(frac) * 1000
        };
        Ok(Some(Loc {
            start,
            len: caplen as usize,
            ts_ns: u64::from(sec) * 1_000_000_000 + sub_ns,
            orig_len,
        }))
    }

    fn malformed(&self, offset: u64, what: String) -> PcapError {
        PcapError::Malformed {
            path: self.path.clone(),
            offset,
            frame: self.next_index,
            what,
        }
    }

    fn next_ng(&mut self) -> Result<Option<Loc>, PcapError> {
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
    fn read_shb(&mut self, first: bool) -> Result<(), PcapError> {
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
        let mut iface = Iface {
            link_type: u32::from(rd16(b, 8, be)),
            snaplen: rd32(b, 12, be),
            scale: TsScale::from_tsresol(6),
            offset_s: 0,
        };
        let end = n - 4;
        let mut p = 16;
        let mut bad = None;
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
        let Some(&iface) = self.ng.ifaces.get(if_id as usize) else {
            let n = self.ng.ifaces.len();
            return Err(self.malformed(
                offset,
                format!("{name} refers to interface {if_id} but the section describes {n}"),
            ));
        };
        if iface.link_type != LINKTYPE_ETHERNET {
            return Err(PcapError::NotEthernet {
                path: self.path.clone(),
                link_type: iface.link_type,
                interface: Some(if_id),
            });
        }
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
        if caplen > MAX_CAPLEN || (iface.snaplen != 0 && caplen > iface.snaplen) {
            let (limit, limit_name) = if caplen > MAX_CAPLEN {
                (MAX_CAPLEN, "256 KiB sanity limit")
            } else {
                (iface.snaplen, "interface's snaplen")
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
        let padded = (caplen as usize + 3) & !3;
        if fixed + padded + 4 > blen as usize {
            return Err(self.malformed(
                offset,
                format!("{name}: caplen {caplen} does not fit in block length {blen}"),
            ));
        }
        let s = self.ng_block(blen, offset, be)?;
        self.src.consume(blen as usize);
        Ok(Loc {
            start: s + fixed,
            len: caplen as usize,
            ts_ns: units.map_or(0, |u| iface.ts_ns(u)),
            orig_len,
        })
    }
}

impl<R: Read> Iterator for PcapReader<R> {
    type Item = Result<Frame, PcapError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_frame().map(|r| r.map(|f| f.to_frame()))
    }
}

#[cfg(test)]
impl<R> PcapReader<R> {
    /// Size of the read buffer (tests check it stays bounded).
    pub(super) fn buffer_len(&self) -> usize {
        self.src.buf.len()
    }
}
