//! LINKTYPE_NFLOG (239): what `tcpdump -i nflog:N` captures, one NFULNL_MSG_PACKET per
//! frame (net/netfilter/nfnetlink_log.c: __build_packet_message): a 4-byte header
//! (struct nfgenmsg: address family, version NFNETLINK_V0, resource id big-endian),
//! then attributes (struct nlattr: length including its 4-byte header, type), each
//! padded to 4 bytes (NFA_ALIGN). NFULA_PAYLOAD (9) holds the packet from its network
//! header; the family says which network protocol it is.
//!
//! The attributes' length and type are in the capturing host's byte order (libpcap
//! `pcap-common.c: swap_nflog_header`, tcpdump `print-nflog.c`). Their types are small
//! numbers, so a first type whose low byte is zero and high byte is not was written the
//! other way round (as [`super::LINKTYPE_NULL`]'s family is guessed).

use super::encap::{Decap, LINKTYPE_NFLOG};
use super::{short, LinkTypeError, SkipReason};
use crate::consts::{ETH_P_IP, ETH_P_IPV6};

/// NFPROTO_IPV4 and NFPROTO_IPV6 (include/uapi/linux/netfilter.h), the AF_ values.
const NFPROTO_IPV4: u8 = 2;
const NFPROTO_IPV6: u8 = 10;
/// NFNETLINK_V0 (include/uapi/linux/netfilter/nfnetlink.h).
const NFNETLINK_V0: u8 = 0;
/// NFULA_PAYLOAD (include/uapi/linux/netfilter/nfnetlink_log.h).
const NFULA_PAYLOAD: u16 = 9;
/// NLA_TYPE_MASK (include/uapi/linux/netlink.h): the type without the NLA_F_NESTED and
/// NLA_F_NET_BYTEORDER flags.
const NLA_TYPE_MASK: u16 = 0x3fff;
const NFGENMSG_LEN: usize = 4;
const NLA_HDRLEN: usize = 4;

/// The packet an NFLOG message carries.
pub(super) fn decap(data: &[u8], orig_len: u32) -> Result<Decap<'_>, LinkTypeError> {
    let lt = LINKTYPE_NFLOG;
    if data.len() < NFGENMSG_LEN {
        return Err(short(lt, data.len(), NFGENMSG_LEN));
    }
    if data[1] != NFNETLINK_V0 {
        return Err(LinkTypeError::Header {
            link_type: lt,
            what: "version",
            value: u32::from(data[1]),
            rule: "only 0, NFNETLINK_V0, is defined",
        });
    }
    let ethertype = match data[0] {
        NFPROTO_IPV4 => ETH_P_IP,
        NFPROTO_IPV6 => ETH_P_IPV6,
        _ => {
            return Err(LinkTypeError::Skip {
                link_type: lt,
                reason: SkipReason::NflogFamily,
            })
        }
    };
    let swapped = data
        .get(NFGENMSG_LEN + 2..NFGENMSG_LEN + 4)
        .is_some_and(|t| t[0] == 0 && t[1] != 0);
    let rd = |at: usize| {
        let b = [data[at], data[at + 1]];
        if swapped {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    };
    let cut = data.len() < orig_len as usize;
    let mut at = NFGENMSG_LEN;
    while at < data.len() {
        if data.len() - at < NLA_HDRLEN {
            return Err(short(lt, data.len(), at + NLA_HDRLEN));
        }
        let len = usize::from(rd(at));
        if len < NLA_HDRLEN {
            return Err(LinkTypeError::Header {
                link_type: lt,
                what: "attribute length",
                value: len as u32,
                rule: "less than its 4-byte header",
            });
        }
        let is_payload = rd(at + 2) & NLA_TYPE_MASK == NFULA_PAYLOAD;
        // A cut capture may end inside the payload, which is then cut too.
        if at + len > data.len() && !(cut && is_payload) {
            return Err(short(lt, data.len(), at + len));
        }
        if is_payload {
            let start = at + NLA_HDRLEN;
            let end = (at + len).min(data.len());
            return Ok(Decap {
                macs: None,
                ethertype: Some(ethertype),
                payload: &data[start..end],
                wire_len: len - NLA_HDRLEN,
            });
        }
        at += len.next_multiple_of(4);
    }
    Err(LinkTypeError::Skip {
        link_type: lt,
        reason: SkipReason::NflogNoPayload,
    })
}
