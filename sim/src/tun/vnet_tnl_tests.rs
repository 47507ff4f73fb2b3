//! virtio_net_hdr_tnl_to_skb / virtio_net_hdr_tnl_from_skb (include/linux/virtio_net.h,
//! 6.17+). Expected values follow the kernel source line by line (cited per test).

use super::*;
use crate::profile::{LINUX_6_12, LINUX_6_18};
use crate::skb::{IpSummed, ETH_P_IP};
use crate::wire::virtio_net_hdr::{VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_UDP_L4};

/// A VXLAN-over-IPv4 frame: outer Ethernet 14, IPv4 20 (outer UDP at 34), UDP 8, VXLAN
/// 8, inner Ethernet 14 (inner IP at 64), inner IPv4 20 (inner TCP at 84), TCP 20, then
/// `payload` bytes. Only the version nibbles matter to the code under test.
fn vxlan4(payload: usize) -> SkBuff {
    let mut f = vec![0u8; 104 + payload];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[64] = 0x45;
    SkBuff::from_frame(&f, 64, f.len())
}

/// TCPV4 in a UDPv4 tunnel, NEEDS_CSUM at the inner TCP checksum.
fn tnl_tcp4(gso_size: u16) -> VirtioNetHdrRepr {
    VirtioNetHdrRepr {
        flags: VIRTIO_NET_HDR_F_NEEDS_CSUM,
        gso_type: VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4,
        gso_size,
        csum_start: 84,
        csum_offset: 16,
        outer_th_offset: 34,
        inner_nh_offset: 64,
        ..VirtioNetHdrRepr::default()
    }
}

fn to_skb(skb: &mut SkBuff, h: &VirtioNetHdrRepr, negotiated: bool) -> Result<(), &'static str> {
    vnet_hdr_tnl_to_skb(skb, h, &LINUX_6_18.tun_write, true, negotiated)
}

#[test]
fn a_tunnel_tcp4_header_makes_an_encapsulated_gso_skb() {
    // 1350 payload bytes after p_off = csum_start 84 + sizeof(tcphdr) 20, gso_size 1000:
    // GSO (skb->len - p_off > gso_size); SKB_GSO_UDP_TUNNEL added; transport_header =
    // outer_th, inner_network = inner_mac = inner_nh, inner_transport = csum_start.
    let mut s = vxlan4(1350);
    to_skb(&mut s, &tnl_tcp4(1000), true).unwrap();
    assert_eq!(s.gso_type, gso::TCPV4 | gso::DODGY | gso::UDP_TUNNEL);
    assert_eq!(s.gso_size, 1000);
    assert!(s.encapsulation);
    assert_eq!(s.offset_from_data(s.transport_header), Some(34));
    assert_eq!(s.offset_from_data(s.inner_network_header), Some(64));
    assert_eq!(s.offset_from_data(s.inner_mac_header), Some(64));
    assert_eq!(s.offset_from_data(s.inner_transport_header), Some(84));
    assert_eq!(s.ip_summed, IpSummed::Partial);
    assert_eq!((s.checksum_start_offset(), s.csum_offset), (84, 16));
    // VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM: SKB_GSO_UDP_TUNNEL_CSUM instead.
    let mut s = vxlan4(1350);
    let h = VirtioNetHdrRepr {
        flags: VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM,
        ..tnl_tcp4(1000)
    };
    to_skb(&mut s, &h, true).unwrap();
    assert_eq!(s.gso_type, gso::TCPV4 | gso::DODGY | gso::UDP_TUNNEL_CSUM);
}

#[test]
fn a_small_tunnel_packet_keeps_the_tunnel_bit_without_gso() {
    // 100 payload bytes are not more than gso_size 1000: __virtio_net_hdr_to_skb leaves
    // gso_size 0, but virtio_net_hdr_tnl_to_skb ORs SKB_GSO_UDP_TUNNEL in anyway.
    let mut s = vxlan4(100);
    to_skb(&mut s, &tnl_tcp4(1000), true).unwrap();
    assert!(!s.is_gso());
    assert_eq!(s.gso_type, gso::UDP_TUNNEL);
    assert!(s.encapsulation);
}

