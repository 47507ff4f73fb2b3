//! The writer: exact bytes of the new records, round trips through our reader, and
//! read-backs by tshark (when installed) of what the replay engine will write.

use std::path::PathBuf;
use std::process::Command;

use super::linktype::{LINKTYPE_LINUX_SLL, LINKTYPE_RAW};
use super::*;

#[test]
fn pcapng_interface_and_commented_packet_bytes_are_exact() {
    let mut w = PcapWriter::begin(Vec::new(), PcapFormat::PcapNg, "out.pcapng").expect("shb");
    assert_eq!(w.add_interface("", LINKTYPE_ETHERNET, 0).expect("if 0"), 0);
    assert_eq!(
        w.add_interface("tap0", LINKTYPE_RAW, 1500).expect("if 1"),
        1
    );
    w.write_packet(1, 0x1_0000_0002, &[0xaa, 0xbb, 0xcc], 60, Some("ab"))
        .expect("epb");
    let bytes = w.finish().expect("flush");
    #[rustfmt::skip]
    let want: Vec<u8> = [
        // SHB
        &[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0][..],
        &[0xff; 8], &[28, 0, 0, 0],
        // IDB 0: Ethernet, snaplen 0 → 262144, if_tsresol 9
        &[1, 0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0],
        &[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0, 0],
        // IDB 1: RAW, snaplen 1500, if_name "tap0", if_tsresol 9
        &[1, 0, 0, 0, 40, 0, 0, 0, 101, 0, 0, 0, 0xdc, 5, 0, 0],
        &[2, 0, 4, 0, b't', b'a', b'p', b'0', 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0],
        // EPB: interface 1, ts 2^32 + 2 ns, caplen 3, len 60, opt_comment "ab"
        &[6, 0, 0, 0, 48, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 60, 0, 0, 0],
        &[0xaa, 0xbb, 0xcc, 0], &[1, 0, 2, 0, b'a', b'b', 0, 0], &[0, 0, 0, 0], &[48, 0, 0, 0],
    ]
    .concat();
    assert_eq!(bytes, want);
}

#[test]
fn several_interfaces_round_trip_with_orig_len_and_link_types() {
    let mut w = PcapWriter::begin(Vec::new(), PcapFormat::PcapNg, "o").expect("shb");
    let tap = w.add_interface("tap0", LINKTYPE_ETHERNET, 0).expect("tap");
    let tun = w.add_interface("tun0", LINKTYPE_RAW, 0).expect("tun");
    let eth = [0x11u8; 60];
    let ip = [0x45u8; 28];
    w.write_packet(tap, 1, &eth[..20], 60, Some("truncated read"))
        .expect("p0");
    w.write_packet(tun, 2, &ip, 0, None).expect("p1");
    // An interface added after packets were written.
    let sll = w.add_interface("any", LINKTYPE_LINUX_SLL, 0).expect("sll");
    // Past 2106: pcapng has 64-bit timestamps.
    let late = 5_000_000_000 * 1_000_000_000;
    w.write_packet(sll, late, &[0; 16], 16, Some("é".repeat(40_000).as_str()))
        .expect("p2");
    assert_eq!(w.interfaces(), 3);
    let bytes = w.finish().expect("flush");
    let mut r = PcapReader::from_reader_with(&bytes[..], "o", LinkPolicy::Any).expect("header");
    let mut back = Vec::new();
    while let Some(f) = r.next_frame() {
        back.push(f.expect("reads").to_frame());
    }
    let names: Vec<_> = (0..4).map(|i| r.interface_name(i)).collect();
    assert_eq!(names, [Some("tap0"), Some("tun0"), Some("any"), None]);
    assert_eq!(r.interface_link_type(1), Some(LINKTYPE_RAW));
    let got: Vec<(u32, u32, u64, usize, u32)> = back
        .iter()
        .map(|f| (f.interface, f.link_type, f.ts_ns, f.data.len(), f.orig_len))
        .collect();
    assert_eq!(
        got,
        [
            (0, 1, 1, 20, 60),
            // orig_len below the captured length is raised to it.
            (1, 101, 2, 28, 28),
            (2, 113, late, 16, 16),
        ]
    );
}

#[test]
fn classic_pcap_with_a_link_type_and_orig_len() {
    let mut w = PcapWriter::begin(Vec::new(), PcapFormat::Pcap, "out.pcap").expect("begin");
    w.add_interface("tun0", LINKTYPE_RAW, 65535)
        .expect("header");
    w.write_packet(0, 1_000_000_001, &[0x45; 4], 1400, Some("dropped"))
        .expect("packet");
    let e = w
        .add_interface("tap0", LINKTYPE_ETHERNET, 0)
        .expect_err("second interface");
    assert_eq!(
        e.to_string(),
        "out.pcap: unsupported: classic pcap holds one interface, so it cannot also hold \
         `tap0` (write pcapng)"
    );
    let e = w
        .write_packet(1, 0, &[], 0, None)
        .expect_err("no interface 1");
    assert_eq!(
        e.to_string(),
        "out.pcap: frame 1: interface 1 was never added (the file has 1)"
    );
    let e = w
        .write_packet(0, 0, &[0; 65536], 65536, None)
        .expect_err("over snaplen");
    assert_eq!(
        e.to_string(),
        "out.pcap: frame 1: 65536 bytes is larger than the snaplen (65535)"
    );
    let e = w
        .write_packet(0, (u64::from(u32::MAX) + 1) * 1_000_000_000, &[], 0, None)
        .expect_err("2106");
    assert_eq!(
        e.to_string(),
        "out.pcap: frame 1: timestamp 4294967296.000000000 s is after 2106-02-07 06:28:15 \
         UTC, the last second classic pcap's 32-bit field holds (write pcapng)"
    );
    let bytes = w.finish().expect("flush");
    #[rustfmt::skip]
    let want = [
        0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0xff, 0xff, 0, 0, 101, 0, 0, 0,
        1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0x78, 5, 0, 0, 0x45, 0x45, 0x45, 0x45,
    ];
    assert_eq!(bytes, want);
    // No interface at all: still a valid (empty Ethernet) capture.
    let empty = PcapWriter::begin(Vec::new(), PcapFormat::Pcap, "e")
        .expect("begin")
        .finish()
        .expect("flush");
    assert_eq!(empty.len(), 24);
    assert_eq!(empty[20], 1);
}

