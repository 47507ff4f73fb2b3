//! The one hand-off of tun's receive side (drivers/net/tun.c: tun_get_user and
//! tun_xdp_one), after the write path and its XDP ran: an skb of a device with IFF_NAPI
//! is queued for tun's NAPI (`tfile->sk.sk_write_queue`) and GRO; any other goes to
//! netif_receive_skb, where a core (xdpgeneric) program runs before the stack.
//!
//! The kernel's order:
//! - drivers/net/tun.c: tun_get_user: `if (frags) { napi_gro_frags(); napi_complete(); }
//!   else if
//!   (tfile->napi_enabled) { __skb_queue_tail(sk_write_queue); if (!more || queue_len >
//!   NAPI_POLL_WEIGHT) napi_schedule(); } else tun_rx_batched() / netif_rx()`;
//!   the softirq runs at the local_bh_enable that follows, so a write() (more = false)
//!   polls at once.
//! - drivers/net/tun.c: tun_xdp_one queues to the same queue when the tfile has NAPI
//!   (fb3f903769e8 "tun: support NAPI for packets received from batched XDP buffs",
//!   v5.18; before, netif_receive_skb), and tun_sendmsg calls napi_schedule once after the
//!   whole TUN_MSG_PTR batch.
//! - drivers/net/tun.c: tun_napi_poll -> tun_napi_receive -> napi_gro_receive; GRO hands
//!   what it completes to gro_normal_one / gro_normal_list (net/core/gro.c), i.e.
//!   netif_receive_skb_list_internal (net/core/dev.c), whose do_xdp_generic runs a core
//!   xdpgeneric program on the merged skb. tun's own do_xdp_generic (a driver-mode
//!   program on a write that missed tun_build_skb) ran before the skb was queued.
//!
//! The skb tun built is queued as GRO's own skb ([`gro_skb`]: the same bytes, data at the
//! MAC header, no headroom, as the GRO model reads frames), and what GRO completes goes to
//! netif_receive_skb linear with tun's headroom ([`stack_skb`]). Both copy in the model
//! only; the kernel hands the one skb along.

use crate::gro::napi::{Delivered, Napi};
use crate::gro::plan::GroPlan;
use crate::gro::{GroConfig, NAPI_POLL_WEIGHT};
use crate::net::Net;
use crate::profile::{KernelProfile, TunWriteRules};
use crate::skb::{IpSummed, SkBuff};
use crate::xdp::XdpMode;

use super::write::{Fate, ModelError, XdpReport, XdpWhere};
use crate::consts::TUN_RX_PAD;

/// Where the skb handed to [`Net::tun_rx`] came from: they schedule NAPI differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxFrom {
    /// tun_get_user (write() or a single sendmsg): napi_schedule unless `more` with at
    /// most NAPI_POLL_WEIGHT queued.
    GetUser,
    /// tun_xdp_one in a TUN_MSG_PTR batch: queued only; tun_sendmsg schedules once.
    XdpOne,
}

/// What the hand-off did with the skb.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RxOutcome {
    /// The core xdpgeneric run in netif_receive_skb, when the skb was not queued.
    pub xdp: Option<XdpReport>,
    /// A non-PASS verdict of that run (the skb is consumed); `None`: the stack has it, or
    /// NAPI does.
    pub fate: Option<Fate>,
    /// Queued for tun's NAPI.
    pub queued: bool,
}

/// A core xdpgeneric run on an skb that GRO completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AfterGro {
    /// Input frames the skb held, head first.
    pub frames: Vec<u64>,
    pub report: XdpReport,
    /// `None`: XDP_PASS, the skb went on to the stack.
    pub fate: Option<Fate>,
}

/// A tap's NAPI instance and GRO setup (tfile->napi with IFF_NAPI), with what it handed
/// to the stack since the caller last took it.
#[derive(Debug, Clone)]
pub struct TunNapi {
    pub cfg: GroConfig,
    pub napi: Napi,
    /// Writes per NAPI poll: 1 is write() (more = false); N models a MSG_MORE burst.
    pub burst: usize,
    pending: usize,
    /// The input frame and time of the next skb queued (set by the caller).
    pub frame: u64,
    pub now_ns: u64,
    /// Skbs GRO completed that passed netif_receive_skb (the stack has them), in order.
    pub rx: Vec<Delivered>,
    /// Core xdpgeneric runs on completed skbs, in order.
    pub after_gro: Vec<AfterGro>,
    /// Copy what GRO completes into `Net::stack` as well (tap-write, vhost-tx read the
    /// stack there); tap-gro renders [`TunNapi::rx`] itself and turns this off.
    pub stack_copies: bool,
    /// Buffers of finished skbs ([`TunNapi::recycle`]) for the next [`gro_skb`].
    spare: Vec<Vec<u8>>,
    /// The finished skbs' own allocations, for the next [`gro_skb_in`]: a Box made and
    /// freed per frame was a malloc and a free a frame of tap-gro. Boxed: GRO's skbs are
    /// `Box<SkBuff>`, and the box is the allocation kept.
    #[allow(clippy::vec_box)]
    spare_skbs: Vec<Box<SkBuff>>,
}

