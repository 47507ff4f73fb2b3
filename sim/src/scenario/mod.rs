//! Scenario files: a pcap plus a small declarative TOML description of the path it is
//! replayed through. Unknown keys and bad values are errors that name the file, the key
//! and what is wrong, in one line. Every number has the range of the kernel type it
//! models ([`limits`]); a table the pipeline does not read is an error
//! ([`Pipeline::tables`]). The `tap-gro` pipeline's `[gro]` section is documented in
//! [`crate::gro::plan`].
//!
//! ```toml
//! description = "802.1Q tag spliced back after the MACs for a PI reader"
//! input = "../pcaps/vlan-8021q.pcap"     # relative to this file
//! pipeline = "tun-read"
//! profile = "linux-6.18"                 # default
//! # sim_only = "why the real kernel here cannot run it"
//! attach = "bridge"      # tun-read: how frames reach the tap (crate::bridge):
//!                        # "bridge" (default: a default Linux bridge, STP off,
//!                        # bridge-nf-call-* off), "bridge-nf" (the same with
//!                        # br_netfilter's bridge-nf-call-* on), "direct" (straight to
//!                        # the tap's xmit, no bridge)
//!
//! [device]
//! kind = "tap"            # tap | tun
//! no_pi = false
//! vnet_hdr = true
//! vnet_hdr_sz = 12        # 10 ..= 16 MiB (TUNSETVNETHDRSZ: an int >= 10)
//! vnet_be = false
//! tx_vlan_offload = { ctag = true, stag = true }
//! offloads = ["csum", "tso4"]   # csum tso4 tso6 tso_ecn ufo uso4 uso6 udp_tunnel_gso
//!                               # udp_tunnel_gso_csum
//! tx_queue_len = 500      # 1 ..= 524288
//! mtu = 1500              # 68 ..= 65521 (tap), 68 ..= 65535 (tun)
//!
//! [reader]
//! buffers = [2048]        # read() sizes in order, each <= 16 MiB; the last one repeats
//! fill = 0xee             # what the reader's buffer holds before each read
//! read_every = 1          # read after every N frames are transmitted
//!
//! [skb]                   # how each frame's metadata arises before tun_net_xmit
//! vlan = "hwaccel"        # hwaccel | inband
//! checksum = "none"       # none | unnecessary | partial
//! gso = "none"            # none | tcp | udp_l4 | ufo
//! gso_size = 1448
//! gso_ecn = false
//! headlen = "all"         # all | headers | <bytes>
//!
//! [[skb.frame]]           # per-frame overrides, by input index
//! index = 2
//! checksum = "partial"
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub mod limits;
mod raw;
use limits::in_range;
use raw::{device_config, parse_raw, recipe, vnet_of, writer_plan, FillName};

use crate::pipeline::frame_meta::SkbRecipe;
use crate::profile::KernelProfile;
use crate::tun::TunConfig;

/// A scenario file that could not be used: `path: what is wrong`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// Which simulated path a scenario replays through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Pipeline {
    /// Frames transmitted to a tap and read by userspace: tun_net_xmit + tun_put_user.
    #[serde(rename = "tun-read")]
    TunRead,
    /// Frames written by userspace into a tap, optionally through an XDP program:
    /// tun_get_user, tun_build_skb, tun_xdp_act, generic XDP.
    #[serde(rename = "tap-write")]
    TapWrite,
    /// Frames written into an IFF_NAPI tap and aggregated by GRO before the stack sees
    /// them: tun_get_user, tun_napi_poll, napi_gro_receive (`[gro]`, crate::gro::plan).
    #[serde(rename = "tap-gro")]
    TapGro,
    /// A guest transmitting through vhost_net into a tap: handle_tx_copy, XDP batching
    /// (TUN_MSG_PTR), tun_xdp_one.
    #[serde(rename = "vhost-tx")]
    VhostTx,
}

