//! BIG TCP in GRO: how large skb_gro_receive lets a merged skb grow (net/core/gro.c:
//! skb_gro_receive, include/linux/netdevice.h: netif_get_gro_max_size), and what the
//! completions write into an skb past 64 KiB: an IPv4 `tot_len` of 0 (net/ipv4/af_inet.c:
//! inet_gro_complete, include/linux/ip.h: iph_set_totlen) and an IPv6 `payload_len` of 0
//! with a hop-by-hop jumbo option in front of TCP (net/ipv6/ip6_offload.c:
//! ipv6_gro_complete). The rules per kernel are [`GroSizeRule`] and
//! `GroRules::ipv6_jumbo_hbh`; the per-device limits are `[gro] gro_max_size` and
//! `gro_ipv4_max_size` (docs/gro.md#big-tcp).

use super::rules::{GroRules, GroSizeRule};
use super::{reason, GroConfig, Reason, SkBuff, GRO_LEGACY_MAX_SIZE, GRO_MAX_SIZE};
use crate::consts::ETH_HLEN;
use crate::consts::{ETH_P_IPV6, IPPROTO_TCP, NEXTHDR_HOP};
use crate::wire::ipv6 as ip6;

/// IPV6_MAXPLEN (include/uapi/linux/ipv6.h): the largest payload_len.
pub const IPV6_MAXPLEN: usize = 65535;
/// IP_MAX_MTU (include/net/ip.h): the largest tot_len.
pub const IP_MAX_MTU: usize = 0xFFFF;
/// IPV6_TLV_JUMBO (include/uapi/linux/in6.h): the Jumbo Payload option (RFC 2675).
pub const IPV6_TLV_JUMBO: u8 = 0xC2;
/// sizeof(struct hop_jumbo_hdr) (include/net/ipv6.h): next header, hdrlen 0, the option
/// type and length 4, and the 32-bit jumbo payload length.
pub const HOP_JUMBO_LEN: usize = 8;

/// Validate `[gro] gro_max_size` / `gro_ipv4_max_size` (`key`) for `profile`.
pub fn check_max_size(key: &str, v: u64, rules: &GroRules, profile: &str) -> Result<usize, String> {
    if rules.gro_size == GroSizeRule::Legacy {
        let name = key.trim_start_matches("gro.");
        return Err(format!(
            "{key}: {profile} has no per-device {name} (skb_gro_receive stops at GRO_MAX_SIZE 65536; BIG TCP GRO is v5.19)"
        ));
    }
    let why = "rtnetlink: do_setlink refuses more than GRO_MAX_SIZE";
    let v = crate::scenario::limits::in_range(key, v, (0, GRO_MAX_SIZE as u64), why)?;
    Ok(v as usize)
}

/// The device's (gro_max_size, gro_ipv4_max_size) after one RTM_SETLINK with the given
/// attributes (net/core/rtnetlink.c: do_setlink handles IFLA_GRO_MAX_SIZE first):
/// netif_set_gro_max_size also lowers gro_ipv4_max_size to a size of at most
/// GRO_LEGACY_MAX_SIZE (9eefedd58ae1; seen on the 6.18 host: gro_max_size 30000 bounds
/// IPv4 too), and an explicit IFLA_GRO_IPV4_MAX_SIZE then wins. A kernel before v6.3
/// has no gro_ipv4_max_size; its rtnetlink ignores the attribute ([`device_sizes`]).
pub fn setlink_sizes(
    v6: Option<u64>,
    v4: Option<u64>,
    rules: &GroRules,
    profile: &str,
) -> Result<(usize, usize), String> {
    let (mut gro, mut gro_v4) = (GRO_LEGACY_MAX_SIZE, GRO_LEGACY_MAX_SIZE);
    if let Some(v) = v6 {
        gro = check_max_size("gro.gro_max_size", v, rules, profile)?;
        if gro <= GRO_LEGACY_MAX_SIZE {
            gro_v4 = gro;
        }
    }
    if let Some(v) = v4 {
        gro_v4 = check_max_size("gro.gro_ipv4_max_size", v, rules, profile)?;
    }
    Ok((gro, gro_v4))
}

/// The gro_max_size and gro_ipv4_max_size the device reports (RTM_GETLINK) under `rules`
/// for the planned ones: a kernel without IFLA_GRO_IPV4_MAX_SIZE (before v6.3) ignores it
/// when set and reports none, which reads as GRO_LEGACY_MAX_SIZE; one without BIG TCP GRO
/// has neither.
pub fn device_sizes(rules: &GroRules, v6: usize, v4: usize) -> (usize, usize) {
    match rules.gro_size {
        GroSizeRule::Legacy => (GRO_LEGACY_MAX_SIZE, GRO_LEGACY_MAX_SIZE),
        GroSizeRule::Ipv6Only => (v6, GRO_LEGACY_MAX_SIZE),
        GroSizeRule::PerFamily => (v6, v4),
    }
}

