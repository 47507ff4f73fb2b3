//! PPP, NFLOG, 802.11, radiotap, FDDI and 802.15.4 captures made by scapy and by
//! tcpdump on an NFLOG group (testdata/README.md), read as Ethernet frames and compared
//! with `linktypes.expected`, which `expect-linktypes.py` wrote from tshark's dissection
//! of the same files; and corrupt headers, which are one-line errors.

use std::path::Path;

use super::linktype::*;
use super::*;

fn testdata(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/pcap/testdata")
        .join(name)
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// What tshark says a frame must become.
#[derive(Debug, PartialEq, Eq)]
enum Expect {
    Eth(Vec<u8>),
    Skip(String),
}

/// linktypes.expected's lines for `file`, by frame index; `synth` MACs are
/// EthSynth::default()'s.
fn expected(file: &str) -> Vec<(u64, Expect)> {
    let text = std::fs::read_to_string(testdata("linktypes.expected")).expect("expected");
    let mac = |m: &str, synth: [u8; 6]| match m {
        "synth" => synth.to_vec(),
        m => hex(&m.replace(':', "")),
    };
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.splitn(4, ' ').collect();
            (w[0] == file).then_some(w)
        })
        .map(|w| {
            let index = w[1].parse().expect("index");
            if w[2] == "skip" {
                return (index, Expect::Skip(w[3].to_string()));
            }
            let f: Vec<&str> = w[3].split(' ').collect();
            let mut frame = mac(f[0], EthSynth::DEFAULT_DST);
            frame.extend(mac(f[1], EthSynth::DEFAULT_SRC));
            frame.extend(hex(f[2]));
            frame.extend(hex(f[3]));
            (index, Expect::Eth(frame))
        })
        .collect()
}

/// Every frame through [`EthernetInput`]: the converted ones as tshark dissects them,
/// the others counted under the reason tshark's fields give.
#[test]
fn every_link_type_reads_as_tshark_dissects_it() {
    let files = [
        ("wlan.pcap", LINKTYPE_IEEE802_11, 14),
        ("radiotap_data.pcap", LINKTYPE_IEEE802_11_RADIOTAP, 6),
        ("ppp.pcap", LINKTYPE_PPP, 6),
        ("nflog.pcap", LINKTYPE_NFLOG, 13),
        ("fddi.pcap", LINKTYPE_FDDI, 5),
        ("wpan.pcap", LINKTYPE_IEEE802_15_4_WITHFCS, 3),
        ("wpan_nofcs.pcap", LINKTYPE_IEEE802_15_4_NOFCS, 3),
    ];
    for (file, lt, count) in files {
        let want = expected(file);
        assert_eq!(want.len(), count, "{file}: linktypes.expected");
        let raw = read_all_with(testdata(file), LinkPolicy::Any).expect("read");
        assert!(raw.iter().all(|f| f.link_type == lt), "{file}");
        let mut input = EthernetInput::open(&testdata(file), EthSynth::default()).expect(file);
        let mut got = Vec::new();
        while let Some(f) = input.next_frame() {
            let f = f.unwrap_or_else(|e| panic!("{e}"));
            let raw = &raw[f.index as usize];
            // The wire length follows the bytes removed (and an FCS, never captured here
            // without its frame).
            let removed = raw.data.len() + 14 - f.data.len();
            assert_eq!(
                f.orig_len as usize,
                raw.orig_len as usize + 14 - removed,
                "{file}"
            );
            assert_eq!(f.ts_ns, raw.ts_ns, "{file}");
            got.push((f.index, Expect::Eth(f.data.to_vec())));
        }
        let mut skipped = SkipCounts::default();
        for (i, w) in &want {
            if let Expect::Skip(label) = w {
                let r = SkipReason::ALL.iter().find(|r| r.label() == label);
                skipped.add(*r.unwrap_or_else(|| panic!("{file} {i}: reason {label}")));
            }
        }
        let want_eth: Vec<_> = want
            .into_iter()
            .filter(|(_, w)| matches!(w, Expect::Eth(_)))
            .collect();
        assert_eq!(got, want_eth, "{file}");
        assert_eq!(input.skipped(), &skipped, "{file}");
    }
}

/// The IFF_TUN side: the same payloads, without the Ethernet header, and a cut capture
/// keeps its cut payload and true 802.3 length.
#[test]
fn l3_packets_and_cut_frames() {
    let macs = EthSynth::default();
    let mut out = Vec::new();
    for file in ["wlan.pcap", "ppp.pcap", "nflog.pcap", "fddi.pcap"] {
        let want = expected(file);
        for f in read_all_with(testdata(file), LinkPolicy::Any).expect("read") {
            let Some((_, Expect::Eth(eth))) = want.iter().find(|(i, _)| *i == f.index) else {
                continue;
            };
            let l3 = to_l3(f.link_type, &f.data).expect("l3");
            assert_eq!(l3.data, &eth[14..], "{file} {}", f.index);
            let ty = u16::from_be_bytes([eth[12], eth[13]]);
            if ty >= 0x600 {
                assert_eq!(l3.protocol, ty, "{file} {}", f.index);
            } else {
                assert_eq!(l3.protocol, crate::consts::ETH_P_802_2);
            }
        }
    }
    // wlan.pcap frame 10 (STP, an 802.3 length frame of 38 bytes) cut to 40 of its 62
    // bytes: the length field still says 38, the payload is what was captured.
    let f = &read_all_with(testdata("wlan.pcap"), LinkPolicy::Any).expect("read")[10];
    let e = to_ethernet(
        LINKTYPE_IEEE802_11,
        &f.data[..40],
        f.orig_len,
        &macs,
        &mut out,
    )
    .expect("cut");
    assert_eq!((e.data.len(), &e.data[12..14]), (14 + 16, &[0, 38][..]));
    assert_eq!(e.orig_len(f.orig_len), 14 + 38);
}

