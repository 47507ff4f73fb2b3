//! vhost_net_build_xdp (drivers/vhost/net.c, docs/vhost-tx.md#build-xdp): copy one descriptor
//! chain into a page-frag buffer laid out as an xdp_buff, the vnet header at data_hard_start.

use crate::bpf::XdpBuff;
use crate::consts::VHOST_NET_RX_PAD;
use crate::consts::{skb_data_align, PAGE_SIZE, SKB_SHARED_INFO_ALIGNED, XDP_PACKET_HEADROOM};
use crate::errno::Errno;
use crate::tun::sendmsg::BatchBuff;
use crate::wire::virtio_net_hdr::{Endian, VirtioNetHdr, VirtioNetHdrRepr, VnetHdrLayout};

/// Build the XDP buffer for `chain` (sock_hlen header bytes, then the frame). Returns
/// the buffer and its page-frag size, -EFAULT for a chain shorter than the header (tested
/// first, as since the function's start in 0a0be13b8fe2, v4.20), -ENOSPC when it does not
/// fit a page (the packet then goes alone through sendmsg) or -EINVAL for a bad header.
/// `spare` is a buffer to build in (any contents: it is zeroed), or `Vec::new()`.
pub fn vhost_net_build_xdp(
    chain: &[u8],
    sock_hlen: usize,
    sock_xdp: bool,
    spare: Vec<u8>,
) -> Result<(BatchBuff, usize), Errno> {
    let len = chain.len();
    // SOCK_XDP: the tap has an XDP program, so leave XDP_PACKET_HEADROOM for it.
    let headroom = if sock_xdp { XDP_PACKET_HEADROOM } else { 0 };
    if len < sock_hlen {
        return Err(Errno::EFAULT);
    }
    let pad = skb_data_align(VHOST_NET_RX_PAD + headroom + sock_hlen);
    if skb_data_align(len + pad) + SKB_SHARED_INFO_ALIGNED > PAGE_SIZE {
        return Err(Errno::ENOSPC);
    }
    let buflen = skb_data_align(len + pad) + SKB_SHARED_INFO_ALIGNED;
    let mut gso = VirtioNetHdrRepr::default();
    if sock_hlen > 0 {
        let view =
            VirtioNetHdr::new_checked(&chain[..sock_hlen], VnetHdrLayout::Basic, Endian::Little)
                .map_err(|_| Errno::EINVAL)?;
        gso = VirtioNetHdrRepr::parse(&view).map_err(|_| Errno::EINVAL)?;
        // Only a hdr_len raised for NEEDS_CSUM is checked against the chain here; a large
        // hdr_len without NEEDS_CSUM is left to tun (vhost_net_build_xdp).
        let before = gso.hdr_len;
        crate::tun::write::raise_hdr_len_for_csum(&mut gso);
        if gso.hdr_len != before && usize::from(gso.hdr_len) > len {
            return Err(Errno::EINVAL);
        }
    }
    let frame = &chain[sock_hlen..];
    let xdp = XdpBuff::with_layout_in(spare, frame, pad, buflen).map_err(|_| Errno::ENOSPC)?;
    Ok((BatchBuff { xdp, gso }, buflen))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(frame_len: usize) -> Vec<u8> {
        let mut c = vec![0u8; 12];
        c.extend(std::iter::repeat_n(0xab, frame_len));
        c
    }

    #[test]
    fn enospc_thresholds_match_the_spec_with_sock_hlen_12() {
        // docs/vhost-tx.md#build-xdp: len (including the 12-byte header) > 3648 without
        // XDP, > 3392 with.
        assert!(vhost_net_build_xdp(&chain(3648 - 12), 12, false, Vec::new()).is_ok());
        assert_eq!(
            vhost_net_build_xdp(&chain(3649 - 12), 12, false, Vec::new()).unwrap_err(),
            Errno::ENOSPC
        );
        assert!(vhost_net_build_xdp(&chain(3392 - 12), 12, true, Vec::new()).is_ok());
        assert_eq!(
            vhost_net_build_xdp(&chain(3393 - 12), 12, true, Vec::new()).unwrap_err(),
            Errno::ENOSPC
        );
    }

    #[test]
    fn a_chain_shorter_than_the_header_is_efault_before_any_size_test() {
        // drivers/vhost/net.c: vhost_net_build_xdp tests len < sock_hlen first, -EFAULT.
        assert_eq!(
            vhost_net_build_xdp(&[0u8; 11], 12, false, Vec::new()).unwrap_err(),
            Errno::EFAULT
        );
        assert_eq!(
            vhost_net_build_xdp(&[], 12, true, Vec::new()).unwrap_err(),
            Errno::EFAULT
        );
        // Exactly the header: an empty frame, built (tun_xdp_one refuses it later).
        assert!(vhost_net_build_xdp(&[0u8; 12], 12, false, Vec::new()).is_ok());
    }

    #[test]
    fn buffer_layout_puts_the_frame_after_the_aligned_pad() {
        let (b, buflen) = vhost_net_build_xdp(&chain(60), 12, true, Vec::new()).unwrap();
        // pad = ALIGN(64 + 256 + 12) = 384; buflen = ALIGN(72 + 384) + 320 = 512 + 320.
        assert_eq!(b.xdp.headroom(), 384);
        assert_eq!(b.xdp.len(), 60);
        assert_eq!(buflen, 832);
    }

    #[test]
    fn hdr_len_raised_for_csum_beyond_the_chain_is_einval_but_a_plain_large_one_is_not() {
        // NEEDS_CSUM with csum_start 200, csum_offset 6: hdr_len is raised to 208, more
        // than the 72-byte chain: -EINVAL (vhost_net_build_xdp).
        let mut c = chain(60);
        c[0] = 1;
        c[6] = 200;
        c[8] = 6;
        assert_eq!(
            vhost_net_build_xdp(&c, 12, false, Vec::new()).unwrap_err(),
            Errno::EINVAL
        );
        // hdr_len 200 without NEEDS_CSUM is not vhost's to check: the buffer is built.
        let mut c = chain(60);
        c[2] = 200;
        assert!(vhost_net_build_xdp(&c, 12, false, Vec::new()).is_ok());
    }
}
