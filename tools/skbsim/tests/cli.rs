//! The command line as a user meets it: bad input gets one line naming the file and the
//! problem with exit code 2; a golden edited by hand makes `run` exit 1 with a field-level
//! diff; `bless` writes goldens that `run` then accepts.

use std::fs;
use std::path::{Path, PathBuf};

use sim::pcap::{PcapFormat, PcapWriter};

mod common;
use common::{assert_bad_input, skbsim};

/// A fresh `<tmp>/<name>` holding scenarios/t/ and scenarios/pcaps/.
fn workspace(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("scenarios/t")).expect("create scenarios/t");
    fs::create_dir_all(dir.join("scenarios/pcaps")).expect("create scenarios/pcaps");
    dir
}

fn tcp_frame(payload: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[
        0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    f.extend_from_slice(&[
        0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x10, 2, 0, 0, 0, 0, 0,
    ]);
    f.extend((0..payload).map(|i| i as u8));
    f
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path, PcapFormat::Pcap).expect("create pcap");
    for (i, f) in frames.iter().enumerate() {
        w.write_frame(1_000_000_000 + i as u64, f)
            .expect("write frame");
    }
    w.finish().expect("finish pcap");
}

fn scenario(dir: &Path, extra: &str) -> PathBuf {
    let p = dir.join("scenarios/t/s.toml");
    fs::write(
        &p,
        format!(
            "description = \"t\"\ninput = \"../pcaps/in.pcap\"\npipeline = \"tun-read\"\n{extra}"
        ),
    )
    .expect("write scenario");
    p
}

#[test]
fn corrupt_pcap_magic() {
    let d = workspace("corrupt-magic");
    scenario(&d, "");
    fs::write(
        d.join("scenarios/pcaps/in.pcap"),
        b"this is not a pcap file at all",
    )
    .unwrap();
    assert_bad_input(&skbsim(&["run", "scenarios"], &d), &["in.pcap"]);
}

#[test]
fn truncated_pcap_record() {
    let d = workspace("truncated");
    scenario(&d, "");
    let p = d.join("scenarios/pcaps/in.pcap");
    write_pcap(&p, &[tcp_frame(10), tcp_frame(10)]);
    let bytes = fs::read(&p).unwrap();
    fs::write(&p, &bytes[..bytes.len() - 5]).unwrap();
    assert_bad_input(&skbsim(&["run", "scenarios"], &d), &["in.pcap", "frame 1"]);
}

#[test]
fn wrong_link_type() {
    let d = workspace("linktype");
    scenario(&d, "");
    // Classic pcap header, microseconds, little-endian, LINKTYPE_NETLINK (253): netlink
    // messages, no network-layer packets.
    let mut h = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&253u32.to_le_bytes());
    fs::write(d.join("scenarios/pcaps/in.pcap"), h).unwrap();
    assert_bad_input(
        &skbsim(&["run", "scenarios"], &d),
        &["in.pcap", "253", "supported: ETHERNET (1), RAW (101)"],
    );
}

#[test]
fn frame_shorter_than_ethernet_header() {
    let d = workspace("short-frame");
    scenario(&d, "");
    write_pcap(
        &d.join("scenarios/pcaps/in.pcap"),
        &[tcp_frame(0), vec![2; 10]],
    );
    assert_bad_input(
        &skbsim(&["run", "scenarios"], &d),
        &["in.pcap", "frame 1", "shorter than an Ethernet header"],
    );
}

#[test]
fn unknown_scenario_key() {
    let d = workspace("unknown-key");
    scenario(&d, "[device]\nvnet_hdr_size = 12\n");
    write_pcap(&d.join("scenarios/pcaps/in.pcap"), &[tcp_frame(0)]);
    assert_bad_input(
        &skbsim(&["run", "scenarios"], &d),
        &["s.toml", "vnet_hdr_size"],
    );
}

#[test]
fn scenario_value_of_the_wrong_type_or_range_names_file_key_and_line() {
    let d = workspace("wrong-type");
    write_pcap(&d.join("scenarios/pcaps/in.pcap"), &[tcp_frame(0)]);
    scenario(&d, "[device]\nmtu = \"big\"\n");
    let out = skbsim(&["run", "scenarios"], &d);
    assert_bad_input(
        &out,
        &["s.toml", "device.mtu", "invalid type", "line 5, column 7"],
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("at byte"));
    scenario(&d, "[reader]\nbuffers = [1000000000000]\n");
    assert_bad_input(
        &skbsim(&["run", "scenarios"], &d),
        &["s.toml", "reader.buffers[0]", "0..=16777216"],
    );
}

/// A replay flag's error: one line, the flag named, nothing of the TOML the flags become.
fn assert_flag_error(d: &Path, args: &[&str], needles: &[&str]) {
    let mut all = vec!["replay", "in.pcap"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "out.pcap"]);
    let out = skbsim(&all, d);
    assert_bad_input(&out, needles);
    let err = String::from_utf8_lossy(&out.stderr);
    for toml in [
        "at byte",
        "(line ",
        "device.",
        "skb.",
        "reader.",
        "flags.toml",
    ] {
        assert!(!err.contains(toml), "{toml:?} in: {err}");
    }
}

