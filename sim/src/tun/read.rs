//! What read() on a tun/tap fd returns: tun_chr_read_iter -> tun_do_read -> tun_put_user
//! (drivers/net/tun.c), for skbs. Rules: docs/tun-read.md, from docs/tun-read.md#layout
//! to docs/tun-read.md#history-later.

use crate::consts::{ETH_ALEN, VLAN_HLEN};
use crate::errno::Errno;
use crate::profile::{PutUserAccounting, StripRule, TunReadRules};
use crate::skb::{IpSummed, OpCounters, SkBuff, VlanTag};

use crate::wire::virtio_net_hdr::{
    VirtioNetHdrRepr, VnetHdrLayout, VIRTIO_NET_HDR_LEN, VIRTIO_NET_HDR_TUNNEL_LEN,
};

use super::vnet_tnl::{is_udp_tunnel, vnet_hdr_tnl_from_skb};
use super::{RingEntry, TunDevice, XdpFrame};
use crate::consts::{TUN_PI_LEN, TUN_PKT_STRIP};
use crate::wire::TunPi;

/// The skb as tun_put_user saw it: the metadata a trace reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkbInfo {
    pub len: usize,
    pub headlen: usize,
    pub protocol: u16,
    pub vlan: Option<VlanTag>,
    pub ip_summed: IpSummed,
    /// skb_checksum_start_offset (from data), meaningful for CHECKSUM_PARTIAL.
    pub csum_start: usize,
    pub csum_offset: u16,
    pub gso_type: u32,
    pub gso_size: u16,
    pub gso_segs: u16,
}

impl SkbInfo {
    fn of(skb: &SkBuff) -> SkbInfo {
        SkbInfo {
            len: skb.len(),
            headlen: skb.headlen(),
            protocol: skb.protocol,
            vlan: skb.vlan,
            ip_summed: skb.ip_summed,
            csum_start: skb.checksum_start_offset(),
            csum_offset: skb.csum_offset,
            gso_type: skb.gso_type,
            gso_size: skb.gso_size,
            gso_segs: skb.gso_segs,
        }
    }
}

/// Everything one read() did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutcome {
    /// What read() returned to userspace.
    pub result: Result<usize, Errno>,
    /// tun_put_user's own return value (the recvmsg/vhost view), when it succeeded.
    pub put_user_ret: Option<usize>,
    /// The skb that was dequeued, if any.
    pub skb: Option<SkbInfo>,
    /// tun_pi as written (flags, proto), if written (it is written before a vnet EINVAL).
    pub pi: Option<(u16, u16)>,
    /// The vnet header as written, and vnet_hdr_sz.
    pub vnet: Option<(VirtioNetHdrRepr, usize)>,
    /// Where the frame starts in the buffer.
    pub frame_offset: usize,
    /// The frame's logical length: skb->len plus the spliced tag.
    pub frame_len: usize,
    /// Frame bytes actually copied into the buffer.
    pub frame_copied: usize,
    /// The skb's operation counts, from allocation to this read.
    pub ops: OpCounters,
    /// The entry was an xdp_frame (XDP_TX or a redirect), read by tun_put_user_xdp.
    pub xdp_frame: bool,
}

impl ReadOutcome {
    pub(crate) fn nothing(result: Result<usize, Errno>) -> ReadOutcome {
        ReadOutcome {
            result,
            put_user_ret: None,
            skb: None,
            pi: None,
            vnet: None,
            frame_offset: 0,
            frame_len: 0,
            frame_copied: 0,
            ops: OpCounters::default(),
            xdp_frame: false,
        }
    }
}

impl TunDevice {
    /// read(fd, buf, buf.len()) on a non-blocking fd. `buf` keeps whatever bytes it held
    /// where the kernel writes nothing (the pre-6.15 vnet padding shows this).
    pub fn read(&mut self, buf: &mut [u8], rules: &TunReadRules) -> ReadOutcome {
        // tun_do_read: an empty iov returns 0 before touching the ring.
        if buf.is_empty() {
            return ReadOutcome::nothing(Ok(0));
        }
        let entry = self.pop();
        self.read_entry(entry, buf, rules)
    }

    /// tun_do_read on the entry the caller consumed from a queue's tx_ring (None: the
    /// ring was empty, -EAGAIN). A multiqueue device keeps one ring per queue
    /// (`crate::tun::device`); [`TunDevice::read`] is this on the device's own ring.
    pub fn read_entry(
        &mut self,
        entry: Option<RingEntry>,
        buf: &mut [u8],
        rules: &TunReadRules,
    ) -> ReadOutcome {
        match entry {
            None => ReadOutcome::nothing(Err(Errno::EAGAIN)),
            Some(RingEntry::Skb(mut skb)) => {
                let mut out = self.put_user(&mut skb, buf, rules);
                // tun_chr_read_iter: ret = min_t(ssize_t, ret, len).
                // A failed put_user left its errno in `result`.
                out.result = match out.put_user_ret {
                    Some(r) => Ok(r.min(buf.len())),
                    None => out.result,
                };
                out.ops = skb.ops;
                self.free(skb);
                out
            }
            Some(RingEntry::Xdp(frame)) => self.put_user_xdp(&frame, buf, rules),
        }
    }

