//! The tap-gro simulator against the real kernel (root only; without root every test
//! prints `skipped: <reason>`, and in CI, which runs as root, fails). One test per
//! scenario file in scenarios/tap-gro, named by the file: `sim_only` ones only check that
//! their reason is given; the others must agree field by field (model-only and
//! unobservable fields aside) and frame by frame. Plus: what the real trace shows for the
//! VXLAN case of docs/real-kernel.md#gro-on-tap, a wrong model is caught with the scenario,
//! delivery and field, and nothing is left behind on the host.

mod common;
use common::{assert_agrees, stem};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use rstest::rstest;
use sim::scenario::Scenario;
use skbsim::conform::{compare_scenario_outputs, compare_traces, conform_one, Outcome};
use skbsim::runner::{run_sim, run_tap, ScenarioOutput};

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tap-gro")
}

#[rstest]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn sim_and_real_agree(#[files("../../scenarios/tap-gro/*.toml")] path: PathBuf) {
    let name = stem(&path);
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some(reason) = &scenario.sim_only {
        assert!(
            !reason.trim().is_empty(),
            "{name}: sim_only needs a reason the real kernel cannot run it"
        );
        eprintln!("sim-only {name}: {reason}");
        // What the arm itself says (not asserted: another machine's kernel may differ).
        match skbsim_kernel::arm::tap_gro::expressible(&scenario) {
            Err(e) => eprintln!("  the arm agrees: {e}"),
            Ok(()) => eprintln!("  note: the arm would run {name} on this kernel"),
        }
        return;
    }
    skbsim_kernel::require_privileges();
    assert_agrees(&name, &scenario);
}

