//! Plain UDP GRO (udp_gro_receive's non-tunnel branch, udp_gro_receive_segment,
//! skb_gro_receive_list, udp4/udp6_gro_complete), on frames built here byte by byte
//! with their checksums computed over RFC 768 / RFC 8200 pseudo headers.

use super::napi::{Delivered, End};
use super::plan::GroPlan;
use super::testutil::{lens, run_with};
use super::{reason, Layout, Reason};
use crate::profile::{KernelProfile, LINUX_4_19, LINUX_6_1, LINUX_6_18};
use crate::skb::{gso, IpSummed};
use crate::wire::checksum as csum;
use crate::wire::checksum::checksum;

const SRC4: [u8; 4] = [10, 77, 0, 1];
const DST4: [u8; 4] = [10, 77, 0, 2];
const DPORT: u16 = 6001;

/// One Ethernet frame carrying UDP `payload` bytes from port `sport` to `dport`.
#[derive(Clone)]
struct Dgram {
    v6: bool,
    sport: u16,
    dport: u16,
    payload: usize,
    id: u16,
    ttl: u8,
    /// Some(c): write c as the checksum instead of the right one.
    check: Option<u16>,
    /// Add this to the UDP length field.
    len_delta: i32,
}

impl Dgram {
    fn v4(k: usize, payload: usize) -> Dgram {
        Dgram {
            v6: false,
            sport: 40000,
            dport: DPORT,
            payload,
            id: 100 + k as u16,
            ttl: 64,
            check: None,
            len_delta: 0,
        }
    }

    fn v6(k: usize, payload: usize) -> Dgram {
        Dgram {
            v6: true,
            ..Dgram::v4(k, payload)
        }
    }

    fn build(&self) -> Vec<u8> {
        let ulen = 8 + self.payload;
        let mut l4 = Vec::with_capacity(ulen);
        l4.extend_from_slice(&self.sport.to_be_bytes());
        l4.extend_from_slice(&self.dport.to_be_bytes());
        l4.extend_from_slice(&((ulen as i32 + self.len_delta) as u16).to_be_bytes());
        l4.extend_from_slice(&[0, 0]);
        l4.extend((0..self.payload).map(|i| (i * 7) as u8));
        let (src6, dst6) = (addr6(1), addr6(2));
        let mut pseudo = Vec::new();
        if self.v6 {
            pseudo.extend_from_slice(&src6);
            pseudo.extend_from_slice(&dst6);
            pseudo.extend_from_slice(&(ulen as u32).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, 17]);
        } else {
            pseudo.extend_from_slice(&SRC4);
            pseudo.extend_from_slice(&DST4);
            pseudo.extend_from_slice(&[0, 17]);
            pseudo.extend_from_slice(&(ulen as u16).to_be_bytes());
        }
        let mut c = checksum(&[pseudo.as_slice(), &l4].concat());
        if c == 0 {
            c = 0xffff;
        }
        let c = self.check.unwrap_or(c);
        l4[6..8].copy_from_slice(&c.to_be_bytes());
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        if self.v6 {
            f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
            f.extend_from_slice(&(ulen as u16).to_be_bytes());
            f.extend_from_slice(&[17, self.ttl]);
            f.extend_from_slice(&src6);
            f.extend_from_slice(&dst6);
        } else {
            let mut ip = vec![0x45, 0];
            ip.extend_from_slice(&((20 + ulen) as u16).to_be_bytes());
            ip.extend_from_slice(&self.id.to_be_bytes());
            ip.extend_from_slice(&[0x40, 0, self.ttl, 17, 0, 0]);
            ip.extend_from_slice(&SRC4);
            ip.extend_from_slice(&DST4);
            let hc = checksum(&ip);
            ip[10..12].copy_from_slice(&hc.to_be_bytes());
            f.extend_from_slice(&[0x08, 0x00]);
            f.extend_from_slice(&ip);
        }
        f.extend_from_slice(&l4);
        f
    }
}

