//! The replay summary: frames in, the frames delivered at each observation point, and the
//! frames not delivered, counted by reason. Every pipeline's renderer fills a [`Tally`]
//! from the events it renders (the model's own verdicts: the bridge's `DropReason`,
//! tun_get_user's `Fate`, the XDP report, read()'s errno, the device's `tx_dropped`), so
//! the summary and the trace come from one source; [`Tally::line`] and
//! [`Tally::json`] are the one renderer of all four pipelines.
//!
//! Each reason names the kernel function that decides it ([`Reason::kernel`]). The
//! reasons are a fixed-order enum counted in a `BTreeMap`, so the summary is
//! deterministic.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};
use sim::bpf::xdp::{XDP_ABORTED, XDP_DROP, XDP_REDIRECT};
use sim::bridge::DropReason;
use sim::errno::Errno;
use sim::tun::write::{Fate, XdpReport, XdpWhere};
use sim::tun::XmitDrop;

/// Why a frame was not delivered, in the order the summary lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    /// The uplink's receive path: a tagged frame too short to untag.
    BridgeShortTag,
    /// br_handle_frame: `!is_valid_ether_addr(h_source)` (zero or multicast source).
    BridgeInvalidSource,
    /// br_handle_frame: 01:80:c2:00:00:01 (MAC control).
    BridgeMacControl,
    /// br_handle_frame: a link-local group not in `group_fwd_mask`.
    BridgeLinkLocal,
    /// br_nf_pre_routing: br_validate_ipv4/ipv6 freed it.
    BridgeNetfilter,
    /// br_multicast_rcv rejected it.
    BridgeSnooping,
    /// br_handle_frame_finish: for the bridge's own address (passed up, not forwarded).
    BridgeLocal,
    /// br_forward -> should_deliver: the destination was learned on the ingress port.
    BridgeSamePort,
    /// should_deliver: the tap's port is not forwarding.
    BridgePortDown,
    /// br_dev_queue_push_xmit: is_skb_forwardable (longer than the tap's MTU).
    BridgeTooBig,
    /// The real arm: nothing reached the tap, and the kernel does not say why.
    BridgeUnknown,
    /// tun_get_user refused the write (no skb was built).
    WriteError(Errno),
    /// tun_get_user dropped the skb it built (device down, bad vnet header, ...).
    TunDropped(&'static str),
    /// The program returned XDP_ABORTED (trace_xdp_exception).
    XdpAborted(XdpPlace),
    XdpDrop(XdpPlace),
    /// A value no verdict has (bpf_warn_invalid_xdp_action, then dropped).
    XdpUnknown(XdpPlace),
    /// XDP_TX where nothing reads the tap back (tap-gro).
    XdpTx(XdpPlace),
    /// XDP_REDIRECT where nothing reads the target (tap-gro).
    XdpRedirect(XdpPlace),
    /// XDP_TX or XDP_REDIRECT failed.
    XdpError(XdpPlace, Errno),
    /// tun_net_xmit dropped it (tun-read): the kernel's SKB_DROP_REASON, `None` when the
    /// real arm saw tx_dropped rise and could not tell why.
    XmitDrop(Option<XmitDrop>),
    /// __tun_detach -> tun_queue_purge: on a queue's ring when it was detached.
    QueuePurged,
    /// tun_net_xmit / tun_xdp_xmit: a full ring of a tap read back (tx_dropped).
    TxDropped,
    /// tun_do_read: tun_put_user failed; the skb is freed.
    ReadError(Errno),
    /// handle_tx_copy put the descriptor back and stopped; it was never sent.
    VhostStalled(Errno),
    /// Accounted for by no event (the real arm, whose kernel does not say).
    Unobserved,
}

/// Where an XDP program ran, for the function that acts on its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum XdpPlace {
    /// Driver mode: tun_build_skb / tun_xdp_one -> tun_xdp_act.
    Native,
    /// Generic: tun's fallback or an xdpgeneric attachment, do_xdp_generic.
    Generic,
}

impl Reason {
    /// The reason for a bridge verdict (`None`: the real arm's, which has no reason).
    pub fn of_bridge(reason: Option<&DropReason>) -> Reason {
        match reason {
            None => Reason::BridgeUnknown,
            Some(DropReason::ShortTag(_)) => Reason::BridgeShortTag,
            Some(DropReason::InvalidSource(_)) => Reason::BridgeInvalidSource,
            Some(DropReason::MacControl) => Reason::BridgeMacControl,
            Some(DropReason::LinkLocal(_)) => Reason::BridgeLinkLocal,
            Some(DropReason::Netfilter(_)) => Reason::BridgeNetfilter,
            Some(DropReason::Snooping(_)) => Reason::BridgeSnooping,
            Some(DropReason::Local(_)) => Reason::BridgeLocal,
            Some(DropReason::SamePort(_)) => Reason::BridgeSamePort,
            Some(DropReason::PortDown) => Reason::BridgePortDown,
            Some(DropReason::TooBig { .. }) => Reason::BridgeTooBig,
        }
    }

