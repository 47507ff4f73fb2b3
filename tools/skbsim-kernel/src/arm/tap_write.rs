//! The real `tap-write` arm: each input frame is written by userspace into tap A with the
//! scenario's framing (PI, virtio-net header, truncation: `compose_write`, the
//! simulator's own function) and blocking mode, through the scenario's XDP program (the
//! very bytes the simulator runs, loaded with skbsim's ELF loader and attached native or
//! generic); then what the stack received (AF_PACKET on A) and what A's and B's fds
//! return are recorded. The result is the simulator's own [`WriteEvent`] list with
//! `model: None`, so `sim::trace::write::render_tap_write` writes both traces.
//!
//! # Setup (one fresh namespace per run)
//! - Tap A `skbwa` from `[device]`: `IFF_TAP`/`IFF_TUN`, `IFF_NO_PI`, `IFF_VNET_HDR` +
//!   `TUNSETVNETHDRSZ`, `IFF_NAPI`, `IFF_NAPI_FRAGS`, `TUNSETOFFLOAD`, the tx VLAN
//!   offload features, `TUNSETSNDBUF` (`INT_MAX - 1`: only "not the default" matters, it
//!   turns build_skb and so native XDP off), `txqueuelen`, `mtu`, then up unless
//!   `up = false`.
//! - Tap B `skbwb` from `[redirect]`, created second, always non-blocking. Its ifindex is
//!   whatever the kernel gave it: every devmap of the program gets key 0 = B's ifindex
//!   (the simulator's convention, with its own B at 3).
//! - The program: `BPF_PROG_LOAD` of the simulator's instructions with kernel maps
//!   ([`crate::bpf::LoadedXdp`]), attached to A with `IFLA_XDP` in `XDP_FLAGS_DRV_MODE`
//!   or `XDP_FLAGS_SKB_MODE`, checked with `IFLA_XDP_ATTACHED`.
//! - An AF_PACKET socket on A (`ETH_P_ALL`, `PACKET_AUXDATA`): the stack's view. With it
//!   bound, a frame of a protocol nobody handles counts no `rx_dropped` (the packet tap
//!   took it), which is the simulator's view of "the stack received it".
//!
//! # Per write
//! `O_NONBLOCK` on A as the write plan says, one `write(2)`, the result (or errno) and
//! A's and B's `IFLA_STATS64`. Then, like `TapWriteRun::after`: the AF_PACKET socket is
//! drained into `Stack` events (frames with `PACKET_OUTGOING` are left out: they are A
//! transmitting, not the stack receiving), A's fd is read (non-blocking) until `EAGAIN`
//! with the scenario's buffer sizes and fill byte, then B's. Everything here is
//! synchronous inside `write()` on 6.18 (`netif_receive_skb`, the XDP_TX / devmap flush,
//! NAPI polled on `local_bh_enable`); at the end the arm waits [`LATE_WAIT`] and notes
//! anything that arrived late.

use std::path::Path;
use std::time::{Duration, Instant};

use sim::bpf::{Maps, Program};
use sim::errno::Errno as SimErrno;
use sim::net::Delivery;
use sim::pcap::PcapReader;
use sim::pipeline::tap_write::{
    compose_write, load_program, WriteEvent, WriteRecord, IFINDEX_DUT, IFINDEX_REDIRECT,
};
use sim::pipeline::tun_read::{header_len, ReadRecord};
use sim::profile::KernelProfile;
use sim::scenario::{Pipeline, Scenario};
use sim::skb::VlanTag;
use sim::tun::{DeviceKind, TunConfig, VnetEndian, DEFAULT_VNET_HDR_SZ, TUN_READQ_SIZE};

use super::{kerr, offload_bits, tun_stats, ArmError};
use crate::bpf::{attach_xdp, LoadedXdp, XdpMode};
use crate::error::{Cause, Errno, KernelError};
use crate::ethtool::Ethtool;
use crate::netns::Netns;
use crate::packet::{pkttype, PacketSocket};
use crate::rtnl::{LinkStats, XdpAttached};
use crate::tap::{Tap, TapConfig};