impl Pipeline {
    /// Every pipeline.
    pub const ALL: [Pipeline; 4] = [
        Pipeline::TunRead,
        Pipeline::TapWrite,
        Pipeline::TapGro,
        Pipeline::VhostTx,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pipeline::TunRead => "tun-read",
            Pipeline::TapWrite => "tap-write",
            Pipeline::TapGro => "tap-gro",
            Pipeline::VhostTx => "vhost-tx",
        }
    }

    /// The scenario tables this pipeline reads; any other table is an error. From what
    /// the model and the real arm of each use: tun-read builds skbs ([skb]) and reads a
    /// device ([device], [reader]); tap-write writes ([writer]) into a device with a
    /// program, a redirect target and readers draining both; vhost-tx is tap-write's host
    /// side fed by a guest ([vhost]) instead of a writer (with [gro] for an IFF_NAPI
    /// tap); tap-gro is tap-write's datapath with IFF_NAPI and GRO ([gro]; its device is
    /// always an IFF_TAP with IFF_NAPI, IFF_NO_PI unless [device] says no_pi = false).
    pub fn tables(self) -> &'static [&'static str] {
        match self {
            Pipeline::TunRead => &["device", "reader", "skb"],
            Pipeline::TapWrite => &["device", "reader", "writer", "xdp", "redirect"],
            Pipeline::TapGro => &["device", "writer", "xdp", "redirect", "gro"],
            Pipeline::VhostTx => &["device", "reader", "xdp", "redirect", "vhost", "gro"],
        }
    }
}

/// How userspace reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderPlan {
    /// read() buffer sizes in order; the last one repeats.
    pub buffers: Vec<usize>,
    /// Byte the buffer holds before each read.
    pub fill: u8,
    /// Read after every N transmitted frames (and at the end).
    pub read_every: usize,
}

impl ReaderPlan {
    /// The buffer size of the `n`th read.
    pub fn buffer(&self, n: usize) -> usize {
        self.buffers
            .get(n)
            .or(self.buffers.last())
            .copied()
            .unwrap_or(0)
    }
}

/// The vnet header a writer puts before each frame (host values; the byte order is the
/// device's).
pub type WriterVnet = crate::wire::virtio_net_hdr::VirtioNetHdrRepr;

/// How userspace writes into the tap (the `tap-write` pipeline).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriterPlan {
    pub nonblocking: bool,
    pub vnet: WriterVnet,
    /// tun_pi.proto for PI writes; None: the frame's EtherType.
    pub pi_proto: Option<u16>,
    /// Per-write overrides by input index: (index, truncate to N bytes, nonblocking, vnet).
    pub overrides: Vec<WriteOverride>,
}

/// One write's deviation from the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOverride {
    pub index: u64,
    /// Write only the first N bytes of the composed PI + vnet + frame.
    pub truncate: Option<usize>,
    pub nonblocking: Option<bool>,
    pub vnet: Option<WriterVnet>,
}

/// The XDP program a scenario attaches to the written tap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpSpec {
    /// `.o` (clang -target bpf ELF) or `.s` (skbsim eBPF assembly), resolved against the
    /// scenario's directory.
    pub program: PathBuf,
    /// ELF section of the program (default "xdp").
    pub section: String,
    pub mode: crate::xdp::XdpMode,
}

/// How the guest fills the TX virtqueue before kicking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestFill {
    /// Every packet made available, then one kick.
    All,
    /// Bursts of N packets, a kick after each.
    Burst(usize),
    /// One packet per kick (batches of one).
    Trickle,
}

/// The guest side of a vhost-tx scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestPlan {
    /// The virtio_net_hdr the guest puts before each frame: 10, or 12 with MRG_RXBUF or
    /// VERSION_1 (docs/vhost-tx.md#header-size). The tap receives it (sock_hlen = hdr_len).
    pub hdr_len: usize,
    pub fill: GuestFill,
    pub vnet: WriterVnet,
    pub overrides: Vec<(u64, WriterVnet)>,
}

impl GuestPlan {
    pub fn vnet_for(&self, index: u64) -> WriterVnet {
        self.overrides
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, v)| *v)
            .unwrap_or(self.vnet)
    }
}

