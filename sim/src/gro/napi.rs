//! The NAPI side of GRO (net/core/dev.c, net/core/gro.c): the GRO_HASH_BUCKETS lists,
//! napi_gro_flush, the flush points (napi_complete_done, a poll that used its whole
//! budget, the gro_flush_timeout hrtimer), tun's poll loop (drivers/net/tun.c:
//! tun_napi_poll / tun_napi_receive), simulated jiffies, and rx_list (gro_normal_one).

use std::collections::VecDeque;

use super::core::{dev_gro_receive, napi_gro_complete, GroResult};
use super::{GroConfig, Reason, SkBuff, GRO_HASH_BUCKETS, NAPI_POLL_WEIGHT};

/// Why a delivered skb went up when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Passed up unheld (GRO_NORMAL); the reason is the skb's `start`.
    Normal,
    /// napi_complete_done flushed every bucket (no timeout, or no work done).
    NapiComplete,
    /// napi_complete (napi_complete_done(n, 0)) right after napi_gro_frags in an
    /// IFF_NAPI_FRAGS write: every bucket, whatever gro_flush_timeout says.
    FragsComplete,
    /// napi_complete_done with gro_flush_timeout: only skbs held in an older jiffy.
    NapiCompleteOld,
    /// The gro_flush_timeout hrtimer fired: napi_watchdog schedules a poll that finds
    /// no work, and napi_complete_done(0) flushes everything.
    Timer,
    /// __napi_poll: the poll used its whole budget: napi_gro_flush(HZ >= 1000).
    Budget,
    /// gro_flush_oldest: frame `frame` needed a slot in a full bucket.
    BucketFull { frame: u64 },
    /// Frame `frame` completed this skb: it did not merge (reason), or merged and forced
    /// the flush (merged = true: PSH, FIN, a shorter last segment).
    Frame {
        frame: u64,
        reason: Reason,
        merged: bool,
    },
}

/// One skb handed to the stack (netif_receive_skb_list via rx_list).
#[derive(Debug, Clone)]
pub struct Delivered {
    pub skb: Box<SkBuff>,
    pub end: End,
    /// When it went up.
    pub ts_ns: u64,
    /// The NAPI poll it went up in (0-based); timer polls count too.
    pub poll: u64,
}

/// A NAPI instance (struct napi_struct + its gro_node) with tun's write queue.
#[derive(Debug, Clone)]
pub struct Napi {
    /// gro_hash[]: index 0 is the oldest skb (the list tail), the last the youngest.
    pub buckets: [Vec<Box<SkBuff>>; GRO_HASH_BUCKETS],
    pub jiffies: u64,
    pub now_ns: u64,
    /// Polls run so far.
    pub polls: u64,
    /// rx_list, in order.
    pub rx: Vec<Delivered>,
    /// tfile->sk.sk_write_queue (IFF_NAPI).
    pub queue: VecDeque<Box<SkBuff>>,
    /// The armed hrtimer's expiry.
    pub timer: Option<u64>,
    /// dev->gro_flush_timeout in ns.
    pub timeout_ns: u64,
    pub hz: u64,
    /// Per-result counts.
    pub merged: u64,
    pub held: u64,
    pub normal: u64,
}

impl Napi {
    pub fn new(timeout_ns: u64, hz: u64) -> Napi {
        Napi {
            buckets: Default::default(),
            jiffies: 0,
            now_ns: 0,
            polls: 0,
            rx: Vec::new(),
            queue: VecDeque::new(),
            timer: None,
            timeout_ns,
            hz: hz.max(1),
            merged: 0,
            held: 0,
            normal: 0,
        }
    }

    /// Advance the simulated clock; jiffies = ns * HZ / 1e9.
    pub fn set_time(&mut self, ns: u64) {
        self.now_ns = self.now_ns.max(ns);
        let j = u128::from(self.now_ns) * u128::from(self.hz) / 1_000_000_000;
        self.jiffies = u64::try_from(j).unwrap_or(u64::MAX);
    }

    /// gro_bitmask != 0.
    pub fn holding(&self) -> usize {
        self.buckets.iter().map(Vec::len).sum()
    }

