//! TUNSETFILTEREBPF in the tun-read pipeline (issue 22 item 2; docs/tun-read.md#steering):
//! drivers/net/tun.c: tun_net_xmit -> run_ebpf_filter, a return of 0 dropping the skb
//! with SKB_DROP_REASON_TAP_FILTER and tx_dropped, a return of at least skb->len keeping
//! it. The expected outcomes come from the frames (mq-flows.pcap: IPv4/TCP, IPv4/UDP,
//! IPv6/TCP, twice) and scenarios/sockfilter/sock_filter_udp4.c (IPv4/UDP 0, IPv6
//! 0xffffffff, the rest skb->len); `skbsim conform scenarios/tun-read/mq-filter-*.toml`
//! checks them against this host.

mod common;

use sim::pipeline::tun_read::Event;
use sim::pipeline::tun_read_trace::event_record;

/// Each event as its trace title (`xmit-drop (frame 1, ts ...): ...`), with the drop's
/// tx_dropped and each read's file.
fn titles(rel: &str) -> Vec<String> {
    let (s, events) = common::run(rel);
    events
        .iter()
        .map(|e| {
            let mut t = String::new();
            event_record(e, &s.device).title_into(&mut t);
            match e {
                Event::XmitDropped { stats, .. } => {
                    format!("{t} [tx_dropped {}]", stats.tx_dropped)
                }
                Event::Read(r) => format!("{t} [file {:?}]", r.queue),
                _ => t,
            }
        })
        .collect()
}

const FILTERED: &str = "TUNSETFILTEREBPF program returned 0";

/// `read N (frame F, ...)` of input frame `f` read whole from file `file`: the length is
/// the frame's in the pcap (no PI, no vnet header).
fn read(rel: &str, n: usize, f: usize, file: usize) -> String {
    let s = sim::scenario::Scenario::load(&common::path(rel)).expect("the scenario loads");
    let len = common::frames(&s)[f].2.len();
    format!("read {n} (frame {f}, ts 1.00000{f}000): buffer 65536 -> {len} [file Some({file})]")
}

fn dropped(f: usize, tx_dropped: u64) -> String {
    format!("xmit-drop (frame {f}, ts 1.00000{f}000): {FILTERED} [tx_dropped {tx_dropped}]")
}

#[test]
fn a_filter_drop_is_named_the_filters_not_a_full_ring() {
    let rel = "tun-read/mq-filter-one-queue.toml";
    // One queue, read at the end: the UDP frames 1 and 4 dropped as they are sent, the
    // other four read whole afterwards.
    assert_eq!(
        titles(rel),
        [
            dropped(1, 1),
            dropped(4, 2),
            read(rel, 0, 0, 0),
            read(rel, 1, 2, 0),
            read(rel, 2, 3, 0),
            read(rel, 3, 5, 0),
        ]
    );
}

#[test]
fn the_filter_runs_after_steering_picked_the_queue() {
    let rel = "tun-read/mq-filter-steer.toml";
    // sock_steer_proto.c puts the UDP frames on file 1; the filter drops them there.
    assert_eq!(
        titles(rel),
        [
            read(rel, 0, 0, 0),
            dropped(1, 1),
            read(rel, 1, 2, 2),
            read(rel, 2, 3, 0),
            dropped(4, 2),
            read(rel, 3, 5, 2),
        ]
    );
}
