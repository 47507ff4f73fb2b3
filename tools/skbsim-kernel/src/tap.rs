//! TUN/TAP devices through `/dev/net/tun` and raw ioctls.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};

use crate::error::{Errno, ErrnoExt, KernelError};
use crate::ioctl::{ioctl, Request};
use crate::sys::{
    ctl_socket, ensure_private_netns, ifindex_of, ifname_array, ifname_from_array, poll_one,
    set_if_up, IfreqFlags,
};

// The ioctl numbers and flag bits have one definition, the model's
// (`sim::tun::ioctl`: include/uapi/linux/if_tun.h); here they are typed for ioctl(2).
pub const TUNSETIFF: libc::c_ulong = sim::tun::ioctl::cmd::TUNSETIFF as libc::c_ulong;
pub const TUNSETOFFLOAD: libc::c_ulong = sim::tun::ioctl::cmd::TUNSETOFFLOAD as libc::c_ulong;
pub const TUNSETSNDBUF: libc::c_ulong = sim::tun::ioctl::cmd::TUNSETSNDBUF as libc::c_ulong;
pub const TUNGETVNETHDRSZ: libc::c_ulong = sim::tun::ioctl::cmd::TUNGETVNETHDRSZ as libc::c_ulong;
pub const TUNSETVNETHDRSZ: libc::c_ulong = sim::tun::ioctl::cmd::TUNSETVNETHDRSZ as libc::c_ulong;
pub const TUNSETQUEUE: libc::c_ulong = sim::tun::ioctl::cmd::TUNSETQUEUE as libc::c_ulong;
pub const TUNSETVNETLE: libc::c_ulong = sim::tun::ioctl::cmd::TUNSETVNETLE as libc::c_ulong;
pub const TUNSETVNETBE: libc::c_ulong = sim::tun::ioctl::cmd::TUNSETVNETBE as libc::c_ulong;
pub const TUNGETFEATURES: libc::c_ulong = sim::tun::ioctl::cmd::TUNGETFEATURES as libc::c_ulong;
pub const TUNGETIFF: libc::c_ulong = sim::tun::ioctl::cmd::TUNGETIFF as libc::c_ulong;
pub const TUNSETSTEERINGEBPF: libc::c_ulong =
    sim::tun::ioctl::cmd::TUNSETSTEERINGEBPF as libc::c_ulong;
pub const TUNSETFILTEREBPF: libc::c_ulong = sim::tun::ioctl::cmd::TUNSETFILTEREBPF as libc::c_ulong;

/// `IFF_*` flags of `TUNSETIFF`.
pub mod iff {
    pub use sim::tun::ioctl::iff_flags::{
        IFF_ATTACH_QUEUE as ATTACH_QUEUE, IFF_DETACH_QUEUE as DETACH_QUEUE,
        IFF_MULTI_QUEUE as MULTI_QUEUE, IFF_NAPI as NAPI, IFF_NAPI_FRAGS as NAPI_FRAGS,
        IFF_NO_PI as NO_PI, IFF_TAP as TAP, IFF_TUN as TUN, IFF_VNET_HDR as VNET_HDR,
    };
}

/// `TUN_F_*` offload bits of `TUNSETOFFLOAD`.
pub mod tun_f {
    pub const CSUM: u32 = sim::tun::ioctl::tun_f::CSUM as u32;
    pub const TSO4: u32 = sim::tun::ioctl::tun_f::TSO4 as u32;
    pub const TSO6: u32 = sim::tun::ioctl::tun_f::TSO6 as u32;
    pub const TSO_ECN: u32 = sim::tun::ioctl::tun_f::TSO_ECN as u32;
    pub const UFO: u32 = sim::tun::ioctl::tun_f::UFO as u32;
    pub const USO4: u32 = sim::tun::ioctl::tun_f::USO4 as u32;
    pub const USO6: u32 = sim::tun::ioctl::tun_f::USO6 as u32;
    pub const UDP_TUNNEL_GSO: u32 = sim::tun::ioctl::tun_f::UDP_TUNNEL_GSO as u32;
    pub const UDP_TUNNEL_GSO_CSUM: u32 = sim::tun::ioctl::tun_f::UDP_TUNNEL_GSO_CSUM as u32;
}

