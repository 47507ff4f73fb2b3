//! tun_sendmsg with a TUN_MSG_PTR control message: a batch of XDP buffers that vhost_net
//! built, each run through tun_xdp_one, with one xdp_do_flush per batch
//! (drivers/net/tun.c: tun_sendmsg, tun_xdp_one; docs/vhost-tx.md#tun-msg-ptr,
//! docs/vhost-tx.md#tun-xdp-one, v4.20+).

use crate::bpf::XdpBuff;
use crate::consts::ETH_HLEN;
use crate::errno::Errno;
use crate::net::Net;
use crate::profile::TunWriteRules;
use crate::skb::SkBuff;
use crate::wire::virtio_net_hdr::VirtioNetHdrRepr;
use crate::xdp::tun_xdp_one::XdpOneProg;
use crate::xdp::XdpMode;

use super::write::{
    eth_type_trans, napi_detached, Fate, ModelError, WriteOpts, XdpReport, XdpWhere, NAPI_DETACHED,
};
use super::DeviceKind;

/// One buffer of a TUN_MSG_PTR batch: the xdp_buff vhost built and the vnet header it
/// put at data_hard_start.
#[derive(Debug, Clone)]
pub struct BatchBuff {
    pub xdp: XdpBuff,
    pub gso: VirtioNetHdrRepr,
}

/// What tun_xdp_one did with one buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpOneOutcome {
    /// 0 or a negative errno as tun_xdp_one returns it (1 when queued to NAPI).
    pub result: Result<(), Errno>,
    pub xdp: Option<XdpReport>,
    pub fate: Fate,
    /// The page reference is kept for the bulk release at the end of the batch.
    pub page_held: bool,
}

impl XdpOneOutcome {
    /// tun_xdp_one refused the buffer with `e` after the program (`xdp`), for `why`.
    fn dropped(e: Errno, xdp: Option<XdpReport>, why: &'static str) -> XdpOneOutcome {
        XdpOneOutcome {
            result: Err(e),
            xdp,
            fate: Fate::Dropped(why),
            page_held: false,
        }
    }
}

/// What one batched sendmsg did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchOutcome {
    pub per_buffer: Vec<XdpOneOutcome>,
    /// xdp_do_flush calls (one per batch that redirected anything).
    pub flushes: u32,
}

impl Net {
    /// tun_sendmsg(TUN_MSG_PTR): every buffer through tun_xdp_one inside one
    /// bh-disabled section, then one flush if anything was redirected.
    pub fn tun_sendmsg_batch(
        &mut self,
        ifindex: u32,
        file: WriteOpts,
        batch: &mut [BatchBuff],
        rules: &TunWriteRules,
    ) -> Result<BatchOutcome, ModelError> {
        let mut out = BatchOutcome::default();
        out.per_buffer.reserve(batch.len());
        let mut flush = false;
        for b in batch {
            let o = self.tun_xdp_one(ifindex, file, b, rules)?;
            if matches!(o.fate, Fate::XdpRedirected { .. }) {
                flush = true;
            }
            out.per_buffer.push(o);
        }
        // tun_sendmsg: napi_schedule once after the batch (fb3f903769e8, v5.18).
        if rules.xdp_one_napi {
            self.tun_napi_schedule(ifindex, rules)?;
        }
        if flush {
            // xdp_do_flush: the devmap bulk queues were sent as frames were queued in
            // this model; the call itself is what batching saves.
            out.flushes = 1;
        }
        Ok(out)
    }

