//! Zero-copy packet views for the headers the virtual-networking datapath reads and
//! writes, in smoltcp's `src/wire/` style.
//!
//! Every protocol has two layers:
//!
//! * a view `Foo<T: AsRef<[u8]>>` (or `foo::Packet<T>`) over a byte buffer, with
//!   `new_unchecked`, `new_checked`, `into_inner`, getters, and setters when
//!   `T: AsMut<[u8]>`. After `new_checked` succeeds no getter can panic: the check
//!   covers every byte a getter touches. `payload()` borrows from the buffer (it is
//!   defined on views over `&'a T`, as in smoltcp), so a walk can go header by header.
//! * a plain `FooRepr` (`foo::Repr`) with `parse`, `emit` and `buffer_len`, which is what
//!   the rest of the simulator passes around.
//!
//! Layouts follow the kernel headers cited in each file, because the simulator must
//! produce the same bytes the kernel would put in front of user space.
//!
//! The headers with variable lengths (IPv4 IHL and tot_len, TCP doff, UDP len, IPv6
//! payload_len and extension headers) check in two steps: `check_len` covers the fixed
//! header, so every fixed-field getter is safe, and `check_header` the lengths the
//! kernel's receive path checks; `new_checked` runs both. The accessors of the variable
//! parts (`options()`, `payload()`, the IPv6 extension-header walk) clamp to the buffer
//! and never panic.
//!
//! Why hand-written rather than a crate: GRO and the trace summaries must read malformed
//! and truncated headers bit for bit (a trace shows an IHL of 15 in a 20-byte packet; GRO
//! flushes on it), and GRO sets fields in place on the skb's own bytes, which is the
//! kernel's own way (`struct iphdr *` over skb->data, iph->tot_len rewritten by
//! inet_gro_complete). smoltcp's `new_checked` refuses such a header outright and its
//! crate is a whole TCP/IP stack; pnet_packet (which the summaries used before) trusts
//! IHL and doff in its option and payload getters, so every variable length had to be
//! re-checked by hand around it. pcapgen still builds its frames with pnet_packet, which
//! keeps the frames the tests and scenarios feed the model made by an implementation
//! other than these views.
//!
//! The module names are smoltcp's (`ethernet::Packet`, `ipv4::Repr`, ...); the
//! re-exports below give them their protocol's prefix (`Ipv4Packet`, `TcpRepr`, ...).

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod gre;
pub mod ipv4;
pub mod ipv6;
pub mod summary;
pub mod tcp;
pub mod tun_pi;
pub mod udp;
pub mod virtio_net_hdr;
pub mod vlan;
pub mod vxlan;
pub mod walk;

#[cfg(test)]
mod test_frames;
#[cfg(test)]
mod views_fuzz_tests;

use std::fmt;

pub use arp::Packet as ArpPacket;
pub use ethernet::{Packet as EthernetPacket, Repr as EthernetRepr};
pub use gre::{Gre, GreRepr};
pub use ipv4::{Packet as Ipv4Packet, Repr as Ipv4Repr};
pub use ipv6::{ExtHeader as Ipv6ExtHeader, Packet as Ipv6Packet, Repr as Ipv6Repr};
pub use summary::{describe, describe_vlan_tci};
pub use tcp::{Packet as TcpPacket, Repr as TcpRepr};
pub use tun_pi::{TunPi, TunPiRepr};
pub use udp::{Packet as UdpPacket, Repr as UdpRepr};
pub use virtio_net_hdr::{Endian, VirtioNetHdr, VirtioNetHdrRepr, VnetHdrLayout};
pub use vlan::{Packet as VlanPacket, Repr as VlanRepr};
pub use vxlan::{Packet as VxlanPacket, Repr as VxlanRepr};

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
