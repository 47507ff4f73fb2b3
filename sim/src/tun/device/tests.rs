//! The device's file semantics, rule by rule; expected values from drivers/net/tun.c
//! as cited on each test.

use super::*;
use crate::profile::LINUX_6_18;
use crate::tun::ioctl::iff_flags::*;
use crate::tun::ioctl::IoctlArg;

fn ifreq(name: &str, flags: u16) -> IoctlArg {
    let mut n = [0u8; 16];
    n[..name.len()].copy_from_slice(name.as_bytes());
    IoctlArg::Ifreq { name: n, flags }
}

fn host() -> TunHost {
    TunHost::new(&LINUX_6_18, Caller::root())
}

/// open + TUNSETIFF.
fn attach(h: &mut TunHost, name: &str, flags: u16) -> FileId {
    let f = h.open(true);
    h.ioctl(f, cmd::TUNSETIFF, &ifreq(name, flags)).unwrap();
    f
}

const MQ_TAP: u16 = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE;

/// Ethernet + IPv4 + UDP from 10.0.0.`a`:`sport` to 10.0.0.`b`:`dport`, 8 payload bytes.
fn udp(a: u8, b: u8, sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, b, 2, 0, 0, 0, 0, a, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 36, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, a, 10, 0, 0, b]);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 16, 0, 0]);
    f.extend_from_slice(b"payload!");
    f
}

fn skb(frame: &[u8]) -> SkBuff {
    let mut s = SkBuff::from_frame(frame, 64, frame.len());
    s.protocol = 0x0800;
    s.set_network_header(14);
    s
}

fn tx_dropped(h: &TunHost, name: &[u8]) -> u64 {
    h.stats(name).unwrap().tx_dropped
}

#[test]
fn a_file_without_a_device_reads_ebadfd_and_polls_epollerr() {
    // tun_chr_read_iter / tun_chr_write_iter: !tun -> -EBADFD; tun_chr_poll: EPOLLERR.
    let mut h = host();
    let f = h.open(true);
    assert_eq!(h.read(f, 100), Err(Errno::EBADFD));
    assert_eq!(h.write(f, &[0; 60]), Err(Errno::EBADFD));
    assert_eq!(h.poll(f).bits(), 0x008);
}

#[test]
fn an_empty_queue_reads_eagain_and_a_blocking_file_would_block() {
    // tun_ring_recv: noblock -> -EAGAIN; blocking: sleeps (the model: EAGAIN + would_block).
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    assert_eq!(h.read(f, 1500), Err(Errno::EAGAIN));
    assert!(!h.would_block(f));
    h.set_nonblock(f, false);
    assert_eq!(h.read(f, 1500), Err(Errno::EAGAIN));
    assert!(h.would_block(f));
}

#[test]
fn an_empty_buffer_reads_0_and_leaves_the_frame_queued() {
    // tun_do_read: !iov_iter_count(to) returns 0 before ptr_ring_consume.
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    h.set_link(b"tap0", Some(true), None).unwrap();
    assert_eq!(
        h.xmit(b"tap0", skb(&udp(1, 2, 1, 2))),
        XmitFate::Queued { queue: 0 }
    );
    assert_eq!(h.read(f, 0), Ok(Vec::new()));
    assert_eq!(h.queued(f), 1);
}

#[test]
fn a_short_buffer_gets_what_fits_and_the_frame_is_consumed() {
    // tun_chr_read_iter: min(total, len); the skb is consumed whole.
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    h.set_link(b"tap0", Some(true), None).unwrap();
    let frame = udp(1, 2, 1, 2);
    h.xmit(b"tap0", skb(&frame));
    assert_eq!(h.read(f, 20), Ok(frame[..20].to_vec()));
    assert_eq!(h.read(f, 1500), Err(Errno::EAGAIN));
}

#[test]
fn with_pi_a_short_buffer_sets_tun_pkt_strip() {
    // tun_put_user: iov_iter_count < total -> pi.flags |= TUN_PKT_STRIP (0x0001, host
    // order), proto = skb->protocol (big-endian).
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP);
    h.set_link(b"tap0", Some(true), None).unwrap();
    let frame = udp(1, 2, 1, 2);
    h.xmit(b"tap0", skb(&frame));
    h.xmit(b"tap0", skb(&frame));
    let short = h.read(f, 10).unwrap();
    assert_eq!(short[..4], [0x01, 0x00, 0x08, 0x00]);
    assert_eq!(short.len(), 10);
    let full = h.read(f, 4 + frame.len()).unwrap();
    assert_eq!(full[..4], [0x00, 0x00, 0x08, 0x00]);
    assert_eq!(full[4..], frame[..]);
}

