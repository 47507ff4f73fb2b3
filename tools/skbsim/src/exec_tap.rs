//! `skbsim exec --backend tap`: the program's `/dev/net/tun` files are real ones, in a
//! private network namespace (skbsim_kernel::Netns) where the program itself runs, with
//! the Linux stack as the far side holding the `--far-addr` addresses. The same
//! supervisor answers the same syscalls (docs/exec.md#tap): the program's fd is still one
//! end of a socketpair, and each operation is performed by the supervisor on the real
//! file it holds, so the answer is the kernel's and the record ([`skbsim_exec::Recorder`])
//! is built from what the supervisor saw, as for the model. (SECCOMP_USER_NOTIF_FLAG_CONTINUE
//! would let the syscall run in the program but never shows its result.)
//!
//! What the stack got from a write is read from an AF_PACKET socket on the device
//! (protocol and length from the MAC header on, as the model's record gives them) with
//! PACKET_VNET_HDR: each frame's `virtio_net_hdr` gives the skb's gso type and size
//! ([`stack_skb`]). The socket is an ETH_P_ALL tap, so it sees each skb where
//! __netif_receive_skb_core delivers it to the ptype_all list: after GRO for an IFF_NAPI
//! device (napi_gro_receive -> gro_normal_one), after the backlog for one without
//! (netif_rx), before any protocol handler segments it. The model records the same skb:
//! the one its netif_receive_skb got (sim::tun::device::TunHost::take_received).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use sim::tun::ioctl::iff_flags::{IFF_NO_PI, IFF_TAP, IFF_VNET_HDR};
use sim::tun::ioctl::{cmd, IoctlAnswer, IoctlArg};
use sim::tun::{DeviceKind, TUN_PI_LEN};
use skbsim_exec::{
    Errno, FarInput, FileId, Framing, Ifa, Injected, LinkInfo, Readiness, SimTun, StackSkb,
    WriteReport,
};
use skbsim_kernel::packet::pkttype;
use skbsim_kernel::tun_ioctl::TunProbe;
use skbsim_kernel::{AuxData, KernelError, PacketSocket, Rtnl, RxVnet};

/// A device the program made: its ifindex and the packet socket watching what its
/// stack receives.
#[derive(Debug)]
struct Dev {
    ifindex: u32,
    seen: PacketSocket,
}

/// Real tun/tap files in the calling thread's private network namespace.
#[derive(Debug)]
pub struct TapTun {
    probe: RefCell<TunProbe>,
    rtnl: RefCell<Rtnl>,
    /// By file number; None once closed (or when the open failed).
    files: Vec<Option<File>>,
    devs: BTreeMap<Vec<u8>, Dev>,
    /// The IPv4 address SIOCSIFADDR / SIOCSIFNETMASK gave each device.
    ipv4: BTreeMap<Vec<u8>, Ifa>,
    far_addrs: Vec<(IpAddr, u8)>,
    report: WriteReport,
    /// The scenario's capture, sent when a device first comes up (skbsim_exec::inject).
    input: FarInput,
    injected: Vec<Injected>,
}

fn errno_of(e: &KernelError) -> Errno {
    e.errno().unwrap_or(Errno::EIO)
}

fn io_errno(e: &std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_raw)
}

impl TapTun {
    /// Must be made on a thread in a private namespace (skbsim_kernel::Netns::run): every
    /// file and device lives there.
    /// `input`: what the far side sends when a device first comes up.
    pub fn new(far_addrs: Vec<(IpAddr, u8)>, input: FarInput) -> Result<TapTun, KernelError> {
        Ok(TapTun {
            probe: RefCell::new(TunProbe::new()),
            rtnl: RefCell::new(Rtnl::new()?),
            files: Vec::new(),
            devs: BTreeMap::new(),
            ipv4: BTreeMap::new(),
            far_addrs,
            report: WriteReport::default(),
            input,
            injected: Vec::new(),
        })
    }

    fn file(&self, f: FileId) -> Result<&File, Errno> {
        self.files
            .get(f.index())
            .and_then(Option::as_ref)
            .ok_or(Errno::EBADF)
    }

