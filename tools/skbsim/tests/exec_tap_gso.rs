//! `skbsim exec --backend tap` reads the gso fields of the skb the real stack got from
//! the virtio_net_hdr a PACKET_VNET_HDR packet socket gets (issue 23, docs/exec.md#tap):
//! tools/skbsim-exec/tests/c/gso_write.c's two TCPV4 GSO writes (gso_size 100) show the
//! same gso type and size and checksum state on both arms, and `conform` on the exec/gso-write scenario
//! compares them.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::repo;

/// The `skb` of each write event of gso_write.c run under `skbsim exec --backend
/// BACKEND --json`.
fn write_skbs(dir: &Path, backend: &str) -> Vec<Value> {
    let prog = dir.join("gso_write");
    if !prog.exists() {
        let src = repo().join("tools/skbsim-exec/tests/c/gso_write.c");
        let built = Command::new("gcc")
            .args(["-O1", "-Wall", "-o"])
            .arg(&prog)
            .arg(&src)
            .status();
        assert!(built.is_ok_and(|s| s.success()), "gcc gso_write.c");
    }
    let json = dir.join(format!("{backend}.jsonl"));
    let out = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args([
            "exec",
            "--profile",
            "linux-6.18",
            "--backend",
            backend,
            "--json",
        ])
        .arg(&json)
        .arg("--")
        .arg(&prog)
        .output()
        .expect("run skbsim exec");
    assert!(
        out.status.success(),
        "{backend}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&json)
        .expect("the record")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["event"] == "write")
        .map(|e| e["skb"].clone())
        .collect()
}

#[test]
#[ignore = "real kernel and gcc: needs root (a private network namespace, /dev/net/tun); ci/test.sh runs it as root with --include-ignored"]
fn a_gso_write_shows_the_same_gso_fields_on_both_arms() {
    skbsim_kernel::require_privileges();
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = write_skbs(dir.path(), "sim");
    let tap = write_skbs(dir.path(), "tap");
    assert_eq!(sim.len(), 2, "sim: {sim:?}");
    assert_eq!(tap.len(), 2, "tap: {tap:?}");
    // gso_write.c: 40 header bytes + 200 and + 201 payload, VIRTIO_NET_HDR_GSO_TCPV4,
    // gso_size 100 (virtio_net_hdr_to_skb: SKB_GSO_TCPV4 | SKB_GSO_DODGY).
    for (i, len) in [240, 241].into_iter().enumerate() {
        assert_eq!(sim[i]["len"], len, "sim write {i}");
        assert_eq!(sim[i]["gso_type"], "TCPV4|DODGY", "sim write {i}");
        assert_eq!(sim[i]["gso_size"], 100, "sim write {i}");
        assert_eq!(tap[i]["protocol"], 0x0800, "tap write {i}");
        assert_eq!(tap[i]["len"], len, "tap write {i}");
        // A virtio_net_hdr has no DODGY: the type it names, and no gso_segs.
        assert_eq!(tap[i]["gso_type"], "TCPV4", "tap write {i}");
        assert_eq!(tap[i]["gso_size"], 100, "tap write {i}");
        assert_eq!(tap[i]["gso_segs"], "?", "tap write {i}");
        // Its NEEDS_CSUM, csum_start 20, csum_offset 16 (skb_partial_csum_set), read
        // back by the packet socket from a tun's frame, which starts at the IP header.
        for (arm, skb) in [("sim", &sim[i]), ("tap", &tap[i])] {
            assert_eq!(
                skb["csum"], "CHECKSUM_PARTIAL start 20 offset 16",
                "{arm} write {i}"
            );
        }
    }
}

#[test]
#[ignore = "real kernel and gcc: needs root (a private network namespace, /dev/net/tun); ci/test.sh runs it as root with --include-ignored"]
fn conform_compares_the_gso_write_scenario_on_this_kernel() {
    skbsim_kernel::require_privileges();
    let out = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(["conform", "scenarios/exec/gso-write.toml"])
        .current_dir(repo())
        .output()
        .expect("run skbsim conform");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("pass  exec/gso-write"),
        "not compared: {stdout}"
    );
    assert!(
        stdout.contains("1 passed, 0 failed, 0 sim-only"),
        "{stdout}"
    );
}
