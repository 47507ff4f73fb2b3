//! Tests of skb.rs.

use super::*;
use crate::consts::{ETH_P_8021Q, NET_SKB_PAD};

fn tagged_frame() -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 0x02, // dst
        0x02, 0, 0, 0, 0, 0x01, // src
        0x81, 0x00, 0x60, 0x64, // 802.1Q pcp 3 vid 100
        0x08, 0x00, // IPv4
    ];
    f.extend_from_slice(&[0x45; 20]);
    f
}

#[test]
fn push_pull_put_move_data_and_respect_limits() {
    let mut skb = SkBuff::alloc(4, 8);
    assert_eq!(skb.headroom(), 4);
    skb.put_data(&[1, 2, 3]).unwrap();
    assert_eq!(skb.linear(), &[1, 2, 3]);
    skb.push(2).unwrap().copy_from_slice(&[9, 8]);
    assert_eq!(skb.linear(), &[9, 8, 1, 2, 3]);
    assert_eq!(
        skb.push(3).unwrap_err(),
        SkbError::Under {
            need: 3,
            headroom: 2
        }
    );
    skb.pull(1).unwrap();
    assert_eq!(skb.linear(), &[8, 1, 2, 3]);
    assert!(skb.put(6).is_err());
    assert_eq!(skb.ops.allocations, 1);
    assert_eq!(skb.ops.bytes_copied_in, 3);
}

#[test]
fn untag_moves_the_outer_tag_into_hwaccel_and_memmoves_the_macs() {
    let frame = tagged_frame();
    let mut skb = SkBuff::from_frame(&frame, NET_SKB_PAD, frame.len());
    assert!(skb.vlan_untag());
    assert_eq!(
        skb.vlan,
        Some(VlanTag {
            proto: 0x8100,
            tci: 0x6064
        })
    );
    assert_eq!(skb.protocol, ETH_P_IP);
    assert_eq!(skb.len(), frame.len() - 4);
    assert_eq!(&skb.linear()[..12], &frame[..12]);
    assert_eq!(&skb.linear()[12..14], &[0x08, 0x00]);
    assert_eq!(skb.ops.bytes_memmoved, 12);
}

#[test]
fn push_inside_restores_the_in_band_frame_and_sets_protocol_to_the_tpid() {
    let frame = tagged_frame();
    let mut skb = SkBuff::from_frame(&frame, NET_SKB_PAD, frame.len());
    skb.vlan_untag();
    skb.vlan_hwaccel_push_inside();
    assert_eq!(skb.to_vec(), frame);
    assert_eq!(skb.vlan, None);
    assert_eq!(skb.protocol, ETH_P_8021Q);
    assert_eq!(skb.ops.bytes_memmoved, 24);
    assert_eq!(skb.ops.allocations, 1);
}

#[test]
fn push_inside_without_headroom_reallocates() {
    let frame = tagged_frame();
    let mut skb = SkBuff::from_frame(&frame, 0, frame.len());
    skb.vlan_untag();
    // Untag pulled 4 bytes, so there are exactly 4 of headroom: no realloc.
    skb.vlan_hwaccel_push_inside();
    assert_eq!(skb.ops.allocations, 1);
    let mut skb = SkBuff::from_frame(&frame[4..], 0, frame.len() - 4);
    skb.vlan_hwaccel_put_tag(0x88a8, 7);
    skb.vlan_hwaccel_push_inside();
    assert_eq!(skb.ops.allocations, 2);
    assert_eq!(&skb.linear()[12..16], &[0x88, 0xa8, 0x00, 0x07]);
}

#[test]
fn copy_bits_crosses_the_linear_paged_boundary() {
    let frame: Vec<u8> = (0..40u8).collect();
    let mut skb = SkBuff::from_frame(&frame, 16, 10);
    assert_eq!(skb.headlen(), 10);
    assert_eq!(skb.data_len(), 30);
    let mut out = [0u8; 6];
    assert_eq!(skb.copy_bits_to_user(7, &mut out), 6);
    assert_eq!(out, [7, 8, 9, 10, 11, 12]);
    assert_eq!(skb.copy_bits_to_user(38, &mut out), 2);
    assert_eq!(skb.copy_bits_to_user(40, &mut out), 0);
    assert_eq!(skb.ops.bytes_copied_to_user, 8);
    assert_eq!(skb.byte(39), Some(39));
    assert_eq!(skb.byte(40), None);
}

