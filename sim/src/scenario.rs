//! Scenario files: a pcap plus a small declarative TOML description of the path it is
//! replayed through. Unknown keys and bad values are errors that name the file, the key
//! and what is wrong. The `tap-gro` pipeline's `[gro]` section is documented in
//! [`crate::gro::plan`].
//!
//! ```toml
//! description = "802.1Q tag spliced back after the MACs for a PI reader"
//! input = "../pcaps/vlan-8021q.pcap"     # relative to this file
//! pipeline = "tun-read"
//! profile = "linux-6.18"                 # default
//! # sim_only = "why the real kernel here cannot run it"
//!
//! [device]
//! kind = "tap"            # tap | tun
//! no_pi = false
//! vnet_hdr = true
//! vnet_hdr_sz = 12
//! vnet_be = false
//! tx_vlan_offload = { ctag = true, stag = true }
//! offloads = ["csum", "tso4"]   # csum tso4 tso6 tso_ecn ufo uso4 uso6
//! tx_queue_len = 500
//!
//! [reader]
//! buffers = [2048]        # read() sizes in order; the last one repeats
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

use crate::pipeline::frame_meta::{GsoKind, SkbRecipe};
use crate::profile::KernelProfile;
use crate::skb::IpSummed;
use crate::tun::{
    DeviceKind, Offloads, TunConfig, VnetEndian, DEFAULT_VNET_HDR_SZ, TUN_READQ_SIZE,
};

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
    pub fn name(self) -> &'static str {
        match self {
            Pipeline::TunRead => "tun-read",
            Pipeline::TapWrite => "tap-write",
            Pipeline::TapGro => "tap-gro",
            Pipeline::VhostTx => "vhost-tx",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    description: String,
    input: PathBuf,
    pipeline: Pipeline,
    profile: Option<String>,
    sim_only: Option<String>,
    #[serde(default)]
    device: RawDevice,
    #[serde(default)]
    reader: RawReader,
    #[serde(default)]
    skb: RawSkb,
    writer: Option<RawWriter>,
    xdp: Option<RawXdp>,
    redirect: Option<RawDevice>,
    gro: Option<crate::gro::plan::RawGro>,
    vhost: Option<RawVhost>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVhost {
    hdr_len: Option<usize>,
    fill: Option<FillName>,
    burst: Option<usize>,
    vnet: Option<RawVnet>,
    #[serde(default)]
    packet: Vec<RawPacketOverride>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FillName {
    All,
    Burst,
    Trickle,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPacketOverride {
    index: u64,
    vnet: RawVnet,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWriter {
    nonblocking: Option<bool>,
    vnet: Option<RawVnet>,
    pi_proto: Option<u16>,
    #[serde(default)]
    write: Vec<RawWriteOverride>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVnet {
    flags: Option<u8>,
    gso_type: Option<u8>,
    hdr_len: Option<u16>,
    gso_size: Option<u16>,
    csum_start: Option<u16>,
    csum_offset: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWriteOverride {
    index: u64,
    truncate: Option<usize>,
    nonblocking: Option<bool>,
    vnet: Option<RawVnet>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawXdp {
    program: PathBuf,
    section: Option<String>,
    mode: XdpModeName,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum XdpModeName {
    Native,
    Generic,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    kind: Option<Kind>,
    no_pi: Option<bool>,
    vnet_hdr: Option<bool>,
    vnet_hdr_sz: Option<usize>,
    vnet_be: Option<bool>,
    tx_vlan_offload: Option<RawVlanOffload>,
    offloads: Option<Vec<Offload>>,
    tx_queue_len: Option<usize>,
    up: Option<bool>,
    napi: Option<bool>,
    napi_frags: Option<bool>,
    sndbuf: Option<bool>,
    mtu: Option<usize>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Tap,
    Tun,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVlanOffload {
    ctag: bool,
    stag: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Offload {
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
struct RawReader {
    buffers: Option<Vec<usize>>,
    fill: Option<u8>,
    read_every: Option<usize>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum VlanMode {
    Hwaccel,
    Inband,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Checksum {
    None,
    Unnecessary,
    Partial,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Gso {
    None,
    Tcp,
    UdpL4,
    Ufo,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Headlen {
    Named(String),
    Bytes(usize),
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSkbFields {
    vlan: Option<VlanMode>,
    checksum: Option<Checksum>,
    gso: Option<Gso>,
    gso_size: Option<u16>,
    gso_ecn: Option<bool>,
    headlen: Option<Headlen>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSkb {
    #[serde(flatten)]
    fields: RawSkbFields,
    #[serde(default)]
    frame: Vec<RawFrameOverride>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFrameOverride {
    index: u64,
    #[serde(flatten)]
    fields: RawSkbFields,
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
    /// VERSION_1 (R3.2). The tap receives it (sock_hlen = hdr_len).
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
}

impl Scenario {
    /// Read and validate a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let err = |message: String| ScenarioError {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        Scenario::parse(path, &text)
    }

    /// Validate scenario `text` as if read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let err = |message: String| ScenarioError {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawScenario = toml::from_str(text).map_err(|e| err(one_line_toml_error(&e)))?;
        let profile = match &raw.profile {
            None => KernelProfile::default(),
            Some(name) => KernelProfile::by_name(name).map_err(|e| err(format!("profile: {e}")))?,
        };
        let device = device_config(&raw.device).map_err(&err)?;
        let reader = ReaderPlan {
            buffers: raw.reader.buffers.clone().unwrap_or_else(|| vec![65536]),
            fill: raw.reader.fill.unwrap_or(0xee),
            read_every: raw.reader.read_every.unwrap_or(1),
        };
        if reader.buffers.is_empty() {
            return Err(err("reader.buffers: needs at least one size".into()));
        }
        if reader.buffers.last() == Some(&0) {
            return Err(err(
                "reader.buffers: the last size repeats, so it must be > 0 (read(0) never dequeues)"
                    .into(),
            ));
        }
        if reader.read_every == 0 {
            return Err(err("reader.read_every: must be at least 1".into()));
        }
        // The receive path untags by default: that is how a tagged frame reaches a tap.
        let base = SkbRecipe {
            vlan_hwaccel: true,
            ..SkbRecipe::default()
        };
        let skb = recipe(&raw.skb.fields, &base).map_err(|m| err(format!("skb.{m}")))?;
        let mut skb_overrides = Vec::new();
        for (i, o) in raw.skb.frame.iter().enumerate() {
            let r = recipe(&o.fields, &skb).map_err(|m| err(format!("skb.frame[{i}].{m}")))?;
            skb_overrides.push((o.index, r));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let area = dir
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let writer = writer_plan(raw.writer.as_ref()).map_err(|m| err(format!("writer.{m}")))?;
        let xdp = raw.xdp.as_ref().map(|x| XdpSpec {
            program: dir.join(&x.program),
            section: x.section.clone().unwrap_or_else(|| "xdp".to_string()),
            mode: match x.mode {
                XdpModeName::Native => crate::xdp::XdpMode::Native,
                XdpModeName::Generic => crate::xdp::XdpMode::Generic,
            },
        });
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
        if raw.pipeline == Pipeline::TunRead
            && (raw.writer.is_some() || raw.xdp.is_some() || raw.redirect.is_some())
        {
            return Err(err(
                "[writer], [xdp] and [redirect] belong to the tap-write and vhost-tx pipelines"
                    .to_string(),
            ));
        }
        if raw.vhost.is_some() != (raw.pipeline == Pipeline::VhostTx) {
            return Err(err(
                "[vhost] goes with pipeline = \"vhost-tx\", and vhost-tx needs it".to_string(),
            ));
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
                if raw.device.no_pi == Some(false) || raw.device.vnet_hdr == Some(false) {
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
                    (FillName::Burst, Some(n)) if n > 0 => GuestFill::Burst(n),
                    (FillName::Burst, _) => {
                        return Err(err(
                            "vhost.burst: fill = \"burst\" needs burst > 0".to_string()
                        ))
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
        let gro = crate::gro::plan::gro_plan(
            raw.gro.as_ref(),
            &profile.gro,
            profile.name,
            raw.pipeline == Pipeline::TapGro,
        )
        .map_err(&err)?;
        Ok(Scenario {
            path: path.to_path_buf(),
            name: format!("{area}/{stem}"),
            description: raw.description,
            input: dir.join(&raw.input),
            pipeline: raw.pipeline,
            profile,
            sim_only: raw.sim_only,
            device,
            reader,
            skb,
            skb_overrides,
            writer,
            xdp,
            redirect,
            gro,
            guest,
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

/// toml's errors span several lines (a source excerpt); keep the message and the key.
fn one_line_toml_error(e: &toml::de::Error) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => format!("{msg} (at byte {})", span.start),
        None => msg,
    }
}

fn vnet_of(v: &RawVnet) -> WriterVnet {
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

fn writer_plan(w: Option<&RawWriter>) -> Result<WriterPlan, String> {
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
            .map(|o| WriteOverride {
                index: o.index,
                truncate: o.truncate,
                nonblocking: o.nonblocking,
                vnet: o.vnet.as_ref().map(vnet_of),
            })
            .collect(),
    })
}

fn device_config(d: &RawDevice) -> Result<TunConfig, String> {
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
        // tun_vnet_ioctl: TUNSETVNETHDRSZ rejects sizes below sizeof(virtio_net_hdr).
        if sz < DEFAULT_VNET_HDR_SZ {
            return Err(format!(
                "device.vnet_hdr_sz: {sz} is below 10, which TUNSETVNETHDRSZ refuses with EINVAL"
            ));
        }
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
    c.sndbuf_set = d.sndbuf.unwrap_or(false);
    if let Some(m) = d.mtu {
        c.mtu = m;
    }
    if let Some(q) = d.tx_queue_len {
        if q == 0 {
            return Err("device.tx_queue_len: must be at least 1".into());
        }
        c.tx_queue_len = q;
    } else {
        c.tx_queue_len = TUN_READQ_SIZE;
    }
    Ok(c)
}

fn recipe(f: &RawSkbFields, base: &SkbRecipe) -> Result<SkbRecipe, String> {
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
            Headlen::Bytes(n) => Some(Some(*n)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(Path::new("scenarios/tun-read/x.toml"), text)
    }

    const MINIMAL: &str =
        "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"tun-read\"\n";

    #[test]
    fn minimal_scenario_gets_kernel_defaults() {
        let s = parse(MINIMAL).unwrap();
        assert_eq!(s.name, "tun-read/x");
        assert_eq!(s.input, Path::new("scenarios/tun-read/../pcaps/a.pcap"));
        assert_eq!(s.profile.name, "linux-6.18");
        assert_eq!(s.device, TunConfig::default());
        assert!(s.skb.vlan_hwaccel);
        assert_eq!(s.reader.buffer(7), 65536);
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let e = parse(&format!("{MINIMAL}[device]\nno_pii = true\n")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("scenarios/tun-read/x.toml: "), "{msg}");
        assert!(msg.contains("no_pii"), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }

    #[test]
    fn bad_values_are_explained() {
        let cases = [
            ("[device]\nvnet_hdr = true\nvnet_hdr_sz = 8\n", "below 10"),
            ("profile = \"linux-2.4\"\n", "unknown kernel profile"),
            ("[reader]\nbuffers = [100, 0]\n", "must be > 0"),
            (
                "[skb]\ngso = \"tcp\"\ngso_size = 1000\n",
                "CHECKSUM_PARTIAL",
            ),
            ("[skb]\nheadlen = \"some\"\n", "headlen"),
            ("[device]\noffloads = [\"tso4\"]\n", "csum"),
            ("[device]\noffloads = [\"csum\", \"uso4\"]\n", "go together"),
            ("pipeline2 = 1\n", "pipeline2"),
        ];
        for (extra, want) in cases {
            // Keys before any table header belong to the root table.
            let text = if extra.starts_with('[') {
                format!("{MINIMAL}{extra}")
            } else {
                format!("{extra}{MINIMAL}")
            };
            let msg = parse(&text).unwrap_err().to_string();
            assert!(msg.contains(want), "{extra:?}: {msg}");
        }
    }

    #[test]
    fn per_frame_overrides_inherit_the_scenario_recipe() {
        let s = parse(&format!(
            "{MINIMAL}[skb]\nvlan = \"inband\"\n[[skb.frame]]\nindex = 2\nchecksum = \"unnecessary\"\n"
        ))
        .unwrap();
        assert!(!s.recipe_for(0).vlan_hwaccel);
        assert!(!s.recipe_for(2).vlan_hwaccel);
        assert_eq!(s.recipe_for(2).checksum, IpSummed::Unnecessary);
    }
}
