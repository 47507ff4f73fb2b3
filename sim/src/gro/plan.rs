//! The `[gro]` section of a `tap-gro` scenario: how frames reach tun's NAPI and which GRO
//! offloads the kernel has. Every key is optional.
//!
//! ```toml
//! [gro]
//! burst = 1                  # frames written per NAPI poll (1: every write() runs its own
//!                            # poll, docs/gro.md#tun-napi; N: a MSG_MORE burst or a
//!                            # vhost batch; at most NAPI_POLL_WEIGHT + 1 = 65)
//! flush_timeout_ns = 1000000 # /sys/class/net/TAP/gro_flush_timeout (default 0, at most
//!                            # KTIME_MAX)
//! hz = 250                   # CONFIG_HZ for jiffies (100, 250, 300, 1000; default 250,
//!                            # this machine's kernel)
//! feature = true             # ethtool -K TAP gro on|off
//! teb_gro = true             # an ETH_P_TEB offload exists (default: the profile's; false
//!                            # models kernels before 9b174d88c257, v4.0)
//! vlan_gro = false           # CONFIG_VLAN_8021Q (off on this machine's kernel)
//! vxlan_ports = [4789]       # UDP ports with a VXLAN socket (a vxlan device is up)
//! tap_observer = "af_packet" # what reads the tap: "af_packet" (a packet socket, which
//!                            # clones every skb, so gro_cells passes the tunnel's skbs
//!                            # to netif_rx unmerged) or "none" (docs/gro.md#gro-cells)
//! tunnel_trace = false       # trace what each vxlan/gretap device's stack receives after
//!                            # gro_cells (always on with tap_observer = "none")
//! udp_gro_socket = [6001]    # UDP ports with a local socket that set UDP_GRO (bound to
//!                            # the wildcard address in the namespace; docs/gro.md#udp-gro)
//! rx_udp_gro_forwarding = false # ethtool -K TAP rx-udp-gro-forwarding (NETIF_F_GRO_UDP_FWD)
//! rx_gro_list = false        # ethtool -K TAP rx-gro-list (NETIF_F_GRO_FRAGLIST)
//! gro_max_size = 65536       # ip link set TAP gro_max_size N (IFLA_GRO_MAX_SIZE; BIG TCP
//!                            # past 65536: v5.19; at most GRO_MAX_SIZE = 524280)
//! gro_ipv4_max_size = 65536  # ip link set TAP gro_ipv4_max_size N (v6.3), the same range
//! ```
//!
//! How each frame is written (PI, vnet header, O_NONBLOCK) and any XDP program are the
//! `[device]`, `[writer]` and `[xdp]` tables, as for tap-write: the writes go through
//! tun_get_user (`Net::tun_write`). A nonblocking write that fits gets tun_build_skb's
//! page-frag head, so merges use frags before frag_list.

use serde::Deserialize;

use super::rules::GroRules;
use crate::scenario::limits::{self, in_range};

/// CONFIG_HZ values the kernel offers.
pub const HZ_CHOICES: [u32; 4] = [100, 250, 300, 1000];
/// This machine's CONFIG_HZ.
pub const DEFAULT_HZ: u32 = 250;

/// `[gro]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGro {
    pub burst: Option<usize>,
    pub flush_timeout_ns: Option<u64>,
    pub hz: Option<u32>,
    pub feature: Option<bool>,
    pub teb_gro: Option<bool>,
    pub vlan_gro: Option<bool>,
    pub vxlan_ports: Option<Vec<u16>>,
    pub tap_observer: Option<String>,
    pub tunnel_trace: Option<bool>,
    pub udp_gro_socket: Option<Vec<u16>>,
    pub rx_udp_gro_forwarding: Option<bool>,
    pub rx_gro_list: Option<bool>,
    pub gro_max_size: Option<u64>,
    pub gro_ipv4_max_size: Option<u64>,
}

