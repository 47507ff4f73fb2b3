//! The tun/tap device (drivers/net/tun.c): its configuration, its counters, the per-queue
//! tx_ring that holds packets for userspace, and the transmit side that fills it.
//!
//! The read path (what read() on the fd returns) is in [`read`]; the vnet header that
//! precedes a frame is derived in [`vnet`].

pub mod device;
pub mod ioctl;
pub mod napi;
pub mod read;
pub mod sendmsg;
pub mod vnet;
pub mod vnet_tnl;
mod vnet_to_skb;
pub mod write;
mod xmit_drop;

use std::collections::VecDeque;

use crate::consts::{ETH_P_8021AD, ETH_P_8021Q};
use crate::skb::SkBuff;

/// TUN_READQ_SIZE: the default tx_queue_len, and so the tx_ring size (tun.c).
pub const TUN_READQ_SIZE: usize = 500;
/// Default and minimum TUNSETVNETHDRSZ: sizeof(struct virtio_net_hdr) (tun.c: tun_set_iff;
/// tun_vnet.h: tun_vnet_ioctl rejects less).
pub const DEFAULT_VNET_HDR_SZ: usize = crate::wire::virtio_net_hdr::VIRTIO_NET_HDR_LEN;
// Still re-exported for trace/render.rs (rewritten by another item of issue 21).
pub use crate::consts::{TUN_PI_LEN, TUN_PKT_STRIP};
pub use xmit_drop::XmitDrop;

/// IFF_TAP (Ethernet frames) or IFF_TUN (IP packets); a scenario's `device.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    #[default]
    Tap,
    Tun,
}

/// Byte order of the 16-bit vnet fields (tun_vnet.h: tun_vnet_is_little_endian): Little
/// on x86 or with TUNSETVNETLE, Big with TUNSETVNETBE.
pub use crate::wire::virtio_net_hdr::Endian as VnetEndian;

/// TUNSETOFFLOAD bits that became device features (tun.c: set_offload). Only the ones
/// that decide what reaches tun_put_user are modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offloads {
    /// TUN_F_CSUM: NETIF_F_HW_CSUM, so CHECKSUM_PARTIAL skbs reach the reader.
    pub csum: bool,
    /// TUN_F_TSO4: NETIF_F_TSO.
    pub tso4: bool,
    /// TUN_F_TSO6: NETIF_F_TSO6.
    pub tso6: bool,
    /// TUN_F_TSO_ECN: NETIF_F_TSO_ECN.
    pub tso_ecn: bool,
    /// TUN_F_UFO (3.12 era UFO; later kernels only accept it for compatibility).
    pub ufo: bool,
    /// TUN_F_USO4 / TUN_F_USO6: NETIF_F_GSO_UDP_L4 (v6.2).
    pub uso4: bool,
    pub uso6: bool,
    /// TUN_F_UDP_TUNNEL_GSO: NETIF_F_GSO_UDP_TUNNEL, the 24-byte
    /// virtio_net_hdr_v1_hash_tunnel (v6.17, "tun: enable gso over UDP tunnel support";
    /// docs/tun-ioctl.md#setoffload).
    pub udp_tunnel_gso: bool,
    /// TUN_F_UDP_TUNNEL_GSO_CSUM: NETIF_F_GSO_UDP_TUNNEL_CSUM (only with the above).
    pub udp_tunnel_gso_csum: bool,
}

impl Offloads {
    /// The TUNSETOFFLOAD argument that asks for these bits (<uapi/linux/if_tun.h> TUN_F_*).
    pub fn tun_f_bits(&self) -> u64 {
        use ioctl::tun_f;
        [
            (self.csum, tun_f::CSUM),
            (self.tso4, tun_f::TSO4),
            (self.tso6, tun_f::TSO6),
            (self.tso_ecn, tun_f::TSO_ECN),
            (self.ufo, tun_f::UFO),
            (self.uso4, tun_f::USO4),
            (self.uso6, tun_f::USO6),
            (self.udp_tunnel_gso, tun_f::UDP_TUNNEL_GSO),
            (self.udp_tunnel_gso_csum, tun_f::UDP_TUNNEL_GSO_CSUM),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .fold(0, |acc, (_, bit)| acc | bit)
    }
}

/// The device as userspace configured it with TUNSETIFF and friends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunConfig {
    pub kind: DeviceKind,
    /// IFF_NO_PI.
    pub no_pi: bool,
    /// IFF_VNET_HDR.
    pub vnet_hdr: bool,
    /// TUNSETVNETHDRSZ.
    pub vnet_hdr_sz: usize,
    pub vnet_endian: VnetEndian,
    /// NETIF_F_HW_VLAN_CTAG_TX ("tx-vlan-hw-insert", ethtool's txvlan): on by default.
    pub tx_vlan_ctag: bool,
    /// NETIF_F_HW_VLAN_STAG_TX ("tx-vlan-stag-hw-insert"): on by default.
    pub tx_vlan_stag: bool,
    pub offloads: Offloads,
    /// dev->tx_queue_len: the tx_ring size.
    pub tx_queue_len: usize,
    /// IFF_UP.
    pub up: bool,
    /// IFF_NAPI: writes are queued to a NAPI instance (GRO-capable).
    pub napi: bool,
    /// IFF_NAPI_FRAGS: frags skbs through napi_gro_frags; never native XDP.
    pub napi_frags: bool,
    /// TUNSETSNDBUF was called: sk_sndbuf != INT_MAX, so no build_skb
    /// (docs/tap-write.md#path-choice).
    pub sndbuf_set: bool,
    /// dev->mtu (xdp_ok_fwd_dev checks redirected frames against it).
    pub mtu: usize,
}

