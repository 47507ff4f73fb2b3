//! Link-layer normalizer: what a tap (Ethernet frames) or an IFF_TUN device (L3
//! packets) is given for a captured frame of each supported link type.
//!
//! Everything here is allocation-free: Ethernet frames pass through borrowed, converted
//! frames are built in a buffer the caller owns and reuses ([`to_ethernet`]), and L3
//! packets are always sub-slices of the captured bytes ([`to_l3`]).
//!
//! Link types follow tcpdump.org's `linktypes.html` and its per-type pages
//! (`LINKTYPE_LINUX_SLL.html`, `LINKTYPE_LINUX_SLL2.html`, `LINKTYPE_NULL.html`).
//!
//! # How a frame becomes Ethernet
//!
//! | link type | EtherType | source MAC | destination MAC |
//! |---|---|---|---|
//! | ETHERNET (1) | as captured | as captured | as captured |
//! | RAW (101) | IP version nibble: 4 → 0x0800, 6 → 0x86DD | [`EthSynth::src`] | [`EthSynth::dst`] |
//! | IPV4 (228), IPV6 (229) | 0x0800, 0x86DD | `src` | `dst` |
//! | NULL (0), LOOP (108) | address family: 2 → 0x0800; 24, 28, 30 → 0x86DD | `src` | `dst` |
//! | LINUX_SLL (113), LINUX_SLL2 (276) | the header's protocol field | see below | see below |
//! | PPP (9), NFLOG (239) | the PPP protocol, the NFLOG family | `src` | `dst` |
//! | IEEE802_11 (105), IEEE802_11_RADIOTAP (127), FDDI (10) | LLC/SNAP, or an 802.3 length | the frame's | the frame's |
//!
//! PPP, NFLOG, 802.11, radiotap, FDDI and 802.15.4 are read in [`encap`] (which
//! frames have a payload, and which are skipped: 802.11 management and control frames,
//! PPP control protocols, every 802.15.4 frame, ...). A skipped frame is
//! [`LinkTypeError::Skip`] with its [`SkipReason`]; [`super::EthernetInput`] counts it
//! in [`SkipCounts`] and goes on to the next frame.
//!
//! Cooked (SLL, SLL2) frames: the source MAC is the header's link-layer address when
//! the ARPHRD type is `ARPHRD_ETHER` (1) or `ARPHRD_LOOPBACK` (772; Linux loopback
//! frames carry a real, all-zero, Ethernet header) and the address length is 6;
//! otherwise [`EthSynth::src`]. The destination comes from the packet type
//! (`include/uapi/linux/if_packet.h`):
//!
//! * `PACKET_BROADCAST` (1): ff:ff:ff:ff:ff:ff.
//! * `PACKET_MULTICAST` (2) and every other type whose IP destination is multicast or
//!   the IPv4 limited broadcast: the MAC that address maps to (RFC 1112 §6.4:
//!   01:00:5e + low 23 bits; RFC 2464 §7: 33:33 + low 32 bits; 255.255.255.255 →
//!   broadcast). A multicast frame that is not IP gets [`EthSynth::dst`] with its
//!   group bit set, so `eth_type_trans` still sees a multicast frame.
//! * `PACKET_HOST` (0), `PACKET_OUTGOING` (4) and the rest: [`EthSynth::dst`]. The
//!   cooked header does not keep the real destination; for outgoing frames to a
//!   unicast or subnet-broadcast address it is lost.
//!
//! Protocol field values below 0x0600 are not EtherTypes. `0x0004` (ETH_P_802_2: the
//! payload starts with an 802.2 LLC header) and `0x0001` (ETH_P_802_3: Novell "raw"
//! 802.3, the payload starts with 0xffff) become 802.3 frames whose length field is the
//! payload length (from the frame's original length, so a truncated capture keeps the
//! true value) — exactly what `net/ethernet/eth.c: eth_type_trans` turns back into
//! ETH_P_802_2 / ETH_P_802_3. Other values (CAN, ...) are refused, as are cooked frames
//! of ARPHRD_NETLINK (824), ARPHRD_IEEE80211_RADIOTAP (803) and the CAN types (280),
//! whose payloads are no network-layer packets.
//!
//! # What an IFF_TUN device is given
//!
//! [`to_l3`] returns the network-layer packet and its protocol: RAW/IPV4/IPV6 as
//! captured; NULL/LOOP and cooked frames after their header; Ethernet frames after the
//! 14-byte header **and any in-band 802.1Q/802.1ad/QinQ tags**, because a tun device
//! carries untagged L3 packets (`drivers/net/tun.c: tun_net_xmit` queues the skb from
//! its network header; a VLAN tag belongs to the L2 device the packet came from).

