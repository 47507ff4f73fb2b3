use std::io::{self, Cursor, Read};

use super::*;

/// dst 02:00:00:00:00:02, src 02:00:00:00:00:01, ethertype IPv4: a 14-byte frame.
const ETH14: [u8; 14] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];

/// Classic pcap, little-endian, microseconds, snaplen 65535: two frames.
#[rustfmt::skip]
const PCAP_LE_US: &[u8] = &[
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0xff, 0, 0, 1, 0, 0, 0,
    // frame 0: 1.500000 s, caplen 14, len 14
    1, 0, 0, 0, 0x20, 0xa1, 0x07, 0, 14, 0, 0, 0, 14, 0, 0, 0,
    2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0,
    // frame 1: 2.000001 s, caplen 4, len 60 (truncated capture)
    2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 60, 0, 0, 0,
    0xde, 0xad, 0xbe, 0xef,
];

/// The same two frames, big-endian.
#[rustfmt::skip]
const PCAP_BE_US: &[u8] = &[
    0xa1, 0xb2, 0xc3, 0xd4, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0xff, 0xff, 0, 0, 0, 1,
    0, 0, 0, 1, 0, 0x07, 0xa1, 0x20, 0, 0, 0, 14, 0, 0, 0, 14,
    2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0,
    0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 60,
    0xde, 0xad, 0xbe, 0xef,
];

/// pcapng, little-endian: SHB, IDB with if_tsresol = 6, EPB, an unknown block, EPB.
#[rustfmt::skip]
const PCAPNG_TSRESOL6: &[u8] = &[
    // SHB, 28 bytes
    0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
    // IDB, 32 bytes: Ethernet, snaplen 262144, if_tsresol = 6, opt_endofopt
    1, 0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0,
    9, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0, 0,
    // EPB, 48 bytes: if 0, ts 1_500_000 µs, caplen 14, len 14, 2 bytes of padding
    6, 0, 0, 0, 48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x60, 0xe3, 0x16, 0,
    14, 0, 0, 0, 14, 0, 0, 0,
    2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0, 0,
    48, 0, 0, 0,
    // unknown block type 0x0bad, 16 bytes
    0xad, 0x0b, 0, 0, 16, 0, 0, 0, 1, 2, 3, 4, 16, 0, 0, 0,
    // EPB, 36 bytes: ts 2_000_001 µs, caplen 4, len 60
    6, 0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x84, 0x1e, 0,
    4, 0, 0, 0, 60, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 36, 0, 0, 0,
];

/// pcapng, little-endian, if_tsresol = 9: one EPB at 1.5 s.
#[rustfmt::skip]
const PCAPNG_TSRESOL9: &[u8] = &[
    0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
    1, 0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0,
    9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0, 0,
    // ts 1_500_000_000 ns = 0x5968_2f00
    6, 0, 0, 0, 48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x2f, 0x68, 0x59,
    14, 0, 0, 0, 14, 0, 0, 0,
    2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0, 0,
    48, 0, 0, 0,
];

fn read(bytes: &[u8]) -> Result<Vec<Frame>, PcapError> {
    PcapReader::from_reader(bytes, "in.pcap")?.collect()
}

fn err(bytes: &[u8]) -> String {
    match read(bytes) {
        Ok(frames) => panic!("expected an error, read {} frames", frames.len()),
        Err(e) => e.to_string(),
    }
}

fn check_two_frames(frames: &[Frame], ts: [u64; 2]) {
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].index, 0);
    assert_eq!(frames[0].ts_ns, ts[0]);
    assert_eq!(frames[0].orig_len, 14);
    assert_eq!(frames[0].data, ETH14);
    assert_eq!(frames[1].index, 1);
    assert_eq!(frames[1].ts_ns, ts[1]);
    assert_eq!(frames[1].orig_len, 60);
    assert_eq!(frames[1].data, [0xde, 0xad, 0xbe, 0xef]);
}

#[test]
fn classic_both_byte_orders() {
    for bytes in [PCAP_LE_US, PCAP_BE_US] {
        let frames = read(bytes).expect("valid pcap");
        check_two_frames(&frames, [1_500_000_000, 2_000_001_000]);
    }
}

