//! Kernel profiles: the rules that changed between the kernels skbsim models, as data.
//!
//! A profile is named after the kernel whose behaviour it reproduces. `linux-6.18` is the
//! default and must match the kernel of the machines this bench runs on (see
//! docs/real-kernel.md); older profiles reproduce the source of that release as read
//! (tags [3.12], [4.19]: docs/README.md#citing). What each profile reproduces:
//! docs/profiles.md.

use std::fmt;

/// How tun_put_user decides TUN_PKT_STRIP in tun_pi.flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StripRule {
    /// Set when the buffer is shorter than the whole logical length: PI + vnet + frame +
    /// the spliced tag ([CUR] tun.c: tun_put_user, `iov_iter_count(iter) < total`).
    BufferShorterThanTotal,
    /// 3.12: set when buffer − 4 < skb->len; the vnet area and the tag are ignored.
    BufferMinusPiShorterThanSkbLen,
}

/// What tun_put_user returns and adds to tx_bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutUserAccounting {
    /// Return the full logical length; tx_bytes += skb->len + vlan length (since ~3.19,
    /// and 923347bb83c6 "tun: unbreak truncated packet signalling" for the return value).
    FullLength,
    /// 3.12 as merged with 6680ec68eff4: return the bytes written; tx_bytes += the final
    /// `len` ("room") value, which for a tagged skb leaves out the MACs and the tag.
    BytesWritten312,
}

/// The rules of the tun read path (drivers/net/tun.c: tun_put_user, tun_vnet.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunReadRules {
    pub strip: StripRule,
    pub accounting: PutUserAccounting,
    /// "tun: Fix csum_start with VLAN acceleration" (~2014-15): csum_start += 4 when a
    /// tag is spliced in front of the checksummed bytes.
    pub csum_start_vlan_shift: bool,
    /// 4adf74971018 "tun: Pad virtio headers" (v6.15): zero-fill vnet_hdr_sz beyond the
    /// real header; before it the bytes were skipped and kept the reader's old content.
    pub vnet_pad_zero: bool,
    /// 3.12 still mapped SKB_GSO_UDP (UFO) to VIRTIO_NET_HDR_GSO_UDP; later kernels
    /// return -EINVAL for it on read.
    pub ufo_on_read: bool,
    /// virtio_net_hdr_from_skb knows SKB_GSO_UDP_L4 (USO, v6.2).
    pub uso_on_read: bool,
    /// 16-bit vnet fields converted with tun16 (LE/BE selection, ~3.19-4.0). 3.12 wrote
    /// host order (little-endian on x86), which equals `Little` there.
    pub vnet_endian_selectable: bool,
}

/// How virtio_net_hdr_to_skb (include/linux/virtio_net.h) checks a written vnet header
/// and decides that the packet is GSO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VnetToSkbRule {
    /// Before v5.7 (and 3.12's inline copy in tun_get_user): only skb_partial_csum_set
    /// (csum_start + csum_offset + 2 inside the packet); any gso_type but NONE makes the
    /// skb GSO, whatever its length.
    PartialCsumOnly,
    /// v5.7+: the transport header counts. p_off = transport offset + the L4 header
    /// length (9274124f023b "net: stricter validation of untrusted gso packets"); GSO
    /// only when skb->len - p_off > gso_size (6dd912f82680 "net: check untrusted
    /// gso_size at kernel entry", 7c6d2ecbda83 "net: be more gentle about silly gso
    /// requests coming from user"); a NEEDS_CSUM header needs start + max(thlen, off + 2)
    /// bytes (0f6925b3e8da "virtio_net: Do not pull payload in skb->head", v5.12) and
    /// TCP GSO csum_offset 16 (89add40066f9 "net: drop bad gso csum_start and offset in
    /// virtio_net_hdr", v6.11, backported to the stable series); without NEEDS_CSUM a GSO
    /// payload starts after the smallest IP header and thlen (9181d6f8a2bb "net: add more
    /// sanity check in virtio_net_hdr_to_skb()").
    TransportHeader,
}

