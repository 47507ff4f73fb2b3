//! What write() on a tun/tap fd does: tun_chr_write_iter -> tun_get_user
//! (drivers/net/tun.c), with the build_skb/XDP split of tun_build_skb and the generic
//! XDP fallback. Rules: docs/tap-write.md (docs/tap-write.md#parse to
//! docs/tap-write.md#delivery) and the table of the three XDP regimes measured on the
//! real kernel, docs/real-kernel.md#xdp-regimes.

use crate::consts::{
    skb_data_align, PAGE_SIZE, SKB_SHARED_INFO_ALIGNED, TUN_RX_PAD, VLAN_VID_MASK,
    XDP_PACKET_HEADROOM,
};
use crate::consts::{ETH_HLEN, ETH_P_IP, ETH_P_IPV6};
use crate::errno::Errno;
pub(crate) use crate::ethernet::eth_type_trans;
use crate::net::{Delivery, Net};
use crate::profile::{TunReadRules, TunWriteRules};
use crate::skb::SkBuff;
use crate::wire::virtio_net_hdr::{
    VirtioNetHdr, VirtioNetHdrRepr, VnetHdrLayout, VIRTIO_NET_HDR_F_NEEDS_CSUM,
    VIRTIO_NET_HDR_GSO_NONE, VIRTIO_NET_HDR_TUNNEL_LEN,
};
use crate::wire::vlan::eth_type_vlan;
use crate::wire::TunPi;
use crate::xdp::tun_build_skb::{tun_build_skb_native, NativeResult};
use crate::xdp::XdpMode;

use super::vnet_tnl::vnet_hdr_tnl_to_skb;
pub(crate) use super::vnet_to_skb::vnet_hdr_to_skb;
use super::{DeviceKind, TunConfig};
use crate::consts::TUN_PI_LEN;

/// How the write was issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOpts {
    /// O_NONBLOCK (or MSG_DONTWAIT): the only way to get build_skb and native XDP.
    pub nonblocking: bool,
    /// tfile->queue_index of the file written: the XDP rxq's queue_index (tun_build_skb:
    /// xdp_init_buff with &tfile->xdp_rxq) and the rx queue tun_get_user records
    /// (skb_record_rx_queue). A TUNSETQUEUE-detached file keeps the index it had
    /// (__tun_detach renumbers only the file moved into its slot). 0 for one queue.
    pub rx_queue: u16,
    /// The file was detached by TUNSETQUEUE (tfile->detached): tun_get_user still takes
    /// the write, but an IFF_NAPI file's NAPI is disabled.
    pub detached: bool,
}

/// Which allocation path tun_get_user took (docs/tap-write.md#path-choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritePath {
    BuildSkb,
    AllocSkb,
    NapiFrags,
}

impl WritePath {
    pub fn name(self) -> &'static str {
        match self {
            WritePath::BuildSkb => "build_skb",
            WritePath::AllocSkb => "alloc_skb",
            WritePath::NapiFrags => "napi_frags",
        }
    }
}

/// Where XDP ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpWhere {
    /// tun_build_skb, driver mode.
    Native,
    /// tun_get_user's do_xdp_generic: a driver-mode program on a write that missed
    /// build_skb (blocking, too big, GSO, NAPI_FRAGS, sndbuf set).
    TunGeneric,
    /// The core's do_xdp_generic for an xdpgeneric (SKB_MODE) attachment.
    CoreGeneric,
}

impl XdpWhere {
    pub fn name(self) -> &'static str {
        match self {
            XdpWhere::Native => "native",
            XdpWhere::TunGeneric => "generic (tun fallback)",
            XdpWhere::CoreGeneric => "generic (xdpgeneric)",
        }
    }
}

/// One XDP run during a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpReport {
    pub place: XdpWhere,
    /// The program's return value (an unknown value is reported as is).
    pub action: u32,
    pub len_before: usize,
    pub len_after: usize,
    pub redirect_to: Option<u32>,
    pub insns: u64,
}

