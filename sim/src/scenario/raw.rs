//! The scenario file as serde reads it, and its conversion into the model's types.
//! Every table denies unknown keys, so a misspelt key is an error that names it.

use std::path::PathBuf;

use serde::Deserialize;

use crate::pipeline::frame_meta::{GsoKind, SkbRecipe};
use crate::skb::IpSummed;
use crate::tun::{DeviceKind, Offloads, TunConfig, VnetEndian, TUN_READQ_SIZE};

use super::limits::{self, in_range};
use super::{Pipeline, WriteOverride, WriterPlan, WriterVnet};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) description: String,
    pub(super) input: PathBuf,
    pub(super) pipeline: Pipeline,
    pub(super) profile: Option<String>,
    pub(super) sim_only: Option<String>,
    pub(super) attach: Option<AttachName>,
    pub(super) device: Option<RawDevice>,
    pub(super) reader: Option<RawReader>,
    pub(super) skb: Option<RawSkb>,
    pub(super) writer: Option<RawWriter>,
    pub(super) xdp: Option<RawXdp>,
    pub(super) redirect: Option<RawDevice>,
    pub(super) gro: Option<crate::gro::plan::RawGro>,
    pub(super) vhost: Option<RawVhost>,
    pub(super) link: Option<RawLink>,
}

/// `[link]`: the Ethernet header synthesized in front of a non-Ethernet capture's frames
/// (raw IP, NULL/LOOP; cooked captures keep their own source address).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLink {
    pub(super) src_mac: Option<String>,
    pub(super) dst_mac: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(super) enum AttachName {
    #[serde(rename = "bridge")]
    Bridge,
    #[serde(rename = "bridge-nf")]
    BridgeNf,
    #[serde(rename = "direct")]
    Direct,
}

