//! gretap devices for the frames that carry GRE-TEB, so the merged skb reaches a gretap
//! tunnel and that device's own AF_PACKET socket sees the decapsulated inner frame.
//!
//! What receive needs (net/ipv4/ip_gre.c, net/ipv4/ip_tunnel.c): `gre_rcv` parses the
//! header (`gre_parse_header`: version 0, no routing; a C bit validates the checksum),
//! `ipgre_rcv` takes the gretap table for protocol ETH_P_TEB, and `ip_tunnel_lookup`
//! wants a tunnel that is up with `local` = the outer destination, `remote` = the outer
//! source and a matching key (`ip_tunnel_key_match`: a tunnel with TUNNEL_KEY takes only
//! packets with its key, a keyless one only packets without a key; the fallback device
//! is kept out of the arm's namespace). `ip_tunnel_rcv` then drops a packet whose C bit
//! is not the tunnel's `i_flags` GRE_CSUM, either way (rx_crc_errors; seen on the lab's
//! 6.1: a keyed tunnel without GRE_CSUM drops every checksummed frame), and one without
//! a sequence number only when `i_flags` ask for GRE_SEQ. So: one tunnel per (remote,
//! local, key) the frames carry, with GRE_KEY for a key and GRE_CSUM when its frames
//! carry checksums. The lookup does not look at the C bit, so a tuple whose frames mix
//! checksummed and plain ones cannot receive both; the arm notes it.

#[allow(unused_imports)]
use super::*;
use sim::consts::{ETH_HLEN, ETH_P_TEB, IPPROTO_GRE};
use sim::wire::gre::{Gre, GRE_CSUM, GRE_KEY};
use sim::wire::{walk, Ipv4Packet};

const IFLA_GRE_LINK: u16 = 1;
const IFLA_GRE_IFLAGS: u16 = 2;
const IFLA_GRE_OFLAGS: u16 = 3;
const IFLA_GRE_IKEY: u16 = 4;
const IFLA_GRE_OKEY: u16 = 5;
const IFLA_GRE_LOCAL: u16 = 6;
const IFLA_GRE_REMOTE: u16 = 7;
/// More gretap devices than this is not a GRO scenario.
pub(super) const MAX_GRETAP_DEVICES: usize = 16;

/// A tunnel endpoint address: IPv4 for gretap, IPv6 for ip6gretap. The rest of a GRE-TEB
/// tunnel (key, checksum flag, the netlink attributes, one device per tuple) is the same
/// for both: ip6_gre.c mirrors ip_gre.c, `IFLA_GRE_*` included.
pub(super) trait TunnelAddr: Copy + Ord + AsRef<[u8]> {
    fn show(&self) -> String;
}

impl TunnelAddr for [u8; 4] {
    fn show(&self) -> String {
        std::net::Ipv4Addr::from(*self).to_string()
    }
}

impl TunnelAddr for [u8; 16] {
    fn show(&self) -> String {
        std::net::Ipv6Addr::from(*self).to_string()
    }
}

/// What an outer IP/GRE/TEB frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GreTebFrame<A> {
    pub(super) dst_mac: [u8; 6],
    pub(super) src_ip: A,
    pub(super) dst_ip: A,
    /// The key as on the wire (`__be32`), when the K bit is set.
    pub(super) key: Option<[u8; 4]>,
    /// The C bit (a GRE checksum follows the protocol).
    pub(super) csum: bool,
    /// Offset of the inner Ethernet header.
    pub(super) inner: usize,
}

/// The GRE-TEB view of `f` when it is IPv4/GRE (protocol 47), version 0 without
/// routing, carrying ETH_P_TEB: what `gre_parse_header` accepts for a gretap.
pub(super) fn gre_teb_of(f: &[u8]) -> Option<GreTebFrame<[u8; 4]>> {
    let g = walk::ipv4_transport(f, IPPROTO_GRE)?;
    let gre = Gre::new_checked(f.get(g..)?).ok()?;
    if gre.version() != 0 || gre.routing_present() || gre.protocol() != ETH_P_TEB {
        return None;
    }
    let inner = g + gre.header_len();
    if f.len() < inner + ETH_HLEN {
        return None;
    }
    let ip = Ipv4Packet::new_unchecked(f.get(ETH_HLEN..)?);
    Some(GreTebFrame {
        dst_mac: f.get(0..6)?.try_into().ok()?,
        src_ip: ip.src_addr().octets(),
        dst_ip: ip.dst_addr().octets(),
        key: gre.key().map(u32::to_be_bytes),
        csum: gre.checksum_present(),
        inner,
    })
}

