//! net/core/dev.c: generic_xdp_tx, XDP_TX for generic XDP: the skb goes straight to the
//! receiving device's own ndo_start_xmit (no qdisc); a stopped queue frees it
//! (trace_xdp_exception). On tun that is tun_net_xmit, whose full ring is tx_dropped.

use crate::net::Net;
use crate::skb::SkBuff;
use crate::tun::write::Fate;

impl Net {
    /// generic_xdp_tx of `skb` on the device at `ifindex`.
    pub(crate) fn generic_xdp_tx(&mut self, ifindex: u32, skb: &SkBuff) -> Fate {
        let skb = skb.clone();
        if let Some(d) = self.dev_mut(ifindex) {
            d.xmit(skb);
        }
        Fate::XdpTx
    }
}
