//! The path the real tun-read arm's frames take to the tap under test, per the
//! scenario's `attach` (sim::bridge), and how the arm knows, without waiting, whether a
//! frame got there.
//!
//! # Bridge (`attach = "bridge"` / `"bridge-nf"`)
//! A bridge created with default settings (STP off, multicast snooping on, ageing 300 s),
//! the writer taps and the tap under test as ports, and the addresses the model assumes
//! (sim::bridge: `BRIDGE_MAC`, `UPLINK_MAC` on every writer, `TAP_MAC`). In the arm's own
//! namespace:
//! - `bridge/bridge-nf-call-{iptables,ip6tables,arptables}`: 0 for "bridge", 1 for
//!   "bridge-nf". With br_netfilter built in they start at 1 in every new namespace, which
//!   is how the arm used to trim padded IP frames and drop bad IP headers (issue 12).
//!   Without br_netfilter (not built in, module not loaded: the files are absent) a
//!   bridge is already "bridge", and "bridge-nf" cannot be set up.
//! - `ipv4/igmp_link_local_mcast_reports` 0: with snooping on, an up bridge joins the
//!   all-snoopers group 224.0.0.106 and its IGMP stack reports that twice within a second
//!   (seen on 6.18: two 01:00:5e:00:00:16 frames on a port); a link-local group is not
//!   reported with this off (net/ipv4/igmp.c: igmp_group_added), so the bridge stays
//!   silent and a reader on a port reads only what was written.
//!
//! # Direct (`attach = "direct"`)
//! No bridge and no writer tap: each frame is sent with AF_PACKET on the tap under test
//! itself (packet_snd -> dev_queue_xmit -> tun_net_xmit). `skb->protocol` is the frame's
//! EtherType (dev_parse_header_protocol), a tag stays in-band, the skb is CHECKSUM_NONE
//! and not GSO, so only such recipes are expressible.
//!
//! # Did the frame arrive?
//! A second AF_PACKET socket bound to the tap under test sees every skb handed to its
//! `ndo_start_xmit` (dev_queue_xmit_nit, before tun_net_xmit). Forwarding is synchronous
//! inside the writer's `write()` (tun_get_user -> netif_receive_skb -> br_handle_frame
//! -> br_forward -> dev_queue_xmit), and so is the AF_PACKET send, so after the call
//! returns the observer either holds the frame or the path did not deliver it: checked
//! with a zero-timeout poll. The NAPI writers hand the skb to the stack in the softirq
//! run by their `local_bh_enable()`, still inside `write()`; they get [`NAPI_SETTLE`] in
//! case that softirq was deferred to ksoftirqd.

use std::time::Duration;

use sim::bridge::{Attach, BRIDGE_MAC, BR_DEFAULT_AGEING_TIME_NS};

use sim::scenario::Scenario;
use sim::skb::IpSummed;

use super::tun_read::WriterKind;
use super::ArmError;
use crate::error::{Errno, KernelError};
use crate::netns::Netns;
use crate::packet::PacketSocket;

/// The longest an observation waits for a NAPI writer's frame (see the module docs).
pub const NAPI_SETTLE: Duration = Duration::from_millis(10);