/// The tap written to (A).
pub const WRITE_NAME: &str = "skbwa";
/// The redirect target (B).
pub const REDIRECT_NAME: &str = "skbwb";
/// How long the arm waits after the last write for anything late.
pub const LATE_WAIT: Duration = Duration::from_millis(50);
/// `TUNSETSNDBUF` value for `sndbuf = true`: anything but `INT_MAX` disables build_skb.
pub const SNDBUF: i32 = i32::MAX - 1;

/// What the real arm produced for one scenario.
#[derive(Debug, Clone)]
pub struct RealTapWrite {
    /// The events, in order, `model: None` on every write and read.
    pub events: Vec<WriteEvent>,
    /// The program's maps after the run, read back from the kernel, as the simulator's
    /// [`Maps`] (for the trace's totals).
    pub maps: Option<Maps>,
    /// Input frames written.
    pub frames: u64,
    /// What the trace cannot say: ifindexes, frames nobody wrote, late arrivals.
    pub notes: Vec<String>,
}

/// `Ok(())` when the real kernel here can express `scenario` (checked without touching
/// the kernel, except for the pcap and the program file); otherwise the reason.
pub fn expressible(scenario: &Scenario) -> Result<(), ArmError> {
    let host = KernelProfile::default();
    if scenario.profile.name != host.name {
        return Err(ArmError::Unsupported(format!(
            "profile {} is not the host kernel's ({})",
            scenario.profile.name, host.name
        )));
    }
    if scenario.pipeline != Pipeline::TapWrite {
        return Err(ArmError::Unsupported(format!(
            "the tap-write arm cannot replay a {} scenario",
            scenario.pipeline.name()
        )));
    }
    for (what, dev) in [
        ("device", Some(&scenario.device)),
        ("redirect", scenario.redirect.as_ref()),
    ] {
        if dev.is_some_and(|d| d.vnet_endian == VnetEndian::Big) {
            return Err(ArmError::Unsupported(format!(
                "{what}.vnet_be: TUNSETVNETBE is EINVAL here (no CONFIG_TUN_VNET_CROSS_LE)"
            )));
        }
    }
    Ok(())
}

/// Replay `scenario` through the real kernel in a fresh namespace.
pub fn run_tap_write(scenario: &Scenario) -> Result<RealTapWrite, ArmError> {
    expressible(scenario)?;
    let reader = PcapReader::open(&scenario.input).map_err(|e| ArmError::Input(e.to_string()))?;
    drop(reader);
    let prog = match &scenario.xdp {
        Some(spec) => Some((
            load_program(spec).map_err(ArmError::Input)?.0,
            XdpMode::from_sim(spec.mode),
        )),
        None => None,
    };
    Netns::run(|ns| Ok(replay(ns, scenario, prog.as_ref())))?
}

