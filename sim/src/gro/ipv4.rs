//! IPv4 GRO: net/ipv4/af_inet.c: inet_gro_receive / inet_gro_complete, and the per-level
//! TTL/TOS/DF/ID rule of each profile (6.18 include/net/gro.h: inet_gro_flush; the 4.19
//! flush_id/is_atomic pair; the 3.12 `held id + count` rule).

use super::core::checksum_validate_needed;
use super::rules::IpIdRule;
use super::{gre, reason, tcp, udp, GroConfig, Reason, SkBuff, GRO_RECURSION_LIMIT};
use crate::wire::checksum as csum;
use crate::wire::ipv4::{HEADER_LEN as IPV4_HLEN, IP_MF, IP_OFFSET};
use crate::wire::Ipv4Packet;

use crate::consts::{IPPROTO_GRE, IPPROTO_TCP, IPPROTO_UDP};
pub use crate::wire::ipv4::IP_DF;
/// IP_MF | IP_OFFSET: ip_is_fragment.
const IP_MF_OFFSET: u16 = IP_MF | IP_OFFSET;

/// inet_offloads[proto]->gro_receive exists in this kernel.
fn has_l4(cfg: &GroConfig, proto: u8) -> bool {
    match proto {
        IPPROTO_TCP => true,
        IPPROTO_UDP => cfg.rules.udp_tunnel_gro,
        IPPROTO_GRE => cfg.rules.gre_gro,
        p => super::ipip::is_ipxip(cfg, p),
    }
}

/// The view of the fixed IPv4 header at `off` (from data), if the linear part holds it.
pub(crate) fn iph_at(skb: &SkBuff, off: usize) -> Option<Ipv4Packet<&[u8]>> {
    skb.hdr(off, IPV4_HLEN).map(Ipv4Packet::new_unchecked)
}

fn pflush(p: &mut SkBuff, why: Reason) {
    p.cb.flush = true;
    if p.cb.flush_reason.is_none() {
        p.cb.flush_reason = Some(why);
    }
}

/// The soft flush: tot_len must be the rest of the packet; no frag_off bit but DF
/// ([3.12]: the word must be exactly IP_DF).
fn ipv4_soft_flush(
    rule: IpIdRule,
    iph: &Ipv4Packet<[u8; IPV4_HLEN]>,
    gro_len: usize,
) -> Option<Reason> {
    let tot_len = usize::from(iph.total_len());
    let frag = iph.frag_off();
    let mut soft = None;
    if tot_len != gro_len {
        soft = Some(reason::IPV4_LEN);
    }
    if rule == IpIdRule::Increment312 {
        if frag != IP_DF {
            soft = soft.or(Some(if frag & IP_DF == 0 {
                reason::IPV4_DF
            } else {
                reason::IPV4_FRAG
            }));
        }
    } else if frag & !IP_DF != 0 {
        soft = soft.or(Some(reason::IPV4_FRAG));
    }
    soft
}

/// inet_gro_receive's checks of a held skb `p` of the same addresses, by kernel
/// generation: TOS, TTL, DF and the IP ID (flush_id from 4.19). False when `p` is no
/// longer the same flow.
fn ipv4_held_checks(
    rule: IpIdRule,
    p: &mut SkBuff,
    skb: &mut SkBuff,
    iph: &Ipv4Packet<[u8; IPV4_HLEN]>,
    // The held header's TTL, TOS, ID and frag_off.
    held: (u8, u8, u16, u16),
    skb_atomic: bool,
) -> bool {
    let (ttl2, tos2, id2, frag2) = held;
    let (id, frag) = (iph.ident(), iph.frag_off());
    match rule {
        IpIdRule::Increment312 => {
            if tos2 != iph.tos() {
                // [3.12]: TOS is part of the flow.
                p.cb.same_flow = false;
                p.cb.mismatch = Some(reason::IPV4_TOS);
                skb.saw_mismatch(reason::IPV4_TOS);
                return false;
            }
            if ttl2 != iph.ttl() {
                pflush(p, reason::IPV4_TTL);
            }
            if id2.wrapping_add(p.cb.count) != id {
                pflush(p, reason::IPV4_ID);
            }
        }
        IpIdRule::Atomic419 => {
            if ttl2 != iph.ttl() {
                pflush(p, reason::IPV4_TTL);
            }
            if tos2 != iph.tos() {
                pflush(p, reason::IPV4_TOS);
            }
            if (frag ^ frag2) & IP_DF != 0 {
                pflush(p, reason::IPV4_DF);
            }
            // Save the IP ID check for the transport layer (flush_id).
            let mut flush_id = id.wrapping_sub(id2);
            if !p.cb.is_atomic || frag & IP_DF == 0 {
                flush_id ^= p.cb.count;
                flush_id = if flush_id != 0 { 0xffff } else { 0 };
            }
            if skb_atomic {
                p.cb.flush_id = flush_id;
            } else {
                p.cb.flush_id |= flush_id;
            }
        }
        IpIdRule::PerLevel618 | IpIdRule::PerLevel610 => {}
    }
    true
}

