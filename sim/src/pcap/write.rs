//! Deterministic capture writer: classic pcap (nanosecond magic, one link type) or
//! pcapng (any number of named interfaces of any link types, per-packet comments),
//! always little-endian.
//!
//! Nothing is allocated per packet: each record is written as a fixed header array,
//! the caller's bytes and a small tail array, into the (buffered) output.

use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{PcapError, PcapFormat, LINKTYPE_ETHERNET, MAX_CAPLEN, WRITER_SNAPLEN};

const WRITE_BUF: usize = 256 * 1024;

const NG_SHB: u32 = 0x0a0d_0d0a;
const NG_IDB: u32 = 1;
const NG_EPB: u32 = 6;
const OPT_ENDOFOPT: u16 = 0;
const OPT_COMMENT: u16 = 1;
const OPT_IF_NAME: u16 = 2;
const OPT_IF_TSRESOL: u16 = 9;
/// Longest option value (its length field is 16 bits).
const MAX_OPT_LEN: usize = 0xffff;

/// One interface of the output.
#[derive(Debug, Clone, Copy)]
struct IfaceOut {
    /// Largest frame the interface takes (its snaplen, or [`MAX_CAPLEN`] for 0).
    limit: u32,
}

/// Writes frames to a classic pcap or a pcapng file. Call [`PcapWriter::finish`] to
/// flush and see write errors (dropping flushes too, but ignores them).
///
/// Two ways to start:
///
/// * [`PcapWriter::new`] / [`PcapWriter::with_name`] / [`PcapWriter::create`]: one
///   unnamed Ethernet interface, id 0, already added; [`PcapWriter::write_frame`]
///   writes to it.
/// * [`PcapWriter::begin`] / [`PcapWriter::begin_file`]: no interface yet; add them
///   with [`PcapWriter::add_interface`] and write with [`PcapWriter::write_packet`].
///   Classic pcap holds exactly one interface (its header is written when it is
///   added); pcapng any number, added at any time.
pub struct PcapWriter<W: Write = BufWriter<File>> {
    out: W,
    path: PathBuf,
    format: PcapFormat,
    frames: u64,
    offset: u64,
    ifaces: Vec<IfaceOut>,
}

impl<W: Write> fmt::Debug for PcapWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PcapWriter")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("frames", &self.frames)
            .field("offset", &self.offset)
            .field("interfaces", &self.ifaces.len())
            .finish_non_exhaustive()
    }
}

