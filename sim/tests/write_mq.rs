//! The tap-write and vhost-tx pipelines with `[queues]` (docs/tap-write.md#multiqueue,
//! docs/vhost-tx.md#multiqueue): each packet's fate and where XDP_TX brought it back, as
//! drivers/net/tun.c gives them (checked against real kernels by `skbsim conform
//! scenarios/tap-write/mq-*.toml` here and `skbsim lab conform` for vhost-tx).

mod common;

use common::{drive_events, path};
use sim::pipeline::tap_write::{TapWriteRun, WriteEvent};
use sim::pipeline::vhost_tx::{VhostTxEvent, VhostTxRun};
use sim::scenario::Scenario;
use sim::tun::write::Fate;
use sim::vhost::VhostEvent;

/// One short line per write result, queue event and read of a tap-write run.
fn tap_write_shape(rel: &str) -> Vec<String> {
    let s = Scenario::load(&path(rel)).expect("the scenario loads");
    let mut run = TapWriteRun::new(&s).expect("the run starts");
    drive_events(&s, &mut run)
        .iter()
        .filter_map(|e| match e {
            WriteEvent::Write(w) => {
                Some(format!("write {} on {:?}: {:?}", w.frame, w.file, w.result))
            }
            WriteEvent::Read { record, .. } => {
                Some(format!("read on {:?}: {:?}", record.queue, record.result))
            }
            WriteEvent::Queue { file, op, .. } => Some(format!("{} {file}", op.name())),
            WriteEvent::Stack { .. } => None,
        })
        .collect()
}

#[test]
fn xdp_tx_from_queue_1_comes_back_on_cpu_0s_queue() {
    // xdp_rxq.s: queue 1 -> XDP_TX; tun_xdp_xmit: tfiles[0 % 2] = file 0.
    let got = tap_write_shape("tap-write/mq-xdp-rxq-native.toml");
    assert_eq!(
        got,
        [
            "write 0 on Some(0): Ok(154)",
            "write 1 on Some(1): Ok(62)",
            "read on Some(0): Ok(62)",
            "write 2 on Some(0): Ok(134)",
            "write 3 on Some(1): Ok(54)",
            "read on Some(0): Ok(54)",
            "write 4 on Some(0): Ok(72)",
            "write 5 on Some(1): Ok(74)",
            "read on Some(0): Ok(74)",
        ]
    );
}

#[test]
fn a_detached_iff_napi_file_is_ebusy_until_attached_again() {
    let got = tap_write_shape("tap-write/mq-napi-detached-write.toml");
    let ebusy = |i| format!("write {i} on Some(1): Err(EBUSY)");
    assert_eq!(got[2], "detach 1");
    assert_eq!(got[3..5], [ebusy(2), ebusy(3)]);
    assert_eq!(got[5], "attach 1");
    assert_eq!(got[6], "write 4 on Some(1): Ok(72)");
}

#[test]
fn vhost_queues_kick_in_order_and_a_detached_napi_queue_loses_packets() {
    let s = Scenario::load(&path("vhost-tx/mq-napi-detached.toml")).expect("loads");
    let mut run = VhostTxRun::new(&s).expect("the run starts");
    let mut kicks = Vec::new();
    let mut lost = Vec::new();
    for e in drive_events(&s, &mut run) {
        match e {
            VhostTxEvent::Worker(VhostEvent::Kick { queue, .. }) => kicks.push(queue),
            VhostTxEvent::Worker(VhostEvent::Packet(p)) if p.fate != Fate::Stack => {
                lost.push((p.packet, p.fate))
            }
            _ => {}
        }
    }
    // Trickle: one kick per packet, all on queue 1.
    assert_eq!(kicks, [Some(1); 6]);
    // tun_xdp_one on the detached IFF_NAPI file frees packets 2 and 3 (-EBUSY, which
    // tun_sendmsg drops: the batch's sendmsg still returns 0).
    let gone = Fate::Dropped("IFF_NAPI file detached: NAPI disabled");
    assert_eq!(lost, [(2, gone.clone()), (3, gone)]);
    let (a, _) = run.host().dut_stats();
    assert_eq!(a.rx_packets, 4);
}
