//! Streaming reader for classic pcap (both byte orders, µs/ns/"modified" magics) and
//! pcapng (SHB, IDB, EPB, SPB and the obsolete PB; every other block is skipped).

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::linktype::{self, LinkTypeError};
use super::{PcapError, PcapFormat, LINKTYPE_ETHERNET, MAX_CAPLEN};

mod ng;
mod source;

use ng::{Ng, NG_SHB};
use source::Source;

const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// Alexey Kuznetzov's patched libpcap: 8 more bytes per record header.
const MAGIC_MODIFIED: u32 = 0xa1b2_cd34;

/// Which link types a reader hands out; the others end the read with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LinkPolicy {
    /// LINKTYPE_ETHERNET only ([`PcapError::NotEthernet`] otherwise): what
    /// [`PcapReader::open`] and [`PcapReader::from_reader`] do, for callers that treat
    /// every frame as Ethernet.
    #[default]
    EthernetOnly,
    /// The link types [`linktype::to_ethernet`] and [`linktype::to_l3`] convert
    /// ([`linktype::SUPPORTED`]); others fail with [`PcapError::LinkType`].
    Supported,
    /// Every link type (for tools that only count or compare bytes).
    Any,
}

impl LinkPolicy {
    pub(super) fn check(self, link_type: u32) -> Result<(), Option<LinkTypeError>> {
        match self {
            LinkPolicy::EthernetOnly if link_type != LINKTYPE_ETHERNET => Err(None),
            LinkPolicy::Supported if !linktype::is_supported(link_type) => {
                Err(Some(LinkTypeError::Unsupported { link_type }))
            }
            _ => Ok(()),
        }
    }

    /// The error for a refused link type of interface `interface` (pcapng) or of the
    /// file (classic, `None`).
    pub(super) fn refuse(
        self,
        link_type: u32,
        path: &Path,
        interface: Option<u32>,
    ) -> Option<PcapError> {
        match self.check(link_type) {
            Ok(()) => None,
            Err(None) => Some(PcapError::NotEthernet {
                path: path.to_path_buf(),
                link_type,
                interface,
            }),
            Err(Some(source)) => Some(PcapError::LinkType {
                path: path.to_path_buf(),
                interface,
                source,
            }),
        }
    }
}

/// One frame, borrowed from the reader's buffer until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef<'a> {
    /// 0-based position of the frame in the file (non-packet blocks do not count).
    pub index: u64,
    /// Capture time in nanoseconds since the Unix epoch (0 for pcapng simple packets).
    pub ts_ns: u64,
    /// Length of the frame on the wire; `data` may be shorter if it was truncated.
    pub orig_len: u32,
    /// The frame's LINKTYPE_* value (the file's, or its pcapng interface's); see
    /// [`linktype`] for turning it into Ethernet or L3.
    pub link_type: u32,
    /// pcapng interface id within its section (0 for classic pcap, whose file is one
    /// implicit interface).
    pub interface: u32,
    /// The captured bytes, starting at the link-layer header (the destination MAC for
    /// Ethernet).
    pub data: &'a [u8],
    /// The pcapng packet's first `opt_comment` (UTF-8 by the pcapng spec, not checked
    /// here); `None` for classic pcap, simple packet blocks and packets without one.
    /// skbsim's writer puts a frame's skb metadata there.
    pub comment: Option<&'a [u8]>,
}

impl FrameRef<'_> {
    /// Copies the frame out of the reader's buffer.
    pub fn to_frame(&self) -> Frame {
        Frame {
            index: self.index,
            ts_ns: self.ts_ns,
            orig_len: self.orig_len,
            link_type: self.link_type,
            interface: self.interface,
            data: self.data.to_vec(),
            comment: self.comment.map(<[u8]>::to_vec),
        }
    }
}

/// An owned [`FrameRef`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub index: u64,
    pub ts_ns: u64,
    pub orig_len: u32,
    pub link_type: u32,
    pub interface: u32,
    pub data: Vec<u8>,
    pub comment: Option<Vec<u8>>,
}

