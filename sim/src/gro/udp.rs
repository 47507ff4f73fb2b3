//! UDP GRO: net/ipv4/udp_offload.c: udp4_gro_receive, udp_gro_receive (the tunnel branch
//! and the plain one), udp_gro_receive_segment, udp4_gro_complete, udp_gro_complete,
//! udp_gro_complete_segment; net/core/gro.c: skb_gro_receive_list; and VXLAN
//! (drivers/net/vxlan/vxlan_core.c: vxlan_gro_prepare_receive, vxlan_gro_receive,
//! vxlan_gro_complete). The IPv6 entry points are `udp6` (net/ipv6/udp_offload.c).
//!
//! Plain UDP merges only for a local socket with UDP_GRO, or on a device with
//! NETIF_F_GRO_UDP_FWD (no local socket) or NETIF_F_GRO_FRAGLIST; a tap has none of them
//! by default, so such frames flush (`udp:no-gro`). docs/gro.md#udp-gro.

use super::core::{call_l3_receive, checksum_validate, postpull_rcsum, skb_gro_receive, L3Handler};
use super::eth::eth_gro_complete;
use super::ipv4::gro_compute_pseudo;
use super::rules::UdpCompleteIph;
use super::{reason, GroConfig, Reason, SkBuff, GRO_RECURSION_LIMIT};
use crate::consts::IPPROTO_UDP;
use crate::skb::{gso, IpSummed};
use crate::wire::checksum as csum;
use crate::wire::udp::{Packet as UdpView, HEADER_LEN as UDP_HLEN};
use crate::wire::VxlanPacket;

use crate::consts::VXLAN_HLEN;
/// UDP_GRO_CNT_MAX (net/ipv4/udp_offload.c): segments per merged skb.
pub const UDP_GRO_CNT_MAX: u16 = 64;
/// GRO_LEGACY_MAX_SIZE as skb_gro_receive_list tests it (`p->len + skb->len >= 65536`).
const FRAGLIST_MAX: usize = 65536;

/// What the socket lookup of udp4_gro_receive / udp6_gro_receive finds for a datagram
/// (udp4_gro_lookup_skb, udp6_gro_lookup_skb).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpSock {
    /// No socket is bound to the destination port.
    None,
    /// A UDP tunnel socket with a gro_receive (a VXLAN device's).
    Tunnel,
    /// A socket that set UDP_GRO (udp_sk(sk)->gro_enabled).
    GroEnabled,
}

/// The header at `off` of `skb`'s linear part, through the wire view.
pub(crate) fn udp_hdr(skb: &SkBuff, off: usize) -> Option<UdpView<&[u8]>> {
    skb.hdr(off, UDP_HLEN).map(UdpView::new_unchecked)
}

/// uh->len = the rest of the skb from the UDP header at `nhoff` (the low 16 bits).
fn set_udp_len(skb: &mut SkBuff, nhoff: usize) {
    let len = (skb.len() - nhoff) as u16;
    if let Some(h) = skb.hdr_mut(nhoff, UDP_HLEN) {
        UdpView::new_unchecked(h).set_len(len);
    }
}

/// uh->check of the UDP header at `nhoff`.
pub(crate) fn set_udp_check(skb: &mut SkBuff, nhoff: usize, check: u16) {
    if let Some(h) = skb.hdr_mut(nhoff, UDP_HLEN) {
        UdpView::new_unchecked(h).set_checksum(check);
    }
}

/// udp4_gro_lookup_skb: a VXLAN socket, or a UDP_GRO socket, bound to `dport`.
pub fn udp4_gro_lookup_skb(cfg: &GroConfig, dport: u16) -> UdpSock {
    if cfg.vxlan_ports.contains(&dport) {
        UdpSock::Tunnel
    } else if cfg.udp_gro_ports.contains(&dport) {
        UdpSock::GroEnabled
    } else {
        UdpSock::None
    }
}

