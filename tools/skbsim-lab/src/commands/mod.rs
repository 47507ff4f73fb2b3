//! `skbsim lab`: a guest Linux kernel under QEMU (Debian 12's cloud kernel, 6.1) for the
//! real arms this machine's kernel cannot run (GRE, 802.1Q devices, vhost_net). The work
//! (fetching, the initramfs, QEMU and its watchdog) is the rest of this crate; this module
//! is the command line and the comparison of the guest's traces with the simulator's. The
//! CLI parses the arguments ([`LabArgs`]) and calls [`lab`] with its [`Skbsim`].
//!
//! - `skbsim lab fetch`: fetch and unpack (first run), build the base initramfs, print the
//!   cache and its size.
//! - `skbsim lab conform [PATH...]`: the real arms run inside the guest (this binary,
//!   copied into the initramfs, as `skbsim lab guest-conform`), their traces come back over
//!   a serial port and are compared with the simulator's here: every differing field of
//!   every event is listed, not just the first. The guest's traces and pcaps are kept in
//!   `<cache>/results/<guest kernel>/`.
//! - `skbsim lab gre`: a gretap tunnel between two namespaces in the guest (iproute2).
//! - `skbsim lab ioctl`: every tun ioctl on the guest kernel, compared with the model under
//!   the guest's profile (`--replay LOG` compares a kept log without a boot).
//! - `skbsim lab run SCRIPT`: any shell script in the guest; its stdout comes back.
//!
//! Exit codes: 0 good, 1 a difference (conform) or a failed check, 2 a failure to run (one
//! line naming the step: download, unpack, modules, initramfs, boot timeout, ...).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate as lab;
use crate::{Accel, KernelChoice, KernelSource, Lab, LabError, LabRun, Payload, RunOptions};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};

mod args;
mod conform;
mod diff;
mod hex;
mod ioctl;
mod ioctl_log;
#[cfg(test)]
mod ioctl_tests;
mod skbsim;
mod vlan;

pub use args::{
    AccelArg, GuestOpts, LabArgs, LabCommand, LabConformArgs, LabIoctlArgs, LabOpts, LabRunArgs,
};
pub use diff::LabDiffArgs;

use skbsim::{out, outln};
pub use skbsim::{ArmOutput, Skbsim};

use conform::{conform, guest_conform};
use vlan::{guest_vlan, vlan};

fn lab_err(e: LabError) -> String {
    e.to_string()
}

fn spinner(json: bool) -> ProgressBar {
    let target = if json {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let pb = ProgressBar::with_draw_target(None, target);
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed:>4} lab: {wide_msg}") {
        pb.set_style(style);
    }
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

pub(super) fn cache_of(opts: &LabOpts) -> PathBuf {
    opts.guest
        .cache
        .clone()
        .unwrap_or_else(lab::default_cache_dir)
}

fn run_options(opts: &LabOpts, name: &str) -> RunOptions {
    RunOptions {
        accel: match opts.guest.accel {
            AccelArg::Auto => Accel::Auto,
            AccelArg::Kvm => Accel::Kvm,
            AccelArg::Tcg => Accel::Tcg,
        },
        memory_mb: opts.guest.memory,
        run_timeout: Duration::from_secs(opts.guest.timeout),
        name: name.to_string(),
        ..RunOptions::default()
    }
}

pub(super) fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

pub(super) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Run `skbsim lab ...`: the exit code, or the one-line error (exit 2).
pub fn lab(args: &LabArgs, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    match &args.command {
        LabCommand::Fetch(opts) => fetch(opts, sk),
        LabCommand::Kernels(opts) => kernels(opts, sk),
        LabCommand::Diff(a) => diff::diff(a, sk),
        LabCommand::Conform(a) => conform(a, sk),
        LabCommand::Gre(opts) => gre(opts, sk),
        LabCommand::Run(a) => run_script(a, sk),
        LabCommand::GuestConform {
            paths,
            old_profiles,
        } => guest_conform(paths, *old_profiles, sk),
        LabCommand::Vlan(opts) => vlan(opts, sk),
        LabCommand::GuestVlan => guest_vlan(sk),
        LabCommand::Ioctl(a) => ioctl::ioctl(a, sk),
        LabCommand::GuestIoctl => ioctl::guest_ioctl(sk),
    }
}