/// How to create a tun/tap queue. `Default` is a tap with `IFF_NO_PI`, blocking, nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TapConfig {
    /// Device name; `None` lets the kernel pick (`tap%d` / `tun%d`).
    pub name: Option<String>,
    /// `IFF_TAP` (Ethernet) when true, `IFF_TUN` (IP) when false.
    pub tap: bool,
    /// `IFF_NO_PI`.
    pub no_pi: bool,
    /// `IFF_VNET_HDR`.
    pub vnet_hdr: bool,
    /// `IFF_NAPI`.
    pub napi: bool,
    /// `IFF_NAPI_FRAGS` (needs `napi`).
    pub napi_frags: bool,
    /// `IFF_MULTI_QUEUE`.
    pub multi_queue: bool,
    /// Open with `O_NONBLOCK` (native XDP on tap only runs for non-blocking writes).
    pub nonblocking: bool,
}

impl Default for TapConfig {
    fn default() -> Self {
        TapConfig {
            name: None,
            tap: true,
            no_pi: true,
            vnet_hdr: false,
            napi: false,
            napi_frags: false,
            multi_queue: false,
            nonblocking: false,
        }
    }
}

impl TapConfig {
    /// A tap named `name` with `IFF_NO_PI`.
    pub fn tap(name: &str) -> Self {
        TapConfig {
            name: Some(name.to_string()),
            ..TapConfig::default()
        }
    }

    /// A tun (layer 3) device named `name` with `IFF_NO_PI`.
    pub fn tun(name: &str) -> Self {
        TapConfig {
            name: Some(name.to_string()),
            tap: false,
            ..TapConfig::default()
        }
    }

    /// Set `IFF_NO_PI`.
    pub fn no_pi(mut self, on: bool) -> Self {
        self.no_pi = on;
        self
    }
    /// Set `IFF_VNET_HDR`.
    pub fn vnet_hdr(mut self, on: bool) -> Self {
        self.vnet_hdr = on;
        self
    }
    /// Set `IFF_NAPI`.
    pub fn napi(mut self, on: bool) -> Self {
        self.napi = on;
        self
    }
    /// Set `IFF_NAPI_FRAGS`.
    pub fn napi_frags(mut self, on: bool) -> Self {
        self.napi_frags = on;
        self
    }
    /// Set `IFF_MULTI_QUEUE`.
    pub fn multi_queue(mut self, on: bool) -> Self {
        self.multi_queue = on;
        self
    }
    /// Open with `O_NONBLOCK`.
    pub fn nonblocking(mut self, on: bool) -> Self {
        self.nonblocking = on;
        self
    }

    /// The `ifr_flags` this config passes to `TUNSETIFF`.
    pub fn iff_flags(&self) -> u16 {
        let mut f = if self.tap { iff::TAP } else { iff::TUN };
        for (on, bit) in [
            (self.no_pi, iff::NO_PI),
            (self.vnet_hdr, iff::VNET_HDR),
            (self.napi, iff::NAPI),
            (self.napi_frags, iff::NAPI_FRAGS),
            (self.multi_queue, iff::MULTI_QUEUE),
        ] {
            if on {
                f |= bit;
            }
        }
        f
    }

    /// Open `/dev/net/tun` and `TUNSETIFF`. Refused in the process's main network
    /// namespace. With `multi_queue` and an existing name, this attaches one more queue.
    pub fn open(&self) -> Result<Tap, KernelError> {
        let label = self.name.as_deref().unwrap_or("<auto>");
        let op = format!("TUNSETIFF on {label}");
        ensure_private_netns(&op)?;
        let ctl = ctl_socket(&op)?;
        let mut oflags = OFlags::RDWR | OFlags::CLOEXEC;
        oflags.set(OFlags::NONBLOCK, self.nonblocking);
        let fd = rustix::fs::open("/dev/net/tun", oflags, Mode::empty())
            .map_err(crate::error::from_rustix)
            .op(|| "open /dev/net/tun".to_string())?;
        let name = match &self.name {
            Some(n) => ifname_array(&op, n)?,
            None => [0u8; 16],
        };
        let mut req = IfreqFlags::new(name, self.iff_flags() as libc::c_short);
        ioctl(fd.as_fd(), Request::TunSetIff(&mut req)).op(|| op.clone())?;
        let name = ifname_from_array(&req.name);
        let ifindex = ifindex_of(ctl.as_fd(), &name)?;
        Ok(Tap {
            fd,
            ctl,
            name,
            ifindex,
            flags: self.iff_flags(),
        })
    }
}