use crate::consts::{ETH_HLEN, VLAN_HLEN};
use crate::consts::{ETH_P_802_2, ETH_P_802_3, ETH_P_802_3_MIN};
use crate::consts::{ETH_P_IP, ETH_P_IPV6};
use crate::ethernet::encap_proto;
use crate::wire::ethernet;
use crate::wire::walk::{vlan_tags, TpidRule};
use crate::wire::{ipv4, ipv6};

pub mod encap;
mod error;
mod ieee80211;
mod nflog;
mod skip;

pub use encap::{
    LINKTYPE_FDDI, LINKTYPE_IEEE802_11, LINKTYPE_IEEE802_11_RADIOTAP, LINKTYPE_IEEE802_15_4_NOFCS,
    LINKTYPE_IEEE802_15_4_WITHFCS, LINKTYPE_NFLOG, LINKTYPE_PPP,
};
pub use error::LinkTypeError;
pub use skip::{SkipCounts, SkipReason};

/// LINKTYPE_NULL: BSD loopback, a 4-byte address family in the capturing host's order.
pub const LINKTYPE_NULL: u32 = 0;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// LINKTYPE_RAW: an IPv4 or IPv6 packet, no link-layer header.
pub const LINKTYPE_RAW: u32 = 101;
/// LINKTYPE_LOOP: OpenBSD loopback, a 4-byte big-endian address family.
pub const LINKTYPE_LOOP: u32 = 108;
/// LINKTYPE_LINUX_SLL: Linux "cooked" capture v1 (16-byte header).
pub const LINKTYPE_LINUX_SLL: u32 = 113;
/// LINKTYPE_IPV4: an IPv4 packet, no link-layer header.
pub const LINKTYPE_IPV4: u32 = 228;
/// LINKTYPE_IPV6: an IPv6 packet, no link-layer header.
pub const LINKTYPE_IPV6: u32 = 229;
/// LINKTYPE_LINUX_SLL2: Linux "cooked" capture v2 (20-byte header).
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

/// Every link type [`to_ethernet`] and [`to_l3`] convert, in the order error messages
/// list them.
pub const SUPPORTED: [u32; 15] = [
    LINKTYPE_ETHERNET,
    LINKTYPE_RAW,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_NULL,
    LINKTYPE_LOOP,
    LINKTYPE_PPP,
    LINKTYPE_NFLOG,
    LINKTYPE_IEEE802_11,
    LINKTYPE_IEEE802_11_RADIOTAP,
    LINKTYPE_FDDI,
    LINKTYPE_IEEE802_15_4_WITHFCS,
    LINKTYPE_IEEE802_15_4_NOFCS,
];

/// Whether [`to_ethernet`] and [`to_l3`] convert frames of `link_type`.
pub fn is_supported(link_type: u32) -> bool {
    SUPPORTED.contains(&link_type)
}

use crate::consts::ETH_DATA_LEN;

const ARPHRD_ETHER: u16 = 1;
const ARPHRD_CAN: u16 = 280;
const ARPHRD_LOOPBACK: u16 = 772;
const ARPHRD_IEEE80211_RADIOTAP: u16 = 803;
const ARPHRD_NETLINK: u16 = 824;

const PACKET_BROADCAST: u8 = 1;
const PACKET_MULTICAST: u8 = 2;

/// BSD address families that mean IPv6 in NULL/LOOP headers: NetBSD/OpenBSD/BSD/OS
/// (and Npcap), FreeBSD, Darwin (tcpdump's `af.h`). AF_INET is 2 everywhere.
const BSD_AF_INET: u32 = 2;
const BSD_AF_INET6: [u32; 3] = [24, 28, 30];

const BROADCAST: [u8; 6] = [0xff; 6];

/// The MAC addresses given to frames whose capture has none (raw IP, NULL/LOOP, and
/// the addresses a cooked header does not keep). Both defaults are locally
/// administered unicast addresses (bit 1 of the first octet set, bit 0 clear), so
/// they collide with no vendor's:
///
/// * `src`: 02:00:00:00:00:01, the peer the frames come from;
/// * `dst`: 02:00:00:00:00:02, the device they are replayed into.
///
/// A scenario's `[link]` table sets them as `src_mac` and `dst_mac`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EthSynth {
    #[serde(rename = "src_mac", deserialize_with = "mac_text")]
    pub src: [u8; 6],
    #[serde(rename = "dst_mac", deserialize_with = "mac_text")]
    pub dst: [u8; 6],
}

