//! TEMPORARY: the parser before serde + TryFrom (raw.rs and Scenario::parse as they were),
//! kept only for the test that compares both on every scenario; removed after.
#![allow(dead_code, clippy::all)]

use std::path::PathBuf;

use serde::Deserialize;

use crate::pipeline::frame_meta::{GsoKind, SkbRecipe};
use crate::skb::IpSummed;
use crate::tun::{DeviceKind, Offloads, TunConfig, VnetEndian, TUN_READQ_SIZE};

use crate::profile::KernelProfile;
use crate::scenario::limits::{self, in_range};
use crate::scenario::*;
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub(crate) description: String,
    pub(crate) input: PathBuf,
    pub(crate) pipeline: Pipeline,
    pub(crate) profile: Option<String>,
    pub(crate) sim_only: Option<String>,
    pub(crate) attach: Option<AttachName>,
    pub(crate) device: Option<RawDevice>,
    pub(crate) reader: Option<RawReader>,
    pub(crate) skb: Option<RawSkb>,
    pub(crate) writer: Option<RawWriter>,
    pub(crate) xdp: Option<RawXdp>,
    pub(crate) redirect: Option<RawDevice>,
    pub(crate) gro: Option<crate::gro::plan::RawGro>,
    pub(crate) vhost: Option<RawVhost>,
    pub(crate) link: Option<RawLink>,
}

