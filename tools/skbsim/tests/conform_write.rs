//! The simulator against the real kernel on the write path (root only; without root every
//! test prints `skipped: <reason>`, and in CI, which runs as root, fails). One test per
//! scenario file in scenarios/tap-write, named by the file: the trace without the fields
//! only the model knows (marked so in its records) and the pcap of what the stack
//! received must be the same. `sim_only` scenarios only need a reason.
//! Plus: a wrong model is caught with the scenario, event and field.

mod common;
use common::{assert_agrees, stem};

use std::path::{Path, PathBuf};

use rstest::rstest;
use sim::scenario::Scenario;
use sim::trace::record::Seen;
use skbsim::conform::{compare_scenario_outputs, conform_one, Outcome};
use skbsim::runner::{run_sim, run_tap, ScenarioOutput};

fn scenario(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/tap-write")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[rstest]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn sim_and_real_agree(#[files("../../scenarios/tap-write/*.toml")] path: PathBuf) {
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

fn outputs(s: &Scenario) -> (ScenarioOutput, ScenarioOutput) {
    let sim = run_sim(s, None).unwrap_or_else(|e| panic!("{e}"));
    let real = run_tap(s).unwrap_or_else(|e| panic!("{e}"));
    (sim, real)
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn model_only_fields_are_what_the_real_trace_lacks() {
    skbsim_kernel::require_privileges();
    let s = scenario("xdp-count-native");
    let (sim, real) = outputs(&s);
    // Marked the model's in the simulator's records, absent from the real arm's.
    for f in ["path", "fate"] {
        let marks = |o: &ScenarioOutput| -> Vec<Seen> {
            o.records
                .iter()
                .flat_map(|r| r.fields.iter())
                .filter(|x| x.name == f)
                .map(|x| x.seen)
                .collect()
        };
        let m = marks(&sim);
        assert!(
            !m.is_empty() && m.iter().all(|s| *s == Seen::ModelOnly),
            "{f}: {m:?}"
        );
        assert!(marks(&real).is_empty(), "{f} in the real records");
    }
    // The model's lines are in the simulator's trace only; counters and bytes in both.
    for line in ["  path: build_skb", "  fate: dropped by XDP"] {
        assert!(sim.trace.contains(line), "{line:?} in the sim trace");
        assert!(!real.trace.contains(line), "{line:?} not in the real trace");
    }
    for line in [
        "write 1 (frame 1, ts 1.000001000): 60 bytes nonblocking -> 60",
        "  counters A: tx_packets 0 tx_bytes 0 tx_dropped 0 rx_packets 1 rx_bytes 154 rx_dropped 1",
        "  map verdicts[3]: 2",
    ] {
        assert!(real.trace.contains(line), "{line:?} in the real trace");
    }
    assert_eq!(
        compare_scenario_outputs(&s, &sim, &real).expect("compare"),
        None
    );
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn a_wrong_model_is_caught_with_the_event_and_field() {
    skbsim_kernel::require_privileges();
    let s = scenario("xdp-count-native");
    let (mut sim, real) = outputs(&s);
    // A model that counts XDP_DROP natively as nothing at all (as the fallback does).
    let right = "rx_packets 1 rx_bytes 154 rx_dropped 1";
    assert!(
        sim.trace.contains(right),
        "the golden behaviour is in the sim trace"
    );
    sim.trace = sim
        .trace
        .replacen(right, "rx_packets 1 rx_bytes 154 rx_dropped 0", 1);
    // conform compares the records: the same wrong counter there.
    let write1 = sim
        .records
        .iter_mut()
        .find(|r| r.kind == "write" && r.index == Some(1))
        .expect("write 1");
    let counters = write1
        .fields
        .iter_mut()
        .find(|f| f.name == "counters A")
        .expect("counters A");
    let mut text = String::new();
    counters.value.text_into(&mut text);
    counters.value = sim::trace::record::Value::text(text.replacen(
        right,
        "rx_packets 1 rx_bytes 154 rx_dropped 0",
        1,
    ));
    let m = compare_scenario_outputs(&s, &sim, &real)
        .expect("compare")
        .expect("the wrong counter is caught");
    assert_eq!(m.scenario, "tap-write/xdp-count-native");
    assert_eq!(m.read, "write 1 (frame 1, ts 1.000001000)");
    assert_eq!(m.field, "counters A");
    assert!(
        m.sim.ends_with("rx_dropped 0") && m.real.ends_with("rx_dropped 1"),
        "{m}"
    );

    // A model that lets the dropped frame reach the stack: an extra event.
    let (sim, real) = outputs(&scenario("xdp-drop-tcp80-native"));
    let mut wrong = sim;
    let pass = run_sim(&scenario("xdp-pass-native"), None).expect("sim");
    wrong.trace = pass
        .trace
        .replace("xdp-pass-native", "xdp-drop-tcp80-native");
    wrong.records = pass.records;
    let m = compare_scenario_outputs(&scenario("xdp-drop-tcp80-native"), &wrong, &real)
        .expect("compare")
        .expect("the extra delivery is caught");
    assert!(
        m.read == "header" || m.read.starts_with("write ") || m.read.starts_with("stack "),
        "{m}"
    );
}

/// A scenario that exists only in this test, parsed as if it were
/// `scenarios/tap-write/<name>.toml` (its paths resolve from there).
fn inline(name: &str, body: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/tap-write")
        .join(format!("{name}.toml"));
    let text = format!(
        "description = \"inline\"\ninput = \"../pcaps/xdp-mixed.pcap\"\npipeline = \"tap-write\"\n{body}\n[reader]\nbuffers = [4096]\n"
    );
    Scenario::parse(&path, &text).unwrap_or_else(|e| panic!("{e}"))
}

/// Device options the arm supports but no scenario file uses yet (TUNSETSNDBUF, IFF_NAPI,
/// IFF_NAPI_FRAGS, B's mtu and txqueuelen, a devmap with no B): sim and real agree.
#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn device_options_without_a_scenario_file_agree() {
    skbsim_kernel::require_privileges();
    let native = |prog: &str| format!("[xdp]\nprogram = \"../xdp/{prog}.o\"\nmode = \"native\"\n");
    let cases = [
        (
            "inline-sndbuf-drop",
            format!(
                "[device]\nno_pi = true\nsndbuf = true\n[writer]\nnonblocking = true\n{}",
                native("xdp_drop")
            ),
        ),
        (
            "inline-sndbuf-tx-pi",
            format!(
                "[device]\nno_pi = false\nsndbuf = true\n[writer]\nnonblocking = true\n{}",
                native("xdp_tx")
            ),
        ),
        (
            "inline-napi",
            "[device]\nno_pi = true\nnapi = true\n[writer]\nnonblocking = true\n".to_string(),
        ),
        (
            "inline-napi-frags-count",
            format!(
                "[device]\nno_pi = true\nnapi = true\nnapi_frags = true\n[writer]\nnonblocking = true\n{}",
                native("xdp_count")
            ),
        ),
        (
            "inline-redirect-small-mtu",
            format!(
                "[device]\nno_pi = true\n[writer]\nnonblocking = true\n{}[redirect]\nno_pi = true\nmtu = 68\n",
                native("xdp_redirect")
            ),
        ),
        (
            "inline-redirect-txq1-vnet",
            format!(
                "[device]\nno_pi = true\n[writer]\nnonblocking = true\n{}[redirect]\nno_pi = false\nvnet_hdr = true\nvnet_hdr_sz = 12\ntx_queue_len = 1\n",
                native("xdp_redirect")
            ),
        ),
        (
            "inline-redirect-no-target",
            format!(
                "[device]\nno_pi = true\n[writer]\nnonblocking = true\n{}",
                native("xdp_redirect")
            ),
        ),
        (
            "inline-down-native-tx",
            format!(
                "[device]\nno_pi = true\nup = false\n[writer]\nnonblocking = true\n{}",
                native("xdp_tx")
            ),
        ),
    ];
    let mut bad = Vec::new();
    for (name, body) in &cases {
        match conform_one(&inline(name, body)) {
            Outcome::Agree { frames, reads, .. } => {
                eprintln!("{name}: agree ({frames} frames, {reads} reads)")
            }
            other => bad.push(format!("{name}: {other:?}")),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