/// The rules of the tun write path with XDP (drivers/net/tun.c: tun_get_user,
/// tun_build_skb, tun_xdp_act; docs/tap-write.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunWriteRules {
    /// XDP on tap exists (761876c857cb "tap: XDP support", v4.14).
    pub xdp: bool,
    /// XDP_TX goes through ndo_xdp_xmit and comes back as an xdp_frame (59655a5b6c83
    /// "tuntap: XDP_TX can use native XDP", v4.17); before, through the generic TX
    /// helper on a fresh skb, read back with a PI.
    pub xdp_tx_native: bool,
    /// tun_can_build_skb counts XDP_PACKET_HEADROOM unconditionally (2023 syzbot fix):
    /// frames up to 3456 bytes; before, up to 3712.
    pub build_skb_counts_xdp_headroom: bool,
    /// "tun: add missing rx stats accounting in tun_xdp_act" and "tun: fix missing
    /// dropped counter in tun_xdp_act" (v6.8): rx stats on TX/REDIRECT success,
    /// rx_dropped on their errors.
    pub xdp_act_rx_stats: bool,
    /// A failed XDP_TX or XDP_REDIRECT counts rx_dropped: 4.19 and older at
    /// tun_build_skb's err_redirect/err_xdp, 6.8 on in tun_xdp_act ("tun: fix missing
    /// dropped counter in tun_xdp_act"). 8ae1aff0b331 "tuntap: split out XDP logic" (v4.20)
    /// lost the count on both tun_build_skb's and tun_xdp_one's paths until then.
    pub xdp_err_rx_dropped: bool,
    /// 4.19 tested IFF_UP first and counted nothing; later kernels test it before
    /// delivery and count rx_dropped.
    pub down_check_first: bool,
    /// XDP metadata (bpf_xdp_adjust_meta) on tap: tun_build_skb prepares its xdp_buff
    /// with xdp_prepare_buff(..., true) and tun_xdp_one keeps the metadata vhost_net
    /// prepared (no xdp_set_data_meta_invalid), both from c2315ebb0588 "net: tun: enable
    /// XDP metadata support" (v6.15), with the metadata carried to the skb (0ca23a4d64ce).
    /// Before, both buffers had the metadata marked invalid: -ENOTSUPP.
    pub xdp_meta: bool,
    pub vnet_to_skb: VnetToSkbRule,
    /// A NEEDS_CSUM csum_start inside the smallest IP header (20 bytes, 40 for TCPV6) is
    /// -EINVAL: 49d14b54a527 "net: test for not too small csum_start in
    /// virtio_net_hdr_to_skb()" (v6.12). The lab's Debian 6.1 accepts csum_start 10
    /// (tap-write/vnet-gso-threshold, write 6).
    pub vnet_csum_start_min: bool,
    /// The payload offset of a vnet GSO header counts the smallest network header
    /// (`nh_min_len`: 20, 40 for TCPV6): with NEEDS_CSUM max(nh_min_len, csum_start) +
    /// thlen, without it nh_min_len + thlen. 9181d6f8a2bb "net: more strict
    /// VIRTIO_NET_HDR_GSO_UDP_L4 validation"; before (the lab's Debian 6.1, seen in its
    /// include/linux/virtio_net.h and in tap-write/vnet-gso-threshold-tcp6, write 4),
    /// csum_start + thlen and thlen alone.
    pub vnet_nh_min_len: bool,
    /// A tap's GSO header without NEEDS_CSUM takes its payload offset from the packet
    /// itself, as virtio_net_hdr_to_skb's flow-dissector branch does when the skb has a
    /// network header: the outer EtherType must match the gso_type
    /// (virtio_net_hdr_match_proto), the transport offset and protocol come from the IP
    /// header (skb_flow_dissect_flow_keys_basic: keys.control.thoff, keys.basic.ip_proto),
    /// p_off = thoff + thlen. Seen on this bench's host kernel (6.18.44) on 2026-12-04:
    /// tap-write/vnet-gso-threshold write 3 (TCPV4 gso_size 110, 100 payload bytes behind
    /// 14 + 20 + 20 header bytes) and -tcp6 write 3 (TCPV6 gso_size 113, 14 + 40 + 20)
    /// are read back as non-GSO, which only p_off = 54 / 74 explains; `nh_min_len +
    /// thlen` (40 / 60) made both GSO. Off: the skb has no network header yet and the
    /// `vnet_nh_min_len` floor applies (the lab's 6.1 and 6.12 guests).
    pub vnet_gso_dissect: bool,
    /// The stable regression of summer 2024: e269d79c7d35 "net: missing check virtio"
    /// (v6.11-rc1, in 6.6.44, 6.10.3 and Debian's 6.1.106-1/-2) refused a NEEDS_CSUM
    /// header with a gso_size unless skb->len / gso_size >= 1, gso_size > needed and
    /// skb->len % gso_size is 0 or > needed (needed = csum_start + max(thlen, csum_offset +
    /// 2)). GSO writes whose last segment is short broke wireguard-go and Tailscale
    /// (tailscale/tailscale#13041). 89add40066f9 "net: drop bad gso csum_start and offset
    /// in virtio_net_hdr" removed it (docs/tap-write.md#gso-regression-2024).
    pub vnet_gso_tail_check: bool,
    /// A TCP GSO header with NEEDS_CSUM must point csum_offset at the TCP checksum (16):
    /// 89add40066f9 (with 6513eb3d3191 "net: tighten bad gso csum offset check in
    /// virtio_net_hdr" limiting it to CHECKSUM_PARTIAL), the fix of the window above; the
    /// window and the kernels before it accept any csum_offset.
    pub vnet_tcp_csum_offset: bool,
    /// A TCP GSO header's gso_size is raised to TCP_MIN_GSO_SIZE (8):
    /// `gso_size = max(gso_size, TCP_MIN_GSO_SIZE)` in virtio_net_hdr_to_skb, from
    /// 23d05d563b7e "net: prevent mss overflow in skb_segment()" (v6.7, in 6.1 stable;
    /// present in Debian's 6.1.192 and 6.12.118 include/linux/virtio_net.h). This bench's
    /// 6.18.44 host reads gso_size 4 back as 4 (tap-write/vnet-gso-tail, read A 4).
    pub vnet_tcp_min_gso_size: bool,
    /// A vnet_hdr_sz of at least 24 makes tun_get_user parse the whole
    /// virtio_net_hdr_v1_hash_tunnel and accept UDP-tunnel GSO (gso_type 0x20/0x40 with
    /// the tunnel offsets) through virtio_net_hdr_tnl_to_skb, whatever TUNSETOFFLOAD
    /// said (drivers/net/tun_vnet.h: tun_vnet_hdr_guest_features, "Tun is not aware of
    /// the negotiated guest features, guess them from the virtio net hdr size"):
    /// 288f30435132 "tun: enable gso over UDP tunnel support" (v6.17). Before, the
    /// first 10 bytes are parsed and gso_type 0x20/0x40 is unknown: -EINVAL,
    /// rx_frame_errors (docs/tap-write.md#vnet-tunnel).
    pub vnet_udp_tunnel: bool,
    /// tun_xdp_one queues the skb for the tfile's NAPI (IFF_NAPI) and tun_sendmsg
    /// schedules NAPI once per TUN_MSG_PTR batch, so a vhost batch meets GRO:
    /// fb3f903769e8 "tun: support NAPI for packets received from batched XDP buffs"
    /// (v5.18). Before, tun_xdp_one called netif_receive_skb.
    pub xdp_one_napi: bool,
}