/// The shared head of udp4_gro_receive and udp6_gro_receive: verify a non-zero checksum
/// against `psum` (skb_gro_checksum_validate_zero_check, then try_convert) unless a
/// flush is already pending. Returns the checksum field, or None when it flushed.
pub(crate) fn udp_gro_validate(skb: &mut SkBuff, psum: u32) -> Option<u16> {
    let off = skb.cb.data_offset;
    let Some(check) = udp_hdr(skb, off).map(|u| u.checksum()) else {
        skb.flush(reason::UDP_NO_GRO);
        return None;
    };
    // Don't bother verifying the checksum if we're going to flush anyway.
    if !skb.cb.flush {
        if checksum_validate(skb, true, check, psum) {
            skb.flush(reason::UDP_CSUM);
            return None;
        }
        if check != 0 && skb.cb.csum_cnt == 0 && !skb.cb.csum_valid {
            // skb_gro_checksum_try_convert
            skb.cb.csum = u32::from(!csum::fold(psum));
            skb.cb.csum_valid = true;
        }
    }
    Some(check)
}

/// udp4_gro_receive: verify a non-zero checksum, find the socket, udp_gro_receive.
pub fn udp4_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let psum = gro_compute_pseudo(skb, IPPROTO_UDP);
    let check = udp_gro_validate(skb, psum)?;
    let off = skb.cb.data_offset;
    let dport = udp_hdr(skb, off).map_or(0, |u| u.dst_port());
    let sk = udp4_gro_lookup_skb(cfg, dport);
    udp_gro_receive(cfg, head, skb, check, sk)
}

/// udp_gro_receive: the tunnel branch (a socket with gro_receive), or plain UDP through
/// udp_gro_receive_segment when the socket has UDP_GRO, or there is no socket and the
/// device has NETIF_F_GRO_UDP_FWD, or the device has NETIF_F_GRO_FRAGLIST (is_flist
/// unless the socket has UDP_GRO); otherwise a flush.
pub(crate) fn udp_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
    check: u16,
    sk: UdpSock,
) -> Option<usize> {
    let off = skb.cb.data_offset;
    skb.cb.is_flist = false;
    if sk != UdpSock::Tunnel {
        if !cfg.rules.udp_gro_segment {
            skb.flush(reason::UDP_NO_GRO);
            return None;
        }
        if skb.encapsulation {
            skb.flush(reason::UDP_ENCAPSULATION);
            return None;
        }
        if cfg.gro_fraglist {
            skb.cb.is_flist = sk != UdpSock::GroEnabled;
        }
        let segment = (sk == UdpSock::None && cfg.gro_udp_fwd)
            || sk == UdpSock::GroEnabled
            || skb.cb.is_flist;
        if !segment {
            skb.flush(reason::UDP_NO_GRO);
            return None;
        }
        // call_gro_receive(udp_gro_receive_segment, head, skb)
        skb.cb.recursion += 1;
        if skb.cb.recursion >= GRO_RECURSION_LIMIT {
            skb.flush(reason::RECURSION);
            return None;
        }
        skb.cb.depth += 1;
        return udp_gro_receive_segment(cfg, head, skb);
    }
    if skb.cb.encap_mark {
        skb.flush(reason::UDP_ENCAP);
        return None;
    }
    if check != 0
        && skb.ip_summed != IpSummed::Partial
        && skb.cb.csum_cnt == 0
        && !skb.cb.csum_valid
    {
        skb.flush(reason::UDP_CSUM);
        return None;
    }
    // Mark that this skb passed once through the tunnel GRO layer.
    skb.cb.encap_mark = true;
    let ports = udp_hdr(skb, off).map_or((0, 0), |uh| (uh.src_port(), uh.dst_port()));
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        // Match ports, and either both checksums are zero or both are not (a held skb
        // too short for the header reads as zeroes).
        let (ports2, check2) = udp_hdr(p, off).map_or(((0, 0), 0), |uh2| {
            ((uh2.src_port(), uh2.dst_port()), uh2.checksum())
        });
        if ports2 != ports || (check2 == 0) != (check == 0) {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::UDP_PORTS);
            skb.saw_mismatch(reason::UDP_PORTS);
        }
    }
    skb.cb.data_offset += UDP_HLEN;
    postpull_rcsum(skb, off, UDP_HLEN);
    // call_gro_receive_sk(udp_sk(sk)->gro_receive = vxlan_gro_receive)
    skb.cb.recursion += 1;
    if skb.cb.recursion >= GRO_RECURSION_LIMIT {
        skb.flush(reason::RECURSION);
        return None;
    }
    skb.cb.depth += 1;
    vxlan_gro_receive(cfg, head, skb)
}

