//! net/core/filter.c: xdp_do_generic_redirect, XDP_REDIRECT for generic XDP: the skb,
//! with its MAC header, is checked by xdp_ok_fwd_dev (include/linux/netdevice.h: the
//! target must be up and the frame within mtu + ETH_HLEN + VLAN_HLEN) and handed to the
//! target's transmit path (generic_xdp_tx). The native-buffer variant is
//! [`xdp_do_redirect`](super::xdp_do_redirect).

use crate::consts::{ETH_HLEN, VLAN_HLEN};
use crate::errno::Errno;
use crate::net::Net;
use crate::skb::SkBuff;

impl Net {
    /// xdp_do_generic_redirect of `skb` to `target` (None: no target in the
    /// bpf_redirect_info, -EINVAL). Returns the target's ifindex.
    pub(crate) fn xdp_do_generic_redirect(
        &mut self,
        skb: &SkBuff,
        target: Option<u32>,
    ) -> Result<u32, Errno> {
        match target {
            Some(to)
                if self.dev(to).is_some_and(|d| {
                    d.config.up && skb.len() > d.config.mtu + ETH_HLEN + VLAN_HLEN
                }) =>
            {
                Err(Errno::EMSGSIZE)
            }
            Some(to) if self.dev(to).is_some_and(|d| d.config.up) => {
                let skb = skb.clone();
                if let Some(d) = self.dev_mut(to) {
                    d.xmit(skb);
                }
                Ok(to)
            }
            Some(to) if self.dev(to).is_some() => Err(Errno::ENETDOWN),
            _ => Err(Errno::EINVAL),
        }
    }
}
