//! gro_cells: the second GRO pass a vxlan or gretap device runs on what it decapsulated
//! (net/core/gro_cells.c: gro_cells_receive, gro_cell_poll), and the decapsulation that
//! leads there (drivers/net/vxlan/vxlan_core.c: vxlan_rcv; net/ipv4/ip_gre.c: gre_rcv ->
//! ipgre_rcv -> net/ipv4/ip_tunnel.c: ip_tunnel_rcv; net/ipv4/ip_tunnel_core.c:
//! __iptunnel_pull_header). docs/gro.md#gro-cells.
//!
//! Each skb the tap's stack receives that carries VXLAN (to a port in `[gro] vxlan_ports`)
//! or GRE-TEB is decapsulated: the outer headers pulled, `eth_type_trans` on the inner
//! frame, `skb->dev` = the tunnel device, the encapsulation GSO bits and
//! `skb->encapsulation` cleared (iptunnel_pull_offloads, which also `skb_unclone`s a GSO
//! skb), one CHECKSUM_UNNECESSARY level used by the outer UDP or GRE checksum
//! (udp4_csum_init, gre_parse_header). Then `gro_cells_receive`:
//! - `skb_cloned(skb)` (an AF_PACKET socket on the tap holds a clone of every skb it saw,
//!   net/packet/af_packet.c: packet_rcv) or GRO off on the tunnel device: `netif_rx`, the
//!   per-cpu backlog, no GRO;
//! - otherwise the skb joins the device's cell queue and `gro_cell_poll` feeds it to
//!   `napi_gro_receive` on the device's own NAPI, which ends in `napi_complete_done`; the
//!   device's gro_flush_timeout is 0, so every poll completes everything it holds. A GSO
//!   skb (one the tap's GRO merged) is taken in there too: flushed with a frag_list
//!   (`gro:frag-list`), merged again with one of the same gso_size since v6.2
//!   (`GroRules::gso_skbs`).
//!
//! Both NAPIs (the backlog's and the cell's) are scheduled during the tap's poll and run
//! after it in the same `net_rx_action`, in the order they were scheduled; a cell sees
//! the skbs of one tap poll together.

use std::collections::BTreeMap;

use super::core::dev_gro_receive;
use super::napi::{Delivered, End, Napi};
use super::{GroConfig, GroResult, Reason, ReasonDef, SkBuff, NAPI_POLL_WEIGHT};
use crate::consts::ETH_HLEN;
use crate::consts::{ETH_P_IP, ETH_P_IPV6, ETH_P_TEB, IPPROTO_GRE, IPPROTO_UDP, VXLAN_HLEN};
use crate::skb::{gso, IpSummed};
use crate::wire::gre::{Gre, GRE_BASE_LEN, GRE_ROUTING, GRE_VERSION};
use crate::wire::vxlan::VXLAN_HF_VNI;
use crate::wire::{ethernet, ipv4, udp, VxlanPacket};

/// Who reads the tap (`[gro] tap_observer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TapObserver {
    /// An AF_PACKET socket bound to the tap: every skb is cloned (packet_rcv).
    #[default]
    AfPacket,
    /// Nothing: the tunnel devices get the skbs uncloned.
    None,
}

impl TapObserver {
    pub fn parse(s: &str) -> Option<TapObserver> {
        match s {
            "af_packet" => Some(TapObserver::AfPacket),
            "none" => Some(TapObserver::None),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TapObserver::AfPacket => "af_packet",
            TapObserver::None => "none",
        }
    }
}

