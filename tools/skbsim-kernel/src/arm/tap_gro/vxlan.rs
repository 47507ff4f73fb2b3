//! VXLAN devices for the frames that carry VXLAN, so the merged skb reaches vxlan_rcv.

#[allow(unused_imports)]
use super::*;
use sim::consts::{ETH_HLEN, IPPROTO_UDP, VXLAN_HLEN};
use sim::wire::{udp, walk, Ipv4Packet, UdpPacket, VxlanPacket};

const IFLA_VXLAN_ID: u16 = 1;
const IFLA_VXLAN_LINK: u16 = 3;
const IFLA_VXLAN_LOCAL: u16 = 4;
const IFLA_VXLAN_PORT: u16 = 15;
/// More vxlan devices than this is not a GRO scenario.
const MAX_VXLAN_DEVICES: usize = 16;

/// What an outer IPv4/UDP/VXLAN frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct VxlanFrame {
    pub(super) dst_mac: [u8; 6],
    pub(super) dst_ip: [u8; 4],
    pub(super) port: u16,
    pub(super) vni: u32,
    /// Offset of the inner Ethernet header.
    pub(super) inner: usize,
}

/// The VXLAN view of `f` when it is IPv4/UDP to a port in `ports`.
pub(super) fn vxlan_of(f: &[u8], ports: &[u16]) -> Option<VxlanFrame> {
    let u = walk::ipv4_transport(f, IPPROTO_UDP)?;
    // The fixed header only (its length field is vxlan_rcv's business, not the setup's).
    let port = UdpPacket::new_unchecked(f.get(u..u + udp::HEADER_LEN)?).dst_port();
    if !ports.contains(&port) {
        return None;
    }
    let inner = u + udp::HEADER_LEN;
    let vx = VxlanPacket::new_checked(f.get(inner..)?).ok()?;
    let ip = Ipv4Packet::new_unchecked(f.get(ETH_HLEN..)?);
    Some(VxlanFrame {
        dst_mac: f.get(0..6)?.try_into().ok()?,
        dst_ip: ip.dst_addr().octets(),
        port,
        vni: vx.vni(),
        inner: inner + VXLAN_HLEN,
    })
}

/// The vxlan side of the setup, from the frames.
#[derive(Debug, Default)]
pub(super) struct VxlanSetup {
    pub(super) tap_mac: Option<[u8; 6]>,
    pub(super) addrs: Vec<[u8; 4]>,
    pub(super) devices: Vec<(u16, u32)>,
}

pub(super) fn vxlan_setup(frames: &[(u64, u64, Vec<u8>)], ports: &[u16]) -> VxlanSetup {
    let mut s = VxlanSetup::default();
    let mut devs = BTreeSet::new();
    for (_, _, f) in frames {
        if let Some(VxlanFrame {
            dst_mac: mac,
            dst_ip: ip,
            port,
            vni,
            ..
        }) = vxlan_of(f, ports)
        {
            s.tap_mac.get_or_insert(mac);
            if !s.addrs.contains(&ip) {
                s.addrs.push(ip);
            }
            devs.insert((port, vni));
        }
    }
    for &p in ports {
        if !devs.iter().any(|(q, _)| *q == p) {
            devs.insert((p, 1));
        }
    }
    s.devices = devs.into_iter().collect();
    s
}

/// Create and bring up the vxlan devices of `setup` (in the arm's namespace), `local` =
/// its first address on the tap `link`: name, ifindex, port and VNI of each.
pub(super) fn create_vxlans(
    ns: &mut Netns,
    setup: &VxlanSetup,
    link: u32,
) -> Result<Vec<(String, u32, u16, u32)>, ArmError> {
    if setup.devices.len() > MAX_VXLAN_DEVICES {
        return Err(ArmError::Unsupported(format!(
            "{} (port, VNI) pairs: more vxlan devices than the arm creates ({MAX_VXLAN_DEVICES})",
            setup.devices.len()
        )));
    }
    let mut devs = Vec::new();
    for (i, (port, vni)) in setup.devices.iter().enumerate() {
        let name = format!("skbvx{i}");
        let mut data = vec![
            Nla::u32(IFLA_VXLAN_ID, *vni),
            Nla::be16(IFLA_VXLAN_PORT, *port),
        ];
        if let Some(local) = setup.addrs.first() {
            data.push(Nla::bytes(IFLA_VXLAN_LOCAL, local));
            data.push(Nla::u32(IFLA_VXLAN_LINK, link));
        }
        let idx = ns.rtnl().create_link(&name, "vxlan", &data)?;
        ns.rtnl().set_up(idx, true)?;
        devs.push((name, idx, *port, *vni));
    }
    Ok(devs)
}

/// `ip addr add A/prefix dev ifindex` (RTM_NEWADDR).
pub(super) fn add_ipv4(ifindex: u32, addr: [u8; 4], prefix: u8) -> Result<(), KernelError> {
    crate::Rtnl::new()?.add_address(ifindex, std::net::Ipv4Addr::from(addr).into(), prefix)
}
