//! The range of every numeric scenario key, each from the kernel type or check it models.
//! Keys whose Rust type is the kernel's (u8, u16) are range-checked by serde and listed
//! here only as comments; the others are checked with [`in_range`].
//!
//! Checked by serde, the kernel's own widths:
//! - `skb.gso_size`, `[[skb.frame]] gso_size`: skb_shared_info.gso_size is `unsigned short`
//!   (include/linux/skbuff.h), 0..=65535.
//! - `writer.pi_proto`: struct tun_pi.proto is `__be16` (include/uapi/linux/if_tun.h).
//! - `*.vnet.flags`, `*.vnet.gso_type`: `__u8`; `*.vnet.hdr_len`, `gso_size`, `csum_start`,
//!   `csum_offset`: `__virtio16` (include/uapi/linux/virtio_net.h: struct virtio_net_hdr).
//! - `reader.fill`: one byte.
//! - `gro.vxlan_ports`: a UDP port, `__be16` (struct udphdr.dest).
//! - `[[skb.frame]] index`, `[[writer.write]] index`, `[[vhost.packet]] index`: an input
//!   record number, any u64.

use crate::tun::{DeviceKind, DEFAULT_VNET_HDR_SZ};

/// MAX_RW_COUNT (include/linux/fs.h: `INT_MAX & PAGE_MASK`, 4 KiB pages): rw_verify_area
/// shortens any larger read() or write() to this many bytes.
pub const MAX_RW_COUNT: u64 = (i32::MAX as u64) & !0xfff;

/// The largest read() buffer a scenario may use: 16 MiB. read() takes a size_t and the
/// kernel would accept up to [`MAX_RW_COUNT`], but tun_put_user writes one packet, the
/// sum of PI (4), vnet_hdr_sz, a spliced tag (4) and skb->len, and skb->len is at most
/// GSO_MAX_SIZE (`8 * GSO_MAX_SEGS`, 524280 bytes with BIG TCP; include/linux/netdevice.h).
/// A larger buffer cannot receive more of a packet, while the model allocates (and fills)
/// the whole buffer for every read, so the cap keeps memory bounded with room to spare.
pub const MAX_READ_BUFFER: u64 = 16 << 20;

/// TUNSETVNETHDRSZ (drivers/net/tun_vnet.h: tun_vnet_ioctl) takes an `int` and refuses
/// `vnet_hdr_sz < (int)sizeof(struct virtio_net_hdr)` (10) with EINVAL. The kernel's
/// upper bound is INT_MAX; the model caps it at [`MAX_READ_BUFFER`]: a header larger
/// than any read buffer makes every read fail EINVAL alike (tun_put_user), and the model
/// allocates the header area for every write.
pub const VNET_HDR_SZ: (u64, u64) = (DEFAULT_VNET_HDR_SZ as u64, MAX_READ_BUFFER);

/// tun's MTU limits (drivers/net/tun.c: tun_net_initialize): `min_mtu = MIN_MTU` (68),
/// `max_mtu = MAX_MTU - hard_header_len` with MAX_MTU 65535; dev_validate_mtu
/// (net/core/dev.c) refuses values outside with EINVAL. A tap has hard_header_len ETH_HLEN
/// (14, ether_setup), a tun 0.
pub fn mtu_range(kind: DeviceKind) -> (u64, u64) {
    const MIN_MTU: u64 = 68;
    const MAX_MTU: u64 = 65535;
    match kind {
        DeviceKind::Tap => (MIN_MTU, MAX_MTU - 14),
        DeviceKind::Tun => (MIN_MTU, MAX_MTU),
    }
}

/// dev->tx_queue_len is `unsigned int` and sizes tfile->tx_ring (drivers/net/tun.c:
/// tun_attach, tun_queue_resize); ptr_ring refuses rings above
/// `KMALLOC_MAX_SIZE / sizeof(void *)` (include/linux/ptr_ring.h:
/// __ptr_ring_init_queue_alloc; KMALLOC_MAX_SIZE is 4 MiB on x86-64, so 524288 entries),
/// and the attach fails with ENOMEM. The model needs at least one slot (a zero-length
/// ring drops every packet; no scenario wants that).
pub const TX_QUEUE_LEN: (u64, u64) = (1, (4 << 20) / 8);

/// `[[writer.write]] truncate`: a write() of at most MAX_RW_COUNT bytes (rw_verify_area
/// shortens longer ones); truncating beyond the composed length leaves it whole.
pub const TRUNCATE: (u64, u64) = (0, MAX_RW_COUNT);

/// `skb.headlen` as a byte count: skb_headlen is `unsigned int` (skb->len - skb->data_len,
/// include/linux/skbuff.h); the model clamps it to the frame's length.
pub const HEADLEN: (u64, u64) = (0, u32::MAX as u64);

/// `reader.read_every`: read after every N transmitted frames; a count of frames, at
/// least one (a zero would never read). Nothing is allocated per unit.
pub const READ_EVERY: (u64, u64) = (1, u64::MAX);

/// `vhost.burst`: packets the guest makes available before a kick. They must fit in the
/// TX vring at once: vhost_vring_set_num (drivers/vhost/vhost.c) refuses `num > 0xffff`
/// and non-powers of two, so a ring has at most 32768 descriptors.
pub const VHOST_BURST: (u64, u64) = (1, 32768);

/// `gro.burst`: writes per NAPI poll. tun_get_user (drivers/net/tun.c, IFF_NAPI) calls
/// napi_schedule once `queue_len > NAPI_POLL_WEIGHT`, so a MSG_MORE burst longer than
/// NAPI_POLL_WEIGHT + 1 (65) frames is not one poll.
pub const GRO_BURST: (u64, u64) = (1, crate::gro::NAPI_POLL_WEIGHT as u64 + 1);

/// `gro.flush_timeout_ns`: dev->gro_flush_timeout is `unsigned long` (sysfs
/// gro_flush_timeout), but napi_complete_done arms the hrtimer with
/// `ns_to_ktime(timeout)`, a signed ktime_t: values above KTIME_MAX (include/linux/ktime.h,
/// S64_MAX) turn negative and fire at once, which the model does not reproduce.
pub const GRO_FLUSH_TIMEOUT_NS: (u64, u64) = (0, i64::MAX as u64);

/// `key: V is outside MIN..=MAX (why)` unless `min <= v <= max`.
pub fn in_range(key: &str, v: u64, (min, max): (u64, u64), why: &str) -> Result<u64, String> {
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{key}: {v} is outside {min}..={max} ({why})"))
    }
}
