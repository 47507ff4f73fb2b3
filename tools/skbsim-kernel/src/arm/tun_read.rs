//! The real `tun-read` arm: every input frame is written into a writer tap, the kernel's
//! receive path and a default bridge carry it to the tap under test (B, configured from
//! the scenario's `[device]`), and B's fd is read with the scenario's buffers; with
//! `attach = "direct"` the frame is sent on B itself instead (see [`super::tun_read_path`]
//! for both paths). The result is the same [`Event`] list the simulator produces (with
//! `model: None`), so the same renderer writes both traces.
//!
//! # How the skb the scenario asks for is made (verified on 6.18)
//! The skb that reaches B is built by the writer's `tun_get_user` from a virtio-net header
//! written in front of the frame, then the receive path untags it (an outer 802.1Q/802.1ad
//! tag always becomes the hw-accel tag) and the bridge hands it to B's `tun_net_xmit`:
//! - `checksum = "partial"`: `VIRTIO_NET_HDR_F_NEEDS_CSUM`, `csum_start` = L4 offset in the
//!   frame as written (tag included), `csum_offset` 16 (TCP) or 6 (UDP). The untag keeps
//!   `csum_start` pointing at the same byte, so B reports it 4 higher again.
//! - `checksum = "unnecessary"`: a `DATA_VALID` flag in the written header is ignored by
//!   `tun_get_user` (B reads flags 0). What does produce `CHECKSUM_UNNECESSARY` is GRO: an
//!   `IFF_NAPI` writer with GRO on validates the TCP/UDP checksum
//!   (`skb_gro_incr_csum_unnecessary`) and, with `gro_flush_timeout` 0, flushes every write
//!   on its own, unmerged. Those frames go through the [`WriterKind::Gro`] writer.
//! - GSO (`gso = "tcp" | "udp_l4"`): `gso_type`/`gso_size` in the header; the kernel marks
//!   the skb `SKB_GSO_DODGY` and B (with the matching `TUN_F_*` offload) still receives it
//!   whole, not segmented. `hdr_len` read from B is `skb_headlen`, which a blocking
//!   `IFF_TAP` writer does not control: `tun_alloc_skb` makes the whole frame linear
//!   whenever it fits a page (a 3042-byte USO frame reads back with hdr_len 3042, not 42),
//!   and only larger frames get a linear part of `hdr_len`. So frames with an explicit
//!   `headlen` (every GSO frame: its default is "headers") go through the
//!   [`WriterKind::Frags`] writer: `IFF_NAPI_FRAGS` with GRO off, written with `writev`
//!   whose second iovec is exactly the linear part (`tun_napi_alloc_frags` puts the first
//!   data iovec in the linear area and the rest in page frags).
//! - Everything else goes through the [`WriterKind::Plain`] writer: blocking
//!   `IFF_TAP|IFF_NO_PI|IFF_VNET_HDR`, the `tun_alloc_skb` path.
//!
//! # Reading
//! B is non-blocking. After every `reader.read_every` frames, B is read until `EAGAIN`
//! (that final `EAGAIN` is not a read of the trace and does not use up a buffer size); a
//! zero-size read is only issued while `poll` says a frame is queued, like the simulator,
//! which reads only while its ring is non-empty. After each write the arm knows whether
//! the frame reached B's xmit (an AF_PACKET observer on B, see
//! [`super::tun_read_path`]); one that did not is reported as [`Event::BridgeDropped`]
//! at once, with no reason (the kernel does not say why), and is not waited for.
//! A consuming read (anything but `read(0)`) takes the (index, ts) of the next frame that
//! reached B. After each write, B's `tx_dropped` is checked: a rise means `tun_net_xmit`
//! dropped the frame, reported as [`Event::XmitDropped`] like the simulator's, with the
//! reason the arm can tell from what it saw (`Replay::drop_reason` in [`mq`]).

use std::collections::VecDeque;
use std::time::Duration;