/// Create and configure a tap from a scenario device, then bring it up if `dev.up`.
pub fn open_device(
    ns: &mut Netns,
    name: &str,
    dev: &TunConfig,
    nonblocking: bool,
) -> Result<Tap, KernelError> {
    let base = match dev.kind {
        DeviceKind::Tap => TapConfig::tap(name),
        DeviceKind::Tun => TapConfig::tun(name),
    };
    let t = base
        .no_pi(dev.no_pi)
        .vnet_hdr(dev.vnet_hdr)
        .napi(dev.napi || dev.napi_frags)
        .napi_frags(dev.napi_frags)
        .nonblocking(nonblocking)
        .open()?;
    let int = |what: &str, v: usize| {
        i32::try_from(v).map_err(|_| {
            KernelError::new(
                format!("{what} on {name}"),
                Cause::Protocol(format!("{v} does not fit an int")),
            )
        })
    };
    if dev.vnet_hdr && dev.vnet_hdr_sz != DEFAULT_VNET_HDR_SZ {
        t.set_vnet_hdr_sz(int("TUNSETVNETHDRSZ", dev.vnet_hdr_sz)?)?;
    }
    if dev.vnet_endian == VnetEndian::Big {
        t.set_vnet_be(true)?;
    }
    let bits = offload_bits(dev);
    if bits != 0 {
        t.set_offload(bits)?;
    }
    if dev.sndbuf_set {
        t.set_sndbuf(SNDBUF)?;
    }
    if dev.kind == DeviceKind::Tap {
        let mut et = Ethtool::new()?;
        for (feature, on) in [
            ("tx-vlan-hw-insert", dev.tx_vlan_ctag),
            ("tx-vlan-stag-hw-insert", dev.tx_vlan_stag),
        ] {
            if et.get_feature(name, feature)? != on {
                et.set_feature(name, feature, on)?;
            }
        }
    }
    if dev.tx_queue_len != TUN_READQ_SIZE {
        let len = u32::try_from(dev.tx_queue_len).map_err(|_| {
            KernelError::new(
                format!("RTM_SETLINK {name} txqueuelen"),
                Cause::Protocol(format!("{} does not fit a u32", dev.tx_queue_len)),
            )
        })?;
        ns.rtnl().set_txqlen(t.ifindex(), len)?;
    }
    let default_mtu = TunConfig::default().mtu;
    if dev.mtu != default_mtu {
        let mtu = u32::try_from(dev.mtu).map_err(|_| {
            KernelError::new(
                format!("RTM_SETLINK {name} mtu"),
                Cause::Protocol(format!("{} does not fit a u32", dev.mtu)),
            )
        })?;
        ns.rtnl().set_mtu(t.ifindex(), mtu)?;
    }
    if dev.up {
        ns.rtnl().set_up(t.ifindex(), true)?;
    }
    Ok(t)
}

/// One frame from the AF_PACKET socket, if one is queued within `timeout`. A socket
/// bound to a device that is down reports `ENETDOWN` once (`packet_do_bind` sets
/// `sk_err`); that is not a frame and not a failure.
fn recv_packet(
    packet: &mut PacketSocket,
    timeout: Duration,
) -> Result<Option<(Vec<u8>, crate::packet::AuxData)>, KernelError> {
    for _ in 0..4 {
        match packet.recv_timeout(Some(timeout)) {
            Err(e) if e.is_errno(Errno::ENETDOWN) => continue,
            other => return other,
        }
    }
    packet.recv_timeout(Some(timeout))
}

struct Replay<'s> {
    scenario: &'s Scenario,
    a: Tap,
    b: Option<Tap>,
    packet: PacketSocket,
    events: Vec<WriteEvent>,
    reads_a: usize,
    reads_b: usize,
    outgoing: usize,
    notes: Vec<String>,
    buf: Vec<u8>,
}

