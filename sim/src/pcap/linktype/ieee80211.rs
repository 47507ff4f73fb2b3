//! IEEE 802.11 frames (LINKTYPE_IEEE802_11) and the radiotap header in front of them
//! (LINKTYPE_IEEE802_11_RADIOTAP), read as mac80211 turns a received data frame into
//! an Ethernet frame: net/wireless/util.c: ieee80211_data_to_8023_exthdr.
//!
//! * Only data frames that carry data are converted (`ieee80211_is_data_present`);
//!   management, control and extension frames, null-function frames, protected
//!   (encrypted) frames, fragments (reassembled by `ieee80211_rx_h_defragment` before
//!   the conversion) and A-MSDUs (split by `ieee80211_amsdu_to_8023s`) are skipped with
//!   their [`SkipReason`].
//! * The header is `ieee80211_hdrlen` bytes: 24, 30 with a fourth address (ToDS and
//!   FromDS, a WDS frame), 2 more for QoS data and 4 more for QoS data with the Order
//!   bit (the HT control field).
//! * The Ethernet destination is `ieee80211_get_DA` (addr3 with ToDS, else addr1), the
//!   source `ieee80211_get_SA` (addr4 with both ToDS and FromDS, addr3 with FromDS,
//!   else addr2). The kernel accepts each address form only on the interface type it
//!   belongs to; a capture holds all of them, so all are converted. Mesh frames are read
//!   as non-mesh (a capture does not say whether a mesh header follows).
//! * Radiotap (`net/wireless/radiotap.c: ieee80211_radiotap_iterator_init`; the fields
//!   at radiotap.org): `it_version` 0, `it_len` little-endian bytes to skip, `it_present`
//!   words chained by bit 31. The Flags field (present bit 1; after TSFT, bit 0, a u64
//!   aligned to 8) says whether a 4-byte FCS ends the frame (0x10, removed), whether the
//!   802.11 header is padded to 4 bytes (0x20) and whether the FCS failed (0x40: the
//!   kernel drops such frames, so they are skipped).

use super::encap::{Decap, LINKTYPE_IEEE802_11_RADIOTAP};
use super::{short, LinkTypeError, SkipReason};

// include/linux/ieee80211.h
const IEEE80211_FCTL_FTYPE: u16 = 0x000c;
const IEEE80211_FCTL_STYPE: u16 = 0x00f0;
const IEEE80211_FCTL_TODS: u16 = 0x0100;
const IEEE80211_FCTL_FROMDS: u16 = 0x0200;
const IEEE80211_FCTL_MOREFRAGS: u16 = 0x0400;
const IEEE80211_FCTL_PROTECTED: u16 = 0x4000;
const IEEE80211_FCTL_ORDER: u16 = 0x8000;
const IEEE80211_FTYPE_MGMT: u16 = 0x0000;
const IEEE80211_FTYPE_CTL: u16 = 0x0004;
const IEEE80211_FTYPE_DATA: u16 = 0x0008;
const IEEE80211_STYPE_NULLFUNC: u16 = 0x0040;
const IEEE80211_STYPE_QOS_DATA: u16 = 0x0080;
const IEEE80211_SCTL_FRAG: u16 = 0x000f;
const IEEE80211_QOS_CTL_A_MSDU_PRESENT: u16 = 0x0080;
const IEEE80211_QOS_CTL_LEN: usize = 2;
const IEEE80211_HT_CTL_LEN: usize = 4;
/// Frame control, duration, addr1..3, sequence control; addr4 follows in WDS frames.
const HDR_3ADDR: usize = 24;
const HDR_4ADDR: usize = 30;
const FCS_LEN: usize = 4;

// include/net/ieee80211_radiotap.h
const IEEE80211_RADIOTAP_TSFT: u32 = 0;
const IEEE80211_RADIOTAP_FLAGS: u32 = 1;
const IEEE80211_RADIOTAP_EXT: u32 = 31;
const IEEE80211_RADIOTAP_F_FCS: u8 = 0x10;
const IEEE80211_RADIOTAP_F_DATAPAD: u8 = 0x20;
const IEEE80211_RADIOTAP_F_BADFCS: u8 = 0x40;
/// struct ieee80211_radiotap_header: version, pad, length, first present word.
const RADIOTAP_HLEN: usize = 8;

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn header_error(what: &'static str, value: u32, rule: &'static str) -> LinkTypeError {
    LinkTypeError::Header {
        link_type: LINKTYPE_IEEE802_11_RADIOTAP,
        what,
        value,
        rule,
    }
}

