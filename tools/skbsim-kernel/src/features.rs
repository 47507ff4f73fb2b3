//! Kernel features a scenario's real arm needs, and whether the running kernel has them.
//!
//! The host here (6.18) has no GRE and no vhost_net; the lab's guest (6.1) has both but
//! no USO on tap. A scenario that needs a missing feature is neither passed nor failed
//! by `skbsim conform`: it is reported as needing another kernel, with the probe's answer,
//! and `skbsim lab conform` loads the feature's module in the guest and runs it there.
//!
//! Each probe asks the kernel itself (a device created in a private namespace, an ioctl
//! on a scratch tap, the character device) rather than reading a config file, so the
//! answer is the same on every kernel, built-in or modular.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use sim::scenario::{Pipeline, Scenario};

use crate::error::{Errno, KernelError};
use crate::netlink::Nla;
use crate::netns::Netns;
use crate::tap::{tun_f, TapConfig};

/// A kernel feature a real arm may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KernelFeature {
    /// gretap devices and gre_offload (CONFIG_NET_IPGRE, CONFIG_NET_IPGRE_DEMUX).
    Gre,
    /// ip6gretap devices (CONFIG_IPV6_GRE); gre_offload registers for IPv6 as well.
    Ip6Gre,
    /// /dev/vhost-net (CONFIG_VHOST_NET).
    VhostNet,
    /// TUN_F_USO4|TUN_F_USO6 in TUNSETOFFLOAD (v6.2, "tun: support UDP segmentation
    /// offload").
    TunUso,
    /// TUN_F_UDP_TUNNEL_GSO in TUNSETOFFLOAD and the 24-byte tunnel vnet header (v6.17,
    /// "tun: enable gso over UDP tunnel support", drivers/net/tun_vnet.h:
    /// tun_vnet_hdr_tnl_to_skb); the lab's 6.1 and 6.12 guests answer EINVAL.
    TunUdpTunnelGso,
    /// br_netfilter (CONFIG_BRIDGE_NETFILTER): `attach = "bridge-nf"`.
    BrNetfilter,
    /// The ETH_P_8021Q GRO offload, vlan_gro_receive (CONFIG_VLAN_8021Q, y or m: its
    /// vlan_core.c registers the offload): `[gro] vlan_gro = true`.
    VlanGro,
}

impl KernelFeature {
    pub fn name(self) -> &'static str {
        match self {
            KernelFeature::Gre => "gre",
            KernelFeature::Ip6Gre => "ip6gre",
            KernelFeature::VhostNet => "vhost_net",
            KernelFeature::TunUso => "tun-uso",
            KernelFeature::TunUdpTunnelGso => "tun-udp-tunnel-gso",
            KernelFeature::BrNetfilter => "br_netfilter",
            KernelFeature::VlanGro => "8021q",
        }
    }

    /// The guest module that brings the feature (`None`: a kernel version, not a module).
    pub fn module(self) -> Option<&'static str> {
        match self {
            KernelFeature::Gre => Some("ip_gre"),
            KernelFeature::Ip6Gre => Some("ip6_gre"),
            KernelFeature::VhostNet => Some("vhost_net"),
            KernelFeature::TunUso => None,
            KernelFeature::TunUdpTunnelGso => None,
            KernelFeature::BrNetfilter => Some("br_netfilter"),
            KernelFeature::VlanGro => Some("8021q"),
        }
    }
}

impl fmt::Display for KernelFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a frame is IPv4 carrying GRE (protocol 47).
pub fn is_gre_frame(f: &[u8]) -> bool {
    f.get(12..14) == Some(&[0x08, 0x00]) && f.get(23) == Some(&47)
}

/// Whether a frame is IPv6 whose next header is GRE (47), no extension headers between.
pub fn is_gre6_frame(f: &[u8]) -> bool {
    f.get(12..14) == Some(&[0x86, 0xdd]) && f.get(20) == Some(&47)
}

