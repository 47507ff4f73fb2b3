//! The real `tun-read` arm with `[queues]`: B is an `IFF_MULTI_QUEUE` tap with
//! `queues.count` files (`TUNSETIFF` on each attaches it as the next queue: tun_set_iff ->
//! tun_attach), `TUNSETQUEUE` before the frames the plan names, and reads file by file
//! in opening order (docs/tun-read.md#multiqueue).
//!
//! Which file a frame landed in is seen, not computed: after a frame reached B's xmit
//! (the observer) and B's `tx_dropped` did not rise, the file whose ring was empty and
//! is now readable (`poll`) got it; if no such file, the only readable file did. When
//! neither tells (several non-empty rings), the scenario is refused: read more often.
//! A detach's purge (__tun_detach -> tun_queue_purge) is seen the same way: the frames
//! seen landing on the file and not read, with the file no longer readable after it.
//!
//! Why a frame was dropped is told, not seen: the kernel passes the reason only to
//! kfree_skb_reason (the skb:kfree_skb tracepoint's `reason`), and that tracepoint is
//! host-wide, with no device or namespace to tell this run's drops from those of other
//! runs on the machine, so the arm does not read it. What it sees is `tx_dropped` rising
//! for a frame that reached B's xmit, which files are attached and how many unread frames
//! each ring holds (a ring's frames are the ones seen landing on it and not read). From
//! those, [`seen_drop_reason`] names the one reason tun_net_xmit can have had, or none.

use std::time::{Duration, Instant};

use sim::errno::Errno as SimErrno;
use sim::scenario::{QueueOp, Scenario};
use sim::tun::XmitDrop;

use super::{open_dut, Event, Replay, DUT_NAME};
use crate::arm::{kerr, tap_side, tun_stats, ArmError};
use crate::error::{Cause, KernelError};
use crate::netns::Netns;
use crate::tap::Tap;

/// How long to wait for the frame the observer saw to show up on a file's ring.
const LAND_WAIT: Duration = Duration::from_millis(200);

/// B's file 0 and, with `[queues]`, its other files; every file non-blocking.
pub(super) fn open_dut_queues(
    ns: &mut Netns,
    scenario: &Scenario,
) -> Result<(Tap, Vec<Tap>), KernelError> {
    let Some(plan) = &scenario.queues else {
        return Ok((open_dut(ns, &scenario.device)?, Vec::new()));
    };
    tap_side::open_queues_down(ns, DUT_NAME, &scenario.device, plan, true)
}

/// Which SKB_DROP_REASON drivers/net/tun.c: tun_net_xmit had for a drop whose
/// tx_dropped rise the arm saw, from the files' attachment, the unread frames on each
/// file's ring (`ring_len`), the ring size (tx_queue_len) and whether a TUNSETFILTEREBPF
/// program is attached. The arm sets no TUNSETTXFILTER and no TUNATTACHFILTER filter, and
/// pskb_trim never fails for a length it does not shorten to, so the causes left are
/// SKB_DROP_REASON_DEV_READY (no file attached: numqueues 0), SKB_DROP_REASON_TAP_FILTER
/// (the filter returned 0) and SKB_DROP_REASON_FULL_RING. `None`: both of the last two
/// were possible (a filter and a full ring), which the arm cannot tell apart.
pub(super) fn seen_drop_reason(
    attached: &[bool],
    ring_len: &[usize],
    cap: usize,
    filter: bool,
) -> Option<XmitDrop> {
    if !attached.contains(&true) {
        return Some(XmitDrop::DevReady);
    }
    let full = attached.iter().zip(ring_len).any(|(&a, &n)| a && n >= cap);
    match (filter, full) {
        (false, _) => Some(XmitDrop::FullRing),
        (true, false) => Some(XmitDrop::TapFilter),
        (true, true) => None,
    }
}

