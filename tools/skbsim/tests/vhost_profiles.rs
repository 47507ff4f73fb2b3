//! The vhost_net batching change (v4.20) against the per-packet path (4.19): on the same
//! guest traffic the two profiles must differ only in how packets were grouped (batch
//! boundaries, sendmsg and flush counts), never in verdicts, bytes or counters.

use std::path::{Path, PathBuf};

use sim::scenario::Scenario;
use sim::trace::diff::first_divergence;
use sim::trace::record::Seen;
use sim::trace::record_diff::{first_flat_divergence, observed, Flat};
use skbsim::runner::run_sim;

fn scenario(name: &str) -> Scenario {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/vhost-tx")
        .join(format!("{name}.toml"));
    Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"))
}

fn trace(name: &str) -> String {
    run_sim(&scenario(name), None)
        .unwrap_or_else(|e| panic!("{e}"))
        .trace
}

/// What the guest and the host see of `name`'s run (the records a real arm observes:
/// the kicks, the used-ring returns summed per kick, the host's events and counters;
/// not the worker's batches, requeues and op counts, which are the model's), the header
/// fields naming the scenario and its profile set aside: they differ by construction.
fn seen(name: &str) -> Vec<Flat> {
    let out = run_sim(&scenario(name), None).unwrap_or_else(|e| panic!("{e}"));
    let mut flats = observed(&out.records);
    for f in ["scenario", "description", "profile"] {
        if let Some((_, mark)) = flats[0].field_mut(f) {
            *mark = Seen::Label;
        }
    }
    flats
}

#[test]
fn batching_changes_grouping_only() {
    for v in ["drop", "tx", "pass", "redirect"] {
        assert_eq!(
            first_flat_divergence(
                &seen(&format!("xdp-{v}-linux-4.20")),
                &seen(&format!("xdp-{v}-linux-4.19"))
            ),
            None,
            "xdp-{v}: the profiles differ beyond grouping"
        );
        let batched = trace(&format!("xdp-{v}-linux-4.20"));
        let single = trace(&format!("xdp-{v}-linux-4.19"));
        // Without the grouping fields ignored, they do differ: batches exist only in 4.20.
        let d = first_divergence(&batched, &single, &["scenario", "description", "profile"])
            .expect("the grouping must differ");
        assert!(d.event.starts_with("batch"), "{d}");
    }
}

#[test]
fn the_same_series_lost_the_rx_dropped_of_a_failed_redirect() {
    // 8ae1aff0b331 "tuntap: split out XDP logic" (v4.20, the batching series) moved the
    // verdicts into tun_xdp_act, which counted no rx_dropped for a failed XDP_REDIRECT
    // until 6.8; 4.19's tun_build_skb counted it at err_redirect. The frame over the
    // target's MTU (EMSGSIZE) is that failure: the one difference beyond grouping.
    let batched = seen("xdp-redirect-mtu-linux-4.20");
    let single = seen("xdp-redirect-mtu-linux-4.19");
    let d = first_flat_divergence(&batched, &single).expect("rx_dropped differs");
    assert_eq!(
        (d.event.as_str(), d.field.as_str()),
        ("totals:", "counters A"),
        "{d}"
    );
    assert!(
        d.left.ends_with("rx_dropped 0") && d.right.ends_with("rx_dropped 1"),
        "{d}"
    );
    assert_eq!(
        d.left.replace("rx_dropped 0", "rx_dropped 1"),
        d.right,
        "only rx_dropped moves"
    );
}

#[test]
fn batching_does_less_work_per_packet() {
    // 300 packets: 5 batched sendmsgs (64+64+64+64+44, the worker requeued at 256)
    // against 300 single ones; used-ring updates are batched in both.
    let batched = trace("xdp-drop-linux-4.20");
    let single = trace("xdp-drop-linux-4.19");
    assert!(
        batched.contains("ops: sendmsg batched 5 single 0,"),
        "{batched}"
    );
    assert!(
        single.contains("ops: sendmsg batched 0 single 300,"),
        "{single}"
    );
    for t in [&batched, &single] {
        assert!(t.contains("used updates 5, signals 5, requeues 1"), "{t}");
    }
}

#[test]
fn xdp_metadata_in_a_batch_only_from_v6_15() {
    // bpf_xdp_adjust_meta(-4) then PASS, or DROP when it fails. tun_xdp_one keeps the
    // metadata support vhost_net prepared only since c2315ebb0588 (v6.15); 6.1 (seen in
    // the lab's guest) and 4.20 mark it invalid: -ENOTSUPP, every packet dropped.
    let mut s = scenario("xdp-meta-batched");
    let t = run_sim(&s, None).unwrap().trace;
    assert_eq!(t.matches("xdp: native XDP_PASS").count(), 63, "{t}");
    assert_eq!(t.matches("xdp: native XDP_DROP").count(), 0, "{t}");
    for p in [sim::profile::LINUX_6_1, sim::profile::LINUX_4_20] {
        s.profile = p;
        let t = run_sim(&s, None).unwrap().trace;
        assert_eq!(
            t.matches("xdp: native XDP_DROP").count(),
            63,
            "{}: {t}",
            p.name
        );
        assert_eq!(
            t.matches("xdp: native XDP_PASS").count(),
            0,
            "{}: {t}",
            p.name
        );
    }
}