impl Frame {
    /// Borrows this frame as a [`FrameRef`].
    pub fn frame_ref(&self) -> FrameRef<'_> {
        FrameRef {
            index: self.index,
            ts_ns: self.ts_ns,
            orig_len: self.orig_len,
            link_type: self.link_type,
            interface: self.interface,
            data: &self.data,
            comment: self.comment.as_deref(),
        }
    }
}

/// Reads every frame of the capture at `path` into memory (tests and small files).
pub fn read_all(path: impl AsRef<Path>) -> Result<Vec<Frame>, PcapError> {
    PcapReader::open(path)?.collect()
}

/// [`read_all`] with frames of the link types `policy` allows.
pub fn read_all_with(path: impl AsRef<Path>, policy: LinkPolicy) -> Result<Vec<Frame>, PcapError> {
    PcapReader::open_with(path, policy)?.collect()
}

/// Classic pcap parameters from the global header.
#[derive(Debug, Clone, Copy, Default)]
struct Classic {
    be: bool,
    nanos: bool,
    /// Captured bytes handed out per record at most: libpcap's `p->snapshot`.
    snapshot: u32,
    /// 16, or 24 for the "modified" format.
    rec_len: usize,
    link_type: u32,
    lengths: Lengths,
}

/// Whether record headers have caplen and len the other way round (libpcap
/// `sf-pcap.c: pcap_check_header`: versions before 2.3 and DG/UX's 543.0 do, 2.3 files
/// may; the order was changed at 2.3 to match the BPF header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Lengths {
    #[default]
    InOrder,
    Swapped,
    /// Swapped when caplen > len.
    Maybe,
}

/// Where the frame the last call found lies in the buffer.
#[derive(Debug, Clone, Copy)]
struct Loc {
    start: usize,
    len: usize,
    ts_ns: u64,
    orig_len: u32,
    link_type: u32,
    interface: u32,
    /// The packet's `opt_comment` (start and length in the buffer), pcapng only.
    comment: Option<(usize, usize)>,
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
    policy: LinkPolicy,
    next_index: u64,
    done: bool,
    /// The frame the last [`PcapReader::next_frame`] returned.
    last: Option<Loc>,
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
    /// Opens a capture file and reads its header; Ethernet frames only
    /// ([`LinkPolicy::EthernetOnly`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, PcapError> {
        Self::open_with(path, LinkPolicy::EthernetOnly)
    }

    /// Opens a capture file whose frames may be of the link types `policy` allows.
    pub fn open_with(path: impl AsRef<Path>, policy: LinkPolicy) -> Result<Self, PcapError> {
        let path = path.as_ref();
        // A regular file only: a FIFO would block the open, a device never ends.
        let file = crate::fsutil::open_regular(path, "pcap", crate::fsutil::UNBOUNDED)
            .map_err(io_err(path, 0))?;
        Self::from_reader_with(file, path, policy)
    }
}

impl<R: Read> PcapReader<R> {
    /// Wraps any reader (no need for a `BufReader`: the reader buffers itself); `name`
    /// is what errors call the input. Ethernet frames only ([`LinkPolicy::EthernetOnly`]).
    pub fn from_reader(reader: R, name: impl Into<PathBuf>) -> Result<Self, PcapError> {
        Self::from_reader_with(reader, name, LinkPolicy::EthernetOnly)
    }