pub(super) fn kernel_choice(opts: &LabOpts) -> KernelChoice {
    match &opts.kernel_dir {
        Some(d) => KernelChoice::Dir(d.clone()),
        None => KernelChoice::Debian(opts.kernel.clone()),
    }
}

pub(super) fn open_lab(opts: &LabOpts, pb: &ProgressBar) -> Result<Lab, String> {
    let cache = cache_of(opts);
    let lab = Lab::open(&cache, &kernel_choice(opts), &|m: &str| {
        pb.set_message(m.to_string())
    })
    .map_err(lab_err)?;
    Ok(lab)
}

/// Where the kernel came from, on one line.
pub(super) fn kernel_source(k: &lab::GuestKernel) -> String {
    match &k.source {
        KernelSource::Debian { package, version } => format!("{package} {version}"),
        KernelSource::Dir(d) => format!("local build {}", d.display()),
    }
}

/// Setup timings as JSON and as one line.
fn setup_report(lab: &Lab) -> (Value, String) {
    let (t, k) = (&lab.tools, &lab.kernel);
    let state = |fetched: bool, time| {
        if fetched {
            format!("fetched in {}", secs(time))
        } else {
            "cached".to_string()
        }
    };
    (
        json!({
            "cache": lab.cache,
            "fetched": t.fetched || k.fetched,
            "fetch_s": (t.fetch_time + k.fetch_time).as_secs_f64(),
            "tools_fetch_s": t.fetch_time.as_secs_f64(),
            "kernel_fetch_s": k.fetch_time.as_secs_f64(),
            "base_initramfs_s": lab.base_time.as_secs_f64(),
            "guest_kernel": k.kver,
            "kernel_source": kernel_source(k),
        }),
        format!(
            "kernel {} ({}) {}, QEMU {}; base initramfs {}",
            k.kver,
            kernel_source(k),
            state(k.fetched, k.fetch_time),
            state(t.fetched, t.fetch_time),
            secs(lab.base_time)
        ),
    )
}

pub(super) fn boot_report(run: &LabRun) -> (Value, String) {
    let b = &run.boot;
    let kvm = b
        .kvm_failure
        .as_ref()
        .map(|k| format!(" (KVM unusable: {k})"))
        .unwrap_or_default();
    (
        json!({
            "accel": b.accel,
            "kvm_failure": b.kvm_failure,
            "initrd_bytes": run.initrd_bytes,
            "initrd_s": run.initrd_time.as_secs_f64(),
            "boot_s": b.boot_time.as_secs_f64(),
            "run_s": b.run_time.as_secs_f64(),
            "qemu_s": b.total_time.as_secs_f64(),
            "guest": b.guest_kernel,
            "run_dir": run.run_dir,
        }),
        format!(
            "guest {} under {}{kvm}: initrd {} in {}, boot {}, command {}, QEMU total {}",
            b.guest_kernel,
            b.accel,
            mib(run.initrd_bytes),
            secs(run.initrd_time),
            secs(b.boot_time),
            secs(b.run_time),
            secs(b.total_time)
        ),
    )
}

