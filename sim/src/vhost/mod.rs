//! vhost_net's TX path into a tap (drivers/vhost/net.c: handle_tx_copy,
//! vhost_net_build_xdp, vhost_tx_batch, vhost_exceeds_weight; docs/vhost-tx.md).
//!
//! A guest fills a TX virtqueue with descriptor chains (a virtio_net_hdr plus a frame);
//! the vhost worker turns them into XDP buffers and hands up to VHOST_NET_BATCH of them
//! to tun in one sendmsg (v4.20+), or sends them one by one with MSG_MORE (4.19 and
//! whenever batching is impossible). No I/O: the guest, the worker and tun are driven by
//! explicit calls, so the same scenario runs under both profiles.

pub mod build_xdp;

use std::collections::VecDeque;

use crate::errno::Errno;
use crate::net::Net;
use crate::pool::Pool;
use crate::profile::KernelProfile;
use crate::tun::sendmsg::{BatchBuff, XdpOneOutcome};
use crate::tun::write::{Fate, ModelError, WriteOpts, XdpReport, XdpWhere};

use build_xdp::vhost_net_build_xdp;

/// VHOST_NET_BATCH: descriptors per batched sendmsg and per used-ring update.
pub const VHOST_NET_BATCH: usize = 64;
/// VHOST_NET_PKT_WEIGHT: packets per handle_tx run before the worker requeues itself.
pub const VHOST_NET_PKT_WEIGHT: usize = 256;
/// VHOST_NET_WEIGHT: bytes per handle_tx run before the worker requeues itself.
pub const VHOST_NET_WEIGHT: usize = 0x80000;

/// One descriptor chain the guest made available: its head id and its bytes (the
/// virtio_net_hdr the socket receives, then the frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxDesc {
    pub head: u16,
    /// The guest's packet number (the input frame index).
    pub packet: u64,
    pub ts_ns: u64,
    pub bytes: Vec<u8>,
}

/// Why vhost_tx_batch ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushReason {
    /// done_idx reached VHOST_NET_BATCH.
    BatchFull,
    /// The avail ring is empty (flushed before re-enabling notifications, 6.17+).
    RingEmpty,
    /// A packet too big for an XDP buffer (-ENOSPC) goes alone; the batch goes first.
    TooBig,
    /// vhost_net_build_xdp failed otherwise: flush, put the descriptor back, stop.
    BuildError,
    /// The end of a handle_tx run (weight reached or the loop stopped).
    EndOfRun,
}

impl FlushReason {
    pub fn name(self) -> &'static str {
        match self {
            FlushReason::BatchFull => "batch-full",
            FlushReason::RingEmpty => "ring-empty",
            FlushReason::TooBig => "too-big",
            FlushReason::BuildError => "build-error",
            FlushReason::EndOfRun => "end-of-run",
        }
    }
}

/// What became of one guest packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketFate {
    pub packet: u64,
    pub ts_ns: u64,
    /// How it reached tun: in a batch (its number) or alone with or without MSG_MORE.
    pub via: Via,
    pub result: Result<(), Errno>,
    pub xdp: Option<XdpReport>,
    pub fate: Fate,
}

/// How a packet was handed to tun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Batch(u32),
    Single { more: bool },
}

/// What the worker did, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VhostEvent {
    /// The guest made descriptors available and kicked (with `[queues]`: the virtqueue
    /// whose vhost device has file `queue` of the tap as its backend).
    Kick {
        available: usize,
        queue: Option<usize>,
    },
    /// One TUN_MSG_PTR sendmsg: its batch number, its packets and why it was sent.
    Batch {
        batch: u32,
        packets: Vec<u64>,
        reason: FlushReason,
        xdp_flushes: u32,
    },
    /// A packet's fate (after its batch, or after its own sendmsg).
    Packet(PacketFate),
    /// vhost_add_used_and_signal_n for `heads` descriptors.
    Used { heads: usize },
    /// vhost_exceeds_weight: the worker requeued itself.
    Requeue { packets: usize, bytes: usize },
    /// The worker stopped with a descriptor put back (a transient sendmsg error, or
    /// vhost_net_build_xdp failing with another error than -ENOSPC).
    Stall { packet: u64, errno: Errno },
}

