//! `--tun` on the write paths (issue 20, item 3): an IFF_TUN device is written the IP
//! packet, never an Ethernet frame (drivers/net/tun.c: tun_get_user has no
//! eth_type_trans for IFF_TUN), and what its stack receives is LINKTYPE_RAW IP.
//! docs/tap-write.md#tun-device, docs/vhost-tx.md#tun-device.
//!
//! Input: sim/src/pcap/testdata/raw.pcap, a tcpdump capture on a real IFF_TUN device
//! (LINKTYPE_RAW, 5 IPv4/IPv6 pings, the last 1428 bytes).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sim::pcap::linktype::LINKTYPE_RAW;
use sim::pcap::{read_all_with, Frame, LinkPolicy};

fn raw_pcap() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sim/src/pcap/testdata/raw.pcap")
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir
}

fn skbsim(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .arg("replay")
        .arg(raw_pcap())
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run skbsim")
}

fn frames(path: &Path) -> Vec<Frame> {
    read_all_with(path, LinkPolicy::Any).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The input's IP packets, as captured on the tun device.
fn packets() -> Vec<Vec<u8>> {
    let f = frames(&raw_pcap());
    assert_eq!(f.len(), 5);
    f.into_iter().map(|f| f.data).collect()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `tshark -r`'s complaints about `path` ("Bogus IP version" and the like), or None
/// without tshark (then the test says so; ci/install.sh installs it).
fn tshark_bogus(path: &Path) -> Option<String> {
    let out = Command::new("tshark")
        .args(["-n", "-V", "-r"])
        .arg(path)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter(|l| l.contains("Bogus") || l.contains("Malformed"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The replay from the report: every frame of the output is LINKTYPE_RAW holding the
/// input's IP packet byte for byte, and each write is PI + packet (4 + 1428 = 1432 for
/// the last, where the bug wrote 1446: 4 + 14 + 1428).
#[test]
fn tap_write_tun_writes_and_captures_ip_packets() {
    let dir = tmp("tun-write-replay");
    let out = dir.join("o.pcapng");
    let run = skbsim(&["--tun", "--pipeline", "tap-write", "--trace", "-"], &out);
    let trace = ok(&run);
    let want = packets();
    for (i, p) in want.iter().enumerate() {
        let line = format!("): {} bytes blocking -> {}", p.len() + 4, p.len() + 4);
        assert!(
            trace.contains(&line),
            "write {i} is PI + packet ({line:?}):\n{trace}"
        );
    }
    assert!(trace.contains("1432 bytes blocking -> 1432"), "{trace}");
    assert!(!trace.contains("1446 bytes"), "{trace}");
    let got = frames(&out);
    assert_eq!(got.len(), want.len(), "one stack frame per packet");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.link_type, LINKTYPE_RAW);
        assert_eq!(&g.data, w);
    }
    match tshark_bogus(&out) {
        Some(bogus) => assert!(bogus.is_empty(), "tshark: {bogus}"),
        None => eprintln!("tshark not installed: the tshark check is skipped"),
    }
}

/// With IFF_NO_PI the same packets are written bare, and protocols come from the
/// version nibble: the capture is the same.
#[test]
fn tap_write_tun_no_pi_writes_bare_ip_packets() {
    let dir = tmp("tun-write-nopi");
    let out = dir.join("o.pcap");
    let trace = ok(&skbsim(
        &[
            "--tun",
            "--no-pi",
            "--pipeline",
            "tap-write",
            "--trace",
            "-",
        ],
        &out,
    ));
    let want = packets();
    assert!(trace.contains("1428 bytes blocking -> 1428"), "{trace}");
    let got = frames(&out);
    assert_eq!(
        got.iter().map(|f| &f.data).collect::<Vec<_>>(),
        want.iter().collect::<Vec<_>>()
    );
    assert!(got.iter().all(|f| f.link_type == LINKTYPE_RAW));
}

/// The real kernel, same command: AF_PACKET on the tun sees the input's IP packets (root
/// only; skipped with the reason otherwise).
#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn tap_write_tun_real_kernel_receives_the_ip_packets() {
    skbsim_kernel::require_privileges();
    let dir = tmp("tun-write-real");
    let out = dir.join("o.pcap");
    ok(&skbsim(
        &["--tun", "--pipeline", "tap-write", "--backend", "tap"],
        &out,
    ));
    let got = frames(&out);
    let want = packets();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.link_type, LINKTYPE_RAW);
        assert_eq!(&g.data, w);
    }
}

/// vhost-tx's batched path is tun_xdp_one, which calls eth_type_trans on a tun too: the
/// stack gets each packet from byte 14 on (drivers/net/tun.c: tun_xdp_one).
#[test]
fn vhost_tx_tun_batched_packets_lose_14_bytes_to_eth_type_trans() {
    let dir = tmp("tun-vhost");
    let out = dir.join("o.pcap");
    let trace = ok(&skbsim(
        &["--tun", "--pipeline", "vhost-tx", "--trace", "-"],
        &out,
    ));
    assert!(trace.contains("TUN_MSG_PTR"), "{trace}");
    let got = frames(&out);
    let want = packets();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.link_type, LINKTYPE_RAW);
        assert_eq!(g.data, w[14..]);
    }
}

/// tap-gro on a tun: one line saying why, exit 2, and no output file.
#[test]
fn tap_gro_tun_is_refused_with_the_reason() {
    let dir = tmp("tun-gro");
    let out = dir.join("o.pcap");
    let run = skbsim(&["--tun", "--pipeline", "tap-gro"], &out);
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("GRO on a tun device is not modelled") && err.contains("IFF_NAPI on IFF_TUN"),
        "{err}"
    );
    assert!(!out.exists());
}
