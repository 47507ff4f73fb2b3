//! Per-rule tests of tun_put_user. Every expected byte and counter here is worked out by
//! hand from the rule it cites (docs/tun-read.md), not copied from output.

use super::*;
use crate::consts::{ETH_P_8021Q, ETH_P_IP, NET_SKB_PAD};
use crate::profile::{LINUX_3_12, LINUX_4_19, LINUX_6_18};
use crate::skb::{gso, IpSummed, SkBuff};
use crate::tun::{TunConfig, TunDevice};

const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

/// An untagged IPv4 frame of `len` bytes: MACs, 0x0800, then bytes 14.. = i as u8.
fn frame(len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&DST);
    f.extend_from_slice(&SRC);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend((14..len).map(|i| i as u8));
    f
}

fn skb_of(f: &[u8]) -> SkBuff {
    let mut skb = SkBuff::from_frame(f, NET_SKB_PAD, f.len());
    skb.protocol = ETH_P_IP;
    skb
}

/// The skb of `frame(len)` with a hw-accel tag (proto, tci).
fn tagged_skb(len: usize, proto: u16, tci: u16) -> SkBuff {
    let mut skb = skb_of(&frame(len));
    skb.vlan_hwaccel_put_tag(proto, tci);
    skb
}

fn dev(cfg: TunConfig) -> TunDevice {
    TunDevice::new(cfg)
}

fn no_pi() -> TunConfig {
    TunConfig {
        no_pi: true,
        ..TunConfig::default()
    }
}

fn read(
    d: &mut TunDevice,
    skb: SkBuff,
    size: usize,
    rules: &TunReadRules,
) -> (ReadOutcome, Vec<u8>) {
    assert!(d.xmit(skb));
    let mut buf = vec![0xee; size];
    let o = d.read(&mut buf, rules);
    (o, buf)
}

#[test]
fn r1_3_no_pi_no_vnet_is_the_frame_and_counts_it() {
    let f = frame(60);
    let mut d = dev(no_pi());
    let (o, buf) = read(&mut d, skb_of(&f), 2048, &LINUX_6_18.tun_read);
    assert_eq!(o.result, Ok(60));
    assert_eq!(&buf[..60], &f[..]);
    assert_eq!((d.stats.tx_packets, d.stats.tx_bytes), (1, 60));
}

#[test]
fn r1_5_pi_flags_host_order_proto_network_order_and_strip() {
    let f = frame(60);
    let mut d = dev(TunConfig::default());
    let (o, buf) = read(&mut d, skb_of(&f), 64, &LINUX_6_18.tun_read);
    assert_eq!(o.result, Ok(64));
    assert_eq!(&buf[..4], &[0x00, 0x00, 0x08, 0x00]);
    assert_eq!(&buf[4..64], &f[..]);
    // One byte short of PI + frame: TUN_PKT_STRIP (0x0001, little-endian u16).
    let (o, buf) = read(&mut d, skb_of(&f), 63, &LINUX_6_18.tun_read);
    assert_eq!(o.result, Ok(63));
    assert_eq!(&buf[..4], &[0x01, 0x00, 0x08, 0x00]);
    assert_eq!(o.put_user_ret, Some(64));
    // docs/tun-read.md#counters: tx_bytes counts the full frame both times.
    assert_eq!((d.stats.tx_packets, d.stats.tx_bytes), (2, 120));
}

#[test]
fn r1_5_buffer_smaller_than_pi_is_einval_and_consumes_silently() {
    let mut d = dev(TunConfig::default());
    let (o, buf) = read(&mut d, skb_of(&frame(60)), 3, &LINUX_6_18.tun_read);
    assert_eq!(o.result, Err(Errno::EINVAL));
    assert_eq!(buf, vec![0xee; 3]);
    assert_eq!(d.stats, Default::default());
    assert_eq!(d.queued(), 0);
}

#[test]
fn r1_9_vnet_too_short_is_einval_after_the_pi_was_written() {
    let mut d = dev(TunConfig {
        vnet_hdr: true,
        ..TunConfig::default()
    });
    let (o, buf) = read(&mut d, skb_of(&frame(60)), 13, &LINUX_6_18.tun_read);
    assert_eq!(o.result, Err(Errno::EINVAL));
    // PI + vnet = 14 > 13: flags STRIP, proto 0x0800 already in the buffer.
    assert_eq!(&buf[..4], &[0x01, 0x00, 0x08, 0x00]);
    assert_eq!(&buf[4..], &[0xee; 9]);
    assert_eq!(d.stats, Default::default());
}

