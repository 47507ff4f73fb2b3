//! [`TunReadRun`] with `[queues]`: the TUNSETQUEUE events before each frame, the
//! transmit into the multiqueue tap, and the reads file by file
//! (docs/tun-read.md#multiqueue).

use super::mq::{MqTap, MqXmit};
use super::{header_len, read_data, Event, ReadRecord, TunReadRun};
use crate::pipeline::frame_meta::RecipeError;
use crate::skb::SkBuff;

impl TunReadRun<'_> {
    /// Open the multiqueue tap on first use (`new` cannot fail).
    fn mq_tap(&mut self) -> Result<&mut MqTap, RecipeError> {
        let s = self.scenario;
        if self.mq.is_none() {
            if let Some(plan) = &s.queues {
                self.mq = Some(MqTap::new(&s.profile, &s.device, plan).map_err(RecipeError)?);
            }
        }
        Ok(self.mq.as_mut().expect("only called with [queues]"))
    }

    /// The `[queues]` events before frame `index`, in order.
    pub(super) fn queue_events(
        &mut self,
        index: u64,
        sink: &mut impl FnMut(Event),
    ) -> Result<(), RecipeError> {
        let Some(plan) = &self.scenario.queues else {
            return Ok(());
        };
        // The multiqueue tap exists from the first frame on, events or not.
        self.mq_tap()?;
        for e in plan.before(index) {
            let mq = self.mq_tap()?;
            let done = mq.queue_event(e).map_err(RecipeError)?;
            sink(Event::Queue {
                before_frame: index,
                file: e.file,
                op: e.op,
                purged: done.purged,
                written: done.written,
                stats: mq.stats(),
            });
        }
        Ok(())
    }

    /// dev_queue_xmit into the multiqueue tap.
    pub(super) fn mq_xmit(
        &mut self,
        index: u64,
        ts_ns: u64,
        skb: Box<SkBuff>,
        sink: &mut impl FnMut(Event),
    ) -> Result<(), RecipeError> {
        let mq = self.mq_tap()?;
        if let MqXmit::Dropped(reason) = mq.xmit(index, ts_ns, *skb).map_err(RecipeError)? {
            sink(Event::XmitDropped {
                frame: index,
                ts_ns,
                reason: Some(reason),
                stats: mq.stats(),
            });
        }
        Ok(())
    }

    /// Read every file with a frame queued, in opening order, each until its ring is
    /// empty (the reader's buffers are used in that order).
    pub(super) fn mq_drain(&mut self, sink: &mut impl FnMut(Event)) {
        let Some(mq) = self.mq.as_mut() else {
            return;
        };
        let fill = self.scenario.reader.fill;
        let hdr = header_len(&self.scenario.device);
        for file in 0..mq.files() {
            while mq.has_queued(file) {
                let size = self.scenario.reader.buffer(self.reads);
                self.buf.clear();
                self.buf.resize(size, fill);
                let (r, frame) = mq.read(file, &mut self.buf);
                let Ok(outcome) = r else {
                    break;
                };
                self.ops.add(&outcome.ops);
                let keep = (self.record_bytes, &mut self.spare_data);
                let data = read_data(keep, &self.buf, outcome.result, hdr);
                sink(Event::Read(ReadRecord {
                    read: self.reads,
                    queue: Some(file),
                    frame,
                    buffer_len: size,
                    result: outcome.result,
                    data,
                    stats: mq.stats(),
                    model: Some(outcome),
                }));
                self.reads += 1;
            }
        }
    }
}
