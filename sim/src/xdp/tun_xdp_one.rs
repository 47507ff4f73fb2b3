//! drivers/net/tun.c: tun_xdp_one, the `if (xdp_prog)` block: a buffer of a TUN_MSG_PTR
//! batch (vhost_net built it as an xdp_buff) meets a driver-mode program. A GSO buffer
//! skips the native run and gets generic XDP on the skb later (skb_xdp); otherwise the
//! program runs on the buffer in place and tun_xdp_act takes every verdict but XDP_PASS.
//! The rest of tun_xdp_one (build_skb, the vnet header, delivery) is in `tun/sendmsg.rs`.
//! Rules: docs/vhost-tx.md#tun-xdp-one.

use crate::bpf::xdp::XDP_PASS;
use crate::errno::Errno;
use crate::net::Net;
use crate::profile::TunWriteRules;
use crate::tun::sendmsg::{BatchBuff, XdpOneOutcome};
use crate::tun::write::{Fate, ModelError, XdpReport, XdpWhere};
use crate::wire::virtio_net_hdr::VIRTIO_NET_HDR_GSO_NONE;

use super::redirect_ifindex;
use super::tun_xdp_act::tun_xdp_act;

/// What the program block of tun_xdp_one decided.
#[derive(Debug)]
pub(crate) enum XdpOneProg {
    /// A GSO buffer: no native run; generic XDP on the skb (skb_xdp).
    SkbXdp,
    /// XDP_PASS: the skb is built over the (possibly moved) buffer.
    Pass(XdpReport),
    /// The verdict consumed the buffer: tun_xdp_one returns this.
    Consumed(XdpOneOutcome),
}

impl Net {
    /// tun_xdp_one's program block for the device at `ifindex`, whose driver-mode
    /// program is attached.
    pub(crate) fn tun_xdp_one_prog(
        &mut self,
        ifindex: u32,
        b: &mut BatchBuff,
        rules: &TunWriteRules,
    ) -> Result<XdpOneProg, ModelError> {
        if b.gso.gso_type != VIRTIO_NET_HDR_GSO_NONE {
            return Ok(XdpOneProg::SkbXdp);
        }
        let datasize = b.xdp.len();
        // xdp_init_buff, then the program. vhost_net prepared the buffer with metadata
        // support (xdp_prepare_buff(..., true)); tun_xdp_one marked it invalid again
        // until c2315ebb0588 (v6.15), and since 0ca23a4d64ce the skb it builds carries
        // the metadata (metasize).
        if !rules.xdp_meta {
            b.xdp.set_meta_unsupported();
        }
        let att = self
            .dev_mut(ifindex)
            .and_then(|d| d.xdp.as_mut())
            .ok_or_else(|| ModelError("no program".into()))?;
        let run = att
            .run(&mut b.xdp)
            .map_err(|e| ModelError(format!("XDP program: {e}")))?;
        let r = XdpReport {
            place: XdpWhere::Native,
            action: run.action,
            len_before: datasize,
            len_after: b.xdp.len(),
            redirect_to: redirect_ifindex(&run),
            insns: run.insns,
        };
        if run.action == XDP_PASS {
            return Ok(XdpOneProg::Pass(r));
        }
        // REDIRECT marks the batch for one xdp_do_flush; DROP's page reference is
        // released in bulk at the end of the batch.
        let fate = tun_xdp_act(self, ifindex, &b.xdp, run.action, r.redirect_to, rules);
        let result: Result<(), Errno> = match fate {
            Fate::XdpError(e) => Err(e),
            _ => Ok(()),
        };
        let page_held = fate == Fate::XdpDropped;
        Ok(XdpOneProg::Consumed(XdpOneOutcome {
            result,
            xdp: Some(r),
            fate,
            page_held,
        }))
    }
}