#[test]
fn classic_nanosecond_magic() {
    let mut le = PCAP_LE_US.to_vec();
    le[0..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    let mut be = PCAP_BE_US.to_vec();
    be[0..4].copy_from_slice(&0xa1b2_3c4du32.to_be_bytes());
    for bytes in [le, be] {
        let frames = read(&bytes).expect("valid pcap");
        check_two_frames(&frames, [1_000_500_000, 2_000_000_001]);
    }
}

#[test]
fn pcapng_tsresol_6_skips_unknown_blocks() {
    let r = PcapReader::from_reader(PCAPNG_TSRESOL6, "in.pcapng").expect("header");
    assert_eq!(r.format(), PcapFormat::PcapNg);
    let frames: Vec<Frame> = r.collect::<Result<_, _>>().expect("valid pcapng");
    check_two_frames(&frames, [1_500_000_000, 2_000_001_000]);
}

#[test]
fn pcapng_tsresol_9() {
    let frames = read(PCAPNG_TSRESOL9).expect("valid pcapng");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].ts_ns, 1_500_000_000);
    assert_eq!(frames[0].data, ETH14);
}

/// Builds a pcapng section in either byte order: SHB, then IDBs with the given
/// option bytes, then EPBs `(interface, ts units, data)`.
pub(super) fn ng_file(be: bool, ifaces: &[(u16, Vec<u8>)], epbs: &[(u32, u64, &[u8])]) -> Vec<u8> {
    let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut f = Vec::new();
    f.extend_from_slice(&w32(0x0a0d_0d0a));
    f.extend_from_slice(&w32(28));
    f.extend_from_slice(&w32(0x1a2b_3c4d));
    f.extend_from_slice(&w16(1));
    f.extend_from_slice(&w16(0));
    f.extend_from_slice(&[0xff; 8]);
    f.extend_from_slice(&w32(28));
    for (link, opts) in ifaces {
        let len = 20 + opts.len() as u32;
        f.extend_from_slice(&w32(1));
        f.extend_from_slice(&w32(len));
        f.extend_from_slice(&w16(*link));
        f.extend_from_slice(&w16(0));
        f.extend_from_slice(&w32(0));
        f.extend_from_slice(opts);
        f.extend_from_slice(&w32(len));
    }
    for (id, ts, data) in epbs {
        let pad = (4 - data.len() % 4) % 4;
        let len = 32 + (data.len() + pad) as u32;
        f.extend_from_slice(&w32(6));
        f.extend_from_slice(&w32(len));
        f.extend_from_slice(&w32(*id));
        f.extend_from_slice(&w32((ts >> 32) as u32));
        f.extend_from_slice(&w32(*ts as u32));
        f.extend_from_slice(&w32(data.len() as u32));
        f.extend_from_slice(&w32(data.len() as u32));
        f.extend_from_slice(data);
        f.extend_from_slice(&vec![0; pad]);
        f.extend_from_slice(&w32(len));
    }
    f
}

fn opt(be: bool, code: u16, value: &[u8]) -> Vec<u8> {
    let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut o = Vec::new();
    o.extend_from_slice(&w16(code));
    o.extend_from_slice(&w16(value.len() as u16));
    o.extend_from_slice(value);
    o.resize(o.len().div_ceil(4) * 4, 0);
    o
}

#[test]
fn pcapng_per_interface_resolution_both_byte_orders() {
    for be in [false, true] {
        let mut tsoffset = opt(
            be,
            14,
            &if be {
                10i64.to_be_bytes()
            } else {
                10i64.to_le_bytes()
            },
        );
        tsoffset.extend(opt(be, 9, &[3]));
        let ifaces = [
            (1, opt(be, 9, &[0x80 | 20])), // 2^-20 s
            (1, Vec::new()),               // default 10^-6 s
            (1, opt(be, 9, &[12])),        // picoseconds
            (1, tsoffset),                 // milliseconds, 10 s offset
        ];
        let f = ng_file(
            be,
            &ifaces,
            &[
                (0, 3 << 20, &ETH14),
                (1, 7, &ETH14[..1]),
                (2, 5_000_000, &ETH14[..5]),
                (3, 2, &[]),
            ],
        );
        let frames = read(&f).expect("valid pcapng");
        let ts: Vec<u64> = frames.iter().map(|f| f.ts_ns).collect();
        assert_eq!(ts, [3_000_000_000, 7_000, 5_000, 10_002_000_000]);
        assert_eq!(frames[1].data, [2]);
        assert_eq!(frames[2].data.len(), 5);
        assert!(frames[3].data.is_empty());
    }
}