/// gro_cells_receive: a cloned skb goes to netif_rx, not to the cell's GRO.
pub const CELLS_CLONED: Reason = &ReasonDef {
    name: "cells:cloned",
    rule: "net/core/gro_cells.c: gro_cells_receive: skb_cloned (an AF_PACKET socket on the tap holds a clone): netif_rx, no GRO",
    identity: false,
};
/// The tunnel device a decapsulated skb belongs to, ordered as the real arm creates them
/// (vxlan devices by port and VNI, IPv4 ones before IPv6 ones, then gretap devices by
/// remote, local, key, then ip6gretap devices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TunnelDev {
    Vxlan {
        port: u16,
        vni: u32,
    },
    /// A vxlan device with an IPv6 local address: its socket is IPv6 only
    /// (vxlan_core.c: vxlan_sock_add with VXLAN_F_IPV6).
    Vxlan6 {
        port: u16,
        vni: u32,
    },
    Gretap {
        remote: [u8; 4],
        local: [u8; 4],
        key: Option<[u8; 4]>,
    },
    Ip6gretap {
        remote: [u8; 16],
        local: [u8; 16],
        key: Option<[u8; 4]>,
    },
}

impl TunnelDev {
    /// "vxlan port 4789 vni 42", "gretap remote 192.168.0.1 local 192.168.0.2 key 0x2a",
    /// "vxlan6 port 4789 vni 42", "ip6gretap remote fd00:1::1 local fd00:1::2 key 0x2a".
    pub fn describe(&self) -> String {
        let ip = |a: [u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        let key = |k: &Option<[u8; 4]>| {
            k.map_or(String::new(), |k| {
                format!(" key {:#x}", u32::from_be_bytes(k))
            })
        };
        match self {
            TunnelDev::Vxlan { port, vni } => format!("vxlan port {port} vni {vni}"),
            TunnelDev::Vxlan6 { port, vni } => format!("vxlan6 port {port} vni {vni}"),
            TunnelDev::Gretap {
                remote,
                local,
                key: k,
            } => {
                format!(
                    "gretap remote {} local {}{}",
                    ip(*remote),
                    ip(*local),
                    key(k)
                )
            }
            TunnelDev::Ip6gretap {
                remote,
                local,
                key: k,
            } => format!(
                "ip6gretap remote {} local {}{}",
                super::cells6::ip6(*remote),
                super::cells6::ip6(*local),
                key(k)
            ),
        }
    }
}

/// What the tunnel's receive path found in the outer headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outer {
    pub dev: TunnelDev,
    /// Offset of the inner Ethernet header.
    pub inner: usize,
    /// An outer checksum the receive path validates: the UDP checksum (udp4_csum_init, a
    /// zero one too) or the GRE C bit (gre_parse_header).
    pub outer_csum: bool,
}

/// The bytes gre_parse_header pulls (include/net/gre.h: gre_calc_hlen): the base word,
/// then checksum, key and sequence words as flagged. Not [`Gre::header_len`], which also
/// counts the ACK word of version 1 (PPTP); a version-0 header with the ACK bit set has no
/// such word for the receive path.
pub(super) fn gre_calc_hlen(g: &Gre<&[u8]>) -> usize {
    let word = |present: bool| if present { 4 } else { 0 };
    GRE_BASE_LEN + word(g.checksum_present()) + word(g.key_present()) + word(g.sequence_present())
}