fn addr6(last: u8) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0xfd, 0, 0, 0x77]);
    a[15] = last;
    a
}

/// `n` datagrams of `payload` bytes, `edit` applied to each by index.
fn train(v6: bool, n: usize, payload: usize, edit: impl Fn(usize, &mut Dgram)) -> Vec<Vec<u8>> {
    (0..n)
        .map(|k| {
            let mut d = if v6 {
                Dgram::v6(k, payload)
            } else {
                Dgram::v4(k, payload)
            };
            edit(k, &mut d);
            d.build()
        })
        .collect()
}

#[derive(Default, Clone, Copy)]
struct Feat {
    socket: bool,
    fwd: bool,
    list: bool,
}

fn go(profile: &KernelProfile, f: Feat, frames: Vec<Vec<u8>>) -> Vec<Delivered> {
    let n = frames.len();
    let plan = GroPlan {
        burst: n,
        udp_gro_ports: if f.socket { vec![DPORT] } else { Vec::new() },
        gro_udp_fwd: f.fwd,
        gro_fraglist: f.list,
        ..GroPlan::defaults(&profile.gro)
    };
    run_with(profile, plan, frames)
}

const SOCKET: Feat = Feat {
    socket: true,
    fwd: false,
    list: false,
};
const FWD: Feat = Feat {
    socket: false,
    fwd: true,
    list: false,
};
const LIST: Feat = Feat {
    socket: false,
    fwd: false,
    list: true,
};