fn replay(
    ns: &mut Netns,
    scenario: &Scenario,
    prog: Option<&(Program, XdpMode)>,
) -> Result<RealTapWrite, ArmError> {
    let a = open_device(
        ns,
        WRITE_NAME,
        &scenario.device,
        scenario.writer.nonblocking,
    )?;
    let b = match &scenario.redirect {
        Some(cfg) => Some(open_device(ns, REDIRECT_NAME, cfg, true)?),
        None => None,
    };
    // The simulator's A and B are ifindex 2 and 3; only a difference is worth a note
    // (the devmap carries B's real ifindex either way).
    let mut notes = Vec::new();
    let b_index = b.as_ref().map(Tap::ifindex);
    if a.ifindex() != IFINDEX_DUT || b_index.is_some_and(|i| i != IFINDEX_REDIRECT) {
        notes.push(format!(
            "ifindex A {} (model {IFINDEX_DUT}){}",
            a.ifindex(),
            b_index
                .map(|i| format!(", B {i} (model {IFINDEX_REDIRECT})"))
                .unwrap_or_default()
        ));
    }
    let loaded = match prog {
        Some((p, mode)) => {
            let l = LoadedXdp::load(p)?;
            if let Some(b) = &b {
                l.fill_devmaps(b.ifindex())?;
            }
            attach_xdp(ns.rtnl(), a.ifindex(), &l, *mode)?;
            Some(l)
        }
        None => None,
    };
    let mut packet = PacketSocket::bind(a.ifindex())?;
    packet.set_timeout(Some(Duration::ZERO));
    // Nothing should be queued yet; anything that is was not written by the replay.
    let mut stray = 0;
    while recv_packet(&mut packet, Duration::ZERO)?.is_some() {
        stray += 1;
    }
    for t in std::iter::once(&a).chain(b.as_ref()) {
        t.set_nonblocking(true)?;
        stray += t
            .drain()
            .map_err(|e| kerr(format!("drain {} before the replay", t.name()), e))?;
    }
    if stray > 0 {
        notes.push(format!(
            "{stray} frame(s) nobody wrote were queued before the replay and were discarded"
        ));
    }
    let mut run = Replay {
        scenario,
        a,
        b,
        packet,
        events: Vec::new(),
        reads_a: 0,
        reads_b: 0,
        outgoing: 0,
        notes,
        buf: Vec::new(),
    };

    let mut reader =
        PcapReader::open(&scenario.input).map_err(|e| ArmError::Input(e.to_string()))?;
    let mut frames = 0u64;
    let mut writes = 0usize;
    while let Some(frame) = reader.next_frame() {
        let frame = frame.map_err(|e| ArmError::Input(e.to_string()))?;
        let (index, ts) = (frame.index, frame.ts_ns);
        let (bytes, nonblocking) = compose_write(scenario, index, frame.data);
        run.a.set_nonblocking(nonblocking)?;
        let result = match run.a.write(&bytes) {
            Ok(n) => Ok(n),
            Err(e) => Err(SimErrno::from_code(e.0).ok_or_else(|| {
                kerr(
                    format!(
                        "write {writes} (frame {index}, {} bytes) into {WRITE_NAME}: an errno the trace format cannot show",
                        bytes.len()
                    ),
                    e,
                )
            })?),
        };
        frames += 1;
        let stats = tun_stats(&ns.rtnl().stats(run.a.ifindex())?);
        let redirect_stats = match &run.b {
            Some(b) => Some(tun_stats(&ns.rtnl().stats(b.ifindex())?)),
            None => None,
        };
        run.events.push(WriteEvent::Write(WriteRecord {
            write: writes,
            frame: index,
            ts_ns: ts,
            len: bytes.len(),
            nonblocking,
            result,
            stats,
            redirect_stats,
            model: None,
        }));
        run.after(ns, writes, index, ts)?;
        writes += 1;
    }
    run.late()?;
    if run.outgoing > 0 {
        run.notes.push(format!(
            "AF_PACKET on {WRITE_NAME} also saw {} outgoing frame(s) (PACKET_OUTGOING), left out",
            run.outgoing
        ));
    }
    let maps = match &loaded {
        Some(l) => {
            if let Some((_, mode)) = prog {
                let still = ns.rtnl().link(run.a.ifindex())?.xdp;
                if !matches!(still, Some((m, Some(_))) if m == mode.attached()) {
                    run.notes.push(format!(
                        "the program is no longer attached as {:?} at the end: {still:?}",
                        mode.attached()
                    ));
                }
            }
            Some(l.sim_maps()?)
        }
        None => None,
    };
    Ok(RealTapWrite {
        events: run.events,
        maps,
        frames,
        notes: run.notes,
    })
}

