//! `skbsim lab conform`: the real arms run in the guest (`guest_conform`, this binary
//! inside the initramfs), their traces come back over the data serial port, and the host
//! compares them with the simulator under the guest kernel's profile (`conform`).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{json, Value};
use sim::profile::KernelProfile;
use sim::scenario::{Pipeline, Scenario};
use sim::trace::diff::Divergence;
use sim::trace::record_diff::{all_flat_differences, Flat};

use super::hex::{hex, unhex};
use super::skbsim::{outln, ArmOutput, Skbsim};
use super::{boot_report, boot_with, cache_of, mib, LabConformArgs, LabOpts};
use crate as lab;

/// In the guest: one JSON line per scenario on stdout (the data channel); progress on
/// stderr (the console).
pub(super) fn guest_conform(
    paths: &[PathBuf],
    old_profiles: bool,
    sk: &dyn Skbsim,
) -> Result<ExitCode, String> {
    sk.tap_ready("lab guest-conform")?;
    let scenarios = sk.load_scenarios(paths, None)?;
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
        } else if let Some(why) = skbsim_kernel::features::missing(s) {
            json!({"scenario": s.name, "status": "needs-kernel", "reason": why})
        } else {
            match sk.run_real(s) {
                Ok(o) => json!({
                    "scenario": s.name,
                    "status": "ok",
                    "trace": o.trace,
                    "observed": o.observed,
                    "pcap": hex(&o.pcap),
                    "frames": o.frames,
                    "notes": o.notes,
                    "ms": start.elapsed().as_millis() as u64,
                }),
                Err(e) => {
                    let prefix = format!("{}: ", s.name);
                    let msg = e.strip_prefix(&prefix).unwrap_or(&e).to_string();
                    json!({"scenario": s.name, "status": "error", "error": msg})
                }
            }
        };
        emit(&mut out, v);
    }
    Ok(ExitCode::SUCCESS)
}

/// The files a scenario needs in the guest, at their host paths: the scenario, its
/// capture (an exec scenario has none), its XDP program, its queues' steering and filter
/// programs.
fn scenario_files(s: &Scenario) -> Vec<PathBuf> {
    let mut files = vec![s.path.clone()];
    if s.pipeline != Pipeline::Exec {
        files.push(s.input.clone());
    }
    if let Some(x) = &s.xdp {
        files.push(x.program.clone());
    }
    if let Some(q) = &s.queues {
        files.extend([&q.steering, &q.filter].into_iter().flatten().cloned());
    }
    files
        .into_iter()
        .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
        .collect()
}

/// What one guest run of `guest-conform` returned.
pub(super) struct GuestTraces {
    /// The guest's `uname -r`.
    pub kernel: String,
    /// Per scenario name, its JSON line.
    pub results: HashMap<String, Value>,
    pub run: lab::LabRun,
    pub setup: (Value, String),
}

/// The modules the arms of `scenarios` need in the guest (and `extra`).
fn arm_modules(scenarios: &[Scenario], extra: &[String]) -> Vec<String> {
    // What the arms need and nothing more: 8021q, for one, would add 802.1Q GRO, which
    // the 6.18 host (built without it) does not have.
    let mut modules = vec!["tun".to_string(), "bridge".to_string()];
    if scenarios.iter().any(|s| s.pipeline == Pipeline::TapGro) {
        modules.push("vxlan".to_string());
    }
    // And the modules of the kernel features the scenarios need (ip_gre, vhost_net).
    for s in scenarios {
        for m in skbsim_kernel::features::required(s)
            .iter()
            .filter_map(|f| f.module())
        {
            if !modules.iter().any(|x| x == m) {
                modules.push(m.to_string());
            }
        }
    }
    modules.extend(extra.iter().cloned());
    modules
}

