//! The notification loop: each intercepted syscall is answered from the [`SimTun`] when it
//! is on a simulated device's fd (or opens /dev/net/tun, or names a simulated interface),
//! and continues into the kernel otherwise.
//!
//! A simulated fd is one end of a SOCK_SEQPACKET socketpair installed in the program; it
//! is recognised by its inode (/proc/TID/fd/N -> `socket:[INODE]`), so dup, fork and
//! threads all find it. The supervisor keeps the other end: it queues one token there
//! while the device has a frame to read (poll/epoll/select see the device's readiness),
//! and its POLLHUP is the file's last close (tun_chr_close runs on the last fput).

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use rustix::event::{poll, PollFd, PollFlags};
use rustix::net::{
    recv, send, socketpair, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType,
};

use crate::ioctl::{self, is_sock_ioctl, is_vfs_ioctl, tun_arg, tun_reply, FIONBIO};
use crate::rtnl;
use crate::rtnl_answer::{Answers, RecvCall};
use crate::sys::{self, Notif};
use crate::{Errno, FileId, SimTun};

/// How a notification is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Run the syscall in the kernel as if not intercepted.
    Continue,
    /// Return this value.
    Val(i64),
    /// Fail with this errno.
    Err(i32),
    /// Already answered (SECCOMP_ADDFD_FLAG_SEND), or the task is gone.
    Answered,
    /// A blocking read with nothing to read: answered when a frame comes.
    Pending,
}

/// UIO_MAXIOV: readv/writev with more iovecs fail with EINVAL.
const UIO_MAXIOV: u64 = 1024;
/// PATH_MAX.
const PATH_MAX: usize = 4096;
/// The most bytes one write is read from the program (a tun frame is at most 64 KiB plus
/// its headers).
const MAX_WRITE: usize = 1 << 20;

/// One simulated `/dev/net/tun` file.
#[derive(Debug)]
struct Open {
    file: FileId,
    /// The supervisor's end of the socketpair.
    ours: OwnedFd,
    /// The inode of the program's end.
    inode: u64,
    nonblock: bool,
    /// A token is queued in the program's end (it polls readable).
    token: bool,
    /// A task and fd number that reach the program's end (to take the token back).
    holder: (u32, i32),
}

#[derive(Debug)]
struct PendingRead {
    notif: Notif,
    inode: u64,
    ranges: Vec<(u64, usize)>,
}

#[derive(Debug)]
pub struct Supervisor<T> {
    tun: T,
    listener: OwnedFd,
    files: Vec<Open>,
    pending: Vec<PendingRead>,
    /// rtnetlink answers about simulated devices waiting for the program's receives.
    answers: Answers,
}

impl<T: SimTun> Supervisor<T> {
    pub fn new(tun: T, listener: OwnedFd) -> Supervisor<T> {
        Supervisor {
            tun,
            listener,
            files: Vec::new(),
            pending: Vec::new(),
            answers: Answers::default(),
        }
    }