fn hdr4(v6: bool) -> usize {
    if v6 {
        14 + 40 + 8
    } else {
        14 + 20 + 8
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn end_reason(d: &Delivered) -> Option<Reason> {
    match d.end {
        End::Frame { reason, .. } => Some(reason),
        _ => None,
    }
}

#[test]
fn plain_udp_without_a_socket_or_feature_is_not_merged() {
    for v6 in [false, true] {
        let d = go(&LINUX_6_18, Feat::default(), train(v6, 4, 1000, |_, _| {}));
        assert_eq!(lens(&d), vec![hdr4(v6) + 1000; 4]);
        for x in &d {
            assert_eq!(x.skb.model.start, Some(reason::UDP_NO_GRO), "v6 {v6}");
            // udp4/udp6_gro_receive verified the checksum first.
            assert_eq!(x.skb.ip_summed, IpSummed::Unnecessary);
        }
    }
}

#[test]
fn a_udp_gro_socket_merges_into_one_udp_l4_skb() {
    for v6 in [false, true] {
        let d = go(&LINUX_6_18, SOCKET, train(v6, 4, 1000, |_, _| {}));
        assert_eq!(lens(&d), vec![hdr4(v6) + 4000], "v6 {v6}");
        let skb = &d[0].skb;
        assert_eq!(skb.gso_type, gso::UDP_L4);
        assert_eq!((skb.gso_size, skb.gso_segs), (1000, 4));
        assert_eq!(skb.ip_summed, IpSummed::Partial);
        let th = hdr4(v6) - 8;
        assert_eq!(skb.csum_start - skb.data_offset(), th);
        assert_eq!(skb.csum_offset, 6);
        // A blocking write's linear (kmalloc) head cannot become a frag: skb_gro_receive
        // chains it on frag_list, but that is not SKB_GSO_FRAGLIST.
        assert_eq!(skb.layout().frag_list.len(), 3);
        let b = skb.to_vec();
        assert_eq!(usize::from(be16(&b, th + 4)), 8 + 4000, "uh->len");
        // udp_gro_complete: ~udp_v4_check / ~udp_v6_check (len, saddr, daddr, 0): the
        // folded pseudo-header sum, as for CHECKSUM_PARTIAL.
        let want = if v6 {
            csum::fold(csum::pseudo_v6(addr6(1), addr6(2), 17, 4008))
        } else {
            csum::fold(csum::pseudo_v4(SRC4, DST4, 17, 4008))
        };
        assert_eq!(be16(&b, th + 6), want);
        if v6 {
            assert_eq!(be16(&b, 18), 4008, "payload_len");
        } else {
            assert_eq!(be16(&b, 16), 20 + 4008, "tot_len");
        }
        // The payloads follow each other.
        let mut pay = Vec::new();
        for _ in 0..4 {
            pay.extend((0..1000).map(|i| (i * 7) as u8));
        }
        assert_eq!(&b[hdr4(v6)..], pay.as_slice());
    }
}

#[test]
fn forwarding_needs_no_local_socket_on_the_port() {
    let d = go(&LINUX_6_18, FWD, train(false, 3, 1000, |_, _| {}));
    assert_eq!(lens(&d), vec![42 + 3000]);
    // A UDP_GRO socket on the port merges too; a forwarding device with a socket
    // without UDP_GRO would not (`!sk && NETIF_F_GRO_UDP_FWD`): not modelled.
    let both = Feat {
        socket: true,
        ..FWD
    };
    assert_eq!(
        lens(&go(&LINUX_6_18, both, train(false, 3, 1000, |_, _| {}))).len(),
        1
    );
}

#[test]
fn rx_gro_list_chains_the_segments_on_frag_list() {
    for v6 in [false, true] {
        let frames = train(v6, 4, 1000, |_, _| {});
        let orig_check = be16(&frames[0], hdr4(v6) - 2);
        let d = go(&LINUX_6_18, LIST, frames);
        assert_eq!(lens(&d), vec![hdr4(v6) + 4000], "v6 {v6}");
        let skb = &d[0].skb;
        assert_eq!(skb.gso_type, gso::FRAGLIST | gso::UDP_L4);
        assert_eq!((skb.gso_size, skb.gso_segs), (1000, 4));
        assert_eq!(
            skb.layout(),
            Layout {
                frags: 0,
                frag_list: vec![0, 0, 0]
            }
        );
        // udp_gro_receive verified the checksum (level 0); the fraglist completion adds
        // one level, and leaves the UDP checksum alone.
        assert_eq!((skb.ip_summed, skb.csum_level), (IpSummed::Unnecessary, 1));
        let b = skb.to_vec();
        assert_eq!(be16(&b, hdr4(v6) - 2), orig_check);
        assert_eq!(usize::from(be16(&b, hdr4(v6) - 4)), 4008);
    }
}

#[test]
fn a_udp_gro_socket_wins_over_rx_gro_list() {
    let f = Feat {
        socket: true,
        ..LIST
    };
    let d = go(&LINUX_6_18, f, train(false, 3, 1000, |_, _| {}));
    assert_eq!(d[0].skb.gso_type, gso::UDP_L4);
    assert_eq!(d[0].skb.ip_summed, IpSummed::Partial);
}

#[test]
fn a_shorter_segment_merges_and_ends_the_train() {
    let d = go(
        &LINUX_6_18,
        SOCKET,
        train(false, 4, 1000, |k, d| {
            if k == 2 {
                d.payload = 600;
            }
        }),
    );
    assert_eq!(lens(&d), vec![42 + 2600, 42 + 1000]);
    assert_eq!(end_reason(&d[0]), Some(reason::UDP_SHORT));
    assert_eq!(d[0].skb.gso_size, 1000);
}

#[test]
fn a_bigger_segment_completes_the_held_skb_and_is_held_anew() {
    let d = go(
        &LINUX_6_18,
        SOCKET,
        train(false, 4, 1000, |k, d| {
            if k >= 2 {
                d.payload = 1200;
            }
        }),
    );
    assert_eq!(lens(&d), vec![42 + 2000, 42 + 2400]);
    assert_eq!(end_reason(&d[0]), Some(reason::UDP_BIGGER));
    assert_eq!(d[1].skb.model.start, Some(reason::UDP_BIGGER));
    assert_eq!(d[1].skb.gso_size, 1200);
}

#[test]
fn checksum_and_length_faults_go_up_unmerged() {
    type Edit = fn(&mut Dgram);
    let cases: [(Edit, Reason); 3] = [
        (|d| d.check = Some(0x1234), reason::UDP_CSUM),
        (|d| d.check = Some(0), reason::UDP_ZERO_CSUM),
        (|d| d.len_delta = -2, reason::UDP_LEN),
    ];
    for (edit, why) in cases {
        let d = go(
            &LINUX_6_18,
            SOCKET,
            train(false, 4, 1000, |k, d| {
                if k == 2 {
                    edit(d);
                }
                // 3 carries on the held skb's IP IDs (100, 101, 102).
                d.id = 100 + k.min(2) as u16;
            }),
        );
        // 2 goes up first; 3 merges into 0-1, held until the end of the poll.
        assert_eq!(lens(&d), vec![1042, 3042], "{}", why.name);
        assert_eq!(d[0].skb.model.start, Some(why));
    }
}

#[test]
fn different_ports_are_different_flows() {
    let d = go(
        &LINUX_6_18,
        SOCKET,
        train(false, 6, 1000, |k, d| {
            d.sport = 40000 + (k % 2) as u16;
            // Each flow's IP IDs increment on their own (inet_gro_flush checks them).
            d.id = 100 + (k / 2) as u16 + 1000 * (k % 2) as u16;
        }),
    );
    assert_eq!(lens(&d), vec![42 + 3000, 42 + 3000]);
}

#[test]
fn udp_gro_cnt_max_completes_at_64_segments() {
    // 64 frames in one poll (NAPI_POLL_WEIGHT), so only UDP_GRO_CNT_MAX ends the skb.
    let d = go(&LINUX_6_18, SOCKET, train(false, 64, 100, |_, _| {}));
    assert_eq!(lens(&d), vec![42 + 6400]);
    assert_eq!(d[0].skb.gso_segs, 64);
    assert_eq!(end_reason(&d[0]), Some(reason::UDP_CNT_MAX));
}

#[test]
fn sixty_four_k_stops_the_merge() {
    // 47 x 1400 = 65800 payload bytes: the 47th does not fit under 65536.
    let d = go(&LINUX_6_18, SOCKET, train(false, 47, 1400, |_, _| {}));
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].skb.gso_segs, 46);
    assert_eq!(d[1].skb.model.start, Some(reason::GRO_64K));
}

