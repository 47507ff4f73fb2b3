//! Ioctl arguments copied from and answers copied to the program: what
//! drivers/net/tun.c: __tun_chr_ioctl copies for each command (sim::tun::ioctl::IoctlArg
//! says which reads what), and the socket ioctls of net/core/dev_ioctl.c on a simulated
//! interface's name.

use sim::tun::ioctl::{cmd, BpfFd, SockFilter, IFNAMSIZ, SA_DATA_LEN};

use crate::devinet::{self, AF_INET};
use crate::supervisor::Reply;
use crate::sys::{self, read_mem, write_mem_iov};
use crate::{Errno, IoctlAnswer, IoctlArg, SimTun};

/// sizeof(struct ifreq) on 64-bit: what TUNGETIFF copies out (tun.c: ifreq_len).
const IFREQ_LEN: usize = 40;
/// include/uapi/linux/if.h.
const IFF_POINTOPOINT: u16 = 0x10;

/// Generic file ioctls do_vfs_ioctl (fs/ioctl.c) handles before the driver: FIONCLEX,
/// FIOCLEX, FIONBIO, FIOASYNC, FIOQSIZE. They continue into the kernel on the program's
/// socket (FIONBIO also updates the simulated file's O_NONBLOCK).
pub const FIONBIO: u32 = 0x5421;
const VFS_IOCTLS: [u32; 5] = [0x5450, 0x5451, FIONBIO, 0x5452, 0x5460];

pub fn is_vfs_ioctl(c: u32) -> bool {
    VFS_IOCTLS.contains(&c)
}

/// The socket ioctls answered for a simulated interface (include/uapi/linux/sockios.h).
pub const SIOCGIFFLAGS: u32 = 0x8913;
pub const SIOCSIFFLAGS: u32 = 0x8914;
pub const SIOCGIFMTU: u32 = 0x8921;
pub const SIOCSIFMTU: u32 = 0x8922;
pub const SIOCGIFINDEX: u32 = 0x8933;
/// On an AF_INET socket only (inet_ioctl -> devinet_ioctl): src/devinet.rs.
pub const SIOCGIFADDR: u32 = 0x8915;
pub const SIOCSIFADDR: u32 = 0x8916;
pub const SIOCGIFNETMASK: u32 = 0x891b;
pub const SIOCSIFNETMASK: u32 = 0x891c;
const INET_IOCTLS: [u32; 4] = [SIOCGIFADDR, SIOCSIFADDR, SIOCGIFNETMASK, SIOCSIFNETMASK];
/// And SIOCGIFHWADDR / SIOCSIFHWADDR, answered by the device model.
const SOCK_IOCTLS: [u32; 11] = [
    SIOCGIFADDR,
    SIOCSIFADDR,
    SIOCGIFNETMASK,
    SIOCSIFNETMASK,
    SIOCGIFFLAGS,
    SIOCSIFFLAGS,
    SIOCGIFMTU,
    SIOCSIFMTU,
    SIOCGIFINDEX,
    cmd::SIOCGIFHWADDR,
    cmd::SIOCSIFHWADDR,
];

pub fn is_sock_ioctl(c: u32) -> bool {
    SOCK_IOCTLS.contains(&c)
}

