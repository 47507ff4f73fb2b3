//! Tunnels with an IPv6 outer header through the tap's GRO and the tunnel device's
//! gro_cells (docs/gro.md#tunnels-over-ipv6), and IP in IP (docs/gro.md#ipip). Expected values are worked out from the
//! kernel rules named in each test, not read back from the model.

use super::cells::{TapObserver, TunnelDev};
use super::frames::Tcp4;
use super::frames6::Outer6;
use super::plan::GroPlan;
use super::reason;
use crate::pipeline::tap_gro::TapGroRun;
use crate::profile::{KernelProfile, LINUX_6_1, LINUX_6_12, LINUX_6_12_107, LINUX_6_18};
use crate::skb::gso;

/// 14 + 40 + 8 (GRE with K) in front of each inner 1454-byte frame.
const GRE6: usize = 62;
const INNER: usize = 14 + 20 + 20 + 1400;

/// Four inner segments of one flow, segment k wrapped by `wrap(k, segment)`, one burst.
fn run(
    p: &KernelProfile,
    observer: TapObserver,
    wrap: impl Fn(usize, &[u8]) -> Vec<u8>,
) -> TapGroRun {
    run_with(p, observer, false, wrap)
}

/// `run`, written non-blocking when `nonblocking` (tun_build_skb heads: merged segments
/// become frags, not frag_list skbs, which the cell's dev_gro_receive would flush).
fn run_with(
    p: &KernelProfile,
    observer: TapObserver,
    nonblocking: bool,
    wrap: impl Fn(usize, &[u8]) -> Vec<u8>,
) -> TapGroRun {
    let plan = GroPlan {
        burst: 4,
        tap_observer: observer,
        tunnel_trace: true,
        ..GroPlan::defaults(&p.gro)
    };
    let mut r = TapGroRun::new(p, &plan);
    r.nonblocking = nonblocking;
    for (k, f) in Tcp4::default().stream(4).iter().enumerate() {
        r.write(k as u64, 1_000_000_000 + k as u64 * 1000, wrap(k, f));
    }
    r.finish();
    r
}

fn tap_lens(r: &TapGroRun) -> Vec<usize> {
    r.delivered.iter().map(|d| d.skb.len()).collect()
}

fn cell_lens(r: &TapGroRun) -> Vec<(TunnelDev, usize)> {
    r.cells
        .as_ref()
        .map(|c| c.deliveries().map(|(d, x)| (*d, x.skb.len())).collect())
        .unwrap_or_default()
}

fn gre6(o: Outer6, f: &[u8]) -> Vec<u8> {
    o.gre_teb(Some(42), None, f)
}

fn hop(h: u8) -> Outer6 {
    Outer6 {
        hop_limit: h,
        ..Outer6::default()
    }
}

fn ip6gretap() -> TunnelDev {
    TunnelDev::Ip6gretap {
        remote: Outer6::default().saddr.octets(),
        local: Outer6::default().daddr.octets(),
        key: Some(42u32.to_be_bytes()),
    }
}

#[test]
fn gre_over_ipv6_merges_through_gre_gro_receive_and_completes_as_gre() {
    let r = run(&LINUX_6_18, TapObserver::AfPacket, |_, f| {
        gre6(Outer6::default(), f)
    });
    assert_eq!(tap_lens(&r), vec![GRE6 + INNER + 3 * 1400]);
    let skb = &r.delivered[0].skb;
    // gre_gro_complete assigns SKB_GSO_GRE, tcp4_gro_complete adds TCPV4; nothing
    // names the IPv6 outer header.
    assert_eq!(
        skb.gso_type & !(gso::TCP_FIXEDID | gso::TCP_FIXEDID_INNER),
        gso::GRE | gso::TCPV4
    );
    assert!(skb.encapsulation);
    assert_eq!((skb.gso_size, skb.gso_segs), (1400, 4));
    // ipv6_gro_complete rewrote the outer payload_len: everything after the 40 bytes.
    let b = skb.to_vec();
    assert_eq!(
        usize::from(u16::from_be_bytes([b[18], b[19]])),
        b.len() - 54
    );
    // The inner headers start after the GRE header: inner_mac_header at 62.
    assert_eq!(skb.offset_from_data(skb.inner_mac_header), Some(GRE6));
}

#[test]
fn outer_hop_limit_flushes_on_6_10_rules_and_splits_the_flow_before() {
    // 6.18: ipv6_gro_flush from tcp_gro_receive at the outer level: every frame flushes
    // the one before.
    let r = run(&LINUX_6_18, TapObserver::AfPacket, |k, f| {
        gre6(hop(64 - (k % 2) as u8), f)
    });
    assert_eq!(tap_lens(&r), vec![GRE6 + INNER; 4]);
    assert_eq!(r.delivered[1].skb.model.start, Some(reason::IPV6_HOPLIMIT));
    // 6.1: the hop limit is compared with the next header (*(u16 *)&iph->nexthdr): frames
    // 0 and 2 are one outer flow, 1 and 3 another, and each pair's inner sequence has a
    // gap: tcp:seq flushes the held one. Four skbs again, frame 1 a new flow.
    let r = run(&LINUX_6_1, TapObserver::AfPacket, |k, f| {
        gre6(hop(64 - (k % 2) as u8), f)
    });
    assert_eq!(r.delivered.len(), 4);
    let f1 = r.delivered.iter().find(|d| d.skb.model.frame == 1).unwrap();
    assert_eq!(f1.skb.model.start, Some(reason::FLOW_NEW));
}