    /// Answers notifications until no task uses the filter any more (the listener's
    /// POLLHUP: kernel/seccomp.c: seccomp_notify_poll).
    pub fn serve(mut self) -> Result<T, String> {
        loop {
            let (listener, closed) = self.wait()?;
            for inode in closed {
                self.release(inode);
            }
            if listener.contains(PollFlags::IN) {
                match sys::notif_recv(self.listener.as_fd()) {
                    Ok(n) => self
                        .handle(n)
                        .map_err(|e| format!("answering a syscall: {e}"))?,
                    // The task died, or a signal: the next poll says what is left.
                    Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EINTR)) => {}
                    Err(e) => return Err(format!("SECCOMP_IOCTL_NOTIF_RECV: {e}")),
                }
            } else if listener.intersects(PollFlags::HUP | PollFlags::ERR) {
                // No task uses the filter: every file the program held is closed, though
                // the kernel may not have shown each socket's POLLHUP yet (a dying
                // task's last fputs race with the filter's release).
                while let Some(o) = self.files.first() {
                    let inode = o.inode;
                    self.release(inode);
                }
                return Ok(self.tun);
            }
            // A frame may have come on a real device (SimTun::wake_fd) meanwhile.
            self.sync_readiness();
            self.complete_pending()
                .map_err(|e| format!("answering a read: {e}"))?;
        }
    }

    /// poll over the listener and our socket ends: the listener's events and the inodes
    /// whose program end has been closed for good.
    fn wait(&mut self) -> Result<(PollFlags, Vec<u64>), String> {
        let mut fds = vec![PollFd::new(&self.listener, PollFlags::IN)];
        fds.extend(
            self.files
                .iter()
                .map(|o| PollFd::new(&o.ours, PollFlags::IN)),
        );
        // A real device's frames come on their own: watch the files not yet readable.
        let files = self.files.len();
        fds.extend(
            self.files
                .iter()
                .filter(|o| !o.token)
                .filter_map(|o| self.tun.wake_fd(o.file))
                .map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN)),
        );
        loop {
            match poll(&mut fds, None) {
                Ok(_) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(format!("poll: {e}")),
            }
        }
        let listener = fds[0].revents();
        let mut closed = Vec::new();
        for (o, fd) in self.files.iter().zip(&fds[1..=files]) {
            let ev = fd.revents();
            if ev.intersects(PollFlags::HUP | PollFlags::ERR) {
                closed.push(o.inode);
            } else if ev.contains(PollFlags::IN) {
                // The program sent on its end (send(2) is not intercepted): drop it.
                let mut sink = [0u8; 1];
                let _ = recv(&o.ours, &mut sink, RecvFlags::DONTWAIT);
            }
        }
        Ok((listener, closed))
    }

    /// The program's end is gone from every fd table: tun_chr_close.
    fn release(&mut self, inode: u64) {
        if let Some(i) = self.files.iter().position(|o| o.inode == inode) {
            let o = self.files.remove(i);
            self.tun.close(o.file);
        }
        self.pending.retain(|p| p.inode != inode);
    }

    fn handle(&mut self, n: Notif) -> io::Result<()> {
        let reply = self.dispatch(&n)?;
        self.sync_readiness();
        self.answer(n.id, reply)
    }

    fn answer(&self, id: u64, reply: Reply) -> io::Result<()> {
        let l = self.listener.as_fd();
        let sent = match reply {
            Reply::Continue => sys::notif_send(l, id, 0, 0, true),
            Reply::Val(v) => sys::notif_send(l, id, v, 0, false),
            Reply::Err(e) => sys::notif_send(l, id, 0, e, false),
            Reply::Answered | Reply::Pending => Ok(()),
        };
        match sent {
            // The task died (or a signal interrupted it) while we answered.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            r => r,
        }
    }

    fn dispatch(&mut self, n: &Notif) -> io::Result<Reply> {
        let a = n.args;
        Ok(match n.nr {
            libc::SYS_openat => self.open(n, a[0] as i32, a[1], a[2]),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_open => self.open(n, libc::AT_FDCWD, a[0], a[1]),
            // struct open_how: flags (u64) first.
            libc::SYS_openat2 => match sys::read_mem(n.pid, a[2], 8) {
                Ok(b) if b.len() == 8 => {
                    let flags = u64::from_le_bytes(b.try_into().unwrap_or_default());
                    self.open(n, a[0] as i32, a[1], flags)
                }
                _ => Reply::Continue,
            },
            libc::SYS_ioctl => self.ioctl(n, a[0] as i32, a[1] as u32, a[2]),
            libc::SYS_read => match self.ours(n, a[0] as i32) {
                Some(i) => self.read(n, i, vec![(a[1], a[2] as usize)]),
                None => self.answers.recv(&RecvCall {
                    pid: n.pid,
                    fd: a[0] as i32,
                    ranges: vec![(a[1], a[2] as usize)],
                    flags: 0,
                    name: None,
                    msghdr: None,
                }),
            },
            libc::SYS_recvfrom => self.answers.recv(&RecvCall {
                pid: n.pid,
                fd: a[0] as i32,
                ranges: vec![(a[1], a[2] as usize)],
                flags: a[3] as u32,
                name: Some((a[4], a[5])),
                msghdr: None,
            }),
            libc::SYS_recvmsg => match rtnl::msghdr(n.pid, a[1]) {
                Some((name, ranges)) if !self.answers.is_empty() => self.answers.recv(&RecvCall {
                    pid: n.pid,
                    fd: a[0] as i32,
                    ranges,
                    flags: a[2] as u32,
                    name: Some((name, a[1] + 8)),
                    msghdr: Some(a[1]),
                }),
                _ => Reply::Continue,
            },
            libc::SYS_write => match self.ours(n, a[0] as i32) {
                Some(i) => self.write(n, i, &[(a[1], a[2] as usize)]),
                None => self.rtnl(n, &[(a[1], a[2] as usize)], 0),
            },
            libc::SYS_sendto => self.rtnl(n, &[(a[1], a[2] as usize)], a[4]),
            libc::SYS_sendmsg => match rtnl::msghdr(n.pid, a[1]) {
                Some((dest, ranges)) => self.rtnl(n, &ranges, dest),
                None => Reply::Continue,
            },
            libc::SYS_readv | libc::SYS_writev => match self.ours(n, a[0] as i32) {
                Some(i) => match iovecs(n.pid, a[1], a[2]) {
                    Err(e) => Reply::Err(e.code()),
                    Ok(r) if n.nr == libc::SYS_readv => self.read(n, i, r),
                    Ok(r) => self.write(n, i, &r),
                },
                None => Reply::Continue,
            },
            libc::SYS_fcntl => {
                if a[1] == libc::F_SETFL as u64 {
                    if let Some(i) = self.ours(n, a[0] as i32) {
                        self.set_nonblock(i, a[2] & libc::O_NONBLOCK as u64 != 0);
                    }
                }
                Reply::Continue
            }
            _ => Reply::Continue,
        })
    }

    /// A send on a NETLINK_ROUTE socket naming a simulated device (src/rtnl.rs).
    fn rtnl(&mut self, n: &Notif, ranges: &[(u64, usize)], dest: u64) -> Reply {
        let l = self.listener.as_fd();
        let fd = n.args[0] as i32;
        rtnl::send_request(&mut self.tun, &mut self.answers, l, n, fd, ranges, dest)
    }

    /// The simulated file behind the task's fd `fd`, if it is one; it becomes the file's
    /// holder.
    fn ours(&mut self, n: &Notif, fd: i32) -> Option<usize> {
        if self.files.is_empty() || fd < 0 {
            return None;
        }
        let inode = socket_inode(n.pid, fd)?;
        let i = self.files.iter().position(|o| o.inode == inode)?;
        self.files[i].holder = (n.pid, fd);
        Some(i)
    }

    fn set_nonblock(&mut self, i: usize, nonblock: bool) {
        self.files[i].nonblock = nonblock;
        self.tun.set_nonblock(self.files[i].file, nonblock);
    }

    /// open/openat/openat2: a simulated file for /dev/net/tun (drivers/net/tun.c:
    /// tun_chr_open), every other path continues.
    fn open(&mut self, n: &Notif, dirfd: i32, path: u64, flags: u64) -> Reply {
        let Some(path) = read_path(n.pid, path) else {
            return Reply::Continue;
        };
        if !path.ends_with(b"tun")
            || resolve(n.pid, dirfd, &path).as_deref() != Some(b"/dev/net/tun".as_slice())
        {
            return Reply::Continue;
        }
        if !sys::notif_id_valid(self.listener.as_fd(), n.id) {
            return Reply::Answered;
        }
        let nonblock = flags & libc::O_NONBLOCK as u64 != 0;
        let cloexec = flags & libc::O_CLOEXEC as u64 != 0;
        match self.install(n, nonblock, cloexec) {
            Ok(()) => Reply::Answered,
            Err(e) => Reply::Err(e.raw_os_error().unwrap_or(libc::ENFILE)),
        }
    }

    fn install(&mut self, n: &Notif, nonblock: bool, cloexec: bool) -> io::Result<()> {
        let (ours, theirs) = socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            None,
        )?;
        if !nonblock {
            rustix::fs::fcntl_setfl(&theirs, rustix::fs::OFlags::empty())?;
        }
        let inode = rustix::fs::fstat(&theirs)?.st_ino;
        let file = self.tun.open(nonblock);
        match sys::notif_addfd_send(self.listener.as_fd(), n.id, theirs.as_fd(), cloexec) {
            Ok(fd) => {
                self.files.push(Open {
                    file,
                    ours,
                    inode,
                    nonblock,
                    token: false,
                    holder: (n.pid, fd),
                });
                Ok(())
            }
            Err(e) => {
                self.tun.close(file);
                match e.raw_os_error() {
                    // The task is gone: nothing to answer.
                    Some(libc::ENOENT) => Ok(()),
                    _ => Err(e),
                }
            }
        }
    }

    fn ioctl(&mut self, n: &Notif, fd: i32, c: u32, argp: u64) -> Reply {
        let Some(i) = self.ours(n, fd) else {
            if is_sock_ioctl(c)
                && socket_inode(n.pid, fd).is_some()
                && ioctl::inet_ioctl_on_inet(n.pid, fd, c)
            {
                let listener = self.listener.as_fd();
                let valid = || sys::notif_id_valid(listener, n.id);
                return ioctl::sock_ioctl(&mut self.tun, n.pid, c, argp, valid)
                    .unwrap_or(Reply::Continue);
            }
            return Reply::Continue;
        };
        if is_vfs_ioctl(c) {
            if c == FIONBIO {
                if let Ok(b) = sys::read_mem(n.pid, argp, 4) {
                    if b.len() == 4 {
                        self.set_nonblock(i, b != [0, 0, 0, 0]);
                    }
                }
            }
            return Reply::Continue;
        }
        let arg = tun_arg(n.pid, c, argp);
        if !sys::notif_id_valid(self.listener.as_fd(), n.id) {
            return Reply::Answered;
        }
        let answer = self.tun.ioctl(self.files[i].file, c, &arg);
        tun_reply(n.pid, c, argp, answer)
    }

    /// read/readv: tun_chr_read_iter with the buffers' total length.
    fn read(&mut self, n: &Notif, i: usize, ranges: Vec<(u64, usize)>) -> Reply {
        let o = &self.files[i];
        // tun_chr_read_iter: a file with no device (never attached, or its device deleted)
        // is EBADFD before anything blocks (would_block is false for it).
        if !o.nonblock && !self.tun.poll(o.file).readable && self.tun.would_block(o.file) {
            self.pending.push(PendingRead {
                notif: *n,
                inode: o.inode,
                ranges,
            });
            return Reply::Pending;
        }
        if !sys::notif_id_valid(self.listener.as_fd(), n.id) {
            return Reply::Answered;
        }
        let total = ranges.iter().map(|r| r.1).sum();
        match self.tun.read(o.file, total) {
            Err(e) => Reply::Err(e.code()),
            Ok(bytes) => match sys::write_mem_iov(n.pid, &ranges, &bytes) {
                Ok(k) if k == bytes.len() => Reply::Val(k as i64),
                _ => Reply::Err(Errno::EFAULT.code()),
            },
        }
    }

    /// write/writev: tun_chr_write_iter with the bytes the buffers hold.
    fn write(&mut self, n: &Notif, i: usize, ranges: &[(u64, usize)]) -> Reply {
        let total: usize = ranges.iter().map(|r| r.1).sum();
        if total > MAX_WRITE {
            return Reply::Err(Errno::EINVAL.code());
        }
        let data = match sys::read_mem_iov(n.pid, ranges) {
            Ok(d) if d.len() == total => d,
            _ => return Reply::Err(Errno::EFAULT.code()),
        };
        if !sys::notif_id_valid(self.listener.as_fd(), n.id) {
            return Reply::Answered;
        }
        match self.tun.write(self.files[i].file, &data) {
            Ok(k) => Reply::Val(k as i64),
            Err(e) => Reply::Err(e.code()),
        }
    }

    /// Answers the blocking reads whose file has a frame now; drops those whose task left.
    fn complete_pending(&mut self) -> io::Result<()> {
        let mut k = 0;
        while k < self.pending.len() {
            let p = &self.pending[k];
            let Some(i) = self.files.iter().position(|o| o.inode == p.inode) else {
                self.pending.remove(k);
                continue;
            };
            if !sys::notif_id_valid(self.listener.as_fd(), p.notif.id) {
                self.pending.remove(k);
                continue;
            }
            let ready = self.tun.poll(self.files[i].file);
            if !ready.readable && !ready.error {
                k += 1;
                continue;
            }
            let p = self.pending.remove(k);
            let reply = self.read(&p.notif, i, p.ranges);
            self.sync_readiness();
            self.answer(p.notif.id, reply)?;
        }
        Ok(())
    }

    /// One token in the program's end exactly while the device has a frame for it.
    fn sync_readiness(&mut self) {
        for o in &mut self.files {
            let want = self.tun.poll(o.file).readable;
            if want && !o.token {
                o.token = send(&o.ours, &[0], SendFlags::DONTWAIT).is_ok();
            } else if !want && o.token {
                // Take the token back through the program's own end.
                if let Ok(theirs) = sys::steal_fd(o.holder.0, o.holder.1) {
                    let mut b = [0u8; 1];
                    while recv(&theirs, &mut b, RecvFlags::DONTWAIT).is_ok_and(|r| r.0 > 0) {}
                    o.token = false;
                }
            }
        }
    }
}

