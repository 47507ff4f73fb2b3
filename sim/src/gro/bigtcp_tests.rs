//! The BIG TCP rules on explicit skbs and on streams through the tap-gro model.

use super::*;
use crate::consts::ETH_P_IP;
use crate::gro::frames::Tcp4;
use crate::gro::plan::GroPlan;
use crate::gro::rules::{GRO_LINUX_4_19, GRO_LINUX_6_1, GRO_LINUX_6_18};
use crate::gro::testutil::run_with;
use crate::profile::{KernelProfile, LINUX_6_1, LINUX_6_12, LINUX_6_18};
use crate::skb::gso;
use crate::wire::checksum::{fold, ones_complement_sum};

/// An skb of `total` bytes from the MAC header with `proto` as skb->protocol and the
/// IPv6 (or IPv4) header's next header byte `next`, as GRO holds it.
fn held(proto: u16, next: u8, total: usize) -> SkBuff {
    let mut b = vec![0u8; total];
    b[12..14].copy_from_slice(&proto.to_be_bytes());
    b[14] = if proto == ETH_P_IPV6 { 0x60 } else { 0x45 };
    b[14 + if proto == ETH_P_IPV6 { 6 } else { 9 }] = next;
    let mut p = SkBuff::for_gro(0, 0, b);
    p.protocol = proto;
    p.set_network_header(ETH_HLEN);
    p
}

/// A new segment whose innermost L4 protocol (NAPI_GRO_CB(skb)->proto) is `proto`.
fn segment(proto: u8) -> SkBuff {
    let mut s = SkBuff::for_gro(1, 0, vec![0u8; 100]);
    s.cb.proto = proto;
    s
}

fn cfg(rules: GroRules, v6: usize, v4: usize) -> GroConfig {
    GroConfig {
        gro_max_size: v6,
        gro_ipv4_max_size: v4,
        ..GroConfig::for_rules(rules)
    }
}

#[test]
fn the_limit_is_p_len_plus_len_against_the_family_s_setting() {
    let c = cfg(GRO_LINUX_6_18, 185_000, 100_000);
    // p->len counts from the network header: 14 bytes of the model's skb are not in it.
    let p6 = held(ETH_P_IPV6, IPPROTO_TCP, 14 + 184_000);
    let tcp = segment(IPPROTO_TCP);
    assert_eq!(check_size(&c, &p6, &tcp, 999), Ok(()));
    assert_eq!(check_size(&c, &p6, &tcp, 1000), Err(reason::GRO_MAX));
    // IPv4 is bounded by gro_ipv4_max_size (netif_get_gro_max_size).
    let p4 = held(ETH_P_IP, IPPROTO_TCP, 14 + 99_000);
    assert_eq!(check_size(&c, &p4, &tcp, 999), Ok(()));
    assert_eq!(check_size(&c, &p4, &tcp, 1000), Err(reason::GRO_MAX));
    // The default 65536 keeps its old name.
    let d = cfg(GRO_LINUX_6_18, 65536, 65536);
    let p = held(ETH_P_IPV6, IPPROTO_TCP, 14 + 64_536);
    assert_eq!(check_size(&d, &p, &tcp, 999), Ok(()));
    assert_eq!(check_size(&d, &p, &tcp, 1000), Err(reason::GRO_64K));
}

#[test]
fn past_64k_only_unencapsulated_tcp_grows() {
    let c = cfg(GRO_LINUX_6_18, 185_000, 185_000);
    let p = held(ETH_P_IP, IPPROTO_TCP, 14 + 65_000);
    // 65000 + 535 = 65535 < GRO_LEGACY_MAX_SIZE: any protocol.
    assert_eq!(check_size(&c, &p, &segment(17), 535), Ok(()));
    assert_eq!(
        check_size(&c, &p, &segment(17), 536),
        Err(reason::GRO_BIG_TCP)
    );
    assert_eq!(check_size(&c, &p, &segment(IPPROTO_TCP), 536), Ok(()));
    let mut enc = held(ETH_P_IP, IPPROTO_TCP, 14 + 65_000);
    enc.encapsulation = true;
    assert_eq!(
        check_size(&c, &enc, &segment(IPPROTO_TCP), 536),
        Err(reason::GRO_BIG_TCP)
    );
}

#[test]
fn before_6_3_only_ipv6_with_tcp_after_the_fixed_header_grows_past_64k() {
    // 0fe79f28bfaf: gro_max_size bounds IPv4 too, but the legacy check stops it.
    let c = cfg(GRO_LINUX_6_1, 185_000, 65536);
    let tcp = segment(IPPROTO_TCP);
    let p6 = held(ETH_P_IPV6, IPPROTO_TCP, 14 + 65_000);
    assert_eq!(check_size(&c, &p6, &tcp, 1000), Ok(()));
    let hbh = held(ETH_P_IPV6, NEXTHDR_HOP, 14 + 65_000);
    assert_eq!(check_size(&c, &hbh, &tcp, 1000), Err(reason::GRO_BIG_TCP));
    let p4 = held(ETH_P_IP, IPPROTO_TCP, 14 + 65_000);
    assert_eq!(check_size(&c, &p4, &tcp, 1000), Err(reason::GRO_BIG_TCP));
    // The setting bounds IPv4 below 64K as well.
    let small = cfg(GRO_LINUX_6_1, 30_000, 65536);
    let p4 = held(ETH_P_IP, IPPROTO_TCP, 14 + 29_000);
    assert_eq!(check_size(&small, &p4, &tcp, 1000), Err(reason::GRO_MAX));
    // 4.19: a fixed 65536 whatever the configuration says.
    let old = cfg(GRO_LINUX_4_19, 185_000, 185_000);
    assert_eq!(check_size(&old, &p6, &tcp, 536), Err(reason::GRO_64K));
}

