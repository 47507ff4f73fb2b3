//! The tap of a scenario with `[queues]` (tun-read, tap-write): an IFF_MULTI_QUEUE device in a
//! [`TunHost`], which holds the queue model (drivers/net/tun.c: tun_attach, __tun_detach,
//! tun_select_queue, tun_net_xmit; docs/tun-device.md#queues). This side keeps which input
//! frame waits on which file, so each read names the frame it got. Reads go file by file
//! in opening order, each until its ring is empty. docs/tun-read.md#multiqueue.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::bpf::load_socket_filter;
use crate::errno::Errno;
use crate::profile::KernelProfile;
use crate::scenario::{QueueEvent, QueueOp, QueuePlan, SOCKET_FILTER_SECTION};
use crate::skb::SkBuff;
use crate::tun::device::{SkbProg, TunHost, XmitFate};
use crate::tun::ioctl::iff_flags::{
    IFF_ATTACH_QUEUE, IFF_DETACH_QUEUE, IFF_MULTI_QUEUE, IFF_NAPI, IFF_NAPI_FRAGS, IFF_NO_PI,
    IFF_TAP, IFF_TUN, IFF_VNET_HDR,
};
use crate::tun::ioctl::{cmd, BpfFd, Caller, FileId, IoctlArg, IFNAMSIZ};
use crate::tun::read::ReadOutcome;
use crate::tun::{DeviceKind, TunConfig, TunStats, VnetEndian, XmitDrop, DEFAULT_VNET_HDR_SZ};

/// The device's name in the model (the real arm's is its own).
pub(super) const DEV: &[u8] = b"skbdut";

/// What a `[queues]` event did: the frames a detach purged, a write's answer.
pub(super) struct QueueDone {
    pub purged: Vec<u64>,
    pub written: Option<Result<usize, Errno>>,
}

/// Where tun_net_xmit put a frame.
pub(super) enum MqXmit {
    Queued,
    /// Dropped by tun_net_xmit with tx_dropped, for this reason.
    Dropped(XmitDrop),
}

/// The multiqueue tap and the frames on each file's ring.
#[derive(Debug)]
pub(super) struct MqTap {
    pub(super) host: TunHost,
    pub(super) files: Vec<FileId>,
    /// (input index, timestamp) of the frames on each file's ring, in ring order.
    queued: Vec<VecDeque<(u64, u64)>>,
}

fn ifreq(name: &[u8], flags: u16) -> IoctlArg {
    let mut n = [0u8; IFNAMSIZ];
    n[..name.len()].copy_from_slice(name);
    IoctlArg::Ifreq { name: n, flags }
}

impl MqTap {
    /// Open `plan.count` files on one IFF_MULTI_QUEUE device configured as `dev`
    /// (TUNSETIFF on each: tun_set_iff attaches every file as the next queue), the
    /// per-device settings by their ioctls, and the device up.
    pub(super) fn new(
        profile: &KernelProfile,
        dev: &TunConfig,
        plan: &QueuePlan,
    ) -> Result<MqTap, String> {
        let mut host = TunHost::new(profile, Caller::root());
        let mut flags = IFF_MULTI_QUEUE
            | match dev.kind {
                DeviceKind::Tap => IFF_TAP,
                DeviceKind::Tun => IFF_TUN,
            };
        for (on, bit) in [
            (dev.no_pi, IFF_NO_PI),
            (dev.vnet_hdr, IFF_VNET_HDR),
            (dev.napi || dev.napi_frags, IFF_NAPI),
            (dev.napi_frags, IFF_NAPI_FRAGS),
        ] {
            if on {
                flags |= bit;
            }
        }
        let mut files = Vec::new();
        for i in 0..plan.count {
            let f = host.open(true);
            host.ioctl(f, cmd::TUNSETIFF, &ifreq(DEV, flags))
                .map_err(|e| format!("[queues]: TUNSETIFF of file {i} answers {}", e.name()))?;
            files.push(f);
        }
        let f0 = files[0];
        let mut set = |c: u32, arg: IoctlArg, what: &str| {
            host.ioctl(f0, c, &arg)
                .map(|_| ())
                .map_err(|e| format!("[queues]: {what} answers {}", e.name()))
        };
        if dev.vnet_hdr && dev.vnet_hdr_sz != DEFAULT_VNET_HDR_SZ {
            let sz = i32::try_from(dev.vnet_hdr_sz).unwrap_or(i32::MAX);
            set(cmd::TUNSETVNETHDRSZ, IoctlArg::Int(sz), "TUNSETVNETHDRSZ")?;
        }
        if dev.vnet_endian == VnetEndian::Big {
            set(cmd::TUNSETVNETBE, IoctlArg::Int(1), "TUNSETVNETBE")?;
        }
        if dev.sndbuf_set {
            // Any value but the default turns build_skb (and so native XDP) off; the real
            // arm's is INT_MAX - 1 (tun_set_sndbuf: every attached queue's socket).
            set(
                cmd::TUNSETSNDBUF,
                IoctlArg::Int(i32::MAX - 1),
                "TUNSETSNDBUF",
            )?;
        }
        let bits = dev.offloads.tun_f_bits();
        if bits != 0 {
            set(cmd::TUNSETOFFLOAD, IoctlArg::Value(bits), "TUNSETOFFLOAD")?;
        }
        for (path, c, what) in [
            (
                &plan.steering,
                cmd::TUNSETSTEERINGEBPF,
                "TUNSETSTEERINGEBPF",
            ),
            (&plan.filter, cmd::TUNSETFILTEREBPF, "TUNSETFILTEREBPF"),
        ] {
            let Some(path) = path else { continue };
            let prog = load_socket_filter(path, SOCKET_FILTER_SECTION)?;
            let fd = IoctlArg::BpfFd(BpfFd::Prog {
                socket_filter: true,
            });
            host.ioctl(f0, c, &fd)
                .map_err(|e| format!("[queues]: {what} answers {}", e.name()))?;
            let prog = Some(SkbProg::Bpf(Arc::new(prog)));
            if c == cmd::TUNSETSTEERINGEBPF {
                host.set_steering(DEV, prog)
            } else {
                host.set_filter(DEV, prog)
            }
            .map_err(|e| format!("[queues]: {what} answers {}", e.name()))?;
        }
        host.set_link(DEV, Some(dev.up), None)
            .map_err(|e| format!("[queues]: link up answers {}", e.name()))?;
        // What no ioctl sets (tx_queue_len, the VLAN insert features, the MTU) as the
        // single-queue device has it.
        host.set_device_config(DEV, dev);
        Ok(MqTap {
            host,
            queued: vec![VecDeque::new(); files.len()],
            files,
        })
    }

