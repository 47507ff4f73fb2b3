//! Tests of summary.rs.

use super::*;

// dst 02:00:00:00:00:02, src 02:00:00:00:00:01; the ethertype follows separately.
const MACS: [u8; 12] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
const A_TO_B: &str = "02:00:00:00:00:01 > 02:00:00:00:00:02";
const IP4: [u8; 2] = [0x08, 0x00];
// TCP 1000 > 80, seq 1, ack 0, doff 5, ACK, win 512.
const TCP_ACK: [u8; 20] = [
    0x03, 0xe8, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0x02, 0x00, 0, 0, 0, 0,
];
// TCP 1000 > 80, seq 100, ack 0, doff 5, SYN, win 65535.
const TCP_SYN: [u8; 20] = [
    0x03, 0xe8, 0x00, 0x50, 0, 0, 0, 100, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
];
// UDP 5000 > 53, length 28 (20 bytes of payload).
const UDP_DNS: [u8; 8] = [0x13, 0x88, 0x00, 0x35, 0x00, 0x1c, 0, 0];
// IPv6 header, payload length 20, TCP, fe80::1 > fe80::2.
const IP6_TCP: [u8; 40] = [
    0x60, 0, 0, 0, 0x00, 0x14, 6, 64, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xfe,
    0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
];

/// IPv4 header 10.0.0.1 > 10.0.0.2 with tot_len and protocol patched in.
fn ipv4_hdr(tot_len: u16, proto: u8) -> Vec<u8> {
    let t = tot_len.to_be_bytes();
    vec![
        0x45, 0, t[0], t[1], 0, 1, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]
}

/// IPv4 UDP 5000 > 53 with 20 bytes of payload (48 bytes).
fn ip_udp() -> Vec<u8> {
    [&ipv4_hdr(48, 17)[..], &UDP_DNS, &[0u8; 20]].concat()
}

fn tcp_frame() -> Vec<u8> {
    [&MACS[..], &IP4, &ipv4_hdr(140, 6), &TCP_ACK, &[0u8; 100]].concat()
}

fn vlan_udp_frame() -> Vec<u8> {
    [&MACS[..], &[0x81, 0x00, 0x60, 0x64, 0x08, 0x00], &ip_udp()].concat() // pcp 3 vid 100
}

fn qinq_ipv6_frame() -> Vec<u8> {
    // 802.1ad vid 10, 802.1Q vid 20, then IPv6.
    let tags = [0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0x00, 0x14, 0x86, 0xdd];
    [&MACS[..], &tags, &IP6_TCP, &TCP_SYN].concat()
}

/// gretap: outer IPv4 192.168.0.1 > .2, GRE K key 42 TEB, then `inner`.
fn gretap(inner: &[u8]) -> Vec<u8> {
    let mut ip = ipv4_hdr(u16::try_from(28 + inner.len()).expect("small"), 47);
    ip[12..20].copy_from_slice(&[192, 168, 0, 1, 192, 168, 0, 2]);
    let gre = [0x20, 0x00, 0x65, 0x58, 0, 0, 0, 0x2a];
    [&MACS[..], &IP4, &ip, &gre, inner].concat()
}

fn vxlan_frame() -> Vec<u8> {
    let inner = [&MACS[..], &[0x88, 0xcc], &[0u8; 4]].concat();
    let ulen = u16::try_from(16 + inner.len()).expect("small");
    let u = ulen.to_be_bytes();
    let udp = [0xc0, 0x00, 0x12, 0xb5, u[0], u[1], 0, 0]; // 49152 > 4789
    let vx = [0x08, 0, 0, 0, 0x00, 0x00, 0x2a, 0x00]; // I flag, vni 42
    let ip = ipv4_hdr(20 + ulen, 17);
    [&MACS[..], &IP4, &ip, &udp, &vx, &inner].concat()
}