fn create_file(path: &Path) -> Result<BufWriter<File>, PcapError> {
    let file = File::create(path).map_err(|source| PcapError::Io {
        path: path.to_path_buf(),
        offset: 0,
        source,
    })?;
    Ok(BufWriter::with_capacity(WRITE_BUF, file))
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (truncates) `path` and writes the file header and one Ethernet interface.
    pub fn create(path: impl AsRef<Path>, format: PcapFormat) -> Result<Self, PcapError> {
        let path = path.as_ref();
        Self::with_name(create_file(path)?, format, path)
    }

    /// Creates (truncates) `path` for [`PcapWriter::begin`]-style writing.
    pub fn begin_file(path: impl AsRef<Path>, format: PcapFormat) -> Result<Self, PcapError> {
        let path = path.as_ref();
        Self::begin(create_file(path)?, format, path)
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn clip(s: &str, max: usize) -> &[u8] {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s.as_bytes()[..end]
}

fn pad4(n: usize) -> usize {
    (4 - n % 4) % 4
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header and one unnamed Ethernet interface (snaplen 262144) to
    /// `out` (unbuffered writers should be wrapped in a `BufWriter`); errors call the
    /// output `<output>`.
    pub fn new(out: W, format: PcapFormat) -> Result<Self, PcapError> {
        Self::with_name(out, format, "<output>")
    }

    /// Like [`PcapWriter::new`], naming the output `name` in errors.
    pub fn with_name(
        out: W,
        format: PcapFormat,
        name: impl Into<PathBuf>,
    ) -> Result<Self, PcapError> {
        let mut w = Self::begin(out, format, name)?;
        w.add_interface("", LINKTYPE_ETHERNET, WRITER_SNAPLEN)?;
        Ok(w)
    }

    /// Starts a capture with no interface yet (pcapng: writes the section header;
    /// classic pcap: nothing until [`PcapWriter::add_interface`]). `name` is what errors
    /// call the output.
    pub fn begin(out: W, format: PcapFormat, name: impl Into<PathBuf>) -> Result<Self, PcapError> {
        let mut w = PcapWriter {
            out,
            path: name.into(),
            format,
            frames: 0,
            offset: 0,
            ifaces: Vec::new(),
        };
        if format == PcapFormat::PcapNg {
            // Section header block: version 1.0, no options, section length unknown (-1).
            let mut shb = [0u8; 28];
            shb[0..4].copy_from_slice(&NG_SHB.to_le_bytes());
            shb[4..8].copy_from_slice(&28u32.to_le_bytes());
            shb[8..12].copy_from_slice(&0x1a2b_3c4du32.to_le_bytes());
            shb[12..14].copy_from_slice(&1u16.to_le_bytes());
            shb[16..24].copy_from_slice(&(-1i64).to_le_bytes());
            shb[24..28].copy_from_slice(&28u32.to_le_bytes());
            w.put(&shb)?;
        }
        Ok(w)
    }

    /// Adds an interface and returns its id (0, 1, ... in order). `name` becomes the
    /// pcapng `if_name` (omitted when empty; cut to 65535 bytes); `snaplen` 0 means
    /// 262144. Classic pcap writes its file header here and refuses a second interface.
    pub fn add_interface(
        &mut self,
        name: &str,
        link_type: u32,
        snaplen: u32,
    ) -> Result<u32, PcapError> {
        let id = self.ifaces.len() as u32;
        let snaplen = if snaplen == 0 { MAX_CAPLEN } else { snaplen };
        let limit = snaplen.min(MAX_CAPLEN);
        match self.format {
            PcapFormat::Pcap => {
                if id > 0 {
                    return Err(PcapError::Unsupported {
                        path: self.path.clone(),
                        what: format!(
                            "classic pcap holds one interface, so it cannot also hold \
                             `{name}` (write pcapng)"
                        ),
                    });
                }
                if link_type > 0x03ff_ffff {
                    return Err(self.bad_link_type(link_type, "classic pcap"));
                }
                let mut h = [0u8; 24];
                h[0..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
                h[4..6].copy_from_slice(&2u16.to_le_bytes());
                h[6..8].copy_from_slice(&4u16.to_le_bytes());
                // thiszone and sigfigs stay 0.
                h[16..20].copy_from_slice(&snaplen.to_le_bytes());
                h[20..24].copy_from_slice(&link_type.to_le_bytes());
                self.put(&h)?;
            }
            PcapFormat::PcapNg => {
                let Ok(lt16) = u16::try_from(link_type) else {
                    return Err(self.bad_link_type(link_type, "pcapng"));
                };
                let name = clip(name, MAX_OPT_LEN);
                let name_opt = if name.is_empty() {
                    0
                } else {
                    4 + name.len() + pad4(name.len())
                };
                // Fixed part 16, if_name, if_tsresol (4 + 1 + 3), opt_endofopt 4, trailer 4.
                let blen = (16 + name_opt + 8 + 4 + 4) as u32;
                let mut h = [0u8; 20];
                h[0..4].copy_from_slice(&NG_IDB.to_le_bytes());
                h[4..8].copy_from_slice(&blen.to_le_bytes());
                h[8..10].copy_from_slice(&lt16.to_le_bytes());
                h[12..16].copy_from_slice(&snaplen.to_le_bytes());
                if name.is_empty() {
                    self.put(&h[..16])?;
                } else {
                    h[16..18].copy_from_slice(&OPT_IF_NAME.to_le_bytes());
                    h[18..20].copy_from_slice(&(name.len() as u16).to_le_bytes());
                    self.put(&h)?;
                    self.put(name)?;
                    self.put(&[0; 3][..pad4(name.len())])?;
                }
                let mut t = [0u8; 16];
                t[0..2].copy_from_slice(&OPT_IF_TSRESOL.to_le_bytes());
                t[2..4].copy_from_slice(&1u16.to_le_bytes());
                t[4] = 9;
                t[8..10].copy_from_slice(&OPT_ENDOFOPT.to_le_bytes());
                t[12..16].copy_from_slice(&blen.to_le_bytes());
                self.put(&t)?;
            }
        }
        self.ifaces.push(IfaceOut { limit });
        Ok(id)
    }

    fn bad_link_type(&self, link_type: u32, format: &str) -> PcapError {
        PcapError::Unsupported {
            path: self.path.clone(),
            what: format!("link type {link_type} does not fit {format}'s link type field"),
        }
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), PcapError> {
        self.out.write_all(bytes).map_err(|source| PcapError::Io {
            path: self.path.clone(),
            offset: self.offset,
            source,
        })?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Appends one frame captured whole (caplen = orig_len = `data.len()`) to interface
    /// 0, without a comment.
    #[inline]
    pub fn write_frame(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), PcapError> {
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        self.write_packet(0, ts_ns, data, len, None)
    }

    /// Appends one packet to interface `iface`: `data` is what was captured, `orig_len`
    /// the frame's length on the wire (raised to `data.len()` if smaller: a frame is
    /// never shorter than what was captured of it). `comment` becomes the pcapng
    /// `opt_comment` (cut to 65535 bytes at a character boundary); classic pcap has no
    /// place for it and drops it. Errors: an unknown interface, `data` over the
    /// interface's snaplen, and (classic pcap) a timestamp past its 32-bit seconds,
    /// i.e. after 2106-02-07 (see [`PcapFormat::holds_ts`]).
    pub fn write_packet(
        &mut self,
        iface: u32,
        ts_ns: u64,
        data: &[u8],
        orig_len: u32,
        comment: Option<&str>,
    ) -> Result<(), PcapError> {
        let Some(i) = self.ifaces.get(iface as usize).copied() else {
            return Err(PcapError::NoSuchInterface {
                path: self.path.clone(),
                frame: self.frames,
                interface: iface,
                count: self.ifaces.len() as u32,
            });
        };
        if data.len() > i.limit as usize {
            return Err(PcapError::FrameTooLarge {
                path: self.path.clone(),
                frame: self.frames,
                len: data.len(),
                snaplen: i.limit,
            });
        }
        let caplen = data.len() as u32;
        let orig_len = orig_len.max(caplen);
        match self.format {
            PcapFormat::Pcap => {
                let Ok(sec) = u32::try_from(ts_ns / 1_000_000_000) else {
                    return Err(PcapError::TimestampOutOfRange {
                        path: self.path.clone(),
                        frame: self.frames,
                        ts_ns,
                    });
                };
                let nsec = (ts_ns % 1_000_000_000) as u32;
                let mut h = [0u8; 16];
                h[0..4].copy_from_slice(&sec.to_le_bytes());
                h[4..8].copy_from_slice(&nsec.to_le_bytes());
                h[8..12].copy_from_slice(&caplen.to_le_bytes());
                h[12..16].copy_from_slice(&orig_len.to_le_bytes());
                self.put(&h)?;
                self.put(data)?;
            }
            PcapFormat::PcapNg => {
                let comment = comment.map_or(&[][..], |c| clip(c, MAX_OPT_LEN));
                let pad = pad4(data.len());
                let opts = if comment.is_empty() {
                    0
                } else {
                    4 + comment.len() + pad4(comment.len()) + 4
                };
                let blen = (28 + data.len() + pad + opts + 4) as u32;
                let mut h = [0u8; 28];
                h[0..4].copy_from_slice(&NG_EPB.to_le_bytes());
                h[4..8].copy_from_slice(&blen.to_le_bytes());
                h[8..12].copy_from_slice(&iface.to_le_bytes());
                h[12..16].copy_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
                h[16..20].copy_from_slice(&(ts_ns as u32).to_le_bytes());
                h[20..24].copy_from_slice(&caplen.to_le_bytes());
                h[24..28].copy_from_slice(&orig_len.to_le_bytes());
                self.put(&h)?;
                self.put(data)?;
                // Data padding, then the comment option's header (if any).
                let mut mid = [0u8; 7];
                let mut n = pad;
                if !comment.is_empty() {
                    mid[n..n + 2].copy_from_slice(&OPT_COMMENT.to_le_bytes());
                    mid[n + 2..n + 4].copy_from_slice(&(comment.len() as u16).to_le_bytes());
                    n += 4;
                }
                self.put(&mid[..n])?;
                // Comment padding and opt_endofopt (if options), then the trailer.
                let mut tail = [0u8; 11];
                let mut n = 0;
                if !comment.is_empty() {
                    self.put(comment)?;
                    n = pad4(comment.len()) + 4;
                }
                tail[n..n + 4].copy_from_slice(&blen.to_le_bytes());
                self.put(&tail[..n + 4])?;
            }
        }
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames_written(&self) -> u64 {
        self.frames
    }

    /// Interfaces added so far.
    pub fn interfaces(&self) -> u32 {
        self.ifaces.len() as u32
    }

    /// The output's format.
    pub fn format(&self) -> PcapFormat {
        self.format
    }

    /// Flushes and returns the underlying writer. A classic pcap to which no interface
    /// was added gets an Ethernet header first, so it is a valid empty capture.
    pub fn finish(mut self) -> Result<W, PcapError> {
        if self.format == PcapFormat::Pcap && self.ifaces.is_empty() {
            self.add_interface("", LINKTYPE_ETHERNET, WRITER_SNAPLEN)?;
        }
        self.out.flush().map_err(|source| PcapError::Io {
            path: self.path.clone(),
            offset: self.offset,
            source,
        })?;
        Ok(self.out)
    }
}
