//! The simulator against the real kernel (root only; without root every test prints
//! `skipped: <reason>`, and in CI, which runs as root, fails). One test per scenario file in scenarios/tun-read,
//! named by the file; plus: nothing is left behind on the host after a normal, a failing
//! and a SIGKILLed run, and a wrong model is caught with the scenario, read and field.

mod common;
use common::{assert_agrees, stem};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rstest::rstest;
use sim::pcap::{PcapFormat, PcapWriter};
use sim::scenario::Scenario;
use skbsim::conform::{compare_outputs, compare_pcaps, compare_traces, conform_one, Outcome};
use skbsim::runner::{run_sim, run_tap, ScenarioOutput};

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tun-read")
}

#[rstest]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn sim_and_real_agree(
    #[base_dir = "../../scenarios/tun-read"]
    #[files("*.toml")]
    path: PathBuf,
) {
    let name = stem(&path);
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some(reason) = &scenario.sim_only {
        assert!(
            !reason.trim().is_empty(),
            "{name}: sim_only needs a reason the real kernel cannot run it"
        );
        eprintln!("sim-only {name}: {reason}");
        return;
    }
    skbsim_kernel::require_privileges();
    assert_agrees(&name, &scenario);
}

/// Host state that a run must not change: link names and named namespaces.
fn host_state() -> (BTreeSet<String>, String) {
    let links = Command::new("ip")
        .args(["-o", "link"])
        .output()
        .expect("run ip -o link");
    assert!(links.status.success(), "ip -o link failed");
    let names = String::from_utf8_lossy(&links.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or("").to_string())
        .collect();
    let netns = Command::new("ip")
        .arg("netns")
        .output()
        .expect("run ip netns");
    (names, String::from_utf8_lossy(&netns.stdout).into_owned())
}

/// The `skbsim-netns` thread of `pid`, once it exists.
fn netns_thread(pid: u32) -> Option<PathBuf> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks
        .filter_map(|t| t.ok())
        .map(|t| t.path())
        .find(|t| std::fs::read_to_string(t.join("comm")).is_ok_and(|c| c.trim() == "skbsim-netns"))
}

/// tx_packets of `dev` in `/proc/<pid>/task/<tid>/net/dev` (that thread's namespace).
fn tx_packets(task: &Path, dev: &str) -> Option<u64> {
    let text = std::fs::read_to_string(task.join("net/dev")).ok()?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{dev}:")))?;
    let fields: Vec<&str> = line.split(':').nth(1)?.split_whitespace().collect();
    fields.get(9)?.parse().ok()
}