/// `[gro]` resolved against the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroPlan {
    pub burst: usize,
    pub flush_timeout_ns: u64,
    pub hz: u32,
    pub feature: bool,
    pub teb_gro: bool,
    pub vlan_gro: bool,
    pub vxlan_ports: Vec<u16>,
    /// Who reads the tap (`[gro] tap_observer`).
    pub tap_observer: super::cells::TapObserver,
    /// Trace the tunnel devices' deliveries after gro_cells.
    pub tunnel_trace: bool,
    /// Ports with a local UDP_GRO socket (`[gro] udp_gro_socket`).
    pub udp_gro_ports: Vec<u16>,
    /// NETIF_F_GRO_UDP_FWD (`[gro] rx_udp_gro_forwarding`).
    pub gro_udp_fwd: bool,
    /// NETIF_F_GRO_FRAGLIST (`[gro] rx_gro_list`).
    pub gro_fraglist: bool,
    /// The tap's gro_max_size and gro_ipv4_max_size (docs/gro.md#big-tcp).
    pub gro_max_size: usize,
    pub gro_ipv4_max_size: usize,
}

impl GroPlan {
    /// The defaults for `rules`.
    pub fn defaults(rules: &GroRules) -> GroPlan {
        GroPlan {
            burst: 1,
            flush_timeout_ns: 0,
            hz: DEFAULT_HZ,
            feature: true,
            teb_gro: rules.teb_gro,
            vlan_gro: false,
            vxlan_ports: vec![4789],
            tap_observer: super::cells::TapObserver::AfPacket,
            tunnel_trace: false,
            udp_gro_ports: Vec::new(),
            gro_udp_fwd: false,
            gro_fraglist: false,
            gro_max_size: super::GRO_LEGACY_MAX_SIZE,
            gro_ipv4_max_size: super::GRO_LEGACY_MAX_SIZE,
        }
    }

    /// Whether the gro_cells stage runs (its deliveries are traced).
    pub fn cells(&self) -> bool {
        self.tunnel_trace || self.tap_observer == super::cells::TapObserver::None
    }

    /// The GRO configuration this plan runs with.
    pub fn config(&self, rules: GroRules) -> super::GroConfig {
        super::GroConfig {
            rules,
            feature: self.feature,
            teb_gro: self.teb_gro,
            vlan_gro: self.vlan_gro,
            vxlan_ports: self.vxlan_ports.clone(),
            xdp_generic: false,
            udp_gro_ports: self.udp_gro_ports.clone(),
            gro_udp_fwd: self.gro_udp_fwd,
            gro_fraglist: self.gro_fraglist,
            gro_max_size: self.gro_max_size,
            gro_ipv4_max_size: self.gro_ipv4_max_size,
            hard_header_len: crate::consts::ETH_HLEN,
        }
    }
}

/// Validate `[gro]`; errors name the key (`gro.hz: ...`).
pub fn gro_plan(
    raw: Option<&RawGro>,
    rules: &GroRules,
    profile: &str,
    tap_gro: bool,
) -> Result<GroPlan, String> {
    let mut plan = GroPlan::defaults(rules);
    let Some(r) = raw else {
        return Ok(plan);
    };
    if !tap_gro {
        return Err("[gro] belongs to the tap-gro and vhost-tx pipelines".into());
    }
    if let Some(b) = r.burst {
        let why = "tun_get_user schedules NAPI once more than NAPI_POLL_WEIGHT are queued";
        in_range("gro.burst", b as u64, limits::GRO_BURST, why)?;
        plan.burst = b;
    }
    if let Some(t) = r.flush_timeout_ns {
        let why = "napi_complete_done arms the hrtimer with a signed ktime_t";
        in_range("gro.flush_timeout_ns", t, limits::GRO_FLUSH_TIMEOUT_NS, why)?;
        if t > 0 && !rules.gro_flush_timeout {
            return Err(format!(
                "gro.flush_timeout_ns: {profile} has no gro_flush_timeout (v3.19)"
            ));
        }
        plan.flush_timeout_ns = t;
    }
    if let Some(hz) = r.hz {
        if !HZ_CHOICES.contains(&hz) {
            return Err(format!(
                "gro.hz: {hz} is not a CONFIG_HZ choice (100, 250, 300, 1000)"
            ));
        }
        plan.hz = hz;
    }
    if let Some(f) = r.feature {
        plan.feature = f;
    }
    if let Some(t) = r.teb_gro {
        plan.teb_gro = t;
    }
    if let Some(v) = r.vlan_gro {
        plan.vlan_gro = v;
    }
    if let Some(p) = &r.vxlan_ports {
        plan.vxlan_ports = p.clone();
    }
    if let Some(o) = &r.tap_observer {
        plan.tap_observer = super::cells::TapObserver::parse(o)
            .ok_or_else(|| format!("gro.tap_observer: {o:?} is not \"af_packet\" or \"none\""))?;
    }
    if let Some(t) = r.tunnel_trace {
        plan.tunnel_trace = t;
    }
    udp_gro_settings(r, rules, profile, &mut plan)?;
    (plan.gro_max_size, plan.gro_ipv4_max_size) =
        super::bigtcp::setlink_sizes(r.gro_max_size, r.gro_ipv4_max_size, rules, profile)?;
    Ok(plan)
}