/// Finished skbs' buffers kept for reuse: a NAPI poll's worth.
const SPARE_BUFFERS: usize = 2 * NAPI_POLL_WEIGHT;

impl TunNapi {
    pub fn new(profile: &KernelProfile, plan: &GroPlan) -> TunNapi {
        TunNapi {
            cfg: plan.config(profile.gro),
            napi: Napi::new(plan.flush_timeout_ns, u64::from(plan.hz)),
            burst: plan.burst.max(1),
            pending: 0,
            frame: 0,
            now_ns: 0,
            rx: Vec::new(),
            after_gro: Vec::new(),
            stack_copies: true,
            spare: Vec::new(),
            spare_skbs: Vec::new(),
        }
    }

    /// Done with a delivered skb: keep its buffers for later writes.
    /// The buffers go straight onto the spares and those past [`SPARE_BUFFERS`] are
    /// dropped (the same ones as pushing each while there is room): a vector of them
    /// made and freed per delivery was a malloc and a free a frame of tap-gro.
    pub fn recycle(&mut self, d: Delivered) {
        let mut skb = d.skb;
        skb.take_buffers(&mut self.spare);
        self.spare.truncate(SPARE_BUFFERS);
        if self.spare_skbs.len() < SPARE_BUFFERS {
            self.spare_skbs.push(skb);
        }
    }

    /// A spare buffer and a spare skb for the next [`gro_skb_in`].
    fn spares(&mut self) -> (Vec<u8>, Box<SkBuff>) {
        (
            self.spare.pop().unwrap_or_default(),
            self.spare_skbs.pop().unwrap_or_default(),
        )
    }
}

/// The skb tun built, as GRO's skb: the whole frame from the MAC header, protocol,
/// checksum state, GSO fields, and a page-frag head when tun_build_skb built it
/// (`head_frag`). `buf` is a spare buffer to fill (its contents are replaced).
pub fn gro_skb(skb: &SkBuff, frame: u64, ts_ns: u64, head_frag: bool, buf: Vec<u8>) -> Box<SkBuff> {
    gro_skb_in(Box::default(), skb, frame, ts_ns, head_frag, buf)
}

/// [`gro_skb`] in the allocation `g` (a finished skb's, whatever it held is replaced).
pub fn gro_skb_in(
    mut g: Box<SkBuff>,
    skb: &SkBuff,
    frame: u64,
    ts_ns: u64,
    head_frag: bool,
    mut buf: Vec<u8>,
) -> Box<SkBuff> {
    buf.clear();
    skb.append_to(&mut buf);
    *g = SkBuff::for_gro(frame, ts_ns, buf);
    g.protocol = skb.protocol;
    if skb.ip_summed == IpSummed::Partial {
        // for_gro's data is its head: an offset from data is one from head.
        g.partial_csum_set(skb.checksum_start_offset(), skb.csum_offset);
    } else {
        g.ip_summed = skb.ip_summed;
    }
    g.gso_size = skb.gso_size;
    g.gso_segs = skb.gso_segs;
    g.gso_type = skb.gso_type;
    g.encapsulation = skb.encapsulation;
    g.head_frag = head_frag;
    g
}

/// A completed GRO skb as netif_receive_skb gets it here (the whole frame linear, tun's
/// headroom).
pub fn stack_skb(g: &SkBuff) -> SkBuff {
    let frame = g.to_vec();
    let mut skb = SkBuff::from_frame(&frame, TUN_RX_PAD, frame.len());
    skb.protocol = g.protocol;
    skb.reset_mac_header();
    skb.gso_size = g.gso_size;
    skb.gso_segs = g.gso_segs;
    skb.gso_type = g.gso_type;
    skb.encapsulation = g.encapsulation;
    if g.ip_summed == IpSummed::Partial {
        skb.partial_csum_set(g.checksum_start_offset(), g.csum_offset);
    } else {
        skb.ip_summed = g.ip_summed;
    }
    skb
}

impl Net {
    /// Give the tap at `ifindex` a NAPI instance (IFF_NAPI): from now on [`Net::tun_rx`]
    /// queues its skbs for GRO.
    pub fn enable_napi(&mut self, ifindex: u32, napi: TunNapi) {
        self.napi.insert(ifindex, napi);
    }

