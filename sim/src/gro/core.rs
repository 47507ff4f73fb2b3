//! net/core/gro.c: dev_gro_receive, gro_list_prepare, skb_gro_receive and
//! napi_gro_complete, plus the packet_offload dispatch (gro_find_receive_by_type).

use super::napi::{End, Napi};
use super::{
    bigtcp, eth, ipv4, ipv6, reason, GroConfig, Reason, GRO_RECURSION_LIMIT, MAX_GRO_SKBS,
};
use crate::consts::{ETH_HLEN, MAX_SKB_FRAGS};
use crate::skb::{gso, IpSummed, SkBuff};
use crate::wire::checksum as csum;

use crate::consts::{ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP, ETH_P_IPV6, ETH_P_TEB};

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
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
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
/// device, hw-accel VLAN (none from a tap) and the MAC header match: the 14 bytes of
/// compare_ether_header when `maclen` (dev->hard_header_len) is ETH_HLEN, else a memcmp
/// of `maclen` bytes from it (the packet's bytes, linear part first).
fn gro_list_prepare(head: &mut [Box<SkBuff>], skb: &mut SkBuff, maclen: usize) {
    let wide = (maclen != ETH_HLEN).then(|| mac_bytes(skb, maclen));
    for p in head.iter_mut() {
        p.cb.flush = false;
        p.cb.flush_reason = None;
        p.cb.mismatch = None;
        let (same, why) = match &wide {
            None => (p.hdr(0, ETH_HLEN) == skb.hdr(0, ETH_HLEN), reason::MAC),
            Some(b) => (mac_bytes(p, maclen) == *b, reason::MAC_HARD_HEADER),
        };
        p.cb.same_flow = same;
        if !same {
            p.cb.mismatch = Some(why);
            skb.saw_mismatch(why);
        }
    }
}

/// The first `n` bytes of `skb`'s packet (fewer when it is shorter).
fn mac_bytes(skb: &SkBuff, n: usize) -> Vec<u8> {
    match skb.hdr(0, n) {
        Some(h) => h.to_vec(),
        None => skb.bytes().iter().take(n).copied().collect(),
    }
}

/// Reset NAPI_GRO_CB(skb) as dev_gro_receive does before calling the handlers.
fn init_cb(cfg: &GroConfig, skb: &mut SkBuff) {
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
    // flush = skb_has_frag_list(skb); a GSO skb (a vnet header's write, or one the tap's
    // GRO merged, in gro_cells) counts its segments, and only TCP, non-DODGY ones may
    // merge (GroRules::gso_skbs).
    if !skb.frag_list().is_empty() {
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
pub fn dev_gro_receive(napi: &mut Napi, cfg: &GroConfig, mut skb: Box<SkBuff>) -> GroResult {
    // tun sets no skb->hash: skb_get_hash_raw is 0, every flow lands in bucket 0.
    let bucket = 0usize;
    init_cb(cfg, &mut skb);
    if !cfg.feature {
        return normal(napi, skb, reason::GRO_OFF);
    }
    if cfg.xdp_generic {
        return normal(napi, skb, reason::GRO_XDP_GENERIC);
    }
    gro_list_prepare(&mut napi.buckets[bucket], &mut skb, cfg.hard_header_len);
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
                frame: skb.model.frame,
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
            napi_gro_complete(
                napi,
                cfg,
                oldest,
                End::BucketFull {
                    frame: skb.model.frame,
                },
            );
        } else {
            return normal(napi, skb, reason::LIST_FULL);
        }
    }
    skb.cb.age = napi.jiffies;
    // Not GSO (!skb_is_gso): gso_size = the payload after every header.
    if skb.gso_size == 0 {
        skb.gso_size = u16::try_from(skb.gro_len()).unwrap_or(u16::MAX);
    }
    skb.model.start = Some(start_reason(&skb));
    skb.model.start_also = std::mem::take(&mut skb.cb.nomerge_also);
    napi.buckets[bucket].push(skb);
    GroResult::Held
}

/// Why a held skb's head frame did not join an existing skb.
fn start_reason(skb: &SkBuff) -> Reason {
    if let Some(r) = skb.cb.nomerge {
        return r;
    }
    match skb.cb.deepest_mismatch {
        Some((_, r)) if !r.identity => r,
        _ => reason::FLOW_NEW,
    }
}

/// GRO_NORMAL: the skb goes up as it is (gro_normal_one).
fn normal(napi: &mut Napi, mut skb: Box<SkBuff>, why: Reason) -> GroResult {
    skb.model.start = Some(why);
    skb.model.start_also = std::mem::take(&mut skb.cb.nomerge_also);
    // GRO_NORMAL leaves skb_shinfo alone: a GSO skb (a vnet header's) keeps its fields.
    napi.deliver(skb, End::Normal);
    GroResult::Normal
}