/// Operation counts for the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VhostOps {
    pub sendmsg_batched: u64,
    pub sendmsg_single: u64,
    pub xdp_flushes: u64,
    pub used_updates: u64,
    pub signals: u64,
    pub requeues: u64,
    pub handle_tx_runs: u64,
    /// Bytes copied from guest buffers (into page frags or skbs).
    pub bytes_copied: u64,
    /// put_page calls for dropped buffers, released in bulk at the end of a batch.
    pub page_puts: u64,
}

impl VhostOps {
    /// Another worker's counts added to these (a multiqueue device's workers, summed).
    pub fn add(&mut self, o: &VhostOps) {
        let VhostOps {
            sendmsg_batched,
            sendmsg_single,
            xdp_flushes,
            used_updates,
            signals,
            requeues,
            handle_tx_runs,
            bytes_copied,
            page_puts,
        } = *o;
        self.sendmsg_batched += sendmsg_batched;
        self.sendmsg_single += sendmsg_single;
        self.xdp_flushes += xdp_flushes;
        self.used_updates += used_updates;
        self.signals += signals;
        self.requeues += requeues;
        self.handle_tx_runs += handle_tx_runs;
        self.bytes_copied += bytes_copied;
        self.page_puts += page_puts;
    }
}

/// The vhost-net TX worker of one virtqueue with a tap backend at `ifindex`.
#[derive(Debug, Clone)]
pub struct VhostNetTx {
    pub ifindex: u32,
    /// The virtio_net_hdr size the socket receives (sock_hlen = vhost_hlen's complement:
    /// without VHOST_NET_F_VIRTIO_NET_HDR the tap gets the header).
    pub sock_hlen: usize,
    /// The backend file's side of each sendmsg (tfile->queue_index, detached); vhost's
    /// sendmsg is always MSG_DONTWAIT.
    pub file: WriteOpts,
    /// `[queues]`: which of the tap's files is the backend (for the trace).
    pub queue: Option<usize>,
    avail: VecDeque<TxDesc>,
    /// The batched descriptors and the XDP buffers built from them, index for index.
    batched: Vec<TxDesc>,
    buffs: Vec<BatchBuff>,
    /// Descriptor bytes and XDP buffers done with, for the next packets.
    spare_chains: Pool<Vec<u8>, SPARE_CHAINS>,
    spare_xdp: Pool<Vec<u8>, VHOST_NET_BATCH>,
    done_idx: usize,
    batches: u32,
    /// Bytes used in the current 32 KiB page frag, for the bulk page release count.
    frag_used: usize,
    frag_pages: u64,
    pub ops: VhostOps,
}

/// Sent descriptors' buffers kept for the guest's next ones: a full virtqueue
/// (VIRTQUEUE_MAX_SIZE, 1024), as a guest that fills its ring at once has that many
/// outstanding between kicks.
const SPARE_CHAINS: usize = 1024;

/// The page_frag vhost refills: SKB_FRAG_PAGE_ORDER pages (32 KiB on x86_64).
const FRAG_PAGE: usize = 32768;

/// What vhost_net_build_xdp made of one descriptor in handle_tx_copy.
enum Built {
    /// Copied into an XDP buffer of the batch.
    Batched,
    /// Too big for an XDP buffer (-ENOSPC): sent alone after the batch.
    SendAlone(TxDesc),
    /// Another error: the descriptor is back on the ring and the run stops.
    Stop,
}

impl VhostNetTx {
    pub fn new(ifindex: u32, sock_hlen: usize) -> VhostNetTx {
        VhostNetTx {
            ifindex,
            sock_hlen,
            file: WriteOpts {
                nonblocking: true,
                rx_queue: 0,
                detached: false,
            },
            queue: None,
            avail: VecDeque::new(),
            batched: Vec::new(),
            buffs: Vec::new(),
            spare_chains: Pool::default(),
            spare_xdp: Pool::default(),
            done_idx: 0,
            batches: 0,
            frag_used: 0,
            frag_pages: 0,
            ops: VhostOps::default(),
        }
    }

    /// The guest adds descriptor chains to the avail ring.
    pub fn add_avail(&mut self, descs: impl IntoIterator<Item = TxDesc>) {
        self.avail.extend(descs);
    }

    pub fn avail_len(&self) -> usize {
        self.avail.len()
    }

