//! The `tap-write` pipeline: each input frame is written by userspace into tap A
//! (ifindex 2) with the scenario's PI/vnet framing and blocking mode, through the
//! attached XDP program if any; after each write the reader drains A's fd (XDP_TX
//! frames come back there) and, when there is one, the redirect target B's (ifindex 3).
//! What the stack received is recorded as AF_PACKET on A sees it.
//!
//! Devmap convention: every DEVMAP/DEVMAP_HASH map of the program gets key 0 = B's
//! ifindex, so a `bpf_redirect_map(&map, 0, 0)` program sends to B in both arms.

use crate::bpf::{assemble, load_elf_file, BasicEnv, Maps, Program};
use crate::consts::TUN_PI_LEN;
use crate::errno::Errno;
use crate::gro::plan::GroPlan;
use crate::net::{Delivery, Net};
use crate::pcap::linktype::{to_l3, LINKTYPE_ETHERNET};
use crate::profile::KernelProfile;
use crate::scenario::{QueueOp, Scenario, XdpSpec};
use crate::tun::napi::TunNapi;
use crate::tun::write::{ModelError, WriteOpts, WriteOutcome};
use crate::tun::{DeviceKind, TunDevice, TunStats};
use crate::wire::virtio_net_hdr::{VirtioNetHdr, VnetHdrLayout};
use crate::wire::TunPiRepr;
use crate::xdp::XdpAttachment;

use super::mq_tap::MqTap;
use super::tun_read::{header_len, ReadRecord};
use super::{Input, Pipeline, PipelineError};

/// The device written to.
pub const IFINDEX_DUT: u32 = 2;
/// The redirect target.
pub const IFINDEX_REDIRECT: u32 = 3;

/// Load the scenario's program and its maps (a `.o` through the ELF loader, anything
/// else as skbsim eBPF assembly) and check it as the kernel's verifier would
/// ([`crate::bpf::verifier`]). Errors name the file (and the section) and the instruction.
pub fn load_program(spec: &XdpSpec) -> Result<(Program, Maps), String> {
    let elf = spec.program.extension().is_some_and(|e| e == "o");
    let mut prog = if elf {
        load_elf_file(&spec.program, &spec.section).map_err(|e| e.to_string())?
    } else {
        let text = crate::fsutil::read_bounded_to_string(
            &spec.program,
            "XDP program",
            crate::bpf::elf::MAX_PROGRAM_FILE_BYTES,
        )
        .map_err(|e| format!("{}: {e}", spec.program.display()))?;
        let name = spec
            .program
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        assemble(&name, &text).map_err(|e| format!("{}: {e}", spec.program.display()))?
    };
    let mut maps = Maps::new();
    prog.bind_maps(&mut maps)
        .map_err(|e| format!("{}: {e}", spec.program.display()))?;
    // The kernel's verifier runs at BPF_PROG_LOAD: a program it refuses never sees a frame.
    crate::bpf::verifier::verify_bound(&prog, &maps).map_err(|e| {
        if elf {
            format!("{}: section {}: {e}", spec.program.display(), spec.section)
        } else {
            format!("{}: {e}", spec.program.display())
        }
    })?;
    Ok((prog, maps))
}

/// Fill key 0 of every devmap with the redirect target's ifindex.
pub fn fill_devmaps(maps: &mut Maps, target: u32) -> Result<(), String> {
    let names: Vec<String> = maps
        .iter()
        .filter(|m| m.spec().map_type.is_devmap())
        .map(|m| m.name().to_string())
        .collect();
    for n in names {
        if let Some(m) = maps.by_name_mut(&n) {
            m.update(&0u32.to_le_bytes(), &target.to_le_bytes(), 0)
                .map_err(|e| format!("devmap {n}: {e:?}"))?;
        }
    }
    Ok(())
}

/// The device under test (IFINDEX_DUT) in a new [`Net`], with tun's NAPI instance when it
/// is IFF_NAPI: tun_get_user and tun_xdp_one then hand the skbs to napi_gro_receive, and
/// the NAPI poll to GRO (drivers/net/tun.c: tun_set_iff -> tun_napi_init, tun_get_user:
/// tun_rx_batched / napi_schedule). `plan` is the scenario's `[gro]`.
pub fn dut_net(dut: TunDevice, profile: &KernelProfile, plan: &GroPlan) -> Net {
    let napi = dut.config.napi;
    let mut net = Net::new();
    net.add(IFINDEX_DUT, dut);
    if napi {
        net.enable_napi(IFINDEX_DUT, TunNapi::new(profile, plan));
    }
    net
}