    /// tun_xdp_one (docs/vhost-tx.md#tun-xdp-one).
    fn tun_xdp_one(
        &mut self,
        ifindex: u32,
        file: WriteOpts,
        b: &mut BatchBuff,
        rules: &TunWriteRules,
    ) -> Result<XdpOneOutcome, ModelError> {
        let datasize = b.xdp.len();
        if datasize < ETH_HLEN {
            return Ok(XdpOneOutcome {
                result: Err(Errno::EINVAL),
                xdp: None,
                fate: Fate::Rejected,
                page_held: false,
            });
        }
        let dev = self
            .dev_mut(ifindex)
            .ok_or_else(|| ModelError(format!("no device {ifindex}")))?;
        let native = dev.xdp.as_ref().is_some_and(|a| a.mode == XdpMode::Native);
        let mut report = None;
        let mut skb_xdp = false;
        // xdp_init_buff(xdp, buflen, &tfile->xdp_rxq): the program sees the file's queue.
        b.xdp.rx_queue_index = u32::from(file.rx_queue);
        if native {
            // The program block (xdp/tun_xdp_one.rs).
            match self.tun_xdp_one_prog(ifindex, b, rules)? {
                XdpOneProg::SkbXdp => skb_xdp = true,
                XdpOneProg::Pass(r) => report = Some(r),
                XdpOneProg::Consumed(outcome) => return Ok(outcome),
            }
        }
        // build: build_skb over the buffer, the vnet header, eth_type_trans.
        let mut skb = self.spare_skbs.take();
        skb.reuse_from_frame(b.xdp.data(), b.xdp.headroom(), b.xdp.len());
        let is_tap = self
            .dev(ifindex)
            .is_some_and(|d| d.config.kind == DeviceKind::Tap);
        if let Err(why) = super::write::vnet_hdr_to_skb(&mut skb, &b.gso, rules, is_tap) {
            self.stats_mut(ifindex).rx_frame_errors += 1;
            return Ok(XdpOneOutcome::dropped(Errno::EINVAL, report, why));
        }
        self.xdp_one_eth_type_trans(ifindex, &mut skb)?;
        // skb_record_rx_queue(skb, tfile->queue_index).
        skb.queue_mapping = file.rx_queue.saturating_add(1);
        let mut fate = Fate::Stack;
        if skb_xdp {
            let (r, f) = self.generic_xdp(ifindex, &mut skb, XdpWhere::TunGeneric)?;
            report = Some(r);
            if let Some(f) = f {
                return Ok(XdpOneOutcome {
                    result: Ok(()),
                    xdp: report,
                    fate: f,
                    page_held: false,
                });
            }
        }
        let napi = self.dev(ifindex).is_some_and(|d| d.config.napi) && rules.xdp_one_napi;
        if napi_detached(file, napi) {
            self.spare_skbs.give(skb);
            return Ok(XdpOneOutcome::dropped(Errno::EBUSY, report, NAPI_DETACHED));
        }
        // Hand off (tun/napi.rs): queued for NAPI (v5.18) or netif_receive_skb.
        let rx = self.tun_rx(ifindex, &mut skb, super::napi::RxFrom::XdpOne, true, rules)?;
        if rx.xdp.is_some() {
            report = rx.xdp;
        }
        if let Some(f) = rx.fate {
            fate = f;
        }
        let st = self.stats_mut(ifindex);
        st.rx_packets += 1;
        // dev_sw_netstats_rx_add(tun->dev, datasize): the length before XDP.
        st.rx_bytes += datasize as u64;
        self.spare_skbs.give(skb);
        Ok(XdpOneOutcome {
            result: Ok(()),
            xdp: report,
            fate,
            page_held: false,
        })
    }

    /// tun_xdp_one's eth_type_trans, whatever the device: it has no IFF_TUN branch, so on a
    /// tun device the first 14 bytes of the IP packet are taken as an Ethernet header,
    /// skb->protocol comes from its bytes 12-13 and the stack gets the packet from byte 14
    /// on (drivers/net/tun.c: tun_xdp_one, 6.1 and 6.12; docs/vhost-tx.md#tun-device).
    fn xdp_one_eth_type_trans(&mut self, ifindex: u32, skb: &mut SkBuff) -> Result<(), ModelError> {
        eth_type_trans(skb);
        if self
            .dev(ifindex)
            .is_some_and(|d| d.config.kind == DeviceKind::Tun)
        {
            // The model's eth_type_trans leaves data at the MAC header; the kernel's
            // pulls it (datasize >= ETH_HLEN was checked before).
            skb.pull(ETH_HLEN)
                .map_err(|e| ModelError(format!("tun_xdp_one: {e}")))?;
        }
        Ok(())
    }
}
