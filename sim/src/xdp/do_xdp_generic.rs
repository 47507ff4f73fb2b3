//! net/core/dev.c: do_xdp_generic, generic XDP's verdicts: XDP_PASS goes on with the skb,
//! XDP_TX to [`generic_xdp_tx`](super::generic_xdp_tx), XDP_REDIRECT to
//! [`xdp_do_generic_redirect`](super::xdp_do_generic_redirect), anything else drops it.
//! tun_get_user and tun_xdp_one call it for a driver-mode program that could not run
//! natively; the core's receive path for an xdpgeneric (SKB_MODE) program.
//! Rules: docs/tap-write.md#generic-xdp.

use crate::bpf::xdp::{XDP_PASS, XDP_REDIRECT, XDP_TX};
use crate::net::Net;
use crate::skb::SkBuff;
use crate::tun::write::{Fate, ModelError, XdpReport, XdpWhere};

use super::netif_receive_generic_xdp::netif_receive_generic_xdp;
use super::redirect_ifindex;

impl Net {
    /// do_xdp_generic with the device's program on `skb`. Returns the report and, for a
    /// non-PASS verdict, the frame's fate (the skb is then consumed).
    pub(crate) fn generic_xdp(
        &mut self,
        ifindex: u32,
        skb: &mut SkBuff,
        place: XdpWhere,
    ) -> Result<(XdpReport, Option<Fate>), ModelError> {
        let dev = self
            .dev_mut(ifindex)
            .ok_or_else(|| ModelError("generic XDP without a device".into()))?;
        let numqueues = dev.numqueues;
        let att = dev
            .xdp
            .as_mut()
            .ok_or_else(|| ModelError("generic XDP without a program".into()))?;
        let g = netif_receive_generic_xdp(att, skb, ifindex, numqueues)
            .map_err(|e| ModelError(format!("XDP program: {e}")))?;
        let report = XdpReport {
            place,
            action: g.run.action,
            len_before: g.len_before,
            len_after: g.len_after,
            redirect_to: redirect_ifindex(&g.run),
            insns: g.run.insns,
        };
        let fate = match g.run.action {
            XDP_PASS => None,
            XDP_TX => Some(self.generic_xdp_tx(ifindex, skb)),
            XDP_REDIRECT => Some(
                match self.xdp_do_generic_redirect(skb, report.redirect_to) {
                    Ok(to) => Fate::XdpRedirected { ifindex: to },
                    Err(e) => Fate::XdpError(e),
                },
            ),
            _ => Some(Fate::XdpDropped),
        };
        Ok((report, fate))
    }
}