/// What became of the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Refused before any skb existed (docs/tap-write.md#parse): no counter moves.
    Rejected,
    /// Delivered to the stack.
    Stack,
    /// XDP_DROP, XDP_ABORTED or an unknown verdict.
    XdpDropped,
    /// Sent back out of the same tap (as an xdp_frame natively, as an skb generically).
    XdpTx,
    /// Sent to another device.
    XdpRedirected { ifindex: u32 },
    /// XDP_TX or XDP_REDIRECT failed.
    XdpError(Errno),
    /// Dropped by tun after the skb was built (device down, bad vnet header, bad protocol).
    Dropped(&'static str),
}

/// Everything one write() did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    pub result: Result<usize, Errno>,
    pub path: Option<WritePath>,
    pub xdp: Vec<XdpReport>,
    pub fate: Fate,
}

impl WriteOutcome {
    fn rejected(e: Errno) -> WriteOutcome {
        WriteOutcome {
            result: Err(e),
            path: None,
            xdp: Vec::new(),
            fate: Fate::Rejected,
        }
    }

    /// Dropped by tun after the skb was built: the write fails with `e`.
    fn dropped(mut self, e: Errno, why: &'static str) -> WriteOutcome {
        self.result = Err(e);
        self.fate = Fate::Dropped(why);
        self
    }
}

/// virtio_net_hdr_to_skb (docs/tap-write.md#delivery), through
/// virtio_net_hdr_tnl_to_skb from 6.17 (docs/tap-write.md#vnet-tunnel) when the profile
/// has it; `tnl`: the 24-byte header was negotiated.
fn vnet_to_skb(
    skb: &mut SkBuff,
    gso: &VirtioNetHdrRepr,
    kind: DeviceKind,
    rules: &TunWriteRules,
    tnl: bool,
) -> Result<(), &'static str> {
    let is_tap = kind == DeviceKind::Tap;
    if rules.vnet_udp_tunnel {
        vnet_hdr_tnl_to_skb(skb, gso, rules, is_tap, tnl)
    } else {
        vnet_hdr_to_skb(skb, gso, rules, is_tap)
    }
}

/// What a write's fate says when [`napi_detached`] refused it.
pub(crate) const NAPI_DETACHED: &str = "IFF_NAPI file detached: NAPI disabled";

/// A TUNSETQUEUE-detached file whose NAPI hand-off would take the skb (`napi`): __tun_detach
/// disabled the file's NAPI (tun_napi_disable), and tun's hand-offs answer -EBUSY before
/// any counter: tun_get_user's NAPI branch checks tfile->detached, its IFF_NAPI_FRAGS
/// branch finds napi_schedule_prep false, tun_xdp_one's NAPI branch (v5.18+) checks
/// tfile->detached (docs/tap-write.md#multiqueue, docs/vhost-tx.md#multiqueue).
pub(crate) fn napi_detached(file: WriteOpts, napi: bool) -> bool {
    file.detached && napi
}

/// An error of the scenario, not of the kernel: a program the VM could not run (the
/// verifier would have refused it), or a device that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

/// The parsed PI and vnet header of a write (docs/tap-write.md#parse).
struct Parsed {
    pi_proto: Option<u16>,
    gso: VirtioNetHdrRepr,
    /// Offset of the frame in the write.
    frame_start: usize,
}

/// tun_can_build_skb (docs/tap-write.md#path-choice): the page-frag fits the frame, the pads
/// and the shared info.
pub fn can_build_skb(len: usize, rules: &TunWriteRules) -> bool {
    let headroom = if rules.build_skb_counts_xdp_headroom {
        TUN_RX_PAD + XDP_PACKET_HEADROOM
    } else {
        TUN_RX_PAD
    };
    skb_data_align(len + headroom) + SKB_SHARED_INFO_ALIGNED <= PAGE_SIZE
}

/// tun_get_user's checks before any skb exists: a tap frame shorter than an Ethernet
/// header, or a vnet hdr_len inside it, is EINVAL; a profile that checks the device state
/// first refuses a down device with EIO (docs/tap-write.md#parse).
fn tun_write_early_checks(
    cfg: &TunConfig,
    len: usize,
    gso: &VirtioNetHdrRepr,
    rules: &TunWriteRules,
) -> Result<(), Errno> {
    if cfg.kind == DeviceKind::Tap
        && (len < ETH_HLEN || (gso.hdr_len != 0 && usize::from(gso.hdr_len) < ETH_HLEN))
    {
        return Err(Errno::EINVAL);
    }
    if rules.down_check_first && !cfg.up {
        return Err(Errno::EIO);
    }
    Ok(())
}