    pub(super) fn stats(&self) -> TunStats {
        self.host.stats(DEV).unwrap_or_default()
    }

    pub(super) fn files(&self) -> usize {
        self.files.len()
    }

    /// The event on its file: TUNSETQUEUE, whose detach purges the file's ring
    /// (__tun_detach -> tun_queue_purge: the frames on it, returned), or a write.
    pub(super) fn queue_event(&mut self, e: &QueueEvent) -> Result<QueueDone, String> {
        let flags = match (e.op, &e.data) {
            (QueueOp::Attach, _) => IFF_ATTACH_QUEUE,
            (QueueOp::Detach, _) => IFF_DETACH_QUEUE,
            (QueueOp::Write, data) => {
                let written = self.write(e.file, data.as_deref().unwrap_or_default());
                return Ok(QueueDone {
                    purged: Vec::new(),
                    written: Some(written),
                });
            }
        };
        self.host
            .ioctl(self.files[e.file], cmd::TUNSETQUEUE, &ifreq(b"", flags))
            .map_err(|err| {
                format!(
                    "[queues]: {} of file {} before frame {} answers {} (tun_set_queue)",
                    e.op.name(),
                    e.file,
                    e.before_frame,
                    err.name()
                )
            })?;
        let mut purged = Vec::new();
        if self.host.queued(self.files[e.file]) == 0 {
            purged = self.queued[e.file].drain(..).map(|(i, _)| i).collect();
        }
        Ok(QueueDone {
            purged,
            written: None,
        })
    }

    /// write(2) on `file`: tun_chr_write_iter -> tun_get_user, the device model's write
    /// path, which ends with tun_flow_update when it computed an rxhash (more than one
    /// queue, no steering program, the file not detached; docs/tun-read.md#automq-learned).
    /// What the write handed to the stack goes nowhere: the scenario's far side only
    /// sends (the real arm's bridge forwards it away from the tap).
    fn write(&mut self, file: usize, data: &[u8]) -> Result<usize, Errno> {
        let r = self.host.write(self.files[file], data);
        self.host.take_received();
        r
    }

    /// dev_queue_xmit of frame `index`: the queue tun_select_queue picks, tun_net_xmit.
    pub(super) fn xmit(&mut self, index: u64, ts_ns: u64, skb: SkBuff) -> Result<MqXmit, String> {
        match self.host.xmit(DEV, skb) {
            XmitFate::Queued { queue } => {
                let f = self.host.file_at(DEV, usize::from(queue));
                let file = self.files.iter().position(|&x| Some(x) == f);
                let file = file.expect("a queued skb is on an attached file");
                self.queued[file].push_back((index, ts_ns));
                Ok(MqXmit::Queued)
            }
            XmitFate::Dropped { reason, .. } => Ok(MqXmit::Dropped(reason)),
            XmitFate::DeviceDown => Err(format!(
                "frame {index}: a down multiqueue tap: the noop qdisc drops it, which the trace does not show"
            )),
            XmitFate::NoDevice => Err("[queues]: the device is gone".into()),
            XmitFate::Unmodelled(why) => Err(format!("frame {index}: {why} is not modelled")),
            XmitFate::ProgFault(why) => Err(format!("frame {index}: {why}")),
        }
    }

    /// Whether `file` has a frame on its ring.
    pub(super) fn has_queued(&self, file: usize) -> bool {
        self.host.queued(self.files[file]) > 0
    }

    /// read(2) on `file` into `buf`: what the read did (Err: no frame touched), and the
    /// frame it dequeued.
    pub(super) fn read(
        &mut self,
        file: usize,
        buf: &mut [u8],
    ) -> (Result<ReadOutcome, Errno>, Option<(u64, u64)>) {
        let f = self.files[file];
        let before = self.host.queued(f);
        let r = self.host.read_into(f, buf);
        let frame = if self.host.queued(f) < before {
            self.queued[file].pop_front()
        } else {
            None
        };
        (r, frame)
    }
}
