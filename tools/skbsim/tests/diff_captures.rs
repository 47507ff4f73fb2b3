//! `skbsim diff` of two captures compares the skb metadata their packet comments carry
//! (issue 20, item 8), field by field as the trace diff does; a capture without it (classic
//! pcap, or pcapng without comments) gets a notice that only frame bytes were compared
//! and where the metadata is.
//!
//! The case reported: with tx-vlan-hw-insert on, tun_put_user splices the hw-accel tag
//! back and tun_pi.proto is the inner EtherType (skb->protocol, 0x0800); with it off,
//! validate_xmit_vlan -> vlan_insert_tag_set_proto inserted the tag in software and set
//! skb->protocol to the TPID, 0x8100 (docs/tun-read.md#vlan-splice). The frame bytes
//! userspace reads are the same either way.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sim::pcap::{PcapFormat, PcapWriter, LINKTYPE_ETHERNET};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn skbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run skbsim")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("diff_captures");
    std::fs::create_dir_all(&d).expect("tmp dir");
    d.join(name)
}

const ON: &str = "golden/tun-read/vlan-8021q-pi";
const OFF: &str = "golden/tun-read/txvlan-off-8021q-pi";

/// `scenarios/pcaps/vlan-8021q.pcap` through tun-read with a PI, tx VLAN offload on or
/// off, written to `out`.
fn replay(out: &Path, txvlan: bool) {
    let out = s(out);
    let mut args = vec![
        "replay",
        "scenarios/pcaps/vlan-8021q.pcap",
        "--pipeline",
        "tun-read",
        "-o",
        out,
    ];
    if !txvlan {
        args.push("--no-txvlan-ctag");
    }
    let o = skbsim(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn the_goldens_classic_pcaps_say_bytes_only_and_name_both_traces() {
    let (a, b) = (format!("{ON}/read.pcap"), format!("{OFF}/read.pcap"));
    let o = skbsim(&["diff", &a, &b]);
    let out = stdout(&o);
    // The bytes userspace read are equal: exit 0, but not a bare "no difference".
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(out.lines().count(), 1, "one result line: {out}");
    assert!(out.contains("compared frame bytes only"), "{out}");
    assert!(out.contains("classic pcap"), "{out}");
    for t in [format!("{ON}/trace.snap"), format!("{OFF}/trace.snap")] {
        assert!(out.contains(&t), "names {t}: {out}");
    }
    let o = skbsim(&["diff", "--json", &a, &b]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["equal"], true);
    assert_eq!(v["compared"], "frame bytes only");
    assert!(v["notice"]
        .as_str()
        .is_some_and(|n| n.contains("trace.snap")));
}

#[test]
fn the_goldens_traces_differ_at_pi_proto() {
    let (a, b) = (format!("{ON}/trace.snap"), format!("{OFF}/trace.snap"));
    // The header names the two scenarios and their devices, and the skb line (a model
    // field) differs first; past them, what userspace reads: tun_pi.proto.
    let o = skbsim(&[
        "diff",
        "--ignore",
        "scenario,description,device,skb",
        &a,
        &b,
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("field `pi`:\n  - flags 0x0000 proto 0x0800\n  + flags 0x0000 proto 0x8100"),
        "{out}"
    );
}

#[test]
fn replays_into_pcapng_differ_in_the_skb_metadata() {
    let (on, off) = (tmp("on.pcapng"), tmp("off.pcapng"));
    replay(&on, true);
    replay(&off, false);
    let (a, b) = (s(&on), s(&off));
    let o = skbsim(&["diff", a, b]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    // skb->protocol first: the inner EtherType vs the TPID.
    assert!(
        out.contains("first difference at `frame 0`, field `skb`"),
        "{out}"
    );
    assert!(
        out.contains("- len 154 headlen 154 protocol 0x0800"),
        "{out}"
    );
    assert!(
        out.contains("+ len 158 headlen 158 protocol 0x8100"),
        "{out}"
    );

    let o = skbsim(&["diff", "--ignore", "skb", a, b]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("field `pi`:\n  - flags 0x0000 proto 0x0800\n  + flags 0x0000 proto 0x8100"),
        "{out}"
    );
    let o = skbsim(&["diff", "--json", "--ignore", "skb", a, b]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["equal"], false);
    assert_eq!(v["compared"], "frame bytes and skb metadata");
    assert_eq!(v["field"]["event"], "frame 0");
    assert_eq!(v["field"]["field"], "pi");
    assert_eq!(v["field"]["left"], "flags 0x0000 proto 0x0800");
    assert_eq!(v["field"]["right"], "flags 0x0000 proto 0x8100");

    // Ignoring both, the captures agree: bytes and the rest of the metadata.
    let o = skbsim(&["diff", "--ignore", "skb,pi", a, b]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("no difference (frame bytes and skb metadata)"));
}

#[test]
fn identical_captures_are_equal() {
    let on = tmp("same.pcapng");
    replay(&on, true);
    let a = s(&on);
    let o = skbsim(&["diff", a, a]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "no difference (frame bytes and skb metadata)\n");

    // Classic pcap: equal, and said to be bytes only (no golden trace beside them).
    let classic = tmp("same.pcap");
    replay(&classic, false);
    let c = s(&classic);
    let o = skbsim(&["diff", c, c]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.starts_with("no difference; compared frame bytes only"),
        "{out}"
    );
    assert!(out.contains("skbsim replay -o X.pcapng"), "{out}");
    // One side with metadata, one without: the side without is named.
    let o = skbsim(&["diff", a, c]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains(&format!("{c} carries no skb metadata (classic pcap")),
        "{out}"
    );
}

/// A pcapng of Ethernet frames (all the same 60 bytes) with these comments.
fn pcapng(name: &str, comments: &[Option<&str>]) -> String {
    let p = tmp(name);
    let mut w = PcapWriter::begin_file(&p, PcapFormat::PcapNg).expect("create");
    w.add_interface("read", LINKTYPE_ETHERNET, 0).expect("if");
    for (i, c) in comments.iter().enumerate() {
        w.write_packet(0, 1_000 + i as u64, &[0x11; 60], 60, *c)
            .expect("packet");
    }
    w.finish().expect("flush");
    s(&p).to_string()
}

#[test]
fn a_comment_missing_where_the_capture_carries_metadata_is_a_difference() {
    let a = pcapng(
        "c2.pcapng",
        &[Some("pi: proto 0x0800"), Some("pi: proto 0x86dd")],
    );
    // Frame 0 uncommented, frame 1 commented: the capture carries metadata, so frame 0's
    // missing comment is the first difference.
    let b = pcapng("c1.pcapng", &[None, Some("pi: proto 0x86dd")]);
    let o = skbsim(&["diff", &a, &b]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "first difference at `frame 0`, field `pi`:\n  - pi: proto 0x0800\n  + (absent)"
        ),
        "{out}"
    );
    // No comment at all (what a real-kernel capture has): bytes only, and said so.
    let none = pcapng("c0.pcapng", &[None, None]);
    let o = skbsim(&["diff", &a, &none]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "compared frame bytes only: {none} carries no skb metadata (its packets have no comments)"
        )),
        "{out}"
    );
}
