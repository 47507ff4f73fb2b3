//! Deterministic capture writer: classic pcap (nanosecond magic) or pcapng, always
//! little-endian, Ethernet, snaplen 262144.

use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{PcapError, PcapFormat, LINKTYPE_ETHERNET, MAX_CAPLEN, WRITER_SNAPLEN};

const WRITE_BUF: usize = 256 * 1024;

/// Writes frames to a classic pcap or a pcapng file. Call [`PcapWriter::finish`] to
/// flush and see write errors (dropping flushes too, but ignores them).
pub struct PcapWriter<W: Write = BufWriter<File>> {
    out: W,
    path: PathBuf,
    format: PcapFormat,
    frames: u64,
    offset: u64,
}

impl<W: Write> fmt::Debug for PcapWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PcapWriter")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("frames", &self.frames)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (truncates) `path` and writes the file header.
    pub fn create(path: impl AsRef<Path>, format: PcapFormat) -> Result<Self, PcapError> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|source| PcapError::Io {
            path: path.to_path_buf(),
            offset: 0,
            source,
        })?;
        Self::with_name(BufWriter::with_capacity(WRITE_BUF, file), format, path)
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header to `out` (unbuffered writers should be wrapped in a
    /// `BufWriter`); errors call the output `<output>`.
    pub fn new(out: W, format: PcapFormat) -> Result<Self, PcapError> {
        Self::with_name(out, format, "<output>")
    }

    /// Like [`PcapWriter::new`], naming the output `name` in errors.
    pub fn with_name(
        out: W,
        format: PcapFormat,
        name: impl Into<PathBuf>,
    ) -> Result<Self, PcapError> {
        let mut w = PcapWriter {
            out,
            path: name.into(),
            format,
            frames: 0,
            offset: 0,
        };
        match format {
            PcapFormat::Pcap => {
                let mut h = [0u8; 24];
                h[0..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
                h[4..6].copy_from_slice(&2u16.to_le_bytes());
                h[6..8].copy_from_slice(&4u16.to_le_bytes());
                // thiszone and sigfigs stay 0.
                h[16..20].copy_from_slice(&WRITER_SNAPLEN.to_le_bytes());
                h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
                w.put(&h)?;
            }
            PcapFormat::PcapNg => {
                let mut shb = Vec::with_capacity(28 + 32);
                // Section header block: no options, section length unknown (-1).
                for v in [0x0a0d_0d0au32, 28, 0x1a2b_3c4d] {
                    shb.extend_from_slice(&v.to_le_bytes());
                }
                shb.extend_from_slice(&1u16.to_le_bytes());
                shb.extend_from_slice(&0u16.to_le_bytes());
                shb.extend_from_slice(&(-1i64).to_le_bytes());
                shb.extend_from_slice(&28u32.to_le_bytes());
                // Interface description block: Ethernet, if_tsresol = 9, opt_endofopt.
                for v in [1u32, 32, LINKTYPE_ETHERNET, WRITER_SNAPLEN] {
                    shb.extend_from_slice(&v.to_le_bytes());
                }
                shb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
                shb.extend_from_slice(&32u32.to_le_bytes());
                w.put(&shb)?;
            }
        }
        Ok(w)
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

    /// Appends one Ethernet frame captured whole (caplen = orig_len = `data.len()`).
    #[inline]
    pub fn write_frame(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), PcapError> {
        if data.len() > MAX_CAPLEN as usize {
            return Err(PcapError::FrameTooLarge {
                path: self.path.clone(),
                frame: self.frames,
                len: data.len(),
            });
        }
        let len = data.len() as u32;
        match self.format {
            PcapFormat::Pcap => {
                let sec = ts_ns / 1_000_000_000;
                let Ok(sec) = u32::try_from(sec) else {
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
                h[8..12].copy_from_slice(&len.to_le_bytes());
                h[12..16].copy_from_slice(&len.to_le_bytes());
                self.put(&h)?;
                self.put(data)?;
            }
            PcapFormat::PcapNg => {
                let pad = (4 - data.len() % 4) % 4;
                let blen = 32 + len + pad as u32;
                let mut h = [0u8; 28];
                h[0..4].copy_from_slice(&6u32.to_le_bytes());
                h[4..8].copy_from_slice(&blen.to_le_bytes());
                // h[8..12]: interface 0.
                h[12..16].copy_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
                h[16..20].copy_from_slice(&(ts_ns as u32).to_le_bytes());
                h[20..24].copy_from_slice(&len.to_le_bytes());
                h[24..28].copy_from_slice(&len.to_le_bytes());
                self.put(&h)?;
                self.put(data)?;
                let mut tail = [0u8; 7];
                tail[pad..pad + 4].copy_from_slice(&blen.to_le_bytes());
                self.put(&tail[..pad + 4])?;
            }
        }
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames_written(&self) -> u64 {
        self.frames
    }

    /// The output's format.
    pub fn format(&self) -> PcapFormat {
        self.format
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, PcapError> {
        self.out.flush().map_err(|source| PcapError::Io {
            path: self.path.clone(),
            offset: self.offset,
            source,
        })?;
        Ok(self.out)
    }
}
