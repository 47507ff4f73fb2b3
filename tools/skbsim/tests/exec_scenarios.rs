//! Exec scenarios (`pipeline = "exec"`, docs/exec.md#scenarios): `skbsim run` runs the
//! scenario's program under `skbsim exec` and compares its record and capture with
//! golden/exec/<name>/, `bless` writes them, `diff` reads them, `conform` runs the same
//! program on real tun/tap files and compares what both arms see; and the record's bytes
//! are the same on every run.

use std::fs;
use std::path::Path;
use std::process::Output;

use sim::scenario::Scenario;
use skbsim::runner::run_sim;

mod common;
use common::{repo, skbsim};

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One C client of tools/skbsim-exec/tests/c, by absolute path.
fn client(name: &str) -> String {
    let p = repo().join("tools/skbsim-exec/tests/c").join(name);
    fs::canonicalize(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .display()
        .to_string()
}

/// A suite in a temp dir with one exec scenario `scenarios/exec/NAME.toml`.
fn suite(name: &str, profile: &str, exec: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(d.path().join("scenarios/exec")).expect("scenarios/exec");
    write_scenario(d.path(), name, profile, exec);
    d
}

fn write_scenario(root: &Path, name: &str, profile: &str, exec: &str) {
    let toml = format!(
        "description = \"d\"\npipeline = \"exec\"\nprofile = \"{profile}\"\n\n[exec]\n{exec}\n"
    );
    fs::write(root.join(format!("scenarios/exec/{name}.toml")), toml).expect("scenario");
}

#[test]
fn the_repository_exec_scenarios_pass_run_against_their_goldens() {
    let out = skbsim(&["run", "scenarios/exec"], &repo());
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    for name in [
        "far-ping",
        "tun-addr",
        "tun-hwaddr",
        "tun-lifecycle",
        "tun-probe",
        "tun-rtnl",
    ] {
        assert!(
            stdout.contains(&format!("   pass  exec/{name}  (")),
            "{name}: {stdout}"
        );
    }
    assert_eq!(
        stdout.lines().last(),
        Some("9 passed, 0 failed"),
        "{stdout}"
    );
}

/// The same scenario gives the same record bytes (trace and capture) on every run, and
/// the record holds what the program did: tun_probe.c's TUNGETFEATURES answered with
/// linux-6.18's features (drivers/net/tun.c: TUN_FEATURES = IFF_NO_PI | IFF_ONE_QUEUE |
/// IFF_VNET_HDR | IFF_MULTI_QUEUE | IFF_NAPI | IFF_NAPI_FRAGS | IFF_NO_CARRIER, with
/// IFF_TUN | IFF_TAP: 0x7173), its write and read captured, its exit code 0.
#[test]
fn an_exec_scenario_records_the_same_bytes_on_every_run() {
    for name in ["tun-probe", "tun-rtnl", "tun-lifecycle", "far-ping"] {
        let path = repo().join(format!("scenarios/exec/{name}.toml"));
        let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let runs: Vec<_> = (0..3)
            .map(|_| run_sim(&s, None).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        for r in &runs[1..] {
            assert_eq!(r.trace, runs[0].trace, "{name}: the trace changed");
            assert_eq!(r.pcap, runs[0].pcap, "{name}: the capture changed");
        }
        assert!(
            runs[0].trace.ends_with("\nexit: 0\n"),
            "{name}: {}",
            runs[0].trace
        );
    }
    let s = Scenario::load(&repo().join("scenarios/exec/tun-probe.toml")).expect("tun-probe");
    let out = run_sim(&s, None).expect("run");
    assert!(
        out.trace.contains(
            "ioctl 2: TUNGETFEATURES -> 0\n  file: 0\n  cmd: 0x800454cf\n  answer: int 0x7173\n"
        ),
        "{}",
        out.trace
    );
    assert!(out.trace.starts_with("scenario: exec/tun-probe\nbackend: sim\nprofile: linux-6.18\nfar-side: stack\nprogram: tun_probe.c\n"), "{}", out.trace);
    assert_eq!(out.frames, 2, "one write, one read");
}

/// bless writes golden/exec/NAME/{trace.snap,read.pcap}; run passes on them, and fails
/// with the field when the profile's answer changes (linux-3.12 has no IFF_NAPI,
/// IFF_NAPI_FRAGS or IFF_NO_CARRIER: TUNGETFEATURES 0x7103); diff reads both goldens.
#[test]
fn bless_writes_an_exec_scenarios_goldens_and_run_and_diff_read_them() {
    let build = format!("build = \"{}\"", client("tun_probe.c"));
    let d = suite("probe", "linux-6.18", &build);
    let root = d.path();
    let out = skbsim(&["run", "scenarios"], root);
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    assert!(
        text(&out).0.contains("missing  exec/probe"),
        "{:?}",
        text(&out)
    );
    let out = skbsim(&["bless", "scenarios"], root);
    assert!(out.status.success(), "{:?}", text(&out));
    let golden = root.join("golden/exec/probe");
    let snap = fs::read_to_string(golden.join("trace.snap")).expect("trace.snap");
    assert!(snap.starts_with(skbsim::golden::SNAP_HEADER), "{snap}");
    assert!(snap.contains("scenario: exec/probe\n"), "{snap}");
    let pcap = fs::read(golden.join("read.pcap")).expect("read.pcap");
    assert_eq!(&pcap[..4], &[0x0a, 0x0d, 0x0d, 0x0a], "a pcapng");
    let out = skbsim(&["run", "scenarios"], root);
    assert!(out.status.success(), "{:?}", text(&out));
    assert!(text(&out).0.contains("   pass  exec/probe  (2 frames)"));

    write_scenario(root, "probe", "linux-3.12", &build);
    let out = skbsim(&["run", "scenarios"], root);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("first difference at `header`, field `profile`"),
        "{stdout}"
    );

    // The 3.12 run's goldens elsewhere, then diff the two traces and captures.
    let old = suite("probe", "linux-3.12", &build);
    assert!(skbsim(&["bless", "scenarios"], old.path()).status.success());
    let (a, b) = (
        golden.join("trace.snap"),
        old.path().join("golden/exec/probe/trace.snap"),
    );
    let (a, b) = (a.to_str().expect("utf-8"), b.to_str().expect("utf-8"));
    let out = skbsim(&["diff", "--ignore", "profile", a, b], root);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "first difference at `ioctl 2`, field `answer`:\n  - int 0x7173\n  + int 0x7103"
        ),
        "{stdout}"
    );
    let (a, b) = (
        golden.join("read.pcap"),
        old.path().join("golden/exec/probe/read.pcap"),
    );
    let out = skbsim(
        &[
            "diff",
            a.to_str().expect("utf-8"),
            b.to_str().expect("utf-8"),
        ],
        root,
    );
    assert!(out.status.success(), "{:?}", text(&out));
}