    /// tun_put_user_xdp (docs/tun-read.md#xdp-frames): no tun_pi even without IFF_NO_PI; an
    /// all-zero vnet area (-EINVAL if it does not fit); the frame truncated to the buffer;
    /// the return value and tx_bytes are the bytes copied plus vnet_hdr_sz, not the frame's
    /// length.
    fn put_user_xdp(
        &mut self,
        frame: &XdpFrame,
        buf: &mut [u8],
        rules: &TunReadRules,
    ) -> ReadOutcome {
        let mut out = ReadOutcome::nothing(Err(Errno::EINVAL));
        out.xdp_frame = true;
        let vnet_hdr_sz = if self.config.vnet_hdr {
            self.config.vnet_hdr_sz
        } else {
            0
        };
        if vnet_hdr_sz > 0 {
            if buf.len() < vnet_hdr_sz {
                return out;
            }
            let end = if rules.vnet_pad_zero {
                vnet_hdr_sz
            } else {
                VIRTIO_NET_HDR_LEN
            };
            buf[..end].fill(0);
            out.ops.bytes_copied_to_user += VIRTIO_NET_HDR_LEN as u64;
            out.vnet = Some((VirtioNetHdrRepr::default(), vnet_hdr_sz));
        }
        let n = frame.data.len().min(buf.len() - vnet_hdr_sz);
        buf[vnet_hdr_sz..vnet_hdr_sz + n].copy_from_slice(&frame.data[..n]);
        out.ops.bytes_copied_to_user += n as u64;
        let ret = n + vnet_hdr_sz;
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += ret as u64;
        out.frame_offset = vnet_hdr_sz;
        out.frame_len = frame.data.len();
        out.frame_copied = n;
        out.put_user_ret = Some(ret);
        out.result = Ok(ret);
        out
    }

    /// tun_put_user. `put_user_ret` is None on -EINVAL (the skb is freed and no counter
    /// moves, not even tx_dropped: docs/tun-read.md#errors).
    fn put_user(&mut self, skb: &mut SkBuff, buf: &mut [u8], rules: &TunReadRules) -> ReadOutcome {
        let mut out = ReadOutcome::nothing(Err(Errno::EINVAL));
        out.skb = Some(SkbInfo::of(skb));
        let vlan_hlen = if skb.vlan.is_some() { VLAN_HLEN } else { 0 };
        let vnet_hdr_sz = if self.config.vnet_hdr {
            self.config.vnet_hdr_sz
        } else {
            0
        };
        let mut pos = 0;
        if !self.config.no_pi {
            let Some(n) = Self::put_pi(skb, buf, rules, vnet_hdr_sz + vlan_hlen, &mut out) else {
                return out;
            };
            pos = n;
        }
        if vnet_hdr_sz > 0 {
            if !self.put_vnet(
                skb,
                &mut buf[pos..],
                rules,
                vnet_hdr_sz,
                vlan_hlen,
                &mut out,
            ) {
                return out;
            }
            pos += vnet_hdr_sz;
        }

        out.frame_offset = pos;
        out.frame_len = skb.len() + vlan_hlen;
        let room = buf.len() - pos;
        let copied = match (rules.accounting, skb.vlan) {
            (PutUserAccounting::FullLength, tag) => self.copy_frame(skb, tag, &mut buf[pos..]),
            (PutUserAccounting::BytesWritten312, tag) => {
                let room = room.min(skb.len() + vlan_hlen);
                self.copy_frame(skb, tag, &mut buf[pos..pos + room])
            }
        };
        out.frame_copied = copied;

        self.stats.tx_packets += 1;
        match rules.accounting {
            PutUserAccounting::FullLength => {
                // docs/tun-read.md#counters: the full length, truncated or not, without PI or
                // vnet bytes.
                self.stats.tx_bytes += (skb.len() + vlan_hlen) as u64;
                out.put_user_ret = Some(pos + skb.len() + vlan_hlen);
            }
            PutUserAccounting::BytesWritten312 => {
                // docs/tun-read.md#history-3.12: tx_bytes += the final `len`: for a tagged
                // skb the MACs and the tag were subtracted from it on the way, and a buffer
                // that ends inside them leaves it at 0.
                let counted = match skb.vlan {
                    Some(_) => copied.saturating_sub(2 * ETH_ALEN + VLAN_HLEN),
                    None => copied,
                };
                self.stats.tx_bytes += counted as u64;
                out.put_user_ret = Some(pos + copied);
            }
        }
        out
    }

