//! AF_PACKET raw sockets bound to one device, with `PACKET_AUXDATA` (VLAN tag the kernel
//! holds out of band, original length, checksum status) and, as an option,
//! `PACKET_VNET_HDR` (the skb's gso and checksum fields as a `struct virtio_net_hdr`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use sim::consts::ETH_P_ALL;
use sim::wire::virtio_net_hdr::VIRTIO_NET_HDR_LEN;
use sim::wire::{Endian, VirtioNetHdrRepr, VnetHdrLayout};

use crate::error::{Errno, ErrnoExt, KernelError};
use crate::sys::{cvt, cvt_len, ensure_private_netns, poll_one, setsockopt_int};

// The kernel's values, from libc (include/linux/socket.h, include/uapi/linux/if_packet.h).
pub(crate) use libc::{PACKET_AUXDATA, SOL_PACKET};

/// `TP_STATUS_*` bits of [`AuxData::status`].
pub mod tp_status {
    /// The checksum is not computed yet (CHECKSUM_PARTIAL).
    pub const CSUMNOTREADY: u32 = 0x08;
    /// `vlan_tci` is valid.
    pub const VLAN_VALID: u32 = 0x10;
    /// `vlan_tpid` is valid.
    pub const VLAN_TPID_VALID: u32 = 0x40;
    /// The checksum was verified.
    pub const CSUM_VALID: u32 = 0x80;
    /// GSO TCP.
    pub const GSO_TCP: u32 = 0x100;
}

/// The `struct tpacket_auxdata` of a message that `recvmsg` filled on a socket with
/// `PACKET_AUXDATA` on (and a control buffer in `msg`), if the kernel put one there.
fn auxdata_of(msg: &libc::msghdr) -> Option<libc::tpacket_auxdata> {
    let mut found = None;
    // SAFETY: msg was filled by recvmsg; CMSG_FIRSTHDR/NXTHDR stay within msg_control.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: cmsg is non-null and points into the control buffer, as returned by
        // CMSG_*HDR.
        let c = unsafe { &*cmsg };
        let need = std::mem::size_of::<libc::tpacket_auxdata>() as u32;
        // SAFETY: CMSG_LEN only computes a length from its argument.
        let min_len = unsafe { libc::CMSG_LEN(need) } as usize;
        if c.cmsg_level == SOL_PACKET && c.cmsg_type == PACKET_AUXDATA && c.cmsg_len >= min_len {
            // SAFETY: the kernel put a struct tpacket_auxdata (20 bytes) in this cmsg's
            // data; read it unaligned.
            found = Some(unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) });
        }
        // SAFETY: walking the same control buffer.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    found
}

/// What one `recvmsg` on an AF_PACKET socket gave.
pub(crate) struct Received {
    /// The packet's length (more than the buffer when MSG_TRUNC says it was cut).
    pub(crate) len: usize,
    /// The sender's address: `sll_pkttype`, `sll_protocol`, `sll_ifindex`.
    pub(crate) from: libc::sockaddr_ll,
    /// The PACKET_AUXDATA control message, when the socket asked for it.
    pub(crate) auxdata: Option<libc::tpacket_auxdata>,
}

/// One non-blocking `recvmsg(MSG_TRUNC)` into `buf` (the caller polled first). libc, not
/// rustix: rustix's ancillary-message parser has no PACKET_AUXDATA.
pub(crate) fn recv_packet(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<Received, Errno> {
    recv_packet_flags(fd, buf, 0)
}

/// [`recv_packet`] with `flags` added (MSG_PEEK).
fn recv_packet_flags(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    flags: libc::c_int,
) -> Result<Received, Errno> {
    let mut from = sockaddr_ll(0, 0);
    let mut cbuf = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid; the pointers are filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_ll).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    // SAFETY: msg points at live buffers (name, one iovec into buf, control) whose sizes
    // are recorded in msg. MSG_DONTWAIT: the caller's poll said a frame is ready.
    let n = unsafe {
        libc::recvmsg(
            fd.as_raw_fd(),
            &mut msg,
            libc::MSG_TRUNC | libc::MSG_DONTWAIT | flags,
        )
    };
    let len = cvt_len(n)?;
    Ok(Received {
        len,
        from,
        auxdata: auxdata_of(&msg),
    })
}