impl Replay<'_> {
    /// What the stack received since the last call, then the readers of A and B.
    fn after(&mut self, ns: &mut Netns, write: usize, frame: u64, ts: u64) -> Result<(), ArmError> {
        self.stack(write)?;
        self.drain(ns, false, frame, ts)?;
        if self.b.is_some() {
            self.drain(ns, true, frame, ts)?;
        }
        Ok(())
    }

    /// Drain the AF_PACKET socket into `Stack` events.
    fn stack(&mut self, write: usize) -> Result<usize, ArmError> {
        let mut n = 0;
        while let Some((frame, aux)) = recv_packet(&mut self.packet, Duration::ZERO)? {
            if aux.pkttype == pkttype::OUTGOING {
                self.outgoing += 1;
                continue;
            }
            if aux.truncated {
                self.notes.push(format!(
                    "AF_PACKET truncated a {}-byte frame after write {write}",
                    aux.len
                ));
            }
            let vlan = aux.vlan_valid.then_some(VlanTag {
                proto: if aux.vlan_tpid_valid {
                    aux.vlan_tpid
                } else {
                    sim::skb::ETH_P_8021Q
                },
                tci: aux.vlan_tci,
            });
            self.events.push(WriteEvent::Stack {
                write,
                delivery: Delivery {
                    ifindex: aux.ifindex,
                    frame,
                    vlan,
                    protocol: aux.protocol,
                },
            });
            n += 1;
        }
        Ok(n)
    }

    /// Read A's (or B's) fd until `EAGAIN`, one `Read` event per read.
    fn drain(
        &mut self,
        ns: &mut Netns,
        on_redirect: bool,
        frame: u64,
        ts: u64,
    ) -> Result<usize, ArmError> {
        let (tap, dev) = if on_redirect {
            match (&self.b, &self.scenario.redirect) {
                (Some(b), Some(cfg)) => (b, cfg),
                _ => return Ok(0),
            }
        } else {
            (&self.a, &self.scenario.device)
        };
        tap.set_nonblocking(true)?;
        let plan = &self.scenario.reader;
        let name = tap.name().to_string();
        let mut done = 0usize;
        loop {
            let n = if on_redirect {
                self.reads_b
            } else {
                self.reads_a
            };
            let size = plan.buffer(n);
            if size == 0
                && !tap
                    .wait_readable(Duration::ZERO)
                    .map_err(|e| kerr(format!("poll on {name}"), e))?
            {
                break;
            }
            self.buf.clear();
            self.buf.resize(size, plan.fill);
            let result = match tap.read(&mut self.buf) {
                Err(Errno::EAGAIN) => break,
                Ok(got) => Ok(got),
                Err(e) => Err(SimErrno::from_code(e.0).ok_or_else(|| {
                    kerr(
                        format!(
                            "read {n} ({size}-byte buffer) on {name}: an errno the trace format cannot show"
                        ),
                        e,
                    )
                })?),
            };
            let visible = match result {
                Ok(got) => got,
                Err(_) => size.min(header_len(dev)),
            };
            let stats = tun_stats(&ns.rtnl().stats(tap.ifindex())?);
            self.events.push(WriteEvent::Read {
                on_redirect,
                record: ReadRecord {
                    read: n,
                    frame: Some((frame, ts)),
                    buffer_len: size,
                    result,
                    data: self.buf[..visible.min(self.buf.len())].to_vec(),
                    stats,
                    model: None,
                },
            });
            if on_redirect {
                self.reads_b += 1;
            } else {
                self.reads_a += 1;
            }
            done += 1;
            if done > 4 * TUN_READQ_SIZE + plan.buffers.len() + 64 {
                return Err(ArmError::Kernel(KernelError::new(
                    format!("read loop on {name}"),
                    Cause::Protocol(format!(
                        "{done} reads without EAGAIN; the reader plan never drains the queue"
                    )),
                )));
            }
        }
        Ok(done)
    }

    /// After the last write: anything arriving within [`LATE_WAIT`] is a note (the trace
    /// has only what was there right after each write).
    fn late(&mut self) -> Result<(), ArmError> {
        let until = Instant::now() + LATE_WAIT;
        let mut late = Vec::new();
        loop {
            if let Some((f, aux)) = recv_packet(&mut self.packet, Duration::from_millis(5))? {
                if aux.pkttype != pkttype::OUTGOING {
                    late.push(format!("AF_PACKET on {WRITE_NAME}: {} bytes", f.len()));
                }
            }
            for t in std::iter::once(&self.a).chain(self.b.as_ref()) {
                if t.wait_readable(Duration::ZERO)
                    .map_err(|e| kerr(format!("poll on {}", t.name()), e))?
                {
                    let n = t
                        .drain()
                        .map_err(|e| kerr(format!("drain {}", t.name()), e))?;
                    late.push(format!("{n} frame(s) on {}'s fd", t.name()));
                }
            }
            if Instant::now() >= until {
                break;
            }
        }
        if !late.is_empty() {
            self.notes.push(format!(
                "arrived after the replay's reads (not in the trace): {}",
                late.join("; ")
            ));
        }
        Ok(())
    }
}

