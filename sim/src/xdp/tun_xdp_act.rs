//! drivers/net/tun.c: tun_xdp_act, what tun does with a native verdict that consumes the
//! buffer, shared by tun_build_skb and tun_xdp_one: XDP_TX through tun_xdp_tx ->
//! tun_xdp_xmit, XDP_REDIRECT through xdp_do_redirect, everything else counted as
//! rx_dropped. Rules: docs/tap-write.md#xdp-act, docs/vhost-tx.md#tun-xdp-one.

use crate::bpf::xdp::{XDP_ABORTED, XDP_DROP, XDP_REDIRECT, XDP_TX};
use crate::bpf::XdpBuff;
use crate::errno::Errno;
use crate::net::Net;
use crate::profile::TunWriteRules;
use crate::tun::write::Fate;

use super::xdp_convert_buff_to_frame::xdp_convert_buff_to_frame;
use super::xdp_do_redirect::xdp_do_redirect;

/// tun_xdp_act for the verdicts that consume the buffer (TX, REDIRECT, DROP, ABORTED,
/// unknown). Counts as the profile says and returns the frame's fate.
pub(crate) fn tun_xdp_act(
    net: &mut Net,
    ifindex: u32,
    buff: &XdpBuff,
    action: u32,
    redirect_to: Option<u32>,
    rules: &TunWriteRules,
) -> Fate {
    let datasize = buff.len() as u64;
    let result = match action {
        // tun_xdp_tx -> tun_xdp_xmit(dev, 1, &frame, XDP_XMIT_FLUSH). A full ring sends 0
        // frames: the frame is freed, tx_dropped counted, and tun_xdp_act still takes it
        // as success (docs/tap-write.md#xdp-act's quirk).
        // tun_xdp_xmit with no queue attached (numqueues 0: every file TUNSETQUEUE-
        // detached, the write on a detached one) answers -ENXIO.
        XDP_TX if net.dev(ifindex).is_some_and(|d| d.numqueues == 0) => Err(Errno::ENXIO),
        XDP_TX => match (xdp_convert_buff_to_frame(buff), net.dev_mut(ifindex)) {
            (Some(f), Some(dev)) => {
                dev.xdp_xmit(f);
                Ok(Fate::XdpTx)
            }
            _ => Err(Errno::EOVERFLOW),
        },
        // xdp_do_redirect, then xdp_do_flush right away (once per write; once per batch
        // from tun_sendmsg): the devmap bulk queue never holds more than this one.
        XDP_REDIRECT => {
            xdp_do_redirect(net, buff, redirect_to).map(|to| Fate::XdpRedirected { ifindex: to })
        }
        other => {
            // DROP, ABORTED (trace_xdp_exception) and unknown values
            // (bpf_warn_invalid_xdp_action) all count rx_dropped.
            debug_assert!(other == XDP_DROP || other == XDP_ABORTED || other > XDP_REDIRECT);
            net.stats_mut(ifindex).rx_dropped += 1;
            return Fate::XdpDropped;
        }
    };
    match result {
        Ok(fate) => {
            if rules.xdp_act_rx_stats {
                let st = net.stats_mut(ifindex);
                st.rx_packets += 1;
                st.rx_bytes += datasize;
            }
            fate
        }
        Err(e) => {
            // v6.8 "tun: fix missing dropped counter"; 4.19 counted it too (err_redirect);
            // 4.20 to 6.7 did not (TunWriteRules::xdp_err_rx_dropped).
            if rules.xdp_err_rx_dropped {
                net.stats_mut(ifindex).rx_dropped += 1;
            }
            Fate::XdpError(e)
        }
    }
}