#[test]
fn r1_9_vnet_padding_zeroed_since_6_15_and_left_alone_before() {
    let cfg = TunConfig {
        no_pi: true,
        vnet_hdr: true,
        vnet_hdr_sz: 12,
        ..TunConfig::default()
    };
    let f = frame(60);
    let (o, buf) = read(&mut dev(cfg.clone()), skb_of(&f), 100, &LINUX_6_18.tun_read);
    assert_eq!(o.result, Ok(72));
    assert_eq!(&buf[..12], &[0; 12]);
    assert_eq!(&buf[12..72], &f[..]);
    let (_, buf) = read(&mut dev(cfg), skb_of(&f), 100, &LINUX_4_19.tun_read);
    assert_eq!(&buf[..12], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xee, 0xee]);
}

#[test]
fn r1_10_tag_spliced_after_the_macs_for_8021q_and_8021ad() {
    for (proto, tci) in [(0x8100u16, 0x6064u16), (0x88a8, 0x000a), (0x8100, 0xffff)] {
        let mut d = dev(no_pi());
        let (o, buf) = read(
            &mut d,
            tagged_skb(60, proto, tci),
            2048,
            &LINUX_6_18.tun_read,
        );
        assert_eq!(o.result, Ok(64));
        let f = frame(60);
        let mut want = f[..12].to_vec();
        want.extend_from_slice(&proto.to_be_bytes());
        want.extend_from_slice(&tci.to_be_bytes());
        want.extend_from_slice(&f[12..]);
        assert_eq!(&buf[..64], &want[..]);
        assert_eq!((d.stats.tx_packets, d.stats.tx_bytes), (1, 64));
    }
}

#[test]
fn r1_10_short_buffers_cut_macs_tag_or_payload_and_still_count_all() {
    let f = frame(60);
    // (buffer, bytes expected): inside the MACs, inside the tag, one short.
    let tag = [0x81, 0x00, 0x60, 0x64];
    for (size, want_len) in [(8usize, 8usize), (12, 12), (14, 14), (63, 63)] {
        let mut d = dev(no_pi());
        let (o, buf) = read(
            &mut d,
            tagged_skb(60, 0x8100, 0x6064),
            size,
            &LINUX_6_18.tun_read,
        );
        assert_eq!(o.result, Ok(want_len), "buffer {size}");
        let mut want = f[..12].to_vec();
        want.extend_from_slice(&tag);
        want.extend_from_slice(&f[12..]);
        assert_eq!(&buf[..want_len], &want[..want_len], "buffer {size}");
        assert_eq!(o.put_user_ret, Some(64));
        assert_eq!(d.stats.tx_bytes, 64, "buffer {size}");
    }
}

#[test]
fn r1_7_csum_start_shifted_by_the_spliced_tag() {
    let cfg = TunConfig {
        no_pi: true,
        vnet_hdr: true,
        ..TunConfig::default()
    };
    let mut skb = tagged_skb(100, 0x8100, 7);
    skb.partial_csum_set(34, 6);
    let (o, buf) = read(&mut dev(cfg), skb, 200, &LINUX_6_18.tun_read);
    // flags NEEDS_CSUM, csum_start 34 + 4 = 38 (0x26), csum_offset 6, little-endian.
    assert_eq!(&buf[..10], &[1, 0, 0, 0, 0, 0, 0x26, 0, 6, 0]);
    assert_eq!(o.result, Ok(10 + 104));
}

#[test]
fn r1_7_unsupported_gso_is_einval_with_no_counter() {
    let cfg = TunConfig {
        no_pi: true,
        vnet_hdr: true,
        ..TunConfig::default()
    };
    let mut skb = skb_of(&frame(200));
    skb.gso_size = 100;
    skb.gso_type = gso::UDP;
    skb.ip_summed = IpSummed::Partial;
    let mut d = dev(cfg);
    let (o, _) = read(&mut d, skb, 400, &LINUX_6_18.tun_read);
    assert_eq!(o.result, Err(Errno::EINVAL));
    assert_eq!(d.stats, Default::default());
}

#[test]
fn r1_2_zero_length_read_returns_0_and_leaves_the_frame() {
    let mut d = dev(no_pi());
    assert!(d.xmit(skb_of(&frame(60))));
    let o = d.read(&mut [], &LINUX_6_18.tun_read);
    assert_eq!(o.result, Ok(0));
    assert_eq!(d.queued(), 1);
    let o = d.read(&mut [0u8; 100], &LINUX_6_18.tun_read);
    assert_eq!(o.result, Ok(60));
    let o = d.read(&mut [0u8; 100], &LINUX_6_18.tun_read);
    assert_eq!(o.result, Err(Errno::EAGAIN));
}