#[test]
fn tcp_over_ipv4() {
    let want = ", IPv4 10.0.0.1 > 10.0.0.2, TCP 1000 > 80 [A] seq 1 ack 0 win 512 len 100";
    assert_eq!(describe(&tcp_frame()), format!("{A_TO_B}{want}"));
    let mut big = tcp_frame();
    big[16..18].copy_from_slice(&[0, 0]);
    assert!(describe(&big).contains("10.0.0.2 tot_len 0, TCP 1000 > 80"));
    let flags = |f| {
        let mut s = String::new();
        tcp_flags(&mut s, f);
        s
    };
    assert_eq!(
        (flags(0x12), flags(0x19), flags(0)),
        ("SA".into(), "FPA".into(), "none".into())
    );
}

#[test]
fn vlan_udp() {
    let want = ", 802.1Q pcp 3 dei 0 vid 100, IPv4 10.0.0.1 > 10.0.0.2, UDP 5000 > 53 len 20";
    assert_eq!(describe(&vlan_udp_frame()), format!("{A_TO_B}{want}"));
    for (tpid, tci, want) in [
        (0x8100, 0x6064, "802.1Q pcp 3 dei 0 vid 100"),
        (0x88a8, 0x1005, "802.1ad pcp 0 dei 1 vid 5"),
        (0x9100, 7, "QinQ vid 7"),
        (0x1234, 7, "vlan 0x1234 vid 7"),
    ] {
        assert_eq!(describe_vlan_tci(tpid, tci), want);
    }
}

#[test]
fn qinq_ipv6() {
    let want = ", 802.1ad vid 10, 802.1Q vid 20, IPv6 fe80::1 > fe80::2, \
                TCP 1000 > 80 [S] seq 100 ack 0 win 65535 len 0";
    assert_eq!(describe(&qinq_ipv6_frame()), format!("{A_TO_B}{want}"));
}

#[test]
fn gretap_recurses() {
    let inner = [&MACS[..], &IP4, &ip_udp()].concat();
    let want = format!(
        "{A_TO_B}, IPv4 192.168.0.1 > 192.168.0.2, GRE [K key 0x2a] TEB, inner: {A_TO_B}, \
         IPv4 10.0.0.1 > 10.0.0.2, UDP 5000 > 53 len 20"
    );
    assert_eq!(describe(&gretap(&inner)), want);
    // Three levels of gretap: the third inner frame is elided.
    let s = describe(&gretap(&gretap(&gretap(&inner))));
    assert_eq!(s.matches("inner: ").count(), 3, "{s}");
    assert!(
        s.ends_with("inner: 62 bytes not shown (depth limit)"),
        "{s}"
    );
}

#[test]
fn vxlan() {
    let want = ", IPv4 10.0.0.1 > 10.0.0.2, UDP 49152 > 4789 len 26, VXLAN vni 42, inner: ";
    let s = describe(&vxlan_frame());
    assert_eq!(s, format!("{A_TO_B}{want}{A_TO_B}, ethertype 0x88cc len 4"));
}

#[test]
fn unknown_and_truncated() {
    let lldp = [&MACS[..], &[0x88, 0xcc], &[0u8; 46]].concat();
    assert_eq!(
        describe(&lldp),
        format!("{A_TO_B}, ethertype 0x88cc len 46")
    );
    let short = [&MACS[..], &IP4, &[0x45u8; 7]].concat();
    let want = ", truncated IPv4 (20 bytes needed, 7 present)";
    assert_eq!(describe(&short), format!("{A_TO_B}{want}"));
    assert_eq!(describe(&MACS[..6]), "truncated Ethernet (6 bytes)");
    assert_eq!(describe(&[]), "truncated Ethernet (0 bytes)");
    let tag_cut = [&MACS[..], &[0x81, 0x00, 0x00]].concat();
    let want = ", truncated 802.1Q (4 bytes needed, 1 present)";
    assert_eq!(describe(&tag_cut), format!("{A_TO_B}{want}"));
    let arp = [&MACS[..], &[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1], &MACS[6..]].concat();
    let arp = [&arp[..], &[10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2]].concat();
    assert_eq!(
        describe(&arp),
        format!("{A_TO_B}, ARP who-has 10.0.0.2 tell 10.0.0.1")
    );
}

