//! `struct tun_pi`, the 4-byte packet-information prefix of a tun/tap read or write
//! when the device was created without IFF_NO_PI (include/uapi/linux/if_tun.h).
//!
//! ```text
//! struct tun_pi {
//!     __u16  flags;   // host byte order: little-endian on the x86_64 we model
//!     __be16 proto;   // network byte order, an ETH_P_* value
//! };
//! ```
//!
//! drivers/net/tun.c: tun_put_user() sets `flags = TUN_PKT_STRIP` when the reader's
//! buffer is too short for the whole packet and `proto = skb->protocol`;
//! tun_get_user() uses `proto` as skb->protocol for IFF_TUN devices (IFF_TAP devices
//! derive it from the Ethernet header with eth_type_trans() instead).

use super::{Error, Result};
use crate::consts::{TUN_PI_LEN, TUN_PKT_STRIP};

mod field {
    use core::ops::Range;
    // Offsets of struct tun_pi (include/uapi/linux/if_tun.h).
    pub const FLAGS: Range<usize> = 0..2;
    pub const PROTO: Range<usize> = 2..4;
}

/// A read/write view of a `struct tun_pi` at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunPi<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TunPi<T> {
    /// Wraps `buffer` without checking its length; getters panic if it is shorter than
    /// [`TUN_PI_LEN`].
    pub const fn new_unchecked(buffer: T) -> TunPi<T> {
        TunPi { buffer }
    }

    /// Wraps `buffer`, failing with [`Error::Truncated`] if it cannot hold a tun_pi.
    pub fn new_checked(buffer: T) -> Result<TunPi<T>> {
        let pi = Self::new_unchecked(buffer);
        pi.check_len()?;
        Ok(pi)
    }

    /// Ensures every getter is in bounds.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < TUN_PI_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// `flags`, decoded from host (little-endian) byte order.
    pub fn flags(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::FLAGS];
        u16::from_le_bytes([b[0], b[1]])
    }

    /// `proto`, decoded from network byte order.
    pub fn proto(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PROTO];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Whether the kernel set TUN_PKT_STRIP (the packet did not fit the read buffer).
    pub fn stripped(&self) -> bool {
        self.flags() & TUN_PKT_STRIP != 0
    }

    /// The bytes after the tun_pi: the packet itself.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[TUN_PI_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TunPi<T> {
    /// Stores `flags` in host (little-endian) byte order.
    pub fn set_flags(&mut self, flags: u16) {
        self.buffer.as_mut()[field::FLAGS].copy_from_slice(&flags.to_le_bytes());
    }

    /// Stores `proto` in network byte order.
    pub fn set_proto(&mut self, proto: u16) {
        self.buffer.as_mut()[field::PROTO].copy_from_slice(&proto.to_be_bytes());
    }

    /// The bytes after the tun_pi, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[TUN_PI_LEN..]
    }
}

/// The decoded contents of a `struct tun_pi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TunPiRepr {
    /// Host-order flags; only [`TUN_PKT_STRIP`] is defined.
    pub flags: u16,
    /// ETH_P_* protocol of the packet that follows.
    pub proto: u16,
}

impl TunPiRepr {
    /// Decodes a checked or unchecked view; a short buffer is [`Error::Truncated`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(pi: &TunPi<&T>) -> Result<TunPiRepr> {
        pi.check_len()?;
        Ok(TunPiRepr {
            flags: pi.flags(),
            proto: pi.proto(),
        })
    }

    /// Decodes the tun_pi at the start of `bytes`, a read or write buffer.
    pub fn from_bytes(bytes: &[u8]) -> Result<TunPiRepr> {
        Self::parse(&TunPi::new_checked(bytes)?)
    }

    /// The tun_pi's bytes, for a buffer that is still to be built.
    pub fn to_bytes(&self) -> [u8; TUN_PI_LEN] {
        let mut out = [0; TUN_PI_LEN];
        let mut pi = TunPi::new_unchecked(&mut out[..]);
        pi.set_flags(self.flags);
        pi.set_proto(self.proto);
        out
    }

    /// Bytes [`TunPiRepr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        TUN_PI_LEN
    }

    /// Writes the tun_pi into `pi`, which must be at least [`TUN_PI_LEN`] long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        pi: &mut TunPi<&mut T>,
    ) -> Result<()> {
        pi.check_len()?;
        pi.set_flags(self.flags);
        pi.set_proto(self.proto);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // flags = TUN_PKT_STRIP (LE), proto = ETH_P_IPV6 (BE), then one payload byte.
    static BYTES: [u8; 5] = [0x01, 0x00, 0x86, 0xdd, 0x60];

    #[test]
    fn getters_read_mixed_endianness() {
        let pi = TunPi::new_checked(&BYTES[..]).expect("long enough");
        assert_eq!(pi.flags(), TUN_PKT_STRIP);
        assert!(pi.stripped());
        assert_eq!(pi.proto(), 0x86dd);
        assert_eq!(pi.payload(), &[0x60]);
        assert_eq!(pi.into_inner(), &BYTES[..]);
    }

    #[test]
    fn short_buffers_rejected() {
        for len in 0..TUN_PI_LEN {
            assert_eq!(TunPi::new_checked(&BYTES[..len]), Err(Error::Truncated));
            assert_eq!(
                TunPiRepr::parse(&TunPi::new_unchecked(&BYTES[..len])),
                Err(Error::Truncated)
            );
        }
        assert!(TunPi::new_checked(&BYTES[..TUN_PI_LEN]).is_ok());
    }

    #[test]
    fn repr_round_trip() {
        let repr = TunPiRepr::parse(&TunPi::new_checked(&BYTES[..]).expect("ok")).expect("ok");
        assert_eq!(
            repr,
            TunPiRepr {
                flags: 1,
                proto: 0x86dd
            }
        );
        assert_eq!(repr.buffer_len(), 4);
        let mut out = [0xffu8; 5];
        repr.emit(&mut TunPi::new_unchecked(&mut out[..]))
            .expect("room");
        assert_eq!(out, [0x01, 0x00, 0x86, 0xdd, 0xff]);
    }

    #[test]
    fn emit_ipv4_no_flags() {
        let repr = TunPiRepr {
            flags: 0,
            proto: crate::consts::ETH_P_IP,
        };
        let mut out = [0u8; 4];
        repr.emit(&mut TunPi::new_unchecked(&mut out[..]))
            .expect("room");
        assert_eq!(out, [0x00, 0x00, 0x08, 0x00]);
        let mut short = [0u8; 3];
        assert_eq!(
            repr.emit(&mut TunPi::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn byte_array_round_trip() {
        assert_eq!(
            TunPiRepr::from_bytes(&BYTES),
            Ok(TunPiRepr {
                flags: TUN_PKT_STRIP,
                proto: 0x86dd
            })
        );
        assert_eq!(TunPiRepr::from_bytes(&BYTES[..3]), Err(Error::Truncated));
        let repr = TunPiRepr {
            flags: 0,
            proto: 0x0800,
        };
        assert_eq!(repr.to_bytes(), [0x00, 0x00, 0x08, 0x00]);
    }

    #[test]
    fn setters_and_payload_mut() {
        let mut buf = [0u8; 6];
        let mut pi = TunPi::new_checked(&mut buf[..]).expect("ok");
        pi.set_flags(0x1234);
        pi.set_proto(0xabcd);
        pi.payload_mut().copy_from_slice(&[7, 8]);
        assert_eq!(buf, [0x34, 0x12, 0xab, 0xcd, 7, 8]);
    }
}
