//! The virtio-net header that tap (IFF_VNET_HDR) and vhost-net put in front of every
//! frame to carry checksum and GSO offload state.
//!
//! Three layouts (include/uapi/linux/virtio_net.h):
//!
//! ```text
//! off  struct virtio_net_hdr (10)   + _mrg_rxbuf / _v1 (12)   + _v1_hash_tunnel (24)
//!  0   u8  flags
//!  1   u8  gso_type
//!  2   __virtio16 hdr_len
//!  4   __virtio16 gso_size
//!  6   __virtio16 csum_start
//!  8   __virtio16 csum_offset
//! 10                                __virtio16 num_buffers
//! 12                                                          __le32 hash_value (lo, hi)
//! 16                                                          __le16 hash_report
//! 18                                                          __le16 padding
//! 20                                                          __le16 outer_th_offset
//! 22                                                          __le16 inner_nh_offset
//! ```
//!
//! `__virtio16` fields follow the device's endianness: little-endian by default on x86
//! or after TUNSETVNETLE, big-endian after TUNSETVNETBE (drivers/net/tun_vnet.h:
//! tun_vnet16_to_cpu, tun_vnet_is_little_endian; BE needs CONFIG_TUN_VNET_CROSS_LE).
//! The hash and tunnel fields are declared `__le` and written with cpu_to_le16 whatever
//! the device endianness (include/linux/virtio_net.h: virtio_net_hdr_tnl_from_skb).

use super::{Error, Result};

/// VIRTIO_NET_HDR_F_NEEDS_CSUM: csum_start/csum_offset describe a pending checksum.
pub const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
/// VIRTIO_NET_HDR_F_DATA_VALID: the checksum was already verified.
pub const VIRTIO_NET_HDR_F_DATA_VALID: u8 = 2;
/// VIRTIO_NET_HDR_F_RSC_INFO: csum fields carry receive-segment-coalescing info.
pub const VIRTIO_NET_HDR_F_RSC_INFO: u8 = 4;
/// VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM: the outer UDP checksum of a tunnel is offloaded.
pub const VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM: u8 = 8;

/// VIRTIO_NET_HDR_GSO_NONE: not a GSO frame.
pub const VIRTIO_NET_HDR_GSO_NONE: u8 = 0;
/// VIRTIO_NET_HDR_GSO_TCPV4: IPv4 TCP segmentation (TSO).
pub const VIRTIO_NET_HDR_GSO_TCPV4: u8 = 1;
/// VIRTIO_NET_HDR_GSO_UDP: IPv4 UDP fragmentation offload (UFO).
pub const VIRTIO_NET_HDR_GSO_UDP: u8 = 3;
/// VIRTIO_NET_HDR_GSO_TCPV6: IPv6 TCP segmentation.
pub const VIRTIO_NET_HDR_GSO_TCPV6: u8 = 4;
/// VIRTIO_NET_HDR_GSO_UDP_L4: UDP segmentation (USO) for IPv4 and IPv6.
pub const VIRTIO_NET_HDR_GSO_UDP_L4: u8 = 5;
/// VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4: the GSO packet is inside a UDPv4 tunnel.
pub const VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4: u8 = 0x20;
/// VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6: the GSO packet is inside a UDPv6 tunnel.
pub const VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6: u8 = 0x40;
/// VIRTIO_NET_HDR_GSO_ECN: the TCP stream has ECN (CWR must be kept on one segment).
pub const VIRTIO_NET_HDR_GSO_ECN: u8 = 0x80;

/// sizeof(struct virtio_net_hdr).
pub const VIRTIO_NET_HDR_LEN: usize = 10;
/// sizeof(struct virtio_net_hdr_mrg_rxbuf) == sizeof(struct virtio_net_hdr_v1).
pub const VIRTIO_NET_HDR_MRG_LEN: usize = 12;
/// sizeof(struct virtio_net_hdr_v1_hash_tunnel) (TUN_VNET_TNL_SIZE in tun_vnet.h).
pub const VIRTIO_NET_HDR_TUNNEL_LEN: usize = 24;

