//! The real `tap-gro` arm: a scenario's frames written into an `IFF_NAPI` tap in a fresh
//! namespace, and every skb the stack sees after GRO read back with an AF_PACKET socket
//! (`PACKET_VNET_HDR`) on the tap, and on a vxlan or gretap device for VXLAN and GRE-TEB
//! flows. The result is an [`ObservedGro`], which
//! `sim::trace::gro_observed::observed_records` writes in the simulator's tap-gro trace
//! layout.
//!
//! # The setup (one fresh [`Netns::run`] per scenario)
//! - The tap: `IFF_TAP|IFF_NAPI` with the scenario's `[device]` (no PI unless
//!   `no_pi = false`, `IFF_VNET_HDR`, offloads), `O_NONBLOCK` per `[writer]`
//!   (`tun_build_skb`), and the `[xdp]` program attached as the tap-write arm attaches it
//!   (a `[redirect]` tap as B). Each write is the bytes the simulator composes
//!   (`sim::pipeline::tap_write::compose_write`: PI, vnet header, frame). Its name is
//!   unique per run (`groXXXXX`), so that its NAPI thread can be told apart from another
//!   run's.
//! - `rx-gro` per `[gro] feature` (ethtool), `gro_flush_timeout` per
//!   `[gro] flush_timeout_ns` (sysfs in a private mount namespace), both read back.
//! - Plain UDP GRO ([`udp_gro`]): `rx-udp-gro-forwarding` and `rx-gro-list` per
//!   `[gro] rx_udp_gro_forwarding` / `rx_gro_list` (ethtool, read back), and a UDP_GRO
//!   socket on `[::]` for each port of `[gro] udp_gro_socket`.
//! - VXLAN: one vxlan device per port of `[gro] vxlan_ports` and VNI seen in the frames
//!   (VNI 1 for a port no frame uses), so that every listed port has a VXLAN socket with a
//!   `gro_receive`. When frames carry VXLAN, the tap takes the first such frame's outer
//!   destination MAC and every outer destination IPv4 address (/32), and the devices
//!   `local` = the first of them on the tap's link, so that the stack hands the merged
//!   skb to `vxlan_rcv` and the vxlan device's own AF_PACKET socket sees the inner frame.
//! - GRE-TEB ([`gretap`]): one gretap device per (outer source, outer destination, key)
//!   of the frames (`remote`, `local`, `ikey`/`okey` with GRE_KEY), over the tap; the tap
//!   takes the outer destination MAC (unless a VXLAN frame gave one) and addresses as for
//!   VXLAN, so that `gre_rcv` hands the merged skb to the gretap tunnel.
//!
//! # Bursts: several writes in one NAPI poll
//! With `IFF_NAPI`, `tun_get_user` queues the skb on the tfile's write queue and calls
//! `napi_schedule`; the NET_RX softirq runs when the write re-enables bottom halves, so
//! every `write()` is its own poll (`[gro] burst = 1`, the default; before v6.5 a
//! runnable ksoftirqd takes the softirq instead, and the writer lets it run before the
//! next write: `SoftirqWait`). Userspace cannot
//! pass `MSG_MORE` (only `tun_sendmsg`, i.e. vhost-net, can). For `burst > 1` the arm
//! switches the tap's NAPI to threaded mode (`/sys/class/net/TAP/threaded` = 1): then
//! `napi_schedule` only wakes the `napi/TAP-0` kthread. The arm pins that kthread and
//! the writing thread to one CPU and makes the writer `SCHED_FIFO`, so the kthread cannot
//! run while the writer writes the burst; after `burst` writes (or more than
//! `NAPI_POLL_WEIGHT` queued, when `tun_get_user` would schedule NAPI even under
//! `MSG_MORE`) the writer sleeps until the kthread has polled and gone back to sleep
//! (its `voluntary_ctxt_switches` rose and it is in state S). That poll sees the whole
//! burst: exactly the model's `burst`. (A zero `gro_flush_timeout` would not merge
//! anything with one poll per write, and a nonzero one merges across polls only while
//! no jiffy passes; neither is the model's burst, so neither is used for it.)
//!
//! # Time
//! `gro_flush_timeout` keeps skbs held across polls until the hrtimer fires, but
//! `napi_complete_done` still flushes skbs aged in an older jiffy, so a run that crosses a
//! tick would deliver differently. The arm measures HZ (the resolution of
//! `CLOCK_MONOTONIC_COARSE`, which advances with jiffies), waits for a tick, then writes
//! the first frame at the input's phase within its jiffy, and every burst's first frame no
//! earlier than its input timestamp says (later when the machine is slower than the
//! capture: the scenarios here space frames 1 us apart, and the writes take longer). The
//! writer is `SCHED_FIFO` while it writes (also for `burst = 1`), so no ordinary thread
//! of a busy machine gets between two writes. With a `gro_flush_timeout` the arm checks
//! the write times afterwards (no tick inside a write, the input's jiffy steps, no gap the
//! hrtimer could fire in) and runs the scenario again in a fresh namespace when they
//! failed, up to [`ATTEMPTS`] times; that decision never looks at what was delivered.
//! At the end it waits `gro_flush_timeout` plus a margin and collects until the sockets
//! are quiet.
//!
//! # What is observed
//! Per skb on the tap: the bytes, and the `virtio_net_hdr` that `virtio_net_hdr_from_skb`
//! builds (gso type/size, `hdr_len` = skb_headlen, csum start/offset or DATA_VALID).
//! For a GSO skb of a VXLAN (GRE-TEB) flow: the length of the matching (byte-identical)
//! inner frame on a vxlan (gretap) device. Totals: the tap's rx_packets/rx_bytes (netlink). Outgoing frames
//! (`PACKET_OUTGOING`) are not deliveries and are skipped.
//!
//! With `[gro] tap_observer = "none"` no socket is bound to the tap: a packet socket
//! clones every skb it sees (net/packet/af_packet.c: packet_rcv), and gro_cells_receive
//! passes a cloned skb to netif_rx without GRO, so observing the tap would change what
//! the tunnel devices merge. Then only the tunnel devices' sockets report (they see the
//! skbs after gro_cells), plus the tap's counters ([`tunnel_obs`]; docs/gro.md#gro-cells).

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sim::pipeline::tap_write::{compose_write, load_program};
use sim::scenario::{Pipeline, Scenario};
use sim::trace::gro_observed::{ObservedGro, ObservedSetup, ObservedSkb, ObservedWriteError};
use sim::wire::virtio_net_hdr::{Endian, VirtioNetHdrRepr, VnetHdrLayout, VIRTIO_NET_HDR_LEN};

