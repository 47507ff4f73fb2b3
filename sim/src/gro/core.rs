//! net/core/gro.c: dev_gro_receive, gro_list_prepare, skb_gro_receive and
//! napi_gro_complete, plus the packet_offload dispatch (gro_find_receive_by_type).

use super::napi::{End, Napi};
use super::{
    eth, ipv4, ipv6, reason, GroConfig, GroSkb, Reason, Seg, ETH_HLEN, GRO_MAX_SIZE,
    GRO_RECURSION_LIMIT, MAX_GRO_SKBS, MAX_SKB_FRAGS,
};
use crate::skb::{gso, IpSummed};

pub const ETH_P_IP: u16 = 0x0800;
pub use crate::skb::ETH_P_IPV6;
pub const ETH_P_TEB: u16 = 0x6558;
pub const ETH_P_8021Q: u16 = 0x8100;
pub const ETH_P_8021AD: u16 = 0x88a8;

/// What dev_gro_receive did with a frame (enum gro_result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroResult {
    /// GRO_MERGED(_FREE): appended to a held skb.
    Merged,
    /// GRO_HELD: kept as a new skb of its flow.
    Held,
    /// GRO_NORMAL: passed up unheld.
    Normal,
}

/// A packet_offload's gro_receive, by EtherType (gro_find_receive_by_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L3Handler {
    Inet,
    Inet6,
    Vlan,
    Teb,
}

/// gro_find_receive_by_type: which offloads are registered in this kernel/config.
pub fn find_receive_by_type(cfg: &GroConfig, ethertype: u16) -> Option<L3Handler> {
    match ethertype {
        ETH_P_IP => Some(L3Handler::Inet),
        ETH_P_IPV6 => Some(L3Handler::Inet6),
        ETH_P_8021Q | ETH_P_8021AD if cfg.vlan_gro => Some(L3Handler::Vlan),
        ETH_P_TEB if cfg.teb_gro => Some(L3Handler::Teb),
        _ => None,
    }
}

/// call_gro_receive / indirect_call_gro_receive_inet for an L3 (EtherType) handler,
/// with the recursion limit.
pub fn call_l3_receive(
    cfg: &GroConfig,
    h: L3Handler,
    head: &mut [GroSkb],
    skb: &mut GroSkb,
) -> Option<usize> {
    skb.cb.recursion += 1;
    if skb.cb.recursion >= GRO_RECURSION_LIMIT {
        skb.flush(reason::RECURSION);
        return None;
    }
    skb.cb.depth += 1;
    match h {
        L3Handler::Inet => ipv4::inet_gro_receive(cfg, head, skb),
        L3Handler::Inet6 => ipv6::ipv6_gro_receive(cfg, head, skb),
        L3Handler::Vlan => eth::vlan_gro_receive(cfg, head, skb),
        L3Handler::Teb => eth::eth_gro_receive(cfg, head, skb),
    }
}

/// gro_list_prepare: a held skb starts as same_flow only if the hash (0 for tun),
/// device, hw-accel VLAN (none from a tap) and the 14-byte MAC header match.
fn gro_list_prepare(head: &mut [GroSkb], skb: &mut GroSkb) {
    for p in head.iter_mut() {
        p.cb.flush = false;
        p.cb.flush_reason = None;
        p.cb.mismatch = None;
        let same = p.data.get(..ETH_HLEN) == skb.data.get(..ETH_HLEN);
        p.cb.same_flow = same;
        if !same {
            p.cb.mismatch = Some(reason::MAC);
            skb.saw_mismatch(reason::MAC);
        }
    }
}

/// Reset NAPI_GRO_CB(skb) as dev_gro_receive does before calling the handlers.
fn init_cb(cfg: &GroConfig, skb: &mut GroSkb) {
    skb.cb = super::GroCb {
        data_offset: ETH_HLEN,
        count: 1,
        is_atomic: true,
        // Setup for GRO checksum validation.
        csum_cnt: if skb.ip_summed == IpSummed::Unnecessary {
            skb.csum_level + 1
        } else {
            0
        },
        ..super::GroCb::default()
    };
    // flush = skb_has_frag_list(skb); a GSO skb (only gro_cells passes one here) counts
    // its segments, and only TCP, non-DODGY ones may merge (GroRules::gso_skbs).
    if !skb.layout.frag_list.is_empty() {
        skb.flush(reason::FRAG_LIST);
    }
    if skb.gso_size != 0 {
        skb.cb.count = skb.gso_segs.max(1);
        let tcp = skb.gso_type & (gso::TCPV4 | gso::TCPV6) != 0;
        if !cfg.rules.gso_skbs || !tcp || skb.gso_type & gso::DODGY != 0 {
            skb.flush(reason::GSO);
        }
    }
}