    /// Like [`PcapReader::from_reader`], with frames of the link types `policy` allows.
    /// A classic file of another link type fails here; a pcapng interface of another
    /// link type fails at its first packet (interfaces nobody captured on are fine).
    pub fn from_reader_with(
        reader: R,
        name: impl Into<PathBuf>,
        policy: LinkPolicy,
    ) -> Result<Self, PcapError> {
        let mut r = PcapReader {
            src: Source::new(reader),
            path: name.into(),
            format: PcapFormat::Pcap,
            classic: Classic::default(),
            ng: Ng::default(),
            policy,
            next_index: 0,
            done: false,
            last: None,
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
        r.read_classic_header(le, magic)
    }

    /// The rest of a classic pcap global header after its magic (`le`, read
    /// little-endian): byte order, timestamp units, version, snaplen and link type.
    fn read_classic_header(self, le: u32, magic: [u8; 4]) -> Result<Self, PcapError> {
        let mut r = self;
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
        // libpcap `sf-pcap.c: pcap_check_header` reads 2.0..=2.4 and DG/UX's 543.0.
        let lengths = match (major, minor) {
            (2, 0..=2) | (543, 0) => Lengths::Swapped,
            (2, 3) => Lengths::Maybe,
            (2, 4) => Lengths::InOrder,
            _ => {
                return Err(PcapError::Unsupported {
                    path: r.path,
                    what: format!(
                        "pcap version {major}.{minor} (libpcap reads 2.0 to 2.4 and 543.0)"
                    ),
                })
            }
        };
        // The top bits carry an FCS length (pcap-savefile(5): LT_FCS_LENGTH_PRESENT).
        let link_type = lt_field & 0x03ff_ffff;
        if let Some(e) = r.policy.refuse(link_type, &r.path, None) {
            return Err(e);
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
        // libpcap `pcap_adjust_snapshot`: a snaplen of 0 or above INT_MAX means the
        // link type's maximum (ours is MAX_CAPLEN for every link type); the patched
        // format's cooked captures may hold 14 bytes more (`pcap_check_header`).
        let mut snapshot = if snaplen == 0 || snaplen > i32::MAX as u32 {
            MAX_CAPLEN
        } else {
            snaplen
        };
        if rec_len == 24 && link_type == LINKTYPE_ETHERNET {
            snapshot = snapshot.saturating_add(14);
        }
        r.classic = Classic {
            be,
            nanos,
            snapshot,
            rec_len,
            link_type,
            lengths,
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

    /// The file's link type for classic pcap; `None` for pcapng, where every interface
    /// has its own (see [`FrameRef::link_type`]).
    pub fn link_type(&self) -> Option<u32> {
        (self.format == PcapFormat::Pcap).then_some(self.classic.link_type)
    }

    /// Which link types this reader hands out.
    pub fn link_policy(&self) -> LinkPolicy {
        self.policy
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
                self.next_index += 1;
                self.last = Some(loc);
                self.current().map(Ok)
            }
            Ok(None) => {
                self.done = true;
                self.last = None;
                None
            }
            Err(e) => {
                self.done = true;
                self.last = None;
                Some(Err(e))
            }
        }
    }

    /// The frame the last [`PcapReader::next_frame`] returned, again (a caller that
    /// decides after looking at a frame whether to hand it on needs it after the
    /// borrow of that call ended); `None` after the end or an error.
    #[inline]
    pub fn current(&self) -> Option<FrameRef<'_>> {
        let loc = self.last?;
        Some(FrameRef {
            index: self.next_index - 1,
            ts_ns: loc.ts_ns,
            orig_len: loc.orig_len,
            link_type: loc.link_type,
            interface: loc.interface,
            data: &self.src.buf[loc.start..loc.start + loc.len],
            comment: loc.comment.map(|(at, n)| &self.src.buf[at..at + n]),
        })
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
        let (mut caplen, mut orig_len) = (rd32(h, 8, c.be), rd32(h, 12, c.be));
        if c.lengths == Lengths::Swapped || (c.lengths == Lengths::Maybe && caplen > orig_len) {
            (caplen, orig_len) = (orig_len, caplen);
        }
        // libpcap `sf-pcap.c: pcap_next_packet` refuses a caplen above the link type's
        // maximum, but one above the file's snaplen only makes it read the record and
        // hand out its first snaplen bytes (old Solaris bufmod wrote such files).
        if caplen > MAX_CAPLEN {
            return Err(PcapError::CaplenTooLarge {
                path: self.path.clone(),
                offset,
                frame,
                caplen,
                limit: MAX_CAPLEN,
                limit_name: "256 KiB sanity limit",
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
            len: caplen.min(c.snapshot) as usize,
            ts_ns: u64::from(sec) * 1_000_000_000 + sub_ns,
            orig_len,
            link_type: c.link_type,
            interface: 0,
            comment: None,
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