/// docs/tap-write.md#path-choice: the allocation path tun_get_user takes.
fn tun_write_path(
    cfg: &TunConfig,
    opts: WriteOpts,
    len: usize,
    rules: &TunWriteRules,
) -> WritePath {
    if cfg.napi_frags {
        WritePath::NapiFrags
    } else if cfg.kind == DeviceKind::Tap
        && !cfg.sndbuf_set
        && opts.nonblocking
        && can_build_skb(len, rules)
    {
        WritePath::BuildSkb
    } else {
        WritePath::AllocSkb
    }
}

/// tun_get_user + tun_alloc_skb: the linear part is the vnet hdr_len (capped at
/// good_linear), except that a packet under a page with its tun->align (NET_SKB_PAD)
/// prepad, or one without hdr_len, is copied in whole.
fn tun_alloc_skb_linear(len: usize, hdr_len: u16) -> usize {
    let good_linear = PAGE_SIZE - SKB_SHARED_INFO_ALIGNED - TUN_RX_PAD;
    let hdr_len = usize::from(hdr_len).min(good_linear);
    if TUN_RX_PAD + len < PAGE_SIZE || hdr_len == 0 {
        len
    } else {
        hdr_len
    }
}

/// The protocol: eth_type_trans for tap; for tun the PI or the version nibble, with no
/// eth_type_trans: skb_reset_mac_header at the first byte of the packet, skb->protocol =
/// pi.proto (tun.c: tun_get_user, IFF_TUN). False when a tun packet has neither.
fn tun_set_protocol(skb: &mut SkBuff, kind: DeviceKind, pi_proto: Option<u16>) -> bool {
    if kind == DeviceKind::Tap {
        eth_type_trans(skb);
        return true;
    }
    let proto = pi_proto.or_else(|| match skb.byte(0).map(|b| b >> 4) {
        Some(4) => Some(ETH_P_IP),
        Some(6) => Some(ETH_P_IPV6),
        _ => None,
    });
    match proto {
        Some(p) => {
            skb.reset_mac_header();
            skb.protocol = p;
            true
        }
        None => false,
    }
}

impl Net {
    /// write(fd, bytes) on the tap at `ifindex`.
    pub fn tun_write(
        &mut self,
        ifindex: u32,
        bytes: &[u8],
        opts: WriteOpts,
        rules: &TunWriteRules,
        read_rules: &TunReadRules,
    ) -> Result<WriteOutcome, ModelError> {
        // The skb the write builds, in a reused buffer.
        let mut skb = self.spare_skbs.take();
        let out = self.tun_write_skb(&mut skb, ifindex, bytes, opts, rules, read_rules);
        self.spare_skbs.give(skb);
        out
    }