/// `frame` (from its MAC header) with the tag the kernel held out of band put back after
/// the MAC addresses, as libpcap does: the frame as it was before the receive path's
/// `skb_vlan_untag`. Unchanged when `aux` has no valid tag or the frame has no MACs.
pub(crate) fn with_tag_reinserted(frame: &[u8], aux: &libc::tpacket_auxdata) -> Vec<u8> {
    if aux.tp_status & tp_status::VLAN_VALID == 0 || frame.len() < 12 {
        return frame.to_vec();
    }
    let tpid = if aux.tp_status & tp_status::VLAN_TPID_VALID != 0 {
        aux.tp_vlan_tpid
    } else {
        sim::consts::ETH_P_8021Q
    };
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.extend_from_slice(&frame[..12]);
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&aux.tp_vlan_tci.to_be_bytes());
    out.extend_from_slice(&frame[12..]);
    out
}

/// `sll_pkttype` values.
pub mod pkttype {
    /// To us.
    pub const HOST: u8 = 0;
    /// Broadcast.
    pub const BROADCAST: u8 = 1;
    /// Multicast.
    pub const MULTICAST: u8 = 2;
    /// To someone else (what a write into a tap with a foreign dst MAC looks like).
    pub const OTHERHOST: u8 = 3;
    /// Sent by this host.
    pub const OUTGOING: u8 = 4;
}

/// Per-frame metadata: `struct tpacket_auxdata` plus the `sockaddr_ll` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuxData {
    /// `tp_status` (see [`tp_status`]).
    pub status: u32,
    /// `tp_len`: the frame's full length (the skb length from the MAC header).
    pub len: u32,
    /// `tp_snaplen`: how much was copied.
    pub snaplen: u32,
    /// `tp_mac`.
    pub mac: u16,
    /// `tp_net`: offset of the network header.
    pub net: u16,
    /// `tp_vlan_tci`, meaningful when `vlan_valid`.
    pub vlan_tci: u16,
    /// `tp_vlan_tpid` (ETH_P_8021Q, ETH_P_8021AD), meaningful when `vlan_tpid_valid`.
    pub vlan_tpid: u16,
    /// `TP_STATUS_VLAN_VALID`: the kernel held a tag out of band (`skb->vlan_tci`).
    pub vlan_valid: bool,
    /// `TP_STATUS_VLAN_TPID_VALID`.
    pub vlan_tpid_valid: bool,
    /// `sll_pkttype` (see [`pkttype`]).
    pub pkttype: u8,
    /// `sll_protocol` (= `skb->protocol`), host-order value.
    pub protocol: u16,
    /// `sll_ifindex`.
    pub ifindex: u32,
    /// Whether the frame was longer than the receive buffer.
    pub truncated: bool,
    /// With [`PacketSocket::set_vnet_hdr`]: the header the kernel built from the skb.
    pub vnet: Option<RxVnet>,
}

/// What `PACKET_VNET_HDR` showed of one skb (net/packet/af_packet.c: packet_recvmsg ->
/// packet_rcv_vnet -> include/linux/virtio_net.h: virtio_net_hdr_from_skb, little
/// endian, has_data_valid true, vlan_hlen 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxVnet {
    /// The 10-byte `struct virtio_net_hdr` that came before the frame.
    Hdr(VirtioNetHdrRepr),
    /// virtio_net_hdr_from_skb returned -EINVAL: a GSO skb of a type no virtio_net_hdr
    /// carries (none of TCPV4, TCPV6, UDP_L4). The kernel frees the skb on such a
    /// recvmsg; the socket peeks first and reads the frame again without the header.
    Refused,
}

/// An AF_PACKET `SOCK_RAW` socket bound to one ifindex with `ETH_P_ALL`: it sees frames in
/// both directions on that device (but not its own sends).
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
    timeout: Option<Duration>,
    buf: Vec<u8>,
    /// `PACKET_VNET_HDR` is on ([`PacketSocket::set_vnet_hdr`]).
    vnet_hdr: bool,
}

/// The receive buffer every arm socket gets (root: SO_RCVBUFFORCE), 32 MiB.
const RCVBUF: libc::c_int = 32 << 20;

impl PacketSocket {
    /// Bind to `ifindex` (in the calling thread's namespace; refused in the main one). The
    /// socket is created with protocol 0 so that it receives nothing before `bind`.
    /// Receives wait up to 1 s by default (see [`PacketSocket::set_timeout`]).
    pub fn bind(ifindex: u32) -> Result<Self, KernelError> {
        let op = format!("AF_PACKET bind ifindex {ifindex}");
        ensure_private_netns(&op)?;
        let fd = crate::sys::socket(
            rustix::net::AddressFamily::PACKET,
            rustix::net::SocketType::RAW,
        )
        .op(|| format!("{op}: socket"))?;
        setsockopt_int(fd.as_fd(), SOL_PACKET, PACKET_AUXDATA, 1)
            .op(|| format!("{op}: PACKET_AUXDATA"))?;
        // A vhost kick delivers up to a whole avail ring before the arm reads: with the
        // default rcvbuf (212992) packet_rcv drops after ~200 small frames.
        setsockopt_int(fd.as_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RCVBUF)
            .op(|| format!("{op}: SO_RCVBUFFORCE"))?;
        bind_all(fd.as_fd(), ifindex).op(|| op.clone())?;
        Ok(PacketSocket {
            fd,
            ifindex,
            timeout: Some(Duration::from_secs(1)),
            buf: vec![0u8; 1 << 18],
            vnet_hdr: false,
        })
    }