fn load(stem: &str) -> Scenario {
    Scenario::load(&scenario_dir().join(format!("{stem}.toml"))).expect("scenario")
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn the_real_vxlan_trace_shows_what_the_kernel_exposes() {
    skbsim_kernel::require_privileges();
    let s = load("vxlan-napi-timeout");
    let real = run_tap(&s).expect("real kernel");
    eprintln!("{}", real.trace);
    for part in [
        "\ndeliver 0: len 13604\n",
        "  gso: TCPV4 size 1350 segs 10\n",
        "  csum: CHECKSUM_PARTIAL start 84 offset 16\n",
        "  vxlan_dev: len 13554\n",
        "  layout: head 1454 (vnet hdr_len)\n",
        "totals: written 10 write_errors 0 delivered 1\n",
        "  tap: rx_packets 10 rx_bytes 14540\n",
        "  stack: packets 1 bytes 13604 segs 10\n",
        "  lengths: [13604]\n",
    ] {
        assert!(real.trace.contains(part), "{part:?} missing");
    }
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn bursts_share_one_napi_poll() {
    skbsim_kernel::require_privileges();
    // burst = 10, gro_flush_timeout 0: only a shared poll merges the ten writes.
    let real = run_tap(&load("tcp-data-same")).expect("real kernel");
    assert!(
        real.trace.contains("  lengths: [14054]\n"),
        "{}",
        real.trace
    );
    // burst = 1, gro_flush_timeout 0: ten polls, ten packets.
    let real = run_tap(&load("tcp-napi-no-timeout")).expect("real kernel");
    assert!(
        real.trace
            .contains("  stack: packets 10 bytes 14540 segs 10\n"),
        "{}",
        real.trace
    );
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn a_packet_socket_on_the_tap_keeps_the_vxlan_device_from_merging() {
    skbsim_kernel::require_privileges();
    // Four 1350-byte segments of one inner flow, outer IP IDs jumping: the tap's GRO
    // passes them up one by one (docs/gro.md#gro-cells). Nothing on the tap: the vxlan
    // device's gro_cells merges them, 54 + 4 * 1350 = 5454 bytes from the inner MAC.
    let real = run_tap(&load("cells-vxlan-outer-id")).expect("real kernel");
    for part in [
        "  dev: vxlan port 4789 vni 42\n",
        "  gso: TCPV4 size 1350 segs 4\n",
        "tunnel-totals: packets 1 bytes 5454 segs 4\n",
    ] {
        assert!(
            real.trace.contains(part),
            "{part:?} missing:\n{}",
            real.trace
        );
    }
    assert!(!real.trace.contains("\ndeliver "), "{}", real.trace);
    // An AF_PACKET socket on the tap clones each skb: netif_rx, four 1404-byte frames.
    let real = run_tap(&load("cells-vxlan-outer-id-af-packet")).expect("real kernel");
    assert!(
        real.trace.contains("  lengths: [1404, 1404, 1404, 1404]\n"),
        "{}",
        real.trace
    );
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn the_vxlan6_device_merges_one_inner_flow_under_alternating_outer_hop_limits() {
    skbsim_kernel::require_privileges();
    // VXLAN over IPv6, outer hop limit 64, 63, 64, 63: from 6.10 ipv6_gro_flush flushes
    // each at the tap (docs/gro.md#tunnels-over-ipv6); vxlan_rcv never looks at the hop
    // limit, so the IPv6 vxlan device's cell merges the four inner segments: 54 + 4 *
    // 1350 = 5454 bytes from the inner MAC.
    let real = run_tap(&load("cells-vxlan6-hop-limit")).expect("real kernel");
    for part in [
        "  dev: vxlan6 port 4789 vni 42\n",
        "  gso: TCPV4 size 1350 segs 4\n",
        "tunnel-totals: packets 1 bytes 5454 segs 4\n",
    ] {
        assert!(
            real.trace.contains(part),
            "{part:?} missing:\n{}",
            real.trace
        );
    }
    // With the tap's packet socket: four 14 + 40 + 8 + 8 + 1404 = 1474-byte frames on the
    // tap, each cloned, so the cell passes them up one by one.
    let real = run_tap(&load("cells-vxlan6-hop-limit-af-packet")).expect("real kernel");
    assert!(
        real.trace.contains("  lengths: [1474, 1474, 1474, 1474]\n"),
        "{}",
        real.trace
    );
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn a_wrong_model_is_caught_with_scenario_delivery_and_field() {
    let s = load("tcp-bad-csum-mid-burst");
    let sim = run_sim(&s, None).expect("sim");
    // A model that put the checksum of the merged skb one byte off.
    let wrong = common::with_wrong_field(
        &sim,
        "csum",
        "CHECKSUM_PARTIAL start 34",
        "CHECKSUM_PARTIAL start 35",
    );
    assert_ne!(
        wrong.trace, sim.trace,
        "the trace has a csum line to change"
    );
    let check = |real: &ScenarioOutput| {
        let m = compare_traces(&s.name, &wrong.records, &real.records)
            .expect("the csum change is caught");
        assert_eq!(m.scenario, "tap-gro/tcp-bad-csum-mid-burst");
        assert_eq!(m.read, "deliver 1");
        assert_eq!(m.field, "csum");
        assert_eq!(m.sim, "CHECKSUM_PARTIAL start 35 offset 16");
        assert_eq!(m.real, "CHECKSUM_PARTIAL start 34 offset 16");
    };
    // Against the right model's own trace (runs anywhere)...
    check(&sim);
    assert_eq!(compare_traces(&s.name, &sim.records, &sim.records), None);

    skbsim_kernel::require_privileges();
    // ...and against the real kernel, trace and pcap.
    let real = run_tap(&s).expect("real kernel");
    check(&real);
    assert_eq!(
        compare_scenario_outputs(&s, &sim, &real).expect("compare"),
        None
    );
    let m = compare_scenario_outputs(&s, &wrong, &real)
        .expect("compare")
        .expect("caught");
    assert_eq!(m.field, "csum");
    // A delivery order the model got wrong: the first two skbs swapped in the pcap.
    let frames: Vec<sim::pcap::Frame> = sim::pcap::PcapReader::from_reader(&sim.pcap[..], "sim")
        .expect("pcap")
        .collect::<Result<_, _>>()
        .expect("frames");
    let mut w = sim::pcap::PcapWriter::new(Vec::new(), sim::pcap::PcapFormat::Pcap).expect("w");
    for i in [1, 0, 2] {
        w.write_frame(frames[i].ts_ns, &frames[i].data)
            .expect("write");
    }
    let swapped = ScenarioOutput {
        trace: sim.trace.clone(),
        json: sim.json.clone(),
        pcap: w.finish().expect("finish"),
        frames: sim.frames,
        notes: Vec::new(),
        records: sim.records.clone(),
    };
    let m = compare_scenario_outputs(&s, &swapped, &real)
        .expect("compare")
        .expect("caught");
    assert_eq!(m.read, "pcap frame 0");
}

/// Host links and named namespaces.
fn host_state() -> (BTreeSet<String>, String) {
    let links = Command::new("ip")
        .args(["-o", "link"])
        .output()
        .expect("run ip -o link");
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

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn nothing_is_left_behind_on_the_host() {
    skbsim_kernel::require_privileges();
    let before = host_state();
    // Threaded NAPI, vxlan devices and addresses: all inside the run's namespace.
    for stem in ["tcp-64k", "vxlan-vni"] {
        let s = load(stem);
        assert!(
            matches!(conform_one(&s), Outcome::Agree { .. }),
            "{stem} should agree"
        );
    }
    assert_eq!(host_state(), before, "host links or namespaces changed");
}
