//! What multicast snooping (on by default: `BROPT_MULTICAST_ENABLED`) does to a frame
//! arriving on a port (net/bridge/br_multicast.c: br_multicast_rcv), on a segment with
//! no querier: the bridge's own querier is off by default (`multicast_querier` 0), so
//! `br_multicast_querier_exists` is false and br_handle_frame_finish floods every
//! multicast frame, registered group or not. What snooping still does is parse IGMP
//! and MLD, and a frame those parsers reject is dropped (`goto drop` on a non-zero
//! br_multicast_rcv): the IPv4 header checks of ip_mc_check_iphdr, the IGMP checksum and
//! message checks of ip_mc_check_igmp (net/ipv4/igmp.c), the group records of an IGMPv3
//! report (br_ip4_multicast_igmp3_report), and ipv6_mc_check_mld's header, extension
//! header, ICMPv6 checksum and MLD message checks (net/ipv6/mcast_snoop.c), and the
//! group records of an MLDv2 report (br_ip6_multicast_mld2_report).
//!
//! Not modelled: a query seen from another querier, which makes
//! `br_multicast_querier_exists` true once its max response delay has passed (in
//! jiffies, which the full-speed real arm does not let pass either), after which reports
//! go to router ports only and registered groups to their members; and the bridge's
//! per-group state (mdb entries), which only matters once a querier exists. A general
//! IGMPv3 or MLDv2 query with a 0 max response code waits one jiffy, so it can make the
//! real bridge's querier exist within a replay (seen on 6.18: after such an MLDv2
//! query, IPv6 multicast to a unicast address went to the router port only).

use crate::consts::IPPROTO_ICMPV6;
use crate::wire::checksum::{checksum, fold, ones_complement_sum};
use crate::wire::ipv6::{ExtHeaders, ExtRule};
use crate::wire::{be16_at, be32_at, ipv4, ipv6};

use crate::consts::IPPROTO_IGMP;
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
        crate::consts::ETH_P_IP => ipv4_rcv(net, csum_unnecessary),
        crate::consts::ETH_P_IPV6 => ipv6_mc_check_mld(net, csum_unnecessary),
        _ => Ok(()),
    }
}