use sim::bridge::{Attach, TAP_MAC, UPLINK_MAC};
use sim::consts::{ETH_HLEN, ETH_P_IP, ETH_P_IPV6, IPPROTO_TCP, IPPROTO_UDP, VLAN_HLEN};
use sim::errno::Errno as SimErrno;
use sim::pcap::EthernetInput;
use sim::pipeline::frame_meta::{build_skb, layout, GsoKind, SkbRecipe};
use sim::pipeline::tun_read::{header_len, Event, ReadRecord};
use sim::scenario::{Pipeline, Scenario};
use sim::skb::{IpSummed, SkBuff};
use sim::tun::{DeviceKind, TunConfig, TunStats};
use sim::wire::virtio_net_hdr::{
    Endian, VirtioNetHdrRepr, VIRTIO_NET_HDR_F_DATA_VALID, VIRTIO_NET_HDR_F_NEEDS_CSUM,
    VIRTIO_NET_HDR_GSO_ECN, VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_TCPV6,
    VIRTIO_NET_HDR_GSO_UDP, VIRTIO_NET_HDR_GSO_UDP_L4, VIRTIO_NET_HDR_LEN,
};
use sim::wire::vlan::eth_type_vlan;

use super::tun_read_path::{self, Observer, NAPI_SETTLE};
use super::{kerr, tun_stats, ArmError};
use crate::error::{Cause, Errno, KernelError};
use crate::ethtool::Ethtool;
use crate::netns::Netns;
use crate::packet::PacketSocket;
use crate::rtnl::LinkStats;
use crate::tap::{Tap, TapConfig};

/// The tap under test.
pub const DUT_NAME: &str = "skbdut";
/// The bridge between the writers and the tap under test.
pub const BRIDGE_NAME: &str = "skbbr";

/// The writers' virtio-net header: the basic 10 bytes, little endian.
const WRITER_VNET_LEN: usize = VIRTIO_NET_HDR_LEN;

/// Which writer tap builds a frame's skb (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WriterKind {
    /// Blocking `IFF_TAP|IFF_NO_PI|IFF_VNET_HDR`: `tun_alloc_skb`.
    Plain,
    /// `IFF_NAPI|IFF_NAPI_FRAGS`, GRO off, `writev` split at the linear length.
    Frags,
    /// `IFF_NAPI`, GRO on: checksums validated into `CHECKSUM_UNNECESSARY`.
    Gro,
}

impl WriterKind {
    /// The writer for a frame built per `recipe`.
    pub fn for_recipe(recipe: &SkbRecipe) -> WriterKind {
        if recipe.checksum == IpSummed::Unnecessary {
            WriterKind::Gro
        } else if recipe.headlen.is_some() || recipe.gso != GsoKind::None {
            WriterKind::Frags
        } else {
            WriterKind::Plain
        }
    }

    fn name(self) -> &'static str {
        match self {
            WriterKind::Plain => "skbwplain",
            WriterKind::Frags => "skbwfrags",
            WriterKind::Gro => "skbwgro",
        }
    }

    fn config(self) -> TapConfig {
        let c = TapConfig::tap(self.name()).vnet_hdr(true);
        match self {
            WriterKind::Plain => c,
            WriterKind::Frags => c.napi(true).napi_frags(true),
            WriterKind::Gro => c.napi(true),
        }
    }
}

/// What the real arm produced for one scenario.
#[derive(Debug, Clone)]
pub struct RealTunRead {
    /// The events, in order, `model: None` on every read.
    pub events: Vec<Event>,
    /// B's counters at the end.
    pub stats: TunStats,
    /// Input frames written.
    pub frames: u64,
    /// Things worth knowing that the trace cannot say (a frame that never reached B, a
    /// frame B delivered that nobody wrote, which writers were used).
    pub notes: Vec<String>,
}

/// `Ok(())` when the real kernel here can express `scenario` (checked without touching
/// the kernel, except for the pcap); otherwise the reason, fit for `sim_only = "..."`.
/// Kernel refusals (e.g. `TUNSETVNETBE`) show up only when the arm runs.
pub fn expressible(scenario: &Scenario) -> Result<(), ArmError> {
    super::host_profile_only(scenario)?;
    super::real_arm(scenario.pipeline).map_err(ArmError::Unsupported)?;
    if scenario.pipeline != Pipeline::TunRead {
        return Err(ArmError::Unsupported(format!(
            "the tun-read arm cannot replay a {} scenario",
            scenario.pipeline.name()
        )));
    }
    if scenario.device.kind == DeviceKind::Tun {
        return Err(ArmError::Unsupported(
            "an IFF_TUN reader: the real arm bridges Ethernet taps, and a tun device needs a routed path"
                .into(),
        ));
    }
    if scenario.attach == Attach::Direct {
        tun_read_path::direct_expressible(scenario)?;
    }
    Ok(())
}