#[test]
fn gso_names_are_kernel_names() {
    assert_eq!(gso::names(gso::TCPV4 | gso::DODGY), "TCPV4|DODGY");
    assert_eq!(gso::names(0), "0");
    assert_eq!(gso::names(1 << 30), "0x40000000");
}

#[test]
fn paged_bytes_are_read_in_order_across_frags_and_frag_list() {
    // Linear 0 1, one frag 2 3 (from_frame), a frag at offset 1 of its page (4 5), and a
    // chained skb pulled past two bytes (6 7 8).
    let mut skb = SkBuff::from_frame(&[0, 1, 2, 3], 8, 2);
    skb.push_frag(SkbFrag::new(vec![9, 4, 5, 9], 1, 2));
    let mut chained = SkBuff::from_frame(&[9, 9, 6, 7, 8], 0, 5);
    chained.pull_across(2);
    skb.push_frag_list(chained);
    assert_eq!((skb.headlen(), skb.data_len(), skb.len()), (2, 7, 9));
    assert_eq!(skb.nr_frags(), 2);
    assert_eq!(skb.tailroom(), 0);
    assert_eq!(skb.to_vec(), (0..9).collect::<Vec<u8>>());
    let mut out = [0u8; 7];
    assert_eq!(skb.copy_bits_to_user(1, &mut out), 7);
    assert_eq!(out, [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(skb.copy_bits_to_user(6, &mut out), 3);
    assert_eq!(&out[..3], &[6, 7, 8]);
    assert_eq!(skb.ops.bytes_copied_to_user, 10);
    assert_eq!(
        (skb.byte(5), skb.byte(8), skb.byte(9)),
        (Some(5), Some(8), None)
    );
}

#[test]
fn a_stolen_head_becomes_a_frag_at_the_payload_and_pull_across_eats_frags() {
    let mut skb = SkBuff::from_frame(&[1, 2, 3, 4, 5], 3, 5);
    let f = skb.steal_head(2);
    // Head buffer: 3 bytes of headroom, then the frame; the frag starts at 3 + 2.
    assert_eq!((f.off(), f.bytes()), (5, &[3u8, 4, 5][..]));
    assert_eq!(skb.headlen(), 0);
    // Two linear bytes, three paged: pulling four eats the linear ones and two paged.
    let mut skb = SkBuff::from_frame(&[1, 2, 3, 4, 5], 0, 2);
    skb.pull_across(4);
    assert_eq!((skb.headlen(), skb.data_len()), (0, 1));
    assert_eq!(skb.to_vec(), vec![5]);
    assert_eq!(skb.frags()[0].off(), 2);
}

#[test]
fn reset_in_place_leaves_the_same_skb_as_a_fresh_one() {
    // Every field away from its default, GRO's cb and model included, then a reset:
    // the skb must be the fresh alloc_skb one, whatever reset_keeping_page forgot.
    let mut skb = SkBuff::from_frame(&tagged_frame(), 8, 20);
    skb.push_frag(SkbFrag::new(vec![1, 2, 3], 0, 3));
    skb.push_frag_list(SkBuff::from_frame(&[9; 10], 0, 10));
    skb.protocol = ETH_P_IP;
    skb.reset_mac_header();
    skb.set_network_header(14);
    skb.set_transport_header(34);
    skb.set_inner_mac_header(50);
    skb.set_inner_network_header(64);
    skb.set_inner_transport_header(84);
    skb.vlan_hwaccel_put_tag(ETH_P_8021Q, 7);
    skb.partial_csum_set(34, 16);
    skb.csum_level = 2;
    (skb.gso_size, skb.gso_segs, skb.gso_type) = (1400, 3, gso::TCPV4);
    skb.encapsulation = true;
    skb.head_frag = true;
    skb.cb.data_offset = 54;
    skb.cb.count = 3;
    skb.cb.nomerge_also.push(crate::gro::reason::TCP_ACK);
    skb.model.frame = 9;
    skb.model.merged.push(10);
    let ops = skb.ops;
    skb.reset(16, 100);
    let mut fresh = SkBuff::alloc(16, 100);
    // reset keeps the op counters and counts one more allocation.
    fresh.ops = OpCounters {
        allocations: ops.allocations + 1,
        ..ops
    };
    assert_eq!(format!("{skb:?}"), format!("{fresh:?}"));
    assert_eq!((skb.len(), skb.headroom(), skb.tailroom()), (0, 16, 100));
}
