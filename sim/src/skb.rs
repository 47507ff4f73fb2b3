//! The sk_buff model: a linear buffer with head/data/tail/end, the paged part as
//! skb_shared_info holds it (frags and frag_list, `skb_shinfo.rs`), and the metadata the
//! datapath reads (include/linux/skbuff.h). GRO uses the same type (`crate::gro`).
//!
//! Offsets follow the kernel: header offsets count from `head`, so a push or pull moves
//! `data` without touching them. Every operation adds to [`OpCounters`]; the cost model
//! reads them, so a copy or memmove that the kernel does must be counted here too.

use std::fmt;

pub use self::shinfo::SkbFrag;
use crate::gro::{GroCb, GroModel};

#[path = "skb_shinfo.rs"]
mod shinfo;
#[path = "skb_vlan.rs"]
mod vlan;

// Still re-exported for trace/ and tun/vnet_to_skb.rs, which other items of issue 21
// rewrite (they import crate::consts directly once those land).
pub use crate::consts::{ETH_HLEN, ETH_P_IP, ETH_P_IPV6};

/// skb->ip_summed (include/linux/skbuff.h). A scenario's `skb.checksum` names all but
/// CHECKSUM_COMPLETE, which no transmitted skb has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IpSummed {
    #[default]
    None,
    Unnecessary,
    #[serde(skip)]
    Complete,
    Partial,
}

impl IpSummed {
    pub fn kernel_name(self) -> &'static str {
        match self {
            IpSummed::None => "CHECKSUM_NONE",
            IpSummed::Unnecessary => "CHECKSUM_UNNECESSARY",
            IpSummed::Complete => "CHECKSUM_COMPLETE",
            IpSummed::Partial => "CHECKSUM_PARTIAL",
        }
    }
}

/// skb_shinfo(skb)->gso_type bits (include/linux/skbuff.h, enum SKB_GSO_*).
pub mod gso {
    pub const TCPV4: u32 = 1 << 0;
    pub const DODGY: u32 = 1 << 1;
    pub const TCP_ECN: u32 = 1 << 2;
    pub const TCP_FIXEDID: u32 = 1 << 3;
    pub const TCPV6: u32 = 1 << 4;
    pub const FCOE: u32 = 1 << 5;
    pub const GRE: u32 = 1 << 6;
    pub const GRE_CSUM: u32 = 1 << 7;
    pub const IPXIP4: u32 = 1 << 8;
    pub const IPXIP6: u32 = 1 << 9;
    pub const UDP_TUNNEL: u32 = 1 << 10;
    pub const UDP_TUNNEL_CSUM: u32 = 1 << 11;
    pub const PARTIAL: u32 = 1 << 12;
    pub const TUNNEL_REMCSUM: u32 = 1 << 13;
    pub const SCTP: u32 = 1 << 14;
    pub const ESP: u32 = 1 << 15;
    pub const UDP: u32 = 1 << 16;
    pub const UDP_L4: u32 = 1 << 17;
    pub const FRAGLIST: u32 = 1 << 18;
    /// SKB_GSO_TCP_ACCECN (v6.17+): set by tcp_gro_complete on a CWR head segment.
    pub const TCP_ACCECN: u32 = 1 << 19;
    /// SKB_GSO_TCP_FIXEDID_INNER (v6.18): the inner IP ID of an encapsulated flow is
    /// fixed. (6.18 also renumbered SKB_GSO_TCP_FIXEDID to 1 << 30; the model keeps the
    /// symbol, traces show names.)
    pub const TCP_FIXEDID_INNER: u32 = 1 << 31;

    const NAMES: [(u32, &str); 21] = [
        (TCPV4, "TCPV4"),
        (DODGY, "DODGY"),
        (TCP_ECN, "TCP_ECN"),
        (TCP_FIXEDID, "TCP_FIXEDID"),
        (TCPV6, "TCPV6"),
        (FCOE, "FCOE"),
        (GRE, "GRE"),
        (GRE_CSUM, "GRE_CSUM"),
        (IPXIP4, "IPXIP4"),
        (IPXIP6, "IPXIP6"),
        (UDP_TUNNEL, "UDP_TUNNEL"),
        (UDP_TUNNEL_CSUM, "UDP_TUNNEL_CSUM"),
        (PARTIAL, "PARTIAL"),
        (TUNNEL_REMCSUM, "TUNNEL_REMCSUM"),
        (SCTP, "SCTP"),
        (ESP, "ESP"),
        (UDP, "UDP"),
        (UDP_L4, "UDP_L4"),
        (FRAGLIST, "FRAGLIST"),
        (TCP_ACCECN, "TCP_ACCECN"),
        (TCP_FIXEDID_INNER, "TCP_FIXEDID_INNER"),
    ];

