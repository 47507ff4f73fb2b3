//! Every unsafe call of the supervisor: installing the seccomp filter, the listener's
//! ioctls (include/uapi/linux/seccomp.h; kernel/seccomp.c: seccomp_notify_ioctl), the
//! program's memory (process_vm_readv/writev: mm/process_vm_access.c) and pidfd_getfd.
//! rustix has none of these calls; libc has their numbers and structs.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// One notification: SECCOMP_IOCTL_NOTIF_RECV's `struct seccomp_notif`.
#[derive(Debug, Clone, Copy)]
pub struct Notif {
    pub id: u64,
    /// The calling thread's id, in the supervisor's pid namespace.
    pub pid: u32,
    pub nr: i64,
    pub args: [u64; 6],
}

/// Whether the netlink socket `sock` asked for extended acks (getsockopt SOL_NETLINK
/// NETLINK_EXT_ACK: net/netlink/af_netlink.c: netlink_getsockopt); rustix has no netlink
/// socket options.
pub fn netlink_ext_ack(sock: BorrowedFd<'_>) -> bool {
    const SOL_NETLINK: libc::c_int = 270;
    const NETLINK_EXT_ACK: libc::c_int = 11;
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `v` and the length into `len`,
    // both alive for the call.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            SOL_NETLINK,
            NETLINK_EXT_ACK,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    r == 0 && v != 0
}

/// `prctl(PR_SET_NO_NEW_PRIVS, 1)` then `seccomp(SECCOMP_SET_MODE_FILTER,
/// SECCOMP_FILTER_FLAG_NEW_LISTENER, prog)`: the listener fd. Async-signal-safe (no
/// allocation): it runs between fork and exec.
pub fn install_filter(prog: &[libc::sock_filter]) -> io::Result<OwnedFd> {
    rustix::thread::set_no_new_privs(true)?;
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: seccomp(2) reads `fprog` and the `len` instructions it points at, both alive
    // for the call; it returns a new fd or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &fprog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: seccomp returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// SECCOMP_IOCTL_NOTIF_RECV. ENOENT: the task died before it was read.
pub fn notif_recv(listener: BorrowedFd<'_>) -> io::Result<Notif> {
    // SAFETY: seccomp_notif is plain data; the kernel requires it zeroed.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one seccomp_notif into `n`, which outlives the call.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            &mut n as *mut libc::seccomp_notif,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Notif {
        id: n.id,
        pid: n.pid,
        nr: i64::from(n.data.nr),
        args: n.data.args,
    })
}

/// SECCOMP_IOCTL_NOTIF_SEND: the syscall returns `val`, or fails with `errno` (> 0), or
/// (`cont`) runs in the kernel as if never intercepted.
pub fn notif_send(
    listener: BorrowedFd<'_>,
    id: u64,
    val: i64,
    errno: i32,
    cont: bool,
) -> io::Result<()> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val,
        error: -errno,
        flags: if cont {
            libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32
        } else {
            0
        },
    };
    // SAFETY: the ioctl reads one seccomp_notif_resp from `resp`, alive for the call.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// SECCOMP_IOCTL_NOTIF_ID_VALID: the task is still blocked in notification `id` (so the
/// memory just read was the memory of the syscall being answered).
pub fn notif_id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the ioctl reads one u64 from `id`, alive for the call.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
            &mut id as *mut u64,
        )
    };
    r == 0
}

/// SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND: installs a copy of `src` in the
/// task and answers notification `id` with the new fd number, atomically.
pub fn notif_addfd_send(
    listener: BorrowedFd<'_>,
    id: u64,
    src: BorrowedFd<'_>,
    cloexec: bool,
) -> io::Result<i32> {
    let mut addfd = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SEND as u32,
        srcfd: src.as_raw_fd() as u32,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: the ioctl reads one seccomp_notif_addfd from `addfd`, alive for the call.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD as _,
            &mut addfd as *mut libc::seccomp_notif_addfd,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

/// process_vm_readv of `len` bytes at `addr` in task `pid`; fewer bytes where the range
/// runs into unmapped memory.
pub fn read_mem(pid: u32, addr: u64, len: usize) -> io::Result<Vec<u8>> {
    read_mem_iov(pid, &[(addr, len)])
}

/// The other process's ranges as `struct iovec`s (addresses the kernel checks, never
/// dereferenced here).
fn remote_iovecs(ranges: &[(u64, usize)]) -> Vec<libc::iovec> {
    ranges
        .iter()
        .map(|&(a, l)| libc::iovec {
            iov_base: a as usize as *mut libc::c_void,
            iov_len: l,
        })
        .collect()
}

/// process_vm_readv of several ranges, concatenated (writev's iovecs).
pub fn read_mem_iov(pid: u32, ranges: &[(u64, usize)]) -> io::Result<Vec<u8>> {
    let total: usize = ranges.iter().map(|r| r.1).sum();
    let mut buf = vec![0u8; total];
    if total == 0 {
        return Ok(buf);
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: total,
    };
    let remote = remote_iovecs(ranges);
    // SAFETY: `local` covers `buf` (total bytes, alive and exclusively borrowed); the
    // remote iovecs are addresses in the other process, which the kernel checks.
    let n = unsafe {
        libc::process_vm_readv(
            pid as libc::pid_t,
            &local,
            1,
            remote.as_ptr(),
            remote.len() as _,
            0,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// process_vm_writev of `data` scattered over `ranges` in task `pid`: bytes written.
pub fn write_mem_iov(pid: u32, ranges: &[(u64, usize)], data: &[u8]) -> io::Result<usize> {
    if data.is_empty() {
        return Ok(0);
    }
    let local = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    let remote = remote_iovecs(ranges);
    // SAFETY: `local` covers `data` (only read by process_vm_writev); the remote iovecs
    // are addresses in the other process, which the kernel checks.
    let n = unsafe {
        libc::process_vm_writev(
            pid as libc::pid_t,
            &local,
            1,
            remote.as_ptr(),
            remote.len() as _,
            0,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// A copy of task `tid`'s fd `fd` (pidfd_open + pidfd_getfd, kernel/pid.c). A thread that
/// is not its group's leader needs PIDFD_THREAD (6.9+): without it pidfd_open refuses
/// such a tid with EINVAL, and with ENOENT since pidfs (kernel/fork.c: pidfd_prepare,
/// "isn't used as a thread-group leader": 6.18 here). Both are retried with it.
pub fn steal_fd(tid: u32, fd: i32) -> io::Result<OwnedFd> {
    let pidfd = pidfd_open(tid, 0).or_else(|e| match e.raw_os_error() {
        Some(libc::EINVAL | libc::ENOENT) => pidfd_open(tid, libc::O_EXCL as u32),
        _ => Err(e),
    })?;
    // SAFETY: pidfd_getfd takes a pidfd we own, a number and flags 0; returns a new fd.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pidfd_getfd returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
}

fn pidfd_open(pid: u32, flags: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; returns a new fd.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, flags) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pidfd_open returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
}

/// Makes `cmd`'s child, between fork and exec, install `prog` with a listener and send the
/// listener over `sock` (SCM_RIGHTS), then exec as usual. An error there (seccomp
/// unavailable) is the one Command::spawn returns.
pub fn on_exec_install(
    cmd: &mut std::process::Command,
    prog: Vec<libc::sock_filter>,
    sock: OwnedFd,
) {
    use std::os::unix::process::CommandExt;
    let child = move || -> io::Result<()> {
        let listener = install_filter(&prog)?;
        send_fd(&sock, listener.as_raw_fd())
    };
    // SAFETY: the closure runs in the forked child before exec and only makes syscalls
    // (prctl, seccomp, sendmmsg, close) on data allocated before the fork: no allocation,
    // no lock, async-signal-safe.
    unsafe {
        cmd.pre_exec(child);
    }
}

/// Sends `fd` over `sock` with SCM_RIGHTS through sendmmsg: the filter is installed by
/// then and notifies sendmsg/sendto (src/rtnl.rs), which nobody would answer yet;
/// sendmmsg is not notified. No allocation (it runs between fork and exec).
fn send_fd(sock: &OwnedFd, fd: RawFd) -> io::Result<()> {
    // Room for one cmsghdr with one int: CMSG_SPACE(4) is 24 on 64-bit Linux.
    let mut control = [0u64; 3];
    let mut byte = *b"L";
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: msghdr and mmsghdr are plain C structs for which all-zero is valid.
    let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
    m.msg_hdr.msg_iov = &mut iov;
    m.msg_hdr.msg_iovlen = 1;
    m.msg_hdr.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    m.msg_hdr.msg_controllen = unsafe { libc::CMSG_SPACE(4) } as _;
    // SAFETY: msg_control points at `control`, which is CMSG_SPACE(4) bytes and aligned
    // for cmsghdr; CMSG_FIRSTHDR/CMSG_DATA stay inside it.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(4) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
    }
    // SAFETY: one mmsghdr whose pointers (iov, control) outlive the call.
    let r = unsafe { libc::sendmmsg(sock.as_raw_fd(), &mut m, 1, 0) };
    if r != 1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
