//! Native XDP on tap: tun_build_skb runs the driver-mode program on the page-frag buffer,
//! and tun_xdp_act acts on the verdict (drivers/net/tun.c; docs/tap-write.md#build-skb,
//! docs/tap-write.md#xdp-act, docs/tap-write.md#xdp-xmit, docs/tap-write.md#xdp-tx-history).

use crate::bpf::xdp::{XDP_ABORTED, XDP_DROP, XDP_FRAME_SIZE, XDP_PASS, XDP_REDIRECT, XDP_TX};
use crate::bpf::XdpBuff;
use crate::errno::Errno;
use crate::net::Net;
use crate::profile::TunWriteRules;
use crate::skb::{SkBuff, ETH_HLEN, VLAN_HLEN};
use crate::xdp::redirect_ifindex;

use super::write::{eth_type_trans, Fate, ModelError, XdpReport, XdpWhere};
use super::XdpFrame;
use crate::consts::{skb_data_align, SKB_SHARED_INFO_ALIGNED, TUN_RX_PAD, XDP_PACKET_HEADROOM};

/// What tun_build_skb did with a native run.
#[derive(Debug)]
pub(crate) enum NativeResult {
    /// The buffer was consumed (TX, REDIRECT, DROP, an error): the write returns the full
    /// count with no further processing.
    Consumed(XdpReport, Fate),
    /// XDP_PASS: the skb built over the (possibly moved) data.
    Pass(XdpReport, Box<SkBuff>),
}

/// tun_build_skb with a driver-mode program attached and no GSO: the frame sits
/// TUN_RX_PAD + XDP_PACKET_HEADROOM into a buffer of SKB_DATA_ALIGN(len + pad) +
/// SKB_DATA_ALIGN(shinfo) bytes (xdp_init_buff / xdp_prepare_buff, metadata allowed
/// since c2315ebb0588, v6.15: `TunWriteRules::xdp_meta`).
pub(crate) fn build_skb_native(
    net: &mut Net,
    ifindex: u32,
    frame: &[u8],
    rules: &TunWriteRules,
) -> Result<NativeResult, ModelError> {
    let pad = TUN_RX_PAD + XDP_PACKET_HEADROOM;
    let buflen = skb_data_align(frame.len() + pad) + SKB_SHARED_INFO_ALIGNED;
    let mut buff = XdpBuff::with_layout(frame, pad, buflen)
        .map_err(|e| ModelError(format!("xdp_buff: {e}")))?;
    buff.ingress_ifindex = ifindex;
    if !rules.xdp_meta {
        buff.set_meta_unsupported();
    }
    let dev = net
        .dev_mut(ifindex)
        .ok_or_else(|| ModelError(format!("no device {ifindex}")))?;
    let att = dev
        .xdp
        .as_mut()
        .ok_or_else(|| ModelError("native XDP without a program".into()))?;
    let run = att
        .run(&mut buff)
        .map_err(|e| ModelError(format!("XDP program: {e}")))?;
    let report = XdpReport {
        place: XdpWhere::Native,
        action: run.action,
        len_before: frame.len(),
        len_after: buff.len(),
        redirect_to: redirect_ifindex(&run),
        insns: run.insns,
    };
    match run.action {
        XDP_PASS => {
            // __tun_build_skb: build_skb over the buffer, skb_reserve(pad), skb_put(len),
            // skb_metadata_set(metasize).
            let mut skb = SkBuff::from_frame(buff.data(), buff.headroom(), buff.len());
            eth_type_trans(&mut skb);
            Ok(NativeResult::Pass(report, Box::new(skb)))
        }
        XDP_TX if !rules.xdp_tx_native => {
            // Before 59655a5b6c83 XDP_TX built an skb and sent it through the generic TX
            // helper: it is read back with a PI, and tun counted no rx.
            let mut skb = SkBuff::from_frame(buff.data(), buff.headroom(), buff.len());
            eth_type_trans(&mut skb);
            dev.xmit(skb);
            Ok(NativeResult::Consumed(report, Fate::XdpTx))
        }
        action => {
            let fate = tun_xdp_act(net, ifindex, &buff, action, report.redirect_to, rules);
            Ok(NativeResult::Consumed(report, fate))
        }
    }
}

/// tun_xdp_act for the verdicts that consume the buffer (TX, REDIRECT, DROP, ABORTED,
/// unknown), shared by tun_build_skb and tun_xdp_one (docs/tap-write.md#xdp-act,
/// docs/vhost-tx.md#tun-xdp-one). Counts as the profile says and returns the frame's fate.
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
        XDP_TX => match (convert_buff_to_frame(buff), net.dev_mut(ifindex)) {
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
            // v6.8 "tun: fix missing dropped counter"; 4.19 counted it too (err_redirect).
            net.stats_mut(ifindex).rx_dropped += 1;
            Fate::XdpError(e)
        }
    }
}

/// xdp_convert_buff_to_frame (include/net/xdp.h): the xdp_frame struct lives in the
/// headroom, so headroom less metadata must hold it.
fn convert_buff_to_frame(buff: &XdpBuff) -> Option<XdpFrame> {
    if buff.headroom() - buff.metalen() < XDP_FRAME_SIZE || buff.data_end > buff.hard_end() {
        return None;
    }
    Some(XdpFrame {
        data: buff.data().to_vec(),
    })
}

/// xdp_do_redirect for an ifindex or devmap target, then the devmap flush
/// (net/core/filter.c: __xdp_do_redirect_frame; kernel/bpf/devmap.c: __xdp_enqueue,
/// bq_xmit_all; xdp_ok_fwd_dev). Returns the target's ifindex.
fn xdp_do_redirect(net: &mut Net, buff: &XdpBuff, target: Option<u32>) -> Result<u32, Errno> {
    let frame = convert_buff_to_frame(buff).ok_or(Errno::EOVERFLOW)?;
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
