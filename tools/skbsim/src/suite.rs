//! `skbsim run` and `skbsim bless` over a set of scenarios.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use sim::scenario::Scenario;
use sim::trace::diff::first_divergence;

use crate::cli_error::CliError;
use crate::diff::pcap_divergence;
use crate::golden::{self, Verdict};
use crate::progress;
use crate::runner::{run_backend, tap_ready, Backend, ScenarioOutput};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files or directories (searched recursively for *.toml; `pcaps`
    /// directories hold inputs, not scenarios).
    #[arg(default_value = "scenarios")]
    pub paths: Vec<PathBuf>,
    /// Run only shard K of N (1-based), split by a stable hash of the scenario name.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Golden root (default: the `golden` directory beside `scenarios`).
    #[arg(long)]
    pub golden: Option<PathBuf>,
    /// Print results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// `sim`: the model. `tap`: the real kernel (root and /dev/net/tun), compared with
    /// the goldens without the fields only the model knows; `sim_only` scenarios are
    /// listed and skipped.
    #[arg(long, value_enum, default_value_t = Backend::Sim)]
    pub backend: Backend,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Check,
    Bless,
}

/// Every scenario file under `paths`, sorted, without duplicates.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.exists() {
            // Not only regular files: Scenario::load names what else it is (a FIFO...).
            out.push(p.clone());
        } else {
            return Err(CliError(format!(
                "{}: no such file or directory",
                p.display()
            )));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CliError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CliError(format!("{}: cannot list: {e}", dir.display())))?;
    for entry in entries {
        let path = entry
            .map_err(|e| CliError(format!("{}: cannot list: {e}", dir.display())))?
            .path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "pcaps") {
                continue;
            }
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
    Ok(())
}