#[test]
fn poll_reports_in_out_and_down() {
    // tun_chr_poll: EPOLLIN|EPOLLRDNORM with a ring entry; EPOLLOUT|EPOLLWRNORM when
    // tun_sock_writeable: IFF_UP and sock_writeable.
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    assert_eq!(h.poll(f).bits(), 0, "down: not writable");
    h.set_link(b"tap0", Some(true), None).unwrap();
    assert_eq!(h.poll(f).bits(), 0x004 | 0x100);
    h.xmit(b"tap0", skb(&udp(1, 2, 1, 2)));
    assert_eq!(h.poll(f).bits(), 0x001 | 0x040 | 0x004 | 0x100);
}

#[test]
fn a_tiny_sndbuf_is_never_writable() {
    // sock_writeable: sk_wmem_alloc (1: sk_alloc's own reference) < sk_sndbuf >> 1, and
    // TUNSETSNDBUF sets sk_sndbuf as given (tun_set_sndbuf): 3 -> 1 < 1 false; 4 -> true.
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    h.set_link(b"tap0", Some(true), None).unwrap();
    h.ioctl(f, cmd::TUNSETSNDBUF, &IoctlArg::Int(3)).unwrap();
    assert!(!h.poll(f).writable);
    h.ioctl(f, cmd::TUNSETSNDBUF, &IoctlArg::Int(4)).unwrap();
    assert!(h.poll(f).writable);
}

#[test]
fn a_write_reaches_the_stack_and_a_down_device_refuses_it() {
    // tun_get_user: !(dev->flags & IFF_UP) -> -EIO; else the skb goes to the stack.
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    let frame = udp(1, 2, 1, 2);
    assert_eq!(h.write(f, &frame), Err(Errno::EIO));
    assert!(h.take_received().is_empty());
    h.set_link(b"tap0", Some(true), None).unwrap();
    assert_eq!(h.write(f, &frame), Ok(frame.len()));
    let got = h.take_received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, b"tap0".to_vec());
    assert_eq!(got[0].1.protocol, 0x0800);
    assert_eq!(got[0].1.len(), frame.len());
    assert_eq!(h.stats(b"tap0").unwrap().rx_packets, 1);
}

#[test]
fn the_last_queue_of_a_detached_device_leaves_queue_indexes_as_tun_does() {
    // __tun_detach: tfiles[index] = tfiles[numqueues - 1]: the last queue takes the index.
    let mut h = host();
    let f0 = attach(&mut h, "mq0", MQ_TAP);
    let f1 = attach(&mut h, "mq0", MQ_TAP);
    let f2 = attach(&mut h, "mq0", MQ_TAP);
    h.ioctl(f0, cmd::TUNSETQUEUE, &ifreq("", IFF_DETACH_QUEUE))
        .unwrap();
    assert_eq!(h.device(b"mq0").unwrap().queues, vec![f2, f1]);
    assert_eq!((h.queue_index(f2), h.queue_index(f1)), (Some(0), Some(1)));
    assert_eq!(h.queue_index(f0), None);
}

#[test]
fn frames_on_a_queue_that_detaches_are_purged() {
    // __tun_detach -> tun_queue_purge(tfile).
    let mut h = host();
    let f0 = attach(&mut h, "mq0", MQ_TAP);
    h.set_link(b"mq0", Some(true), None).unwrap();
    h.xmit(b"mq0", skb(&udp(1, 2, 1, 2)));
    assert_eq!(h.queued(f0), 1);
    h.ioctl(f0, cmd::TUNSETQUEUE, &ifreq("", IFF_DETACH_QUEUE))
        .unwrap();
    assert_eq!(h.queued(f0), 0);
    // The detached file keeps its device (tfile->tun): reads EAGAIN, not EBADFD.
    assert_eq!(h.read(f0, 1500), Err(Errno::EAGAIN));
    // No queue left: tun_net_xmit finds tfiles[0] NULL, drops and counts tx_dropped.
    assert_eq!(
        h.xmit(b"mq0", skb(&udp(1, 2, 1, 2))),
        XmitFate::Dropped {
            queue: 0,
            reason: XmitDrop::DevReady
        }
    );
    assert_eq!(tx_dropped(&h, b"mq0"), 1);
}

