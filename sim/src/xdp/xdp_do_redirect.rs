//! net/core/filter.c: xdp_do_redirect for a native buffer, down to the target's
//! ndo_xdp_xmit (net/core/filter.c: __xdp_do_redirect_frame; kernel/bpf/devmap.c:
//! __xdp_enqueue, bq_xmit_all; include/linux/netdevice.h: xdp_ok_fwd_dev). The skb
//! variant for generic XDP is [`xdp_do_generic_redirect`](super::xdp_do_generic_redirect).

use crate::bpf::XdpBuff;
use crate::consts::{ETH_HLEN, VLAN_HLEN};
use crate::errno::Errno;
use crate::net::Net;

use super::xdp_convert_buff_to_frame::xdp_convert_buff_to_frame;

/// xdp_do_redirect for an ifindex or devmap target, then the devmap flush. Returns the
/// target's ifindex.
pub(crate) fn xdp_do_redirect(
    net: &mut Net,
    buff: &XdpBuff,
    target: Option<u32>,
) -> Result<u32, Errno> {
    let frame = xdp_convert_buff_to_frame(buff).ok_or(Errno::EOVERFLOW)?;
    let to = target.ok_or(Errno::EINVAL)?;
    let dev = net.dev_mut(to).ok_or(Errno::EINVAL)?;
    if !dev.config.up {
        return Err(Errno::ENETDOWN);
    }
    if frame.data.len() > dev.config.mtu + ETH_HLEN + VLAN_HLEN {
        return Err(Errno::EMSGSIZE);
    }
    // bq_xmit_all -> tun_xdp_xmit on the target; its full ring is the target's
    // tx_dropped, not an error of the redirect.
    dev.xdp_xmit(frame);
    Ok(to)
}