/// `[reader]` checked: every buffer within [`limits::MAX_READ_BUFFER`].
fn reader_plan(r: &raw::RawReader) -> Result<ReaderPlan, String> {
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

/// A loaded, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario file.
    pub path: PathBuf,
    /// `<area>/<stem>`, e.g. `tun-read/vlan-8021q-pi`: names the golden directory.
    pub name: String,
    pub description: String,
    /// The input pcap, resolved against the scenario's directory.
    pub input: PathBuf,
    pub pipeline: Pipeline,
    pub profile: KernelProfile,
    /// Why the real kernel here cannot run this scenario, if it cannot.
    pub sim_only: Option<String>,
    /// How frames reach the tap (tun-read).
    pub attach: crate::bridge::Attach,
    pub device: TunConfig,
    pub reader: ReaderPlan,
    /// The recipe for every frame, then per-frame overrides by input index.
    pub skb: SkbRecipe,
    pub skb_overrides: Vec<(u64, SkbRecipe)>,
    /// The writer (tap-write).
    pub writer: WriterPlan,
    /// The attached XDP program (tap-write).
    pub xdp: Option<XdpSpec>,
    /// A second tap, the redirect target (tap-write); ifindex 3, the device under test 2.
    pub redirect: Option<TunConfig>,
    /// NAPI and GRO settings (tap-gro; defaults otherwise).
    pub gro: crate::gro::plan::GroPlan,
    /// The guest (vhost-tx).
    pub guest: Option<GuestPlan>,
    /// The MACs put in front of a non-Ethernet capture's frames (`[link]`; every
    /// pipeline reads it).
    pub link: crate::pcap::linktype::EthSynth,
}

/// The largest scenario file accepted. The largest in `scenarios/` is about 2 KiB; a
/// scenario holds flags, per-frame overrides and guest descriptors, never frame data
/// (that lives in the pcap), so 1 MiB is generous while keeping a mistaken path
/// (a capture, `/dev/zero` behind a symlink) from being parsed as TOML.
pub const MAX_SCENARIO_BYTES: u64 = 1 << 20;

impl Scenario {
    /// `<area>/<stem>` for a scenario file at `.../<area>/<stem>.toml` (its
    /// [`Scenario::name`]), from the path alone: a file that does not load is named the
    /// same way. A path without a directory name (`t.toml`, `./t.toml`) is `<stem>`,
    /// never `/<stem>`, which a golden root joined with it would take for the root
    /// directory.
    pub fn name_of(path: &Path) -> String {
        let part = |p: Option<&std::ffi::OsStr>| {
            p.map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let stem = part(path.file_stem());
        match part(path.parent().and_then(Path::file_name)) {
            area if area.is_empty() => stem,
            area => format!("{area}/{stem}"),
        }
    }

    /// Read and validate a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let err = |message: String| ScenarioError {
            path: path.to_path_buf(),
            message,
        };
        let text = crate::fsutil::read_bounded_to_string(path, "scenario", MAX_SCENARIO_BYTES)
            .map_err(|e| err(e.to_string()))?;
        Scenario::parse(path, &text)
    }

    /// Validate scenario `text` as if read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
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
        if device.offloads.udp_tunnel_gso && !profile.tun_ioctl.udp_tunnel_gso {
            return Err(err(format!(
                "device.offloads: {} has no \"udp_tunnel_gso\" (TUNSETOFFLOAD refuses TUN_F_UDP_TUNNEL_GSO with EINVAL before v6.17)",
                profile.name
            )));
        }
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
                        in_range("vhost.burst", n as u64, limits::VHOST_BURST, why)
                            .map_err(&err)?;
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
                return Err(err(raw::tun_gro_unmodelled("device.kind")));
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
                "gro.gro_max_size: tap-gro only (the vhost-tx arm leaves the tap's GRO sizes at 65536)".to_string(),
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

    /// The write plan for input frame `index`: (truncate, nonblocking, vnet).
    pub fn write_for(&self, index: u64) -> (Option<usize>, bool, WriterVnet) {
        let w = &self.writer;
        match w.overrides.iter().find(|o| o.index == index) {
            Some(o) => (
                o.truncate,
                o.nonblocking.unwrap_or(w.nonblocking),
                o.vnet.unwrap_or(w.vnet),
            ),
            None => (None, w.nonblocking, w.vnet),
        }
    }

    /// The recipe for input frame `index`.
    pub fn recipe_for(&self, index: u64) -> &SkbRecipe {
        self.skb_overrides
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, r)| r)
            .unwrap_or(&self.skb)
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