    /// gro_normal_one: queue for the stack.
    pub fn deliver(&mut self, skb: Box<SkBuff>, end: End) {
        self.rx.push(Delivered {
            skb,
            end,
            ts_ns: self.now_ns,
            poll: self.polls.saturating_sub(1),
        });
    }

    /// napi_gro_flush(napi, flush_old): buckets in ascending order, oldest first; an
    /// "old only" pass stops a bucket at its first skb held in this jiffy.
    pub fn gro_flush(&mut self, cfg: &GroConfig, flush_old: bool, end: End) {
        for b in 0..GRO_HASH_BUCKETS {
            while let Some(first) = self.buckets[b].first() {
                if flush_old && first.cb.age == self.jiffies {
                    break;
                }
                let skb = self.buckets[b].remove(0);
                napi_gro_complete(self, cfg, skb, end);
            }
        }
    }

    /// napi_complete_done(n, work_done): with work done, something held and a
    /// gro_flush_timeout, flush only older skbs and (re)arm the hrtimer; otherwise flush
    /// everything.
    fn napi_complete_done(&mut self, cfg: &GroConfig, work_done: usize) {
        if self.holding() == 0 {
            return;
        }
        let timeout = if work_done > 0 && cfg.rules.gro_flush_timeout {
            self.timeout_ns
        } else {
            0
        };
        if timeout > 0 {
            self.gro_flush(cfg, true, End::NapiCompleteOld);
            self.timer = Some(self.now_ns.saturating_add(timeout));
        } else {
            self.gro_flush(cfg, false, End::NapiComplete);
        }
    }

    /// Fire the hrtimer if it expires at or before `t_ns` (napi_watchdog, then a poll
    /// with an empty queue).
    pub fn run_timer_until(&mut self, cfg: &GroConfig, t_ns: u64) {
        if let Some(deadline) = self.timer {
            if deadline <= t_ns {
                self.timer = None;
                if self.holding() > 0 {
                    self.set_time(deadline);
                    self.polls += 1;
                    self.gro_flush(cfg, false, End::Timer);
                }
            }
        }
    }

    /// One softirq run of tun's NAPI at `t_ns`: tun_napi_poll takes up to
    /// NAPI_POLL_WEIGHT queued skbs through napi_gro_receive; a poll that used its whole
    /// budget flushes old skbs (all if HZ < 1000) and is polled again; a shorter one
    /// ends in napi_complete_done.
    pub fn poll(&mut self, cfg: &GroConfig, t_ns: u64) {
        self.run_timer_until(cfg, t_ns);
        self.set_time(t_ns);
        loop {
            self.polls += 1;
            let mut work = 0;
            while work < NAPI_POLL_WEIGHT {
                let Some(skb) = self.queue.pop_front() else {
                    break;
                };
                match dev_gro_receive(self, cfg, skb) {
                    GroResult::Merged => self.merged += 1,
                    GroResult::Held => self.held += 1,
                    GroResult::Normal => self.normal += 1,
                }
                work += 1;
            }
            if work < NAPI_POLL_WEIGHT {
                self.napi_complete_done(cfg, work);
                return;
            }
            if self.holding() > 0 {
                self.gro_flush(cfg, self.hz >= 1000, End::Budget);
            }
        }
    }

    /// tun_get_user on a tap with IFF_NAPI_FRAGS (drivers/net/tun.c): the write's skb
    /// goes straight to napi_gro_frags (net/core/gro.c: napi_frags_skb, dev_gro_receive,
    /// napi_frags_finish), then napi_complete, i.e. napi_complete_done(n, 0)
    /// (net/core/dev.c): with no work done it does not read gro_flush_timeout, so every
    /// bucket is flushed and nothing is held past the write (seen on 6.18: ten writes
    /// with gro_flush_timeout 1 ms reach the stack as ten skbs).
    ///
    /// napi_frags_skb sets skb->protocol to the MAC header's h_proto instead of
    /// eth_type_trans, and napi_frags_finish runs eth_type_trans on what GRO does not
    /// hold; the two agree for every frame GRO can merge (an IP ethertype), so the skb
    /// keeps the protocol tun computed.
    pub fn gro_frags(&mut self, cfg: &GroConfig, skb: Box<SkBuff>, t_ns: u64) {
        self.run_timer_until(cfg, t_ns);
        self.set_time(t_ns);
        self.polls += 1;
        match dev_gro_receive(self, cfg, skb) {
            GroResult::Merged => self.merged += 1,
            GroResult::Held => self.held += 1,
            GroResult::Normal => self.normal += 1,
        }
        if self.holding() > 0 {
            self.gro_flush(cfg, false, End::FragsComplete);
        }
    }