/// Replay `scenario` through the real kernel in a fresh namespace.
pub fn run_tun_read(scenario: &Scenario) -> Result<RealTunRead, ArmError> {
    expressible(scenario)?;
    // Open the pcap before building anything: an unreadable input is an input error.
    let reader = EthernetInput::open(&scenario.input, scenario.link)
        .map_err(|e| ArmError::Input(e.to_string()))?;
    drop(reader);
    Netns::run(|ns| Ok(replay(ns, scenario)))?
}

/// Create and configure the tap under test from the scenario's `[device]` (the same
/// setup as the write arm's); it starts down and comes up (if `dev.up`) once bridged.
pub fn open_dut(ns: &mut Netns, dev: &TunConfig) -> Result<Tap, KernelError> {
    let down = TunConfig {
        up: false,
        ..dev.clone()
    };
    super::tap_side::open_device_mq(ns, DUT_NAME, &down, true, false)
}

fn open_writer(ns: &mut Netns, kind: WriterKind) -> Result<Tap, KernelError> {
    let w = ns.tap_up(&kind.config())?;
    if kind == WriterKind::Frags {
        // GRO would validate checksums (CHECKSUM_NONE -> UNNECESSARY); keep the skb as
        // written.
        Ethtool::new()?.set_feature(kind.name(), "rx-gro", false)?;
    }
    Ok(w)
}

/// The outer tag, if the frame has an 802.1Q/802.1ad one the receive path would untag.
fn outer_vlan_tpid(frame: &[u8]) -> Option<u16> {
    let tpid = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    (eth_type_vlan(tpid) && frame.len() >= ETH_HLEN + VLAN_HLEN).then_some(tpid)
}

/// Whether GRO on the writer can validate this frame's L4 checksum (the only way to a
/// `CHECKSUM_UNNECESSARY` skb here): an untagged IPv4/IPv6 frame with a whole TCP or UDP
/// header. A tagged frame is not validated: the host has no 802.1Q GRO (vlan_gro_receive
/// needs CONFIG_VLAN_8021Q), and B would read flags 0.
fn gro_can_validate(frame: &[u8]) -> Result<(), String> {
    let lay = layout(frame).ok_or("the frame has no Ethernet header")?;
    if lay.l3_offset != 14 {
        return Err(
            "GRO does not look inside VLAN tags on this kernel (no CONFIG_VLAN_8021Q)".into(),
        );
    }
    match (lay.l3_proto, lay.l4_proto, lay.l4_hlen) {
        (ETH_P_IP | ETH_P_IPV6, Some(IPPROTO_TCP | IPPROTO_UDP), Some(_)) => Ok(()),
        (proto, _, _) => Err(format!(
            "GRO validates only TCP/UDP over IPv4/IPv6, not this frame (EtherType {proto:#06x})"
        )),
    }
}

