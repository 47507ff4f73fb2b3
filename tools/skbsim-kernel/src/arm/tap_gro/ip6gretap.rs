//! ip6gretap devices for the frames that carry GRE-TEB over IPv6, and the IPv6 side of
//! the arm's addressing (also VXLAN over IPv6's), all inside the arm's namespace.
//!
//! What receive needs (net/ipv6/ip6_gre.c): `gre_rcv` parses the header
//! (`gre_parse_header`: version 0, no routing; a C bit validates the checksum) and pulls
//! it, `ip6gre_rcv` asks `ip6gre_tunnel_lookup` for an up tunnel with `raddr` = the outer
//! source, `laddr` = the outer destination and `i_key` = the packet's key (0 without K),
//! of type ARPHRD_ETHER for ETH_P_TEB; `__ip6_tnl_rcv` (net/ipv6/ip6_tunnel.c) then drops
//! a packet whose C bit is not the tunnel's `i_flags` TUNNEL_CSUM, as ip_tunnel_rcv does
//! for gretap. So one tunnel per (remote, local, key), with GRE_CSUM when its frames carry
//! checksums. The fallback ip6gre0 stays in the initial namespace
//! (`fb_tunnels_only_for_init_net`, or the arm's namespace is new and gets none when the
//! sysctl is 1; when 0 it is created down, and a down tunnel is not looked up).
//!
//! The tap gets IPv6 ([`enable_ipv6_without_autoconf`]) and each outer destination as a
//! /128 with IFA_F_NODAD (no duplicate address detection: a tentative address drops what
//! arrives for it), but no link-local address of its own, so no neighbour or router
//! solicitation of the kernel's crosses the tap during a run.

#[allow(unused_imports)]
use super::*;
use sim::consts::{ETH_P_IPV6, ETH_P_TEB, IPPROTO_GRE};
use sim::wire::gre::{Gre, GRE_ROUTING, GRE_VERSION};
use sim::wire::{ethernet, ipv6};

/// The GRE-TEB view of `f` when it is IPv6 with next header GRE (no extension headers),
/// version 0 without routing, carrying ETH_P_TEB.
pub(super) fn gre6_teb_of(f: &[u8]) -> Option<GreTebFrame<[u8; 16]>> {
    let eth = ethernet::Packet::new_checked(f).ok()?;
    if eth.ethertype() != ETH_P_IPV6 {
        return None;
    }
    let ip = ipv6::Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != IPPROTO_GRE {
        return None;
    }
    let g = Gre::new_checked(ip.payload()).ok()?;
    if g.flags_word() & (GRE_VERSION | GRE_ROUTING) != 0 || g.protocol() != ETH_P_TEB {
        return None;
    }
    let inner = 14 + ipv6::HEADER_LEN + g.header_len();
    if f.len() < inner + 14 {
        return None;
    }
    Some(GreTebFrame {
        dst_mac: eth.dst_addr(),
        src_ip: ip.src_addr().octets(),
        dst_ip: ip.dst_addr().octets(),
        key: g.key().map(u32::to_be_bytes),
        csum: g.checksum_present(),
        inner,
    })
}

pub(super) type Ip6gretapTunnel = GreTunnel<[u8; 16]>;
pub(super) type Ip6gretapSetup = GreSetup<[u8; 16]>;

pub(super) fn ip6gretap_setup(frames: &[(u64, u64, Vec<u8>)]) -> Ip6gretapSetup {
    gre_setup(frames, gre6_teb_of)
}

impl Ip6gretapTunnel {
    /// The model's name for this device.
    pub(super) fn dev(&self) -> sim::gro::cells::TunnelDev {
        sim::gro::cells::TunnelDev::Ip6gretap {
            remote: self.remote,
            local: self.local,
            key: self.key,
        }
    }
}

/// One ip6gretap device per IPv6 tunnel of `setup`.
pub(super) fn create_ip6gretaps(
    ns: &mut Netns,
    setup: &Ip6gretapSetup,
    link: u32,
) -> Result<Vec<(String, u32)>, ArmError> {
    create_gre_devices(ns, setup, link, "ip6gretap", "skbg6t")
}

/// IPv6 on the (still down) tap `dev` of the arm's namespace, which [`Netns`] created with
/// `disable_ipv6` = 1 for every device: first `addr_gen_mode` = 1
/// (IN6_ADDR_GEN_MODE_NONE: no link-local address, so no DAD or router solicitation
/// from it), then `disable_ipv6` = 0 (net/ipv6/ip6_input.c: ip6_rcv_core drops
/// everything on a device with IPv6 disabled). The tunnel devices keep IPv6 off: what
/// they receive is the inner frame, for their packet sockets.
pub(super) fn enable_ipv6_without_autoconf(dev: &str) -> Result<(), KernelError> {
    for (attr, v) in [("addr_gen_mode", "1"), ("disable_ipv6", "0")] {
        // /proc/sys/net resolves through the calling thread's namespace (crate::netns).
        let path = format!("/proc/sys/net/ipv6/conf/{dev}/{attr}");
        std::fs::write(&path, v).map_err(|e| {
            KernelError::new(
                format!("write {v} to {path}"),
                Cause::Protocol(e.to_string()),
            )
        })?;
    }
    Ok(())
}

/// `ip -6 addr add A/128 dev ifindex nodad` (RTM_NEWADDR, IFA_F_NODAD).
pub(super) fn add_ipv6(ifindex: u32, addr: [u8; 16]) -> Result<(), KernelError> {
    crate::Rtnl::new()?.add_address(ifindex, std::net::Ipv6Addr::from(addr).into(), 128)
}

/// The arm's notes on the IPv6 tunnel devices it created (vxlan over IPv6, ip6gretap).
pub(super) fn ipv6_tunnel_notes(
    vx6_devs: &[VxlanDev],
    gt6_devs: &[(String, u32)],
    gt6: &Ip6gretapSetup,
    notes: &mut Vec<String>,
) {
    if !vx6_devs.is_empty() {
        let list: Vec<String> = vx6_devs
            .iter()
            .map(|(n, _, p, v)| format!("{n} port {p} vni {v}"))
            .collect();
        notes.push(format!("vxlan devices over IPv6: {}", list.join(", ")));
    }
    if !gt6_devs.is_empty() {
        let list: Vec<String> = gt6_devs
            .iter()
            .zip(&gt6.tunnels)
            .map(|((n, _), t)| format!("{n} {}", t.describe()))
            .collect();
        notes.push(format!("ip6gretap devices: {}", list.join(", ")));
    }
    for t in &gt6.mixed_csum {
        notes.push(format!(
            "ip6gretap {}: the frames mix GRE checksums and none; __ip6_tnl_rcv drops the plain ones",
            t.describe()
        ));
    }
}