    /// docs/tun-read.md#pi: the PI. Written before the vnet checks, so it stays in the
    /// buffer even when the vnet area then fails with -EINVAL. `extra` is the vnet area
    /// and the tag the STRIP rule counts. None: -EINVAL (the buffer cannot hold the PI).
    fn put_pi(
        skb: &mut SkBuff,
        buf: &mut [u8],
        rules: &TunReadRules,
        extra: usize,
        out: &mut ReadOutcome,
    ) -> Option<usize> {
        if buf.len() < TUN_PI_LEN {
            return None;
        }
        let strip = match rules.strip {
            StripRule::BufferShorterThanTotal => buf.len() < TUN_PI_LEN + extra + skb.len(),
            StripRule::BufferMinusPiShorterThanSkbLen => buf.len() - TUN_PI_LEN < skb.len(),
        };
        let flags = if strip { TUN_PKT_STRIP } else { 0 };
        // flags is a host-order __u16 (x86: little-endian); proto is __be16.
        let mut pi = TunPi::new_unchecked(&mut buf[..TUN_PI_LEN]);
        pi.set_flags(flags);
        pi.set_proto(skb.protocol);
        skb.ops.bytes_copied_to_user += TUN_PI_LEN as u64;
        out.pi = Some((flags, skb.protocol));
        Some(TUN_PI_LEN)
    }

    /// docs/tun-read.md#vnet-fields, docs/tun-read.md#vnet-tunnel,
    /// docs/tun-read.md#vnet-area: the vnet area at the start of `buf`. False: the read
    /// ends with `out` as it stands (-EINVAL, or -EFAULT set here).
    fn put_vnet(
        &self,
        skb: &mut SkBuff,
        buf: &mut [u8],
        rules: &TunReadRules,
        vnet_hdr_sz: usize,
        vlan_hlen: usize,
        out: &mut ReadOutcome,
    ) -> bool {
        if buf.len() < vnet_hdr_sz {
            return false;
        }
        // docs/tun-read.md#vnet-tunnel: with NETIF_F_GSO_UDP_TUNNEL the device
        // writes the 24-byte header (tun_vnet_parse_size), tunnel skb or not.
        let tnl = self.config.offloads.udp_tunnel_gso;
        let Ok(hdr) = vnet_hdr_tnl_from_skb(skb, vlan_hlen, rules, tnl) else {
            return false;
        };
        let endian = if !rules.vnet_endian_selectable || is_udp_tunnel(skb) {
            // virtio_net_hdr_tnl_from_skb derives a tunnel skb's header with
            // little_endian = true.
            super::VnetEndian::Little
        } else {
            self.config.vnet_endian
        };
        let layout = if tnl {
            VnetHdrLayout::HashTunnel
        } else {
            VnetHdrLayout::Basic
        };
        let parsed = layout.header_len();
        // The padding rule is the profile's, so only the real bytes are emitted here.
        let n = parsed.min(buf.len());
        let mut real = [0u8; VIRTIO_NET_HDR_TUNNEL_LEN];
        if hdr.emit_padded(&mut real, parsed, layout, endian).is_err() {
            return false;
        }
        buf[..n].copy_from_slice(&real[..n]);
        skb.ops.bytes_copied_to_user += n as u64;
        if vnet_hdr_sz < parsed {
            // __tun_vnet_hdr_put: iov_iter_zero(sz - parsed_size) wraps to a huge
            // count, zeroes the rest of the buffer and falls short: -EFAULT.
            buf[n..].fill(0);
            out.result = Err(Errno::EFAULT);
            return false;
        }
        if rules.vnet_pad_zero {
            // iov_iter_zero since 4adf74971018 (v6.15); before, iov_iter_advance.
            buf[parsed..vnet_hdr_sz].fill(0);
        }
        out.vnet = Some((hdr, vnet_hdr_sz));
        true
    }

    /// The frame copy of tun_put_user: untagged, the whole skb; tagged, the two MACs,
    /// then the 4-byte tag built from skb->vlan_proto and the TCI (big-endian), then the
    /// rest. Each step stops when the buffer is full, so the tag can be cut short.
    fn copy_frame(&mut self, skb: &mut SkBuff, tag: Option<VlanTag>, dst: &mut [u8]) -> usize {
        let Some(tag) = tag else {
            return skb.copy_bits_to_user(0, dst);
        };
        let vlan_offset = 2 * ETH_ALEN;
        let macs = dst.len().min(vlan_offset);
        let mut n = skb.copy_bits_to_user(0, &mut dst[..macs]);
        if n < vlan_offset || n == dst.len() {
            return n;
        }
        let mut veth = [0u8; VLAN_HLEN];
        veth[..2].copy_from_slice(&tag.proto.to_be_bytes());
        veth[2..].copy_from_slice(&tag.tci.to_be_bytes());
        let t = (dst.len() - n).min(VLAN_HLEN);
        dst[n..n + t].copy_from_slice(&veth[..t]);
        skb.ops.bytes_copied_to_user += t as u64;
        n += t;
        if n == dst.len() {
            return n;
        }
        n += skb.copy_bits_to_user(vlan_offset, &mut dst[n..]);
        n
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