/// The virtio-net header and the linear length a writer needs for `frame` per `recipe`.
/// Offsets are of the frame as written (with its tags in-band).
fn writer_header(
    frame: &[u8],
    recipe: &SkbRecipe,
    index: u64,
) -> Result<(VirtioNetHdrRepr, Option<usize>), String> {
    let lay = layout(frame).ok_or_else(|| format!("frame {index}: no Ethernet header"))?;
    let mut h = VirtioNetHdrRepr::default();
    match recipe.checksum {
        IpSummed::Partial => {
            h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
            h.csum_start = u16::try_from(lay.l4_offset)
                .map_err(|_| format!("frame {index}: L4 offset beyond 65535"))?;
            h.csum_offset = match lay.l4_proto {
                Some(IPPROTO_TCP) => 16,
                Some(IPPROTO_UDP) => 6,
                _ => {
                    return Err(format!(
                        "frame {index}: checksum = \"partial\" needs TCP or UDP"
                    ))
                }
            };
        }
        IpSummed::Unnecessary => h.flags = VIRTIO_NET_HDR_F_DATA_VALID,
        _ => {}
    }
    let untag = recipe.vlan_hwaccel && outer_vlan_tpid(frame).is_some();
    let shift = if untag { 4 } else { 0 };
    // The linear length of the frame as written: the recipe's headlen counts the skb after
    // the untag, which removes the 4 tag bytes from the linear part.
    let linear = match recipe.headlen {
        None => None,
        Some(None) => Some(lay.headers_len().ok_or_else(|| {
            format!("frame {index}: headlen = \"headers\" needs a complete TCP or UDP header")
        })?),
        Some(Some(n)) => Some((n + shift).min(frame.len())),
    };
    if recipe.gso != GsoKind::None {
        let base = match (recipe.gso, lay.l4_proto, lay.l3_proto) {
            (GsoKind::Tcp, Some(IPPROTO_TCP), ETH_P_IP) => VIRTIO_NET_HDR_GSO_TCPV4,
            (GsoKind::Tcp, Some(IPPROTO_TCP), ETH_P_IPV6) => VIRTIO_NET_HDR_GSO_TCPV6,
            (GsoKind::UdpL4, Some(IPPROTO_UDP), _) => VIRTIO_NET_HDR_GSO_UDP_L4,
            (GsoKind::Ufo, Some(IPPROTO_UDP), _) => VIRTIO_NET_HDR_GSO_UDP,
            (kind, l4, _) => {
                return Err(format!(
                    "frame {index}: gso = {kind:?} does not fit IP protocol {l4:?}"
                ))
            }
        };
        h.gso_type = base
            | if recipe.gso_ecn {
                VIRTIO_NET_HDR_GSO_ECN
            } else {
                0
            };
        h.gso_size = recipe.gso_size;
        let hdr = linear.unwrap_or(frame.len());
        h.hdr_len =
            u16::try_from(hdr).map_err(|_| format!("frame {index}: hdr_len beyond 65535"))?;
    }
    Ok((h, linear))
}

struct Writers {
    taps: Vec<(WriterKind, Tap)>,
}

impl Writers {
    fn get(&self, kind: WriterKind) -> Option<&Tap> {
        self.taps.iter().find(|(k, _)| *k == kind).map(|(_, t)| t)
    }

    /// With several writers on the bridge, each gets flooded copies of the others'
    /// frames; throw them away so no queue fills.
    fn drain(&self) -> Result<(), ArmError> {
        if self.taps.len() > 1 {
            for (_, t) in &self.taps {
                t.drain()
                    .map_err(|e| kerr(format!("drain flooded frames from {}", t.name()), e))?;
            }
        }
        Ok(())
    }
}

struct Replay<'s> {
    scenario: &'s Scenario,
    dut: Tap,
    writers: Writers,
    /// `attach = "direct"`: the AF_PACKET socket on B that sends the frames.
    inject: Option<PacketSocket>,
    observer: Observer,
    events: Vec<Event>,
    /// (index, ts) of each frame written and not yet read, in order, per file (one file
    /// without `[queues]`).
    pending: Vec<VecDeque<(u64, u64)>>,
    /// `[queues]`: files 1.. of the multiqueue tap (`dut` is file 0), and which files are
    /// attached.
    queues: Vec<Tap>,
    attached: Vec<bool>,
    reads: usize,
    since_read: usize,
    last: LinkStats,
    notes: Vec<String>,
    buf: Vec<u8>,
}

fn replay(ns: &mut Netns, scenario: &Scenario) -> Result<RealTunRead, ArmError> {
    let kinds = writer_kinds(scenario);
    let mut run = Replay::start(ns, scenario, &kinds)?;
    let mut reader = EthernetInput::open(&scenario.input, scenario.link)
        .map_err(|e| ArmError::Input(e.to_string()))?;
    let mut frames = 0u64;
    let mut wire = Vec::new();
    while let Some(frame) = reader.next_frame() {
        let frame = frame.map_err(|e| ArmError::Input(e.to_string()))?;
        let (index, ts, data) = (frame.index, frame.ts_ns, frame.data);
        let recipe = scenario.recipe_for(index);
        check_frame(scenario, run.inject.is_some(), index, data, recipe)?;
        run.queue_events(ns, index)?;
        run.observer.before_frame(ns, index, ts, &mut run.notes)?;
        let settle = match &run.inject {
            Some(sock) => inject_frame(sock, index, data).map(|()| Duration::ZERO)?,
            None => run.write_frame(index, data, recipe, &mut wire)?,
        };
        frames += 1;
        run.after_write(ns, index, ts, settle)?;
    }
    run.finish(ns, frames)
}

