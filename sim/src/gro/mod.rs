//! Generic Receive Offload, modelled on the kernel's structure: `core` is
//! net/core/gro.c (dev_gro_receive, skb_gro_receive, napi_gro_complete), `napi` the NAPI
//! side of net/core/dev.c (buckets, flush points, the gro_flush_timeout hrtimer, jiffies),
//! and one file per offload with its receive and complete: `eth` (net/ethernet/eth.c,
//! ETH_P_TEB; plus net/8021q/vlan_core.c), `ipv4` (net/ipv4/af_inet.c and gro.h:
//! inet_gro_flush), `gre` (net/ipv4/gre_offload.c), `udp` (net/ipv4/udp_offload.c and
//! drivers/net/vxlan/vxlan_core.c), `udp6` (net/ipv6/udp_offload.c), `tcp`
//! (net/ipv4/tcp_offload.c).
//!
//! GRO works on the one [`SkBuff`] type: its GRO state is `skb.cb` ([`GroCb`], as
//! NAPI_GRO_CB lives in skb->cb), merged segments become the held skb's own frags or
//! frag_list skbs (skb_gro_receive), and the model's bookkeeping is `skb.model`
//! ([`GroModel`]).
//!
//! Offsets: every GRO offset (`cb.data_offset`, `cb.network_offsets`, the `nhoff` and
//! `thoff` of the completions) counts from skb->data, which the model keeps at the MAC
//! header, so it is an offset into the frame. The skb's own header fields
//! (network_header, csum_start, inner_*) count from head as everywhere in [`SkBuff`];
//! GRO writes them with `set_*_header(offset)` / `data_offset() + offset` and reads them
//! back with [`SkBuff::offset_from_data`]. The kernel's skb->data sits at the network
//! header during GRO, so its `skb->len` is the frame length minus ETH_HLEN
//! ([`SkBuff::kernel_len`]). Every decision that keeps a frame from merging carries a
//! named [`Reason`].

pub mod bigtcp;
pub mod cells;
pub mod cells6;
pub mod core;
pub mod eth;
pub mod frames;
pub mod frames6;
pub mod gre;
pub mod ipip;
pub mod ipv4;
pub mod ipv6;
pub mod napi;
pub mod plan;
pub mod rules;
pub mod tcp;
pub mod udp;
pub mod udp6;
#[cfg(test)]
mod udp_tests;

use crate::consts::ETH_HLEN;
use crate::skb::SkBuff;
use crate::wire::checksum as csum;

pub use self::core::{dev_gro_receive, napi_gro_complete, GroResult};
pub use napi::{Delivered, End, Napi};
pub use rules::GroRules;

/// MAX_GRO_SKBS (net/core/gro.c): skbs held per bucket.
pub const MAX_GRO_SKBS: usize = 8;
/// GRO_HASH_BUCKETS (include/linux/netdevice.h).
pub const GRO_HASH_BUCKETS: usize = 8;
/// GRO_LEGACY_MAX_SIZE (include/linux/netdevice.h): the default gro_max_size and
/// gro_ipv4_max_size, and the fixed limit of 4.19 and 3.12.
pub const GRO_LEGACY_MAX_SIZE: usize = 65536;
/// GRO_MAX_SIZE (include/linux/netdevice.h, 8 * 65535 since 0fe79f28bfaf, v5.19): the
/// largest gro_max_size / gro_ipv4_max_size rtnetlink's do_setlink accepts.
pub const GRO_MAX_SIZE: usize = 8 * 65535;
/// NAPI_POLL_WEIGHT (include/linux/netdevice.h): tun's napi weight and poll budget.
pub const NAPI_POLL_WEIGHT: usize = 64;
/// GRO_RECURSION_LIMIT (include/net/gro.h).
pub const GRO_RECURSION_LIMIT: u8 = 15;

/// Why a frame did not merge (or why a held skb went up): a short name for traces and
/// the kernel rule it reproduces.
pub type Reason = &'static ReasonDef;

/// The definition behind a [`Reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReasonDef {
    pub name: &'static str,
    pub rule: &'static str,
    /// Whether this is a difference of flow identity (addresses, ports, MAC): a frame
    /// whose candidates all differ this way simply starts a new flow (`flow:new`).
    pub identity: bool,
}