impl From<AttachName> for crate::bridge::Attach {
    fn from(a: AttachName) -> Self {
        match a {
            AttachName::Bridge => crate::bridge::Attach::Bridge,
            AttachName::BridgeNf => crate::bridge::Attach::BridgeNf,
            AttachName::Direct => crate::bridge::Attach::Direct,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVhost {
    pub(super) hdr_len: Option<usize>,
    pub(super) fill: Option<FillName>,
    pub(super) burst: Option<usize>,
    pub(super) vnet: Option<RawVnet>,
    #[serde(default)]
    pub(super) packet: Vec<RawPacketOverride>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum FillName {
    All,
    Burst,
    Trickle,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPacketOverride {
    pub(super) index: u64,
    pub(super) vnet: RawVnet,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWriter {
    pub(super) nonblocking: Option<bool>,
    pub(super) vnet: Option<RawVnet>,
    pub(super) pi_proto: Option<u16>,
    #[serde(default)]
    pub(super) write: Vec<RawWriteOverride>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVnet {
    pub(super) flags: Option<u8>,
    pub(super) gso_type: Option<u8>,
    pub(super) hdr_len: Option<u16>,
    pub(super) gso_size: Option<u16>,
    pub(super) csum_start: Option<u16>,
    pub(super) csum_offset: Option<u16>,
    /// virtio_net_hdr_v1_hash_tunnel's two offsets (written only when vnet_hdr_sz >= 24).
    pub(super) outer_th_offset: Option<u16>,
    pub(super) inner_nh_offset: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWriteOverride {
    pub(super) index: u64,
    pub(super) truncate: Option<usize>,
    pub(super) nonblocking: Option<bool>,
    pub(super) vnet: Option<RawVnet>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawXdp {
    pub(super) program: PathBuf,
    pub(super) section: Option<String>,
    pub(super) mode: crate::xdp::XdpMode,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDevice {
    pub(super) kind: Option<Kind>,
    pub(super) no_pi: Option<bool>,
    pub(super) vnet_hdr: Option<bool>,
    pub(super) vnet_hdr_sz: Option<usize>,
    pub(super) vnet_be: Option<bool>,
    pub(super) tx_vlan_offload: Option<RawVlanOffload>,
    pub(super) offloads: Option<Vec<Offload>>,
    pub(super) tx_queue_len: Option<usize>,
    pub(super) up: Option<bool>,
    pub(super) napi: Option<bool>,
    pub(super) napi_frags: Option<bool>,
    pub(super) sndbuf: Option<bool>,
    pub(super) mtu: Option<usize>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Kind {
    Tap,
    Tun,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVlanOffload {
    pub(super) ctag: bool,
    pub(super) stag: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Offload {
    Csum,
    Tso4,
    Tso6,
    TsoEcn,
    Ufo,
    Uso4,
    Uso6,
    UdpTunnelGso,
    UdpTunnelGsoCsum,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReader {
    pub(super) buffers: Option<Vec<usize>>,
    pub(super) fill: Option<u8>,
    pub(super) read_every: Option<usize>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum VlanMode {
    Hwaccel,
    Inband,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Checksum {
    None,
    Unnecessary,
    Partial,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Gso {
    None,
    Tcp,
    UdpL4,
    Ufo,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum Headlen {
    Named(String),
    Bytes(usize),
}

/// The keys `[skb]` and `[[skb.frame]]` share.
#[derive(Debug, Default, Clone)]
pub(super) struct RawSkbFields {
    pub(super) vlan: Option<VlanMode>,
    pub(super) checksum: Option<Checksum>,
    pub(super) gso: Option<Gso>,
    pub(super) gso_size: Option<u16>,
    pub(super) gso_ecn: Option<bool>,
    pub(super) headlen: Option<Headlen>,
}

// No serde(flatten) of RawSkbFields into these two: flatten buffers the table, and an
// error inside it then names neither the key nor its line.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSkb {
    vlan: Option<VlanMode>,
    checksum: Option<Checksum>,
    gso: Option<Gso>,
    gso_size: Option<u16>,
    gso_ecn: Option<bool>,
    headlen: Option<Headlen>,
    #[serde(default)]
    pub(super) frame: Vec<RawFrameOverride>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFrameOverride {
    pub(super) index: u64,
    vlan: Option<VlanMode>,
    checksum: Option<Checksum>,
    gso: Option<Gso>,
    gso_size: Option<u16>,
    gso_ecn: Option<bool>,
    headlen: Option<Headlen>,
}

macro_rules! skb_fields {
    ($t:ty) => {
        impl $t {
            pub(super) fn fields(&self) -> RawSkbFields {
                RawSkbFields {
                    vlan: self.vlan,
                    checksum: self.checksum,
                    gso: self.gso,
                    gso_size: self.gso_size,
                    gso_ecn: self.gso_ecn,
                    headlen: self.headlen.clone(),
                }
            }
        }
    };
}
skb_fields!(RawSkb);
skb_fields!(RawFrameOverride);

/// Deserialize a scenario. toml's own errors span several lines (a source excerpt with a
/// caret) and name no key; this one is `key.path: what (line L, column C)`.
pub(super) fn parse_raw(text: &str) -> Result<RawScenario, String> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let inner = e.inner();
        let msg = inner.message().trim().replace('\n', " ");
        let line = inner.span().map(|span| {
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            (line, column)
        });
        let at = line
            .map(|(l, c)| format!(" (line {l}, column {c})"))
            .unwrap_or_default();
        // serde_path_to_error says "." for the root table, and has no path when the
        // TOML itself is malformed (then the key is the one on the error's line).
        let path = Some(e.path().to_string())
            .filter(|p| !p.is_empty() && p != ".")
            .or_else(|| line.and_then(|(l, _)| key_on_line(text, l)));
        match path {
            Some(p) => format!("{p}: {msg}{at}"),
            None => format!("{msg}{at}"),
        }
    })
}

/// The dotted key assigned on 1-based `line` (`table.key`), if the line is `key = ...`.
fn key_on_line(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let (key, _) = lines.get(line.checked_sub(1)?)?.split_once('=')?;
    let key = key.trim();
    if key.is_empty() || key.starts_with('[') || key.starts_with('#') {
        return None;
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim());
    Some(match table {
        Some(t) => format!("{t}.{key}"),
        None => key.to_string(),
    })
}

impl RawScenario {
    /// The tables the file has, by name.
    pub(super) fn tables(&self) -> [(&'static str, bool); 8] {
        [
            ("device", self.device.is_some()),
            ("reader", self.reader.is_some()),
            ("skb", self.skb.is_some()),
            ("writer", self.writer.is_some()),
            ("xdp", self.xdp.is_some()),
            ("redirect", self.redirect.is_some()),
            ("gro", self.gro.is_some()),
            ("vhost", self.vhost.is_some()),
        ]
    }
}

pub(super) fn vnet_of(v: &RawVnet) -> WriterVnet {
    WriterVnet {
        flags: v.flags.unwrap_or(0),
        gso_type: v.gso_type.unwrap_or(0),
        hdr_len: v.hdr_len.unwrap_or(0),
        gso_size: v.gso_size.unwrap_or(0),
        csum_start: v.csum_start.unwrap_or(0),
        csum_offset: v.csum_offset.unwrap_or(0),
        outer_th_offset: v.outer_th_offset.unwrap_or(0),
        inner_nh_offset: v.inner_nh_offset.unwrap_or(0),
        ..WriterVnet::default()
    }
}

pub(super) fn writer_plan(w: Option<&RawWriter>) -> Result<WriterPlan, String> {
    let Some(w) = w else {
        return Ok(WriterPlan::default());
    };
    Ok(WriterPlan {
        nonblocking: w.nonblocking.unwrap_or(false),
        vnet: w.vnet.as_ref().map(vnet_of).unwrap_or_default(),
        pi_proto: w.pi_proto,
        overrides: w
            .write
            .iter()
            .enumerate()
            .map(|(i, o)| {
                if let Some(t) = o.truncate {
                    let key = format!("write[{i}].truncate");
                    let why = "a write() is at most MAX_RW_COUNT bytes";
                    in_range(&key, t as u64, limits::TRUNCATE, why)?;
                }
                Ok(WriteOverride {
                    index: o.index,
                    truncate: o.truncate,
                    nonblocking: o.nonblocking,
                    vnet: o.vnet.as_ref().map(vnet_of),
                })
            })
            .collect::<Result<_, String>>()?,
    })
}

pub(super) fn device_config(d: &RawDevice) -> Result<TunConfig, String> {
    let mut c = TunConfig::default();
    if let Some(k) = d.kind {
        c.kind = match k {
            Kind::Tap => DeviceKind::Tap,
            Kind::Tun => DeviceKind::Tun,
        };
    }
    c.no_pi = d.no_pi.unwrap_or(false);
    c.vnet_hdr = d.vnet_hdr.unwrap_or(false);
    if let Some(sz) = d.vnet_hdr_sz {
        in_range(
            "device.vnet_hdr_sz",
            sz as u64,
            limits::VNET_HDR_SZ,
            "TUNSETVNETHDRSZ refuses below sizeof(struct virtio_net_hdr) with EINVAL",
        )?;
        if !c.vnet_hdr {
            return Err("device.vnet_hdr_sz: set without vnet_hdr = true".into());
        }
        c.vnet_hdr_sz = sz;
    }
    if d.vnet_be == Some(true) {
        c.vnet_endian = VnetEndian::Big;
    }
    if let Some(v) = &d.tx_vlan_offload {
        c.tx_vlan_ctag = v.ctag;
        c.tx_vlan_stag = v.stag;
    }
    for o in d.offloads.iter().flatten() {
        let f = &mut c.offloads;
        match o {
            Offload::Csum => f.csum = true,
            Offload::Tso4 => f.tso4 = true,
            Offload::Tso6 => f.tso6 = true,
            Offload::TsoEcn => f.tso_ecn = true,
            Offload::Ufo => f.ufo = true,
            Offload::Uso4 => f.uso4 = true,
            Offload::Uso6 => f.uso6 = true,
            Offload::UdpTunnelGso => f.udp_tunnel_gso = true,
            Offload::UdpTunnelGsoCsum => f.udp_tunnel_gso_csum = true,
        }
    }
    let o = c.offloads;
    if (o.udp_tunnel_gso && !(o.tso4 || o.tso6 || o.uso4))
        || (o.udp_tunnel_gso_csum && !o.udp_tunnel_gso)
    {
        // tun.c: set_offload takes the tunnel bits only with a PLAIN_GSO feature, the CSUM
        // one only with UDP_TUNNEL_GSO; otherwise EINVAL (docs/tun-ioctl.md#setoffload).
        return Err("device.offloads: \"udp_tunnel_gso\" needs \"tso4\", \"tso6\" or \"uso4\"+\"uso6\", and \"udp_tunnel_gso_csum\" needs \"udp_tunnel_gso\" (TUNSETOFFLOAD refuses them otherwise with EINVAL)".into());
    }
    if c.offloads.uso4 != c.offloads.uso6 {
        // tun.c: set_offload turns on NETIF_F_GSO_UDP_L4 only for both bits; one alone is
        // -EINVAL (seen on 6.18: TUNSETOFFLOAD 0x21 fails).
        return Err("device.offloads: \"uso4\" and \"uso6\" go together (TUNSETOFFLOAD refuses one alone with EINVAL)".into());
    }
    if c.offloads != Offloads::default() && !c.offloads.csum {
        // tun.c: set_offload ignores TSO/UFO/USO bits unless TUN_F_CSUM is set.
        return Err("device.offloads: GSO offloads need \"csum\" too (tun.c: set_offload)".into());
    }
    c.up = d.up.unwrap_or(true);
    c.napi = d.napi.unwrap_or(false);
    c.napi_frags = d.napi_frags.unwrap_or(false);
    if c.napi && c.kind == DeviceKind::Tun {
        // tun.c: tun_set_iff allows IFF_NAPI on a tun; the model's GRO does not take it.
        return Err(tun_gro_unmodelled("device.napi"));
    }
    if c.napi_frags {
        // tun.c: tun_set_iff: IFF_NAPI_FRAGS needs IFF_NAPI on a tap, else -EINVAL.
        if d.napi == Some(false) || c.kind != DeviceKind::Tap {
            return Err("device.napi_frags: needs a tap with napi (tun_set_iff refuses IFF_NAPI_FRAGS otherwise, EINVAL)".into());
        }
        c.napi = true;
    }
    c.sndbuf_set = d.sndbuf.unwrap_or(false);
    if let Some(m) = d.mtu {
        let name = match c.kind {
            DeviceKind::Tap => "a tap",
            DeviceKind::Tun => "a tun",
        };
        let why = format!("the min_mtu..=max_mtu of {name}; dev_set_mtu refuses others");
        in_range("device.mtu", m as u64, limits::mtu_range(c.kind), &why)?;
        c.mtu = m;
    }
    if let Some(q) = d.tx_queue_len {
        let why = "dev->tx_queue_len sizes the tx_ring; ptr_ring refuses more";
        in_range("device.tx_queue_len", q as u64, limits::TX_QUEUE_LEN, why)?;
        c.tx_queue_len = q;
    } else {
        c.tx_queue_len = TUN_READQ_SIZE;
    }
    Ok(c)
}

pub(super) fn recipe(f: &RawSkbFields, base: &SkbRecipe) -> Result<SkbRecipe, String> {
    let mut r = *base;
    if let Some(v) = f.vlan {
        r.vlan_hwaccel = matches!(v, VlanMode::Hwaccel);
    }
    if let Some(c) = f.checksum {
        r.checksum = match c {
            Checksum::None => IpSummed::None,
            Checksum::Unnecessary => IpSummed::Unnecessary,
            Checksum::Partial => IpSummed::Partial,
        };
    }
    if let Some(g) = f.gso {
        r.gso = match g {
            Gso::None => GsoKind::None,
            Gso::Tcp => GsoKind::Tcp,
            Gso::UdpL4 => GsoKind::UdpL4,
            Gso::Ufo => GsoKind::Ufo,
        };
        if r.gso != GsoKind::None && r.headlen.is_none() && f.headlen.is_none() {
            // A sender's TSO skb has its headers linear and the payload in pages.
            r.headlen = Some(None);
        }
    }
    if let Some(s) = f.gso_size {
        r.gso_size = s;
    }
    if let Some(e) = f.gso_ecn {
        r.gso_ecn = e;
    }
    if let Some(h) = &f.headlen {
        r.headlen = match h {
            Headlen::Named(s) if s == "all" => None,
            Headlen::Named(s) if s == "headers" => Some(None),
            Headlen::Named(s) => {
                return Err(format!(
                    "headlen: \"{s}\" is not \"all\", \"headers\" or a byte count"
                ))
            }
            Headlen::Bytes(n) => {
                let why = "skb_headlen is an unsigned int";
                in_range("headlen", *n as u64, limits::HEADLEN, why)?;
                Some(Some(*n))
            }
        };
    }
    if r.gso != GsoKind::None && r.gso_size == 0 {
        return Err("gso_size: a GSO skb needs gso_size > 0".into());
    }
    if r.gso != GsoKind::None && r.checksum != IpSummed::Partial {
        return Err(
            "checksum: a GSO skb is always CHECKSUM_PARTIAL; set checksum = \"partial\"".into(),
        );
    }
    Ok(r)
}

/// Why a tun device cannot have GRO here, as the one-line error for `what`: the kernel
/// allows IFF_NAPI on IFF_TUN (tun.c: tun_set_iff checks only IFF_NAPI_FRAGS), but the
/// model's GRO (sim/src/gro: dev_gro_receive, the gro_complete callbacks, BIG TCP) takes
/// the network header at ETH_HLEN, and a tun skb has no MAC header
/// (docs/tap-write.md#tun-device).
pub(super) fn tun_gro_unmodelled(what: &str) -> String {
    format!(
        "{what}: GRO on a tun device is not modelled (the kernel allows IFF_NAPI on IFF_TUN, \
         but the model's dev_gro_receive starts at an Ethernet header and a tun skb has none)"
    )
}
