//! IP-in-IP GRO, the four pairs: net/ipv4/af_inet.c: ipip_gro_receive, ipip_gro_complete
//! (IPv4 in IPv4, IPPROTO_IPIP); net/ipv6/ip6_offload.c: sit_gro_receive /
//! sit_gro_complete (IPv6 in IPv4, IPPROTO_IPV6), ip4ip6_gro_receive /
//! ip4ip6_gro_complete (IPv4 in IPv6, IPPROTO_IPIP), ip6ip6_gro_receive /
//! ip6ip6_gro_complete (IPv6 in IPv6, IPPROTO_IPV6). docs/gro.md#ipip.
//!
//! Each receive allows one tunnel (`encap_mark`, else a flush) and then is the inner
//! family's own receive; each complete sets `skb->encapsulation` and ORs
//! SKB_GSO_IPXIP4 (an IPv4 outer header) or SKB_GSO_IPXIP6 (an IPv6 one) into gso_type
//! before the inner family's complete. The outer header's rules are those of its family,
//! at the outer level (same addresses and protocol, the 6.10 per-level flush checks).

use super::{ipv4, ipv6, reason, GroConfig, SkBuff};
use crate::consts::{IPPROTO_IPIP, IPPROTO_IPV6};
use crate::skb::gso;

/// The inner header's family after an IP-in-IP next header `proto`.
fn inner_is_v6(proto: u8) -> bool {
    proto == IPPROTO_IPV6
}

/// ipip_gro_receive / sit_gro_receive / ip4ip6_gro_receive / ip6ip6_gro_receive: one
/// tunnel, then the inner family's receive (its recursion count already taken by the
/// outer layer's call).
pub fn ipxip_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
    proto: u8,
) -> Option<usize> {
    if skb.cb.encap_mark {
        skb.flush(reason::IPIP_ENCAP);
        return None;
    }
    skb.cb.encap_mark = true;
    if inner_is_v6(proto) {
        ipv6::ipv6_gro_receive(cfg, head, skb)
    } else {
        ipv4::inet_gro_receive(cfg, head, skb)
    }
}

/// ipip_gro_complete / sit_gro_complete (`outer_v6` false: SKB_GSO_IPXIP4),
/// ip4ip6_gro_complete / ip6ip6_gro_complete (true: SKB_GSO_IPXIP6), for the inner header
/// at `nhoff`.
pub fn ipxip_gro_complete(
    cfg: &GroConfig,
    skb: &mut SkBuff,
    nhoff: usize,
    proto: u8,
    outer_v6: bool,
) {
    skb.encapsulation = true;
    skb.gso_type |= if outer_v6 { gso::IPXIP6 } else { gso::IPXIP4 };
    if inner_is_v6(proto) {
        ipv6::ipv6_gro_complete(cfg, skb, nhoff);
    } else {
        ipv4::inet_gro_complete(cfg, skb, nhoff);
    }
}

/// Whether `proto` is an IP-in-IP next header with an offload (not in 3.12's tree).
pub fn is_ipxip(cfg: &GroConfig, proto: u8) -> bool {
    matches!(proto, IPPROTO_IPIP | IPPROTO_IPV6) && cfg.rules.ipip_gro
}
