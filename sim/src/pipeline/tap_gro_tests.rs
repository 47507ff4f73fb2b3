//! Pipeline tests: the real-kernel observations (docs/real-kernel.md#gro-on-tap) with
//! expectations worked out by hand from the kernel rules (docs/gro.md).

use super::*;
use crate::gro::frames::{Encapsulate, Tcp4};
use crate::gro::napi::End;
use crate::gro::reason;
use crate::profile::{LINUX_3_12, LINUX_4_19, LINUX_6_18};

fn plan(burst: usize, timeout: u64) -> GroPlan {
    GroPlan {
        burst,
        flush_timeout_ns: timeout,
        ..GroPlan::defaults(&LINUX_6_18.gro)
    }
}

fn run(profile: &KernelProfile, plan: &GroPlan, frames: Vec<Vec<u8>>) -> TapGroRun {
    let mut r = TapGroRun::new(profile, plan);
    for (i, f) in frames.into_iter().enumerate() {
        r.write(i as u64, 1_000_000_000 + i as u64 * 1000, f);
    }
    r.finish();
    r
}

fn lens(r: &TapGroRun) -> Vec<usize> {
    r.delivered.iter().map(|d| d.skb.len()).collect()
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

#[test]
fn ten_segments_with_a_1ms_timeout_become_one_14054_byte_packet() {
    // 10 x (14 + 20 + 20 + 1400) = 10 x 1454; merged: 54 + 14000 = 14054.
    let frames = Tcp4::default().stream(10);
    let r = run(&LINUX_6_18, &plan(1, 1_000_000), frames);
    assert_eq!(lens(&r), vec![14054]);
    let d = &r.delivered[0];
    assert_eq!(d.end, End::Timer);
    assert_eq!(d.skb.model.start, Some(reason::FLOW_NEW));
    let s = &d.skb;
    assert_eq!((s.gso_size, s.gso_segs), (1400, 10));
    assert_eq!(s.gso_type, crate::skb::gso::TCPV4);
    assert_eq!((s.checksum_start_offset(), s.csum_offset), (34, 16));
    let b = s.to_vec();
    // IPv4 tot_len = 14054 - 14 = 14040 = 0x36d8, and the header checksum verifies.
    assert_eq!(be16(&b, 16), 14040);
    assert!(crate::wire::checksum::ipv4_header_ok(&b[14..34]));
    // TCP check = folded pseudo-header: 0x0a00+0x0001+0x0a00+0x0002+6 = 0x1409, plus
    // the TCP length 14040-20 = 0x36c4: 0x4acd.
    assert_eq!(be16(&b, 34 + 16), 0x4acd);
    // The payload is the ten payloads back to back (byte i of each is i as u8).
    assert_eq!(b[54 + 1400 + 5], 5);
    // Frames 1..9 were chained on frag_list (blocking writes: kmalloc'ed heads).
    assert_eq!(s.layout().frag_list.len(), 9);
    assert_eq!(r.stats.rx_packets, 10);
    assert_eq!(r.stats.rx_bytes, 14540);
}

#[test]
fn without_a_timeout_every_write_polls_and_flushes() {
    let r = run(&LINUX_6_18, &plan(1, 0), Tcp4::default().stream(10));
    assert_eq!(lens(&r), vec![1454; 10]);
    assert!(r
        .delivered
        .iter()
        .all(|d| d.end == End::NapiComplete && d.skb.gso_size == 0));
    // The packets are untouched (count == 1: only gso_size is reset).
    assert_eq!(r.delivered[3].skb.to_vec(), Tcp4::default().stream(10)[3]);
}

#[test]
fn gro_off_passes_everything_up() {
    let mut p = plan(10, 1_000_000);
    p.feature = false;
    let r = run(&LINUX_6_18, &p, Tcp4::default().stream(10));
    assert_eq!(lens(&r), vec![1454; 10]);
    assert_eq!(r.delivered[0].skb.model.start, Some(reason::GRO_OFF));
}

#[test]
fn a_bad_checksum_on_segment_4_goes_up_before_the_held_segments() {
    let mut frames = Tcp4::default().stream(10);
    let mut bad = Tcp4 {
        seq: 1000 + 4 * 1400,
        id: 5,
        bad_tcp_csum: true,
        ..Tcp4::default()
    };
    bad.payload = 1400;
    frames[4] = bad.build();
    let r = run(&LINUX_6_18, &plan(1, 1_000_000), frames);
    // 1454 (segment 4 unheld), 54 + 4 x 1400 = 5654 (0-3, completed when 5 fails
    // tcp:seq), 54 + 5 x 1400 = 7054 (5-9, at the timer).
    assert_eq!(lens(&r), vec![1454, 5654, 7054]);
    assert_eq!(r.delivered[0].skb.model.start, Some(reason::TCP_CSUM));
    // Segment 5 fails two rules, in the kernel's order: its IP ID (6) is not held id
    // (1) + count (4), and its seq is not 1000 + 4 x 1400.
    assert_eq!(
        r.delivered[1].end,
        End::Frame {
            frame: 5,
            reason: reason::IPV4_ID,
            merged: false
        }
    );
    assert_eq!(r.delivered[2].skb.model.start, Some(reason::IPV4_ID));
    assert_eq!(r.delivered[2].skb.model.start_also, vec![reason::TCP_SEQ]);
}

#[test]
fn vxlan_over_the_napi_tap_merges_to_13604_and_13554_on_the_vxlan_device() {
    // Inner 1350-byte payloads: inner frame 1404, outer 1404 + 50 = 1454.
    // Merged: 104 bytes of headers + 13500 = 13604; the vxlan device sees 13604 - 50.
    for udp_csum in [false, true] {
        let inner = Tcp4 {
            payload: 1350,
            ..Tcp4::default()
        };
        let frames: Vec<Vec<u8>> = inner
            .stream(10)
            .encapsulated(7, |_, o, f| o.vxlan(50000, 42, udp_csum, f));
        let r = run(&LINUX_6_18, &plan(1, 1_000_000), frames);
        assert_eq!(lens(&r), vec![13604], "udp_csum {udp_csum}");
        let s = &r.delivered[0].skb;
        assert_eq!(s.inner_mac_header, Some(50));
        assert_eq!(s.len() - 50, 13554);
        let b = s.to_vec();
        assert_eq!(be16(&b, 16), 13590, "outer tot_len");
        assert_eq!(be16(&b, 38), 13570, "udp len");
        assert_eq!(be16(&b, 66), 13540, "inner tot_len");
        assert!(crate::wire::checksum::ipv4_header_ok(&b[14..34]));
        assert!(crate::wire::checksum::ipv4_header_ok(&b[64..84]));
        let want = if udp_csum {
            crate::skb::gso::UDP_TUNNEL_CSUM
        } else {
            crate::skb::gso::UDP_TUNNEL
        };
        assert_eq!(s.gso_type, want | crate::skb::gso::TCPV4);
        assert_eq!((s.csum_start, s.gso_size, s.gso_segs), (84, 1350, 10));
    }
}

#[test]
fn gre_teb_merges_only_with_an_eth_p_teb_offload() {
    let frames: Vec<Vec<u8>> = Tcp4::default()
        .stream(10)
        .encapsulated(100, |_, o, f| o.gre_teb(Some(42), None, f));
    let on = run(&LINUX_6_18, &plan(1, 1_000_000), frames.clone());
    // 14 + 20 + 8 (GRE with key) + 14 + 20 + 20 = 96 bytes of headers + 14000.
    assert_eq!(lens(&on), vec![14096]);
    let s = &on.delivered[0].skb;
    assert_eq!(s.gso_type, crate::skb::gso::GRE | crate::skb::gso::TCPV4);
    assert!(s.encapsulation);
    assert_eq!(
        (
            s.inner_mac_header,
            s.inner_network_header,
            s.inner_transport_header
        ),
        (Some(42), Some(56), Some(76))
    );
    let mut off = plan(1, 1_000_000);
    off.teb_gro = false;
    let r = run(&LINUX_6_18, &off, frames);
    assert_eq!(lens(&r), vec![1496; 10]);
    assert_eq!(r.delivered[0].skb.model.start, Some(reason::TEB_NO_HANDLER));
}

#[test]
fn gretap_dev_length_is_the_merged_skb_from_the_inner_mac_on() {
    // A hand-built GRE-TEB stream: outer 14 + 20, GRE 4 + 4 (csum word) + 4 (key), inner
    // 14 + 20 + 20 + 1400. Merged: 14 + 20 + 12 + 54 + 14000 = 14100; the gretap device
    // (ip_gre.c: gretap_rcv path, __iptunnel_pull_header) sees it from the inner MAC on:
    // 14100 - 46 = 14054, the length of the same stream merged without a tunnel.
    use crate::trace::gro::gretap_dev_len;
    for (key, csum, hdr) in [
        (Some(42), None, 42),
        (None, None, 38),
        (Some(7), Some(true), 46),
    ] {
        let frames: Vec<Vec<u8>> = Tcp4::default()
            .stream(10)
            .encapsulated(100, |_, o, f| o.gre_teb(key, csum, f));
        assert_eq!(frames[0].len(), hdr + 1454);
        let r = run(&LINUX_6_18, &plan(1, 1_000_000), frames.clone());
        assert_eq!(lens(&r), vec![hdr + 54 + 14000], "{key:?} {csum:?}");
        let s = &r.delivered[0].skb;
        assert_ne!(s.gso_type & crate::skb::gso::GRE, 0);
        assert_eq!(s.inner_mac_header, Some(hdr));
        assert_eq!(gretap_dev_len(s), Some(14054), "{key:?} {csum:?}");
        // An unmerged GRE frame is no GSO skb: no gretap_dev line.
        let mut off = plan(1, 1_000_000);
        off.feature = false;
        let r = run(&LINUX_6_18, &off, frames);
        assert!(r.delivered.iter().all(|d| gretap_dev_len(&d.skb).is_none()));
    }
    // A VXLAN skb has a vxlan_dev length and no gretap_dev one.
    let frames: Vec<Vec<u8>> = Tcp4::default()
        .stream(4)
        .encapsulated(7, |_, o, f| o.vxlan(50000, 42, false, f));
    let r = run(&LINUX_6_18, &plan(1, 1_000_000), frames);
    assert_eq!(r.delivered.len(), 1);
    assert_eq!(gretap_dev_len(&r.delivered[0].skb), None);
    let (_, t) = scenario_lengths("gre-teb-on");
    assert!(t.contains("  gretap_dev: len 14054\n"), "{t}");
    assert!(!t.contains("vxlan_dev"), "{t}");
}

#[test]
fn sixty_four_kib_limit_splits_fifty_segments_at_46() {
    // p->len (from the IP header) + 1400 >= 65536 fails once 46 segments are held:
    // 40 + 46 x 1400 = 64440; + 1400 = 65840.
    let r = run(&LINUX_6_18, &plan(50, 0), Tcp4::default().stream(50));
    assert_eq!(lens(&r), vec![54 + 46 * 1400, 54 + 4 * 1400]);
    assert_eq!(
        r.delivered[0].end,
        End::Frame {
            frame: 46,
            reason: reason::GRO_64K,
            merged: false
        }
    );
}

#[test]
fn nonblocking_writes_fill_17_frags_before_frag_list() {
    let p = plan(30, 0);
    let mut r = TapGroRun::new(&LINUX_6_18, &p);
    r.nonblocking = true;
    for (i, f) in Tcp4::default().stream(30).into_iter().enumerate() {
        r.write(i as u64, 1_000_000_000 + i as u64 * 1000, f);
    }
    r.finish();
    let l = &r.delivered[0].skb.layout();
    // Frames 1-17 become the head's 17 frags; frame 18 is chained on frag_list (its
    // head pulled to the payload) and frames 19-29 become that skb's 11 frags.
    assert_eq!(l.frags, 17);
    assert_eq!(l.frag_list, vec![11]);
}

#[test]
fn merged_payloads_are_the_held_skbs_own_frags_and_frag_list_skbs() {
    let frames = Tcp4::default().stream(3);
    // Nonblocking (head_frag): frames 1 and 2 lend their head buffers as frags that
    // start at their payload (14 + 20 + 20 = 54 bytes in) and hold its 1400 bytes.
    let mut r = TapGroRun::new(&LINUX_6_18, &plan(3, 0));
    r.nonblocking = true;
    for (i, f) in frames.iter().enumerate() {
        r.write(i as u64, 1_000_000_000 + i as u64 * 1000, f.clone());
    }
    r.finish();
    let s = &r.delivered[0].skb;
    assert_eq!((s.headlen(), s.data_len(), s.len()), (1454, 2800, 4254));
    assert!(s.frag_list().is_empty());
    for (f, frame) in s.frags().iter().zip(&frames[1..]) {
        assert_eq!((f.off(), f.len()), (54, 1400));
        assert_eq!(f.bytes(), &frame[54..]);
    }
    // Blocking writes (kmalloc'ed heads): each later skb is chained on frag_list with
    // its data pulled to the payload.
    let r = run(&LINUX_6_18, &plan(3, 0), frames.clone());
    let s = &r.delivered[0].skb;
    assert_eq!(
        (s.nr_frags(), s.frag_list().len(), s.data_len()),
        (0, 2, 2800)
    );
    for (c, frame) in s.frag_list().iter().zip(&frames[1..]) {
        assert_eq!(c.linear(), &frame[54..]);
        assert_eq!(c.data_offset(), 54);
    }
    // Reading across the pieces: the last 4 head bytes and the first 4 of frame 1's
    // payload, as tun_put_user would copy them.
    let mut s = r.delivered[0].skb.clone();
    let mut out = [0u8; 8];
    assert_eq!(s.copy_bits_to_user(1450, &mut out), 8);
    assert_eq!(&out[..4], &s.linear()[1450..1454]);
    assert_eq!(&out[4..], &frames[1][54..58]);
}

#[test]
fn nine_flows_in_bucket_0_complete_the_oldest() {
    // Nine flows (source ports 1..9), one segment each, then a second round.
    let mut frames = Vec::new();
    for round in 0..2u32 {
        for f in 0..9u16 {
            frames.push(
                Tcp4 {
                    sport: 1000 + f,
                    seq: 1000 + round * 1400,
                    id: round as u16,
                    ..Tcp4::default()
                }
                .build(),
            );
        }
    }
    let r = run(&LINUX_6_18, &plan(18, 0), frames);
    // Frame 8 (flow 8) evicts flow 0's skb; frame 9 (flow 0 again) finds no held skb and
    // evicts flow 1, and so on: every segment goes up alone.
    assert_eq!(r.delivered[0].end, End::BucketFull { frame: 8 });
    assert_eq!(r.delivered.len(), 18);
    // 3.12 passes the ninth flow up unheld instead.
    let r = run(
        &LINUX_3_12,
        &GroPlan {
            burst: 18,
            ..GroPlan::defaults(&LINUX_3_12.gro)
        },
        {
            let mut v = Vec::new();
            for round in 0..2u32 {
                for f in 0..9u16 {
                    v.push(
                        Tcp4 {
                            sport: 1000 + f,
                            seq: 1000 + round * 1400,
                            id: round as u16,
                            ..Tcp4::default()
                        }
                        .build(),
                    );
                }
            }
            v
        },
    );
    assert_eq!(r.delivered[0].skb.model.start, Some(reason::LIST_FULL));
    assert_eq!(lens(&r).iter().filter(|l| **l == 54 + 2800).count(), 8);
}

#[test]
fn fixed_ids_merge_on_6_18_and_4_19_with_df_and_need_df_on_4_19() {
    let fixed: Vec<Vec<u8>> = (0..4u32)
        .map(|k| {
            Tcp4 {
                seq: 1000 + k * 1400,
                id: 7,
                ..Tcp4::default()
            }
            .build()
        })
        .collect();
    let r = run(&LINUX_6_18, &plan(4, 0), fixed.clone());
    assert_eq!(lens(&r), vec![54 + 5600]);
    assert_eq!(
        r.delivered[0].skb.gso_type,
        crate::skb::gso::TCPV4 | crate::skb::gso::TCP_FIXEDID
    );
    let r = run(&LINUX_4_19, &plan(4, 0), fixed);
    assert_eq!(lens(&r), vec![54 + 5600]);
    assert_eq!(r.delivered[0].skb.gso_type, crate::skb::gso::TCPV4);
    let nodf: Vec<Vec<u8>> = (0..4u32)
        .map(|k| {
            Tcp4 {
                seq: 1000 + k * 1400,
                id: 7,
                df: false,
                ..Tcp4::default()
            }
            .build()
        })
        .collect();
    // 6.18 no longer needs DF for a fixed ID; 4.19 does (ID must be held + count).
    assert_eq!(
        lens(&run(&LINUX_6_18, &plan(4, 0), nodf.clone())),
        vec![54 + 5600]
    );
    let r = run(&LINUX_4_19, &plan(4, 0), nodf);
    assert_eq!(lens(&r), vec![1454; 4]);
    assert_eq!(r.delivered[1].skb.model.start, Some(reason::IPV4_ID));
}

fn scenario_lengths(name: &str) -> (Vec<usize>, String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/tap-gro");
    let sc = Scenario::load(&dir.join(format!("{name}.toml"))).expect("scenario loads");
    let frames = crate::pcap::read_all(&sc.input).expect("pcap reads");
    let out = run_tap_gro(&sc, &frames).expect("runs");
    (
        out.delivered.iter().map(|(_, b)| b.len()).collect(),
        out.trace,
    )
}

#[test]
fn every_tap_gro_scenario_runs_and_the_real_observations_hold() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/tap-gro");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("scenarios/tap-gro")
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".toml")
                .map(String::from)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 30, "{}", names.len());
    for n in &names {
        let (l, trace) = scenario_lengths(n);
        // Nothing delivered only where XDP kept every frame from the stack.
        assert!(!l.is_empty() || trace.contains("\n  xdp: "), "{n}");
        assert!(trace.contains("totals:"), "{n}");
    }
    assert_eq!(scenario_lengths("tcp-napi-timeout").0, vec![14054]);
    assert_eq!(scenario_lengths("tcp-napi-no-timeout").0, vec![1454; 10]);
    assert_eq!(scenario_lengths("tcp-gro-off").0, vec![1454; 10]);
    assert_eq!(
        scenario_lengths("tcp-bad-csum-mid-burst").0,
        vec![1454, 5654, 7054]
    );
    let (l, t) = scenario_lengths("vxlan-napi-timeout");
    assert_eq!(l, vec![13604]);
    assert!(t.contains("vxlan_dev: len 13554"), "{t}");
    assert_eq!(scenario_lengths("gre-teb-off").0, vec![1496; 10]);
    assert_eq!(scenario_lengths("gre-teb-on").0, vec![14096]);
    // The combined scenarios, as the real kernel (6.18) delivered them: NEEDS_CSUM skips
    // the software check, a GSO (DODGY) write is flushed, a PI is skipped, a native
    // program runs before GRO, a generic one elides it, a dropping one leaves nothing.
    assert_eq!(scenario_lengths("vnet-needs-csum-bad-csum").0, vec![14054]);
    assert_eq!(
        scenario_lengths("vnet-none-bad-csum").0,
        vec![1454, 5654, 7054]
    );
    assert_eq!(scenario_lengths("vnet-gso-tcpv4-burst").0, vec![1454; 10]);
    assert_eq!(scenario_lengths("pi-burst").0, vec![14054]);
    assert_eq!(
        scenario_lengths("xdp-native-drop-gt1514-burst").0,
        vec![14054]
    );
    assert_eq!(scenario_lengths("xdpgeneric-elides-gro").0, vec![1454; 10]);
    assert!(scenario_lengths("xdp-drop-native-burst").0.is_empty());
}
