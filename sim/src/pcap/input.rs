//! A scenario's input as Ethernet frames, whatever link type the capture has: cooked,
//! raw IP and loopback captures are turned into Ethernet frames by
//! [`super::linktype::to_ethernet`] as they stream by. Both arms read their input
//! through this, so the simulator and the real kernel see the same frames.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::linktype::{to_ethernet, EthSynth, LINKTYPE_ETHERNET};
use super::read::{FrameRef, LinkPolicy, PcapReader};
use super::PcapError;

/// Streams a capture's frames as Ethernet frames.
#[derive(Debug)]
pub struct EthernetInput {
    reader: PcapReader<File>,
    synth: EthSynth,
    buf: Vec<u8>,
    path: PathBuf,
}

impl EthernetInput {
    /// Open `path`; `synth` gives the MACs of a synthesized Ethernet header.
    pub fn open(path: &Path, synth: EthSynth) -> Result<EthernetInput, PcapError> {
        Ok(EthernetInput {
            reader: PcapReader::open_with(path, LinkPolicy::Supported)?,
            synth,
            buf: Vec::with_capacity(2048),
            path: path.to_path_buf(),
        })
    }

    /// The next frame, as an Ethernet frame (borrowed until the next call).
    #[inline]
    pub fn next_frame(&mut self) -> Option<Result<FrameRef<'_>, PcapError>> {
        let f = match self.reader.next_frame()? {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        if f.link_type == LINKTYPE_ETHERNET {
            return Some(Ok(f));
        }
        let index = f.index;
        match to_ethernet(f.link_type, f.data, f.orig_len, &self.synth, &mut self.buf) {
            Ok(e) => Some(Ok(FrameRef {
                index,
                ts_ns: f.ts_ns,
                orig_len: e.orig_len(f.orig_len),
                data: e.data,
                link_type: LINKTYPE_ETHERNET,
                interface: f.interface,
                comment: f.comment,
            })),
            Err(e) => Some(Err(PcapError::convert(&self.path, index, e))),
        }
    }

    /// Every frame, owned (the real arms, which hold a scenario's frames).
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