impl Default for TunConfig {
    fn default() -> Self {
        TunConfig {
            kind: DeviceKind::Tap,
            no_pi: false,
            vnet_hdr: false,
            vnet_hdr_sz: DEFAULT_VNET_HDR_SZ,
            vnet_endian: VnetEndian::Little,
            tx_vlan_ctag: true,
            tx_vlan_stag: true,
            offloads: Offloads::default(),
            tx_queue_len: TUN_READQ_SIZE,
            up: true,
            napi: false,
            napi_frags: false,
            sndbuf_set: false,
            mtu: 1500,
        }
    }
}

/// The counters `ip -s link` shows for the device (tun.c: tun_net_get_stats64 adds
/// rx_frame_errors to the core and per-cpu software stats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TunStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_dropped: u64,
    pub rx_frame_errors: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
}

/// An xdp_frame queued for the reader by XDP_TX or a redirect (tun_xdp_xmit). Only the
/// frame bytes survive: no PI, no offload metadata (docs/tun-read.md#xdp-frames).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpFrame {
    pub data: Vec<u8>,
}

/// A tx_ring entry: the kernel tags xdp_frame pointers with bit 0 (TUN_XDP_FLAG,
/// docs/tun-read.md#ring-entries).
#[derive(Debug, Clone)]
pub enum RingEntry {
    /// Boxed so that queueing moves a pointer, not the whole sk_buff.
    Skb(Box<SkBuff>),
    Xdp(XdpFrame),
}

/// A tun/tap device with one queue.
#[derive(Debug, Clone)]
pub struct TunDevice {
    pub config: TunConfig,
    pub stats: TunStats,
    /// The attached XDP program, if any.
    pub xdp: Option<crate::xdp::XdpAttachment>,
    /// tun->numqueues: the attached queues (1 for the pipelines' single-queue taps; a
    /// [`device::TunHost`] keeps it). tun_xdp_xmit has no file to queue on at 0, and
    /// dev->real_num_rx_queues is it but never below 1 (tun_set_real_num_queues:
    /// netif_set_real_num_rx_queues refuses 0), which bounds generic XDP's rxq.
    pub numqueues: u16,
    tx_ring: VecDeque<RingEntry>,
    /// Freed skbs kept for reuse, so a replay does not hit the allocator per packet
    /// (the cost model still counts one allocation per skb). Boxed so that recycling
    /// hands back the same heap block the ring held.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<SkBuff>>,
}

impl Default for TunDevice {
    fn default() -> TunDevice {
        TunDevice::new(TunConfig::default())
    }
}

impl TunDevice {
    pub fn new(config: TunConfig) -> TunDevice {
        TunDevice {
            config,
            stats: TunStats::default(),
            xdp: None,
            numqueues: 1,
            tx_ring: VecDeque::new(),
            spare: Vec::new(),
        }
    }

    /// Packets waiting for userspace.
    pub fn queued(&self) -> usize {
        self.tx_ring.len()
    }

    /// netif_skb_features + validate_xmit_vlan (net/core/dev.c): a device that cannot
    /// insert this tag in hardware gets it in software before ndo_start_xmit, through
    /// __vlan_hwaccel_push_inside. This is the path the 2013 patch took tun off.
    fn validate_xmit_vlan(&self, skb: &mut SkBuff) {
        if let Some(tag) = skb.vlan {
            let capable = match tag.proto {
                ETH_P_8021Q => self.config.tx_vlan_ctag,
                ETH_P_8021AD => self.config.tx_vlan_stag,
                _ => false,
            };
            if !capable {
                skb.vlan_hwaccel_push_inside();
            }
        }
    }

    /// dev_queue_xmit down to tun_net_xmit: validate the skb for the device's features,
    /// then queue it on tx_ring. A full ring drops it (tx_dropped += 1,
    /// SKB_DROP_REASON_FULL_RING). tx_packets/tx_bytes are counted on read, not here.
    /// Returns whether the skb was queued.
    pub fn xmit(&mut self, skb: impl Into<Box<SkBuff>>) -> bool {
        let mut skb = skb.into();
        self.validate_xmit_vlan(&mut skb);
        if self.tx_ring.len() >= self.config.tx_queue_len {
            self.stats.tx_dropped += 1;
            self.free(skb);
            return false;
        }
        self.tx_ring.push_back(RingEntry::Skb(skb));
        true
    }

    /// tun_xdp_xmit for one frame (drivers/net/tun.c): a full ring costs tx_dropped and
    /// the frame (docs/tap-write.md#xdp-xmit). Returns whether it was queued.
    pub fn xdp_xmit(&mut self, frame: XdpFrame) -> bool {
        if self.tx_ring.len() >= self.config.tx_queue_len {
            self.stats.tx_dropped += 1;
            return false;
        }
        self.tx_ring.push_back(RingEntry::Xdp(frame));
        true
    }

    /// An skb to fill: a freed one if there is one.
    pub fn spare_skb(&mut self) -> Box<SkBuff> {
        self.spare.pop().unwrap_or_default()
    }

    /// kfree_skb / consume_skb: keep the buffer for reuse.
    pub(crate) fn free(&mut self, skb: Box<SkBuff>) {
        if self.spare.len() < 4 {
            self.spare.push(skb);
        }
    }

    /// ptr_ring_consume: the next packet for the reader.
    pub(crate) fn pop(&mut self) -> Option<RingEntry> {
        self.tx_ring.pop_front()
    }
}
