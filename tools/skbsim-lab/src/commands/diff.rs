//! `skbsim lab diff`: the real traces of two guest kernels (`--kernel A --kernel B`), or
//! of one kernel without and with `--patch`, compared per scenario with the field-level
//! diff `skbsim diff` prints (the first differing event and field, over what the real
//! arms observe), then whether the model predicts it: the simulator's traces of the
//! scenario under the two sides' profiles, compared the same way.
//!
//! A scenario's verdict: `same` (neither the kernels nor the model differ), `predicted`
//! (both differ first at the same event and field, by the same change: the same two values,
//! or for a counters field the same counters from the same to the same), `ELSEWHERE` (both
//! differ, but not there), `UNPREDICTED` (the kernels differ, the model's profiles do not),
//! or `SPURIOUS` (the profiles differ, the kernels do not). Exit 1 unless every scenario is
//! `same` or `predicted`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};
use sim::profile::KernelProfile;
use sim::scenario::Scenario;
use sim::trace::diff::Divergence;
use sim::trace::record::{Seen, HEADER};
use sim::trace::record_diff::{first_flat_divergence, Flat};

use super::conform::{guest_profile, guest_traces, real_output, GuestTraces};
use crate::kernel::DEFAULT_KERNEL;

use super::skbsim::{outln, Skbsim};
use super::{GuestOpts, LabOpts};

#[derive(Debug, Args)]
pub struct LabDiffArgs {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(default_value = "scenarios")]
    pub paths: Vec<PathBuf>,
    /// The two kernels (`--kernel 6.1 --kernel 6.12`), or one with `--patch`.
    #[arg(long = "kernel", value_name = "VERSION|PACKAGE")]
    pub kernels: Vec<String>,
    /// A local build as a side (bzImage + modules tree, as for `lab conform --kernel-dir`).
    /// The sides are the `--kernel`s first, then the `--kernel-dir`s, in order: A is the
    /// first of them.
    #[arg(long = "kernel-dir", value_name = "DIR")]
    pub kernel_dirs: Vec<PathBuf>,
    /// Compare the kernel without and with this patch (its modules rebuilt).
    #[arg(long, value_name = "FILE")]
    pub patch: Option<PathBuf>,
    /// The profile the model uses for the second side (default: the one modelling its release;
    /// with --patch, name the profile the patched kernel should behave as).
    #[arg(long, value_name = "NAME")]
    pub profile_b: Option<String>,
    /// The profile for the first side (default: the one modelling its release).
    #[arg(long, value_name = "NAME")]
    pub profile_a: Option<String>,
    #[command(flatten)]
    pub guest: GuestOpts,
}

/// One side of the diff: a Debian kernel or a local build.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DiffSide {
    Debian(String),
    Dir(PathBuf),
}

/// The two sides `a` names (the same kernel twice with `--patch`), or what is wrong.
fn sides(a: &LabDiffArgs) -> Result<(DiffSide, DiffSide), String> {
    let all: Vec<DiffSide> = a
        .kernels
        .iter()
        .cloned()
        .map(DiffSide::Debian)
        .chain(a.kernel_dirs.iter().cloned().map(DiffSide::Dir))
        .collect();
    match (all.as_slice(), &a.patch) {
        ([k], Some(_)) => Ok((k.clone(), k.clone())),
        ([x, y], None) => Ok((x.clone(), y.clone())),
        (_, Some(_)) => Err(
            "lab diff: with --patch give one kernel (--kernel or --kernel-dir); it runs without and with the patch"
                .into(),
        ),
        _ => Err(
            "lab diff: give two kernels (--kernel A --kernel B, or --kernel-dir for a local build), or one and --patch"
                .into(),
        ),
    }
}

fn side_opts(a: &LabDiffArgs, side: &DiffSide) -> LabOpts {
    let (kernel, kernel_dir) = match side {
        DiffSide::Debian(k) => (k.clone(), None),
        DiffSide::Dir(d) => (DEFAULT_KERNEL.to_string(), Some(d.clone())),
    };
    LabOpts {
        kernel,
        kernel_dir,
        guest: a.guest.clone(),
    }
}

