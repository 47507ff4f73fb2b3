//! `skbsim bench` (`--replay`): the speed of the command users run. Every pipeline
//! (tun-read, tap-write, tap-gro, vhost-tx), with `-o OUT` and with `-o OUT --trace T`,
//! is run as `skbsim replay IN --pipeline P -o OUT [--trace T]` by this same binary,
//! timed from outside as a whole process (spawn to exit), with its peak RSS (VmHWM, read
//! exactly through `wait4`; see `skbsim_kernel::child`); medians of `--runs`, the cases
//! alternating within each run so they share the machine's background load. Where
//! tcpreplay is installed (and we are root), tcpreplay through a real tap on the same
//! file in the same run, and the ratios (see `skbsim_kernel::tcpreplay` for the two
//! paths).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use serde_json::{json, Value};
use skbsim_kernel::child::run_measured;
use skbsim_kernel::tcpreplay::{find_tcpreplay, tcpreplay_bench, tcpreplay_version};

use crate::bench::capture::{interrupted, Capture, Limit, Scratch};
use crate::bench::BenchArgs;
use crate::cli_error::CliError;
use crate::progress;
use crate::{out, outln};

/// Each pipeline and its `-o` target (frames/s on one core, issue 11).
pub const PIPELINES: [(&str, f64); 4] = [
    ("tun-read", 3e6),
    ("tap-write", 3e6),
    ("tap-gro", 2e6),
    ("vhost-tx", 2e6),
];
/// Target with `--trace FILE`, every pipeline.
pub const TRACE_TARGET_FPS: f64 = 0.5e6;
/// Peak RSS target (for a 2 GB capture), every pipeline and mode.
pub const RSS_TARGET_KIB: u64 = 64 * 1024;
/// Issue 21's targets as ratios to tcpreplay in the same run: tun-read over its read
/// path, the three write-side pipelines over its write path; `replay -o`, then
/// `replay -o --trace`.
pub const RATIO_TARGETS: [(&str, f64, f64); 4] = [
    ("tun-read", 8.0, 3.0),
    ("tap-write", 8.0, 3.0),
    ("tap-gro", 6.0, 3.0),
    ("vhost-tx", 6.0, 3.0),
];
/// A case whose median run is shorter than this is timed but not judged: a whole
/// `skbsim replay` process costs 10-20 ms here before its first frame (spawn, exec,
/// dynamic linking, opening the files: measured on a one-frame capture), so below about
/// 0.1 s the rate says more about start-up than about the path (`--frames 20000` runs
/// 0.04 s and would FAIL every target).
pub const MIN_JUDGED_SECS: f64 = 0.1;

/// One pipeline in one mode over all runs.
#[derive(Debug, Clone)]
struct Case {
    pipeline: &'static str,
    trace: bool,
    target_fps: f64,
    secs: Vec<f64>,
    rss_kib: Vec<u64>,
    /// "failed: <first stderr line>": no further runs.
    error: Option<String>,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

impl Case {
    fn fps(&self, frames: u64) -> Option<f64> {
        (self.error.is_none() && !self.secs.is_empty())
            .then(|| frames as f64 / median(&self.secs).max(1e-9))
    }
    fn peak_kib(&self) -> Option<u64> {
        self.rss_kib.iter().copied().max()
    }
    /// Whether the runs are long enough for the rate to be judged (MIN_JUDGED_SECS).
    fn judged(&self) -> bool {
        !self.secs.is_empty() && median(&self.secs) >= MIN_JUDGED_SECS
    }
    fn mode(&self) -> &'static str {
        if self.trace {
            "-o --trace"
        } else {
            "-o"
        }
    }
}

/// Run `skbsim replay` once for `case`; its outputs are removed right after.
fn run_case(exe: &Path, input: &Path, dir: &Path, case: &mut Case) -> Result<(), CliError> {
    let out = dir.join("out.pcap");
    let trace = dir.join("trace.txt");
    let err_path = dir.join("replay.stderr");
    let err_file = std::fs::File::create(&err_path)
        .map_err(|e| CliError(format!("{}: {e}", err_path.display())))?;
    let mut cmd = Command::new(exe);
    cmd.arg("replay")
        .arg(input)
        .args(["--pipeline", case.pipeline, "-o"])
        .arg(&out);
    if case.trace {
        cmd.arg("--trace").arg(&trace);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(err_file));
    let m = run_measured(&mut cmd).map_err(|e| CliError(format!("run {}: {e}", exe.display())));
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    for p in [&out, &trace, &err_path] {
        let _ = std::fs::remove_file(p);
    }
    if interrupted() {
        return Err(CliError("interrupted".into()));
    }
    let m = m?;
    if m.status.success() {
        case.secs.push(m.wall.as_secs_f64());
        case.rss_kib.push(m.peak_rss_kib);
    } else {
        let first = stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map_or_else(|| m.status.to_string(), str::to_string);
        case.error = Some(format!("failed: {first}"));
    }
    Ok(())
}