#[test]
fn replay_flag_errors_name_the_flag() {
    let d = workspace("replay-flags");
    // 802.1Q-tagged TCP: a tun device cannot carry it with the tag in the frame.
    let mut tagged = tcp_frame(0);
    tagged.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
    write_pcap(&d.join("in.pcap"), &[tagged]);
    // 1e12 used to abort the process allocating the buffer.
    assert_flag_error(
        &d,
        &["--buffer", "1000000000000"],
        &["--buffer: 1000000000000 is outside 0..=16777216"],
    );
    assert_flag_error(
        &d,
        &["--vnet-hdr-sz", "3"],
        &["--vnet-hdr-sz: 3 is outside 10..="],
    );
    assert_flag_error(
        &d,
        &["--checksum", "foo"],
        &["--checksum", "`foo`", "partial"],
    );
    assert_flag_error(&d, &["--gso", "tcp"], &["--gso-size"]);
    // tap-gro reads no [reader]; it reads [device] (PI, vnet header) but is always a tap.
    assert_flag_error(
        &d,
        &["--pipeline", "tap-gro", "--buffer", "100"],
        &["--buffer: not used by --pipeline tap-gro"],
    );
    assert_flag_error(
        &d,
        &["--pipeline", "tap-gro", "--tun"],
        &[
            "--tun: GRO on a tun device is not modelled",
            "IFF_NAPI on IFF_TUN",
        ],
    );
    assert_flag_error(&d, &["--tun"], &["--inband-vlan"]);
    // clap's own refusal names the flag and lists the choices.
    let out = skbsim(&["replay", "in.pcap", "--profile", "nope"], &d);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--profile") && err.contains("linux-6.18"),
        "{err}"
    );
}

#[test]
fn replay_help_lists_every_profile_and_pipeline() {
    let out = skbsim(
        &["replay", "--help"],
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for p in sim::profile::PROFILES {
        assert!(help.contains(p.name), "{} missing from: {help}", p.name);
    }
    for p in sim::scenario::Pipeline::ALL {
        assert!(help.contains(p.name()), "{} missing from: {help}", p.name());
    }
}

#[test]
fn missing_input_and_missing_scenario() {
    let d = workspace("missing");
    scenario(&d, "");
    assert_bad_input(&skbsim(&["run", "scenarios"], &d), &["in.pcap"]);
    assert_bad_input(&skbsim(&["run", "nowhere"], &d), &["nowhere"]);
}

#[test]
fn bless_then_run_passes_and_a_hand_edited_golden_fails_with_a_field_diff() {
    let d = workspace("golden-edit");
    scenario(&d, "");
    write_pcap(
        &d.join("scenarios/pcaps/in.pcap"),
        &[tcp_frame(20), tcp_frame(0)],
    );
    let out = skbsim(&["run", "scenarios"], &d);
    assert_eq!(out.status.code(), Some(1), "no golden yet must fail");
    assert!(skbsim(&["bless", "scenarios"], &d).status.success());
    let out = skbsim(&["run", "scenarios"], &d);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed, 0 failed"));

    // Edit the PI of the second read by hand: the diff names the read and the field.
    let trace = d.join("golden/t/s/trace.snap");
    let text = fs::read_to_string(&trace).unwrap();
    let edited = text.replacen(
        "pi: flags 0x0000 proto 0x0800",
        "pi: flags 0x0001 proto 0x0800",
        2,
    );
    let edited = edited.replacen(
        "pi: flags 0x0001 proto 0x0800",
        "pi: flags 0x0000 proto 0x0800",
        1,
    );
    fs::write(&trace, edited).unwrap();
    let out = skbsim(&["run", "scenarios"], &d);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("read 1 (frame 1"), "{stdout}");
    assert!(stdout.contains("field `pi`"), "{stdout}");
    assert!(stdout.contains("flags 0x0001"), "{stdout}");

    // The JSON view says the same for machines.
    let out = skbsim(&["run", "--json", "scenarios"], &d);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["failed"], 1);
    assert_eq!(v["results"][0]["status"], "fail");
}

#[test]
fn replay_writes_what_userspace_read_and_diff_compares_pcaps() {
    let d = workspace("replay");
    let input = d.join("in.pcap");
    write_pcap(&input, &[tcp_frame(100)]);
    let out = skbsim(
        &[
            "replay", "in.pcap", "--no-pi", "--buffer", "60", "-o", "out.pcap", "--trace", "-",
        ],
        &d,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = String::from_utf8_lossy(&out.stdout);
    assert!(trace.contains("buffer 60 -> 60"), "{trace}");
    // What userspace read is the first 60 bytes of the 154-byte frame.
    let read = sim::pcap::read_all(d.join("out.pcap")).unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].data, tcp_frame(100)[..60].to_vec());
    let same = skbsim(&["diff", "out.pcap", "out.pcap"], &d);
    assert!(same.status.success());
    let differ = skbsim(&["diff", "in.pcap", "out.pcap"], &d);
    assert_eq!(differ.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&differ.stdout).contains("frame 0"));
}

#[test]
fn a_gro_max_size_out_of_range_or_on_an_old_profile_is_one_line() {
    let d = workspace("gro-max-size");
    write_pcap(&d.join("scenarios/pcaps/in.pcap"), &[tcp_frame(0)]);
    let p = d.join("scenarios/t/s.toml");
    let write = |extra: &str| {
        let head = "description = \"t\"\ninput = \"../pcaps/in.pcap\"\npipeline = \"tap-gro\"\n";
        fs::write(&p, format!("{head}{extra}")).expect("write scenario");
    };
    write("[gro]\ngro_max_size = 524281\n");
    assert_bad_input(
        &skbsim(&["run", "scenarios"], &d),
        &["s.toml", "gro.gro_max_size", "0..=524280"],
    );
    write("profile = \"linux-4.19\"\n[gro]\ngro_ipv4_max_size = 100000\n");
    assert_bad_input(
        &skbsim(&["run", "scenarios"], &d),
        &[
            "s.toml",
            "gro.gro_ipv4_max_size",
            "linux-4.19 has no per-device",
        ],
    );
}
