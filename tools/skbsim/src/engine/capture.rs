//! The output capture sink: what userspace read or the stack received, written as it
//! arrives, or compared frame by frame with a golden capture.

use std::fs::File;
use std::path::{Path, PathBuf};

use sim::pcap::{LinkPolicy, PcapFormat, PcapReader, PcapWriter};
use sim::wire::summary::describe;

use super::Dest;
use crate::cli_error::CliError;

/// A place a scenario observes frames: the tap fd's reads, the stack (AF_PACKET on the
/// tap), a redirect target's reads. Each is a named interface of a pcapng output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub name: &'static str,
    pub link_type: u32,
}

impl Point {
    /// The link type of what `device` carries: raw IP for an IFF_TUN device.
    pub fn for_device(name: &'static str, device: &sim::tun::TunConfig) -> Point {
        let link_type = match device.kind {
            sim::tun::DeviceKind::Tun => sim::pcap::linktype::LINKTYPE_RAW,
            sim::tun::DeviceKind::Tap => sim::pcap::LINKTYPE_ETHERNET,
        };
        Point { name, link_type }
    }
}

/// The golden capture being compared with, one frame at a time.
#[derive(Debug)]
pub struct GoldenCapture {
    path: PathBuf,
    reader: PcapReader<File>,
    frame: u64,
    divergence: Option<String>,
}

impl GoldenCapture {
    pub fn open(path: &Path) -> Result<GoldenCapture, CliError> {
        Ok(GoldenCapture {
            path: path.to_path_buf(),
            reader: PcapReader::open_with(path, LinkPolicy::Any)?,
            frame: 0,
            divergence: None,
        })
    }

    /// The golden's layout must be the one the replay writes.
    fn begin(&mut self, format: PcapFormat, points: &[Point]) {
        if self.reader.format() != format {
            self.divergence = Some(format!(
                "the golden is {}, the replay writes {format} ({} observation points)",
                self.reader.format(),
                points.len()
            ));
        } else if format == PcapFormat::Pcap
            && self.reader.link_type() != points.first().map(|p| p.link_type)
        {
            self.divergence = Some(format!(
                "link types differ: {:?} vs {:?}",
                self.reader.link_type(),
                points.first().map(|p| p.link_type)
            ));
        }
    }

    fn frame(&mut self, point: u32, ts_ns: u64, data: &[u8]) -> Result<(), CliError> {
        if self.divergence.is_some() {
            return Ok(());
        }
        let i = self.frame;
        self.frame += 1;
        let Some(g) = self.reader.next_frame() else {
            self.divergence = Some(format!(
                "frame counts differ: {} vs more than {i} (frame {i} is new: {})",
                i,
                describe(data)
            ));
            return Ok(());
        };
        let g = g?;
        if g.interface != point {
            self.divergence = Some(format!(
                "frame {i} was seen on interface {} in the golden, on {point} now ({})",
                g.interface,
                describe(data)
            ));
        } else if g.data != data {
            let off = g
                .data
                .iter()
                .zip(data.iter())
                .position(|(p, q)| p != q)
                .unwrap_or(g.data.len().min(data.len()));
            let byte = |d: &[u8]| {
                d.get(off)
                    .map(|v| format!("{v:#04x}"))
                    .unwrap_or_else(|| "end of frame".into())
            };
            self.divergence = Some(format!(
                "first difference in frame {i} at byte {off}: {} vs {} (lengths {} and {})\n  - {}\n  + {}",
                byte(g.data),
                byte(data),
                g.data.len(),
                data.len(),
                describe(g.data),
                describe(data)
            ));
        } else if g.ts_ns != ts_ns {
            self.divergence = Some(format!(
                "first difference in frame {i}: timestamp {} ns vs {ts_ns} ns",
                g.ts_ns
            ));
        }
        Ok(())
    }

    fn finish(mut self) -> Result<CaptureVerdict, CliError> {
        if self.divergence.is_none() {
            if let Some(g) = self.reader.next_frame() {
                g?;
                let mut n = self.frame + 1;
                while let Some(g) = self.reader.next_frame() {
                    g?;
                    n += 1;
                }
                self.divergence = Some(format!("frame counts differ: {n} vs {}", self.frame));
            }
        }
        Ok(CaptureVerdict {
            path: self.path,
            divergence: self.divergence,
        })
    }
}