    /// A device the program just made (TUNSETIFF): the far side's MAC on a tap (the sim
    /// far side's, skbsim_exec::STACK_MAC), the far side's addresses, a packet socket.
    fn adopt(&mut self, name: &[u8]) -> Result<(), KernelError> {
        if self.devs.contains_key(name) {
            return Ok(());
        }
        let mut rtnl = self.rtnl.borrow_mut();
        let ifindex = rtnl.link_index(&String::from_utf8_lossy(name))?;
        let link = rtnl.link(ifindex)?;
        if link.kind.as_deref() == Some("tun")
            && link.address.as_ref().is_some_and(|a| a.len() == 6)
        {
            rtnl.set_address(ifindex, skbsim_exec::STACK_MAC)?;
        }
        // IPv4 only: the namespace has IPv6 off (Netns::run), or the kernel's own router
        // solicitations, DAD and MLD reports would reach the program unasked, which the
        // model's far side never sends (docs/exec.md#tap).
        for (addr, prefix) in self.far_addrs.iter().filter(|a| a.0.is_ipv4()) {
            rtnl.add_address(ifindex, *addr, *prefix)?;
        }
        let mut seen = PacketSocket::bind(ifindex)?;
        seen.set_timeout(Some(Duration::ZERO));
        seen.set_vnet_hdr()?;
        self.devs.insert(name.to_vec(), Dev { ifindex, seen });
        Ok(())
    }

    /// The first time a device comes up: the scenario's capture sent out of it from the
    /// stack side (an AF_PACKET socket bound to it, sendto with sll_protocol the frame's
    /// type: packet_snd -> dev_queue_xmit -> tun_net_xmit), before the supervisor
    /// answers the request, so before the program's next operation
    /// ([`FarInput::on_link_change`]). A send error is the frame's fate.
    fn inject(&mut self, dev: &[u8], was_up: bool, up: Option<bool>) {
        let Some(kind) = self.kind_of(dev) else {
            return;
        };
        let Some(ifindex) = self.devs.get(dev).map(|d| d.ifindex) else {
            return;
        };
        let frames = self.input.on_link_change(kind, was_up, up);
        if frames.is_empty() {
            return;
        }
        // A fresh socket: `seen` was bound while the device was down, which left
        // ENETDOWN pending on it (af_packet.c: packet_do_bind), and the first send would
        // return that instead.
        let sock = PacketSocket::bind(ifindex);
        for (data, protocol) in frames {
            let fate = match &sock {
                Ok(s) => s
                    .send_with_protocol(&data, protocol)
                    .err()
                    .map(|e| e.to_string()),
                Err(e) => Some(e.to_string()),
            }
            .map(|e| format!("not sent: {e}"));
            self.injected.push(Injected {
                dev: dev.to_vec(),
                kind,
                data,
                fate,
            });
        }
    }

    /// Tap or tun, by the link's kind of address (a tap has a MAC).
    fn kind_of(&self, dev: &[u8]) -> Option<DeviceKind> {
        let ifindex = self.devs.get(dev)?.ifindex;
        let link = self.rtnl.borrow_mut().link(ifindex).ok()?;
        Some(if link.address.is_some_and(|a| a.len() == 6) {
            DeviceKind::Tap
        } else {
            DeviceKind::Tun
        })
    }

    fn dev_of(&self, f: FileId) -> Option<(Vec<u8>, u16)> {
        let file = self.file(f).ok()?;
        match self
            .probe
            .borrow_mut()
            .ioctl(file, cmd::TUNGETIFF, &IoctlArg::Out)
        {
            Ok(IoctlAnswer::Ifreq { name, flags }) => Some((name, flags)),
            _ => None,
        }
    }
}