/// What one side's real arm gave for a scenario: its records as a real arm observes
/// them ([`super::skbsim::ArmOutput::observed`]), or why none.
fn real_side(g: Option<&Value>, host: &str) -> Result<Vec<Flat>, String> {
    let Some(g) = g else {
        return Err("no result from the guest".into());
    };
    match g.get("status").and_then(Value::as_str) {
        Some("ok") => {
            let observed = real_output(g, host, host).observed;
            if observed.is_empty() {
                return Err("the guest sent no trace records".into());
            }
            Ok(profile_aside(observed))
        }
        Some(st) => Err(format!(
            "{st}: {}",
            g.get("reason")
                .or_else(|| g.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("")
        )),
        None => Err("malformed guest result".into()),
    }
}

/// The simulator's records of `s` under `profile`, as a real arm observes them.
fn model(s: &Scenario, profile: KernelProfile, sk: &dyn Skbsim) -> Result<Vec<Flat>, String> {
    let mut c = s.clone();
    c.profile = profile;
    c.sim_only = None;
    Ok(profile_aside(sk.run_sim(&c)?.observed))
}

/// `flats` with the header's `profile` a label: the two sides' profile names differ by
/// construction, so it describes the run here, not the datapath.
fn profile_aside(mut flats: Vec<Flat>) -> Vec<Flat> {
    if let Some((_, seen)) = flats
        .first_mut()
        .filter(|h| h.event == HEADER)
        .and_then(|h| h.field_mut("profile"))
    {
        *seen = Seen::Label;
    }
    flats
}

/// `key value key value ...` (a counters field) as pairs, or None.
fn pairs(v: &str) -> Option<Vec<(&str, &str)>> {
    let w: Vec<&str> = v.split_whitespace().collect();
    if w.is_empty() || !w.len().is_multiple_of(2) {
        return None;
    }
    let p: Vec<(&str, &str)> = w.chunks(2).map(|c| (c[0], c[1])).collect();
    p.iter()
        .all(|(k, v)| k.contains('_') && v.parse::<u64>().is_ok())
        .then_some(p)
}

/// What changed from A to B in a field: for a counters field only the counters that
/// changed (the two sides' baselines may differ where the change does not reach: the
/// model's 4.19 counts no XDP rx, the 6.1 guest does), else the two values.
fn change(d: &Divergence) -> (String, String, Vec<(String, String, String)>) {
    if let (Some(a), Some(b)) = (pairs(&d.left), pairs(&d.right)) {
        if a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.0 == y.0) {
            let changed = a
                .iter()
                .zip(&b)
                .filter(|(x, y)| x.1 != y.1)
                .map(|(x, y)| (x.0.to_string(), x.1.to_string(), y.1.to_string()))
                .collect();
            return (d.event.clone(), d.field.clone(), changed);
        }
    }
    (
        d.event.clone(),
        d.field.clone(),
        vec![(String::new(), d.left.clone(), d.right.clone())],
    )
}

fn div_json(d: &Option<Divergence>) -> Value {
    match d {
        None => Value::Null,
        Some(d) => json!({"event": d.event, "field": d.field, "a": d.left, "b": d.right}),
    }
}

/// `skbsim lab diff`: both sides' guest traces, each scenario's verdict
/// ([`Verdicts::scenario`]), then the report ([`Verdicts::report`]).
pub(super) fn diff(a: &LabDiffArgs, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    let (ka, kb) = sides(a)?;
    let scenarios: Vec<Scenario> = sk
        .load_scenarios(&a.paths, None)?
        .into_iter()
        .filter(|s| s.profile.name == KernelProfile::default().name)
        .collect();
    let (oa, ob) = (side_opts(a, &ka), side_opts(a, &kb));
    let ga = guest_traces(&oa, "diff-a", &scenarios, false, &[], None)?;
    let gb = guest_traces(&ob, "diff-b", &scenarios, false, &[], a.patch.as_deref())?;
    let pa = guest_profile(&ga.kernel, a.profile_a.as_deref())?;
    let pb = guest_profile(&gb.kernel, a.profile_b.as_deref())?;
    let mut v = Verdicts::default();
    for s in &scenarios {
        v.scenario(s, (&ga, &gb), (pa, pb), sk)?;
    }
    v.report(a, sk, (&ga, &gb), (pa, pb))
}

/// Each scenario's verdict in `lab diff`: the counts, a JSON row and a text block each.
#[derive(Default)]
struct Verdicts {
    same: usize,
    predicted: usize,
    elsewhere: usize,
    unpredicted: usize,
    spurious: usize,
    skipped: usize,
    rows: Vec<Value>,
    text: Vec<String>,
}

