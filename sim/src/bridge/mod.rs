//! The Linux bridge a VM's tap sits on (net/bridge), as a stage in front of the tap's
//! `tun_net_xmit`: what a tap port is handed, or why it is handed nothing.
//!
//! The topology is the real arm's: a bridge with default settings (STP off, no VLAN
//! filtering, multicast snooping on without a querier, ageing 300 s, every port with
//! `BR_LEARNING | BR_FLOOD | BR_MCAST_FLOOD | BR_BCAST_FLOOD`) and two ports: the
//! *uplink*, where every input frame enters (the host side: a NIC or veth on a host, the
//! writer tap in the real arm), and the *tap* under test. The bridge device itself is a
//! third, local, endpoint. All three have fixed addresses ([`BRIDGE_MAC`],
//! [`UPLINK_MAC`], [`TAP_MAC`]), which the real arm gives its devices, so a frame sent
//! to one of them is passed up locally, not forwarded.
//!
//! Before the bridge, the uplink's receive path sets `skb->protocol`
//! ([`received_protocol`]: an 802.3 length field becomes ETH_P_802_2 / ETH_P_802_3) and
//! frees a tagged frame too short for skb_vlan_untag (under 20 bytes).
//!
//! Rules, in the kernel's order ([`input`]):
//! 1. br_handle_frame: a source that is not a valid unicast address is dropped
//!    (`is_valid_ether_addr`).
//! 2. br_handle_frame, `is_link_local_ether_addr` (01:80:c2:00:00:0X): 00 (STP) is
//!    forwarded as data when STP is off; 01 (MAC control) is dropped; every other
//!    group is forwarded only if its bit is in `group_fwd_mask` (0 by default), otherwise
//!    passed up after `__br_handle_local_finish` learned its source.
//! 3. with br_netfilter on ([`Attach::BridgeNf`]), br_nf_pre_routing: untagged IPv4 and
//!    IPv6 are validated and trimmed to their IP length ([`netfilter`]), before learning.
//! 4. br_handle_frame_finish: the fdb learns the source ([`fdb`]; ageing by the replay's
//!    clock); snooping parses IGMP/MLD and drops what its parsers reject
//!    ([`multicast`]); then broadcast and multicast flood, and unicast goes by
//!    `br_fdb_find_rcu`: a local entry is passed up, an entry on the ingress port is not
//!    delivered (`should_deliver`: `skb->dev != p->dev`), an unknown address floods.
//! 5. the way out to the tap: should_deliver needs the port forwarding (the tap up), and
//!    br_dev_queue_push_xmit's `is_skb_forwardable` drops a non-GSO skb longer than the
//!    tap's MTU + 14 + 4 (Ethernet header included, a hw-accel tag not).

pub mod fdb;
mod input;
pub mod multicast;
pub mod netfilter;

use std::fmt;

pub use fdb::{Fdb, BR_DEFAULT_AGEING_TIME_NS};
pub use input::{input, received_protocol};

/// A MAC address.
pub type Mac = [u8; 6];

/// The bridge device's own address (set explicitly, so `br_stp_recalculate_bridge_id`
/// does not take a port's).
pub const BRIDGE_MAC: Mac = [0xfe, 0x5b, 0x00, 0x00, 0x00, 0x01];
/// The tap under test's address (`IFLA_ADDRESS`; a VM's tap usually differs from the
/// guest's own MAC, as here).
pub const TAP_MAC: Mac = [0xfe, 0x5b, 0x00, 0x00, 0x00, 0x02];
/// The uplink port's address (every writer tap of the real arm).
pub const UPLINK_MAC: Mac = [0xfe, 0x5b, 0x00, 0x00, 0x00, 0x03];

/// How frames reach the tap (`attach` in a tun-read scenario, by [`Attach::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attach {
    /// Through a default bridge, br_netfilter's `bridge-nf-call-*` off.
    Bridge,
    /// Through a default bridge with `bridge-nf-call-iptables`/`-ip6tables`/`-arptables`
    /// on (what a kernel with br_netfilter built in gives every namespace).
    BridgeNf,
    /// Straight to the tap's `ndo_start_xmit`, no bridge.
    Direct,
}