macro_rules! reasons {
    ($($id:ident $name:literal $ident:literal $rule:literal;)*) => {
        /// Every named reason.
        pub mod reason {
            use super::{Reason, ReasonDef};
            $(pub const $id: Reason = &ReasonDef { name: $name, rule: $rule, identity: $ident };)*
            /// All of them, for documentation and tests.
            pub const ALL: &[Reason] = &[$($id),*];
        }
    };
}

reasons! {
    FLOW_NEW "flow:new" true "net/core/gro.c: dev_gro_receive: no held skb of the same flow; held as a new one";
    BUCKET_FULL "gro:bucket-full" false "net/core/gro.c: gro_flush_oldest: MAX_GRO_SKBS held in the bucket; the oldest is completed";
    LIST_FULL "gro:list-full" false "[3.12] net/core/dev.c: dev_gro_receive: gro_count >= MAX_GRO_SKBS; passed up unheld";
    GRO_64K "gro:64k" false "net/core/gro.c: skb_gro_receive: p->len + len >= gro_max_size (65536): -E2BIG";
    GRO_MAX "gro:max-size" false "net/core/gro.c: skb_gro_receive: p->len + len >= netif_get_gro_max_size (the device's gro_max_size for IPv6, gro_ipv4_max_size otherwise, here not 65536): -E2BIG";
    GRO_BIG_TCP "gro:big-tcp" false "net/core/gro.c: skb_gro_receive: past GRO_LEGACY_MAX_SIZE only TCP (NAPI_GRO_CB(skb)->proto; before v6.3 IPv6 with TCP after the fixed header), not encapsulated, with headroom for the IPv6 jumbo header: -E2BIG";
    GRO_FRAGS "gro:frags" false "[3.12] net/core/skbuff.c: skb_gro_receive: MAX_SKB_FRAGS reached: -E2BIG";
    GRO_OFF "gro:off" false "net/core/gro.c: dev_gro_receive: netif_elide_gro (NETIF_F_GRO off)";
    GRO_XDP_GENERIC "gro:xdp-generic" false "include/linux/netdevice.h: netif_elide_gro: dev->xdp_prog is set (an xdpgeneric program): no GRO";
    FRAG_LIST "gro:frag-list" false "net/core/gro.c: dev_gro_receive: NAPI_GRO_CB(skb)->flush = skb_has_frag_list(skb)";
    GSO "gro:gso" false "net/core/gro.c: dev_gro_receive: a GSO skb that is not TCP or is SKB_GSO_DODGY (a vnet header's) is flushed, count = gso_segs (before GroRules::gso_skbs every GSO skb)";
    NO_HANDLER "gro:no-handler" false "net/core/gro.c: dev_gro_receive: no packet_offload for skb->protocol";
    MAC "eth:mac" true "net/core/gro.c: gro_list_prepare: compare_ether_header differs";
    MAC_HARD_HEADER "eth:hard-header" false "net/core/gro.c: gro_list_prepare: memcmp of dev->hard_header_len bytes from the MAC header differs (an ip6gretap's before the NBMA fix: 14 + t_hlen bytes, into the inner IP and TCP headers)";
    IPV4_HDR "ipv4:truncated" false "net/ipv4/af_inet.c: inet_gro_receive: skb_gro_header fails";
    IPV4_NO_L4 "ipv4:no-l4-handler" false "net/ipv4/af_inet.c: inet_gro_receive: no inet_offloads[proto]->gro_receive";
    IPV4_IHL "ipv4:ihl" false "net/ipv4/af_inet.c: inet_gro_receive: first byte != 0x45 (IHL 5, version 4)";
    IPV4_FRAG "ipv4:frag" false "net/ipv4/af_inet.c: inet_gro_receive: ip_is_fragment / frag_off bits other than DF";
    IPV4_CSUM "ipv4:csum" false "net/ipv4/af_inet.c: inet_gro_receive: ip_fast_csum != 0";
    IPV4_LEN "ipv4:len" false "net/ipv4/af_inet.c: inet_gro_receive: tot_len != skb_gro_len (soft flush)";
    IPV4_ADDR "ipv4:addr" true "net/ipv4/af_inet.c: inet_gro_receive: protocol, saddr or daddr differ (same_flow = 0)";
    IPV4_TTL "ipv4:ttl" false "include/net/gro.h: inet_gro_flush: TTL differs";
    IPV4_TOS "ipv4:tos" false "include/net/gro.h: inet_gro_flush: TOS differs (whole byte, ECN included)";
    IPV4_DF "ipv4:df" false "include/net/gro.h: inet_gro_flush: DF differs ([3.12]: DF must be set)";
    IPV4_ID "ipv4:id" false "include/net/gro.h: inet_gro_flush: ID neither fixed nor held id + count";
    IPV6_HDR "ipv6:truncated" false "net/ipv6/ip6_offload.c: ipv6_gro_receive: skb_gro_header fails";
    IPV6_NO_L4 "ipv6:no-l4-handler" false "net/ipv6/ip6_offload.c: ipv6_gro_receive: not TCP or UDP after the hop-by-hop, routing and destination options headers ipv6_gro_pull_exthdrs walks (a fragment header, ICMPv6 are not merged here)";
    IPV6_EXTHDR "ipv6:exthdr" true "net/ipv6/ip6_offload.c: ipv6_gro_receive: the extension headers differ (memcmp of nlen - sizeof(struct ipv6hdr) bytes; same_flow = 0)";
    IPV6_LEN "ipv6:len" false "net/ipv6/ip6_offload.c: ipv6_gro_receive: payload_len != the rest of the packet (soft flush)";
    IPV6_FLOW "ipv6:flow" true "net/ipv6/ip6_offload.c: ipv6_gro_receive: version, flow label, next header or an address differ (same_flow = 0; before 6.10 the hop limit too)";
    IPV6_TC "ipv6:tc" false "include/net/gro.h: ipv6_gro_flush: Traffic Class differs (before 6.10: ipv6_gro_receive)";
    IPV6_HOPLIMIT "ipv6:hop-limit" false "include/net/gro.h: ipv6_gro_flush: hop limit differs";
    IPIP_ENCAP "ipip:encap" false "net/ipv4/af_inet.c: ipip_gro_receive (and net/ipv6/ip6_offload.c: sit_gro_receive, ip4ip6_gro_receive, ip6ip6_gro_receive): encap_mark already set (one tunnel only)";
    GRE_ENCAP "gre:encap" false "net/ipv4/gre_offload.c: gre_gro_receive: encap_mark already set (one tunnel only)";
    GRE_FLAGS "gre:flags" false "net/ipv4/gre_offload.c: gre_gro_receive: flags other than C and K, or version != 0";
    GRE_HDR "gre:hdr" false "net/ipv4/gre_offload.c: gre_gro_receive: flags word or protocol differ (same_flow = 0)";
    GRE_KEY "gre:key" false "net/ipv4/gre_offload.c: gre_gro_receive: K set and the keys differ (same_flow = 0)";
    GRE_CSUM "gre:csum" false "net/ipv4/gre_offload.c: gre_gro_receive: C set and skb_gro_checksum_simple_validate fails";
    GRE_PROTO "gre:no-handler" false "net/ipv4/gre_offload.c: gre_gro_receive: gro_find_receive_by_type(protocol) is NULL";
    TEB_NO_HANDLER "teb:no-handler" false "net/ipv4/gre_offload.c: gre_gro_receive: no ETH_P_TEB offload (before 9b174d88c257, v4.0)";
    TEB_INNER_MAC "teb:inner-mac" false "net/ethernet/eth.c: eth_gro_receive: compare_ether_header of the inner Ethernet header differs";
    ETH_NO_HANDLER "eth:no-handler" false "net/ethernet/eth.c: eth_gro_receive: no offload for the inner EtherType";
    VLAN_NO_HANDLER "vlan:no-handler" false "net/core/gro.c: dev_gro_receive: no ETH_P_8021Q offload (CONFIG_VLAN_8021Q off)";
    VLAN_TCI "vlan:tci" false "net/8021q/vlan_core.c: vlan_gro_receive: compare_vlan_header differs (same_flow = 0)";
    UDP_CSUM "udp:csum" false "net/ipv4/udp_offload.c: udp4_gro_receive: skb_gro_checksum_validate_zero_check fails";
    UDP_NO_GRO "udp:no-gro" false "net/ipv4/udp_offload.c: udp_gro_receive: no tunnel socket, no UDP GRO feature: flush";
    UDP_PORTS "udp:ports" true "net/ipv4/udp_offload.c: udp_gro_receive: ports differ or one checksum is zero (same_flow = 0)";
    UDP_ENCAP "udp:encap" false "net/ipv4/udp_offload.c: udp_gro_receive: encap_mark already set";
    UDP_ENCAPSULATION "udp:encapsulation" false "net/ipv4/udp_offload.c: udp_gro_receive: skb->encapsulation set and no tunnel socket (locally encapsulated): flush";
    UDP_ZERO_CSUM "udp:zero-csum" false "net/ipv4/udp_offload.c: udp_gro_receive_segment: uh->check == 0 (a non-zero checksum is required, for symmetry with GSO): flush";
    UDP_LEN "udp:len" false "net/ipv4/udp_offload.c: udp_gro_receive_segment: uh->len <= sizeof(struct udphdr) or != skb_gro_len (padded or malicious): flush";
    UDP_BIGGER "udp:bigger" false "net/ipv4/udp_offload.c: udp_gro_receive_segment: uh->len > the held skb's uh->len: the held skb completes, this one is held anew";
    UDP_SHORT "udp:short" false "net/ipv4/udp_offload.c: udp_gro_receive_segment: merged with uh->len < the held skb's: the shorter segment ends the train";
    UDP_CNT_MAX "udp:count-max" false "net/ipv4/udp_offload.c: udp_gro_receive_segment: merged, NAPI_GRO_CB(p)->count >= UDP_GRO_CNT_MAX (64): the held skb completes";
    UDP_FLIST "udp:flist-mode" false "net/ipv4/udp_offload.c: udp_gro_receive_segment: is_flist differs from the held skb's: flush";
    UDP_FLIST_CSUM "udp:flist-csum" false "net/ipv4/udp_offload.c: udp_gro_receive_segment: fraglist, ip_summed or csum_level differ from the held skb's: flush";
    VXLAN_VNI "vxlan:vni" false "drivers/net/vxlan/vxlan_core.c: vxlan_gro_prepare_receive: flags or VNI differ (same_flow = 0)";
    TCP_CSUM "tcp:csum" false "net/ipv4/tcp_offload.c: tcp4_gro_receive: skb_gro_checksum_validate fails";
    TCP_DOFF "tcp:doff" false "net/ipv4/tcp_offload.c: tcp_gro_pull_header: doff < 5 or header past the data";
    TCP_PORTS "tcp:ports" true "net/ipv4/tcp_offload.c: tcp_gro_lookup: port pair differs (same_flow = 0)";
    TCP_CWR "tcp:cwr" false "net/ipv4/tcp_offload.c: tcp_gro_receive: CWR set on the new segment";
    TCP_FLAGS_SYN "tcp:flags-syn" false "net/ipv4/tcp_offload.c: tcp_gro_receive: SYN (flag word differs; final flush)";
    TCP_FLAGS_RST "tcp:flags-rst" false "net/ipv4/tcp_offload.c: tcp_gro_receive: RST (flag word differs; final flush)";
    TCP_FLAGS_URG "tcp:flags-urg" false "net/ipv4/tcp_offload.c: tcp_gro_receive: URG (flag word differs; final flush)";
    TCP_FLAGS_PSH "tcp:flags-psh" false "net/ipv4/tcp_offload.c: tcp_gro_receive: PSH merges, then forces the flush";
    TCP_FLAGS_FIN "tcp:flags-fin" false "net/ipv4/tcp_offload.c: tcp_gro_receive: FIN merges, then forces the flush";
    TCP_FLAGS "tcp:flags" false "net/ipv4/tcp_offload.c: tcp_gro_receive: (flags ^ held flags) & ~(FIN|PSH) != 0";
    TCP_HDRLEN "tcp:hdrlen" false "net/ipv4/tcp_offload.c: tcp_gro_receive: doff differs (part of the flag word)";
    TCP_WINDOW "tcp:window" false "net/ipv4/tcp_offload.c: tcp_gro_receive: window differs (part of the flag word)";
    TCP_ACK "tcp:ack" false "net/ipv4/tcp_offload.c: tcp_gro_receive: ack_seq differs";
    TCP_OPTIONS "tcp:options" false "net/ipv4/tcp_offload.c: tcp_gro_receive: an option word differs (e.g. the timestamp)";
    TCP_MSS "tcp:mss" false "net/ipv4/tcp_offload.c: tcp_gro_receive: (len - 1) >= mss, or len < mss: empty or larger than the first segment";
    TCP_SHORT "tcp:short" false "net/ipv4/tcp_offload.c: tcp_gro_receive: merged, len < mss: the last, shorter segment forces the flush";
    TCP_SEQ "tcp:seq" false "net/ipv4/tcp_offload.c: tcp_gro_receive: seq != held seq + merged payload";
    RECURSION "gro:recursion" false "include/net/gro.h: call_gro_receive: GRO_RECURSION_LIMIT";
}

