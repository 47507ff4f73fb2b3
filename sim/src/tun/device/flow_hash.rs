//! The flow hash tun's automatic queue selection uses: `__skb_get_hash_symmetric`
//! (net/core/flow_dissector.c): `__skb_flow_dissect` with `flow_keys_dissector_symmetric`
//! (keys CONTROL, BASIC, IPV4_ADDRS, IPV6_ADDRS, PORTS), then `__flow_hash_from_keys`:
//! `__flow_hash_consistentify`, `siphash` (lib/siphash.c, SipHash-2-4) of `struct
//! flow_keys` from `basic` on, keyed by `hashrnd`, and 0 made 1.
//!
//! `hashrnd` is random in the kernel (`net_get_random_once`); the model uses a fixed key
//! ([`HASHRND`]), so hash values, and the queue `reciprocal_scale` picks from them, are
//! not the kernel's. What is comparable: one flow always hashes the same, both directions
//! of a flow hash the same, and the queue a flow was last written on (the flow table).
//! docs/tun-device.md#automq.

/// The model's `hashrnd`: the SipHash reference key 00 01 .. 0f.
pub const HASHRND: [u64; 2] = [0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908];

const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;

/// The keys the symmetric dissector fills, as `struct flow_keys` holds them (network byte
/// order, raw).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowKeys {
    /// key_basic->n_proto, host order.
    pub n_proto: u16,
    pub ip_proto: u8,
    /// key_ports: source then destination port, as on the wire.
    pub ports: [[u8; 2]; 2],
    pub addrs: FlowAddrs,
}

/// key_control->addr_type and key_addrs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowAddrs {
    #[default]
    None,
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

/// proto_ports_offset (include/linux/in.h): where the 4 "port" bytes are for `ip_proto`.
fn proto_ports_offset(ip_proto: u8) -> Option<usize> {
    match ip_proto {
        // TCP, UDP, DCCP, ESP (the SPI), SCTP, UDPLITE
        6 | 17 | 33 | 50 | 132 | 136 => Some(0),
        // AH: the SPI after next header, length and reserved
        51 => Some(4),
        _ => None,
    }
}

