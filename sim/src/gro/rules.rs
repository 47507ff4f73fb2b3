//! The GRO rules that changed between the kernels skbsim models, as data
//! (`KernelProfile::gro`). Each field names the commit or release that changed it.

/// How the IPv4 ID (and TTL/TOS/DF) of a new segment is checked against the held one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpIdRule {
    /// [3.12] af_inet.c: inet_gro_receive: TOS is part of the flow (a different TOS
    /// clears same_flow); TTL and `id != held id + count` set p->flush; DF must be set
    /// (the soft flush compares the whole frag_off word with IP_DF).
    Increment312,
    /// [4.19] af_inet.c: inet_gro_receive + tcp_offload.c: tcp_gro_receive: TTL/TOS/DF
    /// differences set p->flush at the IP layer; the ID delta is saved in flush_id and
    /// checked at TCP: with DF on both (is_atomic) a delta of 0 is accepted, a delta of
    /// exactly 1 on the second frame switches the flow to incrementing; otherwise the
    /// ID must be held id + count. Only the innermost is_atomic survives.
    Atomic419,
    /// 6.18 ([CUR+], Richard Gobert, Sept 2025) include/net/gro.h: inet_gro_flush:
    /// checked from tcp_gro_receive for every IP level; TTL/TOS/DF mismatch flushes;
    /// on the second frame an unchanged ID makes that level fixed-ID (outer and inner
    /// have separate bits, DF no longer needed); otherwise ID = held id + count.
    PerLevel618,
    /// 6.10 to 6.17 (4b0ebbca3e16 "net: gro: move L3 flush checks to tcp_gro_receive and
    /// udp_gro_receive_segment", Richard Gobert, v6.10) include/net/gro.h:
    /// inet_gro_flush(iph, iph2, p, outer): checked from tcp_gro_receive for every IP
    /// level; TTL/TOS/DF mismatch flushes; the outer header of an encapsulated flow with
    /// DF set is not ID-checked at all; on the second frame an unchanged ID with DF makes
    /// the flow fixed-ID (one bit for all levels); otherwise ID = held id + count. 6.18's
    /// [`IpIdRule::PerLevel618`] dropped the DF conditions (21f7484220ac, f095a358faf2).
    PerLevel610,
}

impl IpIdRule {
    /// The checks live in tcp_gro_receive (gro_receive_network_flush), not in
    /// inet_gro_receive / ipv6_gro_receive: 6.10 on.
    pub fn at_transport(self) -> bool {
        matches!(self, IpIdRule::PerLevel610 | IpIdRule::PerLevel618)
    }
}

/// What tcp_gro_complete adds to gso_type when the head segment has CWR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CwrGso {
    /// SKB_GSO_TCP_ECN (before the AccECN series).
    TcpEcn,
    /// SKB_GSO_TCP_ACCECN (tcp_offload.c: tcp_gro_complete, 4e4f7cefb130, v6.15).
    AccEcn,
}

/// Which IPv4 header udp4_gro_complete takes the outer UDP pseudo-header from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpCompleteIph {
    /// ip_hdr(skb): skb->network_header, which inet_gro_receive last set at the
    /// *innermost* IPv4 level, so a VXLAN outer checksum is seeded with the inner
    /// addresses ([4.19], 6.1 udp_offload.c: udp4_gro_complete; seen in the 6.1 guest).
    SkbNetworkHeader,
    /// NAPI_GRO_CB(skb)->network_offsets[skb->encapsulation]: the outer header (Richard
    /// Gobert, "net: gro: use cb instead of skb->network_header", v6.8).
    NetworkOffsets,
}

/// How skb_gro_receive bounds a merged skb (net/core/gro.c) and which per-device limits
/// exist (`[gro] gro_max_size`, `gro_ipv4_max_size`; docs/gro.md#big-tcp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroSizeRule {
    /// A fixed GRO_MAX_SIZE of 65536 ([4.19], [3.12] net/core/dev.c: skb_gro_receive:
    /// `p->len + len >= GRO_MAX_SIZE`); no device setting reaches past it.
    Legacy,
    /// 0fe79f28bfaf "net: allow gro_max_size to exceed 65536" (v5.19): `dev->gro_max_size`
    /// bounds every family; past GRO_LEGACY_MAX_SIZE only an IPv6 skb whose fixed header
    /// is followed by TCP (`ipv6_hdr(p)->nexthdr`), with headroom for the jumbo header
    /// and not encapsulated, merges on. IPv4 stays below 65536.
    Ipv6Only,
    /// b1a78b9b9886 "net: add support for ipv4 big tcp" with 9eefedd58ae1 "net: add
    /// gso_ipv4_max_size and gro_ipv4_max_size per device" (v6.3): IPv6 skbs are bounded
    /// by `gro_max_size`, all others by `gro_ipv4_max_size` (netif_get_gro_max_size since
    /// e8d4d34df715, v6.12); past GRO_LEGACY_MAX_SIZE the innermost L4 protocol
    /// (`NAPI_GRO_CB(skb)->proto`) must be TCP, an IPv6 skb needs headroom for the jumbo
    /// header, and none may be encapsulated.
    PerFamily,
}

