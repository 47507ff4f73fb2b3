//! Link types whose frames carry an IP packet or an 802.2 LLC payload behind a header of
//! their own: PPP, NFLOG, FDDI, IEEE 802.11 (bare and behind radiotap), and 802.15.4,
//! whose frames are all skipped. [`decap`] finds the payload, its EtherType and the
//! addresses the frame names; the caller puts an Ethernet header in front
//! ([`super::to_ethernet`]) or hands the payload to a tun device ([`super::to_l3`]).
//!
//! | link type | payload | EtherType | MACs |
//! |---|---|---|---|
//! | PPP (9) | after the optional `ff 03` and the 1- or 2-byte protocol | 0x0021 → 0x0800, 0x0057 → 0x86DD; other protocols skipped | synthesized |
//! | NFLOG (239) | the NFULA_PAYLOAD attribute | family 2 → 0x0800, 10 → 0x86DD; other families skipped | synthesized |
//! | FDDI (10) | after FC, destination, source (13 bytes); LLC frames only | from LLC/SNAP, see [`llc`] | the header's |
//! | IEEE802_11 (105), IEEE802_11_RADIOTAP (127) | data frames after their header; see [`super::ieee80211`] | from LLC/SNAP | DA and SA of the header |
//! | IEEE802_15_4_WITHFCS (195), IEEE802_15_4_NOFCS (230) | none: every frame is skipped | | |

use super::ieee80211;
use super::nflog;
use super::{short, LinkTypeError, SkipReason};
use crate::consts::{ETH_P_IP, ETH_P_IPV6};

/// LINKTYPE_PPP: a PPP frame, possibly with the HDLC address and control bytes.
pub const LINKTYPE_PPP: u32 = 9;
/// LINKTYPE_FDDI: an FDDI MAC frame from its frame control byte, addresses in
/// canonical bit order as Linux captures them.
pub const LINKTYPE_FDDI: u32 = 10;
/// LINKTYPE_IEEE802_11: an 802.11 frame without a radio header or FCS.
pub const LINKTYPE_IEEE802_11: u32 = 105;
/// LINKTYPE_IEEE802_11_RADIOTAP: a radiotap header, then an 802.11 frame.
pub const LINKTYPE_IEEE802_11_RADIOTAP: u32 = 127;
/// LINKTYPE_IEEE802_15_4_WITHFCS: an 802.15.4 frame with its FCS.
pub const LINKTYPE_IEEE802_15_4_WITHFCS: u32 = 195;
/// LINKTYPE_IEEE802_15_4_NOFCS: an 802.15.4 frame without an FCS (Linux's).
pub const LINKTYPE_IEEE802_15_4_NOFCS: u32 = 230;
/// LINKTYPE_NFLOG: a Linux netfilter NFULNL_MSG_PACKET (the nfgenmsg header and TLVs).
pub const LINKTYPE_NFLOG: u32 = 239;

/// The link types [`decap`] handles.
pub const HANDLED: [u32; 7] = [
    LINKTYPE_PPP,
    LINKTYPE_NFLOG,
    LINKTYPE_IEEE802_11,
    LINKTYPE_IEEE802_11_RADIOTAP,
    LINKTYPE_FDDI,
    LINKTYPE_IEEE802_15_4_WITHFCS,
    LINKTYPE_IEEE802_15_4_NOFCS,
];

/// PPP_IP and PPP_IPV6 (include/uapi/linux/ppp_defs.h).
const PPP_IP: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;
/// PPP_ALLSTATIONS and PPP_UI (include/uapi/linux/ppp_defs.h): the HDLC address and
/// control bytes.
const PPP_ALLSTATIONS: u8 = 0xff;
const PPP_UI: u8 = 0x03;