#[test]
fn r1_1_full_ring_drops_with_tx_dropped() {
    let mut d = dev(TunConfig {
        tx_queue_len: 2,
        ..no_pi()
    });
    assert!(d.xmit(skb_of(&frame(60))));
    assert!(d.xmit(skb_of(&frame(60))));
    assert!(!d.xmit(skb_of(&frame(60))));
    assert_eq!(d.stats.tx_dropped, 1);
    assert_eq!(
        d.stats.tx_packets, 0,
        "docs/tun-read.md#tx-ring: tx_packets counts on read only"
    );
}

#[test]
fn offload_off_inserts_in_software_same_bytes_but_proto_is_the_tpid() {
    // validate_xmit_vlan -> __vlan_hwaccel_push_inside -> vlan_insert_tag_set_proto.
    let f = frame(60);
    let hw = {
        let mut d = dev(TunConfig::default());
        read(
            &mut d,
            tagged_skb(60, 0x8100, 0x6064),
            2048,
            &LINUX_6_18.tun_read,
        )
    };
    let sw = {
        let mut d = dev(TunConfig {
            tx_vlan_ctag: false,
            ..TunConfig::default()
        });
        read(
            &mut d,
            tagged_skb(60, 0x8100, 0x6064),
            2048,
            &LINUX_6_18.tun_read,
        )
    };
    assert_eq!(hw.0.result, Ok(68));
    assert_eq!(sw.0.result, Ok(68));
    // The frames are byte-identical: MACs, 81 00 60 64, the rest.
    assert_eq!(hw.1[4..68], sw.1[4..68]);
    assert_eq!(&sw.1[4 + 12..4 + 16], &[0x81, 0x00, 0x60, 0x64]);
    assert_eq!(&sw.1[4 + 16..68], &f[12..]);
    // The PI proto differs: the inner EtherType with hw-accel, the TPID in software.
    assert_eq!(hw.0.pi, Some((0, ETH_P_IP)));
    assert_eq!(sw.0.pi, Some((0, ETH_P_8021Q)));
    // The software path memmoves the 12 MAC bytes; the splice does not.
    assert_eq!(hw.0.ops.bytes_memmoved, 0);
    assert_eq!(sw.0.ops.bytes_memmoved, 12);
}

#[test]
fn r1_12_linux_3_12_returns_bytes_written_and_counts_room() {
    let r = &LINUX_3_12.tun_read;
    // Untagged, 50-byte buffer on a 60-byte frame: returns 50, tx_bytes += 50.
    let mut d = dev(no_pi());
    let (o, _) = read(&mut d, skb_of(&frame(60)), 50, r);
    assert_eq!((o.result, d.stats.tx_bytes), (Ok(50), 50));
    // Tagged, whole: returns 64, tx_bytes += 64 - 16 = 48.
    let mut d = dev(no_pi());
    let (o, _) = read(&mut d, tagged_skb(60, 0x8100, 1), 2048, r);
    assert_eq!((o.result, d.stats.tx_bytes), (Ok(64), 48));
    // Tagged, buffer ending inside the tag: tx_bytes += 0.
    let mut d = dev(no_pi());
    let (o, _) = read(&mut d, tagged_skb(60, 0x8100, 1), 14, r);
    assert_eq!(
        (o.result, d.stats.tx_bytes, d.stats.tx_packets),
        (Ok(14), 0, 1)
    );
}

#[test]
fn r1_12_linux_3_12_strip_ignores_vnet_and_tag() {
    let cfg = TunConfig {
        vnet_hdr: true,
        ..TunConfig::default()
    };
    // PI 4 + vnet 10 + frame 60 = 74; a 64-byte buffer truncates the frame by 10, but
    // 3.12 compares buffer - 4 = 60 with skb->len = 60: no STRIP.
    let (o, _) = read(
        &mut dev(cfg.clone()),
        skb_of(&frame(60)),
        64,
        &LINUX_3_12.tun_read,
    );
    assert_eq!(o.pi, Some((0, ETH_P_IP)));
    let (o, _) = read(&mut dev(cfg), skb_of(&frame(60)), 64, &LINUX_6_18.tun_read);
    assert_eq!(o.pi, Some((TUN_PKT_STRIP, ETH_P_IP)));
}
