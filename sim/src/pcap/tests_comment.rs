//! pcapng packet comments (`opt_comment`) come back with their frame: what `skbsim diff`
//! compares as a capture's skb metadata.

use super::*;

/// A pcapng with one Ethernet interface and an EPB whose options are `opts` (raw,
/// already padded), little-endian.
fn epb_with_options(data: &[u8], opts: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    // SHB, no options.
    f.extend_from_slice(&[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a]);
    f.extend_from_slice(&[1, 0, 0, 0]);
    f.extend_from_slice(&[0xff; 8]);
    f.extend_from_slice(&[28, 0, 0, 0]);
    // IDB: Ethernet, snaplen 0.
    f.extend_from_slice(&[1, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0]);
    let padded = (data.len() + 3) & !3;
    let blen = (28 + padded + opts.len() + 4) as u32;
    f.extend_from_slice(&6u32.to_le_bytes());
    f.extend_from_slice(&blen.to_le_bytes());
    f.extend_from_slice(&[0; 12]); // interface 0, timestamp 0
    f.extend_from_slice(&(data.len() as u32).to_le_bytes());
    f.extend_from_slice(&(data.len() as u32).to_le_bytes());
    f.extend_from_slice(data);
    f.resize(f.len() + padded - data.len(), 0);
    f.extend_from_slice(opts);
    f.extend_from_slice(&blen.to_le_bytes());
    f
}

fn comments(bytes: &[u8]) -> Vec<Option<Vec<u8>>> {
    PcapReader::from_reader_with(bytes, "c.pcapng", LinkPolicy::Any)
        .expect("header")
        .map(|f| f.expect("frame").comment)
        .collect()
}

#[test]
fn the_writers_comment_is_read_back_with_its_frame() {
    let mut w = PcapWriter::begin(Vec::new(), PcapFormat::PcapNg, "o.pcapng").expect("shb");
    w.add_interface("read", LINKTYPE_ETHERNET, 0).expect("if");
    w.write_packet(0, 1, &[1, 2, 3], 3, Some("pi: flags 0x0000 proto 0x8100"))
        .expect("p0");
    w.write_packet(0, 2, &[4; 8], 8, None).expect("p1");
    let bytes = w.finish().expect("flush");
    let mut r = PcapReader::from_reader_with(&bytes[..], "o", LinkPolicy::Any).expect("hdr");
    let f = r.next_frame().expect("frame 0").expect("reads");
    assert_eq!(f.data, [1, 2, 3]);
    assert_eq!(f.comment, Some(&b"pi: flags 0x0000 proto 0x8100"[..]));
    let f = r.next_frame().expect("frame 1").expect("reads");
    assert_eq!((f.data.len(), f.comment), (8, None));
}

#[test]
fn the_first_comment_counts_and_other_options_are_skipped() {
    #[rustfmt::skip]
    let opts = [
        2, 0, 4, 0, 0, 0, 0, 1, // epb_flags
        1, 0, 3, 0, b'a', b'b', b'c', 0, // opt_comment "abc"
        1, 0, 1, 0, b'z', 0, 0, 0, // a second comment
        0, 0, 0, 0, // opt_endofopt
    ];
    assert_eq!(
        comments(&epb_with_options(&[9; 5], &opts)),
        [Some(b"abc".to_vec())]
    );
}

#[test]
fn an_overrunning_option_is_no_comment_and_no_error() {
    // The comment claims 200 bytes; the block holds 4: the frame still reads.
    let opts = [1, 0, 200, 0, b'a', b'b', b'c', b'd'];
    assert_eq!(comments(&epb_with_options(&[9; 4], &opts)), [None]);
    // After opt_endofopt nothing is an option.
    let opts = [0, 0, 0, 0, 1, 0, 1, 0, b'x', 0, 0, 0];
    assert_eq!(comments(&epb_with_options(&[9; 4], &opts)), [None]);
}

#[test]
fn classic_pcap_has_no_comments() {
    let mut w = PcapWriter::new(Vec::new(), PcapFormat::Pcap).expect("header");
    w.write_frame(1, &[1; 14]).expect("frame");
    let bytes = w.finish().expect("flush");
    assert_eq!(comments(&bytes), [None]);
}