#[test]
fn pcapng_second_section_resets_interfaces_and_byte_order() {
    let mut f = ng_file(false, &[(1, Vec::new())], &[(0, 1, &ETH14)]);
    f.extend(ng_file(true, &[(1, opt(true, 9, &[9]))], &[(0, 1, &ETH14)]));
    let frames = read(&f).expect("valid pcapng");
    assert_eq!(
        frames.iter().map(|f| f.ts_ns).collect::<Vec<_>>(),
        [1000, 1]
    );
    assert_eq!(frames[1].index, 1);

    // An EPB in the second section may not use the first section's interface 1.
    let mut f = ng_file(false, &[(1, Vec::new()), (1, Vec::new())], &[]);
    f.extend(ng_file(false, &[(1, Vec::new())], &[(1, 1, &ETH14)]));
    let e = err(&f);
    assert!(
        e.contains("refers to interface 1 but the section has only 1 interface description block (interface 0)"),
        "{e}"
    );
}

#[test]
fn pcapng_simple_packet_block() {
    let mut f = ng_file(false, &[(1, Vec::new())], &[]);
    // SPB: orig len 14, data padded to 16.
    let spb: Vec<u8> = [3u32, 32, 14]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .chain(ETH14)
        .chain([0, 0])
        .chain(32u32.to_le_bytes())
        .collect();
    f.extend(spb);
    let frames = read(&f).expect("valid pcapng");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].data, ETH14);
    assert_eq!(frames[0].ts_ns, 0);
}

#[test]
fn writer_round_trips_and_is_deterministic() {
    let frames: Vec<(u64, Vec<u8>)> = (0..50u64)
        .map(|k| {
            (
                1_000_000_000 + k * 1_000 + k % 3,
                (0..(k * 37 % 1515) as usize).map(|i| i as u8).collect(),
            )
        })
        .collect();
    for format in [PcapFormat::Pcap, PcapFormat::PcapNg] {
        let write = || {
            let mut w = PcapWriter::new(Vec::new(), format).expect("header");
            for (ts, data) in &frames {
                w.write_frame(*ts, data).expect("frame");
            }
            assert_eq!(w.frames_written(), 50);
            w.finish().expect("flush")
        };
        let bytes = write();
        assert_eq!(bytes, write(), "{format}: output must be deterministic");
        let r = PcapReader::from_reader(&bytes[..], "rt").expect("header");
        assert_eq!(r.format(), format);
        let back: Vec<Frame> = r.collect::<Result<_, _>>().expect("round trip");
        assert_eq!(back.len(), frames.len());
        for (k, (f, (ts, data))) in back.iter().zip(&frames).enumerate() {
            assert_eq!((f.index, f.ts_ns, &f.data), (k as u64, *ts, data));
            assert_eq!(f.orig_len as usize, data.len());
        }
    }
}

#[test]
fn writer_headers_are_exact() {
    let w = PcapWriter::new(Vec::new(), PcapFormat::Pcap).expect("header");
    #[rustfmt::skip]
    let classic = [
        0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 4, 0, 1, 0, 0, 0,
    ];
    assert_eq!(w.finish().expect("flush"), classic);
    let mut w = PcapWriter::new(Vec::new(), PcapFormat::PcapNg).expect("header");
    w.write_frame(1_500_000_000, &ETH14).expect("frame");
    assert_eq!(w.finish().expect("flush"), PCAPNG_TSRESOL9);
}

#[test]
fn writer_rejects_unrepresentable_frames() {
    let mut w = PcapWriter::with_name(Vec::new(), PcapFormat::Pcap, "out.pcap").expect("hdr");
    let e = w.write_frame(u64::MAX, &ETH14).expect_err("ts");
    assert_eq!(
        e.to_string(),
        "out.pcap: frame 0: timestamp 18446744073.709551615 s is after 2106-02-07 06:28:15 \
         UTC, the last second classic pcap's 32-bit field holds (write pcapng)"
    );
    let big = vec![0; MAX_CAPLEN as usize + 1];
    let e = w.write_frame(0, &big).expect_err("size");
    assert_eq!(
        e.to_string(),
        "out.pcap: frame 0: 262145 bytes is larger than the snaplen (262144)"
    );
}