#[test]
fn ieee_802_3_llc_snap_and_raw() {
    // An IEEE 802.1D configuration BPDU: length 38 = LLC (3) + BPDU (35), SAPs 0x42,
    // UI; padded to the 60-byte minimum (8 bytes after the 38).
    let bpdu = [&MACS[..], &[0x00, 0x26, 0x42, 0x42, 0x03], &[0u8; 35 + 8]].concat();
    let want = ", 802.3 len 38 pad 8, LLC dsap 0x42 ssap 0x42 ctrl 0x03 (STP) len 35";
    assert_eq!(describe(&bpdu), format!("{A_TO_B}{want}"));
    // CDP: SNAP (SAPs 0xaa, UI) with Cisco's OUI 00:00:0c, protocol 0x2000.
    let cdp = [
        &MACS[..],
        &[0x00, 0x10, 0xaa, 0xaa, 0x03, 0x00, 0x00, 0x0c, 0x20, 0x00],
        &[0u8; 8],
    ]
    .concat();
    let want = ", 802.3 len 16, LLC dsap 0xaa ssap 0xaa ctrl 0x03 (SNAP), \
                SNAP oui 00:00:0c type 0x2000 (CDP) len 8";
    assert_eq!(describe(&cdp), format!("{A_TO_B}{want}"));
    // RFC 1042: OUI 0 and an EtherType.
    let rfc1042 = [
        &MACS[..],
        &[0x00, 0x08, 0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00],
    ]
    .concat();
    let want = ", 802.3 len 8, LLC dsap 0xaa ssap 0xaa ctrl 0x03 (SNAP), \
                SNAP oui 00:00:00 type 0x0800 (IPv4) len 0";
    assert_eq!(describe(&rfc1042), format!("{A_TO_B}{want}"));
    // Novell raw 802.3: the IPX header's 0xffff checksum where the SAPs would be.
    let ipx = [&MACS[..], &[0x00, 0x1e, 0xff, 0xff, 0x00, 0x1e], &[0u8; 26]].concat();
    assert_eq!(
        describe(&ipx),
        format!("{A_TO_B}, 802.3 len 30, raw 802.3 (IPX) len 30")
    );
    // IS-IS behind an 802.1Q tag: SAPs 0xfe; an I-format (two-byte) control field.
    let isis = [
        &MACS[..],
        &[
            0x81, 0x00, 0x00, 0x05, 0x00, 0x06, 0xfe, 0xfe, 0x00, 0x01, 0x83, 0x1b,
        ],
    ]
    .concat();
    let want = ", 802.1Q vid 5, 802.3 len 6, LLC dsap 0xfe ssap 0xfe ctrl 0x0001 (OSI) len 2";
    assert_eq!(describe(&isis), format!("{A_TO_B}{want}"));
    // A length past the frame, and LLC and SNAP headers cut short.
    let cut = [&MACS[..], &[0x01, 0x00, 0x42]].concat();
    let want = ", 802.3 len 256 (1 present), truncated LLC (3 bytes needed, 1 present)";
    assert_eq!(describe(&cut), format!("{A_TO_B}{want}"));
    let cut = [&MACS[..], &[0x00, 0x06, 0xaa, 0xaa, 0x03, 0, 0, 0]].concat();
    let want = ", 802.3 len 6, LLC dsap 0xaa ssap 0xaa ctrl 0x03 (SNAP), \
                truncated SNAP (5 bytes needed, 3 present)";
    assert_eq!(describe(&cut), format!("{A_TO_B}{want}"));
}

