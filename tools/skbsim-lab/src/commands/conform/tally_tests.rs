//! `lab conform`'s host side without a guest, now that it is library code: the guest's
//! JSON lines for a scenario against a stand-in for the rest of skbsim ([`Fake`]: its
//! simulator gives fixed records under the profile it is given, its comparison is
//! `sim::trace::record_diff`'s). Checked: the guest ran the host profile's setup, so the
//! simulator runs under the guest kernel's profile (6.1.0-57 -> linux-6.1) and the
//! guest records' `profile` is set to it before comparing; a pass counts the
//! guest's frames and reads; a failure lists each differing field with both values;
//! a scenario the guest did not run is counted and never simulated.

use std::cell::Cell;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::json;
use sim::profile::KernelProfile;
use sim::scenario::Scenario;
use sim::trace::diff::Divergence;
use sim::trace::record::Seen;
use sim::trace::record_diff::{first_flat_divergence, Flat};

use super::{guest_profile, Tally};
use crate::commands::skbsim::{ArmOutput, Skbsim};

/// The trace both sides print, `{profile}` and `{proto}` filled in.
const TRACE: &str = "scenario: tun-read/vlan-8021q-pi
profile: {profile}
device: tap pi

read 0 (frame 0, ts 1.000000000): buffer 65536 -> 162
  pi: flags 0x0000 proto {proto}
  counters: tx_packets 1 tx_bytes 158
";

fn trace(profile: &str, proto: &str) -> String {
    TRACE
        .replace("{profile}", profile)
        .replace("{proto}", proto)
}

/// The records of [`TRACE`] as a real arm observes them, as the guest sends them.
fn observed(profile: &str, proto: &str) -> Vec<Flat> {
    let f = |k: &str, v: &str| (k.to_string(), v.to_string(), Seen::Both);
    vec![
        Flat {
            event: "header".into(),
            fields: vec![
                f("scenario", "tun-read/vlan-8021q-pi"),
                f("profile", profile),
                f("device", "tap pi"),
            ],
        },
        Flat {
            event: "read 0 (frame 0, ts 1.000000000)".into(),
            fields: vec![
                f("result", "buffer 65536 -> 162"),
                f("pi", &format!("flags 0x0000 proto {proto}")),
                f("counters", "tx_packets 1 tx_bytes 158"),
            ],
        },
    ]
}

struct Fake {
    sim_runs: Cell<usize>,
}

impl Skbsim for Fake {
    fn print(&self, _: fmt::Arguments<'_>) -> Result<(), String> {
        Ok(())
    }
    fn load_scenarios(&self, _: &[PathBuf], _: Option<&str>) -> Result<Vec<Scenario>, String> {
        Err("not used".into())
    }
    fn tap_ready(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn run_sim(&self, s: &Scenario) -> Result<ArmOutput, String> {
        self.sim_runs.set(self.sim_runs.get() + 1);
        Ok(ArmOutput {
            trace: trace(s.profile.name, "0x0800"),
            observed: observed(s.profile.name, "0x0800"),
            ..ArmOutput::default()
        })
    }
    fn run_real(&self, _: &Scenario) -> Result<ArmOutput, String> {
        Err("not used".into())
    }
    fn first_mismatch(
        &self,
        _: &Scenario,
        sim: &ArmOutput,
        real: &ArmOutput,
    ) -> Result<Option<Divergence>, String> {
        Ok(first_flat_divergence(&sim.observed, &real.observed))
    }
}

fn scenario() -> Scenario {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Scenario::load(&repo.join("scenarios/tun-read/vlan-8021q-pi.toml")).expect("scenario")
}

/// Tally one guest answer `g` for the scenario under the 6.1 guest's profile.
fn tally(g: serde_json::Value) -> (Tally, usize) {
    let s = scenario();
    assert_eq!(
        s.profile.name,
        KernelProfile::default().name,
        "a host-profile scenario"
    );
    let out = std::env::temp_dir().join(format!("skbsim-lab-tally-{}", std::process::id()));
    let prof = guest_profile("6.1.0-57-cloud-amd64", None).expect("linux-6.1 exists");
    let sk = Fake {
        sim_runs: Cell::new(0),
    };
    let mut t = Tally::default();
    t.scenario(&s, Some(&g), prof, &out, &sk).expect("tally");
    let _ = std::fs::remove_dir_all(&out);
    (t, sk.sim_runs.get())
}

fn guest_ok(proto: &str) -> serde_json::Value {
    let host = KernelProfile::default().name;
    json!({"scenario": "tun-read/vlan-8021q-pi", "status": "ok", "trace": trace(host, proto),
        "observed": observed(host, proto), "pcap": "", "frames": 3, "notes": []})
}

#[test]
fn the_guests_trace_is_compared_under_the_guest_kernels_profile() {
    let (t, runs) = tally(guest_ok("0x0800"));
    assert_eq!(
        (t.passed, t.failed, t.errors, runs),
        (1, 0, 0, 1),
        "{:?}",
        t.text
    );
    assert_eq!(
        t.text,
        ["    pass  tun-read/vlan-8021q-pi  (3 frames, 1 reads)"]
    );
    assert_eq!(t.results[0]["status"], "pass");
}

#[test]
fn a_differing_field_is_listed_with_both_values() {
    let (t, _) = tally(guest_ok("0x8100"));
    assert_eq!((t.passed, t.failed), (0, 1));
    let d = &t.results[0]["differences"];
    assert_eq!(d.as_array().map(Vec::len), Some(1), "{d}");
    assert_eq!(d[0]["event"], "read 0 (frame 0, ts 1.000000000)");
    assert_eq!(d[0]["field"], "pi");
    assert_eq!(d[0]["sim"], "flags 0x0000 proto 0x0800");
    assert_eq!(d[0]["real"], "flags 0x0000 proto 0x8100");
}

#[test]
fn a_scenario_the_guest_did_not_run_is_counted_not_simulated() {
    let (t, runs) = tally(json!({"scenario": "tun-read/vlan-8021q-pi",
        "status": "needs-kernel", "reason": "gre: no ip_gre"}));
    assert_eq!((t.other_kernel, t.passed, t.failed, runs), (1, 0, 0, 0));
    assert_eq!(t.text, ["  kernel  tun-read/vlan-8021q-pi: gre: no ip_gre"]);
}

/// The files sent into the guest: an exec scenario has no capture (an empty path once
/// failed the initramfs: "lab initramfs: : No such file or directory"), and a steering
/// program of `[queues]` goes in beside its scenario.
#[test]
fn the_guest_gets_each_scenarios_own_files() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let load = |rel: &str| Scenario::load(&repo.join("scenarios").join(rel)).expect(rel);
    let names = |s: &Scenario| -> Vec<String> {
        super::scenario_files(s)
            .iter()
            .map(|p| {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    };
    assert_eq!(names(&load("exec/tun-probe.toml")), ["tun-probe.toml"]);
    let steer = names(&load("tun-read/mq-steer-proto.toml"));
    assert_eq!(steer[0], "mq-steer-proto.toml");
    assert_eq!(
        steer.len(),
        3,
        "scenario, capture, steering program: {steer:?}"
    );
    assert!(steer[2].ends_with(".o"), "{steer:?}");
}