    pub fn napi(&self, ifindex: u32) -> Option<&TunNapi> {
        self.napi.get(&ifindex)
    }

    pub fn napi_mut(&mut self, ifindex: u32) -> Option<&mut TunNapi> {
        self.napi.get_mut(&ifindex)
    }

    /// The receive hand-off of tun_get_user and tun_xdp_one (module docs): queue for
    /// NAPI, or netif_receive_skb. `head_frag`: tun_build_skb built the skb.
    pub(crate) fn tun_rx(
        &mut self,
        ifindex: u32,
        skb: &mut SkBuff,
        from: RxFrom,
        head_frag: bool,
        rules: &TunWriteRules,
    ) -> Result<RxOutcome, ModelError> {
        let napi_enabled = self.dev(ifindex).is_some_and(|d| d.config.napi)
            && (from == RxFrom::GetUser || rules.xdp_one_napi);
        // tun_get_user's frags branch: napi_gro_frags and napi_complete in the write
        // itself (tun_xdp_one queues as for IFF_NAPI).
        let frags =
            from == RxFrom::GetUser && self.dev(ifindex).is_some_and(|d| d.config.napi_frags);
        if frags && napi_enabled {
            if let Some(n) = self.napi.get(&ifindex) {
                let cfg = self.gro_config(ifindex, n.cfg.clone(), rules);
                if let Some(n) = self.napi.get_mut(&ifindex) {
                    let (buf, into) = n.spares();
                    // tun_napi_alloc_frags grows napi_get_frags' GRO_MAX_HEAD skb to the
                    // write: a kmalloc'ed head, not a page frag.
                    let g = gro_skb_in(into, skb, n.frame, n.now_ns, false, buf);
                    let now = n.now_ns;
                    n.pending = 0;
                    n.napi.gro_frags(&cfg, g, now);
                }
                self.gro_to_stack(ifindex, rules)?;
                return Ok(RxOutcome::default());
            }
        }
        if let (true, Some(n)) = (napi_enabled, self.napi.get_mut(&ifindex)) {
            let (buf, into) = n.spares();
            let g = gro_skb_in(into, skb, n.frame, n.now_ns, head_frag, buf);
            n.napi.queue.push_back(g);
            if from == RxFrom::GetUser {
                n.pending += 1;
                if n.pending >= n.burst || n.napi.queue.len() > NAPI_POLL_WEIGHT {
                    self.tun_napi_schedule(ifindex, rules)?;
                }
            }
            return Ok(RxOutcome {
                queued: true,
                ..RxOutcome::default()
            });
        }
        self.netif_receive_skb(ifindex, skb, rules)
    }

    /// netif_receive_skb: a core xdpgeneric program (do_xdp_generic), then the stack.
    fn netif_receive_skb(
        &mut self,
        ifindex: u32,
        skb: &mut SkBuff,
        rules: &TunWriteRules,
    ) -> Result<RxOutcome, ModelError> {
        let core_generic = self.core_generic_xdp(ifindex, rules);
        let mut out = RxOutcome::default();
        if core_generic {
            let (report, fate) = self.generic_xdp(ifindex, skb, XdpWhere::CoreGeneric)?;
            out.xdp = Some(report);
            out.fate = fate;
        }
        if out.fate.is_none() {
            self.deliver(ifindex, skb);
        }
        Ok(out)
    }

    /// napi_schedule and the softirq run it leads to: tun_napi_poll over the queue, and
    /// what GRO completes through netif_receive_skb. Nothing queued: nothing runs.
    pub fn tun_napi_schedule(
        &mut self,
        ifindex: u32,
        rules: &TunWriteRules,
    ) -> Result<(), ModelError> {
        let Some(n) = self.napi.get_mut(&ifindex) else {
            return Ok(());
        };
        n.pending = 0;
        if n.napi.queue.is_empty() {
            return Ok(());
        }
        let now = n.now_ns;
        let cfg = n.cfg.clone();
        let cfg = self.gro_config(ifindex, cfg, rules);
        if let Some(n) = self.napi.get_mut(&ifindex) {
            n.napi.poll(&cfg, now);
        }
        self.gro_to_stack(ifindex, rules)
    }

    /// Time reaches `t_ns` with nothing written: the clock moves (never back) and a
    /// gro_flush_timeout hrtimer due by then fires (napi_watchdog, a poll with an empty
    /// queue), what it flushes going to the stack.
    pub fn tun_napi_advance(
        &mut self,
        ifindex: u32,
        t_ns: u64,
        rules: &TunWriteRules,
    ) -> Result<(), ModelError> {
        let Some(n) = self.napi.get_mut(&ifindex) else {
            return Ok(());
        };
        n.now_ns = n.now_ns.max(t_ns);
        let now = n.now_ns;
        let cfg = n.cfg.clone();
        let cfg = self.gro_config(ifindex, cfg, rules);
        if let Some(n) = self.napi.get_mut(&ifindex) {
            n.napi.run_timer_until(&cfg, now);
        }
        self.gro_to_stack(ifindex, rules)
    }

