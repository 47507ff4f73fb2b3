//! The `vhost-tx` pipeline: a guest transmits the input frames through vhost_net into tap
//! A (ifindex 2), with the scenario's XDP program and redirect target; the guest fills
//! its TX virtqueue all at once, in bursts, or one packet per kick.

use crate::scenario::{GuestFill, GuestPlan, Scenario};
use crate::tun::write::ModelError;
use crate::tun::DeviceKind;
use crate::vhost::{TxDesc, VhostEvent, VhostNetTx, VhostOps};
use crate::wire::virtio_net_hdr::{Endian, VirtioNetHdr, VnetHdrLayout};

use super::tap_write::{device_payload, TapWriteRun, WriteEvent, IFINDEX_DUT};
use super::{Input, Pipeline, PipelineError};

/// The bytes of TX descriptor chain `index` as the guest writes them: its virtio_net_hdr
/// (`hdr_len` bytes) then the frame, or for an IFF_TUN device the IP packet
/// ([`device_payload`]). The real arm's userspace vhost client writes the same bytes
/// into its ring.
pub fn guest_packet(guest: &GuestPlan, kind: DeviceKind, index: u64, frame: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(guest.hdr_len + frame.len());
    guest_packet_into(&mut bytes, guest, kind, index, frame);
    bytes
}

/// [`guest_packet`] into a reused buffer (its old contents are cleared).
pub fn guest_packet_into(
    bytes: &mut Vec<u8>,
    guest: &GuestPlan,
    kind: DeviceKind,
    index: u64,
    frame: &[u8],
) {
    let frame = device_payload(kind, frame).0;
    bytes.clear();
    bytes.resize(guest.hdr_len, 0);
    let vnet = guest.vnet_for(index);
    // A virtio 1.0 guest is little-endian; the 10 header bytes then num_buffers.
    let mut view =
        VirtioNetHdr::new_unchecked(&mut bytes[..], VnetHdrLayout::Basic, Endian::Little);
    let _ = vnet.emit(&mut view);
    bytes.extend_from_slice(frame);
}

/// The guest's TX ring: QEMU's largest virtio-net tx_queue_size (hw/net/virtio-net.c:
/// VIRTQUEUE_MAX_SIZE 1024). A guest that fills "all at once" runs out of descriptors
/// here, and drivers/net/virtio_net.c: start_xmit then stops the queue and kicks
/// (`kick = !netdev_xmit_more() || netif_xmit_stopped(txq)`). It also bounds what a long
/// replay holds.
pub const GUEST_TX_RING: usize = 1024;

/// Whether the guest kicks once it holds `pending` unkicked packets (the last kick, for
/// whatever is left, comes after the input's last frame).
pub fn kicks_now(guest: &GuestPlan, pending: usize) -> bool {
    match guest.fill {
        GuestFill::All => pending >= GUEST_TX_RING,
        GuestFill::Trickle => true,
        GuestFill::Burst(n) => pending >= n,
    }
}

/// What happened, in order: the worker's events and what the host saw.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VhostTxEvent {
    Worker(VhostEvent),
    Host(WriteEvent),
}

/// A run of the pipeline.
#[derive(Debug)]
pub struct VhostTxRun<'s> {
    scenario: &'s Scenario,
    host: TapWriteRun<'s>,
    /// One vhost-net device per queue: with `[queues]`, worker K has the tap's file K as
    /// its backend (a VMM's queue pairs); else the one worker.
    workers: Vec<VhostNetTx>,
    /// The descriptors each worker's guest queue holds, not yet kicked.
    pending: Vec<Vec<TxDesc>>,
    kicks: usize,
    next_head: u16,
    /// The last input frame queued (index, timestamp): the frame a kick is after.
    last: (u64, u64),
}