/// libpcap `sf-pcap.c: pcap_next_packet`: a record longer than the file's snaplen is
/// read whole and handed out cut to the snaplen, orig_len unchanged.
#[test]
fn classic_caplen_over_snaplen() {
    let mut snap = PCAP_LE_US.to_vec();
    snap[16..20].copy_from_slice(&10u32.to_le_bytes());
    let frames = read(&snap).expect("libpcap reads it");
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].data, ETH14[..10]);
    assert_eq!(frames[0].orig_len, 14);
    // The second record (caplen 4) is found after all 14 bytes of the first.
    assert_eq!(frames[1].data, [0xde, 0xad, 0xbe, 0xef]);
    // Snaplen 0 means "the maximum", not "nothing".
    snap[16..20].copy_from_slice(&0u32.to_le_bytes());
    assert_eq!(read(&snap).expect("reads")[0].data, ETH14);
}

/// Before version 2.3 caplen and len were the other way round; 2.3 may be either.
#[test]
fn classic_swapped_lengths_of_old_versions() {
    let mut old = PCAP_LE_US.to_vec();
    old[6] = 2; // version 2.2
                // frame 1's header says caplen 4, len 60; swapped it means caplen 60: make the
                // file say (60, 4) so that swapping gives back (4, 60).
    old[62..66].copy_from_slice(&60u32.to_le_bytes());
    old[66..70].copy_from_slice(&4u32.to_le_bytes());
    let frames = read(&old).expect("2.2 reads");
    assert_eq!((frames[1].data.len(), frames[1].orig_len), (4, 60));
    // 2.3: swapped only where caplen > len.
    old[6] = 3;
    let frames = read(&old).expect("2.3 reads");
    assert_eq!((frames[1].data.len(), frames[1].orig_len), (4, 60));
    assert_eq!((frames[0].data.len(), frames[0].orig_len), (14, 14));
    old[6] = 5;
    assert_eq!(
        err(&old),
        "in.pcap: unsupported: pcap version 2.5 (libpcap reads 2.0 to 2.4 and 543.0)"
    );
}

#[test]
fn error_messages() {
    let mut raw = PCAP_LE_US.to_vec();
    raw[20] = 101;
    assert_eq!(
        err(&raw),
        "in.pcap: link type 101 (RAW) is not Ethernet; skbsim replays Ethernet frames only"
    );
    assert_eq!(
        err(b"GET / HTTP/1.1\r\n"),
        "in.pcap: not a pcap or pcapng file (bad magic 47 45 54 20)"
    );
    assert_eq!(err(&[]), "in.pcap: empty file (no pcap global header)");
    assert_eq!(
        err(&PCAP_LE_US[..20]),
        "in.pcap: truncated pcap global header: 20 of 24 bytes"
    );
    assert_eq!(
        err(&PCAP_LE_US[..59]),
        "in.pcap: truncated record header at offset 54 (frame 1): 5 of 16 bytes"
    );
    assert_eq!(
        err(&PCAP_LE_US[..72]),
        "in.pcap: frame 1 at offset 54: record claims caplen 4 but only 2 bytes remain"
    );
    let mut big = PCAP_LE_US.to_vec();
    big[16..20].copy_from_slice(&0u32.to_le_bytes());
    big[32..36].copy_from_slice(&300_000u32.to_le_bytes());
    assert_eq!(
        err(&big),
        "in.pcap: frame 0 at offset 24: caplen 300000 is larger than the 256 KiB sanity \
         limit (262144)"
    );
    // A caplen over the file's snaplen is no error: see classic_caplen_over_snaplen.
    let f = ng_file(
        false,
        &[(1, Vec::new()), (113, Vec::new())],
        &[(1, 0, &ETH14)],
    );
    assert_eq!(
        err(&f),
        "in.pcap: link type 113 (LINUX_SLL) of interface 1 is not Ethernet; skbsim replays \
         Ethernet frames only"
    );
    assert_eq!(
        err(&PCAPNG_TSRESOL6[..100]),
        "in.pcap: frame 0 at offset 60: record claims block length 48 but only 40 bytes \
         remain"
    );
    let io = PcapReader::open("/nonexistent/x.pcap").expect_err("missing file");
    assert!(
        io.to_string()
            .starts_with("/nonexistent/x.pcap: I/O error at byte offset 0: "),
        "{io}"
    );
}

