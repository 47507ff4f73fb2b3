//! GRE GRO: net/ipv4/gre_offload.c: gre_gro_receive, gre_gro_complete.

use super::core::{call_l3_receive, checksum_validate, find_receive_by_type, postpull_rcsum,
    complete_by_type, ETH_P_TEB};
use super::{reason, GroConfig, GroSkb};
use crate::skb::gso;

/// GRE_CSUM, GRE_KEY (include/net/gre.h, as bits of the host-order flags word).
pub const GRE_CSUM: u16 = 0x8000;
pub const GRE_KEY: u16 = 0x2000;
/// GRE_HEADER_SECTION.
pub const GRE_HEADER_SECTION: usize = 4;

/// gre_gro_receive.
pub fn gre_gro_receive(cfg: &GroConfig, head: &mut [GroSkb], skb: &mut GroSkb) -> Option<usize> {
    // One tunnel only: a second encapsulation layer flushes.
    if skb.cb.encap_mark {
        skb.flush(reason::GRE_ENCAP);
        return None;
    }
    skb.cb.encap_mark = true;
    let off = skb.cb.data_offset;
    if skb.data.len() < off + GRE_HEADER_SECTION {
        skb.flush(reason::GRE_FLAGS);
        return None;
    }
    let flags = skb.be16(off);
    // Only version 0 with the K and C flags: S (sequence) would need GSO support.
    if flags & !(GRE_KEY | GRE_CSUM) != 0 {
        skb.flush(reason::GRE_FLAGS);
        return None;
    }
    let proto = skb.be16(off + 2);
    let Some(h) = find_receive_by_type(cfg, proto) else {
        skb.flush(if proto == ETH_P_TEB {
            reason::TEB_NO_HANDLER
        } else {
            reason::GRE_PROTO
        });
        return None;
    };
    let mut grehlen = GRE_HEADER_SECTION;
    if flags & GRE_KEY != 0 {
        grehlen += GRE_HEADER_SECTION;
    }
    if flags & GRE_CSUM != 0 {
        grehlen += GRE_HEADER_SECTION;
    }
    if skb.data.len() < off + grehlen {
        skb.flush(reason::GRE_FLAGS);
        return None;
    }
    // Don't bother verifying the checksum if we're going to flush anyway.
    if flags & GRE_CSUM != 0 && !skb.cb.flush {
        // skb_gro_checksum_simple_validate: GRE header + payload fold to 0xffff.
        if checksum_validate(skb, false, 0, 0) {
            skb.flush(reason::GRE_CSUM);
            return None;
        }
    }
    let key_off = off + GRE_HEADER_SECTION + if flags & GRE_CSUM != 0 { 4 } else { 0 };
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        // Same tunnel: same flags/version word and protocol, same key when K is set.
        if p.be16(off) != flags || p.be16(off + 2) != proto {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::GRE_HDR);
            skb.saw_mismatch(reason::GRE_HDR);
            continue;
        }
        if flags & GRE_KEY != 0 && p.be32(key_off) != skb.be32(key_off) {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::GRE_KEY);
            skb.saw_mismatch(reason::GRE_KEY);
        }
    }
    skb.cb.data_offset += grehlen;
    postpull_rcsum(skb, off, grehlen);
    call_l3_receive(cfg, h, head, skb)
}

/// gre_gro_complete: encapsulation = 1 and gso_type *assigned* SKB_GSO_GRE (never
/// GRE_CSUM; the GRE checksum field is not rewritten), then the inner complete.
pub fn gre_gro_complete(cfg: &GroConfig, skb: &mut GroSkb, nhoff: usize) {
    skb.encapsulation = true;
    skb.gso_type = gso::GRE;
    let flags = skb.be16(nhoff);
    let mut grehlen = GRE_HEADER_SECTION;
    if flags & GRE_KEY != 0 {
        grehlen += GRE_HEADER_SECTION;
    }
    if flags & GRE_CSUM != 0 {
        grehlen += GRE_HEADER_SECTION;
    }
    let proto = skb.be16(nhoff + 2);
    complete_by_type(cfg, skb, proto, nhoff + grehlen);
    skb.inner_mac_header = Some(nhoff + grehlen);
}
