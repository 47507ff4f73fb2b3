//! `struct xdp_buff` (include/net/xdp.h), the XDP verdicts and the `struct xdp_md`
//! context the program reads.
//!
//! Positions in [`XdpBuff`] are byte offsets into [`XdpBuff::buf`], whose byte 0 is
//! `data_hard_start`; the program sees them at [`PACKET_ADDR`](super::PACKET_ADDR) + offset.

use super::BpfError;
use crate::consts::XDP_PACKET_HEADROOM;
use crate::consts::{skb_data_align, PAGE_SIZE, SKB_SHARED_INFO_ALIGNED};

pub const XDP_ABORTED: u32 = 0;
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;
pub const XDP_TX: u32 = 3;
pub const XDP_REDIRECT: u32 = 4;

/// sizeof(struct xdp_frame) on x86_64: bpf_xdp_adjust_head/meta keep it free at the front.
pub const XDP_FRAME_SIZE: usize = 40;

/// `struct xdp_md` layout: six `__u32` fields.
pub const XDP_MD_SIZE: usize = 24;
pub const XDP_MD_DATA: usize = 0;
pub const XDP_MD_DATA_END: usize = 4;
pub const XDP_MD_DATA_META: usize = 8;
pub const XDP_MD_INGRESS_IFINDEX: usize = 12;
pub const XDP_MD_RX_QUEUE_INDEX: usize = 16;
pub const XDP_MD_EGRESS_IFINDEX: usize = 20;

/// The five verdicts (enum xdp_action).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum XdpAction {
    Aborted,
    Drop,
    Pass,
    Tx,
    Redirect,
}

impl XdpAction {
    /// The verdict for a program's return value; `None` for an unknown value (which
    /// drivers treat as an invalid action: bpf_warn_invalid_xdp_action, then drop).
    pub fn from_u32(v: u32) -> Option<XdpAction> {
        Some(match v {
            XDP_ABORTED => XdpAction::Aborted,
            XDP_DROP => XdpAction::Drop,
            XDP_PASS => XdpAction::Pass,
            XDP_TX => XdpAction::Tx,
            XDP_REDIRECT => XdpAction::Redirect,
            _ => return None,
        })
    }

    pub fn as_u32(self) -> u32 {
        self as u32
    }

    pub fn name(self) -> &'static str {
        match self {
            XdpAction::Aborted => "XDP_ABORTED",
            XdpAction::Drop => "XDP_DROP",
            XdpAction::Pass => "XDP_PASS",
            XdpAction::Tx => "XDP_TX",
            XdpAction::Redirect => "XDP_REDIRECT",
        }
    }
}

/// Where an `XDP_REDIRECT` goes: the per-CPU `bpf_redirect_info` after the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedirectTarget {
    /// bpf_redirect(ifindex, 0): map type UNSPEC with map_id INT_MAX. Also what a failed
    /// bpf_redirect_map leaves behind when an earlier call of the same run set tgt_index:
    /// the kernel then redirects to that stale index taken as an ifindex.
    Ifindex(u32),
    /// bpf_redirect_map hit in a DEVMAP/DEVMAP_HASH: `map` is the [`Maps`](super::Maps)
    /// index, `key` the looked-up key, `ifindex` the device stored there.
    Devmap { map: u32, key: u32, ifindex: u32 },
    /// bpf_redirect_map with BPF_F_BROADCAST: every device of the map.
    Broadcast { map: u32, exclude_ingress: bool },
}

/// What one run of an XDP program produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpRun {
    /// The return value as `bpf_prog_run_xdp` sees it (r0 truncated to u32).
    pub action: u32,
    /// Full r0 at exit.
    pub r0: u64,
    /// Redirect state, meaningful when `action` is XDP_REDIRECT. `None` then means the
    /// kernel's xdp_do_redirect fails (-EINVAL).
    pub redirect: Option<RedirectTarget>,
    /// Instructions executed (the cost model's unit).
    pub insns: u64,
    /// Helper calls made.
    pub helper_calls: u64,
}

impl XdpRun {
    pub fn verdict(&self) -> Option<XdpAction> {
        XdpAction::from_u32(self.action)
    }
}