/// dev_gro_receive for the skb in `bucket` of `napi`.
pub fn dev_gro_receive(napi: &mut Napi, cfg: &GroConfig, mut skb: GroSkb) -> GroResult {
    // tun sets no skb->hash: skb_get_hash_raw is 0, every flow lands in bucket 0.
    let bucket = 0usize;
    init_cb(cfg, &mut skb);
    if !cfg.feature {
        return normal(napi, skb, reason::GRO_OFF);
    }
    gro_list_prepare(&mut napi.buckets[bucket], &mut skb);
    let Some(h) = find_receive_by_type(cfg, skb.protocol) else {
        let why = match skb.protocol {
            ETH_P_8021Q | ETH_P_8021AD => reason::VLAN_NO_HANDLER,
            _ => reason::NO_HANDLER,
        };
        return normal(napi, skb, why);
    };
    let pp = {
        let head = &mut napi.buckets[bucket];
        match h {
            L3Handler::Inet => ipv4::inet_gro_receive(cfg, head, &mut skb),
            L3Handler::Inet6 => ipv6::ipv6_gro_receive(cfg, head, &mut skb),
            L3Handler::Vlan => eth::vlan_gro_receive(cfg, head, &mut skb),
            L3Handler::Teb => eth::eth_gro_receive(cfg, head, &mut skb),
        }
    };
    let same_flow = skb.cb.same_flow;
    if let Some(i) = pp {
        let p = napi.buckets[bucket].remove(i);
        let why = if same_flow {
            skb.cb.merged_flush.unwrap_or(reason::TCP_SHORT)
        } else {
            skb.cb
                .nomerge
                .or(skb.cb.flush_reason)
                .unwrap_or(reason::GRO_64K)
        };
        napi_gro_complete(
            napi,
            cfg,
            p,
            End::Frame {
                frame: skb.frame,
                reason: why,
                merged: same_flow,
            },
        );
    }
    if same_flow {
        return GroResult::Merged;
    }
    if skb.cb.flush {
        let why = skb
            .cb
            .nomerge
            .or(skb.cb.flush_reason)
            .unwrap_or(reason::FLOW_NEW);
        return normal(napi, skb, why);
    }
    if napi.buckets[bucket].len() >= MAX_GRO_SKBS {
        if cfg.rules.hash_buckets {
            // gro_flush_oldest: the tail of the list is the oldest.
            let oldest = napi.buckets[bucket].remove(0);
            napi_gro_complete(napi, cfg, oldest, End::BucketFull { frame: skb.frame });
        } else {
            return normal(napi, skb, reason::LIST_FULL);
        }
    }
    skb.cb.age = napi.jiffies;
    // Not GSO: gso_size = the payload after every header.
    if skb.gso_size == 0 {
        skb.gso_size = u16::try_from(skb.gro_len()).unwrap_or(u16::MAX);
    }
    skb.start = Some(start_reason(&skb));
    skb.start_also = std::mem::take(&mut skb.cb.nomerge_also);
    napi.buckets[bucket].push(skb);
    GroResult::Held
}

/// Why a held skb's head frame did not join an existing skb.
fn start_reason(skb: &GroSkb) -> Reason {
    if let Some(r) = skb.cb.nomerge {
        return r;
    }
    match skb.cb.deepest_mismatch {
        Some((_, r)) if !r.identity => r,
        _ => reason::FLOW_NEW,
    }
}

/// GRO_NORMAL: the skb goes up as it is (gro_normal_one).
fn normal(napi: &mut Napi, mut skb: GroSkb, why: Reason) -> GroResult {
    skb.start = Some(why);
    skb.start_also = std::mem::take(&mut skb.cb.nomerge_also);
    // GRO_NORMAL leaves gso_size as it came (0, or a GSO skb's own).
    napi.deliver(skb, End::Normal);
    GroResult::Normal
}

/// skb_gro_receive: append `skb`'s payload (from skb_gro_offset) to `p`.
pub fn skb_gro_receive(cfg: &GroConfig, p: &mut GroSkb, skb: &mut GroSkb) -> Result<(), Reason> {
    let len = skb.gro_len();
    if p.kernel_len() + len >= GRO_MAX_SIZE {
        return Err(reason::GRO_64K);
    }
    if skb.cb.flush {
        return Err(skb.cb.flush_reason.unwrap_or(reason::GRO_64K));
    }
    if skb.head_frag {
        // The new skb's head page becomes one frag of the last skb (lp), its own frags
        // (a GSO skb's) after it.
        let lp = match p.layout.frag_list.last_mut() {
            Some(n) => n,
            None => &mut p.layout.frags,
        };
        let add = 1 + skb.layout.frags;
        if *lp + add <= MAX_SKB_FRAGS {
            *lp += add;
        } else if cfg.rules.frags_overflow_to_frag_list {
            // goto merge: chained on frag_list with its head pulled to the payload.
            p.layout.frag_list.push(skb.layout.frags);
        } else {
            return Err(reason::GRO_FRAGS);
        }
    } else {
        // A kmalloc'ed linear head cannot become a frag: chain it on frag_list.
        p.layout.frag_list.push(skb.layout.frags);
    }
    p.cb.count += skb.cb.count;
    p.len += len;
    let bytes = std::mem::take(&mut skb.data);
    p.segs.push(Seg {
        bytes,
        off: skb.cb.data_offset,
        frame: skb.frame,
    });
    // A GSO skb brings the payloads it had merged.
    p.segs.append(&mut skb.segs);
    skb.cb.same_flow = true;
    Ok(())
}