#[test]
fn reader_stops_after_an_error() {
    let mut r = PcapReader::from_reader(&PCAP_LE_US[..60], "in.pcap").expect("header");
    assert!(matches!(r.next_frame(), Some(Ok(_))));
    assert!(matches!(
        r.next_frame(),
        Some(Err(PcapError::TruncatedRecordHeader { .. }))
    ));
    assert!(r.next_frame().is_none());
}

/// A reader that returns one byte per `read` call and an `Interrupted` in between.
struct Trickle<'a>(&'a [u8], bool);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.1 = !self.1;
        if self.1 {
            return Err(io::Error::from(io::ErrorKind::Interrupted));
        }
        match (self.0.split_first(), buf.first_mut()) {
            (Some((b, rest)), Some(slot)) => {
                *slot = *b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[test]
fn byte_at_a_time_input() {
    for bytes in [PCAP_LE_US, PCAP_BE_US, PCAPNG_TSRESOL6] {
        let r = PcapReader::from_reader(Trickle(bytes, false), "t").expect("header");
        let frames: Vec<Frame> = r.collect::<Result<_, _>>().expect("frames");
        check_two_frames(&frames, [1_500_000_000, 2_000_001_000]);
    }
}

#[test]
fn memory_stays_bounded_while_streaming() {
    let frame: Vec<u8> = (0..1514).map(|i| i as u8).collect();
    for format in [PcapFormat::Pcap, PcapFormat::PcapNg] {
        let mut w = PcapWriter::new(Vec::new(), format).expect("header");
        for k in 0..3000 {
            w.write_frame(k, &frame).expect("frame");
        }
        let bytes = w.finish().expect("flush");
        let total = bytes.len() as u64;
        let mut r = PcapReader::from_reader(Cursor::new(bytes), "big").expect("header");
        let before = r.buffer_len();
        let mut n = 0;
        while let Some(f) = r.next_frame() {
            assert_eq!(f.expect("frame").data, &frame[..]);
            n += 1;
        }
        assert_eq!(n, 3000);
        assert_eq!(r.buffer_len(), before);
        assert_eq!(r.offset(), total);
    }
}

/// Reads to the end, bounded, and returns whether it ended in an error.
fn drain(bytes: &[u8]) -> bool {
    let Ok(mut r) = PcapReader::from_reader_with(bytes, "fuzz", LinkPolicy::Any) else {
        return true;
    };
    for _ in 0..100_000 {
        match r.next_frame() {
            None => return false,
            Some(Err(e)) => {
                let s = e.to_string();
                assert!(!s.contains('\n') && s.starts_with("fuzz: "), "{s}");
                return true;
            }
            Some(Ok(f)) => assert!(f.data.len() <= MAX_CAPLEN as usize),
        }
    }
    panic!("reader did not finish");
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
}

/// Checks that the reader neither panics nor loops on any truncation or mutation of valid
/// captures or on garbage, that every error it gives is one line naming the input, and
/// that no frame exceeds MAX_CAPLEN (`drain` asserts the last two).
#[test]
fn no_input_makes_the_reader_panic() {
    let mut written = PcapWriter::new(Vec::new(), PcapFormat::PcapNg).expect("header");
    written.write_frame(7, &ETH14[..13]).expect("frame");
    let written = written.finish().expect("flush");
    let valid: [&[u8]; 5] = [
        PCAP_LE_US,
        PCAP_BE_US,
        PCAPNG_TSRESOL6,
        PCAPNG_TSRESOL9,
        &written,
    ];
    for v in valid {
        assert!(!drain(v));
        // Every truncation: an error unless it ends on a record boundary.
        for cut in 0..v.len() {
            drain(&v[..cut]);
        }
    }
    let mut lcg = Lcg(0x5eed);
    for round in 0..20_000 {
        // Mutations of valid files reach the deep paths; plain garbage the shallow ones.
        let mut bytes = valid[round % valid.len()].to_vec();
        if round % 4 == 0 {
            let len = lcg.next() as usize % 300;
            bytes = (0..len).map(|_| lcg.next() as u8).collect();
            if round % 8 == 0 && len >= 4 {
                bytes[..4].copy_from_slice(&valid[round % 3][..4]);
            }
        } else {
            for _ in 0..1 + lcg.next() % 4 {
                let at = lcg.next() as usize % bytes.len();
                bytes[at] = lcg.next() as u8;
            }
        }
        drain(&bytes);
    }
}
