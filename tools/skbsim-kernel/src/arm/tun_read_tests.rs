//! Tests of the tun-read arm's writer headers (no kernel needed).

use super::*;

/// 802.1Q vid 100, IPv4/UDP, 8-byte payload.
fn tagged_udp() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0, 0, 100, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 36, 0, 1, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&[0x13, 0x88, 0x13, 0x89, 0, 16, 0, 0]);
    f.extend_from_slice(&[0xab; 8]);
    f
}

#[test]
fn writer_header_counts_offsets_in_the_frame_as_written() {
    let f = tagged_udp();
    let r = SkbRecipe {
        vlan_hwaccel: true,
        checksum: IpSummed::Partial,
        gso: GsoKind::UdpL4,
        gso_size: 4,
        headlen: Some(None),
        ..SkbRecipe::default()
    };
    let (h, linear) = writer_header(&f, &r, 0).unwrap();
    assert_eq!((h.flags, h.csum_start, h.csum_offset), (1, 38, 6));
    assert_eq!((h.gso_type, h.gso_size, h.hdr_len), (5, 4, 46));
    assert_eq!(linear, Some(46));
    assert_eq!(WriterKind::for_recipe(&r), WriterKind::Frags);
    let r = SkbRecipe {
        headlen: Some(Some(20)),
        ..r
    };
    assert_eq!(writer_header(&f, &r, 0).unwrap().1, Some(24));
    let plain = SkbRecipe {
        vlan_hwaccel: true,
        ..SkbRecipe::default()
    };
    assert_eq!(
        writer_header(&f, &plain, 0).unwrap().0,
        VirtioNetHdrRepr::default()
    );
    assert_eq!(WriterKind::for_recipe(&plain), WriterKind::Plain);
    let valid = SkbRecipe {
        checksum: IpSummed::Unnecessary,
        ..plain
    };
    assert_eq!(WriterKind::for_recipe(&valid), WriterKind::Gro);
}