/// napi_gro_complete: a held skb leaves GRO. One segment: gso_size = 0 and nothing else
/// is touched; otherwise the protocol's gro_complete chain fixes the headers.
pub fn napi_gro_complete(napi: &mut Napi, cfg: &GroConfig, mut skb: GroSkb, end: End) {
    if skb.cb.count == 1 {
        skb.gso_size = 0;
    } else {
        match skb.protocol {
            ETH_P_IP => ipv4::inet_gro_complete(cfg, &mut skb, ETH_HLEN),
            ETH_P_IPV6 => ipv6::ipv6_gro_complete(cfg, &mut skb, ETH_HLEN),
            ETH_P_8021Q | ETH_P_8021AD => eth::vlan_gro_complete(cfg, &mut skb, ETH_HLEN),
            _ => {}
        }
    }
    napi.deliver(skb, end);
}

/// gro_complete by EtherType for an inner header at `nhoff` (eth/vlan complete).
pub fn complete_by_type(cfg: &GroConfig, skb: &mut GroSkb, ethertype: u16, nhoff: usize) {
    match ethertype {
        ETH_P_IP => ipv4::inet_gro_complete(cfg, skb, nhoff),
        ETH_P_IPV6 => ipv6::ipv6_gro_complete(cfg, skb, nhoff),
        ETH_P_8021Q | ETH_P_8021AD => eth::vlan_gro_complete(cfg, skb, nhoff),
        ETH_P_TEB => eth::eth_gro_complete(cfg, skb, nhoff),
        _ => {}
    }
}

/// __skb_gro_checksum_validate_needed: CHECKSUM_PARTIAL covering this offset, or a
/// CHECKSUM_UNNECESSARY level left to consume, means no software check.
pub fn checksum_validate_needed(skb: &GroSkb, zero_okay: bool, check: u16) -> bool {
    (skb.ip_summed != IpSummed::Partial || skb.csum_start < skb.cb.data_offset)
        && skb.cb.csum_cnt == 0
        && (!zero_okay || check != 0)
}

/// __skb_gro_checksum_validate(..) with `psum` the pseudo-header sum (0 for GRE):
/// true when the checksum is bad. Verifies in software (or with the carried sum),
/// then skb_gro_incr_csum_unnecessary.
pub fn checksum_validate(skb: &mut GroSkb, zero_okay: bool, check: u16, psum: u32) -> bool {
    if checksum_validate_needed(skb, zero_okay, check) {
        // __skb_gro_checksum_validate_complete
        let carried_ok = skb.cb.csum_valid
            && super::csum::fold(super::csum::csum_add(psum, skb.cb.csum)) == 0xffff;
        if !carried_ok {
            // __skb_gro_checksum_complete
            let wsum = skb.sum_from(skb.cb.data_offset);
            skb.cb.csum = wsum;
            skb.cb.csum_valid = true;
            if super::csum::fold(super::csum::csum_add(psum, wsum)) != 0xffff {
                return true;
            }
        }
    }
    // skb_gro_incr_csum_unnecessary
    if skb.cb.csum_cnt > 0 {
        skb.cb.csum_cnt -= 1;
    } else {
        incr_checksum_unnecessary(skb);
    }
    false
}

/// __skb_incr_checksum_unnecessary.
fn incr_checksum_unnecessary(skb: &mut GroSkb) {
    match skb.ip_summed {
        IpSummed::Unnecessary if skb.csum_level < 3 => skb.csum_level += 1,
        IpSummed::None => {
            skb.ip_summed = IpSummed::Unnecessary;
            skb.csum_level = 0;
        }
        _ => {}
    }
}

/// skb_gro_postpull_rcsum: keep the carried sum covering only [data_offset, end).
pub fn postpull_rcsum(skb: &mut GroSkb, start: usize, len: usize) {
    if skb.cb.csum_valid {
        let s = super::csum::sum(skb.data.get(start..start + len).unwrap_or(&[]));
        // csum_sub: add the complement.
        skb.cb.csum = super::csum::csum_add(skb.cb.csum, u32::from(!super::csum::fold(s)));
    }
}