/// Who may attach to an existing device (drivers/net/tun.c: tun_set_iff; docs/tun-ioctl.md#permission).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunPermission {
    /// `tun_not_capable`: refused only when a set owner or group does not match and the
    /// caller lacks CAP_NET_ADMIN: a device with neither set is open to everyone.
    NotCapable,
    /// `tun_permitted` (Debian's 6.12.118 tun.c): allowed when an owner or a group is set
    /// and every one set matches; otherwise CAP_NET_ADMIN is needed, so a device with
    /// neither set is closed to users without it.
    Permitted,
}

/// What the tun ioctls accept (drivers/net/tun.c: __tun_chr_ioctl, tun_set_iff,
/// set_offload; drivers/net/tun_vnet.h: tun_vnet_ioctl; docs/tun-ioctl.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunIoctlRules {
    /// IFF_NAPI and IFF_NAPI_FRAGS are in TUN_FEATURES (94317090b1e9 "tun: enable NAPI
    /// for TUN/TAP driver", 90e33d459407 "tun: enable napi_gro_frags() for TUN/TAP
    /// driver", v4.15); before, TUNSETIFF ignored the bits.
    pub napi: bool,
    /// IFF_NO_CARRIER in TUNSETIFF and TUNGETFEATURES ("tun: support not enabling carrier
    /// in TUNSETIFF", v6.0).
    pub no_carrier: bool,
    /// TUN_F_USO4|TUN_F_USO6 ("tun: implement UDP segmentation offload", v6.2).
    pub uso: bool,
    /// TUN_F_UDP_TUNNEL_GSO[_CSUM] ("tun: enable gso over UDP tunnel support", v6.17).
    pub udp_tunnel_gso: bool,
    /// TUNSETVNETLE / TUNGETVNETLE (v3.19).
    pub vnet_le: bool,
    /// TUNSETVNETBE / TUNGETVNETBE answer (v4.2, and only with
    /// CONFIG_TUN_VNET_CROSS_LE; without it they are EINVAL).
    pub vnet_be: bool,
    /// TUNSETSNDBUF refuses sndbuf <= 0 ("tun/tap: sanitize TUNSETSNDBUF input", v4.14).
    pub sndbuf_positive: bool,
    /// TUNSETSTEERINGEBPF / TUNSETFILTEREBPF ("tun: eBPF steering support", "tun: allow
    /// to attach ebpf socket filter", v4.16).
    pub ebpf: bool,
    /// TUNSETCARRIER ("tun: implement carrier change", v5.0).
    pub set_carrier: bool,
    /// TUNGETDEVNETNS ("tun: Add ioctl() TUNGETDEVNETNS cmd to allow obtaining real net
    /// ns of tun device", v5.2).
    pub get_devnetns: bool,
    pub permission: TunPermission,
}

