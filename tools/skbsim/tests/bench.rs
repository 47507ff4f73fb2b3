//! `skbsim bench` times `skbsim replay` itself: every pipeline in both modes is reported
//! (measured or "failed: ..."), the generated capture and the replay outputs live in a
//! temporary directory that is gone afterwards (also after an error and a Ctrl-C), and
//! tcpreplay, where installed, runs on the same capture.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::skbsim;

/// A fresh, empty `<tmp>/<name>` and its `tmp/` (the bench's `--tmpdir`).
fn dirs(name: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).expect("create tmp");
    (dir, tmp)
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .expect("read tmpdir")
        .map(|e| e.expect("entry").path())
        .collect()
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("bench --json prints JSON")
}

#[test]
fn bench_reports_every_pipeline_in_both_modes_and_removes_its_files() {
    let (dir, tmp) = dirs("bench-replay");
    let tmp_s = tmp.to_string_lossy().into_owned();
    let out = skbsim(
        &[
            "bench",
            "--replay",
            "--frames",
            "2000",
            "--runs",
            "1",
            "--json",
            "--no-tcpreplay",
            "--tmpdir",
            &tmp_s,
        ],
        &dir,
    );
    let v = json_of(&out);
    assert_eq!(v["frames"], 2000);
    assert_eq!(v["generated"], true);
    // 24-byte file header, then 16 bytes and 60..=1518 bytes per frame.
    let bytes = v["file_bytes"].as_u64().expect("file_bytes");
    assert!(
        (24 + 2000 * 76..=24 + 2000 * 1534).contains(&bytes),
        "{bytes}"
    );
    let cases = v["cases"].as_array().expect("cases");
    let mut seen = Vec::new();
    for c in cases {
        let p = c["pipeline"].as_str().expect("pipeline").to_string();
        let trace = c["trace"].as_bool().expect("trace");
        let status = c["status"].as_str().expect("status");
        if status == "ok" {
            let secs = c["median_s"].as_f64().expect("median_s");
            let fps = c["fps"].as_f64().expect("fps");
            assert!((fps * secs - 2000.0).abs() < 1.0, "{c}");
            // A replay process maps at least its own binary: well above 1 MiB.
            assert!(c["peak_rss_kib"].as_u64().expect("rss") > 1024, "{c}");
            let target = if trace {
                0.5e6
            } else if p == "tun-read" || p == "tap-write" {
                3e6
            } else {
                2e6
            };
            assert_eq!(c["target_fps"].as_f64(), Some(target), "{c}");
            // A run under 0.1 s is mostly process start-up: timed, never judged (2000
            // frames take a few ms of work at the targets' rates).
            let judged = secs >= 0.1;
            assert_eq!(c["judged"].as_bool(), Some(judged), "{c}");
            if judged {
                assert_eq!(c["fps_pass"].as_bool(), Some(fps >= target), "{c}");
            } else {
                assert!(c["fps_pass"].is_null(), "{c}");
            }
        } else {
            assert!(status.starts_with("failed: "), "{c}");
            assert!(c["fps"].is_null(), "{c}");
        }
        seen.push((p, trace));
    }
    let mut want = Vec::new();
    for p in ["tun-read", "tap-write", "tap-gro", "vhost-tx"] {
        want.push((p.to_string(), false));
        want.push((p.to_string(), true));
    }
    assert_eq!(seen, want);
    // `replay --pipeline tun-read` works on defaults: the bench must have measured it.
    assert_eq!(cases[0]["status"], "ok", "{}", cases[0]);
    assert_eq!(v["tcpreplay"]["status"], "skipped (--no-tcpreplay)");
    assert_eq!(entries(&tmp), Vec::<PathBuf>::new());
}