/// Which writers the scenario needs: one pass over the recipes.
fn writer_kinds(scenario: &Scenario) -> Vec<WriterKind> {
    let mut kinds = vec![WriterKind::for_recipe(&scenario.skb)];
    kinds.extend(
        scenario
            .skb_overrides
            .iter()
            .map(|(_, r)| WriterKind::for_recipe(r)),
    );
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Refuse a frame whose recipe the simulator refuses, or whose outer VLAN tag the real
/// receive path would treat otherwise than the recipe says.
fn check_frame(
    scenario: &Scenario,
    direct: bool,
    index: u64,
    data: &[u8],
    recipe: &SkbRecipe,
) -> Result<(), ArmError> {
    let input_err = |m: String| ArmError::Input(format!("{}: {m}", scenario.input.display()));
    // The simulator's own checks of the recipe against the frame, so both arms refuse
    // the same input with the same words.
    build_skb(&mut SkBuff::default(), data, recipe, false)
        .map_err(|e| input_err(format!("frame {index}: {}", e.0)))?;
    match (direct, recipe.vlan_hwaccel, outer_vlan_tpid(data)) {
        (false, false, Some(tpid)) => {
            return Err(ArmError::Unsupported(format!(
                "frame {index}: skb.vlan = \"inband\" with an outer {tpid:#06x} tag; the receive path always moves that tag out of band"
            )))
        }
        (true, true, Some(tpid)) => {
            return Err(ArmError::Unsupported(format!(
                "frame {index}: attach = \"direct\" with an outer {tpid:#06x} tag: AF_PACKET keeps it in-band; set skb.vlan = \"inband\""
            )))
        }
        _ => {}
    }
    Ok(())
}

/// `attach = "direct"`: send the frame on B with the AF_PACKET socket.
fn inject_frame(sock: &PacketSocket, index: u64, data: &[u8]) -> Result<(), ArmError> {
    let n = sock.send(data)?;
    if n != data.len() {
        return Err(ArmError::Kernel(KernelError::new(
            format!("AF_PACKET send of frame {index} on {DUT_NAME}"),
            Cause::Protocol(format!("short send: {n} of {} bytes", data.len())),
        )));
    }
    Ok(())
}

impl<'s> Replay<'s> {
    /// The tap under test, its writers (bridged) or the AF_PACKET injector (direct), and
    /// the observer; stray frames drained before the replay.
    fn start(
        ns: &mut Netns,
        scenario: &'s Scenario,
        kinds: &[WriterKind],
    ) -> Result<Replay<'s>, ArmError> {
        let (dut, queues) = mq::open_dut_queues(ns, scenario)?;
        ns.rtnl().set_address(dut.ifindex(), TAP_MAC)?;
        let direct = scenario.attach == Attach::Direct;
        let mut taps = Vec::new();
        let mut notes = Vec::new();
        let (inject, bridge) = if direct {
            ns.rtnl().set_up(dut.ifindex(), true)?;
            (Some(PacketSocket::bind(dut.ifindex())?), None)
        } else {
            for k in kinds {
                let w = open_writer(ns, *k)?;
                ns.rtnl().set_address(w.ifindex(), UPLINK_MAC)?;
                taps.push((*k, w));
            }
            // A tap left down is a disabled bridge port: nothing is forwarded to it.
            ns.rtnl().set_up(dut.ifindex(), scenario.device.up)?;
            let mut ports: Vec<u32> = taps.iter().map(|(_, t)| t.ifindex()).collect();
            ports.push(dut.ifindex());
            let br = tun_read_path::bridge(ns, scenario.attach, BRIDGE_NAME, &ports)?;
            // With several writers, frames enter by several ports where the model has one
            // uplink. What the tap sees is the same: an address learned on any writer port is
            // forwarded there, never to the tap (whose own port learns nothing, as nothing
            // is written into it), and everything else floods to the tap either way.
            (None, Some(br))
        };
        let observer = Observer::new(dut.ifindex(), bridge)?;

        let stray = dut
            .drain()
            .map_err(|e| kerr(format!("drain {DUT_NAME} before the replay"), e))?;
        if stray > 0 {
            notes.push(format!(
                "{stray} frame(s) nobody wrote were queued on {DUT_NAME} before the replay and were discarded"
            ));
        }
        let last = ns.rtnl().stats(dut.ifindex())?;
        let mut run = Replay {
            scenario,
            dut,
            writers: Writers { taps },
            inject,
            observer,
            events: Vec::new(),
            pending: vec![VecDeque::new(); 1 + queues.len()],
            attached: vec![true; 1 + queues.len()],
            queues,
            reads: 0,
            since_read: 0,
            last,
            notes,
            buf: Vec::new(),
        };
        if !direct && (kinds.len() > 1 || kinds[0] != WriterKind::Plain) {
            let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
            run.notes.push(format!("writers: {}", names.join(", ")));
        }
        Ok(run)
    }

    /// Write the frame with its vnet header into the writer tap its recipe needs; the
    /// time to let NAPI settle after it.
    fn write_frame(
        &mut self,
        index: u64,
        data: &[u8],
        recipe: &SkbRecipe,
        wire: &mut Vec<u8>,
    ) -> Result<Duration, ArmError> {
        let input_err =
            |m: String| ArmError::Input(format!("{}: {m}", self.scenario.input.display()));
        let (hdr, linear) = writer_header(data, recipe, index).map_err(input_err)?;
        let kind = WriterKind::for_recipe(recipe);
        if kind == WriterKind::Gro {
            gro_can_validate(data).map_err(|why| {
                ArmError::Unsupported(format!(
                    "frame {index}: checksum = \"unnecessary\" needs GRO to validate the checksum, and {why}"
                ))
            })?;
        }
        let w = self.writers.get(kind).ok_or_else(|| {
            ArmError::Kernel(KernelError::new(
                "select writer tap",
                Cause::NotFound(kind.name().to_string()),
            ))
        })?;
        wire.clear();
        wire.extend_from_slice(&hdr.to_basic_bytes(Endian::Little));
        let total = WRITER_VNET_LEN + data.len();
        let op = || {
            format!(
                "write of frame {index} ({} bytes + {WRITER_VNET_LEN}-byte vnet header) into {}",
                data.len(),
                w.name()
            )
        };
        let written = match (kind, linear) {
            (WriterKind::Frags, Some(l)) if l < data.len() => {
                w.writev(&[wire.as_slice(), &data[..l], &data[l..]])
            }
            _ => {
                wire.extend_from_slice(data);
                w.write(wire)
            }
        }
        .map_err(|e| kerr(op(), e))?;
        if written != total {
            return Err(ArmError::Kernel(KernelError::new(
                op(),
                Cause::Protocol(format!("short write: {written} of {total} bytes")),
            )));
        }
        Ok(if kind == WriterKind::Plain {
            Duration::ZERO
        } else {
            NAPI_SETTLE
        })
    }

    /// Read what is left, and the tap's counters.
    fn finish(mut self, ns: &mut Netns, frames: u64) -> Result<RealTunRead, ArmError> {
        self.drain(ns)?;
        let stats = tun_stats(&ns.rtnl().stats(self.dut.ifindex())?);
        if self.pending.iter().any(|p| !p.is_empty()) {
            let lost: Vec<String> = self
                .pending
                .iter()
                .flatten()
                .map(|(i, _)| i.to_string())
                .collect();
            self.notes.push(format!(
                "frame(s) {} were written but never read from {DUT_NAME}",
                lost.join(", ")
            ));
        }
        Ok(RealTunRead {
            events: self.events,
            stats,
            frames,
            notes: self.notes,
        })
    }
}