/// One queue (fd) of a tun/tap device. Closing the fd (Drop) removes a non-persistent
/// device once its last queue is gone.
///
/// Reads and writes return the raw errno so that expected kernel answers (`EINVAL` for a
/// buffer shorter than the PI, `EAGAIN` on an empty non-blocking queue, `EIO` when down)
/// stay distinguishable from failures.
#[derive(Debug)]
pub struct Tap {
    fd: OwnedFd,
    /// An AF_INET socket in the tap's namespace, for name-based ioctls.
    ctl: OwnedFd,
    name: String,
    ifindex: u32,
    flags: u16,
}

impl Tap {
    /// The device name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The ifindex (looked up when the device was created).
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The `IFF_*` flags it was created with.
    pub fn iff_flags(&self) -> u16 {
        self.flags
    }

    /// Whether `struct tun_pi` precedes each frame.
    pub fn has_pi(&self) -> bool {
        self.flags & iff::NO_PI == 0
    }

    /// Whether a virtio-net header precedes each frame.
    pub fn has_vnet_hdr(&self) -> bool {
        self.flags & iff::VNET_HDR != 0
    }

    fn ioctl(&self, what: &str, req: Request<'_>) -> Result<i32, KernelError> {
        ioctl(self.fd.as_fd(), req).op(|| format!("{what} on {}", self.name))
    }

    /// `TUNSETVNETHDRSZ` (10, 12, 20, 24, 4096 accepted here; below 10 is EINVAL).
    pub fn set_vnet_hdr_sz(&self, size: i32) -> Result<(), KernelError> {
        self.ioctl("TUNSETVNETHDRSZ", Request::TunSetVnetHdrSz(size))
            .map(drop)
    }

    /// `TUNGETVNETHDRSZ`.
    pub fn vnet_hdr_sz(&self) -> Result<i32, KernelError> {
        let mut v: libc::c_int = 0;
        self.ioctl("TUNGETVNETHDRSZ", Request::TunGetVnetHdrSz(&mut v))?;
        Ok(v)
    }

    /// `TUNSETOFFLOAD` with `TUN_F_*` bits (see [`tun_f`]).
    pub fn set_offload(&self, flags: u32) -> Result<(), KernelError> {
        self.ioctl(
            &format!("TUNSETOFFLOAD {flags:#x}"),
            Request::TunSetOffload(flags),
        )
        .map(drop)
    }

    /// `TUNSETVNETLE`: virtio header in little endian (legacy big-endian guests).
    pub fn set_vnet_le(&self, on: bool) -> Result<(), KernelError> {
        self.ioctl("TUNSETVNETLE", Request::TunSetVnetLe(on as libc::c_int))
            .map(drop)
    }

    /// `TUNSETVNETBE` (EINVAL unless the kernel has `CONFIG_TUN_VNET_CROSS_LE`).
    pub fn set_vnet_be(&self, on: bool) -> Result<(), KernelError> {
        self.ioctl("TUNSETVNETBE", Request::TunSetVnetBe(on as libc::c_int))
            .map(drop)
    }

    /// `TUNSETSNDBUF`. Note: once set, native XDP on this tap falls back to generic.
    pub fn set_sndbuf(&self, bytes: i32) -> Result<(), KernelError> {
        self.ioctl("TUNSETSNDBUF", Request::TunSetSndbuf(bytes))
            .map(drop)
    }

    /// `TUNSETQUEUE` with `IFF_ATTACH_QUEUE` or `IFF_DETACH_QUEUE` (multi-queue only).
    pub fn set_queue_attached(&self, attached: bool) -> Result<(), KernelError> {
        let flags = if attached {
            iff::ATTACH_QUEUE
        } else {
            iff::DETACH_QUEUE
        };
        let mut req = IfreqFlags::new([0; 16], flags as libc::c_short);
        self.ioctl(
            &format!("TUNSETQUEUE {flags:#x}"),
            Request::TunSetQueue(&mut req),
        )
        .map(drop)
    }

    /// `TUNSETSTEERINGEBPF` with socket filter program `prog_fd` (-1 detaches): the
    /// device's steering program (tun_set_ebpf takes its own reference).
    pub fn set_steering_ebpf(&self, prog_fd: RawFd) -> Result<(), KernelError> {
        self.ioctl("TUNSETSTEERINGEBPF", Request::TunSetSteeringEbpf(prog_fd))
            .map(drop)
    }

