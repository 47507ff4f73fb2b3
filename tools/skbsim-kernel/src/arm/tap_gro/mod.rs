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
//! failed, up to [`ATTEMPTS`] times; so it does, with or without a timeout, when the NAPI
//! kthread ran while a burst was being written (its CPU time or context switches moved:
//! the burst was polled in two parts). That decision never looks at what was delivered.
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
mod replay;
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
use replay::replay;
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
                        "{} earlier attempt(s) discarded because the writes did not keep the input's timing or bursts: {}",
                        retried.len(),
                        retried.join("; ")
                    ));
                }
                if let Some(why) = timing {
                    real.notes.push(format!(
                        "after {ATTEMPTS} attempts the writes still did not keep the input's timing or bursts ({why}); this run's deliveries may not be the scenario's"
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

#[cfg(test)]
mod tests;