    /// The device has an xdpgeneric program the core runs (do_xdp_generic in
    /// netif_receive_skb), and the profile has XDP at all.
    fn core_generic_xdp(&self, ifindex: u32, rules: &TunWriteRules) -> bool {
        rules.xdp
            && self
                .dev(ifindex)
                .and_then(|d| d.xdp.as_ref())
                .is_some_and(|a| a.mode == XdpMode::Generic)
    }

    /// The GRO configuration for a poll: the device's xdpgeneric program elides GRO
    /// (include/linux/netdevice.h: netif_elide_gro).
    fn gro_config(&self, ifindex: u32, mut cfg: GroConfig, rules: &TunWriteRules) -> GroConfig {
        cfg.xdp_generic = self.core_generic_xdp(ifindex, rules);
        cfg
    }

    /// End of input: a last MSG_MORE burst is polled and a pending hrtimer fires.
    pub fn tun_napi_finish(
        &mut self,
        ifindex: u32,
        rules: &TunWriteRules,
    ) -> Result<(), ModelError> {
        let Some(n) = self.napi.get_mut(&ifindex) else {
            return Ok(());
        };
        let cfg = n.cfg.clone();
        let cfg = self.gro_config(ifindex, cfg, rules);
        if let Some(n) = self.napi.get_mut(&ifindex) {
            if n.pending > 0 || !n.napi.queue.is_empty() {
                n.pending = 0;
                n.napi.poll(&cfg, n.now_ns);
            }
            n.napi.finish(&cfg);
        }
        self.gro_to_stack(ifindex, rules)
    }

    /// gro_normal_list -> netif_receive_skb_list_internal for what GRO completed: a core
    /// xdpgeneric program sees the merged skb, then the stack.
    fn gro_to_stack(&mut self, ifindex: u32, rules: &TunWriteRules) -> Result<(), ModelError> {
        let Some(n) = self.napi.get_mut(&ifindex) else {
            return Ok(());
        };
        let stack_copies = n.stack_copies;
        let core_generic = self.core_generic_xdp(ifindex, rules);
        let Some(n) = self.napi.get_mut(&ifindex) else {
            return Ok(());
        };
        if !core_generic && !stack_copies {
            // Nothing to run or copy: GRO's list is the delivered one.
            n.rx.append(&mut n.napi.rx);
            return Ok(());
        }
        // Taken and given back empty, so its allocation serves the next poll.
        let mut done = std::mem::take(&mut n.napi.rx);
        for mut d in done.drain(..) {
            if !core_generic && !stack_copies {
                if let Some(n) = self.napi.get_mut(&ifindex) {
                    n.rx.push(d);
                }
                continue;
            }
            let mut skb = stack_skb(&d.skb);
            if core_generic {
                let (report, fate) = self.generic_xdp(ifindex, &mut skb, XdpWhere::CoreGeneric)?;
                let changed = report.len_before != report.len_after
                    || (fate.is_none() && skb.to_vec() != d.skb.to_vec());
                let consumed = fate.is_some();
                if let Some(n) = self.napi.get_mut(&ifindex) {
                    n.after_gro.push(AfterGro {
                        frames: d.skb.frames().collect(),
                        report,
                        fate,
                    });
                }
                if consumed {
                    continue;
                }
                if changed {
                    // The program moved the head or tail: the stack gets its frame.
                    let model = std::mem::take(&mut d.skb.model);
                    let (head_frag, cb_count) = (d.skb.head_frag, d.skb.cb.count);
                    let g = gro_skb(&skb, model.frame, model.ts_ns, head_frag, Vec::new());
                    let old = std::mem::replace(&mut d.skb, g);
                    d.skb.cb.count = cb_count;
                    d.skb.model = model;
                    if let Some(n) = self.napi.get_mut(&ifindex) {
                        let mut bufs = Vec::new();
                        old.release_buffers(&mut bufs);
                        n.spare.extend(bufs.into_iter().take(SPARE_BUFFERS));
                    }
                }
            }
            if stack_copies {
                self.deliver(ifindex, &mut skb);
            }
            if let Some(n) = self.napi.get_mut(&ifindex) {
                n.rx.push(d);
            }
        }
        if let Some(n) = self.napi.get_mut(&ifindex) {
            if n.napi.rx.is_empty() {
                n.napi.rx = done;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "napi_tests.rs"]
mod tests;
