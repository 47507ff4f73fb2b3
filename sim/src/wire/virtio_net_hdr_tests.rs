//! Tests of virtio_net_hdr.rs.

use super::*;

// NEEDS_CSUM, TCPV4|ECN, hdr_len 66, gso_size 1448, csum_start 34, csum_offset 16,
// num_buffers 1, hash 0x11223344 report 2, padding, outer_th 34, inner_nh 64.
static LE_TUNNEL: [u8; 24] = [
    0x01, 0x81, 0x42, 0x00, 0xa8, 0x05, 0x22, 0x00, 0x10, 0x00, 0x01, 0x00, 0x44, 0x33, 0x22, 0x11,
    0x02, 0x00, 0x00, 0x00, 0x22, 0x00, 0x40, 0x00,
];
// Same header in VNETBE mode: __virtio16 swapped, __le fields unchanged.
static BE_TUNNEL: [u8; 24] = [
    0x01, 0x81, 0x00, 0x42, 0x05, 0xa8, 0x00, 0x22, 0x00, 0x10, 0x00, 0x01, 0x44, 0x33, 0x22, 0x11,
    0x02, 0x00, 0x00, 0x00, 0x22, 0x00, 0x40, 0x00,
];

fn expected() -> VirtioNetHdrRepr {
    VirtioNetHdrRepr {
        flags: VIRTIO_NET_HDR_F_NEEDS_CSUM,
        gso_type: VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN,
        hdr_len: 66,
        gso_size: 1448,
        csum_start: 34,
        csum_offset: 16,
        num_buffers: 1,
        hash_value: 0x1122_3344,
        hash_report: 2,
        outer_th_offset: 34,
        inner_nh_offset: 64,
    }
}

#[test]
fn parse_both_endians() {
    for (bytes, endian) in [(&LE_TUNNEL, Endian::Little), (&BE_TUNNEL, Endian::Big)] {
        let hdr = VirtioNetHdr::new_checked(&bytes[..], VnetHdrLayout::HashTunnel, endian)
            .expect("24 bytes");
        assert_eq!(VirtioNetHdrRepr::parse(&hdr), Ok(expected()));
    }
}

#[test]
fn smaller_layouts_hide_fields() {
    let basic = VirtioNetHdr::new_checked(&LE_TUNNEL[..10], VnetHdrLayout::Basic, Endian::Little)
        .expect("10 bytes");
    assert_eq!(basic.num_buffers(), None);
    assert_eq!(basic.hash_value(), None);
    let r = VirtioNetHdrRepr::parse(&basic).expect("ok");
    assert_eq!((r.gso_size, r.num_buffers, r.outer_th_offset), (1448, 0, 0));

    let mrg = VirtioNetHdr::new_checked(&LE_TUNNEL[..12], VnetHdrLayout::Mrg, Endian::Little)
        .expect("12 bytes");
    assert_eq!(mrg.num_buffers(), Some(1));
    assert_eq!(mrg.inner_nh_offset(), None);
    assert_eq!(mrg.layout(), VnetHdrLayout::Mrg);
    assert_eq!(mrg.endian(), Endian::Little);
}

#[test]
fn short_buffers_rejected() {
    for layout in [
        VnetHdrLayout::Basic,
        VnetHdrLayout::Mrg,
        VnetHdrLayout::HashTunnel,
    ] {
        for len in 0..layout.header_len() {
            let r = VirtioNetHdr::new_checked(&LE_TUNNEL[..len], layout, Endian::Little);
            assert_eq!(r, Err(Error::Truncated));
            let u = VirtioNetHdr::new_unchecked(&LE_TUNNEL[..len], layout, Endian::Big);
            assert_eq!(VirtioNetHdrRepr::parse(&u), Err(Error::Truncated));
        }
        assert_eq!(VnetHdrLayout::from_len(layout.header_len()), Some(layout));
    }
    assert_eq!(VnetHdrLayout::from_len(20), None);
}

#[test]
fn emit_round_trip() {
    let mut out = [0u8; 24];
    let mut hdr = VirtioNetHdr::new_unchecked(&mut out[..], VnetHdrLayout::HashTunnel, Endian::Big);
    expected().emit(&mut hdr).expect("room");
    assert_eq!(out, BE_TUNNEL);
    assert_eq!(expected().buffer_len(), 24);
    assert_eq!(VirtioNetHdrRepr::default().buffer_len(), 10);
    let mrg_only = VirtioNetHdrRepr {
        num_buffers: 3,
        ..Default::default()
    };
    assert_eq!(mrg_only.min_layout(), VnetHdrLayout::Mrg);
}

