//! Frames that carry no network-layer packet and are skipped, not refused: 802.11
//! management and control frames, encrypted or fragmented data, PPP control protocols,
//! 802.15.4. [`SkipReason`] says why; [`SkipCounts`] counts them for the summary.

use std::fmt;

/// Why a frame of a supported link type has nothing to replay. The declaration order
/// is the order [`SkipCounts`] lists them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    /// An 802.11 management frame (beacon, probe, association, ...).
    Ieee80211Management,
    /// An 802.11 control frame (ACK, RTS, CTS, block ack, ...).
    Ieee80211Control,
    /// An 802.11 extension frame (type 3: DMG beacon, S1G).
    Ieee80211Extension,
    /// An 802.11 data frame without data (null function, QoS null, CF-Ack/Poll):
    /// `ieee80211_is_data_present` is false.
    Ieee80211NoData,
    /// An 802.11 frame with the Protected bit: encrypted, and there is no key.
    Ieee80211Protected,
    /// One fragment of an 802.11 MSDU (mac80211 reassembles them in
    /// `ieee80211_rx_h_defragment` before converting).
    Ieee80211Fragment,
    /// An 802.11 A-MSDU: several subframes, which `ieee80211_amsdu_to_8023s` splits.
    Ieee80211Amsdu,
    /// A radiotap frame the card marked as failing its FCS (flag 0x40).
    RadiotapBadFcs,
    /// A PPP frame of another protocol than IPv4 or IPv6 (LCP, IPCP, CHAP, ...).
    PppProtocol,
    /// An NFLOG message of another family than IPv4 or IPv6 (ARP, bridge).
    NflogFamily,
    /// An NFLOG message without an NFULA_PAYLOAD attribute.
    NflogNoPayload,
    /// An FDDI frame that is not LLC (SMT, MAC, void or implementer frames).
    FddiNotLlc,
    /// An IEEE 802.15.4 frame: no IP or Ethernet frame without 6LoWPAN decompression.
    Ieee802154,
}

impl SkipReason {
    /// Every reason, in declaration order.
    pub const ALL: [SkipReason; 13] = [
        SkipReason::Ieee80211Management,
        SkipReason::Ieee80211Control,
        SkipReason::Ieee80211Extension,
        SkipReason::Ieee80211NoData,
        SkipReason::Ieee80211Protected,
        SkipReason::Ieee80211Fragment,
        SkipReason::Ieee80211Amsdu,
        SkipReason::RadiotapBadFcs,
        SkipReason::PppProtocol,
        SkipReason::NflogFamily,
        SkipReason::NflogNoPayload,
        SkipReason::FddiNotLlc,
        SkipReason::Ieee802154,
    ];

    /// A short name for summaries and errors.
    pub fn label(self) -> &'static str {
        match self {
            SkipReason::Ieee80211Management => "802.11 management",
            SkipReason::Ieee80211Control => "802.11 control",
            SkipReason::Ieee80211Extension => "802.11 extension",
            SkipReason::Ieee80211NoData => "802.11 no data",
            SkipReason::Ieee80211Protected => "802.11 protected",
            SkipReason::Ieee80211Fragment => "802.11 fragment",
            SkipReason::Ieee80211Amsdu => "802.11 A-MSDU",
            SkipReason::RadiotapBadFcs => "radiotap bad FCS",
            SkipReason::PppProtocol => "PPP non-IP protocol",
            SkipReason::NflogFamily => "NFLOG non-IP family",
            SkipReason::NflogNoPayload => "NFLOG without payload",
            SkipReason::FddiNotLlc => "FDDI non-LLC",
            SkipReason::Ieee802154 => "802.15.4",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// How many frames were skipped, per [`SkipReason`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SkipCounts {
    counts: [u64; SkipReason::ALL.len()],
}

impl SkipCounts {
    /// Counts one more frame skipped for `reason`.
    pub fn add(&mut self, reason: SkipReason) {
        self.counts[reason.slot()] += 1;
    }

    /// Frames skipped for `reason`.
    pub fn get(&self, reason: SkipReason) -> u64 {
        self.counts[reason.slot()]
    }

    /// Frames skipped for any reason.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The reasons with at least one frame, in [`SkipReason`] order.
    pub fn iter(&self) -> impl Iterator<Item = (SkipReason, u64)> + '_ {
        SkipReason::ALL
            .iter()
            .map(|r| (*r, self.get(*r)))
            .filter(|(_, n)| *n > 0)
    }
}

/// `3 (2 802.11 management, 1 802.11 control)`; `0` when nothing was skipped.
impl fmt::Display for SkipCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.total())?;
        for (i, (reason, n)) in self.iter().enumerate() {
            let open = if i == 0 { " (" } else { ", " };
            write!(f, "{open}{n} {reason}")?;
        }
        if self.total() > 0 {
            f.write_str(")")?;
        }
        Ok(())
    }
}
