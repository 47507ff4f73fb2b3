//! drivers/net/tun.c: tun_build_skb, the part that runs a driver-mode program: the frame
//! is copied into a page-frag buffer laid out as an xdp_buff (xdp_init_buff /
//! xdp_prepare_buff), the program runs on it, and every verdict but XDP_PASS goes to
//! [`tun_xdp_act`](super::tun_xdp_act::tun_xdp_act). Without a program (or with GSO)
//! tun_get_user builds the skb over the same layout itself (`SkBuff::reuse_from_frame`
//! in `tun/write.rs`). Rules: docs/tap-write.md#build-skb, docs/tap-write.md#xdp-tx-history.

use crate::bpf::xdp::{XDP_PASS, XDP_TX};
use crate::bpf::XdpBuff;
use crate::consts::{skb_data_align, SKB_SHARED_INFO_ALIGNED, TUN_RX_PAD, XDP_PACKET_HEADROOM};
use crate::ethernet::eth_type_trans;
use crate::net::Net;
use crate::profile::TunWriteRules;
use crate::skb::SkBuff;
use crate::tun::write::{Fate, ModelError, XdpReport, XdpWhere};

use super::redirect_ifindex;
use super::tun_xdp_act::tun_xdp_act;

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
pub(crate) fn tun_build_skb_native(
    net: &mut Net,
    ifindex: u32,
    frame: &[u8],
    rx_queue: u16,
    rules: &TunWriteRules,
) -> Result<NativeResult, ModelError> {
    let pad = TUN_RX_PAD + XDP_PACKET_HEADROOM;
    let buflen = skb_data_align(frame.len() + pad) + SKB_SHARED_INFO_ALIGNED;
    let mut buff = XdpBuff::with_layout(frame, pad, buflen)
        .map_err(|e| ModelError(format!("xdp_buff: {e}")))?;
    buff.ingress_ifindex = ifindex;
    buff.rx_queue_index = u32::from(rx_queue);
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