/// inet_gro_receive.
pub fn inet_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let off = skb.cb.data_offset;
    let Some(iph) = skb.hdr(off, IPV4_HLEN) else {
        skb.flush(reason::IPV4_HDR);
        return None;
    };
    // A copy, so the skb's control block can change while the header is read.
    let iph = Ipv4Packet::new_unchecked(<[u8; IPV4_HLEN]>::try_from(iph).unwrap_or_default());
    let proto = iph.protocol();
    if !has_l4(cfg, proto) {
        skb.flush(reason::IPV4_NO_L4);
        return None;
    }
    // `*(u8 *)iph != 0x45`: version 4, IHL 5 (no options).
    if iph.version() != 4 || iph.ihl() != 5 {
        skb.flush(reason::IPV4_IHL);
        return None;
    }
    let frag = iph.frag_off();
    if cfg.rules.ip_fragment_check && frag & IP_MF_OFFSET != 0 {
        skb.flush(reason::IPV4_FRAG);
        return None;
    }
    // ip_fast_csum(iph, 5): IHL is 5 here, so the view sums exactly these 20 bytes.
    if !iph.verify_checksum() {
        skb.flush(reason::IPV4_CSUM);
        return None;
    }
    skb.cb.proto = proto;
    let rule = cfg.rules.ip_id;
    let soft = ipv4_soft_flush(rule, &iph, skb.gro_len());
    let skb_atomic = skb.cb.is_atomic;
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        let Some(q) = iph_at(p, off) else {
            p.cb.same_flow = false;
            continue;
        };
        // The above works because, except for the innermost layer, only packets with
        // the same header lengths are aggregated.
        if q.protocol() != proto || q.src_addr() != iph.src_addr() || q.dst_addr() != iph.dst_addr()
        {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::IPV4_ADDR);
            skb.saw_mismatch(reason::IPV4_ADDR);
            continue;
        }
        let held = (q.ttl(), q.tos(), q.ident(), q.frag_off());
        if !ipv4_held_checks(rule, p, skb, &iph, held, skb_atomic) {
            continue;
        }
        if !rule.at_transport() {
            if let Some(r) = soft {
                pflush(p, r);
            }
        }
    }
    if let Some(r) = soft {
        skb.flush(r);
    }
    let level = usize::from(skb.cb.encap_mark);
    skb.cb.network_offsets[level] = off;
    skb.set_network_header(off);
    if rule == IpIdRule::Atomic419 {
        skb.cb.is_atomic = frag & IP_DF != 0;
    }
    skb.cb.data_offset += IPV4_HLEN;
    skb.set_transport_header(skb.cb.data_offset);
    skb.cb.recursion += 1;
    if skb.cb.recursion >= GRO_RECURSION_LIMIT {
        skb.flush(reason::RECURSION);
        return None;
    }
    skb.cb.depth += 1;
    match proto {
        IPPROTO_TCP => tcp::tcp4_gro_receive(cfg, head, skb),
        IPPROTO_UDP => udp::udp4_gro_receive(cfg, head, skb),
        IPPROTO_GRE => gre::gre_gro_receive(cfg, head, skb),
        p => super::ipip::ipxip_gro_receive(cfg, head, skb, p),
    }
}

/// inet_gro_compute_pseudo for the innermost IP header seen so far.
pub fn gro_compute_pseudo(skb: &SkBuff, proto: u8) -> u32 {
    let nh = skb.cb.network_offsets[usize::from(skb.cb.encap_mark)];
    let (saddr, daddr) = addrs(skb, nh);
    csum::pseudo_v4(saddr, daddr, proto, skb.gro_len())
}

/// saddr and daddr of the IPv4 header at `nh` (offset from data), as the pseudo-header
/// sums take them; zeroes where the skb holds no header.
pub(crate) fn addrs(skb: &SkBuff, nh: usize) -> ([u8; 4], [u8; 4]) {
    iph_at(skb, nh).map_or(([0; 4], [0; 4]), |h| {
        (h.src_addr().octets(), h.dst_addr().octets())
    })
}

/// Whether the carried or software checksum must be verified here (for tests).
pub fn needs_validation(skb: &SkBuff) -> bool {
    checksum_validate_needed(skb, false, 0)
}

