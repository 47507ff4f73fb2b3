//! A "mock tap" (rust-vmm/vmm-reference#94): a VMM's virtio-net backend driven against the
//! simulated device in process, with no /dev/net/tun, no root and no namespace. The
//! sequence is what a VMM does at start-up and per packet: open, TUNSETIFF
//! IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, TUNSETVNETHDRSZ 12, TUNSETOFFLOAD, guest TX as a write
//! with a vnet header, guest RX as a read after the stack transmitted, poll readiness,
//! EAGAIN on an empty queue. Expected values are drivers/net/tun.c's and
//! include/linux/virtio_net.h's, as cited.

use sim::errno::Errno;
use sim::profile::LINUX_6_18;
use sim::skb::{IpSummed, SkBuff};
use sim::tun::device::{Readiness, TunHost, XmitFate};
use sim::tun::ioctl::cmd::{TUNSETIFF, TUNSETOFFLOAD, TUNSETVNETHDRSZ};
use sim::tun::ioctl::iff_flags::{IFF_NO_PI, IFF_TAP, IFF_VNET_HDR};
use sim::tun::ioctl::tun_f::{CSUM, TSO4, TSO6};
use sim::tun::ioctl::{Caller, IoctlAnswer, IoctlArg};

/// An Ethernet + IPv4 + UDP frame from the guest (10.0.0.2:5000) to the host
/// (10.0.0.1:7), with `payload`.
fn guest_udp(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56, 0x08, 0x00,
    ];
    let ip_len = (20 + 8 + payload.len()) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1]);
    f.extend_from_slice(&5000u16.to_be_bytes());
    f.extend_from_slice(&7u16.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// The 12-byte virtio_net_hdr_v1 a VMM puts before a frame: NEEDS_CSUM with the UDP
/// checksum at csum_start 34 (Ethernet 14 + IPv4 20), csum_offset 6.
fn vnet_needs_csum() -> [u8; 12] {
    [1, 0, 0, 0, 0, 0, 34, 0, 6, 0, 0, 0]
}

#[test]
fn a_vmm_drives_the_simulated_tap_in_process() {
    // An unprivileged caller could not create the device (tun_set_iff: EPERM without
    // CAP_NET_ADMIN); a VMM's tap is created for it, so the mock runs as root.
    let mut tap = TunHost::new(&LINUX_6_18, Caller::root());
    let fd = tap.open(true);

    // TUNSETIFF with a %d pattern: the lowest free number (__dev_alloc_name).
    let mut name = [0u8; 16];
    name[..7].copy_from_slice(b"vmtap%d");
    let flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
    let answer = tap.ioctl(fd, TUNSETIFF, &IoctlArg::Ifreq { name, flags });
    assert_eq!(
        answer,
        Ok(IoctlAnswer::Ifreq {
            name: b"vmtap0".to_vec(),
            flags
        })
    );
    // virtio 1.0's header; set_offload accepts CSUM|TSO4|TSO6 and refuses an unknown bit.
    assert_eq!(
        tap.ioctl(fd, TUNSETVNETHDRSZ, &IoctlArg::Int(12)),
        Ok(IoctlAnswer::Done)
    );
    let offloads = IoctlArg::Value(CSUM | TSO4 | TSO6);
    assert_eq!(
        tap.ioctl(fd, TUNSETOFFLOAD, &offloads),
        Ok(IoctlAnswer::Done)
    );
    assert_eq!(
        tap.ioctl(fd, TUNSETOFFLOAD, &IoctlArg::Value(0x200)),
        Err(Errno::EINVAL)
    );

    // Down: tun_sock_writeable needs IFF_UP, so no EPOLLOUT yet.
    assert_eq!(tap.poll(fd), Readiness::default());
    tap.set_link(b"vmtap0", Some(true), None).unwrap();
    assert_eq!(
        tap.poll(fd),
        Readiness {
            writable: true,
            ..Readiness::default()
        }
    );

    // Guest TX: the write returns its whole length, and the stack gets a
    // CHECKSUM_PARTIAL skb (virtio_net_hdr_to_skb: skb_partial_csum_set).
    let frame = guest_udp(b"ping from the guest");
    let mut write = vnet_needs_csum().to_vec();
    write.extend_from_slice(&frame);
    assert_eq!(tap.write(fd, &write), Ok(write.len()));
    let got = tap.take_received();
    assert_eq!(got.len(), 1);
    let (dev, skb) = &got[0];
    assert_eq!(dev, b"vmtap0");
    assert_eq!(
        (skb.protocol, skb.ip_summed, skb.csum_offset),
        (0x0800, IpSummed::Partial, 6)
    );

    // Guest RX: the host stack sends a CHECKSUM_PARTIAL reply; the read gives the
    // 12-byte header virtio_net_hdr_from_skb writes (flags NEEDS_CSUM, csum_start 34,
    // csum_offset 6, hdr_len 0 without GSO, num_buffers zeroed since v6.15) and the frame.
    let reply = guest_udp(b"pong from the host");
    let mut out = SkBuff::from_frame(&reply, 64, reply.len());
    out.protocol = 0x0800;
    out.partial_csum_set(34, 6);
    assert_eq!(tap.xmit(b"vmtap0", out), XmitFate::Queued { queue: 0 });
    assert!(tap.poll(fd).readable);
    let read = tap.read(fd, 65536).unwrap();
    assert_eq!(read[..12], [1, 0, 0, 0, 0, 0, 34, 0, 6, 0, 0, 0]);
    assert_eq!(read[12..], reply[..]);

    // Nothing left: a non-blocking read is EAGAIN, and poll says so too.
    assert_eq!(tap.read(fd, 65536), Err(Errno::EAGAIN));
    assert!(!tap.poll(fd).readable);

    // Closing the only queue of a non-persistent tap unregisters it.
    tap.close(fd);
    assert!(tap.device(b"vmtap0").is_none());
}
