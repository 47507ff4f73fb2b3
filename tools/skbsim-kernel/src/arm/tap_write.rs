//! The real `tap-write` arm: each input frame is written by userspace into tap A with the
//! scenario's framing (PI, virtio-net header, truncation: `compose_write`, the
//! simulator's own function) and blocking mode, through the scenario's XDP program (the
//! very bytes the simulator runs, loaded with skbsim's ELF loader and attached native or
//! generic); then what the stack received (AF_PACKET on A) and what A's and B's fds
//! return are recorded. The result is the simulator's own [`WriteEvent`] list with
//! `model: None`, so the same renderers (`sim::trace::write`) write both traces.
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
//! A's and B's `IFLA_STATS64`. Then, as the model does: the AF_PACKET socket is
//! drained into `Stack` events (frames with `PACKET_OUTGOING` are left out: they are A
//! transmitting, not the stack receiving), A's fd is read (non-blocking) until `EAGAIN`
//! with the scenario's buffer sizes and fill byte, then B's. Everything here is
//! synchronous inside `write()` on 6.18 (`netif_receive_skb`, the XDP_TX / devmap flush,
//! NAPI polled on `local_bh_enable`); at the end the arm waits [`LATE_WAIT`] and notes
//! anything that arrived late.

use std::path::Path;
use std::time::Instant;

use sim::bpf::{Maps, Program};
use sim::errno::Errno as SimErrno;
use sim::pcap::EthernetInput;
use sim::pipeline::tap_write::{compose_write, load_program, WriteEvent, WriteRecord};
use sim::scenario::{Pipeline, Scenario};
use sim::tun::VnetEndian;

use super::tap_side::TapSide;
pub use super::tap_side::{open_device, LATE_WAIT, REDIRECT_NAME, SNDBUF, WRITE_NAME};
use super::{kerr, tun_stats, ArmError};
use crate::bpf::{attach_xdp, LoadedXdp, XdpMode};
use crate::error::{Cause, Errno, KernelError};
use crate::netns::Netns;
use crate::rtnl::{LinkStats, XdpAttached};
use crate::tap::{Tap, TapConfig};

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
    super::host_profile_only(scenario)?;
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
    let reader = EthernetInput::open(&scenario.input, scenario.link)
        .map_err(|e| ArmError::Input(e.to_string()))?;
    drop(reader);
    let prog = match &scenario.xdp {
        Some(spec) => Some((load_program(spec).map_err(ArmError::Input)?.0, spec.mode)),
        None => None,
    };
    Netns::run(|ns| Ok(replay(ns, scenario, prog.as_ref())))?
}

fn replay(
    ns: &mut Netns,
    scenario: &Scenario,
    prog: Option<&(Program, XdpMode)>,
) -> Result<RealTapWrite, ArmError> {
    let (mut run, loaded) = TapSide::setup(ns, scenario, prog, scenario.writer.nonblocking)?;
    let mut reader = EthernetInput::open(&scenario.input, scenario.link)
        .map_err(|e| ArmError::Input(e.to_string()))?;
    let mut frames = 0u64;
    let mut writes = 0usize;
    while let Some(frame) = reader.next_frame() {
        let frame = frame.map_err(|e| ArmError::Input(e.to_string()))?;
        let (index, ts) = (frame.index, frame.ts_ns);
        if let Some(plan) = &scenario.queues {
            for e in plan.before(index) {
                run.queue_event(ns, e)?;
            }
        }
        let file = scenario.queues.as_ref().map(|p| p.write_file(index));
        let (bytes, nonblocking) = compose_write(scenario, index, frame.data);
        let tap = run.file(file.unwrap_or(0));
        tap.set_nonblocking(nonblocking)?;
        let result = match tap.write(&bytes) {
            Ok(n) => Ok(n),
            Err(e) => Err(SimErrno::from_code(e.code()).ok_or_else(|| {
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
            file,
            result,
            stats,
            redirect_stats,
            model: None,
        }));
        run.after(ns, writes, index, ts)?;
        writes += 1;
    }
    let maps = run.finish(ns, loaded.as_ref(), prog)?;
    Ok(RealTapWrite {
        events: run.events,
        maps,
        frames,
        notes: run.notes,
    })
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