/// The IP-level check of udp_gro_receive_segment on a held skb: 6.10 on,
/// gro_receive_network_flush for the outer (or only) and the inner level (the same
/// include/net/gro.h rules tcp_gro_receive applies); before, the held skb's flush as
/// inet_gro_receive / ipv6_gro_receive left it ("net: gro: add flush check in
/// udp_gro_receive_segment", v6.9, backported to 6.1.y).
fn network_flush(cfg: &GroConfig, skb: &SkBuff, p: &mut SkBuff) -> Option<Reason> {
    if !cfg.rules.ip_id.at_transport() {
        return p
            .cb
            .flush
            .then(|| p.cb.flush_reason.unwrap_or(reason::IPV4_ID));
    }
    let (outer, inner_nh, encap) = (
        p.cb.network_offsets[0],
        p.cb.network_offsets[1],
        p.cb.encap_mark,
    );
    let mut level = |nh: usize, inner: bool| {
        // __gro_receive_network_flush: the rule of the header's version.
        let v6 = skb.hdr(nh, 1).is_some_and(|b| b[0] >> 4 == 6);
        if v6 {
            super::ipv6::network_flush(cfg, skb, p, nh)
        } else {
            super::ipv4::network_flush(cfg, skb, p, nh, inner)
        }
    };
    let first = level(outer, false);
    let second = if encap { level(inner_nh, true) } else { None };
    first.or(second)
}

/// udp_gro_receive_segment: plain UDP GRO. The segment needs a non-zero checksum and a
/// UDP length that is the rest of the packet; the first held skb with the same ports
/// decides: an IP-level flush or a longer segment completes it (this one is held anew);
/// otherwise this one merges (as frags, or chained on frag_list when is_flist), and a
/// shorter segment, a failed merge or UDP_GRO_CNT_MAX completes it.
fn udp_gro_receive_segment(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let off = skb.cb.data_offset;
    let Some((ports, ulen, check)) = udp_hdr(skb, off).map(|u| {
        (
            (u.src_port(), u.dst_port()),
            usize::from(u.len()),
            u.checksum(),
        )
    }) else {
        skb.flush(reason::UDP_LEN);
        return None;
    };
    // Requires a non-zero checksum, for symmetry with GSO.
    if check == 0 {
        skb.flush(reason::UDP_ZERO_CSUM);
        return None;
    }
    // Do not deal with padded or malicious packets.
    if ulen <= UDP_HLEN || ulen != skb.gro_len() {
        skb.flush(reason::UDP_LEN);
        return None;
    }
    skb.cb.data_offset += UDP_HLEN;
    for i in (0..head.len()).rev() {
        let p = &mut head[i];
        if !p.cb.same_flow {
            continue;
        }
        // udp_hdr(p): the transport header the IP layer set.
        let th2 = p.offset_from_data(p.transport_header).unwrap_or(off);
        let Some((ports2, ulen2)) =
            udp_hdr(p, th2).map(|u| ((u.src_port(), u.dst_port()), usize::from(u.len())))
        else {
            p.cb.same_flow = false;
            continue;
        };
        // Match ports only, as the checksum is always non-zero.
        if ports2 != ports {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::UDP_PORTS);
            skb.saw_mismatch(reason::UDP_PORTS);
            continue;
        }
        if skb.cb.is_flist != p.cb.is_flist {
            skb.flush(reason::UDP_FLIST);
            return Some(i);
        }
        let flush = network_flush(cfg, skb, p);
        let merged = match flush {
            Some(r) => Err(r),
            None if ulen > ulen2 => Err(reason::UDP_BIGGER),
            None if skb.cb.is_flist => {
                if skb.ip_summed != p.ip_summed || skb.csum_level != p.csum_level {
                    skb.flush(reason::UDP_FLIST_CSUM);
                    return None;
                }
                // skb_gro_receive_network_offset: network_offsets[encap_mark].
                let nh = skb.cb.network_offsets[usize::from(skb.cb.encap_mark)];
                skb.set_network_header(nh);
                skb_gro_receive_list(p, skb)
            }
            None => {
                postpull_rcsum(skb, off, UDP_HLEN);
                skb_gro_receive(cfg, p, skb)
            }
        };
        match merged {
            Err(r) => skb.cb.nomerge = Some(r),
            Ok(()) if ulen != ulen2 => skb.cb.merged_flush = Some(reason::UDP_SHORT),
            Ok(()) if p.cb.count >= UDP_GRO_CNT_MAX => {
                skb.cb.merged_flush = Some(reason::UDP_CNT_MAX)
            }
            Ok(()) => return None,
        }
        return Some(i);
    }
    // A mismatch, but never a need to flush.
    None
}

