//! The real `tap-write` arm with `[queues]`: A is an `IFF_MULTI_QUEUE` tap with
//! `queues.count` files (`TUNSETIFF` on each attaches it as the next queue: tun_set_iff ->
//! tun_attach), `TUNSETQUEUE` before the frames the plan names, each frame written on the
//! file `write_on` says, and after each write every file read until `EAGAIN` in opening
//! order (docs/tap-write.md#multiqueue).
//!
//! The writer is pinned to CPU [`sim::tun::device::XDP_XMIT_CPU`]: a native XDP_TX
//! comes back on `tfiles[smp_processor_id() % numqueues]` (tun_xdp_xmit), the same file
//! the model puts it on.

use std::os::fd::AsRawFd;

use sim::scenario::{QueueEvent, QueueOp, QueuePlan, Scenario, SOCKET_FILTER_SECTION};
use sim::tun::device::XDP_XMIT_CPU;
use sim::tun::TunConfig;

use super::{open_device_mq, TapSide, WRITE_NAME};
use crate::arm::{tun_stats, ArmError};
use crate::error::{Cause, KernelError};
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
    let down = TunConfig {
        up: false,
        ..scenario.device.clone()
    };
    let a = open_device_mq(ns, WRITE_NAME, &down, nonblocking, true)?;
    let mut queues = Vec::new();
    for _ in 1..plan.count {
        queues.push(a.open_queue(true)?);
    }
    // The same instructions the model's VM runs, as BPF_PROG_TYPE_SOCKET_FILTER; the
    // device keeps its reference after the fd closes.
    for (path, steering) in [(&plan.steering, true), (&plan.filter, false)] {
        let Some(path) = path else { continue };
        let prog = sim::bpf::load_socket_filter(path, SOCKET_FILTER_SECTION).map_err(|e| {
            KernelError::new(format!("load {}", path.display()), Cause::Protocol(e))
        })?;
        let fd = crate::bpf::load_socket_filter(&prog)?;
        if steering {
            a.set_steering_ebpf(fd.as_raw_fd())?;
        } else {
            a.set_filter_ebpf(fd.as_raw_fd())?;
        }
    }
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
