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
