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
use sim::wire::gre::{Gre, GRE_CSUM, GRE_KEY, GRE_ROUTING, GRE_VERSION};
use sim::wire::{ethernet, ipv6};

const IFLA_GRE_LINK: u16 = 1;
const IFLA_GRE_IFLAGS: u16 = 2;
const IFLA_GRE_OFLAGS: u16 = 3;
const IFLA_GRE_IKEY: u16 = 4;
const IFLA_GRE_OKEY: u16 = 5;
const IFLA_GRE_LOCAL: u16 = 6;
const IFLA_GRE_REMOTE: u16 = 7;
/// IFA_F_NODAD (include/uapi/linux/if_addr.h).
const IFA_F_NODAD: u8 = 0x02;

/// What an outer IPv6/GRE/TEB frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Gre6TebFrame {
    pub(super) dst_mac: [u8; 6],
    pub(super) src_ip: [u8; 16],
    pub(super) dst_ip: [u8; 16],
    /// The key as on the wire (`__be32`), when the K bit is set.
    pub(super) key: Option<[u8; 4]>,
    pub(super) csum: bool,
    /// Offset of the inner Ethernet header.
    pub(super) inner: usize,
}

/// The GRE-TEB view of `f` when it is IPv6 with next header GRE (no extension headers),
/// version 0 without routing, carrying ETH_P_TEB.
pub(super) fn gre6_teb_of(f: &[u8]) -> Option<Gre6TebFrame> {
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
    Some(Gre6TebFrame {
        dst_mac: eth.dst_addr(),
        src_ip: ip.src_addr().octets(),
        dst_ip: ip.dst_addr().octets(),
        key: g.key().map(u32::to_be_bytes),
        csum: g.checksum_present(),
        inner,
    })
}

/// One ip6gretap tunnel: what `ip6gre_tunnel_lookup` matches a packet on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Ip6gretapTunnel {
    pub(super) remote: [u8; 16],
    pub(super) local: [u8; 16],
    pub(super) key: Option<[u8; 4]>,
    pub(super) csum: bool,
}

/// The ip6gretap side of the setup, from the frames.
#[derive(Debug, Default)]
pub(super) struct Ip6gretapSetup {
    pub(super) tap_mac: Option<[u8; 6]>,
    pub(super) addrs: Vec<[u8; 16]>,
    pub(super) tunnels: Vec<Ip6gretapTunnel>,
    pub(super) mixed_csum: Vec<Ip6gretapTunnel>,
}

pub(super) fn ip6gretap_setup(frames: &[(u64, u64, Vec<u8>)]) -> Ip6gretapSetup {
    let mut s = Ip6gretapSetup::default();
    let mut tunnels: BTreeMap<_, (bool, bool)> = BTreeMap::new();
    for (_, _, f) in frames {
        if let Some(g) = gre6_teb_of(f) {
            s.tap_mac.get_or_insert(g.dst_mac);
            if !s.addrs.contains(&g.dst_ip) {
                s.addrs.push(g.dst_ip);
            }
            let c = tunnels.entry((g.src_ip, g.dst_ip, g.key)).or_default();
            if g.csum {
                c.0 = true;
            } else {
                c.1 = true;
            }
        }
    }
    for ((remote, local, key), (with, without)) in tunnels {
        let t = Ip6gretapTunnel {
            remote,
            local,
            key,
            csum: with,
        };
        if with && without {
            s.mixed_csum.push(t);
        }
        s.tunnels.push(t);
    }
    s
}

impl Ip6gretapTunnel {
    pub(super) fn describe(&self) -> String {
        let key = match self.key {
            Some(k) => format!(" key {:#x}", u32::from_be_bytes(k)),
            None => String::new(),
        };
        let csum = if self.csum { " csum" } else { "" };
        format!(
            "remote {} local {}{key}{csum}",
            std::net::Ipv6Addr::from(self.remote),
            std::net::Ipv6Addr::from(self.local)
        )
    }

    /// The model's name for this device.
    pub(super) fn dev(&self) -> sim::gro::cells::TunnelDev {
        sim::gro::cells::TunnelDev::Ip6gretap {
            remote: self.remote,
            local: self.local,
            key: self.key,
        }
    }

    fn info_data(&self, link: u32) -> Vec<Nla> {
        let mut flags = 0;
        if self.key.is_some() {
            flags |= GRE_KEY;
        }
        if self.csum {
            flags |= GRE_CSUM;
        }
        let mut data = vec![
            Nla::u32(IFLA_GRE_LINK, link),
            Nla::bytes(IFLA_GRE_LOCAL, &self.local),
            Nla::bytes(IFLA_GRE_REMOTE, &self.remote),
        ];
        if flags != 0 {
            data.push(Nla::be16(IFLA_GRE_IFLAGS, flags));
            data.push(Nla::be16(IFLA_GRE_OFLAGS, flags));
        }
        if let Some(k) = self.key {
            data.push(Nla::bytes(IFLA_GRE_IKEY, &k));
            data.push(Nla::bytes(IFLA_GRE_OKEY, &k));
        }
        data
    }
}

/// Create and bring up one ip6gretap device per tunnel of `setup` over the tap `link`.
pub(super) fn create_ip6gretaps(
    ns: &mut Netns,
    setup: &Ip6gretapSetup,
    link: u32,
) -> Result<Vec<(String, u32)>, ArmError> {
    if setup.tunnels.len() > MAX_GRETAP_DEVICES {
        return Err(ArmError::Unsupported(format!(
            "{} (remote, local, key) tuples over IPv6: more ip6gretap devices than the arm creates ({MAX_GRETAP_DEVICES})",
            setup.tunnels.len()
        )));
    }
    let mut devs = Vec::new();
    for (i, t) in setup.tunnels.iter().enumerate() {
        let name = format!("skbg6t{i}");
        let idx = ns
            .rtnl()
            .create_link(&name, "ip6gretap", &t.info_data(link))?;
        ns.rtnl().set_up(idx, true)?;
        devs.push((name, idx));
    }
    Ok(devs)
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
    let op = format!(
        "RTM_NEWADDR {}/128 nodad ifindex {ifindex}",
        std::net::Ipv6Addr::from(addr)
    );
    let mut sock = NlSocket::open(libc::NETLINK_ROUTE, "NETLINK_ROUTE")?;
    // struct ifaddrmsg { u8 family, prefixlen, flags, scope; u32 index; }
    let mut hdr = [0u8; 8];
    hdr[0] = libc::AF_INET6 as u8;
    hdr[1] = 128;
    hdr[2] = IFA_F_NODAD;
    hdr[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    let mut m = MsgBuilder::new(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
    m.header(&hdr).attr(IFA_ADDRESS, &addr);
    sock.request(&op, m).map(|_| ())
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