/// A radiotap header's length and its Flags field (0 when absent).
fn radiotap(data: &[u8]) -> Result<(usize, u8), LinkTypeError> {
    let lt = LINKTYPE_IEEE802_11_RADIOTAP;
    if data.len() < RADIOTAP_HLEN {
        return Err(short(lt, data.len(), RADIOTAP_HLEN));
    }
    if data[0] != 0 {
        return Err(header_error(
            "it_version",
            u32::from(data[0]),
            "only 0 is defined",
        ));
    }
    let it_len = usize::from(le16(data, 2));
    if it_len < RADIOTAP_HLEN {
        return Err(header_error(
            "it_len",
            it_len as u32,
            "less than the 8-byte fixed header",
        ));
    }
    if data.len() < it_len {
        return Err(short(lt, data.len(), it_len));
    }
    let present = le32(data, 4);
    // Fields start after the last present word.
    let mut at = 4;
    let mut word = present;
    while word & (1 << IEEE80211_RADIOTAP_EXT) != 0 {
        at += 4;
        if at + 4 > it_len {
            return Err(header_error(
                "it_len",
                it_len as u32,
                "ends inside the it_present words",
            ));
        }
        word = le32(data, at);
    }
    at += 4;
    if present & (1 << IEEE80211_RADIOTAP_FLAGS) == 0 {
        return Ok((it_len, 0));
    }
    if present & (1 << IEEE80211_RADIOTAP_TSFT) != 0 {
        at = at.next_multiple_of(8) + 8;
    }
    match data[..it_len].get(at) {
        Some(flags) => Ok((it_len, *flags)),
        None => Err(header_error(
            "it_len",
            it_len as u32,
            "ends before the Flags field it_present announces",
        )),
    }
}

fn mac(b: &[u8], at: usize) -> [u8; 6] {
    let mut m = [0u8; 6];
    m.copy_from_slice(&b[at..at + 6]);
    m
}

/// The payload of an 802.11 data frame (LLC and all), with its DA and SA. `link_type`
/// is LINKTYPE_IEEE802_11 or LINKTYPE_IEEE802_11_RADIOTAP.
pub(super) fn decap(
    link_type: u32,
    data: &[u8],
    orig_len: u32,
) -> Result<Decap<'_>, LinkTypeError> {
    let (start, flags) = if link_type == LINKTYPE_IEEE802_11_RADIOTAP {
        radiotap(data)?
    } else {
        (0, 0)
    };
    let skip = |reason| Err(LinkTypeError::Skip { link_type, reason });
    if flags & IEEE80211_RADIOTAP_F_BADFCS != 0 {
        return skip(SkipReason::RadiotapBadFcs);
    }
    let f = &data[start..];
    if f.len() < 2 {
        return Err(short(link_type, data.len(), start + 2));
    }
    let fc = le16(f, 0);
    match fc & IEEE80211_FCTL_FTYPE {
        IEEE80211_FTYPE_MGMT => return skip(SkipReason::Ieee80211Management),
        IEEE80211_FTYPE_CTL => return skip(SkipReason::Ieee80211Control),
        IEEE80211_FTYPE_DATA => {}
        _ => return skip(SkipReason::Ieee80211Extension),
    }
    // ieee80211_is_data_present
    if fc & IEEE80211_STYPE_NULLFUNC != 0 {
        return skip(SkipReason::Ieee80211NoData);
    }
    if fc & IEEE80211_FCTL_PROTECTED != 0 {
        return skip(SkipReason::Ieee80211Protected);
    }
    // ieee80211_hdrlen
    let (to_ds, from_ds) = (
        fc & IEEE80211_FCTL_TODS != 0,
        fc & IEEE80211_FCTL_FROMDS != 0,
    );
    let base = if to_ds && from_ds {
        HDR_4ADDR
    } else {
        HDR_3ADDR
    };
    let qos = fc & IEEE80211_FCTL_STYPE & IEEE80211_STYPE_QOS_DATA != 0;
    let mut hdrlen = base;
    if qos {
        hdrlen += IEEE80211_QOS_CTL_LEN;
        if fc & IEEE80211_FCTL_ORDER != 0 {
            hdrlen += IEEE80211_HT_CTL_LEN;
        }
    }
    if f.len() < hdrlen {
        return Err(short(link_type, data.len(), start + hdrlen));
    }
    if fc & IEEE80211_FCTL_MOREFRAGS != 0 || le16(f, 22) & IEEE80211_SCTL_FRAG != 0 {
        return skip(SkipReason::Ieee80211Fragment);
    }
    if qos && le16(f, base) & IEEE80211_QOS_CTL_A_MSDU_PRESENT != 0 {
        return skip(SkipReason::Ieee80211Amsdu);
    }
    if flags & IEEE80211_RADIOTAP_F_DATAPAD != 0 {
        hdrlen = hdrlen.next_multiple_of(4);
    }
    let fcs = if flags & IEEE80211_RADIOTAP_F_FCS != 0 {
        FCS_LEN
    } else {
        0
    };
    if f.len() < hdrlen + fcs && data.len() >= orig_len as usize {
        return Err(short(link_type, data.len(), start + hdrlen + fcs));
    }
    let da = if to_ds { mac(f, 16) } else { mac(f, 4) };
    let sa = match (to_ds, from_ds) {
        (true, true) => mac(f, 24),
        (false, true) => mac(f, 16),
        _ => mac(f, 10),
    };
    let at = (start + hdrlen).min(data.len());
    Ok(Decap::slice(Some((da, sa)), None, data, at, orig_len, fcs))
}
