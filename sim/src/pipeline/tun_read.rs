//! The `tun-read` pipeline: each input frame becomes an skb (frame_meta), goes down
//! dev_queue_xmit to tun_net_xmit, and userspace reads the tap fd with the scenario's
//! buffer sizes.

use std::collections::VecDeque;

use crate::bridge::{self, Attach, Bridge, DropReason, Verdict};
use crate::consts::TUN_PI_LEN;
use crate::errno::Errno;
use crate::pool::Pool;
use crate::scenario::{QueueOp, Scenario};
use crate::skb::{OpCounters, SkBuff};
use crate::tun::read::ReadOutcome;
use crate::tun::{DeviceKind, TunConfig, TunDevice, TunStats, XmitDrop};

use super::frame_meta::{build_skb, RecipeError};
use mq::MqTap;

use super::{Input, Pipeline, PipelineError};

/// One read() by userspace: what the simulator and the real kernel can both show, plus
/// what only the model knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// The read's number, from 0.
    pub read: usize,
    /// With `[queues]`: the file read, by opening order.
    pub queue: Option<usize>,
    /// The input frame it dequeued and that frame's timestamp, if it dequeued one.
    pub frame: Option<(u64, u64)>,
    pub buffer_len: usize,
    /// What read() returned.
    pub result: Result<usize, Errno>,
    /// What userspace can see: the returned bytes; after an error, the buffer's PI and
    /// vnet area as the kernel left it (a PI written before a vnet EINVAL shows here).
    pub data: Vec<u8>,
    /// Device counters after the read.
    pub stats: TunStats,
    /// Model-only detail (the skb, tun_put_user's return, op counts); None from the real
    /// kernel, and ignored when the two are compared.
    pub model: Option<ReadOutcome>,
}

impl ReadRecord {
    /// The frame part of what userspace got (after PI and vnet), for the output pcap.
    pub fn frame_bytes(&self, device: &TunConfig) -> &[u8] {
        match self.result {
            Ok(_) => &self.data[header_len(device).min(self.data.len())..],
            Err(_) => &[],
        }
    }
}

/// Bytes before the frame in a read: the PI and the vnet area.
pub fn header_len(device: &TunConfig) -> usize {
    let pi = if device.no_pi { 0 } else { TUN_PI_LEN };
    let vnet = if device.vnet_hdr {
        device.vnet_hdr_sz
    } else {
        0
    };
    pi + vnet
}

/// A read record's `data`: what userspace can see of the read into `buf` (the
/// returned bytes; after an error, the PI and vnet area, `hdr` bytes, as the kernel left
/// it), in a buffer from `spare`; empty when the records keep no bytes (`keep` false).
fn read_data(
    (keep, spare): (bool, &mut Pool<Vec<u8>, 4>),
    buf: &[u8],
    result: Result<usize, Errno>,
    hdr: usize,
) -> Vec<u8> {
    if !keep {
        return Vec::new();
    }
    let visible = match result {
        Ok(n) => n,
        Err(_) => buf.len().min(hdr),
    };
    let mut data = spare.take();
    data.clear();
    data.extend_from_slice(&buf[..visible]);
    data
}

/// What happened, in order.
// Each event is moved once, into the sink; boxing the large variant would allocate per read.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// tun_net_xmit dropped the frame (and counted tx_dropped): the kernel's reason; `None`
    /// from a real arm that could not tell which (see its module doc: it sees tx_dropped
    /// rise, not the reason).
    XmitDropped {
        frame: u64,
        ts_ns: u64,
        reason: Option<XmitDrop>,
        stats: TunStats,
    },
    /// `[queues]`: TUNSETQUEUE on a file before a frame; the frames a detach purged from
    /// the file's ring; a write's answer (the byte count or the errno).
    Queue {
        before_frame: u64,
        file: usize,
        op: QueueOp,
        purged: Vec<u64>,
        written: Option<Result<usize, Errno>>,
        stats: TunStats,
    },
    Read(ReadRecord),
    /// The bridge in front of the tap did not hand the frame to it. `reason` is the
    /// model's (the real arm only sees that nothing arrived).
    BridgeDropped {
        frame: u64,
        ts_ns: u64,
        reason: Option<DropReason>,
        stats: TunStats,
    },
}

