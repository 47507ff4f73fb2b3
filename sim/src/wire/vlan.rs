//! An 802.1Q / 802.1ad VLAN tag as it follows a TPID in the frame
//! (include/linux/if_vlan.h: struct vlan_hdr).
//!
//! ```text
//! struct vlan_hdr {
//!     __be16 h_vlan_TCI;                // PCP (3 bits) | DEI (1) | VID (12)
//!     __be16 h_vlan_encapsulated_proto; // the next EtherType (or another TPID)
//! };
//! ```
//!
//! The TPID itself is the `h_proto` of the Ethernet header (or of the outer tag) in front
//! of this header, so a view starts right after it: for an Ethernet frame at offset
//! `ETH_HLEN`, VLAN_HLEN bytes per tag. ETH_P_8021Q is the customer tag, ETH_P_8021AD
//! the service tag of QinQ; [`eth_type_vlan`] is the kernel's test for both.

use super::{Error, Result};
use crate::consts::VLAN_HLEN;
use crate::consts::{ETH_P_8021AD, ETH_P_8021Q};

/// VLAN_PRIO_MASK (include/linux/if_vlan.h): the priority code point bits of the TCI.
pub const VLAN_PRIO_MASK: u16 = 0xe000;
/// VLAN_PRIO_SHIFT (include/linux/if_vlan.h).
pub const VLAN_PRIO_SHIFT: u16 = 13;
/// VLAN_CFI_MASK (include/linux/if_vlan.h): the CFI bit, DEI since 802.1Q-2011.
pub const VLAN_CFI_MASK: u16 = 0x1000;
/// VLAN_VID_MASK (include/linux/if_vlan.h): the VLAN id bits.
pub const VLAN_VID_MASK: u16 = 0x0fff;

mod field {
    use core::ops::Range;
    // Offsets of struct vlan_hdr.
    pub const TCI: Range<usize> = 0..2;
    pub const ENCAP_PROTO: Range<usize> = 2..4;
    pub const PAYLOAD: usize = 4;
}

/// include/linux/if_vlan.h: eth_type_vlan: an 802.1Q or 802.1ad TPID, the two the
/// kernel's receive path untags (skb_vlan_untag, vlan_gro_receive).
pub fn eth_type_vlan(ethertype: u16) -> bool {
    matches!(ethertype, ETH_P_8021Q | ETH_P_8021AD)
}

/// A read/write view of one VLAN tag (TCI and encapsulated protocol) and what follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking; getters panic on a buffer under [`VLAN_HLEN`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer`, failing with [`Error::Truncated`] under [`VLAN_HLEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensures every getter is in bounds.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < VLAN_HLEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// `h_vlan_TCI`, whole.
    pub fn tci(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::TCI];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Priority code point, 0..=7 (VLAN_PRIO_MASK >> VLAN_PRIO_SHIFT).
    pub fn pcp(&self) -> u8 {
        // Three bits after the shift, so the cast is lossless.
        ((self.tci() & VLAN_PRIO_MASK) >> VLAN_PRIO_SHIFT) as u8
    }

    /// Drop eligible indicator (VLAN_CFI_MASK).
    pub fn dei(&self) -> bool {
        self.tci() & VLAN_CFI_MASK != 0
    }

    /// VLAN id, 0..=4095 (VLAN_VID_MASK).
    pub fn vid(&self) -> u16 {
        self.tci() & VLAN_VID_MASK
    }

    /// `h_vlan_encapsulated_proto`.
    pub fn ethertype(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::ENCAP_PROTO];
        u16::from_be_bytes([b[0], b[1]])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The bytes after the tag (empty, never a panic, on a short buffer).
    pub fn payload(&self) -> &'a [u8] {
        self.buffer.as_ref().get(field::PAYLOAD..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `h_vlan_TCI`, whole.
    pub fn set_tci(&mut self, tci: u16) {
        self.buffer.as_mut()[field::TCI].copy_from_slice(&tci.to_be_bytes());
    }

    /// Sets the priority code point (the low 3 bits of `pcp`), keeping DEI and VID.
    pub fn set_pcp(&mut self, pcp: u8) {
        let tci =
            self.tci() & !VLAN_PRIO_MASK | (u16::from(pcp) << VLAN_PRIO_SHIFT) & VLAN_PRIO_MASK;
        self.set_tci(tci);
    }

    /// Sets or clears DEI, keeping PCP and VID.
    pub fn set_dei(&mut self, dei: bool) {
        let tci = self.tci() & !VLAN_CFI_MASK | if dei { VLAN_CFI_MASK } else { 0 };
        self.set_tci(tci);
    }

    /// Sets the VLAN id (the low 12 bits of `vid`), keeping PCP and DEI.
    pub fn set_vid(&mut self, vid: u16) {
        let tci = self.tci() & !VLAN_VID_MASK | vid & VLAN_VID_MASK;
        self.set_tci(tci);
    }

    /// Sets `h_vlan_encapsulated_proto`.
    pub fn set_ethertype(&mut self, v: u16) {
        self.buffer.as_mut()[field::ENCAP_PROTO].copy_from_slice(&v.to_be_bytes());
    }

    /// The bytes after the tag, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(field::PAYLOAD..)
            .unwrap_or(&mut [])
    }
}

/// The decoded contents of a VLAN tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id, 0..=4095.
    pub vid: u16,
    /// `h_vlan_encapsulated_proto`.
    pub ethertype: u16,
}

impl Repr {
    /// Decodes a tag; a buffer under [`VLAN_HLEN`] is [`Error::Truncated`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            pcp: p.pcp(),
            dei: p.dei(),
            vid: p.vid(),
            ethertype: p.ethertype(),
        })
    }

    /// The TCI this repr emits. A PCP above 7 or a VID above 4095 is [`Error::Malformed`]:
    /// they do not fit their bits.
    pub fn tci(&self) -> Result<u16> {
        if self.pcp > 7 {
            return Err(Error::Malformed("VLAN PCP above 7"));
        }
        if self.vid > VLAN_VID_MASK {
            return Err(Error::Malformed("VLAN id above 4095"));
        }
        let dei = if self.dei { VLAN_CFI_MASK } else { 0 };
        Ok(u16::from(self.pcp) << VLAN_PRIO_SHIFT | dei | self.vid)
    }

    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        VLAN_HLEN
    }

    /// Writes the tag into `p`, which must hold at least [`VLAN_HLEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        p: &mut Packet<&mut T>,
    ) -> Result<()> {
        p.check_len()?;
        let tci = self.tci()?;
        p.set_tci(tci);
        p.set_ethertype(self.ethertype);
        Ok(())
    }
}

#[cfg(test)]
#[path = "vlan_tests.rs"]
mod tests;