    /// The reason a written frame did not reach the stack or a reader, from the
    /// model's fate, the write's errno and the last XDP run's verdict; `None` when it
    /// went on (to the stack, or XDP_TX / XDP_REDIRECT to a tap that `reads_back`
    /// observes).
    pub fn of_fate(
        fate: &Fate,
        errno: Option<Errno>,
        xdp: Option<&XdpReport>,
        reads_back: bool,
    ) -> Option<Reason> {
        let place = match xdp.map(|r| r.place) {
            None | Some(XdpWhere::Native) => XdpPlace::Native,
            Some(XdpWhere::TunGeneric | XdpWhere::CoreGeneric) => XdpPlace::Generic,
        };
        match fate {
            Fate::Stack => None,
            Fate::Rejected => Some(Reason::WriteError(errno.unwrap_or(Errno::EINVAL))),
            Fate::Dropped(why) => Some(Reason::TunDropped(why)),
            Fate::XdpTx | Fate::XdpRedirected { .. } if reads_back => None,
            Fate::XdpTx => Some(Reason::XdpTx(place)),
            Fate::XdpRedirected { .. } => Some(Reason::XdpRedirect(place)),
            Fate::XdpError(e) => Some(Reason::XdpError(place, *e)),
            Fate::XdpDropped => {
                let action = xdp.map_or(XDP_DROP, |r| r.action);
                Some(match action {
                    XDP_ABORTED => Reason::XdpAborted(place),
                    a if a > XDP_REDIRECT => Reason::XdpUnknown(place),
                    _ => Reason::XdpDrop(place),
                })
            }
        }
    }

    /// What the summary calls it.
    pub fn label(&self) -> String {
        match self {
            Reason::BridgeShortTag => "bridge: tagged frame too short to untag".into(),
            Reason::BridgeInvalidSource => "bridge: invalid source address".into(),
            Reason::BridgeMacControl => "bridge: MAC control frame".into(),
            Reason::BridgeLinkLocal => "bridge: link-local group not forwarded".into(),
            Reason::BridgeNetfilter => "bridge: br_netfilter rejected the IP header".into(),
            Reason::BridgeSnooping => "bridge: multicast snooping rejected it".into(),
            Reason::BridgeLocal => "bridge: for a local address, passed up".into(),
            Reason::BridgeSamePort => "bridge: same port".into(),
            Reason::BridgePortDown => "bridge: the tap's port is not forwarding".into(),
            Reason::BridgeTooBig => "bridge: longer than the tap's MTU".into(),
            Reason::BridgeUnknown => "bridge: did not reach the tap".into(),
            Reason::WriteError(e) => format!("write error {e}"),
            Reason::TunDropped(why) => format!("tun: {why}"),
            Reason::XdpAborted(_) => "XDP_ABORTED".into(),
            Reason::XdpDrop(_) => "XDP_DROP".into(),
            Reason::XdpUnknown(_) => "unknown XDP verdict".into(),
            Reason::XdpTx(_) => "XDP_TX (back out of the tap, not read here)".into(),
            Reason::XdpRedirect(_) => "XDP_REDIRECT (to another device, not read here)".into(),
            Reason::XdpError(_, e) => format!("XDP_TX/XDP_REDIRECT failed: {e}"),
            Reason::XmitDrop(Some(XmitDrop::FullRing)) => "ring full".into(),
            Reason::XmitDrop(Some(why)) => why.what().into(),
            Reason::XmitDrop(None) => "tx_dropped, reason not seen".into(),
            Reason::QueuePurged => "purged by a queue detach".into(),
            Reason::TxDropped => "ring full (tx_dropped)".into(),
            Reason::ReadError(e) => format!("read error {e}"),
            Reason::VhostStalled(e) => format!("left on the guest's TX ring ({e})"),
            Reason::Unobserved => "not seen at any observation point".into(),
        }
    }