/// The features `scenario`'s real arm needs, from its pipeline, device and input frames.
/// An unreadable pcap needs nothing here: the arm reports it.
pub fn required(scenario: &Scenario) -> Vec<KernelFeature> {
    let mut out = Vec::new();
    if scenario.pipeline == Pipeline::VhostTx {
        out.push(KernelFeature::VhostNet);
    }
    if scenario.pipeline == Pipeline::TunRead && scenario.attach == sim::bridge::Attach::BridgeNf {
        out.push(KernelFeature::BrNetfilter);
    }
    let o = &scenario.device.offloads;
    if o.uso4 || o.uso6 {
        out.push(KernelFeature::TunUso);
    }
    if o.udp_tunnel_gso || o.udp_tunnel_gso_csum {
        out.push(KernelFeature::TunUdpTunnelGso);
    }
    let g = &scenario.gro;
    let udp_gro = !g.udp_gro_ports.is_empty() || g.gro_udp_fwd || g.gro_fraglist;
    if scenario.pipeline == Pipeline::TapGro && udp_gro && !out.contains(&KernelFeature::TunUso) {
        // A merged plain UDP skb is SKB_GSO_UDP_L4, which virtio_net_hdr_from_skb (the
        // capture socket's PACKET_VNET_HDR) knows from the same v6.2 series as TUN_F_USO
        // ("linux/virtio_net.h: Support USO offload in vnet header."); before it the
        // packet socket drops the skb, so the 6.1 guest could not show it.
        out.push(KernelFeature::TunUso);
    }
    if scenario.pipeline == Pipeline::TapGro && scenario.gro.vlan_gro {
        out.push(KernelFeature::VlanGro);
    }
    if scenario.pipeline == Pipeline::TapGro {
        if let Ok(mut reader) = sim::pcap::EthernetInput::open(&scenario.input, scenario.link) {
            let (mut gre, mut gre6) = (false, false);
            while let Some(Ok(f)) = reader.next_frame() {
                gre |= is_gre_frame(f.data);
                gre6 |= is_gre6_frame(f.data);
                if gre && gre6 {
                    break;
                }
            }
            if gre {
                out.push(KernelFeature::Gre);
            }
            if gre6 {
                out.push(KernelFeature::Ip6Gre);
            }
        }
    }
    out
}

static PROBED: Mutex<BTreeMap<KernelFeature, Result<(), String>>> = Mutex::new(BTreeMap::new());

/// `Ok(())` when the running kernel has `feature`; otherwise what the probe saw. Probed
/// once per process.
pub fn probe(feature: KernelFeature) -> Result<(), String> {
    if let Ok(cache) = PROBED.lock() {
        if let Some(r) = cache.get(&feature) {
            return r.clone();
        }
    }
    let r = match feature {
        KernelFeature::Gre => probe_gre(),
        KernelFeature::Ip6Gre => probe_ip6gre(),
        KernelFeature::VhostNet => probe_vhost_net(),
        KernelFeature::TunUso => probe_tun_uso(),
        KernelFeature::TunUdpTunnelGso => probe_tun_udp_tunnel_gso(),
        KernelFeature::BrNetfilter => probe_br_netfilter(),
        KernelFeature::VlanGro => probe_vlan_gro(),
    };
    if let Ok(mut cache) = PROBED.lock() {
        cache.insert(feature, r.clone());
    }
    r
}

/// The first feature `scenario` needs that this kernel lacks, as one line.
pub fn missing(scenario: &Scenario) -> Option<String> {
    required(scenario).into_iter().find_map(|f| {
        probe(f)
            .err()
            .map(|why| format!("needs {f}, which this kernel lacks ({why})"))
    })
}

/// CONFIG_VLAN_8021Q: the 8021q module is loaded (or built in), or the kernel
/// configuration says so. (Hand-written: no crate reads a kernel's configuration.)
fn probe_vlan_gro() -> Result<(), String> {
    if std::path::Path::new("/sys/module/8021q").exists() {
        return Ok(());
    }
    match crate::arm::tap_gro::kernel_config("CONFIG_VLAN_8021Q") {
        Some(true) => Ok(()),
        Some(false) => Err("CONFIG_VLAN_8021Q is not set".into()),
        None => Err("no /sys/module/8021q and no /proc/config.gz to ask".into()),
    }
}