    /// Turns `PACKET_VNET_HDR` on: each frame [`PacketSocket::recv`] returns comes with
    /// [`AuxData::vnet`], the `struct virtio_net_hdr` the kernel built from its skb
    /// (net/packet/af_packet.c: packet_setsockopt PACKET_VNET_HDR sets vnet_hdr_sz to
    /// sizeof(struct virtio_net_hdr); packet_recvmsg puts it before the frame).
    pub fn set_vnet_hdr(&mut self) -> Result<(), KernelError> {
        vnet_hdr_opt(self.fd.as_fd(), true)
            .op(|| format!("AF_PACKET PACKET_VNET_HDR on ifindex {}", self.ifindex))?;
        self.vnet_hdr = true;
        Ok(())
    }

    /// One ready frame: with the vnet header on, peeked first (a refused header frees
    /// the skb), then read again, without the header if it was refused.
    fn recv_ready(&mut self) -> Result<(Received, Option<RxVnet>), Errno> {
        if !self.vnet_hdr {
            return recv_packet(self.fd.as_fd(), &mut self.buf).map(|r| (r, None));
        }
        let fd = self.fd.as_fd();
        match recv_packet_flags(fd, &mut self.buf, libc::MSG_PEEK) {
            Err(Errno::EINVAL) => {
                vnet_hdr_opt(fd, false)?;
                let r = recv_packet(fd, &mut self.buf);
                vnet_hdr_opt(fd, true)?;
                Ok((r?, Some(RxVnet::Refused)))
            }
            Err(e) => Err(e),
            Ok(peeked) => {
                let mut r = recv_packet(fd, &mut self.buf)?;
                // packet_recvmsg reads the original length (tp_len) from the skb's cb
                // and then writes sll_family and sll_protocol over it
                // (PACKET_SKB_CB(skb)->sa.origlen shares them): the second read of a
                // peeked skb gets 0x00080011 for an IPv4 one. The peek's auxdata is the
                // one to keep.
                r.auxdata = peeked.auxdata;
                let hdr = VirtioNetHdrRepr::from_bytes(
                    &self.buf[..VIRTIO_NET_HDR_LEN],
                    VnetHdrLayout::Basic,
                    Endian::Little,
                )
                .map_err(|_| Errno::EIO)?;
                // packet_recvmsg returns vnet_hdr_sz + the frame's length.
                r.len = r.len.saturating_sub(VIRTIO_NET_HDR_LEN);
                self.buf.copy_within(VIRTIO_NET_HDR_LEN.., 0);
                Ok((r, Some(RxVnet::Hdr(hdr))))
            }
        }
    }

    /// How long [`PacketSocket::recv`] waits: `Some(Duration::ZERO)` polls, `None` blocks.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// The bound ifindex.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Next frame and its metadata, or `None` after the timeout.
    pub fn recv(&mut self) -> Result<Option<(Vec<u8>, AuxData)>, KernelError> {
        let timeout = self.timeout;
        self.recv_timeout(timeout)
    }