/// skb_gro_receive: append `skb`'s payload (from skb_gro_offset) to `p`, as frags of
/// the last skb (NAPI_GRO_CB(p)->last: p or its last frag_list skb) while MAX_SKB_FRAGS
/// allows, else by chaining `skb` itself on p's frag_list (`merge:`). `skb` keeps its
/// cb and model bookkeeping for the caller; its bytes now belong to `p`.
pub fn skb_gro_receive(cfg: &GroConfig, p: &mut SkBuff, skb: &mut SkBuff) -> Result<(), Reason> {
    let len = skb.gro_len();
    // The device's gro_max_size / gro_ipv4_max_size and BIG TCP's conditions.
    bigtcp::check_size(cfg, p, skb, len)?;
    if skb.cb.flush {
        return Err(skb.cb.flush_reason.unwrap_or(reason::GRO_64K));
    }
    let offset = skb.cb.data_offset;
    let headlen = skb.headlen();
    let lp_frags = p.frag_list().last().map_or(p.nr_frags(), SkBuff::nr_frags);
    // headlen <= offset: only the skb's frags move; with head_frag its head page is one
    // frag more; a kmalloc'ed linear head cannot become a frag.
    let need = if headlen <= offset {
        Some(skb.nr_frags())
    } else if skb.head_frag {
        Some(1 + skb.nr_frags())
    } else {
        None
    };
    let as_frags = match need {
        Some(n) if lp_frags + n <= MAX_SKB_FRAGS => true,
        Some(_) if !cfg.rules.frags_overflow_to_frag_list => return Err(reason::GRO_FRAGS),
        _ => false,
    };
    p.cb.count += skb.cb.count;
    if as_frags {
        let mut own = skb.take_frags();
        let head = if headlen <= offset {
            if let Some(f) = own.first_mut() {
                f.trim_front(offset - headlen);
            }
            None
        } else {
            Some(skb.steal_head(offset))
        };
        let frags = head.into_iter().chain(own);
        match p.frag_list_last_mut() {
            Some(lp) => {
                for f in frags {
                    lp.push_frag(f);
                }
                p.add_paged_len(len);
            }
            None => {
                for f in frags {
                    p.push_frag(f);
                }
            }
        }
    } else {
        // merge: chained on frag_list with its head pulled to the payload.
        let mut chained = std::mem::take(skb);
        skb.cb = std::mem::take(&mut chained.cb);
        skb.model = std::mem::take(&mut chained.model);
        chained.pull_across(offset);
        p.push_frag_list(chained);
    }
    p.model.merged.push(skb.model.frame);
    // A GSO skb (one the tap's GRO merged, again in gro_cells) brings the frames it had.
    p.model.merged.append(&mut skb.model.merged);
    skb.cb.same_flow = true;
    Ok(())
}

/// napi_gro_complete: a held skb leaves GRO. One segment: gso_size = 0 and nothing else
/// is touched; otherwise the protocol's gro_complete chain fixes the headers.
pub fn napi_gro_complete(napi: &mut Napi, cfg: &GroConfig, mut skb: Box<SkBuff>, end: End) {
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
pub fn complete_by_type(cfg: &GroConfig, skb: &mut SkBuff, ethertype: u16, nhoff: usize) {
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
pub fn checksum_validate_needed(skb: &SkBuff, zero_okay: bool, check: u16) -> bool {
    (skb.ip_summed != IpSummed::Partial || skb.checksum_start_offset() < skb.cb.data_offset)
        && skb.cb.csum_cnt == 0
        && (!zero_okay || check != 0)
}

/// __skb_gro_checksum_validate(..) with `psum` the pseudo-header sum (0 for GRE):
/// true when the checksum is bad. Verifies in software (or with the carried sum),
/// then skb_gro_incr_csum_unnecessary.
pub fn checksum_validate(skb: &mut SkBuff, zero_okay: bool, check: u16, psum: u32) -> bool {
    if checksum_validate_needed(skb, zero_okay, check) {
        // __skb_gro_checksum_validate_complete
        let carried_ok = skb.cb.csum_valid && csum::fold(csum::add(psum, skb.cb.csum)) == 0xffff;
        if !carried_ok {
            // __skb_gro_checksum_complete
            let wsum = skb.sum_from(skb.cb.data_offset);
            skb.cb.csum = wsum;
            skb.cb.csum_valid = true;
            if csum::fold(csum::add(psum, wsum)) != 0xffff {
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
fn incr_checksum_unnecessary(skb: &mut SkBuff) {
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
pub fn postpull_rcsum(skb: &mut SkBuff, start: usize, len: usize) {
    if skb.cb.csum_valid {
        let s = csum::ones_complement_sum(skb.hdr(start, len).unwrap_or(&[]), 0);
        // csum_sub: add the complement.
        skb.cb.csum = csum::add(skb.cb.csum, u32::from(!csum::fold(s)));
    }
}