/// tcpreplay's part of the report.
enum Tcpreplay {
    Skipped(String),
    Failed(String),
    Ran {
        version: String,
        write_fps: f64,
        read_fps: f64,
        bench: skbsim_kernel::tcpreplay::TcpreplayBench,
    },
}

fn run_tcpreplay(args: &BenchArgs, cap: &Capture, scratch: &Scratch) -> Tcpreplay {
    if args.no_tcpreplay {
        return Tcpreplay::Skipped("skipped (--no-tcpreplay)".into());
    }
    let Some(program) = find_tcpreplay() else {
        return Tcpreplay::Skipped("not installed".into());
    };
    if let Err(why) = skbsim_kernel::privileges_ok() {
        return Tcpreplay::Skipped(format!("skipped: {why}"));
    }
    let version = tcpreplay_version(&program).unwrap_or_else(|| "tcpreplay".into());
    eprintln!("{version}: {} of each path", plural(args.runs, "run"));
    match tcpreplay_bench(&program, &cap.path, args.runs, scratch.path()) {
        Ok(bench) => {
            let rates = |runs: &[skbsim_kernel::tcpreplay::TcpreplayRun], read: bool| {
                median(&runs.iter().map(|r| r.fps(read)).collect::<Vec<_>>())
            };
            Tcpreplay::Ran {
                version,
                write_fps: rates(&bench.write, false),
                read_fps: rates(&bench.read, true),
                bench,
            }
        }
        Err(e) => Tcpreplay::Failed(format!("failed: {e}")),
    }
}

const WRITE_PATH: &str = "tcpreplay --topspeed -i TAP IN: AF_PACKET into a real tap's xmit (tun_net_xmit), nobody reading its fd (frames past its 500-frame ring are dropped); frames sent / tcpreplay's wall time";
const READ_PATH: &str =
    "the same with a reader draining the tap's fd; frames the reader got / spawn to the last read";

/// Run the harness on `limit` generated frames (or `--input`) and print the report.
pub fn bench(args: &BenchArgs, limit: Limit) -> Result<ExitCode, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError(format!("cannot find this skbsim binary: {e}")))?;
    let scratch = Scratch::new(args.tmpdir.as_deref())?;
    let cap = Capture::prepare(args.input.as_deref(), limit, &scratch)?;
    let mut cases: Vec<Case> = PIPELINES
        .iter()
        .flat_map(|&(p, target)| {
            [false, true].map(|trace| Case {
                pipeline: p,
                trace,
                target_fps: if trace { TRACE_TARGET_FPS } else { target },
                secs: Vec::new(),
                rss_kib: Vec::new(),
                error: None,
            })
        })
        .collect();
    let pb = progress::bar((args.runs * cases.len()) as u64, "replay");
    for _ in 0..args.runs {
        for c in cases.iter_mut() {
            pb.set_message(format!("{} {}", c.pipeline, c.mode()));
            if c.error.is_none() {
                run_case(&exe, &cap.path, scratch.path(), c)?;
            }
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    let tcp = run_tcpreplay(args, &cap, &scratch);
    if interrupted() {
        return Err(CliError("interrupted".into()));
    }
    let report = Report {
        exe: &exe,
        cap: &cap,
        runs: args.runs,
        cases: &cases,
        tcp: &tcp,
    };
    if args.json {
        outln!("{}", report.json())?;
    } else {
        out!("{}", report.text())?;
    }
    Ok(ExitCode::SUCCESS)
    // `scratch` is dropped here: the generated capture and every output are removed.
}

struct Report<'a> {
    exe: &'a PathBuf,
    cap: &'a Capture,
    runs: usize,
    cases: &'a [Case],
    tcp: &'a Tcpreplay,
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

/// A rate's verdict: PASS/FAIL, or "short" for runs too short to judge (MIN_JUDGED_SECS).
fn rate_verdict(ok: bool, judged: bool) -> &'static str {
    if judged {
        pass(ok)
    } else {
        "short"
    }
}