/// Where a merged skb keeps its segments, counted from its frags and frag_list
/// ([`SkBuff::layout`]): skb_gro_receive attaches payloads as frags of the last skb
/// while MAX_SKB_FRAGS allows, else chains a new skb on frag_list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// nr_frags of the head skb.
    pub frags: usize,
    /// nr_frags of each skb on frag_list, in order.
    pub frag_list: Vec<usize>,
}

/// NAPI_GRO_CB(skb): the GRO control block (include/net/gro.h: struct napi_gro_cb).
#[derive(Debug, Clone, Default)]
pub struct GroCb {
    /// skb_gro_offset, from skb->data (the MAC header in the model).
    pub data_offset: usize,
    pub flush: bool,
    pub flush_reason: Option<Reason>,
    pub same_flow: bool,
    /// Why same_flow was cleared for this held skb (gro_list_prepare resets it).
    pub mismatch: Option<Reason>,
    pub encap_mark: bool,
    /// NAPI_GRO_CB(skb)->proto: the L4 protocol the innermost inet_gro_receive /
    /// ipv6_gro_receive found (v6.3, b1a78b9b9886; skb_gro_receive's BIG TCP check).
    pub proto: u8,
    pub count: u16,
    /// jiffies when held.
    pub age: u64,
    /// network_offsets[encap_mark] (6.18) / the outer and inner IP header.
    pub network_offsets: [usize; 2],
    /// 6.18: bit 0 outer (or only) IP level fixed-ID, bit 1 inner.
    pub ip_fixedid: u8,
    /// 4.19: is_atomic and flush_id.
    pub is_atomic: bool,
    pub flush_id: u16,
    pub csum_cnt: u8,
    pub csum_valid: bool,
    /// The carried complete checksum of [data_offset, end) while csum_valid.
    pub csum: u32,
    pub recursion: u8,
    /// Why the new skb did not merge into the held skb its flow matched.
    pub nomerge: Option<Reason>,
    /// Further rules that fired with `nomerge` (all of them flush).
    pub nomerge_also: Vec<Reason>,
    /// The deepest same_flow mismatch this skb caused (for naming a new flow).
    pub deepest_mismatch: Option<(u8, Reason)>,
    /// Current layer depth (for deepest_mismatch).
    pub depth: u8,
    /// Set by tcp_gro_receive when this skb merged and forced the flush of p.
    pub merged_flush: Option<Reason>,
    /// udp_gro_receive: this UDP flow merges as a frag_list (NETIF_F_GRO_FRAGLIST).
    pub is_flist: bool,
}

