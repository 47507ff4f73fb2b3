//! `skbsim exec --backend tap`: tools/skbsim-exec/tests/c/far_ping.c on a real tap in a
//! private network namespace, the Linux stack (10.0.0.2/24, MAC 02:00:00:00:00:02) as the
//! far side, recorded by the same supervisor; its record against the model's
//! (`--backend sim`) in every field both arms see.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// gcc tools/skbsim-exec/tests/c/NAME.c into `dir`.
fn build(dir: &Path, name: &str) -> std::path::PathBuf {
    let prog = dir.join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../skbsim-exec/tests/c")
        .join(format!("{name}.c"));
    let built = Command::new("gcc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&prog)
        .arg(&src)
        .status();
    assert!(
        built.is_ok_and(|s| s.success()),
        "gcc could not build {name}"
    );
    prog
}

/// The record's events as JSON, without the header and without the model-only fields.
fn events(dir: &Path, backend: &str, prog: &Path) -> Vec<Value> {
    let stem = prog.file_name().map(|n| n.to_string_lossy().into_owned());
    let json = dir.join(format!("{}.{backend}.jsonl", stem.unwrap_or_default()));
    let out = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(["exec", "--backend", backend, "--json"])
        .arg(&json)
        .arg("--")
        .arg(prog)
        .output()
        .expect("run skbsim exec");
    assert!(
        out.status.success(),
        "{backend}: exit {:?}, stdout {} stderr {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("the record");
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines[0]["backend"], backend);
    for l in &mut lines {
        if let Some(o) = l.as_object_mut() {
            o.remove("model");
        }
    }
    lines.remove(0);
    lines
}

#[test]
#[ignore = "real kernel and gcc: needs root (a private network namespace, /dev/net/tun); ci/test.sh runs it as root with --include-ignored"]
fn far_ping_on_a_real_tap_records_what_the_model_records() {
    skbsim_kernel::require_privileges();
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = build(dir.path(), "far_ping");
    let mut sim = events(dir.path(), "sim", &prog);
    let mut tap = events(dir.path(), "tap", &prog);
    let kinds: Vec<&str> = tap.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(
        kinds,
        ["open", "ioctl", "link", "write", "read", "write", "read", "close"]
    );
    // The echo reply (read 6): the IP ID (the kernel's is not deterministic), the flags
    // (Linux's ICMP socket does not set DF, net/ipv4/icmp.c: inet->pmtudisc =
    // IP_PMTUDISC_DONT; smoltcp does) and so the header checksum differ: blanked on both
    // sides (hex digits 36..44 and 48..52 of the bytes: IP header bytes 4..8 and 10..12).
    for e in [&mut sim[6], &mut tap[6]] {
        let b = e["bytes"].as_str().expect("read bytes").to_string();
        let mut masked: Vec<u8> = b.into_bytes();
        masked[36..44].fill(b'x');
        masked[48..52].fill(b'x');
        e["bytes"] = Value::String(String::from_utf8(masked).expect("hex"));
    }
    assert_eq!(sim, tap);
    // What the real stack got: the ARP request, 60 bytes (from the MAC header), ETH_P_ARP.
    assert_eq!(tap[3]["skb"]["protocol"], 0x0806);
    assert_eq!(tap[3]["skb"]["len"], 60);
}

/// tun_probe.c (the TUN* ioctls, their errors, the socket ioctls, writes and reads),
/// tun_rtnl.c (RTM_SETLINK, RTM_NEWLINK with NLM_F_EXCL, an MTU out of range,
/// RTM_DELLINK, TUNSETQUEUE after it) and tun_lifecycle.c (dup, fork, close): on the real
/// tap every event and every field both arms see is the model's.
#[test]
#[ignore = "real kernel and gcc: needs root (a private network namespace, /dev/net/tun); ci/test.sh runs it as root with --include-ignored"]
fn c_clients_record_the_same_on_both_arms() {
    skbsim_kernel::require_privileges();
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["tun_probe", "tun_rtnl", "tun_lifecycle"] {
        let prog = build(dir.path(), name);
        let sim = events(dir.path(), "sim", &prog);
        let tap = events(dir.path(), "tap", &prog);
        assert!(
            tap.iter().any(|e| e["event"] == "ioctl"),
            "{name}: no ioctl recorded"
        );
        assert_eq!(sim, tap, "{name}");
    }
}

/// One line and exit 2, the program not run.
fn refused(out: &std::process::Output, dir: &Path, what: &str) {
    assert_eq!(out.status.code(), Some(2), "{what}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(err.contains("--backend tap"), "{what}: {err}");
    assert!(!dir.join("ran").exists(), "{what}: the program ran");
}

#[test]
fn tap_backend_has_only_the_stack_far_side() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(["exec", "--backend", "tap", "--far-side", "sink", "--"])
        .args(["sh", "-c", "touch ran"])
        .current_dir(dir.path())
        .output()
        .expect("run skbsim exec");
    refused(&out, dir.path(), "--far-side sink");
}

#[test]
#[ignore = "needs root to drop to nobody (setpriv); ci/test.sh runs it as root with --include-ignored"]
fn tap_backend_without_root_is_one_line() {
    skbsim_kernel::require_privileges();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_skbsim"))
        .args(["exec", "--backend", "tap", "--"])
        .args(["sh", "-c", "touch ran"])
        .current_dir(dir.path())
        .output()
        .expect("run skbsim exec");
    refused(&out, dir.path(), "as nobody");
}