/// A linear XDP buffer, mirroring `struct xdp_buff`: `data_hard_start` is offset 0 of
/// `buf`, `buf.len() == frame_sz`, and the last [`SKB_SHARED_INFO_ALIGNED`] bytes are the
/// reserved tailroom. `data_meta > data` means metadata is unsupported
/// (xdp_set_data_meta_invalid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpBuff {
    pub buf: Vec<u8>,
    pub data_hard_start: usize,
    pub data: usize,
    pub data_meta: usize,
    pub data_end: usize,
    pub frame_sz: usize,
    /// xdp->rxq->dev->ifindex
    pub ingress_ifindex: u32,
    /// xdp->rxq->queue_index
    pub rx_queue_index: u32,
    /// xdp->txq->dev->ifindex (devmap programs)
    pub egress_ifindex: u32,
}

impl XdpBuff {
    /// `frame` behind the usual 256 bytes of headroom, in a page-sized buffer (or a larger
    /// one, rounded to 64 bytes, when the frame does not fit a page), metadata supported.
    pub fn new(frame: &[u8]) -> XdpBuff {
        let need = XDP_PACKET_HEADROOM + frame.len() + SKB_SHARED_INFO_ALIGNED;
        let frame_sz = PAGE_SIZE.max(skb_data_align(need));
        let mut b = XdpBuff::empty(vec![0; frame_sz], XDP_PACKET_HEADROOM);
        b.set_frame(frame);
        b
    }

    /// A buffer laid out as a driver does it: `headroom` bytes before data (tun's
    /// tun_build_skb uses 64 + 256) and `frame_sz` bytes in all (xdp_init_buff). Fails
    /// when the frame does not fit in front of the shared-info tailroom.
    pub fn with_layout(
        frame: &[u8],
        headroom: usize,
        frame_sz: usize,
    ) -> Result<XdpBuff, BpfError> {
        XdpBuff::with_layout_in(Vec::new(), frame, headroom, frame_sz)
    }

    /// [`XdpBuff::with_layout`] in a reused buffer: `buf` is cleared and zero-filled to
    /// `frame_sz` first, so the result is the same as a fresh one's.
    pub fn with_layout_in(
        mut buf: Vec<u8>,
        frame: &[u8],
        headroom: usize,
        frame_sz: usize,
    ) -> Result<XdpBuff, BpfError> {
        let fits = headroom
            .checked_add(frame.len())
            .and_then(|n| n.checked_add(SKB_SHARED_INFO_ALIGNED))
            .is_some_and(|n| n <= frame_sz);
        if !fits || frame_sz as u64 > super::PACKET_WINDOW {
            return Err(BpfError::invalid(
                0,
                format!(
                    "xdp_buff: headroom {headroom} + frame {} + tailroom {SKB_SHARED_INFO_ALIGNED} exceeds frame_sz {frame_sz}",
                    frame.len()
                ),
            ));
        }
        buf.clear();
        buf.resize(frame_sz, 0);
        let mut b = XdpBuff::empty(buf, headroom);
        b.set_frame(frame);
        Ok(b)
    }

    /// A zeroed `buf` as an empty XDP buffer with `headroom`.
    fn empty(buf: Vec<u8>, headroom: usize) -> XdpBuff {
        XdpBuff {
            frame_sz: buf.len(),
            buf,
            data_hard_start: 0,
            data: headroom,
            data_meta: headroom,
            data_end: headroom,
            ingress_ifindex: 0,
            rx_queue_index: 0,
            egress_ifindex: 0,
        }
    }

    fn set_frame(&mut self, frame: &[u8]) {
        let start = self.data;
        self.data_end = start + frame.len();
        if let Some(dst) = self.buf.get_mut(start..start + frame.len()) {
            dst.copy_from_slice(frame);
        }
    }

    /// The frame: `data .. data_end`.
    pub fn data(&self) -> &[u8] {
        self.buf.get(self.data..self.data_end).unwrap_or(&[])
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        self.buf
            .get_mut(self.data..self.data_end)
            .unwrap_or(&mut [])
    }

