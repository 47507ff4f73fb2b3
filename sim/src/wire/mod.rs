//! Zero-copy packet views for the headers the virtual-networking datapath reads and
//! writes, in smoltcp's `src/wire/` style.
//!
//! Every protocol has two layers:
//!
//! * a view `Foo<T: AsRef<[u8]>>` over a byte buffer, with `new_unchecked`, `new_checked`,
//!   `into_inner`, getters, and setters when `T: AsMut<[u8]>`. After `new_checked`
//!   succeeds no getter can panic: the check covers every byte a getter touches.
//! * a plain `FooRepr` with `parse`, `emit` and `buffer_len`, which is what the rest of
//!   the simulator passes around.
//!
//! Layouts follow the kernel headers cited in each file, because the simulator must
//! produce the same bytes the kernel would put in front of user space.

pub mod checksum;
pub mod gre;
pub mod summary;
pub mod tun_pi;
pub mod virtio_net_hdr;

use std::fmt;

pub use gre::{Gre, GreRepr};
pub use summary::{describe, describe_vlan_tci};
pub use tun_pi::{TunPi, TunPiRepr};
pub use virtio_net_hdr::{Endian, VirtioNetHdr, VirtioNetHdrRepr, VnetHdrLayout};

pub use crate::consts::{
    ETH_P_8021AD, ETH_P_8021Q, ETH_P_ARP, ETH_P_IP, ETH_P_IPV6, ETH_P_QINQ1, ETH_P_TEB,
};

/// Why a view or repr refused a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer ends before a field the header layout says is there.
    Truncated,
    /// The bytes are there but describe something this model rejects (with the reason).
    Malformed(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => f.write_str("truncated packet"),
            Error::Malformed(why) => write!(f, "malformed packet: {why}"),
        }
    }
}

impl std::error::Error for Error {}

/// Result type of the wire module.
pub type Result<T> = core::result::Result<T, Error>;

/// Big-endian u16 at `off`, or None past the end: the summary and GRE code read untrusted
/// lengths and must never index out of bounds.
pub(crate) fn be16_at(buf: &[u8], off: usize) -> Option<u16> {
    let b = buf.get(off..off.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// Big-endian u32 at `off`, or None past the end.
pub(crate) fn be32_at(buf: &[u8], off: usize) -> Option<u32> {
    let b = buf.get(off..off.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_display() {
        assert_eq!(Error::Truncated.to_string(), "truncated packet");
        assert_eq!(
            Error::Malformed("bad version").to_string(),
            "malformed packet: bad version"
        );
        let boxed: Box<dyn std::error::Error> = Box::new(Error::Truncated);
        assert!(boxed.source().is_none());
    }

    #[test]
    fn be_helpers_never_panic() {
        let b = [1u8, 2, 3, 4];
        assert_eq!(be16_at(&b, 0), Some(0x0102));
        assert_eq!(be16_at(&b, 3), None);
        assert_eq!(be16_at(&b, usize::MAX), None);
        assert_eq!(be32_at(&b, 0), Some(0x0102_0304));
        assert_eq!(be32_at(&b, 1), None);
        assert_eq!(be32_at(&b, usize::MAX - 1), None);
    }
}