/// Parse "K/N" (1 <= K <= N).
pub fn parse_shard(s: &str) -> Result<(u64, u64), CliError> {
    let bad = || CliError(format!("--shard {s}: expected K/N with 1 <= K <= N"));
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// FNV-1a: a hash that is the same on every machine and every run.
pub fn stable_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

pub fn in_shard(name: &str, shard: Option<(u64, u64)>) -> bool {
    match shard {
        None => true,
        Some((k, n)) => stable_hash(name) % n == k - 1,
    }
}

/// Compare a real-kernel replay of a `pipeline` scenario with the (simulator's) goldens
/// in `dir`: the trace without the fields only the model knows
/// ([`crate::conform::model_only_fields`]), the output pcap byte for byte.
pub fn check_real(
    dir: &Path,
    out: &ScenarioOutput,
    pipeline: sim::scenario::Pipeline,
) -> Result<Verdict, CliError> {
    let ignore = crate::conform::model_only_fields(pipeline);
    let trace_path = dir.join(golden::TRACE_FILE);
    let pcap_path = dir.join(golden::PCAP_FILE);
    for p in [&trace_path, &pcap_path] {
        if !p.exists() {
            return Ok(Verdict::Missing(p.clone()));
        }
    }
    let golden_trace = golden::read_golden_trace(&trace_path)?;
    let golden_trace = golden::snap_body(&golden_trace).trim_end();
    if let Some(d) = first_divergence(golden_trace, out.trace.trim_end(), &ignore) {
        return Ok(Verdict::Mismatch(format!(
            "{} (- golden, + real kernel)\n{d}",
            trace_path.display()
        )));
    }
    let golden_pcap = golden::read_golden_pcap(&pcap_path)?;
    // Frame by frame (interface, bytes, time): the golden's packet comments carry skb
    // metadata only the model knows.
    if crate::diff::pcap_divergence(
        &golden_pcap,
        &out.pcap,
        &pcap_path,
        Path::new("(real kernel)"),
    )?
    .is_some()
    {
        let detail = pcap_divergence(
            &golden_pcap,
            &out.pcap,
            &pcap_path,
            Path::new("(real kernel)"),
        )?
        .unwrap_or_else(|| "the pcap files differ in their headers".to_string());
        return Ok(Verdict::Mismatch(format!(
            "{} (- golden, + real kernel)\n{detail}",
            pcap_path.display()
        )));
    }
    Ok(Verdict::Pass)
}

/// Load the scenarios under `paths` that fall in `shard` (an error when there are none).
pub fn load_scenarios(paths: &[PathBuf], shard: Option<&str>) -> Result<Vec<Scenario>, CliError> {
    let shard = shard.map(parse_shard).transpose()?;
    let files = discover(paths)?;
    let mut scenarios = Vec::new();
    for f in &files {
        let s = Scenario::load(f)?;
        if in_shard(&s.name, shard) {
            scenarios.push(s);
        }
    }
    if scenarios.is_empty() {
        return Err(CliError(format!(
            "no scenarios found in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(scenarios)
}

/// Replay a simulator scenario straight into its goldens' comparators: the trace is
/// compared block by block as it is rendered (rendering stops at the first difference),
/// the capture frame by frame. Nothing is kept.
pub fn check_streaming(
    s: &Scenario,
    dir: &Path,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<(Verdict, u64), CliError> {
    use crate::engine::{
        capture::GoldenCapture, CaptureOut, GoldenTrace, JsonOut, Sinks, TraceOut,
    };
    let trace_path = dir.join(golden::TRACE_FILE);
    let pcap_path = dir.join(golden::PCAP_FILE);
    // Without goldens the replay still runs (bad input is exit 2, not "missing").
    let missing = [&trace_path, &pcap_path]
        .into_iter()
        .find(|p| !p.exists())
        .cloned();
    let mut sinks = if missing.is_some() {
        Sinks::default()
    } else {
        Sinks {
            trace: TraceOut::compare(GoldenTrace::open(&trace_path, &[])?),
            json: JsonOut::off(),
            capture: CaptureOut::compare(GoldenCapture::open(&pcap_path)?),
        }
    };
    let summary = crate::runner::replay_into(s, Backend::Sim, &mut sinks, progress)?;
    if let Some(p) = missing {
        return Ok((Verdict::Missing(p), summary.frames));
    }
    let done = sinks.finish()?;
    if let Some(t) = done.trace_verdict {
        if let Some(d) = t.divergence {
            return Ok((
                Verdict::Mismatch(format!("{} (- golden, + now)\n{d}", t.path.display())),
                summary.frames,
            ));
        }
        if !t.identical {
            return Ok((
                Verdict::Mismatch(format!(
                    "{} (- golden, + now)\nthe traces differ only in blank lines or white space",
                    t.path.display()
                )),
                summary.frames,
            ));
        }
    }
    if let Some(c) = done.capture_verdict {
        if let Some(d) = c.divergence {
            return Ok((
                Verdict::Mismatch(format!("{} (- golden, + now)\n{d}", c.path.display())),
                summary.frames,
            ));
        }
    }
    Ok((Verdict::Pass, summary.frames))
}

/// One scenario's outcome, printed in suite order whatever thread ran it.
#[derive(Debug)]
struct Outcome {
    status: &'static str,
    reason_or_detail: Option<String>,
    frames: Option<u64>,
    notes: Vec<String>,
}

fn run_one(
    s: &Scenario,
    args: &RunArgs,
    mode: Mode,
    pb: &indicatif::ProgressBar,
) -> Result<Outcome, CliError> {
    let tap = args.backend == Backend::Tap;
    if let (true, Some(reason)) = (tap, &s.sim_only) {
        return Ok(Outcome {
            status: "sim-only",
            reason_or_detail: Some(reason.clone()),
            frames: None,
            notes: Vec::new(),
        });
    }
    // Probed only for the real backend (the probes need root and namespaces).
    let arm = if tap {
        skbsim_kernel::arm::real_arm(s.pipeline)
            .and_then(|()| skbsim_kernel::features::missing(s).map_or(Ok(()), Err))
    } else {
        Ok(())
    };
    if let Err(why) = arm {
        return Ok(Outcome {
            status: "no-arm",
            reason_or_detail: Some(why),
            frames: None,
            notes: Vec::new(),
        });
    }
    let dir = golden::golden_dir(s, args.golden.as_deref());
    let (verdict, frames, notes) = match mode {
        Mode::Bless => {
            let out = run_backend(s, args.backend, None)?;
            golden::bless(&dir, &out)?;
            (None, out.frames, out.notes)
        }
        Mode::Check if !tap => {
            let (v, frames) = check_streaming(s, &dir, None)?;
            (Some(v), frames, Vec::new())
        }
        Mode::Check => {
            let out = run_backend(s, args.backend, Some(pb))?;
            let v = if s.pipeline == sim::scenario::Pipeline::TapGro {
                crate::gro_real::check_real_gro(&dir, &out)?
            } else {
                check_real(&dir, &out, s.pipeline)?
            };
            (Some(v), out.frames, out.notes)
        }
    };
    let (status, detail) = match verdict {
        None => ("blessed", None),
        Some(Verdict::Pass) => ("pass", None),
        Some(Verdict::Missing(p)) => (
            "missing",
            Some(format!(
                "{}: no golden (run `skbsim bless {}`)",
                p.display(),
                s.path.display()
            )),
        ),
        Some(Verdict::Mismatch(d)) => ("fail", Some(d)),
    };
    Ok(Outcome {
        status,
        reason_or_detail: detail,
        frames: Some(frames),
        notes,
    })
}

/// Worker threads for `run` and `bless`: every core for the simulator; one for the real
/// kernel, whose arms share taps and namespaces by name.
fn workers(backend: Backend, scenarios: usize) -> usize {
    match backend {
        Backend::Tap => 1,
        Backend::Sim => std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(scenarios.max(1)),
    }
}

/// Remove what killed blesses left under the golden roots of `scenarios`.
fn clean_stale_blesses(scenarios: &[Scenario], root: Option<&Path>) -> Result<(), CliError> {
    let mut roots: Vec<PathBuf> = scenarios
        .iter()
        .map(|s| golden::golden_root(s, root))
        .collect();
    roots.sort();
    roots.dedup();
    for r in &roots {
        let n = golden::remove_stale_temps(r)?;
        if n > 0 {
            eprintln!(
                "removed {n} leftovers of an interrupted bless under {}",
                r.display()
            );
        }
    }
    Ok(())
}

pub fn run(args: &RunArgs, mode: Mode) -> Result<ExitCode, CliError> {
    let tap = args.backend == Backend::Tap;
    if tap && mode == Mode::Bless {
        return Err(CliError(
            "bless writes the simulator's goldens; --backend tap cannot bless (use `skbsim conform` to compare the real kernel)".into(),
        ));
    }
    if tap {
        tap_ready("--backend tap")?;
    }
    let scenarios = load_scenarios(&args.paths, args.shard.as_deref())?;
    clean_stale_blesses(&scenarios, args.golden.as_deref())?;
    let pb = progress::bar(
        scenarios.len() as u64,
        if mode == Mode::Bless {
            "blessing"
        } else {
            "replaying"
        },
    );
    // Scenarios run on every core; each outcome is printed in suite order as soon as it
    // and everything before it is done, so the output is the same on every run.
    let n = scenarios.len();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Outcome, CliError>)>();
    let mut results = Vec::new();
    let (mut failed, mut sim_only, mut no_arm) = (0, 0, 0);
    let mut first_error: Option<CliError> = None;
    std::thread::scope(|scope| {
        for _ in 0..workers(args.backend, n) {
            let tx = tx.clone();
            let (next, scenarios, pb) = (&next, &scenarios, &pb);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(s) = scenarios.get(i) else {
                    break;
                };
                let r = run_one(s, args, mode, pb);
                pb.inc(1);
                if tx.send((i, r)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut done: Vec<Option<Result<Outcome, CliError>>> = (0..n).map(|_| None).collect();
        let mut printed = 0;
        for (i, r) in rx {
            done[i] = Some(r);
            while printed < n {
                let Some(r) = done[printed].take() else {
                    break;
                };
                let s = &scenarios[printed];
                printed += 1;
                let o = match r {
                    Ok(o) => o,
                    Err(e) => {
                        if first_error.is_none() {
                            first_error = Some(e);
                            // Stop handing out scenarios; running ones finish.
                            next.store(n, std::sync::atomic::Ordering::Relaxed);
                        }
                        continue;
                    }
                };
                if first_error.is_some() {
                    continue;
                }
                match o.status {
                    "sim-only" => sim_only += 1,
                    "no-arm" => no_arm += 1,
                    "fail" | "missing" => failed += 1,
                    _ => {}
                }
                if !args.json {
                    pb.suspend(|| match (o.status, o.frames) {
                        ("sim-only", _) => println!(
                            "sim-only  {}: {}",
                            s.name,
                            o.reason_or_detail.as_deref().unwrap_or_default()
                        ),
                        ("no-arm", _) => println!(
                            " no-arm  {}: {}",
                            s.name,
                            o.reason_or_detail.as_deref().unwrap_or_default()
                        ),
                        (status, frames) => {
                            println!("{status:>7}  {}  ({} frames)", s.name, frames.unwrap_or(0));
                            if let Some(d) = &o.reason_or_detail {
                                for line in d.lines() {
                                    println!("         {line}");
                                }
                            }
                        }
                    });
                }
                results.push(match o.status {
                    "sim-only" => json!({"scenario": s.name, "status": "sim-only", "reason": o.reason_or_detail}),
                    "no-arm" => json!({"scenario": s.name, "status": "no-real-arm", "reason": o.reason_or_detail}),
                    status => json!({"scenario": s.name, "status": status, "frames": o.frames, "detail": o.reason_or_detail, "notes": o.notes}),
                });
            }
        }
    });
    pb.finish_and_clear();
    if let Some(e) = first_error {
        return Err(e);
    }
    let passed = results.len() - failed - sim_only - no_arm;
    if args.json {
        println!(
            "{}",
            json!({"backend": args.backend.name(), "results": results, "passed": passed, "failed": failed, "sim_only": sim_only, "no_real_arm": no_arm})
        );
    } else if mode == Mode::Check && tap && no_arm > 0 {
        println!(
            "{passed} passed, {failed} failed, {sim_only} sim-only, {no_arm} without a real arm"
        );
    } else if mode == Mode::Check && tap {
        println!("{passed} passed, {failed} failed, {sim_only} sim-only");
    } else if mode == Mode::Check {
        println!("{passed} passed, {failed} failed");
    } else {
        println!("blessed {} scenarios", results.len());
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_suite() {
        let names: Vec<String> = (0..50).map(|i| format!("tun-read/s{i}")).collect();
        let mut seen = 0;
        for k in 1..=3 {
            seen += names.iter().filter(|n| in_shard(n, Some((k, 3)))).count();
        }
        assert_eq!(seen, 50);
        assert!(parse_shard("0/3").is_err());
        assert!(parse_shard("4/3").is_err());
        assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
    }
}
