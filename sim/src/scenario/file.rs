//! The scenario file as serde reads it. Where the file spells a table as the model type
//! does, serde fills the model type itself ([`ReaderPlan`], [`WriterPlan`], [`XdpSpec`],
//! the vnet header, [`EthSynth`], the enums); a table type exists only where the file says
//! something the model type cannot hold: which `[device]` keys were written (a pipeline's
//! defaults depend on it), `[skb]` keys a `[[skb.frame]]` inherits when it leaves them
//! out, and `[vhost]`'s `fill` + `burst`. Each table is checked as serde reads it
//! (`TryFrom`, or [`Checked`]), so its errors carry the key path and position; checks
//! across tables are in `Scenario::parse`. Every table denies unknown keys.

use std::path::PathBuf;

use serde::{Deserialize, Deserializer};

use crate::bridge::Attach;
use crate::gro::plan::RawGro;
use crate::pcap::linktype::EthSynth;
use crate::pipeline::frame_meta::{GsoKind, SkbRecipe};
use crate::profile::KernelProfile;
use crate::skb::IpSummed;
use crate::tun::{DeviceKind, Offloads, TunConfig, VnetEndian};

use super::exec::ExecPlan;
use super::limits::{self, in_range};
use super::queues::QueuePlan;
use super::{GuestFill, GuestPlan, Pipeline, ReaderPlan, WriterPlan, WriterVnet, XdpSpec};

/// The whole file. A table is `Some` when the file has it (even empty).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScenarioFile {
    pub(super) description: String,
    /// Every pipeline but `exec` reads a capture (checked in `across.rs`).
    pub(super) input: Option<PathBuf>,
    pub(super) pipeline: Pipeline,
    #[serde(default, deserialize_with = "profile_by_name")]
    pub(super) profile: KernelProfile,
    pub(super) sim_only: Option<String>,
    pub(super) attach: Option<Attach>,
    pub(super) device: Option<Device>,
    pub(super) reader: Option<Checked<ReaderPlan>>,
    pub(super) skb: Option<SkbPlan>,
    pub(super) writer: Option<Checked<WriterPlan>>,
    pub(super) xdp: Option<XdpSpec>,
    pub(super) redirect: Option<Device>,
    pub(super) gro: Option<RawGro>,
    pub(super) vhost: Option<GuestPlan>,
    pub(super) queues: Option<Checked<QueuePlan>>,
    pub(super) exec: Option<Checked<ExecPlan>>,
    #[serde(default)]
    pub(super) link: EthSynth,
}

impl ScenarioFile {
    /// The tables the file has, by name (`[link]` is read by every pipeline).
    pub(super) fn tables(&self) -> [(&'static str, bool); 10] {
        [
            ("device", self.device.is_some()),
            ("reader", self.reader.is_some()),
            ("skb", self.skb.is_some()),
            ("writer", self.writer.is_some()),
            ("xdp", self.xdp.is_some()),
            ("redirect", self.redirect.is_some()),
            ("gro", self.gro.is_some()),
            ("vhost", self.vhost.is_some()),
            ("queues", self.queues.is_some()),
            ("exec", self.exec.is_some()),
        ]
    }
}

fn profile_by_name<'de, D: Deserializer<'de>>(d: D) -> Result<KernelProfile, D::Error> {
    let name = String::deserialize(d)?;
    KernelProfile::by_name(&name).map_err(serde::de::Error::custom)
}

/// A model type serde reads as itself, then checks; `check` errors are `key: what`,
/// relative to the table (the path in front is added by [`parse_toml`]).
pub(super) trait Check {
    fn check(&self) -> Result<(), String>;
}

/// `T` read and [`Check`]ed.
#[derive(Debug)]
pub(super) struct Checked<T>(pub(super) T);

impl<'de, T: Deserialize<'de> + Check> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = T::deserialize(d)?;
        t.check().map_err(serde::de::Error::custom)?;
        Ok(Checked(t))
    }
}

/// `[reader]`: every buffer within [`limits::MAX_READ_BUFFER`].
impl Check for ReaderPlan {
    fn check(&self) -> Result<(), String> {
        if self.buffers.is_empty() {
            return Err("buffers: needs at least one size".into());
        }
        for (i, &b) in self.buffers.iter().enumerate() {
            let why =
                "no packet tun_put_user writes is larger, and the model allocates each buffer";
            in_range(
                &format!("buffers[{i}]"),
                b as u64,
                (0, limits::MAX_READ_BUFFER),
                why,
            )?;
        }
        if self.buffers.last() == Some(&0) {
            return Err(
                "buffers: the last size repeats, so it must be > 0 (read(0) never dequeues)".into(),
            );
        }
        let why = "a count of transmitted frames";
        in_range(
            "read_every",
            self.read_every as u64,
            limits::READ_EVERY,
            why,
        )?;
        Ok(())
    }
}