/// net/core/gro.c: skb_gro_receive_list: chain `skb` on p's frag_list with its headers
/// pulled (they stay in its headroom for skb_segment_list), whatever the frags.
pub fn skb_gro_receive_list(p: &mut SkBuff, skb: &mut SkBuff) -> Result<(), Reason> {
    if p.kernel_len() + skb.kernel_len() >= FRAGLIST_MAX {
        return Err(reason::GRO_64K);
    }
    let offset = skb.cb.data_offset;
    let mut chained = std::mem::take(skb);
    skb.cb = std::mem::take(&mut chained.cb);
    skb.model = std::mem::take(&mut chained.model);
    chained.pull_across(offset);
    p.push_frag_list(chained);
    p.cb.count += 1;
    p.model.merged.push(skb.model.frame);
    skb.cb.same_flow = true;
    Ok(())
}

/// vxlan_gro_receive: compare the VXLAN flags and VNI words, pull 8 bytes, then
/// eth_gro_receive (the inner Ethernet header; VXLAN calls it directly, so no
/// ETH_P_TEB offload is needed).
fn vxlan_gro_receive(cfg: &GroConfig, head: &mut [Box<SkBuff>], skb: &mut SkBuff) -> Option<usize> {
    let off = skb.cb.data_offset;
    let Some(vh) = skb.hdr(off, VXLAN_HLEN).map(VxlanPacket::new_unchecked) else {
        skb.flush(reason::VXLAN_VNI);
        return None;
    };
    // vx_flags and vx_vni, whole words.
    let words = (vh.flags_word(), vh.vni_word());
    postpull_rcsum(skb, off, VXLAN_HLEN);
    skb.cb.data_offset += VXLAN_HLEN;
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        let words2 = p
            .hdr(off, VXLAN_HLEN)
            .map(VxlanPacket::new_unchecked)
            .map_or((0, 0), |vh2| (vh2.flags_word(), vh2.vni_word()));
        if words2 != words {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::VXLAN_VNI);
            skb.saw_mismatch(reason::VXLAN_VNI);
        }
    }
    call_l3_receive(cfg, L3Handler::Teb, head, skb)
}

/// The fraglist completion of udp4_gro_complete / udp6_gro_complete ("do fraglist only
/// if there is no outer UDP encap"): uh->len, SKB_GSO_FRAGLIST|SKB_GSO_UDP_L4,
/// gso_segs, one more CHECKSUM_UNNECESSARY level; the UDP checksum is left as it came.
/// Returns false when the skb is not a fraglist one.
pub(crate) fn udp_gro_complete_fraglist(skb: &mut SkBuff, nhoff: usize) -> bool {
    if !skb.cb.is_flist || skb.cb.encap_mark {
        return false;
    }
    set_udp_len(skb, nhoff);
    skb.gso_type |= gso::FRAGLIST | gso::UDP_L4;
    skb.gso_segs = skb.cb.count;
    // __skb_incr_checksum_unnecessary
    if skb.ip_summed == IpSummed::Unnecessary {
        skb.csum_level = (skb.csum_level + 1).min(3);
    } else {
        skb.ip_summed = IpSummed::Unnecessary;
        skb.csum_level = 0;
    }
    true
}

