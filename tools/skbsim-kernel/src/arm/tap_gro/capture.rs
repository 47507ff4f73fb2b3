//! AF_PACKET capture with PACKET_VNET_HDR: what the stack received and its gso fields.

#[allow(unused_imports)]
use super::*;
use sim::wire::virtio_net_hdr::VIRTIO_NET_HDR_F_NEEDS_CSUM as VNET_F_NEEDS_CSUM;

/// The longest frame a capture socket reads whole (net/core/gro.c: skb_gro_receive keeps
/// `p->len` below gro_max_size, at most GRO_MAX_SIZE; ipv6_gro_complete adds 8 bytes).
pub(super) const CAPTURE_MAX_FRAME: usize =
    sim::gro::GRO_MAX_SIZE + sim::consts::ETH_HLEN + sim::gro::bigtcp::HOP_JUMBO_LEN;

/// An AF_PACKET socket with `PACKET_VNET_HDR` on one device: every frame comes with the
/// `virtio_net_hdr` the kernel builds from its skb.
#[derive(Debug)]
pub struct VnetCapture {
    pub(super) fd: OwnedFd,
    pub(super) ifindex: u32,
    pub(super) buf: Vec<u8>,
}

/// One received frame: the vnet header (or why there is none) and the bytes.
pub(super) type Captured = (Result<VirtioNetHdrRepr, String>, Vec<u8>);

impl VnetCapture {
    /// Bind to `ifindex` (refused in the process's main namespace).
    pub fn bind(ifindex: u32) -> Result<Self, KernelError> {
        let op = format!("AF_PACKET PACKET_VNET_HDR bind ifindex {ifindex}");
        ensure_private_netns(&op)?;
        // Protocol 0 receives nothing before bind.
        let fd = crate::sys::socket(
            rustix::net::AddressFamily::PACKET,
            rustix::net::SocketType::RAW,
        )
        .op(|| format!("{op}: socket"))?;
        setsockopt_int(fd.as_fd(), SOL_PACKET, PACKET_VNET_HDR, 1)
            .op(|| format!("{op}: PACKET_VNET_HDR"))?;
        // The tag of a frame the receive path untagged (after GRO) comes back out of band.
        setsockopt_int(fd.as_fd(), SOL_PACKET, crate::packet::PACKET_AUXDATA, 1)
            .op(|| format!("{op}: PACKET_AUXDATA"))?;
        setsockopt_int(
            fd.as_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            CAPTURE_RCVBUF,
        )
        .op(|| format!("{op}: SO_RCVBUFFORCE"))?;
        crate::packet::bind_all(fd.as_fd(), ifindex).op(|| op.clone())?;
        Ok(VnetCapture {
            fd,
            ifindex,
            // The largest GRO skb: GRO_MAX_SIZE from the network header, plus the MAC
            // header and a BIG TCP hop-by-hop jumbo header.
            buf: vec![0u8; VNET_LEN + CAPTURE_MAX_FRAME],
        })
    }

    /// The next incoming frame within `timeout` (outgoing ones are skipped), or `None`.
    pub fn recv(&mut self, timeout: Duration) -> Result<Option<Captured>, KernelError> {
        let op = || format!("AF_PACKET recv on ifindex {}", self.ifindex);
        loop {
            if !poll_one(self.fd.as_fd(), libc::POLLIN, Some(timeout)).op(op)? {
                return Ok(None);
            }
            let crate::packet::Received {
                len: n,
                from,
                auxdata,
            } = match crate::packet::recv_packet(self.fd.as_fd(), &mut self.buf) {
                Ok(r) => r,
                Err(Errno::EAGAIN) => return Ok(None),
                // packet_rcv_vnet: virtio_net_hdr_from_skb could not express the skb; the
                // kernel dropped it.
                Err(e @ Errno::EINVAL) => {
                    return Ok(Some((
                        Err(format!(
                            "recvmsg: {} ({}): virtio_net_hdr_from_skb cannot describe this skb",
                            e.name(),
                            crate::OsErrno::description(e)
                        )),
                        Vec::new(),
                    )))
                }
                Err(e) => return Err(KernelError::sys(op(), e)),
            };
            if from.sll_pkttype == PACKET_OUTGOING {
                continue;
            }
            if n > self.buf.len() || n < VNET_LEN {
                return Err(KernelError::new(
                    op(),
                    Cause::Protocol(format!(
                        "{n}-byte packet for a {}-byte buffer",
                        self.buf.len()
                    )),
                ));
            }
            let vnet = VirtioNetHdrRepr::from_bytes(
                &self.buf[..VNET_LEN],
                VnetHdrLayout::Basic,
                Endian::Little,
            )
            .map_err(|_| "short virtio-net header".to_string());
            // The skb GRO delivered still had its tag in the frame; __netif_receive_skb_core
            // untagged it (skb_vlan_untag) before the packet taps: put it back.
            let raw = &self.buf[VNET_LEN..n];
            let frame = match auxdata {
                Some(aux) => crate::packet::with_tag_reinserted(raw, &aux),
                None => raw.to_vec(),
            };
            // virtio_net_hdr_from_skb counted csum_start in the untagged frame; in the
            // frame with its tag back it is VLAN_HLEN further (as tun_put_user shifts it).
            let tag_len = (frame.len() - raw.len()) as u16;
            let vnet = vnet.map(|mut v| {
                if v.flags & VNET_F_NEEDS_CSUM != 0 {
                    v.csum_start += tag_len;
                }
                v
            });
            return Ok(Some((vnet, frame)));
        }
    }

    /// Every frame queued now.
    pub fn drain_now(&mut self, into: &mut Vec<Captured>) -> Result<(), KernelError> {
        while let Some(c) = self.recv(Duration::ZERO)? {
            into.push(c);
        }
        Ok(())
    }

    /// Frames until none arrives for `quiet`.
    pub fn drain_quiet(
        &mut self,
        quiet: Duration,
        into: &mut Vec<Captured>,
    ) -> Result<(), KernelError> {
        while let Some(c) = self.recv(quiet)? {
            into.push(c);
        }
        Ok(())
    }
}
