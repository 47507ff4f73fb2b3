//! A scenario's input as Ethernet frames, whatever link type the capture has: cooked,
//! raw IP and loopback captures are turned into Ethernet frames by
//! [`super::linktype::to_ethernet`] as they stream by. Both arms read their input
//! through this, so the simulator and the real kernel see the same frames. Frames that
//! carry nothing to replay (802.11 management frames, PPP control protocols, ...; see
//! [`SkipReason`](super::SkipReason)) are passed over and counted ([`EthernetInput::skipped`]).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::linktype::{to_ethernet, EthSynth, SkipCounts, LINKTYPE_ETHERNET};
use super::read::{FrameRef, LinkPolicy, PcapReader};
use super::PcapError;

/// Streams a capture's frames as Ethernet frames.
#[derive(Debug)]
pub struct EthernetInput {
    reader: PcapReader<File>,
    synth: EthSynth,
    buf: Vec<u8>,
    path: PathBuf,
    skipped: SkipCounts,
}

/// What became of one record, owned so the reader can be borrowed again.
enum Step {
    /// An Ethernet frame, handed on as captured ([`PcapReader::current`]).
    Pass,
    /// Converted into `buf`; the converted frame's wire length.
    Converted(u32),
    Skipped,
}

impl EthernetInput {
    /// Open `path`; `synth` gives the MACs of a synthesized Ethernet header.
    pub fn open(path: &Path, synth: EthSynth) -> Result<EthernetInput, PcapError> {
        Ok(EthernetInput {
            reader: PcapReader::open_with(path, LinkPolicy::Supported)?,
            synth,
            buf: Vec::with_capacity(2048),
            path: path.to_path_buf(),
            skipped: SkipCounts::default(),
        })
    }

    /// The frames passed over so far, by reason.
    pub fn skipped(&self) -> &SkipCounts {
        &self.skipped
    }

    /// The next frame, as an Ethernet frame (borrowed until the next call).
    #[inline]
    pub fn next_frame(&mut self) -> Option<Result<FrameRef<'_>, PcapError>> {
        loop {
            let step = match self.reader.next_frame()? {
                Err(e) => return Some(Err(e)),
                Ok(f) if f.link_type == LINKTYPE_ETHERNET => Step::Pass,
                Ok(f) => {
                    match to_ethernet(f.link_type, f.data, f.orig_len, &self.synth, &mut self.buf) {
                        Ok(e) => Step::Converted(e.orig_len(f.orig_len)),
                        Err(e) => match e.skip_reason() {
                            Some(reason) => {
                                self.skipped.add(reason);
                                Step::Skipped
                            }
                            None => return Some(Err(PcapError::convert(&self.path, f.index, e))),
                        },
                    }
                }
            };
            if let Step::Skipped = step {
                continue;
            }
            let f = self.reader.current()?;
            return match step {
                Step::Skipped | Step::Pass => Some(Ok(f)),
                Step::Converted(orig_len) => Some(Ok(FrameRef {
                    orig_len,
                    data: &self.buf,
                    link_type: LINKTYPE_ETHERNET,
                    ..f
                })),
            };
        }
    }

    /// Every frame, owned (the real arms, which hold a scenario's frames); skipped
    /// frames are left out.
    pub fn read_all(path: &Path, synth: EthSynth) -> Result<Vec<(u64, u64, Vec<u8>)>, PcapError> {
        let mut r = EthernetInput::open(path, synth)?;
        let mut out = Vec::new();
        while let Some(f) = r.next_frame() {
            let f = f?;
            out.push((f.index, f.ts_ns, f.data.to_vec()));
        }
        Ok(out)
    }
}