/// `c` is answered by devinet_ioctl, so only on an AF_INET socket: task `pid`'s `fd` is
/// one (SO_DOMAIN of a copy taken with pidfd_getfd), or `c` is not such an ioctl.
pub fn inet_ioctl_on_inet(pid: u32, fd: i32, c: u32) -> bool {
    !INET_IOCTLS.contains(&c)
        || sys::steal_fd(pid, fd).is_ok_and(|s| {
            rustix::net::sockopt::socket_domain(&s)
                .is_ok_and(|d| d == rustix::net::AddressFamily::INET)
        })
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// `len` bytes at `addr`, or None where the copy would fault.
fn copy_in(pid: u32, addr: u64, len: usize) -> Option<Vec<u8>> {
    read_mem(pid, addr, len).ok().filter(|b| b.len() == len)
}

/// A `struct sockaddr`: `sa_family` (host order) and `sa_data`.
fn sockaddr(family: u16, data: &[u8; SA_DATA_LEN]) -> [u8; 16] {
    let mut sa = [0u8; 16];
    sa[..2].copy_from_slice(&family.to_le_bytes());
    sa[2..].copy_from_slice(data);
    sa
}

/// The family and data of the 16 bytes of a `struct sockaddr`.
fn split_sockaddr(b: &[u8]) -> (u16, [u8; SA_DATA_LEN]) {
    let mut data = [0u8; SA_DATA_LEN];
    data.copy_from_slice(&b[2..16]);
    (le16(b, 0), data)
}

/// devinet_ioctl's answer to SIOCGIFADDR / SIOCGIFNETMASK: a zeroed struct sockaddr_in
/// with sin_family AF_INET and the address.
fn sockaddr_in(addr: [u8; 4]) -> [u8; 16] {
    let mut sin = [0u8; 16];
    sin[..2].copy_from_slice(&AF_INET.to_le_bytes());
    sin[4..8].copy_from_slice(&addr);
    sin
}

fn copy_out(pid: u32, addr: u64, data: &[u8]) -> bool {
    write_mem_iov(pid, &[(addr, data.len())], data).is_ok_and(|n| n == data.len())
}

/// What __tun_chr_ioctl copies in for `c`, read from the program.
pub fn tun_arg(pid: u32, c: u32, argp: u64) -> IoctlArg {
    let int = || copy_in(pid, argp, 4).map(|b| le32(&b, 0) as i32);
    let arg = match c {
        cmd::SIOCSIFHWADDR => copy_in(pid, argp + IFNAMSIZ as u64, 16).map(|b| {
            let (family, data) = split_sockaddr(&b);
            IoctlArg::Hwaddr { family, data }
        }),
        cmd::TUNSETIFF | cmd::TUNSETQUEUE | cmd::SIOCGIFHWADDR => copy_in(pid, argp, IFREQ_LEN)
            .map(|b| {
                let mut name = [0u8; IFNAMSIZ];
                name.copy_from_slice(&b[..IFNAMSIZ]);
                IoctlArg::Ifreq {
                    name,
                    flags: le16(&b, IFNAMSIZ),
                }
            }),
        cmd::TUNSETOFFLOAD
        | cmd::TUNSETPERSIST
        | cmd::TUNSETOWNER
        | cmd::TUNSETGROUP
        | cmd::TUNSETLINK
        | cmd::TUNSETDEBUG
        | cmd::TUNSETNOCSUM => Some(IoctlArg::Value(argp)),
        cmd::TUNSETSNDBUF
        | cmd::TUNSETVNETHDRSZ
        | cmd::TUNSETVNETLE
        | cmd::TUNSETVNETBE
        | cmd::TUNSETCARRIER
        | cmd::TUNSETIFINDEX => int().map(IoctlArg::Int),
        cmd::TUNSETTXFILTER => tx_filter(pid, argp),
        cmd::TUNATTACHFILTER => fprog(pid, argp),
        cmd::TUNSETSTEERINGEBPF | cmd::TUNSETFILTEREBPF => {
            int().map(|fd| IoctlArg::BpfFd(bpf_fd(pid, fd)))
        }
        _ => Some(IoctlArg::Out),
    };
    arg.unwrap_or(IoctlArg::Fault)
}

/// tun.c: update_filter: `struct tun_filter` then `count` ETH_ALEN addresses.
fn tx_filter(pid: u32, argp: u64) -> Option<IoctlArg> {
    let head = copy_in(pid, argp, 4)?;
    let count = usize::from(le16(&head, 2));
    let body = copy_in(pid, argp + 4, count * 6)?;
    let addrs = body
        .chunks_exact(6)
        .map(|c| {
            let mut a = [0u8; 6];
            a.copy_from_slice(c);
            a
        })
        .collect();
    Some(IoctlArg::TxFilter {
        flags: le16(&head, 0),
        addrs,
    })
}

/// TUNATTACHFILTER: `struct sock_fprog` (len at 0, filter pointer at 8), then the
/// instructions (sk_attach_filter's copy; fewer than `len` when they fault).
fn fprog(pid: u32, argp: u64) -> Option<IoctlArg> {
    let head = copy_in(pid, argp, 16)?;
    let len = le16(&head, 0);
    let filter = u64::from_le_bytes(head[8..16].try_into().ok()?);
    let raw = read_mem(pid, filter, usize::from(len) * 8).unwrap_or_default();
    let insns = raw
        .chunks_exact(8)
        .map(|i| SockFilter {
            code: le16(i, 0),
            jt: i[2],
            jf: i[3],
            k: le32(i, 4),
        })
        .collect();
    Some(IoctlArg::Fprog { len, filter, insns })
}

/// tun_set_ebpf's bpf_prog_get_type(fd, BPF_PROG_TYPE_SOCKET_FILTER), resolved in the
/// program's fd table: /proc/PID/fd/FD and its fdinfo's prog_type.
fn bpf_fd(pid: u32, fd: i32) -> BpfFd {
    if fd == -1 {
        return BpfFd::Detach;
    }
    let Ok(target) = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")) else {
        return BpfFd::NotOpen;
    };
    if target.as_os_str() != "anon_inode:bpf-prog" {
        return BpfFd::NotProg;
    }
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap_or_default();
    // BPF_PROG_TYPE_SOCKET_FILTER = 1 (include/uapi/linux/bpf.h).
    let socket_filter = info
        .lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["prog_type:", "1"]);
    BpfFd::Prog { socket_filter }
}

