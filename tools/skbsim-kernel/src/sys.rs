//! Small wrappers shared by the other modules: errno conversion, `struct ifreq`, the
//! namespace guard, `poll`. System calls go through `rustix` where it has them.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags};
use rustix::fs::OFlags;
use rustix::net::{AddressFamily, SocketFlags, SocketType};

use crate::error::{from_rustix, Cause, Errno, KernelError, OsErrno};
use crate::ioctl::{ioctl, Request};

/// `IFNAMSIZ`: interface names are at most 15 bytes plus the NUL.
pub(crate) const IFNAMSIZ: usize = 16;

/// `-1` → `Err(errno)`, anything else → `Ok`.
pub(crate) fn cvt(ret: libc::c_int) -> Result<libc::c_int, Errno> {
    if ret < 0 {
        Err(Errno::last())
    } else {
        Ok(ret)
    }
}

/// `-1` → `Err(errno)`, anything else → `Ok(len)`.
pub(crate) fn cvt_len(ret: libc::ssize_t) -> Result<usize, Errno> {
    if ret < 0 {
        Err(Errno::last())
    } else {
        Ok(ret as usize)
    }
}

/// Wrap a freshly returned descriptor.
pub(crate) fn owned_fd(fd: libc::c_int) -> Result<OwnedFd, Errno> {
    let fd = cvt(fd)?;
    // SAFETY: `fd` was just returned by a successful syscall and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Interface name as the kernel's fixed `char[IFNAMSIZ]`.
pub(crate) fn ifname_array(op: &str, name: &str) -> Result<[u8; IFNAMSIZ], KernelError> {
    let bytes = name.as_bytes();
    if bytes.len() >= IFNAMSIZ || bytes.contains(&0) {
        return Err(KernelError::new(
            op,
            Cause::Errno {
                errno: Errno::EINVAL,
                extack: Some(format!(
                    "interface name {name:?} must be 1-15 bytes without NUL"
                )),
            },
        ));
    }
    let mut out = [0u8; IFNAMSIZ];
    out[..bytes.len()].copy_from_slice(bytes);
    Ok(out)
}

/// Name from a NUL-padded `char[IFNAMSIZ]`.
pub(crate) fn ifname_from_array(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

/// `struct ifreq` with the `ifr_flags` member (TUNSETIFF, SIOCGIFFLAGS).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct IfreqFlags {
    pub name: [u8; IFNAMSIZ],
    pub flags: libc::c_short,
    _pad: [u8; 22],
}

impl IfreqFlags {
    pub(crate) fn new(name: [u8; IFNAMSIZ], flags: libc::c_short) -> Self {
        IfreqFlags {
            name,
            flags,
            _pad: [0; 22],
        }
    }
}

/// `struct ifreq` with the `ifr_data` member (SIOCETHTOOL).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct IfreqPtr {
    pub name: [u8; IFNAMSIZ],
    pub data: *mut libc::c_void,
    _pad: [u8; 16],
}

impl IfreqPtr {
    pub(crate) fn new(name: [u8; IFNAMSIZ], data: *mut libc::c_void) -> Self {
        IfreqPtr {
            name,
            data,
            _pad: [0; 16],
        }
    }
}

const _: () = assert!(std::mem::size_of::<IfreqFlags>() == 40);
const _: () = assert!(std::mem::size_of::<IfreqPtr>() == 40);

/// A datagram socket used only as an ioctl handle. Socket ioctls act in the network
/// namespace the socket was created in, so keeping one per object pins the namespace.
pub(crate) fn ctl_socket(op: &str) -> Result<OwnedFd, KernelError> {
    socket(AddressFamily::INET, SocketType::DGRAM)
        .map_err(|e| KernelError::sys(format!("{op}: socket(AF_INET)"), e))
}

/// `socket(family, type | SOCK_CLOEXEC, 0)`.
pub(crate) fn socket(family: AddressFamily, ty: SocketType) -> Result<OwnedFd, Errno> {
    rustix::net::socket_with(family, ty, SocketFlags::CLOEXEC, None).map_err(from_rustix)
}

/// `SIOCGIFINDEX`.
pub(crate) fn ifindex_of(sock: BorrowedFd<'_>, name: &str) -> Result<u32, KernelError> {
    let op = format!("SIOCGIFINDEX on {name}");
    ifname_array(&op, name)?;
    rustix::net::netdevice::name_to_index(sock, name)
        .map_err(|e| KernelError::sys(op, from_rustix(e)))
}

