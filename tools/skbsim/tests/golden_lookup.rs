//! Where a scenario's goldens are (issue 20, items 1 and 9): found from where the scenario
//! file really is, the same from every working directory and through links; a scenario
//! outside any suite is replayed without a golden and refused by `bless`; one bad
//! scenario or one corrupt golden fails alone while the rest of a `run` goes on.
//! Each case runs the built binary in a scratch suite built from the repository's
//! scenarios, pcaps and goldens.

use std::fs;
use std::path::Path;

mod common;
use common::{repo, scratch, skbsim};

const AREA: &str = "tun-read";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn arg(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The pcap a repository scenario reads (its `input = "../pcaps/NAME"`).
fn input_of(toml: &str) -> &str {
    toml.lines()
        .find_map(|l| l.strip_prefix("input = \"../pcaps/"))
        .and_then(|l| l.strip_suffix('"'))
        .expect("an input in ../pcaps")
}

/// A suite at `d`: `scenarios/tun-read/<name>.toml` and their pcaps copied from the
/// repository, with the repository's goldens under `golden/` when `goldens`.
fn suite(d: &Path, names: &[&str], goldens: bool) {
    fs::create_dir_all(d.join("scenarios").join(AREA)).expect("scenarios");
    fs::create_dir_all(d.join("scenarios/pcaps")).expect("pcaps");
    for n in names {
        let toml = fs::read_to_string(repo().join(format!("scenarios/{AREA}/{n}.toml")))
            .expect("scenario");
        let pcap = input_of(&toml);
        fs::write(d.join(format!("scenarios/{AREA}/{n}.toml")), &toml).expect("write");
        fs::copy(
            repo().join("scenarios/pcaps").join(pcap),
            d.join("scenarios/pcaps").join(pcap),
        )
        .expect("copy pcap");
        if goldens {
            let g = d.join("golden").join(AREA).join(n);
            fs::create_dir_all(&g).expect("golden dir");
            for f in ["trace.snap", "read.pcap"] {
                fs::copy(repo().join("golden").join(AREA).join(n).join(f), g.join(f))
                    .expect("copy golden");
            }
        }
    }
}

/// Every file under `d`, relative to it, sorted.
fn files(d: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(d).expect("list") {
            let p = e.expect("entry").path();
            if p.is_dir() && !p.is_symlink() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).expect("under").display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(d, d, &mut out);
    out.sort();
    out
}

/// `name`'s two goldens in the suite at `d` are the repository's, byte for byte (the
/// trace's header names the scenario, so a wrong name is a difference too).
fn assert_repo_goldens(d: &Path, name: &str) {
    for f in ["trace.snap", "read.pcap"] {
        let got = d.join("golden").join(AREA).join(name).join(f);
        let want = repo().join("golden").join(AREA).join(name).join(f);
        let got = fs::read(&got).unwrap_or_else(|e| panic!("{}: {e}", got.display()));
        assert!(
            got == fs::read(&want).expect("repository golden"),
            "{name}/{f} differs from the repository's"
        );
    }
}

#[test]
fn bless_and_run_find_the_suite_from_any_directory_and_through_links() {
    let d = scratch("cwd");
    let s = d.join("suite");
    suite(&s, &["vlan-8021q-pi", "bridge-ageing"], false);
    // From inside scenarios/, naming the scenario relative to it.
    let out = skbsim(
        &["bless", "tun-read/vlan-8021q-pi.toml"],
        &s.join("scenarios"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_repo_goldens(&s, "vlan-8021q-pi");
    // Through a link to the scenario's directory, from somewhere else.
    fs::create_dir_all(d.join("elsewhere/links")).expect("dirs");
    let link = d.join("elsewhere/links/area");
    std::os::unix::fs::symlink(s.join("scenarios").join(AREA), &link).expect("symlink");
    let out = skbsim(
        &["bless", arg(&link.join("bridge-ageing.toml"))],
        &d.join("elsewhere"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_repo_goldens(&s, "bridge-ageing");
    assert_eq!(
        files(&d.join("elsewhere")),
        ["links/area"],
        "nothing written beside the link"
    );
    assert!(
        !s.join("scenarios/golden").exists(),
        "nothing written under scenarios/"
    );

    // `run` finds the same goldens from inside scenarios/ and through the link.
    for (cwd, path) in [
        (s.join("scenarios"), AREA.to_string()),
        (
            s.join("scenarios").join(AREA),
            "vlan-8021q-pi.toml".to_string(),
        ),
        (d.join("elsewhere"), arg(&link).to_string()),
    ] {
        let out = skbsim(&["run", &path], &cwd);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "run {path}: {stdout}");
        assert!(
            stdout.contains(" passed, 0 failed") && !stdout.contains("missing"),
            "run {path}: {stdout}"
        );
    }
}

#[test]
fn a_scenario_outside_any_suite_is_refused_by_bless_and_run_without_a_golden() {
    let d = scratch("outside");
    let toml =
        fs::read_to_string(repo().join("scenarios/tun-read/vlan-8021q-pi.toml")).expect("scenario");
    // The same scenario, its input named absolutely, in a directory that is no suite.
    let pcap = repo().join("scenarios/pcaps").join(input_of(&toml));
    let toml = toml.replace(
        &format!("\"../pcaps/{}\"", input_of(&toml)),
        &format!("{:?}", arg(&pcap)),
    );
    fs::create_dir_all(d.join("loose/sub")).expect("dirs");
    fs::write(d.join("loose/sub/t.toml"), &toml).expect("write");
    fs::write(d.join("loose/t.toml"), &toml).expect("write");

    for (cwd, path) in [
        ("loose", "sub/t.toml"),
        ("loose/sub", "t.toml"),
        ("loose", "t.toml"),
    ] {
        let out = skbsim(&["bless", path], &d.join(cwd));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "bless {path}: {err}");
        assert_eq!(err.lines().count(), 1, "bless {path}: one line: {err}");
        assert!(
            err.contains(path) && err.contains("not in a suite"),
            "bless {path}: {err}"
        );
        assert_eq!(
            files(&d),
            ["loose/sub/t.toml", "loose/t.toml"],
            "bless {path} wrote nothing"
        );

        let out = skbsim(&["run", path], &d.join(cwd));
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "run {path}: {stdout}");
        assert!(
            stdout.contains("no-golden") && stdout.contains("1 without a golden"),
            "run {path}: {stdout}"
        );
        assert_eq!(files(&d), ["loose/sub/t.toml", "loose/t.toml"]);
    }

    // `--golden` still names where goldens go, for any scenario.
    let g = d.join("g");
    let out = skbsim(
        &["bless", "sub/t.toml", "--golden", arg(&g)],
        &d.join("loose"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(g.join("sub/t/trace.snap").exists() && g.join("sub/t/read.pcap").exists());
    let out = skbsim(
        &["run", "sub/t.toml", "--golden", arg(&g)],
        &d.join("loose"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn a_corrupt_golden_or_a_bad_scenario_fails_alone_and_the_rest_run() {
    let d = scratch("keep-going");
    suite(&d, &["bridge-ageing", "vlan-8021q-pi", "vnet24-pi"], true);
    let golden_pcap = d.join("golden/tun-read/bridge-ageing/read.pcap");
    fs::write(&golden_pcap, b"not a capture").expect("corrupt");
    fs::write(d.join("scenarios/tun-read/zz-bad.toml"), "pipeline = 7\n").expect("bad");
    fs::write(
        d.join("scenarios/tun-read/aa-no-input.toml"),
        "description = \"x\"\ninput = \"../pcaps/absent.pcap\"\npipeline = \"tun-read\"\n",
    )
    .expect("no input");

    let out = skbsim(&["run", "scenarios"], &d);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    for good in ["vlan-8021q-pi", "vnet24-pi"] {
        assert!(
            stdout.contains(&format!("   pass  tun-read/{good}  (")),
            "{stdout}"
        );
    }
    assert!(
        stdout.ends_with("2 passed, 0 failed, 3 could not run\n"),
        "{stdout}"
    );
    // One stderr line per scenario that could not run, in suite order, each naming the
    // scenario file and what is wrong with it: a bad input names the pcap too.
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    let expect = [
        ["scenarios/tun-read/aa-no-input.toml: ", "absent.pcap"],
        [
            "scenarios/tun-read/bridge-ageing.toml: ",
            "golden/tun-read/bridge-ageing/read.pcap: not a pcap",
        ],
        ["scenarios/tun-read/zz-bad.toml: ", "pipeline"],
    ];
    for (line, [file, what]) in lines.iter().zip(expect) {
        assert!(
            line.starts_with(&format!("skbsim: {file}")) && line.contains(what),
            "{line:?} should name {file} and {what}"
        );
    }
    assert!(!stdout.contains("bridge-ageing"), "{stdout}");

    // --json: the same outcomes for machines, the same lines on stderr.
    let out = skbsim(&["run", "scenarios", "--json"], &d);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), stderr);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (v["passed"].as_u64(), v["errors"].as_u64()),
        (Some(2), Some(3))
    );
    let status = |i: usize| v["results"][i]["status"].as_str().map(str::to_string);
    let all: Vec<Option<String>> = (0..5).map(status).collect();
    let want = ["error", "error", "pass", "pass", "error"].map(|s| Some(s.to_string()));
    assert_eq!(all, want);
}
