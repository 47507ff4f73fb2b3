//! GRE GRO: net/ipv4/gre_offload.c: gre_gro_receive, gre_gro_complete.

use super::core::{
    call_l3_receive, checksum_validate, complete_by_type, find_receive_by_type, postpull_rcsum,
};
use super::{reason, GroConfig, SkBuff};
use crate::consts::ETH_P_TEB;
use crate::skb::gso;
use crate::wire::Gre;

pub use crate::wire::gre::{GRE_CSUM, GRE_KEY};
/// GRE_HEADER_SECTION.
pub const GRE_HEADER_SECTION: usize = 4;

/// gre_gro_receive.
pub fn gre_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    // One tunnel only: a second encapsulation layer flushes.
    if skb.cb.encap_mark {
        skb.flush(reason::GRE_ENCAP);
        return None;
    }
    skb.cb.encap_mark = true;
    let off = skb.cb.data_offset;
    if skb.headlen() < off + GRE_HEADER_SECTION {
        skb.flush(reason::GRE_FLAGS);
        return None;
    }
    let greh = Gre::new_unchecked(skb.hdr_from(off));
    let flags = greh.flags_word();
    // Only version 0 with the K and C flags: S (sequence) would need GSO support.
    if flags & !(GRE_KEY | GRE_CSUM) != 0 {
        skb.flush(reason::GRE_FLAGS);
        return None;
    }
    let proto = greh.protocol();
    let Some(h) = find_receive_by_type(cfg, proto) else {
        skb.flush(if proto == ETH_P_TEB {
            reason::TEB_NO_HANDLER
        } else {
            reason::GRE_PROTO
        });
        return None;
    };
    // grehlen: the base header and the K and C words (the only flags left), the
    // view's gre_calc_hlen.
    let grehlen = greh.header_len();
    // The key read now, while the view is still the skb's (None: K clear).
    let key = greh.key();
    if skb.headlen() < off + grehlen {
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
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        // Same tunnel: same flags/version word and protocol, same key when K is set.
        // (A held skb too short for a field reads it as 0, as a short skb's key does.)
        let greh2 = Gre::new_unchecked(p.hdr_from(off));
        if greh2.flags_word() != flags || greh2.protocol() != proto {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::GRE_HDR);
            skb.saw_mismatch(reason::GRE_HDR);
            continue;
        }
        if flags & GRE_KEY != 0 && greh2.key().unwrap_or(0) != key.unwrap_or(0) {
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
pub fn gre_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    skb.encapsulation = true;
    skb.gso_type = gso::GRE;
    // The receive side took only version 0 with C and K, so the view's header_len is
    // gre_gro_complete's grehlen.
    let greh = Gre::new_unchecked(skb.hdr_from(nhoff));
    let grehlen = greh.header_len();
    let proto = greh.protocol();
    complete_by_type(cfg, skb, proto, nhoff + grehlen);
    skb.set_inner_mac_header(nhoff + grehlen);
}

#[cfg(test)]
mod tests {
    use super::super::frames::{Encapsulate, Outer, Tcp4};
    use super::super::testutil::{lens, run};
    use super::super::{reason, Reason};
    use crate::profile::LINUX_6_18;

    /// Four inner segments in GRE-TEB; `edit` changes frame 2 (key, csum, flags).
    fn gre4(
        key: impl Fn(usize) -> Option<u32>,
        csum: impl Fn(usize) -> Option<bool>,
    ) -> Vec<Vec<u8>> {
        Tcp4::default()
            .stream(4)
            .encapsulated(100, |k, o, f| o.gre_teb(key(k), csum(k), f))
    }

    #[test]
    fn a_different_key_is_a_different_tunnel() {
        let d = run(
            &LINUX_6_18,
            gre4(|k| Some(if k == 2 { 7 } else { 42 }), |_| None),
        );
        // Frame 2 starts its own skb (gre:key); 3 still matches 0-1 by key but its
        // outer ID and inner seq do not follow them: ipv4:id.
        assert_eq!(d[1].skb.model.start, Some(reason::GRE_KEY));
        assert_eq!(d.len(), 3);
        assert_eq!(d.iter().map(|x| x.skb.cb.count).sum::<u16>(), 4);
    }

    #[test]
    fn checksum_good_merges_bad_flushes_and_the_field_is_not_rewritten() {
        let good = gre4(|_| Some(42), |_| Some(true));
        let first_csum = [good[0][38], good[0][39]];
        let d = run(&LINUX_6_18, good);
        // 14 + 20 + 12 (C and K) + 54 + 5600.
        assert_eq!(lens(&d), vec![100 + 5600]);
        assert_eq!(
            d[0].skb.gso_type,
            crate::skb::gso::GRE | crate::skb::gso::TCPV4
        );
        let b = d[0].skb.to_vec();
        assert_eq!(
            [b[38], b[39]],
            first_csum,
            "gre_gro_complete leaves the GRE checksum"
        );
        let d = run(&LINUX_6_18, gre4(|_| Some(42), |k| Some(k != 2)));
        assert_eq!(lens(&d), vec![1500, 100 + 2800, 1500]);
        assert_eq!(d[0].skb.model.start, Some(reason::GRE_CSUM));
    }

    #[test]
    fn sequence_flag_and_version_flush() {
        for (word, why) in [(0x3000u16, reason::GRE_FLAGS), (0x2001, reason::GRE_FLAGS)] {
            let mut f = gre4(|_| Some(42), |_| None);
            f[2][34..36].copy_from_slice(&word.to_be_bytes());
            let d = run(&LINUX_6_18, f);
            assert_eq!(d[0].skb.model.start, Some(why));
            assert_eq!(d[0].skb.model.frame, 2);
        }
    }

    #[test]
    fn inner_mac_change_starts_a_new_skb() {
        let f: Vec<Vec<u8>> = (0..4u32)
            .map(|k| {
                let inner = Tcp4 {
                    seq: 1000 + k * 1400,
                    id: 1 + k as u16,
                    src_mac: [2, 0, 0, 0, 0, if k >= 2 { 9 } else { 1 }],
                    ..Tcp4::default()
                };
                Outer {
                    id: 100 + k as u16,
                    ..Outer::default()
                }
                .gre_teb(Some(42), None, &inner.build())
            })
            .collect();
        let d = run(&LINUX_6_18, f);
        let starts: Vec<Option<Reason>> = d.iter().map(|x| x.skb.model.start).collect();
        assert_eq!(
            starts,
            vec![Some(reason::FLOW_NEW), Some(reason::TEB_INNER_MAC)]
        );
        assert_eq!(lens(&d), vec![96 + 2800, 96 + 2800]);
    }
}