mod field {
    use core::ops::Range;
    // Offsets of struct virtio_net_hdr_v1_hash_tunnel (include/uapi/linux/virtio_net.h).
    pub const FLAGS: usize = 0;
    pub const GSO_TYPE: usize = 1;
    pub const HDR_LEN: Range<usize> = 2..4;
    pub const GSO_SIZE: Range<usize> = 4..6;
    pub const CSUM_START: Range<usize> = 6..8;
    pub const CSUM_OFFSET: Range<usize> = 8..10;
    pub const NUM_BUFFERS: Range<usize> = 10..12;
    pub const HASH_VALUE: Range<usize> = 12..16;
    pub const HASH_REPORT: Range<usize> = 16..18;
    pub const PADDING: Range<usize> = 18..20;
    pub const OUTER_TH_OFFSET: Range<usize> = 20..22;
    pub const INNER_NH_OFFSET: Range<usize> = 22..24;
}

/// Byte order of the `__virtio16` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Endian {
    /// Virtio 1.0, legacy virtio on x86, or TUNSETVNETLE.
    #[default]
    Little,
    /// TUNSETVNETBE (legacy big-endian guests).
    Big,
}

impl Endian {
    fn read16(self, b: &[u8]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes([b[0], b[1]]),
            Endian::Big => u16::from_be_bytes([b[0], b[1]]),
        }
    }

    fn bytes16(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
}

/// Which struct the bytes hold: how many real header bytes there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum VnetHdrLayout {
    /// struct virtio_net_hdr, 10 bytes: what tun parses and writes without tunnel GSO.
    #[default]
    Basic,
    /// struct virtio_net_hdr_mrg_rxbuf / virtio_net_hdr_v1, 12 bytes: + num_buffers.
    Mrg,
    /// struct virtio_net_hdr_v1_hash_tunnel, 24 bytes: what tun parses and writes when
    /// a UDP-tunnel GSO feature is on (drivers/net/tun_vnet.h: tun_vnet_parse_size).
    HashTunnel,
}

impl VnetHdrLayout {
    /// Size of the struct in bytes.
    pub const fn header_len(self) -> usize {
        match self {
            VnetHdrLayout::Basic => VIRTIO_NET_HDR_LEN,
            VnetHdrLayout::Mrg => VIRTIO_NET_HDR_MRG_LEN,
            VnetHdrLayout::HashTunnel => VIRTIO_NET_HDR_TUNNEL_LEN,
        }
    }

    /// The layout of exactly `len` bytes, if there is one.
    pub const fn from_len(len: usize) -> Option<VnetHdrLayout> {
        match len {
            VIRTIO_NET_HDR_LEN => Some(VnetHdrLayout::Basic),
            VIRTIO_NET_HDR_MRG_LEN => Some(VnetHdrLayout::Mrg),
            VIRTIO_NET_HDR_TUNNEL_LEN => Some(VnetHdrLayout::HashTunnel),
            _ => None,
        }
    }
}

/// A read/write view of a virtio-net header at the start of a buffer.
///
/// The layout and endianness are part of the view because the bytes alone do not say
/// them: the kernel knows them from the device's vnet_hdr_sz, features and VNET_LE/BE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtioNetHdr<T: AsRef<[u8]>> {
    buffer: T,
    layout: VnetHdrLayout,
    endian: Endian,
}

impl<T: AsRef<[u8]>> VirtioNetHdr<T> {
    /// Wraps `buffer` without checking it; getters panic if it is shorter than the layout.
    pub const fn new_unchecked(buffer: T, layout: VnetHdrLayout, endian: Endian) -> Self {
        VirtioNetHdr {
            buffer,
            layout,
            endian,
        }
    }

    /// Wraps `buffer`, failing with [`Error::Truncated`] if it is shorter than `layout`.
    pub fn new_checked(buffer: T, layout: VnetHdrLayout, endian: Endian) -> Result<Self> {
        let hdr = Self::new_unchecked(buffer, layout, endian);
        hdr.check_len()?;
        Ok(hdr)
    }

    /// Ensures every getter is in bounds.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < self.layout.header_len() {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The layout this view was created with.
    pub fn layout(&self) -> VnetHdrLayout {
        self.layout
    }

