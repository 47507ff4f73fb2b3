//! Link types: real captures from testdata/ (see its README for how each was made) read
//! as tcpdump and tshark read them, and their conversions to Ethernet and L3.

use super::linktype::*;
use super::*;

fn file(name: &str) -> &'static [u8] {
    match name {
        "eth.pcap" => include_bytes!("testdata/eth.pcap"),
        "eth_snaplen100.pcap" => include_bytes!("testdata/eth_snaplen100.pcap"),
        "sll.pcap" => include_bytes!("testdata/sll.pcap"),
        "sll.pcapng" => include_bytes!("testdata/sll.pcapng"),
        "sll2.pcap" => include_bytes!("testdata/sll2.pcap"),
        "raw.pcap" => include_bytes!("testdata/raw.pcap"),
        "raw_snap60.pcap" => include_bytes!("testdata/raw_snap60.pcap"),
        "ipv4.pcap" => include_bytes!("testdata/ipv4.pcap"),
        "ipv6.pcap" => include_bytes!("testdata/ipv6.pcap"),
        "null_le.pcap" => include_bytes!("testdata/null_le.pcap"),
        "null_be.pcap" => include_bytes!("testdata/null_be.pcap"),
        "loop.pcap" => include_bytes!("testdata/loop.pcap"),
        "multi.pcapng" => include_bytes!("testdata/multi.pcapng"),
        "radiotap.pcap" => include_bytes!("testdata/radiotap.pcap"),
        _ => panic!("no test file {name}"),
    }
}