/// `[writer]`: a truncated write is at most MAX_RW_COUNT bytes.
impl Check for WriterPlan {
    fn check(&self) -> Result<(), String> {
        for (i, o) in self.overrides.iter().enumerate() {
            if let Some(t) = o.truncate {
                let key = format!("write[{i}].truncate");
                let why = "a write() is at most MAX_RW_COUNT bytes";
                in_range(&key, t as u64, limits::TRUNCATE, why)?;
            }
        }
        Ok(())
    }
}

/// `[device]` (or `[redirect]`): the keys as written, and the device they configure
/// (IFF_NAPI_FRAGS implies IFF_NAPI).
#[derive(Debug, Deserialize)]
#[serde(try_from = "DeviceKeys")]
pub(super) struct Device {
    pub(super) keys: DeviceKeys,
    pub(super) config: TunConfig,
}

/// The keys of a device table; `None`: not written (see [`TunConfig::default`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeviceKeys {
    kind: Option<DeviceKind>,
    pub(super) no_pi: Option<bool>,
    pub(super) vnet_hdr: Option<bool>,
    vnet_hdr_sz: Option<usize>,
    vnet_be: Option<bool>,
    tx_vlan_offload: Option<TxVlanOffload>,
    #[serde(default, deserialize_with = "offload_names")]
    offloads: Offloads,
    tx_queue_len: Option<usize>,
    up: Option<bool>,
    pub(super) napi: Option<bool>,
    napi_frags: Option<bool>,
    sndbuf: Option<bool>,
    mtu: Option<usize>,
}

/// `tx_vlan_offload = { ctag = .., stag = .. }`: NETIF_F_HW_VLAN_CTAG_TX / STAG_TX.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TxVlanOffload {
    ctag: bool,
    stag: bool,
}

/// `offloads = ["csum", "tso4", ...]`: the TUNSETOFFLOAD bits by their TUN_F_ name.
fn offload_names<'de, D: Deserializer<'de>>(d: D) -> Result<Offloads, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Name {
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
    let mut f = Offloads::default();
    for name in Vec::<Name>::deserialize(d)? {
        *match name {
            Name::Csum => &mut f.csum,
            Name::Tso4 => &mut f.tso4,
            Name::Tso6 => &mut f.tso6,
            Name::TsoEcn => &mut f.tso_ecn,
            Name::Ufo => &mut f.ufo,
            Name::Uso4 => &mut f.uso4,
            Name::Uso6 => &mut f.uso6,
            Name::UdpTunnelGso => &mut f.udp_tunnel_gso,
            Name::UdpTunnelGsoCsum => &mut f.udp_tunnel_gso_csum,
        } = true;
    }
    Ok(f)
}

impl TryFrom<DeviceKeys> for Device {
    type Error = String;

    /// The device the keys configure, checked against tun.c's own refusals.
    fn try_from(d: DeviceKeys) -> Result<Device, String> {
        let mut c = TunConfig {
            kind: d.kind.unwrap_or_default(),
            no_pi: d.no_pi.unwrap_or(false),
            vnet_hdr: d.vnet_hdr.unwrap_or(false),
            offloads: d.offloads,
            up: d.up.unwrap_or(true),
            napi: d.napi.unwrap_or(false),
            napi_frags: d.napi_frags.unwrap_or(false),
            sndbuf_set: d.sndbuf.unwrap_or(false),
            ..TunConfig::default()
        };
        if let Some(sz) = d.vnet_hdr_sz {
            in_range(
                "vnet_hdr_sz",
                sz as u64,
                limits::VNET_HDR_SZ,
                "TUNSETVNETHDRSZ refuses below sizeof(struct virtio_net_hdr) with EINVAL",
            )?;
            if !c.vnet_hdr {
                return Err("vnet_hdr_sz: set without vnet_hdr = true".into());
            }
            c.vnet_hdr_sz = sz;
        }
        if d.vnet_be == Some(true) {
            c.vnet_endian = VnetEndian::Big;
        }
        if let Some(v) = &d.tx_vlan_offload {
            (c.tx_vlan_ctag, c.tx_vlan_stag) = (v.ctag, v.stag);
        }
        check_offloads(&c.offloads)?;
        check_napi(&c, d.napi)?;
        c.napi |= c.napi_frags;
        if let Some(m) = d.mtu {
            let name = match c.kind {
                DeviceKind::Tap => "a tap",
                DeviceKind::Tun => "a tun",
            };
            let why = format!("the min_mtu..=max_mtu of {name}; dev_set_mtu refuses others");
            in_range("mtu", m as u64, limits::mtu_range(c.kind), &why)?;
            c.mtu = m;
        }
        if let Some(q) = d.tx_queue_len {
            let why = "dev->tx_queue_len sizes the tx_ring; ptr_ring refuses more";
            in_range("tx_queue_len", q as u64, limits::TX_QUEUE_LEN, why)?;
            c.tx_queue_len = q;
        }
        Ok(Device { keys: d, config: c })
    }
}