/// The GRO engine of one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroRules {
    /// GRO_HASH_BUCKETS lists that complete their oldest skb when full (v4.19,
    /// net/core/dev.c: gro_flush_oldest). [3.12] kept one list of MAX_GRO_SKBS per NAPI
    /// and passed a new flow up unheld when it was full.
    pub hash_buckets: bool,
    pub ip_id: IpIdRule,
    /// ip_is_fragment() is a hard flush in inet_gro_receive (4.x+); [3.12] caught
    /// fragments only through the soft flush.
    pub ip_fragment_check: bool,
    /// CWR is part of the flag-word XOR (tcp_gro_receive masks only FIN|PSH), so a
    /// segment without CWR does not merge behind a CWR head: 4e4f7cefb130 "gro: prevent
    /// ACE field corruption & better AccECN handling" (Ilpo Järvinen, v6.15), whose
    /// tcp_gro_complete also sets SKB_GSO_TCP_ACCECN (`CwrGso::AccEcn`). Before,
    /// CWR|FIN|PSH were masked. Either way a segment with CWR set flushes the held one
    /// (`flush = flags & TCP_FLAG_CWR`), until ab4c8b6f7fcb "gro: flushing when CWR is
    /// set negatively affects AccECN" (v7.0) removed that flush; scenario
    /// tap-gro/tcp-flags-cwr-twice shows the 6.18 host has the first and not the second.
    pub cwr_in_flag_xor: bool,
    pub cwr_gso: CwrGso,
    /// tcp4_gro_complete sets SKB_GSO_TCP_FIXEDID (outer/plain) and
    /// SKB_GSO_TCP_FIXEDID_INNER from NAPI_GRO_CB()->ip_fixedid (6.18). The 4.19 tree
    /// read (tcp_offload.c: tcp4_gro_complete) sets only SKB_GSO_TCPV4.
    pub fixedid_on_complete: bool,
    /// gre_offload.c has gro_receive (v3.14 "net-gre-gro: Add GRE support to the GRO stack").
    pub gre_gro: bool,
    /// IP-in-IP offloads with gro_receive: af_inet.c's ipip_offload (IPPROTO_IPIP over
    /// IPv4) and ip6_offload.c's sit_offload, ip4ip6_offload, ip6ip6_offload (Tom
    /// Herbert's "ipip: Add gro callbacks to ipip offload" and "sit: Add gro callbacks to
    /// sit_offload", 2014; "ip6ip6: Support for GSO/GRO" and "ip4ip6: Support for
    /// GSO/GRO", v4.7; releases of the first two not pinned down here, all before 4.19);
    /// none in the 3.12 tree.
    pub ipip_gro: bool,
    /// udp_offload.c dispatches to a UDP tunnel socket's gro_receive (vxlan, v3.14).
    pub udp_tunnel_gro: bool,
    /// An ETH_P_TEB packet offload exists (9b174d88c257 "net: Add Transparent Ethernet
    /// Bridging GRO support", v4.0). Scenarios may override it (`[gro] teb_gro`).
    pub teb_gro: bool,
    /// dev->gro_flush_timeout and the NAPI hrtimer (v3.19).
    pub gro_flush_timeout: bool,
    /// skb_gro_receive chains on frag_list when MAX_SKB_FRAGS is reached (8a29111c7ca6
    /// "net: gro: allow to build full sized skb", v4.13); before it returned -E2BIG.
    pub frags_overflow_to_frag_list: bool,
    /// tun_build_skb exists (v4.13) and takes frames up to this length from a
    /// non-blocking write (docs/tap-write.md#path-choice: 3456 since the 2023 XDP headroom fix,
    /// 3712 before).
    pub tun_build_skb_max: Option<usize>,
    /// IFF_NAPI exists (v4.15, "tun: enable NAPI for TUN/TAP driver").
    pub tun_napi: bool,
    pub udp_complete_iph: UdpCompleteIph,
    /// dev_gro_receive takes a TCP GSO skb in (count = gso_segs; only a frag_list, a
    /// non-TCP or a DODGY one is flushed), so tcp_gro_receive can merge two GSO skbs of
    /// one gso_size, most likely Eric Dumazet's "gro: add support of (hw)gro packets to
    /// gro stack" (release not pinned down: after 5.4, before 6.1; the 6.1 and 6.12
    /// guests merge two tap-merged skbs on a vxlan device). Before, `flush =
    /// skb_is_gso(skb) || skb_has_frag_list(skb)` ([4.19]), and [3.12] passed a GSO skb up
    /// unheld. Only gro_cells feeds GRO a GSO skb here (docs/gro.md#gro-cells).
    pub gso_skbs: bool,
    /// udp_gro_receive merges plain UDP (udp_gro_receive_segment) for a socket with
    /// UDP_GRO (e20cf8d3f1f7 "udp: implement GRO for plain UDP sockets.", v5.0), as a
    /// frag_list with NETIF_F_GRO_FRAGLIST ("udp: Support UDP fraglist GRO/GSO.", v5.6)
    /// and for forwarding with NETIF_F_GRO_UDP_FWD ("net: add GRO UDP forwarding
    /// feature", Paolo Abeni, v5.12). Every profile from 6.1 on has all three; 4.19 and
    /// 3.12 have only the tunnel branch. How the held skb's IP header is checked follows
    /// `ip_id` (docs/gro.md#udp-gro).
    pub udp_gro_segment: bool,
    pub gro_size: GroSizeRule,
    /// ipv6_gro_complete turns an skb whose payload exceeds IPV6_MAXPLEN into a
    /// jumbogram with a hop-by-hop header (8 bytes, IPV6_TLV_JUMBO) and payload_len 0:
    /// 81fbc812132c "ipv6/gro: insert temporary HBH/jumbo header" (v5.19), seen on the
    /// 6.18.44 host. 81be30c1f5f2 "net/ipv6: Drop HBH for BIG TCP on RX side" (net-next,
    /// Feb 2026, after 6.19) leaves only payload_len 0; no profile models that kernel yet.
    pub ipv6_jumbo_hbh: bool,
    /// An ip6gretap device's `hard_header_len` is its route device's plus the tunnel
    /// headers: net/ipv6/ip6_gre.c: ip6gre_tnl_link_config_route set `dev->hard_header_len
    /// = rt->dst.dev->hard_header_len + t_hlen` for a tunnel with header_ops (every
    /// Ethernet-type one) when it found a route to the remote, until "ip6_gre: fix hardware
    /// header length for NBMA tunnels" (stable 6.12.111 and 6.1.190) made it
    /// `needed_headroom`. gro_list_prepare then compares that many bytes from the inner MAC
    /// header with memcmp instead of compare_ether_header: the inner IP header is in them,
    /// so segments whose IP IDs differ never share a flow in the device's gro_cells
    /// (docs/gro.md#gro-cells).
    pub ip6gre_hard_header_len: bool,
}