    /// A buffer for the guest to write its next descriptor's bytes into: one of a sent
    /// descriptor's, or a new one (any contents).
    pub fn spare_chain(&mut self) -> Vec<u8> {
        self.spare_chains.take_buf(0)
    }

    /// The guest kicks: the worker runs handle_tx until the ring is empty, requeueing
    /// itself whenever it reaches the weight limit.
    pub fn kick(
        &mut self,
        net: &mut Net,
        profile: &KernelProfile,
        sink: &mut impl FnMut(VhostEvent),
    ) -> Result<(), ModelError> {
        sink(VhostEvent::Kick {
            available: self.avail.len(),
            queue: self.queue,
        });
        while !self.avail.is_empty() {
            if !self.handle_tx_copy(net, profile, sink)? {
                break;
            }
        }
        Ok(())
    }

    /// One handle_tx_copy run. Returns whether the worker requeued itself.
    fn handle_tx_copy(
        &mut self,
        net: &mut Net,
        profile: &KernelProfile,
        sink: &mut impl FnMut(VhostEvent),
    ) -> Result<bool, ModelError> {
        self.ops.handle_tx_runs += 1;
        let batching = profile.vhost.xdp_batching
            && net.dev(self.ifindex).is_some_and(|d| !d.config.sndbuf_set);
        // SOCK_XDP is set by tun_xdp_set, the driver-mode attach; an xdpgeneric program
        // leaves vhost's XDP headroom at 0.
        let xdp_attached = net
            .dev(self.ifindex)
            .and_then(|d| d.xdp.as_ref())
            .is_some_and(|a| a.mode == crate::xdp::XdpMode::Native);
        let (mut sent, mut total_len) = (0usize, 0usize);
        loop {
            if self.done_idx == VHOST_NET_BATCH {
                self.tx_batch(net, profile, FlushReason::BatchFull, sink)?;
            }
            let Some(desc) = self.avail.pop_front() else {
                // (c): flush before re-enabling notifications; nothing races in here.
                self.tx_batch(net, profile, FlushReason::RingEmpty, sink)?;
                return Ok(false);
            };
            total_len += desc.bytes.len();
            // The descriptor goes into the batch, or is sent alone.
            let alone = if batching {
                match self.build_xdp(net, profile, desc, xdp_attached, sink)? {
                    Built::Batched => None,
                    Built::SendAlone(desc) => Some(desc),
                    Built::Stop => return Ok(false),
                }
            } else {
                Some(desc)
            };
            if let Some(desc) = alone {
                // tx_can_batch: MSG_MORE while under the byte weight with more queued.
                let more = total_len < VHOST_NET_WEIGHT && !self.avail.is_empty();
                if !self.sendmsg_one(net, profile, desc, more, sink)? {
                    return Ok(false);
                }
            }
            self.done_idx += 1;
            sent += 1;
            // vhost_exceeds_weight(vq, ++sent_pkts, total_len).
            if sent >= VHOST_NET_PKT_WEIGHT || total_len >= VHOST_NET_WEIGHT {
                self.tx_batch(net, profile, FlushReason::EndOfRun, sink)?;
                self.ops.requeues += 1;
                sink(VhostEvent::Requeue {
                    packets: sent,
                    bytes: total_len,
                });
                return Ok(true);
            }
        }
    }

    /// handle_tx_copy's batching step: vhost_net_build_xdp copies the descriptor into an
    /// XDP buffer of the batch; -ENOSPC flushes the batch and sends this one alone without
    /// a control message; any other error flushes, puts the descriptor back
    /// (vhost_discard_vq_desc), re-enables the queue and stops the run.
    fn build_xdp(
        &mut self,
        net: &mut Net,
        profile: &KernelProfile,
        desc: TxDesc,
        xdp_attached: bool,
        sink: &mut impl FnMut(VhostEvent),
    ) -> Result<Built, ModelError> {
        let spare = self.spare_xdp.take();
        match vhost_net_build_xdp(&desc.bytes, self.sock_hlen, xdp_attached, spare) {
            Ok((buff, buflen)) => {
                self.ops.bytes_copied += desc.bytes.len() as u64;
                self.frag_account(buflen);
                self.batched.push(desc);
                self.buffs.push(buff);
                Ok(Built::Batched)
            }
            Err(Errno::ENOSPC) => {
                self.tx_batch(net, profile, FlushReason::TooBig, sink)?;
                Ok(Built::SendAlone(desc))
            }
            Err(errno) => {
                // The errno stays in the kernel; the trace names it.
                self.tx_batch(net, profile, FlushReason::BuildError, sink)?;
                sink(VhostEvent::Stall {
                    packet: desc.packet,
                    errno,
                });
                self.avail.push_front(desc);
                Ok(Built::Stop)
            }
        }
    }