/// netif_get_gro_max_size (or, before v6.3, dev->gro_max_size for every family): the
/// limit for growing `p`.
pub fn gro_max_size(cfg: &GroConfig, p: &SkBuff) -> usize {
    match cfg.rules.gro_size {
        GroSizeRule::Legacy => GRO_LEGACY_MAX_SIZE,
        GroSizeRule::Ipv6Only => cfg.gro_max_size,
        GroSizeRule::PerFamily if p.protocol == ETH_P_IPV6 => cfg.gro_max_size,
        GroSizeRule::PerFamily => cfg.gro_ipv4_max_size,
    }
}

/// skb_gro_receive's size checks before `skb` (`len` bytes after its headers) joins `p`:
/// `p->len + len` must stay below the device's limit, and past GRO_LEGACY_MAX_SIZE the
/// flow must be one BIG TCP can carry.
pub fn check_size(cfg: &GroConfig, p: &SkBuff, skb: &SkBuff, len: usize) -> Result<(), Reason> {
    let total = p.kernel_len() + len;
    let limit = gro_max_size(cfg, p);
    if total >= limit {
        return Err(if limit == GRO_LEGACY_MAX_SIZE {
            reason::GRO_64K
        } else {
            reason::GRO_MAX
        });
    }
    if total < GRO_LEGACY_MAX_SIZE {
        return Ok(());
    }
    // skb_headroom(p) with p->data at the network header: the model's GRO skb starts at
    // the MAC header, which the kernel's has already pulled.
    let headroom = p.headroom() + ETH_HLEN;
    let room = p.protocol != ETH_P_IPV6 || headroom >= HOP_JUMBO_LEN;
    let ok = match cfg.rules.gro_size {
        GroSizeRule::Legacy => false,
        // `ipv6_hdr(p)->nexthdr != IPPROTO_TCP`: the fixed header's next header.
        GroSizeRule::Ipv6Only => {
            let nh = p.offset_from_data(p.network_header).unwrap_or(ETH_HLEN);
            let next = p
                .hdr(nh, ip6::HEADER_LEN)
                .map(|h| ip6::Packet::new_unchecked(h).next_header());
            p.protocol == ETH_P_IPV6 && room && next == Some(IPPROTO_TCP) && !p.encapsulation
        }
        GroSizeRule::PerFamily => skb.cb.proto == IPPROTO_TCP && room && !p.encapsulation,
    };
    if ok {
        Ok(())
    } else {
        Err(reason::GRO_BIG_TCP)
    }
}

/// iph_set_totlen: the IPv4 total length, or 0 past IP_MAX_MTU (BIG TCP; ip_rcv_core then
/// takes skb->len, include/linux/ip.h: iph_totlen).
pub fn iph_totlen(len: usize) -> u16 {
    if len <= IP_MAX_MTU {
        len as u16
    } else {
        0
    }
}

/// ipv6_gro_complete's payload length for the IPv6 header at `nhoff`: the bytes after it,
/// and past IPV6_MAXPLEN a jumbogram: with `ipv6_jumbo_hbh` an 8-byte hop-by-hop header
/// (IPV6_TLV_JUMBO, the payload length plus the 8 bytes) goes between the IPv6 header and
/// what followed it, whose next header it takes (NEXTHDR_HOP in the IPv6 header), and
/// payload_len is 0; without it (81be30c1f5f2) only payload_len 0.
pub fn ipv6_set_payload_len(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    let payload_len = skb.len() - nhoff - ip6::HEADER_LEN;
    if payload_len <= IPV6_MAXPLEN {
        set_payload_len(skb, nhoff, payload_len as u16);
        return;
    }
    if cfg.rules.ipv6_jumbo_hbh {
        let Some(next) = skb
            .hdr(nhoff, ip6::HEADER_LEN)
            .map(|h| ip6::Packet::new_unchecked(h).next_header())
        else {
            return;
        };
        let mut hop = [0u8; HOP_JUMBO_LEN];
        {
            let mut ext = ip6::ExtHeader::new_unchecked(NEXTHDR_HOP, &mut hop[..]);
            ext.set_next_header(next);
            ext.set_hdr_ext_len(0);
        }
        // The option itself (type, length, value): no wire view has TLV options.
        hop[2] = IPV6_TLV_JUMBO;
        hop[3] = 4;
        let jumbo = (payload_len + HOP_JUMBO_LEN) as u32;
        hop[4..8].copy_from_slice(&jumbo.to_be_bytes());
        // The kernel moves the MAC and IPv6 headers 8 bytes left into the headroom
        // (memmove, skb->data -= hoplen); the model opens the gap in place, which gives
        // the same bytes and offsets from data.
        skb.insert_linear(nhoff + ip6::HEADER_LEN, &hop);
        if let Some(h) = skb.linear_mut().get_mut(nhoff..nhoff + ip6::HEADER_LEN) {
            ip6::Packet::new_unchecked(h).set_next_header(NEXTHDR_HOP);
        }
    }
    set_payload_len(skb, nhoff, 0);
}

fn set_payload_len(skb: &mut SkBuff, nhoff: usize, v: u16) {
    if let Some(h) = skb.linear_mut().get_mut(nhoff..nhoff + ip6::HEADER_LEN) {
        ip6::Packet::new_unchecked(h).set_payload_len(v);
    }
}

#[cfg(test)]
#[path = "bigtcp_tests.rs"]
mod tests;