fn convert_err(link_type: u32, frame: &[u8]) -> String {
    let mut out = Vec::new();
    let e = to_ethernet(
        link_type,
        frame,
        frame.len() as u32,
        &EthSynth::default(),
        &mut out,
    )
    .expect_err("corrupt");
    PcapError::convert(Path::new("in.pcap"), 3, e).to_string()
}

#[test]
fn corrupt_headers_are_one_line_errors() {
    let rt = read_all_with(testdata("radiotap_data.pcap"), LinkPolicy::Any).expect("read");
    let mut bad = rt[0].data.clone();
    bad[0] = 1;
    assert_eq!(
        convert_err(LINKTYPE_IEEE802_11_RADIOTAP, &bad),
        "in.pcap: frame 3: IEEE802_11_RADIOTAP header has it_version 1 (only 0 is defined)"
    );
    let mut bad = rt[0].data.clone();
    bad[2..4].copy_from_slice(&500u16.to_le_bytes());
    assert_eq!(
        convert_err(LINKTYPE_IEEE802_11_RADIOTAP, &bad),
        format!(
            "in.pcap: frame 3: IEEE802_11_RADIOTAP frame of {} bytes is shorter than its \
             500-byte link-layer header",
            bad.len()
        )
    );
    let mut bad = rt[0].data.clone();
    bad[2..4].copy_from_slice(&4u16.to_le_bytes());
    assert!(convert_err(LINKTYPE_IEEE802_11_RADIOTAP, &bad).contains("it_len 4 (less than"));
    // The present words chain past it_len.
    let mut bad = rt[0].data.clone();
    bad[7] |= 0x80;
    bad[2..4].copy_from_slice(&8u16.to_le_bytes());
    assert!(convert_err(LINKTYPE_IEEE802_11_RADIOTAP, &bad).contains("it_present"));
    // An 802.11 data frame cut inside its header (caplen = len).
    let wlan = read_all_with(testdata("wlan.pcap"), LinkPolicy::Any).expect("read");
    assert_eq!(
        convert_err(LINKTYPE_IEEE802_11, &wlan[1].data[..20]),
        "in.pcap: frame 3: IEEE802_11 frame of 20 bytes is shorter than its 24-byte \
         link-layer header"
    );
    let nf = read_all_with(testdata("nflog.pcap"), LinkPolicy::Any).expect("read");
    let mut bad = nf[0].data.clone();
    bad[1] = 1;
    assert!(convert_err(LINKTYPE_NFLOG, &bad)
        .ends_with("NFLOG header has version 1 (only 0, NFNETLINK_V0, is defined)"));
    let mut bad = nf[0].data.clone();
    bad[4..6].copy_from_slice(&2u16.to_le_bytes());
    assert_eq!(
        convert_err(LINKTYPE_NFLOG, &bad),
        "in.pcap: frame 3: NFLOG header has attribute length 2 (less than its 4-byte header)"
    );
    let mut bad = nf[0].data.clone();
    bad[4..6].copy_from_slice(&4000u16.to_le_bytes());
    assert!(convert_err(LINKTYPE_NFLOG, &bad).contains("shorter than its 4004-byte"));
    assert!(convert_err(LINKTYPE_PPP, &[0xff, 0x03, 0x00]).contains("PPP frame of 3 bytes"));
    assert!(convert_err(LINKTYPE_FDDI, &[0x50; 12]).contains("FDDI frame of 12 bytes"));
}

/// NFLOG attributes are in the capturing host's byte order: nflog.pcap's frames with
/// every attribute header swapped (as a big-endian host writes them) read the same.
#[test]
fn nflog_from_a_big_endian_host() {
    let macs = EthSynth::default();
    for f in read_all_with(testdata("nflog.pcap"), LinkPolicy::Any).expect("read") {
        let mut be = f.data.clone();
        let mut at = 4;
        while at + 4 <= be.len() {
            let len = usize::from(u16::from_le_bytes([be[at], be[at + 1]]));
            be.swap(at, at + 1);
            be.swap(at + 2, at + 3);
            at += len.next_multiple_of(4);
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let le = to_ethernet(LINKTYPE_NFLOG, &f.data, f.orig_len, &macs, &mut a);
        let be = to_ethernet(LINKTYPE_NFLOG, &be, f.orig_len, &macs, &mut b);
        assert_eq!(le.map(|e| e.data.to_vec()), be.map(|e| e.data.to_vec()));
    }
}

/// radiotap.pcap (text2pcap: a radiotap header and an 802.11 ACK) is a control frame.
#[test]
fn radiotap_ack_is_skipped() {
    let mut input =
        EthernetInput::open(&testdata("radiotap.pcap"), EthSynth::default()).expect("open");
    assert!(input.next_frame().is_none());
    assert_eq!(input.skipped().get(SkipReason::Ieee80211Control), 1);
    assert_eq!(input.skipped().to_string(), "1 (1 802.11 control)");
}
