//! The real `vhost-tx` arm: a userspace vhost client ([`crate::vhost::VhostNet`]) plays the
//! guest. Tap A is set up from `[device]` as QEMU sets one up (IFF_NO_PI | IFF_VNET_HDR,
//! the negotiated header size) with the scenario's XDP program and redirect target B
//! ([`TapSide`], as the tap-write arm); the vhost device gets A as the backend of its TX
//! queue. Each input frame becomes one descriptor holding the very bytes the simulator's
//! guest writes ([`guest_packet`]), published and kicked as the scenario's fill plan says
//! ([`kicks_now`]). After each kick the arm waits until the worker has returned every
//! descriptor (or made no progress for [`USED_WAIT`]), then records what the stack
//! received and what A's and B's fds return.
//!
//! What the kernel does not expose is not produced: batch boundaries, the path of each
//! packet (TUN_MSG_PTR batch or sendmsg alone), XDP verdicts, requeues and op counts.
//! The trace has the kicks, the used-ring entries per kick and the host's events, and
//! the simulator's records mark everything else model-only (`sim::trace::vhost::worker_record`),
//! so a comparison by marks (`sim::trace::record_diff`) sees the same.

use std::time::Duration;

use sim::bpf::Maps;
use sim::pipeline::tap_write::load_program;
use sim::pipeline::vhost_tx::{guest_packet, kicks_now, VhostTxEvent};
use sim::scenario::{Pipeline, Scenario};
use sim::tun::{TunStats, VnetEndian};
use sim::vhost::VhostEvent;

use super::tap_side::TapSide;
use super::{tun_stats, ArmError};
use crate::bpf::XdpMode;
use crate::netns::Netns;
use crate::vhost::{VhostNet, MAX_RING, VIRTIO_F_VERSION_1};

/// How long a kick may make no progress before the arm stops waiting for the used ring
/// (a stalled descriptor stays in the avail ring, as in the model).
pub const USED_WAIT: Duration = Duration::from_millis(500);

/// What the real arm produced for one scenario.
#[derive(Debug, Clone)]
pub struct RealVhostTx {
    /// Kicks, used-ring returns per kick, and the host's events, in order.
    pub events: Vec<VhostTxEvent>,
    pub maps: Option<Maps>,
    /// A's and B's counters at the end.
    pub stats: (TunStats, Option<TunStats>),
    pub frames: u64,
    pub notes: Vec<String>,
}

/// `Ok(())` when the real kernel can express `scenario`; otherwise the reason.
pub fn expressible(scenario: &Scenario) -> Result<(), ArmError> {
    super::host_profile_only(scenario)?;
    if scenario.pipeline != Pipeline::VhostTx || scenario.guest.is_none() {
        return Err(ArmError::Unsupported(format!(
            "the vhost-tx arm cannot replay a {} scenario",
            scenario.pipeline.name()
        )));
    }
    if scenario.device.vnet_endian == VnetEndian::Big {
        return Err(ArmError::Unsupported(
            "device.vnet_be: a virtio 1.0 guest is little-endian".into(),
        ));
    }
    Ok(())
}

/// Replay `scenario` through vhost_net and a real tap in a fresh namespace.
pub fn run_vhost_tx(scenario: &Scenario) -> Result<RealVhostTx, ArmError> {
    expressible(scenario)?;
    let frames = super::load_frames(scenario)?;
    if frames.len() > MAX_RING {
        return Err(ArmError::Unsupported(format!(
            "{} packets: the arm gives each its own descriptor, at most {MAX_RING}",
            frames.len()
        )));
    }
    let prog = match &scenario.xdp {
        Some(spec) => Some((load_program(spec).map_err(ArmError::Input)?.0, spec.mode)),
        None => None,
    };
    Netns::run(|ns| Ok(replay(ns, scenario, &frames, prog.as_ref())))?
}