/// Linux 6.18 (and 6.17): everything above.
pub const TUN_IOCTL_6_18: TunIoctlRules = TunIoctlRules {
    napi: true,
    no_carrier: true,
    uso: true,
    udp_tunnel_gso: true,
    vnet_le: true,
    // This host's kernel has no CONFIG_TUN_VNET_CROSS_LE (seen: TUNSETVNETBE is EINVAL).
    vnet_be: false,
    sndbuf_positive: true,
    ebpf: true,
    set_carrier: true,
    get_devnetns: true,
    // "tun: revert fix group permission check" (Willem de Bruijn, v6.14) put
    // tun_not_capable back: 3ca459eaba1b (v6.8) had made a device with neither owner nor
    // group need CAP_NET_ADMIN. Seen on this host: a user without it attaches to such a
    // device (docs/tun-ioctl.md#permission, the permission rows of the conformance table).
    permission: TunPermission::NotCapable,
};

/// Linux 6.12 (Debian 6.12.118 source read): no UDP tunnel GSO (v6.17); tun_set_iff asks
/// tun_permitted (seen in the lab's 6.12.118 guest: a user without CAP_NET_ADMIN may not
/// attach to a device with neither owner nor group).
pub const TUN_IOCTL_6_12: TunIoctlRules = TunIoctlRules {
    udp_tunnel_gso: false,
    permission: TunPermission::Permitted,
    ..TUN_IOCTL_6_18
};

/// Linux 6.1 (Debian 6.1.192 source read): no USO (v6.2), tun_not_capable (v6.8 fix).
pub const TUN_IOCTL_6_1: TunIoctlRules = TunIoctlRules {
    uso: false,
    permission: TunPermission::NotCapable,
    ..TUN_IOCTL_6_12
};

/// Linux 4.16 to 4.20: NAPI and eBPF, no IFF_NO_CARRIER, TUNSETCARRIER, TUNGETDEVNETNS.
pub const TUN_IOCTL_4_19: TunIoctlRules = TunIoctlRules {
    no_carrier: false,
    set_carrier: false,
    get_devnetns: false,
    ..TUN_IOCTL_6_1
};

/// Linux 3.12: TUNSETIFF, TUNSETQUEUE, the filters, TUNSETVNETHDRSZ; nothing later.
pub const TUN_IOCTL_3_12: TunIoctlRules = TunIoctlRules {
    napi: false,
    vnet_le: false,
    sndbuf_positive: false,
    ebpf: false,
    ..TUN_IOCTL_4_19
};

