//! One frame through the bridge, from the uplink to the tap: net/bridge/br_input.c
//! (br_handle_frame, br_handle_frame_finish) and net/bridge/br_forward.c
//! (should_deliver, br_dev_queue_push_xmit). See the module docs of [`super`].

use crate::consts::{ETH_HLEN, VLAN_HLEN};
use crate::consts::{ETH_P_IP, ETH_P_IPV6};
use crate::ethernet::{encap_proto, eth_proto_is_802_3};
use crate::skb::{gso, IpSummed, SkBuff};
use crate::tun::TunConfig;
use crate::wire::{ethernet, vlan};

use super::{multicast, netfilter, Bridge, DropReason, Mac, Port, Verdict};

fn is_multicast(m: &Mac) -> bool {
    m[0] & 1 != 0
}

fn is_broadcast(m: &Mac) -> bool {
    m.iter().all(|b| *b == 0xff)
}

/// include/linux/etherdevice.h: is_valid_ether_addr (not multicast, not all zeros).
fn is_valid_ether_addr(m: &Mac) -> bool {
    !is_multicast(m) && m.iter().any(|b| *b != 0)
}

/// include/linux/etherdevice.h: is_link_local_ether_addr, 01:80:c2:00:00:0X.
fn is_link_local_ether_addr(m: &Mac) -> bool {
    m[..5] == [0x01, 0x80, 0xc2, 0x00, 0x00] && m[5] & 0xf0 == 0
}

/// `skb->protocol` of `frame` as the uplink's receive path leaves it: eth_type_trans
/// (net/ethernet/eth.c), or vlan_set_encap_proto (include/linux/if_vlan.h) behind a tag
/// taken out of band, take a length field (below `ETH_P_802_3_MIN`) for no EtherType:
/// ETH_P_802_3 when 0xffff follows (raw 802.3, IPX), else ETH_P_802_2 (LLC, e.g. STP),
/// the rule of [`encap_proto`]. An AF_PACKET send (attach = "direct") keeps the field as
/// is (eth_header_parse_protocol), which is what `skb.protocol` holds coming in.
pub fn received_protocol(frame: &[u8], skb: &SkBuff) -> u16 {
    let Ok(eth) = ethernet::Packet::new_checked(frame) else {
        return skb.protocol;
    };
    // The type field and what follows it: the Ethernet header's, or the out-of-band
    // tag's encapsulated protocol.
    let (proto, rest) = if skb.vlan.is_some() {
        match vlan::Packet::new_checked(eth.payload()) {
            Ok(tag) => (tag.ethertype(), tag.payload()),
            Err(_) => return skb.protocol,
        }
    } else {
        (eth.ethertype(), eth.payload())
    };
    if eth_proto_is_802_3(proto) {
        return skb.protocol;
    }
    encap_proto(proto, rest.get(..2).map(|b| [b[0], b[1]]))
}

/// The bridge's verdict on `frame` (the bytes as they entered the uplink, tags in-band)
/// whose skb, after the receive path, is `skb` (its outer tag out of band when
/// `skb.vlan` is set), at replay time `ts_ns`, for the tap configured as `tap`.
pub fn input(br: &mut Bridge, ts_ns: u64, frame: &[u8], skb: &SkBuff, tap: &TunConfig) -> Verdict {
    let Ok(eth) = ethernet::Packet::new_checked(frame) else {
        // build_skb refuses a frame without an Ethernet header before this stage.
        return Verdict::Deliver(None);
    };
    let (dst, src): (Mac, Mac) = (eth.dst_addr(), eth.src_addr());
    // The clock moves first: br_fdb_cleanup ran while the replay was between frames.
    br.fdb.age(ts_ns);

    // The uplink's receive path, before the bridge's rx_handler: __netif_receive_skb_core
    // untags an 802.1Q/802.1ad frame with skb_vlan_untag, whose pskb_may_pull wants the
    // tag and the two bytes after it (vlan_set_encap_proto reads them), or frees the skb.
    if vlan::eth_type_vlan(eth.ethertype()) && eth.payload().len() < VLAN_HLEN + 2 {
        return Verdict::Dropped(DropReason::ShortTag(frame.len()));
    }

    if !is_valid_ether_addr(&src) {
        return Verdict::Dropped(DropReason::InvalidSource(src));
    }
    if is_link_local_ether_addr(&dst) {
        let bit = 1u16 << dst[5];
        match dst[5] {
            // Bridge Group Address: with BR_NO_STP, "must forward to keep loop detection".
            0x00 => {}
            0x01 => return Verdict::Dropped(DropReason::MacControl),
            _ if br.group_fwd_mask & bit != 0 => {}
            _ => {
                // __br_handle_local_finish: learned (no_linklocal_learn is off), then
                // RX_HANDLER_PASS to the uplink's own stack.
                br.fdb.update(src, Port::Uplink, ts_ns);
                return Verdict::Dropped(DropReason::LinkLocal(dst));
            }
        }
    }

    let net_off = ETH_HLEN + if skb.vlan.is_some() { VLAN_HLEN } else { 0 };
    let net = frame.get(net_off..).unwrap_or_default();
    let mut trim = None;
    // br_nf_pre_routing: IS_IP / IS_IPV6 need no hw-accel tag.
    if br.nf_call && skb.vlan.is_none() {
        let checked = match skb.protocol {
            ETH_P_IP => Some(netfilter::validate_ipv4(
                net,
                skb.gso_type & gso::TCPV4 != 0,
            )),
            ETH_P_IPV6 => Some(netfilter::validate_ipv6(net)),
            _ => None,
        };
        match checked {
            Some(Err(why)) => return Verdict::Dropped(DropReason::Netfilter(why)),
            Some(Ok(len)) if len < net.len() => trim = Some(net_off + len),
            _ => {}
        }
    }
    let net = &net[..trim.map_or(net.len(), |t| t - net_off)];

    // br_handle_frame_finish
    br.fdb.update(src, Port::Uplink, ts_ns);
    if is_multicast(&dst) {
        if !is_broadcast(&dst) {
            // skb_csum_unnecessary: CHECKSUM_PARTIAL counts too (the sum is to be filled
            // in, not checked).
            let unnecessary = matches!(skb.ip_summed, IpSummed::Unnecessary | IpSummed::Partial);
            if let Err(why) = multicast::rcv(skb.protocol, net, unnecessary) {
                return Verdict::Dropped(DropReason::Snooping(why));
            }
        }
        // No querier: br_flood (BR_MCAST_FLOOD / BR_BCAST_FLOOD on the tap's port).
    } else if let Some(e) = br.fdb.find(&dst) {
        if e.local {
            return Verdict::Dropped(DropReason::Local(dst));
        }
        if e.port == Some(Port::Uplink) {
            return Verdict::Dropped(DropReason::SamePort(dst));
        }
    }

    // The tap's port: forwarding only while the tap is up; then is_skb_forwardable.
    if !tap.up {
        return Verdict::Dropped(DropReason::PortDown);
    }
    // br_dev_queue_push_xmit pushes the Ethernet header back before is_skb_forwardable,
    // whose limit counts it (dev->hard_header_len) and one tag; a hw-accel tag is not in
    // skb->len. Seen on 6.18: 1518 bytes pass a 1500-byte tap, 1519 do not.
    let len = trim.unwrap_or(frame.len()) - if skb.vlan.is_some() { VLAN_HLEN } else { 0 };
    let limit = tap.mtu + ETH_HLEN + VLAN_HLEN;
    if !skb.is_gso() && len > limit {
        return Verdict::Dropped(DropReason::TooBig { len, limit });
    }
    Verdict::Deliver(trim)
}