/// What only the model tracks about an skb in GRO (no kernel field): which input
/// frames it holds, when its head frame was written, and why that frame did not merge.
#[derive(Debug, Clone, Default)]
pub struct GroModel {
    /// The input frame index of the head.
    pub frame: u64,
    /// When the head frame was written.
    pub ts_ns: u64,
    /// The input frames merged after the head, in merge (and byte) order.
    pub merged: Vec<u64>,
    /// Why this skb's head frame did not merge into an earlier skb.
    pub start: Option<Reason>,
    /// Further rules that fired together with `start`.
    pub start_also: Vec<Reason>,
}

/// GRO's view of an skb: the helpers net/core/gro.c and include/net/gro.h give it.
impl SkBuff {
    /// A fresh skb for one frame written at `ts_ns`, built over `frame` (data at the MAC
    /// header, no headroom: the GRO model reads no headroom).
    pub fn for_gro(frame: u64, ts_ns: u64, bytes: Vec<u8>) -> SkBuff {
        let mut skb = SkBuff::build(bytes, 0);
        skb.reset_mac_header();
        skb.model.frame = frame;
        skb.model.ts_ns = ts_ns;
        skb
    }

    /// Input frame indices held, head first.
    pub fn frames(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::once(self.model.frame).chain(self.model.merged.iter().copied())
    }