    fn tun_write_skb(
        &mut self,
        skb: &mut SkBuff,
        ifindex: u32,
        bytes: &[u8],
        opts: WriteOpts,
        rules: &TunWriteRules,
        read_rules: &TunReadRules,
    ) -> Result<WriteOutcome, ModelError> {
        let dev = self
            .dev(ifindex)
            .ok_or_else(|| ModelError(format!("no device with ifindex {ifindex}")))?;
        let cfg = dev.config.clone();
        let prog_mode = dev.xdp.as_ref().map(|a| a.mode);
        // tun_vnet_hdr_guest_features: the tunnel header is "negotiated" by the size.
        let tnl = rules.vnet_udp_tunnel && cfg.vnet_hdr_sz >= VIRTIO_NET_HDR_TUNNEL_LEN;
        let parsed = match parse_write(bytes, &cfg, read_rules, tnl) {
            Ok(p) => p,
            Err(e) => return Ok(WriteOutcome::rejected(e)),
        };
        let frame = &bytes[parsed.frame_start..];
        let len = frame.len();
        if let Err(e) = tun_write_early_checks(&cfg, len, &parsed.gso, rules) {
            return Ok(WriteOutcome::rejected(e));
        }
        let path = tun_write_path(&cfg, opts, len, rules);
        let build = path == WritePath::BuildSkb;
        let mut out = WriteOutcome {
            result: Ok(bytes.len()),
            path: Some(path),
            xdp: Vec::new(),
            fate: Fate::Stack,
        };

        // A driver-mode program runs natively only in build_skb without GSO; otherwise
        // the skb is marked for generic XDP inside tun (docs/tap-write.md#build-skb,
        // docs/tap-write.md#generic-xdp).
        let mut tun_generic = rules.xdp && prog_mode == Some(XdpMode::Native);
        if build && tun_generic && parsed.gso.gso_type == VIRTIO_NET_HDR_GSO_NONE {
            tun_generic = false;
            if self.tun_build_skb_xdp(skb, ifindex, frame, opts.rx_queue, rules, &mut out)? {
                return Ok(out);
            }
        } else {
            let linear = if build {
                len
            } else {
                tun_alloc_skb_linear(len, parsed.gso.hdr_len)
            };
            skb.reuse_from_frame(frame, TUN_RX_PAD, linear);
        }
        // tun_get_user: skb_record_rx_queue(skb, tfile->queue_index).
        skb.queue_mapping = opts.rx_queue.saturating_add(1);

        // virtio_net_hdr_to_skb (docs/tap-write.md#delivery), through
        // virtio_net_hdr_tnl_to_skb from 6.17 (docs/tap-write.md#vnet-tunnel): failure is
        // rx_frame_errors.
        if let Err(why) = vnet_to_skb(skb, &parsed.gso, cfg.kind, rules, tnl) {
            self.stats_mut(ifindex).rx_frame_errors += 1;
            return Ok(out.dropped(Errno::EINVAL, why));
        }

        if !tun_set_protocol(skb, cfg.kind, parsed.pi_proto) {
            self.stats_mut(ifindex).rx_dropped += 1;
            return Ok(out.dropped(Errno::EINVAL, "no IPv4/IPv6 version nibble"));
        }

        // Generic XDP inside tun (do_xdp_generic before delivery): a non-PASS verdict
        // ends the write with the full count and no rx stats (docs/tap-write.md#generic-xdp).
        if tun_generic {
            let (report, pass) = self.generic_xdp(ifindex, skb, XdpWhere::TunGeneric)?;
            out.xdp.push(report);
            if let Some(fate) = pass {
                out.fate = fate;
                return Ok(out);
            }
        }

        if !cfg.up {
            self.stats_mut(ifindex).rx_dropped += 1;
            return Ok(out.dropped(Errno::EIO, "device down"));
        }

        if napi_detached(opts, cfg.napi || cfg.napi_frags) {
            return Ok(out.dropped(Errno::EBUSY, NAPI_DETACHED));
        }

        // Hand off (tun/napi.rs): IFF_NAPI queues for GRO; otherwise netif_receive_skb,
        // where an xdpgeneric program runs in the core. tun counts the packet whatever
        // the verdict.
        let rx = self.tun_rx(ifindex, skb, super::napi::RxFrom::GetUser, build, rules)?;
        out.xdp.extend(rx.xdp);
        if let Some(f) = rx.fate {
            out.fate = f;
        }
        let st = self.stats_mut(ifindex);
        st.rx_packets += 1;
        st.rx_bytes += len as u64;
        Ok(out)
    }

    /// tun_build_skb with a driver-mode program run natively (docs/tap-write.md#build-skb):
    /// true when the verdict consumed the frame, else `skb` is the passed frame.
    fn tun_build_skb_xdp(
        &mut self,
        skb: &mut SkBuff,
        ifindex: u32,
        frame: &[u8],
        rx_queue: u16,
        rules: &TunWriteRules,
        out: &mut WriteOutcome,
    ) -> Result<bool, ModelError> {
        match tun_build_skb_native(self, ifindex, frame, rx_queue, rules)? {
            NativeResult::Consumed(report, fate) => {
                out.xdp.push(report);
                out.fate = fate;
                Ok(true)
            }
            NativeResult::Pass(report, s) => {
                out.xdp.push(report);
                *skb = *s;
                Ok(false)
            }
        }
    }

    pub(crate) fn stats_mut(&mut self, ifindex: u32) -> &mut super::TunStats {
        &mut self
            .devices
            .get_mut(&ifindex)
            .expect("device checked at the start of the write")
            .stats
    }

