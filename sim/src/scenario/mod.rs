//! Scenario files: a pcap plus a small declarative TOML description of the path it is
//! replayed through. Unknown keys and bad values are errors that name the file, the key
//! and what is wrong, in one line. Every number has the range of the kernel type it
//! models ([`limits`]); a table the pipeline does not read is an error
//! ([`Pipeline::tables`]). The `tap-gro` pipeline's `[gro]` section is documented in
//! [`crate::gro::plan`].
//! `pipeline = "exec"` runs a program instead of replaying a capture: `input` optional
//! (frames the far side sends when the program's device comes up), one `[exec]` table ([`ExecPlan`], `exec.rs`; docs/exec.md#scenarios).
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
//!
//! [queues]                # tun-read, tap-write: an IFF_MULTI_QUEUE tap with `count` files
//! count = 2               # (the `queues` module; docs/tun-read.md#multiqueue,
//! write_on = [0, 1]       # docs/tap-write.md#multiqueue); tap-write: each frame's file
//! steering = "prog.o"     # TUNSETSTEERINGEBPF / TUNSETFILTEREBPF socket filters
//! filter = "prog.o"       # (section "socket")
//! [[queues.event]]        # TUNSETQUEUE or a write(2) before a frame
//! before_frame = 1
//! file = 0
//! op = "detach"           # detach | attach | write (with data = "hex")
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

mod across;
mod exec;
mod file;
pub mod limits;
mod queues;
pub use exec::{default_far_addr, ExecFarSide, ExecPlan};
use file::parse_toml;
pub use queues::{QueueEvent, QueueOp, QueuePlan, SOCKET_FILTER_SECTION};

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
    /// An unmodified program on the simulated device under `skbsim exec` (`[exec]`,
    /// [`ExecPlan`]; docs/exec.md#scenarios): no capture in, the run's record out.
    #[serde(rename = "exec")]
    Exec,
}

impl Pipeline {
    /// Every pipeline that replays a capture (what `skbsim replay --pipeline` takes);
    /// [`Pipeline::Exec`] runs a program instead.
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
            Pipeline::Exec => "exec",
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
            Pipeline::TunRead => &["device", "reader", "skb", "queues"],
            Pipeline::TapWrite => &["device", "reader", "writer", "xdp", "redirect", "queues"],
            Pipeline::TapGro => &["device", "writer", "xdp", "redirect", "gro"],
            Pipeline::VhostTx => &[
                "device", "reader", "xdp", "redirect", "vhost", "gro", "queues",
            ],
            Pipeline::Exec => &["exec"],
        }
    }
}

/// How userspace reads (`[reader]`; checked in `file.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReaderPlan {
    /// read() buffer sizes in order; the last one repeats.
    pub buffers: Vec<usize>,
    /// Byte the buffer holds before each read.
    pub fill: u8,
    /// Read after every N transmitted frames (and at the end).
    pub read_every: usize,
}

impl Default for ReaderPlan {
    /// One 64 KiB read after every frame, into a buffer of 0xee.
    fn default() -> Self {
        ReaderPlan {
            buffers: vec![65536],
            fill: 0xee,
            read_every: 1,
        }
    }
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

/// How userspace writes into the tap (the `tap-write` pipeline; `[writer]`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WriterPlan {
    pub nonblocking: bool,
    pub vnet: WriterVnet,
    /// tun_pi.proto for PI writes; None: the frame's EtherType.
    pub pi_proto: Option<u16>,
    /// Per-write overrides by input index (`[[writer.write]]`): (index, truncate to N
    /// bytes, nonblocking, vnet).
    #[serde(rename = "write")]
    pub overrides: Vec<WriteOverride>,
}

/// One write's deviation from the plan.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteOverride {
    pub index: u64,
    /// Write only the first N bytes of the composed PI + vnet + frame.
    pub truncate: Option<usize>,
    pub nonblocking: Option<bool>,
    pub vnet: Option<WriterVnet>,
}

/// The XDP program a scenario attaches to the written tap (`[xdp]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XdpSpec {
    /// `.o` (clang -target bpf ELF) or `.s` (skbsim eBPF assembly), resolved against the
    /// scenario's directory.
    pub program: PathBuf,
    /// ELF section of the program (default "xdp").
    #[serde(default = "xdp_section")]
    pub section: String,
    pub mode: crate::xdp::XdpMode,
}

impl XdpSpec {
    /// The program's file name, as traces show it.
    pub fn label(&self) -> String {
        self.program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "?".to_string())
    }
}

fn xdp_section() -> String {
    "xdp".to_string()
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

/// The guest side of a vhost-tx scenario (`[vhost]`, read through `file.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "file::VhostKeys")]
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

/// A loaded, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario file.
    pub path: PathBuf,
    /// `<area>/<stem>`, e.g. `tun-read/vlan-8021q-pi`: names the golden directory.
    pub name: String,
    pub description: String,
    /// The input pcap, resolved against the scenario's directory (empty for an `exec`
    /// scenario without one).
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
    /// `[queues]` (tun-read, tap-write): an IFF_MULTI_QUEUE tap with several files.
    pub queues: Option<QueuePlan>,
    /// The MACs put in front of a non-Ethernet capture's frames (`[link]`; every
    /// pipeline reads it).
    pub link: crate::pcap::linktype::EthSynth,
    /// `[exec]`: the program an `exec` scenario runs (paths resolved).
    pub exec: Option<ExecPlan>,
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
        let file = parse_toml(text).map_err(&err)?;
        let mut s = Scenario::try_from(file).map_err(&err)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        if !s.input.as_os_str().is_empty() {
            s.input = dir.join(&s.input);
        }
        if let Some(x) = &mut s.xdp {
            x.program = dir.join(&x.program);
        }
        if let Some(e) = &mut s.exec {
            e.build = e.build.as_ref().map(|b| dir.join(b));
            // A bare name is looked up in PATH when run, as a shell would.
            e.program = e.program.as_ref().map(|p| match p.components().count() {
                1 if p.is_relative() => p.clone(),
                _ => dir.join(p),
            });
        }
        if let Some(q) = &mut s.queues {
            for p in [&mut q.steering, &mut q.filter].into_iter().flatten() {
                *p = dir.join(&*p);
            }
        }
        s.path = path.to_path_buf();
        s.name = Scenario::name_of(path);
        Ok(s)
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
