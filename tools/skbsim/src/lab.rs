//! `skbsim lab`: a guest Linux kernel under QEMU (Debian 12's cloud kernel, 6.1) for the
//! real arms this machine's kernel cannot run (GRE, 802.1Q devices, vhost_net). The work
//! (fetching, the initramfs, QEMU and its watchdog) is `skbsim_kernel::lab`; this file is
//! the command line and the comparison of the guest's traces with the simulator's.
//!
//! - `skbsim lab fetch`: fetch and unpack (first run), build the base initramfs, print the
//!   cache and its size.
//! - `skbsim lab conform [PATH...]`: the real arms run inside the guest (this binary,
//!   copied into the initramfs, as `skbsim lab guest-conform`), their traces come back over
//!   a serial port and are compared with the simulator's here: every differing field of
//!   every event is listed, not just the first. The guest's traces and pcaps are kept in
//!   `<cache>/results/<guest kernel>/`.
//! - `skbsim lab gre`: a gretap tunnel between two namespaces in the guest (iproute2).
//! - `skbsim lab run SCRIPT`: any shell script in the guest; its stdout comes back.
//!
//! Exit codes: 0 good, 1 a difference (conform) or a failed check, 2 a failure to run (one
//! line naming the step: download, unpack, modules, initramfs, boot timeout, ...).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use sim::profile::KernelProfile;
use sim::scenario::{Pipeline, Scenario};
use sim::trace::gro_observed::observable;
use skbsim::cli_error::CliError;
use skbsim::conform::{compare_scenario_outputs, model_only_fields};
use skbsim::runner::{run_sim, run_tap, tap_ready, ScenarioOutput};
use skbsim::suite::load_scenarios;
use skbsim_kernel::lab::{self, vlan, Accel, Lab, LabError, LabRun, Payload, RunOptions};

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
    /// Run scenarios' real arms inside the guest kernel and compare with the simulator,
    /// listing every field that differs.
    Conform(LabConformArgs),
    /// Prove GRE works in the guest: a gretap tunnel between two namespaces, pinged.
    Gre(LabOpts),
    /// 802.1Q in the guest: a VLAN device over a tap, read with tx VLAN offload on
    /// (hw-accel splice) and off (software insertion), and received back untagged.
    Vlan(LabOpts),
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccelArg {
    Auto,
    Kvm,
    Tcg,
}

#[derive(Debug, Clone, Args)]
pub struct LabOpts {
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
    #[command(flatten)]
    pub opts: LabOpts,
}

