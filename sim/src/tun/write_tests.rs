//! Write-path rules, each expectation taken from the kernel source (docs/tap-write.md) or
//! from the XDP regimes table of docs/real-kernel.md#xdp-regimes, not from this model's
//! output.

use super::*;
use crate::bpf::{assemble, BasicEnv, Maps};
use crate::profile::{LINUX_4_16, LINUX_4_19, LINUX_6_18};
use crate::tun::{TunConfig, TunDevice, TunStats};
use crate::xdp::XdpAttachment;

const A: u32 = 2;
const B: u32 = 3;

fn frame(len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend((14..len).map(|i| i as u8));
    f
}

fn tap() -> TunConfig {
    TunConfig {
        no_pi: true,
        ..TunConfig::default()
    }
}

fn verdict_prog(action: u32) -> String {
    format!("r0 = {action}\nexit\n")
}

fn net_with(prog: Option<(&str, XdpMode)>, b: Option<TunConfig>) -> Net {
    let mut net = Net::new();
    let mut dev = TunDevice::new(tap());
    if let Some((src, mode)) = prog {
        let mut maps = Maps::new();
        let mut p = assemble("t", src).unwrap();
        p.bind_maps(&mut maps).unwrap();
        dev.xdp = Some(XdpAttachment::new(p, mode, BasicEnv::new(maps)));
    }
    net.add(A, dev);
    if let Some(cfg) = b {
        net.add(B, TunDevice::new(cfg));
    }
    net
}

fn write(net: &mut Net, bytes: &[u8], nonblocking: bool) -> WriteOutcome {
    net.tun_write(
        A,
        bytes,
        WriteOpts {
            nonblocking,
            rx_queue: 0,
            detached: false,
        },
        &LINUX_6_18.tun_write,
        &LINUX_6_18.tun_read,
    )
    .unwrap()
}

fn stats(net: &Net, i: u32) -> TunStats {
    net.dev(i).unwrap().stats
}

#[test]
fn r2_1_malformed_writes_are_einval_and_count_nothing() {
    let mut net = net_with(None, None);
    assert_eq!(
        write(&mut net, &frame(60)[..13], false).result,
        Err(Errno::EINVAL)
    );
    assert_eq!(write(&mut net, &[], false).result, Err(Errno::EINVAL));
    // PI mode: 3 bytes cannot hold the PI.
    net.dev_mut(A).unwrap().config.no_pi = false;
    assert_eq!(
        write(&mut net, &[0, 0, 8], false).result,
        Err(Errno::EINVAL)
    );
    // vnet mode: fewer bytes than vnet_hdr_sz.
    let cfg = &mut net.dev_mut(A).unwrap().config;
    cfg.no_pi = true;
    cfg.vnet_hdr = true;
    assert_eq!(write(&mut net, &[0; 9], false).result, Err(Errno::EINVAL));
    // hdr_len 200 beyond a 60-byte frame.
    let mut w = vec![0, 0, 200, 0, 0, 0, 0, 0, 0, 0];
    w.extend(frame(60));
    assert_eq!(write(&mut net, &w, false).result, Err(Errno::EINVAL));
    assert_eq!(stats(&net, A), TunStats::default());
    assert!(net.stack.is_empty());
}

#[test]
fn plain_write_reaches_the_stack_and_counts_rx() {
    let mut net = net_with(None, None);
    let out = write(&mut net, &frame(60), false);
    assert_eq!(out.result, Ok(60));
    assert_eq!(out.path, Some(WritePath::AllocSkb));
    assert_eq!(
        (stats(&net, A).rx_packets, stats(&net, A).rx_bytes),
        (1, 60)
    );
    assert_eq!(net.stack.len(), 1);
    assert_eq!(net.stack[0].frame, frame(60));
}

#[test]
fn r2_7_device_down_is_eio_with_rx_dropped_on_6_18_and_silent_on_4_19() {
    let mut net = net_with(None, None);
    net.dev_mut(A).unwrap().config.up = false;
    assert_eq!(write(&mut net, &frame(60), false).result, Err(Errno::EIO));
    assert_eq!(stats(&net, A).rx_dropped, 1);
    let out = net
        .tun_write(
            A,
            &frame(60),
            WriteOpts::default(),
            &LINUX_4_19.tun_write,
            &LINUX_4_19.tun_read,
        )
        .unwrap();
    assert_eq!(out.result, Err(Errno::EIO));
    assert_eq!(
        stats(&net, A).rx_dropped,
        1,
        "4.19 returned before counting"
    );
}

#[test]
fn r2_2_build_skb_boundary_is_3456_bytes_on_6_18_and_3712_on_4_19() {
    // ALIGN(3456 + 64 + 256, 64) + 320 = 3776 + 320 = 4096 <= PAGE_SIZE.
    assert!(can_build_skb(3456, &LINUX_6_18.tun_write));
    assert!(!can_build_skb(3457, &LINUX_6_18.tun_write));
    // [4.19]: no XDP_PACKET_HEADROOM term: ALIGN(3712 + 64, 64) + 320 = 4096.
    assert!(can_build_skb(3712, &LINUX_4_19.tun_write));
    assert!(!can_build_skb(3713, &LINUX_4_19.tun_write));
}