/// One line on stderr naming the scenario file, exit 2.
fn one_line(out: &Output, file: &str, what: &str) {
    let (_, stderr) = text(out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(file), "{stderr}");
    assert!(stderr.contains(what), "{what}: {stderr}");
}

#[test]
fn an_exec_scenario_that_cannot_build_or_start_is_one_line() {
    let d = suite("broken", "linux-6.18", "build = \"broken.c\"");
    fs::write(d.path().join("scenarios/exec/broken.c"), "int main( {\n").expect("broken.c");
    let out = skbsim(&["run", "scenarios"], d.path());
    one_line(&out, "scenarios/exec/broken.toml", "cc could not build");

    write_scenario(
        d.path(),
        "broken",
        "linux-6.18",
        "program = \"./no-such-program\"",
    );
    let out = skbsim(&["run", "scenarios"], d.path());
    one_line(&out, "scenarios/exec/broken.toml", "no-such-program");

    write_scenario(
        d.path(),
        "broken",
        "linux-6.18",
        "program = \"true\"\nfar_addr = [\"10.0.0.2\"]",
    );
    let out = skbsim(&["run", "scenarios"], d.path());
    one_line(&out, "scenarios/exec/broken.toml", "exec.far_addr");
}

/// conform: each repository exec scenario's program on a real tun/tap in a private
/// namespace records what the model records, in every field both arms see; a profile
/// whose answer differs from this kernel's is a divergence naming the event and field.
#[test]
#[ignore = "real kernel: needs root (a private network namespace, /dev/net/tun); ci/test.sh runs it as root with --include-ignored"]
fn exec_scenarios_conform_on_this_kernel_and_a_wrong_profile_diverges() {
    skbsim_kernel::require_privileges();
    let out = skbsim(&["conform", "scenarios/exec"], &repo());
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("    pass  exec/tun-probe  (2 frames, 3 reads)"),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("8 passed, 0 failed, 1 sim-only"),
        "{stdout}"
    );

    let d = suite(
        "old",
        "linux-3.12",
        &format!("build = \"{}\"", client("tun_probe.c")),
    );
    let out = skbsim(&["conform", "scenarios"], d.path());
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "FAIL  exec/old: `ioctl 2`, field `answer`:\n  sim:  int 0x7103\n  real: int 0x7173"
        ),
        "{stdout}"
    );
    // run --backend tap leaves exec scenarios to conform.
    let out = skbsim(&["run", "--backend", "tap", "scenarios"], d.path());
    assert!(
        text(&out).0.contains(" no-arm  exec/old"),
        "{:?}",
        text(&out)
    );
}

/// As root (CI runs the suite as root) an exec scenario's program runs in a private
/// network namespace, so what the supervisor does not intercept cannot reach the host's
/// interfaces: a program that exits 0 only when its network namespace is not the test's
/// (given as its argument) ends the record with `exit: 0`.
#[test]
#[ignore = "needs root (the namespace is made only for root); ci/test.sh runs it as root with --include-ignored"]
fn as_root_the_program_runs_in_a_private_network_namespace() {
    skbsim_kernel::require_privileges();
    let d = tempfile::tempdir().expect("temp dir");
    let src = d.path().join("netns.c");
    fs::write(
        &src,
        "#include <stdio.h>\n#include <string.h>\n#include <unistd.h>\n\
         int main(int argc, char **argv) {\n  char a[64] = {0};\n\
           if (argc != 2 || readlink(\"/proc/self/ns/net\", a, sizeof a - 1) < 0) return 2;\n\
           return strcmp(a, argv[1]) == 0 ? 1 : 0;\n}\n",
    )
    .expect("netns.c");
    let host = fs::read_link("/proc/self/ns/net").expect("the test's network namespace");
    let host = host.display();
    let root = d.path().join("suite");
    fs::create_dir_all(root.join("scenarios/exec")).expect("scenarios/exec");
    write_scenario(
        &root,
        "netns",
        "linux-6.18",
        &format!("build = \"{}\"\nargs = [\"{host}\"]", src.display()),
    );
    let s = Scenario::load(&root.join("scenarios/exec/netns.toml")).expect("scenario");
    let out = run_sim(&s, None).expect("run");
    assert!(out.trace.ends_with("\nexit: 0\n"), "{}", out.trace);
}
