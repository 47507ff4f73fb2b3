//! Issue 22 item 1: the scenario fields of UDP-tunnel GSO are validated as the kernel's
//! TUNSETOFFLOAD validates them (drivers/net/tun.c: set_offload; docs/tun-ioctl.md#setoffload):
//! a bad combination, or the offload under a profile older than v6.17, is one line naming
//! the file and the key, exit 2, no panic.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::repo;

/// A tap-write scenario in a scratch directory with `device` as its [device] table.
fn scenario(name: &str, profile: &str, device: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("udp-tunnel-{name}"));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("scratch dir");
    let pcap = repo().join("scenarios/pcaps/vnet-udp-tunnel.pcap");
    let text = format!(
        "description = \"x\"\ninput = {:?}\npipeline = \"tap-write\"\nprofile = \"{profile}\"\n\n[device]\nno_pi = true\nvnet_hdr = true\nvnet_hdr_sz = 24\n{device}\n",
        pcap.canonicalize().expect("the scenario pcap")
    );
    let path = d.join(format!("{name}.toml"));
    fs::write(&path, text).expect("write scenario");
    path
}

fn run(path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .arg("run")
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .expect("run skbsim")
}

fn one_line_error(path: &Path, needle: &str) {
    let out = run(path);
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "stderr: {err} stdout: {stdout}");
    let all = format!("{stdout}{err}");
    let line = all
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}: {all}"));
    assert!(line.contains(&path.display().to_string()), "{line}");
    assert!(line.contains("device.offloads"), "{line}");
}

#[test]
fn the_tunnel_offload_needs_a_plain_gso_offload() {
    // set_offload: TUN_F_UDP_TUNNEL_GSO only with TSO4, TSO6 or USO (PLAIN_GSO).
    let p = scenario(
        "no-plain",
        "linux-6.18",
        "offloads = [\"csum\", \"udp_tunnel_gso\"]",
    );
    one_line_error(&p, "udp_tunnel_gso");
}

#[test]
fn the_tunnel_csum_offload_needs_the_tunnel_offload() {
    let p = scenario(
        "csum-alone",
        "linux-6.18",
        "offloads = [\"csum\", \"tso4\", \"udp_tunnel_gso_csum\"]",
    );
    one_line_error(&p, "udp_tunnel_gso_csum");
}

#[test]
fn linux_6_12_has_no_tunnel_offload() {
    // TUN_F_UDP_TUNNEL_GSO is v6.17: TUNSETOFFLOAD 0x83 is EINVAL on 6.12.
    let p = scenario(
        "old-profile",
        "linux-6.12",
        "offloads = [\"csum\", \"tso4\", \"udp_tunnel_gso\"]",
    );
    one_line_error(&p, "linux-6.12");
}
