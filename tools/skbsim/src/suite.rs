//! `skbsim run` and `skbsim bless` over a set of scenarios.

use std::path::{Path, PathBuf};

use clap::Args;
use sim::scenario::Scenario;
use sim::trace::diff::first_divergence;

use crate::cli_error::CliError;
use crate::diff::pcap_divergence;
use crate::golden::{self, Verdict};
use crate::runner::{Backend, ScenarioOutput};

mod run;
pub use run::run;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files or directories (searched recursively for *.toml; `pcaps`
    /// directories hold inputs, not scenarios).
    #[arg(default_value = "scenarios")]
    pub paths: Vec<PathBuf>,
    /// Run only shard K of N (1-based), split by a stable hash of the scenario name.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Golden root (default: for a scenario at `<suite>/scenarios/<pipeline>/<name>.toml`,
    /// `<suite>/golden`, wherever it is run from; a scenario anywhere else has none).
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

/// The trace of a real-kernel replay `out` of `scenario` against the golden trace in
/// `dir`, over what a real arm sees: a golden is text, so its records are the
/// simulator's that write it now (checked: they do, byte for byte), compared by their
/// marks (`crate::conform::compare_traces`). `None` when they agree; else the verdict.
pub fn check_real_trace(
    dir: &Path,
    scenario: &Scenario,
    out: &ScenarioOutput,
) -> Result<Option<Verdict>, CliError> {
    let trace_path = dir.join(golden::TRACE_FILE);
    if !trace_path.exists() {
        return Ok(Some(Verdict::Missing(trace_path)));
    }
    let text = golden::read_golden_trace(&trace_path)?;
    let golden_trace = golden::snap_body(&text).trim_end();
    let sim = crate::runner::run_sim(scenario, None)?;
    if golden_trace != sim.trace.trim_end() {
        let d = first_divergence(golden_trace, sim.trace.trim_end(), &[]).map_or_else(
            || "they differ only in blank lines".to_string(),
            |d| d.to_string(),
        );
        return Ok(Some(Verdict::Mismatch(format!(
            "{} (- golden, + simulator): the golden is not the simulator's trace, so it has no records to compare the real kernel's with (`skbsim run` and `skbsim bless` on the simulator)\n{d}",
            trace_path.display()
        ))));
    }
    Ok(
        crate::conform::compare_traces(&scenario.name, &sim.records, &out.records).map(|m| {
            Verdict::Mismatch(format!(
                "{} (- golden, + real kernel)\nfirst difference at `{}`, field `{}`:\n  - {}\n  + {}",
                trace_path.display(),
                m.read,
                m.field,
                m.sim,
                m.real
            ))
        }),
    )
}

/// Compare a real-kernel replay of `scenario` with the (simulator's) goldens in `dir`:
/// the trace over what a real arm sees ([`check_real_trace`]), the output pcap byte
/// for byte.
pub fn check_real(
    dir: &Path,
    scenario: &Scenario,
    out: &ScenarioOutput,
) -> Result<Verdict, CliError> {
    let pcap_path = dir.join(golden::PCAP_FILE);
    if let Some(v) = check_real_trace(dir, scenario, out)? {
        return Ok(v);
    }
    if !pcap_path.exists() {
        return Ok(Verdict::Missing(pcap_path));
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

/// One scenario file of a run: loaded, or the one-line reason it could not be.
#[derive(Debug)]
pub struct Entry {
    /// The file as found (as the user named it, or under a directory they named).
    pub path: PathBuf,
    /// `<area>/<stem>` of the real file ([`real_name`]); also the loaded scenario's name.
    pub name: String,
    pub scenario: Result<Scenario, CliError>,
}

/// The scenario files under `paths` that fall in `shard`, each loaded or with why it
/// could not be (so one bad file fails alone); an error when there are none.
pub fn load_entries(paths: &[PathBuf], shard: Option<&str>) -> Result<Vec<Entry>, CliError> {
    let shard = shard.map(parse_shard).transpose()?;
    let entries: Vec<Entry> = discover(paths)?
        .into_iter()
        .map(|path| (real_name(&path), path))
        .filter(|(name, _)| in_shard(name, shard))
        .map(|(name, path)| Entry {
            scenario: Scenario::load(&path)
                .map(|s| Scenario {
                    name: name.clone(),
                    ..s
                })
                .map_err(CliError::from),
            path,
            name,
        })
        .collect();
    if entries.is_empty() {
        return Err(CliError(format!(
            "no scenarios found in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(entries)
}

/// A scenario's name ([`Scenario::name_of`]) from where the file really is (links
/// resolved), so it is the same from every working directory and through links: it is
/// in the trace's header and names the golden under `--golden`.
fn real_name(path: &Path) -> String {
    match std::fs::canonicalize(path) {
        Ok(real) => Scenario::name_of(&real),
        Err(_) => Scenario::name_of(path),
    }
}

/// Load the scenarios under `paths` that fall in `shard`: an error when there are none
/// or one does not load.
pub fn load_scenarios(paths: &[PathBuf], shard: Option<&str>) -> Result<Vec<Scenario>, CliError> {
    load_entries(paths, shard)?
        .into_iter()
        .map(|e| e.scenario)
        .collect()
}

/// `e` naming the scenario file it happened in (once: errors that already start with the
/// file, such as the scenario's own parse errors, are left as they are), so a bad input
/// pcap or golden says which scenario it belongs to.
pub fn in_scenario(path: &Path, e: CliError) -> CliError {
    let file = path.display().to_string();
    if e.0.starts_with(&format!("{file}:")) {
        e
    } else {
        CliError(format!("{file}: {e}"))
    }
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
            records: None,
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