    /// "TCPV4|DODGY", or "0" for none; unknown bits as hex.
    pub fn names(bits: u32) -> String {
        if bits == 0 {
            return "0".to_string();
        }
        let mut out = Vec::new();
        let mut rest = bits;
        for (bit, name) in NAMES {
            if bits & bit != 0 {
                out.push(name.to_string());
                rest &= !bit;
            }
        }
        if rest != 0 {
            out.push(format!("{rest:#x}"));
        }
        out.join("|")
    }
}

/// A hardware-accelerated VLAN tag: skb->vlan_proto, skb->vlan_tci and the present bit
/// (include/linux/if_vlan.h: __vlan_hwaccel_put_tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    /// TPID in host order, e.g. ETH_P_8021Q or ETH_P_8021AD.
    pub proto: u16,
    pub tci: u16,
}

/// What the datapath did to bytes: the inputs of the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpCounters {
    /// Bytes copied from the skb (or a constructed header) into a user buffer.
    pub bytes_copied_to_user: u64,
    /// Bytes copied into skbs from outside (a written frame, a pcap record).
    pub bytes_copied_in: u64,
    /// Bytes moved inside a buffer (vlan_insert_tag's MAC memmove).
    pub bytes_memmoved: u64,
    /// Buffer allocations (alloc_skb, pskb_expand_head).
    pub allocations: u64,
    /// Bytes copied by reallocations (pskb_expand_head).
    pub bytes_copied_realloc: u64,
}

impl OpCounters {
    pub fn add(&mut self, other: &OpCounters) {
        self.bytes_copied_to_user += other.bytes_copied_to_user;
        self.bytes_copied_in += other.bytes_copied_in;
        self.bytes_memmoved += other.bytes_memmoved;
        self.allocations += other.allocations;
        self.bytes_copied_realloc += other.bytes_copied_realloc;
    }
}

impl OpCounters {
    /// "copied_to_user {} copied_in {} memmoved {} allocations {} realloc_copied {}",
    /// appended by hand (a trace line per frame; see crate::text).
    pub fn text_into(&self, out: &mut String) {
        for (name, n) in [
            ("copied_to_user ", self.bytes_copied_to_user),
            (" copied_in ", self.bytes_copied_in),
            (" memmoved ", self.bytes_memmoved),
            (" allocations ", self.allocations),
            (" realloc_copied ", self.bytes_copied_realloc),
        ] {
            out.push_str(name);
            crate::text::dec(out, n);
        }
    }
}

impl fmt::Display for OpCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.text_into(&mut s);
        f.write_str(&s)
    }
}

/// An skb operation that the kernel would refuse (skb_under_panic / skb_over_panic, or a
/// pull past the linear data). The model reports it instead of panicking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkbError {
    /// skb_push with too little headroom.
    Under { need: usize, headroom: usize },
    /// skb_put with too little tailroom.
    Over { need: usize, tailroom: usize },
    /// skb_pull beyond the linear data.
    PullBeyondHead { need: usize, headlen: usize },
}

impl fmt::Display for SkbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkbError::Under { need, headroom } => {
                write!(
                    f,
                    "skb_push of {need} bytes with {headroom} bytes of headroom"
                )
            }
            SkbError::Over { need, tailroom } => {
                write!(
                    f,
                    "skb_put of {need} bytes with {tailroom} bytes of tailroom"
                )
            }
            SkbError::PullBeyondHead { need, headlen } => {
                write!(f, "skb_pull of {need} bytes with {headlen} linear bytes")
            }
        }
    }
}

impl std::error::Error for SkbError {}