/// A run of the pipeline for one scenario.
#[derive(Debug)]
pub struct TunReadRun<'s> {
    scenario: &'s Scenario,
    dev: TunDevice,
    /// The bridge the tap is a port of (`attach` other than "direct").
    bridge: Option<Bridge>,
    /// (input index, timestamp) of each queued skb, in ring order.
    queued: VecDeque<(u64, u64)>,
    buf: Vec<u8>,
    reads: usize,
    /// Op counts of every skb that has left the ring.
    pub ops: OpCounters,
    /// Whether to keep the returned bytes in each record (off for benchmarks).
    pub record_bytes: bool,
    /// Records' byte buffers handed back ([`TunReadRun::recycle_data`]).
    spare_data: Pool<Vec<u8>, 4>,
    /// `[queues]`: the multiqueue tap, which then holds the rings instead of `dev`.
    mq: Option<MqTap>,
}

impl<'s> TunReadRun<'s> {
    pub fn new(scenario: &'s Scenario) -> TunReadRun<'s> {
        TunReadRun {
            mq: None,
            scenario,
            dev: TunDevice::new(scenario.device.clone()),
            bridge: match scenario.attach {
                Attach::Direct => None,
                Attach::Bridge => Some(Bridge::new(false)),
                Attach::BridgeNf => Some(Bridge::new(true)),
            },
            queued: VecDeque::new(),
            buf: Vec::new(),
            reads: 0,
            ops: OpCounters::default(),
            record_bytes: true,
            spare_data: Pool::default(),
        }
    }

    /// Give a rendered record's `data` buffer back for the next read's.
    pub fn recycle_data(&mut self, data: Vec<u8>) {
        self.spare_data.give(data);
    }

    pub fn stats(&self) -> TunStats {
        match &self.mq {
            Some(mq) => mq.stats(),
            None => self.dev.stats,
        }
    }

    /// Transmit input frame `index` to the tap (the reads are [`Input::Read`]s).
    fn frame(
        &mut self,
        index: u64,
        ts_ns: u64,
        data: &[u8],
        sink: &mut impl FnMut(Event),
    ) -> Result<(), RecipeError> {
        self.queue_events(index, sink)?;
        let mut skb = self.dev.spare_skb();
        skb.ops = OpCounters::default();
        let l3_only = self.scenario.device.kind == DeviceKind::Tun;
        build_skb(&mut skb, data, self.scenario.recipe_for(index), l3_only)
            .map_err(|e| RecipeError(format!("frame {index}: {}", e.0)))?;
        if l3_only && skb.vlan.is_some() {
            return Err(RecipeError(format!(
                "frame {index}: a tun (IFF_TUN) device carries IP packets; set skb.vlan = \"inband\" or use an untagged frame"
            )));
        }
        self.check_features(index, &skb)?;
        let verdict = match &mut self.bridge {
            Some(br) => {
                skb.protocol = bridge::received_protocol(data, &skb);
                bridge::input(br, ts_ns, data, &skb, &self.scenario.device)
            }
            None => {
                if !l3_only && skb.vlan.is_none() {
                    // attach = "direct": AF_PACKET sends the frame on the tap itself
                    // (net/packet/af_packet.c: packet_snd -> packet_parse_headers ->
                    // dev_parse_header_protocol, i.e. net/ethernet/eth.c:
                    // eth_header_parse_protocol): skb->protocol is the raw type/length
                    // field, an 802.3 length included; no eth_type_trans runs.
                    if let Some(b) = data.get(12..14) {
                        skb.protocol = u16::from_be_bytes([b[0], b[1]]);
                    }
                }
                Verdict::Deliver(None)
            }
        };
        match verdict {
            Verdict::Dropped(reason) => {
                sink(Event::BridgeDropped {
                    frame: index,
                    ts_ns,
                    reason: Some(reason),
                    stats: self.stats(),
                });
            }
            Verdict::Deliver(trim) => {
                if let Some(n) = trim {
                    // br_validate_ipv4/ipv6's pskb_trim_rcsum: the skb as if it had
                    // arrived that long.
                    build_skb(
                        &mut skb,
                        &data[..n],
                        self.scenario.recipe_for(index),
                        l3_only,
                    )
                    .map_err(|e| RecipeError(format!("frame {index}: {}", e.0)))?;
                }
                if self.mq.is_some() {
                    self.mq_xmit(index, ts_ns, skb, sink)?;
                } else {
                    self.xmit(index, ts_ns, skb, sink);
                }
            }
        }
        Ok(())
    }

    /// tun_net_xmit, and the event for a full ring (the single-queue device has no
    /// filter: SKB_DROP_REASON_FULL_RING is its only drop).
    fn xmit(&mut self, index: u64, ts_ns: u64, skb: Box<SkBuff>, sink: &mut impl FnMut(Event)) {
        if self.dev.xmit(skb) {
            self.queued.push_back((index, ts_ns));
        } else {
            sink(Event::XmitDropped {
                frame: index,
                ts_ns,
                reason: Some(XmitDrop::FullRing),
                stats: self.dev.stats,
            });
        }
    }

    fn drain(&mut self, sink: &mut impl FnMut(Event)) {
        while self.dev.queued() > 0 {
            let size = self.scenario.reader.buffer(self.reads);
            let fill = self.scenario.reader.fill;
            // The buffer holds `fill` wherever the kernel did not write. Only the PI and
            // vnet area can hold visible bytes the kernel skipped (the pre-6.15 vnet
            // padding, the buffer after an EINVAL): the frame bytes are written up to the
            // returned length. So only that area is refilled after each read.
            self.buf.resize(size, fill);
            let outcome = self
                .dev
                .read(&mut self.buf, &self.scenario.profile.tun_read);
            let written = size.min(header_len(&self.scenario.device));
            let frame = if outcome.skb.is_some() || outcome.xdp_frame {
                self.queued.pop_front()
            } else {
                None
            };
            self.ops.add(&outcome.ops);
            let data = read_data(
                (self.record_bytes, &mut self.spare_data),
                &self.buf,
                outcome.result,
                header_len(&self.scenario.device),
            );
            sink(Event::Read(ReadRecord {
                read: self.reads,
                queue: None,
                frame,
                buffer_len: size,
                result: outcome.result,
                data,
                stats: self.dev.stats,
                model: Some(outcome),
            }));
            self.buf[..written].fill(fill);
            self.reads += 1;
        }
    }

    /// validate_xmit_skb would segment a GSO skb, or resolve a partial checksum, for a
    /// device without the offload; skbsim does not model software GSO, so it refuses
    /// such a scenario instead of showing bytes the kernel would not produce.
    fn check_features(&self, index: u64, skb: &SkBuff) -> Result<(), RecipeError> {
        use crate::skb::{gso, IpSummed};
        let o = &self.scenario.device.offloads;
        let need = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(RecipeError(format!(
                    "frame {index}: the skb is {what} but device.offloads lacks it; the kernel would fix it up in software (validate_xmit_skb), which is not modelled"
                )))
            }
        };
        if skb.ip_summed == IpSummed::Partial {
            need(o.csum, "CHECKSUM_PARTIAL (needs \"csum\")")?;
        }
        if skb.is_gso() {
            let t = skb.gso_type;
            if t & gso::TCPV4 != 0 {
                need(o.tso4, "GSO TCPV4 (needs \"tso4\")")?;
            }
            if t & gso::TCPV6 != 0 {
                need(o.tso6, "GSO TCPV6 (needs \"tso6\")")?;
            }
            if t & gso::TCP_ECN != 0 {
                need(o.tso_ecn, "GSO TCP_ECN (needs \"tso_ecn\")")?;
            }
            if t & gso::UDP_L4 != 0 {
                need(o.uso4 || o.uso6, "GSO UDP_L4 (needs \"uso4\"/\"uso6\")")?;
            }
            if t & gso::UDP != 0 {
                need(o.ufo, "GSO UDP (needs \"ufo\")")?;
            }
        }
        Ok(())
    }
}

