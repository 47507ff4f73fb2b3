//! tap-write with `[queues]`: the tap under test is an IFF_MULTI_QUEUE device with
//! `count` files in a [`TunHost`](crate::tun::device::TunHost) (the same queue model
//! tun-read's multiqueue tap and `skbsim exec` use). Each input frame is written on the
//! file `write_on` names, TUNSETQUEUE attach/detach calls come before the frames the
//! plan says, and after each write every file is read until its ring is empty, in
//! opening order. docs/tap-write.md#multiqueue.
//!
//! What the queue changes (drivers/net/tun.c):
//! - the XDP program's `rx_queue_index` is the file's tfile->queue_index (native:
//!   tun_build_skb's xdp_init_buff with &tfile->xdp_rxq; generic: skb_record_rx_queue in
//!   tun_get_user, then netif_get_rxqueue, which falls back to queue 0 for an index not
//!   below real_num_rx_queues);
//! - a write on a file TUNSETQUEUE detached still goes through tun_get_user (tfile->tun
//!   stays set until close) with the queue index the file had;
//! - XDP_TX comes back on `tfiles[smp_processor_id() % numqueues]` (native,
//!   tun_xdp_xmit; the model's CPU is [`crate::tun::device::XDP_XMIT_CPU`], where the
//!   real arm pins its writer) or on tun_select_queue's pick (generic,
//!   generic_xdp_tx), and native XDP_TX with no queue attached is -ENXIO (rx_dropped).

use crate::bpf::BasicEnv;
use crate::scenario::{QueuePlan, Scenario};
use crate::tun::write::ModelError;
use crate::xdp::XdpAttachment;

use super::super::mq_tap::{MqTap, DEV};
use super::super::tun_read::ReadRecord;
use super::{compose_write_into, load_program, TapWriteRun, WriteEvent, WriteRecord};

/// The multiqueue tap of a tap-write scenario, with its program attached.
pub(super) fn mq_tap(scenario: &Scenario, plan: &QueuePlan) -> Result<MqTap, ModelError> {
    let mut tap = MqTap::new(&scenario.profile, &scenario.device, plan).map_err(ModelError)?;
    tap.host.keep_deliveries();
    if let Some(spec) = &scenario.xdp {
        let (prog, maps) = load_program(spec).map_err(ModelError)?;
        let att = XdpAttachment::new(prog, spec.mode, BasicEnv::new(maps));
        tap.host
            .attach_xdp(DEV, att)
            .map_err(|e| ModelError(format!("[queues]: IFLA_XDP answers {}", e.name())))?;
    }
    Ok(tap)
}

impl TapWriteRun<'_> {
    /// Input frame `index` on its file: the TUNSETQUEUE calls before it, the write, what
    /// the stack received.
    pub(super) fn frame_mq(
        &mut self,
        index: u64,
        ts_ns: u64,
        frame: &[u8],
        sink: &mut impl FnMut(WriteEvent),
    ) -> Result<(), ModelError> {
        let scenario = self.scenario;
        let plan = scenario.queues.as_ref().expect("frame_mq: [queues]");
        self.queue_events(index, sink)?;
        let tap = self.mq.as_mut().expect("frame_mq: the multiqueue tap");
        let mut bytes = std::mem::take(&mut self.wbuf);
        let nonblocking = compose_write_into(&mut bytes, scenario, index, frame);
        let file = plan.write_file(index);
        let f = tap.files[file];
        tap.host.set_nonblock(f, nonblocking);
        let out = tap.host.write_outcome(f, &bytes);
        tap.host.take_received();
        if let Some(why) = tap.host.take_fault() {
            return Err(ModelError(format!("frame {index}: {why}")));
        }
        let write = self.writes;
        self.writes += 1;
        sink(WriteEvent::Write(WriteRecord {
            write,
            frame: index,
            ts_ns,
            len: bytes.len(),
            nonblocking,
            file: Some(file),
            result: out.result,
            stats: tap.stats(),
            redirect_stats: None,
            model: Some(out),
        }));
        self.wbuf = bytes;
        self.stack(write, sink);
        self.last = (index, ts_ns);
        Ok(())
    }

    /// The `[queues]` events before input frame `index`: TUNSETQUEUE on their files.
    pub(crate) fn queue_events(
        &mut self,
        index: u64,
        sink: &mut impl FnMut(WriteEvent),
    ) -> Result<(), ModelError> {
        let (Some(plan), Some(tap)) = (self.scenario.queues.as_ref(), self.mq.as_mut()) else {
            return Ok(());
        };
        for e in plan.before(index) {
            tap.queue_event(e).map_err(ModelError)?;
            sink(WriteEvent::Queue {
                before_frame: e.before_frame,
                file: e.file,
                op: e.op,
                stats: tap.stats(),
            });
        }
        Ok(())
    }

    /// vhost_net's worker for file `file` of the multiqueue tap: `kick` runs on the shared
    /// datapath with that file's side of each sendmsg ([`TunHost::with_file`]).
    ///
    /// [`TunHost::with_file`]: crate::tun::device::TunHost::with_file
    pub(crate) fn with_file<R>(
        &mut self,
        file: usize,
        kick: impl FnOnce(&mut crate::net::Net, crate::tun::write::WriteOpts) -> R,
    ) -> Result<R, ModelError> {
        let tap = self.mq.as_mut().expect("with_file: the multiqueue tap");
        let f = tap.files[file];
        let r = tap
            .host
            .with_file(f, kick)
            .ok_or_else(|| ModelError(format!("[queues]: file {file} has no device")))?;
        match tap.host.take_fault() {
            Some(why) => Err(ModelError(why)),
            None => Ok(r),
        }
    }

    /// The multiqueue tap's ifindex (the model's TunHost numbers its own devices).
    pub(crate) fn mq_ifindex(&self) -> Option<u32> {
        let tap = self.mq.as_ref()?;
        Some(tap.host.device(DEV)?.ifindex)
    }

    /// Every file read until its ring is empty, in opening order.
    pub(super) fn read_mq(&mut self, frame: u64, ts_ns: u64, sink: &mut impl FnMut(WriteEvent)) {
        let plan = &self.scenario.reader;
        let cfg = &self.scenario.device;
        let tap = self.mq.as_mut().expect("read_mq: the multiqueue tap");
        for file in 0..tap.files() {
            while tap.has_queued(file) {
                let n = self.reads_a;
                let size = plan.buffer(n);
                self.buf.clear();
                self.buf.resize(size, plan.fill);
                let (r, _) = tap.read(file, &mut self.buf);
                let Ok(outcome) = r else { break };
                let visible = match outcome.result {
                    Ok(n) => n,
                    Err(_) => size.min(super::header_len(cfg)),
                };
                self.reads_a += 1;
                sink(WriteEvent::Read {
                    on_redirect: false,
                    record: ReadRecord {
                        queue: Some(file),
                        read: n,
                        frame: Some((frame, ts_ns)),
                        buffer_len: size,
                        result: outcome.result,
                        data: self.buf[..visible].to_vec(),
                        stats: tap.stats(),
                        model: Some(outcome),
                    },
                });
            }
        }
    }
}