/// udp4_gro_complete: the fraglist case, else a non-zero checksum becomes
/// ~udp_v4_check(len, saddr, daddr, 0), then udp_gro_complete.
pub fn udp4_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    if skb.headlen() < nhoff + UDP_HLEN || udp_gro_complete_fraglist(skb, nhoff) {
        return;
    }
    let nh = match cfg.rules.udp_complete_iph {
        UdpCompleteIph::NetworkOffsets => skb.cb.network_offsets[usize::from(skb.encapsulation)],
        UdpCompleteIph::SkbNetworkHeader => skb.offset_from_data(skb.network_header).unwrap_or(0),
    };
    let len = skb.len() - nhoff;
    let check = udp_hdr(skb, nhoff).map_or(0, |u| u.checksum());
    if check != 0 {
        let a = |o: usize| -> [u8; 4] {
            skb.hdr(nh + o, 4)
                .and_then(|b| b.try_into().ok())
                .unwrap_or([0; 4])
        };
        let c = csum::fold(csum::pseudo_v4(a(12), a(16), IPPROTO_UDP, len));
        set_udp_check(skb, nhoff, c);
    }
    let dport = udp_hdr(skb, nhoff).map_or(0, |u| u.dst_port());
    let tunnel = udp4_gro_lookup_skb(cfg, dport) == UdpSock::Tunnel;
    udp_gro_complete(cfg, skb, nhoff, check, tunnel);
}

/// udp_gro_complete: uh->len, then the tunnel's gro_complete (`tunnel`: the lookup
/// found a socket with gro_complete) or udp_gro_complete_segment.
pub(crate) fn udp_gro_complete(
    cfg: &GroConfig,
    skb: &mut SkBuff,
    nhoff: usize,
    check: u16,
    tunnel: bool,
) {
    set_udp_len(skb, nhoff);
    if tunnel {
        skb.gso_type = if check != 0 {
            gso::UDP_TUNNEL_CSUM
        } else {
            gso::UDP_TUNNEL
        };
        skb.cb.encap_mark = false;
        skb.encapsulation = true;
        // vxlan_gro_complete: eth_gro_complete after the VXLAN header (it sets
        // inner_mac_header since encapsulation is set).
        eth_gro_complete(cfg, skb, nhoff + UDP_HLEN + VXLAN_HLEN);
    } else {
        udp_gro_complete_segment(skb, nhoff);
    }
}

/// udp_gro_complete_segment: CHECKSUM_PARTIAL at the UDP header, gso_segs = count,
/// SKB_GSO_UDP_L4.
fn udp_gro_complete_segment(skb: &mut SkBuff, thoff: usize) {
    skb.csum_start = skb.data_offset() + thoff;
    skb.csum_offset = 6;
    skb.ip_summed = IpSummed::Partial;
    skb.gso_segs = skb.cb.count;
    skb.gso_type |= gso::UDP_L4;
    if skb.encapsulation {
        skb.set_inner_transport_header(thoff);
    }
}

#[cfg(test)]
mod tests {
    use super::super::frames::{Encapsulate, Outer, Tcp4};
    use super::super::reason;
    use super::super::testutil::{lens, run};
    use crate::profile::{LINUX_3_12, LINUX_6_18};

