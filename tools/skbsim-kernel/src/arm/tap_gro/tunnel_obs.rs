//! What the tunnel devices' own packet sockets read, for the gro_cells part of the trace
//! (`sim::trace::gro_cells`; docs/gro.md#gro-cells).
//!
//! A packet socket on a vxlan or gretap device sees each skb after the device's
//! gro_cells GRO (net/core/dev.c: __netif_receive_skb_core delivers to ptype_all when the
//! cell's NAPI passes the skb up), so it does not change what gro_cells merges; a packet
//! socket on the tap does (net/packet/af_packet.c: packet_rcv clones every skb, and
//! net/core/gro_cells.c: gro_cells_receive hands a cloned skb to netif_rx), which is why
//! `[gro] tap_observer = "none"` leaves the tap without one.

#[allow(unused_imports)]
use super::*;

use sim::gro::cells::TunnelDev;

/// A created vxlan device: name, ifindex, port, VNI.
pub(super) type VxlanDev = (String, u32, u16, u32);

/// How long the arm waits for the first frame of a tunnel device that counted a received
/// skb: the cell's NAPI runs in a softirq that a busy machine defers (ksoftirqd) well past
/// the quiet period (a cells-vxlan6 run under two spinners once read nothing).
const FIRST_FRAME_WAIT: Duration = Duration::from_secs(2);

/// Every frame the tunnel devices' sockets hold (the device's position first, with its
/// virtio-net header), until quiet. `received[k]`: device `k`'s rx_packets is non-zero;
/// vxlan_rcv, ip_tunnel_rcv and __ip6_tnl_rcv count the skb (dev_sw_netstats_rx_add)
/// before gro_cells_receive, so its socket will see at least one frame: wait for it.
pub(super) fn drain_tunnels(
    caps: &mut [VnetCapture],
    received: &[bool],
) -> Result<Vec<(usize, Captured)>, KernelError> {
    let mut frames = Vec::new();
    for (k, c) in caps.iter_mut().enumerate() {
        let mut got = Vec::new();
        if received.get(k).copied().unwrap_or(false) {
            if let Some(first) = c.recv(FIRST_FRAME_WAIT)? {
                got.push(first);
            }
        }
        c.drain_quiet(Duration::from_millis(5), &mut got)?;
        frames.extend(got.into_iter().map(|c| (k, c)));
    }
    Ok(frames)
}

/// The tunnel deliveries as the trace lists them: vxlan devices, then gretap devices,
/// each described as the model describes its [`TunnelDev`].
pub(super) fn tunnel_deliveries(
    (vx_devs, vx6_devs): (&[VxlanDev], &[VxlanDev]),
    vx: &[(usize, Captured)],
    (gt, gt6): (&GretapSetup, &Ip6gretapSetup),
    gts: &[(usize, Captured)],
    notes: &mut Vec<String>,
) -> Vec<(String, ObservedSkb)> {
    let mut out = Vec::new();
    // vcaps holds the IPv4 vxlan devices, then the IPv6 ones.
    let vx_name = |k: usize| match vx_devs.get(k) {
        Some(&(_, _, port, vni)) => TunnelDev::Vxlan { port, vni }.describe(),
        None => {
            let (_, _, port, vni) = vx6_devs[k - vx_devs.len()];
            TunnelDev::Vxlan6 { port, vni }.describe()
        }
    };
    // gcaps holds the gretap devices, then the ip6gretap ones.
    let gt_name = |k: usize| match gt.tunnels.get(k) {
        Some(t) => TunnelDev::Gretap {
            remote: t.remote,
            local: t.local,
            key: t.key,
        }
        .describe(),
        None => gt6.tunnels[k - gt.tunnels.len()].dev().describe(),
    };
    let all = vx
        .iter()
        .map(|(k, c)| (vx_name(*k), c))
        .chain(gts.iter().map(|(k, c)| (gt_name(*k), c)));
    for (n, (dev, (vnet, bytes))) in all.enumerate() {
        let mut skb = ObservedSkb {
            bytes: bytes.clone(),
            ..ObservedSkb::default()
        };
        match vnet {
            Ok(v) => skb.vnet = Some(*v),
            Err(e) => {
                notes.push(format!("tunnel delivery {n}: {e}"));
                skb.error = Some(e.clone());
            }
        }
        out.push((dev, skb));
    }
    out
}