use super::ArmError;
use crate::bpf::{attach_xdp, LoadedXdp};
use crate::error::{Cause, Errno, ErrnoExt, KernelError};
use crate::ethtool::Ethtool;
use crate::netlink::Nla;
use crate::netns::Netns;
use crate::sys::{cvt, ensure_private_netns, poll_one, setsockopt_int};
use crate::sysfs::{gro_flush_timeout, set_gro_flush_timeout, write_net_attr};
use crate::tap::TapConfig;

/// `NAPI_POLL_WEIGHT`: tun's NAPI budget, and the queue length past which
/// `tun_get_user` schedules NAPI whatever `MSG_MORE` says.
pub use sim::gro::NAPI_POLL_WEIGHT;

mod bench;
mod capture;
mod expressible;
mod gretap;
mod ip6gretap;
mod link;
mod sched;
mod tunnel_obs;
mod udp_gro;
mod vxlan;
mod vxlan6;

pub use bench::*;
use capture::Captured;
pub use capture::VnetCapture;
pub use expressible::{expressible, kernel_config};
use expressible::{expressible_with, load_frames};
use gretap::*;
use ip6gretap::*;
use link::*;
use sched::*;
pub use sched::{align_to_tick, host_hz, jiffy_now, NapiThread, RealtimeWriter};
use tunnel_obs::*;
use vxlan::*;
use vxlan6::*;

