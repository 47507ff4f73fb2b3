//! A network namespace's worth of devices: the taps of a scenario by ifindex, and the
//! protocol stack as AF_PACKET sees it (what was delivered, in order). The write path
//! needs more than one device: XDP_REDIRECT sends frames to another tap.

use std::collections::BTreeMap;

use crate::ethernet::ETH_P_802_2;
use crate::pool::Pool;
use crate::skb::{SkBuff, VlanTag, ETH_P_IP, ETH_P_IPV6};
use crate::tun::TunDevice;

/// A frame the stack received (__netif_receive_skb_core delivered it to the packet taps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub ifindex: u32,
    /// From the MAC header on; a hw-accelerated tag is out of band, as AF_PACKET shows it.
    pub frame: Vec<u8>,
    pub vlan: Option<VlanTag>,
    /// skb->protocol.
    pub protocol: u16,
}

use crate::consts::ETH_P_ARP;

/// The protocols with a ptype_base handler (dev_add_pack): ip_rcv, arp_rcv, ipv6_rcv and
/// llc_rcv (net/llc/llc_core.c, built in with the bridge's STP), as /proc/net/ptype
/// lists them on the conformance machine. No 802.1Q handler: without a VLAN device an
/// inner tag has none.
pub const PTYPE_BASE: [u16; 4] = [ETH_P_IP, ETH_P_ARP, ETH_P_IPV6, ETH_P_802_2];

/// Whether __netif_receive_skb_core finds a protocol handler for `protocol`.
pub fn has_ptype_handler(protocol: u16) -> bool {
    PTYPE_BASE.contains(&protocol)
}

/// The devices and the stack.
#[derive(Debug, Clone, Default)]
pub struct Net {
    pub devices: BTreeMap<u32, TunDevice>,
    /// Frames the stack received, in order.
    pub stack: Vec<Delivery>,
    /// Buffers of delivered frames handed back ([`Net::recycle_frame`]) for the next:
    /// up to a full vhost ring's worth, since a kick delivers that many before any is
    /// handed back.
    pub spare_frames: Pool<Vec<u8>, 1024>,
    /// The skbs tun_write and tun_xdp_one build, reused across writes. Boxed, so taking
    /// and giving one back moves a pointer, not the whole skb.
    pub spare_skbs: Pool<Box<SkBuff>, 4>,
    /// The NAPI instances of IFF_NAPI taps (`crate::tun::napi`), by ifindex.
    pub napi: BTreeMap<u32, crate::tun::napi::TunNapi>,
    /// Also keep each delivered skb whole (metadata included) in `delivered_skbs`: the
    /// in-process device (`crate::tun::device`) hands them to its caller's stack.
    pub keep_skbs: bool,
    pub delivered_skbs: Vec<(u32, SkBuff)>,
}

impl Net {
    pub fn new() -> Net {
        Net::default()
    }

    /// Add a device at `ifindex`.
    pub fn add(&mut self, ifindex: u32, dev: TunDevice) {
        self.devices.insert(ifindex, dev);
    }

    pub fn dev(&self, ifindex: u32) -> Option<&TunDevice> {
        self.devices.get(&ifindex)
    }

    pub fn dev_mut(&mut self, ifindex: u32) -> Option<&mut TunDevice> {
        self.devices.get_mut(&ifindex)
    }

    /// Give a delivered frame's buffer back; a few are kept for later deliveries.
    pub fn recycle_frame(&mut self, frame: Vec<u8>) {
        self.spare_frames.give(frame);
    }
}
