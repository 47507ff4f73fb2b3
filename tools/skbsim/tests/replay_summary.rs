//! Issue 20 item 7: the replay summary on stderr says what happened to the frames: how
//! many came in, how many each observation point received, and why the others were not
//! delivered (each reason naming its kernel function), on every pipeline, also when the
//! trace goes to a file; with `--json` the same numbers are the last JSON line.

use std::path::Path;
use std::process::{Command, Output};

use sim::scenario::Scenario;
use sim::tun::XmitDrop;
use skbsim::engine::summary::{Reason, Tally, XdpPlace};
use skbsim::engine::Sinks;
use skbsim::runner::{replay_into, Backend};

mod common;
use common::{repo, scratch};

/// Frames a capture of `lo` on Linux holds: an Ethernet header with both MACs zero
/// (ARPHRD_LOOPBACK's header_ops), then IPv4/UDP 127.0.0.1:4000 -> 127.0.0.1:5000.
const LOOPBACK_FRAMES: u32 = 10;

fn loopback_pcap(path: &Path) {
    let mut f = Vec::new();
    // Classic pcap, microseconds, snaplen 65535, LINKTYPE_ETHERNET.
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    for i in 0..LOOPBACK_FRAMES {
        let payload = [0x61u8; 4];
        let mut ip = vec![
            0x45, 0, 0, 0, 0, i as u8, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
        ];
        let total = (20 + 8 + payload.len()) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        let sum = ip
            .chunks(2)
            .fold(0u32, |s, c| s + u32::from(u16::from_be_bytes([c[0], c[1]])));
        let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[0x08, 0x00]);
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&4000u16.to_be_bytes());
        frame.extend_from_slice(&5000u16.to_be_bytes());
        frame.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
        frame.extend_from_slice(&[0, 0]);
        frame.extend_from_slice(&payload);
        f.extend_from_slice(&(1_700_000_000 + i).to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        f.extend_from_slice(&frame);
    }
    std::fs::write(path, f).expect("write the capture");
}

