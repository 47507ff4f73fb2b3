//! XDP on a multiqueue tap in the TunHost: the queue a program sees and the file XDP_TX
//! lands on. Expected values from drivers/net/tun.c and net/core/dev.c as cited; the
//! scenarios tap-write/mq-* check the same rules against the host kernel.

use super::*;
use crate::bpf::{assemble, BasicEnv, Maps};
use crate::profile::LINUX_6_18;
use crate::tun::ioctl::iff_flags::*;
use crate::tun::ioctl::IoctlArg;
use crate::tun::write::Fate;
use crate::xdp::{XdpAttachment, XdpMode};

const DEV: &[u8] = b"mq0";

/// XDP_TX for a frame that came in on queue 1, XDP_PASS for any other queue.
const TX_ON_QUEUE_1: &str = "
r0 = *(u32 *)(r1 + 16)
if r0 == 1 goto tx
r0 = 2
exit
tx:
r0 = 3
exit
";

/// A multiqueue tap with two files (queues 0 and 1), up, [`TX_ON_QUEUE_1`] attached.
fn mq_tap(mode: XdpMode) -> (TunHost, FileId, FileId) {
    mq_tap_with(mode, TX_ON_QUEUE_1)
}

/// A multiqueue tap with two files (queues 0 and 1), up, the program `asm` attached.
fn mq_tap_with(mode: XdpMode, asm: &str) -> (TunHost, FileId, FileId) {
    let mut h = TunHost::new(&LINUX_6_18, Caller::root());
    let mut name = [0u8; 16];
    name[..DEV.len()].copy_from_slice(DEV);
    let arg = IoctlArg::Ifreq {
        name,
        flags: IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE,
    };
    let f0 = h.open(true);
    h.ioctl(f0, cmd::TUNSETIFF, &arg).unwrap();
    let f1 = h.open(true);
    h.ioctl(f1, cmd::TUNSETIFF, &arg).unwrap();
    h.set_link(DEV, Some(true), None).unwrap();
    let mut prog = assemble("prog", asm).unwrap();
    let mut maps = Maps::new();
    prog.bind_maps(&mut maps).unwrap();
    h.attach_xdp(DEV, XdpAttachment::new(prog, mode, BasicEnv::new(maps)))
        .unwrap();
    (h, f0, f1)
}

fn detach(h: &mut TunHost, f: FileId) {
    let arg = IoctlArg::Ifreq {
        name: [0; 16],
        flags: IFF_DETACH_QUEUE,
    };
    h.ioctl(f, cmd::TUNSETQUEUE, &arg).unwrap();
}

/// Ethernet + IPv4 + UDP, 60 bytes.
fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 46, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[
        10, 0, 0, 1, 10, 0, 0, 2, 0x13, 0x88, 0x13, 0x89, 0, 26, 0, 0,
    ]);
    f.resize(60, 0xab);
    f
}

#[test]
fn a_native_program_sees_the_files_queue_and_xdp_tx_lands_on_the_cpus_queue() {
    // tun_build_skb: xdp_init_buff(&xdp, buflen, &tfile->xdp_rxq), whose queue_index is
    // the file's (tun_attach); tun_xdp_xmit: tfiles[smp_processor_id() % numqueues].
    let (mut h, f0, f1) = mq_tap(XdpMode::Native);
    let out = h.write_outcome(f1, &frame());
    assert_eq!(out.fate, Fate::XdpTx);
    assert_eq!(XDP_XMIT_CPU, 0);
    assert_eq!((h.queued(f0), h.queued(f1)), (1, 0));
    let out = h.write_outcome(f0, &frame());
    assert_eq!(out.fate, Fate::Stack);
    assert_eq!(h.take_fault(), None);
}

#[test]
fn a_generic_program_sees_the_recorded_rx_queue_and_xdp_tx_goes_through_tun_select_queue() {
    // tun_get_user: skb_record_rx_queue(skb, tfile->queue_index); netif_get_rxqueue
    // gives generic XDP that queue. generic_xdp_tx -> netdev_core_pick_tx ->
    // tun_automq_select_queue: no flow entry yet, so reciprocal_scale of the hash.
    let (mut h, f0, f1) = mq_tap(XdpMode::Generic);
    assert_eq!(h.write_outcome(f0, &frame()).fate, Fate::Stack);
    assert_eq!(h.write_outcome(f1, &frame()).fate, Fate::XdpTx);
    assert_eq!(h.queued(f0) + h.queued(f1), 1);
}

#[test]
fn a_detached_file_keeps_its_queue_natively_and_falls_back_to_queue_0_generically() {
    // __tun_detach leaves tfile->queue_index and its xdp_rxq as they were, so native XDP
    // still sees queue 1 on file 1 after its detach (and XDP_TX lands on the one queue
    // left); generic XDP gets netif_get_rxqueue's queue 0, since the recorded queue 1 is
    // not below real_num_rx_queues (1).
    let (mut h, f0, f1) = mq_tap(XdpMode::Native);
    detach(&mut h, f1);
    assert_eq!(h.rx_queue(f1), 1);
    assert_eq!(h.write_outcome(f1, &frame()).fate, Fate::XdpTx);
    assert_eq!((h.queued(f0), h.queued(f1)), (1, 0));

    let (mut h, _, f1) = mq_tap(XdpMode::Generic);
    detach(&mut h, f1);
    assert_eq!(h.write_outcome(f1, &frame()).fate, Fate::Stack);
}

#[test]
fn native_xdp_tx_with_no_queue_attached_is_enxio_and_rx_dropped() {
    // tun_xdp_xmit: !numqueues -> -ENXIO; tun_xdp_act counts rx_dropped (v6.8+) and
    // tun_build_skb returns NULL, so the write still returns its length.
    let (mut h, f0, f1) = mq_tap(XdpMode::Native);
    detach(&mut h, f1);
    detach(&mut h, f0);
    let before = h.stats(DEV).unwrap();
    let out = h.write_outcome(f1, &frame());
    assert_eq!(out.result, Ok(60));
    assert_eq!(out.fate, Fate::XdpError(Errno::ENXIO));
    let after = h.stats(DEV).unwrap();
    assert_eq!(after.rx_dropped, before.rx_dropped + 1);
    assert_eq!(after.rx_packets, before.rx_packets);
}

#[test]
fn a_write_the_core_xdpgeneric_program_sends_back_still_teaches_automq_its_flow() {
    // tun_get_user: rxhash = __skb_get_hash_symmetric(skb) (more than one queue, no
    // steering program, the file attached), the skb goes to netif_receive_skb, whose
    // do_xdp_generic sends it back (generic_xdp_tx -> tun_select_queue), and only then
    // "if (rxhash) tun_flow_update(tun, rxhash, tfile)": the flow is learned for the
    // writer's queue all the same. So the next XDP_TX of that flow, written on the other
    // file, goes to the first writer's queue: tun_automq_select_queue finds the entry.
    let (mut h, f0, f1) = mq_tap_with(XdpMode::Generic, "r0 = 3\nexit\n");
    let ifindex = h.device(DEV).unwrap().ifindex;
    assert_eq!(h.write_outcome(f1, &frame()).fate, Fate::XdpTx);
    assert_eq!(
        h.devs[&ifindex].flows.values().copied().collect::<Vec<_>>(),
        [1],
        "the flow is learned for file 1's queue"
    );
    let before = (h.queued(f0), h.queued(f1));
    assert_eq!(h.write_outcome(f0, &frame()).fate, Fate::XdpTx);
    assert_eq!((h.queued(f0), h.queued(f1)), (before.0, before.1 + 1));
}