/// The scenario's devices, as tap-write and tap-gro set them up: the device under test
/// with the scenario's XDP program attached (every devmap's key 0 = the redirect
/// target), NAPI when it is IFF_NAPI ([`dut_net`]), and the redirect target
/// (IFINDEX_REDIRECT) when there is one.
pub fn scenario_net(scenario: &Scenario) -> Result<Net, ModelError> {
    let mut dut = TunDevice::new(scenario.device.clone());
    if let Some(spec) = &scenario.xdp {
        let (prog, mut maps) = load_program(spec).map_err(ModelError)?;
        if scenario.redirect.is_some() {
            fill_devmaps(&mut maps, IFINDEX_REDIRECT).map_err(ModelError)?;
        }
        dut.xdp = Some(XdpAttachment::new(prog, spec.mode, BasicEnv::new(maps)));
    }
    let mut net = dut_net(dut, &scenario.profile, &scenario.gro);
    if let Some(cfg) = &scenario.redirect {
        net.add(IFINDEX_REDIRECT, TunDevice::new(cfg.clone()));
    }
    Ok(net)
}

/// What happened, in order.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteEvent {
    Write(WriteRecord),
    /// The stack received a frame (AF_PACKET on A).
    Stack {
        write: usize,
        delivery: Delivery,
    },
    /// A read on A's fd (`on_redirect` false) or B's.
    Read {
        on_redirect: bool,
        record: ReadRecord,
    },
    /// `[queues]`: TUNSETQUEUE on one of A's files before a frame.
    Queue {
        before_frame: u64,
        file: usize,
        op: QueueOp,
        stats: TunStats,
    },
}

/// One write() by userspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRecord {
    pub write: usize,
    pub frame: u64,
    pub ts_ns: u64,
    /// Bytes passed to write().
    pub len: usize,
    pub nonblocking: bool,
    /// `[queues]`: the file written on, by opening order.
    pub file: Option<usize>,
    pub result: Result<usize, Errno>,
    pub stats: TunStats,
    pub redirect_stats: Option<TunStats>,
    /// Model-only: path, XDP runs, fate.
    pub model: Option<WriteOutcome>,
}

/// Compose the bytes of one write: PI, vnet header, frame; then the truncation.
pub fn compose_write(scenario: &Scenario, index: u64, frame: &[u8]) -> (Vec<u8>, bool) {
    let mut w = Vec::with_capacity(header_len(&scenario.device) + frame.len());
    let nonblocking = compose_write_into(&mut w, scenario, index, frame);
    (w, nonblocking)
}

/// What userspace writes into a device of `kind` for the input Ethernet `frame`, and
/// the protocol a PI would carry: the frame itself and its EtherType for a tap; for an
/// IFF_TUN device the L3 packet after the Ethernet header and any in-band tags, and its
/// EtherType, since tun_get_user takes an IFF_TUN write as the packet from the network
/// header on (drivers/net/tun.c: tun_get_user: no eth_type_trans, skb_reset_mac_header
/// at the first byte; docs/tap-write.md#tun-device). An Ethernet frame too short for its
/// header(s) leaves an empty packet (which tun refuses as the kernel would).
pub fn device_payload(kind: DeviceKind, frame: &[u8]) -> (&[u8], u16) {
    let ethertype = || {
        frame
            .get(12..14)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    };
    match kind {
        DeviceKind::Tap => (frame, ethertype()),
        DeviceKind::Tun => match to_l3(LINKTYPE_ETHERNET, frame) {
            Ok(l3) => (l3.data, l3.protocol),
            Err(_) => (&[], ethertype()),
        },
    }
}