#[test]
fn native_drop_counts_rx_dropped_and_the_stack_sees_nothing() {
    let mut net = net_with(Some((&verdict_prog(1), XdpMode::Native)), None);
    let out = write(&mut net, &frame(60), true);
    assert_eq!(out.result, Ok(60));
    assert_eq!(out.path, Some(WritePath::BuildSkb));
    assert_eq!(out.xdp[0].place, XdpWhere::Native);
    assert_eq!(out.fate, Fate::XdpDropped);
    let s = stats(&net, A);
    assert_eq!((s.rx_dropped, s.rx_packets), (1, 0));
    assert!(net.stack.is_empty());
}

#[test]
fn blocking_write_falls_back_to_generic_in_tun_and_counts_nothing_on_drop() {
    let mut net = net_with(Some((&verdict_prog(1), XdpMode::Native)), None);
    let out = write(&mut net, &frame(60), false);
    assert_eq!(out.path, Some(WritePath::AllocSkb));
    assert_eq!(out.xdp[0].place, XdpWhere::TunGeneric);
    assert_eq!(
        stats(&net, A),
        TunStats::default(),
        "observed: nothing counted at all"
    );
    // Too big for build_skb, even non-blocking: the same fallback.
    let out = write(&mut net, &frame(3457), true);
    assert_eq!(out.xdp[0].place, XdpWhere::TunGeneric);
    assert_eq!(stats(&net, A), TunStats::default());
}

#[test]
fn skb_mode_drop_still_counts_rx_because_tun_counts_after_the_core() {
    let mut net = net_with(Some((&verdict_prog(1), XdpMode::Generic)), None);
    let out = write(&mut net, &frame(60), true);
    assert_eq!(out.xdp[0].place, XdpWhere::CoreGeneric);
    let s = stats(&net, A);
    assert_eq!((s.rx_packets, s.rx_bytes, s.rx_dropped), (1, 60, 0));
    assert!(net.stack.is_empty());
}

#[test]
fn native_tx_comes_back_without_pi_and_counts_rx_and_tx() {
    let mut net = net_with(Some((&verdict_prog(3), XdpMode::Native)), None);
    net.dev_mut(A).unwrap().config.no_pi = false;
    let mut w = vec![0, 0, 8, 0];
    w.extend(frame(60));
    assert_eq!(write(&mut net, &w, true).fate, Fate::XdpTx);
    let mut buf = [0xeeu8; 100];
    let r = net.dev_mut(A).unwrap().read(&mut buf, &LINUX_6_18.tun_read);
    // docs/tun-read.md#xdp-frames: no PI even without IFF_NO_PI; the frame byte for byte.
    assert_eq!(r.result, Ok(60));
    assert_eq!(&buf[..60], &frame(60)[..]);
    let s = stats(&net, A);
    assert_eq!(
        (s.rx_packets, s.rx_bytes, s.tx_packets, s.tx_bytes),
        (1, 60, 1, 60)
    );
}

#[test]
fn xdp_tx_before_4_17_comes_back_as_an_skb_with_pi_and_no_rx() {
    let mut net = net_with(Some((&verdict_prog(3), XdpMode::Native)), None);
    net.dev_mut(A).unwrap().config.no_pi = false;
    let mut w = vec![0, 0, 8, 0];
    w.extend(frame(60));
    let out = net
        .tun_write(
            A,
            &w,
            WriteOpts {
                nonblocking: true,
                rx_queue: 0,
                detached: false,
            },
            &LINUX_4_16.tun_write,
            &LINUX_4_16.tun_read,
        )
        .unwrap();
    assert_eq!(out.fate, Fate::XdpTx);
    let mut buf = [0u8; 100];
    let r = net.dev_mut(A).unwrap().read(&mut buf, &LINUX_4_16.tun_read);
    assert_eq!(r.result, Ok(64));
    assert_eq!(&buf[..4], &[0, 0, 8, 0]);
    assert_eq!(stats(&net, A).rx_packets, 0);
}

#[test]
fn native_tx_with_a_full_ring_is_success_with_tx_dropped() {
    let mut net = net_with(Some((&verdict_prog(3), XdpMode::Native)), None);
    net.dev_mut(A).unwrap().config.tx_queue_len = 1;
    write(&mut net, &frame(60), true);
    let out = write(&mut net, &frame(60), true);
    assert_eq!(out.fate, Fate::XdpTx);
    let s = stats(&net, A);
    // docs/tap-write.md#xdp-act quirk: the second frame is freed, tx_dropped += 1, yet rx
    // counts it.
    assert_eq!((s.rx_packets, s.tx_dropped, s.rx_dropped), (2, 1, 0));
}