    /// Like [`PacketSocket::recv`] with an explicit timeout.
    pub fn recv_timeout(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Option<(Vec<u8>, AuxData)>, KernelError> {
        let ifindex = self.ifindex;
        let op = || format!("AF_PACKET recv on ifindex {ifindex}");
        if !poll_one(self.fd.as_fd(), libc::POLLIN, timeout).op(op)? {
            return Ok(None);
        }
        let (
            Received {
                len: n,
                from,
                auxdata,
            },
            vnet,
        ) = match self.recv_ready() {
            Ok((r, vnet)) => (r, vnet),
            Err(Errno::EAGAIN) => return Ok(None),
            Err(e) => return Err(KernelError::sys(op(), e)),
        };
        // With the header, the frame sits at the buffer's start after it was moved down.
        let room = match vnet {
            Some(RxVnet::Hdr(_)) => self.buf.len() - VIRTIO_NET_HDR_LEN,
            _ => self.buf.len(),
        };
        let mut aux = AuxData {
            pkttype: from.sll_pkttype,
            protocol: u16::from_be(from.sll_protocol),
            ifindex: from.sll_ifindex as u32,
            truncated: n > room,
            vnet,
            ..AuxData::default()
        };
        if let Some(a) = auxdata {
            aux.status = a.tp_status;
            aux.len = a.tp_len;
            aux.snaplen = a.tp_snaplen;
            aux.mac = a.tp_mac;
            aux.net = a.tp_net;
            aux.vlan_tci = a.tp_vlan_tci;
            aux.vlan_tpid = a.tp_vlan_tpid;
            aux.vlan_valid = a.tp_status & tp_status::VLAN_VALID != 0;
            aux.vlan_tpid_valid = a.tp_status & tp_status::VLAN_TPID_VALID != 0;
        }
        let copied = n.min(room);
        Ok(Some((self.buf[..copied].to_vec(), aux)))
    }

    /// Receive and discard what is queued now; returns how many frames.
    pub fn drain(&mut self) -> Result<usize, KernelError> {
        let mut n = 0;
        while self.recv_timeout(Some(Duration::ZERO))?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    /// Transmit `frame` (a full Ethernet frame) on the bound device. `skb->protocol` is
    /// parsed from the frame's ethertype (the socket is bound with ETH_P_ALL).
    pub fn send(&self, frame: &[u8]) -> Result<usize, KernelError> {
        rustix::net::send(&self.fd, frame, rustix::net::SendFlags::empty())
            .map_err(crate::error::from_rustix)
            .op(|| format!("AF_PACKET send on ifindex {}", self.ifindex))
    }

    /// Transmit with an explicit `sll_protocol`, which becomes `skb->protocol` whatever the
    /// frame's ethertype says (and so `pi.proto` on a tap reader).
    pub fn send_with_protocol(&self, frame: &[u8], protocol: u16) -> Result<usize, KernelError> {
        let addr = sockaddr_ll(self.ifindex, protocol);
        // SAFETY: `frame` is readable for its length; `addr` is a sockaddr_ll whose size is
        // passed with it.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        cvt_len(n).op(|| {
            format!(
                "AF_PACKET sendto proto {protocol:#06x} on ifindex {}",
                self.ifindex
            )
        })
    }
}

impl AsFd for PacketSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// `PACKET_VNET_HDR` on or off (packet_setsockopt: allowed while no ring is mapped).
fn vnet_hdr_opt(fd: BorrowedFd<'_>, on: bool) -> Result<(), Errno> {
    setsockopt_int(fd, SOL_PACKET, libc::PACKET_VNET_HDR, libc::c_int::from(on))
}

fn sockaddr_ll(ifindex: u32, protocol: u16) -> libc::sockaddr_ll {
    libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: protocol.to_be(),
        sll_ifindex: ifindex as i32,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 6,
        sll_addr: [0; 8],
    }
}

/// bind(2) an AF_PACKET socket to every protocol (ETH_P_ALL) on `ifindex`.
pub(crate) fn bind_all(fd: std::os::fd::BorrowedFd<'_>, ifindex: u32) -> Result<(), Errno> {
    let addr = sockaddr_ll(ifindex, ETH_P_ALL);
    // SAFETY: `addr` is a sockaddr_ll whose size is passed with it.
    let ret = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    cvt(ret).map(|_| ())
}

#[cfg(test)]
mod reinsert_tests {
    use super::*;

    fn aux(status: u32, tci: u16, tpid: u16) -> libc::tpacket_auxdata {
        libc::tpacket_auxdata {
            tp_status: status,
            tp_len: 0,
            tp_snaplen: 0,
            tp_mac: 0,
            tp_net: 0,
            tp_vlan_tci: tci,
            tp_vlan_tpid: tpid,
        }
    }

    #[test]
    fn a_held_tag_goes_back_after_the_macs_with_its_tpid() {
        let frame: Vec<u8> = (0..12).chain([0x08, 0x06, 0xaa]).collect();
        let status = tp_status::VLAN_VALID | tp_status::VLAN_TPID_VALID;
        let out = with_tag_reinserted(&frame, &aux(status, 0x20c8, 0x88a8));
        assert_eq!(&out[..12], &frame[..12]);
        assert_eq!(&out[12..16], &[0x88, 0xa8, 0x20, 0xc8]);
        assert_eq!(&out[16..], &[0x08, 0x06, 0xaa]);
        // Without TPID_VALID (kernels before 3.14) the tag is 802.1Q.
        let out = with_tag_reinserted(&frame, &aux(tp_status::VLAN_VALID, 100, 0));
        assert_eq!(&out[12..16], &[0x81, 0x00, 0x00, 0x64]);
    }

    #[test]
    fn no_valid_tag_leaves_the_frame_alone() {
        let frame: Vec<u8> = (0..20).collect();
        assert_eq!(with_tag_reinserted(&frame, &aux(0, 100, 0x8100)), frame);
    }
}