#[test]
fn the_ip_level_rules_apply_to_udp_since_the_flush_check() {
    // A TTL change flushes on 6.18 (gro_receive_network_flush) and 6.1 (p->flush):
    // 2 starts a new skb, which 3 (same TTL, next ID) joins.
    for p in [&LINUX_6_18, &LINUX_6_1] {
        let d = go(
            p,
            SOCKET,
            train(false, 4, 1000, |k, d| {
                if k >= 2 {
                    d.ttl = 63;
                }
            }),
        );
        assert_eq!(lens(&d), vec![2042, 2042], "{}", p.name);
        assert_eq!(d[1].skb.model.start, Some(reason::IPV4_TTL), "{}", p.name);
    }
    // The IPv4 ID: 6.18's inet_gro_flush wants it fixed or incrementing; 6.1 checks the
    // ID at TCP only (flush_id), so UDP merges whatever the ID.
    let jumpy = |_: usize, d: &mut Dgram| d.id = d.id.wrapping_mul(37);
    assert_eq!(
        lens(&go(&LINUX_6_18, SOCKET, train(false, 3, 1000, jumpy))).len(),
        3
    );
    assert_eq!(
        lens(&go(&LINUX_6_1, SOCKET, train(false, 3, 1000, jumpy))).len(),
        1
    );
    // IPv6: a hop limit change.
    let d = go(
        &LINUX_6_18,
        SOCKET,
        train(true, 3, 1000, |k, d| {
            if k == 2 {
                d.ttl = 1;
            }
        }),
    );
    assert_eq!(d[1].skb.model.start, Some(reason::IPV6_HOPLIMIT));
}