fn fetch(opts: &LabOpts, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    let pb = spinner(opts.guest.json);
    let lab = open_lab(opts, &pb)?;
    pb.finish_and_clear();
    let size = lab::fetch::dir_size(&lab.cache);
    let (setup, line) = setup_report(&lab);
    if opts.guest.json {
        outln!(
            sk,
            "{}",
            json!({"setup": setup, "cache_bytes": size, "packages": lab.tools.packages})
        )?;
    } else {
        outln!(sk, "{line}")?;
        outln!(sk, "cache {} ({})", lab.cache.display(), mib(size))?;
        outln!(
            sk,
            "QEMU {}\nkernel {}\n{} packages: {}",
            lab.tools.qemu.display(),
            lab.kernel.vmlinuz.display(),
            lab.tools.packages.len(),
            lab.tools.packages.join(", ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn kernels(opts: &LabOpts, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    let cache = cache_of(opts);
    let cached = lab::kernel::cached(&cache);
    let local = lab::kernel::cached_local(&cache);
    let available = lab::kernel::available().map_err(lab_err)?;
    // What `--kernel 6.1` / `--kernel 6.12` resolve to now.
    let mut series: Vec<String> = available.iter().map(|k| k.series.clone()).collect();
    series.dedup();
    let resolved: Vec<(String, Option<String>)> = series
        .iter()
        .map(|s| (s.clone(), lab::kernel::resolve_package(s).ok()))
        .collect();
    if opts.guest.json {
        outln!(
            sk,
            "{}",
            json!({
                "cache": cache,
                "cached": cached.iter().map(|k| json!({"package": k.package, "version": k.version, "release": k.kver, "bytes": k.bytes})).collect::<Vec<_>>(),
                "available": available.iter().map(|k| json!({"series": k.series, "package": k.package, "cached": cached.iter().any(|c| c.package == k.package)})).collect::<Vec<_>>(),
                "resolves": resolved.iter().map(|(s, p)| json!({"kernel": s, "package": p})).collect::<Vec<_>>(),
                "local": local.iter().map(|k| json!({"release": k.kver, "tree": k.tree, "tree_present": k.tree_present, "cache_dir": k.cache_dir, "bytes": k.bytes})).collect::<Vec<_>>(),
            })
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        sk,
        "cached in {}:",
        lab::kernel::kernels_dir(&cache).display()
    )?;
    if cached.is_empty() {
        outln!(sk, "  (none)")?;
    }
    for k in &cached {
        outln!(sk, "  {}  {}  {}", k.package, k.version, mib(k.bytes))?;
    }
    outln!(
        sk,
        "local builds (--kernel-dir) in {}:",
        lab::kernel::local_dir(&cache).display()
    )?;
    if local.is_empty() {
        outln!(sk, "  (none)")?;
    }
    for k in &local {
        let tree = match (&k.tree, k.tree_present) {
            (Some(t), true) => format!("--kernel-dir {}", t.display()),
            (Some(t), false) => format!(
                "{} (gone; removed at the next --kernel-dir run)",
                t.display()
            ),
            (None, _) => "(tree not recorded; removed at the next --kernel-dir run)".to_string(),
        };
        outln!(sk, "  {}  {}  {}", k.kver, mib(k.bytes), tree)?;
    }
    outln!(sk, "available (apt):")?;
    for (s, p) in &resolved {
        let builds: Vec<&str> = available
            .iter()
            .filter(|k| &k.series == s)
            .map(|k| k.package.as_str())
            .collect();
        outln!(
            sk,
            "  --kernel {s} -> {}  ({} builds)",
            p.as_deref().unwrap_or("(no metapackage)"),
            builds.len()
        )?;
        for b in builds {
            let mark = if cached.iter().any(|c| c.package == b) {
                "  [cached]"
            } else {
                ""
            };
            outln!(sk, "      {b}{mark}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_script(a: &LabRunArgs, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    let script =
        std::fs::read_to_string(&a.script).map_err(|e| format!("{}: {e}", a.script.display()))?;
    let modules = if a.modules.is_empty() {
        lab::image::LAB_MODULES
            .iter()
            .map(|m| m.to_string())
            .collect()
    } else {
        a.modules.clone()
    };
    let files = a
        .files
        .iter()
        .map(|f| {
            std::fs::canonicalize(f)
                .ok()
                .filter(|p| p.is_file())
                .ok_or_else(|| format!("lab run --file {}: not a readable file", f.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // This skbsim as /usr/bin/skbsim, as the help says: a script can run the arms.
    let (run, _) = boot_with(
        &a.opts,
        "script",
        script,
        modules,
        files,
        true,
        a.patch.as_deref(),
    )?;
    out!(sk, "{}", run.boot.output)?;
    eprint!("{}", run.boot.stderr);
    eprintln!("lab: {}", boot_report(&run).1);
    Ok(if run.boot.rc == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Open the lab and boot one payload; returns the run and the setup report.
pub(super) fn boot_with(
    opts: &LabOpts,
    name: &str,
    script: String,
    modules: Vec<String>,
    files: Vec<PathBuf>,
    skbsim: bool,
    patch: Option<&Path>,
) -> Result<(LabRun, (Value, String)), String> {
    let pb = spinner(opts.guest.json);
    let mut lab = open_lab(opts, &pb)?;
    let mut setup = setup_report(&lab);
    if let Some(patch) = patch {
        let progress = |m: &str| pb.set_message(m.to_string());
        let built =
            lab::patch::rebuild(&lab.cache, &lab.kernel, patch, &progress).map_err(lab_err)?;
        let names: Vec<String> = built.modules.iter().map(|m| m.0.clone()).collect();
        let files: Vec<&Path> = built.modules.iter().map(|m| m.1.as_path()).collect();
        setup.0["patch"] = json!({
            "file": patch,
            "modules": names,
            "built": files,
            "cached": built.cached,
            "build_s": built.time.as_secs_f64(),
        });
        for (name, file) in built.modules {
            lab.replace_module(&name, file).map_err(lab_err)?;
        }
        setup.1.push_str(&format!(
            "; patch {}: rebuilt {} ({})",
            patch.display(),
            names.join(", "),
            if built.cached {
                "cached".to_string()
            } else {
                format!("built in {}", secs(built.time))
            }
        ));
    }
    let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let skbsim = if skbsim {
        Some(std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?)
    } else {
        None
    };
    let payload = Payload {
        script,
        modules,
        cwd,
        files,
        skbsim,
    };
    let progress = |m: &str| pb.set_message(m.to_string());
    let run = lab.run(&payload, &run_options(opts, name), &progress);
    pb.finish_and_clear();
    Ok((run.map_err(lab_err)?, setup))
}

const GRE_SCRIPT: &str = r#"set -e
IP=/usr/bin/ip
$IP netns add a
$IP netns add b
$IP link add va type veth peer name vb
$IP link set va netns a
$IP link set vb netns b
$IP -n a link set lo up
$IP -n b link set lo up
$IP -n a addr add 192.0.2.1/24 dev va
$IP -n b addr add 192.0.2.2/24 dev vb
$IP -n a link set va up
$IP -n b link set vb up
$IP -n a link add gt0 type gretap local 192.0.2.1 remote 192.0.2.2 key 7
$IP -n b link add gt0 type gretap local 192.0.2.2 remote 192.0.2.1 key 7
$IP -n a addr add 198.51.100.1/24 dev gt0
$IP -n b addr add 198.51.100.2/24 dev gt0
$IP -n a link set gt0 up
$IP -n b link set gt0 up
echo "link: $($IP -d -n a link show gt0 | tr '\n' ' ')"
$IP netns exec a ping -c 3 -W 2 198.51.100.2 | sed 's/^/ping: /'
echo "stats-a: $($IP -s -n a link show gt0 | tr '\n' ' ')"
echo "stats-b-veth: $($IP -s -n b link show vb | tr '\n' ' ')"
"#;

fn gre(opts: &LabOpts, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    let modules = vec!["ip_gre".to_string(), "veth".to_string()];
    let (run, setup) = boot_with(
        opts,
        "gre",
        GRE_SCRIPT.to_string(),
        modules,
        Vec::new(),
        false,
        None,
    )?;
    let out = &run.boot.output;
    let received = out
        .lines()
        .find(|l| l.contains("packets received"))
        .map(str::trim)
        .unwrap_or("");
    let ok = run.boot.rc == 0 && received.contains(" 3 packets received");
    let kind = out
        .lines()
        .find_map(|l| l.strip_prefix("link: "))
        .and_then(|l| l.split("gretap").nth(1).map(|r| format!("gretap{r}")))
        .unwrap_or_default();
    let (boot, line) = boot_report(&run);
    if opts.guest.json {
        outln!(
            sk,
            "{}",
            json!({"ok": ok, "rc": run.boot.rc, "output": out, "stderr": run.boot.stderr, "setup": setup.0, "boot": boot})
        )?;
    } else {
        if ok {
            outln!(sk, "gretap works in the guest: {received}")?;
            outln!(
                sk,
                "  {}",
                kind.split_whitespace()
                    .take(12)
                    .collect::<Vec<_>>()
                    .join(" ")
            )?;
        } else {
            outln!(sk, "gretap FAILED in the guest (rc {}):", run.boot.rc)?;
            out!(sk, "{out}")?;
            eprint!("{}", run.boot.stderr);
        }
        eprintln!("lab: {}", setup.1);
        eprintln!("lab: {line}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