#[test]
fn settings_are_checked_against_the_profile_and_gro_max_size() {
    let ok = check_max_size("gro.gro_max_size", 185_000, &GRO_LINUX_6_18, "linux-6.18");
    assert_eq!(ok, Ok(185_000));
    let e = check_max_size("gro.gro_max_size", 524_281, &GRO_LINUX_6_18, "linux-6.18");
    assert!(e
        .unwrap_err()
        .starts_with("gro.gro_max_size: 524281 is outside 0..=524280"));
    let e = check_max_size("gro.gro_max_size", 65536, &GRO_LINUX_4_19, "linux-4.19");
    assert!(e
        .unwrap_err()
        .contains("linux-4.19 has no per-device gro_max_size"));
}

#[test]
fn a_small_gro_max_size_lowers_gro_ipv4_max_size_too() {
    let r = &GRO_LINUX_6_18;
    let set = |v6, v4| setlink_sizes(v6, v4, r, "linux-6.18").unwrap();
    assert_eq!(set(Some(30_000), None), (30_000, 30_000));
    assert_eq!(set(Some(185_000), None), (185_000, 65536));
    assert_eq!(set(Some(30_000), Some(100_000)), (30_000, 100_000));
    assert_eq!(set(None, Some(100_000)), (65536, 100_000));
    // 6.1 takes the IPv4 attribute and ignores it (no such field before v6.3).
    let s = setlink_sizes(Some(185_000), Some(100_000), &GRO_LINUX_6_1, "linux-6.1").unwrap();
    assert_eq!(device_sizes(&GRO_LINUX_6_1, s.0, s.1), (185_000, 65536));
}

#[test]
fn iph_totlen_is_zero_past_ip_max_mtu() {
    assert_eq!(iph_totlen(65535), 65535);
    assert_eq!(iph_totlen(65536), 0);
    assert_eq!(iph_totlen(1500), 1500);
}