/// What to measure in [`xdp_tx_bench`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpTxBenchConfig {
    /// Frames per timed run, per size and mode (each written once and read back once).
    pub frames: u64,
    /// Timed runs; the median is reported.
    pub runs: usize,
    /// Untimed frames before each timed slice.
    pub warmup: u64,
    /// Alternating slices per run (native, generic, per size), so both modes share the
    /// machine's noise.
    pub slices: usize,
}

impl Default for XdpTxBenchConfig {
    fn default() -> Self {
        XdpTxBenchConfig {
            frames: 200_000,
            runs: 5,
            warmup: 500,
            slices: 10,
        }
    }
}

/// One frame size's result.
#[derive(Debug, Clone, PartialEq)]
pub struct XdpTxSizeResult {
    /// Bytes written (and read back) per frame.
    pub size: usize,
    /// frames/s of each run, native (DRV attach, non-blocking writes).
    pub native_runs: Vec<f64>,
    /// frames/s of each run, generic (SKB_MODE attach).
    pub generic_runs: Vec<f64>,
    pub native_fps: f64,
    pub generic_fps: f64,
    /// `native_fps / generic_fps`.
    pub ratio: f64,
    /// A's counters over the whole measurement, native and generic.
    pub native_stats: LinkStats,
    pub generic_stats: LinkStats,
}