    /// `TUNSETFILTEREBPF`, as [`Tap::set_steering_ebpf`].
    pub fn set_filter_ebpf(&self, prog_fd: RawFd) -> Result<(), KernelError> {
        self.ioctl("TUNSETFILTEREBPF", Request::TunSetFilterEbpf(prog_fd))
            .map(drop)
    }

    /// `TUNGETFEATURES`: the `IFF_*` flags the driver supports (0x7173 here).
    pub fn features(&self) -> Result<u32, KernelError> {
        let mut v: libc::c_uint = 0;
        self.ioctl("TUNGETFEATURES", Request::TunGetFeatures(&mut v))?;
        Ok(v)
    }

    /// `TUNGETIFF`: the flags the kernel holds for this queue.
    pub fn get_iff(&self) -> Result<u16, KernelError> {
        let mut req = IfreqFlags::new([0; 16], 0);
        self.ioctl("TUNGETIFF", Request::TunGetIff(&mut req))?;
        Ok(req.flags as u16)
    }

    /// Bring the device up (`SIOCSIFFLAGS`, in the namespace the tap was created in).
    pub fn set_up(&self) -> Result<(), KernelError> {
        set_if_up(self.ctl.as_fd(), &self.name, true)
    }

    /// Bring the device down.
    pub fn set_down(&self) -> Result<(), KernelError> {
        set_if_up(self.ctl.as_fd(), &self.name, false)
    }

    /// Toggle `O_NONBLOCK` on the queue fd.
    pub fn set_nonblocking(&self, on: bool) -> Result<(), KernelError> {
        crate::sys::set_nonblocking(self.fd.as_fd(), on)
            .op(|| format!("fcntl O_NONBLOCK={on} on {}", self.name))
    }

    /// One `read(2)`: PI (if any), vnet header (if any), frame, truncated to `buf`.
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        rustix::io::read(&self.fd, buf).map_err(crate::error::from_rustix)
    }

    /// One `readv(2)` into several buffers.
    pub fn readv(&self, bufs: &mut [&mut [u8]]) -> Result<usize, Errno> {
        let mut iov: Vec<IoSliceMut<'_>> = bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        rustix::io::readv(&self.fd, &mut iov).map_err(crate::error::from_rustix)
    }

    /// One `write(2)`: the buffer must carry the PI and vnet header this queue expects.
    pub fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        rustix::io::write(&self.fd, buf).map_err(crate::error::from_rustix)
    }

    /// One `writev(2)`.
    pub fn writev(&self, bufs: &[&[u8]]) -> Result<usize, Errno> {
        let iov: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
        rustix::io::writev(&self.fd, &iov).map_err(crate::error::from_rustix)
    }

    /// Wait until the queue has a frame to read (or `timeout` passes: `Ok(false)`).
    pub fn wait_readable(&self, timeout: Duration) -> Result<bool, Errno> {
        poll_one(self.fd.as_fd(), libc::POLLIN, Some(timeout))
    }

    /// Wait up to `timeout` for a frame, then read it; `Ok(None)` if none arrived.
    pub fn read_timeout(&self, buf: &mut [u8], timeout: Duration) -> Result<Option<usize>, Errno> {
        if !self.wait_readable(timeout)? {
            return Ok(None);
        }
        self.read(buf).map(Some)
    }

    /// Read and discard everything queued now; returns how many frames.
    pub fn drain(&self) -> Result<usize, Errno> {
        let mut buf = vec![0u8; 1 << 17];
        let mut n = 0;
        while self.wait_readable(Duration::ZERO)? {
            self.read(&mut buf)?;
            n += 1;
        }
        Ok(n)
    }

    /// Another queue of the same multi-queue device.
    pub fn open_queue(&self, nonblocking: bool) -> Result<Tap, KernelError> {
        TapConfig {
            name: Some(self.name.clone()),
            tap: self.flags & iff::TAP != 0,
            no_pi: self.flags & iff::NO_PI != 0,
            vnet_hdr: self.flags & iff::VNET_HDR != 0,
            napi: self.flags & iff::NAPI != 0,
            napi_frags: self.flags & iff::NAPI_FRAGS != 0,
            multi_queue: self.flags & iff::MULTI_QUEUE != 0,
            nonblocking,
        }
        .open()
    }
}

impl AsFd for Tap {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Tap {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_tap_has_no_pi() {
        assert_eq!(TapConfig::default().iff_flags(), iff::TAP | iff::NO_PI);
    }
}