impl Attach {
    /// A tap sits on a bridge; a tun device (IP, no Ethernet header) cannot, so its
    /// frames go straight to it.
    pub fn default_for(kind: crate::tun::DeviceKind) -> Attach {
        match kind {
            crate::tun::DeviceKind::Tap => Attach::Bridge,
            crate::tun::DeviceKind::Tun => Attach::Direct,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Attach::Bridge => "bridge",
            Attach::BridgeNf => "bridge-nf",
            Attach::Direct => "direct",
        }
    }
}

/// A bridge port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Port {
    /// Where the input frames enter.
    Uplink,
    /// The tap under test.
    Tap,
}

/// Why the bridge did not hand a frame to the tap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropReason {
    /// The uplink's receive path: skb_vlan_untag could not pull a tag (frame length).
    ShortTag(usize),
    /// br_handle_frame: `!is_valid_ether_addr(h_source)`.
    InvalidSource(Mac),
    /// br_handle_frame: 01:80:c2:00:00:01, `SKB_DROP_REASON_MAC_IEEE_MAC_CONTROL`.
    MacControl,
    /// br_handle_frame: a link-local group not in `group_fwd_mask`.
    LinkLocal(Mac),
    /// br_nf_pre_routing: br_validate_ipv4/ipv6 freed it.
    Netfilter(&'static str),
    /// br_multicast_rcv rejected it.
    Snooping(&'static str),
    /// br_handle_frame_finish: the destination is a local fdb entry (br_pass_frame_up).
    Local(Mac),
    /// br_forward: the destination was learned on the ingress port.
    SamePort(Mac),
    /// should_deliver: the tap's port is not forwarding (the tap is down).
    PortDown,
    /// is_skb_forwardable: longer than the tap's MTU allows.
    TooBig { len: usize, limit: usize },
}

fn mac(m: &Mac) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DropReason::ShortTag(len) => write!(
                f,
                "a tagged frame of {len} bytes: the receive path's skb_vlan_untag needs 20 (pskb_may_pull)"
            ),
            DropReason::InvalidSource(m) => write!(
                f,
                "source {} is not a valid unicast address (br_handle_frame: is_valid_ether_addr)",
                mac(m)
            ),
            DropReason::MacControl => f.write_str(
                "MAC control 01:80:c2:00:00:01 is never forwarded (br_handle_frame)",
            ),
            DropReason::LinkLocal(m) => write!(
                f,
                "link-local {} not forwarded: not in group_fwd_mask (br_handle_frame)",
                mac(m)
            ),
            DropReason::Netfilter(why) => write!(f, "br_netfilter: {why}"),
            DropReason::Snooping(why) => write!(f, "multicast snooping: {why}"),
            DropReason::Local(m) => write!(
                f,
                "{} is a local address of the bridge: passed up, not forwarded (br_handle_frame_finish)",
                mac(m)
            ),
            DropReason::SamePort(m) => write!(
                f,
                "same port: {} was learned on the ingress port (br_forward: should_deliver)",
                mac(m)
            ),
            DropReason::PortDown => {
                f.write_str("the tap's port is not forwarding: the tap is down (should_deliver)")
            }
            DropReason::TooBig { len, limit } => write!(
                f,
                "{len} bytes exceed the tap's mtu + 18 = {limit} (br_dev_queue_push_xmit: is_skb_forwardable)"
            ),
        }
    }
}

/// The bridge's state across a replay.
#[derive(Debug, Clone)]
pub struct Bridge {
    pub fdb: Fdb,
    /// br_netfilter's `bridge-nf-call-iptables` and `-ip6tables`.
    pub nf_call: bool,
    /// `br->group_fwd_mask` (`BR_GROUPFWD_DEFAULT` 0).
    pub group_fwd_mask: u16,
}

impl Bridge {
    /// A default bridge with the uplink and the tap as ports.
    pub fn new(nf_call: bool) -> Bridge {
        let mut fdb = Fdb::new(BR_DEFAULT_AGEING_TIME_NS);
        fdb.add_local(BRIDGE_MAC, None);
        fdb.add_local(UPLINK_MAC, Some(Port::Uplink));
        fdb.add_local(TAP_MAC, Some(Port::Tap));
        Bridge {
            fdb,
            nf_call,
            group_fwd_mask: 0,
        }
    }
}

/// What the bridge does with one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Handed to the tap; `Some(n)` when br_netfilter trimmed the frame to `n` bytes.
    Deliver(Option<usize>),
    Dropped(DropReason),
}

#[cfg(test)]
mod tests;