/// __skb_flow_dissect over `pkt`, starting at `nhoff` with `proto` (skb->protocol),
/// as far as the symmetric keys go: VLAN tags in the packet, IPv4 (fragments stop before
/// the ports: no FLOW_DISSECTOR_F_PARSE_1ST_FRAG), IPv6 with hop-by-hop, routing,
/// destination and fragment headers, IP-in-IP and IPv6-in-IP (the inner header's keys
/// replace the outer's). Anything else ends with just n_proto. GRE, MPLS and the other
/// encapsulations the kernel follows are not modelled.
pub fn dissect(pkt: &[u8], mut nhoff: usize, mut proto: u16) -> FlowKeys {
    let mut k = FlowKeys::default();
    let mut fragment = false;
    // proto_again / ip_proto_again, bounded like the kernel's MAX_FLOW_DISSECT_HDRS (15).
    let mut ip_proto: Option<u8> = None;
    for _ in 0..15 {
        let next = match ip_proto {
            None => match proto {
                ETH_P_8021Q | ETH_P_8021AD => {
                    let Some(h) = pkt.get(nhoff..nhoff + 4) else {
                        break;
                    };
                    proto = u16::from_be_bytes([h[2], h[3]]);
                    nhoff += 4;
                    continue;
                }
                ETH_P_IP => {
                    let Some(h) = pkt.get(nhoff..nhoff + 20) else {
                        break;
                    };
                    let ihl = usize::from(h[0] & 0x0f);
                    if ihl < 5 {
                        break;
                    }
                    nhoff += ihl * 4;
                    k.ip_proto = h[9];
                    k.addrs = FlowAddrs::V4(
                        h[12..16].try_into().expect("4"),
                        h[16..20].try_into().expect("4"),
                    );
                    // ip_is_fragment: MF or an offset.
                    if u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
                        fragment = true;
                        break;
                    }
                    h[9]
                }
                ETH_P_IPV6 => {
                    let Some(h) = pkt.get(nhoff..nhoff + 40) else {
                        break;
                    };
                    nhoff += 40;
                    k.ip_proto = h[6];
                    k.addrs = FlowAddrs::V6(
                        h[8..24].try_into().expect("16"),
                        h[24..40].try_into().expect("16"),
                    );
                    h[6]
                }
                _ => break,
            },
            Some(p) => p,
        };
        k.ip_proto = next;
        ip_proto = None;
        match next {
            // NEXTHDR_HOP, NEXTHDR_ROUTING, NEXTHDR_DEST (only inside IPv6)
            0 | 43 | 60 if proto == ETH_P_IPV6 => {
                let Some(h) = pkt.get(nhoff..nhoff + 2) else {
                    break;
                };
                ip_proto = Some(h[0]);
                nhoff += (usize::from(h[1]) + 1) << 3;
            }
            // NEXTHDR_FRAGMENT: every fragment ends the dissection (no PARSE_1ST_FRAG).
            44 if proto == ETH_P_IPV6 => {
                if let Some(h) = pkt.get(nhoff..nhoff + 8) {
                    k.ip_proto = h[0];
                }
                fragment = true;
                break;
            }
            // IPPROTO_IPIP, IPPROTO_IPV6: proto_again with the inner header.
            4 => proto = ETH_P_IP,
            41 => proto = ETH_P_IPV6,
            _ => {
                if let Some(off) = proto_ports_offset(next) {
                    if let Some(p) = pkt.get(nhoff + off..nhoff + off + 4) {
                        k.ports = [[p[0], p[1]], [p[2], p[3]]];
                    }
                }
                break;
            }
        }
    }
    // out: key_basic->n_proto = proto (the last network protocol reached).
    k.n_proto = proto;
    if fragment {
        k.ports = [[0; 2]; 2];
    }
    k
}

/// __flow_hash_consistentify, the kernel's later form: the addresses in order, and the
/// ports in order, each compared as the x86 kernel compares them (`(__force u32)` of the
/// big-endian bytes: a little-endian load; memcmp for IPv6).
fn consistentify(k: &mut FlowKeys) {
    let swap_ports = u16::from_le_bytes(k.ports[1]) < u16::from_le_bytes(k.ports[0]);
    match &mut k.addrs {
        FlowAddrs::None => return,
        FlowAddrs::V4(src, dst) => {
            if u32::from_le_bytes(*dst) < u32::from_le_bytes(*src) {
                std::mem::swap(src, dst);
            }
        }
        FlowAddrs::V6(src, dst) => {
            if dst < src {
                std::mem::swap(src, dst);
            }
        }
    }
    if swap_ports {
        k.ports.swap(0, 1);
    }
}

/// The bytes siphash reads: `struct flow_keys` from `basic` to the end of the addresses
/// of addr_type (flow_keys_hash_length): basic (4), tags (4), vlan (8), cvlan (8), keyid
/// (4), ports (4), icmp (4), then 0, 8 or 32 address bytes. Keys the symmetric dissector
/// does not fill are zero.
fn hash_input(k: &FlowKeys) -> Vec<u8> {
    let mut b = vec![0u8; 36];
    b[0..2].copy_from_slice(&k.n_proto.to_be_bytes());
    b[2] = k.ip_proto;
    b[28..30].copy_from_slice(&k.ports[0]);
    b[30..32].copy_from_slice(&k.ports[1]);
    match k.addrs {
        FlowAddrs::None => {}
        FlowAddrs::V4(s, d) => {
            b.extend_from_slice(&s);
            b.extend_from_slice(&d);
        }
        FlowAddrs::V6(s, d) => {
            b.extend_from_slice(&s);
            b.extend_from_slice(&d);
        }
    }
    b
}

