//! The kernel constants more than one part of the model (or the real arm) needs, each
//! defined once, named as the kernel names it, with the header it comes from. Values are
//! those of the x86_64 kernels the project conforms against.
//!
//! Constants that belong to one header view (the virtio_net_hdr flags, the xdp_md field
//! offsets, the GRO limits) stay beside the code that reads them, defined there once.

// include/uapi/linux/if_ether.h

/// ETH_ALEN (include/uapi/linux/if_ether.h): one MAC address.
pub const ETH_ALEN: usize = 6;
/// ETH_HLEN (include/uapi/linux/if_ether.h): destination, source, type/length.
pub const ETH_HLEN: usize = 14;
/// ETH_DATA_LEN (include/uapi/linux/if_ether.h): the largest 802.3 payload a length field
/// may state.
pub const ETH_DATA_LEN: usize = 1500;
/// ETH_P_802_3_MIN (include/uapi/linux/if_ether.h): the smallest EtherType; below it the
/// type/length field is a length.
pub const ETH_P_802_3_MIN: u16 = 0x0600;
/// ETH_P_802_3 (include/uapi/linux/if_ether.h): a raw 802.3 frame (Novell).
pub const ETH_P_802_3: u16 = 0x0001;
/// ETH_P_ALL (include/uapi/linux/if_ether.h): every protocol, for an AF_PACKET socket.
pub const ETH_P_ALL: u16 = 0x0003;
/// ETH_P_802_2 (include/uapi/linux/if_ether.h): an 802.2 LLC frame.
pub const ETH_P_802_2: u16 = 0x0004;
/// ETH_P_IP (include/uapi/linux/if_ether.h).
pub const ETH_P_IP: u16 = 0x0800;
/// ETH_P_ARP (include/uapi/linux/if_ether.h).
pub const ETH_P_ARP: u16 = 0x0806;
/// ETH_P_IPV6 (include/uapi/linux/if_ether.h).
pub const ETH_P_IPV6: u16 = 0x86dd;
/// ETH_P_TEB, "Trans Ether Bridging": what GRE carries for gretap
/// (include/uapi/linux/if_ether.h).
pub const ETH_P_TEB: u16 = 0x6558;
/// ETH_P_8021Q, the 802.1Q customer VLAN TPID (include/uapi/linux/if_ether.h).
pub const ETH_P_8021Q: u16 = 0x8100;
/// ETH_P_8021AD, the 802.1ad service VLAN TPID (include/uapi/linux/if_ether.h).
pub const ETH_P_8021AD: u16 = 0x88a8;
/// ETH_P_QINQ1, the pre-standard QinQ TPID (include/uapi/linux/if_ether.h).
pub const ETH_P_QINQ1: u16 = 0x9100;

// include/net/vxlan.h

/// IANA_VXLAN_UDP_PORT (include/net/vxlan.h).
pub const IANA_VXLAN_UDP_PORT: u16 = 4789;
/// sizeof(struct vxlanhdr) (include/net/vxlan.h).
pub const VXLAN_HLEN: usize = 8;

// include/net/ipv6.h

/// NEXTHDR_HOP (include/net/ipv6.h): hop-by-hop options.
pub const NEXTHDR_HOP: u8 = 0;
/// NEXTHDR_TCP (include/net/ipv6.h).
pub const NEXTHDR_TCP: u8 = 6;
/// NEXTHDR_UDP (include/net/ipv6.h).
pub const NEXTHDR_UDP: u8 = 17;
/// NEXTHDR_ROUTING (include/net/ipv6.h).
pub const NEXTHDR_ROUTING: u8 = 43;
/// NEXTHDR_FRAGMENT (include/net/ipv6.h).
pub const NEXTHDR_FRAGMENT: u8 = 44;
/// NEXTHDR_AUTH (include/net/ipv6.h).
pub const NEXTHDR_AUTH: u8 = 51;
/// NEXTHDR_NONE (include/net/ipv6.h).
pub const NEXTHDR_NONE: u8 = 59;
/// NEXTHDR_DEST (include/net/ipv6.h).
pub const NEXTHDR_DEST: u8 = 60;

// include/linux/if_vlan.h

/// VLAN_HLEN (include/linux/if_vlan.h): TPID + TCI.
pub const VLAN_HLEN: usize = 4;
/// VLAN_VID_MASK (include/linux/if_vlan.h): the VLAN ID bits of a TCI.
pub const VLAN_VID_MASK: u16 = 0x0fff;

// include/uapi/linux/in.h and include/uapi/linux/in6.h

/// IPPROTO_HOPOPTS (include/uapi/linux/in6.h): IPv6 hop-by-hop options.
pub const IPPROTO_HOPOPTS: u8 = 0;
/// IPPROTO_ICMP (include/uapi/linux/in.h).
pub const IPPROTO_ICMP: u8 = 1;
/// IPPROTO_IGMP (include/uapi/linux/in.h).
pub const IPPROTO_IGMP: u8 = 2;
/// IPPROTO_TCP (include/uapi/linux/in.h).
pub const IPPROTO_TCP: u8 = 6;
/// IPPROTO_UDP (include/uapi/linux/in.h).
pub const IPPROTO_UDP: u8 = 17;
/// IPPROTO_ROUTING (include/uapi/linux/in6.h): IPv6 routing header.
pub const IPPROTO_ROUTING: u8 = 43;
/// IPPROTO_FRAGMENT (include/uapi/linux/in6.h): IPv6 fragment header.
pub const IPPROTO_FRAGMENT: u8 = 44;
/// IPPROTO_IPIP (include/uapi/linux/in.h): IPv4 in IPv4 or IPv6.
pub const IPPROTO_IPIP: u8 = 4;
/// IPPROTO_IPV6 (include/uapi/linux/in.h): IPv6 in IPv4 (SIT) or IPv6.
pub const IPPROTO_IPV6: u8 = 41;
/// IPPROTO_GRE (include/uapi/linux/in.h).
pub const IPPROTO_GRE: u8 = 47;
/// IPPROTO_AH (include/uapi/linux/in.h).
pub const IPPROTO_AH: u8 = 51;
/// IPPROTO_ICMPV6 (include/uapi/linux/in6.h).
pub const IPPROTO_ICMPV6: u8 = 58;
/// IPPROTO_NONE (include/uapi/linux/in6.h): no next header.
pub const IPPROTO_NONE: u8 = 59;
/// IPPROTO_DSTOPTS (include/uapi/linux/in6.h): IPv6 destination options.
pub const IPPROTO_DSTOPTS: u8 = 60;