/// The iovec array of readv/writev (struct iovec: base, len).
pub fn iovecs(pid: u32, addr: u64, count: u64) -> Result<Vec<(u64, usize)>, Errno> {
    if count > UIO_MAXIOV {
        return Err(Errno::EINVAL);
    }
    let raw = sys::read_mem(pid, addr, count as usize * 16).map_err(|_| Errno::EFAULT)?;
    if raw.len() != count as usize * 16 {
        return Err(Errno::EFAULT);
    }
    Ok(raw
        .chunks_exact(16)
        .map(|c| {
            let base = u64::from_le_bytes(c[..8].try_into().unwrap_or_default());
            let len = u64::from_le_bytes(c[8..].try_into().unwrap_or_default());
            (base, len as usize)
        })
        .collect())
}

/// The inode of the socket task `pid` has as `fd`: /proc/PID/fd/FD reads `socket:[N]`.
pub fn socket_inode(pid: u32, fd: i32) -> Option<u64> {
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 64];
    let path = format!("/proc/{pid}/fd/{fd}");
    let (link, _) = rustix::fs::readlinkat_raw(rustix::fs::CWD, path.as_str(), &mut buf).ok()?;
    let s = std::str::from_utf8(link).ok()?;
    s.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// The NUL-terminated path at `addr`, read a page at a time (the string may end just
