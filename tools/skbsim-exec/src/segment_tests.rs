//! The segments and checksums checked with smoltcp's wire parsers (another
//! implementation of the same RFCs), the numbers by hand.

use smoltcp::wire::{
    IpAddress, Ipv4Address, Ipv4Packet, Ipv6Address, Ipv6Packet, TcpPacket, UdpPacket,
};

use super::*;

const SRC4: [u8; 4] = [10, 0, 0, 1];
const DST4: [u8; 4] = [10, 0, 0, 2];

/// A TCP header (ports 40000 -> 7, seq 1000, data offset 5, `flags`) and `payload`, its
/// checksum field the pseudo-header sum only (CHECKSUM_PARTIAL, as a guest leaves it).
fn tcp(flags: u8, payload: &[u8], pseudo: u32) -> Vec<u8> {
    let mut t = vec![0u8; 20];
    t[..2].copy_from_slice(&40000u16.to_be_bytes());
    t[2..4].copy_from_slice(&7u16.to_be_bytes());
    t[4..8].copy_from_slice(&1000u32.to_be_bytes());
    t[8..12].copy_from_slice(&77u32.to_be_bytes());
    t[12] = 5 << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&502u16.to_be_bytes());
    t[16..18].copy_from_slice(&fold(pseudo).to_be_bytes());
    t.extend_from_slice(payload);
    t
}

/// Ethernet (14 bytes), IPv4 (ID 0x1234, DF) and TCP with `payload`.
fn tso_v4(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    let tcp_len = 20 + payload.len();
    let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0];
    ip[2..4].copy_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
    ip.extend_from_slice(&SRC4);
    ip.extend_from_slice(&DST4);
    f.extend_from_slice(&ip);
    f.extend(tcp(flags, payload, pseudo_v4(SRC4, DST4, 6, tcp_len)));
    f
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn a_tcpv4_gso_frame_becomes_mss_segments_with_their_own_headers() {
    let data = payload(2500);
    // CWR | PSH | ACK | FIN.
    let frame = tso_v4(0x80 | 0x08 | 0x10 | 0x01, &data);
    let segs = tcp_segments(&frame, 14, 1000, false).expect("segments");
    assert_eq!(segs.len(), 3);
    let mut joined = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        assert_eq!(s[..14], frame[..14], "segment {i}: the Ethernet header");
        let ip = Ipv4Packet::new_checked(&s[14..]).expect("IPv4");
        assert!(ip.verify_checksum(), "segment {i}: IP checksum");
        assert_eq!(ip.ident(), 0x1234 + i as u16);
        let want_len = if i == 2 {
            20 + 20 + 500
        } else {
            20 + 20 + 1000
        };
        assert_eq!(usize::from(ip.total_len()), want_len, "segment {i}");
        assert_eq!(s.len(), 14 + want_len);
        let t = TcpPacket::new_checked(ip.payload()).expect("TCP");
        let (src, dst) = (Ipv4Address::from(SRC4), Ipv4Address::from(DST4));
        assert!(
            t.verify_checksum(&IpAddress::Ipv4(src), &IpAddress::Ipv4(dst)),
            "segment {i}: TCP checksum"
        );
        assert_eq!(t.seq_number().0, 1000 + 1000 * i as i32);
        assert_eq!(t.ack_number().0, 77);
        assert!(t.ack());
        assert_eq!(t.cwr(), i == 0, "segment {i}: CWR on the first only");
        assert_eq!(t.psh(), i == 2, "segment {i}: PSH on the last only");
        assert_eq!(t.fin(), i == 2, "segment {i}: FIN on the last only");
        joined.extend_from_slice(t.payload());
    }
    assert_eq!(joined, data);
}

#[test]
fn fixed_id_keeps_the_ipv4_id() {
    let frame = tso_v4(0x10, &payload(2000));
    let segs = tcp_segments(&frame, 14, 1000, true).expect("segments");
    for s in &segs {
        let ip = Ipv4Packet::new_checked(&s[14..]).expect("IPv4");
        assert_eq!(ip.ident(), 0x1234);
        assert!(ip.verify_checksum());
    }
}

#[test]
fn a_tcpv6_gso_packet_becomes_segments_with_payload_length_and_checksum() {
    let (src, dst) = ([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], {
        let mut d = [0u8; 16];
        d[0] = 0xfd;
        d[15] = 2;
        d
    });
    let data = payload(3000);
    let tcp_len = 20 + data.len();
    let mut f = vec![0x60, 0, 0, 0, 0, 0, 6, 64];
    f[4..6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend(tcp(0x18, &data, pseudo_v6(src, dst, 6, tcp_len)));
    let segs = tcp_segments(&f, 0, 1200, false).expect("segments");
    assert_eq!(segs.len(), 3);
    for (i, s) in segs.iter().enumerate() {
        let ip = Ipv6Packet::new_checked(&s[..]).expect("IPv6");
        let want = if i == 2 { 600 } else { 1200 };
        assert_eq!(usize::from(ip.payload_len()), 20 + want, "segment {i}");
        let t = TcpPacket::new_checked(ip.payload()).expect("TCP");
        let (a, b) = (Ipv6Address::from(src), Ipv6Address::from(dst));
        assert!(t.verify_checksum(&IpAddress::Ipv6(a), &IpAddress::Ipv6(b)));
        assert_eq!(t.seq_number().0, 1000 + 1200 * i as i32);
        assert_eq!(t.psh(), i == 2);
    }
}

#[test]
fn not_tcp_or_no_mss_is_not_segmented() {
    let mut udp = tso_v4(0, &payload(100));
    udp[14 + 9] = 17;
    assert!(tcp_segments(&udp, 14, 50, false).is_none());
    assert!(tcp_segments(&tso_v4(0, &payload(100)), 14, 0, false).is_none());
    // A total length past the frame's end.
    let mut short = tso_v4(0, &payload(100));
    short.truncate(100);
    assert!(tcp_segments(&short, 14, 50, false).is_none());
}

#[test]
fn checksum_help_completes_a_partial_udp_checksum() {
    let data = payload(33);
    let udp_len = 8 + data.len();
    let mut f = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0];
    f[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    f.extend_from_slice(&SRC4);
    f.extend_from_slice(&DST4);
    let mut u = vec![0x9c, 0x40, 0, 7, 0, 0, 0, 0];
    u[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    u[6..8].copy_from_slice(&fold(pseudo_v4(SRC4, DST4, 17, udp_len)).to_be_bytes());
    f.extend(u);
    f.extend_from_slice(&data);
    assert!(checksum_help(&mut f, 20, 6));
    let u = UdpPacket::new_checked(&f[20..]).expect("UDP");
    let (a, b) = (Ipv4Address::from(SRC4), Ipv4Address::from(DST4));
    assert!(u.verify_checksum(&IpAddress::Ipv4(a), &IpAddress::Ipv4(b)));
    // The field past the end: refused, the frame unchanged.
    let before = f.clone();
    let len = f.len();
    assert!(!checksum_help(&mut f, 20, len));
    assert_eq!(f, before);
}
