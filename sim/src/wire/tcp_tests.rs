//! Tests of tcp.rs.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::*;
use crate::wire::test_frames::{TCP4_SYN, TCP6_SYN};

fn v4() -> (IpAddr, IpAddr) {
    (
        Ipv4Addr::new(10, 77, 0, 1).into(),
        Ipv4Addr::new(10, 77, 0, 2).into(),
    )
}

fn seg4() -> &'static [u8] {
    &TCP4_SYN[34..]
}

#[test]
fn captured_syn_fields_and_options() {
    // tcpdump -vv: 10.77.0.1.59710 > 10.77.0.2.5003: Flags [S], cksum 0xf5c9 (correct),
    // seq 497157809, win 64240, options [mss 1460,sackOK,TS val 1541916065 ecr 0,nop,
    // wscale 10], length 0.
    let p = Packet::new_checked(seg4()).expect("valid");
    assert_eq!((p.src_port(), p.dst_port()), (59710, 5003));
    assert_eq!((p.seq_number(), p.ack_number()), (497_157_809, 0));
    assert_eq!((p.data_offset(), p.header_len(), p.reserved()), (10, 40, 0));
    assert_eq!(p.flags(), TCPHDR_SYN);
    assert!(p.syn() && !p.ack() && !p.fin() && !p.rst() && !p.psh());
    assert!(!p.urg() && !p.ece() && !p.cwr());
    assert_eq!(p.window_len(), 64240);
    assert_eq!(p.checksum(), 0xf5c9);
    assert_eq!(p.urgent_at(), 0);
    let (src, dst) = v4();
    assert!(p.verify_checksum(src, dst));
    assert!(!p.verify_checksum(dst, Ipv4Addr::new(10, 77, 0, 3).into()));
    assert_eq!(p.options().len(), 20);
    assert!(p.payload().is_empty());
    assert_eq!(p.flag_word(), 0xa002_faf0);
    let opts: Vec<_> = p.options_iter().map(|o| o.expect("well formed")).collect();
    let o = |kind, data: &'static [u8]| TcpOption { kind, data };
    assert_eq!(
        opts,
        [
            o(TCPOPT_MSS, &[0x05, 0xb4]),
            o(TCPOPT_SACK_PERM, &[]),
            o(TCPOPT_TIMESTAMP, &[0x5b, 0xe7, 0xc5, 0xa1, 0, 0, 0, 0]),
            o(TCPOPT_NOP, &[]),
            o(TCPOPT_WINDOW, &[10]),
        ]
    );
    assert_eq!(u16::from_be_bytes([opts[0].data[0], opts[0].data[1]]), 1460);
    assert_eq!(
        u32::from_be_bytes([0x5b, 0xe7, 0xc5, 0xa1]),
        1_541_916_065,
        "TS val as tcpdump prints it"
    );
}

#[test]
fn captured_ipv6_syn_checksum() {
    // tcpdump -vv: fd00:77::1.43790 > fd00:77::2.5003: Flags [S], cksum 0x6848 (correct),
    // seq 3087935695, win 64800.
    let p = Packet::new_checked(&TCP6_SYN[54..]).expect("valid");
    assert_eq!(
        (p.src_port(), p.dst_port(), p.seq_number()),
        (43790, 5003, 3_087_935_695)
    );
    assert_eq!((p.window_len(), p.checksum()), (64800, 0x6848));
    let src: Ipv6Addr = "fd00:77::1".parse().expect("literal");
    let dst: Ipv6Addr = "fd00:77::2".parse().expect("literal");
    assert!(p.verify_checksum(src.into(), dst.into()));
    assert!(
        !p.verify_checksum(src.into(), Ipv4Addr::LOCALHOST.into()),
        "mixed families"
    );
}

#[test]
fn malformed_and_truncated_headers() {
    for len in 0..HEADER_LEN {
        assert_eq!(Packet::new_checked(&seg4()[..len]), Err(Error::Truncated));
    }
    // doff 10 (40 bytes) with 39 present: the fixed fields read, the options clamp.
    let p = Packet::new_unchecked(&seg4()[..39]);
    assert_eq!(p.check_len(), Ok(()));
    assert_eq!(p.check_header(), Err(Error::Truncated));
    assert_eq!(p.src_port(), 59710);
    assert!(p.options().is_empty() && p.payload().is_empty());
    // doff 4: below the fixed header.
    let mut b = seg4().to_vec();
    b[12] = 0x40;
    let p = Packet::new_unchecked(&b[..]);
    assert!(matches!(p.check_header(), Err(Error::Malformed(_))));
    assert!(p.options().is_empty() && p.payload().is_empty());
    // An option length of 1, and one running past the option bytes.
    for (at, v) in [(21, 1), (21, 40)] {
        let mut b = seg4().to_vec();
        b[at] = v;
        let p = Packet::new_checked(&b[..]).expect("lengths fine");
        let walked: Vec<_> = p.options_iter().collect();
        assert_eq!(walked, [Err(Error::Malformed("TCP option length"))]);
        assert!(matches!(Repr::parse(&p), Err(Error::Malformed(_))));
    }
    // EOL ends the list, whatever follows it.
    let eol = [TCPOPT_NOP, TCPOPT_EOL, 0xff, 0xff];
    assert_eq!(Options::new(&eol).count(), 2);
}

#[test]
fn emit_reproduces_the_captured_segment() {
    let p = Packet::new_checked(seg4()).expect("valid");
    let repr = Repr::parse(&p).expect("valid");
    assert_eq!(repr.buffer_len(), 40);
    assert_eq!(
        (repr.flags, repr.window_len, repr.options.len()),
        (TCPHDR_SYN, 64240, 20)
    );
    let mut out = [0u8; 40];
    let mut q = Packet::new_unchecked(&mut out[..]);
    repr.emit(&mut q).expect("room");
    let (src, dst) = v4();
    q.fill_checksum(src, dst);
    // The kernel's bytes, checksum 0xf5c9 included.
    assert_eq!(out[..], *seg4());
    let odd = Repr {
        options: &[1, 1, 1],
        ..repr
    };
    assert!(matches!(
        odd.emit(&mut Packet::new_unchecked(&mut out[..])),
        Err(Error::Malformed(_))
    ));
    assert_eq!(
        repr.emit(&mut Packet::new_unchecked(&mut [0u8; 39][..])),
        Err(Error::Truncated)
    );
}

#[test]
fn setters_write_their_fields() {
    let mut b = [0u8; 26];
    let mut p = Packet::new_unchecked(&mut b[..]);
    p.set_src_port(1);
    p.set_dst_port(2);
    p.set_seq_number(0x0102_0304);
    p.set_ack_number(0x0506_0708);
    p.set_data_offset(6);
    p.set_reserved(0x1);
    p.set_flags(TCPHDR_ACK | TCPHDR_PSH | TCPHDR_CWR);
    p.set_window_len(0x1234);
    p.set_urgent_at(0x5678);
    p.options_mut()
        .copy_from_slice(&[TCPOPT_NOP, TCPOPT_NOP, TCPOPT_NOP, TCPOPT_EOL]);
    p.payload_mut().copy_from_slice(&[0xaa, 0xbb]);
    let (src, dst) = v4();
    p.fill_checksum(src, dst);
    assert!(p.verify_checksum(src, dst));
    assert_eq!(
        b[..16],
        [0, 1, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0x61, 0x98, 0x12, 0x34]
    );
    assert_eq!(b[18..], [0x56, 0x78, 1, 1, 1, 0, 0xaa, 0xbb]);
}
