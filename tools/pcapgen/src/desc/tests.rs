use super::*;

fn err(text: &str) -> String {
    match parse(text, "t.toml") {
        Ok(r) => panic!("expected an error, got {} frames", r.frames.len()),
        Err(e) => {
            assert!(!e.contains('\n'), "one line: {e}");
            e
        }
    }
}

#[test]
fn unknown_key_names_the_key_frame_and_line() {
    let e = err(
        "[[frame]]\nethertype = 0x88cc\n\n[[frame]]\nipv4 = { src = \"10.0.0.1\", ttl2 = 3 }\n",
    );
    assert!(e.starts_with("t.toml:5:"), "{e}");
    assert!(
        e.contains("[[frame]] 1: key `ipv4`: unknown field `ttl2`"),
        "{e}"
    );
    let e = err("[defaults]\nsrc_mack = \"02:00:00:00:00:01\"\n");
    assert!(e.starts_with("t.toml:2:1: unknown field `src_mack`"), "{e}");
    let e = err("colour = 1\n");
    assert!(e.contains("unknown field `colour`"), "{e}");
}

#[test]
fn bad_values_name_the_key() {
    let e = err("[[frame]]\nipv4 = { src = \"10.0.0\" }\n");
    assert!(
        e.contains("[[frame]] 0: key `ipv4.src`: invalid IPv4 address syntax"),
        "{e}"
    );
    let e = err("[[frame]]\nvlan = [{ vid = 5000 }]\nipv4 = {}\n");
    assert_eq!(
        e,
        "t.toml:1: [[frame]] 0: key `vlan`: tag 0: vid 5000 is out of range 0..=4095"
    );
    let e = err("[[frame]]\nsrc_mac = \"02:00:00:00:00\"\nethertype = 1\n");
    assert!(
        e.contains("key `src_mac`: MAC address \"02:00:00:00:00\""),
        "{e}"
    );
    let e = err("[[frame]]\nipv4 = {}\ntcp = { sport = 1, dport = 2, flags = \"SX\" }\n");
    assert!(e.contains("key `tcp.flags`: TCP flags \"SX\""), "{e}");
    let e = err("[[frame]]\nipv4 = {}\ntcp = { dport = 2 }\n");
    assert!(e.contains("key `tcp`: missing field `sport`"), "{e}");
    let e = err("[[frame]]\nraw = \"0102\"\npayload = 3\n");
    assert!(
        e.contains("key `payload`: cannot be combined with `raw`"),
        "{e}"
    );
    let e = err("[[frame]]\nraw = \"01x2\"\n");
    assert!(e.contains("key `raw`: byte 1: \"x2\" is not hex"), "{e}");
    let e = err("[[frame]]\npayload = 3\n");
    assert!(e.contains("key `ethertype`: a frame needs"), "{e}");
    let e = err("[[frame]]\nethertype = 0x88cc\nudp = { sport = 1, dport = 2 }\n");
    assert!(e.contains("key `udp`: needs `ipv4` or `ipv6`"), "{e}");
    let e = err("[[frame]]\nethertype = 1\ncount = 2_000_000\n");
    assert!(
        e.contains("key `count`: a description makes at most 1000000 frames"),
        "{e}"
    );
    let e = err("[[frame]]\nipv4 = {}\nudp = { sport = 1, dport = 2 }\ntcp_csum = \"bad\"\n");
    assert!(
        e.contains("key `tcp_csum`: only applies to a `tcp` frame"),
        "{e}"
    );
}

#[test]
fn defaults_count_and_timestamps() {
    let r = parse(
        "start_ns = 5\ninterval_ns = 10\n[defaults]\nsrc_mac = \"02:00:00:00:00:aa\"\n\
         [[frame]]\nipv4 = { id = 7 }\ntcp = { sport = 1, dport = 2, seq = 100, flags = \"S\" }\n\
         payload = 10\ncount = 3\n[[frame]]\nraw = \"aabb\"\n",
        "t.toml",
    )
    .expect("valid");
    assert_eq!(r.format, PcapFormat::Pcap);
    let ts: Vec<u64> = r.frames.iter().map(|f| f.ts_ns).collect();
    assert_eq!(ts, [5, 15, 25, 35]);
    assert_eq!(r.frames[3].entry, 1);
    assert_eq!(r.frames[3].body, Body::Raw(vec![0xaa, 0xbb]));
    let Body::Built(s) = &r.frames[2].body else {
        panic!("built frame expected");
    };
    assert_eq!(s.src, [2, 0, 0, 0, 0, 0xaa]);
    assert_eq!(s.dst, DEFAULT_DST_MAC);
    let (L3::V4(ip), L4::Tcp(t)) = (&s.l3, &s.l4) else {
        panic!("ipv4/tcp expected");
    };
    assert_eq!((ip.id, t.seq), (9, 100 + 2 * 11), "SYN counts one");
    assert_eq!(ip.src, Ipv4Addr::new(10, 0, 0, 1));
}

#[test]
fn gap_ns_delays_its_frame_and_every_later_one() {
    let r = parse(
        "start_ns = 5\ninterval_ns = 10\n[[frame]]\nraw = \"aa\"\n\
         [[frame]]\nraw = \"bb\"\ngap_ns = 1000\ncount = 2\n[[frame]]\nraw = \"cc\"\n",
        "t.toml",
    )
    .expect("valid");
    let ts: Vec<u64> = r.frames.iter().map(|f| f.ts_ns).collect();
    assert_eq!(ts, [5, 1015, 1025, 1035]);
    let e = parse(
        "[[frame]]\nraw = \"aa\"\ngap_ns = 18446744073709551615\n[[frame]]\nraw = \"bb\"\ngap_ns = 1\n",
        "t.toml",
    )
    .expect_err("overflow");
    assert!(e.contains("gap_ns"), "{e}");
}