/// The outer IPv4/UDP/VXLAN (to a port in `ports`) or IPv4/GRE/TEB headers of `f`, as
/// vxlan_rcv and gre_parse_header accept them; an IPv6 outer header as
/// [`super::cells6::outer_of_v6`] reads it.
pub fn outer_of(f: &[u8], ports: &[u16]) -> Option<Outer> {
    let eth = ethernet::Packet::new_checked(f).ok()?;
    match eth.ethertype() {
        ETH_P_IPV6 => return super::cells6::outer_of_v6(f, ports),
        ETH_P_IP => {}
        _ => return None,
    }
    // The header as far as it goes (tot_len is not checked: the tap's skb is the frame).
    let ip_bytes = eth.payload();
    let ip = ipv4::Packet::new_unchecked(ip_bytes);
    let ihl = ip_bytes.first().map(|_| ip.header_len())?;
    if ihl < ipv4::HEADER_LEN || ip_bytes.len() < ihl || ip.is_fragment() {
        return None;
    }
    let l4 = &ip_bytes[ihl..];
    let l4_off = ETH_HLEN + ihl;
    let out = match ip.protocol() {
        IPPROTO_UDP => {
            let u = udp::Packet::new_checked(l4).ok()?;
            if !ports.contains(&u.dst_port()) {
                return None;
            }
            let v = VxlanPacket::new_checked(u.payload()).ok()?;
            if v.flags() & VXLAN_HF_VNI == 0 {
                return None;
            }
            Outer {
                dev: TunnelDev::Vxlan {
                    port: u.dst_port(),
                    vni: v.vni(),
                },
                inner: l4_off + udp::HEADER_LEN + VXLAN_HLEN,
                outer_csum: true,
            }
        }
        IPPROTO_GRE => {
            let g = Gre::new_checked(l4).ok()?;
            // gre_parse_header: version 0 (1 is PPTP), no routing; gretap: ETH_P_TEB.
            if g.flags_word() & (GRE_VERSION | GRE_ROUTING) != 0 || g.protocol() != ETH_P_TEB {
                return None;
            }
            let hlen = gre_calc_hlen(&g);
            let key = if g.key_present() {
                Some(g.key()?.to_be_bytes())
            } else {
                None
            };
            (l4.len() >= hlen).then_some(())?;
            Outer {
                dev: TunnelDev::Gretap {
                    remote: ip.src_addr().octets(),
                    local: ip.dst_addr().octets(),
                    key,
                },
                inner: l4_off + hlen,
                outer_csum: g.checksum_present(),
            }
        }
        _ => return None,
    };
    (f.len() >= out.inner + ETH_HLEN).then_some(out)
}

/// The skb as the tunnel device hands it to gro_cells_receive: outer headers pulled
/// (__iptunnel_pull_header), the encapsulation GSO bits and `encapsulation` cleared
/// (iptunnel_pull_offloads), `protocol` from the inner frame (eth_type_trans), one
/// CHECKSUM_UNNECESSARY level used by the outer checksum (__skb_checksum_validate_needed
/// -> __skb_decr_checksum_unnecessary). None when it is not a tunnel skb.
pub fn decapsulate(skb: &SkBuff, ports: &[u16]) -> Option<(Outer, Box<SkBuff>)> {
    let o = outer_of(&skb.bytes(), ports)?;
    let mut s = Box::new(skb.clone());
    // The outer headers are in the linear head (GRO pulled them there); header offsets
    // and csum_start count from head, so the pull leaves them where they point.
    s.pull(o.inner).ok()?;
    s.reset_mac_header();
    s.protocol = crate::ethernet::type_trans(s.linear());
    s.gso_type &= !(gso::GRE
        | gso::GRE_CSUM
        | gso::IPXIP4
        | gso::IPXIP6
        | gso::UDP_TUNNEL
        | gso::UDP_TUNNEL_CSUM);
    s.encapsulation = false;
    s.set_network_header(ETH_HLEN);
    s.inner_mac_header = None;
    s.inner_network_header = None;
    s.inner_transport_header = None;
    s.model.start = None;
    s.model.start_also.clear();
    if o.outer_csum && s.ip_summed == IpSummed::Unnecessary {
        if s.csum_level == 0 {
            s.ip_summed = IpSummed::None;
        } else {
            s.csum_level -= 1;
        }
    }
    Some((o, s))
}

/// One tunnel device: its gro_cell (one CPU) and what its stack received.
#[derive(Debug)]
pub struct TunnelRx {
    pub napi: Napi,
    pub queue: Vec<Box<SkBuff>>,
    pub delivered: Vec<Delivered>,
    /// Its frames carry GRE checksums, so the device has GRE_CSUM in `o_flags` (the real
    /// arm creates it so) and its GRE header is 4 bytes longer.
    pub gre_csum: bool,
}