    /// handle_tx_copy's `sock->ops->sendmsg` of one descriptor (MSG_MORE when `more`).
    /// -EAGAIN/-ENOMEM put the descriptor back and stop the run; other errors consume it
    /// (only logged), except on [4.19], which put it back and stopped. Returns whether
    /// the run goes on.
    fn sendmsg_one(
        &mut self,
        net: &mut Net,
        profile: &KernelProfile,
        desc: TxDesc,
        more: bool,
        sink: &mut impl FnMut(VhostEvent),
    ) -> Result<bool, ModelError> {
        self.ops.sendmsg_single += 1;
        self.ops.bytes_copied += desc.bytes.len() as u64;
        let out = net.tun_write(
            self.ifindex,
            &desc.bytes,
            self.file,
            &profile.tun_write,
            &profile.tun_read,
        )?;
        let result = out.result.map(|_| ());
        let stall = match result {
            Err(e @ (Errno::EAGAIN | Errno::ENOMEM)) => Some(e),
            // [4.19] put the descriptor back on any error and stopped.
            Err(e) if !profile.vhost.consume_desc_on_error => Some(e),
            _ => None,
        };
        if let Some(errno) = stall {
            self.avail.push_front(desc.clone());
            sink(VhostEvent::Stall {
                packet: desc.packet,
                errno,
            });
            self.tx_batch(net, profile, FlushReason::EndOfRun, sink)?;
            return Ok(false);
        }
        // A native redirect in tun_get_user flushes right away, once per write.
        if matches!(out.fate, Fate::XdpRedirected { .. })
            && out.xdp.first().is_some_and(|x| x.place == XdpWhere::Native)
        {
            self.ops.xdp_flushes += 1;
        }
        sink(VhostEvent::Packet(PacketFate {
            packet: desc.packet,
            ts_ns: desc.ts_ns,
            via: Via::Single { more },
            result,
            xdp: out.xdp.first().cloned(),
            fate: out.fate,
        }));
        Ok(true)
    }

    /// Count the page frags the batched buffers use (vhost_net_page_frag_refill).
    fn frag_account(&mut self, buflen: usize) {
        if self.frag_pages == 0 || self.frag_used + buflen > FRAG_PAGE {
            self.frag_pages += 1;
            self.frag_used = 0;
        }
        self.frag_used += buflen;
    }

