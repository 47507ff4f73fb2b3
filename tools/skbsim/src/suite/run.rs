//! The `run` and `bless` loop: scenarios on every core, outcomes printed in suite order.
//! A scenario that cannot run (a bad file, a bad input pcap, a corrupt golden) fails
//! alone with its one-line reason; the rest still run and the exit status is 2.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};
use sim::scenario::Scenario;

use super::{check_real, check_streaming, in_scenario, load_entries, Entry, Mode, RunArgs};
use crate::cli_error::CliError;
use crate::engine::Sinks;
use crate::golden::{self, Verdict};
use crate::outln;
use crate::progress;
use crate::runner::{replay_into, run_backend, tap_ready, Backend};

/// One scenario's outcome, printed in suite order whatever thread ran it.
#[derive(Debug)]
struct Outcome {
    status: &'static str,
    reason_or_detail: Option<String>,
    frames: Option<u64>,
    notes: Vec<String>,
}

impl Outcome {
    fn without_frames(status: &'static str, reason: String) -> Outcome {
        Outcome {
            status,
            reason_or_detail: Some(reason),
            frames: None,
            notes: Vec::new(),
        }
    }
}

/// An entry's outcome: a file that did not load, or an error while replaying or
/// comparing, is an "error" naming the scenario file.
fn run_entry(e: &Entry, args: &RunArgs, mode: Mode, pb: &indicatif::ProgressBar) -> Outcome {
    let r = match &e.scenario {
        Ok(s) => run_one(s, args, mode, pb).map_err(|err| in_scenario(&e.path, err)),
        Err(err) => Err(in_scenario(&e.path, CliError(err.0.clone()))),
    };
    r.unwrap_or_else(|err| Outcome::without_frames("error", err.0))
}