fn replay(dir: &Path, args: &[&str]) -> Output {
    let input = dir.join("lo.pcap");
    loopback_pcap(&input);
    let out = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .current_dir(dir)
        .arg("replay")
        .arg(&input)
        .args(args)
        .output()
        .expect("run skbsim");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The loopback case of the issue: every source MAC is zero, which br_handle_frame drops
/// (`!is_valid_ether_addr(eth_hdr(skb)->h_source)`), so the default bridge hands the tap
/// none of the 10 frames.
fn assert_loopback_summary(stderr: &str) {
    let n = LOOPBACK_FRAMES;
    assert!(
        stderr.contains(&format!("skbsim: {n} frames in (")),
        "{stderr}"
    );
    assert!(
        stderr.contains("lo.pcap), 0 delivered to the tun reader"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "; not delivered: {n} bridge: invalid source address (br_handle_frame)\n"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: nothing was delivered; the capture's source MACs are zero (a loopback capture?): try --attach direct"),
        "{stderr}"
    );
}

#[test]
fn a_zero_mac_capture_through_the_bridge_says_nothing_was_delivered_and_why() {
    let d = scratch("zero-mac");
    let out = replay(&d, &["-o", "out.pcap"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_loopback_summary(&stderr);
    assert!(stderr.contains("(out.pcap); not delivered"), "{stderr}");
    let read = sim::pcap::read_all(d.join("out.pcap")).expect("out.pcap");
    assert!(read.is_empty());
}

#[test]
fn the_summary_is_printed_when_the_trace_goes_to_a_file() {
    let d = scratch("trace-file");
    let out = replay(&d, &["--trace", "trace.txt"]);
    assert_loopback_summary(&String::from_utf8_lossy(&out.stderr));
    let trace = std::fs::read_to_string(d.join("trace.txt")).expect("trace");
    assert_eq!(
        trace.matches("bridge-drop (frame").count(),
        LOOPBACK_FRAMES as usize
    );
}

#[test]
fn json_ends_with_the_same_numbers() {
    let d = scratch("json");
    let out = replay(&d, &["--json"]);
    assert_loopback_summary(&String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().expect("JSON lines");
    let v: serde_json::Value = serde_json::from_str(last).expect("JSON");
    assert_eq!(v["event"], "summary");
    assert_eq!(v["frames_in"], LOOPBACK_FRAMES);
    assert_eq!(v["delivered"][0]["point"], "read");
    assert_eq!(v["delivered"][0]["frames"], 0);
    let reasons = v["not_delivered"].as_array().expect("reasons");
    assert_eq!(reasons.len(), 1);
    assert_eq!(reasons[0]["kernel"], "br_handle_frame");
    assert_eq!(reasons[0]["frames"], LOOPBACK_FRAMES);
    assert!(v["hint"]
        .as_str()
        .is_some_and(|h| h.contains("--attach direct")));
}

/// Without the bridge nothing checks the source: tun_net_xmit queues all 10 (the ring
/// holds tx_queue_len 500) and the reader reads each.
#[test]
fn attach_direct_delivers_every_frame_and_gives_no_hint() {
    let d = scratch("direct");
    let out = replay(&d, &["--attach", "direct", "-o", "-"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let n = LOOPBACK_FRAMES;
    assert!(
        stderr.contains(&format!(
            "{n} delivered to the tun reader (stdout); not delivered: 0\n"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("hint:"), "{stderr}");
}

/// A suite scenario replayed on the simulator, its tally and its input's frame count.
fn tally_of(scenario: &Scenario) -> (Tally, u64) {
    let frames = sim::pcap::read_all(&scenario.input).expect("input").len() as u64;
    let mut sinks = Sinks::default();
    let s = replay_into(scenario, Backend::Sim, &mut sinks, None).expect("replay");
    (s.tally, frames)
}

fn load(rel: &str) -> Scenario {
    Scenario::load(&repo().join(rel)).expect("scenario")
}

/// xdp_drop.o returns XDP_DROP for every frame; natively (nonblocking writes, build_skb)
/// tun_xdp_act frees each, so none reaches the stack or a reader.
#[test]
fn tap_write_counts_xdp_drop() {
    let (t, n) = tally_of(&load("scenarios/tap-write/xdp-drop-native.toml"));
    assert!(n > 0);
    assert_eq!(t.frames_in, n);
    assert_eq!(t.delivered_total(), 0);
    assert_eq!(
        t.not_delivered.iter().collect::<Vec<_>>(),
        [(&Reason::XdpDrop(XdpPlace::Native), &n)]
    );
    assert!(t
        .line("in", None)
        .ends_with(&format!("not delivered: {n} XDP_DROP (tun_xdp_act)")));
}

/// The same program behind vhost_net (tun_sendmsg -> tun_xdp_one -> tun_xdp_act) and
/// before GRO on tap-gro's writes: every frame is dropped.
#[test]
fn vhost_tx_and_tap_gro_count_xdp_drop() {
    for rel in [
        "scenarios/vhost-tx/xdp-drop-batched.toml",
        "scenarios/tap-gro/xdp-drop-native-burst.toml",
    ] {
        let (t, n) = tally_of(&load(rel));
        assert_eq!(t.frames_in, n, "{rel}");
        assert_eq!(t.delivered_total(), 0, "{rel}");
        assert_eq!(
            t.not_delivered.iter().collect::<Vec<_>>(),
            [(&Reason::XdpDrop(XdpPlace::Native), &n)],
            "{rel}"
        );
    }
}

/// tx_queue_len 2 and a reader that reads after every 3 frames: of each 3 frames
/// tun_net_xmit queues 2 and drops the third (ptr_ring full, tx_dropped); the reader
/// reads every queued frame.
#[test]
fn tun_read_counts_ring_full() {
    let input = repo().join("scenarios/pcaps/untagged-tcp4.pcap");
    let text = format!(
        "description = \"ring full\"\ninput = {:?}\npipeline = \"tun-read\"\nattach = \"direct\"\n\
         [device]\nno_pi = true\ntx_queue_len = 2\n[reader]\nread_every = 3\n",
        input.to_string_lossy()
    );
    let scenario =
        Scenario::parse(&repo().join("scenarios/tun-read/ring.toml"), &text).expect("scenario");
    let (t, n) = tally_of(&scenario);
    assert!(n >= 3);
    let dropped: u64 = (0..n)
        .step_by(3)
        .map(|start| (n - start).min(3).saturating_sub(2))
        .sum();
    assert_eq!(t.frames_in, n);
    assert_eq!(t.points[0].frames, n - dropped);
    assert_eq!(
        t.not_delivered.iter().collect::<Vec<_>>(),
        [(&Reason::XmitDrop(Some(XmitDrop::FullRing)), &dropped)]
    );
    assert!(t.line("in", None).ends_with(&format!(
        "not delivered: {dropped} ring full (tun_net_xmit)"
    )));
}