/// inet_gro_flush's first test: all fields must match except length, ID and checksum
/// (TTL, TOS, DF), new header `a` against held `b`.
fn ttl_tos_df(a: &Ipv4Packet<&[u8]>, b: &Ipv4Packet<&[u8]>) -> Option<Reason> {
    if a.ttl() != b.ttl() {
        Some(reason::IPV4_TTL)
    } else if a.tos() != b.tos() {
        Some(reason::IPV4_TOS)
    } else if a.dont_frag() != b.dont_frag() {
        Some(reason::IPV4_DF)
    } else {
        None
    }
}

/// The IP-level check of tcp_gro_receive (gro_receive_network_flush) for one IP header
/// at `nh` in both the new skb and the held p: the first reason to flush, if any.
pub fn network_flush(
    cfg: &GroConfig,
    skb: &SkBuff,
    p: &mut SkBuff,
    nh: usize,
    inner: bool,
) -> Option<Reason> {
    let (Some(a), Some(b)) = (iph_at(skb, nh), iph_at(p, nh)) else {
        return Some(reason::IPV4_HDR);
    };
    match cfg.rules.ip_id {
        IpIdRule::PerLevel618 => {
            // include/net/gro.h: inet_gro_flush(iph = new, iph2 = held, p, inner).
            if let Some(r) = ttl_tos_df(&a, &b) {
                return Some(r);
            }
            let id = a.ident();
            let id2 = b.ident();
            let ipid_offset = id.wrapping_sub(id2);
            let count = p.cb.count;
            let bit = 1u8 << u8::from(inner);
            if count == 1 && ipid_offset == 0 {
                p.cb.ip_fixedid |= bit;
            }
            let fixed = p.cb.ip_fixedid & bit != 0;
            let want = if fixed { 0 } else { count };
            (ipid_offset != want).then_some(reason::IPV4_ID)
        }
        IpIdRule::PerLevel610 => {
            // 6.10's inet_gro_flush(iph = new, iph2 = held, p, outer).
            if let Some(r) = ttl_tos_df(&a, &b) {
                return Some(r);
            }
            let df = a.dont_frag();
            // `outer` is the first level of an encapsulated flow.
            if !inner && p.cb.encap_mark && df {
                return None;
            }
            let id = a.ident();
            let id2 = b.ident();
            let ipid_offset = id.wrapping_sub(id2);
            let count = p.cb.count;
            if count == 1 && df && ipid_offset == 0 {
                p.cb.ip_fixedid = 1;
            }
            let want = if p.cb.ip_fixedid != 0 { 0 } else { count };
            (ipid_offset != want).then_some(reason::IPV4_ID)
        }
        // 4.19 and 3.12 did these checks in inet_gro_receive (p->flush, flush_id).
        _ => None,
    }
}

