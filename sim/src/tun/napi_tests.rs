//! The hand-off (tun_get_user / tun_xdp_one -> NAPI or netif_receive_skb), with
//! expectations from the kernel rules in the module docs and the real-kernel runs of
//! scenarios/tap-gro (vnet-gso-tcpv4-burst, xdpgeneric-elides-gro).

use super::*;
use crate::bpf::{assemble, BasicEnv, Maps, XdpBuff};
use crate::gro::frames::Tcp4;
use crate::gro::napi::End;
use crate::profile::{LINUX_4_20, LINUX_6_18};
use crate::tun::sendmsg::BatchBuff;
use crate::tun::write::{WriteOpts, WritePath};
use crate::tun::{TunConfig, TunDevice};
use crate::wire::virtio_net_hdr::VirtioNetHdrRepr;
use crate::xdp::XdpAttachment;

const TAP: u32 = 2;

fn tap(napi: bool, vnet_hdr: bool) -> TunConfig {
    TunConfig {
        no_pi: true,
        napi,
        vnet_hdr,
        ..TunConfig::default()
    }
}

/// A tap at ifindex 2; with NAPI, `burst` writes per poll.
fn net_with(cfg: TunConfig, burst: usize, prog: Option<XdpMode>) -> Net {
    let mut net = Net::new();
    let mut dev = TunDevice::new(cfg.clone());
    if let Some(mode) = prog {
        let p = assemble("pass", "r0 = 2\nexit").expect("assembles");
        dev.xdp = Some(XdpAttachment::new(p, mode, BasicEnv::new(Maps::new())));
    }
    net.add(TAP, dev);
    if cfg.napi {
        let plan = GroPlan {
            burst,
            ..GroPlan::defaults(&LINUX_6_18.gro)
        };
        net.enable_napi(TAP, TunNapi::new(&LINUX_6_18, &plan));
    }
    net
}

fn write(net: &mut Net, i: u64, bytes: &[u8], nonblocking: bool) {
    if let Some(n) = net.napi_mut(TAP) {
        n.frame = i;
        n.now_ns = 1_000_000_000 + i * 1000;
    }
    let p = &LINUX_6_18;
    let out = net
        .tun_write(
            TAP,
            bytes,
            WriteOpts {
                nonblocking,
                rx_queue: 0,
                detached: false,
            },
            &p.tun_write,
            &p.tun_read,
        )
        .expect("model");
    assert_eq!(out.result, Ok(bytes.len()));
}

fn stack_lens(net: &Net) -> Vec<usize> {
    net.stack.iter().map(|d| d.frame.len()).collect()
}

#[test]
fn a_write_without_napi_goes_straight_to_the_stack() {
    let mut net = net_with(tap(false, false), 1, None);
    for (i, f) in Tcp4::default().stream(3).iter().enumerate() {
        write(&mut net, i as u64, f, false);
    }
    assert_eq!(stack_lens(&net), vec![1454; 3]);
    assert!(net.napi(TAP).is_none());
}