/// The offload bits TUNSETOFFLOAD takes together.
fn check_offloads(f: &Offloads) -> Result<(), String> {
    if f.uso4 != f.uso6 {
        // tun.c: set_offload turns on NETIF_F_GSO_UDP_L4 only for both bits; one alone is
        // -EINVAL (seen on 6.18: TUNSETOFFLOAD 0x21 fails).
        return Err("offloads: \"uso4\" and \"uso6\" go together (TUNSETOFFLOAD refuses one alone with EINVAL)".into());
    }
    if (f.udp_tunnel_gso && !(f.tso4 || f.tso6 || f.uso4))
        || (f.udp_tunnel_gso_csum && !f.udp_tunnel_gso)
    {
        // tun.c: set_offload takes the tunnel bits only with a PLAIN_GSO feature, the CSUM
        // one only with UDP_TUNNEL_GSO; otherwise EINVAL (docs/tun-ioctl.md#setoffload).
        return Err("offloads: \"udp_tunnel_gso\" needs \"tso4\", \"tso6\" or \"uso4\"+\"uso6\", and \"udp_tunnel_gso_csum\" needs \"udp_tunnel_gso\" (TUNSETOFFLOAD refuses them otherwise with EINVAL)".into());
    }
    if *f != Offloads::default() && !f.csum {
        // tun.c: set_offload ignores TSO/UFO/USO bits unless TUN_F_CSUM is set.
        return Err("offloads: GSO offloads need \"csum\" too (tun.c: set_offload)".into());
    }
    Ok(())
}

/// IFF_NAPI and IFF_NAPI_FRAGS (`napi`: the key as written).
fn check_napi(c: &TunConfig, napi: Option<bool>) -> Result<(), String> {
    if c.napi && c.kind == DeviceKind::Tun {
        // tun.c: tun_set_iff allows IFF_NAPI on a tun; the model's GRO does not take it.
        return Err(tun_gro_unmodelled("napi"));
    }
    // tun.c: tun_set_iff: IFF_NAPI_FRAGS needs IFF_NAPI on a tap, else -EINVAL.
    if c.napi_frags && (napi == Some(false) || c.kind != DeviceKind::Tap) {
        return Err("napi_frags: needs a tap with napi (tun_set_iff refuses IFF_NAPI_FRAGS otherwise, EINVAL)".into());
    }
    Ok(())
}

/// `[skb]` and its `[[skb.frame]]` overrides as recipes.
#[derive(Debug, Deserialize)]
#[serde(try_from = "SkbKeys")]
pub(super) struct SkbPlan {
    pub(super) recipe: SkbRecipe,
    pub(super) overrides: Vec<(u64, SkbRecipe)>,
}