/// A MAC address as [`parse_mac`] reads it.
fn mac_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[u8; 6], D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    parse_mac(&text).ok_or_else(|| {
        serde::de::Error::custom(format!("{text:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"))
    })
}

impl EthSynth {
    /// Default source MAC, 02:00:00:00:00:01.
    pub const DEFAULT_SRC: [u8; 6] = [2, 0, 0, 0, 0, 1];
    /// Default destination MAC, 02:00:00:00:00:02.
    pub const DEFAULT_DST: [u8; 6] = [2, 0, 0, 0, 0, 2];
}

impl Default for EthSynth {
    fn default() -> Self {
        EthSynth {
            src: Self::DEFAULT_SRC,
            dst: Self::DEFAULT_DST,
        }
    }
}

/// Parses `aa:bb:cc:dd:ee:ff` (or with `-`), the form scenario files and errors use.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split([':', '-']);
    for byte in &mut mac {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// A frame as Ethernet, from [`to_ethernet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthFrame<'a> {
    /// The Ethernet frame: the captured bytes themselves for LINKTYPE_ETHERNET,
    /// otherwise the caller's buffer.
    pub data: &'a [u8],
    /// Bytes of link-layer header (and trailer: an FCS, what follows an NFLOG payload)
    /// the conversion removed from the frame on the wire.
    pub removed: usize,
    /// Bytes of Ethernet header it put in their place.
    pub added: usize,
}

impl EthFrame<'_> {
    /// The converted frame's length on the wire, given the captured one's (a truncated
    /// capture stays truncated by the same amount).
    pub fn orig_len(&self, orig_len: u32) -> u32 {
        let l = u64::from(orig_len).saturating_sub(self.removed as u64) + self.added as u64;
        u32::try_from(l).unwrap_or(u32::MAX)
    }

    /// Whether the frame was copied into the caller's buffer.
    pub fn converted(&self) -> bool {
        self.removed != 0 || self.added != 0
    }
}

/// A network-layer packet, from [`to_l3`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3Packet<'a> {
    /// Its EtherType (0x0800, 0x86DD, ...; the cooked protocol field for SLL).
    pub protocol: u16,
    /// The packet: always a sub-slice of the captured bytes.
    pub data: &'a [u8],
}

/// Fields of a Linux cooked header that the conversion uses.
#[derive(Debug, Clone, Copy)]
struct Cooked {
    header_len: usize,
    pkttype: u8,
    arphrd: u16,
    halen: u8,
    addr: [u8; 8],
    protocol: u16,
}

/// A big-endian field of a cooked header (no view: SLL is libpcap's, not the kernel's).
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn short(link_type: u32, len: usize, need: usize) -> LinkTypeError {
    LinkTypeError::Short {
        link_type,
        len,
        need,
    }
}

/// Parses an SLL (16 bytes: packet type, ARPHRD type, address length, 8-byte address,
/// protocol) or SLL2 (20 bytes: protocol, reserved, ifindex, ARPHRD type, packet type,
/// address length, 8-byte address) header; all fields big-endian.
fn cooked(link_type: u32, data: &[u8]) -> Result<Cooked, LinkTypeError> {
    let sll2 = link_type == LINKTYPE_LINUX_SLL2;
    let header_len = if sll2 { 20 } else { 16 };
    if data.len() < header_len {
        return Err(short(link_type, data.len(), header_len));
    }
    let mut addr = [0u8; 8];
    let c = if sll2 {
        addr.copy_from_slice(&data[12..20]);
        Cooked {
            header_len,
            protocol: be16(data, 0),
            arphrd: be16(data, 8),
            pkttype: data[10],
            halen: data[11],
            addr,
        }
    } else {
        addr.copy_from_slice(&data[6..14]);
        Cooked {
            header_len,
            pkttype: be16(data, 0) as u8,
            arphrd: be16(data, 2),
            halen: be16(data, 4).min(8) as u8,
            addr,
            protocol: be16(data, 14),
        }
    };
    match c.arphrd {
        ARPHRD_NETLINK | ARPHRD_IEEE80211_RADIOTAP | ARPHRD_CAN => {
            Err(LinkTypeError::CookedProtocol {
                link_type,
                arphrd: c.arphrd,
                protocol: c.protocol,
            })
        }
        _ if c.protocol < ETH_P_802_3_MIN
            && c.protocol != ETH_P_802_2
            && c.protocol != ETH_P_802_3 =>
        {
            Err(LinkTypeError::CookedProtocol {
                link_type,
                arphrd: c.arphrd,
                protocol: c.protocol,
            })
        }
        _ => Ok(c),
    }
}