/// `SIOCGIFFLAGS` then `SIOCSIFFLAGS` with `IFF_UP` set or cleared.
pub(crate) fn set_if_up(sock: BorrowedFd<'_>, name: &str, up: bool) -> Result<(), KernelError> {
    let op = format!("SIOCSIFFLAGS {} on {name}", if up { "up" } else { "down" });
    let mut req = IfreqFlags::new(ifname_array(&op, name)?, 0);
    ioctl(sock, Request::GetIfFlags(&mut req))
        .map_err(|e| KernelError::sys(format!("SIOCGIFFLAGS on {name}"), e))?;
    let up_flag = libc::IFF_UP as libc::c_short;
    if up {
        req.flags |= up_flag;
    } else {
        req.flags &= !up_flag;
    }
    ioctl(sock, Request::SetIfFlags(&mut req)).map_err(|e| KernelError::sys(op, e))?;
    Ok(())
}

/// Inode number of a namespace file such as `/proc/thread-self/ns/net`.
pub(crate) fn ns_inode(path: &str) -> Result<u64, KernelError> {
    let st = rustix::fs::stat(path)
        .map_err(|e| KernelError::sys(format!("stat {path}"), from_rustix(e)))?;
    Ok(st.st_ino)
}

/// Inode of the calling thread's network namespace.
pub fn current_netns_inode() -> Result<u64, KernelError> {
    ns_inode("/proc/thread-self/ns/net")
}

/// Inode of the network namespace of the process's main thread (`/proc/self` is the thread
/// group leader). The crate treats that namespace as the host's.
pub fn process_netns_inode() -> Result<u64, KernelError> {
    ns_inode("/proc/self/ns/net")
}

/// Whether the calling thread is in a network namespace other than the main thread's.
pub fn in_private_netns() -> bool {
    matches!(
        (current_netns_inode(), process_netns_inode()),
        (Ok(a), Ok(b)) if a != b
    )
}

/// The safety belt: refuse to create or configure anything unless the calling thread has
/// left the main thread's network namespace (see [`crate::Netns`]).
pub(crate) fn ensure_private_netns(op: &str) -> Result<(), KernelError> {
    let here = current_netns_inode()?;
    let process = process_netns_inode()?;
    if here == process {
        return Err(KernelError::new(
            op,
            Cause::Refused(format!(
                "the calling thread shares the process's network namespace (net:[{here}]); \
                 run inside Netns::run"
            )),
        ));
    }
    Ok(())
}

/// `poll(2)` one descriptor. `None` waits forever. Returns whether an event in `events` (or
/// an error condition) is pending. Retries on EINTR.
pub(crate) fn poll_one(
    fd: BorrowedFd<'_>,
    events: libc::c_short,
    timeout: Option<Duration>,
) -> Result<bool, Errno> {
    // Whole milliseconds, as poll(2) took them before (a sub-millisecond rest is dropped).
    let timeout = timeout.map(|d| {
        let ms = d.as_millis().min(libc::c_int::MAX as u128) as u64;
        rustix::time::Timespec {
            tv_sec: (ms / 1000) as i64,
            tv_nsec: ((ms % 1000) * 1_000_000) as i64,
        }
    });
    let events = PollFlags::from_bits_retain(events as u16);
    loop {
        let mut pfd = [PollFd::new(&fd, events)];
        match rustix::event::poll(&mut pfd, timeout.as_ref()) {
            Ok(0) => return Ok(false),
            Ok(_) => return Ok(!pfd[0].revents().is_empty()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(from_rustix(e)),
        }
    }
}

/// Set or clear `O_NONBLOCK`.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> Result<(), Errno> {
    let mut flags = rustix::fs::fcntl_getfl(fd).map_err(from_rustix)?;
    flags.set(OFlags::NONBLOCK, on);
    rustix::fs::fcntl_setfl(fd, flags).map_err(from_rustix)?;
    Ok(())
}

/// `setsockopt` with an int value.
pub(crate) fn setsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> Result<(), Errno> {
    // SAFETY: the option value is a local int whose size is passed alongside it.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    cvt(ret).map(|_| ())
}