#[test]
fn inconsistent_lengths_do_not_panic() {
    // IHL 15 (60 bytes) with only 20 present: a getter trusting IHL would index past the end.
    let mut f = tcp_frame();
    f.truncate(34);
    f[14] = 0x4f;
    let want = ", IPv4 10.0.0.1 > 10.0.0.2, truncated IPv4 options (60 bytes needed, 20 present)";
    assert_eq!(describe(&f), format!("{A_TO_B}{want}"));
    // TCP data offset 15 (60 bytes): fits in 120 bytes, not in 40.
    let mut f = tcp_frame();
    f[34 + 12] = 0xf0;
    assert!(describe(&f).ends_with("win 512 len 60"));
    f.truncate(34 + 40);
    assert!(describe(&f).ends_with("truncated TCP options (60 bytes needed, 40 present)"));
    // UDP length larger than the datagram.
    let mut f = vlan_udp_frame();
    f[18 + 20 + 5] = 0xff;
    assert!(describe(&f).ends_with("UDP 5000 > 53 len 247 (20 present)"));
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005);
        self.0 = self.0.wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn byte(&mut self) -> u8 {
        self.next().to_le_bytes()[0]
    }
}

/// tcp_frame cut at every length: each cut names the header it falls in, with the byte
/// counts worked out from the frame's layout (Ethernet 14, IPv4 20 with tot_len 140,
/// TCP 20, 100 bytes of payload), not from `describe`.
#[test]
fn every_cut_of_a_tcp_frame_names_the_header_it_falls_in() {
    let frame = tcp_frame();
    assert_eq!(frame.len(), 154);
    let ip = "IPv4 10.0.0.1 > 10.0.0.2";
    for len in 0..=frame.len() {
        let want = match len {
            0..14 => format!("truncated Ethernet ({len} bytes)"),
            14..34 => format!(
                "{A_TO_B}, truncated IPv4 (20 bytes needed, {} present)",
                len - 14
            ),
            34..54 => format!(
                "{A_TO_B}, {ip} len 140 ({} present), truncated TCP (20 bytes needed, {} present)",
                len - 14,
                len - 34
            ),
            54..154 => format!(
                "{A_TO_B}, {ip} len 140 ({} present), TCP 1000 > 80 [A] seq 1 ack 0 win 512 len {}",
                len - 14,
                len - 54
            ),
            _ => format!("{A_TO_B}, {ip}, TCP 1000 > 80 [A] seq 1 ack 0 win 512 len 100"),
        };
        assert_eq!(describe(&frame[..len]), want, "cut at {len}");
    }
}

/// No panic on any cut, corruption or random frame: every call below only checks that
/// `describe` returns (the expected text of a cut is asserted in the test above).
#[test]
fn fuzz_never_panics() {
    let inner = [&MACS[..], &IP4, &ip_udp()].concat();
    let frames = [
        tcp_frame(),
        vlan_udp_frame(),
        qinq_ipv6_frame(),
        gretap(&inner),
        gretap(&gretap(&qinq_ipv6_frame())),
        vxlan_frame(),
    ];
    let mut rng = Lcg(42);
    for frame in &frames {
        for len in 0..=frame.len() {
            let _ = describe(&frame[..len]);
        }
        // Single-byte corruptions of the valid frame, at every position.
        for pos in 0..frame.len() {
            let mut f = frame.clone();
            f[pos] = rng.byte();
            let _ = describe(&f);
            f.truncate(pos + 1);
            let _ = describe(&f);
        }
    }
    for _ in 0..2000 {
        let len = usize::from(rng.byte()) % 200;
        let mut f: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
        // Steer some random frames past the magic values the parsers dispatch on.
        if len > 38 && rng.next().is_multiple_of(2) {
            let ip4 = rng.next().is_multiple_of(2);
            f[12..15].copy_from_slice(if ip4 {
                &[0x08, 0x00, 0x45]
            } else {
                &[0x86, 0xdd, 0x60]
            });
            f[if ip4 { 23 } else { 20 }] = [6, 17, 47, 1, 44, 0][usize::from(rng.byte()) % 6];
            if rng.next().is_multiple_of(2) {
                f[36..38].copy_from_slice(&[0x12, 0xb5]); // UDP dport 4789 behind IPv4
            }
        }
        let _ = describe(&f);
    }
}