/// The socket buffer.
///
/// `buf[..]` is head..end; `data` and `tail` index into it. Bytes past the linear part
/// (`data_len` in the kernel) live in the skb's own skb_shared_info: `frags` (page
/// pieces, see [`SkbFrag`]) and `frag_list` (chained skbs), so `skb_headlen` and `len`
/// differ exactly as they do in the kernel: tun reports skb_headlen as the vnet hdr_len
/// of a GSO packet, so the split is visible to userspace. GRO attaches a merged
/// segment's payload as a frag or chains its skb on frag_list (skb_gro_receive); readers
/// walk the pieces in order ([`SkBuff::for_each_piece`]), never a second copy.
///
/// GRO's control block lives beside the kernel fields as NAPI_GRO_CB lives in skb->cb
/// (`cb`), and what only the model tracks (input frame, timestamp, why the head did not
/// merge) in `model`.
#[derive(Debug, Clone, Default)]
pub struct SkBuff {
    buf: Vec<u8>,
    data: usize,
    tail: usize,
    /// skb->data_len: the bytes in `frags` and `frag_list`.
    data_len: usize,
    /// skb_shinfo(skb)->frags[0..nr_frags].
    frags: Vec<SkbFrag>,
    /// skb_shinfo(skb)->frag_list, in order.
    frag_list: Vec<SkBuff>,
    /// skb->protocol in host order (the kernel stores it big-endian).
    pub protocol: u16,
    pub mac_header: Option<usize>,
    pub network_header: Option<usize>,
    pub transport_header: Option<usize>,
    pub vlan: Option<VlanTag>,
    pub ip_summed: IpSummed,
    /// skb->csum_level: CHECKSUM_UNNECESSARY levels beyond the first.
    pub csum_level: u8,
    /// Offset of the checksum start from head (skb->csum_start).
    pub csum_start: usize,
    pub csum_offset: u16,
    pub gso_size: u16,
    pub gso_segs: u16,
    pub gso_type: u32,
    pub encapsulation: bool,
    pub inner_mac_header: Option<usize>,
    pub inner_network_header: Option<usize>,
    pub inner_transport_header: Option<usize>,
    /// skb->head_frag: the head was built by build_skb over a page frag, so GRO can
    /// attach it to another skb as a frag.
    pub head_frag: bool,
    /// skb->queue_mapping: on receive, the rx queue plus one (skb_record_rx_queue), 0 when
    /// none was recorded; netif_get_rxqueue reads it for generic XDP's rxq.
    pub queue_mapping: u16,
    /// NAPI_GRO_CB(skb), valid while the skb is in GRO.
    pub cb: GroCb,
    /// Model-only bookkeeping (no kernel field).
    pub model: GroModel,
    pub ops: OpCounters,
}

impl SkBuff {
    /// alloc_skb(size) + skb_reserve(headroom): an empty skb whose data starts `headroom`
    /// bytes into a `headroom + size` byte buffer.
    pub fn alloc(headroom: usize, size: usize) -> SkBuff {
        let mut skb = SkBuff::default();
        skb.reset(headroom, size);
        skb
    }

    /// Reuse this skb's buffer as if freshly allocated (metadata cleared, op counters
    /// kept). Lets a replay loop run without a heap allocation per frame while the cost
    /// model still sees one alloc_skb per packet.
    pub fn reset(&mut self, headroom: usize, size: usize) {
        self.reset_keeping_page(headroom, size);
    }

    /// [`SkBuff::reset`], handing back the first frag's page (cleared) for the caller
    /// to refill.
    ///
    /// Field by field, in place: `*self = SkBuff { .., ..SkBuff::default() }` built a
    /// whole skb (GRO's cb and model included, 464 bytes) on the stack and copied it
    /// over, on every write (cachegrind: a tenth of tap-write's instructions were skb
    /// copies here and in the pool). The pattern names every field, so one added to
    /// SkBuff cannot be left out of the reset.
    fn reset_keeping_page(&mut self, headroom: usize, size: usize) -> Vec<u8> {
        let SkBuff {
            buf,
            data,
            tail,
            data_len,
            frags,
            frag_list,
            protocol,
            mac_header,
            network_header,
            transport_header,
            vlan,
            ip_summed,
            csum_level,
            csum_start,
            csum_offset,
            gso_size,
            gso_segs,
            gso_type,
            encapsulation,
            inner_mac_header,
            inner_network_header,
            inner_transport_header,
            head_frag,
            queue_mapping,
            cb,
            model,
            ops,
        } = self;
        let mut page = frags
            .drain(..)
            .next()
            .map(SkbFrag::into_page)
            .unwrap_or_default();
        page.clear();
        buf.clear();
        buf.resize(headroom + size, 0);
        (*data, *tail, *data_len) = (headroom, headroom, 0);
        frag_list.clear();
        *protocol = 0;
        (*mac_header, *network_header, *transport_header) = (None, None, None);
        *vlan = None;
        *ip_summed = IpSummed::default();
        (*csum_level, *csum_start, *csum_offset) = (0, 0, 0);
        (*gso_size, *gso_segs, *gso_type) = (0, 0, 0);
        *encapsulation = false;
        (
            *inner_mac_header,
            *inner_network_header,
            *inner_transport_header,
        ) = (None, None, None);
        *head_frag = false;
        *queue_mapping = 0;
        *cb = GroCb::default();
        *model = GroModel::default();
        // The op counters are kept (see reset).
        ops.allocations += 1;
        page
    }