/// Tunnel deliveries kept for the trace (the trace lists them device by device, so they
/// wait for the end of the run); later ones are only counted ([`GroCells::unlisted`]).
pub const TUNNEL_LISTED_MAX: usize = 4096;

/// Deliveries counted but not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unlisted {
    pub packets: usize,
    pub bytes: usize,
    pub segs: usize,
}

/// The gro_cells stage of a run: every tunnel device's cell.
#[derive(Debug)]
pub struct GroCells {
    pub observer: TapObserver,
    /// NETIF_F_GRO on the tunnel devices (on by default for vxlan and gretap).
    pub feature: bool,
    pub devs: BTreeMap<TunnelDev, TunnelRx>,
    /// Deliveries kept in `devs` so far.
    pub listed: usize,
    /// Deliveries after the first [`TUNNEL_LISTED_MAX`].
    pub unlisted: Unlisted,
    hz: u64,
}

/// Which NAPI a decapsulated skb scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sched {
    Backlog,
    Cell(TunnelDev),
}

impl GroCells {
    pub fn new(observer: TapObserver, hz: u64) -> GroCells {
        GroCells {
            observer,
            feature: true,
            devs: BTreeMap::new(),
            listed: 0,
            unlisted: Unlisted::default(),
            hz,
        }
    }

    fn dev(&mut self, d: TunnelDev) -> &mut TunnelRx {
        let hz = self.hz;
        self.devs.entry(d).or_insert_with(|| TunnelRx {
            napi: Napi::new(0, hz),
            queue: Vec::new(),
            delivered: Vec::new(),
            gre_csum: false,
        })
    }

    /// What the tap's stack received in its polls since the last call (`rx`, in order):
    /// each tap poll's tunnel skbs go to netif_rx or the cells, then those NAPIs run.
    pub fn after_tap_polls(&mut self, cfg: &GroConfig, rx: &[Delivered]) {
        // NETIF_F_GRO_UDP_FWD / NETIF_F_GRO_FRAGLIST are the tap's (`ethtool -K` on the
        // tap), not the tunnel device's.
        let dev_cfg = GroConfig {
            gro_udp_fwd: false,
            gro_fraglist: false,
            ..cfg.clone()
        };
        let cfg = &dev_cfg;
        let mut i = 0;
        while i < rx.len() {
            let poll = rx[i].poll;
            let j = i + rx[i..].iter().take_while(|d| d.poll == poll).count();
            self.one_round(cfg, &rx[i..j]);
            i = j;
        }
    }

    fn one_round(&mut self, cfg: &GroConfig, rx: &[Delivered]) {
        let mut order: Vec<Sched> = Vec::new();
        let mut backlog: Vec<(TunnelDev, Box<SkBuff>)> = Vec::new();
        let mut now = 0;
        for d in rx {
            now = d.ts_ns;
            let Some((outer, skb)) = decapsulate(&d.skb, &cfg.vxlan_ports) else {
                continue;
            };
            let dev = outer.dev;
            self.dev(dev).gre_csum |= outer.outer_csum;
            // iptunnel_pull_offloads unclones a GSO skb; a packet socket's clone of
            // anything else is still alive.
            let cloned = self.observer == TapObserver::AfPacket && skb.gso_size == 0;
            if cloned || !self.feature {
                if !order.contains(&Sched::Backlog) {
                    order.push(Sched::Backlog);
                }
                backlog.push((dev, skb));
            } else {
                let cell = self.dev(dev);
                cell.queue.push(skb);
                if cell.queue.len() == 1 {
                    order.push(Sched::Cell(dev));
                }
            }
        }
        for s in order {
            match s {
                Sched::Backlog => {
                    // process_backlog -> __netif_receive_skb: as it is.
                    for (dev, mut skb) in std::mem::take(&mut backlog) {
                        skb.model.start = Some(if self.feature {
                            CELLS_CLONED
                        } else {
                            super::reason::GRO_OFF
                        });
                        let rx = self.dev(dev);
                        rx.napi.set_time(now);
                        rx.napi.polls += 1;
                        rx.napi.deliver(skb, End::Normal);
                        self.keep(dev);
                    }
                }
                Sched::Cell(dev) => {
                    let rx = self.dev(dev);
                    let maclen = hard_header_len(cfg, dev, rx.gre_csum);
                    if maclen == cfg.hard_header_len {
                        gro_cell_poll(rx, cfg, now);
                    } else {
                        // Only an old ip6gretap: a config of its own for this poll.
                        let dev_cfg = GroConfig {
                            hard_header_len: maclen,
                            ..cfg.clone()
                        };
                        gro_cell_poll(rx, &dev_cfg, now);
                    }
                    self.keep(dev);
                }
            }
        }
    }

