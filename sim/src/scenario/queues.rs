//! `[queues]` (tun-read, tap-write): the tap under test is an IFF_MULTI_QUEUE device with
//! several files, and queues are detached and attached again between frames
//! (TUNSETQUEUE). tun-read reads the files (docs/tun-read.md#multiqueue); tap-write
//! writes each frame on the file `write_on` names and reads every file
//! (docs/tap-write.md#multiqueue).
//!
//! ```toml
//! [queues]
//! count = 3               # files opened with IFF_MULTI_QUEUE, attached in order
//!                         # (file N starts at queue index N); 1 ..= MAX_TAP_QUEUES (256)
//! steering = "../sockfilter/sock_steer_l4.o"  # optional: TUNSETSTEERINGEBPF, section "socket"
//! filter = "../sockfilter/sock_filter_udp.o"  # optional: TUNSETFILTEREBPF, section "socket"
//! write_on = [0, 1]       # tap-write: frame i is written on file write_on[i % len]
//!                         # (default [0]); a detached file's write still goes through
//! [[queues.event]]        # before frame `before_frame` is transmitted
//! before_frame = 2
//! file = 0
//! op = "detach"           # detach | attach (TUNSETQUEUE IFF_DETACH_QUEUE / IFF_ATTACH_QUEUE)
//! [[queues.event]]        # write(2) on file 1: the bytes, hex, as the fd takes them
//! before_frame = 0        # (tun_pi / vnet header first if the device has them); the
//! file = 1                # automq flow table learns the flow (tun_get_user ->
//! op = "write"            # tun_flow_update; docs/tun-read.md#automq-learned)
//! data = "0200000000010200000000020800..."
//! ```
//!
//! The programs are BPF_PROG_TYPE_SOCKET_FILTER objects (clang -target bpf, `SEC("socket")`,
//! no maps), resolved against the scenario's directory, attached after the files are
//! opened and before the first frame (docs/tun-read.md#multiqueue).

use std::path::PathBuf;

use serde::Deserialize;

use super::file::Check;
use super::limits::in_range;
use crate::tun::ioctl::MAX_TAP_QUEUES;

/// The tap's files and the TUNSETQUEUE calls between frames.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuePlan {
    /// Files opened with IFF_MULTI_QUEUE on the one device, each attached at creation.
    pub count: usize,
    #[serde(default, rename = "event")]
    pub events: Vec<QueueEvent>,
    /// TUNSETSTEERINGEBPF's program (tun_ebpf_select_queue picks the queue).
    #[serde(default)]
    pub steering: Option<PathBuf>,
    /// TUNSETFILTEREBPF's program (tun_net_xmit: run_ebpf_filter).
    #[serde(default)]
    pub filter: Option<PathBuf>,
    /// tap-write: the file each input frame is written on, by input index modulo the
    /// length (empty: file 0).
    #[serde(default)]
    pub write_on: Vec<usize>,
}

/// The ELF section the steering and filter programs are read from.
pub const SOCKET_FILTER_SECTION: &str = "socket";

/// One TUNSETQUEUE call or write(2) on a file, before a frame is transmitted.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueEvent {
    /// The input index of the frame the call comes before.
    pub before_frame: u64,
    /// The file, by opening order (0 ..count).
    pub file: usize,
    pub op: QueueOp,
    /// `op = "write"`: the bytes written, given as hex in the file.
    #[serde(default, deserialize_with = "hex_bytes")]
    pub data: Option<Vec<u8>>,
}

/// `data = "02 00 ..."`: hex digit pairs, spaces and colons between them allowed.
fn hex_bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
    let s = String::deserialize(d)?;
    crate::text::unhex(&s)
        .map(Some)
        .map_err(|e| serde::de::Error::custom(format!("data: {e}")))
}

/// TUNSETQUEUE's ifr_flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueOp {
    /// IFF_ATTACH_QUEUE: tun_attach of a detached file (EINVAL if it is attached).
    Attach,
    /// IFF_DETACH_QUEUE: __tun_detach(tfile, false) (EINVAL if it is not attached).
    Detach,
    /// write(2) of `data` on the file: tun_chr_write_iter -> tun_get_user, which
    /// teaches the automq flow table the frame's flow (tun_flow_update).
    Write,
}

impl QueueOp {
    pub fn name(self) -> &'static str {
        match self {
            QueueOp::Attach => "attach",
            QueueOp::Detach => "detach",
            QueueOp::Write => "write",
        }
    }
}

impl QueuePlan {
    /// tap-write: the file input frame `index` is written on.
    pub fn write_file(&self, index: u64) -> usize {
        match self.write_on.len() {
            0 => 0,
            n => self.write_on[(index % n as u64) as usize],
        }
    }

    /// The calls that come before frame `index`, in the order listed.
    pub fn before(&self, index: u64) -> impl Iterator<Item = &QueueEvent> {
        self.events.iter().filter(move |e| e.before_frame == index)
    }
}

/// `[queues]`: the count within tun's limit, each event's file one of them, events in
/// frame order.
impl Check for QueuePlan {
    fn check(&self) -> Result<(), String> {
        in_range(
            "count",
            self.count as u64,
            (1, MAX_TAP_QUEUES as u64),
            "tun_set_iff/tun_attach refuse more than MAX_TAP_QUEUES files with E2BIG",
        )?;
        if let Some((i, f)) = self
            .write_on
            .iter()
            .enumerate()
            .find(|(_, &f)| f >= self.count)
        {
            return Err(format!(
                "write_on[{i}]: {f} is not one of the {} files (0 ..{})",
                self.count, self.count
            ));
        }
        let mut last = 0;
        for (i, e) in self.events.iter().enumerate() {
            if e.file >= self.count {
                return Err(format!(
                    "event[{i}].file: {} is not one of the {} files (0 ..{})",
                    e.file, self.count, self.count
                ));
            }
            if e.before_frame < last {
                return Err(format!(
                    "event[{i}].before_frame: {} comes after {last}; list the events in frame order",
                    e.before_frame
                ));
            }
            last = e.before_frame;
            match (e.op, &e.data) {
                (QueueOp::Write, None) => {
                    return Err(format!("event[{i}]: op = \"write\" needs data (hex)"))
                }
                (QueueOp::Write, Some(d)) if d.is_empty() => {
                    return Err(format!("event[{i}].data: empty; write(2) of 0 bytes"))
                }
                (QueueOp::Attach | QueueOp::Detach, Some(_)) => {
                    return Err(format!(
                        "event[{i}].data: only op = \"write\" takes data, not \"{}\"",
                        e.op.name()
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }
}
