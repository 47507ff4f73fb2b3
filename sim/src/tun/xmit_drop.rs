//! Why tun_net_xmit dropped an skb: the `enum skb_drop_reason` values it passes to
//! kfree_skb_reason (include/net/dropreason-core.h; drivers/net/tun.c: tun_net_xmit,
//! which also adds 1 to the device's tx_dropped for each). docs/tun-read.md#tx-ring.

use std::fmt;

/// The drop reasons of drivers/net/tun.c: tun_net_xmit the model can produce, in the
/// order the function checks them. Not modelled (the device model answers
/// "not modelled" before reaching them): SKB_DROP_REASON_SOCKET_FILTER (a TUNATTACHFILTER
/// classic filter, sk_filter), the pskb_trim and skb_orphan_frags_rx failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum XmitDrop {
    /// SKB_DROP_REASON_DEV_READY: "Drop packet if interface is not attached": no file at
    /// the queue index (numqueues 0).
    DevReady,
    /// SKB_DROP_REASON_TAP_TXFILTER: check_filter (TUNSETTXFILTER) refused the
    /// destination address.
    TapTxfilter,
    /// SKB_DROP_REASON_TAP_FILTER: run_ebpf_filter (the TUNSETFILTEREBPF program)
    /// returned 0.
    TapFilter,
    /// SKB_DROP_REASON_FULL_RING: ptr_ring_produce found the file's tx_ring full.
    FullRing,
}

impl XmitDrop {
    /// The kernel's name (`SKB_DROP_REASON_FULL_RING`).
    pub fn kernel_name(self) -> &'static str {
        match self {
            XmitDrop::DevReady => "SKB_DROP_REASON_DEV_READY",
            XmitDrop::TapTxfilter => "SKB_DROP_REASON_TAP_TXFILTER",
            XmitDrop::TapFilter => "SKB_DROP_REASON_TAP_FILTER",
            XmitDrop::FullRing => "SKB_DROP_REASON_FULL_RING",
        }
    }

    /// What a trace's drop record says (`xmit-drop ...: tx_ring full`).
    pub fn what(self) -> &'static str {
        match self {
            XmitDrop::DevReady => "no queue attached",
            XmitDrop::TapTxfilter => "not in the TUNSETTXFILTER addresses",
            XmitDrop::TapFilter => "TUNSETFILTEREBPF program returned 0",
            XmitDrop::FullRing => "tx_ring full",
        }
    }
}

impl fmt::Display for XmitDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kernel_name())
    }
}
