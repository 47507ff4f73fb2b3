//! UDP tunnel GRO: net/ipv4/udp_offload.c: udp4_gro_receive, udp_gro_receive,
//! udp4_gro_complete, udp_gro_complete; and VXLAN (drivers/net/vxlan/vxlan_core.c:
//! vxlan_gro_prepare_receive, vxlan_gro_receive, vxlan_gro_complete). Plain UDP GRO
//! (udp_gro_receive_segment) needs a GRO-enabled socket or NETIF_F_GRO_UDP_FWD /
//! NETIF_F_GRO_FRAGLIST, none of which a tap has by default: such frames flush.

use super::core::{call_l3_receive, checksum_validate, postpull_rcsum, L3Handler};
use super::csum;
use super::eth::eth_gro_complete;
use super::ipv4::{gro_compute_pseudo, IPPROTO_UDP};
use super::rules::UdpCompleteIph;
use super::{reason, GroConfig, SkBuff, GRO_RECURSION_LIMIT};
use crate::skb::{gso, IpSummed};
use crate::wire::udp::HEADER_LEN as UDP_HLEN;
use crate::wire::{UdpPacket, VxlanPacket};

pub use crate::consts::VXLAN_HLEN;

/// The UDP header at `off` (from data), if the linear part holds it.
fn uh_at(skb: &SkBuff, off: usize) -> Option<UdpPacket<&[u8]>> {
    skb.hdr(off, UDP_HLEN).map(UdpPacket::new_unchecked)
}

/// udp4_gro_receive: verify a non-zero checksum, find the tunnel socket, udp_gro_receive.
pub fn udp4_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let off = skb.cb.data_offset;
    let Some(uh) = uh_at(skb, off) else {
        skb.flush(reason::UDP_NO_GRO);
        return None;
    };
    let (check, dport) = (uh.checksum(), uh.dst_port());
    // Don't bother verifying the checksum if we're going to flush anyway.
    if !skb.cb.flush {
        let psum = gro_compute_pseudo(skb, IPPROTO_UDP);
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
    // udp4_gro_lookup_skb: a VXLAN socket bound to the destination port.
    let tunnel = cfg.vxlan_ports.contains(&dport);
    udp_gro_receive(cfg, head, skb, off, check, tunnel)
}

/// udp_gro_receive, tunnel branch.
fn udp_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
    off: usize,
    check: u16,
    tunnel: bool,
) -> Option<usize> {
    if !tunnel {
        skb.flush(reason::UDP_NO_GRO);
        return None;
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
    let ports = uh_at(skb, off).map_or((0, 0), |uh| (uh.src_port(), uh.dst_port()));
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        // Match ports, and either both checksums are zero or both are not (a held skb
        // too short for the header reads as zeroes).
        let (ports2, check2) = uh_at(p, off).map_or(((0, 0), 0), |uh2| {
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

/// udp4_gro_complete + udp_gro_complete + vxlan_gro_complete.
pub fn udp4_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    if skb.headlen() < nhoff + UDP_HLEN {
        return;
    }
    let nh = match cfg.rules.udp_complete_iph {
        UdpCompleteIph::NetworkOffsets => skb.cb.network_offsets[usize::from(skb.encapsulation)],
        UdpCompleteIph::SkbNetworkHeader => skb.offset_from_data(skb.network_header).unwrap_or(0),
    };
    let len = skb.len() - nhoff;
    // ~udp_v4_check(len, saddr, daddr, 0), computed before the header is borrowed.
    let (saddr, daddr) = super::ipv4::addrs(skb, nh);
    let seed = csum::fold(csum::pseudo_v4(saddr, daddr, IPPROTO_UDP, len));
    let Some(h) = skb.hdr_mut(nhoff, UDP_HLEN) else {
        return;
    };
    let mut uh = UdpPacket::new_unchecked(h);
    let check = uh.checksum();
    if check != 0 {
        uh.set_checksum(seed);
    }
    // udp_gro_complete: uh->len, then the tunnel's gro_complete.
    uh.set_len(len as u16);
    if cfg.vxlan_ports.contains(&uh.dst_port()) {
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
        use super::super::csum;
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
        for (profile, from) in [
            (&LINUX_6_18, (outer.saddr, outer.daddr)),
            (&LINUX_6_1, (inner.saddr, inner.daddr)),
        ] {
            let d = run(profile, f.clone());
            assert_eq!(d.len(), 1, "{}: one merged skb", profile.name);
            let bytes = d[0].skb.to_vec();
            // Outer Ethernet 14 + IPv4 20: UDP at 34, its length at 38, checksum at 40.
            let udp_len = usize::from(u16::from_be_bytes([bytes[38], bytes[39]]));
            assert_eq!(udp_len, bytes.len() - 34);
            let want = csum::fold(csum::pseudo_v4(from.0, from.1, 17, udp_len));
            assert_eq!(
                u16::from_be_bytes([bytes[40], bytes[41]]),
                want,
                "{}",
                profile.name
            );
        }
    }
}