    /// The kernel function that decides it (drivers/net/tun.c, net/bridge/,
    /// net/core/dev.c, drivers/vhost/net.c); `None` where no model decided.
    pub fn kernel(&self) -> Option<&'static str> {
        Some(match self {
            Reason::BridgeShortTag => "skb_vlan_untag",
            Reason::BridgeInvalidSource | Reason::BridgeMacControl | Reason::BridgeLinkLocal => {
                "br_handle_frame"
            }
            Reason::BridgeNetfilter => "br_nf_pre_routing",
            Reason::BridgeSnooping => "br_multicast_rcv",
            Reason::BridgeLocal => "br_handle_frame_finish",
            Reason::BridgeSamePort => "br_forward",
            Reason::BridgePortDown => "should_deliver",
            Reason::BridgeTooBig => "is_skb_forwardable",
            Reason::WriteError(_) | Reason::TunDropped(_) => "tun_get_user",
            // Native verdicts: drivers/net/tun.c: tun_xdp_act; generic ones:
            // net/core/dev.c: do_xdp_generic (TX through generic_xdp_tx, REDIRECT through
            // net/core/filter.c: xdp_do_generic_redirect).
            Reason::XdpAborted(XdpPlace::Native)
            | Reason::XdpDrop(XdpPlace::Native)
            | Reason::XdpError(XdpPlace::Native, _)
            | Reason::XdpTx(XdpPlace::Native) => "tun_xdp_act",
            Reason::XdpAborted(XdpPlace::Generic) | Reason::XdpDrop(XdpPlace::Generic) => {
                "do_xdp_generic"
            }
            Reason::XdpUnknown(_) => "bpf_warn_invalid_xdp_action",
            Reason::XdpTx(XdpPlace::Generic) => "generic_xdp_tx",
            Reason::XdpRedirect(XdpPlace::Native) => "xdp_do_redirect",
            Reason::XdpRedirect(XdpPlace::Generic) | Reason::XdpError(XdpPlace::Generic, _) => {
                "xdp_do_generic_redirect"
            }
            Reason::XmitDrop(_) => "tun_net_xmit",
            Reason::QueuePurged => "__tun_detach",
            Reason::TxDropped => "tun_net_xmit/tun_xdp_xmit",
            Reason::ReadError(_) => "tun_do_read",
            Reason::VhostStalled(_) => "handle_tx_copy",
            Reason::BridgeUnknown | Reason::Unobserved => return None,
        })
    }

    /// "10 bridge: invalid source address (br_handle_frame)".
    fn counted(&self, n: u64) -> String {
        match self.kernel() {
            Some(k) => format!("{n} {} ({k})", self.label()),
            None => format!("{n} {}", self.label()),
        }
    }
}

/// Whether a read() took a frame off the ring (tun_do_read: a zero-length read returns 0
/// and takes nothing; EAGAIN found nothing).
pub fn read_consumed(r: &sim::pipeline::tun_read::ReadRecord) -> bool {
    match &r.model {
        Some(m) => m.skb.is_some() || m.xdp_frame,
        // The real arm: its reads stop at EAGAIN.
        None => !(r.buffer_len == 0 && r.result == Ok(0)) && r.result != Err(Errno::EAGAIN),
    }
}

/// What one read() did with a frame it took: `Ok` delivered, `Err` tun_put_user's errno
/// (the skb freed).
pub fn read_fate(r: &sim::pipeline::tun_read::ReadRecord) -> Option<Result<(), Errno>> {
    read_consumed(r).then_some(r.result.map(|_| ()))
}

/// The frames seen at one observation point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointCount {
    /// The capture's name for it ("read", "stack", "read A").
    pub name: &'static str,
    /// What the summary says: "the tun reader".
    pub label: &'static str,
    pub frames: u64,
    /// skbs, where GRO merged frames into fewer (tap-gro, IFF_NAPI).
    pub skbs: Option<u64>,
}

/// What a replay did with its frames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub frames_in: u64,
    /// Delivered frames, point by point, in the pipeline's order.
    pub points: Vec<PointCount>,
    pub not_delivered: BTreeMap<Reason, u64>,
    /// Of the invalid sources, the all-zero ones (a loopback or cooked capture).
    pub zero_source: u64,
}

impl Tally {
    /// A tally observing these points (name, label).
    pub fn new(points: &[(&'static str, &'static str)]) -> Tally {
        Tally {
            points: points
                .iter()
                .map(|&(name, label)| PointCount {
                    name,
                    label,
                    frames: 0,
                    skbs: None,
                })
                .collect(),
            ..Tally::default()
        }
    }

    /// `n` frames delivered at point `i`.
    #[inline]
    pub fn delivered(&mut self, i: usize, n: u64) {
        if let Some(p) = self.points.get_mut(i) {
            p.frames += n;
        }
    }