/// FDDI_K_ALEN and the 13 bytes of FC + addresses (include/uapi/linux/if_fddi.h).
const FDDI_K_ALEN: usize = 6;
const FDDI_HLEN: usize = 1 + 2 * FDDI_K_ALEN;
/// FDDI_FC_K_ASYNC_LLC_MIN/MAX and FDDI_FC_K_SYNC_LLC_MIN/MAX (if_fddi.h): the frame
/// control values of LLC frames, 0x50..=0x57 and 0xd0..=0xd7.
const FDDI_FC_K_ASYNC_LLC_MIN: u8 = 0x50;
const FDDI_FC_K_SYNC_LLC_MIN: u8 = 0xd0;
const FDDI_FC_LLC_MASK: u8 = 0xf8;

/// rfc1042_header and bridge_tunnel_header (net/wireless/util.c): an LLC/SNAP header
/// with OUI 00-00-00 (RFC 1042) or 00-00-f8 (802.1H bridge tunnel).
const RFC1042_HEADER: [u8; 6] = [0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00];
const BRIDGE_TUNNEL_HEADER: [u8; 6] = [0xaa, 0xaa, 0x03, 0x00, 0x00, 0xf8];
/// ETH_P_AARP and ETH_P_IPX (include/uapi/linux/if_ether.h), the two EtherTypes 802.1H
/// sends in a bridge-tunnel header, so an RFC 1042 header of them is kept.
const ETH_P_AARP: u16 = 0x80f3;
const ETH_P_IPX: u16 = 0x8137;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Decap<'a> {
    /// Destination and source MAC when the frame names them (802.11, FDDI).
    pub macs: Option<([u8; 6], [u8; 6])>,
    /// The payload's EtherType; `None` for an 802.2 LLC payload, which becomes an 802.3
    /// frame with a length.
    pub ethertype: Option<u16>,
    /// The captured payload: a sub-slice of the frame.
    pub payload: &'a [u8],
    /// The payload's length on the wire (more than `payload.len()` when the capture
    /// was cut).
    pub wire_len: usize,
}

impl<'a> Decap<'a> {
    /// `data[start..end]` of a frame whose wire length is `orig_len` and whose last
    /// `trailer` bytes on the wire (an FCS) are not payload.
    pub fn slice(
        macs: Option<([u8; 6], [u8; 6])>,
        ethertype: Option<u16>,
        data: &'a [u8],
        start: usize,
        orig_len: u32,
        trailer: usize,
    ) -> Decap<'a> {
        let wire_end = (orig_len as usize).saturating_sub(trailer);
        let end = data.len().min(wire_end).max(start);
        Decap {
            macs,
            ethertype,
            payload: &data[start..end],
            wire_len: wire_end.saturating_sub(start).max(end - start),
        }
    }

    /// The payload with any LLC/SNAP header read into its EtherType (see [`llc`]).
    fn llc(mut self) -> Decap<'a> {
        if let Some((ethertype, len)) = llc(self.payload) {
            self.ethertype = Some(ethertype);
            self.payload = &self.payload[len..];
            self.wire_len = self.wire_len.saturating_sub(len);
        }
        self
    }
}

/// net/wireless/util.c: ieee80211_data_to_8023_exthdr (FDDI follows the same rule): an
/// RFC 1042 SNAP header, except for AARP and IPX, or a bridge-tunnel header gives the
/// EtherType and is removed (the kernel reads its 8 bytes with `skb_copy_bits`, so a
/// shorter payload has none). Anything else stays, and the frame is an 802.3 frame whose
/// length field is the payload's length. Returns the EtherType and the header's length.
pub(super) fn llc(payload: &[u8]) -> Option<(u16, usize)> {
    let snap = payload.get(..8)?;
    let ethertype = u16::from_be_bytes([snap[6], snap[7]]);
    let rfc1042 = snap[..6] == RFC1042_HEADER && ethertype != ETH_P_AARP && ethertype != ETH_P_IPX;
    (rfc1042 || snap[..6] == BRIDGE_TUNNEL_HEADER).then_some((ethertype, 8))
}