#[test]
fn each_tunnel_check_refuses_its_header() {
    let base = tnl_tcp4(1000);
    let cases = [
        // !tnl_hdr_negotiated (vnet_hdr_sz < 24) is tested separately below.
        VirtioNetHdrRepr {
            gso_type: base.gso_type | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6,
            ..base
        },
        VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4,
            ..base
        },
        VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_UDP | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4,
            ..base
        },
        VirtioNetHdrRepr { flags: 0, ..base },
        // outer_th < ETH_HLEN + sizeof(iphdr) = 34.
        VirtioNetHdrRepr {
            outer_th_offset: 33,
            ..base
        },
        // An IPv6 outer needs outer_th >= 14 + 40 = 54.
        VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6,
            ..base
        },
        // inner_nh < outer_th + sizeof(udphdr) = 42.
        VirtioNetHdrRepr {
            inner_nh_offset: 41,
            ..base
        },
        // inner_th (csum_start) < inner_nh + 20.
        VirtioNetHdrRepr {
            csum_start: 83,
            ..base
        },
        // An inner TCPV6 needs inner_th >= inner_nh + 40 = 104.
        VirtioNetHdrRepr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV6 | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4,
            ..base
        },
        // The plain checks still apply to the inner header: TCP csum_offset 16.
        VirtioNetHdrRepr {
            csum_offset: 6,
            ..base
        },
    ];
    for (i, h) in cases.iter().enumerate() {
        let mut s = vxlan4(1350);
        assert!(to_skb(&mut s, h, true).is_err(), "case {i}: {h:?}");
    }
    // The same header is accepted once negotiated, refused without.
    assert!(to_skb(&mut vxlan4(1350), &base, true).is_ok());
    assert!(to_skb(&mut vxlan4(1350), &base, false).is_err());
    // outer_th 34 and inner_nh 42 are the smallest accepted: 84 >= 42 + 20.
    let h = VirtioNetHdrRepr {
        inner_nh_offset: 42,
        ..base
    };
    assert!(to_skb(&mut vxlan4(1350), &h, true).is_ok());
}

#[test]
fn uso_takes_the_inner_family_from_the_version_nibble() {
    // UDP_L4 in a tunnel: inner IPv4 at 64 with csum_start 84 is fine; the same offsets
    // over an inner IPv6 header (version 6 at 64) need inner_th >= 64 + 40.
    let h = VirtioNetHdrRepr {
        gso_type: VIRTIO_NET_HDR_GSO_UDP_L4 | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4,
        csum_offset: 6,
        ..tnl_tcp4(1000)
    };
    let mut s = vxlan4(1350);
    to_skb(&mut s, &h, true).unwrap();
    assert_eq!(s.gso_type, gso::UDP_L4 | gso::DODGY | gso::UDP_TUNNEL);
    let mut f = vxlan4(1350).bytes().to_vec();
    f[64] = 0x60;
    let mut s = SkBuff::from_frame(&f, 64, f.len());
    assert!(to_skb(&mut s, &h, true).is_err());
}

#[test]
fn before_6_17_the_tunnel_bits_are_an_unknown_gso_type() {
    // 6.12 parses 10 bytes and __virtio_net_hdr_to_skb's switch has no 0x21: -EINVAL.
    let mut s = vxlan4(1350);
    let e = super::super::vnet_to_skb::vnet_hdr_to_skb(
        &mut s,
        &tnl_tcp4(1000),
        &LINUX_6_12.tun_write,
        true,
    );
    assert_eq!(e, Err("vnet gso_type unknown"));
}

/// write() of a 24-byte vnet header and `frame` (VXLAN, inner TCP, 1350 bytes) on a
/// no-PI tap with `vnet_hdr_sz` under `profile`: the result and rx_frame_errors.
fn write_tnl(profile: &crate::profile::KernelProfile, vnet_hdr_sz: usize) -> (bool, u64) {
    use crate::net::Net;
    use crate::tun::write::WriteOpts;
    use crate::tun::{TunConfig, TunDevice};
    use crate::wire::virtio_net_hdr::{Endian, VnetHdrLayout};
    let cfg = TunConfig {
        no_pi: true,
        vnet_hdr: true,
        vnet_hdr_sz,
        ..TunConfig::default()
    };
    let mut net = Net::new();
    net.add(2, TunDevice::new(cfg));
    let mut w = vec![0u8; vnet_hdr_sz];
    let layout = VnetHdrLayout::from_len(vnet_hdr_sz).unwrap();
    tnl_tcp4(1000)
        .emit_padded(&mut w, vnet_hdr_sz, layout, Endian::Little)
        .unwrap();
    w.extend_from_slice(&vxlan4(1350).bytes());
    let out = net
        .tun_write(
            2,
            &w,
            WriteOpts::default(),
            &profile.tun_write,
            &profile.tun_read,
        )
        .unwrap();
    let st = net.dev(2).unwrap().stats;
    (out.result == Ok(w.len()), st.rx_frame_errors)
}

#[test]
fn the_write_path_takes_the_tunnel_header_from_vnet_hdr_sz_24_on_6_17_only() {
    // tun_vnet_hdr_guest_features: vnet_hdr_sz >= 24, no TUNSETOFFLOAD needed.
    assert_eq!(write_tnl(&LINUX_6_18, 24), (true, 0));
    // 12 bytes: the 10-byte parse sees 0x21 with the tunnel "not negotiated": -EINVAL,
    // rx_frame_errors (tun_get_user).
    assert_eq!(write_tnl(&LINUX_6_18, 12), (false, 1));
    // 6.12: 24 is just a size >= 10; 0x21 is an unknown gso_type: -EINVAL.
    assert_eq!(write_tnl(&LINUX_6_12, 24), (false, 1));
}