    /// skb->len as the kernel counts it during GRO (from the network header).
    pub fn kernel_len(&self) -> usize {
        self.len().saturating_sub(ETH_HLEN)
    }

    /// skb_gro_len.
    pub fn gro_len(&self) -> usize {
        self.len().saturating_sub(self.cb.data_offset)
    }

    /// The head's nr_frags and each frag_list skb's.
    pub fn layout(&self) -> Layout {
        Layout {
            frags: self.nr_frags(),
            frag_list: self.frag_list().iter().map(SkBuff::nr_frags).collect(),
        }
    }

    /// Set NAPI_GRO_CB(skb)->flush, remembering the first reason.
    pub fn flush(&mut self, why: Reason) {
        self.cb.flush = true;
        if self.cb.flush_reason.is_none() {
            self.cb.flush_reason = Some(why);
        }
    }

    /// Record a same_flow mismatch this skb found in a held skb.
    pub fn saw_mismatch(&mut self, why: Reason) {
        let d = self.cb.depth;
        if self.cb.deepest_mismatch.is_none_or(|(d0, _)| d >= d0) {
            self.cb.deepest_mismatch = Some((d, why));
        }
    }

    /// The linear bytes `off..off + n` (offsets from data), if there. GRO reads a
    /// header through a wire view over them (`hdr(off, HEADER_LEN).map(Packet::
    /// new_unchecked)`): the slice holds exactly the fixed header, so no getter of the
    /// view can go out of bounds.
    pub(crate) fn hdr(&self, off: usize, n: usize) -> Option<&[u8]> {
        self.linear().get(off..off.checked_add(n)?)
    }