/// One modelled kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelProfile {
    pub name: &'static str,
    pub tun_read: TunReadRules,
    pub tun_write: TunWriteRules,
    /// The GRO engine (net/core/gro.c and the offloads; docs/gro.md).
    pub gro: crate::gro::GroRules,
    pub vhost: VhostRules,
    /// What the tun ioctls answer (docs/tun-ioctl.md).
    pub tun_ioctl: TunIoctlRules,
}

/// The rules of vhost_net's TX path (drivers/vhost/net.c; docs/vhost-tx.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VhostRules {
    /// 0a0be13b8fe2 "vhost_net: batch submitting XDP buffers to underlayer sockets"
    /// (v4.20): up to VHOST_NET_BATCH XDP buffers per TUN_MSG_PTR sendmsg. Before, one
    /// sendmsg per packet with MSG_MORE; only used-ring updates were batched.
    pub xdp_batching: bool,
    /// A sendmsg error other than EAGAIN/ENOMEM/ENOBUFS drops the packet and consumes
    /// its descriptor (Yunjian Wang, 2023); [4.19] put it back and stopped.
    pub consume_desc_on_error: bool,
}

const VHOST_BATCHING: VhostRules = VhostRules {
    xdp_batching: true,
    consume_desc_on_error: true,
};

const VHOST_PER_PACKET: VhostRules = VhostRules {
    xdp_batching: false,
    consume_desc_on_error: false,
};

/// Linux 6.18: the machines' kernel ([CUR] plus [CUR+] fixes).
pub const LINUX_6_18: KernelProfile = KernelProfile {
    name: "linux-6.18",
    tun_read: TunReadRules {
        strip: StripRule::BufferShorterThanTotal,
        accounting: PutUserAccounting::FullLength,
        csum_start_vlan_shift: true,
        vnet_pad_zero: true,
        ufo_on_read: false,
        uso_on_read: true,
        vnet_endian_selectable: true,
    },
    tun_write: TunWriteRules {
        xdp: true,
        xdp_tx_native: true,
        build_skb_counts_xdp_headroom: true,
        xdp_act_rx_stats: true,
        xdp_err_rx_dropped: true,
        down_check_first: false,
        xdp_meta: true,
        vnet_to_skb: VnetToSkbRule::TransportHeader,
        vnet_csum_start_min: true,
        vnet_nh_min_len: true,
        vnet_gso_dissect: true,
        vnet_gso_tail_check: false,
        vnet_tcp_csum_offset: true,
        vnet_tcp_min_gso_size: false,
        vnet_udp_tunnel: true,
        xdp_one_napi: true,
    },
    gro: crate::gro::rules::GRO_LINUX_6_18,
    vhost: VHOST_BATCHING,
    tun_ioctl: TUN_IOCTL_6_18,
};

/// Linux 4.19 ([4.19]): as 6.18 on the read path except that the vnet padding is skipped
/// and USO does not exist yet.
pub const LINUX_4_19: KernelProfile = KernelProfile {
    name: "linux-4.19",
    tun_read: TunReadRules {
        vnet_pad_zero: false,
        uso_on_read: false,
        ..LINUX_6_18.tun_read
    },
    tun_write: TunWriteRules {
        xdp: true,
        xdp_tx_native: true,
        build_skb_counts_xdp_headroom: false,
        xdp_act_rx_stats: false,
        xdp_err_rx_dropped: true,
        down_check_first: true,
        xdp_meta: false,
        vnet_to_skb: VnetToSkbRule::PartialCsumOnly,
        vnet_csum_start_min: false,
        vnet_nh_min_len: false,
        vnet_gso_dissect: false,
        vnet_gso_tail_check: false,
        vnet_tcp_csum_offset: false,
        vnet_tcp_min_gso_size: false,
        vnet_udp_tunnel: false,
        xdp_one_napi: false,
    },
    gro: crate::gro::rules::GRO_LINUX_4_19,
    vhost: VHOST_PER_PACKET,
    tun_ioctl: TUN_IOCTL_4_19,
};