/// `[gro] udp_gro_socket`, `rx_udp_gro_forwarding`, `rx_gro_list`: plain UDP GRO
/// (udp_gro_receive_segment), which `rules` must have.
fn udp_gro_settings(
    r: &RawGro,
    rules: &GroRules,
    profile: &str,
    plan: &mut GroPlan,
) -> Result<(), String> {
    let asked = [
        (
            "gro.udp_gro_socket",
            r.udp_gro_socket.as_ref().is_some_and(|p| !p.is_empty()),
        ),
        (
            "gro.rx_udp_gro_forwarding",
            r.rx_udp_gro_forwarding == Some(true),
        ),
        ("gro.rx_gro_list", r.rx_gro_list == Some(true)),
    ];
    if let Some((key, _)) = asked.iter().find(|(_, on)| *on && !rules.udp_gro_segment) {
        return Err(format!(
            "{key}: {profile} has no plain UDP GRO (udp_gro_receive_segment, v5.0)"
        ));
    }
    if let Some(ports) = &r.udp_gro_socket {
        let mut seen = Vec::new();
        for &p in ports {
            if p == 0 {
                return Err("gro.udp_gro_socket: port 0 is not a port a socket binds to".into());
            }
            if seen.contains(&p) {
                return Err(format!("gro.udp_gro_socket: port {p} is listed twice"));
            }
            if plan.vxlan_ports.contains(&p) {
                return Err(format!(
                    "gro.udp_gro_socket: port {p} is a VXLAN port (gro.vxlan_ports): one socket per port (bind fails with EADDRINUSE)"
                ));
            }
            seen.push(p);
        }
        plan.udp_gro_ports = seen;
    }
    plan.gro_udp_fwd = r.rx_udp_gro_forwarding.unwrap_or(false);
    plan.gro_fraglist = r.rx_gro_list.unwrap_or(false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gro::rules::{GRO_LINUX_3_12, GRO_LINUX_6_18};

    #[test]
    fn defaults_and_errors_name_the_key() {
        let p = gro_plan(None, &GRO_LINUX_6_18, "linux-6.18", true).unwrap();
        assert_eq!(
            (p.burst, p.flush_timeout_ns, p.hz, p.teb_gro),
            (1, 0, 250, true)
        );
        let raw = RawGro {
            hz: Some(200),
            ..RawGro::default()
        };
        assert!(gro_plan(Some(&raw), &GRO_LINUX_6_18, "x", true)
            .unwrap_err()
            .starts_with("gro.hz"));
        let raw = RawGro {
            burst: Some(0),
            ..RawGro::default()
        };
        assert!(gro_plan(Some(&raw), &GRO_LINUX_6_18, "x", true)
            .unwrap_err()
            .starts_with("gro.burst"));
        let raw = RawGro {
            flush_timeout_ns: Some(1000),
            ..RawGro::default()
        };
        let e = gro_plan(Some(&raw), &GRO_LINUX_3_12, "linux-3.12", true).unwrap_err();
        assert!(e.contains("v3.19"), "{e}");
        assert!(gro_plan(Some(&RawGro::default()), &GRO_LINUX_6_18, "x", false).is_err());
        let raw = RawGro {
            teb_gro: Some(false),
            ..RawGro::default()
        };
        assert!(
            !gro_plan(Some(&raw), &GRO_LINUX_6_18, "x", true)
                .unwrap()
                .teb_gro
        );
    }
}