    /// End of input: a pending hrtimer fires.
    pub fn finish(&mut self, cfg: &GroConfig) {
        self.run_timer_until(cfg, u64::MAX);
        if self.holding() > 0 {
            // No timer armed but skbs held (cannot happen after napi_complete_done);
            // flush as napi_complete_done(0) would.
            self.polls += 1;
            self.gro_flush(cfg, false, End::NapiComplete);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::frames::Tcp4;
    use super::super::plan::GroPlan;
    use super::super::testutil::{lens, run_with};
    use super::End;
    use crate::pipeline::tap_gro::TapGroRun;
    use crate::profile::LINUX_6_18;

    #[test]
    fn an_old_jiffy_is_flushed_by_the_next_poll_with_a_timeout() {
        // HZ 250: a jiffy is 4 ms. Frames 0-1 at 1.000 s, frame 2 at 1.006 s (another
        // jiffy; seq continues), timeout 10 ms: the poll of frame 2 first merges it, then
        // napi_complete_done flushes skbs aged in an older jiffy, i.e. all three.
        let plan = GroPlan {
            flush_timeout_ns: 10_000_000,
            ..GroPlan::defaults(&LINUX_6_18.gro)
        };
        let mut r = TapGroRun::new(&LINUX_6_18, &plan);
        let f = Tcp4::default().stream(4);
        r.write(0, 1_000_000_000, f[0].clone());
        r.write(1, 1_000_001_000, f[1].clone());
        r.write(2, 1_006_000_000, f[2].clone());
        r.write(3, 1_006_001_000, f[3].clone());
        r.finish();
        assert_eq!(lens(&r.delivered), vec![54 + 4200, 1454]);
        assert_eq!(r.delivered[0].end, End::NapiCompleteOld);
        // The last one waits for the hrtimer: 10 ms after the last poll.
        assert_eq!(r.delivered[1].end, End::Timer);
        assert_eq!(r.delivered[1].ts_ns, 1_016_001_000);
    }

    #[test]
    fn a_full_budget_flushes_everything_below_hz_1000_and_only_old_skbs_at_1000() {
        // 70 writes in one burst: the 65th finds more than 64 queued and schedules NAPI.
        // The poll takes 64: frames 0-45 (46 segments, then gro:64k), 46-63 held; the
        // budget is used: HZ 250 < 1000 flushes everything. The repoll takes frame 64
        // alone and napi_complete_done flushes it; 65-69 come with the last write.
        let frames = Tcp4::default().stream(70);
        let d = run_with(
            &LINUX_6_18,
            GroPlan {
                burst: 70,
                ..GroPlan::defaults(&LINUX_6_18.gro)
            },
            frames.clone(),
        );
        assert_eq!(d[1].end, End::Budget);
        assert_eq!(
            lens(&d),
            vec![54 + 46 * 1400, 54 + 18 * 1400, 1454, 54 + 5 * 1400]
        );
        // HZ 1000: the budget flush keeps the skb held in this jiffy, so frame 64 joins
        // it in the repoll (19 segments).
        let d = run_with(
            &LINUX_6_18,
            GroPlan {
                burst: 70,
                hz: 1000,
                ..GroPlan::defaults(&LINUX_6_18.gro)
            },
            frames,
        );
        assert_eq!(
            lens(&d),
            vec![54 + 46 * 1400, 54 + 19 * 1400, 54 + 5 * 1400]
        );
    }
}