#[test]
fn redirect_to_another_tap_and_to_a_down_tap() {
    let prog = format!("r1 = {B}\nr2 = 0\ncall bpf_redirect\nexit\n");
    let mut net = net_with(Some((&prog, XdpMode::Native)), Some(tap()));
    let out = write(&mut net, &frame(60), true);
    assert_eq!(out.fate, Fate::XdpRedirected { ifindex: B });
    assert_eq!(stats(&net, A).rx_packets, 1);
    let mut buf = [0u8; 100];
    let r = net.dev_mut(B).unwrap().read(&mut buf, &LINUX_6_18.tun_read);
    assert_eq!(r.result, Ok(60));
    assert_eq!(stats(&net, B).tx_packets, 1);
    // xdp_ok_fwd_dev: a down target is -ENETDOWN, and A counts rx_dropped (v6.8).
    net.dev_mut(B).unwrap().config.up = false;
    let out = write(&mut net, &frame(60), true);
    assert_eq!(out.fate, Fate::XdpError(Errno::ENETDOWN));
    assert_eq!(out.result, Ok(60));
    assert_eq!(stats(&net, A).rx_dropped, 1);
}

#[test]
fn redirect_in_tun_fallback_counts_nothing_on_a_but_b_gets_it() {
    let prog = format!("r1 = {B}\nr2 = 0\ncall bpf_redirect\nexit\n");
    let mut net = net_with(Some((&prog, XdpMode::Native)), Some(tap()));
    let out = write(&mut net, &frame(60), false);
    assert_eq!(out.fate, Fate::XdpRedirected { ifindex: B });
    assert_eq!(stats(&net, A), TunStats::default());
    assert_eq!(net.dev(B).unwrap().queued(), 1);
}

#[test]
fn native_pass_after_adjust_head_delivers_the_moved_frame_but_counts_the_written_len() {
    // Pull the 14-byte Ethernet header off and push back a 14-byte header of zeros by
    // moving data: adjust_head(+4) leaves the frame 4 bytes shorter.
    let prog = "r6 = r1\nr2 = 4\ncall bpf_xdp_adjust_head\nr0 = 2\nexit\n";
    let mut net = net_with(Some((prog, XdpMode::Native)), None);
    write(&mut net, &frame(60), true);
    assert_eq!(net.stack[0].frame, frame(60)[4..].to_vec());
    // docs/tap-write.md#xdp-act: rx_bytes adds the original len.
    assert_eq!(stats(&net, A).rx_bytes, 60);
}

/// `frame` with `tags` (TPID, TCI) after the MACs and `rest` after them.
fn tagged(tags: &[(u16, u16)], rest: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    for (tpid, tci) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(rest);
    f.resize(60, 0);
    f
}

#[test]
fn tagged_frames_without_a_protocol_handler_count_rx_dropped() {
    // net/core/dev.c: __netif_receive_skb_core. An LLC frame (length 38, SAPs 0x42) and
    // a raw 802.3 one (0xffff after the length).
    let llc = [0x00, 0x26, 0x42, 0x42, 0x03];
    let raw = [0x00, 0x1e, 0xff, 0xff];
    // (tags, what follows them, skb->protocol the taps see, rx_dropped)
    type Case<'a> = (&'a [(u16, u16)], &'a [u8], u16, u64);
    let cases: [Case; 7] = [
        // Untagged: the packet taps are the handler, whatever the protocol.
        (&[], &raw, 0x0001, 0),
        (&[], &[0x88, 0xb5], 0x88b5, 0),
        // vlan_set_encap_proto: the eth_type_trans rule after the tag; llc_rcv handles
        // ETH_P_802_2, nothing ETH_P_802_3.
        (&[(0x8100, 5)], &llc, 0x0004, 0),
        (&[(0x8100, 5)], &raw, 0x0001, 1),
        // QinQ: only the outer tag comes off; nothing handles 0x8100.
        (&[(0x88a8, 10), (0x8100, 20)], &[0x08, 0x00], 0x8100, 1),
        // A priority tag (VID 0) over another tag: check_vlan_id untags again.
        (&[(0x8100, 0), (0x8100, 5)], &llc, 0x8100, 0),
        (&[(0x8100, 0), (0x8100, 5)], &raw, 0x8100, 1),
    ];
    for (tags, rest, protocol, dropped) in cases {
        let mut net = net_with(None, None);
        let out = write(&mut net, &tagged(tags, rest), false);
        assert_eq!(out.result, Ok(60), "{tags:?}");
        assert_eq!(net.stack.len(), 1);
        assert_eq!(net.stack[0].protocol, protocol, "{tags:?} {rest:02x?}");
        let st = stats(&net, A);
        assert_eq!(
            (st.rx_packets, st.rx_dropped),
            (1, dropped),
            "{tags:?} {rest:02x?}"
        );
    }
}