/// __flow_hash_from_keys.
pub fn flow_hash_from_keys(mut k: FlowKeys, hashrnd: [u64; 2]) -> u32 {
    consistentify(&mut k);
    let hash = siphash(hashrnd, &hash_input(&k)) as u32;
    if hash == 0 {
        1
    } else {
        hash
    }
}

/// __skb_get_hash_symmetric of a packet whose network header is at `nhoff`.
pub fn hash_symmetric(pkt: &[u8], nhoff: usize, proto: u16, hashrnd: [u64; 2]) -> u32 {
    flow_hash_from_keys(dissect(pkt, nhoff, proto), hashrnd)
}

/// SipHash-2-4 with a 64-bit result (lib/siphash.c: siphash).
pub fn siphash(key: [u64; 2], data: &[u8]) -> u64 {
    let mut v = [
        0x736f_6d65_7073_6575 ^ key[0],
        0x646f_7261_6e64_6f6d ^ key[1],
        0x6c79_6765_6e65_7261 ^ key[0],
        0x7465_6462_7974_6573 ^ key[1],
    ];
    fn round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let m = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let mut last = [0u8; 8];
    let rest = chunks.remainder();
    last[..rest.len()].copy_from_slice(rest);
    let m = u64::from_le_bytes(last) | ((data.len() as u64) << 56);
    v[3] ^= m;
    round(&mut v);
    round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siphash_matches_the_reference_vectors() {
        // The SipHash paper (Aumasson, Bernstein), appendix A: key 00..0f, message 00..0e.
        let msg: Vec<u8> = (0u8..15).collect();
        assert_eq!(siphash(HASHRND, &msg), 0xa129_ca61_49be_45e5);
        // vectors.h of the reference implementation, entry 0 (empty message).
        assert_eq!(siphash(HASHRND, &[]), 0x726f_db47_dd0e_0e31);
    }

    fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, frag: u16) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0];
        p[6..8].copy_from_slice(&frag.to_be_bytes());
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&dport.to_be_bytes());
        p.extend_from_slice(&[0, 8, 0, 0]);
        p
    }

    #[test]
    fn ipv4_udp_keys_and_both_directions_hash_the_same() {
        let a = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, 0);
        let k = dissect(&a, 0, ETH_P_IP);
        assert_eq!(k.n_proto, ETH_P_IP);
        assert_eq!(k.ip_proto, 17);
        assert_eq!(k.ports, [[0x03, 0xe8], [0, 53]]);
        assert_eq!(k.addrs, FlowAddrs::V4([10, 0, 0, 1], [10, 0, 0, 2]));
        let b = udp4([10, 0, 0, 2], [10, 0, 0, 1], 53, 1000, 0);
        let h = hash_symmetric(&a, 0, ETH_P_IP, HASHRND);
        assert_eq!(h, hash_symmetric(&b, 0, ETH_P_IP, HASHRND));
        // Another port is another flow.
        let c = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1001, 53, 0);
        assert_ne!(h, hash_symmetric(&c, 0, ETH_P_IP, HASHRND));
    }

    #[test]
    fn fragments_have_no_ports_and_a_vlan_tag_is_skipped() {
        // MF set: ip_is_fragment, the dissection stops before the ports.
        let f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, 0x2000);
        assert_eq!(dissect(&f, 0, ETH_P_IP).ports, [[0; 2]; 2]);
        let mut tagged = vec![0, 5, 0x08, 0x00];
        tagged.extend_from_slice(&udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, 0));
        let k = dissect(&tagged, 0, ETH_P_8021Q);
        assert_eq!((k.n_proto, k.ip_proto), (ETH_P_IP, 17));
    }

    #[test]
    fn a_non_ip_frame_keeps_only_its_protocol() {
        let k = dissect(&[0u8; 28], 0, 0x0806);
        assert_eq!(
            k,
            FlowKeys {
                n_proto: 0x0806,
                ..FlowKeys::default()
            }
        );
    }
}