/// Boot the guest of `opts` (with `patch` applied when given) and run the real arm of
/// every scenario in it.
pub(super) fn guest_traces(
    opts: &LabOpts,
    name: &str,
    scenarios: &[Scenario],
    old_profiles: bool,
    extra_modules: &[String],
    patch: Option<&Path>,
) -> Result<GuestTraces, String> {
    let mut files = Vec::new();
    let mut guest_paths = Vec::new();
    for s in scenarios {
        let f = scenario_files(s);
        guest_paths.push(lab::shell_quote(&f[0].to_string_lossy()));
        files.extend(f);
    }
    let script = format!(
        "{} lab guest-conform {}{}\n",
        lab::GUEST_SKBSIM,
        if old_profiles { "--old-profiles " } else { "" },
        guest_paths.join(" ")
    );
    let modules = arm_modules(scenarios, extra_modules);
    let (run, setup) = boot_with(opts, name, script, modules, files, true, patch)?;
    if run.boot.rc != 0 {
        let last = run
            .boot
            .stderr
            .lines()
            .rev()
            .find(|l| l.contains("skbsim"))
            .unwrap_or("");
        return Err(format!(
            "lab guest: skbsim exited {} in the guest: {last}",
            run.boot.rc
        ));
    }
    let mut results: HashMap<String, Value> = HashMap::new();
    let mut kernel = String::new();
    for line in run.boot.output.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(k) = v.get("kernel").and_then(Value::as_str) {
            kernel = k.to_string();
        } else if let Some(name) = v.get("scenario").and_then(Value::as_str) {
            results.insert(name.to_string(), v);
        }
    }
    Ok(GuestTraces {
        kernel,
        results,
        run,
        setup,
    })
}

/// The profile the simulator uses for a guest kernel release: `--profile` when given,
/// else the one modelling its build ([`profile_name_for_release`]).
pub(super) fn guest_profile(release: &str, chosen: Option<&str>) -> Result<KernelProfile, String> {
    if let Some(name) = chosen {
        return KernelProfile::by_name(name).map_err(|e| format!("--profile: {e}"));
    }
    let name = profile_name_for_release(release);
    KernelProfile::by_name(&name).map_err(|_| {
        format!(
            "lab: no kernel profile models the guest's {release} ({name}); name one with --profile"
        )
    })
}

/// The profile name for a kernel release (`uname -r`): `linux-<major>.<minor>`, except
/// for the Debian builds before the ip6gretap `hard_header_len` fix: 6.12 releases carry
/// the stable number (`6.12.107+deb12-cloud-amd64`: before 111, `linux-6.12.107`), 6.1
/// ones the ABI number (`6.1.0-53-cloud-amd64`: 6.1.187, up to 53 `linux-6.1.187`).
fn profile_name_for_release(release: &str) -> String {
    let mut nums = release
        .split(['-', '+', '.'])
        .map(|p| p.parse::<u32>().ok());
    let (major, minor, third, abi) = (nums.next(), nums.next(), nums.next(), nums.next());
    match (
        major.flatten(),
        minor.flatten(),
        third.flatten(),
        abi.flatten(),
    ) {
        (Some(6), Some(12), Some(n), _) if n < 111 => "linux-6.12.107".into(),
        (Some(6), Some(1), Some(0), Some(n)) if n <= 53 => "linux-6.1.187".into(),
        (Some(a), Some(b), _, _) => format!("linux-{a}.{b}"),
        _ => format!("linux-{release}"),
    }
}

/// A guest's trace of a scenario as an [`ArmOutput`]: its real arm's records as it sent
/// them ([`ArmOutput::observed`], marks and all), the header's `profile` naming
/// `profile` (the guest ran host-profile setups; see guest-conform). A guest that sent
/// no records leaves `observed` empty, which no comparison takes for agreement.
pub(super) fn real_output(g: &Value, host_profile: &str, profile: &str) -> ArmOutput {
    let trace = g
        .get("trace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut observed: Vec<Flat> = g
        .get("observed")
        .and_then(|o| serde_json::from_value(o.clone()).ok())
        .unwrap_or_default();
    if let Some((v, _)) = observed
        .first_mut()
        .filter(|h| h.event == sim::trace::record::HEADER)
        .and_then(|h| h.field_mut("profile"))
        .filter(|(v, _)| v.as_str() == host_profile)
    {
        *v = profile.to_string();
    }
    ArmOutput {
        trace,
        observed,
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
    }
}

/// `skbsim lab conform`: the guest's traces of `a.paths`, each compared with the
/// simulator's ([`Tally::scenario`]), then the report ([`report`]).
pub(super) fn conform(a: &LabConformArgs, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    let opts = &a.opts;
    let scenarios = sk.load_scenarios(&a.paths, a.shard.as_deref())?;
    let guest = guest_traces(
        opts,
        "conform",
        &scenarios,
        a.old_profiles,
        &a.modules,
        a.patch.as_deref(),
    )?;
    let guest_prof = guest_profile(&guest.kernel, a.profile.as_deref())?;
    let out_dir = a
        .out
        .clone()
        .unwrap_or_else(|| cache_of(opts).join("results").join(&guest.kernel));
    let mut tally = Tally::default();
    for s in &scenarios {
        tally.scenario(s, guest.results.get(&s.name), guest_prof, &out_dir, sk)?;
    }
    report(opts, sk, &tally, &guest, &out_dir)
}

/// What `lab conform` found, scenario by scenario: the counts, a JSON row and a text
/// block each.
#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    sim_only: usize,
    errors: usize,
    no_arm: usize,
    other_kernel: usize,
    results: Vec<Value>,
    text: Vec<String>,
}