/// The EtherType for a NULL/LOOP address family.
fn family(link_type: u32, data: &[u8]) -> Result<u16, LinkTypeError> {
    if data.len() < 4 {
        return Err(short(link_type, data.len(), 4));
    }
    let b = [data[0], data[1], data[2], data[3]];
    let family = if link_type == LINKTYPE_LOOP {
        u32::from_be_bytes(b)
    } else {
        // NULL is in the capturing host's byte order. Families are small numbers, so a
        // value with upper 16 bits set was written the other way round (Wireshark's
        // packet-null.c and tcpdump's print-null.c make the same guess).
        let le = u32::from_le_bytes(b);
        if le & 0xffff_0000 != 0 {
            le.swap_bytes()
        } else {
            le
        }
    };
    match family {
        BSD_AF_INET => Ok(ETH_P_IP),
        f if BSD_AF_INET6.contains(&f) => Ok(ETH_P_IPV6),
        _ => Err(LinkTypeError::Family { link_type, family }),
    }
}

/// The EtherType of a RAW packet from its version nibble.
fn ip_version(link_type: u32, data: &[u8]) -> Result<u16, LinkTypeError> {
    match data.first().map(|b| b >> 4) {
        None => Err(short(link_type, 0, 1)),
        Some(4) => Ok(ETH_P_IP),
        Some(6) => Ok(ETH_P_IPV6),
        Some(version) => Err(LinkTypeError::IpVersion { link_type, version }),
    }
}

/// The multicast (or broadcast) MAC an IP destination maps to, if it is one.
fn ip_group_mac(protocol: u16, l3: &[u8]) -> Option<[u8; 6]> {
    match protocol {
        ETH_P_IP => {
            let ip = ipv4::Packet::new_unchecked(l3);
            if ip.check_len().is_err() || ip.version() != 4 {
                return None;
            }
            let d = ip.dst_addr().octets();
            if d == [255; 4] {
                Some(BROADCAST)
            } else if d[0] & 0xf0 == 0xe0 {
                Some([0x01, 0x00, 0x5e, d[1] & 0x7f, d[2], d[3]])
            } else {
                None
            }
        }
        ETH_P_IPV6 => {
            let ip = ipv6::Packet::new_unchecked(l3);
            if ip.check_len().is_err() || ip.version() != 6 {
                return None;
            }
            let d = ip.dst_addr().octets();
            (d[0] == 0xff).then_some([0x33, 0x33, d[12], d[13], d[14], d[15]])
        }
        _ => None,
    }
}

/// Writes an Ethernet header and `payload` into `out`.
fn emit<'o>(
    out: &'o mut Vec<u8>,
    dst: [u8; 6],
    src: [u8; 6],
    type_or_len: u16,
    payload: &[u8],
) -> &'o [u8] {
    out.clear();
    out.resize(ETH_HLEN, 0);
    let repr = ethernet::Repr {
        src_addr: src,
        dst_addr: dst,
        ethertype: type_or_len,
    };
    // `out` was just sized to ETH_HLEN, which is all emit needs.
    let _ = repr.emit(&mut ethernet::Packet::new_unchecked(&mut out[..]));
    out.extend_from_slice(payload);
    out
}

