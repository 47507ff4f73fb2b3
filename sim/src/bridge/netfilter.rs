//! br_netfilter's checks on a bridged IP frame (net/bridge/br_netfilter_hooks.c:
//! br_nf_pre_routing, br_validate_ipv4; net/bridge/br_netfilter_ipv6.c:
//! br_validate_ipv6), applied when `bridge-nf-call-iptables` / `-ip6tables` are on.
//! Only an untagged frame is looked at: `IS_IP`/`IS_IPV6` need no hw-accel tag, and the
//! in-band cases (`is_vlan_ip`, `is_pppoe_ip`) need `bridge-nf-filter-vlan-tagged` /
//! `-pppoe-tagged`, which are off by default.

use crate::consts::IPPROTO_HOPOPTS;
use crate::wire::{be32_at, ipv4, ipv6};

/// `IPV6_TLV_PAD1`, `IPV6_TLV_PADN`, `IPV6_TLV_JUMBO` (include/uapi/linux/in6.h).
const IPV6_TLV_PAD1: u8 = 0;
const IPV6_TLV_PADN: u8 = 1;
const IPV6_TLV_JUMBO: u8 = 194;
/// `IPV6_MAXPLEN` (include/uapi/linux/ipv6.h).
const IPV6_MAXPLEN: u32 = 65535;

/// What br_validate_ipv4 / br_validate_ipv6 decided about the bytes from the network
/// header on: the length to trim them to (`pskb_trim_rcsum`), or why the skb is freed.
pub type Validation = Result<usize, &'static str>;

/// br_validate_ipv4 on `net` (the skb from its network header). `gso_tcpv4` is whether
/// the skb is a TCPv4 GSO skb, for which `skb_ip_totlen` takes a zero `tot_len` (BIG TCP)
/// as the skb's own length.
pub fn validate_ipv4(net: &[u8], gso_tcpv4: bool) -> Validation {
    let ip = ipv4::Packet::new_unchecked(net);
    if ip.check_len().is_err() {
        return Err("IPv4 header truncated (pskb_may_pull)");
    }
    let ihl = ip.header_len();
    if ihl < ipv4::HEADER_LEN || ip.version() != 4 {
        return Err("bad IPv4 version or ihl");
    }
    if net.len() < ihl {
        return Err("IPv4 options truncated (pskb_may_pull)");
    }
    if !ip.verify_checksum() {
        return Err("bad IPv4 header checksum (ip_fast_csum)");
    }
    let tot = usize::from(ip.total_len());
    let len = if tot == 0 && gso_tcpv4 {
        net.len()
    } else {
        tot
    };
    if net.len() < len {
        return Err("IPv4 tot_len beyond the frame (INTRUNCATEDPKTS)");
    }
    if len < ihl {
        return Err("IPv4 tot_len shorter than the header");
    }
    Ok(len)
}

/// br_validate_ipv6 on `net`.
pub fn validate_ipv6(net: &[u8]) -> Validation {
    let ip = ipv6::Packet::new_unchecked(net);
    if ip.check_len().is_err() {
        return Err("IPv6 header truncated (pskb_may_pull)");
    }
    if ip.version() != 6 {
        return Err("bad IPv6 version");
    }
    let mut pkt_len = u32::from(ip.payload_len());
    if ip.next_header() == IPPROTO_HOPOPTS {
        pkt_len = check_hbh_len(net, pkt_len)?;
    }
    let len = usize::try_from(pkt_len)
        .unwrap_or(usize::MAX)
        .saturating_add(ipv6::HEADER_LEN);
    if len > net.len() {
        return Err("IPv6 payload_len beyond the frame (INTRUNCATEDPKTS)");
    }
    Ok(len)
}

