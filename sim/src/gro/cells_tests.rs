//! gro_cells tests: expectations worked out from the kernel rules (docs/gro.md#gro-cells).

use super::*;
use crate::gro::frames::{Outer, Tcp4};
use crate::gro::plan::GroPlan;
use crate::pipeline::tap_gro::TapGroRun;
use crate::profile::LINUX_6_18;
use crate::skb::SkBuff;

/// Four inner segments of one flow (1454-byte frames, 1400 bytes of payload each), each
/// wrapped by `wrap(k, segment)`, written as one burst (one tap poll).
fn run(observer: TapObserver, wrap: impl Fn(usize, &[u8]) -> Vec<u8>) -> TapGroRun {
    let plan = GroPlan {
        burst: 4,
        tap_observer: observer,
        tunnel_trace: true,
        ..GroPlan::defaults(&LINUX_6_18.gro)
    };
    let mut r = TapGroRun::new(&LINUX_6_18, &plan);
    for (k, f) in Tcp4::default().stream(4).iter().enumerate() {
        r.write(k as u64, 1_000_000_000 + k as u64 * 1000, wrap(k, f));
    }
    r.finish();
    r
}

fn tunnel(r: &TapGroRun) -> Vec<(TunnelDev, usize, Option<Reason>)> {
    r.cells
        .as_ref()
        .unwrap()
        .deliveries()
        .map(|(dev, d)| (*dev, d.skb.len(), d.skb.model.start))
        .collect()
}

fn outer(id: u16) -> Outer {
    Outer {
        id,
        ..Outer::default()
    }
}

const VX: TunnelDev = TunnelDev::Vxlan {
    port: 4789,
    vni: 42,
};