/// br_multicast_ipv4_rcv: ip_mc_check_igmp's -ENOMSG (not IGMP, or a type snooping
/// does not handle) passes; any other error drops.
fn ipv4_rcv(net: &[u8], csum_unnecessary: bool) -> Result<(), &'static str> {
    // ip_mc_check_iphdr
    let ip = ipv4::Packet::new_unchecked(net);
    if ip.check_len().is_err() {
        return Err("IPv4 header truncated (ip_mc_check_iphdr)");
    }
    let ihl = ip.header_len();
    if ip.version() != 4 || ihl < ipv4::HEADER_LEN {
        return Err("bad IPv4 version or ihl (ip_mc_check_iphdr)");
    }
    if net.len() < ihl {
        return Err("IPv4 options truncated (ip_mc_check_iphdr)");
    }
    if !ip.verify_checksum() {
        return Err("bad IPv4 header checksum (ip_mc_check_iphdr)");
    }
    let tot = usize::from(ip.total_len());
    if net.len() < tot || tot < ihl {
        return Err("IPv4 tot_len does not fit the frame (ip_mc_check_iphdr)");
    }
    if ip.protocol() != IPPROTO_IGMP {
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
            let daddr = u32::from(ip.dst_addr());
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

use crate::consts::{NEXTHDR_HOP, NEXTHDR_NONE};
/// include/uapi/linux/icmpv6.h MLD types.
const ICMPV6_MGM_QUERY: u8 = 130;
const ICMPV6_MGM_REPORT: u8 = 131;
const ICMPV6_MGM_REDUCTION: u8 = 132;
const ICMPV6_MLD2_REPORT: u8 = 143;
/// `sizeof(struct icmp6hdr)`, `sizeof(struct mld_msg)`, `sizeof(struct mld2_report)`,
/// `sizeof(struct mld2_query)`.
const ICMP6HDR_LEN: usize = 8;
const MLD_MSG_LEN: usize = 24;
const MLD2_REPORT_LEN: usize = 8;
const MLD2_QUERY_LEN: usize = 28;

/// net/ipv6/mcast_snoop.c: ipv6_mc_check_mld. `Ok` covers its -ENOMSG/-ENODATA too
/// (not MLD: br_multicast_ipv6_rcv passes the frame on).
fn ipv6_mc_check_mld(net: &[u8], csum_unnecessary: bool) -> Result<(), &'static str> {
    // ipv6_mc_check_ipv6hdr: version 6 and a payload length that is non-zero and within
    // the frame.
    let ip = ipv6::Packet::new_unchecked(net);
    if ip.check_len().is_err() {
        return Err("IPv6 header truncated (ipv6_mc_check_ipv6hdr)");
    }
    if ip.version() != 6 {
        return Err("bad IPv6 version (ipv6_mc_check_ipv6hdr)");
    }
    let plen = usize::from(ip.payload_len());
    if plen == 0 || ipv6::HEADER_LEN + plen > net.len() {
        return Err("IPv6 payload_len zero or beyond the frame (ipv6_mc_check_ipv6hdr)");
    }
    // ipv6_mc_check_exthdrs: MLD sits behind a hop-by-hop header (router alert).
    if ip.next_header() != NEXTHDR_HOP {
        return Ok(());
    }
    let Some(l4) = ipv6_skip_exthdr(net, ipv6::HEADER_LEN, NEXTHDR_HOP) else {
        return Err("IPv6 extension headers run past the frame (ipv6_skip_exthdr)");
    };
    let (nexthdr, off) = l4;
    if nexthdr != IPPROTO_ICMPV6 {
        return Ok(());
    }
    // ipv6_transport_len / ipv6_mc_may_pull: what the payload length leaves after the
    // extension headers.
    let transport_len = (ipv6::HEADER_LEN + plen).saturating_sub(off);
    let may_pull = |len: usize| off + transport_len >= off + len;
    // ipv6_mc_check_icmpv6
    if !may_pull(ICMP6HDR_LEN) {
        return Err("ICMPv6 header truncated (ipv6_mc_check_icmpv6)");
    }
    let msg = &net[off..off + transport_len];
    if !csum_unnecessary {
        // ip6_compute_pseudo: source, destination, upper-layer length, next header.
        let pseudo = crate::wire::checksum::pseudo_header(
            ip.src_addr().into(),
            ip.dst_addr().into(),
            IPPROTO_ICMPV6,
            transport_len as u32,
        );
        let sum = ones_complement_sum(msg, pseudo.unwrap_or(0));
        if fold(sum) != 0xffff {
            return Err("bad ICMPv6 checksum (ipv6_mc_check_icmpv6)");
        }
    }
    // ipv6_mc_check_mld_msg
    if !may_pull(MLD_MSG_LEN) {
        return Ok(()); // -ENODATA
    }
    match msg[0] {
        ICMPV6_MGM_REDUCTION | ICMPV6_MGM_REPORT => Ok(()),
        ICMPV6_MLD2_REPORT if !may_pull(MLD2_REPORT_LEN) => {
            Err("MLDv2 report truncated (ipv6_mc_check_mld_reportv2)")
        }
        ICMPV6_MLD2_REPORT => mld2_report(msg),
        ICMPV6_MGM_QUERY => {
            // ipv6_mc_check_mld_query: a link-local source (fe80::/10), a v1 or v2 length,
            // and ff02::1 for a general query.
            if !ip.src_addr().is_unicast_link_local() {
                return Err("MLD query from a non-link-local source (ipv6_mc_check_mld_query)");
            }
            if transport_len != MLD_MSG_LEN && transport_len < MLD2_QUERY_LEN {
                return Err("MLD query of a length neither v1 nor v2 (ipv6_mc_check_mld_query)");
            }
            let general = msg[8..24].iter().all(|b| *b == 0);
            let all_nodes = ip.dst_addr() == std::net::Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
            if general && !all_nodes {
                return Err("general MLD query not sent to ff02::1 (ipv6_mc_check_mld_query)");
            }
            Ok(())
        }
        _ => Ok(()), // -ENODATA
    }
}

/// br_multicast_ipv6_rcv -> br_ip6_multicast_mld2_report's walk of the group records
/// (`struct mld2_grec`: 4 bytes, the group, then 16 bytes a source) within the ICMPv6
/// payload length.
fn mld2_report(msg: &[u8]) -> Result<(), &'static str> {
    const BAD: &str = "MLDv2 report records run past the packet (br_ip6_multicast_mld2_report)";
    let records = be16_at(msg, 6).unwrap_or(0);
    let mut len = ICMP6HDR_LEN;
    for _ in 0..records {
        if msg.len() < len + 4 {
            return Err(BAD);
        }
        let nsrcs = usize::from(be16_at(msg, len + 2).unwrap_or(0));
        len += 20 + 16 * nsrcs;
        if msg.len() < len {
            return Err(BAD);
        }
    }
    Ok(())
}

