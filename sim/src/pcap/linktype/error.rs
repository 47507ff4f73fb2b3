//! Why a frame could not be converted, or has nothing to convert ([`LinkTypeError`]).

use std::fmt;

use super::{SkipReason, SUPPORTED};
use crate::consts::ETH_DATA_LEN;
use crate::pcap::link_type_name;

/// Why a frame could not be converted. `Display` is one line without the file name,
/// which the caller prefixes (with the frame index for the per-frame variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkTypeError {
    /// A link type this module does not convert.
    Unsupported { link_type: u32 },
    /// The frame ends inside its link-layer header (or, for RAW, has no byte at all).
    Short {
        link_type: u32,
        len: usize,
        need: usize,
    },
    /// A RAW packet whose version nibble is neither 4 nor 6.
    IpVersion { link_type: u32, version: u8 },
    /// A NULL/LOOP address family that is not IPv4 or IPv6.
    Family { link_type: u32, family: u32 },
    /// A cooked frame whose protocol or ARPHRD type has no Ethernet equivalent.
    CookedProtocol {
        link_type: u32,
        arphrd: u16,
        protocol: u16,
    },
    /// An 802.2/802.3 payload too long for the 802.3 length field.
    LengthField { link_type: u32, len: usize },
    /// A header field whose value the format does not allow (a corrupt header).
    Header {
        link_type: u32,
        what: &'static str,
        value: u32,
        rule: &'static str,
    },
    /// A frame that carries no network-layer packet: not an error of the capture, so
    /// streaming readers skip and count it ([`LinkTypeError::skip_reason`]).
    Skip { link_type: u32, reason: SkipReason },
}

impl LinkTypeError {
    /// Why the frame is skipped, for [`LinkTypeError::Skip`].
    pub fn skip_reason(&self) -> Option<SkipReason> {
        match *self {
            LinkTypeError::Skip { reason, .. } => Some(reason),
            _ => None,
        }
    }
}

struct Name(u32);

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match link_type_name(self.0) {
            Some(n) => f.write_str(n),
            None => write!(f, "link type {}", self.0),
        }
    }
}

impl fmt::Display for LinkTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LinkTypeError::Unsupported { link_type } => {
                write!(f, "link type {link_type}")?;
                if let Some(name) = link_type_name(link_type) {
                    write!(f, " ({name})")?;
                }
                f.write_str(" is not supported; supported: ")?;
                for (i, lt) in SUPPORTED.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{} ({lt})", Name(*lt))?;
                }
                Ok(())
            }
            LinkTypeError::Short {
                link_type,
                len,
                need,
            } => write!(
                f,
                "{} frame of {len} bytes is shorter than its {need}-byte link-layer header",
                Name(link_type)
            ),
            LinkTypeError::IpVersion { link_type, version } => write!(
                f,
                "{} packet has IP version {version} (neither 4 nor 6)",
                Name(link_type)
            ),
            LinkTypeError::Family { link_type, family } => write!(
                f,
                "{} frame has address family {family}, not AF_INET (2) or AF_INET6 (24, 28, 30)",
                Name(link_type)
            ),
            LinkTypeError::CookedProtocol {
                link_type,
                arphrd,
                protocol,
            } => write!(
                f,
                "{} frame of ARPHRD type {arphrd} with protocol 0x{protocol:04x} has no Ethernet \
                 equivalent",
                Name(link_type)
            ),
            LinkTypeError::LengthField { link_type, len } => write!(
                f,
                "{} 802.2/802.3 payload of {len} bytes does not fit an 802.3 length field \
                 (at most {ETH_DATA_LEN})",
                Name(link_type)
            ),
            LinkTypeError::Header {
                link_type,
                what,
                value,
                rule,
            } => write!(f, "{} header has {what} {value} ({rule})", Name(link_type)),
            LinkTypeError::Skip { link_type, reason } => write!(
                f,
                "{} frame carries no IP or Ethernet frame ({reason})",
                Name(link_type)
            ),
        }
    }
}

impl std::error::Error for LinkTypeError {}
