//! Tests of the tap-gro arm.

use super::*;

#[test]
fn tap_names_fit_the_napi_thread_comm() {
    let a = unique_tap_name();
    let b = unique_tap_name();
    assert_ne!(a, b);
    assert_eq!(a.len(), 8);
    assert!(format!("napi/{a}-0").len() <= 15);
}

#[test]
fn vxlan_frames_give_mac_address_and_devices() {
    let inner = sim::gro::frames::Tcp4::default().stream(1).remove(0);
    let outer = sim::gro::frames::Outer::default();
    let f = outer.vxlan(50000, 42, false, &inner);
    let v = vxlan_of(&f, &[4789]).expect("a VXLAN frame");
    let (mac, ip) = (v.dst_mac, v.dst_ip);
    assert_eq!((v.port, v.vni, v.inner), (4789, 42, 50));
    assert_eq!(&f[v.inner..], &inner[..]);
    let s = vxlan_setup(&[(0, 0, f.clone())], &[4789, 8472]);
    assert_eq!(s.tap_mac, Some(mac));
    assert_eq!(s.addrs, vec![ip]);
    assert_eq!(s.devices, vec![(4789, 42), (8472, 1)]);
    assert!(vxlan_of(&f, &[8472]).is_none());
    assert!(vxlan_of(&inner, &[4789]).is_none());
}

#[test]
fn gre_teb_frames_give_one_gretap_tunnel_per_remote_local_key() {
    let inner = sim::gro::frames::Tcp4::default().stream(1).remove(0);
    let outer = sim::gro::frames::Outer::default();
    let keyed = outer.gre_teb(Some(42), None, &inner);
    let g = gre_teb_of(&keyed).expect("a GRE-TEB frame");
    assert_eq!(
        (g.key, g.csum, g.inner),
        (Some(42u32.to_be_bytes()), false, 42)
    );
    assert_eq!(&keyed[g.inner..], &inner[..]);
    let summed = outer.gre_teb(Some(7), Some(true), &inner);
    let c = gre_teb_of(&summed).expect("a GRE-TEB frame with C and K");
    assert_eq!(
        (c.key, c.csum, c.inner),
        (Some(7u32.to_be_bytes()), true, 46)
    );
    let plain = outer.gre_teb(None, None, &inner);
    assert_eq!(
        gre_teb_of(&plain).map(|g| (g.key, g.inner)),
        Some((None, 38))
    );
    assert!(gre_teb_of(&inner).is_none());
    assert!(gre_teb_of(&outer.vxlan(50000, 42, false, &inner)).is_none());
    let frames: Vec<(u64, u64, Vec<u8>)> = [&keyed, &keyed, &summed, &plain]
        .iter()
        .enumerate()
        .map(|(i, f)| (i as u64, 0, f.to_vec()))
        .collect();
    let s = gretap_setup(&frames);
    assert_eq!(s.tap_mac, Some(g.dst_mac));
    assert_eq!(s.addrs, vec![g.dst_ip]);
    let t: Vec<(Option<[u8; 4]>, bool)> = s.tunnels.iter().map(|t| (t.key, t.csum)).collect();
    assert_eq!(
        t,
        vec![
            (None, false),
            (Some(7u32.to_be_bytes()), true),
            (Some(42u32.to_be_bytes()), false)
        ]
    );
    assert!(s
        .tunnels
        .iter()
        .all(|t| t.remote == g.src_ip && t.local == g.dst_ip));
    assert!(s.mixed_csum.is_empty());
    // GRE_KEY | GRE_CSUM as __be16 in IFLA_GRE_IFLAGS, the key as on the wire.
    let data = s.tunnels[1].info_data(3);
    assert!(data.contains(&Nla::bytes(2, &[0xa0, 0x00])));
    assert!(data.contains(&Nla::bytes(4, &7u32.to_be_bytes())));
    let mixed = gretap_setup(&[
        (0, 0, summed.clone()),
        (1, 0, outer.gre_teb(Some(7), None, &inner)),
    ]);
    assert_eq!(mixed.tunnels.len(), 1);
    assert_eq!(mixed.mixed_csum.len(), 1);
}

#[test]
fn ipv6_outer_frames_give_ip6gretap_tunnels_and_vxlan6_devices() {
    use sim::gro::frames6::Outer6;
    let inner = sim::gro::frames::Tcp4::default().stream(1).remove(0);
    let o = Outer6::default();
    let g = o.gre_teb(Some(42), Some(true), &inner);
    let t = gre6_teb_of(&g).expect("GRE-TEB over IPv6");
    // 14 + 40 + 12 (C and K).
    assert_eq!(t.inner, 66);
    assert_eq!(&g[t.inner..], &inner[..]);
    assert_eq!((t.key, t.csum), (Some(42u32.to_be_bytes()), true));
    let s = ip6gretap_setup(&[(0, 0, g.clone())]);
    assert_eq!(s.addrs, vec![o.daddr.octets()]);
    assert_eq!(
        s.tunnels[0].describe(),
        "remote fd00:1::1 local fd00:1::2 key 0x2a csum"
    );
    // An IPv4 GRE frame and an IPv6 VXLAN frame are not ip6gretap frames.
    let v4 = sim::gro::frames::Outer::default().gre_teb(Some(42), None, &inner);
    assert!(gre6_teb_of(&v4).is_none());
    let vx = o.vxlan(50000, 42, true, &inner);
    assert!(gre6_teb_of(&vx).is_none());
    let v = vxlan6_of(&vx, &[4789]).expect("VXLAN over IPv6");
    assert_eq!((v.port, v.vni, v.inner), (4789, 42, 70));
    assert_eq!(&vx[v.inner..], &inner[..]);
    assert!(vxlan6_of(&vx, &[8472]).is_none());
    assert!(
        vxlan_of(&vx, &[4789]).is_none(),
        "the IPv4 view takes no IPv6 frame"
    );
    let s = vxlan6_setup(&[(0, 0, vx)], &[4789]);
    assert_eq!(s.devices, vec![(4789, 42)]);
    assert_eq!(s.addrs, vec![o.daddr.octets()]);
}