/// Linux 6.18 (this machine's kernel).
pub const GRO_LINUX_6_18: GroRules = GroRules {
    hash_buckets: true,
    ip_id: IpIdRule::PerLevel618,
    ip_fragment_check: true,
    cwr_in_flag_xor: true,
    cwr_gso: CwrGso::AccEcn,
    fixedid_on_complete: true,
    gre_gro: true,
    ipip_gro: true,
    udp_tunnel_gro: true,
    teb_gro: true,
    gro_flush_timeout: true,
    frags_overflow_to_frag_list: true,
    tun_build_skb_max: Some(3456),
    tun_napi: true,
    udp_complete_iph: UdpCompleteIph::NetworkOffsets,
    gso_skbs: true,
    udp_gro_segment: true,
    gro_size: GroSizeRule::PerFamily,
    ipv6_jumbo_hbh: true,
    ip6gre_hard_header_len: false,
};

/// Linux 4.19 ([4.19]).
pub const GRO_LINUX_4_19: GroRules = GroRules {
    ip_id: IpIdRule::Atomic419,
    cwr_in_flag_xor: false,
    cwr_gso: CwrGso::TcpEcn,
    fixedid_on_complete: false,
    tun_build_skb_max: Some(3712),
    udp_complete_iph: UdpCompleteIph::SkbNetworkHeader,
    gso_skbs: false,
    udp_gro_segment: false,
    gro_size: GroSizeRule::Legacy,
    ipv6_jumbo_hbh: false,
    // Taken to predate the NBMA split (not checked against the 4.19 tree).
    ip6gre_hard_header_len: true,
    ..GRO_LINUX_6_18
};

