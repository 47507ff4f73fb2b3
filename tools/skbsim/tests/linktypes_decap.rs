//! `skbsim replay` of PPP, NFLOG, 802.11, radiotap, FDDI and 802.15.4 captures
//! (sim/src/pcap/testdata/README.md says how each was made): frames that carry a packet
//! are replayed, the others skipped and counted by reason in the summary, and a corrupt
//! header is a one-line error naming the file and the frame, exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../sim/src/pcap/testdata")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("linktypes-decap");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir.join(name)
}

fn replay(input: &Path, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .arg("replay")
        .arg(input)
        // No bridge: a bridge would not forward frames back to the port it learned from.
        .args(["--attach", "direct", "-o"])
        .arg(out)
        .output()
        .expect("run skbsim")
}

/// Each capture replays; the summary names what was skipped. The counts are those of
/// linktypes.expected, which tshark's dissection gave.
#[test]
fn replay_skips_frames_without_a_packet_and_counts_them() {
    let cases = [
        (
            "wlan.pcap",
            8,
            "skipped 6 (1 802.11 management, 1 802.11 control, 1 802.11 no data, \
             1 802.11 protected, 1 802.11 fragment, 1 802.11 A-MSDU)",
        ),
        (
            "radiotap_data.pcap",
            4,
            "skipped 2 (1 802.11 management, 1 radiotap bad FCS)",
        ),
        ("ppp.pcap", 4, "skipped 2 (2 PPP non-IP protocol)"),
        ("nflog.pcap", 11, "skipped 2 (2 NFLOG non-IP family)"),
        ("fddi.pcap", 4, "skipped 1 (1 FDDI non-LLC)"),
        ("wpan.pcap", 0, "skipped 3 (3 802.15.4)"),
        ("wpan_nofcs.pcap", 0, "skipped 3 (3 802.15.4)"),
    ];
    for (file, replayed, skipped) in cases {
        let out = tmp(&format!("out-{file}"));
        let run = replay(&testdata(file), &out);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{file}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(
            lines[0].starts_with(&format!("skbsim: {replayed} frames in (")),
            "{file}: {stderr}"
        );
        let skipped = format!("skbsim: {skipped}");
        assert_eq!(lines.last(), Some(&skipped.as_str()), "{file}: {stderr}");
        let written = sim::pcap::read_all(&out).expect("output");
        assert_eq!(written.len(), replayed, "{file}");
    }
}

/// Frame 1 of radiotap_data.pcap with its radiotap version byte set to 5.
#[test]
fn corrupt_radiotap_header_is_one_line_exit_2() {
    let mut b = std::fs::read(testdata("radiotap_data.pcap")).expect("read");
    let caplen = u32::from_le_bytes([b[32], b[33], b[34], b[35]]) as usize;
    b[24 + 16 + caplen + 16] = 5;
    let bad = tmp("bad-radiotap.pcap");
    std::fs::write(&bad, &b).expect("write");
    let run = replay(&bad, &tmp("bad-out.pcap"));
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&run.stderr),
        format!(
            "skbsim: {}: frame 1: IEEE802_11_RADIOTAP header has it_version 5 (only 0 is \
             defined)\n",
            bad.display()
        )
    );
}

/// An NFLOG message whose first attribute claims 2 bytes (less than its own header).
#[test]
fn corrupt_nflog_attribute_is_one_line_exit_2() {
    let mut b = std::fs::read(testdata("nflog.pcap")).expect("read");
    // Frame 0's first attribute length, after the 24-byte file and 16-byte record
    // headers and the 4-byte nfgenmsg.
    b[24 + 16 + 4..24 + 16 + 6].copy_from_slice(&2u16.to_le_bytes());
    let bad = tmp("bad-nflog.pcap");
    std::fs::write(&bad, &b).expect("write");
    let run = replay(&bad, &tmp("bad-out2.pcap"));
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&run.stderr),
        format!(
            "skbsim: {}: frame 0: NFLOG header has attribute length 2 (less than its 4-byte \
             header)\n",
            bad.display()
        )
    );
}