    /// __netif_receive_skb_core: the receive path untags an outer 802.1Q/802.1ad tag,
    /// then the packet taps see the frame.
    ///
    /// A tagged frame goes on without the taps (pt_prev is reset before vlan_do_receive)
    /// and finds no VLAN device (none is modelled): a priority tag (VID 0) over another
    /// tag is untagged again (check_vlan_id), then the tag is cleared and the frame needs
    /// a ptype_base handler for skb->protocol, or it is dropped and counted in
    /// rx_dropped (dev_core_stats_rx_dropped_inc): a QinQ frame (inner ETH_P_8021Q), a raw
    /// 802.3 frame in a tag. An untagged frame always has the taps as its handler.
    pub(crate) fn deliver(&mut self, ifindex: u32, skb: &mut SkBuff) {
        if skb.vlan.is_none() {
            skb.vlan_untag();
        }
        if self.keep_skbs {
            self.delivered_skbs.push((ifindex, skb.clone()));
        }
        // A recycled buffer: a long replay allocates none per frame.
        let mut frame = self.spare_frames.take_buf(skb.len());
        skb.append_to(&mut frame);
        self.stack.push(Delivery {
            ifindex,
            frame,
            vlan: skb.vlan,
            protocol: skb.protocol,
        });
        if skb.vlan.is_none() {
            return;
        }
        while skb.vlan.is_some_and(|t| t.tci & VLAN_VID_MASK == 0) && eth_type_vlan(skb.protocol) {
            // __vlan_hwaccel_clear_tag + skb_vlan_untag; a frame too short for the next
            // tag is freed without a count.
            skb.vlan = None;
            if !skb.vlan_untag() {
                return;
            }
        }
        if !crate::net::has_ptype_handler(skb.protocol) {
            self.stats_mut(ifindex).rx_dropped += 1;
        }
    }
}

/// docs/tap-write.md#parse: the PI and the vnet header. Errors here change no counter.
/// `tnl`: the whole 24-byte virtio_net_hdr_v1_hash_tunnel is parsed
/// (drivers/net/tun_vnet.h: __tun_vnet_hdr_get with tun_vnet_parse_size), else the first
/// 10 bytes.
fn parse_write(
    bytes: &[u8],
    cfg: &super::TunConfig,
    read_rules: &TunReadRules,
    tnl: bool,
) -> Result<Parsed, Errno> {
    let mut pos = 0;
    let mut pi_proto = None;
    if !cfg.no_pi {
        let pi = TunPi::new_checked(bytes).map_err(|_| Errno::EINVAL)?;
        pi_proto = Some(pi.proto());
        pos = TUN_PI_LEN;
    }
    let mut gso = VirtioNetHdrRepr::default();
    if cfg.vnet_hdr {
        let sz = cfg.vnet_hdr_sz;
        if bytes.len() - pos < sz {
            return Err(Errno::EINVAL);
        }
        let endian = if read_rules.vnet_endian_selectable {
            cfg.vnet_endian
        } else {
            super::VnetEndian::Little
        };
        let layout = if tnl {
            VnetHdrLayout::HashTunnel
        } else {
            VnetHdrLayout::Basic
        };
        let view = VirtioNetHdr::new_checked(&bytes[pos..pos + sz], layout, endian)
            .map_err(|_| Errno::EINVAL)?;
        gso = VirtioNetHdrRepr::parse(&view).map_err(|_| Errno::EINVAL)?;
        raise_hdr_len_for_csum(&mut gso);
        pos += sz;
        if usize::from(gso.hdr_len) > bytes.len() - pos {
            return Err(Errno::EINVAL);
        }
    }
    Ok(Parsed {
        pi_proto,
        gso,
        frame_start: pos,
    })
}

/// With NEEDS_CSUM, hdr_len is raised to cover the checksum field: csum_start +
/// csum_offset + 2 (tun_vnet.h: __tun_vnet_hdr_get; drivers/vhost/net.c:
/// vhost_net_build_xdp does the same).
pub(crate) fn raise_hdr_len_for_csum(gso: &mut VirtioNetHdrRepr) {
    if gso.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 {
        let need = u32::from(gso.csum_start) + u32::from(gso.csum_offset) + 2;
        if need > u32::from(gso.hdr_len) {
            gso.hdr_len = need.min(u32::from(u16::MAX)) as u16;
        }
    }
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "write_tun_tests.rs"]
mod tun_tests;