impl Replay<'_> {
    /// [`seen_drop_reason`] for the drop of the frame just written.
    pub(super) fn drop_reason(&self) -> Option<XmitDrop> {
        let rings: Vec<usize> = self.pending.iter().map(|p| p.len()).collect();
        let filter = self
            .scenario
            .queues
            .as_ref()
            .is_some_and(|q| q.filter.is_some());
        seen_drop_reason(
            &self.attached,
            &rings,
            self.scenario.device.tx_queue_len,
            filter,
        )
    }

    fn file(&self, file: usize) -> &Tap {
        match file {
            0 => &self.dut,
            n => &self.queues[n - 1],
        }
    }

    fn readable(&self, file: usize) -> Result<bool, ArmError> {
        self.file(file)
            .wait_readable(Duration::ZERO)
            .map_err(|e| kerr(format!("poll on {DUT_NAME} file {file}"), e))
    }

    /// The `[queues]` events before frame `index`: TUNSETQUEUE on the file, and what a
    /// detach purged.
    pub(super) fn queue_events(&mut self, ns: &mut Netns, index: u64) -> Result<(), ArmError> {
        let Some(plan) = &self.scenario.queues else {
            return Ok(());
        };
        for e in plan.before(index) {
            if e.op == QueueOp::Write {
                let written = self.write_on(e.file, e.data.as_deref().unwrap_or_default())?;
                let now = ns.rtnl().stats(self.dut.ifindex())?;
                self.events.push(Event::Queue {
                    before_frame: index,
                    file: e.file,
                    op: e.op,
                    purged: Vec::new(),
                    written: Some(written),
                    stats: tun_stats(&now),
                });
                self.last = now;
                continue;
            }
            let attach = e.op == QueueOp::Attach;
            self.file(e.file).set_queue_attached(attach)?;
            self.attached[e.file] = attach;
            let mut purged = Vec::new();
            if !attach {
                if self.readable(e.file)? {
                    self.notes.push(format!(
                        "file {} is still readable after its detach before frame {index}",
                        e.file
                    ));
                } else {
                    purged = self.pending[e.file].drain(..).map(|(i, _)| i).collect();
                }
            }
            let now = ns.rtnl().stats(self.dut.ifindex())?;
            self.events.push(Event::Queue {
                before_frame: index,
                file: e.file,
                op: e.op,
                purged,
                written: None,
                stats: tun_stats(&now),
            });
            self.last = now;
        }
        Ok(())
    }

    /// write(2) of `data` on B's file `file` (tun_get_user, which teaches automq's flow
    /// table the flow): its answer. The skb it makes enters the bridge by B's port: the
    /// bridge never sends a frame back out of the port it came in by (br_forward's
    /// should_deliver), so it reaches B's xmit only if it were looped back by another
    /// host, which nothing here is. The observer on B sees it as received; that copy is
    /// taken here, so it does not count as a frame arriving for the next write.
    fn write_on(&mut self, file: usize, data: &[u8]) -> Result<Result<usize, SimErrno>, ArmError> {
        let written = match self.file(file).write(data) {
            Ok(n) => Ok(n),
            Err(e) => Err(SimErrno::from_code(e.code()).ok_or_else(|| {
                kerr(
                    format!(
                        "write on {DUT_NAME} file {file}: an errno the trace format cannot show"
                    ),
                    e,
                )
            })?),
        };
        self.observer.arrived(Duration::ZERO)?;
        Ok(written)
    }

    /// Frame `index` reached B's xmit and was queued: on which file.
    pub(super) fn landed(&mut self, index: u64, ts: u64) -> Result<(), ArmError> {
        if self.pending.len() == 1 {
            self.pending[0].push_back((index, ts));
            return Ok(());
        }
        let start = Instant::now();
        loop {
            let mut fresh = Vec::new();
            let mut readable = Vec::new();
            for f in 0..self.pending.len() {
                if self.readable(f)? {
                    readable.push(f);
                    if self.pending[f].is_empty() {
                        fresh.push(f);
                    }
                }
            }
            let file = match (fresh.as_slice(), readable.as_slice()) {
                ([f], _) => Some(*f),
                ([], [f]) => Some(*f),
                _ => None,
            };
            if let Some(f) = file {
                self.pending[f].push_back((index, ts));
                return Ok(());
            }
            if fresh.len() > 1 || start.elapsed() > LAND_WAIT {
                return Err(ArmError::Kernel(KernelError::new(
                    format!("which queue of {DUT_NAME} frame {index} landed in"),
                    Cause::Protocol(format!(
                        "cannot tell: files {readable:?} are readable and {fresh:?} were empty; read more often (reader.read_every)"
                    )),
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

#[cfg(test)]
mod drop_reason_tests {
    use super::seen_drop_reason;
    use sim::tun::XmitDrop;

    #[test]
    fn the_reason_is_named_only_where_one_cause_is_left() {
        // No file attached: tun_net_xmit's first check.
        assert_eq!(
            seen_drop_reason(&[false, false], &[0, 0], 2, true),
            Some(XmitDrop::DevReady)
        );
        // No filter: a full ring is the only cause left, whatever the arm counted.
        assert_eq!(
            seen_drop_reason(&[true], &[2], 2, false),
            Some(XmitDrop::FullRing)
        );
        // A filter and no ring full: the filter returned 0.
        assert_eq!(
            seen_drop_reason(&[true, true], &[1, 0], 2, true),
            Some(XmitDrop::TapFilter)
        );
        // A detached file's ring does not count (tun_queue_purge emptied it).
        assert_eq!(
            seen_drop_reason(&[false, true], &[2, 0], 2, true),
            Some(XmitDrop::TapFilter)
        );
        // A filter and a full ring: either could have dropped it.
        assert_eq!(seen_drop_reason(&[true, true], &[0, 2], 2, true), None);
    }
}