use super::mq_tap as mq;
#[path = "tun_read_mq_run.rs"]
mod mq_run;

impl Pipeline for TunReadRun<'_> {
    type Event = Event;

    #[inline]
    fn handle(
        &mut self,
        input: Input<'_>,
        events: &mut impl FnMut(Event),
    ) -> Result<(), PipelineError> {
        match input {
            Input::Frame {
                index,
                ts_ns,
                bytes,
            } => self.frame(index, ts_ns, bytes, events).map_err(|e| {
                // The recipe's message already names the frame.
                PipelineError {
                    frame: None,
                    why: e.0,
                }
            }),
            // Userspace reads until the ring is empty; at the end it reads what is left.
            Input::Read | Input::End => {
                if self.mq.is_some() {
                    self.mq_drain(events);
                } else {
                    self.drain(events);
                }
                Ok(())
            }
            // Nothing here is timed, and there is no guest.
            Input::Kick | Input::AdvanceTo { .. } => Ok(()),
        }
    }

    type Spare = Vec<u8>;

    #[inline]
    fn spare(event: Event) -> Option<Vec<u8>> {
        match event {
            Event::Read(r) => Some(r.data),
            _ => None,
        }
    }

    fn recycle(&mut self, data: Vec<u8>) {
        self.recycle_data(data);
    }
}
