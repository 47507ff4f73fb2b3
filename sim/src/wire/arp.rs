//! An ARP packet for Ethernet and IPv4 (include/uapi/linux/if_arp.h: struct arphdr,
//! followed by the addresses net/ipv4/arp.c: arp_create lays out; RFC 826).
//!
//! ```text
//! ar_hrd (2) ar_pro (2) ar_hln (1) ar_pln (1) ar_op (2)
//! sender MAC (6) sender IPv4 (4) target MAC (6) target IPv4 (4)
//! ```
//!
//! Only the Ethernet/IPv4 layout (ar_hln 6, ar_pln 4) is modelled: the address getters
//! read those offsets whatever ar_hln and ar_pln say, as the trace summaries want.

use std::net::Ipv4Addr;

use super::ethernet::EthAddr;
use super::{Error, Result};

/// The header and the four Ethernet/IPv4 addresses.
pub const PACKET_LEN: usize = 28;

/// ARPOP_REQUEST (include/uapi/linux/if_arp.h).
pub const ARPOP_REQUEST: u16 = 1;
/// ARPOP_REPLY (include/uapi/linux/if_arp.h).
pub const ARPOP_REPLY: u16 = 2;

mod field {
    use core::ops::Range;
    // Offsets of struct arphdr and the Ethernet/IPv4 addresses after it.
    pub const HRD: Range<usize> = 0..2;
    pub const PRO: Range<usize> = 2..4;
    pub const HLN: usize = 4;
    pub const PLN: usize = 5;
    pub const OP: Range<usize> = 6..8;
    pub const SHA: Range<usize> = 8..14;
    pub const SPA: Range<usize> = 14..18;
    pub const THA: Range<usize> = 18..24;
    pub const TPA: Range<usize> = 24..28;
}

/// A read/write view of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking; getters panic under [`PACKET_LEN`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer`, failing with [`Error::Truncated`] under [`PACKET_LEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensures every getter is in bounds.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < PACKET_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn be16(&self, r: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[r];
        u16::from_be_bytes([b[0], b[1]])
    }

    fn ipv4(&self, r: core::ops::Range<usize>) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[r];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    fn mac(&self, r: core::ops::Range<usize>) -> EthAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[r]);
        a
    }

    /// ar_hrd (ARPHRD_ETHER is 1).
    pub fn hardware_type(&self) -> u16 {
        self.be16(field::HRD)
    }

    /// ar_pro (ETH_P_IP).
    pub fn protocol_type(&self) -> u16 {
        self.be16(field::PRO)
    }

    /// ar_hln.
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLN]
    }

    /// ar_pln.
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLN]
    }

    /// ar_op (ARPOP_*).
    pub fn operation(&self) -> u16 {
        self.be16(field::OP)
    }

    /// Sender hardware address.
    pub fn sender_hw_addr(&self) -> EthAddr {
        self.mac(field::SHA)
    }

    /// Sender protocol address.
    pub fn sender_proto_addr(&self) -> Ipv4Addr {
        self.ipv4(field::SPA)
    }

    /// Target hardware address.
    pub fn target_hw_addr(&self) -> EthAddr {
        self.mac(field::THA)
    }

    /// Target protocol address.
    pub fn target_proto_addr(&self) -> Ipv4Addr {
        self.ipv4(field::TPA)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set(&mut self, r: core::ops::Range<usize>, v: &[u8]) {
        self.buffer.as_mut()[r].copy_from_slice(v);
    }

    /// Sets ar_hrd.
    pub fn set_hardware_type(&mut self, v: u16) {
        self.set(field::HRD, &v.to_be_bytes());
    }

    /// Sets ar_pro.
    pub fn set_protocol_type(&mut self, v: u16) {
        self.set(field::PRO, &v.to_be_bytes());
    }

    /// Sets ar_hln.
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLN] = v;
    }

    /// Sets ar_pln.
    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLN] = v;
    }

    /// Sets ar_op.
    pub fn set_operation(&mut self, v: u16) {
        self.set(field::OP, &v.to_be_bytes());
    }

    /// Sets the sender hardware address.
    pub fn set_sender_hw_addr(&mut self, a: EthAddr) {
        self.set(field::SHA, &a);
    }

    /// Sets the sender protocol address.
    pub fn set_sender_proto_addr(&mut self, a: Ipv4Addr) {
        self.set(field::SPA, &a.octets());
    }

    /// Sets the target hardware address.
    pub fn set_target_hw_addr(&mut self, a: EthAddr) {
        self.set(field::THA, &a);
    }

    /// Sets the target protocol address.
    pub fn set_target_proto_addr(&mut self, a: Ipv4Addr) {
        self.set(field::TPA, &a.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // From scenarios/corpus/pcaps/qinq-a2b.pcap, frame 1, after the two tags: tcpdump
    // reads "Request who-has 10.77.0.2 tell 10.77.0.1", sender 02:00:5e:c0:00:0a.
    static REQ: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x5e, 0xc0, 0x00, 0x0a, 0x0a,
        0x4d, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x4d, 0x00, 0x02,
    ];

    #[test]
    fn captured_request() {
        let p = Packet::new_checked(&REQ[..]).expect("28 bytes");
        assert_eq!(p.hardware_type(), 1);
        assert_eq!(p.protocol_type(), 0x0800);
        assert_eq!((p.hardware_len(), p.protocol_len()), (6, 4));
        assert_eq!(p.operation(), ARPOP_REQUEST);
        assert_eq!(p.sender_hw_addr(), [0x02, 0x00, 0x5e, 0xc0, 0x00, 0x0a]);
        assert_eq!(p.sender_proto_addr(), Ipv4Addr::new(10, 77, 0, 1));
        assert_eq!(p.target_hw_addr(), [0; 6]);
        assert_eq!(p.target_proto_addr(), Ipv4Addr::new(10, 77, 0, 2));
    }

    #[test]
    fn short_rejected_and_setters_write_the_layout() {
        for len in 0..PACKET_LEN {
            assert_eq!(Packet::new_checked(&REQ[..len]), Err(Error::Truncated));
        }
        let mut buf = [0u8; 28];
        let mut p = Packet::new_checked(&mut buf[..]).expect("28 bytes");
        p.set_hardware_type(1);
        p.set_protocol_type(0x0800);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(ARPOP_REQUEST);
        p.set_sender_hw_addr([0x02, 0x00, 0x5e, 0xc0, 0x00, 0x0a]);
        p.set_sender_proto_addr(Ipv4Addr::new(10, 77, 0, 1));
        p.set_target_hw_addr([0; 6]);
        p.set_target_proto_addr(Ipv4Addr::new(10, 77, 0, 2));
        assert_eq!(buf, REQ);
        let mut reply = REQ;
        Packet::new_unchecked(&mut reply[..]).set_operation(ARPOP_REPLY);
        assert_eq!(reply[6..8], [0, 2]);
    }
}