#[test]
fn a_written_flow_steers_its_replies_to_the_writers_queue() {
    // tun_get_user: rxhash with > 1 queue, then tun_flow_update(rxhash, tfile);
    // tun_automq_select_queue: the flow entry's queue_index. The hash is symmetric, so
    // the reply (ports and addresses swapped) finds the entry.
    let mut h = host();
    let files: Vec<FileId> = (0..4).map(|_| attach(&mut h, "mq0", MQ_TAP)).collect();
    h.set_link(b"mq0", Some(true), None).unwrap();
    for (i, &f) in files.iter().enumerate() {
        let port = 1000 + i as u16;
        h.write(f, &udp(1, 2, port, 53)).unwrap();
        assert_eq!(
            h.xmit(b"mq0", skb(&udp(2, 1, 53, port))),
            XmitFate::Queued { queue: i as u16 }
        );
        assert_eq!(h.queued(f), 1);
    }
}

#[test]
fn without_an_entry_automq_scales_the_hash_and_one_queue_skips_selection() {
    // reciprocal_scale(hash, numqueues) = (hash * numqueues) >> 32; with
    // real_num_tx_queues == 1 netdev_core_pick_tx never calls ndo_select_queue.
    let mut h = host();
    let f0 = attach(&mut h, "mq0", MQ_TAP);
    h.set_link(b"mq0", Some(true), None).unwrap();
    let frame = udp(7, 8, 4242, 80);
    assert_eq!(h.xmit(b"mq0", skb(&frame)), XmitFate::Queued { queue: 0 });
    let _f1 = attach(&mut h, "mq0", MQ_TAP);
    let hash = flow_hash::hash_symmetric(&frame, 14, 0x0800, HASHRND);
    let want = ((u64::from(hash) * 2) >> 32) as u16;
    assert_eq!(
        h.xmit(b"mq0", skb(&frame)),
        XmitFate::Queued { queue: want }
    );
    assert_eq!(h.queued(f0), 1 + usize::from(want == 0));
}

#[test]
fn a_detach_leaves_the_moved_queues_flows_at_its_old_index() {
    // __tun_detach calls tun_flow_delete_by_queue(tun, tun->numqueues + 1) after the
    // decrement: entries of the queue that moved keep its old index, which is now past
    // the last queue; netdev_cap_txqueue sends such an skb to queue 0.
    let mut h = host();
    let f0 = attach(&mut h, "mq0", MQ_TAP);
    let f1 = attach(&mut h, "mq0", MQ_TAP);
    let f2 = attach(&mut h, "mq0", MQ_TAP);
    h.set_link(b"mq0", Some(true), None).unwrap();
    h.write(f2, &udp(1, 2, 5000, 53)).unwrap();
    h.ioctl(f1, cmd::TUNSETQUEUE, &ifreq("", IFF_DETACH_QUEUE))
        .unwrap();
    assert_eq!(h.queue_index(f2), Some(1));
    assert_eq!(
        h.xmit(b"mq0", skb(&udp(2, 1, 53, 5000))),
        XmitFate::Queued { queue: 0 }
    );
    assert_eq!((h.queued(f0), h.queued(f2)), (1, 0));
}

#[test]
fn a_full_ring_drops_the_next_skb() {
    // tun_net_xmit: ptr_ring_produce fails past dev->tx_queue_len (TUN_READQ_SIZE, 500).
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    h.set_link(b"tap0", Some(true), None).unwrap();
    for _ in 0..500 {
        assert_eq!(
            h.xmit(b"tap0", skb(&udp(1, 2, 1, 2))),
            XmitFate::Queued { queue: 0 }
        );
    }
    let fate = h.xmit(b"tap0", skb(&udp(1, 2, 1, 2)));
    assert_eq!(
        fate,
        XmitFate::Dropped {
            queue: 0,
            reason: XmitDrop::FullRing
        }
    );
    assert_eq!((h.queued(f), tx_dropped(&h, b"tap0")), (500, 1));
}