/// The whole bench.
#[derive(Debug, Clone, PartialEq)]
pub struct XdpTxBench {
    pub sizes: Vec<XdpTxSizeResult>,
    /// What `IFLA_XDP_ATTACHED` said for the two taps.
    pub attached: (XdpAttached, XdpAttached),
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

/// Write `frame` and read it back `count` times on `tap` (XDP_TX brings it back
/// synchronously on the same fd).
fn tx_pump(tap: &Tap, frame: &[u8], buf: &mut [u8], count: u64) -> Result<(), KernelError> {
    for _ in 0..count {
        let n = tap
            .write(frame)
            .map_err(|e| KernelError::sys(format!("bench write into {}", tap.name()), e))?;
        if n != frame.len() {
            return Err(KernelError::new(
                format!("bench write into {}", tap.name()),
                Cause::Protocol(format!("short write {n} of {}", frame.len())),
            ));
        }
        match tap.read(buf) {
            Ok(got) if got == frame.len() => {}
            Ok(got) => {
                return Err(KernelError::new(
                    format!("bench read from {}", tap.name()),
                    Cause::Protocol(format!("read {got} bytes, wrote {}", frame.len())),
                ))
            }
            Err(Errno::EAGAIN) => {
                return Err(KernelError::new(
                    format!("bench read from {}", tap.name()),
                    Cause::Protocol(
                        "nothing to read right after the write: the program did not send the frame back"
                            .into(),
                    ),
                ))
            }
            Err(e) => return Err(KernelError::sys(format!("bench read from {}", tap.name()), e)),
        }
    }
    Ok(())
}

/// Real frames/s of XDP_TX on a tap, the program attached native (`XDP_FLAGS_DRV_MODE`,
/// non-blocking writes of at most 3456 bytes: build_skb and tun_xdp_act's
/// `tun_xdp_xmit`) vs generic (`XDP_FLAGS_SKB_MODE`: an skb, `do_xdp_generic`,
/// `generic_xdp_tx` into `tun_net_xmit`), each frame written and read back on the same
/// non-blocking, `IFF_NO_PI` fd. `prog` must return XDP_TX for every frame;
/// `frames` are the frames, one per size.
pub fn xdp_tx_bench(
    prog: &Program,
    frames: &[Vec<u8>],
    cfg: &XdpTxBenchConfig,
) -> Result<XdpTxBench, KernelError> {
    if frames.is_empty() || cfg.runs == 0 || cfg.frames == 0 {
        return Err(KernelError::new(
            "xdp tx bench",
            Cause::Protocol("needs frames, runs >= 1 and frames >= 1".into()),
        ));
    }
    Netns::run(|ns| {
        let native = ns.tap_up(&TapConfig::tap("skbxdpn").nonblocking(true))?;
        let generic = ns.tap_up(&TapConfig::tap("skbxdpg").nonblocking(true))?;
        let loaded = LoadedXdp::load(prog)?;
        attach_xdp(ns.rtnl(), native.ifindex(), &loaded, XdpMode::Native)?;
        attach_xdp(ns.rtnl(), generic.ifindex(), &loaded, XdpMode::Generic)?;
        let attached = (
            ns.rtnl()
                .link(native.ifindex())?
                .xdp
                .map_or(XdpAttached::None, |x| x.0),
            ns.rtnl()
                .link(generic.ifindex())?
                .xdp
                .map_or(XdpAttached::None, |x| x.0),
        );
        let mut buf = vec![0u8; 65536];
        // Each frame must come back byte for byte in both modes before anything is timed.
        for f in frames {
            for t in [&native, &generic] {
                tx_pump(t, f, &mut buf, 1)?;
                if buf[..f.len()] != f[..] {
                    return Err(KernelError::new(
                        format!("bench check on {}", t.name()),
                        Cause::Protocol("the frame read back differs from the one written".into()),
                    ));
                }
            }
        }
        let taps = [&native, &generic];
        let mut secs = vec![[0f64; 2]; frames.len()];
        let mut runs = vec![[Vec::new(), Vec::new()]; frames.len()];
        let slices = cfg.slices.max(1) as u64;
        let mut per_size_stats = vec![[LinkStats::default(), LinkStats::default()]; frames.len()];
        for _ in 0..cfg.runs {
            for s in secs.iter_mut() {
                *s = [0.0; 2];
            }
            for k in 0..slices {
                let count = cfg.frames / slices + u64::from(k < cfg.frames % slices);
                for (fi, f) in frames.iter().enumerate() {
                    for (mi, t) in taps.iter().enumerate() {
                        tx_pump(t, f, &mut buf, cfg.warmup)?;
                        let s0 = ns.rtnl().stats(t.ifindex())?;
                        let start = Instant::now();
                        tx_pump(t, f, &mut buf, count)?;
                        secs[fi][mi] += start.elapsed().as_secs_f64();
                        let s1 = ns.rtnl().stats(t.ifindex())?;
                        let d = s1.since(&s0);
                        let acc = &mut per_size_stats[fi][mi];
                        acc.rx_packets += d.rx_packets;
                        acc.rx_bytes += d.rx_bytes;
                        acc.rx_dropped += d.rx_dropped;
                        acc.tx_packets += d.tx_packets;
                        acc.tx_bytes += d.tx_bytes;
                        acc.tx_dropped += d.tx_dropped;
                    }
                }
            }
            for (fi, s) in secs.iter().enumerate() {
                for mi in 0..2 {
                    runs[fi][mi].push(cfg.frames as f64 / s[mi].max(1e-9));
                }
            }
        }
        let sizes = frames
            .iter()
            .zip(runs)
            .zip(per_size_stats)
            .map(|((f, [n, g]), [ns_, gs])| {
                let (nf, gf) = (median(&n), median(&g));
                XdpTxSizeResult {
                    size: f.len(),
                    native_fps: nf,
                    generic_fps: gf,
                    ratio: if gf > 0.0 { nf / gf } else { 0.0 },
                    native_runs: n,
                    generic_runs: g,
                    native_stats: ns_,
                    generic_stats: gs,
                }
            })
            .collect();
        Ok(XdpTxBench { sizes, attached })
    })
}

/// The program a bench or test uses by default: `scenarios/xdp/xdp_tx.o` under `repo`.
pub fn xdp_tx_program(repo: &Path) -> Result<Program, String> {
    let path = repo.join("scenarios/xdp/xdp_tx.o");
    sim::bpf::load_elf_file(&path, "xdp").map_err(|e| e.to_string())
}