#[test]
fn the_ip6gretap_cell_merges_one_inner_flow_under_alternating_hop_limits() {
    // No observer on the tap: __ip6_tnl_rcv pulls the outer headers and ignores the hop
    // limit, so the four inner frames are one flow for the cell: 54 + 4 * 1400.
    let r = run(&LINUX_6_18, TapObserver::None, |k, f| {
        gre6(hop(64 - (k % 2) as u8), f)
    });
    assert_eq!(tap_lens(&r), vec![GRE6 + INNER; 4]);
    assert_eq!(cell_lens(&r), vec![(ip6gretap(), 54 + 4 * 1400)]);
    // With the packet socket each skb is a clone: netif_rx, four skbs.
    let r = run(&LINUX_6_18, TapObserver::AfPacket, |k, f| {
        gre6(hop(64 - (k % 2) as u8), f)
    });
    assert_eq!(cell_lens(&r), vec![(ip6gretap(), INNER); 4]);
}

#[test]
fn an_old_ip6gretap_compares_62_bytes_of_the_inner_frame_and_merges_nothing() {
    // ip6gre_tnl_link_config_route before the NBMA fix: hard_header_len = 14 (the tap)
    // + 40 + 8 (GRE with K) = 62, so gro_list_prepare memcmps the inner Ethernet, IPv4
    // (its ID is 1, 2, 3, 4 here) and TCP headers and 8 payload bytes: every held skb
    // differs, four skbs. 6.12.111 and later compare the 14-byte Ethernet header.
    let alternating = |k: usize, f: &[u8]| gre6(hop(64 - (k % 2) as u8), f);
    let r = run(&LINUX_6_12, TapObserver::None, alternating);
    assert_eq!(cell_lens(&r), vec![(ip6gretap(), 54 + 4 * 1400)]);
    let r = run(&LINUX_6_12_107, TapObserver::None, alternating);
    assert_eq!(tap_lens(&r), vec![GRE6 + INNER; 4]);
    assert_eq!(cell_lens(&r), vec![(ip6gretap(), INNER); 4]);
    let cells = r.cells.as_ref().unwrap();
    let starts: Vec<_> = cells.deliveries().map(|(_, d)| d.skb.model.start).collect();
    assert_eq!(
        starts[1..],
        [Some(reason::MAC_HARD_HEADER); 3],
        "each later segment found the held one's inner headers different"
    );
}

#[test]
fn a_new_outer_flow_label_splits_the_tap_and_the_cell_remerges_the_two_gso_skbs() {
    // Frames 2 and 3 carry flow label 7: another flow for ipv6_gro_receive (0xF00FFFFF of
    // the first word). The tap delivers two GSO skbs of gso_size 1400; the cell takes
    // a TCP GSO skb in (dev_gro_receive, GroRules::gso_skbs) and merges the second
    // (written non-blocking: no frag_list).
    let r = run_with(&LINUX_6_18, TapObserver::None, true, |k, f| {
        let o = Outer6 {
            flow_label: if k >= 2 { 7 } else { 0 },
            ..Outer6::default()
        };
        gre6(o, f)
    });
    assert_eq!(tap_lens(&r), vec![GRE6 + INNER + 1400; 2]);
    assert_eq!(r.delivered[1].skb.model.start, Some(reason::FLOW_NEW));
    assert_eq!(cell_lens(&r), vec![(ip6gretap(), 54 + 4 * 1400)]);
}

#[test]
fn a_traffic_class_change_flushes_on_every_profile() {
    for p in [&LINUX_6_18, &LINUX_6_1] {
        let r = run(p, TapObserver::AfPacket, |k, f| {
            let o = Outer6 {
                tc: if k >= 2 { 0x20 } else { 0 },
                ..Outer6::default()
            };
            gre6(o, f)
        });
        assert_eq!(tap_lens(&r), vec![GRE6 + INNER + 1400; 2], "{}", p.name);
        assert_eq!(
            r.delivered[1].skb.model.start,
            Some(reason::IPV6_TC),
            "{}",
            p.name
        );
    }
}

#[test]
fn vxlan_over_ipv6_without_udp6_gro_is_not_a_tunnel_for_the_tap_but_reaches_the_cell() {
    // The vxlan6 device's cell sees every frame whatever the tap's GRO did.
    let r = run(&LINUX_6_18, TapObserver::None, |k, f| {
        Outer6::default().vxlan(50000 + k as u16, 42, true, f)
    });
    let dev = TunnelDev::Vxlan6 {
        port: 4789,
        vni: 42,
    };
    assert_eq!(cell_lens(&r), vec![(dev, 54 + 4 * 1400)]);
}

