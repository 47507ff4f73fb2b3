//! The TCP echo behind a tun, fed as a virtio-net guest writes: CHECKSUM_PARTIAL segments
//! (the checksum field holding the pseudo-header sum) and a GSO (TSO) skb.

use sim::wire::checksum::{fold, pseudo_v4};
use smoltcp::wire::{Ipv4Packet, TcpPacket};

use super::*;

const GUEST: [u8; 4] = [10, 0, 0, 1];
const FAR: [u8; 4] = [10, 0, 0, 2];

/// An IPv4 TCP packet 10.0.0.1:40000 -> 10.0.0.2:7 with `flags` (SYN 0x02, ACK 0x10,
/// PSH 0x08), its TCP checksum left partial as skb's CHECKSUM_PARTIAL.
fn packet(seq: u32, ack: u32, flags: u8, payload: &[u8]) -> SkBuff {
    let tcp_len = 20 + payload.len();
    let mut f = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0];
    f[2..4].copy_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
    f.extend_from_slice(&GUEST);
    f.extend_from_slice(&FAR);
    let ip_check = sim::wire::checksum::checksum(&f);
    f[10..12].copy_from_slice(&ip_check.to_be_bytes());
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&TCP_ECHO_PORT.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&ack.to_be_bytes());
    f.extend_from_slice(&[5 << 4, flags, 0xff, 0xff]);
    f.extend_from_slice(&fold(pseudo_v4(GUEST, FAR, 6, tcp_len)).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    let mut skb = SkBuff::from_frame(&f, 64, f.len());
    skb.protocol = 0x0800;
    skb.partial_csum_set(20, 16);
    skb
}

/// The answers' TCP (sequence number, acknowledgment, payload), checksums verified.
fn tcp_answers(answers: Vec<SkBuff>) -> Vec<(u32, u32, Vec<u8>)> {
    answers
        .iter()
        .map(|a| {
            let bytes = a.to_vec();
            let ip = Ipv4Packet::new_checked(&bytes[..]).expect("IPv4");
            let t = TcpPacket::new_checked(ip.payload()).expect("TCP");
            let (src, dst) = (ip.src_addr().into(), ip.dst_addr().into());
            assert!(t.verify_checksum(&src, &dst), "the answer's checksum");
            (
                t.seq_number().0 as u32,
                t.ack_number().0 as u32,
                t.payload().to_vec(),
            )
        })
        .collect()
}

#[test]
fn a_gso_tcp_write_is_echoed_segment_by_segment() {
    let mut stack = Stack::new(vec![parse_cidr("10.0.0.2/24").expect("cidr")]);
    let syn_ack = tcp_answers(stack.receive(b"tun0", DeviceKind::Tun, packet(100, 0, 0x02, &[])));
    assert_eq!(syn_ack.len(), 1, "the SYN (partial checksum) is answered");
    let (isn, acked, _) = syn_ack[0].clone();
    assert_eq!(acked, 101);
    let data: Vec<u8> = (0..2500u32).map(|i| (i % 251) as u8).collect();
    let mut tso = packet(101, isn.wrapping_add(1), 0x18, &data);
    tso.gso_size = 1000;
    tso.gso_type = gso::TCPV4 | gso::DODGY;
    let echoed: Vec<u8> = tcp_answers(stack.receive(b"tun0", DeviceKind::Tun, tso))
        .into_iter()
        .flat_map(|(_, _, p)| p)
        .collect();
    assert_eq!(echoed, data);
    assert_eq!(stack.refused_gso(), 0);
}

#[test]
fn a_gso_udp_write_is_refused_and_counted() {
    let mut stack = Stack::new(vec![parse_cidr("10.0.0.2/24").expect("cidr")]);
    let mut skb = packet(1, 0, 0x10, &[0; 3000]);
    skb.gso_size = 1000;
    skb.gso_type = gso::UDP_L4;
    assert!(stack.receive(b"tun0", DeviceKind::Tun, skb).is_empty());
    assert_eq!(stack.refused_gso(), 1);
}
