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

/// The stand-in filter: drops a frame whose bytes carry an 802.1Q tag in-band (what a
/// program reading the EtherType with bpf_skb_load_bytes at offset 12 sees), keeps the
/// rest whole.
fn drop_in_band_ctag(skb: &sim::skb::SkBuff) -> u32 {
    match skb.linear().get(12..14) {
        Some([0x81, 0x00]) => 0,
        _ => u32::MAX,
    }
}

/// An skb of a 60-byte IPv4 frame with a hw-accel 802.1Q tag (VID 5).
fn tagged_skb() -> sim::skb::SkBuff {
    let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    frame.resize(60, 0);
    let mut s = sim::skb::SkBuff::from_frame(&frame, 64, frame.len());
    s.protocol = 0x0800;
    s.set_network_header(14);
    s.vlan = Some(sim::skb::VlanTag {
        proto: 0x8100,
        tci: 5,
    });
    s
}

/// What a one-queue tap with the stand-in filter does with [`tagged_skb`], with the
/// tap's tx-vlan (802.1Q insert) offload on or off.
fn xmit_tagged(tx_vlan_ctag: bool) -> sim::tun::device::XmitFate {
    use sim::tun::device::{SkbProg, TunHost};
    use sim::tun::ioctl::iff_flags::{IFF_MULTI_QUEUE, IFF_NO_PI, IFF_TAP};
    use sim::tun::ioctl::{cmd, BpfFd, Caller, IoctlArg};
    let mut h = TunHost::new(&sim::profile::LINUX_6_18, Caller::root());
    let f = h.open(true);
    let mut name = [0u8; 16];
    name[..4].copy_from_slice(b"tap0");
    let flags = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE;
    h.ioctl(f, cmd::TUNSETIFF, &IoctlArg::Ifreq { name, flags })
        .expect("TUNSETIFF");
    let prog = IoctlArg::BpfFd(BpfFd::Prog {
        socket_filter: true,
    });
    h.ioctl(f, cmd::TUNSETFILTEREBPF, &prog)
        .expect("TUNSETFILTEREBPF");
    h.set_filter(b"tap0", Some(SkbProg::Fn(drop_in_band_ctag)))
        .expect("set_filter");
    let config = sim::tun::TunConfig {
        tx_vlan_ctag,
        ..sim::tun::TunConfig::default()
    };
    h.set_device_config(b"tap0", &config);
    h.set_link(b"tap0", Some(true), None).expect("link up");
    h.xmit(b"tap0", tagged_skb())
}

#[test]
fn the_filter_sees_the_tag_the_core_inserted_before_the_driver() {
    use sim::tun::device::XmitFate;
    use sim::tun::XmitDrop;
    // net/core/dev.c: __dev_queue_xmit picks the queue, then validate_xmit_skb ->
    // validate_xmit_vlan pushes a tag the device cannot offload into the bytes before
    // ndo_start_xmit; tun_net_xmit's run_ebpf_filter comes after, so it sees the tag.
    assert_eq!(
        xmit_tagged(false),
        XmitFate::Dropped {
            queue: 0,
            reason: XmitDrop::TapFilter
        }
    );
    // With the offload on, the tag stays hw-accel and the bytes untagged.
    assert_eq!(xmit_tagged(true), XmitFate::Queued { queue: 0 });
}
