//! The VXLAN header (include/net/vxlan.h: struct vxlanhdr; RFC 7348).
//!
//! ```text
//! |R|R|R|R|I|R|R|R|               Reserved                        |  vx_flags
//! |                VXLAN Network Identifier (VNI) |   Reserved    |  vx_vni
//! ```
//!
//! Both words are `__be32` in the kernel, and drivers/net/vxlan/vxlan_core.c:
//! vxlan_gro_prepare_receive compares them whole between segments (a reserved bit
//! that differs is another flow), so the view gives them whole as well as the I flag
//! and the 24-bit VNI.

use super::{Error, Result};
use crate::consts::VXLAN_HLEN;

/// VXLAN_HF_VNI (include/net/vxlan.h), as a bit of the first byte: vxlan_rcv drops a
/// header without the I flag.
pub const VXLAN_HF_VNI: u8 = 0x08;

mod field {
    use core::ops::Range;
    // Offsets of struct vxlanhdr.
    pub const FLAGS: Range<usize> = 0..4;
    pub const VNI: Range<usize> = 4..8;
    pub const PAYLOAD: usize = 8;
}

/// A read/write view of a VXLAN header and the inner frame after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking; getters panic under [`VXLAN_HLEN`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer`, failing with [`Error::Truncated`] under [`VXLAN_HLEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensures every getter is in bounds.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < VXLAN_HLEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn be32(&self, r: core::ops::Range<usize>) -> u32 {
        let b = &self.buffer.as_ref()[r];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// vx_flags, the whole first word (the I flag and the reserved bits).
    pub fn flags_word(&self) -> u32 {
        self.be32(field::FLAGS)
    }

    /// The flag byte (the first byte of vx_flags).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS.start]
    }

    /// The I flag (VXLAN_HF_VNI): the VNI is valid.
    pub fn vni_valid(&self) -> bool {
        self.flags() & VXLAN_HF_VNI != 0
    }

    /// vx_vni, the whole second word (the VNI and the reserved low byte).
    pub fn vni_word(&self) -> u32 {
        self.be32(field::VNI)
    }

    /// The 24-bit VNI (include/net/vxlan.h: vxlan_vni, the top 24 bits of vx_vni).
    pub fn vni(&self) -> u32 {
        self.vni_word() >> 8
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The inner frame after the header (empty, never a panic, on a short buffer).
    pub fn payload(&self) -> &'a [u8] {
        self.buffer.as_ref().get(field::PAYLOAD..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_be32(&mut self, r: core::ops::Range<usize>, v: u32) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets vx_flags whole.
    pub fn set_flags_word(&mut self, v: u32) {
        self.set_be32(field::FLAGS, v);
    }

    /// Sets vx_vni whole.
    pub fn set_vni_word(&mut self, v: u32) {
        self.set_be32(field::VNI, v);
    }

    /// Sets the 24-bit VNI (the low 24 bits of `vni`), keeping the reserved low byte.
    pub fn set_vni(&mut self, vni: u32) {
        let w = (vni & 0x00ff_ffff) << 8 | self.vni_word() & 0xff;
        self.set_vni_word(w);
    }

    /// The inner frame, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(field::PAYLOAD..)
            .unwrap_or(&mut [])
    }
}

/// The decoded contents of a VXLAN header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    /// The 24-bit VNI.
    pub vni: u32,
}

impl Repr {
    /// Decodes a header; [`Error::Truncated`] under [`VXLAN_HLEN`] bytes and
    /// [`Error::Malformed`] without the I flag (vxlan_rcv drops it).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&T>) -> Result<Repr> {
        p.check_len()?;
        if !p.vni_valid() {
            return Err(Error::Malformed("VXLAN I flag clear"));
        }
        Ok(Repr { vni: p.vni() })
    }

    /// Header bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        VXLAN_HLEN
    }

    /// Writes the header: the I flag alone, the VNI, reserved bits zero. A VNI over 24
    /// bits is [`Error::Malformed`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        p: &mut Packet<&mut T>,
    ) -> Result<()> {
        p.check_len()?;
        if self.vni > 0x00ff_ffff {
            return Err(Error::Malformed("VXLAN VNI over 24 bits"));
        }
        p.set_flags_word(u32::from(VXLAN_HF_VNI) << 24);
        p.set_vni_word(self.vni << 8);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7348 section 5: I flag set, VNI 0x00002a (42), then an inner frame's first
    // bytes.
    const HDR: [u8; 10] = [0x08, 0, 0, 0, 0x00, 0x00, 0x2a, 0x00, 0xaa, 0xbb];

    #[test]
    fn fields_of_a_header_by_hand() {
        let p = Packet::new_checked(&HDR[..]).expect("10 bytes");
        assert_eq!(p.flags(), 0x08);
        assert!(p.vni_valid());
        assert_eq!(p.flags_word(), 0x0800_0000);
        assert_eq!(p.vni_word(), 0x0000_2a00);
        assert_eq!(p.vni(), 42);
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        assert_eq!(Repr::parse(&p), Ok(Repr { vni: 42 }));
    }

    #[test]
    fn short_buffers_and_a_clear_i_flag() {
        for n in 0..VXLAN_HLEN {
            assert_eq!(
                Packet::new_checked(&HDR[..n]).err(),
                Some(Error::Truncated),
                "{n}"
            );
        }
        let p = Packet::new_checked(&HDR[..8]).expect("8 bytes");
        assert_eq!(p.payload(), &[] as &[u8]);
        let mut clear = HDR;
        clear[0] = 0;
        let p = Packet::new_unchecked(&clear[..]);
        assert!(!p.vni_valid());
        assert_eq!(Repr::parse(&p), Err(Error::Malformed("VXLAN I flag clear")));
    }

    #[test]
    fn setters_and_emit() {
        let mut b = [0xffu8; 8];
        let mut p = Packet::new_unchecked(&mut b[..]);
        // set_vni keeps the reserved low byte.
        p.set_vni(0x12_3456);
        assert_eq!(p.vni_word(), 0x1234_56ff);
        Repr { vni: 7 }.emit(&mut p).expect("fits");
        assert_eq!(b, [0x08, 0, 0, 0, 0, 0, 7, 0]);
        let mut p = Packet::new_unchecked(&mut b[..]);
        assert_eq!(
            Repr { vni: 1 << 24 }.emit(&mut p),
            Err(Error::Malformed("VXLAN VNI over 24 bits"))
        );
        let mut short = [0u8; 7];
        assert_eq!(
            Repr { vni: 1 }.emit(&mut Packet::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
    }
}