    /// build_skb over `buf` (net/core/skbuff.c): an skb whose head is the buffer itself,
    /// data `headroom` bytes in and every byte after it linear. No copy: the caller
    /// filled the buffer (tun_get_user's copy from userspace). Counts the allocation.
    pub fn build(buf: Vec<u8>, headroom: usize) -> SkBuff {
        let headroom = headroom.min(buf.len());
        let tail = buf.len();
        let mut skb = SkBuff {
            buf,
            data: headroom,
            tail,
            ..SkBuff::default()
        };
        skb.ops.allocations += 1;
        skb
    }

    /// An skb holding `frame` with `headroom` bytes before it, the first `headlen` bytes
    /// linear and the rest paged. Counts the copy in.
    pub fn from_frame(frame: &[u8], headroom: usize, headlen: usize) -> SkBuff {
        let mut skb = SkBuff::default();
        skb.fill_from_frame(frame, headroom, headlen);
        skb
    }

    /// [`SkBuff::from_frame`] into this skb's existing buffer. The paged part is one
    /// frag (the model does not split it into pages; nothing reads nr_frags of it).
    pub fn fill_from_frame(&mut self, frame: &[u8], headroom: usize, headlen: usize) {
        let headlen = headlen.min(frame.len());
        let mut page = self.reset_keeping_page(headroom, 0);
        // reset() sized the buffer to the headroom; append rather than zero-fill and copy.
        self.buf.extend_from_slice(&frame[..headlen]);
        self.tail = headroom + headlen;
        let paged = &frame[headlen..];
        if !paged.is_empty() {
            page.extend_from_slice(paged);
            self.data_len = paged.len();
            self.frags.push(SkbFrag::new(page, 0, paged.len()));
        }
        self.ops.bytes_copied_in += frame.len() as u64;
    }

    /// [`SkBuff::from_frame`] reusing this skb's buffers: the result is the same skb,
    /// operation counters from zero included.
    pub fn reuse_from_frame(&mut self, frame: &[u8], headroom: usize, headlen: usize) {
        self.ops = OpCounters::default();
        self.fill_from_frame(frame, headroom, headlen);
    }

    /// skb->len: linear plus paged bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.tail - self.data + self.data_len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// skb_headlen: the linear bytes.
    #[inline]
    pub fn headlen(&self) -> usize {
        self.tail - self.data
    }

    /// skb->data_len: the paged bytes (frags and frag_list).
    pub fn data_len(&self) -> usize {
        self.data_len
    }

    /// skb_headroom.
    pub fn headroom(&self) -> usize {
        self.data
    }

    /// skb_tailroom (0 for a nonlinear skb, as in the kernel).
    pub fn tailroom(&self) -> usize {
        if self.data_len == 0 {
            self.buf.len() - self.tail
        } else {
            0
        }
    }

    /// skb->data offset from head.
    pub fn data_offset(&self) -> usize {
        self.data
    }

    /// The linear bytes, data..tail.
    #[inline]
    pub fn linear(&self) -> &[u8] {
        &self.buf[self.data..self.tail]
    }