/// One GRE-TEB tunnel: what `ip_tunnel_lookup` (gretap) and `ip6gre_tunnel_lookup`
/// (ip6gretap) match a packet on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct GreTunnel<A> {
    pub(super) remote: A,
    pub(super) local: A,
    pub(super) key: Option<[u8; 4]>,
    /// `i_flags`/`o_flags` GRE_CSUM: the tunnel's frames carry checksums.
    pub(super) csum: bool,
}

/// The GRE-TEB side of the setup, from the frames.
#[derive(Debug)]
pub(super) struct GreSetup<A> {
    pub(super) tap_mac: Option<[u8; 6]>,
    pub(super) addrs: Vec<A>,
    pub(super) tunnels: Vec<GreTunnel<A>>,
    /// Tunnels whose frames mix checksummed and plain GRE (only the checksummed ones can
    /// reach the device).
    pub(super) mixed_csum: Vec<GreTunnel<A>>,
}

pub(super) type GretapSetup = GreSetup<[u8; 4]>;

/// One tunnel per (remote, local, key) of the frames `parse` reads as GRE-TEB.
pub(super) fn gre_setup<A: TunnelAddr>(
    frames: &[(u64, u64, Vec<u8>)],
    parse: fn(&[u8]) -> Option<GreTebFrame<A>>,
) -> GreSetup<A> {
    let mut s = GreSetup {
        tap_mac: None,
        addrs: Vec::new(),
        tunnels: Vec::new(),
        mixed_csum: Vec::new(),
    };
    // (remote, local, key) -> (some frame has C, some frame has not).
    let mut tunnels: BTreeMap<_, (bool, bool)> = BTreeMap::new();
    for (_, _, f) in frames {
        if let Some(g) = parse(f) {
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
        let t = GreTunnel {
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

pub(super) fn gretap_setup(frames: &[(u64, u64, Vec<u8>)]) -> GretapSetup {
    gre_setup(frames, gre_teb_of)
}

impl<A: TunnelAddr> GreTunnel<A> {
    pub(super) fn describe(&self) -> String {
        let key = match self.key {
            Some(k) => format!(" key {:#x}", u32::from_be_bytes(k)),
            None => String::new(),
        };
        let csum = if self.csum { " csum" } else { "" };
        format!(
            "remote {} local {}{key}{csum}",
            self.remote.show(),
            self.local.show()
        )
    }

    /// The `i_flags`/`o_flags` (`__be16` GRE flags).
    fn flags(&self) -> u16 {
        let mut f = 0;
        if self.key.is_some() {
            f |= GRE_KEY;
        }
        if self.csum {
            f |= GRE_CSUM;
        }
        f
    }

    /// `IFLA_INFO_DATA` of `ip link add type gretap|ip6gretap local L remote R [key K]
    /// [csum] dev LINK`.
    pub(super) fn info_data(&self, link: u32) -> Vec<Nla> {
        let mut data = vec![
            Nla::u32(IFLA_GRE_LINK, link),
            Nla::bytes(IFLA_GRE_LOCAL, self.local.as_ref()),
            Nla::bytes(IFLA_GRE_REMOTE, self.remote.as_ref()),
        ];
        if self.flags() != 0 {
            data.push(Nla::be16(IFLA_GRE_IFLAGS, self.flags()));
            data.push(Nla::be16(IFLA_GRE_OFLAGS, self.flags()));
        }
        if let Some(k) = self.key {
            data.push(Nla::bytes(IFLA_GRE_IKEY, &k));
            data.push(Nla::bytes(IFLA_GRE_OKEY, &k));
        }
        data
    }
}

/// Create and bring up one `kind` device (`gretap`, `ip6gretap`) per tunnel of `setup`
/// (in the arm's namespace) over the tap `link`, named `<prefix><i>`: their names and
/// ifindexes.
pub(super) fn create_gre_devices<A: TunnelAddr>(
    ns: &mut Netns,
    setup: &GreSetup<A>,
    link: u32,
    kind: &str,
    prefix: &str,
) -> Result<Vec<(String, u32)>, ArmError> {
    if setup.tunnels.len() > MAX_GRETAP_DEVICES {
        return Err(ArmError::Unsupported(format!(
            "{} (remote, local, key) tuples: more {kind} devices than the arm creates ({MAX_GRETAP_DEVICES})",
            setup.tunnels.len()
        )));
    }
    let mut devs = Vec::new();
    for (i, t) in setup.tunnels.iter().enumerate() {
        let name = format!("{prefix}{i}");
        let idx = ns.rtnl().create_link(&name, kind, &t.info_data(link))?;
        ns.rtnl().set_up(idx, true)?;
        devs.push((name, idx));
    }
    Ok(devs)
}

/// One gretap device per IPv4 tunnel of `setup`.
pub(super) fn create_gretaps(
    ns: &mut Netns,
    setup: &GretapSetup,
    link: u32,
) -> Result<Vec<(String, u32)>, ArmError> {
    create_gre_devices(ns, setup, link, "gretap", "skbgt")
}