/// An skb of one IPv6 header and `payload` bytes of (pretend) TCP after it.
fn ipv6_skb(payload: usize) -> SkBuff {
    let mut b = vec![0u8; 14 + 40 + payload];
    b[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
    b[14] = 0x60;
    b[20] = IPPROTO_TCP;
    b[21] = 64;
    b[54] = 0xab;
    let mut s = SkBuff::for_gro(0, 0, b);
    s.protocol = ETH_P_IPV6;
    s.set_transport_header(54);
    s
}

#[test]
fn past_ipv6_maxplen_the_hop_by_hop_jumbo_header_goes_in_front_of_tcp() {
    let c = GroConfig::for_rules(GRO_LINUX_6_18);
    let mut s = ipv6_skb(IPV6_MAXPLEN);
    ipv6_set_payload_len(&c, &mut s, ETH_HLEN);
    assert_eq!(
        s.len(),
        14 + 40 + 65535,
        "payload_len 65535 is not a jumbogram"
    );
    assert_eq!(&s.linear()[18..21], &[0xff, 0xff, IPPROTO_TCP]);

    let mut s = ipv6_skb(IPV6_MAXPLEN + 1);
    ipv6_set_payload_len(&c, &mut s, ETH_HLEN);
    let b = s.linear();
    assert_eq!(s.len(), 14 + 40 + 8 + 65536);
    // payload_len 0, next header hop-by-hop; the option: next TCP, hdrlen 0, type 0xc2,
    // length 4, jumbo length 65536 + 8 = 0x00010008.
    assert_eq!(&b[18..21], &[0, 0, NEXTHDR_HOP]);
    assert_eq!(&b[54..62], &[6, 0, 0xc2, 4, 0x00, 0x01, 0x00, 0x08]);
    assert_eq!(b[62], 0xab, "TCP follows the option");
    assert_eq!(s.offset_from_data(s.transport_header), Some(62));
    // Without the HBH rule (81be30c1f5f2): payload_len 0 only.
    let rules = GroRules {
        ipv6_jumbo_hbh: false,
        ..GRO_LINUX_6_18
    };
    let mut s = ipv6_skb(IPV6_MAXPLEN + 1);
    ipv6_set_payload_len(&GroConfig::for_rules(rules), &mut s, ETH_HLEN);
    assert_eq!(s.len(), 14 + 40 + 65536);
    assert_eq!(&s.linear()[18..21], &[0, 0, IPPROTO_TCP]);
}

/// `n` segments of `payload` bytes (the last `last` bytes when given), IPv6 or IPv4.
fn stream(v6: bool, n: usize, payload: usize, last: Option<usize>) -> Vec<Vec<u8>> {
    (0..n)
        .map(|k| {
            let s = Tcp4 {
                seq: 1000 + (k * payload) as u32,
                id: 1 + k as u16,
                payload: if k + 1 == n {
                    last.unwrap_or(payload)
                } else {
                    payload
                },
                ..Tcp4::default()
            };
            if v6 {
                s.build_v6()
            } else {
                s.build()
            }
        })
        .collect()
}

fn run_sizes(p: &KernelProfile, v6: usize, v4: usize, frames: Vec<Vec<u8>>) -> Vec<SkBuff> {
    let plan = GroPlan {
        burst: frames.len(),
        gro_max_size: v6,
        gro_ipv4_max_size: v4,
        ..GroPlan::defaults(&p.gro)
    };
    run_with(p, plan, frames)
        .into_iter()
        .map(|d| *d.skb)
        .collect()
}

#[test]
fn a_64_segment_ipv6_stream_becomes_one_jumbogram_with_185000() {
    let d = run_sizes(&LINUX_6_18, 185_000, 65536, stream(true, 64, 1440, None));
    assert_eq!(d.len(), 1);
    let s = &d[0];
    // 14 + 40 + 8 (hop-by-hop) + 20 + 64 * 1440.
    assert_eq!(s.len(), 92_242);
    assert_eq!((s.gso_size, s.gso_segs), (1440, 64));
    assert_eq!(s.gso_type & gso::TCPV6, gso::TCPV6);
    assert_eq!(s.checksum_start_offset(), 62);
    let b = s.to_vec();
    assert_eq!(&b[18..21], &[0, 0, 0]);
    let jumbo = u32::from_be_bytes([b[58], b[59], b[60], b[61]]);
    assert_eq!(jumbo as usize, 92_242 - 14 - 40);
    // The TCP checksum field holds the folded pseudo-header sum with the 32-bit length.
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&b[22..54]);
    pseudo.extend_from_slice(&((92_242 - 62) as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 6]);
    let want = fold(ones_complement_sum(&pseudo, 0));
    assert_eq!(u16::from_be_bytes([b[62 + 16], b[62 + 17]]), want);
    // The default splits at 64 KiB: 45 segments (64 860 bytes from the network header).
    let d = run_sizes(&LINUX_6_18, 65536, 65536, stream(true, 64, 1440, None));
    assert_eq!(
        d.iter().map(|s| s.gso_segs).collect::<Vec<_>>(),
        vec![45, 19]
    );
}

#[test]
fn ipv4_takes_gro_ipv4_max_size_and_writes_tot_len_0_from_6_3() {
    let frames = || stream(false, 64, 1440, None);
    let d = run_sizes(&LINUX_6_18, 65536, 185_000, frames());
    assert_eq!(d.len(), 1);
    let b = d[0].to_vec();
    assert_eq!(b.len(), 14 + 40 + 64 * 1440);
    assert_eq!(&b[16..18], &[0, 0], "tot_len 0");
    assert!(crate::wire::checksum::ipv4_header_ok(&b[14..34]));
    // gro_max_size is IPv6's only; on 6.1 IPv4 stays below 64K whatever it says.
    let d = run_sizes(&LINUX_6_18, 185_000, 65536, frames());
    assert_eq!(lens_of(&d), vec![54 + 45 * 1440, 54 + 19 * 1440]);
    let d = run_sizes(&LINUX_6_1, 185_000, 65536, frames());
    assert_eq!(d.len(), 2);
    // IPv6 on 6.1 and 6.12 is 6.18's.
    for p in [&LINUX_6_1, &LINUX_6_12] {
        let d = run_sizes(p, 185_000, 65536, stream(true, 64, 1440, None));
        assert_eq!(lens_of(&d), vec![92_242], "{}", p.name);
    }
}

fn lens_of(d: &[SkBuff]) -> Vec<usize> {
    d.iter().map(SkBuff::len).collect()
}

#[test]
fn payload_len_65535_stays_and_65536_is_a_jumbogram() {
    // 45 * 1440 + 715 = 65515 payload bytes + 20 of TCP = 65535.
    let d = run_sizes(
        &LINUX_6_18,
        185_000,
        65536,
        stream(true, 46, 1440, Some(715)),
    );
    assert_eq!(lens_of(&d), vec![54 + 65535]);
    let b = d[0].to_vec();
    assert_eq!(&b[18..21], &[0xff, 0xff, 6]);
    let d = run_sizes(
        &LINUX_6_18,
        185_000,
        65536,
        stream(true, 46, 1440, Some(716)),
    );
    assert_eq!(lens_of(&d), vec![54 + 8 + 65536]);
    // The same with the default: the short last segment cannot join (65 575 >= 65536).
    let d = run_sizes(&LINUX_6_18, 65536, 65536, stream(true, 46, 1440, Some(715)));
    assert_eq!(lens_of(&d), vec![74 + 45 * 1440, 74 + 715]);
}