fn replay(
    ns: &mut Netns,
    scenario: &Scenario,
    frames: &[(u64, u64, Vec<u8>)],
    prog: Option<&(sim::bpf::Program, XdpMode)>,
) -> Result<RealVhostTx, ArmError> {
    let Some(guest) = scenario.guest.as_ref() else {
        return Err(ArmError::Unsupported("vhost-tx without [vhost]".into()));
    };
    let (mut side, loaded) = TapSide::setup(ns, scenario, prog, true)?;
    let packets: Vec<Vec<u8>> = frames
        .iter()
        .map(|(i, _, f)| guest_packet(guest, scenario.device.kind, *i, f))
        .collect();
    let data: usize = packets.iter().map(|p| p.len().div_ceil(64) * 64).sum();
    // vhost_net_set_features: a 12-byte header with VERSION_1 (or MRG_RXBUF), else 10;
    // no VHOST_NET_F_VIRTIO_NET_HDR, so the tap receives it (sock_hlen = hdr_len).
    let features = if guest.hdr_len == 12 {
        VIRTIO_F_VERSION_1
    } else {
        0
    };
    let num = frames.len().max(1).next_power_of_two().max(256);
    // One vhost-net device per queue: with `[queues]`, device K has A's file K as its
    // backend (VHOST_NET_SET_BACKEND), as a VMM sets up its queue pairs.
    let queues = scenario.queues.as_ref().map_or(1, |q| q.count);
    let mut guest_side = Guest {
        vhosts: Vec::with_capacity(queues),
        pending: vec![0; queues],
        kicks: 0,
        last: (0, 0),
    };
    for q in 0..queues {
        guest_side
            .vhosts
            .push(VhostNet::open(side.file(q), num, data, features)?);
    }
    let mut events = Vec::new();
    for (k, ((index, ts, _), bytes)) in frames.iter().zip(&packets).enumerate() {
        if let Some(plan) = &scenario.queues {
            for e in plan.before(*index) {
                side.queue_event(ns, e)?;
            }
            events.extend(side.events.drain(..).map(VhostTxEvent::Host));
        }
        let q = scenario.queues.as_ref().map_or(0, |p| p.write_file(*index));
        guest_side.vhosts[q].add(k as u16, bytes)?;
        guest_side.pending[q] += 1;
        guest_side.last = (*index, *ts);
        if kicks_now(guest, guest_side.pending.iter().sum()) {
            guest_side.kick_queues(ns, &mut side, &mut events)?;
        }
    }
    if guest_side.pending.iter().any(|&p| p > 0) {
        guest_side.kick_queues(ns, &mut side, &mut events)?;
    }
    let vhosts = guest_side.vhosts;
    let left: u16 = vhosts.iter().map(VhostNet::outstanding).sum();
    if left > 0 {
        side.notes.push(format!(
            "{left} descriptor(s) still in the avail ring at the end"
        ));
    }
    side.notes.push(
        "model-only, not compared: the worker's batch, packet, requeue and stall blocks and the op counts (vhost_net exposes no batch boundaries); compared: kicks, used-ring returns per kick, the stack's frames, A's and B's reads and counters"
            .into(),
    );
    let maps = side.finish(ns, loaded.as_ref(), prog)?;
    events.extend(side.events.drain(..).map(VhostTxEvent::Host));
    let stats = (
        tun_stats(&ns.rtnl().stats(side.a.ifindex())?),
        match &side.b {
            Some(b) => Some(tun_stats(&ns.rtnl().stats(b.ifindex())?)),
            None => None,
        },
    );
    drop(vhosts);
    Ok(RealVhostTx {
        events,
        maps,
        stats,
        frames: frames.len() as u64,
        notes: std::mem::take(&mut side.notes),
    })
}

/// The guest's side: one vhost-net device per queue, the descriptors each holds not yet
/// kicked, the kicks so far and the last packet queued.
struct Guest {
    vhosts: Vec<VhostNet>,
    pending: Vec<usize>,
    kicks: usize,
    last: (u64, u64),
}

impl Guest {
    /// Kick every queue holding descriptors, in order (a single-queue guest its one
    /// queue), as the model's pipeline does.
    fn kick_queues(
        &mut self,
        ns: &mut Netns,
        side: &mut TapSide<'_>,
        events: &mut Vec<VhostTxEvent>,
    ) -> Result<(), ArmError> {
        let mq = side.scenario.queues.is_some();
        for (q, vhost) in self.vhosts.iter_mut().enumerate() {
            if mq && self.pending[q] == 0 && vhost.outstanding() == 0 {
                continue;
            }
            self.pending[q] = 0;
            kick(
                ns,
                vhost,
                mq.then_some(q),
                side,
                events,
                self.kicks,
                self.last,
            )?;
            self.kicks += 1;
        }
        Ok(())
    }
}

/// Publish, kick, wait for the used ring, then the host's view.
fn kick(
    ns: &mut Netns,
    vhost: &mut VhostNet,
    queue: Option<usize>,
    side: &mut TapSide<'_>,
    events: &mut Vec<VhostTxEvent>,
    k: usize,
    (frame, ts): (u64, u64),
) -> Result<(), ArmError> {
    // Counted before the kick: the worker is idle until then (the last kick's wait
    // returned), so these are this kick's and any stalled earlier descriptors.
    events.push(VhostTxEvent::Worker(VhostEvent::Kick {
        available: usize::from(vhost.outstanding()),
        queue,
    }));
    vhost.kick()?;
    let used = vhost.wait_used(USED_WAIT);
    if let Some((head, len)) = used.iter().find(|(_, len)| *len != 0) {
        side.notes.push(format!(
            "used entry for head {head} has len {len}; a TX completion writes 0"
        ));
    }
    if !used.is_empty() {
        events.push(VhostTxEvent::Worker(VhostEvent::Used { heads: used.len() }));
    }
    side.after(ns, k, frame, ts)?;
    events.extend(side.events.drain(..).map(VhostTxEvent::Host));
    Ok(())
}