#[test]
fn a_down_device_and_an_unknown_name_never_reach_tun() {
    let mut h = host();
    attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    assert_eq!(h.xmit(b"tap0", skb(&udp(1, 2, 1, 2))), XmitFate::DeviceDown);
    assert_eq!(h.xmit(b"nope", skb(&udp(1, 2, 1, 2))), XmitFate::NoDevice);
    assert_eq!(tx_dropped(&h, b"tap0"), 0);
}

#[test]
fn the_last_close_unregisters_unless_persistent() {
    // __tun_detach(clean): numqueues == 0 && numdisabled == 0 && !IFF_PERSIST ->
    // unregister_netdevice.
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    h.close(f);
    assert!(h.device(b"tap0").is_none());
    let f = attach(&mut h, "tap1", IFF_TAP | IFF_NO_PI);
    h.ioctl(f, cmd::TUNSETPERSIST, &IoctlArg::Value(1)).unwrap();
    h.close(f);
    assert!(h.device(b"tap1").is_some());
    let g = attach(&mut h, "tap1", IFF_TAP | IFF_NO_PI);
    h.set_link(b"tap1", Some(true), None).unwrap();
    assert_eq!(
        h.xmit(b"tap1", skb(&udp(1, 2, 1, 2))),
        XmitFate::Queued { queue: 0 }
    );
    assert_eq!(h.queued(g), 1);
}

#[test]
fn deleting_the_link_leaves_every_file_without_a_device() {
    // tun_detach_all: tfile->tun = NULL for queues and detached files.
    let mut h = host();
    let f0 = attach(&mut h, "mq0", MQ_TAP);
    let f1 = attach(&mut h, "mq0", MQ_TAP);
    h.ioctl(f1, cmd::TUNSETQUEUE, &ifreq("", IFF_DETACH_QUEUE))
        .unwrap();
    h.del_link(b"mq0").unwrap();
    for f in [f0, f1] {
        assert_eq!(h.read(f, 100), Err(Errno::EBADFD));
        assert!(h.poll(f).error);
    }
    assert_eq!(h.del_link(b"mq0"), Err(Errno::ENODEV));
}

#[test]
fn mtu_limits_are_tun_net_initializes() {
    // min_mtu = MIN_MTU (68), max_mtu = MAX_MTU (65535) - hard_header_len.
    let mut h = host();
    attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    attach(&mut h, "tun0", IFF_TUN | IFF_NO_PI);
    assert_eq!(h.set_link(b"tap0", None, Some(67)), Err(Errno::EINVAL));
    assert_eq!(h.set_link(b"tap0", None, Some(65522)), Err(Errno::EINVAL));
    assert_eq!(h.set_link(b"tap0", None, Some(65521)), Ok(()));
    assert_eq!(h.set_link(b"tun0", None, Some(65535)), Ok(()));
    assert_eq!(h.mtu(b"tun0"), Some(65535));
    assert_eq!(h.set_link(b"nope", None, Some(1500)), Err(Errno::ENODEV));
}

#[test]
fn a_steering_program_picks_its_return_modulo_the_queues() {
    // tun_ebpf_select_queue: bpf_prog_run_clear_cb(...) % numqueues.
    let mut h = host();
    let f0 = attach(&mut h, "mq0", MQ_TAP);
    let f1 = attach(&mut h, "mq0", MQ_TAP);
    h.set_link(b"mq0", Some(true), None).unwrap();
    let prog = IoctlArg::BpfFd(crate::tun::ioctl::BpfFd::Prog {
        socket_filter: true,
    });
    h.ioctl(f0, cmd::TUNSETSTEERINGEBPF, &prog).unwrap();
    assert!(matches!(
        h.xmit(b"mq0", skb(&udp(1, 2, 1, 2))),
        XmitFate::Unmodelled(_)
    ));
    h.set_steering(b"mq0", Some(super::SkbProg::Fn(|_| 5)))
        .unwrap();
    assert_eq!(
        h.xmit(b"mq0", skb(&udp(1, 2, 1, 2))),
        XmitFate::Queued { queue: 1 }
    );
    assert_eq!((h.queued(f0), h.queued(f1)), (0, 1));
}