/// The IPv6 extension-header walk, now through `ipv6::ExtHeaders`: the lines are the ones
/// the byte-by-byte walk it replaced gave (worked out from that code for each frame).
#[test]
fn ipv6_extension_headers() {
    use crate::consts::{IPPROTO_AH, IPPROTO_DSTOPTS};
    use crate::wire::test_frames::{MLD_HBH, V6_EXT_CHAIN, V6_FRAG_TAIL};
    let chain = "02:00:00:00:00:01 > 02:00:00:00:00:02, IPv6 fd00::1 > fd00::2";
    // HBH, routing, destination options, fragment (offset 0, M, id 0x12345678), UDP.
    assert_eq!(
        describe(&V6_EXT_CHAIN),
        format!("{chain} frag id 305419896 off 0+, UDP 1000 > 2000 len 4")
    );
    // A last fragment: id 0x8a1ff39e, offset 1448, 32 bytes of UDP.
    assert_eq!(
        describe(&V6_FRAG_TAIL),
        "02:00:5e:c0:00:0a > 02:00:5e:c0:00:0b, IPv6 fd00:77::1 > fd00:77::2 \
         frag id 2317349790 off 1448, UDP fragment len 32"
    );
    // Hop-by-hop, then a 28-byte MLDv2 report.
    assert_eq!(
        describe(&MLD_HBH),
        "02:00:5e:c0:00:0a > 33:33:00:00:00:16, IPv6 :: > ff02::16, ICMPv6 type 143 code 0 len 20"
    );
    // Cut inside the routing header, and right before its length byte.
    assert_eq!(
        describe(&V6_EXT_CHAIN[..14 + 40 + 20]),
        format!(
            "{chain} len 60 (20 present), \
             truncated IPv6 extension header (24 bytes needed, 12 present)"
        )
    );
    assert_eq!(
        describe(&V6_EXT_CHAIN[..14 + 40 + 9]),
        format!(
            "{chain} len 60 (9 present), \
             truncated IPv6 extension header (2 bytes needed, 1 present)"
        )
    );
    // Ten empty destination-options headers: eight are stepped over, the rest is shown
    // as an unknown protocol.
    let mut ten = V6_EXT_CHAIN[..14 + 40].to_vec();
    ten[14 + 4..14 + 6].copy_from_slice(&80u16.to_be_bytes());
    ten[14 + 6] = IPPROTO_DSTOPTS;
    for _ in 0..10 {
        ten.extend_from_slice(&[IPPROTO_DSTOPTS, 0, 1, 4, 0, 0, 0, 0]);
    }
    assert_eq!(describe(&ten), format!("{chain}, proto 60 len 16"));
    // AH (hdrlen 1: 12 bytes), then no next header (59).
    let mut ah = V6_EXT_CHAIN[..14 + 40].to_vec();
    ah[14 + 4..14 + 6].copy_from_slice(&16u16.to_be_bytes());
    ah[14 + 6] = IPPROTO_AH;
    ah.extend_from_slice(&[59, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd]);
    assert_eq!(describe(&ah), format!("{chain}, proto 59 len 4"));
}

#[test]
fn arp_reply_and_tagged_request() {
    use crate::wire::test_frames::QINQ_ARP;
    // tcpdump: vlan 200 (802.1ad), vlan 100 (802.1Q), Request who-has 10.77.0.2 tell 10.77.0.1.
    assert_eq!(
        describe(&QINQ_ARP),
        "02:00:5e:c0:00:0a > ff:ff:ff:ff:ff:ff, 802.1ad vid 200, 802.1Q vid 100, \
         ARP who-has 10.77.0.2 tell 10.77.0.1"
    );
    let mut reply = QINQ_ARP;
    reply[22 + 7] = 2;
    assert_eq!(
        describe(&reply),
        "02:00:5e:c0:00:0a > ff:ff:ff:ff:ff:ff, 802.1ad vid 200, 802.1Q vid 100, \
         ARP reply 10.77.0.1 is-at 02:00:5e:c0:00:0a"
    );
}