impl Replay<'_> {
    /// After frame `index` was written: whether it reached B (waiting up to `settle`),
    /// whether B's ring took it, then the reads the plan asks for.
    fn after_write(
        &mut self,
        ns: &mut Netns,
        index: u64,
        ts: u64,
        settle: Duration,
    ) -> Result<(), ArmError> {
        let arrived = self.observer.arrived(settle)?;
        if arrived > 1 {
            self.notes.push(format!(
                "frame {index}: {arrived} frames reached {DUT_NAME} for one write"
            ));
        }
        let now = ns.rtnl().stats(self.dut.ifindex())?;
        if arrived == 0 {
            self.events.push(Event::BridgeDropped {
                frame: index,
                ts_ns: ts,
                reason: None,
                stats: tun_stats(&now),
            });
        } else if now.tx_dropped > self.last.tx_dropped {
            self.events.push(Event::XmitDropped {
                frame: index,
                ts_ns: ts,
                reason: self.drop_reason(),
                stats: tun_stats(&now),
            });
        } else {
            self.landed(index, ts)?;
        }
        self.last = now;
        self.since_read += 1;
        if self.since_read >= self.scenario.reader.read_every {
            self.since_read = 0;
            self.drain(ns)?;
        }
        Ok(())
    }

    /// Read B until `EAGAIN`, one [`Event::Read`] per read; with `[queues]`, each file in
    /// opening order.
    fn drain(&mut self, ns: &mut Netns) -> Result<(), ArmError> {
        for file in 0..self.pending.len() {
            self.drain_file(ns, file)?;
        }
        self.writers.drain()
    }

    /// Read file `file` of B until `EAGAIN`.
    fn drain_file(&mut self, ns: &mut Netns, file: usize) -> Result<(), ArmError> {
        let tap = match file {
            0 => &self.dut,
            n => &self.queues[n - 1],
        };
        let plan = &self.scenario.reader;
        let dev = &self.scenario.device;
        let poll_op = || format!("poll on {DUT_NAME}");
        // Every pending frame was seen entering B's xmit, so B is readable; a NAPI
        // writer's frame may still be one softirq away (see tun_read_path).
        if !self.pending[file].is_empty()
            && !tap
                .wait_readable(Duration::ZERO)
                .map_err(|e| kerr(poll_op(), e))?
        {
            tap.wait_readable(NAPI_SETTLE)
                .map_err(|e| kerr(poll_op(), e))?;
        }
        // A backstop against a read that neither consumes nor fails.
        let limit = self.reads + 4 * (self.pending[file].len() + plan.buffers.len()) + 64;
        loop {
            let size = plan.buffer(self.reads);
            if size == 0
                && !tap
                    .wait_readable(Duration::ZERO)
                    .map_err(|e| kerr(poll_op(), e))?
            {
                break;
            }
            self.buf.clear();
            self.buf.resize(size, plan.fill);
            let result = match tap.read(&mut self.buf) {
                Err(Errno::EAGAIN) => break,
                Ok(n) => Ok(n),
                Err(e) => Err(SimErrno::from_code(e.code()).ok_or_else(|| {
                    kerr(
                        format!(
                            "read {} ({size}-byte buffer) on {DUT_NAME}: an errno the trace format cannot show",
                            self.reads
                        ),
                        e,
                    )
                })?),
            };
            let consumed = !(size == 0 && result == Ok(0));
            let frame = if consumed {
                let f = self.pending[file].pop_front();
                if f.is_none() {
                    self.notes.push(format!(
                        "read {} got a frame nobody wrote (or one written frame came out as several)",
                        self.reads
                    ));
                }
                f
            } else {
                None
            };
            let visible = match result {
                Ok(n) => n,
                Err(_) => size.min(header_len(dev)),
            };
            let now = ns.rtnl().stats(self.dut.ifindex())?;
            self.events.push(Event::Read(ReadRecord {
                read: self.reads,
                queue: self.scenario.queues.as_ref().map(|_| file),
                frame,
                buffer_len: size,
                result,
                data: self.buf[..visible].to_vec(),
                stats: tun_stats(&now),
                model: None,
            }));
            self.last = now;
            self.reads += 1;
            if self.reads > limit {
                return Err(ArmError::Kernel(KernelError::new(
                    format!("read loop on {DUT_NAME}"),
                    Cause::Protocol(format!(
                        "{} reads without EAGAIN; the reader plan never drains the queue",
                        self.reads
                    )),
                )));
            }
        }
        Ok(())
    }
}

#[path = "tun_read_mq.rs"]
mod mq;

#[cfg(test)]
#[path = "tun_read_tests.rs"]
mod tests;