    /// Frame length (`data_end - data`).
    pub fn len(&self) -> usize {
        self.data_end.saturating_sub(self.data)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `data - data_hard_start`.
    pub fn headroom(&self) -> usize {
        self.data - self.data_hard_start
    }

    pub fn meta_supported(&self) -> bool {
        self.data_meta <= self.data
    }

    /// xdp_set_data_meta_invalid: drivers without metadata support.
    pub fn set_meta_unsupported(&mut self) {
        self.data_meta = self.data + 1;
    }

    /// xdp_get_metalen: 0 when unsupported.
    pub fn metalen(&self) -> usize {
        if self.meta_supported() {
            self.data - self.data_meta
        } else {
            0
        }
    }

    /// The metadata bytes in front of data.
    pub fn meta(&self) -> &[u8] {
        self.buf
            .get(self.data - self.metalen()..self.data)
            .unwrap_or(&[])
    }

    /// xdp_data_hard_end: `frame_sz` less the shared-info tailroom.
    pub fn hard_end(&self) -> usize {
        self.frame_sz.saturating_sub(SKB_SHARED_INFO_ALIGNED)
    }

    /// The lowest offset the program may read: data_meta when metadata is supported.
    pub(crate) fn access_start(&self) -> usize {
        self.data_meta.min(self.data)
    }

    /// The `struct xdp_md` field at `off` (a 4-byte aligned offset below 24), as the
    /// program reads it: packet positions are virtual addresses.
    pub fn md_field(&self, off: usize) -> Option<u32> {
        let pkt = |o: usize| (super::PACKET_ADDR + o as u64) as u32;
        Some(match off {
            XDP_MD_DATA => pkt(self.data),
            XDP_MD_DATA_END => pkt(self.data_end),
            XDP_MD_DATA_META => pkt(self.data_meta),
            XDP_MD_INGRESS_IFINDEX => self.ingress_ifindex,
            XDP_MD_RX_QUEUE_INDEX => self.rx_queue_index,
            XDP_MD_EGRESS_IFINDEX => self.egress_ifindex,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::PACKET_ADDR;

    #[test]
    fn layout_mirrors_xdp_buff() {
        let f: Vec<u8> = (0..64).collect();
        let b = XdpBuff::new(&f);
        assert_eq!(
            (b.data, b.data_end, b.frame_sz, b.buf.len()),
            (256, 320, 4096, 4096)
        );
        assert_eq!(b.data(), &f[..]);
        assert_eq!(
            (b.len(), b.headroom(), b.metalen(), b.hard_end()),
            (64, 256, 0, 3776)
        );
        assert_eq!(b.md_field(XDP_MD_DATA), Some(PACKET_ADDR as u32 + 256));
        assert_eq!(b.md_field(XDP_MD_DATA_END), Some(PACKET_ADDR as u32 + 320));
        assert_eq!(b.md_field(XDP_MD_DATA_META), Some(PACKET_ADDR as u32 + 256));
        assert_eq!(b.md_field(24), None);
        let big = XdpBuff::new(&vec![1; 4000]);
        assert_eq!(big.frame_sz, 4608);
        assert_eq!(big.len(), 4000);
    }

    #[test]
    fn tun_layout_and_meta_flag() {
        // tun_build_skb: pad 64 + 256, buflen = ALIGN(len + pad) + ALIGN(shinfo)
        let b = XdpBuff::with_layout(&[0xaa; 60], 320, 384 + 320).unwrap();
        assert_eq!((b.data, b.data_end, b.hard_end()), (320, 380, 384));
        assert!(XdpBuff::with_layout(&[0; 100], 320, 700).is_err());
        let mut m = b.clone();
        m.set_meta_unsupported();
        assert!(!m.meta_supported());
        assert_eq!((m.metalen(), m.access_start()), (0, 320));
        assert_eq!(XdpAction::from_u32(3), Some(XdpAction::Tx));
        assert_eq!(XdpAction::from_u32(5), None);
        assert_eq!(XdpAction::Redirect.as_u32(), XDP_REDIRECT);
        assert_eq!(XdpAction::Drop.name(), "XDP_DROP");
    }
}