    fn vx(vni: impl Fn(usize) -> u32, dport_ok: bool) -> Vec<Vec<u8>> {
        Tcp4 {
            payload: 1350,
            ..Tcp4::default()
        }
        .stream(4)
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let mut v = Outer {
                id: 1 + k as u16,
                ..Outer::default()
            }
            .vxlan(50000, vni(k), false, f);
            if !dport_ok {
                v[36..38].copy_from_slice(&4790u16.to_be_bytes());
            }
            v
        })
        .collect()
    }

    #[test]
    fn vni_mismatch_and_unknown_port() {
        let d = run(&LINUX_6_18, vx(|k| if k == 2 { 43 } else { 42 }, true));
        assert_eq!(d[1].skb.model.start, Some(reason::VXLAN_VNI));
        let d = run(&LINUX_6_18, vx(|_| 42, false));
        assert_eq!(lens(&d), vec![1454; 4]);
        assert_eq!(d[0].skb.model.start, Some(reason::UDP_NO_GRO));
        // 3.12 had no UDP GRO handler at all.
        let d = run(&LINUX_3_12, vx(|_| 42, true));
        assert_eq!(d[0].skb.model.start, Some(reason::IPV4_NO_L4));
    }

    #[test]
    fn bad_outer_udp_checksum_flushes() {
        let mut f: Vec<Vec<u8>> = Tcp4 {
            payload: 1350,
            ..Tcp4::default()
        }
        .stream(3)
        .encapsulated(1, |_, o, x| o.vxlan(50000, 42, true, x));
        f[1][40] ^= 0x01;
        let d = run(&LINUX_6_18, f);
        assert_eq!(d[0].skb.model.start, Some(reason::UDP_CSUM));
    }

    /// udp4_gro_complete writes ~udp_v4_check(len, saddr, daddr, 0) into a non-zero outer
    /// UDP checksum: 6.18 takes the addresses from the outer header (network_offsets),
    /// 6.1 from ip_hdr(skb), which inet_gro_receive left on the inner header. The guest
    /// showed exactly this difference (tap-gro/vxlan-udp-csum).
    #[test]
    fn outer_udp_checksum_seed_comes_from_the_outer_header_only_since_6_8() {
        use crate::profile::LINUX_6_1;
        let inner = Tcp4 {
            payload: 1350,
            ..Tcp4::default()
        };
        let outer = Outer::default();
        assert_ne!(inner.saddr, outer.saddr);
        let f: Vec<Vec<u8>> = inner
            .stream(4)
            .encapsulated(1, |_, o, x| o.vxlan(50000, 42, true, x));
        assert_eq!(
            (outer.saddr, outer.daddr),
            ([192, 168, 0, 1], [192, 168, 0, 2])
        );
        assert_eq!((inner.saddr, inner.daddr), ([10, 0, 0, 1], [10, 0, 0, 2]));
        // The merged UDP length: UDP 8 + VXLAN 8 + inner Ethernet 14 + IPv4 20 + TCP 20 +
        // 4 x 1350 payload = 5470 (0x155e). The expected checks, by hand: the RFC 768
        // pseudo-header (saddr, daddr, zero and protocol 17, UDP length) summed in 16-bit
        // one's complement (RFC 1071) and folded, not inverted (~udp_v4_check of a zero
        // sum is the folded pseudo-header sum):
        //   outer: c0a8 + 0001 + c0a8 + 0002 + 0011 + 155e = 1_96c2 -> 96c2 + 1 = 0x96c3
        //   inner: 0a00 + 0001 + 0a00 + 0002 + 0011 + 155e = 0x2972 (no carry)
        for (profile, want) in [(&LINUX_6_18, 0x96c3), (&LINUX_6_1, 0x2972)] {
            let d = run(profile, f.clone());
            assert_eq!(d.len(), 1, "{}: one merged skb", profile.name);
            let bytes = d[0].skb.to_vec();
            // Outer Ethernet 14 + IPv4 20: UDP at 34, its length at 38, checksum at 40.
            let udp_len = usize::from(u16::from_be_bytes([bytes[38], bytes[39]]));
            assert_eq!((udp_len, bytes.len() - 34), (5470, 5470));
            assert_eq!(
                u16::from_be_bytes([bytes[40], bytes[41]]),
                want,
                "{}",
                profile.name
            );
        }
    }
}