fn probe_br_netfilter() -> Result<(), String> {
    // br_netfilter registers its sysctls in every namespace (brnf_init_net).
    const NF_CALL: &str = "/proc/sys/net/bridge/bridge-nf-call-iptables";
    let r = Netns::run(|_| Ok(std::path::Path::new(NF_CALL).exists()));
    match r {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("no {NF_CALL} in a new namespace")),
        Err(e) => Err(e.to_string()),
    }
}

fn probe_gre() -> Result<(), String> {
    let r = Netns::run(|ns| {
        // ip_gre.c: ipgre_tap_ops; the device exists only inside this namespace.
        // IFLA_GRE_LOCAL (include/uapi/linux/if_tunnel.h).
        const IFLA_GRE_LOCAL: u16 = 6;
        let local = Nla::bytes(IFLA_GRE_LOCAL, &[192, 0, 2, 1]);
        ns.rtnl()
            .create_link("skbprobegre", "gretap", &[local])
            .map(|_| ())
    });
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.is_errno(Errno::EOPNOTSUPP) => {
            Err("RTM_NEWLINK gretap: EOPNOTSUPP, no gretap link type".into())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn probe_vhost_net() -> Result<(), String> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/vhost-net")
        .map(drop)
        .map_err(|e| format!("/dev/vhost-net: {e}"))
}

fn probe_tun_uso() -> Result<(), String> {
    let r: Result<(), KernelError> = Netns::run(|_| {
        let t = TapConfig::tap("skbprobeuso").vnet_hdr(true).open()?;
        t.set_offload(tun_f::CSUM | tun_f::USO4 | tun_f::USO6)
    });
    r.map_err(|e| e.to_string())
}

/// tun_set_offload (drivers/net/tun.c) takes TUN_F_UDP_TUNNEL_GSO only with TSO4 or TSO6
/// beside it (0x83 is the smallest accepted set on the host's 6.18).
fn probe_tun_udp_tunnel_gso() -> Result<(), String> {
    let r: Result<(), KernelError> = Netns::run(|_| {
        let t = TapConfig::tap("skbprobetnl").vnet_hdr(true).open()?;
        t.set_offload(tun_f::CSUM | tun_f::TSO4 | tun_f::UDP_TUNNEL_GSO)
    });
    r.map_err(|e| e.to_string())
}

fn probe_ip6gre() -> Result<(), String> {
    let r = Netns::run(|ns| {
        // ip6_gre.c: ip6gre_tap_ops. IFLA_GRE_LOCAL (include/uapi/linux/if_tunnel.h).
        const IFLA_GRE_LOCAL: u16 = 6;
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = 1;
        ns.rtnl()
            .create_link("skbprobeg6", "ip6gretap", &[Nla::bytes(IFLA_GRE_LOCAL, &a)])
            .map(|_| ())
    });
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.is_errno(Errno::EOPNOTSUPP) => {
            Err("RTM_NEWLINK ip6gretap: EOPNOTSUPP, no ip6gretap link type".into())
        }
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(name: &str) -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/tap-write")
            .join(name);
        Scenario::load(&path).expect("scenario loads")
    }

    /// The lab's 6.1 and 6.12 guests answer TUNSETOFFLOAD 0x83 with EINVAL: a scenario that
    /// asks for the tunnel offload must be reported as needing another kernel there, not
    /// run and fail on its setup (the CI failure this fixed).
    #[test]
    fn the_tunnel_offload_is_a_required_feature() {
        let tnl = KernelFeature::TunUdpTunnelGso;
        assert!(required(&scenario("vnet-udp-tunnel.toml")).contains(&tnl));
        assert!(required(&scenario("vnet-udp-tunnel-hdr10.toml")).contains(&tnl));
        assert!(!required(&scenario("vnet-udp-tunnel-no-offload.toml")).contains(&tnl));
    }
}
