//! The real `tap-write` arm with `[queues]`: A is an `IFF_MULTI_QUEUE` tap with
//! `queues.count` files (`TUNSETIFF` on each attaches it as the next queue: tun_set_iff ->
//! tun_attach), `TUNSETQUEUE` before the frames the plan names, each frame written on the
//! file `write_on` says, and after each write every file read until `EAGAIN` in opening
//! order (docs/tap-write.md#multiqueue).
//!
//! The writer is pinned to CPU [`sim::tun::device::XDP_XMIT_CPU`]: a native XDP_TX
//! comes back on `tfiles[smp_processor_id() % numqueues]` (tun_xdp_xmit), the same file
//! the model puts it on.

use sim::scenario::{QueueEvent, QueueOp, QueuePlan, Scenario};
use sim::tun::device::XDP_XMIT_CPU;

use super::{TapSide, WRITE_NAME};
use crate::arm::{tun_stats, ArmError};
use crate::error::KernelError;
use crate::netns::Netns;
use crate::tap::Tap;
use sim::pipeline::tap_write::WriteEvent;

/// A's file 0 and its other files, the steering and filter programs attached, the device
/// up as `[device]` says.
pub(super) fn open_queues(
    ns: &mut Netns,
    scenario: &Scenario,
    plan: &QueuePlan,
    nonblocking: bool,
) -> Result<(Tap, Vec<Tap>), KernelError> {
    let (a, queues) = super::open_queues_down(ns, WRITE_NAME, &scenario.device, plan, nonblocking)?;
    if scenario.device.up {
        ns.rtnl().set_up(a.ifindex(), true)?;
    }
    // tun_xdp_xmit's queue is the writer's CPU's.
    let mut cpu = rustix::thread::CpuSet::new();
    cpu.set(XDP_XMIT_CPU);
    rustix::thread::sched_setaffinity(None, &cpu)
        .map_err(crate::error::from_rustix)
        .map_err(|e| KernelError::sys(format!("sched_setaffinity CPU {XDP_XMIT_CPU}"), e))?;
    Ok((a, queues))
}

impl TapSide<'_> {
    /// TUNSETQUEUE on the event's file, and its `Queue` event with A's counters.
    pub(crate) fn queue_event(&mut self, ns: &mut Netns, e: &QueueEvent) -> Result<(), ArmError> {
        let attach = match e.op {
            QueueOp::Attach => true,
            QueueOp::Detach => false,
            // The scenario check leaves tun-read's writes out of tap-write.
            QueueOp::Write => {
                return Err(ArmError::Unsupported(
                    "queues.event op = \"write\" in tap-write".into(),
                ))
            }
        };
        self.file(e.file).set_queue_attached(attach)?;
        let stats = tun_stats(&ns.rtnl().stats(self.a.ifindex())?);
        self.events.push(WriteEvent::Queue {
            before_frame: e.before_frame,
            file: e.file,
            op: e.op,
            stats,
        });
        Ok(())
    }
}