    /// The linear bytes, writable (header rewrites such as the GRO completions).
    #[inline]
    pub fn linear_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.data..self.tail]
    }

    /// skb_reserve: only valid on an empty skb, as in the kernel.
    pub fn reserve(&mut self, n: usize) -> Result<(), SkbError> {
        if self.tail + n > self.buf.len() {
            return Err(SkbError::Over {
                need: n,
                tailroom: self.buf.len() - self.tail,
            });
        }
        self.data += n;
        self.tail += n;
        Ok(())
    }

    /// skb_push: extend the data area at the front.
    pub fn push(&mut self, n: usize) -> Result<&mut [u8], SkbError> {
        if n > self.data {
            return Err(SkbError::Under {
                need: n,
                headroom: self.data,
            });
        }
        self.data -= n;
        Ok(&mut self.buf[self.data..self.data + n])
    }

    /// skb_pull: remove bytes from the front of the linear data.
    pub fn pull(&mut self, n: usize) -> Result<(), SkbError> {
        if n > self.headlen() {
            return Err(SkbError::PullBeyondHead {
                need: n,
                headlen: self.headlen(),
            });
        }
        self.data += n;
        Ok(())
    }

    /// skb_put: extend the linear data at the end (linear skbs only).
    pub fn put(&mut self, n: usize) -> Result<&mut [u8], SkbError> {
        if n > self.tailroom() {
            return Err(SkbError::Over {
                need: n,
                tailroom: self.tailroom(),
            });
        }
        let start = self.tail;
        self.tail += n;
        Ok(&mut self.buf[start..start + n])
    }

    /// Put `bytes` into the linear part at `at` (from data), the bytes from `at` on and
    /// every header offset at or past it moving with them. The model's form of an
    /// skb_push plus a memmove of the headers in front of `at` (ipv6_gro_complete's
    /// jumbo header): the same bytes and offsets from data, without needing headroom.
    pub fn insert_linear(&mut self, at: usize, bytes: &[u8]) {
        let pos = (self.data + at).min(self.tail);
        let n = bytes.len();
        self.buf.splice(pos..pos, bytes.iter().copied());
        self.tail += n;
        let shift = |h: &mut Option<usize>| {
            if let Some(v) = h.as_mut().filter(|v| **v >= pos) {
                *v += n;
            }
        };
        shift(&mut self.mac_header);
        shift(&mut self.network_header);
        shift(&mut self.transport_header);
        shift(&mut self.inner_mac_header);
        shift(&mut self.inner_network_header);
        shift(&mut self.inner_transport_header);
        if self.csum_start >= pos && self.ip_summed == IpSummed::Partial {
            self.csum_start += n;
        }
    }

    /// skb_put_data: skb_put plus the copy in.
    pub fn put_data(&mut self, bytes: &[u8]) -> Result<(), SkbError> {
        self.put(bytes.len())?.copy_from_slice(bytes);
        self.ops.bytes_copied_in += bytes.len() as u64;
        Ok(())
    }

    /// skb_reset_mac_header and friends: record header offsets from head.
    pub fn reset_mac_header(&mut self) {
        self.mac_header = Some(self.data);
    }

    pub fn set_network_header(&mut self, offset_from_data: usize) {
        self.network_header = Some(self.data + offset_from_data);
    }

    pub fn set_transport_header(&mut self, offset_from_data: usize) {
        self.transport_header = Some(self.data + offset_from_data);
    }

    /// skb_set_inner_mac_header and friends: offsets from data, stored from head.
    pub fn set_inner_mac_header(&mut self, offset_from_data: usize) {
        self.inner_mac_header = Some(self.data + offset_from_data);
    }

    pub fn set_inner_network_header(&mut self, offset_from_data: usize) {
        self.inner_network_header = Some(self.data + offset_from_data);
    }

    pub fn set_inner_transport_header(&mut self, offset_from_data: usize) {
        self.inner_transport_header = Some(self.data + offset_from_data);
    }

    /// A header field as an offset from data (skb_network_offset and friends); None if
    /// unset or before data.
    pub fn offset_from_data(&self, header: Option<usize>) -> Option<usize> {
        header.and_then(|h| h.checked_sub(self.data))
    }

    /// skb_checksum_start_offset: csum_start relative to data (may be negative in the
    /// kernel only for broken skbs; saturates here).
    pub fn checksum_start_offset(&self) -> usize {
        self.csum_start.saturating_sub(self.data)
    }

    /// Mark CHECKSUM_PARTIAL with the checksum starting `start_from_data` bytes into
    /// the packet (skb_partial_csum_set, net/core/skbuff.c).
    pub fn partial_csum_set(&mut self, start_from_data: usize, csum_offset: u16) {
        self.ip_summed = IpSummed::Partial;
        self.csum_start = self.data + start_from_data;
        self.csum_offset = csum_offset;
        self.transport_header = Some(self.csum_start);
    }

    /// skb_is_gso.
    pub fn is_gso(&self) -> bool {
        self.gso_size != 0
    }
}

#[cfg(test)]
#[path = "skb_tests.rs"]
mod tests;