use crate::packet::SOL_PACKET;
// include/uapi/linux/if_packet.h, from libc.
use libc::{PACKET_OUTGOING, PACKET_VNET_HDR};
const VNET_LEN: usize = VIRTIO_NET_HDR_LEN;
/// Receive buffer of the capture sockets (`SO_RCVBUFFORCE`).
const CAPTURE_RCVBUF: libc::c_int = 32 << 20;

/// How long the arm waits for a quiet capture socket at the end, beyond the flush timeout.
const QUIET: Duration = Duration::from_millis(20);
/// Attempts at a run whose writes keep the input's timing (see [`run_tap_gro`]).
pub const ATTEMPTS: usize = 5;
/// The longest a burst's NAPI poll may take before the arm gives up.
const POLL_WAIT: Duration = Duration::from_secs(2);

/// What the real arm produced for one scenario.
#[derive(Debug, Clone)]
pub struct RealTapGro {
    /// What the sockets saw, for `observed_records`.
    pub observed: ObservedGro,
    /// For each delivery, the input timestamp of the last frame written before the arm
    /// collected it (the arm does not time deliveries; the output pcap uses these).
    pub delivered_ts: Vec<u64>,
    /// Input frames.
    pub frames: u64,
    /// What the trace cannot say (how bursts were made, vxlan matching, lost frames).
    pub notes: Vec<String>,
}

/// Replay `scenario` through the real kernel in a fresh namespace.
///
/// With a `gro_flush_timeout`, what GRO delivers depends on when the writes happen
/// (jiffies, the hrtimer). A run whose writes did not keep the input's timing (a tick
/// inside a write, other jiffy steps than the input's timestamps give, a gap the hrtimer
/// could fire in) is discarded and run again in a fresh namespace, up to [`ATTEMPTS`]
/// times; this is decided from the write times alone, never from what was delivered.
pub fn run_tap_gro(scenario: &Scenario) -> Result<RealTapGro, ArmError> {
    let frames = load_frames(scenario)?;
    expressible_with(scenario, &frames)?;
    let mut retried = Vec::new();
    loop {
        let (mut real, timing) = Netns::run(|ns| Ok(replay(ns, scenario, &frames)))??;
        match timing {
            Some(why) if retried.len() + 1 < ATTEMPTS => retried.push(why),
            timing => {
                if !retried.is_empty() {
                    real.notes.push(format!(
                        "{} earlier attempt(s) discarded because the writes did not keep the input's timing: {}",
                        retried.len(),
                        retried.join("; ")
                    ));
                }
                if let Some(why) = timing {
                    real.notes.push(format!(
                        "after {ATTEMPTS} attempts the writes still did not keep the input's timing ({why}); this run's deliveries may not be the scenario's"
                    ));
                }
                return Ok(real);
            }
        }
    }
}

/// Take what `cap` has queued now; each new capture gets the input time `last`.
fn collect(
    cap: &mut Option<VnetCapture>,
    captured: &mut Vec<Captured>,
    ts: &mut Vec<u64>,
    last: u64,
) -> Result<(), KernelError> {
    if let Some(cap) = cap {
        cap.drain_now(captured)?;
    }
    ts.resize(captured.len(), last);
    Ok(())
}

/// The length of the first frame of `pool` not yet `used` that is byte-identical to
/// `want` (marked used now).
fn take_identical(pool: &[(usize, Vec<u8>)], used: &mut [bool], want: &[u8]) -> Option<usize> {
    let i = (0..pool.len()).find(|&i| !used[i] && pool[i].1 == want)?;
    used[i] = true;
    Some(pool[i].1.len())
}