fn skip(link_type: u32, reason: SkipReason) -> LinkTypeError {
    LinkTypeError::Skip { link_type, reason }
}

/// The payload of a frame of one of the [`HANDLED`] link types, or why it has none.
pub(super) fn decap(
    link_type: u32,
    data: &[u8],
    orig_len: u32,
) -> Result<Decap<'_>, LinkTypeError> {
    match link_type {
        LINKTYPE_PPP => ppp(data, orig_len),
        LINKTYPE_NFLOG => nflog::decap(data, orig_len),
        LINKTYPE_FDDI => fddi(data, orig_len),
        LINKTYPE_IEEE802_11 | LINKTYPE_IEEE802_11_RADIOTAP => {
            Ok(ieee80211::decap(link_type, data, orig_len)?.llc())
        }
        LINKTYPE_IEEE802_15_4_WITHFCS | LINKTYPE_IEEE802_15_4_NOFCS => {
            Err(skip(link_type, SkipReason::Ieee802154))
        }
        _ => Err(LinkTypeError::Unsupported { link_type }),
    }
}

/// drivers/net/ppp/ppp_async.c: ppp_async_input / process_input_packet drop the
/// `ff 03` address and control bytes when present and widen a compressed (odd, 1-byte)
/// protocol field; ppp_generic.c: ppp_receive_nonmp_frame hands PPP_IP and PPP_IPV6
/// to the stack as ETH_P_IP and ETH_P_IPV6 (proto_to_npindex). tcpdump's print-ppp.c
/// reads LINKTYPE_PPP the same way.
fn ppp(data: &[u8], orig_len: u32) -> Result<Decap<'_>, LinkTypeError> {
    let mut at = 0;
    if data.len() >= 2 && data[0] == PPP_ALLSTATIONS && data[1] == PPP_UI {
        at = 2;
    }
    let protocol = match data.get(at) {
        None => return Err(short(LINKTYPE_PPP, data.len(), at + 1)),
        Some(p) if p & 1 == 1 => {
            at += 1;
            u16::from(*p)
        }
        Some(_) => {
            let Some(p) = data.get(at..at + 2) else {
                return Err(short(LINKTYPE_PPP, data.len(), at + 2));
            };
            at += 2;
            u16::from_be_bytes([p[0], p[1]])
        }
    };
    let ethertype = match protocol {
        PPP_IP => ETH_P_IP,
        PPP_IPV6 => ETH_P_IPV6,
        _ => return Err(skip(LINKTYPE_PPP, SkipReason::PppProtocol)),
    };
    Ok(Decap::slice(None, Some(ethertype), data, at, orig_len, 0))
}

/// An FDDI frame (include/uapi/linux/if_fddi.h: struct fddihdr): the frame control
/// byte, destination and source, then for LLC frames the 802.2 header, read as
/// net/802/fddi.c: fddi_type_trans and 802.11 do ([`llc`]). Linux captures the
/// addresses in canonical bit order and tcpdump on Linux prints them as they are
/// (print-fddi.c: extract_fddi_addrs, `fddi_bitswap` is 0 there).
fn fddi(data: &[u8], orig_len: u32) -> Result<Decap<'_>, LinkTypeError> {
    let Some(h) = data.get(..FDDI_HLEN) else {
        return Err(short(LINKTYPE_FDDI, data.len(), FDDI_HLEN));
    };
    let fc = h[0] & FDDI_FC_LLC_MASK;
    if fc != FDDI_FC_K_ASYNC_LLC_MIN && fc != FDDI_FC_K_SYNC_LLC_MIN {
        return Err(skip(LINKTYPE_FDDI, SkipReason::FddiNotLlc));
    }
    let mut dst = [0u8; 6];
    let mut src = [0u8; 6];
    dst.copy_from_slice(&h[1..7]);
    src.copy_from_slice(&h[7..13]);
    Ok(Decap::slice(Some((dst, src)), None, data, FDDI_HLEN, orig_len, 0).llc())
}