    /// Move what `dev`'s stack received to its list (or count it past the limit).
    fn keep(&mut self, dev: TunnelDev) {
        let out = std::mem::take(&mut self.dev(dev).napi.rx);
        for d in out {
            if self.listed < TUNNEL_LISTED_MAX {
                self.listed += 1;
                self.dev(dev).delivered.push(d);
            } else {
                self.unlisted.packets += 1;
                self.unlisted.bytes += d.skb.len();
                self.unlisted.segs += segs(&d.skb);
            }
        }
    }

    /// Every tunnel delivery, device by device (the real arm reads them that way).
    pub fn deliveries(&self) -> impl Iterator<Item = (&TunnelDev, &Delivered)> {
        self.devs
            .iter()
            .flat_map(|(k, v)| v.delivered.iter().map(move |d| (k, d)))
    }
}

/// The tunnel device's dev->hard_header_len: ETH_HLEN (ether_setup), but for an ip6gretap
/// under GroRules::ip6gre_hard_header_len its route device's (the tap: ETH_HLEN) plus
/// t_hlen, the IPv6 header and `ip6gre_calc_hlen`'s GRE header (base word, key and
/// checksum words as its flags say; the arm's devices have no sequence numbers).
fn hard_header_len(cfg: &GroConfig, dev: TunnelDev, gre_csum: bool) -> usize {
    match dev {
        TunnelDev::Ip6gretap { key, .. } if cfg.rules.ip6gre_hard_header_len => {
            let word = |present: bool| if present { 4 } else { 0 };
            ETH_HLEN
                + crate::wire::ipv6::HEADER_LEN
                + GRE_BASE_LEN
                + word(key.is_some())
                + word(gre_csum)
        }
        _ => ETH_HLEN,
    }
}

/// gro_cell_poll: up to NAPI_POLL_WEIGHT queued skbs through napi_gro_receive, then
/// napi_complete_done (gro_flush_timeout 0: complete everything); a full budget flushes
/// and polls again.
fn gro_cell_poll(rx: &mut TunnelRx, cfg: &GroConfig, now: u64) {
    let napi = &mut rx.napi;
    napi.set_time(now);
    let mut queue = std::mem::take(&mut rx.queue).into_iter().peekable();
    loop {
        napi.polls += 1;
        let mut work = 0;
        while work < NAPI_POLL_WEIGHT {
            let Some(skb) = queue.next() else {
                break;
            };
            work += 1;
            match dev_gro_receive(napi, cfg, skb) {
                GroResult::Merged => napi.merged += 1,
                GroResult::Held => napi.held += 1,
                GroResult::Normal => napi.normal += 1,
            }
        }
        if work < NAPI_POLL_WEIGHT || queue.peek().is_none() {
            napi.gro_flush(cfg, false, End::NapiComplete);
            break;
        }
        napi.gro_flush(cfg, napi.hz >= 1000, End::Budget);
    }
}

/// The segments a delivered skb carries: gso_segs for a GSO skb, else 1.
pub fn segs(skb: &SkBuff) -> usize {
    if skb.gso_size == 0 {
        1
    } else {
        usize::from(skb.gso_segs)
    }
}

#[cfg(test)]
#[path = "cells_tests.rs"]
mod tests;