/// A tunnel GSO skb queued on a tap with `vnet_hdr_sz` and the tunnel offload
/// `offload`, read into a 4096-byte buffer of 0xee.
fn read_tnl(vnet_hdr_sz: usize, offload: bool) -> (crate::tun::read::ReadOutcome, Vec<u8>) {
    use crate::tun::{Offloads, TunConfig, TunDevice};
    let mut s = vxlan4(1350);
    to_skb(&mut s, &tnl_tcp4(1000), true).unwrap();
    s.protocol = ETH_P_IP;
    let cfg = TunConfig {
        no_pi: true,
        vnet_hdr: true,
        vnet_hdr_sz,
        offloads: Offloads {
            csum: true,
            tso4: true,
            udp_tunnel_gso: offload,
            ..Offloads::default()
        },
        ..TunConfig::default()
    };
    let mut dev = TunDevice::new(cfg);
    assert!(dev.xmit(s));
    let mut buf = vec![0xee; 4096];
    let out = dev.read(&mut buf, &LINUX_6_18.tun_read);
    (out, buf)
}

#[test]
fn the_read_path_needs_the_offload_and_a_24_byte_area() {
    use crate::errno::Errno;
    // 24 bytes, offload on: the tunnel header, then the frame.
    let (out, buf) = read_tnl(24, true);
    assert_eq!(out.result, Ok(24 + 1454));
    assert_eq!(&buf[..2], &[0x01, 0x21]);
    assert_eq!(&buf[20..24], &[34, 0, 64, 0]);
    // No NETIF_F_GSO_UDP_TUNNEL: tun_vnet_hdr_tnl_from_skb fails, -EINVAL.
    assert_eq!(read_tnl(24, false).0.result, Err(Errno::EINVAL));
    // The offload with a 10-byte area: __tun_vnet_hdr_put copies 24 bytes, then
    // iov_iter_zero(10 - 24) zeroes the rest of the buffer and comes up short: -EFAULT.
    let (out, buf) = read_tnl(10, true);
    assert_eq!(out.result, Err(Errno::EFAULT));
    assert_eq!(&buf[20..24], &[34, 0, 64, 0]);
    assert!(buf[24..].iter().all(|b| *b == 0));
}

#[test]
fn from_skb_gives_back_the_tunnel_header() {
    let rules = &LINUX_6_18.tun_read;
    let mut s = vxlan4(1350);
    to_skb(&mut s, &tnl_tcp4(1000), true).unwrap();
    s.protocol = ETH_P_IP;
    // virtio_net_hdr_from_skb for the plain part (hdr_len = skb_headlen), then 0x20 for
    // an IPv4 skb->protocol and the two offsets from skb->data.
    let h = vnet_hdr_tnl_from_skb(&s, 0, rules, true).unwrap();
    let want = VirtioNetHdrRepr {
        hdr_len: (104 + 1350) as u16,
        ..tnl_tcp4(1000)
    };
    assert_eq!(h, want);
    // Without NETIF_F_GSO_UDP_TUNNEL on the device: -EINVAL.
    assert!(vnet_hdr_tnl_from_skb(&s, 0, rules, false).is_err());
    // The IPv6 bit follows skb->protocol; UDP_TUNNEL_CSUM adds flag 8.
    s.protocol = ETH_P_IPV6;
    s.gso_type = (s.gso_type & !gso::UDP_TUNNEL) | gso::UDP_TUNNEL_CSUM;
    let h = vnet_hdr_tnl_from_skb(&s, 0, rules, true).unwrap();
    assert_eq!(h.gso_type, 0x41);
    assert_eq!(h.flags, 0x09);
}

#[test]
fn from_skb_of_a_small_tunnel_packet_says_tunnel_with_no_gso() {
    // skb_is_gso false: gso_type NONE, hdr_len 0, gso_size 0; then | 0x20.
    let mut s = vxlan4(100);
    to_skb(&mut s, &tnl_tcp4(1000), true).unwrap();
    s.protocol = ETH_P_IP;
    let h = vnet_hdr_tnl_from_skb(&s, 0, &LINUX_6_18.tun_read, true).unwrap();
    assert_eq!(
        (h.flags, h.gso_type, h.hdr_len, h.gso_size, h.csum_start),
        (1, 0x20, 0, 0, 84)
    );
    assert_eq!((h.outer_th_offset, h.inner_nh_offset), (34, 64));
}

#[test]
fn a_plain_skb_is_the_plain_header() {
    let frame = [0u8; 60];
    let mut s = SkBuff::from_frame(&frame, 64, 60);
    s.ip_summed = IpSummed::Unnecessary;
    let h = vnet_hdr_tnl_from_skb(&s, 0, &LINUX_6_18.tun_read, true).unwrap();
    assert_eq!(
        h,
        VirtioNetHdrRepr {
            flags: crate::wire::virtio_net_hdr::VIRTIO_NET_HDR_F_DATA_VALID,
            ..VirtioNetHdrRepr::default()
        }
    );
}