/// One attempt; the second value says why its timing did not follow the input's, if it
/// did not.
fn replay(
    ns: &mut Netns,
    scenario: &Scenario,
    frames: &[(u64, u64, Vec<u8>)],
) -> Result<(RealTapGro, Option<String>), ArmError> {
    let plan = &scenario.gro;
    let mut notes = Vec::new();
    let name = unique_tap_name();
    // The scenario's [device] (IFF_NAPI, PI and vnet header as it says), brought up
    // below once its address is set; the writes are sim's compose_write bytes.
    let dev = sim::tun::TunConfig {
        up: false,
        ..scenario.device.clone()
    };
    let mut nonblocking = scenario.writer.nonblocking;
    let tap = crate::arm::tap_side::open_device(ns, &name, &dev, nonblocking)?;
    let redirect = match &scenario.redirect {
        Some(cfg) => Some(crate::arm::tap_side::open_device(
            ns,
            &format!("{name}b"),
            cfg,
            true,
        )?),
        None => None,
    };
    // The [xdp] program, attached as tap-write's arm does (devmaps point at B).
    let _loaded = match &scenario.xdp {
        Some(spec) => {
            let (prog, _) = load_program(spec).map_err(ArmError::Input)?;
            let l = LoadedXdp::load(&prog)?;
            if let Some(b) = &redirect {
                l.fill_devmaps(b.ifindex())?;
            }
            attach_xdp(ns.rtnl(), tap.ifindex(), &l, spec.mode)?;
            Some(l)
        }
        None => None,
    };
    let vx = vxlan_setup(frames, &plan.vxlan_ports);
    let gt = gretap_setup(frames);
    let gt6 = ip6gretap_setup(frames);
    let vx6 = vxlan6_setup(frames, &plan.vxlan_ports);
    if let Some(mac) = vx.tap_mac.or(gt.tap_mac).or(vx6.tap_mac).or(gt6.tap_mac) {
        ns.rtnl().set_address(tap.ifindex(), mac)?;
    }
    let mut addrs = vx.addrs.clone();
    addrs.extend(gt.addrs.iter().filter(|a| !vx.addrs.contains(a)));
    for a in &addrs {
        add_ipv4(tap.ifindex(), *a, 32)?;
    }
    let mut addrs6: Vec<[u8; 16]> = vx6.addrs.clone();
    addrs6.extend(gt6.addrs.iter().filter(|a| !vx6.addrs.contains(a)));
    if !addrs6.is_empty() {
        enable_ipv6_without_autoconf(&name)?;
    }
    for a in &addrs6 {
        add_ipv6(tap.ifindex(), *a)?;
    }
    ns.rtnl().set_up(tap.ifindex(), true)?;
    let mut et = Ethtool::new()?;
    if et.get_feature(&name, "rx-gro")? != plan.feature {
        et.set_feature(&name, "rx-gro", plan.feature)?;
    }
    let feature = et.get_feature(&name, "rx-gro")?;
    let (_udp_socks, udp_gro) = udp_gro::udp_gro_setup(&mut et, &name, plan)?;
    let vx_devs = create_vxlans(ns, &vx, tap.ifindex())?;
    let vx6_devs = create_vxlan6s(ns, &vx6, tap.ifindex())?;
    let gt_devs = create_gretaps(ns, &gt, tap.ifindex())?;
    let gt6_devs = create_ip6gretaps(ns, &gt6, tap.ifindex())?;
    set_gro_flush_timeout(&name, plan.flush_timeout_ns)?;
    let timeout = gro_flush_timeout(&name)?;
    let (gro_max_size, gro_ipv4_max_size) = set_gro_sizes(ns, tap.ifindex(), plan)?;
    let hz = host_hz()?;
    // `[gro] tap_observer = "none"`: no packet socket on the tap, so gro_cells sees its
    // skbs uncloned (docs/gro.md#gro-cells).
    let tap_observed = plan.tap_observer == sim::gro::cells::TapObserver::AfPacket;
    let mut cap = if tap_observed {
        Some(VnetCapture::bind(tap.ifindex())?)
    } else {
        None
    };
    // IPv4 vxlan devices, then IPv6 ones: the model's TunnelDev order.
    let mut vcaps = vx_devs
        .iter()
        .chain(&vx6_devs)
        .map(|(_, idx, _, _)| VnetCapture::bind(*idx))
        .collect::<Result<Vec<_>, _>>()?;
    // gretap devices, then ip6gretap ones: the model's TunnelDev order.
    let mut gcaps = gt_devs
        .iter()
        .chain(&gt6_devs)
        .map(|(_, idx)| VnetCapture::bind(*idx))
        .collect::<Result<Vec<_>, _>>()?;
    let mut napi = if plan.burst > 1 {
        Some(NapiThread::start(&name)?)
    } else {
        None
    };
    // Without CAP_SYS_NICE the single-write case still runs (the timing check below
    // catches a preempted writer); bursts cannot.
    // One write per poll: the writer pinned where it is, and, when every poll flushes
    // (no gro_flush_timeout), that CPU's ksoftirqd let run after each write it may have
    // been left to (SoftirqWait). With a timeout GRO holds skbs across polls anyway, and
    // the check's cost per write would stretch a long run past a jiffy.
    let (rt, mut softirq) = match napi {
        Some(_) => (None, None),
        None => {
            let cpu = current_cpu()?;
            let rt = match RealtimeWriter::enter(Some(cpu)) {
                Ok(g) => Some(g),
                Err(e) => {
                    notes.push(format!("the writer runs without SCHED_FIFO: {e}"));
                    None
                }
            };
            (rt, (timeout == 0).then(|| SoftirqWait::on(cpu)))
        }
    };
    let backend = match &napi {
        Some(t) => format!(
            "real (AF_PACKET PACKET_VNET_HDR; bursts: threaded NAPI, {}, writer SCHED_FIFO)",
            t.describe()
        ),
        None => format!(
            "real (AF_PACKET PACKET_VNET_HDR; every write() polls NAPI{})",
            if rt.is_some() {
                ", writer SCHED_FIFO"
            } else {
                ""
            }
        ),
    };
    let vxlan_ports: Vec<u16> = vx_devs
        .iter()
        .chain(&vx6_devs)
        .map(|d| d.2)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if vx_devs.iter().any(|d| vx.addrs.is_empty() || d.3 != 1) {
        let list: Vec<String> = vx_devs
            .iter()
            .map(|(n, _, p, v)| format!("{n} port {p} vni {v}"))
            .collect();
        notes.push(format!("vxlan devices: {}", list.join(", ")));
    }
    if !gt_devs.is_empty() {
        let list: Vec<String> = gt_devs
            .iter()
            .zip(&gt.tunnels)
            .map(|((n, _), t)| format!("{n} {}", t.describe()))
            .collect();
        notes.push(format!("gretap devices: {}", list.join(", ")));
    }
    for t in &gt.mixed_csum {
        notes.push(format!(
            "gretap {}: the frames mix GRE checksums and none; ip_tunnel_rcv drops the plain ones",
            t.describe()
        ));
    }
    ipv6_tunnel_notes(&vx6_devs, &gt6_devs, &gt6, &mut notes);

    let mut captured: Vec<Captured> = Vec::new();
    let mut captured_ts: Vec<u64> = Vec::new();
    let mut write_errors = Vec::new();
    let mut written = 0u64;
    let jiffy = Duration::from_nanos(1_000_000_000 / u64::from(hz.max(1)));
    let ts0 = frames.first().map_or(0, |f| f.1);
    let phase = Duration::from_nanos(ts0 % jiffy.as_nanos() as u64);
    align_to_tick(phase, jiffy);
    let t0 = Instant::now();
    let mut pending = 0usize;
    let mut idle_bursts = 0usize;
    let mut last_ts = ts0;
    let jiffy_ns = jiffy.as_nanos() as u64;
    let mut times = Vec::with_capacity(frames.len());
    for (index, ts, data) in frames {
        if pending == 0 {
            let due = Duration::from_nanos(ts.saturating_sub(ts0));
            while t0.elapsed() < due {
                // A second clock read: it may already be past `due`.
                let left = due.saturating_sub(t0.elapsed());
                if left > Duration::from_micros(200) {
                    std::thread::sleep(left - Duration::from_micros(100));
                } else {
                    std::hint::spin_loop();
                }
            }
            if let Some(t) = napi.as_mut() {
                t.mark()?;
            }
        }
        let (bytes, nb) = compose_write(scenario, *index, data);
        if nb != nonblocking {
            tap.set_nonblocking(nb)?;
            nonblocking = nb;
        }
        let wire = bytes;
        last_ts = *ts;
        let (before, jiffy_before) = (Instant::now(), jiffy_now(jiffy_ns));
        let result = tap.write(&wire);
        times.push(WriteTime {
            ts: *ts,
            before,
            after: Instant::now(),
            jiffy_before,
            jiffy_after: jiffy_now(jiffy_ns),
        });
        match result {
            Ok(n) if n == wire.len() => written += 1,
            Ok(n) => {
                return Err(ArmError::Kernel(KernelError::new(
                    format!("write of frame {index} into {name}"),
                    Cause::Protocol(format!("short write: {n} of {} bytes", wire.len())),
                )))
            }
            Err(e) => {
                write_errors.push(ObservedWriteError {
                    frame: *index,
                    ts_ns: *ts,
                    len: data.len(),
                    errno: e.name().to_string(),
                });
                continue;
            }
        }
        pending += 1;
        match napi.as_mut() {
            Some(t) => {
                if pending >= plan.burst || pending > NAPI_POLL_WEIGHT {
                    pending = 0;
                    poll_burst(t, scenario, &mut idle_bursts)?;
                    collect(&mut cap, &mut captured, &mut captured_ts, last_ts)?;
                }
            }
            None => {
                pending = 0;
                if let Some(w) = softirq.as_mut() {
                    w.let_run()?;
                }
                collect(&mut cap, &mut captured, &mut captured_ts, last_ts)?;
            }
        }
    }
    if let (Some(t), true) = (napi.as_mut(), pending > 0) {
        poll_burst(t, scenario, &mut idle_bursts)?;
    }
    if idle_bursts > 0 {
        notes.push(format!(
            "{idle_bursts} burst(s) queued nothing for NAPI (the XDP program consumed every frame)"
        ));
    }
    drop(rt);
    if let Some(w) = softirq.as_ref().filter(|w| w.waits > 0) {
        notes.push(format!(
            "{} write(s) waited for ksoftirqd before the next (their NET_RX softirq was left to it)",
            w.waits
        ));
    }
    let timing = timing_problem(&times, hz, timeout);
    // The gro_flush_timeout hrtimer, then whatever is still in flight.
    std::thread::sleep(Duration::from_nanos(timeout) + Duration::from_millis(2));
    let quiet = QUIET + Duration::from_nanos(timeout.saturating_mul(2));
    if let Some(cap) = cap.as_mut() {
        cap.drain_quiet(quiet, &mut captured)?;
    }
    captured_ts.resize(captured.len(), last_ts);
    let mut received = |idx: u32| ns.rtnl().stats(idx).map(|st| st.rx_packets > 0);
    let vx_received = vx_devs
        .iter()
        .chain(&vx6_devs)
        .map(|(_, idx, _, _)| received(*idx))
        .collect::<Result<Vec<_>, _>>()?;
    let gt_received = gt_devs
        .iter()
        .chain(&gt6_devs)
        .map(|(_, idx)| received(*idx))
        .collect::<Result<Vec<_>, _>>()?;
    let vx_captured = drain_tunnels(&mut vcaps, &vx_received)?;
    let gt_captured = drain_tunnels(&mut gcaps, &gt_received)?;
    let untag = |v: &[(usize, Captured)]| -> Vec<(usize, Vec<u8>)> {
        v.iter().map(|(k, (_, b))| (*k, b.clone())).collect()
    };
    let (vx_frames, gt_frames) = (untag(&vx_captured), untag(&gt_captured));
    let tunnel = if plan.cells() {
        tunnel_deliveries(
            (&vx_devs, &vx6_devs),
            &vx_captured,
            (&gt, &gt6),
            &gt_captured,
            &mut notes,
        )
    } else {
        Vec::new()
    };
    if let Some(t) = &napi {
        notes.push(format!(
            "bursts: threaded NAPI, {}; {} polls waited for",
            t.describe(),
            t.polls
        ));
    }
    drop(napi);
    let stats = ns.rtnl().stats(tap.ifindex())?;

    // Deliveries, and the tunnel device's frame for each GSO skb of a VXLAN or GRE-TEB flow.
    let mut used = vec![false; vx_frames.len()];
    let mut gt_used = vec![false; gt_frames.len()];
    let mut deliveries = Vec::new();
    for (n, (vnet, bytes)) in captured.into_iter().enumerate() {
        let mut skb = ObservedSkb {
            bytes,
            ..ObservedSkb::default()
        };
        match vnet {
            Ok(v) => skb.vnet = Some(v),
            Err(e) => {
                notes.push(format!("delivery {n}: {e}"));
                skb.error = Some(e);
            }
        }
        if skb.vnet.is_some_and(|v| v.gso_type != 0) {
            if let Some(inner) = vxlan_of(&skb.bytes, &vxlan_ports)
                .map(|v| v.inner)
                .or_else(|| vxlan6_of(&skb.bytes, &vxlan_ports).map(|v| v.inner))
            {
                skb.vxlan_dev_len = take_identical(&vx_frames, &mut used, &skb.bytes[inner..]);
                if skb.vxlan_dev_len.is_none() {
                    notes.push(format!(
                        "delivery {n} (GSO, VXLAN) has no byte-identical inner frame on a vxlan device"
                    ));
                }
            } else if let Some(inner) = gre_teb_of(&skb.bytes)
                .map(|g| g.inner)
                .or_else(|| gre6_teb_of(&skb.bytes).map(|g| g.inner))
            {
                skb.gretap_dev_len = take_identical(&gt_frames, &mut gt_used, &skb.bytes[inner..]);
                if skb.gretap_dev_len.is_none() {
                    notes.push(format!(
                        "delivery {n} (GSO, GRE-TEB) has no byte-identical inner frame on a gretap device"
                    ));
                }
            }
        }
        deliveries.push(skb);
    }
    let segs_seen: usize = deliveries
        .iter()
        .map(|d| match &d.vnet {
            Some(v) if v.gso_type != 0 => {
                sim::trace::gro_observed::derived_segs(&d.bytes, v.gso_size, &vxlan_ports)
                    .unwrap_or(1)
            }
            _ => 1,
        })
        .sum();
    if tap_observed && segs_seen as u64 != written {
        notes.push(format!(
            "{written} frames written, {segs_seen} segments delivered on {name}"
        ));
    }
    let vx_seen = vx_frames.len();
    let vx_matched = used.iter().filter(|u| **u).count();
    if vx_seen > 0 {
        notes.push(format!(
            "vxlan devices received {vx_seen} frame(s), {vx_matched} matched to GSO skbs on the tap"
        ));
    }
    let gt_matched = gt_used.iter().filter(|u| **u).count();
    if !gt_devs.is_empty() || !gt6_devs.is_empty() {
        let mut counters = Vec::new();
        for (dname, idx) in gt_devs.iter().chain(&gt6_devs) {
            let st = ns.rtnl().stats(*idx)?;
            counters.push(format!(
                "{dname} rx_packets {} rx_errors {} rx_crc_errors {} rx_dropped {}",
                st.rx_packets, st.rx_errors, st.rx_crc_errors, st.rx_dropped
            ));
        }
        notes.push(format!(
            "gretap devices received {} frame(s), {gt_matched} matched to GSO skbs on the tap ({})",
            gt_frames.len(),
            counters.join("; ")
        ));
    }
    let setup = ObservedSetup {
        backend,
        feature,
        teb_gro: plan.teb_gro,
        vlan_gro: plan.vlan_gro,
        vxlan_ports,
        burst: plan.burst,
        flush_timeout_ns: timeout,
        hz,
        weight: NAPI_POLL_WEIGHT,
        udp_gro,
        gro_max_size,
        gro_ipv4_max_size,
    };
    let real = RealTapGro {
        observed: ObservedGro {
            setup,
            write_errors,
            deliveries,
            written,
            rx_packets: stats.rx_packets,
            rx_bytes: stats.rx_bytes,
            tunnel,
        },
        delivered_ts: captured_ts,
        frames: frames.len() as u64,
        notes,
    };
    Ok((real, timing))
}

#[cfg(test)]
mod tests;