/// The outer UDP checksum udp6_gro_complete writes: the folded (not complemented) sum of
/// an RFC 8200 pseudo header whose 32 address bytes are `addrs`.
fn seeded(addrs: &[u8], len: usize) -> u16 {
    use crate::wire::checksum::{fold, ones_complement_sum};
    let mut p = addrs.to_vec();
    p.extend_from_slice(&(len as u32).to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 17]);
    fold(ones_complement_sum(&p, 0))
}

#[test]
fn udp6_gro_complete_seeds_the_outer_checksum_from_the_outer_header_only_since_6_8() {
    let wrap = |_: usize, f: &[u8]| Outer6::default().vxlan(50000, 42, true, f);
    let first = wrap(0, &Tcp4::default().stream(1)[0]);
    for (p, from_inner) in [(&LINUX_6_18, false), (&LINUX_6_1, true)] {
        let r = run(p, TapObserver::AfPacket, wrap);
        assert_eq!(tap_lens(&r), vec![70 + INNER + 3 * 1400], "{}", p.name);
        let b = r.delivered[0].skb.to_vec();
        let len = b.len() - 54;
        // 6.8+: network_offsets[encapsulation], the outer IPv6 addresses at 22..54. 6.1:
        // ipv6_hdr(skb) is the inner IPv4 header (at 14 + 40 + 8 + 8 + 14 = 84), read as
        // an IPv6 one: its "addresses" are its bytes 8..40 (TTL on, into the TCP header),
        // as they were before the inner completes rewrote the IPv4 and TCP checksums:
        // the first frame's.
        let addrs = if from_inner {
            &first[92..124]
        } else {
            &b[22..54]
        };
        assert_eq!(
            u16::from_be_bytes([b[60], b[61]]),
            seeded(addrs, len),
            "{}",
            p.name
        );
    }
}

/// IPv4 in IPv4 (protocol 4): the inner frame's IP packet behind an outer IPv4 header
/// with ID `id`, built here from the Ethernet/IPv4 frame of `Outer`.
fn ipip(id: u16, inner: &[u8]) -> Vec<u8> {
    let o = super::frames::Outer {
        id,
        ..super::frames::Outer::default()
    };
    // Outer::gre_teb builds Ethernet + IPv4(proto 47) + GRE: take its Ethernet and IPv4
    // header, then set protocol 4, the length and the checksum for the bare inner packet.
    let g = o.gre_teb(None, None, &[]);
    let mut f = g[..34].to_vec();
    f.extend_from_slice(&inner[14..]);
    let tot = (f.len() - 14) as u16;
    f[16..18].copy_from_slice(&tot.to_be_bytes());
    f[23] = 4;
    f[24..26].copy_from_slice(&[0, 0]);
    let c = crate::wire::checksum::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

#[test]
fn ipip_merges_as_the_inner_flow_and_completes_with_ipxip4() {
    let r = run(&LINUX_6_18, TapObserver::AfPacket, |k, f| {
        ipip(100 + k as u16, f)
    });
    // 14 + 20 outer + 20 inner IPv4 + 20 TCP + 4 * 1400.
    assert_eq!(tap_lens(&r), vec![74 + 4 * 1400]);
    let skb = &r.delivered[0].skb;
    assert!(skb.encapsulation);
    assert_eq!(
        skb.gso_type & !(gso::TCP_FIXEDID | gso::TCP_FIXEDID_INNER),
        gso::IPXIP4 | gso::TCPV4
    );
    // inet_gro_complete ran for both levels: both tot_len fields count to the end.
    let b = skb.to_vec();
    assert_eq!(
        usize::from(u16::from_be_bytes([b[16], b[17]])),
        b.len() - 14
    );
    assert_eq!(
        usize::from(u16::from_be_bytes([b[36], b[37]])),
        b.len() - 34
    );
    assert_eq!(skb.offset_from_data(skb.inner_network_header), Some(34));
}

#[test]
fn ipip_outer_id_jumps_flush_at_the_outer_level_and_3_12_has_no_ipip_gro() {
    let r = run(&LINUX_6_18, TapObserver::AfPacket, |k, f| {
        ipip(100 * (k as u16 + 1), f)
    });
    assert_eq!(tap_lens(&r), vec![74 + 1400; 4]);
    assert_eq!(r.delivered[1].skb.model.start, Some(reason::IPV4_ID));
    let r = run(
        &crate::profile::LINUX_3_12,
        TapObserver::AfPacket,
        |k, f| ipip(100 + k as u16, f),
    );
    assert_eq!(tap_lens(&r), vec![74 + 1400; 4]);
    assert_eq!(r.delivered[0].skb.model.start, Some(reason::IPV4_NO_L4));
}
