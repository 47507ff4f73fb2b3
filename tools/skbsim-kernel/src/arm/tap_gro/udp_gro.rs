//! Plain UDP GRO on the real tap (`[gro] udp_gro_socket`, `rx_udp_gro_forwarding`,
//! `rx_gro_list`): the device features through ethtool, and the local UDP_GRO sockets.
//!
//! NETIF_F_GRO_UDP_FWD and NETIF_F_GRO_FRAGLIST are NETIF_F_SOFT_FEATURES_OFF, which
//! register_netdevice adds to every device's hw_features, so `ethtool -K` can turn them
//! on for a tap. A socket is one AF_INET6 socket bound to the wildcard address and the
//! port (dual-stack: a fresh namespace has net.ipv6.bindv6only = 0, and the IPv4 lookup
//! of udp4_gro_lookup_skb finds it in the wildcard slot), with UDP_GRO set, which also
//! enables udp_encap_needed_key / udpv6_encap_needed_key (udp_lib_setsockopt:
//! udp_tunnel_encap_enable), so that udp4/udp6_gro_receive look the socket up at all.

use std::net::{Ipv6Addr, SocketAddrV6, UdpSocket};
use std::os::fd::AsFd;

use sim::gro::plan::GroPlan;
use sim::trace::gro_observed::UdpGroSetup;

use crate::error::{Cause, Errno, ErrnoExt, KernelError};
use crate::ethtool::Ethtool;
use crate::sys::setsockopt_int;

/// ethtool's names of NETIF_F_GRO_UDP_FWD and NETIF_F_GRO_FRAGLIST.
const UDP_FWD: &str = "rx-udp-gro-forwarding";
const FRAGLIST: &str = "rx-gro-list";

/// The sockets, held open for the run.
pub(super) struct UdpGroSockets {
    _socks: Vec<UdpSocket>,
}

/// Set the two features on `ifname` as `plan` says and open its UDP_GRO sockets (in the
/// calling thread's namespace, the run's private one). Returns the settings read back.
pub(super) fn udp_gro_setup(
    et: &mut Ethtool,
    ifname: &str,
    plan: &GroPlan,
) -> Result<(UdpGroSockets, UdpGroSetup), KernelError> {
    if plan.udp_gro_ports.is_empty() && !plan.gro_udp_fwd && !plan.gro_fraglist {
        // A new device has both features off (they are only in hw_features), and a
        // scenario without the settings leaves ethtool alone, as before they existed.
        return Ok((UdpGroSockets { _socks: Vec::new() }, UdpGroSetup::default()));
    }
    for (name, want) in [(UDP_FWD, plan.gro_udp_fwd), (FRAGLIST, plan.gro_fraglist)] {
        if et.get_feature(ifname, name)? != want {
            et.set_feature(ifname, name, want)?;
        }
    }
    let mut socks = Vec::new();
    for &port in &plan.udp_gro_ports {
        let op = || format!("UDP socket on [::]:{port} with UDP_GRO");
        let s =
            UdpSocket::bind(SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, port, 0, 0)).map_err(|e| {
                match e.raw_os_error() {
                    Some(n) => KernelError::sys(op(), Errno::from_raw(n)),
                    None => KernelError::new(op(), Cause::Protocol(e.to_string())),
                }
            })?;
        setsockopt_int(s.as_fd(), libc::SOL_UDP, libc::UDP_GRO, 1).op(op)?;
        socks.push(s);
    }
    let setup = UdpGroSetup {
        sockets: plan.udp_gro_ports.clone(),
        forwarding: et.get_feature(ifname, UDP_FWD)?,
        gro_list: et.get_feature(ifname, FRAGLIST)?,
    };
    Ok((UdpGroSockets { _socks: socks }, setup))
}