    /// One skb at point `i` (for a point that counts skbs apart from frames).
    #[inline]
    pub fn skb(&mut self, i: usize) {
        if let Some(p) = self.points.get_mut(i) {
            *p.skbs.get_or_insert(0) += 1;
        }
    }

    #[inline]
    pub fn dropped(&mut self, reason: Reason, n: u64) {
        if n > 0 {
            *self.not_delivered.entry(reason).or_insert(0) += n;
        }
    }

    /// A bridge drop, remembering an all-zero source for the hint.
    pub fn bridge_dropped(&mut self, reason: Option<&DropReason>) {
        if let Some(DropReason::InvalidSource(m)) = reason {
            if *m == [0; 6] {
                self.zero_source += 1;
            }
        }
        self.dropped(Reason::of_bridge(reason), 1);
    }

    pub fn delivered_total(&self) -> u64 {
        self.points.iter().map(|p| p.frames).sum()
    }

    /// The input count, and what no event accounts for as [`Reason::Unobserved`].
    pub fn finish(mut self, frames_in: u64) -> Tally {
        self.frames_in = frames_in;
        let seen = self.delivered_total() + self.not_delivered.values().sum::<u64>();
        if frames_in > seen {
            self.dropped(Reason::Unobserved, frames_in - seen);
        }
        self
    }

    /// The one-line summary: `input` read, the capture in `output` (if any).
    pub fn line(&self, input: &str, output: Option<&str>) -> String {
        let mut s = format!("skbsim: {} frames in ({input}), ", self.frames_in);
        // The pipeline's first point always; the others (a tap read back) when they saw
        // something.
        for (i, p) in self.points.iter().enumerate() {
            if i > 0 && p.frames == 0 {
                continue;
            }
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{} delivered to {}", p.frames, p.label);
            if let Some(k) = p.skbs.filter(|k| *k != p.frames) {
                let _ = write!(s, " in {k} skbs");
            }
        }
        if let Some(o) = output {
            let _ = write!(s, " ({o})");
        }
        s.push_str("; not delivered: ");
        if self.not_delivered.is_empty() {
            s.push('0');
        } else {
            let reasons: Vec<String> = self
                .not_delivered
                .iter()
                .map(|(r, n)| r.counted(*n))
                .collect();
            s.push_str(&reasons.join(", "));
        }
        s
    }

    /// What to try when nothing at all was delivered.
    pub fn hint(&self) -> Option<String> {
        if self.frames_in == 0 || self.delivered_total() > 0 {
            return None;
        }
        let bridge_only = self.not_delivered.keys().all(|r| {
            matches!(
                r,
                Reason::BridgeInvalidSource
                    | Reason::BridgeSamePort
                    | Reason::BridgeLocal
                    | Reason::BridgeLinkLocal
                    | Reason::BridgeMacControl
                    | Reason::BridgeUnknown
            )
        });
        Some(if self.zero_source > 0 && bridge_only {
            "hint: nothing was delivered; the capture's source MACs are zero (a loopback capture?): try --attach direct".into()
        } else if bridge_only {
            "hint: nothing was delivered; the bridge forwarded no frame to the tap: try --attach direct".into()
        } else {
            "hint: nothing was delivered; --trace FILE shows what became of each frame".into()
        })
    }

    /// The same numbers for machines (`"event": "summary"`).
    pub fn json(&self) -> Value {
        let points: Vec<Value> = self
            .points
            .iter()
            .map(|p| json!({"point": p.name, "frames": p.frames, "skbs": p.skbs}))
            .collect();
        let reasons: Vec<Value> = self
            .not_delivered
            .iter()
            .map(|(r, n)| json!({"reason": r.label(), "kernel": r.kernel(), "frames": n}))
            .collect();
        json!({
            "event": "summary",
            "frames_in": self.frames_in,
            "delivered": points,
            "not_delivered": reasons,
            "hint": self.hint(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residual_is_unobserved_and_reasons_keep_their_order() {
        let mut t = Tally::new(&[("read", "the tun reader")]);
        t.dropped(Reason::XmitDrop(Some(XmitDrop::FullRing)), 2);
        t.bridge_dropped(Some(&DropReason::InvalidSource([0; 6])));
        t.delivered(0, 3);
        let t = t.finish(10);
        let order: Vec<Reason> = t.not_delivered.keys().copied().collect();
        assert_eq!(
            order,
            [
                Reason::BridgeInvalidSource,
                Reason::XmitDrop(Some(XmitDrop::FullRing)),
                Reason::Unobserved
            ]
        );
        assert_eq!(t.not_delivered[&Reason::Unobserved], 10 - 3 - 2 - 1);
        assert_eq!(t.hint(), None);
    }
}