/// inet_gro_complete(skb, nhoff): tot_len = bytes from this header to the end, the
/// header checksum updated with csum_replace2, then the L4 complete.
pub fn inet_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    if skb.headlen() < nhoff + IPV4_HLEN {
        return;
    }
    if skb.encapsulation {
        skb.set_inner_network_header(nhoff);
    }
    // iph_set_totlen: 0 past IP_MAX_MTU (BIG TCP).
    let new = super::bigtcp::iph_totlen(skb.len() - nhoff);
    let Some(h) = skb.hdr_mut(nhoff, IPV4_HLEN) else {
        return;
    };
    let mut iph = Ipv4Packet::new_unchecked(h);
    let old = iph.total_len();
    iph.set_total_len(new);
    iph.set_checksum(csum::csum_replace2(iph.checksum(), old, new));
    let proto = iph.protocol();
    let thoff = nhoff + IPV4_HLEN;
    match proto {
        IPPROTO_TCP => tcp::tcp4_gro_complete(cfg, skb, thoff),
        IPPROTO_UDP => udp::udp4_gro_complete(cfg, skb, thoff),
        IPPROTO_GRE => gre::gre_gro_complete(cfg, skb, thoff),
        p if super::ipip::is_ipxip(cfg, p) => {
            super::ipip::ipxip_gro_complete(cfg, skb, thoff, p, false)
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{five, lens, run};
    use super::super::{reason, Reason};
    use crate::profile::{LINUX_3_12, LINUX_4_19, LINUX_6_18};

    const ONE: usize = 1454;
    const TWO: usize = 54 + 2800;

    /// Rewrite the IPv4 header of a built frame and fix its checksum.
    fn patch(f: &mut [u8], edit: impl Fn(&mut [u8])) {
        edit(&mut f[14..34]);
        f[24] = 0;
        f[25] = 0;
        let c = crate::wire::checksum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }

    #[test]
    fn ttl_tos_df_id_split_the_flow_on_every_profile_but_tos_on_3_12() {
        type Edit = fn(&mut super::super::frames::Tcp4);
        let cases: [(Edit, Reason); 4] = [
            (|s| s.ttl = 9, reason::IPV4_TTL),
            (|s| s.tos = 4, reason::IPV4_TOS),
            (|s| s.df = false, reason::IPV4_DF),
            (|s| s.id += 5, reason::IPV4_ID),
        ];
        for (edit, why) in cases {
            for p in [&LINUX_6_18, &LINUX_4_19] {
                let d = run(p, five(edit));
                // 0-1 complete, 2 is held alone, 3 differs from it again and restarts.
                assert_eq!(lens(&d), vec![TWO, ONE, TWO], "{} {}", p.name, why.name);
                assert_eq!(d[1].skb.model.start, Some(why), "{} {}", p.name, why.name);
            }
        }
        // [3.12]: DF clear is a soft flush, ORed into p->flush: 0-1 complete, then 2
        // goes up alone.
        let d = run(&LINUX_3_12, five(|s| s.df = false));
        assert_eq!(d[1].skb.model.start, Some(reason::IPV4_DF));
        assert_eq!(lens(&d), vec![TWO, ONE, TWO]);
    }

    #[test]
    fn fragments_options_and_bad_header_checksums_go_up_before_the_held_flow() {
        type Edit = fn(&mut [u8]);
        let edits: [(Edit, Reason); 3] = [
            (|h| h[6] |= 0x20, reason::IPV4_FRAG),
            (|h| h[0] = 0x46, reason::IPV4_IHL),
            (|h| h[8] ^= 0, reason::IPV4_CSUM),
        ];
        for (edit, why) in edits {
            let mut f = five(|_| {});
            patch(&mut f[2], edit);
            if why == reason::IPV4_CSUM {
                f[2][24] ^= 0x10;
            }
            let d = run(&LINUX_6_18, f);
            // A hard flush returns before TCP: 0-1 stay held until 3 (ipv4:id, tcp:seq).
            assert_eq!(lens(&d), vec![ONE, TWO, TWO], "{}", why.name);
            assert_eq!(d[0].skb.model.start, Some(why));
        }
    }

    #[test]
    fn trailing_bytes_make_tot_len_short_of_the_frame() {
        // Segment 2: 1396 bytes of payload and 4 bytes of trailer, so its GRO length is
        // still 1400 (no mss or seq rule fires) but tot_len is 4 short.
        let mut f = five(|s| s.payload = 1396);
        f[2].extend_from_slice(&[0; 4]);
        let d = run(&LINUX_6_18, f);
        // Soft flush: skb_gro_receive refuses (-E2BIG), so 0-1 complete and 2 goes up.
        assert_eq!(lens(&d), vec![TWO, ONE, TWO]);
        assert_eq!(d[1].skb.model.start, Some(reason::IPV4_LEN));
    }

    #[test]
    fn inet_gro_complete_updates_tot_len_and_checksum_incrementally() {
        let d = run(&LINUX_6_18, five(|_| {}));
        let b = d[0].skb.to_vec();
        // 54 + 7000 - 14 = 7040 = 0x1b80; the header still verifies.
        assert_eq!(u16::from_be_bytes([b[16], b[17]]), 7040);
        assert!(crate::wire::Ipv4Packet::new_unchecked(&b[14..34]).verify_checksum());
    }

    /// Four VXLAN frames of one inner flow whose outer IDs jump (100, 200, ...), the
    /// outer header with DF as given.
    fn outer_id_jumps(df: bool) -> Vec<Vec<u8>> {
        use crate::gro::frames::{Outer, Tcp4};
        Tcp4::default()
            .stream(4)
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let o = Outer {
                    id: 100 * (k as u16 + 1),
                    df,
                    ..Outer::default()
                };
                o.vxlan(50000, 42, false, f)
            })
            .collect()
    }

    #[test]
    fn six_ten_does_not_check_the_id_of_an_outer_header_with_df() {
        use crate::profile::LINUX_6_12;
        // 6.10-6.17 inet_gro_flush: `if (flush | (outer && df)) return flush;`.
        assert_eq!(lens(&run(&LINUX_6_12, outer_id_jumps(true))).len(), 1);
        // Without DF the outer ID must still be held id + count.
        assert_eq!(lens(&run(&LINUX_6_12, outer_id_jumps(false))).len(), 4);
        // 6.18 checks every level's ID: four skbs either way.
        assert_eq!(lens(&run(&LINUX_6_18, outer_id_jumps(true))).len(), 4);
    }
}