impl Verdicts {
    /// Scenario `s`: the first difference of the two guests' traces against the first
    /// difference of the simulator's under the two profiles.
    fn scenario(
        &mut self,
        s: &Scenario,
        (ga, gb): (&GuestTraces, &GuestTraces),
        (pa, pb): (KernelProfile, KernelProfile),
        sk: &dyn Skbsim,
    ) -> Result<(), String> {
        let host = KernelProfile::default().name;
        if let Some(why) = &s.sim_only {
            self.skipped += 1;
            self.rows
                .push(json!({"scenario": s.name, "verdict": "skipped", "reason": why}));
            return Ok(());
        }
        let (ra, rb) = (
            real_side(ga.results.get(&s.name), host),
            real_side(gb.results.get(&s.name), host),
        );
        let (ra, rb) = match (ra, rb) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(e), _) | (_, Err(e)) => {
                self.skipped += 1;
                self.rows
                    .push(json!({"scenario": s.name, "verdict": "skipped", "reason": e}));
                self.text.push(format!("  skipped  {}: {e}", s.name));
                return Ok(());
            }
        };
        let real = first_flat_divergence(&ra, &rb);
        let (ma, mb) = (model(s, pa, sk)?, model(s, pb, sk)?);
        let modelled = first_flat_divergence(&ma, &mb);
        let verdict = match (&real, &modelled) {
            (None, None) => {
                self.same += 1;
                "same"
            }
            (Some(r), Some(m)) if change(r) == change(m) => {
                self.predicted += 1;
                "predicted"
            }
            (Some(_), Some(_)) => {
                self.elsewhere += 1;
                "ELSEWHERE"
            }
            (Some(_), None) => {
                self.unpredicted += 1;
                "UNPREDICTED"
            }
            (None, Some(_)) => {
                self.spurious += 1;
                "SPURIOUS"
            }
        };
        let same_place = match (&real, &modelled) {
            (Some(r), Some(m)) => change(r) == change(m),
            (r, m) => r.is_none() && m.is_none(),
        };
        self.rows.push(json!({
            "scenario": s.name,
            "verdict": verdict,
            "real": div_json(&real),
            "model": div_json(&modelled),
            "model_same_field": same_place,
        }));
        if let Some(r) = &real {
            let mut t = format!(
                "{verdict:>11}  {}: first difference at `{}`, field `{}`:\n    - {}\n    + {}",
                s.name, r.event, r.field, r.left, r.right
            );
            match &modelled {
                Some(_) if same_place => t.push_str("\n    model: the same difference"),
                Some(m) => t.push_str(&format!(
                    "\n    model: differs first at `{}`, field `{}`: {} | {}",
                    m.event, m.field, m.left, m.right
                )),
                None => t.push_str(&format!(
                    "\n    model: {} and {} give the same trace",
                    pa.name, pb.name
                )),
            }
            self.text.push(t);
        } else if let Some(m) = &modelled {
            self.text.push(format!(
                "{verdict:>11}  {}: the kernels agree; the model ({} vs {}) differs at `{}`, field `{}`: {} | {}",
                s.name, pa.name, pb.name, m.event, m.field, m.left, m.right
            ));
        }
        Ok(())
    }

    /// The results on stdout (JSON, or the sides, the text blocks, a table of the
    /// differences and the counts); exit 1 unless every scenario is same or predicted.
    fn report(
        &self,
        a: &LabDiffArgs,
        sk: &dyn Skbsim,
        (ga, gb): (&GuestTraces, &GuestTraces),
        (pa, pb): (KernelProfile, KernelProfile),
    ) -> Result<ExitCode, String> {
        let summary = json!({
            "a": {"kernel": ga.kernel, "profile": pa.name, "setup": ga.setup.0},
            "b": {"kernel": gb.kernel, "profile": pb.name, "patch": a.patch, "setup": gb.setup.0},
            "results": self.rows,
            "same": self.same,
            "predicted": self.predicted,
            "unpredicted": self.unpredicted,
            "spurious": self.spurious,
            "elsewhere": self.elsewhere,
            "skipped": self.skipped,
        });
        if a.guest.json {
            outln!(sk, "{summary}")?;
        } else {
            let label_b = match &a.patch {
                Some(p) => format!("{} + {}", gb.kernel, p.display()),
                None => gb.kernel.clone(),
            };
            outln!(sk, "A: {} (model {})", ga.kernel, pa.name)?;
            outln!(sk, "B: {label_b} (model {})", pb.name)?;
            for t in &self.text {
                outln!(sk, "{t}")?;
            }
            outln!(sk)?;
            self.table(sk)?;
            outln!(
                sk,
                "{} same, {} differences predicted, {} predicted elsewhere, {} unpredicted, {} predicted but not seen, {} skipped",
                self.same,
                self.predicted,
                self.elsewhere,
                self.unpredicted,
                self.spurious,
                self.skipped
            )?;
            eprintln!("lab: A {}", ga.setup.1);
            eprintln!("lab: B {}", gb.setup.1);
        }
        Ok(if self.unpredicted + self.spurious + self.elsewhere > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }

    /// A row per scenario that differs: where the kernels and the model first differ.
    fn table(&self, sk: &dyn Skbsim) -> Result<(), String> {
        outln!(
            sk,
            "{:<44} {:<34} {:<34} verdict",
            "scenario",
            "real A vs B",
            "model"
        )?;
        for r in &self.rows {
            let cell = |v: &Value| match v {
                Value::Null => "same".to_string(),
                v => format!(
                    "{} {}",
                    v["event"]
                        .as_str()
                        .unwrap_or("")
                        .split(" (")
                        .next()
                        .unwrap_or(""),
                    v["field"].as_str().unwrap_or("")
                ),
            };
            if r["verdict"] == "skipped" || r["verdict"] == "same" {
                continue;
            }
            outln!(
                sk,
                "{:<44} {:<34} {:<34} {}",
                r["scenario"].as_str().unwrap_or(""),
                cell(&r["real"]),
                cell(&r["model"]),
                r["verdict"].as_str().unwrap_or("")
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(field: &str, l: &str, r: &str) -> Divergence {
        Divergence {
            event: "read A 0".into(),
            field: field.into(),
            left: l.into(),
            right: r.into(),
        }
    }

    #[test]
    fn a_counters_change_is_the_counters_that_moved() {
        // The guest counts XDP rx (6.1), the model's 4.19 does not: the same tx_bytes
        // change on both is the same change.
        let real = d(
            "counters",
            "tx_packets 1 tx_bytes 166 rx_packets 1",
            "tx_packets 1 tx_bytes 154 rx_packets 1",
        );
        let model = d(
            "counters",
            "tx_packets 1 tx_bytes 166 rx_packets 0",
            "tx_packets 1 tx_bytes 154 rx_packets 0",
        );
        assert_eq!(change(&real), change(&model));
        let other = d(
            "counters",
            "tx_packets 1 tx_bytes 166 rx_packets 0",
            "tx_packets 1 tx_bytes 150 rx_packets 0",
        );
        assert_ne!(change(&real), change(&other));
        // Not counters: the values themselves.
        assert_ne!(
            change(&d("result", "buffer 4096 -> 154", "buffer 4096 -> 158")),
            change(&d("result", "buffer 4096 -> 150", "buffer 4096 -> 154"))
        );
    }

    fn args(kernels: &[&str], dirs: &[&str], patch: bool) -> LabDiffArgs {
        LabDiffArgs {
            paths: vec![],
            kernels: kernels.iter().map(|k| k.to_string()).collect(),
            kernel_dirs: dirs.iter().map(PathBuf::from).collect(),
            patch: patch.then(|| PathBuf::from("p.patch")),
            profile_b: None,
            profile_a: None,
            guest: GuestOpts {
                cache: None,
                accel: super::super::AccelArg::Auto,
                memory: 1024,
                timeout: 1,
                json: false,
            },
        }
    }

    #[test]
    fn the_sides_are_the_kernels_then_the_local_builds() {
        let deb = |k: &str| DiffSide::Debian(k.into());
        let dir = |d: &str| DiffSide::Dir(d.into());
        assert_eq!(
            sides(&args(&["6.1", "6.12"], &[], false)).unwrap(),
            (deb("6.1"), deb("6.12"))
        );
        assert_eq!(
            sides(&args(&["6.12"], &["/k"], false)).unwrap(),
            (deb("6.12"), dir("/k"))
        );
        assert_eq!(
            sides(&args(&[], &["/a", "/b"], false)).unwrap(),
            (dir("/a"), dir("/b"))
        );
        assert_eq!(
            sides(&args(&[], &["/k"], true)).unwrap(),
            (dir("/k"), dir("/k"))
        );
        for bad in [
            args(&[], &[], false),
            args(&["6.1"], &[], false),
            args(&["6.1", "6.12", "6.1"], &[], false),
            args(&["6.1"], &["/k"], true),
        ] {
            assert!(sides(&bad).is_err());
        }
        let o = side_opts(&args(&[], &["/k"], false), &dir("/k"));
        assert_eq!(o.kernel_dir.as_deref(), Some(std::path::Path::new("/k")));
    }
}