/// before unmapped memory).
fn read_path(pid: u32, addr: u64) -> Option<Vec<u8>> {
    let mut path = Vec::new();
    let mut at = addr;
    while path.len() < PATH_MAX {
        let chunk = 4096 - (at % 4096) as usize;
        let b = sys::read_mem(pid, at, chunk).ok()?;
        if b.is_empty() {
            return None;
        }
        if let Some(end) = b.iter().position(|&c| c == 0) {
            path.extend_from_slice(&b[..end]);
            return Some(path);
        }
        path.extend_from_slice(&b);
        at += b.len() as u64;
    }
    None
}

/// `path` made absolute against `dirfd` (or the cwd) of task `pid` and normalised
/// lexically (`.`, `..`, repeated slashes; symlinks are not followed).
fn resolve(pid: u32, dirfd: i32, path: &[u8]) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let mut full = if path.starts_with(b"/") {
        Vec::new()
    } else {
        let base = if dirfd == libc::AT_FDCWD {
            format!("/proc/{pid}/cwd")
        } else {
            format!("/proc/{pid}/fd/{dirfd}")
        };
        let mut b = std::fs::read_link(base)
            .ok()?
            .as_os_str()
            .as_bytes()
            .to_vec();
        b.push(b'/');
        b
    };
    full.extend_from_slice(path);
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in full.split(|&c| c == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut out = Vec::new();
    for p in parts {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    Some(out)
}