/// An skb the stack got, as the packet socket showed it: protocol and length from the
/// socket address and auxdata, the gso fields from the virtio_net_hdr the kernel built
/// from the skb (include/linux/virtio_net.h: virtio_net_hdr_from_skb), its gso type put
/// back as the SKB_GSO bits virtio_net_hdr_to_skb gives each virtio type. gso_segs is in
/// no virtio_net_hdr field: unknown for a GSO skb, 0 for another (a new skb's
/// skb_shinfo is zeroed, __alloc_skb, and only GSO sets it).
fn stack_skb(aux: &AuxData) -> StackSkb {
    use sim::skb::gso;
    use sim::trace::gro_delivery::Csum;
    use sim::wire::virtio_net_hdr as v;
    let csum = match &aux.vnet {
        Some(RxVnet::Hdr(h)) => Some(Csum::of_vnet(h)),
        _ => None,
    };
    let (gso_type, gso_size) = match aux.vnet {
        Some(RxVnet::Hdr(h)) => {
            let base = match h.gso_type & !v::VIRTIO_NET_HDR_GSO_ECN {
                v::VIRTIO_NET_HDR_GSO_TCPV4 => gso::TCPV4,
                v::VIRTIO_NET_HDR_GSO_TCPV6 => gso::TCPV6,
                v::VIRTIO_NET_HDR_GSO_UDP_L4 => gso::UDP_L4,
                v::VIRTIO_NET_HDR_GSO_UDP => gso::UDP,
                _ => 0,
            };
            let ecn = if h.gso_type & v::VIRTIO_NET_HDR_GSO_ECN != 0 {
                gso::TCP_ECN
            } else {
                0
            };
            (Some(base | ecn), h.gso_size)
        }
        Some(RxVnet::Refused) => (None, 0),
        // No header asked for: not a GSO skb as far as this socket can tell.
        None => (Some(0), 0),
    };
    StackSkb {
        protocol: aux.protocol,
        len: aux.len as usize,
        gso_type,
        gso_size,
        gso_segs: (gso_type == Some(0)).then_some(0),
        csum,
    }
}

impl SimTun for TapTun {
    fn open(&mut self, _nonblock: bool) -> FileId {
        // The supervisor's own file never blocks: a blocking read of the program waits
        // in the supervisor (SimTun::would_block), not in the kernel.
        let file = self.probe.borrow().open().ok().and_then(|f| {
            rustix::fs::fcntl_setfl(&f, rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NONBLOCK)
                .ok()
                .map(|()| f)
        });
        self.files.push(file);
        FileId::from_index(self.files.len() - 1)
    }

    fn ioctl(&mut self, f: FileId, c: u32, arg: &IoctlArg) -> Result<IoctlAnswer, Errno> {
        let file = self.file(f)?;
        let a = self
            .probe
            .borrow_mut()
            .ioctl(file, c, arg)
            .map_err(Errno::from_raw);
        if let (cmd::TUNSETIFF, Ok(IoctlAnswer::Ifreq { name, .. })) = (c, &a) {
            let name = name.clone();
            self.adopt(&name).map_err(|e| errno_of(&e))?;
        }
        a
    }

    fn set_nonblock(&mut self, _f: FileId, _nonblock: bool) {}

    fn read(&mut self, f: FileId, buf_len: usize) -> Result<Vec<u8>, Errno> {
        let mut file = self.file(f)?;
        let mut buf = vec![0u8; buf_len];
        let n = file.read(&mut buf).map_err(|e| io_errno(&e))?;
        buf.truncate(n);
        Ok(buf)
    }

    fn write(&mut self, f: FileId, data: &[u8]) -> Result<usize, Errno> {
        let dev = self.dev_of(f).map(|d| d.0);
        if let Some(d) = dev.as_ref().and_then(|d| self.devs.get_mut(d)) {
            let _ = d.seen.drain();
        }
        let r = self.file(f)?.write(data).map_err(|e| io_errno(&e));
        let mut report = WriteReport::default();
        if let Some(d) = dev.as_ref().and_then(|d| self.devs.get_mut(d)) {
            while let Ok(Some((_, aux))) = d.seen.recv() {
                if aux.pkttype != pkttype::OUTGOING {
                    report.skbs.push(stack_skb(&aux));
                }
            }
        }
        self.report = report;
        r
    }

    fn poll(&self, f: FileId) -> Readiness {
        let Ok(file) = self.file(f) else {
            return Readiness::default();
        };
        let mut fds = [PollFd::new(file, PollFlags::IN | PollFlags::OUT)];
        let _ = poll(&mut fds, Some(&Timespec::default()));
        let ev = fds[0].revents();
        Readiness {
            readable: ev.contains(PollFlags::IN),
            writable: ev.contains(PollFlags::OUT),
            error: ev.contains(PollFlags::ERR),
        }
    }

    fn close(&mut self, f: FileId) {
        if let Some(slot) = self.files.get_mut(f.index()) {
            *slot = None;
        }
    }