/// Linux 6.1, the Debian guest kernel of `skbsim lab` (6.1 stable, with its backports):
/// as 6.18 but the vnet padding is skipped (4adf74971018 is v6.15), no USO on tap (v6.2),
/// no XDP metadata on tap (c2315ebb0588 is v6.15), no csum_start lower bound on a vnet
/// header (49d14b54a527 is v6.12, seen in the guest), and 4.19's GRO IP ID and CWR rules; its XDP counters already have the 2024 fixes (seen
/// in the guest: XDP_TX counts rx, the 3457-byte fallback counts nothing).
pub const LINUX_6_1: KernelProfile = KernelProfile {
    name: "linux-6.1",
    tun_read: TunReadRules {
        vnet_pad_zero: false,
        uso_on_read: false,
        ..LINUX_6_18.tun_read
    },
    tun_write: TunWriteRules {
        xdp_meta: false,
        vnet_csum_start_min: false,
        vnet_nh_min_len: false,
        vnet_gso_dissect: false,
        vnet_tcp_min_gso_size: true,
        // 288f30435132 is v6.17.
        vnet_udp_tunnel: false,
        ..LINUX_6_18.tun_write
    },
    gro: crate::gro::rules::GRO_LINUX_6_1,
    vhost: LINUX_6_18.vhost,
    tun_ioctl: TUN_IOCTL_6_1,
};

/// Linux 6.12, Debian's 6.12 cloud kernel in `skbsim lab` (`--kernel 6.12`), derived from
/// what that guest shows against 6.18 (every other tun-read, tap-write, tap-gro and vhost-tx
/// scenario agrees with 6.18's rules):
/// - vnet header padding skipped, not zeroed: 4adf74971018 "tun: Pad virtio headers" is
///   v6.15 (`vnet12-pad`, `vnet24-pi`, `vlan-8021q-vnet12`, `xdp-tx-native-vnet12`,
///   `xdp-tx-batched` read the reader's 0xee fill);
/// - GRO's IP ID and CWR rules from before 6.18 ([`crate::gro::rules::GRO_LINUX_6_12`]).
///
/// Unlike 6.1 it has tun USO (v6.2; `gso-udp-l4` runs and agrees) and the v6.8 outer VXLAN
/// checksum fix.
pub const LINUX_6_12: KernelProfile = KernelProfile {
    name: "linux-6.12",
    tun_read: TunReadRules {
        vnet_pad_zero: false,
        ..LINUX_6_18.tun_read
    },
    tun_write: TunWriteRules {
        // XDP metadata in tun_build_skb and tun_xdp_one is c2315ebb0588, v6.15.
        xdp_meta: false,
        // The 6.12 guest reads tap-write/vnet-gso-threshold write 3 back as GSO.
        vnet_gso_dissect: false,
        vnet_tcp_min_gso_size: true,
        // 288f30435132 is v6.17.
        vnet_udp_tunnel: false,
        ..LINUX_6_18.tun_write
    },
    gro: crate::gro::rules::GRO_LINUX_6_12,
    vhost: LINUX_6_18.vhost,
    tun_ioctl: TUN_IOCTL_6_12,
};

/// Debian's 6.12 builds up to 6.12.107 (`--kernel linux-image-6.12.107+deb12-cloud-amd64`):
/// [`LINUX_6_12`] with an ip6gretap's `hard_header_len` from before the stable fix in
/// 6.12.111 ([`crate::gro::rules::GRO_LINUX_6_12_107`]). `lab diff --kernel 6.12 --kernel
/// linux-image-6.12.107+deb12-cloud-amd64` found the difference (docs/real-kernel.md#lab-findings).
pub const LINUX_6_12_107: KernelProfile = KernelProfile {
    name: "linux-6.12.107",
    gro: crate::gro::rules::GRO_LINUX_6_12_107,
    ..LINUX_6_12
};

/// Debian's 6.1 builds up to 6.1.187 (ABI 6.1.0-53): [`LINUX_6_1`] with the same
/// ip6gretap `hard_header_len` (fixed in 6.1.190, 6.1.0-54).
pub const LINUX_6_1_187: KernelProfile = KernelProfile {
    name: "linux-6.1.187",
    gro: crate::gro::rules::GRO_LINUX_6_1_187,
    ..LINUX_6_1
};