    /// vhost_tx_batch: one TUN_MSG_PTR sendmsg for the batched buffers, then the used
    /// ring update for every done descriptor (batched or sent alone) and a signal.
    fn tx_batch(
        &mut self,
        net: &mut Net,
        profile: &KernelProfile,
        reason: FlushReason,
        sink: &mut impl FnMut(VhostEvent),
    ) -> Result<(), ModelError> {
        if !self.batched.is_empty() {
            let batch = self.batches;
            self.batches += 1;
            let mut descs = std::mem::take(&mut self.batched);
            let packets: Vec<u64> = descs.iter().map(|d| d.packet).collect();
            self.ops.sendmsg_batched += 1;
            let out = net.tun_sendmsg_batch(
                self.ifindex,
                self.file,
                &mut self.buffs,
                &profile.tun_write,
            )?;
            for b in self.buffs.drain(..) {
                self.spare_xdp.give(b.xdp.buf);
            }
            self.ops.xdp_flushes += u64::from(out.flushes);
            // tun_put_page at the end of the batch: one put per page frag holding drops.
            if out.per_buffer.iter().any(|o| o.page_held) {
                self.ops.page_puts += self.frag_pages.max(1);
            }
            self.frag_pages = 0;
            self.frag_used = 0;
            sink(VhostEvent::Batch {
                batch,
                packets,
                reason,
                xdp_flushes: out.flushes,
            });
            for (desc, o) in descs.drain(..).zip(out.per_buffer) {
                // tun_sendmsg drops each tun_xdp_one return value: what vhost sees is the
                // batch's sendmsg result (0); the buffer's fate carries any error.
                let XdpOneOutcome { xdp, fate, .. } = o;
                sink(VhostEvent::Packet(PacketFate {
                    packet: desc.packet,
                    ts_ns: desc.ts_ns,
                    via: Via::Batch(batch),
                    result: Ok(()),
                    xdp,
                    fate,
                }));
                self.spare_chains.give(desc.bytes);
            }
            // Empty again; its capacity serves the next batch.
            self.batched = descs;
        }
        if self.done_idx > 0 {
            // vhost_net_signal_used -> vhost_add_used_and_signal_n.
            self.ops.used_updates += 1;
            self.ops.signals += 1;
            sink(VhostEvent::Used {
                heads: self.done_idx,
            });
            self.done_idx = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{LINUX_4_19, LINUX_6_18};
    use crate::tun::{TunConfig, TunDevice};

    const A: u32 = 2;

    fn chain(n: u64) -> TxDesc {
        let mut bytes = vec![0u8; 12];
        bytes.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
        bytes.resize(12 + 60, 0x45);
        TxDesc {
            head: n as u16,
            packet: n,
            ts_ns: n,
            bytes,
        }
    }

    fn net() -> Net {
        let mut net = Net::new();
        net.add(
            A,
            TunDevice::new(TunConfig {
                no_pi: true,
                vnet_hdr: true,
                vnet_hdr_sz: 12,
                ..TunConfig::default()
            }),
        );
        net
    }

    fn run(n: u64, profile: &KernelProfile) -> (Vec<VhostEvent>, VhostOps, Net) {
        let mut net = net();
        let mut w = VhostNetTx::new(A, 12);
        w.add_avail((0..n).map(chain));
        let mut ev = Vec::new();
        w.kick(&mut net, profile, &mut |e| ev.push(e)).unwrap();
        (ev, w.ops, net)
    }

    fn batch_sizes(ev: &[VhostEvent]) -> Vec<(usize, FlushReason)> {
        ev.iter()
            .filter_map(|e| match e {
                VhostEvent::Batch {
                    packets, reason, ..
                } => Some((packets.len(), *reason)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn sixty_five_packets_make_a_full_batch_then_one_flushed_by_the_empty_ring() {
        let (ev, ops, net) = run(65, &LINUX_6_18);
        assert_eq!(
            batch_sizes(&ev),
            vec![(64, FlushReason::BatchFull), (1, FlushReason::RingEmpty)]
        );
        assert_eq!(
            (ops.sendmsg_batched, ops.sendmsg_single, ops.used_updates),
            (2, 0, 2)
        );
        // No program: every buffer becomes an skb; rx_bytes counts the 60-byte frames.
        let st = net.dev(A).unwrap().stats;
        assert_eq!((st.rx_packets, st.rx_bytes), (65, 65 * 60));
    }

    #[test]
    fn the_packet_weight_requeues_after_256() {
        let (ev, ops, _) = run(300, &LINUX_6_18);
        let requeue = ev.iter().find_map(|e| match e {
            VhostEvent::Requeue { packets, .. } => Some(*packets),
            _ => None,
        });
        assert_eq!(requeue, Some(VHOST_NET_PKT_WEIGHT));
        assert_eq!((ops.handle_tx_runs, ops.requeues), (2, 1));
        // 256 = 4 x 64, then the remaining 44 in the second run.
        let sizes: Vec<usize> = batch_sizes(&ev).into_iter().map(|(n, _)| n).collect();
        assert_eq!(sizes, vec![64, 64, 64, 64, 44]);
    }

    #[test]
    fn linux_4_19_sends_each_packet_alone_with_msg_more_until_the_last() {
        let (ev, ops, _) = run(3, &LINUX_4_19);
        assert!(batch_sizes(&ev).is_empty());
        assert_eq!((ops.sendmsg_single, ops.used_updates), (3, 1));
        let mores: Vec<bool> = ev
            .iter()
            .filter_map(|e| match e {
                VhostEvent::Packet(PacketFate {
                    via: Via::Single { more },
                    ..
                }) => Some(*more),
                _ => None,
            })
            .collect();
        // tx_can_batch: MSG_MORE while more descriptors are queued.
        assert_eq!(mores, vec![true, true, false]);
    }
}