#[test]
fn a_bad_input_is_one_line_naming_the_file_and_leaves_nothing_behind() {
    let (dir, tmp) = dirs("bench-bad-input");
    let bad = dir.join("bad.pcap");
    fs::write(&bad, b"not a pcap at all, just text").expect("write");
    let out = skbsim(
        &[
            "bench",
            "--input",
            "bad.pcap",
            "--runs",
            "1",
            "--no-tcpreplay",
            "--tmpdir",
            &tmp.to_string_lossy(),
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.pcap"), "{err}");
    assert_eq!(entries(&tmp), Vec::<PathBuf>::new());
}

#[test]
fn make_capture_keeps_a_capture_of_the_asked_size_that_bench_then_measures() {
    let (dir, tmp) = dirs("bench-make-capture");
    let out = skbsim(
        &["bench", "--make-capture", "c.pcap", "--bytes", "256K"],
        &dir,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let len = fs::metadata(dir.join("c.pcap")).expect("c.pcap").len();
    // Stops at the last whole frame that fits: at most one record (16 + 1518) short.
    assert!(len <= 256 * 1024 && len > 256 * 1024 - 1534, "{len}");
    let frames = sim::pcap::read_all(dir.join("c.pcap")).expect("read").len();
    let v = json_of(&skbsim(
        &[
            "bench",
            "--input",
            "c.pcap",
            "--runs",
            "1",
            "--json",
            "--no-tcpreplay",
            "--tmpdir",
            &tmp.to_string_lossy(),
        ],
        &dir,
    ));
    assert_eq!(v["frames"].as_u64(), Some(frames as u64));
    assert_eq!(v["file_bytes"].as_u64(), Some(len));
    assert_eq!(v["generated"], false);
    assert!(dir.join("c.pcap").exists(), "the user's capture is kept");
    assert_eq!(entries(&tmp), Vec::<PathBuf>::new());
}

#[test]
fn ctrl_c_during_a_replay_removes_the_temporary_directory() {
    let (dir, tmp) = dirs("bench-interrupt");
    // Large enough that the first (debug-build) replay is still running when interrupted.
    let mut child = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args([
            "bench",
            "--frames",
            "300000",
            "--runs",
            "1",
            "--no-tcpreplay",
        ])
        .arg("--tmpdir")
        .arg(&tmp)
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bench");
    // The replay's stderr file appears when the first replay is spawned.
    let t = Instant::now();
    let running = loop {
        let found = entries(&tmp)
            .iter()
            .any(|d| d.join("replay.stderr").exists());
        if found || t.elapsed() > Duration::from_secs(60) {
            break found;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(running, "no replay started within 60 s");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let status = child.wait().expect("wait bench");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(!status.success(), "{status}: {err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(entries(&tmp), Vec::<PathBuf>::new(), "{err}");
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn tcpreplay_runs_through_a_real_tap_on_the_same_capture() {
    if skbsim_kernel::tcpreplay::find_tcpreplay().is_none() {
        eprintln!(
            "skipped: tcpreplay not installed (the bench then prints \"tcpreplay: not installed\")"
        );
        return;
    }
    skbsim_kernel::require_privileges();
    let (dir, tmp) = dirs("bench-tcpreplay");
    let v = json_of(&skbsim(
        &[
            "bench",
            "--frames",
            "3000",
            "--runs",
            "2",
            "--json",
            "--tmpdir",
            &tmp.to_string_lossy(),
        ],
        &dir,
    ));
    let t = &v["tcpreplay"];
    assert_eq!(t["status"], "ok", "{t}");
    for path in ["write_path", "read_path"] {
        let runs = t[path]["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 2, "{t}");
        for r in runs {
            // tcpreplay sends the whole capture; the reader gets at most that.
            assert_eq!(r["sent"], 3000, "{r}");
            let read = r["read"].as_u64().expect("read");
            if path == "write_path" {
                assert_eq!(read, 0, "{r}");
            } else {
                assert!(read > 0 && read <= 3000, "{r}");
            }
        }
    }
    // Issue 21: `replay -o` at least 8x tcpreplay (tun-read over its read path, tap-write
    // over its write path), tap-gro and vhost-tx 6x, every `--trace` run 3x.
    let ratios = t["ratios"].as_array().expect("ratios");
    let targets: Vec<(&str, f64)> = ratios
        .iter()
        .map(|r| {
            (
                r["name"].as_str().expect("name"),
                r["target"].as_f64().expect("target"),
            )
        })
        .collect();
    assert_eq!(
        targets,
        [
            ("tun-read -o / tcpreplay read path", 8.0),
            ("tun-read -o --trace / tcpreplay read path", 3.0),
            ("tap-write -o / tcpreplay write path", 8.0),
            ("tap-write -o --trace / tcpreplay write path", 3.0),
            ("tap-gro -o / tcpreplay write path", 6.0),
            ("tap-gro -o --trace / tcpreplay write path", 3.0),
            ("vhost-tx -o / tcpreplay write path", 6.0),
            ("vhost-tx -o --trace / tcpreplay write path", 3.0),
        ]
    );
    assert_eq!(entries(&tmp), Vec::<PathBuf>::new());
}

#[test]
fn the_model_bench_removes_its_generated_pcap_too() {
    let (dir, tmp) = dirs("bench-model");
    let v = json_of(&skbsim(
        &[
            "bench",
            "--pipeline",
            "tun-read",
            "--frames",
            "2000",
            "--runs",
            "1",
            "--json",
            "--tmpdir",
            &tmp.to_string_lossy(),
        ],
        &dir,
    ));
    assert_eq!(v["frames"], 2000);
    assert_eq!(entries(&tmp), Vec::<PathBuf>::new());
}

/// A capture a few milliseconds long is timed but judged neither PASS nor FAIL: the text
/// says "short" and why (issue 20: `--frames 20000` printed FAIL for every target).
#[test]
fn runs_too_short_to_measure_are_not_judged() {
    // Whether a case is judged follows its own measured median against min_judged_s
    // (0.1 s), whatever the machine's load: 200 frames usually take 0.02-0.05 s, but a
    // loaded machine can stretch a run past 0.1 s, and then it is judged. Asserting
    // "every row is short" would test the machine's load, not the rule.
    let (dir, tmp) = dirs("bench-short");
    let tmp_s = tmp.to_string_lossy().into_owned();
    let out = skbsim(
        &[
            "bench",
            "--frames",
            "200",
            "--runs",
            "1",
            "--no-tcpreplay",
            "--json",
            "--tmpdir",
            &tmp_s,
        ],
        &dir,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bench --json");
    let min = v["min_judged_s"].as_f64().expect("min_judged_s");
    assert_eq!(min, 0.1);
    let cases = v["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 8, "{v}");
    for c in cases {
        let median = c["median_s"].as_f64().expect("median_s");
        let judged = c["judged"].as_bool().expect("judged");
        assert_eq!(judged, median >= min, "{c}");
        if judged {
            assert!(c["fps_pass"].is_boolean(), "{c}");
        } else {
            assert!(c["fps_pass"].is_null(), "a short case is not judged: {c}");
        }
    }
}