fn frames(name: &str, policy: LinkPolicy) -> Vec<Frame> {
    PcapReader::from_reader_with(file(name), name, policy)
        .expect("header")
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `tshark -r FILE -T fields -e frame.len` of eth.pcap (and, four bytes per frame
/// longer for SLL's 16-byte header, of the 21 pla frames of sll.pcap).
const ETH_LENS: [u32; 21] = [
    42, 42, 142, 142, 142, 142, 86, 86, 118, 118, 118, 118, 98, 70, 70, 42, 42, 86, 78, 86, 78,
];
/// `tshark -r sll.pcap -T fields -e frame.len`.
const SLL_LENS: [u32; 23] = [
    44, 44, 144, 144, 144, 144, 88, 88, 120, 120, 120, 120, 100, 72, 72, 44, 44, 88, 80, 100, 100,
    88, 80,
];
/// `tshark -r raw.pcap -T fields -e frame.len`.
const RAW_LENS: [u32; 5] = [68, 68, 104, 104, 1428];

fn lens(f: &[Frame]) -> Vec<u32> {
    f.iter().map(|f| f.orig_len).collect()
}

fn caplens(f: &[Frame]) -> Vec<usize> {
    f.iter().map(|f| f.data.len()).collect()
}

#[test]
fn real_captures_read_as_tshark_and_tcpdump_read_them() {
    // (file, link type, tshark frame.len, tshark frame.cap_len where it differs)
    let sll2: Vec<u32> = SLL_LENS.iter().map(|l| l + 4).collect();
    let null: Vec<u32> = RAW_LENS.iter().map(|l| l + 4).collect();
    let cases: [(&str, u32, Vec<u32>); 10] = [
        ("eth.pcap", LINKTYPE_ETHERNET, ETH_LENS.to_vec()),
        ("sll.pcap", LINKTYPE_LINUX_SLL, SLL_LENS.to_vec()),
        ("sll.pcapng", LINKTYPE_LINUX_SLL, SLL_LENS.to_vec()),
        ("sll2.pcap", LINKTYPE_LINUX_SLL2, sll2),
        ("raw.pcap", LINKTYPE_RAW, RAW_LENS.to_vec()),
        ("ipv4.pcap", LINKTYPE_IPV4, vec![68, 68, 1428]),
        ("ipv6.pcap", LINKTYPE_IPV6, vec![104, 104]),
        ("null_le.pcap", LINKTYPE_NULL, null.clone()),
        ("null_be.pcap", LINKTYPE_NULL, null.clone()),
        ("loop.pcap", LINKTYPE_LOOP, null),
    ];
    for (name, lt, want) in cases {
        let f = frames(name, LinkPolicy::Supported);
        assert_eq!(lens(&f), want, "{name}");
        assert_eq!(
            caplens(&f),
            want.iter().map(|&l| l as usize).collect::<Vec<_>>(),
            "{name}: caplen"
        );
        assert!(f.iter().all(|f| f.link_type == lt), "{name}");
    }
    // `editcap -s 60`: tshark frame.cap_len 60 for every frame, frame.len unchanged.
    let f = frames("raw_snap60.pcap", LinkPolicy::Supported);
    assert_eq!(lens(&f), RAW_LENS);
    assert_eq!(caplens(&f), [60; 5]);
    // tshark first frame: frame.time_epoch 1796145235.436436000.
    assert_eq!(f[0].ts_ns, 1_796_145_235_436_436_000);
}

/// eth.pcap with its header's snaplen patched to 100. `tcpdump -r eth_snaplen100.pcap
/// -w resaved.pcap; tshark -r resaved.pcap -T fields -e frame.cap_len` (what libpcap
/// handed tcpdump): every frame cut to 100 bytes, frame.len unchanged.
#[test]
fn caplen_over_snaplen_reads_as_tcpdump_reads_it() {
    let full = frames("eth.pcap", LinkPolicy::EthernetOnly);
    let cut = frames("eth_snaplen100.pcap", LinkPolicy::EthernetOnly);
    let want_caplen = [
        42, 42, 100, 100, 100, 100, 86, 86, 100, 100, 100, 100, 98, 70, 70, 42, 42, 86, 78, 86, 78,
    ];
    assert_eq!(caplens(&cut), want_caplen);
    assert_eq!(lens(&cut), ETH_LENS);
    for (a, b) in full.iter().zip(&cut) {
        assert_eq!(&a.data[..b.data.len()], &b.data[..]);
        assert_eq!(a.ts_ns, b.ts_ns);
    }
}

/// `mergecap -F pcapng -w multi.pcapng eth.pcap raw.pcap sll2.pcap`: `tshark -T fields
/// -e frame.interface_id` gives 49 frames, interfaces 0 (Ethernet), 1 (RAW), 2 (SLL2).
#[test]
fn pcapng_with_interfaces_of_three_link_types() {
    let f = frames("multi.pcapng", LinkPolicy::Supported);
    #[rustfmt::skip]
    let ifaces = [
        2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0,
        2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 2, 2, 0, 2, 0, 1, 1, 1, 1, 1,
    ];
    assert_eq!(f.iter().map(|f| f.interface).collect::<Vec<_>>(), ifaces);
    for fr in &f {
        let want = [LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LINUX_SLL2][fr.interface as usize];
        assert_eq!(fr.link_type, want);
    }
    // Each interface's frames are the input file's, in order.
    let by_iface = |id: u32| -> Vec<Vec<u8>> {
        f.iter()
            .filter(|x| x.interface == id)
            .map(|x| x.data.clone())
            .collect()
    };
    for (id, name) in [(0, "eth.pcap"), (1, "raw.pcap"), (2, "sll2.pcap")] {
        let want: Vec<Vec<u8>> = frames(name, LinkPolicy::Any)
            .into_iter()
            .map(|x| x.data)
            .collect();
        assert_eq!(by_iface(id), want, "{name}");
    }
    // With the default policy the RAW interface is refused at its first packet.
    let e = PcapReader::from_reader(file("multi.pcapng"), "multi.pcapng")
        .expect("header")
        .collect::<Result<Vec<_>, _>>()
        .expect_err("not Ethernet");
    assert_eq!(
        e.to_string(),
        "multi.pcapng: link type 276 (LINUX_SLL2) of interface 2 is not Ethernet; skbsim \
         replays Ethernet frames only"
    );
}

#[test]
fn unsupported_link_type_is_one_line_listing_the_supported() {
    let list = "supported: ETHERNET (1), RAW (101), IPV4 (228), IPV6 (229), LINUX_SLL (113), \
                LINUX_SLL2 (276), NULL (0), LOOP (108), PPP (9), NFLOG (239), IEEE802_11 (105), \
                IEEE802_11_RADIOTAP (127), FDDI (10), IEEE802_15_4_WITHFCS (195), \
                IEEE802_15_4_NOFCS (230)";
    // radiotap.pcap relabelled LINKTYPE_NETLINK (253): netlink messages carry no packet.
    let mut netlink = file("radiotap.pcap").to_vec();
    netlink[20..24].copy_from_slice(&253u32.to_le_bytes());
    let e = PcapReader::from_reader_with(&netlink[..], "nl.pcap", LinkPolicy::Supported)
        .expect_err("netlink");
    assert_eq!(
        e.to_string(),
        format!("nl.pcap: link type 253 (NETLINK) is not supported; {list}")
    );
    // `tshark -r radiotap.pcap`: one 18-byte frame; LinkPolicy::Any reads it.
    let f = frames("radiotap.pcap", LinkPolicy::Any);
    assert_eq!((f.len(), f[0].data.len(), f[0].link_type), (1, 18, 127));
    let mut out = Vec::new();
    let e = to_ethernet(253, &f[0].data, 18, &EthSynth::default(), &mut out).expect_err("253");
    assert_eq!(
        e.to_string(),
        format!("link type 253 (NETLINK) is not supported; {list}")
    );
    let e = to_l3(4242, &[]).expect_err("4242");
    assert_eq!(
        e.to_string(),
        format!("link type 4242 is not supported; {list}")
    );
    // A pcapng interface nobody captured on does not matter; one that is used does.
    let f = crate::pcap::tests::ng_file(
        false,
        &[(1, Vec::new()), (253, Vec::new())],
        &[(0, 0, &[0u8; 14]), (1, 0, &[0u8; 4])],
    );
    let mut r =
        PcapReader::from_reader_with(&f[..], "in.pcapng", LinkPolicy::Supported).expect("header");
    assert!(matches!(r.next_frame(), Some(Ok(_))));
    let e = r.next_frame().expect("second").expect_err("netlink");
    assert_eq!(
        e.to_string(),
        format!("in.pcapng: interface 1: link type 253 (NETLINK) is not supported; {list}")
    );
}

const PLA: [u8; 6] = [2, 0x77, 0, 0, 0, 1];
const PLB: [u8; 6] = [2, 0x77, 0, 0, 0, 2];

/// sll.pcap and sll2.pcap were captured (`tcpdump -i any`) alongside eth.pcap
/// (`tcpdump -i pla`) on the same veth: the cooked frames of pla, converted, must be
/// eth.pcap's frames, up to the destination MAC the cooked header does not keep.
#[test]
fn cooked_frames_become_the_ethernet_frames_of_the_same_capture() {
    let eth = frames("eth.pcap", LinkPolicy::EthernetOnly);
    // We are pla: frames to us get pla's MAC as the synthesized destination.
    let macs = EthSynth {
        src: EthSynth::DEFAULT_SRC,
        dst: PLA,
    };
    for name in ["sll.pcap", "sll2.pcap"] {
        let cooked = frames(name, LinkPolicy::Supported);
        assert_eq!(cooked.len(), 23);
        let mut out = Vec::new();
        let mut k = 0;
        for (i, c) in cooked.iter().enumerate() {
            let e = to_ethernet(c.link_type, &c.data, c.orig_len, &macs, &mut out)
                .unwrap_or_else(|e| panic!("{name} frame {i}: {e}"));
            assert!(e.converted());
            if i == 19 || i == 20 {
                // `tshark -e sll.hatype`: 772, lo. Its all-zero MACs are real.
                assert_eq!(&e.data[..12], [PLA, [0; 6]].concat(), "{name} frame {i}");
                assert_eq!(&e.data[12..14], [8, 0]);
                continue;
            }
            let want = &eth[k].data;
            k += 1;
            assert_eq!(e.data.len(), want.len(), "{name} frame {i}");
            assert_eq!(e.orig_len(c.orig_len), eth[k - 1].orig_len);
            assert_eq!(
                &e.data[6..],
                &want[6..],
                "{name} frame {i}: src, type, payload"
            );
            // The real destination is kept where the cooked header or the IP
            // destination says it: frames to us (pla), multicast (33:33:..). Frames we
            // sent to a unicast or broadcast address get the synthesized one.
            let real_dst = &want[..6];
            let outgoing = want[6..12] == PLA;
            let ip_group = real_dst[..2] == [0x33, 0x33] || real_dst[..3] == [1, 0, 0x5e];
            if outgoing && !ip_group {
                assert_eq!(&e.data[..6], PLA, "{name} frame {i}");
                assert!(real_dst == PLB || real_dst == [0xff; 6]);
            } else {
                assert_eq!(&e.data[..6], real_dst, "{name} frame {i}: dst");
            }
        }
        assert_eq!(k, eth.len());
    }
}

/// raw.pcap's packets, and the other raw-IP and loopback files made from them.
#[test]
fn raw_ip_and_loopback_frames_get_synthesized_ethernet_headers() {
    let raw = frames("raw.pcap", LinkPolicy::Supported);
    let macs = EthSynth::default();
    let types = [0x0800u16, 0x0800, 0x86dd, 0x86dd, 0x0800];
    let check = |name: &str, picks: &[usize]| {
        let f = frames(name, LinkPolicy::Supported);
        assert_eq!(f.len(), picks.len(), "{name}");
        let mut out = Vec::new();
        for (fr, &k) in f.iter().zip(picks) {
            let e = to_ethernet(fr.link_type, &fr.data, fr.orig_len, &macs, &mut out)
                .expect("converts");
            assert_eq!(&e.data[..6], [2, 0, 0, 0, 0, 2], "{name}: default dst");
            assert_eq!(&e.data[6..12], [2, 0, 0, 0, 0, 1], "{name}: default src");
            assert_eq!(e.data[12..14], types[k].to_be_bytes(), "{name} {k}");
            assert_eq!(&e.data[14..], &raw[k].data[..], "{name} {k}");
            assert_eq!(e.orig_len(fr.orig_len), RAW_LENS[k] + 14);
            let l3 = to_l3(fr.link_type, &fr.data).expect("l3");
            assert_eq!((l3.protocol, l3.data), (types[k], &raw[k].data[..]));
        }
    };
    check("raw.pcap", &[0, 1, 2, 3, 4]);
    check("ipv4.pcap", &[0, 1, 4]);
    check("ipv6.pcap", &[2, 3]);
    // NULL in both byte orders (family 30 little-endian, 24 big-endian), LOOP (28).
    check("null_le.pcap", &[0, 1, 2, 3, 4]);
    check("null_be.pcap", &[0, 1, 2, 3, 4]);
    check("loop.pcap", &[0, 1, 2, 3, 4]);
    // A truncated capture stays truncated: 60 captured bytes of a 1428-byte packet.
    let cut = frames("raw_snap60.pcap", LinkPolicy::Supported);
    let mut out = Vec::new();
    let e = to_ethernet(LINKTYPE_RAW, &cut[4].data, cut[4].orig_len, &macs, &mut out)
        .expect("converts");
    assert_eq!((e.data.len(), e.orig_len(cut[4].orig_len)), (74, 1442));
}

#[test]
fn ethernet_passes_through_and_l3_drops_header_and_vlan_tags() {
    let eth = frames("eth.pcap", LinkPolicy::EthernetOnly);
    let sll = frames("sll.pcap", LinkPolicy::Supported);
    let mut out = Vec::new();
    let e = to_ethernet(1, &eth[2].data, 142, &EthSynth::default(), &mut out).expect("eth");
    assert!(!e.converted());
    assert!(std::ptr::eq(e.data, &eth[2].data[..]), "no copy");
    assert!(out.is_empty());
    // The same packet's L3 from the Ethernet and the cooked capture.
    let a = to_l3(1, &eth[2].data).expect("l3");
    let b = to_l3(LINKTYPE_LINUX_SLL, &sll[2].data).expect("l3");
    assert_eq!(a, b);
    assert_eq!((a.protocol, a.data.len()), (0x0800, 128));
    // QinQ: 802.1ad outer tag, 802.1Q inner tag, then IPv4.
    let mut tagged = eth[2].data[..12].to_vec();
    tagged.extend_from_slice(&[0x88, 0xa8, 0, 10, 0x81, 0, 0, 20]);
    tagged.extend_from_slice(&eth[2].data[12..]);
    assert_eq!(to_l3(1, &tagged).expect("tagged"), a);
    let e = to_l3(1, &tagged[..16]).expect_err("cut in a tag");
    assert_eq!(
        PcapError::convert(std::path::Path::new("in.pcap"), 3, e).to_string(),
        "in.pcap: frame 3: ETHERNET frame of 16 bytes is shorter than its 18-byte \
         link-layer header"
    );
}

/// An SLL header (packet type, ARPHRD, halen, addr, protocol) in front of `payload`.
fn sll(pkttype: u16, arphrd: u16, addr: &[u8], protocol: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&pkttype.to_be_bytes());
    f.extend_from_slice(&arphrd.to_be_bytes());
    f.extend_from_slice(&(addr.len() as u16).to_be_bytes());
    let mut a = [0u8; 8];
    a[..addr.len()].copy_from_slice(addr);
    f.extend_from_slice(&a);
    f.extend_from_slice(&protocol.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

#[test]
fn cooked_special_cases() {
    let macs = EthSynth::default();
    let mut out = Vec::new();
    let mut conv = |f: &[u8], orig: u32| {
        to_ethernet(LINKTYPE_LINUX_SLL, f, orig, &macs, &mut out).map(|e| e.data.to_vec())
    };
    // 802.2 LLC (ETH_P_802_2): an 802.3 frame whose length field is the payload's
    // length on the wire, here 40 of which 3 were captured.
    let llc = [0x42, 0x42, 0x03];
    let f = sll(0, 1, &PLB, 0x0004, &llc);
    let e = conv(&f, 16 + 40).expect("802.2");
    assert_eq!(e, [&PLA_DEFAULT_DST[..], &PLB, &[0, 40], &llc].concat());
    // Broadcast packet type; ARPHRD_NONE (a tun device, no address): synthesized src.
    let f = sll(1, 0xfffe, &[], 0x0800, &[0x45; 20]);
    let e = conv(&f, 36).expect("broadcast");
    assert_eq!(&e[..12], [[0xff; 6], [2, 0, 0, 0, 0, 1]].concat());
    // Multicast that is not IP: the synthesized dst with the group bit.
    let f = sll(2, 1, &PLB, 0x0806, &[0; 28]);
    assert_eq!(conv(&f, 44).expect("arp")[..6], [3, 0, 0, 0, 0, 2]);
    // IPv4 multicast 239.1.2.3 → 01:00:5e:01:02:03 (RFC 1112).
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[16..20].copy_from_slice(&[239, 129, 2, 3]);
    let f = sll(4, 1, &PLA, 0x0800, &ip);
    assert_eq!(conv(&f, 36).expect("mcast")[..6], [1, 0, 0x5e, 1, 2, 3]);
    // Refused: CAN protocol, netlink ARPHRD, a short header, a too-long 802.2 payload.
    let f = sll(0, 280, &[], 0x000c, &[0; 16]);
    assert_eq!(
        conv(&f, 32).expect_err("can").to_string(),
        "LINUX_SLL frame of ARPHRD type 280 with protocol 0x000c has no Ethernet equivalent"
    );
    let f = sll(4, 824, &[], 0x0000, &[0; 16]);
    assert!(conv(&f, 32).is_err());
    assert_eq!(
        conv(&f[..15], 15).expect_err("short").to_string(),
        "LINUX_SLL frame of 15 bytes is shorter than its 16-byte link-layer header"
    );
    let f = sll(0, 1, &PLB, 0x0004, &llc);
    assert_eq!(
        conv(&f, 16 + 1501).expect_err("long").to_string(),
        "LINUX_SLL 802.2/802.3 payload of 1501 bytes does not fit an 802.3 length field (at \
         most 1500)"
    );
}

const PLA_DEFAULT_DST: [u8; 6] = EthSynth::DEFAULT_DST;

#[test]
fn raw_and_loopback_errors() {
    let macs = EthSynth::default();
    let mut out = Vec::new();
    let e = to_ethernet(LINKTYPE_RAW, &[0x50; 20], 20, &macs, &mut out).expect_err("v5");
    assert_eq!(
        e.to_string(),
        "RAW packet has IP version 5 (neither 4 nor 6)"
    );
    let e = to_l3(LINKTYPE_RAW, &[]).expect_err("empty");
    assert_eq!(
        e.to_string(),
        "RAW frame of 0 bytes is shorter than its 1-byte link-layer header"
    );
    let e = to_l3(LINKTYPE_NULL, &[17, 0, 0, 0, 0x45]).expect_err("af 17");
    assert_eq!(
        e.to_string(),
        "NULL frame has address family 17, not AF_INET (2) or AF_INET6 (24, 28, 30)"
    );
    // LOOP is always big-endian: a little-endian 2 is family 0x02000000.
    assert!(to_l3(LINKTYPE_LOOP, &[2, 0, 0, 0, 0x45]).is_err());
    assert_eq!(
        to_l3(LINKTYPE_LOOP, &[0, 0, 0, 2, 0x45])
            .expect("v4")
            .protocol,
        0x0800
    );
}

#[test]
fn macs_parse() {
    assert_eq!(parse_mac("02:77:00:00:00:0a"), Some([2, 0x77, 0, 0, 0, 10]));
    assert_eq!(parse_mac("02-77-00-00-00-0A"), Some([2, 0x77, 0, 0, 0, 10]));
    for bad in [
        "",
        "02:77:00:00:00",
        "02:77:00:00:00:00:00",
        "2:77:0:0:0:1",
        "zz:00:00:00:00:00",
    ] {
        assert_eq!(parse_mac(bad), None, "{bad}");
    }
}

/// Checks that `to_ethernet` and `to_l3` never panic on random frames of every supported
/// link type (and three unsupported ones), and that what they return is within the
/// input's bounds (the asserts).
#[test]
fn no_frame_makes_the_normalizer_panic() {
    let mut seed = 0x5eed_u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as u8
    };
    let macs = EthSynth::default();
    let mut out = Vec::new();
    for lt in SUPPORTED.iter().copied().chain([2, 127, 4242]) {
        for len in 0..80 {
            for round in 0..50 {
                let mut f: Vec<u8> = (0..len).map(|_| next()).collect();
                // Steer some frames into the interesting branches.
                if round % 2 == 0 && len > 16 {
                    f[0] = [0x45, 0x60, 0, 2][round % 4];
                    f[14] = 0x08;
                    f[15] = 0x00;
                }
                let orig = len as u32 + u32::from(next());
                if let Ok(e) = to_ethernet(lt, &f, orig, &macs, &mut out) {
                    assert!(e.data.len() >= 14 || lt == LINKTYPE_ETHERNET);
                    assert!(e.orig_len(orig) >= e.data.len() as u32);
                }
                if let Ok(p) = to_l3(lt, &f) {
                    assert!(p.data.len() <= f.len());
                }
            }
        }
    }
}