/// [`compose_write`] into a reused buffer; returns whether the write is nonblocking.
pub fn compose_write_into(w: &mut Vec<u8>, scenario: &Scenario, index: u64, frame: &[u8]) -> bool {
    let (truncate, nonblocking, vnet) = scenario.write_for(index);
    let dev = &scenario.device;
    let (frame, frame_proto) = device_payload(dev.kind, frame);
    w.clear();
    if !dev.no_pi {
        let proto = scenario.writer.pi_proto.unwrap_or(frame_proto);
        // A writer sets no flags: tun_get_user reads only proto.
        w.extend_from_slice(&TunPiRepr { flags: 0, proto }.to_bytes());
    }
    if dev.vnet_hdr {
        let start = w.len();
        w.resize(start + dev.vnet_hdr_sz, 0);
        // The largest struct the area holds: the tunnel offsets land at bytes 20-23 of a
        // 24-byte area, which 6.17+ parses (docs/tap-write.md#vnet-tunnel).
        let layout = if dev.vnet_hdr_sz >= VnetHdrLayout::HashTunnel.header_len() {
            VnetHdrLayout::HashTunnel
        } else {
            VnetHdrLayout::Basic
        };
        let mut view = VirtioNetHdr::new_unchecked(&mut w[start..], layout, dev.vnet_endian);
        // The area is at least 10 bytes (vnet_hdr_sz >= 10 is validated).
        let _ = vnet.emit(&mut view);
    }
    debug_assert!(dev.no_pi || w.len() >= TUN_PI_LEN);
    w.extend_from_slice(frame);
    if let Some(n) = truncate {
        w.truncate(n);
    }
    nonblocking
}

/// A run of the pipeline.
#[derive(Debug)]
pub struct TapWriteRun<'s> {
    pub(super) scenario: &'s Scenario,
    pub net: Net,
    /// `[queues]`: A as a multiqueue tap (`tap_write_mq`), which then stands for A in
    /// `net`.
    pub(super) mq: Option<MqTap>,
    pub(super) writes: usize,
    pub(super) reads_a: usize,
    reads_b: usize,
    pub(super) buf: Vec<u8>,
    /// The bytes of the current write, reused.
    pub(super) wbuf: Vec<u8>,
    /// The last input frame written (index, timestamp): the frame a read is after.
    pub(super) last: (u64, u64),
}

