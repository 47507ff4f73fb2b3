//! Inner Ethernet GRO: net/ethernet/eth.c: eth_gro_receive / eth_gro_complete, the
//! ETH_P_TEB packet offload (9b174d88c257, v4.0), used by GRE (gretap) and VXLAN. Also
//! net/8021q/vlan_core.c: vlan_gro_receive / vlan_gro_complete, registered only with
//! CONFIG_VLAN_8021Q (off on this machine's kernel).

use super::core::{call_l3_receive, complete_by_type, find_receive_by_type, postpull_rcsum};
use super::{reason, GroConfig, SkBuff};
use crate::consts::ETH_HLEN;

use crate::consts::VLAN_HLEN;
use crate::wire::{EthernetPacket, VlanPacket};

/// eth_gro_receive: any difference in the 14-byte inner Ethernet header
/// (compare_ether_header) clears same_flow; the inner EtherType needs an offload.
pub fn eth_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let off = skb.cb.data_offset;
    let Some(eh) = skb.hdr(off, ETH_HLEN) else {
        skb.flush(reason::ETH_NO_HANDLER);
        return None;
    };
    let eh: [u8; ETH_HLEN] = eh.try_into().unwrap_or([0; ETH_HLEN]);
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        // compare_ether_header: a memcmp of the two headers.
        if p.hdr(off, ETH_HLEN) != Some(&eh[..]) {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::TEB_INNER_MAC);
            skb.saw_mismatch(reason::TEB_INNER_MAC);
        }
    }
    let ty = EthernetPacket::new_unchecked(eh).ethertype();
    let Some(h) = find_receive_by_type(cfg, ty) else {
        skb.flush(reason::ETH_NO_HANDLER);
        return None;
    };
    skb.cb.data_offset += ETH_HLEN;
    postpull_rcsum(skb, off, ETH_HLEN);
    call_l3_receive(cfg, h, head, skb)
}

/// eth_gro_complete: inner_mac_header (when encapsulated), then the inner complete.
pub fn eth_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    if skb.encapsulation {
        skb.set_inner_mac_header(nhoff);
    }
    // A header the skb does not hold has no EtherType: no inner complete.
    let ty = skb
        .hdr(nhoff, ETH_HLEN)
        .map_or(0, |h| EthernetPacket::new_unchecked(h).ethertype());
    complete_by_type(cfg, skb, ty, nhoff + ETH_HLEN);
}

/// vlan_gro_receive: a different TCI or inner EtherType (compare_vlan_header) clears
/// same_flow.
pub fn vlan_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let off = skb.cb.data_offset;
    let Some(vh) = skb.hdr(off, VLAN_HLEN).map(VlanPacket::new_unchecked) else {
        skb.flush(reason::VLAN_NO_HANDLER);
        return None;
    };
    let ty = vh.ethertype();
    // compare_vlan_header: the TCI and the encapsulated protocol.
    let tag = (vh.tci(), ty);
    let Some(h) = find_receive_by_type(cfg, ty) else {
        skb.flush(reason::ETH_NO_HANDLER);
        return None;
    };
    for p in head.iter_mut().rev() {
        if !p.cb.same_flow {
            continue;
        }
        // A held skb too short for the tag compares as zeroes (it cannot match: ty has
        // an offload, so it is not 0).
        let held = p
            .hdr(off, VLAN_HLEN)
            .map(VlanPacket::new_unchecked)
            .map_or((0, 0), |q| (q.tci(), q.ethertype()));
        if held != tag {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::VLAN_TCI);
            skb.saw_mismatch(reason::VLAN_TCI);
        }
    }
    skb.cb.data_offset += VLAN_HLEN;
    postpull_rcsum(skb, off, VLAN_HLEN);
    call_l3_receive(cfg, h, head, skb)
}

/// vlan_gro_complete: the inner complete after the 4-byte tag.
pub fn vlan_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize) {
    let ty = skb
        .hdr(nhoff, VLAN_HLEN)
        .map_or(0, |h| VlanPacket::new_unchecked(h).ethertype());
    complete_by_type(cfg, skb, ty, nhoff + VLAN_HLEN);
}