#[test]
fn a_write_into_a_napi_tap_polls_at_once_and_a_burst_merges() {
    // burst 1 (write(): more = false): every write is its own poll, nothing merges.
    let mut net = net_with(tap(true, false), 1, None);
    for (i, f) in Tcp4::default().stream(3).iter().enumerate() {
        write(&mut net, i as u64, f, false);
        assert_eq!(net.stack.len(), i + 1, "write {i} polled");
    }
    let rx = &net.napi(TAP).unwrap().rx;
    assert_eq!(
        rx.iter().map(|d| d.skb.model.frame).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    // A burst of ten shares one poll: 54 + 10 x 1400.
    let mut net = net_with(tap(true, false), 10, None);
    for (i, f) in Tcp4::default().stream(10).iter().enumerate() {
        write(&mut net, i as u64, f, false);
    }
    assert_eq!(stack_lens(&net), vec![14054]);
    let d = &net.napi(TAP).unwrap().rx[0];
    assert_eq!(
        d.skb.frames().collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    // tun counted every write (rx_bytes: the frames, no PI or vnet header).
    assert_eq!(net.dev(TAP).unwrap().stats.rx_packets, 10);
}

#[test]
fn gro_skb_counts_csum_start_from_the_frame_not_tuns_headroom() {
    let f = Tcp4::default().build();
    let mut skb = SkBuff::from_frame(&f, TUN_RX_PAD, f.len());
    skb.partial_csum_set(34, 16);
    assert_eq!(skb.csum_start, TUN_RX_PAD + 34);
    let g = super::gro_skb(&skb, 7, 9, true, vec![0xaa; 3]);
    assert_eq!(g.to_vec(), f);
    assert_eq!((g.csum_start - g.data_offset(), g.csum_offset), (34, 16));
    assert_eq!(
        (g.model.frame, g.model.ts_ns, g.head_frag, g.len()),
        (7, 9, true, f.len())
    );
    assert_eq!(g.ip_summed, IpSummed::Partial);
    // And back: the same place in the packet.
    assert_eq!(super::stack_skb(&g).checksum_start_offset(), 34);
}

#[test]
fn a_gso_write_is_dodgy_and_goes_up_unmerged() {
    // virtio_net_hdr NEEDS_CSUM, TCPV4, hdr_len 54, gso_size 700, csum 34/16 (LE).
    let vnet = [1u8, 1, 54, 0, 0xbc, 0x02, 34, 0, 16, 0];
    let mut net = net_with(tap(true, true), 10, None);
    for (i, f) in Tcp4::default().stream(10).iter().enumerate() {
        let mut b = vnet.to_vec();
        b.extend_from_slice(f);
        write(&mut net, i as u64, &b, false);
    }
    // dev_gro_receive flushes SKB_GSO_DODGY skbs: ten skbs, each still GSO (700).
    assert_eq!(stack_lens(&net), vec![1454; 10]);
    let rx = &net.napi(TAP).unwrap().rx;
    assert!(rx.iter().all(|d| d.skb.gso_size == 700));
    assert_eq!(crate::trace::gro::segs_of(&rx[0].skb), 2);
}

#[test]
fn an_xdpgeneric_program_elides_gro_a_native_one_does_not() {
    let frames = Tcp4::default().stream(10);
    // Generic: dev->xdp_prog, netif_elide_gro; the program runs on each skb after
    // napi_gro_receive passed it up.
    let mut net = net_with(tap(true, false), 10, Some(XdpMode::Generic));
    for (i, f) in frames.iter().enumerate() {
        write(&mut net, i as u64, f, false);
    }
    assert_eq!(stack_lens(&net), vec![1454; 10]);
    assert_eq!(net.napi(TAP).unwrap().after_gro.len(), 10);
    // Native on nonblocking writes: the program runs in tun_build_skb, GRO merges.
    let mut net = net_with(tap(true, false), 10, Some(XdpMode::Native));
    for (i, f) in frames.iter().enumerate() {
        write(&mut net, i as u64, f, true);
    }
    assert_eq!(stack_lens(&net), vec![14054]);
    assert!(net.napi(TAP).unwrap().after_gro.is_empty());
}

#[test]
fn a_vhost_batch_meets_gro_from_v5_18() {
    let frames = Tcp4::default().stream(10);
    let run = |rules: &TunWriteRules| {
        let mut net = net_with(tap(true, true), 1, None);
        let mut batch: Vec<BatchBuff> = frames
            .iter()
            .map(|f| BatchBuff {
                xdp: XdpBuff::new(f),
                gso: VirtioNetHdrRepr::default(),
            })
            .collect();
        let out = net
            .tun_sendmsg_batch(TAP, WriteOpts::default(), &mut batch, rules)
            .expect("model");
        assert_eq!(out.per_buffer.len(), 10);
        stack_lens(&net)
    };
    // fb3f903769e8 (v5.18): tun_xdp_one queues, tun_sendmsg schedules once: one skb.
    assert_eq!(run(&LINUX_6_18.tun_write), vec![14054]);
    // 4.20: netif_receive_skb per buffer, though the tap has IFF_NAPI.
    assert_eq!(run(&LINUX_4_20.tun_write), vec![1454; 10]);
}

#[test]
fn a_napi_frags_write_is_flushed_by_napi_complete_whatever_the_timeout() {
    // gro_flush_timeout 1 ms. IFF_NAPI: the poll of each write ends in
    // napi_complete_done(n, 1), which keeps this jiffy's skb held for the hrtimer.
    // IFF_NAPI_FRAGS: napi_gro_frags and napi_complete (no work done) flush each write.
    // The real kernel (6.18, scenarios/tap-gro/napi-frags-timeout and tcp-napi-timeout):
    // ten writes give ten 1454-byte skbs with frags, one of 14054 without.
    let plan = GroPlan {
        flush_timeout_ns: 1_000_000,
        ..GroPlan::defaults(&LINUX_6_18.gro)
    };
    let frames = Tcp4::default().stream(3);
    for frags in [false, true] {
        let cfg = TunConfig {
            napi_frags: frags,
            ..tap(true, false)
        };
        let mut net = net_with(cfg, 1, None);
        net.enable_napi(TAP, TunNapi::new(&LINUX_6_18, &plan));
        for (i, f) in frames.iter().enumerate() {
            write(&mut net, i as u64, f, false);
        }
        if frags {
            assert_eq!(stack_lens(&net), vec![1454; 3]);
            let rx = &net.napi(TAP).unwrap().rx;
            assert!(rx.iter().all(|d| d.end == End::FragsComplete));
            assert_eq!(net.napi(TAP).unwrap().napi.timer, None);
        } else {
            assert!(net.stack.is_empty(), "held for the hrtimer");
            assert_eq!(net.napi(TAP).unwrap().napi.holding(), 1);
        }
    }
}

#[test]
fn a_napi_frags_write_skips_tun_build_skb_so_a_native_program_runs_generic() {
    // tun_get_user: `if (!frags && tun_can_build_skb(..))`: with IFF_NAPI_FRAGS a
    // nonblocking write is not built by tun_build_skb, and skb_xdp stays 1, so a
    // driver-mode program runs in do_xdp_generic on the frags skb.
    let cfg = TunConfig {
        napi_frags: true,
        ..tap(true, false)
    };
    let mut net = net_with(cfg, 1, Some(XdpMode::Native));
    let f = &Tcp4::default().stream(1)[0];
    if let Some(n) = net.napi_mut(TAP) {
        n.now_ns = 1_000_000_000;
    }
    let p = &LINUX_6_18;
    let out = net
        .tun_write(
            TAP,
            f,
            WriteOpts {
                nonblocking: true,
                rx_queue: 0,
                detached: false,
            },
            &p.tun_write,
            &p.tun_read,
        )
        .expect("model");
    assert_eq!(out.path, Some(WritePath::NapiFrags));
    assert_eq!(out.xdp.len(), 1);
    assert_eq!(out.xdp[0].place, XdpWhere::TunGeneric);
    assert_eq!(stack_lens(&net), vec![1454]);
}