/// Whether an AF_PACKET send on the tap can make the skbs `scenario` asks for.
pub fn direct_expressible(scenario: &Scenario) -> Result<(), ArmError> {
    if !scenario.device.up {
        return Err(ArmError::Unsupported(
            "attach = \"direct\" with the tap down: AF_PACKET cannot send on a down device (ENETDOWN)".into(),
        ));
    }
    let recipes =
        std::iter::once(&scenario.skb).chain(scenario.skb_overrides.iter().map(|(_, r)| r));
    for r in recipes {
        if WriterKind::for_recipe(r) != WriterKind::Plain || r.checksum != IpSummed::None {
            return Err(ArmError::Unsupported(
                "attach = \"direct\": an AF_PACKET send makes a CHECKSUM_NONE, non-GSO, all-linear skb; the recipe asks for more"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// Configure the namespace and create the bridge for `attach` with `ports` (writers and
/// the tap under test, already up and addressed); returns the bridge's ifindex.
pub fn bridge(ns: &mut Netns, attach: Attach, name: &str, ports: &[u32]) -> Result<u32, ArmError> {
    let nf = if attach == Attach::BridgeNf { "1" } else { "0" };
    if std::path::Path::new("/proc/sys/net/bridge").is_dir() {
        for key in [
            "bridge/bridge-nf-call-iptables",
            "bridge/bridge-nf-call-ip6tables",
            "bridge/bridge-nf-call-arptables",
        ] {
            ns.sysctl(key, nf)?;
        }
    } else if attach == Attach::BridgeNf {
        return Err(ArmError::Unsupported(
            "attach = \"bridge-nf\": this kernel has no br_netfilter (no /proc/sys/net/bridge)"
                .into(),
        ));
    }
    ns.sysctl("ipv4/igmp_link_local_mcast_reports", "0")?;
    let br = ns.bridge(name, ports)?;
    ns.rtnl().set_address(br, BRIDGE_MAC)?;
    Ok(br)
}

/// Watches what reaches the tap under test's xmit, and ages the bridge's fdb across
/// timestamp gaps.
#[derive(Debug)]
pub struct Observer {
    sock: PacketSocket,
    bridge: Option<u32>,
    prev_ts: Option<u64>,
    /// When the fdb was last emptied (the first frame, or the last flush).
    fresh_since: Option<u64>,
    span_noted: bool,
}

impl Observer {
    /// Observe the tap `dut` (`bridge`: the bridge's ifindex, if there is one).
    pub fn new(dut: u32, bridge: Option<u32>) -> Result<Observer, KernelError> {
        let mut sock = PacketSocket::bind(dut)?;
        // Bound to a tap that is down (a scenario's `up = false`), the socket reports
        // ENETDOWN once (packet_do_bind sets sk_err); nothing reaches that tap anyway.
        match sock.drain() {
            Err(e) if e.errno() == Some(Errno::ENETDOWN) => {}
            other => {
                other?;
            }
        }
        Ok(Observer {
            sock,
            bridge,
            prev_ts: None,
            fresh_since: None,
            span_noted: false,
        })
    }

    /// How many frames reached the tap's xmit since the last call, waiting up to
    /// `settle` for the first.
    pub fn arrived(&mut self, settle: Duration) -> Result<usize, KernelError> {
        match self.sock.recv_timeout(Some(settle)) {
            Ok(None) => Ok(0),
            Ok(Some(_)) => Ok(1 + self.sock.drain()?),
            Err(e) if e.errno() == Some(Errno::ENETDOWN) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Before writing frame `index` at replay time `ts`: the arm replays at full speed,
    /// so a gap in the timestamps longer than the ageing time would pass unseen by the
    /// kernel. Across such a gap every learned entry has aged out (br_fdb_cleanup deletes
    /// an entry once `updated + ageing_time` has passed, and every entry was updated
    /// before the gap), so the arm deletes them all itself (`IFLA_BR_FDB_FLUSH`, which
    /// removes exactly the non-static entries). Ageing that builds up over a capture with
    /// no single gap that long is not reproduced; that is noted.
    pub fn before_frame(
        &mut self,
        ns: &mut Netns,
        index: u64,
        ts: u64,
        notes: &mut Vec<String>,
    ) -> Result<(), KernelError> {
        let Some(br) = self.bridge else {
            return Ok(());
        };
        if let Some(prev) = self.prev_ts {
            let gap = ts.saturating_sub(prev);
            if gap > BR_DEFAULT_AGEING_TIME_NS {
                ns.rtnl().bridge_fdb_flush(br)?;
                notes.push(format!(
                    "frame {index}: {} s after the previous frame, past the fdb ageing time: learned entries flushed (IFLA_BR_FDB_FLUSH), as br_fdb_cleanup would have aged them",
                    gap / 1_000_000_000
                ));
                self.fresh_since = Some(ts);
            }
        }
        let since = *self.fresh_since.get_or_insert(ts);
        if !self.span_noted && ts.saturating_sub(since) > BR_DEFAULT_AGEING_TIME_NS {
            self.span_noted = true;
            notes.push(format!(
                "frame {index}: the replay spans more than the fdb ageing time without a gap that long; entries the model ages on the way are kept by this full-speed replay"
            ));
        }
        self.prev_ts = Some(ts);
        Ok(())
    }
}