#[test]
fn four_nineteen_has_no_plain_udp_gro() {
    let d = go(&LINUX_4_19, SOCKET, train(false, 3, 1000, |_, _| {}));
    assert_eq!(lens(&d), vec![1042; 3]);
    assert_eq!(d[0].skb.model.start, Some(reason::UDP_NO_GRO));
    let raw = super::plan::RawGro {
        udp_gro_socket: Some(vec![DPORT]),
        ..Default::default()
    };
    let e = super::plan::gro_plan(Some(&raw), &LINUX_4_19.gro, "linux-4.19", true).unwrap_err();
    assert!(e.starts_with("gro.udp_gro_socket: linux-4.19"), "{e}");
}

#[test]
fn plan_rejects_bad_sockets() {
    let g = |ports: Vec<u16>| {
        let raw = super::plan::RawGro {
            udp_gro_socket: Some(ports),
            ..Default::default()
        };
        super::plan::gro_plan(Some(&raw), &LINUX_6_18.gro, "linux-6.18", true)
    };
    assert!(g(vec![0]).unwrap_err().contains("port 0"));
    assert!(g(vec![5, 5]).unwrap_err().contains("twice"));
    assert!(g(vec![4789]).unwrap_err().contains("VXLAN"));
    assert_eq!(g(vec![6001, 6002]).unwrap().udp_gro_ports, vec![6001, 6002]);
}

/// VXLAN over an IPv6 outer header: an IPv4-outer frame of `frames::Outer::vxlan` (zero
/// UDP checksum) with its Ethernet and IPv4 headers replaced by Ethernet and IPv6.
fn vxlan6(k: usize) -> Vec<u8> {
    use super::frames::{Outer, Tcp4};
    let inner = Tcp4 {
        seq: 1000 + 1350 * k as u32,
        id: 1 + k as u16,
        payload: 1350,
        ..Tcp4::default()
    }
    .build();
    let v4 = Outer::default().vxlan(50000, 42, false, &inner);
    let udp = &v4[34..];
    let mut f = v4[..12].to_vec();
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend_from_slice(&(udp.len() as u16).to_be_bytes());
    f.extend_from_slice(&[17, 64]);
    f.extend_from_slice(&addr6(1));
    f.extend_from_slice(&addr6(2));
    f.extend_from_slice(udp);
    f
}

#[test]
fn udp6_gro_receive_finds_the_vxlan_socket_and_merges_the_inner_flow() {
    let frames: Vec<Vec<u8>> = (0..4).map(vxlan6).collect();
    let one = frames[0].len();
    let d = go(&LINUX_6_18, Feat::default(), frames);
    assert_eq!(lens(&d), vec![one + 3 * 1350]);
    let skb = &d[0].skb;
    assert_eq!(skb.gso_type & gso::UDP_TUNNEL, gso::UDP_TUNNEL);
    assert_eq!(skb.gso_type & gso::TCPV4, gso::TCPV4);
    assert!(skb.encapsulation);
    let b = skb.to_vec();
    // ipv6_gro_complete and udp_gro_complete rewrote the outer lengths.
    assert_eq!(usize::from(be16(&b, 18)), b.len() - 54);
    assert_eq!(usize::from(be16(&b, 58)), b.len() - 54);
    // The same frames to a port with no VXLAN socket are plain UDP: not merged.
    let mut frames: Vec<Vec<u8>> = (0..4).map(vxlan6).collect();
    for f in &mut frames {
        f[56..58].copy_from_slice(&4790u16.to_be_bytes());
    }
    let d = go(&LINUX_6_18, Feat::default(), frames);
    assert_eq!(d.len(), 4);
    assert_eq!(d[0].skb.model.start, Some(reason::UDP_NO_GRO));
}