impl Report<'_> {
    fn fps_of(&self, pipeline: &str, trace: bool) -> Option<f64> {
        self.cases
            .iter()
            .find(|c| c.pipeline == pipeline && c.trace == trace)
            .and_then(|c| c.fps(self.cap.frames))
    }

    /// Whether every replay case ran long enough to be judged.
    fn all_judged(&self) -> bool {
        self.cases.iter().all(|c| c.error.is_some() || c.judged())
    }

    /// (name, skbsim fps, tcpreplay fps, target) for every comparison of [`RATIO_TARGETS`].
    fn ratios(&self) -> Vec<(String, Option<f64>, f64, f64)> {
        let Tcpreplay::Ran {
            write_fps,
            read_fps,
            ..
        } = self.tcp
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (p, o_target, trace_target) in RATIO_TARGETS {
            let (path, theirs) = if p == "tun-read" {
                ("read", *read_fps)
            } else {
                ("write", *write_fps)
            };
            for (trace, target) in [(false, o_target), (true, trace_target)] {
                let mode = if trace { "-o --trace" } else { "-o" };
                let name = format!("{p} {mode} / tcpreplay {path} path");
                out.push((name, self.fps_of(p, trace), theirs, target));
            }
        }
        out
    }

    fn json(&self) -> Value {
        let frames = self.cap.frames;
        let cases: Vec<Value> = self
            .cases
            .iter()
            .map(|c| {
                let fps = c.fps(frames);
                let peak = c.peak_kib();
                json!({
                    "pipeline": c.pipeline, "trace": c.trace, "mode": c.mode(),
                    "status": c.error.clone().unwrap_or_else(|| "ok".into()),
                    "runs_s": c.secs, "median_s": fps.map(|_| median(&c.secs)),
                    "fps": fps, "peak_rss_kib": peak, "runs_peak_rss_kib": c.rss_kib,
                    "target_fps": c.target_fps,
                    "judged": c.judged(),
                    "fps_pass": fps.filter(|_| c.judged()).map(|f| f >= c.target_fps),
                    "rss_pass": peak.map(|k| k < RSS_TARGET_KIB),
                })
            })
            .collect();
        let tcp = match self.tcp {
            Tcpreplay::Skipped(s) | Tcpreplay::Failed(s) => json!({"status": s}),
            Tcpreplay::Ran {
                version,
                write_fps,
                read_fps,
                bench,
            } => {
                let runs = |v: &[skbsim_kernel::tcpreplay::TcpreplayRun], read: bool| {
                    v.iter()
                        .map(|r| json!({"secs": r.secs, "wall_s": r.process.wall.as_secs_f64(), "sent": r.sent, "read": r.read, "fps": r.fps(read), "peak_rss_kib": r.process.peak_rss_kib}))
                        .collect::<Vec<_>>()
                };
                json!({
                    "status": "ok", "version": version,
                    "write_path": {"definition": WRITE_PATH, "fps": write_fps, "runs": runs(&bench.write, false)},
                    "read_path": {"definition": READ_PATH, "fps": read_fps, "runs": runs(&bench.read, true)},
                    "ratios": self.ratios().iter().map(|(name, ours, theirs, target)| {
                        let r = ours.map(|o| o / theirs.max(1e-9));
                        json!({"name": name, "ratio": r, "target": target, "pass": r.filter(|_| self.all_judged()).map(|r| r >= *target)})
                    }).collect::<Vec<_>>(),
                })
            }
        };
        json!({
            "mode": "replay",
            "binary": self.exe,
            "input": self.cap.path, "generated": self.cap.generated,
            "frames": frames, "file_bytes": self.cap.bytes, "runs": self.runs,
            "rss_target_kib": RSS_TARGET_KIB,
            "min_judged_s": MIN_JUDGED_SECS,
            "cases": cases,
            "tcpreplay": tcp,
        })
    }

    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut t = String::new();
        let cap = self.cap;
        let _ = writeln!(
            t,
            "capture    {} ({} frames, {:.1} MB{})",
            cap.path.display(),
            cap.frames,
            cap.bytes as f64 / 1e6,
            if cap.generated {
                ", generated: 60-1514 B, a third 802.1Q; removed afterwards"
            } else {
                ""
            }
        );
        let _ = writeln!(
            t,
            "command    {} replay IN --pipeline P -o OUT [--trace T], timed spawn to exit, median of {}; peak RSS = its VmHWM (wait4)",
            self.exe.display(),
            plural(self.runs, "run")
        );
        let _ = writeln!(
            t,
            "{:<10} {:<11} {:>9} {:>12} {:>12}  {:>12} {:>6}",
            "pipeline", "mode", "median s", "M frames/s", "target", "peak RSS MiB", "< 64"
        );
        self.case_rows(&mut t);
        self.notes(&mut t);
        self.tcpreplay_text(&mut t);
        t
    }

    /// One row per pipeline and mode: the median, the rate against its target, peak RSS.
    fn case_rows(&self, t: &mut String) {
        use std::fmt::Write as _;
        let cap = self.cap;
        for c in self.cases {
            match (&c.error, c.fps(cap.frames)) {
                (None, Some(fps)) => {
                    let peak = c.peak_kib().unwrap_or(0);
                    let _ = writeln!(
                        t,
                        "{:<10} {:<11} {:>9.3} {:>12.3} {:>7.1} {}  {:>12.1} {:>6}",
                        c.pipeline,
                        c.mode(),
                        median(&c.secs),
                        fps / 1e6,
                        c.target_fps / 1e6,
                        rate_verdict(fps >= c.target_fps, c.judged()),
                        peak as f64 / 1024.0,
                        pass(peak < RSS_TARGET_KIB)
                    );
                }
                (err, _) => {
                    let _ = writeln!(
                        t,
                        "{:<10} {:<11} {}",
                        c.pipeline,
                        c.mode(),
                        err.as_deref().unwrap_or("no runs")
                    );
                }
            }
        }
    }

    /// Why a figure is not judged, or judged against a target meant for another capture.
    fn notes(&self, t: &mut String) {
        use std::fmt::Write as _;
        let cap = self.cap;
        if !self.all_judged() {
            let _ = writeln!(
                t,
                "note       short: runs under {MIN_JUDGED_SECS} s are timed, not judged (a process's start-up is 10-20 ms of them); use --frames 1000000 or more"
            );
        }
        if cap.bytes < 2_000_000_000 {
            let _ = writeln!(
                t,
                "note       the 64 MiB target is for a 2 GB capture (`skbsim bench --make-capture PATH --bytes 2G`, then `--input PATH`); this one is {:.1} MB",
                cap.bytes as f64 / 1e6
            );
        }
    }

    /// tcpreplay's two paths on the same capture, and the ratios the targets are set in.
    fn tcpreplay_text(&self, t: &mut String) {
        use std::fmt::Write as _;
        let cap = self.cap;
        match self.tcp {
            Tcpreplay::Skipped(s) | Tcpreplay::Failed(s) => {
                let _ = writeln!(t, "tcpreplay: {s}");
            }
            Tcpreplay::Ran {
                version,
                write_fps,
                read_fps,
                bench,
            } => {
                let peak = bench
                    .write
                    .iter()
                    .chain(&bench.read)
                    .map(|r| r.process.peak_rss_kib)
                    .max()
                    .unwrap_or(0);
                let read_got = bench.read.iter().map(|r| r.read).min().unwrap_or(0);
                let _ = writeln!(
                    t,
                    "{version}, same capture, {} of each path (medians), peak RSS {:.1} MiB",
                    plural(bench.write.len(), "run"),
                    peak as f64 / 1024.0
                );
                let sent = bench.write.iter().map(|r| r.sent).min().unwrap_or(0);
                let _ = writeln!(
                    t,
                    "  write path {:>8.3} M frames/s  ({WRITE_PATH}; at least {sent} of {} frames sent per run)",
                    write_fps / 1e6,
                    cap.frames
                );
                let _ = writeln!(
                    t,
                    "  read path  {:>8.3} M frames/s  ({READ_PATH}; at least {read_got} of {} frames read per run)",
                    read_fps / 1e6,
                    cap.frames
                );
                for (name, ours, theirs, target) in self.ratios() {
                    match ours {
                        Some(o) => {
                            let r = o / theirs.max(1e-9);
                            let _ = writeln!(
                                t,
                                "  {name:<44} {r:>7.3}x  (target {target}x) {}",
                                rate_verdict(r >= target, self.all_judged())
                            );
                        }
                        None => {
                            let _ = writeln!(t, "  {name:<44} n/a (the replay failed)");
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(secs: Vec<f64>) -> Case {
        Case {
            pipeline: "tun-read",
            trace: false,
            target_fps: 1e6,
            secs,
            rss_kib: vec![],
            error: None,
        }
    }

    #[test]
    fn a_case_is_judged_from_its_median_run_and_a_short_one_says_so() {
        // Median of [0.05, 0.2, 0.09] is 0.09 < 0.1: not judged, whatever the rate.
        assert!(!case(vec![0.05, 0.2, 0.09]).judged());
        assert!(case(vec![0.1]).judged());
        assert!(!case(vec![]).judged());
        assert_eq!(rate_verdict(false, false), "short");
        assert_eq!(rate_verdict(true, false), "short");
        assert_eq!(rate_verdict(true, true), "PASS");
        assert_eq!(rate_verdict(false, true), "FAIL");
    }
}