#[test]
fn a_tx_filter_passes_its_addresses_and_drops_other_unicast() {
    // check_filter / run_filter: exact match of h_dest, else multicast only.
    let mut h = host();
    let f = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    h.set_link(b"tap0", Some(true), None).unwrap();
    let to2 = udp(1, 2, 1, 2);
    let dest: [u8; 6] = to2[..6].try_into().unwrap();
    let filt = IoctlArg::TxFilter {
        flags: 0,
        addrs: vec![dest],
    };
    assert_eq!(
        h.ioctl(f, cmd::TUNSETTXFILTER, &filt),
        Ok(IoctlAnswer::Returned(1))
    );
    assert_eq!(h.xmit(b"tap0", skb(&to2)), XmitFate::Queued { queue: 0 });
    assert_eq!(
        h.xmit(b"tap0", skb(&udp(1, 3, 1, 2))),
        XmitFate::Dropped {
            queue: 0,
            reason: XmitDrop::TapTxfilter
        }
    );
}

/// Ethernet + IPv4 + TCP (ACK, 10 payload bytes) with correct IP and TCP checksums.
fn tcp_frame() -> Vec<u8> {
    crate::gro::frames::Tcp4 {
        payload: 10,
        ..Default::default()
    }
    .stream(1)
    .remove(0)
}

#[test]
fn an_iff_napi_write_goes_through_gro() {
    // IFF_NAPI: tun_get_user queues on tfile->napi and napi_schedule runs napi_gro_receive;
    // tcp4_gro_receive's skb_gro_checksum_validate verifies the CHECKSUM_NONE segment and
    // skb_gro_incr_csum_unnecessary hands it up CHECKSUM_UNNECESSARY. Without NAPI the
    // stack gets it CHECKSUM_NONE (tcp_v4_rcv checks it later).
    let mut h = host();
    let napi = attach(&mut h, "napi0", IFF_TAP | IFF_NO_PI | IFF_NAPI);
    let plain = attach(&mut h, "tap0", IFF_TAP | IFF_NO_PI);
    h.set_link(b"napi0", Some(true), None).unwrap();
    h.set_link(b"tap0", Some(true), None).unwrap();
    let frame = tcp_frame();
    assert_eq!(h.write(napi, &frame), Ok(frame.len()));
    assert_eq!(h.write(plain, &frame), Ok(frame.len()));
    let got = h.take_received();
    let summed: Vec<(&[u8], crate::skb::IpSummed)> = got
        .iter()
        .map(|(d, s)| (d.as_slice(), s.ip_summed))
        .collect();
    assert_eq!(
        summed,
        vec![
            (&b"napi0"[..], crate::skb::IpSummed::Unnecessary),
            (&b"tap0"[..], crate::skb::IpSummed::None)
        ]
    );
}

#[test]
fn a_detached_iff_napi_file_answers_ebusy_and_counts_nothing() {
    // tun_get_user: an IFF_NAPI file's NAPI branch checks tfile->detached (-EBUSY, goto
    // free_skb: no rx_dropped); __tun_detach disabled its NAPI (tun_napi_disable), and
    // tun_attach enables it again.
    let mut h = host();
    let f0 = attach(&mut h, "mq0", MQ_TAP | IFF_NAPI);
    let f1 = attach(&mut h, "mq0", MQ_TAP | IFF_NAPI);
    h.set_link(b"mq0", Some(true), None).unwrap();
    let frame = udp(1, 2, 5000, 5001);
    let queue = |flags| IoctlArg::Ifreq {
        name: [0; 16],
        flags,
    };
    h.ioctl(f1, cmd::TUNSETQUEUE, &queue(IFF_DETACH_QUEUE))
        .unwrap();
    let before = h.stats(b"mq0").unwrap();
    assert_eq!(h.write(f1, &frame), Err(Errno::EBUSY));
    assert_eq!(h.stats(b"mq0").unwrap(), before);
    assert_eq!(h.write(f0, &frame), Ok(frame.len()));
    h.ioctl(f1, cmd::TUNSETQUEUE, &queue(IFF_ATTACH_QUEUE))
        .unwrap();
    assert_eq!(h.write(f1, &frame), Ok(frame.len()));
}