fn lab_err(e: LabError) -> CliError {
    CliError(e.to_string())
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

fn cache_of(opts: &LabOpts) -> PathBuf {
    opts.cache.clone().unwrap_or_else(lab::default_cache_dir)
}

fn run_options(opts: &LabOpts, name: &str) -> RunOptions {
    RunOptions {
        accel: match opts.accel {
            AccelArg::Auto => Accel::Auto,
            AccelArg::Kvm => Accel::Kvm,
            AccelArg::Tcg => Accel::Tcg,
        },
        memory_mb: opts.memory,
        run_timeout: Duration::from_secs(opts.timeout),
        name: name.to_string(),
        ..RunOptions::default()
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

pub fn lab(args: &LabArgs) -> Result<ExitCode, CliError> {
    match &args.command {
        LabCommand::Fetch(opts) => fetch(opts),
        LabCommand::Conform(a) => conform(a),
        LabCommand::Gre(opts) => gre(opts),
        LabCommand::Run(a) => run_script(a),
        LabCommand::GuestConform {
            paths,
            old_profiles,
        } => guest_conform(paths, *old_profiles),
        LabCommand::Vlan(opts) => vlan(opts),
        LabCommand::GuestVlan => guest_vlan(),
    }
}

fn open_lab(opts: &LabOpts, pb: &ProgressBar) -> Result<Lab, CliError> {
    let cache = cache_of(opts);
    let lab = Lab::open(&cache, &|m: &str| pb.set_message(m.to_string())).map_err(lab_err)?;
    Ok(lab)
}

/// Setup timings as JSON and as one line.
fn setup_report(lab: &Lab) -> (Value, String) {
    let a = &lab.artefacts;
    let install = if a.fetched {
        format!("fetched in {}", secs(a.fetch_time))
    } else {
        "cached".to_string()
    };
    (
        json!({
            "cache": lab.cache,
            "fetched": a.fetched,
            "fetch_s": a.fetch_time.as_secs_f64(),
            "base_initramfs_s": lab.base_time.as_secs_f64(),
            "guest_kernel": a.kver,
        }),
        format!(
            "kernel {} and QEMU {install}; base initramfs {}",
            a.kver,
            secs(lab.base_time)
        ),
    )
}

fn boot_report(run: &LabRun) -> (Value, String) {
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

fn fetch(opts: &LabOpts) -> Result<ExitCode, CliError> {
    let pb = spinner(opts.json);
    let lab = open_lab(opts, &pb)?;
    pb.finish_and_clear();
    let size = lab::fetch::dir_size(&lab.cache);
    let (setup, line) = setup_report(&lab);
    if opts.json {
        println!(
            "{}",
            json!({"setup": setup, "cache_bytes": size, "packages": lab.artefacts.packages})
        );
    } else {
        println!("{line}");
        println!("cache {} ({})", lab.cache.display(), mib(size));
        println!(
            "QEMU {}\nkernel {}\n{} packages: {}",
            lab.artefacts.qemu.display(),
            lab.artefacts.vmlinuz.display(),
            lab.artefacts.packages.len(),
            lab.artefacts.packages.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_script(a: &LabRunArgs) -> Result<ExitCode, CliError> {
    let script = std::fs::read_to_string(&a.script)
        .map_err(|e| CliError(format!("{}: {e}", a.script.display())))?;
    let modules = if a.modules.is_empty() {
        lab::image::LAB_MODULES
            .iter()
            .map(|m| m.to_string())
            .collect()
    } else {
        a.modules.clone()
    };
    let (run, _) = boot_with(&a.opts, "script", script, modules, Vec::new(), false)?;
    print!("{}", run.boot.output);
    eprint!("{}", run.boot.stderr);
    eprintln!("lab: {}", boot_report(&run).1);
    Ok(if run.boot.rc == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Open the lab and boot one payload; returns the run and the setup report.
fn boot_with(
    opts: &LabOpts,
    name: &str,
    script: String,
    modules: Vec<String>,
    files: Vec<PathBuf>,
    skbsim: bool,
) -> Result<(LabRun, (Value, String)), CliError> {
    let pb = spinner(opts.json);
    let lab = open_lab(opts, &pb)?;
    let setup = setup_report(&lab);
    let cwd = std::env::current_dir().map_err(|e| CliError(format!("current directory: {e}")))?;
    let skbsim = if skbsim {
        Some(std::env::current_exe().map_err(|e| CliError(format!("this binary's path: {e}")))?)
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

fn gre(opts: &LabOpts) -> Result<ExitCode, CliError> {
    let modules = vec!["ip_gre".to_string(), "veth".to_string()];
    let (run, setup) = boot_with(
        opts,
        "gre",
        GRE_SCRIPT.to_string(),
        modules,
        Vec::new(),
        false,
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
    if opts.json {
        println!(
            "{}",
            json!({"ok": ok, "rc": run.boot.rc, "output": out, "stderr": run.boot.stderr, "setup": setup.0, "boot": boot})
        );
    } else {
        if ok {
            println!("gretap works in the guest: {received}");
            println!(
                "  {}",
                kind.split_whitespace()
                    .take(12)
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        } else {
            println!("gretap FAILED in the guest (rc {}):", run.boot.rc);
            print!("{out}");
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

// ---------------------------------------------------------------------------------------
// 802.1Q

fn guest_vlan() -> Result<ExitCode, CliError> {
    tap_ready("lab guest-vlan")?;
    let obs = vlan::vlan_device_check().map_err(|e| CliError(format!("vlan check: {e}")))?;
    for o in obs {
        println!(
            "{}",
            json!({
                "case": o.case,
                "pi": o.pi.map(|p| json!({"flags": p.flags, "proto": p.proto})),
                "vnet": o.vnet.map(|v| json!({"flags": v.flags, "gso_type": v.gso_type, "hdr_len": v.hdr_len,
                    "gso_size": v.gso_size, "csum_start": v.csum_start, "csum_offset": v.csum_offset})),
                "frame": hex(&o.frame),
                "aux_vlan": o.aux_vlan.map(|(valid, tci)| json!({"valid": valid, "tci": tci})),
                "tx_bytes": o.tx_bytes,
            })
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One line for an observation of the 802.1Q check.
fn vlan_line(o: &Value) -> String {
    let frame = o
        .get("frame")
        .and_then(Value::as_str)
        .and_then(unhex)
        .unwrap_or_default();
    let tag = match frame.get(12..16) {
        Some([0x81, 0x00, hi, lo]) => format!(
            "802.1Q tag vid {} at byte 12",
            u16::from_be_bytes([*hi, *lo]) & 0xfff
        ),
        _ => format!(
            "untagged (ethertype {:02x}{:02x})",
            frame.get(12).copied().unwrap_or(0),
            frame.get(13).copied().unwrap_or(0)
        ),
    };
    let mut s = format!("{} bytes, {tag}", frame.len());
    if let Some(pi) = o.get("pi").filter(|p| !p.is_null()) {
        s.push_str(&format!(
            ", pi flags {:#06x} proto {:#06x}",
            pi.get("flags").and_then(Value::as_u64).unwrap_or(0),
            pi.get("proto").and_then(Value::as_u64).unwrap_or(0)
        ));
    }
    if let Some(v) = o.get("vnet").filter(|p| !p.is_null()) {
        s.push_str(&format!(", vnet {v}"));
    }
    if let Some(t) = o.get("tx_bytes").and_then(Value::as_u64) {
        s.push_str(&format!(", tx_bytes {t}"));
    }
    if let Some(a) = o.get("aux_vlan").filter(|p| !p.is_null()) {
        s.push_str(&format!(", AF_PACKET vlan {a}"));
    }
    s
}

fn vlan(opts: &LabOpts) -> Result<ExitCode, CliError> {
    let script = format!("{} lab guest-vlan\n", lab::GUEST_SKBSIM);
    let modules = vec!["tun".to_string(), "8021q".to_string()];
    let (run, setup) = boot_with(opts, "vlan", script, modules, Vec::new(), true)?;
    let obs: Vec<Value> = run
        .boot
        .output
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let find = |case: &str| {
        obs.iter()
            .find(|o| o.get("case").and_then(Value::as_str) == Some(case))
    };
    let frame_of = |o: Option<&Value>| {
        o.and_then(|o| o.get("frame"))
            .and_then(Value::as_str)
            .and_then(unhex)
    };
    let proto_of = |o: Option<&Value>| {
        o.and_then(|o| o.get("pi"))
            .and_then(|p| p.get("proto"))
            .and_then(Value::as_u64)
    };
    let (on, off, rx) = (find("tx offload on"), find("tx offload off"), find("rx"));
    let sent = vlan::udp_frame(64);
    let mut tagged = sent[..12].to_vec();
    tagged.extend([0x81, 0x00, 0x00, vlan::VID as u8]);
    tagged.extend(&sent[12..]);
    let checks = [
        (
            "the tap reads the tagged frame with offload on",
            frame_of(on).as_deref() == Some(&tagged[..]),
        ),
        (
            "the same bytes with offload off (software insertion)",
            frame_of(off).as_deref() == Some(&tagged[..]),
        ),
        (
            "pi.proto is the inner ethertype 0x0800 with offload on (hw-accel splice)",
            proto_of(on) == Some(0x0800),
        ),
        (
            "pi.proto is the TPID 0x8100 with offload off (vlan_insert_tag_set_proto)",
            proto_of(off) == Some(0x8100),
        ),
        (
            "a tagged frame written into the tap reaches the VLAN device untagged",
            frame_of(rx).as_deref() == Some(&sent[..]),
        ),
    ];
    let ok = run.boot.rc == 0 && checks.iter().all(|c| c.1);
    let (boot, line) = boot_report(&run);
    if opts.json {
        println!(
            "{}",
            json!({"ok": ok, "observations": obs, "checks": checks.iter().map(|c| json!({"check": c.0, "ok": c.1})).collect::<Vec<_>>(),
                   "stderr": run.boot.stderr, "setup": setup.0, "boot": boot})
        );
    } else {
        println!(
            "802.1Q device {} (vid {}) over tap {} in the guest {}:",
            vlan::VLAN_DEV,
            vlan::VID,
            vlan::TAP,
            run.boot.guest_kernel
        );
        for o in &obs {
            println!(
                "  {:<15} {}",
                o.get("case").and_then(Value::as_str).unwrap_or("?"),
                vlan_line(o)
            );
        }
        for (what, good) in &checks {
            println!("  {} {what}", if *good { "ok  " } else { "FAIL" });
        }
        if run.boot.rc != 0 {
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

// ---------------------------------------------------------------------------------------
// conform in the guest

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// In the guest: one JSON line per scenario on stdout (the data channel); progress on
/// stderr (the console).
fn guest_conform(paths: &[PathBuf], old_profiles: bool) -> Result<ExitCode, CliError> {
    tap_ready("lab guest-conform")?;
    let scenarios = load_scenarios(paths, None)?;
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let emit = |out: &mut std::io::StdoutLock<'_>, v: Value| {
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    };
    emit(&mut out, json!({"kernel": kernel.trim()}));
    for (i, s) in scenarios.iter().enumerate() {
        eprintln!("scenario {}/{}: {}", i + 1, scenarios.len(), s.name);
        let start = Instant::now();
        let host = KernelProfile::default();
        let forced;
        let s = if old_profiles && s.profile.name != host.name {
            // The arms refuse other profiles; the setup does not depend on the profile,
            // so run it as the host profile's and let the host compare the trace with
            // the simulator under the scenario's own profile.
            let mut c = s.clone();
            c.profile = host;
            c.sim_only = None;
            forced = c;
            &forced
        } else {
            s
        };
        let v = if let Some(reason) = &s.sim_only {
            json!({"scenario": s.name, "status": "sim-only", "reason": reason})
        } else if let Err(why) = skbsim_kernel::arm::real_arm(s.pipeline) {
            json!({"scenario": s.name, "status": "no-real-arm", "reason": why})
        } else {
            match run_tap(s) {
                Ok(o) => json!({
                    "scenario": s.name,
                    "status": "ok",
                    "trace": o.trace,
                    "pcap": hex(&o.pcap),
                    "frames": o.frames,
                    "notes": o.notes,
                    "ms": start.elapsed().as_millis() as u64,
                }),
                Err(e) => {
                    let prefix = format!("{}: ", s.name);
                    let msg = e.0.strip_prefix(&prefix).unwrap_or(&e.0).to_string();
                    json!({"scenario": s.name, "status": "error", "error": msg})
                }
            }
        };
        emit(&mut out, v);
    }
    Ok(ExitCode::SUCCESS)
}

/// One differing field between the simulator's and the guest's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDiff {
    /// `read 0 (frame 0, ts 1.000000000)`, `header`, `totals`.
    pub event: String,
    /// `vnet`, `counters`, `bytes+0010`, `result`, or `event` when a whole event is
    /// missing on one side.
    pub field: String,
    pub sim: String,
    pub real: String,
}

type Block = (String, Vec<(String, String)>);

/// The events of a text trace: the header, then each blank-line-separated block named by
/// its first line up to `: ` (its rest is the `result` field). Hexdump lines are
/// `bytes+XXXX` fields.
fn trace_blocks(text: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut current: Option<Block> = None;
    let mut first = true;
    for line in text.lines() {
        if line.trim().is_empty() {
            if let Some(b) = current.take() {
                out.push(b);
            }
            first = false;
            continue;
        }
        let t = line.trim_start();
        let (k, v) = match t.split_once(": ") {
            Some((k, v)) if k.len() == 4 && k.chars().all(|c| c.is_ascii_hexdigit()) => {
                (format!("bytes+{k}"), v.to_string())
            }
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (t.trim_end_matches(':').to_string(), String::new()),
        };
        match current.as_mut() {
            Some(b) => b.1.push((k, v)),
            None if first => current = Some(("header".into(), vec![(k, v)])),
            None => current = Some((k, vec![("result".into(), v)])),
        }
    }
    if let Some(b) = current {
        out.push(b);
    }
    out
}

/// Every field that differs between two traces, events matched by name, fields by key
/// (fields in `ignore` and the `bytes:` heading left out).
pub fn all_differences(sim: &str, real: &str, ignore: &[&str]) -> Vec<FieldDiff> {
    let keep = |k: &str| {
        k != "bytes"
            && !ignore
                .iter()
                .any(|i| k == *i || k.starts_with(&format!("{i}+")))
    };
    let a = trace_blocks(sim);
    let b = trace_blocks(real);
    let b_by_name: HashMap<&str, &Block> = b.iter().map(|x| (x.0.as_str(), x)).collect();
    let a_names: std::collections::HashSet<&str> = a.iter().map(|x| x.0.as_str()).collect();
    let mut out = Vec::new();
    let absent = "(absent)".to_string();
    for (event, fa) in &a {
        let Some((_, fb)) = b_by_name.get(event.as_str()) else {
            out.push(FieldDiff {
                event: event.clone(),
                field: "event".into(),
                sim: "present".into(),
                real: absent.clone(),
            });
            continue;
        };
        let ma: Vec<&(String, String)> = fa.iter().filter(|f| keep(&f.0)).collect();
        let mb: Vec<&(String, String)> = fb.iter().filter(|f| keep(&f.0)).collect();
        for (k, v) in &ma {
            let other = mb.iter().find(|f| &f.0 == k).map(|f| &f.1);
            if other != Some(v) {
                out.push(FieldDiff {
                    event: event.clone(),
                    field: k.clone(),
                    sim: v.clone(),
                    real: other.cloned().unwrap_or_else(|| absent.clone()),
                });
            }
        }
        for (k, v) in &mb {
            if !ma.iter().any(|f| &f.0 == k) {
                out.push(FieldDiff {
                    event: event.clone(),
                    field: k.clone(),
                    sim: absent.clone(),
                    real: v.clone(),
                });
            }
        }
    }
    for (event, _) in &b {
        if !a_names.contains(event.as_str()) {
            out.push(FieldDiff {
                event: event.clone(),
                field: "event".into(),
                sim: absent.clone(),
                real: "present".into(),
            });
        }
    }
    out
}

fn scenario_files(s: &Scenario) -> Vec<PathBuf> {
    let mut files = vec![s.path.clone(), s.input.clone()];
    if let Some(x) = &s.xdp {
        files.push(x.program.clone());
    }
    files
        .into_iter()
        .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
        .collect()
}

fn conform(a: &LabConformArgs) -> Result<ExitCode, CliError> {
    let opts = &a.opts;
    let scenarios = load_scenarios(&a.paths, a.shard.as_deref())?;
    let mut files = Vec::new();
    let mut guest_paths = Vec::new();
    for s in &scenarios {
        let f = scenario_files(s);
        guest_paths.push(lab::shell_quote(&f[0].to_string_lossy()));
        files.extend(f);
    }
    let script = format!(
        "{} lab guest-conform {}{}\n",
        lab::GUEST_SKBSIM,
        if a.old_profiles {
            "--old-profiles "
        } else {
            ""
        },
        guest_paths.join(" ")
    );
    // What the arms need and nothing more: 8021q, for one, would add 802.1Q GRO, which
    // the 6.18 host (built without it) does not have.
    let mut modules = vec!["tun".to_string(), "bridge".to_string()];
    if scenarios.iter().any(|s| s.pipeline == Pipeline::TapGro) {
        modules.push("vxlan".to_string());
    }
    modules.extend(a.modules.iter().cloned());
    let (run, setup) = boot_with(opts, "conform", script, modules, files, true)?;
    if run.boot.rc != 0 {
        let last = run
            .boot
            .stderr
            .lines()
            .rev()
            .find(|l| l.contains("skbsim"))
            .unwrap_or("");
        return Err(CliError(format!(
            "lab guest: skbsim exited {} in the guest: {last}",
            run.boot.rc
        )));
    }
    let mut guest: HashMap<String, Value> = HashMap::new();
    let mut kernel = String::new();
    for line in run.boot.output.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(k) = v.get("kernel").and_then(Value::as_str) {
            kernel = k.to_string();
        } else if let Some(name) = v.get("scenario").and_then(Value::as_str) {
            guest.insert(name.to_string(), v);
        }
    }
    let out_dir = a
        .out
        .clone()
        .unwrap_or_else(|| cache_of(opts).join("results").join(&kernel));
    let (mut passed, mut failed, mut sim_only, mut errors, mut no_arm) = (0, 0, 0, 0, 0);
    let mut results = Vec::new();
    let mut text = Vec::new();
    for s in &scenarios {
        let Some(g) = guest.get(&s.name) else {
            errors += 1;
            results.push(
                json!({"scenario": s.name, "status": "error", "error": "no result from the guest"}),
            );
            text.push(format!("   error  {}: no result from the guest", s.name));
            continue;
        };
        let status = g.get("status").and_then(Value::as_str).unwrap_or("");
        let reason = g
            .get("reason")
            .or_else(|| g.get("error"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match status {
            "sim-only" => {
                sim_only += 1;
                results.push(json!({"scenario": s.name, "status": "sim-only", "reason": reason}));
                text.push(format!("sim-only  {}: {reason}", s.name));
                continue;
            }
            "no-real-arm" => {
                no_arm += 1;
                results
                    .push(json!({"scenario": s.name, "status": "no-real-arm", "reason": reason}));
                text.push(format!(" no-arm  {}: {reason}", s.name));
                continue;
            }
            "ok" => {}
            _ => {
                errors += 1;
                results.push(json!({"scenario": s.name, "status": "error", "error": reason}));
                text.push(format!(
                    "   error  {}: real kernel (guest): {reason}",
                    s.name
                ));
                continue;
            }
        }
        let mut trace = g
            .get("trace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let host = KernelProfile::default();
        // The guest runs Debian's 6.1: a host-profile scenario is compared with the
        // simulator under linux-6.1, the guest kernel's rules.
        let mut sim_scenario = s.clone();
        if s.profile.name == host.name {
            sim_scenario.profile = sim::profile::LINUX_6_1;
            trace = trace.replacen(
                &format!("profile: {}", host.name),
                &format!("profile: {}", sim::profile::LINUX_6_1.name),
                1,
            );
        } else if a.old_profiles {
            // Set up as a host-profile scenario in the guest (see guest-conform).
            trace = trace.replacen(
                &format!("profile: {}", host.name),
                &format!("profile: {}", s.profile.name),
                1,
            );
        }
        let real = ScenarioOutput {
            trace,
            json: Value::Null,
            pcap: g
                .get("pcap")
                .and_then(Value::as_str)
                .and_then(unhex)
                .unwrap_or_default(),
            frames: g.get("frames").and_then(Value::as_u64).unwrap_or(0),
            notes: g
                .get("notes")
                .and_then(Value::as_array)
                .map(|n| {
                    n.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        };
        let dir = out_dir.join(&s.name);
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("trace.txt"), &real.trace);
        let _ = std::fs::write(dir.join("read.pcap"), &real.pcap);
        let sim = match run_sim(&sim_scenario, None) {
            Ok(o) => o,
            Err(e) => {
                errors += 1;
                results.push(json!({"scenario": s.name, "status": "error", "error": format!("simulator: {e}")}));
                text.push(format!("   error  {}: simulator: {e}", s.name));
                continue;
            }
        };
        let first = compare_scenario_outputs(s, &sim, &real)?;
        let diffs = if s.pipeline == Pipeline::TapGro {
            // What the real GRO arm can observe, as `skbsim conform` compares it.
            all_differences(
                &observable(&sim.trace),
                &observable(&real.trace),
                &skbsim::gro_real::ignored_fields(),
            )
        } else {
            all_differences(&sim.trace, &real.trace, &model_only_fields(s.pipeline))
        };
        let reads = real
            .trace
            .lines()
            .filter(|l| l.starts_with("read "))
            .count();
        match first {
            None => {
                passed += 1;
                results.push(json!({"scenario": s.name, "status": "pass", "frames": real.frames, "reads": reads, "notes": real.notes}));
                let mut t = format!(
                    "    pass  {}  ({} frames, {reads} reads)",
                    s.name, real.frames
                );
                for n in &real.notes {
                    t.push_str(&format!("\n          note: {n}"));
                }
                text.push(t);
            }
            Some(m) => {
                failed += 1;
                let list: Vec<Value> = diffs
                    .iter()
                    .map(|d| json!({"event": d.event, "field": d.field, "sim": d.sim, "real": d.real}))
                    .collect();
                results.push(json!({
                    "scenario": s.name,
                    "status": "fail",
                    "divergence": {"read": m.read, "field": m.field, "sim": m.sim, "real": m.real},
                    "differences": list,
                    "notes": real.notes,
                }));
                let mut t = format!(
                    "    FAIL  {}  ({} differing fields; first `{}` {})",
                    s.name,
                    diffs.len().max(1),
                    m.read,
                    m.field
                );
                if diffs.is_empty() {
                    t.push_str(&format!(
                        "\n          {} `{}`: sim {} | guest {}",
                        m.read, m.field, m.sim, m.real
                    ));
                }
                for d in &diffs {
                    t.push_str(&format!(
                        "\n          {}  {}:\n            sim:   {}\n            guest: {}",
                        d.event, d.field, d.sim, d.real
                    ));
                }
                text.push(t);
            }
        }
    }
    let size = lab::fetch::dir_size(&cache_of(opts));
    let (boot, boot_line) = boot_report(&run);
    let summary_json = json!({
        "guest_kernel": kernel,
        "results": results,
        "passed": passed,
        "failed": failed,
        "sim_only": sim_only,
        "errors": errors,
        "no_real_arm": no_arm,
        "setup": setup.0,
        "boot": boot,
        "cache_bytes": size,
        "traces": out_dir,
    });
    let _ = std::fs::create_dir_all(&out_dir);
    let _ = std::fs::write(out_dir.join("summary.json"), format!("{summary_json:#}\n"));
    if opts.json {
        println!("{summary_json}");
    } else {
        for t in &text {
            println!("{t}");
        }
        let arm = if no_arm > 0 {
            format!(", {no_arm} without a real arm")
        } else {
            String::new()
        };
        println!(
            "{passed} passed, {failed} failed, {sim_only} sim-only{arm} (real arm in guest {kernel} vs the simulator)"
        );
        eprintln!("lab: {}", setup.1);
        eprintln!("lab: {boot_line}");
        eprintln!(
            "lab: guest traces in {}; cache {} ({})",
            out_dir.display(),
            cache_of(opts).display(),
            mib(size)
        );
    }
    Ok(if errors > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIM: &str = "scenario: tun-read/x\nbackend: sim\n\nread 0 (frame 0, ts 1.000000000): buffer 100 -> 64\n  skb: len 60\n  vnet: flags 0 csum_start 0\n  counters: tx_packets 1\n  bytes:\n    0000: 01 02\n    0010: 03 04\n\ntotals: reads 1\n";

    #[test]
    fn every_differing_field_is_listed() {
        let real = SIM
            .replace("backend: sim", "backend: tap")
            .replace("  skb: len 60\n", "")
            .replace("flags 0 csum_start 0", "flags 0 csum_start 4")
            .replace("0010: 03 04", "0010: 03 05")
            .replace("reads 1", "reads 2");
        let d = all_differences(SIM, &real, &["backend", "skb"]);
        let fields: Vec<(&str, &str)> = d
            .iter()
            .map(|x| (x.event.as_str(), x.field.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                ("read 0 (frame 0, ts 1.000000000)", "vnet"),
                ("read 0 (frame 0, ts 1.000000000)", "bytes+0010"),
                ("totals", "result"),
            ]
        );
        assert_eq!(d[0].real, "flags 0 csum_start 4");
        assert!(all_differences(SIM, SIM, &[]).is_empty());
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(
            unhex(&hex(&[0, 1, 0xfe, 0xff])),
            Some(vec![0, 1, 0xfe, 0xff])
        );
        assert_eq!(unhex("abc"), None);
    }

    #[test]
    fn missing_events_are_named() {
        let real = SIM.replace("totals: reads 1\n", "");
        let d = all_differences(SIM, &real, &[]);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].event.as_str(), d[0].real.as_str()),
            ("totals", "(absent)")
        );
    }
}