/// net/ipv6/exthdrs_core.c: ipv6_skip_exthdr from `start` with first header `nexthdr`:
/// the upper-layer protocol and its offset, or None when a header does not fit (the walk
/// reads the whole skb, padding included) or is NEXTHDR_NONE. The wire walk by
/// [`ExtRule::SkipExthdr`].
fn ipv6_skip_exthdr(net: &[u8], start: usize, nexthdr: u8) -> Option<(u8, usize)> {
    let (nexthdr, off) = ExtHeaders::skip(ExtRule::SkipExthdr, nexthdr, net.get(start..)?).ok()?;
    (nexthdr != NEXTHDR_NONE).then_some((nexthdr, start + off))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IPv6 fe80::a (or fd00::a) > ff02::16, hop-by-hop router alert, then `msg` with
    /// its ICMPv6 checksum filled in.
    fn mld(mut msg: Vec<u8>, link_local: bool) -> Vec<u8> {
        let mut src = [0u8; 16];
        src[..2].copy_from_slice(if link_local {
            &[0xfe, 0x80]
        } else {
            &[0xfd, 0]
        });
        src[15] = 0x0a;
        let dst = [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x16];
        let mut sum = ones_complement_sum(&src, 0);
        sum = ones_complement_sum(&dst, sum);
        sum = ones_complement_sum(&(msg.len() as u32).to_be_bytes(), sum);
        sum = ones_complement_sum(&[0, 0, 0, IPPROTO_ICMPV6], sum);
        sum = ones_complement_sum(&msg, sum);
        let c = !fold(sum);
        msg[2..4].copy_from_slice(&c.to_be_bytes());
        let mut p = vec![0x60, 0, 0, 0, 0, 0, NEXTHDR_HOP, 1];
        p[4..6].copy_from_slice(&((8 + msg.len()) as u16).to_be_bytes());
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&[IPPROTO_ICMPV6, 0, 5, 2, 0, 0, 1, 0]);
        p.extend_from_slice(&msg);
        p
    }

    fn v1_report() -> Vec<u8> {
        let mut m = vec![ICMPV6_MGM_REPORT, 0, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfb]);
        m
    }

    #[test]
    fn mld_checks() {
        assert_eq!(ipv6_mc_check_mld(&mld(v1_report(), true), false), Ok(()));
        let mut bad = mld(v1_report(), true);
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(
            ipv6_mc_check_mld(&bad, false),
            Err("bad ICMPv6 checksum (ipv6_mc_check_icmpv6)")
        );
        // A validated checksum is not summed again.
        assert_eq!(ipv6_mc_check_mld(&bad, true), Ok(()));
        // A general query must come from a link-local address and go to ff02::1.
        let mut q = v1_report();
        q[0] = ICMPV6_MGM_QUERY;
        q[8..].fill(0);
        assert!(ipv6_mc_check_mld(&mld(q.clone(), false), false).is_err());
        assert_eq!(
            ipv6_mc_check_mld(&mld(q, true), false),
            Err("general MLD query not sent to ff02::1 (ipv6_mc_check_mld_query)")
        );
        // An MLDv2 report announcing one record of 20 bytes but carrying 16.
        let mut r2 = vec![ICMPV6_MLD2_REPORT, 0, 0, 0, 0, 0, 0, 1, 4, 0, 0, 0];
        r2.extend_from_slice(&[0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(ipv6_mc_check_mld(&mld(r2.clone(), true), false).is_err());
        r2.extend_from_slice(&[0, 0, 0, 0xfb]);
        assert_eq!(ipv6_mc_check_mld(&mld(r2, true), false), Ok(()));
        // Not behind a hop-by-hop header: not MLD, passed on (-ENOMSG).
        let mut udp = mld(v1_report(), true);
        udp[6] = 17;
        assert_eq!(ipv6_mc_check_mld(&udp, false), Ok(()));
        // payload_len 0 is refused before anything else.
        udp[4..6].fill(0);
        assert!(ipv6_mc_check_mld(&udp, false).is_err());
    }

    #[test]
    fn igmp_checks() {
        // IPv4 224.0.0.1 general query (IGMPv2, 8 bytes) and a v3 report with one record.
        let ip = |l4: &[u8], daddr: [u8; 4]| {
            let mut h = vec![
                0x45,
                0,
                0,
                0,
                0,
                1,
                0,
                0,
                1,
                IPPROTO_IGMP,
                0,
                0,
                10,
                0,
                0,
                1,
            ];
            h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
            h.extend_from_slice(&daddr);
            let c = checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            let mut m = l4.to_vec();
            let c = checksum(&m);
            m[2..4].copy_from_slice(&c.to_be_bytes());
            h.extend_from_slice(&m);
            h
        };
        let q = [IGMP_HOST_MEMBERSHIP_QUERY, 100, 0, 0, 0, 0, 0, 0];
        assert_eq!(ipv4_rcv(&ip(&q, [224, 0, 0, 1]), false), Ok(()));
        assert!(ipv4_rcv(&ip(&q, [239, 1, 1, 1]), false).is_err());
        let r3 = [
            IGMPV3_HOST_MEMBERSHIP_REPORT,
            0,
            0,
            0,
            0,
            0,
            0,
            1,
            4,
            0,
            0,
            1,
            239,
            1,
            1,
            1,
        ];
        assert!(
            ipv4_rcv(&ip(&r3, [224, 0, 0, 22]), false).is_err(),
            "the source is missing"
        );
        let mut ok = r3.to_vec();
        ok.extend_from_slice(&[10, 0, 0, 9]);
        assert_eq!(ipv4_rcv(&ip(&ok, [224, 0, 0, 22]), false), Ok(()));
        // Other IP protocols pass, whatever follows.
        let mut udp = ip(&q, [224, 0, 0, 1]);
        udp[9] = 17;
        udp[10..12].fill(0);
        let c = checksum(&udp[..20]);
        udp[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(ipv4_rcv(&udp, false), Ok(()));
    }
}
