//! The Ethernet II / 802.3 MAC header (include/uapi/linux/if_ether.h: struct ethhdr).
//!
//! ```text
//! struct ethhdr {
//!     unsigned char h_dest[ETH_ALEN];
//!     unsigned char h_source[ETH_ALEN];
//!     __be16        h_proto;   // an EtherType, or an 802.3 length below ETH_P_802_3_MIN
//! };
//! ```
//!
//! The view does not interpret `h_proto`: net/ethernet/eth.c: eth_type_trans (in
//! `crate::ethernet`) decides between an EtherType and an 802.3 length.

use super::{Error, Result};
use crate::consts::{ETH_ALEN, ETH_HLEN};

/// A MAC address, as the kernel stores it (`unsigned char[ETH_ALEN]`).
pub type EthAddr = [u8; ETH_ALEN];

mod field {
    use core::ops::Range;
    // Offsets of struct ethhdr.
    pub const DESTINATION: Range<usize> = 0..6;
    pub const SOURCE: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: usize = 14;
}

/// A read/write view of an Ethernet header and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking; getters panic on a buffer under [`ETH_HLEN`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer`, failing with [`Error::Truncated`] under [`ETH_HLEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensures every getter is in bounds.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < ETH_HLEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// `h_dest`.
    pub fn dst_addr(&self) -> EthAddr {
        let mut a = [0; ETH_ALEN];
        a.copy_from_slice(&self.buffer.as_ref()[field::DESTINATION]);
        a
    }

    /// `h_source`.
    pub fn src_addr(&self) -> EthAddr {
        let mut a = [0; ETH_ALEN];
        a.copy_from_slice(&self.buffer.as_ref()[field::SOURCE]);
        a
    }

    /// `h_proto`: an EtherType, or an 802.3 length below ETH_P_802_3_MIN.
    pub fn ethertype(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        u16::from_be_bytes([b[0], b[1]])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The bytes after the header (empty, never a panic, on a short buffer).
    pub fn payload(&self) -> &'a [u8] {
        self.buffer.as_ref().get(field::PAYLOAD..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `h_dest`.
    pub fn set_dst_addr(&mut self, a: EthAddr) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&a);
    }

    /// Sets `h_source`.
    pub fn set_src_addr(&mut self, a: EthAddr) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&a);
    }

    /// Sets `h_proto`.
    pub fn set_ethertype(&mut self, v: u16) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&v.to_be_bytes());
    }

    /// The bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(field::PAYLOAD..)
            .unwrap_or(&mut [])
    }
}

/// The decoded contents of an Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    /// `h_source`.
    pub src_addr: EthAddr,
    /// `h_dest`.
    pub dst_addr: EthAddr,
    /// `h_proto`, as is (EtherType or 802.3 length).
    pub ethertype: u16,
}

impl Repr {
    /// Decodes a header; a buffer under [`ETH_HLEN`] is [`Error::Truncated`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            ethertype: p.ethertype(),
        })
    }

    /// Header bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        ETH_HLEN
    }

    /// Writes the header into `p`, which must hold at least [`ETH_HLEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        p: &mut Packet<&mut T>,
    ) -> Result<()> {
        p.check_len()?;
        p.set_dst_addr(self.dst_addr);
        p.set_src_addr(self.src_addr);
        p.set_ethertype(self.ethertype);
        Ok(())
    }
}

#[cfg(test)]
#[path = "ethernet_tests.rs"]
mod tests;
