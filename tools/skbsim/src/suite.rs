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
    if golden_pcap != out.pcap {
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
    let mut results = Vec::new();
    let (mut failed, mut sim_only, mut no_arm) = (0, 0, 0);
    for s in &scenarios {
        pb.set_message(s.name.clone());
        if let (true, Some(reason)) = (tap, &s.sim_only) {
            sim_only += 1;
            pb.inc(1);
            if !args.json {
                pb.suspend(|| println!("sim-only  {}: {reason}", s.name));
            }
            results.push(json!({"scenario": s.name, "status": "sim-only", "reason": reason}));
            continue;
        }
        // Probed only for the real backend (the probes need root and namespaces).
        let arm = if tap {
            skbsim_kernel::arm::real_arm(s.pipeline)
                .and_then(|()| skbsim_kernel::features::missing(s).map_or(Ok(()), Err))
        } else {
            Ok(())
        };
        if let Err(why) = arm {
            no_arm += 1;
            pb.inc(1);
            if !args.json {
                pb.suspend(|| println!(" no-arm  {}: {why}", s.name));
            }
            results.push(json!({"scenario": s.name, "status": "no-real-arm", "reason": why}));
            continue;
        }
        let out = run_backend(s, args.backend, Some(&pb))?;
        let dir = golden::golden_dir(s, args.golden.as_deref());
        let verdict = match mode {
            Mode::Bless => {
                golden::bless(&dir, &out)?;
                None
            }
            Mode::Check if tap && s.pipeline == sim::scenario::Pipeline::TapGro => {
                Some(crate::gro_real::check_real_gro(&dir, &out)?)
            }
            Mode::Check if tap => Some(check_real(&dir, &out, s.pipeline)?),
            Mode::Check => Some(golden::check(&dir, &out)?),
        };
        pb.inc(1);
        let (status, detail) = match &verdict {
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
            Some(Verdict::Mismatch(d)) => ("fail", Some(d.clone())),
        };
        if matches!(status, "fail" | "missing") {
            failed += 1;
        }
        if !args.json {
            pb.suspend(|| {
                println!("{status:>7}  {}  ({} frames)", s.name, out.frames);
                if let Some(d) = &detail {
                    for line in d.lines() {
                        println!("         {line}");
                    }
                }
            });
        }
        results.push(json!({"scenario": s.name, "status": status, "frames": out.frames, "detail": detail, "notes": out.notes}));
    }
    pb.finish_and_clear();
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
