//! The real tun-read arm with a TUNSETFILTEREBPF program (docs/tun-read.md#steering):
//! this host's tun_net_xmit drops what scenarios/sockfilter/sock_filter_udp4.c returns 0
//! for (the IPv4/UDP frames 1 and 4 of mq-flows.pcap) and counts tx_dropped; the arm,
//! which sees the rise but not the reason, names it SKB_DROP_REASON_TAP_FILTER because a
//! filter is attached and no ring is full; with a ring full too it names none.

use std::path::Path;

use sim::pipeline::tun_read::Event;
use sim::scenario::Scenario;
use sim::tun::XmitDrop;
use skbsim_kernel::arm::tun_read::run_tun_read;

fn load(rel: &str) -> Scenario {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel);
    Scenario::load(&p).expect("the scenario loads")
}

/// (frame, reason) of each drop, and the frames read.
fn drops_and_reads(s: &Scenario) -> (Vec<(u64, Option<XmitDrop>)>, Vec<u64>) {
    let real = run_tun_read(s).expect("the arm runs");
    let mut drops = Vec::new();
    let mut reads = Vec::new();
    for e in &real.events {
        match e {
            Event::XmitDropped { frame, reason, .. } => drops.push((*frame, *reason)),
            Event::Read(r) => reads.extend(r.frame.map(|(i, _)| i)),
            _ => {}
        }
    }
    assert_eq!(
        real.stats.tx_dropped,
        drops.len() as u64,
        "notes: {:?}",
        real.notes
    );
    (drops, reads)
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn the_filter_drops_ipv4_udp_and_the_arm_names_the_filter() {
    skbsim_kernel::require_privileges();
    let filtered = Some(XmitDrop::TapFilter);
    for rel in [
        "tun-read/mq-filter-one-queue.toml",
        "tun-read/mq-filter-steer.toml",
    ] {
        let (drops, reads) = drops_and_reads(&load(rel));
        assert_eq!(drops, [(1, filtered), (4, filtered)], "{rel}");
        assert_eq!(reads, [0, 2, 3, 5], "{rel}");
    }
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn with_a_full_ring_and_a_filter_the_arm_names_no_reason() {
    skbsim_kernel::require_privileges();
    // A 2-entry ring read at the end: frames 0 and 2 fill it, 1 is the filter's; from
    // frame 3 on either the filter or the full ring may have dropped each.
    let mut s = load("tun-read/mq-filter-one-queue.toml");
    s.device.tx_queue_len = 2;
    let (drops, reads) = drops_and_reads(&s);
    let filtered = Some(XmitDrop::TapFilter);
    assert_eq!(drops, [(1, filtered), (3, None), (4, None), (5, None)]);
    assert_eq!(reads, [0, 2]);
}