/// net/netfilter/utils.c: nf_ip6_check_hbh_len: walk the hop-by-hop options; a jumbo
/// option supplies the length when payload_len is 0.
fn check_hbh_len(net: &[u8], mut pkt_len: u32) -> Result<u32, &'static str> {
    const BAD: &str = "bad IPv6 hop-by-hop header (nf_ip6_check_hbh_len)";
    // The whole header must be in the frame (the view's check: hdrlen's 8-byte units).
    let after_fixed = net.get(ipv6::HEADER_LEN..).unwrap_or(&[]);
    let Ok(hbh) = ipv6::ExtHeader::new_checked(IPPROTO_HOPOPTS, after_fixed) else {
        return Err(BAD);
    };
    // The options (IPV6_TLV_*) are walked by offset in `net`, as the kernel's loop is.
    let end = ipv6::HEADER_LEN + hbh.header_len();
    let mut off = ipv6::HEADER_LEN + 2;
    while off < end {
        let kind = net[off];
        if kind == IPV6_TLV_PAD1 {
            off += 1;
            continue;
        }
        let Some(&optlen) = net.get(off + 1) else {
            return Err(BAD);
        };
        let optlen = usize::from(optlen) + 2;
        if off + optlen > end {
            return Err(BAD);
        }
        match kind {
            IPV6_TLV_PADN => {}
            IPV6_TLV_JUMBO => {
                if optlen != 6 || off & 3 != 2 {
                    return Err(BAD);
                }
                let jumbo = be32_at(net, off + 2).unwrap_or(0);
                if jumbo <= IPV6_MAXPLEN || pkt_len != 0 {
                    return Err(BAD);
                }
                if u64::from(jumbo) > (net.len() - 40) as u64 {
                    return Err(BAD);
                }
                pkt_len = jumbo;
            }
            _ => {}
        }
        off += optlen;
    }
    if off != end {
        return Err(BAD);
    }
    Ok(pkt_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::checksum::checksum;

    /// A 20-byte IPv4 header with a correct checksum, tot_len `tot`.
    fn ipv4(tot: u16) -> Vec<u8> {
        let mut h = vec![
            0x45, 0, 0, 0, 0, 1, 0, 0, 1, 2, 0, 0, 10, 0, 0, 1, 224, 0, 0, 1,
        ];
        h[2..4].copy_from_slice(&tot.to_be_bytes());
        let c = checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    #[test]
    fn ipv4_padding_is_trimmed_to_tot_len() {
        // IGMP padded to the Ethernet minimum: 28 bytes of IP, then 18 of padding.
        let mut p = ipv4(28);
        p.resize(46, 0);
        assert_eq!(validate_ipv4(&p, false), Ok(28));
    }

    #[test]
    fn ipv4_bad_headers_are_dropped() {
        let mut p = ipv4(28);
        p.resize(28, 0);
        let mut bad = p.clone();
        bad[10] ^= 1;
        assert!(validate_ipv4(&bad, false).is_err());
        let mut v6 = p.clone();
        v6[0] = 0x65;
        assert!(validate_ipv4(&v6, false).is_err());
        let long = ipv4(60);
        let mut long = long.clone();
        long.resize(28, 0);
        assert_eq!(
            validate_ipv4(&long, false),
            Err("IPv4 tot_len beyond the frame (INTRUNCATEDPKTS)")
        );
        assert!(validate_ipv4(&p[..19], false).is_err());
    }

    #[test]
    fn ipv6_is_trimmed_to_payload_len() {
        let mut p = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
        p.resize(40 + 8 + 6, 0);
        assert_eq!(validate_ipv6(&p), Ok(48));
        p[5] = 20;
        assert!(validate_ipv6(&p).is_err());
        p[0] = 0x40;
        assert_eq!(validate_ipv6(&p), Err("bad IPv6 version"));
    }

    #[test]
    fn ipv6_hop_by_hop_is_walked() {
        // HBH with router alert (type 5, len 2) + PadN(0): 8 bytes, then 8 of payload.
        let mut p = vec![0x60, 0, 0, 0, 0, 16, IPPROTO_HOPOPTS, 1];
        p.resize(40, 0);
        p.extend_from_slice(&[58, 0, 5, 2, 0, 0, 1, 0]);
        p.extend_from_slice(&[0; 8]);
        assert_eq!(validate_ipv6(&p), Ok(56));
        // An option running past the header.
        p[43] = 9;
        assert!(validate_ipv6(&p).is_err());
    }
}