#[test]
fn outer_id_jumps_defeat_the_tap_and_the_vxlan_cell_merges_all_four() {
    // Outer IDs 100, 200, 300, 400: inet_gro_flush flushes frame 1 against frame 0 (not
    // 100 + 1, not fixed), so the tap delivers 0, 1, 2, 3 unmerged and in order; the
    // inner frames are one flow: 54 + 4 * 1400.
    let r = run(TapObserver::None, |k, f| {
        outer(100 * (k as u16 + 1)).vxlan(50000, 42, false, f)
    });
    let tap: Vec<usize> = r.delivered.iter().map(|d| d.skb.len()).collect();
    assert_eq!(tap, vec![1504; 4]);
    let t = tunnel(&r);
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!((t[0].0, t[0].1), (VX, 54 + 4 * 1400));
    let d = &r.cells.as_ref().unwrap().devs[&VX].delivered[0];
    assert_eq!((d.skb.gso_size, d.skb.gso_segs), (1400, 4));
    assert_eq!(d.skb.gso_type & gso::TCPV4, gso::TCPV4);
    assert_eq!(d.skb.gso_type & (gso::UDP_TUNNEL | gso::UDP_TUNNEL_CSUM), 0);
    assert_eq!(
        (
            d.skb.ip_summed,
            d.skb.checksum_start_offset(),
            d.skb.csum_offset
        ),
        (IpSummed::Partial, 34, 16)
    );
    assert_eq!(d.skb.frames().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
}

#[test]
fn a_packet_socket_on_the_tap_keeps_the_cell_from_merging() {
    // The same frames; each skb is cloned, so gro_cells_receive calls netif_rx.
    let r = run(TapObserver::AfPacket, |k, f| {
        outer(100 * (k as u16 + 1)).vxlan(50000, 42, false, f)
    });
    let t = tunnel(&r);
    assert_eq!(t, vec![(VX, 1454, Some(CELLS_CLONED)); 4]);
}

#[test]
fn a_new_source_port_per_frame_holds_four_flows_on_the_tap_the_cell_merges_them() {
    // udp_gro_receive: another source port is another flow (same_flow = 0), so the tap
    // holds four skbs and napi_complete_done passes them up oldest first.
    let r = run(TapObserver::None, |k, f| {
        outer(100 + k as u16).vxlan(50000 + k as u16, 42, false, f)
    });
    assert_eq!(r.delivered.len(), 4);
    assert_eq!(
        tunnel(&r).iter().map(|t| t.1).collect::<Vec<_>>(),
        vec![5654]
    );
}

#[test]
fn tap_merged_skbs_with_a_frag_list_pass_the_cell_as_they_are() {
    // Ports A A B B: the tap merges 0+1 and 2+3 (blocking writes: frag_list), and
    // dev_gro_receive flushes an skb with a frag_list.
    let r = run(TapObserver::None, |k, f| {
        outer(100 + k as u16).vxlan(50000 + (k as u16 / 2), 42, false, f)
    });
    let t = tunnel(&r);
    assert_eq!(
        t,
        vec![
            (VX, 54 + 2800, Some(crate::gro::reason::FRAG_LIST)),
            (VX, 54 + 2800, Some(crate::gro::reason::FRAG_LIST))
        ]
    );
}

#[test]
fn gre_keys_pick_the_gretap_device_and_split_the_flow() {
    // Keys 42, 7, 42, 7: two tunnels; each gets every other segment (a seq gap), so
    // nothing merges. Devices in key order: 7 first.
    let r = run(TapObserver::None, |k, f| {
        let key = if k % 2 == 0 { 42 } else { 7 };
        outer(100 + k as u16).gre_teb(Some(key), None, f)
    });
    let dev = |key: u32| TunnelDev::Gretap {
        remote: [192, 168, 0, 1],
        local: [192, 168, 0, 2],
        key: Some(key.to_be_bytes()),
    };
    let frames: Vec<(TunnelDev, Vec<u64>)> = r
        .cells
        .as_ref()
        .unwrap()
        .deliveries()
        .map(|(d, x)| (*d, x.skb.frames().collect()))
        .collect();
    assert_eq!(
        frames,
        vec![
            (dev(7), vec![1]),
            (dev(7), vec![3]),
            (dev(42), vec![0]),
            (dev(42), vec![2])
        ]
    );
    assert_eq!(
        dev(42).describe(),
        "gretap remote 192.168.0.1 local 192.168.0.2 key 0x2a"
    );
}

#[test]
fn gre_outer_ttl_changes_defeat_the_tap_and_the_gretap_cell_merges() {
    // TTL 64, 63, 64, 63: inet_gro_flush flushes on a TTL change.
    let r = run(TapObserver::None, |k, f| {
        let o = Outer {
            ttl: 64 - (k as u8 % 2),
            ..outer(100 + k as u16)
        };
        o.gre_teb(Some(42), None, f)
    });
    assert_eq!(r.delivered.len(), 4);
    assert_eq!(
        tunnel(&r).iter().map(|t| t.1).collect::<Vec<_>>(),
        vec![5654]
    );
}

#[test]
fn decapsulation_uses_one_unnecessary_level_for_the_outer_udp_checksum() {
    let f = outer(100).vxlan(50000, 42, false, &Tcp4::default().build());
    let mut skb = SkBuff::for_gro(0, 0, f);
    skb.ip_summed = IpSummed::Unnecessary;
    skb.csum_level = 1;
    let (o, s) = decapsulate(&skb, &[4789]).unwrap();
    assert_eq!(o.dev, VX);
    assert_eq!((s.len(), s.protocol), (1454, 0x0800));
    assert_eq!((s.ip_summed, s.csum_level), (IpSummed::Unnecessary, 0));
    // Another port: not a tunnel skb.
    assert!(decapsulate(&skb, &[8472]).is_none());
}

#[test]
fn tap_observer_is_parsed_and_a_bad_value_names_the_key() {
    use crate::gro::plan::{gro_plan, RawGro};
    let raw = |o: &str| RawGro {
        tap_observer: Some(o.to_string()),
        ..RawGro::default()
    };
    let p = gro_plan(Some(&raw("none")), &LINUX_6_18.gro, "linux-6.18", true).unwrap();
    assert_eq!(p.tap_observer, TapObserver::None);
    assert!(
        p.cells(),
        "no tap observer: the tunnel deliveries are the trace"
    );
    let p = gro_plan(None, &LINUX_6_18.gro, "linux-6.18", true).unwrap();
    assert_eq!(p.tap_observer, TapObserver::AfPacket);
    assert!(!p.cells());
    let e = gro_plan(Some(&raw("tcpdump")), &LINUX_6_18.gro, "linux-6.18", true).unwrap_err();
    assert!(e.starts_with("gro.tap_observer:"), "{e}");
}

#[test]
fn past_the_listed_maximum_tunnel_deliveries_are_counted_not_kept() {
    // One write per poll (burst 1, no timeout): every skb goes up alone, cloned, and the
    // vxlan device receives each as it is; 4 past the limit are only counted.
    let plan = GroPlan {
        tunnel_trace: true,
        ..GroPlan::defaults(&LINUX_6_18.gro)
    };
    let mut r = TapGroRun::new(&LINUX_6_18, &plan);
    let n = TUNNEL_LISTED_MAX + 4;
    let inner = Tcp4 {
        payload: 100,
        ..Tcp4::default()
    };
    for (k, f) in inner.stream(n).iter().enumerate() {
        r.record = false;
        r.write(
            k as u64,
            1_000_000_000 + k as u64 * 1000,
            outer(k as u16).vxlan(50000, 42, false, f),
        );
    }
    r.finish();
    let c = r.cells.as_ref().unwrap();
    assert_eq!(
        (c.listed, c.deliveries().count()),
        (TUNNEL_LISTED_MAX, TUNNEL_LISTED_MAX)
    );
    assert_eq!(
        c.unlisted,
        Unlisted {
            packets: 4,
            bytes: 4 * 154,
            segs: 4
        }
    );
}

/// Ports A A B B written non-blocking (tun_build_skb heads: the tap merges each pair
/// into frags, no frag_list), under `profile`; inner DF as `df`.
fn pairs_nonblocking(profile: &crate::profile::KernelProfile, df: bool) -> TapGroRun {
    let plan = GroPlan {
        burst: 4,
        tap_observer: TapObserver::None,
        ..GroPlan::defaults(&profile.gro)
    };
    let mut r = TapGroRun::new(profile, &plan);
    r.nonblocking = true;
    let inner = Tcp4 {
        df,
        ..Tcp4::default()
    };
    for (k, f) in inner.stream(4).iter().enumerate() {
        let frame = outer(100 + k as u16).vxlan(50000 + (k as u16 / 2), 42, false, f);
        r.write(k as u64, 1_000_000_000 + k as u64 * 1000, frame);
    }
    r.finish();
    r
}

fn cell_out(r: &TapGroRun) -> Vec<(usize, Option<Reason>)> {
    r.cells
        .as_ref()
        .unwrap()
        .deliveries()
        .map(|(_, d)| (d.skb.len(), d.skb.model.start))
        .collect()
}

#[test]
fn two_gso_skbs_of_one_gso_size_merge_again_in_the_cell() {
    // Each pair is a 2-segment GSO skb with its second head as a frag; dev_gro_receive
    // holds the first (count 2), tcp_gro_receive merges the second (same gso_size, seq
    // continues, whole segments, inner ID = held id + count): one skb of 4, frags
    // 1 + (1 head + 1).
    let r = pairs_nonblocking(&LINUX_6_18, false);
    let c = r.cells.as_ref().unwrap();
    let d: Vec<&Delivered> = c.deliveries().map(|(_, d)| d).collect();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].skb.len(), 54 + 4 * 1400);
    assert_eq!((d[0].skb.gso_size, d[0].skb.gso_segs), (1400, 4));
    assert_eq!(d[0].skb.frames().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert_eq!(d[0].skb.layout().frags, 3);
    assert_eq!(cell_out(&pairs_nonblocking(&LINUX_6_18, true)).len(), 1);
    // 6.1's ID rule (4.19's): with DF on both, a held skb that is still "atomic" takes
    // only an ID delta of 0 (or 1 on its second frame): the second pair (delta 2) flushes.
    let six_one = &crate::profile::LINUX_6_1;
    assert_eq!(
        cell_out(&pairs_nonblocking(six_one, false)),
        vec![(5654, Some(crate::gro::reason::FLOW_NEW))]
    );
    assert_eq!(
        cell_out(&pairs_nonblocking(six_one, true)),
        vec![
            (2854, Some(crate::gro::reason::FLOW_NEW)),
            (2854, Some(crate::gro::reason::IPV4_ID))
        ]
    );
    // 4.19: `flush = skb_is_gso(skb)`: both go up as the tap left them.
    assert_eq!(
        cell_out(&pairs_nonblocking(&crate::profile::LINUX_4_19, false)),
        vec![(2854, Some(crate::gro::reason::GSO)); 2]
    );
}