    /// The byte order of the `__virtio16` fields.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    fn v16(&self, r: core::ops::Range<usize>) -> u16 {
        self.endian.read16(&self.buffer.as_ref()[r])
    }

    fn le16(&self, r: core::ops::Range<usize>) -> u16 {
        Endian::Little.read16(&self.buffer.as_ref()[r])
    }

    /// `flags` (VIRTIO_NET_HDR_F_*).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// `gso_type` (VIRTIO_NET_HDR_GSO_*).
    pub fn gso_type(&self) -> u8 {
        self.buffer.as_ref()[field::GSO_TYPE]
    }

    /// `hdr_len`: bytes of Ethernet + IP + L4 headers, a hint for the linear part.
    pub fn hdr_len(&self) -> u16 {
        self.v16(field::HDR_LEN)
    }

    /// `gso_size`: payload bytes per segment.
    pub fn gso_size(&self) -> u16 {
        self.v16(field::GSO_SIZE)
    }

    /// `csum_start`: offset from the frame start where checksumming begins.
    pub fn csum_start(&self) -> u16 {
        self.v16(field::CSUM_START)
    }

    /// `csum_offset`: where, after csum_start, the checksum is stored.
    pub fn csum_offset(&self) -> u16 {
        self.v16(field::CSUM_OFFSET)
    }

    /// `num_buffers`, if the layout has it.
    pub fn num_buffers(&self) -> Option<u16> {
        (self.layout >= VnetHdrLayout::Mrg).then(|| self.v16(field::NUM_BUFFERS))
    }

    /// `hash_value` (always little-endian), if the layout has it.
    pub fn hash_value(&self) -> Option<u32> {
        (self.layout == VnetHdrLayout::HashTunnel).then(|| {
            let b = &self.buffer.as_ref()[field::HASH_VALUE];
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        })
    }

    /// `hash_report` (VIRTIO_NET_HASH_REPORT_*, always little-endian), if present.
    pub fn hash_report(&self) -> Option<u16> {
        (self.layout == VnetHdrLayout::HashTunnel).then(|| self.le16(field::HASH_REPORT))
    }

    /// `outer_th_offset` (always little-endian), if the layout has it.
    pub fn outer_th_offset(&self) -> Option<u16> {
        (self.layout == VnetHdrLayout::HashTunnel).then(|| self.le16(field::OUTER_TH_OFFSET))
    }

    /// `inner_nh_offset` (always little-endian), if the layout has it.
    pub fn inner_nh_offset(&self) -> Option<u16> {
        (self.layout == VnetHdrLayout::HashTunnel).then(|| self.le16(field::INNER_NH_OFFSET))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VirtioNetHdr<T> {
    fn set_v16(&mut self, r: core::ops::Range<usize>, v: u16) {
        let bytes = self.endian.bytes16(v);
        self.buffer.as_mut()[r].copy_from_slice(&bytes);
    }

    /// Sets `flags`.
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }

    /// Sets `gso_type`.
    pub fn set_gso_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::GSO_TYPE] = v;
    }

    /// Sets `hdr_len`.
    pub fn set_hdr_len(&mut self, v: u16) {
        self.set_v16(field::HDR_LEN, v);
    }

    /// Sets `gso_size`.
    pub fn set_gso_size(&mut self, v: u16) {
        self.set_v16(field::GSO_SIZE, v);
    }

    /// Sets `csum_start`.
    pub fn set_csum_start(&mut self, v: u16) {
        self.set_v16(field::CSUM_START, v);
    }

    /// Sets `csum_offset`.
    pub fn set_csum_offset(&mut self, v: u16) {
        self.set_v16(field::CSUM_OFFSET, v);
    }

    /// Sets `num_buffers`; the basic layout has no such field.
    pub fn set_num_buffers(&mut self, v: u16) -> Result<()> {
        if self.layout < VnetHdrLayout::Mrg {
            return Err(Error::Malformed(
                "num_buffers is not in struct virtio_net_hdr",
            ));
        }
        self.set_v16(field::NUM_BUFFERS, v);
        Ok(())
    }

    /// Sets `hash_value` and `hash_report` and zeroes `padding` (tunnel layout only).
    pub fn set_hash(&mut self, value: u32, report: u16) -> Result<()> {
        if self.layout != VnetHdrLayout::HashTunnel {
            return Err(Error::Malformed(
                "hash fields need virtio_net_hdr_v1_hash_tunnel",
            ));
        }
        let buf = self.buffer.as_mut();
        buf[field::HASH_VALUE].copy_from_slice(&value.to_le_bytes());
        buf[field::HASH_REPORT].copy_from_slice(&report.to_le_bytes());
        buf[field::PADDING].fill(0);
        Ok(())
    }

    /// Sets `outer_th_offset` and `inner_nh_offset` (tunnel layout only).
    pub fn set_tunnel_offsets(&mut self, outer_th: u16, inner_nh: u16) -> Result<()> {
        if self.layout != VnetHdrLayout::HashTunnel {
            return Err(Error::Malformed(
                "tunnel offsets need virtio_net_hdr_v1_hash_tunnel",
            ));
        }
        let buf = self.buffer.as_mut();
        buf[field::OUTER_TH_OFFSET].copy_from_slice(&outer_th.to_le_bytes());
        buf[field::INNER_NH_OFFSET].copy_from_slice(&inner_nh.to_le_bytes());
        Ok(())
    }
}

