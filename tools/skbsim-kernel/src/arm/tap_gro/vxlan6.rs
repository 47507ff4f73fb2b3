//! vxlan devices with an IPv6 local address, for the frames that carry VXLAN over IPv6.
//!
//! A vxlan device whose local (or remote) address is IPv6 has VXLAN_F_IPV6 and opens
//! only an IPv6 socket (drivers/net/vxlan/vxlan_core.c: vxlan_sock_add, with
//! IPV6_V6ONLY), so it sits beside the IPv4 devices of [`super::vxlan`] on the same port.
//! Its socket also turns on `udpv6_encap_needed_key`, which udp6_gro_receive needs to
//! look the tunnel up (net/ipv6/udp_offload.c: udp6_gro_lookup_skb). The tap gets the
//! outer destinations as /128 nodad addresses ([`super::ip6gretap::add_ipv6`]).

#[allow(unused_imports)]
use super::*;
use sim::consts::{ETH_P_IPV6, IPPROTO_UDP, VXLAN_HLEN};
use sim::wire::{ethernet, ipv6, udp};

const IFLA_VXLAN_ID: u16 = 1;
const IFLA_VXLAN_LINK: u16 = 3;
const IFLA_VXLAN_PORT: u16 = 15;
const IFLA_VXLAN_LOCAL6: u16 = 17;
/// More vxlan devices than this is not a GRO scenario.
const MAX_VXLAN6_DEVICES: usize = 16;

/// What an outer IPv6/UDP/VXLAN frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Vxlan6Frame {
    pub(super) dst_mac: [u8; 6],
    pub(super) dst_ip: [u8; 16],
    pub(super) port: u16,
    pub(super) vni: u32,
    /// Offset of the inner Ethernet header.
    pub(super) inner: usize,
}

/// The VXLAN view of `f` when it is IPv6 (next header UDP, no extension headers) to a
/// port in `ports`.
pub(super) fn vxlan6_of(f: &[u8], ports: &[u16]) -> Option<Vxlan6Frame> {
    let eth = ethernet::Packet::new_checked(f).ok()?;
    if eth.ethertype() != ETH_P_IPV6 {
        return None;
    }
    let ip = ipv6::Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != IPPROTO_UDP {
        return None;
    }
    let u = udp::Packet::new_checked(ip.payload()).ok()?;
    if !ports.contains(&u.dst_port()) {
        return None;
    }
    let v = u.payload().get(..VXLAN_HLEN)?;
    Some(Vxlan6Frame {
        dst_mac: eth.dst_addr(),
        dst_ip: ip.dst_addr().octets(),
        port: u.dst_port(),
        vni: u32::from_be_bytes([0, v[4], v[5], v[6]]),
        inner: 14 + ipv6::HEADER_LEN + udp::HEADER_LEN + VXLAN_HLEN,
    })
}

/// The IPv6 vxlan side of the setup, from the frames: one device per (port, VNI) seen.
#[derive(Debug, Default)]
pub(super) struct Vxlan6Setup {
    pub(super) tap_mac: Option<[u8; 6]>,
    pub(super) addrs: Vec<[u8; 16]>,
    pub(super) devices: Vec<(u16, u32)>,
}

pub(super) fn vxlan6_setup(frames: &[(u64, u64, Vec<u8>)], ports: &[u16]) -> Vxlan6Setup {
    let mut s = Vxlan6Setup::default();
    let mut devs = BTreeSet::new();
    for (_, _, f) in frames {
        if let Some(v) = vxlan6_of(f, ports) {
            s.tap_mac.get_or_insert(v.dst_mac);
            if !s.addrs.contains(&v.dst_ip) {
                s.addrs.push(v.dst_ip);
            }
            devs.insert((v.port, v.vni));
        }
    }
    s.devices = devs.into_iter().collect();
    s
}

/// Create and bring up the IPv6 vxlan devices of `setup`, local = its first address, over
/// the tap `link`: name, ifindex, port and VNI of each.
pub(super) fn create_vxlan6s(
    ns: &mut Netns,
    setup: &Vxlan6Setup,
    link: u32,
) -> Result<Vec<(String, u32, u16, u32)>, ArmError> {
    if setup.devices.len() > MAX_VXLAN6_DEVICES {
        return Err(ArmError::Unsupported(format!(
            "{} (port, VNI) pairs over IPv6: more vxlan devices than the arm creates ({MAX_VXLAN6_DEVICES})",
            setup.devices.len()
        )));
    }
    let Some(local) = setup.addrs.first() else {
        return Ok(Vec::new());
    };
    let mut devs = Vec::new();
    for (i, (port, vni)) in setup.devices.iter().enumerate() {
        let name = format!("skbvx6{i}");
        let data = vec![
            Nla::u32(IFLA_VXLAN_ID, *vni),
            Nla::be16(IFLA_VXLAN_PORT, *port),
            Nla::bytes(IFLA_VXLAN_LOCAL6, local),
            Nla::u32(IFLA_VXLAN_LINK, link),
        ];
        let idx = ns.rtnl().create_link(&name, "vxlan", &data)?;
        ns.rtnl().set_up(idx, true)?;
        devs.push((name, idx, *port, *vni));
    }
    Ok(devs)
}
