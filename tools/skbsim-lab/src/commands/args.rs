//! The arguments of `skbsim lab` (clap derives; the CLI names [`LabArgs`] in its command
//! list).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::diff;
use crate as lab;

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Fetch the guest kernel, QEMU and busybox (apt-get download, nothing installed) and
    /// build the base initramfs; print the cache.
    Fetch(LabOpts),
    /// List the guest kernels in the cache and the Debian cloud kernels apt offers.
    Kernels(LabOpts),
    /// The real traces of two kernels (or one kernel with and without `--patch`) compared
    /// per scenario, and whether the model's profiles predict the difference.
    Diff(diff::LabDiffArgs),
    /// Run scenarios' real arms inside the guest kernel and compare with the simulator,
    /// listing every field that differs.
    Conform(LabConformArgs),
    /// Prove GRE works in the guest: a gretap tunnel between two namespaces, pinged.
    Gre(LabOpts),
    /// 802.1Q in the guest: a VLAN device over a tap, read with tx VLAN offload on
    /// (hw-accel splice) and off (software insertion), and received back untagged.
    Vlan(LabOpts),
    /// Every tun ioctl of docs/tun-ioctl.md on the guest kernel, compared row by row with the
    /// model under the guest's profile; the guest's answers are kept as a log.
    Ioctl(LabIoctlArgs),
    /// Run a shell script in the guest (busybox sh; iproute2 is /usr/bin/ip, this skbsim
    /// /usr/bin/skbsim); print its stdout.
    Run(LabRunArgs),
    /// Inside the guest: run the real arm of each scenario, one JSON line per scenario.
    #[command(hide = true)]
    GuestConform {
        paths: Vec<PathBuf>,
        /// Run scenarios of other kernel profiles too, set up as the host profile's.
        #[arg(long)]
        old_profiles: bool,
    },
    /// Inside the guest: the 802.1Q device check, one JSON line per observation.
    #[command(hide = true)]
    GuestVlan,
    /// Inside the guest: the tun ioctl sequence, one JSON line per step.
    #[command(hide = true)]
    GuestIoctl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccelArg {
    Auto,
    Kvm,
    Tcg,
}

#[derive(Debug, Clone, Args)]
pub struct LabOpts {
    /// The guest kernel: a Debian cloud kernel by version (`6.1`, `6.12`: the build apt's
    /// metapackage names) or exact package (`linux-image-6.12.117+deb12-cloud-amd64`).
    #[arg(long, value_name = "VERSION|PACKAGE", default_value = lab::kernel::DEFAULT_KERNEL, conflicts_with = "kernel_dir")]
    pub kernel: String,
    /// A local kernel build instead: a bzImage (`arch/x86/boot/bzImage`, `bzImage` or
    /// `boot/vmlinuz-*`) and the `lib/modules/<release>` tree `make modules_install
    /// INSTALL_MOD_PATH=DIR` leaves, under DIR.
    #[arg(long, value_name = "DIR")]
    pub kernel_dir: Option<PathBuf>,
    #[command(flatten)]
    pub guest: GuestOpts,
}

/// How the guest runs and reports: the same for every lab command, `lab diff` too.
#[derive(Debug, Clone, Args)]
pub struct GuestOpts {
    /// The cache (default $SKBSIM_LAB_CACHE, else $XDG_CACHE_HOME/skbsim-lab, else
    /// ~/.cache/skbsim-lab).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// KVM when /dev/kvm works (auto falls back to TCG and remembers), or force one.
    #[arg(long, value_enum, default_value = "auto")]
    pub accel: AccelArg,
    /// Guest memory in MiB.
    #[arg(long, default_value_t = 1024)]
    pub memory: u32,
    /// Seconds the guest's command may run.
    #[arg(long, default_value_t = 1800)]
    pub timeout: u64,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LabConformArgs {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(default_value = "scenarios/tun-read")]
    pub paths: Vec<PathBuf>,
    /// Run only shard K of N (1-based).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Also run scenarios of other kernel profiles (`linux-4.19`, ...) in the guest, set up
    /// as 6.18 ones, and compare with the simulator under their own profile: which profile
    /// does the guest kernel match?
    #[arg(long)]
    pub old_profiles: bool,
    /// Where to keep the guest's traces (default <cache>/results/<guest kernel>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Extra guest modules to load (tun and bridge always are, vxlan for tap-gro).
    #[arg(long, value_delimiter = ',')]
    pub modules: Vec<String>,
    /// A kernel patch: the modules it touches are rebuilt from Debian's linux-source of
    /// the guest's version against its linux-headers and loaded instead of the stock ones.
    #[arg(long, value_name = "FILE")]
    pub patch: Option<PathBuf>,
    /// The simulator's profile for the guest (default: the one modelling its release: linux-6.1, linux-6.12, or linux-6.1.187 / linux-6.12.107 for the builds before the ip6gretap fix).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    #[command(flatten)]
    pub opts: LabOpts,
}

#[derive(Debug, Args)]
pub struct LabRunArgs {
    /// The shell script.
    pub script: PathBuf,
    /// Guest modules to load (default: every module the lab carries).
    #[arg(long, value_delimiter = ',')]
    pub modules: Vec<String>,
    /// Rebuild and load the modules this kernel patch touches (see `lab conform --patch`).
    #[arg(long, value_name = "FILE")]
    pub patch: Option<PathBuf>,
    /// Host files the script needs (scenarios, pcaps, XDP objects), copied into the guest
    /// at the same absolute paths; the guest starts in this directory, mirrored.
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub opts: LabOpts,
}

#[derive(Debug, Args)]
pub struct LabIoctlArgs {
    /// The model's profile (default: the one modelling the guest's release).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Compare a kept log (`--out` of an earlier run) again instead of booting.
    #[arg(long, value_name = "LOG")]
    pub replay: Option<PathBuf>,
    /// Where to keep the guest's log (default <cache>/results/<guest kernel>/tun-ioctl.jsonl).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub opts: LabOpts,
}