/// Copies `answer` back as __tun_chr_ioctl does, and the syscall's return.
pub fn tun_reply(pid: u32, c: u32, argp: u64, answer: Result<IoctlAnswer, Errno>) -> Reply {
    let ok = |copied: bool| {
        if copied {
            Reply::Val(0)
        } else {
            Reply::Err(Errno::EFAULT.code())
        }
    };
    match answer {
        Err(e) => Reply::Err(e.code()),
        Ok(IoctlAnswer::Done) => Reply::Val(0),
        Ok(IoctlAnswer::Returned(v)) => Reply::Val(i64::from(v)),
        Ok(IoctlAnswer::Int(v)) => ok(copy_out(pid, argp, &v.to_le_bytes())),
        Ok(IoctlAnswer::Ifreq { name, flags }) => {
            // TUNGETIFF copies a zeroed ifreq with name and flags; TUNSETIFF copies back
            // the caller's ifreq with the name filled in.
            let len = if c == cmd::TUNGETIFF {
                IFREQ_LEN
            } else {
                IFNAMSIZ + 2
            };
            let mut b = vec![0u8; len];
            let n = name.len().min(IFNAMSIZ - 1);
            b[..n].copy_from_slice(&name[..n]);
            b[IFNAMSIZ..IFNAMSIZ + 2].copy_from_slice(&flags.to_le_bytes());
            ok(copy_out(pid, argp, &b))
        }
        Ok(IoctlAnswer::Fprog { len, filter }) => ok(copy_out(pid, argp, &len.to_le_bytes())
            && copy_out(pid, argp + 8, &filter.to_le_bytes())),
        // SIOCGIFHWADDR copies the whole ifreq back; only ifr_hwaddr changed in it.
        Ok(IoctlAnswer::HwAddr { family, data }) => ok(copy_out(
            pid,
            argp + IFNAMSIZ as u64,
            &sockaddr(family, &data),
        )),
        // Namespace fds are not simulated yet (docs/exec.md).
        Ok(IoctlAnswer::NetnsFd) => Reply::Err(Errno::EOPNOTSUPP.code()),
    }
}