/// Debian's 6.1.106-1 and -2 (ABI 6.1.0-24), inside the 2024 stable regression window:
/// [`LINUX_6_1_187`] (also before the ip6gretap fix) with e269d79c7d35 "net: missing check virtio" and without its fix
/// 89add40066f9 (Debian 6.1.106-3) or that fix's relaxation 6513eb3d3191 (6.1.112-1)
/// (`TunWriteRules::vnet_gso_tail_check`; docs/tap-write.md#gso-regression-2024).
pub const LINUX_6_1_106: KernelProfile = KernelProfile {
    name: "linux-6.1.106",
    tun_write: TunWriteRules {
        vnet_gso_tail_check: true,
        vnet_tcp_csum_offset: false,
        ..LINUX_6_1.tun_write
    },
    ..LINUX_6_1_187
};

/// Debian's 6.1 builds before the window (up to 6.1.99-1, ABI 6.1.0-23): neither
/// e269d79c7d35 nor 89add40066f9, so neither the tail check nor the TCP csum_offset check;
/// otherwise [`LINUX_6_1_187`]. `skbsim lab` cannot boot these builds (no longer served),
/// so it never picks these two profiles from a release.
pub const LINUX_6_1_99: KernelProfile = KernelProfile {
    name: "linux-6.1.99",
    tun_write: TunWriteRules {
        vnet_tcp_csum_offset: false,
        ..LINUX_6_1.tun_write
    },
    ..LINUX_6_1_187
};

/// Linux 4.20: 4.19 plus vhost_net's XDP batching with tun's TUN_MSG_PTR (v4.20); both
/// tun XDP buffers still have the metadata marked invalid (until v6.15).
pub const LINUX_4_20: KernelProfile = KernelProfile {
    name: "linux-4.20",
    tun_read: LINUX_4_19.tun_read,
    // 8ae1aff0b331 (this release) split tun_xdp_act out and lost the error count.
    tun_write: TunWriteRules {
        xdp_err_rx_dropped: false,
        ..LINUX_4_19.tun_write
    },
    gro: LINUX_4_19.gro,
    vhost: VhostRules {
        xdp_batching: true,
        consume_desc_on_error: false,
    },
    tun_ioctl: TUN_IOCTL_4_19,
};

/// Linux 4.16: XDP on tap, but XDP_TX still through the generic TX helper (before
/// 59655a5b6c83): the frame comes back as an skb, read with a PI.
pub const LINUX_4_16: KernelProfile = KernelProfile {
    name: "linux-4.16",
    tun_read: LINUX_4_19.tun_read,
    tun_write: TunWriteRules {
        xdp_tx_native: false,
        ..LINUX_4_19.tun_write
    },
    gro: LINUX_4_19.gro,
    vhost: VHOST_PER_PACKET,
    tun_ioctl: TUN_IOCTL_4_19,
};

/// Linux 3.12: 6680ec68eff4 "tuntap: hardware vlan tx support" as merged ([3.12]).
pub const LINUX_3_12: KernelProfile = KernelProfile {
    name: "linux-3.12",
    tun_read: TunReadRules {
        strip: StripRule::BufferMinusPiShorterThanSkbLen,
        accounting: PutUserAccounting::BytesWritten312,
        csum_start_vlan_shift: false,
        vnet_pad_zero: false,
        ufo_on_read: true,
        uso_on_read: false,
        vnet_endian_selectable: false,
    },
    tun_write: TunWriteRules {
        xdp: false,
        xdp_tx_native: false,
        build_skb_counts_xdp_headroom: false,
        xdp_act_rx_stats: false,
        xdp_err_rx_dropped: true,
        down_check_first: true,
        xdp_meta: false,
        vnet_to_skb: VnetToSkbRule::PartialCsumOnly,
        vnet_csum_start_min: false,
        vnet_nh_min_len: false,
        vnet_gso_dissect: false,
        vnet_gso_tail_check: false,
        vnet_tcp_csum_offset: false,
        vnet_tcp_min_gso_size: false,
        vnet_udp_tunnel: false,
        xdp_one_napi: false,
    },
    gro: crate::gro::rules::GRO_LINUX_3_12,
    vhost: VHOST_PER_PACKET,
    tun_ioctl: TUN_IOCTL_3_12,
};

