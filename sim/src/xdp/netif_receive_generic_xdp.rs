//! net/core/dev.c: netif_receive_generic_xdp and bpf_prog_run_generic_xdp, generic XDP's
//! run on an skb: the program sees the frame from the MAC header in a linear buffer with
//! at least XDP_PACKET_HEADROOM in front, and its head and tail moves are applied back to
//! the skb. What becomes of the verdict is [`do_xdp_generic`](super::do_xdp_generic).
//! Rules: docs/tap-write.md#generic-xdp.

use crate::bpf::{BpfError, XdpBuff, XdpRun};
use crate::consts::{skb_data_align, SKB_SHARED_INFO_ALIGNED, XDP_PACKET_HEADROOM};
use crate::ethernet::eth_type_trans;
use crate::skb::{IpSummed, SkBuff};

use super::XdpAttachment;

/// One generic run: the verdict and the frame's length before and after.
#[derive(Debug, Clone)]
pub(crate) struct GenericRun {
    pub run: XdpRun,
    pub len_before: usize,
    pub len_after: usize,
}

/// Run `att` over `skb` as generic XDP does, and leave `skb` as the program left the
/// frame. The buffer is the skb made private and linear with XDP_PACKET_HEADROOM of
/// headroom (netif_receive_generic_xdp); its tailroom is the skb's: UNCERTAIN, modelled
/// as the 64-byte alignment slack of the data area. A VM fault leaves `skb` unchanged.
pub(crate) fn netif_receive_generic_xdp(
    att: &mut XdpAttachment,
    skb: &mut SkBuff,
    ifindex: u32,
    numqueues: u16,
) -> Result<GenericRun, BpfError> {
    let frame = skb.to_vec();
    let data_area = skb_data_align(XDP_PACKET_HEADROOM + frame.len());
    let frame_sz = data_area + SKB_SHARED_INFO_ALIGNED;
    let mut buff = XdpBuff::with_layout(&frame, XDP_PACKET_HEADROOM, frame_sz)?;
    buff.ingress_ifindex = ifindex;
    buff.rx_queue_index = u32::from(rxqueue_index(skb, numqueues));
    let run = att.run(&mut buff)?;
    let head_delta = buff.data as isize - XDP_PACKET_HEADROOM as isize;
    let after = buff.data();
    // bpf_prog_run_generic_xdp applies head/tail moves to the skb.
    *skb = rebuilt(skb, after, head_delta);
    Ok(GenericRun {
        run,
        len_before: frame.len(),
        len_after: after.len(),
    })
}

/// netif_get_rxqueue (net/core/dev.c): the rx queue recorded on the skb, or queue 0 when
/// none was recorded or the recorded one is not below dev->real_num_rx_queues (the
/// kernel then WARN_ONCEs "received on queue N, but number of RX queues is M"; a tun
/// file detached by TUNSETQUEUE keeps an index that can be past the queues left).
fn rxqueue_index(skb: &SkBuff, numqueues: u16) -> u16 {
    // dev->real_num_rx_queues: numqueues, never below 1.
    match skb.queue_mapping.checked_sub(1) {
        Some(index) if index < numqueues.max(1) => index,
        _ => 0,
    }
}

/// The skb after a generic run (bpf_prog_run_generic_xdp): the frame as the program left
/// it (`head_delta` > 0 pulled bytes off the front, < 0 pushed), every piece of metadata
/// kept (checksum and GSO state stay; csum_start keeps its place in the packet, so it
/// moves by the head delta), and eth_type_trans run again when the EtherType or the
/// destination's multicast class changed.
fn rebuilt(old: &SkBuff, frame: &[u8], head_delta: isize) -> SkBuff {
    let mut skb = SkBuff::from_frame(frame, XDP_PACKET_HEADROOM, frame.len());
    skb.ops = old.ops;
    skb.protocol = old.protocol;
    skb.vlan = old.vlan;
    skb.gso_size = old.gso_size;
    skb.gso_segs = old.gso_segs;
    skb.gso_type = old.gso_type;
    skb.encapsulation = old.encapsulation;
    skb.ip_summed = old.ip_summed;
    skb.reset_mac_header();
    if old.ip_summed == IpSummed::Partial {
        let start = old.checksum_start_offset() as isize - head_delta;
        skb.partial_csum_set(start.max(0) as usize, old.csum_offset);
    }
    // The transport and inner headers keep their place in the packet too
    // (pskb_expand_head: skb_headers_offset_update); a UDP-tunnel skb's tunnel offsets
    // are read back from them (docs/tun-read.md#vnet-tunnel).
    let moved = |h: Option<usize>| {
        old.offset_from_data(h)
            .and_then(|o| usize::try_from(o as isize - head_delta).ok())
    };
    if let Some(o) = moved(old.transport_header) {
        skb.set_transport_header(o);
    }
    if let Some(o) = moved(old.inner_mac_header) {
        skb.set_inner_mac_header(o);
    }
    if let Some(o) = moved(old.inner_network_header) {
        skb.set_inner_network_header(o);
    }
    if let Some(o) = moved(old.inner_transport_header) {
        skb.set_inner_transport_header(o);
    }
    let ethertype = |s: &SkBuff| (s.byte(12), s.byte(13));
    let multicast = |s: &SkBuff| s.byte(0).map(|b| b & 1);
    if ethertype(old) != ethertype(&skb) || multicast(old) != multicast(&skb) {
        eth_type_trans(&mut skb);
    }
    skb
}
