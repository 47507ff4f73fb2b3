//! The pcapgen binary end to end: the committed scenario pcaps match their
//! descriptions, and errors are one line with exit status 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pcapgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pcapgen"))
        .args(args)
        .output()
        .expect("runs pcapgen")
}

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/pcaps")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pcapgen-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

#[test]
fn committed_scenario_pcaps_are_up_to_date() {
    let dir = scenarios();
    let out = pcapgen(&["--all", "--check", dir.to_str().expect("utf-8 path")]);
    assert!(
        out.status.success(),
        "regenerate with `cargo run -p pcapgen -- --all scenarios/pcaps`:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every committed capture reads back with the expected frame count.
    for (name, frames, first_len) in [
        ("untagged-tcp4", 3, 154),
        ("untagged-mixed", 3, 62),
        ("vlan-qinq", 1, 142),
        ("gso-tcp4", 1, 4054),
        ("large-1000", 1, 1000),
    ] {
        let f = sim::pcap::read_all(dir.join(format!("{name}.pcap"))).expect("reads");
        assert_eq!(f.len(), frames, "{name}");
        assert_eq!(f[0].data.len(), first_len, "{name}");
        assert_eq!(f[0].ts_ns, 1_000_000_000, "{name}");
    }
}

#[test]
fn build_then_check_detects_a_change() {
    let desc = tmp("d.toml");
    let out = tmp("d.pcapng");
    std::fs::write(
        &desc,
        "format = \"pcapng\"\n[[frame]]\nipv4 = {}\nudp = { sport = 1, dport = 2 }\ncount = 2\n",
    )
    .expect("write desc");
    let (d, o) = (desc.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    assert!(pcapgen(&[d, "-o", o]).status.success());
    let frames = sim::pcap::read_all(&out).expect("reads");
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[1].ts_ns, 1_000_001_000);
    assert_eq!(pcapgen(&["--check", d, o]).status.code(), Some(0));
    std::fs::write(
        &desc,
        "[[frame]]\nipv4 = {}\nudp = { sport = 1, dport = 2 }\n",
    )
    .expect("rewrite desc");
    let check = pcapgen(&["--check", d, o]);
    assert_eq!(check.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&check.stderr).contains("differs from what"));
    cleanup(&[&desc, &out]);
}

fn cleanup(paths: &[&Path]) {
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn errors_are_one_line_with_status_2() {
    let desc = tmp("bad.toml");
    std::fs::write(&desc, "[[frame]]\nipv4 = { ttl = 300 }\n").expect("write desc");
    let d = desc.to_str().expect("utf-8");
    let out = pcapgen(&[d, "-o", tmp("bad.pcap").to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.toml:2:16: [[frame]] 0: key `ipv4.ttl`"),
        "{err}"
    );
    let out = pcapgen(&["/nonexistent.toml", "-o", "/tmp/x.pcap"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.toml: cannot read"));
    assert_eq!(pcapgen(&["--frobnicate"]).status.code(), Some(2));
    cleanup(&[&desc]);
}

#[test]
fn bench_is_deterministic() {
    let (a, b) = (tmp("a.pcap"), tmp("b.pcap"));
    for p in [&a, &b] {
        let out = pcapgen(&[
            "bench",
            "--frames",
            "2000",
            "-o",
            p.to_str().expect("utf-8"),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bytes = std::fs::read(&a).expect("read a");
    assert_eq!(bytes, std::fs::read(&b).expect("read b"));
    let frames = sim::pcap::read_all(&a).expect("reads");
    assert_eq!(frames.len(), 2000);
    assert!(frames.iter().all(|f| (60..=1514).contains(&f.data.len())));
    cleanup(&[&a, &b]);
}