#[test]
fn emit_padded_zero_fills() {
    // vnet_hdr_sz 12 without tunnel GSO: 10 real bytes, num_buffers dropped, 2 zeroes.
    let mut out = [0xeeu8; 14];
    let n = expected()
        .emit_padded(&mut out, 12, VnetHdrLayout::Basic, Endian::Little)
        .expect("ok");
    assert_eq!(n, 12);
    assert_eq!(&out[..10], &LE_TUNNEL[..10]);
    assert_eq!(&out[10..], &[0, 0, 0xee, 0xee]);

    // vnet_hdr_sz 32 with tunnel GSO: 24 real bytes then 8 zeroes.
    let mut out = [0xeeu8; 32];
    expected()
        .emit_padded(&mut out, 32, VnetHdrLayout::HashTunnel, Endian::Little)
        .expect("ok");
    assert_eq!(&out[..24], &LE_TUNNEL[..]);
    assert_eq!(&out[24..], &[0u8; 8]);
    let back = VirtioNetHdrRepr::parse_padded(&out, 32, VnetHdrLayout::HashTunnel, Endian::Little);
    assert_eq!(back, Ok(expected()));

    let r = expected().emit_padded(&mut out, 12, VnetHdrLayout::HashTunnel, Endian::Little);
    assert!(matches!(r, Err(Error::Malformed(_))));
    let r = expected().emit_padded(&mut out, 33, VnetHdrLayout::Basic, Endian::Little);
    assert_eq!(r, Err(Error::Truncated));
    let r = VirtioNetHdrRepr::parse_padded(&out[..20], 24, VnetHdrLayout::Basic, Endian::Big);
    assert_eq!(r, Err(Error::Truncated));
}

#[test]
fn setters_respect_layout() {
    let mut out = [0u8; 10];
    let mut hdr =
        VirtioNetHdr::new_checked(&mut out[..], VnetHdrLayout::Basic, Endian::Little).expect("ok");
    assert!(hdr.set_num_buffers(1).is_err());
    assert!(hdr.set_hash(1, 1).is_err());
    assert!(hdr.set_tunnel_offsets(1, 1).is_err());
    hdr.set_csum_start(0x0102);
    assert_eq!(hdr.into_inner()[6..8], [0x02, 0x01]);
}

#[test]
fn names() {
    assert_eq!(gso_type_name(0), "NONE");
    assert_eq!(gso_type_name(VIRTIO_NET_HDR_GSO_TCPV4), "TCPV4");
    assert_eq!(gso_type_name(0x84), "TCPV6|ECN");
    assert_eq!(gso_type_name(0x25), "UDP_L4|UDP_TUNNEL_IPV4");
    assert_eq!(gso_type_name(0x43), "UDP|UDP_TUNNEL_IPV6");
    assert_eq!(gso_type_name(0x07), "0x07");
    assert_eq!(flags_names(0), "none");
    assert_eq!(flags_names(3), "NEEDS_CSUM|DATA_VALID");
    assert_eq!(flags_names(0x0c), "RSC_INFO|UDP_TUNNEL_CSUM");
    assert_eq!(flags_names(0x31), "NEEDS_CSUM|0x30");
}

#[test]
fn byte_helpers_round_trip() {
    // The first 12 bytes of LE_TUNNEL as a mrg_rxbuf header.
    let r = VirtioNetHdrRepr::from_bytes(&LE_TUNNEL, VnetHdrLayout::Mrg, Endian::Little)
        .expect("12 bytes");
    assert_eq!((r.hdr_len, r.num_buffers, r.hash_value), (66, 1, 0));
    assert_eq!(
        VirtioNetHdrRepr::from_bytes(&LE_TUNNEL[..9], VnetHdrLayout::Basic, Endian::Little),
        Err(Error::Truncated)
    );
    assert_eq!(r.to_basic_bytes(Endian::Little), LE_TUNNEL[..10]);
    assert_eq!(expected().to_basic_bytes(Endian::Big), BE_TUNNEL[..10]);
}