// arch/x86/include/asm/page_types.h, arch/x86/include/asm/cache.h

/// PAGE_SIZE on x86_64 (arch/x86/include/asm/page_types.h).
pub const PAGE_SIZE: usize = 4096;
/// SMP_CACHE_BYTES = L1_CACHE_BYTES on x86_64 (include/linux/cache.h,
/// arch/x86/include/asm/cache.h): the SKB_DATA_ALIGN unit.
pub const SMP_CACHE_BYTES: usize = 64;

// include/linux/skbuff.h

/// SKB_DATA_ALIGN(n) (include/linux/skbuff.h): `n` rounded up to SMP_CACHE_BYTES.
pub const fn skb_data_align(n: usize) -> usize {
    n.div_ceil(SMP_CACHE_BYTES) * SMP_CACHE_BYTES
}

/// SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) on x86_64: the tailroom build_skb and
/// xdp_data_hard_end keep for the shared info. The kernel has no constant of this name;
/// it writes the expression out (include/linux/skbuff.h: SKB_WITH_OVERHEAD,
/// SKB_HEAD_ALIGN; include/net/xdp.h: xdp_data_hard_end). 320 with MAX_SKB_FRAGS 17; the
/// 3456-byte build_skb limit it gives tun matches the real kernel's.
pub const SKB_SHARED_INFO_ALIGNED: usize = 320;
/// MAX_SKB_FRAGS (include/linux/skbuff.h, CONFIG_MAX_SKB_FRAGS default).
pub const MAX_SKB_FRAGS: usize = 17;
/// NET_IP_ALIGN on x86 (include/linux/skbuff.h: 0 where unaligned access is cheap).
pub const NET_IP_ALIGN: usize = 0;
/// NET_SKB_PAD on x86_64 (include/linux/skbuff.h: max(32, L1_CACHE_BYTES)): the headroom
/// a driver reserves.
pub const NET_SKB_PAD: usize = 64;

// include/uapi/linux/bpf.h

/// XDP_PACKET_HEADROOM (include/uapi/linux/bpf.h): the headroom drivers (and
/// BPF_PROG_TEST_RUN, and generic XDP) leave in front of the frame.
pub const XDP_PACKET_HEADROOM: usize = 256;

// include/uapi/linux/if_link.h

/// XDP_FLAGS_UPDATE_IF_NOEXIST (include/uapi/linux/if_link.h): attach only if none is.
pub const XDP_FLAGS_UPDATE_IF_NOEXIST: u32 = 1;
/// XDP_FLAGS_SKB_MODE (include/uapi/linux/if_link.h): generic XDP (`xdpgeneric`).
pub const XDP_FLAGS_SKB_MODE: u32 = 2;
/// XDP_FLAGS_DRV_MODE (include/uapi/linux/if_link.h): native (driver) XDP (`xdpdrv`).
pub const XDP_FLAGS_DRV_MODE: u32 = 4;

// drivers/net/tun.c, include/uapi/linux/if_tun.h

/// TUN_RX_PAD (drivers/net/tun.c): NET_IP_ALIGN + NET_SKB_PAD.
pub const TUN_RX_PAD: usize = NET_IP_ALIGN + NET_SKB_PAD;
/// sizeof(struct tun_pi) (include/uapi/linux/if_tun.h).
pub const TUN_PI_LEN: usize = 4;
/// TUN_PKT_STRIP (include/uapi/linux/if_tun.h): the packet was truncated on read.
pub const TUN_PKT_STRIP: u16 = 0x0001;

// drivers/vhost/net.c

/// VHOST_NET_RX_PAD (drivers/vhost/net.c): NET_IP_ALIGN + NET_SKB_PAD.
pub const VHOST_NET_RX_PAD: usize = NET_IP_ALIGN + NET_SKB_PAD;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skb_data_align_rounds_up_to_the_cache_line() {
        assert_eq!(skb_data_align(0), 0);
        assert_eq!(skb_data_align(1), 64);
        assert_eq!(skb_data_align(64), 64);
        assert_eq!(skb_data_align(65), 128);
    }

    #[test]
    fn tun_build_skb_limit_is_the_measured_one() {
        // tun_can_build_skb with the XDP headroom counted: 3456 bytes fit and 3457 do
        // not, the limit found by bisection on the real kernel.
        let pad = TUN_RX_PAD + XDP_PACKET_HEADROOM;
        let fits = |len: usize| skb_data_align(len + pad) + SKB_SHARED_INFO_ALIGNED <= PAGE_SIZE;
        assert!(fits(3456));
        assert!(!fits(3457));
    }
}