/// Every profile, default first.
pub const PROFILES: [KernelProfile; 11] = [
    LINUX_6_18,
    LINUX_6_12,
    LINUX_6_12_107,
    LINUX_6_1,
    LINUX_6_1_187,
    LINUX_6_1_106,
    LINUX_6_1_99,
    LINUX_4_20,
    LINUX_4_19,
    LINUX_4_16,
    LINUX_3_12,
];

impl KernelProfile {
    /// The profile named `name`, or an error listing the known names.
    pub fn by_name(name: &str) -> Result<KernelProfile, UnknownProfile> {
        PROFILES
            .iter()
            .find(|p| p.name == name)
            .copied()
            .ok_or_else(|| UnknownProfile(name.to_string()))
    }
}

impl Default for KernelProfile {
    fn default() -> Self {
        LINUX_6_18
    }
}

/// A profile name skbsim does not model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProfile(pub String);

impl fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        write!(
            f,
            "unknown kernel profile '{}' (known: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownProfile {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_by_name_and_unknown_names_list_the_choices() {
        assert_eq!(KernelProfile::by_name("linux-3.12").unwrap(), LINUX_3_12);
        let err = KernelProfile::by_name("linux-2.6").unwrap_err().to_string();
        assert!(
            err.contains(
                "linux-6.18, linux-6.12, linux-6.12.107, linux-6.1, linux-6.1.187, linux-6.1.106, linux-6.1.99, linux-4.20, linux-4.19, linux-4.16, linux-3.12"
            ),
            "{err}"
        );
    }

    #[test]
    fn linux_6_12_differs_from_6_18_only_where_the_guest_did() {
        // The 6.12 guest disagreed with 6.18 on the vnet padding, on two GRO rules (fixed
        // IP ID without DF, CWR); XDP metadata is c2315ebb0588, v6.15 (`lab conform
        // --kernel 6.12` passes tap-write/xdp-meta-native with it off); everything else
        // must stay 6.18's.
        let t = LINUX_6_12;
        assert!(!t.tun_read.vnet_pad_zero && LINUX_6_18.tun_read.vnet_pad_zero);
        assert_eq!(
            TunReadRules {
                vnet_pad_zero: true,
                ..t.tun_read
            },
            LINUX_6_18.tun_read
        );
        assert!(!t.tun_write.xdp_meta && LINUX_6_18.tun_write.xdp_meta);
        // The 6.12 guest reads a tap's GSO write without NEEDS_CSUM as nh_min_len + thlen
        // says (tap-write/vnet-gso-threshold write 3 is GSO there, not on the host).
        assert!(!t.tun_write.vnet_gso_dissect && LINUX_6_18.tun_write.vnet_gso_dissect);
        // UDP-tunnel GSO in the vnet header is 288f30435132, v6.17 (source, not the guest).
        assert!(!t.tun_write.vnet_udp_tunnel && LINUX_6_18.tun_write.vnet_udp_tunnel);
        assert_eq!(
            TunWriteRules {
                xdp_meta: true,
                vnet_gso_dissect: true,
                // Debian 6.12.118's virtio_net.h clamps; the 6.18 host does not (read A 4
                // of tap-write/vnet-gso-tail).
                vnet_tcp_min_gso_size: false,
                vnet_udp_tunnel: true,
                ..t.tun_write
            },
            LINUX_6_18.tun_write
        );
        assert_eq!(t.vhost, LINUX_6_18.vhost);
        assert_eq!(
            crate::gro::GroRules {
                ip_id: LINUX_6_18.gro.ip_id,
                cwr_in_flag_xor: LINUX_6_18.gro.cwr_in_flag_xor,
                cwr_gso: LINUX_6_18.gro.cwr_gso,
                ..t.gro
            },
            LINUX_6_18.gro
        );
        // Where it is not 6.1: USO on tap (v6.2) and the v6.8 outer UDP checksum.
        assert!(t.tun_read.uso_on_read && !LINUX_6_1.tun_read.uso_on_read);
        assert_ne!(t.gro.udp_complete_iph, LINUX_6_1.gro.udp_complete_iph);
    }
}