/// Linux 6.1 (Debian's 6.1 guest of `skbsim lab`): 6.18's engine with 4.19's IP ID
/// rule (a fixed ID needs DF) and CWR masked from the flag word with TCP_ECN, as seen in
/// the guest (scenarios ip-id-fixed-nodf-4.19 and tcp-flags-cwr-4.19 pass there); IPv6
/// BIG TCP GRO (v5.19) but not IPv4's (v6.3).
pub const GRO_LINUX_6_1: GroRules = GroRules {
    ip_id: IpIdRule::Atomic419,
    cwr_in_flag_xor: false,
    cwr_gso: CwrGso::TcpEcn,
    udp_complete_iph: UdpCompleteIph::SkbNetworkHeader,
    gro_size: GroSizeRule::Ipv6Only,
    ..GRO_LINUX_6_18
};

/// Linux 6.12, Debian's 6.12 cloud kernel in `skbsim lab` (seen in the guest): 6.18's engine
/// (network_offsets since v6.8, so the outer VXLAN checksum is right) with the IP ID and CWR
/// rules from before two 6.18 changes:
/// - 21f7484220ac "net: gro: only merge packets with incrementing or fixed outer ids" and
///   f095a358faf2 "net: gro: remove unnecessary df checks": before them a fixed ID needs DF
///   (tap-gro `ip-id-fixed-nodf-6.18` is not merged in the guest): 6.10's
///   `PerLevel610` (the outer header of an encapsulated flow with DF is not ID-checked,
///   which gro_cells' re-merge of two tap-merged pairs with inner DF shows in the guest).
/// - ab4c8b6f7fcb "gro: flushing when CWR is set negatively affects AccECN": before it CWR
///   is masked out of the flag XOR and a CWR segment flushes the held one after merging
///   (`tcp-flags-cwr`: the guest delivers 2854 + 4254 with TCPV4|TCP_ECN), and the AccECN
///   series' SKB_GSO_TCP_ACCECN does not exist yet.
pub const GRO_LINUX_6_12: GroRules = GroRules {
    ip_id: IpIdRule::PerLevel610,
    cwr_in_flag_xor: false,
    cwr_gso: CwrGso::TcpEcn,
    ..GRO_LINUX_6_18
};

/// Debian's 6.12 builds up to 6.12.107: [`GRO_LINUX_6_12`] with the ip6gretap
/// `hard_header_len` of before the stable fix in 6.12.111 (`ip6gre_hard_header_len`;
/// `lab conform` on 6.12.100, 101 and 107: `cells-gre6-hop-limit`, `cells-gre6-tc`).
pub const GRO_LINUX_6_12_107: GroRules = GroRules {
    ip6gre_hard_header_len: true,
    ..GRO_LINUX_6_12
};

/// Debian's 6.1 builds up to 6.1.187 (6.1.0-53): [`GRO_LINUX_6_1`] with the ip6gretap
/// `hard_header_len` of before the stable fix in 6.1.190 (6.1.0-54).
pub const GRO_LINUX_6_1_187: GroRules = GroRules {
    ip6gre_hard_header_len: true,
    ..GRO_LINUX_6_1
};

/// Linux 3.12 ([3.12]): no GRE or UDP-tunnel GRO yet, no ETH_P_TEB handler, no flush
/// timeout, no IFF_NAPI (tap-gro runs its engine as a NAPI driver would drive it).
pub const GRO_LINUX_3_12: GroRules = GroRules {
    hash_buckets: false,
    ip_id: IpIdRule::Increment312,
    ip_fragment_check: false,
    cwr_in_flag_xor: false,
    cwr_gso: CwrGso::TcpEcn,
    fixedid_on_complete: false,
    gre_gro: false,
    ipip_gro: false,
    udp_tunnel_gro: false,
    teb_gro: false,
    gro_flush_timeout: false,
    frags_overflow_to_frag_list: false,
    tun_build_skb_max: None,
    tun_napi: false,
    udp_complete_iph: UdpCompleteIph::SkbNetworkHeader,
    gso_skbs: false,
    udp_gro_segment: false,
    gro_size: GroSizeRule::Legacy,
    ipv6_jumbo_hbh: false,
    ip6gre_hard_header_len: true,
};