    /// The linear bytes `off..off + n`, writable, for a view's setters (the
    /// completions rewrite lengths and checksums in place); None for a header the skb
    /// does not hold, which is then left alone.
    pub(crate) fn hdr_mut(&mut self, off: usize, n: usize) -> Option<&mut [u8]> {
        self.linear_mut().get_mut(off..off.checked_add(n)?)
    }

    /// The linear bytes from `off` on (empty past the end), for the views whose length
    /// their own fields give (GRE).
    pub(crate) fn hdr_from(&self, off: usize) -> &[u8] {
        self.linear().get(off..).unwrap_or(&[])
    }

    /// The ones-complement sum of the packet from `off` to the end, as skb_checksum
    /// reads it: piece by piece; a piece starting at an odd distance from `off` has its
    /// sum byte-swapped (csum_block_add).
    pub(crate) fn sum_from(&self, off: usize) -> u32 {
        let (mut s, mut pos) = (0u32, 0usize);
        self.for_each_piece(|p| {
            let start = pos;
            pos += p.len();
            if pos < off {
                return;
            }
            let from = off.saturating_sub(start);
            let ps = csum::ones_complement_sum(p.get(from..).unwrap_or(&[]), 0);
            let ps = if (start + from - off) % 2 == 1 {
                u32::from(csum::fold(ps).swap_bytes())
            } else {
                ps
            };
            s = csum::add(s, ps);
        });
        s
    }
}

/// Per-run GRO configuration: the profile's rules plus the device and scenario knobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroConfig {
    pub rules: GroRules,
    /// NETIF_F_GRO (ethtool -K gro).
    pub feature: bool,
    /// An ETH_P_TEB offload is registered.
    pub teb_gro: bool,
    /// An ETH_P_8021Q/8021AD offload is registered (CONFIG_VLAN_8021Q).
    pub vlan_gro: bool,
    /// UDP ports with a VXLAN socket (udp4_gro_lookup_skb finds a tunnel).
    pub vxlan_ports: Vec<u16>,
    /// A generic (xdpgeneric) XDP program is attached: dev->xdp_prog, so netif_elide_gro.
    pub xdp_generic: bool,
    /// UDP ports with a local socket that set UDP_GRO (udp_sk(sk)->gro_enabled).
    pub udp_gro_ports: Vec<u16>,
    /// NETIF_F_GRO_UDP_FWD (ethtool -K rx-udp-gro-forwarding).
    pub gro_udp_fwd: bool,
    /// NETIF_F_GRO_FRAGLIST (ethtool -K rx-gro-list).
    pub gro_fraglist: bool,
    /// dev->gro_max_size (IFLA_GRO_MAX_SIZE; GroSizeRule says whom it bounds).
    pub gro_max_size: usize,
    /// dev->gro_ipv4_max_size (IFLA_GRO_IPV4_MAX_SIZE, v6.3).
    pub gro_ipv4_max_size: usize,
    /// dev->hard_header_len: how many bytes of the MAC header gro_list_prepare compares
    /// (ETH_HLEN for every device here but an old ip6gretap, GroRules::ip6gre_hard_header_len).
    pub hard_header_len: usize,
}

