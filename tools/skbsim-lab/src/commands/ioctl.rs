//! `skbsim lab ioctl`: the tun ioctl table (docs/tun-ioctl.md#conformance) in a guest
//! kernel. The guest (`skbsim lab guest-ioctl`) runs the sequence of
//! `skbsim_kernel::tun_ioctl_table` on real `/dev/net/tun` files and sends back every step
//! with the kernel's answer; the host replays the steps on the model under the guest's
//! profile (linux-6.1, linux-6.12, or `--profile`) and reports, per ioctl, how many rows
//! agree, and every row that does not. `--replay LOG` compares a kept log again without a
//! boot.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{json, Value};
use skbsim_kernel::tun_ioctl_table::{cmd_name, record, replay, show, Row, Step};
use skbsim_kernel::Netns;

use super::conform::guest_profile;
use super::ioctl_log::{parse_steps, step_json};
use super::skbsim::{outln, Skbsim};
use super::{boot_report, boot_with, cache_of, LabIoctlArgs};
use crate as lab;

/// In the guest: `{"release": UNAME_R}`, then one JSON line per step on stdout (the data
/// channel); a failure part-way sends the steps before it and `{"error": ...}`.
pub(super) fn guest_ioctl(sk: &dyn Skbsim) -> Result<ExitCode, String> {
    sk.tap_ready("lab guest-ioctl")?;
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut steps: Vec<Step> = Vec::new();
    let res = Netns::run(|ns| record(ns, &mut steps));
    let mut out = std::io::stdout().lock();
    let mut lines = vec![json!({"release": release.trim()})];
    lines.extend(steps.iter().map(step_json));
    if let Err(e) = &res {
        lines.push(json!({"error": e.to_string()}));
    }
    for l in lines {
        writeln!(out, "{l}").map_err(|e| format!("lab guest-ioctl: stdout: {e}"))?;
    }
    out.flush()
        .map_err(|e| format!("lab guest-ioctl: stdout: {e}"))?;
    res.map_err(|e| format!("lab guest-ioctl: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// The release named by a log's `{"release": ...}` line, and its `{"error": ...}`.
pub(super) fn header(log: &str) -> (Option<String>, Option<String>) {
    let (mut release, mut error) = (None, None);
    for v in log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        if let Some(r) = v.get("release").and_then(Value::as_str) {
            release = Some(r.to_string());
        }
        if let Some(e) = v.get("error").and_then(Value::as_str) {
            error = Some(e.to_string());
        }
    }
    (release, error)
}

/// Per ioctl name: (rows, rows that agree).
pub(super) fn per_ioctl(rows: &[Row]) -> BTreeMap<String, (usize, usize)> {
    let mut t: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for r in rows {
        let e = t.entry(cmd_name(r.cmd)).or_default();
        e.0 += 1;
        e.1 += usize::from(r.agrees());
    }
    t
}

/// The guest's log: read from `--replay`, or a boot of the guest (kept in `--out`, by
/// default `<cache>/results/<release>/tun-ioctl.jsonl`). Returns the log and where it is.
fn guest_log(a: &LabIoctlArgs) -> Result<(String, PathBuf, Option<String>), String> {
    if let Some(f) = &a.replay {
        let log = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        return Ok((log, f.clone(), None));
    }
    let script = format!("{} lab guest-ioctl\n", lab::GUEST_SKBSIM);
    let (run, setup) = boot_with(
        &a.opts,
        "ioctl",
        script,
        vec!["tun".to_string()],
        Vec::new(),
        true,
        None,
    )?;
    let log = run.boot.output.clone();
    let release = header(&log)
        .0
        .unwrap_or_else(|| run.boot.guest_kernel.clone());
    let out = match &a.out {
        Some(o) => o.clone(),
        None => {
            let dir = cache_of(&a.opts).join("results").join(&release);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            dir.join("tun-ioctl.jsonl")
        }
    };
    std::fs::write(&out, &log).map_err(|e| format!("{}: {e}", out.display()))?;
    if run.boot.rc != 0 && header(&log).1.is_none() {
        eprint!("{}", run.boot.stderr);
        return Err(format!(
            "lab ioctl: skbsim exited {} in the guest {}",
            run.boot.rc, run.boot.guest_kernel
        ));
    }
    let line = format!("{}; {}", setup.1, boot_report(&run).1);
    Ok((log, out, Some(line)))
}

/// `skbsim lab ioctl`.
pub(super) fn ioctl(a: &LabIoctlArgs, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    let (log, path, boot_line) = guest_log(a)?;
    let name = path.display().to_string();
    let steps = parse_steps(&log).map_err(|e| format!("{name}: {e}"))?;
    let (release, error) = header(&log);
    let release = release.ok_or_else(|| format!("{name}: no {{\"release\": ...}} line"))?;
    let profile = guest_profile(&release, a.profile.as_deref())?;
    let rows = replay(&profile, &steps).map_err(|e| format!("{name}: {e}"))?;
    let table = per_ioctl(&rows);
    let bad: Vec<&Row> = rows.iter().filter(|r| !r.agrees()).collect();
    let ok = bad.is_empty() && error.is_none() && !rows.is_empty();
    if a.opts.guest.json {
        outln!(
            sk,
            "{}",
            json!({
                "ok": ok, "release": release, "profile": profile.name, "log": path,
                "rows": rows.len(), "agree": rows.len() - bad.len(), "error": error,
                "ioctls": table.iter().map(|(k, (n, g))| json!({"ioctl": k, "rows": n, "agree": g})).collect::<Vec<_>>(),
                "mismatches": bad.iter().map(|r| json!({"what": r.what, "ioctl": cmd_name(r.cmd), "user": r.user,
                    "arg": format!("{:?}", r.arg), "kernel": show(&r.kernel), "model": show(&r.model)})).collect::<Vec<_>>(),
            })
        )?;
    } else {
        outln!(
            sk,
            "tun ioctls in {release}, model under {} (log {name}):",
            profile.name
        )?;
        for (k, (n, g)) in &table {
            let mark = if n == g { "" } else { "  DIFFERS" };
            outln!(sk, "  {k:<20} {g:>4}/{n:<4} agree{mark}")?;
        }
        for r in &bad {
            outln!(sk, "  MISMATCH {}", r.describe())?;
        }
        if let Some(e) = &error {
            outln!(sk, "  the guest stopped part-way: {e}")?;
        }
        outln!(
            sk,
            "{} rows, {} agree, {} differ",
            rows.len(),
            rows.len() - bad.len(),
            bad.len()
        )?;
        if let Some(l) = boot_line {
            eprintln!("lab: {l}");
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