/// Every field of the largest layout; fields a smaller layout lacks parse as 0. A
/// scenario's `vnet` tables name the fields of struct virtio_net_hdr (the rest are 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VirtioNetHdrRepr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
    #[serde(skip)]
    pub num_buffers: u16,
    #[serde(skip)]
    pub hash_value: u32,
    #[serde(skip)]
    pub hash_report: u16,
    /// virtio_net_hdr_v1_hash_tunnel's two offsets (written only when vnet_hdr_sz >= 24).
    pub outer_th_offset: u16,
    pub inner_nh_offset: u16,
}

impl VirtioNetHdrRepr {
    /// Decodes the fields the view's layout holds.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(hdr: &VirtioNetHdr<&T>) -> Result<Self> {
        hdr.check_len()?;
        Ok(VirtioNetHdrRepr {
            flags: hdr.flags(),
            gso_type: hdr.gso_type(),
            hdr_len: hdr.hdr_len(),
            gso_size: hdr.gso_size(),
            csum_start: hdr.csum_start(),
            csum_offset: hdr.csum_offset(),
            num_buffers: hdr.num_buffers().unwrap_or(0),
            hash_value: hdr.hash_value().unwrap_or(0),
            hash_report: hdr.hash_report().unwrap_or(0),
            outer_th_offset: hdr.outer_th_offset().unwrap_or(0),
            inner_nh_offset: hdr.inner_nh_offset().unwrap_or(0),
        })
    }

    /// Decodes a header the way tun reads one from a write(): `buf` must hold
    /// `vnet_hdr_sz` bytes, of which the first `layout` bytes are parsed and the rest
    /// skipped (drivers/net/tun_vnet.h: __tun_vnet_hdr_get).
    pub fn parse_padded(
        buf: &[u8],
        vnet_hdr_sz: usize,
        layout: VnetHdrLayout,
        endian: Endian,
    ) -> Result<Self> {
        if vnet_hdr_sz < layout.header_len() {
            return Err(Error::Malformed(
                "vnet_hdr_sz smaller than the parsed header",
            ));
        }
        if buf.len() < vnet_hdr_sz {
            return Err(Error::Truncated);
        }
        Self::parse(&VirtioNetHdr::new_unchecked(buf, layout, endian))
    }

    /// Decodes the `layout` header at the start of `bytes` (what a reader of the fd, or
    /// the real arm, gets back).
    pub fn from_bytes(bytes: &[u8], layout: VnetHdrLayout, endian: Endian) -> Result<Self> {
        Self::parse(&VirtioNetHdr::new_checked(bytes, layout, endian)?)
    }

    /// The basic 10-byte struct virtio_net_hdr of `self`, what a write without tunnel
    /// GSO puts in front of its frame (the fields larger layouts add are dropped).
    pub fn to_basic_bytes(&self, endian: Endian) -> [u8; VIRTIO_NET_HDR_LEN] {
        let mut out = [0; VIRTIO_NET_HDR_LEN];
        self.emit_basic(&mut VirtioNetHdr::new_unchecked(
            &mut out[..],
            VnetHdrLayout::Basic,
            endian,
        ));
        out
    }

    /// The fields every layout holds; the caller has checked the view's length.
    fn emit_basic<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, hdr: &mut VirtioNetHdr<&mut T>) {
        hdr.set_flags(self.flags);
        hdr.set_gso_type(self.gso_type);
        hdr.set_hdr_len(self.hdr_len);
        hdr.set_gso_size(self.gso_size);
        hdr.set_csum_start(self.csum_start);
        hdr.set_csum_offset(self.csum_offset);
    }

    /// The smallest layout that carries every non-zero field of `self`.
    pub fn min_layout(&self) -> VnetHdrLayout {
        if self.hash_value != 0
            || self.hash_report != 0
            || self.outer_th_offset != 0
            || self.inner_nh_offset != 0
        {
            VnetHdrLayout::HashTunnel
        } else if self.num_buffers != 0 {
            VnetHdrLayout::Mrg
        } else {
            VnetHdrLayout::Basic
        }
    }

    /// Bytes of [`VirtioNetHdrRepr::min_layout`].
    pub fn buffer_len(&self) -> usize {
        self.min_layout().header_len()
    }

    /// Writes the fields the view's layout holds. Fields the layout lacks are dropped,
    /// as the kernel drops them when it copies only the parsed size to user space.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        hdr: &mut VirtioNetHdr<&mut T>,
    ) -> Result<()> {
        hdr.check_len()?;
        self.emit_basic(hdr);
        if hdr.layout() >= VnetHdrLayout::Mrg {
            hdr.set_num_buffers(self.num_buffers)?;
        }
        if hdr.layout() == VnetHdrLayout::HashTunnel {
            hdr.set_hash(self.hash_value, self.hash_report)?;
            hdr.set_tunnel_offsets(self.outer_th_offset, self.inner_nh_offset)?;
        }
        Ok(())
    }

    /// Writes the header the way tun_put_user() does: the `layout` bytes, then zeroes up
    /// to `vnet_hdr_sz` (drivers/net/tun_vnet.h: __tun_vnet_hdr_put copies
    /// tun_vnet_parse_size() bytes, which is 24 only with a UDP-tunnel GSO feature, and
    /// iov_iter_zero()s the rest). Returns `vnet_hdr_sz`, the bytes consumed in `buf`.
    pub fn emit_padded(
        &self,
        buf: &mut [u8],
        vnet_hdr_sz: usize,
        layout: VnetHdrLayout,
        endian: Endian,
    ) -> Result<usize> {
        if vnet_hdr_sz < layout.header_len() {
            return Err(Error::Malformed(
                "vnet_hdr_sz smaller than the written header",
            ));
        }
        // tun_put_user fails with -EINVAL when the read buffer is shorter than sz.
        let out = buf.get_mut(..vnet_hdr_sz).ok_or(Error::Truncated)?;
        out.fill(0);
        self.emit(&mut VirtioNetHdr::new_unchecked(out, layout, endian))?;
        Ok(vnet_hdr_sz)
    }
}