impl GroConfig {
    pub fn for_rules(rules: GroRules) -> GroConfig {
        GroConfig {
            rules,
            feature: true,
            teb_gro: rules.teb_gro,
            vlan_gro: false,
            vxlan_ports: vec![4789],
            xdp_generic: false,
            udp_gro_ports: Vec::new(),
            gro_udp_fwd: false,
            gro_fraglist: false,
            gro_max_size: GRO_LEGACY_MAX_SIZE,
            gro_ipv4_max_size: GRO_LEGACY_MAX_SIZE,
            hard_header_len: ETH_HLEN,
        }
    }
}

#[cfg(test)]
#[path = "tunnel6_tests.rs"]
mod tunnel6_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_names_are_unique_and_namespaced() {
        let mut names: Vec<&str> = reason::ALL.iter().map(|r| r.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate reason names");
        for r in reason::ALL {
            assert!(r.name.contains(':'), "{}", r.name);
            assert!(r.rule.contains(".c") || r.rule.contains(".h"), "{}", r.rule);
        }
    }

    #[test]
    fn sum_from_chains_merged_payloads_at_odd_offsets() {
        let mut skb = SkBuff::for_gro(0, 0, vec![1, 2, 3]);
        skb.push_frag(crate::skb::SkbFrag::new(vec![9, 9, 4, 5, 6], 2, 3));
        assert_eq!(skb.len(), 6);
        // Whole packet 01 02 03 04 05 06 -> 0x0102 + 0x0304 + 0x0506 = 0x090c.
        assert_eq!(csum::fold(skb.sum_from(0)), 0x090c);
        // From offset 1: 02 03 04 05 06 -> 0x0203 + 0x0405 + 0x0600 = 0x0c08.
        assert_eq!(csum::fold(skb.sum_from(1)), 0x0c08);
        // From offset 4 (inside the frag): 05 06 -> 0x0506.
        assert_eq!(csum::fold(skb.sum_from(4)), 0x0506);
        // A frag_list skb after the frag: 07 08 at offset 6 -> + 0x0708 = 0x1014.
        let mut chained = SkBuff::for_gro(2, 0, vec![0, 7, 8]);
        chained.pull(1).unwrap();
        skb.push_frag_list(chained);
        assert_eq!(skb.len(), 8);
        assert_eq!(csum::fold(skb.sum_from(0)), 0x1014);
        assert_eq!(skb.to_vec(), vec![1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            skb.layout(),
            Layout {
                frags: 1,
                frag_list: vec![0]
            }
        );
    }
}

/// Helpers for the per-offload tests.
#[cfg(test)]
pub(crate) mod testutil {
    use crate::pipeline::tap_gro::TapGroRun;
    use crate::profile::KernelProfile;

    use super::frames::Tcp4;
    use super::napi::Delivered;
    use super::plan::GroPlan;

    /// Write `frames` 1 us apart, `burst` per poll, no flush timeout.
    pub fn run_with(
        profile: &KernelProfile,
        plan: GroPlan,
        frames: Vec<Vec<u8>>,
    ) -> Vec<Delivered> {
        let mut r = TapGroRun::new(profile, &plan);
        for (i, f) in frames.into_iter().enumerate() {
            r.write(i as u64, 1_000_000_000 + i as u64 * 1000, f);
        }
        r.finish();
        r.delivered
    }

    pub fn run(profile: &KernelProfile, frames: Vec<Vec<u8>>) -> Vec<Delivered> {
        let n = frames.len();
        run_with(
            profile,
            GroPlan {
                burst: n,
                ..GroPlan::defaults(&profile.gro)
            },
            frames,
        )
    }

    pub fn lens(d: &[Delivered]) -> Vec<usize> {
        d.iter().map(|x| x.skb.len()).collect()
    }

    /// Five 1400-byte segments of one flow; `edit` changes segment 2.
    pub fn five(edit: impl Fn(&mut Tcp4)) -> Vec<Vec<u8>> {
        (0..5u32)
            .map(|k| {
                let mut s = Tcp4 {
                    seq: 1000 + k * 1400,
                    id: 1 + k as u16,
                    ..Tcp4::default()
                };
                if k == 2 {
                    edit(&mut s);
                }
                s.build()
            })
            .collect()
    }
}