/// Whether any thread of any process is still in the namespace `net:[inode]`.
fn netns_in_use(link: &str) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.filter_map(|p| p.ok()).any(|p| {
        std::fs::read_dir(p.path().join("task")).is_ok_and(|tasks| {
            tasks.filter_map(|t| t.ok()).any(|t| {
                std::fs::read_link(t.path().join("ns/net"))
                    .is_ok_and(|l| l.to_string_lossy() == link)
            })
        })
    })
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn nothing_is_left_behind_after_normal_failing_and_killed_runs() {
    skbsim_kernel::require_privileges();
    let before = host_state();

    // A normal run.
    let s = Scenario::load(&scenario_dir().join("vlan-8021q-pi.toml")).expect("scenario");
    assert!(
        matches!(conform_one(&s), Outcome::Agree { .. }),
        "vlan-8021q-pi should agree"
    );
    assert_eq!(host_state(), before, "after a normal run");

    // A run the kernel refuses halfway through the setup: the error names the operation.
    let text =
        "description = \"d\"\ninput = \"../pcaps/csum-udp4.pcap\"\npipeline = \"tun-read\"\n\
                [device]\nno_pi = true\nvnet_hdr = true\nvnet_be = true\n";
    let bad =
        Scenario::parse(&scenario_dir().join("vnet-be-for-cleanup.toml"), text).expect("scenario");
    let err = run_tap(&bad).expect_err("TUNSETVNETBE is refused here").0;
    eprintln!("failing run: {err}");
    assert!(err.contains("TUNSETVNETBE on skbdut"), "{err}");
    assert_eq!(host_state(), before, "after a failing run");

    // A child replaying many frames, killed with SIGKILL mid-replay.
    let dir = std::env::temp_dir().join(format!("skbsim-conform-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let pcap = dir.join("many.pcap");
    let mut w = PcapWriter::create(&pcap, PcapFormat::Pcap).expect("pcap");
    let mut frame = vec![0u8; 60];
    frame[..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    for i in 0..200_000u64 {
        w.write_frame(1_000_000_000 + i, &frame)
            .expect("write frame");
    }
    w.finish().expect("finish pcap");
    let mut child = Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(["replay", "--backend", "tap", "--no-pi"])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn skbsim replay");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (task, ns_link) = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!("skbsim replay ended ({status}) before it could be killed mid-replay");
        }
        assert!(Instant::now() < deadline, "the replay never got going");
        if let Some(task) = netns_thread(child.id()) {
            if tx_packets(&task, "skbdut").is_some_and(|n| n >= 100) {
                let link = std::fs::read_link(task.join("ns/net")).expect("ns link");
                break (task, link.to_string_lossy().into_owned());
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    eprintln!(
        "killing pid {} mid-replay ({} frames read from skbdut in {ns_link})",
        child.id(),
        tx_packets(&task, "skbdut").unwrap_or(0)
    );
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert!(!status.success(), "killed child exit status: {status}");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !netns_in_use(&ns_link),
        "{ns_link} still has a thread after SIGKILL"
    );
    assert_eq!(host_state(), before, "after a SIGKILLed run");
}

/// `pcap` with the first byte of its first frame at `offset` flipped.
fn tamper_pcap(out: &ScenarioOutput, offset: usize) -> Vec<u8> {
    let frames = sim::pcap::PcapReader::from_reader(&out.pcap[..], "(sim)")
        .expect("pcap")
        .collect::<Result<Vec<_>, _>>()
        .expect("frames");
    let mut w = PcapWriter::new(Vec::new(), PcapFormat::Pcap).expect("writer");
    for (i, f) in frames.iter().enumerate() {
        let mut d = f.data.clone();
        if i == 0 {
            d[offset] ^= 0xff;
        }
        w.write_frame(f.ts_ns, &d).expect("write");
    }
    w.finish().expect("finish")
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn a_wrong_model_is_caught_with_scenario_read_and_field() {
    let s = Scenario::load(&scenario_dir().join("vlan-8021q-pi.toml")).expect("scenario");
    let sim = run_sim(&s, None).expect("sim");
    // A model that got TUN_PKT_STRIP wrong on the first read.
    let wrong_out = common::with_wrong_field(&sim, "pi", "flags 0x0000", "flags 0x0001");
    assert_ne!(
        wrong_out.trace, sim.trace,
        "the trace has the PI line to flip"
    );
    let check = |real: &ScenarioOutput| {
        let m = compare_traces(&s.name, &wrong_out.records, &real.records)
            .expect("the flipped flag is caught");
        assert_eq!(m.scenario, "tun-read/vlan-8021q-pi");
        assert_eq!(m.read, "read 0 (frame 0, ts 1.000000000)");
        assert_eq!(m.field, "pi");
        assert_eq!(m.sim, "flags 0x0001 proto 0x0800");
        assert_eq!(m.real, "flags 0x0000 proto 0x0800");
        let shown = m.to_string();
        for part in [
            "tun-read/vlan-8021q-pi",
            "read 0 (frame 0",
            "`pi`",
            "0x0001",
            "0x0000",
        ] {
            assert!(shown.contains(part), "{part:?} missing from {shown}");
        }
    };
    // Against the right model's own trace (runs anywhere)...
    check(&sim);
    // ...and a wrong byte in the output pcap.
    let m = compare_pcaps(&s.name, &tamper_pcap(&sim, 13), &sim.pcap)
        .expect("pcaps")
        .expect("the flipped byte is caught");
    assert_eq!(
        (m.read.as_str(), m.field.as_str()),
        ("pcap frame 0", "byte 13")
    );

    skbsim_kernel::require_privileges();
    // ...and against the real kernel.
    let real = run_tap(&s).expect("real kernel");
    check(&real);
    assert_eq!(
        compare_outputs(&s.name, &sim, &real).expect("compare"),
        None
    );
    let m = compare_outputs(&s.name, &wrong_out, &real)
        .expect("compare")
        .expect("caught");
    assert_eq!(m.field, "pi");
}