/// Human-readable gso_type for traces: "NONE", "TCPV4", "TCPV6|ECN", "UDP_L4|UDP_TUNNEL_IPV4".
pub fn gso_type_name(gso_type: u8) -> String {
    let tunnel_bits = VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4 | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6;
    let base = gso_type & !(tunnel_bits | VIRTIO_NET_HDR_GSO_ECN);
    let mut s = match base {
        VIRTIO_NET_HDR_GSO_NONE => "NONE".to_string(),
        VIRTIO_NET_HDR_GSO_TCPV4 => "TCPV4".to_string(),
        VIRTIO_NET_HDR_GSO_UDP => "UDP".to_string(),
        VIRTIO_NET_HDR_GSO_TCPV6 => "TCPV6".to_string(),
        VIRTIO_NET_HDR_GSO_UDP_L4 => "UDP_L4".to_string(),
        other => format!("0x{other:02x}"),
    };
    for (bit, name) in [
        (VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4, "UDP_TUNNEL_IPV4"),
        (VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6, "UDP_TUNNEL_IPV6"),
        (VIRTIO_NET_HDR_GSO_ECN, "ECN"),
    ] {
        if gso_type & bit != 0 {
            s.push('|');
            s.push_str(name);
        }
    }
    s
}

/// Human-readable flags for traces: "NEEDS_CSUM|DATA_VALID", "none" for 0; unknown bits
/// are shown in hex.
pub fn flags_names(flags: u8) -> String {
    let known = [
        (VIRTIO_NET_HDR_F_NEEDS_CSUM, "NEEDS_CSUM"),
        (VIRTIO_NET_HDR_F_DATA_VALID, "DATA_VALID"),
        (VIRTIO_NET_HDR_F_RSC_INFO, "RSC_INFO"),
        (VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM, "UDP_TUNNEL_CSUM"),
    ];
    let mut parts: Vec<String> = known
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|(_, name)| (*name).to_string())
        .collect();
    let unknown = flags & !known.iter().fold(0, |acc, (bit, _)| acc | bit);
    if unknown != 0 {
        parts.push(format!("0x{unknown:02x}"));
    }
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join("|")
    }
}

#[cfg(test)]
#[path = "virtio_net_hdr_tests.rs"]
mod tests;