/// The keys of `[skb]` and of each `[[skb.frame]]` (which has an index and no frames of
/// its own); a key left out inherits. One type for both: serde's flatten would buffer the
/// table, and an error inside it would then name neither the key nor its line.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SkbKeys {
    index: Option<u64>,
    vlan: Option<VlanMode>,
    checksum: Option<IpSummed>,
    gso: Option<GsoKind>,
    gso_size: Option<u16>,
    gso_ecn: Option<bool>,
    headlen: Option<Headlen>,
    #[serde(default)]
    frame: Vec<SkbKeys>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum VlanMode {
    Hwaccel,
    Inband,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Headlen {
    Named(String),
    Bytes(usize),
}

impl TryFrom<SkbKeys> for SkbPlan {
    type Error = String;

    fn try_from(k: SkbKeys) -> Result<SkbPlan, String> {
        if k.index.is_some() {
            return Err("index: only a [[skb.frame]] has an index".into());
        }
        // The receive path untags by default: that is how a tagged frame reaches a tap.
        let recipe = k.recipe(&SkbPlan::default().recipe)?;
        let mut overrides = Vec::new();
        for (i, f) in k.frame.iter().enumerate() {
            let at = |m: String| format!("frame[{i}].{m}");
            let index = f
                .index
                .ok_or_else(|| format!("frame[{i}]: missing field `index`"))?;
            if !f.frame.is_empty() {
                return Err(at("frame: a [[skb.frame]] has no frames of its own".into()));
            }
            overrides.push((index, f.recipe(&recipe).map_err(at)?));
        }
        Ok(SkbPlan { recipe, overrides })
    }
}

impl SkbKeys {
    /// `base` with these keys applied; errors are `key: what`.
    fn recipe(&self, base: &SkbRecipe) -> Result<SkbRecipe, String> {
        let mut r = *base;
        if let Some(v) = self.vlan {
            r.vlan_hwaccel = matches!(v, VlanMode::Hwaccel);
        }
        r.checksum = self.checksum.unwrap_or(r.checksum);
        if let Some(g) = self.gso {
            r.gso = g;
            if g != GsoKind::None && r.headlen.is_none() && self.headlen.is_none() {
                // A sender's TSO skb has its headers linear and the payload in pages.
                r.headlen = Some(None);
            }
        }
        r.gso_size = self.gso_size.unwrap_or(r.gso_size);
        r.gso_ecn = self.gso_ecn.unwrap_or(r.gso_ecn);
        if let Some(h) = &self.headlen {
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
}

/// `[vhost]`: the guest. `fill = "burst"` takes its size from `burst`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct VhostKeys {
    #[serde(default = "twelve")]
    hdr_len: usize,
    #[serde(default)]
    fill: FillName,
    burst: Option<usize>,
    #[serde(default)]
    vnet: WriterVnet,
    #[serde(default)]
    packet: Vec<PacketVnet>,
}

fn twelve() -> usize {
    12
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FillName {
    #[default]
    All,
    Burst,
    Trickle,
}

/// `[[vhost.packet]]`: one packet's vnet header.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PacketVnet {
    index: u64,
    vnet: WriterVnet,
}

impl TryFrom<VhostKeys> for GuestPlan {
    type Error = String;

    fn try_from(v: VhostKeys) -> Result<GuestPlan, String> {
        if v.hdr_len != 10 && v.hdr_len != 12 {
            return Err(format!(
                "hdr_len: {}; a TX header is 10 or 12 bytes",
                v.hdr_len
            ));
        }
        let fill = match (v.fill, v.burst) {
            (FillName::All, None) => GuestFill::All,
            (FillName::Trickle, None) => GuestFill::Trickle,
            (FillName::Burst, Some(n)) => {
                let why = "the burst must fit in the TX vring, at most 32768 descriptors";
                in_range("burst", n as u64, limits::VHOST_BURST, why)?;
                GuestFill::Burst(n)
            }
            (FillName::Burst, None) => return Err("burst: fill = \"burst\" needs burst".into()),
            (_, Some(_)) => return Err("burst: only with fill = \"burst\"".into()),
        };
        Ok(GuestPlan {
            hdr_len: v.hdr_len,
            fill,
            vnet: v.vnet,
            overrides: v.packet.iter().map(|p| (p.index, p.vnet)).collect(),
        })
    }
}

/// Deserialize a scenario. toml's own errors span several lines (a source excerpt with a
/// caret) and name no key; this one is `key.path: what (line L, column C)`. A check's
/// `key: what` (relative to its table) is joined to the table's path: `device.mtu: ...`.
pub(super) fn parse_toml(text: &str) -> Result<ScenarioFile, String> {
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
            Some(p) => format!("{}{at}", join_key(&p, &msg)),
            None => format!("{msg}{at}"),
        }
    })
}

/// `path: msg`, or `path.key: what` when `msg` is a check's `key: what` (a key is
/// letters, digits, `_`, `.` and `[i]`; serde's own messages have a space before any
/// colon).
fn join_key(path: &str, msg: &str) -> String {
    let is_key = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.[]".contains(c))
    };
    match msg.split_once(": ") {
        Some((key, what)) if is_key(key) => format!("{path}.{key}: {what}"),
        _ => format!("{path}: {msg}"),
    }
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

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