/// The frame as an Ethernet frame, for a tap. `orig_len` is the frame's length on the
/// wire (the capture's orig_len), which 802.3 length fields are computed from. See the
/// module docs for every link type's rule.
pub fn to_ethernet<'a>(
    link_type: u32,
    data: &'a [u8],
    orig_len: u32,
    macs: &EthSynth,
    out: &'a mut Vec<u8>,
) -> Result<EthFrame<'a>, LinkTypeError> {
    let (header, dst, src, type_or_len) = match link_type {
        LINKTYPE_ETHERNET => {
            return Ok(EthFrame {
                data,
                removed: 0,
                added: 0,
            })
        }
        LINKTYPE_RAW => (0, macs.dst, macs.src, ip_version(link_type, data)?),
        LINKTYPE_IPV4 => (0, macs.dst, macs.src, ETH_P_IP),
        LINKTYPE_IPV6 => (0, macs.dst, macs.src, ETH_P_IPV6),
        LINKTYPE_NULL | LINKTYPE_LOOP => (4, macs.dst, macs.src, family(link_type, data)?),
        LINKTYPE_LINUX_SLL | LINKTYPE_LINUX_SLL2 => {
            let c = cooked(link_type, data)?;
            let payload = &data[c.header_len..];
            let src = if matches!(c.arphrd, ARPHRD_ETHER | ARPHRD_LOOPBACK) && c.halen == 6 {
                let mut s = [0u8; 6];
                s.copy_from_slice(&c.addr[..6]);
                s
            } else {
                macs.src
            };
            let dst = match (c.pkttype, ip_group_mac(c.protocol, payload)) {
                (PACKET_BROADCAST, _) => BROADCAST,
                (_, Some(group)) => group,
                (PACKET_MULTICAST, None) => {
                    let mut d = macs.dst;
                    d[0] |= 1;
                    d
                }
                _ => macs.dst,
            };
            let type_or_len = if c.protocol < ETH_P_802_3_MIN {
                // 802.2 LLC or Novell raw: the payload as an 802.3 frame.
                let len = (orig_len as usize).saturating_sub(c.header_len);
                if len > ETH_DATA_LEN {
                    return Err(LinkTypeError::LengthField { link_type, len });
                }
                len as u16
            } else {
                c.protocol
            };
            (c.header_len, dst, src, type_or_len)
        }
        lt if encap::HANDLED.contains(&lt) => {
            let d = encap::decap(lt, data, orig_len)?;
            let (dst, src) = d.macs.unwrap_or((macs.dst, macs.src));
            let type_or_len = match d.ethertype {
                Some(t) => t,
                None if d.wire_len > ETH_DATA_LEN => {
                    return Err(LinkTypeError::LengthField {
                        link_type,
                        len: d.wire_len,
                    })
                }
                None => d.wire_len as u16,
            };
            return Ok(EthFrame {
                data: emit(out, dst, src, type_or_len, d.payload),
                removed: (orig_len as usize).saturating_sub(d.wire_len),
                added: ETH_HLEN,
            });
        }
        _ => return Err(LinkTypeError::Unsupported { link_type }),
    };
    let data = emit(out, dst, src, type_or_len, &data[header..]);
    Ok(EthFrame {
        data,
        removed: header,
        added: ETH_HLEN,
    })
}

/// Steps over VLAN tags (TPID, TCI) starting at `at`, whose type field said
/// `protocol`; returns the inner protocol and where its packet starts. A capture's tags
/// are the ones capture tools decode ([`TpidRule::Capture`]).
fn skip_tags(
    link_type: u32,
    data: &[u8],
    at: usize,
    protocol: u16,
) -> Result<(u16, usize), LinkTypeError> {
    let tags = vlan_tags(data, at, protocol, TpidRule::Capture, usize::MAX);
    if tags.truncated {
        return Err(short(link_type, data.len(), tags.offset + VLAN_HLEN));
    }
    Ok((tags.ethertype, tags.offset))
}

/// The frame's network-layer packet, for an IFF_TUN device. Never copies. See the
/// module docs: Ethernet frames lose their header and in-band VLAN tags.
pub fn to_l3(link_type: u32, data: &[u8]) -> Result<L3Packet<'_>, LinkTypeError> {
    let (protocol, start) = match link_type {
        LINKTYPE_RAW => (ip_version(link_type, data)?, 0),
        LINKTYPE_IPV4 => (ETH_P_IP, 0),
        LINKTYPE_IPV6 => (ETH_P_IPV6, 0),
        LINKTYPE_NULL | LINKTYPE_LOOP => (family(link_type, data)?, 4),
        LINKTYPE_LINUX_SLL | LINKTYPE_LINUX_SLL2 => {
            // libpcap re-inserts an offloaded VLAN tag as protocol ETH_P_8021Q + TCI + type.
            let c = cooked(link_type, data)?;
            skip_tags(link_type, data, c.header_len, c.protocol)?
        }
        LINKTYPE_ETHERNET => {
            let Ok(eth) = ethernet::Packet::new_checked(data) else {
                return Err(short(link_type, data.len(), ETH_HLEN));
            };
            skip_tags(link_type, data, ETH_HLEN, eth.ethertype())?
        }
        lt if encap::HANDLED.contains(&lt) => {
            // An LLC payload is what eth_type_trans would name it after an 802.3 header.
            let d = encap::decap(lt, data, data.len() as u32)?;
            let sap = d.payload.get(..2).map(|s| [s[0], s[1]]);
            let protocol = d.ethertype.unwrap_or(encap_proto(0, sap));
            let (protocol, start) = skip_tags(link_type, d.payload, 0, protocol)?;
            return Ok(L3Packet {
                protocol,
                data: &d.payload[start..],
            });
        }
        _ => return Err(LinkTypeError::Unsupported { link_type }),
    };
    Ok(L3Packet {
        protocol,
        data: &data[start..],
    })
}