fn run_one(
    s: &Scenario,
    args: &RunArgs,
    mode: Mode,
    pb: &indicatif::ProgressBar,
) -> Result<Outcome, CliError> {
    let tap = args.backend == Backend::Tap;
    if let (true, Some(reason)) = (tap, &s.sim_only) {
        return Ok(Outcome::without_frames("sim-only", reason.clone()));
    }
    // Probed only for the real backend (the probes need root and namespaces).
    let arm = if tap {
        skbsim_kernel::arm::real_arm(s.pipeline)
            .and_then(|()| skbsim_kernel::features::missing(s).map_or(Ok(()), Err))
    } else {
        Ok(())
    };
    if let Err(why) = arm {
        return Ok(Outcome::without_frames("no-arm", why));
    }
    let exec = s.pipeline == sim::scenario::Pipeline::Exec;
    let (verdict, frames, notes) = match (mode, golden::golden_dir(s, args.golden.as_deref())) {
        (Mode::Bless, None) => return Err(golden::not_in_a_suite(&s.path)),
        (Mode::Bless, Some(dir)) => {
            let out = run_backend(s, args.backend, None)?;
            golden::bless(&dir, &out)?;
            (None, out.frames, out.notes)
        }
        (Mode::Check, None) => {
            // Outside any suite: replayed (bad input is still an error), compared with
            // nothing.
            let (frames, notes) = if tap {
                let out = run_backend(s, args.backend, Some(pb))?;
                (out.frames, out.notes)
            } else if exec {
                (run_backend(s, Backend::Sim, None)?.frames, Vec::new())
            } else {
                let summary = replay_into(s, Backend::Sim, &mut Sinks::default(), None)?;
                (summary.frames, Vec::new())
            };
            return Ok(Outcome {
                status: "no-golden",
                reason_or_detail: Some(format!(
                    "{}: not in a suite (a scenarios/<pipeline>/ directory beside golden/); replayed, compared with no golden",
                    s.path.display()
                )),
                frames: Some(frames),
                notes,
            });
        }
        (Mode::Check, Some(dir)) if exec => {
            // A program's run, whole in memory (crate::exec_scenario).
            let out = run_backend(s, Backend::Sim, None)?;
            (Some(golden::check(&dir, &out)?), out.frames, Vec::new())
        }
        (Mode::Check, Some(dir)) if !tap => {
            let (v, frames) = check_streaming(s, &dir, None)?;
            (Some(v), frames, Vec::new())
        }
        (Mode::Check, Some(dir)) => {
            let out = run_backend(s, args.backend, Some(pb))?;
            let v = if s.pipeline == sim::scenario::Pipeline::TapGro {
                crate::gro_real::check_real_gro(&dir, s, &out)?
            } else {
                check_real(&dir, s, &out)?
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
                "{}: no golden (run `skbsim bless {}{}`)",
                p.display(),
                s.path.display(),
                args.golden
                    .as_ref()
                    .map(|g| format!(" --golden {}", g.display()))
                    .unwrap_or_default()
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

/// Remove what killed blesses left under the golden roots of `entries`.
fn clean_stale_blesses(entries: &[Entry], root: Option<&Path>) -> Result<(), CliError> {
    let mut roots: Vec<PathBuf> = entries
        .iter()
        .filter_map(|e| golden::golden_root(&e.path, root))
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

/// `outcome`'s lines, as `run` prints them. A scenario that could not run is an error
/// line on stderr, as any bad input (one line naming the file), in suite order.
fn print_outcome(name: &str, o: &Outcome) -> Result<(), CliError> {
    let reason = o.reason_or_detail.as_deref().unwrap_or_default();
    match o.status {
        "sim-only" => outln!("sim-only  {name}: {reason}"),
        "no-arm" => outln!(" no-arm  {name}: {reason}"),
        "error" => {
            eprintln!("skbsim: {reason}");
            Ok(())
        }
        status => {
            outln!("{status:>7}  {name}  ({} frames)", o.frames.unwrap_or(0))?;
            for line in reason.lines() {
                outln!("         {line}")?;
            }
            Ok(())
        }
    }
}

fn outcome_json(name: &str, o: &Outcome) -> Value {
    match o.status {
        "sim-only" => json!({"scenario": name, "status": "sim-only", "reason": o.reason_or_detail}),
        "no-arm" => {
            json!({"scenario": name, "status": "no-real-arm", "reason": o.reason_or_detail})
        }
        "error" => json!({"scenario": name, "status": "error", "error": o.reason_or_detail}),
        status => {
            json!({"scenario": name, "status": status, "frames": o.frames, "detail": o.reason_or_detail, "notes": o.notes})
        }
    }
}

/// How many outcomes of each kind.
#[derive(Debug, Default)]
struct Counts {
    all: usize,
    failed: usize,
    sim_only: usize,
    no_arm: usize,
    no_golden: usize,
    errors: usize,
}

impl Counts {
    fn add(&mut self, status: &str) {
        self.all += 1;
        match status {
            "sim-only" => self.sim_only += 1,
            "no-arm" => self.no_arm += 1,
            "no-golden" => self.no_golden += 1,
            "error" => self.errors += 1,
            "fail" | "missing" => self.failed += 1,
            _ => {}
        }
    }

    fn passed(&self) -> usize {
        self.all - self.failed - self.sim_only - self.no_arm - self.no_golden - self.errors
    }

    /// The last line of a text run.
    fn summary(&self, mode: Mode, tap: bool) -> String {
        let mut line = match mode {
            Mode::Bless => format!("blessed {} scenarios", self.all - self.errors),
            Mode::Check => format!("{} passed, {} failed", self.passed(), self.failed),
        };
        if mode == Mode::Check && tap {
            line.push_str(&format!(", {} sim-only", self.sim_only));
            if self.no_arm > 0 {
                line.push_str(&format!(", {} without a real arm", self.no_arm));
            }
        }
        if self.no_golden > 0 {
            line.push_str(&format!(", {} without a golden", self.no_golden));
        }
        if self.errors > 0 {
            line.push_str(&format!(", {} could not run", self.errors));
        }
        line
    }

    fn exit_code(&self) -> ExitCode {
        if self.errors > 0 {
            ExitCode::from(2)
        } else if self.failed > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }
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
    let entries = load_entries(&args.paths, args.shard.as_deref())?;
    if mode == Mode::Bless && args.golden.is_none() {
        // Refused before anything is written: a golden outside a suite is found by
        // nothing.
        if let Some(e) = entries.iter().find(|e| golden::suite_of(&e.path).is_none()) {
            return Err(golden::not_in_a_suite(&e.path));
        }
    }
    clean_stale_blesses(&entries, args.golden.as_deref())?;
    let pb = progress::bar(
        entries.len() as u64,
        if mode == Mode::Bless {
            "blessing"
        } else {
            "replaying"
        },
    );
    // Scenarios run on every core; each outcome is printed in suite order as soon as it
    // and everything before it is done, so the output is the same on every run.
    let n = entries.len();
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Outcome)>();
    let mut results = Vec::new();
    let mut counts = Counts::default();
    // stdout failed (its reader gone, the disk full): no more scenarios start.
    let mut stdout_error: Option<CliError> = None;
    std::thread::scope(|scope| {
        for _ in 0..workers(args.backend, n) {
            let tx = tx.clone();
            let (next, entries, pb) = (&next, &entries, &pb);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(e) = entries.get(i) else {
                    break;
                };
                let o = run_entry(e, args, mode, pb);
                pb.inc(1);
                if tx.send((i, o)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut done: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
        let mut printed = 0;
        for (i, o) in rx {
            done[i] = Some(o);
            while let Some(o) = done.get_mut(printed).and_then(Option::take) {
                let name = &entries[printed].name;
                printed += 1;
                if stdout_error.is_some() {
                    continue;
                }
                counts.add(o.status);
                // With --json too, an error is its stderr line.
                if !args.json || o.status == "error" {
                    if let Err(e) = pb.suspend(|| print_outcome(name, &o)) {
                        stdout_error = Some(e);
                        // Running scenarios finish (a bless commits whole); none start.
                        next.store(n, Ordering::Relaxed);
                    }
                }
                results.push(outcome_json(name, &o));
            }
        }
    });
    pb.finish_and_clear();
    if let Some(e) = stdout_error {
        return Err(e);
    }
    if args.json {
        outln!(
            "{}",
            json!({"backend": args.backend.name(), "results": results, "passed": counts.passed(), "failed": counts.failed, "sim_only": counts.sim_only, "no_real_arm": counts.no_arm, "no_golden": counts.no_golden, "errors": counts.errors})
        )?;
    } else {
        outln!("{}", counts.summary(mode, tap))?;
    }
    Ok(counts.exit_code())
}