/// A socket ioctl naming a simulated interface: net/core/dev_ioctl.c: dev_ifsioc_locked
/// (SIOCGIFFLAGS: dev_get_flags, SIOCGIFMTU, SIOCGIFINDEX) and dev_ifsioc (SIOCSIFFLAGS:
/// dev_change_flags, SIOCSIFMTU: dev_set_mtu); on an AF_INET socket net/ipv4/devinet.c:
/// devinet_ioctl (SIOCGIFADDR, SIOCSIFADDR, SIOCGIFNETMASK, SIOCSIFNETMASK:
/// src/devinet.rs). None: not a simulated interface (the
/// syscall continues into the kernel).
/// `valid` says the notification is still the one whose memory was read (checked before
/// anything is changed).
pub fn sock_ioctl<T: SimTun>(
    tun: &mut T,
    pid: u32,
    c: u32,
    argp: u64,
    valid: impl Fn() -> bool,
) -> Option<Reply> {
    // ifr_name, then ifr_flags / ifr_mtu / ifr_ifindex, or a struct sockaddr(_in).
    let ifr = copy_in(pid, argp, IFNAMSIZ + 16)?;
    let end = ifr[..IFNAMSIZ]
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(IFNAMSIZ);
    let name = &ifr[..end];
    let link = tun.link(name)?;
    if !valid() {
        return Some(Reply::Answered);
    }
    let field = argp + IFNAMSIZ as u64;
    let done = |copied: bool| {
        Some(if copied {
            Reply::Val(0)
        } else {
            Reply::Err(Errno::EFAULT.code())
        })
    };
    let result = match c {
        SIOCGIFFLAGS => return done(copy_out(pid, field, &link.flags.to_le_bytes())),
        SIOCGIFMTU => return done(copy_out(pid, field, &(link.mtu as i32).to_le_bytes())),
        SIOCGIFINDEX => return done(copy_out(pid, field, &(link.ifindex as i32).to_le_bytes())),
        SIOCSIFFLAGS => tun.set_link(name, Some(le16(&ifr, IFNAMSIZ) & 1 != 0), None),
        SIOCSIFMTU => match le32(&ifr, IFNAMSIZ) as i32 {
            // dev_set_mtu_ext: new_mtu < 0 is EINVAL before the device's limits.
            m if m < 0 => Err(Errno::EINVAL),
            m => tun.set_link(name, None, Some(m as u32)),
        },
        // dev_ifsioc_locked: dev_get_mac_address; dev_ifsioc: dev_set_mac_address_user
        // (the device model's rules: sim's tun/ioctl/hwaddr.rs). A backend whose devices
        // are real lets the kernel answer.
        cmd::SIOCGIFHWADDR => {
            return match tun.hw_addr(name) {
                Some((family, data)) => done(copy_out(pid, field, &sockaddr(family, &data))),
                None => Some(Reply::Continue),
            }
        }
        cmd::SIOCSIFHWADDR => {
            let (family, data) = split_sockaddr(&ifr[IFNAMSIZ..IFNAMSIZ + 16]);
            match tun.set_hw_addr(name, family, &data) {
                Some(r) => r,
                None => return Some(Reply::Continue),
            }
        }
        SIOCGIFADDR | SIOCGIFNETMASK => {
            let Some(ifa) = tun.ipv4(name) else {
                return Some(Reply::Err(Errno::EADDRNOTAVAIL.code()));
            };
            let addr = if c == SIOCGIFADDR {
                ifa.local
            } else {
                ifa.mask()
            };
            return done(copy_out(pid, field, &sockaddr_in(addr)));
        }
        SIOCSIFADDR | SIOCSIFNETMASK => {
            let (family, addr) = (le16(&ifr, IFNAMSIZ), [ifr[20], ifr[21], ifr[22], ifr[23]]);
            let old = tun.ipv4(name);
            let pointopoint = link.flags & IFF_POINTOPOINT != 0;
            let ifa = if c == SIOCSIFADDR {
                devinet::set_addr(old, family, addr, pointopoint)
            } else {
                devinet::set_netmask(old, family, addr)
            };
            ifa.map(|ifa| tun.set_ipv4(name, ifa))
        }
        _ => return None,
    };
    Some(match result {
        Ok(()) => Reply::Val(0),
        Err(e) => Reply::Err(e.code()),
    })
}