/// How the capture compared with its golden.
#[derive(Debug)]
pub struct CaptureVerdict {
    pub path: PathBuf,
    pub divergence: Option<String>,
}

/// The capture sink.
#[derive(Debug, Default)]
pub struct CaptureOut {
    writer: Option<PcapWriter<Dest>>,
    golden: Option<GoldenCapture>,
    /// A destination whose header is not written yet, and the format asked for (pcapng
    /// for a `.pcapng` name or a pcapng input).
    pending: Option<(Dest, PcapFormat)>,
    /// The format once begun: pcapng when the pipeline has more than one point.
    format: Option<PcapFormat>,
    /// The skb metadata comments are wanted (pcapng output).
    pub comments: bool,
}

impl CaptureOut {
    pub fn off() -> CaptureOut {
        CaptureOut::default()
    }

    /// Write to `dest`: classic pcap for a pipeline with one observation point, unless
    /// `format` asks for pcapng.
    pub fn to(dest: Dest, format: PcapFormat) -> CaptureOut {
        CaptureOut {
            pending: Some((dest, format)),
            ..CaptureOut::default()
        }
    }

    pub fn compare(golden: GoldenCapture) -> CaptureOut {
        CaptureOut {
            golden: Some(golden),
            ..CaptureOut::default()
        }
    }

    pub fn on(&self) -> bool {
        self.writer.is_some() || self.pending.is_some() || self.golden.is_some()
    }

    /// The pipeline's observation points, in order (interface ids 0, 1, ...).
    pub fn begin(&mut self, points: &[Point]) -> Result<(), CliError> {
        let asked = self.pending.as_ref().map_or(PcapFormat::Pcap, |p| p.1);
        let format = if points.len() > 1 {
            PcapFormat::PcapNg
        } else {
            asked
        };
        self.format = Some(format);
        if let Some((dest, _)) = self.pending.take() {
            let name = dest.name().to_path_buf();
            let mut w = PcapWriter::begin(dest, format, name)?;
            for p in points {
                w.add_interface(p.name, p.link_type, sim::pcap::WRITER_SNAPLEN)?;
            }
            self.comments = format == PcapFormat::PcapNg;
            self.writer = Some(w);
        }
        if let Some(g) = self.golden.as_mut() {
            g.begin(format, points);
        }
        Ok(())
    }

    /// One frame seen at point `point` (its index in [`CaptureOut::begin`]'s list);
    /// `orig_len` is its length before a short read cut it; `comment` the skb metadata
    /// (written to pcapng only: check [`CaptureOut::comments`] before building one).
    #[inline]
    pub fn frame(
        &mut self,
        point: u32,
        ts_ns: u64,
        data: &[u8],
        orig_len: usize,
        comment: Option<&str>,
    ) -> Result<(), CliError> {
        if let Some(w) = self.writer.as_mut() {
            let orig = u32::try_from(orig_len.max(data.len())).unwrap_or(u32::MAX);
            let comment = comment.filter(|c| !c.is_empty());
            w.write_packet(point, ts_ns, data, orig, comment)?;
        }
        if let Some(g) = self.golden.as_mut() {
            g.frame(point, ts_ns, data)?;
        }
        Ok(())
    }

    /// The end: memory's bytes and the golden verdict.
    pub fn finish(mut self) -> Result<(Vec<u8>, Option<CaptureVerdict>), CliError> {
        if self.format.is_none() && (self.pending.is_some() || self.golden.is_some()) {
            // A pipeline that never began (an error before its first event): one
            // Ethernet point, as before.
            self.begin(&[Point {
                name: "stack",
                link_type: sim::pcap::LINKTYPE_ETHERNET,
            }])?;
        }
        let bytes = match self.writer {
            Some(w) => w.finish()?.finish()?,
            None => Vec::new(),
        };
        let verdict = self.golden.map(GoldenCapture::finish).transpose()?;
        Ok((bytes, verdict))
    }
}
