//! Captures that tcpdump reads, replayed through the CLI as tcpdump reads them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../sim/src/pcap/testdata")
        .join(name)
}

/// eth_snaplen100.pcap's records are longer than its header's snaplen (100); libpcap
/// (`sf-pcap.c: pcap_next_packet`) reads every one of them cut to 100 bytes, and so
/// must `skbsim replay` instead of refusing the file.
#[test]
fn replay_reads_caplen_over_snaplen_as_libpcap_does() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("linktypes-snaplen");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let out = dir.join("out.pcap");
    let run = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .arg("replay")
        .arg(testdata("eth_snaplen100.pcap"))
        // No bridge: the capture is both directions of a conversation, half of which a
        // bridge would not forward back to the port it learned the address on.
        .args(["--attach", "direct"])
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run skbsim");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let whole = sim::pcap::read_all(testdata("eth.pcap")).expect("eth.pcap");
    let read = sim::pcap::read_all(&out).expect("out.pcap");
    assert_eq!(read.len(), 21);
    for (w, r) in whole.iter().zip(&read) {
        assert_eq!(r.data, w.data[..w.data.len().min(100)]);
    }
}