/// `[link]`: the Ethernet header synthesized in front of a non-Ethernet capture's frames
/// (raw IP, NULL/LOOP; cooked captures keep their own source address).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLink {
    pub(crate) src_mac: Option<String>,
    pub(crate) dst_mac: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) enum AttachName {
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
pub(crate) struct RawVhost {
    pub(crate) hdr_len: Option<usize>,
    pub(crate) fill: Option<FillName>,
    pub(crate) burst: Option<usize>,
    pub(crate) vnet: Option<RawVnet>,
    #[serde(default)]
    pub(crate) packet: Vec<RawPacketOverride>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FillName {
    All,
    Burst,
    Trickle,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPacketOverride {
    pub(crate) index: u64,
    pub(crate) vnet: RawVnet,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWriter {
    pub(crate) nonblocking: Option<bool>,
    pub(crate) vnet: Option<RawVnet>,
    pub(crate) pi_proto: Option<u16>,
    #[serde(default)]
    pub(crate) write: Vec<RawWriteOverride>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVnet {
    pub(crate) flags: Option<u8>,
    pub(crate) gso_type: Option<u8>,
    pub(crate) hdr_len: Option<u16>,
    pub(crate) gso_size: Option<u16>,
    pub(crate) csum_start: Option<u16>,
    pub(crate) csum_offset: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWriteOverride {
    pub(crate) index: u64,
    pub(crate) truncate: Option<usize>,
    pub(crate) nonblocking: Option<bool>,
    pub(crate) vnet: Option<RawVnet>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawXdp {
    pub(crate) program: PathBuf,
    pub(crate) section: Option<String>,
    pub(crate) mode: crate::xdp::XdpMode,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDevice {
    pub(crate) kind: Option<Kind>,
    pub(crate) no_pi: Option<bool>,
    pub(crate) vnet_hdr: Option<bool>,
    pub(crate) vnet_hdr_sz: Option<usize>,
    pub(crate) vnet_be: Option<bool>,
    pub(crate) tx_vlan_offload: Option<RawVlanOffload>,
    pub(crate) offloads: Option<Vec<Offload>>,
    pub(crate) tx_queue_len: Option<usize>,
    pub(crate) up: Option<bool>,
    pub(crate) napi: Option<bool>,
    pub(crate) napi_frags: Option<bool>,
    pub(crate) sndbuf: Option<bool>,
    pub(crate) mtu: Option<usize>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    Tap,
    Tun,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVlanOffload {
    pub(crate) ctag: bool,
    pub(crate) stag: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Offload {
    Csum,
    Tso4,
    Tso6,
    TsoEcn,
    Ufo,
    Uso4,
    Uso6,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReader {
    pub(crate) buffers: Option<Vec<usize>>,
    pub(crate) fill: Option<u8>,
    pub(crate) read_every: Option<usize>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum VlanMode {
    Hwaccel,
    Inband,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Checksum {
    None,
    Unnecessary,
    Partial,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Gso {
    None,
    Tcp,
    UdpL4,
    Ufo,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum Headlen {
    Named(String),
    Bytes(usize),
}

/// The keys `[skb]` and `[[skb.frame]]` share.
#[derive(Debug, Default, Clone)]
pub(crate) struct RawSkbFields {
    pub(crate) vlan: Option<VlanMode>,
    pub(crate) checksum: Option<Checksum>,
    pub(crate) gso: Option<Gso>,
    pub(crate) gso_size: Option<u16>,
    pub(crate) gso_ecn: Option<bool>,
    pub(crate) headlen: Option<Headlen>,
}

// No serde(flatten) of RawSkbFields into these two: flatten buffers the table, and an
// error inside it then names neither the key nor its line.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSkb {
    vlan: Option<VlanMode>,
    checksum: Option<Checksum>,
    gso: Option<Gso>,
    gso_size: Option<u16>,
    gso_ecn: Option<bool>,
    headlen: Option<Headlen>,
    #[serde(default)]
    pub(crate) frame: Vec<RawFrameOverride>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFrameOverride {
    pub(crate) index: u64,
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
            pub(crate) fn fields(&self) -> RawSkbFields {
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
pub(crate) fn parse_raw(text: &str) -> Result<RawScenario, String> {
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
    pub(crate) fn tables(&self) -> [(&'static str, bool); 8] {
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

pub(crate) fn vnet_of(v: &RawVnet) -> WriterVnet {
    WriterVnet {
        flags: v.flags.unwrap_or(0),
        gso_type: v.gso_type.unwrap_or(0),
        hdr_len: v.hdr_len.unwrap_or(0),
        gso_size: v.gso_size.unwrap_or(0),
        csum_start: v.csum_start.unwrap_or(0),
        csum_offset: v.csum_offset.unwrap_or(0),
        ..WriterVnet::default()
    }
}

pub(crate) fn writer_plan(w: Option<&RawWriter>) -> Result<WriterPlan, String> {
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

pub(crate) fn device_config(d: &RawDevice) -> Result<TunConfig, String> {
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
        }
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

pub(crate) fn recipe(f: &RawSkbFields, base: &SkbRecipe) -> Result<SkbRecipe, String> {
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
pub(crate) fn tun_gro_unmodelled(what: &str) -> String {
    format!(
        "{what}: GRO on a tun device is not modelled (the kernel allows IFF_NAPI on IFF_TUN, \
         but the model's dev_gro_receive starts at an Ethernet header and a tun skb has none)"
    )
}

/// `[reader]` checked: every buffer within [`limits::MAX_READ_BUFFER`].
fn reader_plan(r: &RawReader) -> Result<ReaderPlan, String> {
    let reader = ReaderPlan {
        buffers: r.buffers.clone().unwrap_or_else(|| vec![65536]),
        fill: r.fill.unwrap_or(0xee),
        read_every: r.read_every.unwrap_or(1),
    };
    if reader.buffers.is_empty() {
        return Err("reader.buffers: needs at least one size".into());
    }
    for (i, &b) in reader.buffers.iter().enumerate() {
        let why = "no packet tun_put_user writes is larger, and the model allocates each buffer";
        in_range(
            &format!("reader.buffers[{i}]"),
            b as u64,
            (0, limits::MAX_READ_BUFFER),
            why,
        )?;
    }
    if reader.buffers.last() == Some(&0) {
        return Err(
            "reader.buffers: the last size repeats, so it must be > 0 (read(0) never dequeues)"
                .into(),
        );
    }
    let why = "a count of transmitted frames";
    in_range(
        "reader.read_every",
        reader.read_every as u64,
        limits::READ_EVERY,
        why,
    )?;
    Ok(reader)
}

/// Validate scenario `text` as if read from `path`.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    let err = |message: String| ScenarioError {
        path: path.to_path_buf(),
        message,
    };
    let raw = parse_raw(text).map_err(&err)?;
    let uses = raw.pipeline.tables();
    for (table, present) in raw.tables() {
        if present && !uses.contains(&table) {
            let list: Vec<String> = uses.iter().map(|t| format!("[{t}]")).collect();
            return Err(err(format!(
                "[{table}] is not used by pipeline {} (it reads {})",
                raw.pipeline.name(),
                list.join(", ")
            )));
        }
    }
    let profile = match &raw.profile {
        None => KernelProfile::default(),
        Some(name) => KernelProfile::by_name(name).map_err(|e| err(format!("profile: {e}")))?,
    };
    let mut link = crate::pcap::linktype::EthSynth::default();
    if let Some(l) = &raw.link {
        let mac = |key: &str, v: &Option<String>, into: &mut [u8; 6]| {
            if let Some(text) = v {
                *into = crate::pcap::linktype::parse_mac(text).ok_or_else(|| {
                    err(format!(
                        "link.{key}: {text:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"
                    ))
                })?;
            }
            Ok::<(), ScenarioError>(())
        };
        mac("src_mac", &l.src_mac, &mut link.src)?;
        mac("dst_mac", &l.dst_mac, &mut link.dst)?;
    }
    // A missing table is an empty one.
    let (no_device, no_reader, no_skb) = Default::default();
    let raw_device = raw.device.as_ref().unwrap_or(&no_device);
    let device = device_config(raw_device).map_err(&err)?;
    let raw_reader = raw.reader.as_ref().unwrap_or(&no_reader);
    let reader = reader_plan(raw_reader).map_err(&err)?;
    // The receive path untags by default: that is how a tagged frame reaches a tap.
    let base = SkbRecipe {
        vlan_hwaccel: true,
        ..SkbRecipe::default()
    };
    let raw_skb = raw.skb.as_ref().unwrap_or(&no_skb);
    let skb = recipe(&raw_skb.fields(), &base).map_err(|m| err(format!("skb.{m}")))?;
    let mut skb_overrides = Vec::new();
    for (i, o) in raw_skb.frame.iter().enumerate() {
        let r = recipe(&o.fields(), &skb).map_err(|m| err(format!("skb.frame[{i}].{m}")))?;
        skb_overrides.push((o.index, r));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let writer = writer_plan(raw.writer.as_ref()).map_err(|m| err(format!("writer.{m}")))?;
    let xdp = raw.xdp.as_ref().map(|x| XdpSpec {
        program: dir.join(&x.program),
        section: x.section.clone().unwrap_or_else(|| "xdp".to_string()),
        mode: x.mode,
    });
    if let (Some(x), crate::tun::DeviceKind::Tun) = (&xdp, device.kind) {
        // tun_netdev_ops has no ndo_bpf (drivers/net/tun.c), so dev_xdp_attach
        // (net/core/dev.c) refuses driver mode with EOPNOTSUPP; generic XDP on a
        // device without a MAC header is not modelled (docs/tap-write.md#tun-device).
        return Err(err(match x.mode {
                crate::xdp::XdpMode::Native => "xdp.mode: \"native\" with a tun device: an IFF_TUN device has no ndo_bpf, so the kernel refuses driver-mode XDP (EOPNOTSUPP)".to_string(),
                crate::xdp::XdpMode::Generic => "xdp: generic XDP on a tun device (no MAC header) is not modelled".to_string(),
            }));
    }
    if xdp.is_some() && !profile.tun_write.xdp {
        return Err(err(format!(
            "xdp: {} has no XDP on tap (v4.14)",
            profile.name
        )));
    }
    let redirect = match &raw.redirect {
        Some(d) => Some(
            device_config(d)
                .map_err(|m| err(format!("redirect.{}", m.trim_start_matches("device."))))?,
        ),
        None => None,
    };
    if raw.attach.is_some() && raw.pipeline != Pipeline::TunRead {
        return Err(err(
            "attach: only the tun-read pipeline has a bridge in front of the tap".to_string(),
        ));
    }
    let attach = crate::bridge::Attach::default_for(device.kind);
    let attach = match raw.attach.map(crate::bridge::Attach::from) {
            None => attach,
            Some(a) if a != crate::bridge::Attach::Direct && device.kind == crate::tun::DeviceKind::Tun => {
                return Err(err(format!(
                    "attach: \"{}\" with a tun device: only an Ethernet device can be a bridge port (br_add_if); use \"direct\"",
                    a.name()
                )))
            }
            Some(a) => a,
        };
    if raw.vhost.is_none() && raw.pipeline == Pipeline::VhostTx {
        return Err(err("pipeline vhost-tx needs a [vhost] table".to_string()));
    }
    let mut device = device;
    let guest = match &raw.vhost {
        None => None,
        Some(v) => {
            let hdr_len = v.hdr_len.unwrap_or(12);
            if hdr_len != 10 && hdr_len != 12 {
                return Err(err(format!(
                    "vhost.hdr_len: {hdr_len}; a TX header is 10 or 12 bytes"
                )));
            }
            // QEMU's tap: IFF_NO_PI | IFF_VNET_HDR with the negotiated header size.
            if raw_device.no_pi == Some(false) || raw_device.vnet_hdr == Some(false) {
                return Err(err(
                    "device: a vhost-net tap has no_pi and vnet_hdr".to_string()
                ));
            }
            device.no_pi = true;
            device.vnet_hdr = true;
            device.vnet_hdr_sz = hdr_len;
            let fill = match (v.fill.unwrap_or(FillName::All), v.burst) {
                (FillName::All, None) => GuestFill::All,
                (FillName::Trickle, None) => GuestFill::Trickle,
                (FillName::Burst, Some(n)) => {
                    let why = "the burst must fit in the TX vring, at most 32768 descriptors";
                    in_range("vhost.burst", n as u64, limits::VHOST_BURST, why).map_err(&err)?;
                    GuestFill::Burst(n)
                }
                (FillName::Burst, None) => {
                    return Err(err("vhost.burst: fill = \"burst\" needs burst".to_string()))
                }
                (_, Some(_)) => {
                    return Err(err("vhost.burst: only with fill = \"burst\"".to_string()))
                }
            };
            Some(GuestPlan {
                hdr_len,
                fill,
                vnet: v.vnet.as_ref().map(vnet_of).unwrap_or_default(),
                overrides: v
                    .packet
                    .iter()
                    .map(|p| (p.index, vnet_of(&p.vnet)))
                    .collect(),
            })
        }
    };
    if raw.pipeline == Pipeline::TapGro {
        // tap-gro's tap: IFF_TAP | IFF_NAPI, IFF_NO_PI unless the scenario writes a PI.
        if device.kind != crate::tun::DeviceKind::Tap {
            return Err(err(tun_gro_unmodelled("device.kind")));
        }
        if raw_device.napi == Some(false) {
            return Err(err("device: the tap-gro tap has IFF_NAPI".to_string()));
        }
        device.napi = true;
        if raw_device.no_pi.is_none() {
            device.no_pi = true;
        }
    }
    let gro = crate::gro::plan::gro_plan(
        raw.gro.as_ref(),
        &profile.gro,
        profile.name,
        matches!(raw.pipeline, Pipeline::TapGro | Pipeline::VhostTx),
    )
    .map_err(&err)?;
    if device.napi_frags && gro.burst > 1 {
        // tun_get_user hands an IFF_NAPI_FRAGS write to napi_gro_frags itself: there
        // is no queue for MSG_MORE writes to fill, and no poll to batch them.
        return Err(err(
                "gro.burst: an IFF_NAPI_FRAGS tap (device.napi_frags) runs GRO in each write; there is no NAPI queue to burst".to_string(),
            ));
    }
    if raw.pipeline == Pipeline::VhostTx && gro.flush_timeout_ns > 0 {
        // The vhost-tx run has no end-of-input hrtimer: a held skb would be lost.
        return Err(err(
                "gro.flush_timeout_ns: not modelled for vhost-tx (only tap-gro fires the hrtimer at the end)".to_string(),
            ));
    }
    if raw.pipeline == Pipeline::VhostTx
        && (!gro.udp_gro_ports.is_empty() || gro.gro_udp_fwd || gro.gro_fraglist)
    {
        // Only the tap-gro arm sets the features and opens the sockets.
        return Err(err(
                "gro.udp_gro_socket, rx_udp_gro_forwarding, rx_gro_list: plain UDP GRO is a tap-gro setting".to_string(),
            ));
    }
    let legacy = crate::gro::GRO_LEGACY_MAX_SIZE;
    if raw.pipeline == Pipeline::VhostTx
        && (gro.gro_max_size != legacy || gro.gro_ipv4_max_size != legacy)
    {
        // Only the tap-gro arm sets the tap's GRO sizes (docs/gro.md#big-tcp).
        return Err(err(
            "gro.gro_max_size: tap-gro only (the vhost-tx arm leaves the tap's GRO sizes at 65536)"
                .to_string(),
        ));
    }
    Ok(Scenario {
        path: path.to_path_buf(),
        name: Scenario::name_of(path),
        description: raw.description,
        input: dir.join(&raw.input),
        pipeline: raw.pipeline,
        profile,
        sim_only: raw.sim_only,
        attach,
        device,
        reader,
        skb,
        skb_overrides,
        writer,
        xdp,
        redirect,
        gro,
        guest,
        link,
    })
}

/// Every scenario in the repository parses to the same `Scenario` with both parsers.
#[test]
fn old_and_new_parsers_agree_on_every_scenario() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    let (mut same, mut both_err) = (0, 0);
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        let old = parse(f, &text);
        let new = Scenario::parse(f, &text);
        match (old, new) {
            (Ok(o), Ok(n)) => {
                assert_eq!(format!("{o:?}"), format!("{n:?}"), "{}", f.display());
                same += 1;
            }
            (Err(o), Err(n)) => {
                eprintln!("both refuse {}:\n  old {o}\n  new {n}", f.display());
                both_err += 1;
            }
            (o, n) => panic!("{}: old {:?} new {:?}", f.display(), o.err(), n.err()),
        }
    }
    eprintln!(
        "{} files: {same} the same scenario, {both_err} refused by both",
        files.len()
    );
    assert!(same >= 466, "{same}");
}
