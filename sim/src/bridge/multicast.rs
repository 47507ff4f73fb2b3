//! What multicast snooping (on by default: `BROPT_MULTICAST_ENABLED`) does to a frame
//! arriving on a port (net/bridge/br_multicast.c: br_multicast_rcv), on a segment with
//! no querier: the bridge's own querier is off by default (`multicast_querier` 0), so
//! `br_multicast_querier_exists` is false and br_handle_frame_finish floods every
//! multicast frame, registered group or not. What snooping still does is parse IGMP
//! and MLD, and a frame those parsers reject is dropped (`goto drop` on a non-zero
//! br_multicast_rcv): the IPv4 header checks of ip_mc_check_iphdr, the IGMP checksum and
//! message checks of ip_mc_check_igmp (net/ipv4/igmp.c), the group records of an IGMPv3
//! report (br_ip4_multicast_igmp3_report), and ipv6_mc_check_ipv6hdr
//! (net/ipv6/mcast_snoop.c).
//!
//! Not modelled: a query seen from another querier, which makes
//! `br_multicast_querier_exists` true once its max response delay has passed (in
//! jiffies), after which reports go to router ports only and registered groups to their
//! members; and the MLD message checks behind a hop-by-hop header.

use crate::wire::checksum::checksum;
use crate::wire::{be16_at, be32_at};

/// `IPPROTO_IGMP`.
const IPPROTO_IGMP: u8 = 2;
/// include/uapi/linux/igmp.h message types.
const IGMP_HOST_MEMBERSHIP_QUERY: u8 = 0x11;
const IGMP_HOST_MEMBERSHIP_REPORT: u8 = 0x12;
const IGMPV2_HOST_MEMBERSHIP_REPORT: u8 = 0x16;
const IGMP_HOST_LEAVE_MESSAGE: u8 = 0x17;
const IGMPV3_HOST_MEMBERSHIP_REPORT: u8 = 0x22;
/// `INADDR_ALLHOSTS_GROUP` (224.0.0.1).
const INADDR_ALLHOSTS_GROUP: u32 = 0xe000_0001;
/// `sizeof(struct igmphdr)`, `sizeof(struct igmpv3_report)`, `sizeof(struct igmpv3_query)`,
/// `sizeof(struct igmpv3_grec)`.
const IGMPHDR_LEN: usize = 8;
const IGMPV3_REPORT_LEN: usize = 8;
const IGMPV3_QUERY_LEN: usize = 12;
const IGMPV3_GREC_LEN: usize = 8;

/// br_multicast_rcv for a multicast (not broadcast) frame whose skb->protocol is
/// `protocol` and whose network header is `net`; `csum_unnecessary` when the skb's
/// checksum was already validated (skb_checksum_trimmed then skips the sum). `Err` is
/// why the frame is dropped.
pub fn rcv(protocol: u16, net: &[u8], csum_unnecessary: bool) -> Result<(), &'static str> {
    match protocol {
        crate::wire::ETH_P_IP => ipv4_rcv(net, csum_unnecessary),
        crate::wire::ETH_P_IPV6 => ipv6_mc_check_ipv6hdr(net),
        _ => Ok(()),
    }
}

/// br_multicast_ipv4_rcv: ip_mc_check_igmp's -ENOMSG (not IGMP, or a type snooping
/// does not handle) passes; any other error drops.
fn ipv4_rcv(net: &[u8], csum_unnecessary: bool) -> Result<(), &'static str> {
    // ip_mc_check_iphdr
    if net.len() < 20 {
        return Err("IPv4 header truncated (ip_mc_check_iphdr)");
    }
    let ihl = usize::from(net[0] & 0x0f) * 4;
    if net[0] >> 4 != 4 || ihl < 20 {
        return Err("bad IPv4 version or ihl (ip_mc_check_iphdr)");
    }
    if net.len() < ihl {
        return Err("IPv4 options truncated (ip_mc_check_iphdr)");
    }
    if checksum(&net[..ihl]) != 0 {
        return Err("bad IPv4 header checksum (ip_mc_check_iphdr)");
    }
    let tot = usize::from(be16_at(net, 2).unwrap_or(0));
    if net.len() < tot || tot < ihl {
        return Err("IPv4 tot_len does not fit the frame (ip_mc_check_iphdr)");
    }
    if net[9] != IPPROTO_IGMP {
        return Ok(());
    }
    // ip_mc_check_igmp_csum: ip_mc_may_pull against the IP payload length, then the
    // sum over exactly that payload (skb_checksum_trimmed).
    let igmp = &net[ihl..tot];
    if igmp.len() < IGMPHDR_LEN {
        return Err("IGMP header truncated (ip_mc_check_igmp_csum)");
    }
    if !csum_unnecessary && checksum(igmp) != 0 {
        return Err("bad IGMP checksum (ip_mc_check_igmp_csum)");
    }
    match igmp[0] {
        IGMP_HOST_LEAVE_MESSAGE | IGMP_HOST_MEMBERSHIP_REPORT | IGMPV2_HOST_MEMBERSHIP_REPORT => {
            Ok(())
        }
        IGMPV3_HOST_MEMBERSHIP_REPORT => igmp3_report(igmp),
        IGMP_HOST_MEMBERSHIP_QUERY => {
            // ip_mc_check_igmp_query
            if igmp.len() != IGMPHDR_LEN && igmp.len() < IGMPV3_QUERY_LEN {
                return Err("IGMP query of a length neither v2 nor v3 (ip_mc_check_igmp_query)");
            }
            let group = be32_at(igmp, 4).unwrap_or(0);
            let daddr = be32_at(net, 16).unwrap_or(0);
            if group == 0 && daddr != INADDR_ALLHOSTS_GROUP {
                return Err("general IGMP query not sent to 224.0.0.1 (ip_mc_check_igmp_query)");
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// ip_mc_check_igmp_reportv3, then br_ip4_multicast_igmp3_report's walk of the group
/// records: each record header, then its sources (the aux words are not counted).
fn igmp3_report(igmp: &[u8]) -> Result<(), &'static str> {
    const BAD: &str = "IGMPv3 report records run past the packet (br_ip4_multicast_igmp3_report)";
    if igmp.len() < IGMPV3_REPORT_LEN {
        return Err("IGMPv3 report truncated (ip_mc_check_igmp_reportv3)");
    }
    let records = be16_at(igmp, 6).unwrap_or(0);
    let mut len = IGMPV3_REPORT_LEN;
    for _ in 0..records {
        let grec = len;
        len += IGMPV3_GREC_LEN;
        if len > igmp.len() {
            return Err(BAD);
        }
        let nsrcs = usize::from(be16_at(igmp, grec + 2).unwrap_or(0));
        len += nsrcs * 4;
        if len > igmp.len() {
            return Err(BAD);
        }
    }
    Ok(())
}

/// ipv6_mc_check_ipv6hdr: version 6 and a payload length that is non-zero and within
/// the frame.
fn ipv6_mc_check_ipv6hdr(net: &[u8]) -> Result<(), &'static str> {
    if net.len() < 40 {
        return Err("IPv6 header truncated (ipv6_mc_check_ipv6hdr)");
    }
    if net[0] >> 4 != 6 {
        return Err("bad IPv6 version (ipv6_mc_check_ipv6hdr)");
    }
    let plen = usize::from(be16_at(net, 4).unwrap_or(0));
    if plen == 0 || 40 + plen > net.len() {
        return Err("IPv6 payload_len zero or beyond the frame (ipv6_mc_check_ipv6hdr)");
    }
    Ok(())
}