impl<'s> TapWriteRun<'s> {
    /// Build the devices and attach the program. `base` resolves nothing: paths in the
    /// scenario are already resolved against its directory.
    pub fn new(scenario: &'s Scenario) -> Result<TapWriteRun<'s>, ModelError> {
        let (net, mq) = match &scenario.queues {
            Some(plan) => (Net::new(), Some(mq::mq_tap(scenario, plan)?)),
            None => (scenario_net(scenario)?, None),
        };
        Ok(TapWriteRun {
            scenario,
            net,
            mq,
            writes: 0,
            reads_a: 0,
            reads_b: 0,
            buf: Vec::new(),
            wbuf: Vec::new(),
            last: (0, 0),
        })
    }

    /// Write input frame `index`: the write, then what the stack received (the reads
    /// are [`Input::Read`]s).
    fn frame(
        &mut self,
        index: u64,
        ts_ns: u64,
        frame: &[u8],
        sink: &mut impl FnMut(WriteEvent),
    ) -> Result<(), ModelError> {
        if self.mq.is_some() {
            return self.frame_mq(index, ts_ns, frame, sink);
        }
        let mut bytes = std::mem::take(&mut self.wbuf);
        let nonblocking = compose_write_into(&mut bytes, self.scenario, index, frame);
        let p = &self.scenario.profile;
        let out = self.net.tun_write(
            IFINDEX_DUT,
            &bytes,
            WriteOpts {
                nonblocking,
                rx_queue: 0,
                detached: false,
            },
            &p.tun_write,
            &p.tun_read,
        )?;
        let write = self.writes;
        self.writes += 1;
        let len = bytes.len();
        self.wbuf = bytes;
        sink(WriteEvent::Write(WriteRecord {
            write,
            frame: index,
            ts_ns,
            len,
            nonblocking,
            file: None,
            result: out.result,
            stats: self.stats(IFINDEX_DUT),
            redirect_stats: self.net.dev(IFINDEX_REDIRECT).map(|d| d.stats),
            model: Some(out),
        }));
        self.last = (index, ts_ns);
        self.stack(write, sink);
        Ok(())
    }

    /// After a write (or a vhost kick, `write` then being the kick's number): what the
    /// stack received since the last call.
    pub(crate) fn stack(&mut self, write: usize, sink: &mut impl FnMut(WriteEvent)) {
        if let Some(tap) = self.mq.as_mut() {
            for delivery in tap.host.take_deliveries() {
                sink(WriteEvent::Stack { write, delivery });
            }
            return;
        }
        // Handed on and forgotten: a long replay holds no delivered frames.
        let mut stack = std::mem::take(&mut self.net.stack);
        for delivery in stack.drain(..) {
            sink(WriteEvent::Stack { write, delivery });
        }
        self.net.stack = stack;
    }

    /// The readers of A and B drained, after input frame `frame` (at `ts_ns`).
    pub(crate) fn read(&mut self, frame: u64, ts_ns: u64, sink: &mut impl FnMut(WriteEvent)) {
        if self.mq.is_some() {
            return self.read_mq(frame, ts_ns, sink);
        }
        self.drain(false, frame, ts_ns, sink);
        if self.net.dev(IFINDEX_REDIRECT).is_some() {
            self.drain(true, frame, ts_ns, sink);
        }
    }

    fn stats(&self, ifindex: u32) -> TunStats {
        self.net.dev(ifindex).map(|d| d.stats).unwrap_or_default()
    }

    fn drain(
        &mut self,
        on_redirect: bool,
        frame: u64,
        ts_ns: u64,
        sink: &mut impl FnMut(WriteEvent),
    ) {
        let ifindex = if on_redirect {
            IFINDEX_REDIRECT
        } else {
            IFINDEX_DUT
        };
        let plan = &self.scenario.reader;
        let rules = self.scenario.profile.tun_read;
        loop {
            let Some(dev) = self.net.dev_mut(ifindex) else {
                return;
            };
            if dev.queued() == 0 {
                return;
            }
            let n = if on_redirect {
                self.reads_b
            } else {
                self.reads_a
            };
            let size = plan.buffer(n);
            self.buf.clear();
            self.buf.resize(size, plan.fill);
            let outcome = dev.read(&mut self.buf, &rules);
            let cfg = dev.config.clone();
            let visible = match outcome.result {
                Ok(n) => n,
                Err(_) => size.min(header_len(&cfg)),
            };
            let record = ReadRecord {
                queue: None,
                read: n,
                frame: Some((frame, ts_ns)),
                buffer_len: size,
                result: outcome.result,
                data: self.buf[..visible].to_vec(),
                stats: dev.stats,
                model: Some(outcome),
            };
            if on_redirect {
                self.reads_b += 1;
            } else {
                self.reads_a += 1;
            }
            sink(WriteEvent::Read {
                on_redirect,
                record,
            });
        }
    }

    /// A's and B's counters now (A the multiqueue tap with `[queues]`).
    pub fn dut_stats(&self) -> (TunStats, Option<TunStats>) {
        let a = match &self.mq {
            Some(tap) => tap.stats(),
            None => self.stats(IFINDEX_DUT),
        };
        (a, self.net.dev(IFINDEX_REDIRECT).map(|d| d.stats))
    }

    /// The program's maps after the run (per-verdict counters and the like).
    pub fn maps(&self) -> Option<&Maps> {
        if let Some(tap) = &self.mq {
            return tap.host.xdp_maps(super::mq_tap::DEV);
        }
        self.net
            .dev(IFINDEX_DUT)
            .and_then(|d| d.xdp.as_ref())
            .map(|a| &a.env.maps)
    }
}

impl Pipeline for TapWriteRun<'_> {
    type Event = WriteEvent;

    #[inline]
    fn handle(
        &mut self,
        input: Input<'_>,
        events: &mut impl FnMut(WriteEvent),
    ) -> Result<(), PipelineError> {
        match input {
            Input::Frame {
                index,
                ts_ns,
                bytes,
            } => self
                .frame(index, ts_ns, bytes, events)
                .map_err(PipelineError::at(Some(index))),
            Input::Read => {
                let (frame, ts_ns) = self.last;
                self.read(frame, ts_ns, events);
                Ok(())
            }
            // The reader drained after the last write; nothing is timed or kicked.
            Input::End | Input::Kick | Input::AdvanceTo { .. } => Ok(()),
        }
    }

    type Spare = Vec<u8>;

    #[inline]
    fn spare(event: WriteEvent) -> Option<Vec<u8>> {
        match event {
            WriteEvent::Stack { delivery, .. } => Some(delivery.frame),
            _ => None,
        }
    }

    fn recycle(&mut self, frame: Vec<u8>) {
        self.net.recycle_frame(frame);
    }
}

#[path = "tap_write_mq.rs"]
mod mq;