impl<'s> VhostTxRun<'s> {
    pub fn new(scenario: &'s Scenario) -> Result<VhostTxRun<'s>, ModelError> {
        let guest = scenario
            .guest
            .as_ref()
            .ok_or_else(|| ModelError("vhost-tx without [vhost]".into()))?;
        let host = TapWriteRun::new(scenario)?;
        let queues = scenario.queues.as_ref().map(|q| q.count);
        let ifindex = host.mq_ifindex().unwrap_or(IFINDEX_DUT);
        let workers: Vec<VhostNetTx> = (0..queues.unwrap_or(1))
            .map(|q| {
                let mut w = VhostNetTx::new(ifindex, guest.hdr_len);
                w.queue = queues.map(|_| q);
                w
            })
            .collect();
        Ok(VhostTxRun {
            scenario,
            host,
            pending: vec![Vec::new(); workers.len()],
            workers,
            kicks: 0,
            next_head: 0,
            last: (0, 0),
        })
    }

    /// The guest queues input frame `index` (header + frame) on the TX ring of its queue
    /// (`[queues] write_on`), after the TUNSETQUEUE calls the VMM makes before it; the
    /// kick is an [`Input::Kick`].
    fn frame(
        &mut self,
        index: u64,
        ts_ns: u64,
        frame: &[u8],
        sink: &mut impl FnMut(VhostTxEvent),
    ) -> Result<(), ModelError> {
        let Some(guest) = self.scenario.guest.as_ref() else {
            return Err(ModelError("vhost-tx without [vhost]".into()));
        };
        self.host
            .queue_events(index, &mut |e| sink(VhostTxEvent::Host(e)))?;
        let q = self
            .scenario
            .queues
            .as_ref()
            .map_or(0, |p| p.write_file(index));
        let mut bytes = self.workers[q].spare_chain();
        guest_packet_into(&mut bytes, guest, self.scenario.device.kind, index, frame);
        self.pending[q].push(TxDesc {
            head: self.next_head,
            packet: index,
            ts_ns,
            bytes,
        });
        self.next_head = self.next_head.wrapping_add(1);
        self.last = (index, ts_ns);
        Ok(())
    }

    /// The guest kicks: each queue with descriptors to send, in order, its vhost_net
    /// worker running handle_tx over them; after each, what the host's stack received.
    fn kick(&mut self, sink: &mut impl FnMut(VhostTxEvent)) -> Result<(), ModelError> {
        let profile = self.scenario.profile;
        let mq = self.scenario.queues.is_some();
        for q in 0..self.workers.len() {
            let worker = &mut self.workers[q];
            if mq && self.pending[q].is_empty() && worker.avail_len() == 0 {
                continue;
            }
            worker.add_avail(std::mem::take(&mut self.pending[q]));
            let mut events = |e| sink(VhostTxEvent::Worker(e));
            if mq {
                self.host.with_file(q, |net, file| {
                    worker.file = file;
                    worker.kick(net, &profile, &mut events)
                })??;
            } else {
                worker.kick(&mut self.host.net, &profile, &mut events)?;
            }
            let k = self.kicks;
            self.kicks += 1;
            self.host.stack(k, &mut |e| sink(VhostTxEvent::Host(e)));
            // Each queue's kick is followed by the host's reads (the [`Input::Read`]
            // after the kicks then finds the files drained).
            if mq {
                self.read(sink);
            }
        }
        Ok(())
    }

    /// The host's readers, after the last kick.
    fn read(&mut self, sink: &mut impl FnMut(VhostTxEvent)) {
        let (frame, ts_ns) = self.last;
        self.host
            .read(frame, ts_ns, &mut |e| sink(VhostTxEvent::Host(e)));
    }

    /// The workers' op counts, summed.
    pub fn ops(&self) -> VhostOps {
        let mut ops = VhostOps::default();
        for w in &self.workers {
            ops.add(&w.ops);
        }
        ops
    }

    /// Give a delivered frame's buffer back to the host's stack.
    pub fn recycle_frame(&mut self, frame: Vec<u8>) {
        self.host.net.recycle_frame(frame);
    }

    pub fn host(&self) -> &TapWriteRun<'s> {
        &self.host
    }
}

impl Pipeline for VhostTxRun<'_> {
    type Event = VhostTxEvent;

    #[inline]
    fn handle(
        &mut self,
        input: Input<'_>,
        events: &mut impl FnMut(VhostTxEvent),
    ) -> Result<(), PipelineError> {
        let model = PipelineError::at;
        match input {
            Input::Frame {
                index,
                ts_ns,
                bytes,
            } => self
                .frame(index, ts_ns, bytes, events)
                .map_err(model(Some(index))),
            Input::Kick => self.kick(events).map_err(model(Some(self.last.0))),
            Input::Read => {
                self.read(events);
                Ok(())
            }
            // The guest's last kick, for whatever it still holds, then the readers.
            Input::End => {
                if self.pending.iter().any(|p| !p.is_empty()) {
                    self.kick(events).map_err(model(None))?;
                    self.read(events);
                }
                Ok(())
            }
            Input::AdvanceTo { .. } => Ok(()),
        }
    }

    type Spare = Vec<u8>;

    #[inline]
    fn spare(event: VhostTxEvent) -> Option<Vec<u8>> {
        match event {
            VhostTxEvent::Host(h) => TapWriteRun::spare(h),
            VhostTxEvent::Worker(_) => None,
        }
    }

    fn recycle(&mut self, frame: Vec<u8>) {
        self.recycle_frame(frame);
    }
}