impl Tally {
    /// One scenario: what the guest said of it (`g`); when its real arm ran, its trace
    /// kept in `out_dir` and compared with the simulator's under `guest_prof`.
    fn scenario(
        &mut self,
        s: &Scenario,
        g: Option<&Value>,
        guest_prof: KernelProfile,
        out_dir: &Path,
        sk: &dyn Skbsim,
    ) -> Result<(), String> {
        let Some(g) = g else {
            self.errors += 1;
            self.results.push(
                json!({"scenario": s.name, "status": "error", "error": "no result from the guest"}),
            );
            self.text
                .push(format!("   error  {}: no result from the guest", s.name));
            return Ok(());
        };
        if !self.ran(s, g) {
            return Ok(());
        }
        let host = KernelProfile::default();
        // A host-profile scenario is compared with the simulator under the guest kernel's
        // profile; with --old-profiles another profile's scenario under its own.
        let mut sim_scenario = s.clone();
        let shown = if s.profile.name == host.name {
            sim_scenario.profile = guest_prof;
            guest_prof.name
        } else {
            s.profile.name
        };
        let real = real_output(g, host.name, shown);
        let dir = out_dir.join(&s.name);
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("trace.txt"), &real.trace);
        let _ = std::fs::write(dir.join("read.pcap"), &real.pcap);
        let sim = match sk.run_sim(&sim_scenario) {
            Ok(o) => o,
            Err(e) => {
                self.errors += 1;
                self.results.push(json!({"scenario": s.name, "status": "error", "error": format!("simulator: {e}")}));
                self.text
                    .push(format!("   error  {}: simulator: {e}", s.name));
                return Ok(());
            }
        };
        let first = sk.first_mismatch(s, &sim, &real)?;
        self.compared(s, &sim, &real, first);
        Ok(())
    }

    /// Whether the guest ran `s`'s real arm (status `ok`); otherwise why not, counted.
    fn ran(&mut self, s: &Scenario, g: &Value) -> bool {
        let status = g.get("status").and_then(Value::as_str).unwrap_or("");
        let reason = g
            .get("reason")
            .or_else(|| g.get("error"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match status {
            "sim-only" => {
                self.sim_only += 1;
                self.results
                    .push(json!({"scenario": s.name, "status": "sim-only", "reason": reason}));
                self.text.push(format!("sim-only  {}: {reason}", s.name));
            }
            "needs-kernel" => {
                self.other_kernel += 1;
                self.results
                    .push(json!({"scenario": s.name, "status": "needs-kernel", "reason": reason}));
                self.text.push(format!("  kernel  {}: {reason}", s.name));
            }
            "no-real-arm" => {
                self.no_arm += 1;
                self.results
                    .push(json!({"scenario": s.name, "status": "no-real-arm", "reason": reason}));
                self.text.push(format!(" no-arm  {}: {reason}", s.name));
            }
            "ok" => return true,
            _ => {
                self.errors += 1;
                self.results
                    .push(json!({"scenario": s.name, "status": "error", "error": reason}));
                self.text.push(format!(
                    "   error  {}: real kernel (guest): {reason}",
                    s.name
                ));
            }
        }
        false
    }

    /// A pass, or a failure with every differing field of what the real arm observes.
    fn compared(
        &mut self,
        s: &Scenario,
        sim: &ArmOutput,
        real: &ArmOutput,
        first: Option<Divergence>,
    ) {
        let diffs = all_flat_differences(&sim.observed, &real.observed);
        let reads = real
            .trace
            .lines()
            .filter(|l| l.starts_with("read "))
            .count();
        let Some(m) = first else {
            self.passed += 1;
            self.results.push(json!({"scenario": s.name, "status": "pass", "frames": real.frames, "reads": reads, "notes": real.notes}));
            let mut t = format!(
                "    pass  {}  ({} frames, {reads} reads)",
                s.name, real.frames
            );
            for n in &real.notes {
                t.push_str(&format!("\n          note: {n}"));
            }
            self.text.push(t);
            return;
        };
        self.failed += 1;
        let list: Vec<Value> = diffs
            .iter()
            .map(|d| json!({"event": d.event, "field": d.field, "sim": d.left, "real": d.right}))
            .collect();
        self.results.push(json!({
            "scenario": s.name,
            "status": "fail",
            "divergence": {"read": m.event, "field": m.field, "sim": m.left, "real": m.right},
            "differences": list,
            "notes": real.notes,
        }));
        let mut t = format!(
            "    FAIL  {}  ({} differing fields; first `{}` {})",
            s.name,
            diffs.len().max(1),
            m.event,
            m.field
        );
        if diffs.is_empty() {
            t.push_str(&format!(
                "\n          {} `{}`: sim {} | guest {}",
                m.event, m.field, m.left, m.right
            ));
        }
        for d in &diffs {
            t.push_str(&format!(
                "\n          {}  {}:\n            sim:   {}\n            guest: {}",
                d.event, d.field, d.left, d.right
            ));
        }
        self.text.push(t);
    }
}

/// `<out_dir>/summary.json`, and the results on stdout (JSON, or a line per scenario
/// and the counts); exit 2 on an error, 1 on a failure.
fn report(
    opts: &LabOpts,
    sk: &dyn Skbsim,
    t: &Tally,
    guest: &GuestTraces,
    out_dir: &Path,
) -> Result<ExitCode, String> {
    let kernel = &guest.kernel;
    let size = lab::fetch::dir_size(&cache_of(opts));
    let (boot, boot_line) = boot_report(&guest.run);
    let summary_json = json!({
        "guest_kernel": kernel,
        "results": t.results,
        "passed": t.passed,
        "failed": t.failed,
        "sim_only": t.sim_only,
        "errors": t.errors,
        "no_real_arm": t.no_arm,
        "needs_kernel": t.other_kernel,
        "setup": guest.setup.0,
        "boot": boot,
        "cache_bytes": size,
        "traces": out_dir,
    });
    let _ = std::fs::create_dir_all(out_dir);
    let _ = std::fs::write(out_dir.join("summary.json"), format!("{summary_json:#}\n"));
    if opts.guest.json {
        outln!(sk, "{summary_json}")?;
    } else {
        for line in &t.text {
            outln!(sk, "{line}")?;
        }
        let mut arm = String::new();
        if t.other_kernel > 0 {
            arm.push_str(&format!(", {} for another kernel", t.other_kernel));
        }
        if t.no_arm > 0 {
            arm.push_str(&format!(", {} without a real arm", t.no_arm));
        }
        outln!(
            sk,
            "{} passed, {} failed, {} sim-only{arm} (real arm in guest {kernel} vs the simulator)",
            t.passed,
            t.failed,
            t.sim_only
        )?;
        eprintln!("lab: {}", guest.setup.1);
        eprintln!("lab: {boot_line}");
        eprintln!(
            "lab: guest traces in {}; cache {} ({})",
            out_dir.display(),
            cache_of(opts).display(),
            mib(size)
        );
    }
    Ok(if t.errors > 0 {
        ExitCode::from(2)
    } else if t.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tally_tests;

#[cfg(test)]
mod tests {
    use super::profile_name_for_release;

    #[test]
    fn releases_before_the_ip6gretap_fix_get_their_profile() {
        for (release, profile) in [
            ("6.12.117+deb12-cloud-amd64", "linux-6.12"),
            ("6.12.111+deb12-cloud-amd64", "linux-6.12"),
            ("6.12.107+deb12-cloud-amd64", "linux-6.12.107"),
            ("6.12.100+deb12-cloud-amd64", "linux-6.12.107"),
            ("6.1.0-57-cloud-amd64", "linux-6.1"),
            ("6.1.0-54-cloud-amd64", "linux-6.1"),
            ("6.1.0-53-cloud-amd64", "linux-6.1.187"),
            ("6.1.0-47-cloud-amd64", "linux-6.1.187"),
            ("6.18.44", "linux-6.18"),
            ("4.19.0-27-amd64", "linux-4.19"),
        ] {
            assert_eq!(profile_name_for_release(release), profile, "{release}");
        }
    }
}