#[test]
fn output_format_choice() {
    let p = |s: &str| PathBuf::from(s);
    assert_eq!(
        PcapFormat::for_output(&p("a.pcapng"), PcapFormat::Pcap),
        PcapFormat::PcapNg
    );
    assert_eq!(
        PcapFormat::for_output(&p("a.PCAPNG"), PcapFormat::Pcap),
        PcapFormat::PcapNg
    );
    assert_eq!(
        PcapFormat::for_output(&p("a.pcap"), PcapFormat::PcapNg),
        PcapFormat::PcapNg
    );
    assert_eq!(
        PcapFormat::for_output(&p("a.pcap"), PcapFormat::Pcap),
        PcapFormat::Pcap
    );
    let last_pcap_second = u64::from(u32::MAX) * 1_000_000_000 + 999_999_999;
    assert!(PcapFormat::Pcap.holds_ts(last_pcap_second));
    assert!(!PcapFormat::Pcap.holds_ts(last_pcap_second + 1));
    assert!(PcapFormat::PcapNg.holds_ts(u64::MAX));
}

/// Runs tshark with `args`; `None` (and a printed reason) when it is not installed.
/// Fails on any stderr line but tshark's warning about running as root.
fn tshark(args: &[&str]) -> Option<String> {
    let out = match Command::new("tshark").args(args).output() {
        Ok(o) => o,
        Err(_) => {
            println!("skipped: tshark not installed");
            return None;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("Running as user") && !l.trim().is_empty())
        .collect();
    assert!(
        out.status.success() && complaints.is_empty(),
        "tshark {args:?}: {stderr}"
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("skbsim-pcap-{}-{name}", std::process::id()))
}

#[test]
fn tshark_reads_the_writers_pcapng_with_names_comments_and_lengths() {
    let eth = read_all_any(include_bytes!("testdata/eth.pcap"));
    let raw = read_all_any(include_bytes!("testdata/raw.pcap"));
    let path = temp("out.pcapng");
    let mut w = PcapWriter::begin_file(&path, PcapFormat::PcapNg).expect("create");
    let tap = w.add_interface("tap0", LINKTYPE_ETHERNET, 0).expect("tap0");
    let tun = w.add_interface("tun0", LINKTYPE_RAW, 0).expect("tun0");
    let stack = w
        .add_interface("stack", LINKTYPE_ETHERNET, 0)
        .expect("stack");
    let meta = "protocol=0x0800 vlan=none ip_summed=CHECKSUM_PARTIAL gso_type=SKB_GSO_TCPV4 \
                gso_size=1448";
    w.write_packet(tap, eth[2].ts_ns, &eth[2].data, eth[2].orig_len, Some(meta))
        .expect("0");
    // A truncated read: 60 of 142 bytes.
    w.write_packet(stack, eth[3].ts_ns, &eth[3].data[..60], 142, None)
        .expect("1");
    // Past 2106 (5e9 s is in 2128).
    w.write_packet(
        tun,
        5_000_000_000 * 1_000_000_000 + 7,
        &raw[0].data,
        68,
        Some("tun"),
    )
    .expect("2");
    w.finish().expect("flush");
    let Some(out) = tshark(&[
        "-r",
        path.to_str().expect("utf-8"),
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-e",
        "frame.interface_name",
        "-e",
        "frame.len",
        "-e",
        "frame.cap_len",
        "-e",
        "frame.comment",
        "-e",
        "ip.src",
        "-e",
        "frame.time_epoch",
    ]) else {
        return;
    };
    let _ = std::fs::remove_file(&path);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            format!("tap0|142|142|{meta}|10.77.0.1|1796145208.280745000").as_str(),
            "stack|142|60||10.77.0.2|1796145208.280878000",
            "tun0|68|68|tun|10.88.0.1|5000000000.000000007",
        ]
    );
}

#[test]
fn tshark_decodes_classic_raw_output_as_ip() {
    let raw = read_all_any(include_bytes!("testdata/raw.pcap"));
    let path = temp("raw.pcap");
    let mut w = PcapWriter::begin_file(&path, PcapFormat::Pcap).expect("create");
    w.add_interface("tun0", LINKTYPE_RAW, 0).expect("header");
    for f in &raw {
        w.write_packet(
            0,
            f.ts_ns,
            &f.data[..f.data.len().min(100)],
            f.orig_len,
            None,
        )
        .expect("packet");
    }
    w.finish().expect("flush");
    let Some(out) = tshark(&[
        "-r",
        path.to_str().expect("utf-8"),
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-e",
        "frame.len",
        "-e",
        "frame.cap_len",
        "-e",
        "ip.dst",
        "-e",
        "ipv6.dst",
    ]) else {
        return;
    };
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "68|68|10.88.0.2|",
            "68|68|10.88.0.2|",
            "104|100||fd88::2",
            "104|100||fd88::2",
            "1428|100|10.88.0.3|",
        ]
    );
}

fn read_all_any(bytes: &[u8]) -> Vec<Frame> {
    PcapReader::from_reader_with(bytes, "testdata", LinkPolicy::Any)
        .expect("header")
        .collect::<Result<_, _>>()
        .expect("frames")
}