    fn set_link(&mut self, dev: &[u8], up: Option<bool>, mtu: Option<u32>) -> Result<(), Errno> {
        let ifindex = self.devs.get(dev).ok_or(Errno::ENODEV)?.ifindex;
        let mut rtnl = self.rtnl.borrow_mut();
        if let Some(m) = mtu {
            rtnl.set_mtu(ifindex, m).map_err(|e| errno_of(&e))?;
        }
        // IFF_UP (include/uapi/linux/if.h) in ifi_flags.
        let was_up = rtnl.link(ifindex).is_ok_and(|l| l.flags & 0x1 != 0);
        if let Some(u) = up {
            rtnl.set_up(ifindex, u).map_err(|e| errno_of(&e))?;
        }
        drop(rtnl);
        self.inject(dev, was_up, up);
        Ok(())
    }

    /// The capture's frames the last link change sent ([`TapTun::inject`]).
    fn take_injected(&mut self) -> Vec<Injected> {
        std::mem::take(&mut self.injected)
    }

    fn link(&self, dev: &[u8]) -> Option<LinkInfo> {
        let ifindex = self.devs.get(dev)?.ifindex;
        let l = self.rtnl.borrow_mut().link(ifindex).ok()?;
        Some(LinkInfo {
            ifindex,
            flags: l.flags as u16,
            mtu: l.mtu.unwrap_or(0),
        })
    }

    fn link_name(&self, ifindex: u32) -> Option<Vec<u8>> {
        self.devs
            .iter()
            .find(|(_, d)| d.ifindex == ifindex)
            .map(|(n, _)| n.clone())
    }

    fn delete_link(&mut self, dev: &[u8]) -> Result<(), Errno> {
        let ifindex = self.devs.get(dev).ok_or(Errno::ENODEV)?.ifindex;
        self.rtnl
            .borrow_mut()
            .delete_link(ifindex)
            .map_err(|e| errno_of(&e))?;
        self.devs.remove(dev);
        Ok(())
    }

    fn ipv4(&self, dev: &[u8]) -> Option<Ifa> {
        self.ipv4.get(dev).copied()
    }

    /// The address goes on the real device with RTM_NEWADDR: the stack behind the device
    /// holds it, as the model's far side does. The supervisor has applied devinet_ioctl's
    /// checks (the model's); a second, different address is added beside the first
    /// rather than replacing it as SIOCSIFADDR would (rtnetlink has no in-place change).
    fn set_ipv4(&mut self, dev: &[u8], ifa: Ifa) {
        let Some(ifindex) = self.devs.get(dev).map(|d| d.ifindex) else {
            return;
        };
        if self.ipv4.get(dev) != Some(&ifa) {
            let addr = IpAddr::V4(std::net::Ipv4Addr::from(ifa.local));
            let _ = self
                .rtnl
                .borrow_mut()
                .add_address(ifindex, addr, ifa.prefix);
        }
        self.ipv4.insert(dev.to_vec(), ifa);
    }

    fn take_write_report(&mut self) -> WriteReport {
        std::mem::take(&mut self.report)
    }

    /// TUNGETIFF's flags and TUNGETVNETHDRSZ: the PI unless IFF_NO_PI, the vnet header
    /// with IFF_VNET_HDR (tun_get_user / tun_put_user).
    fn framing(&self, f: FileId) -> Option<Framing> {
        let (dev, flags) = self.dev_of(f)?;
        let mut header = 0;
        if flags & IFF_NO_PI == 0 {
            header += TUN_PI_LEN;
        }
        if flags & IFF_VNET_HDR != 0 {
            let file = self.file(f).ok()?;
            if let Ok(IoctlAnswer::Int(n)) =
                self.probe
                    .borrow_mut()
                    .ioctl(file, cmd::TUNGETVNETHDRSZ, &IoctlArg::Out)
            {
                header += n.max(0) as usize;
            }
        }
        let kind = if flags & IFF_TAP != 0 {
            DeviceKind::Tap
        } else {
            DeviceKind::Tun
        };
        Some(Framing { dev, kind, header })
    }

    fn wake_fd(&self, f: FileId) -> Option<BorrowedFd<'_>> {
        self.file(f).ok().map(AsFd::as_fd)
    }
}
