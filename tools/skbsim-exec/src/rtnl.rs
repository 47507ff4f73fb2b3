//! rtnetlink requests on NETLINK_ROUTE sockets that name a simulated device: RTM_DELLINK,
//! RTM_NEWLINK / RTM_SETLINK changing IFF_UP or the MTU (net/core/rtnetlink.c:
//! rtnl_dellink, rtnl_setlink, rtnl_newlink -> do_setlink), and RTM_NEWADDR giving it an
//! IPv4 address (net/ipv4/devinet.c: inet_rtm_newaddr). The kernel's tun selftest deletes
//! its device this way; `ip link set DEV up|mtu N`, `ip addr add` and VPNs use the others.
//!
//! Only a buffer holding exactly one such message is answered here; everything else (other
//! message types, batches, requests naming a real device, attributes not modelled)
//! continues into the kernel.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::net::AddressFamily;

use crate::devinet::AF_INET;
use crate::rtnl_answer::{self, Answers};
use crate::rtnl_get;
use crate::supervisor::{socket_inode, Reply};
use crate::sys::{self, Notif};
use crate::{Errno, Ifa, SimTun, SA_DATA_LEN};

/// The most bytes of one send read from the program (an rtnetlink link request is a few
/// hundred).
const MAX_REQUEST: usize = 1 << 16;

/// include/uapi/linux/rtnetlink.h.
const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_SETLINK: u16 = 19;
const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
/// include/uapi/linux/netlink.h.
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_REPLACE: u16 = 0x100;
const NLM_F_EXCL: u16 = 0x200;
const NLMSG_HDRLEN: usize = 16;
/// sizeof(struct ifinfomsg).
const IFINFOMSG_LEN: usize = 16;
/// include/uapi/linux/if_link.h.
const IFLA_ADDRESS: u16 = 1;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFF_UP: u32 = 0x1;
/// sizeof(struct ifaddrmsg).
const IFADDRMSG_LEN: usize = 8;
/// include/uapi/linux/if_addr.h.
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_LABEL: u16 = 3;
const IFA_BROADCAST: u16 = 4;

/// What a request asks of the simulated device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOp {
    /// RTM_DELLINK.
    Delete,
    /// RTM_NEWLINK (on an existing device) / RTM_SETLINK.
    /// `addr`: IFLA_ADDRESS, the bytes given.
    Set {
        up: Option<bool>,
        mtu: Option<u32>,
        addr: Option<Vec<u8>>,
    },
    /// RTM_NEWLINK with NLM_F_EXCL on an existing device: rtnl_newlink's EEXIST.
    Exists,
    /// RTM_NEWADDR, AF_INET: ifa_local and ifa_prefixlen, and the request's NLM_F_EXCL /
    /// NLM_F_REPLACE.
    NewAddr { ifa: Ifa, excl: bool, replace: bool },
    /// RTM_DELADDR, AF_INET: what inet_rtm_deladdr matches the address against (IFA_LOCAL,
    /// IFA_LABEL, IFA_ADDRESS under ifa_prefixlen), each only when given.
    DelAddr {
        local: Option<[u8; 4]>,
        address: Option<[u8; 4]>,
        prefix: u8,
        label: Option<Vec<u8>>,
    },
}

/// One request naming a simulated device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub seq: u32,
    /// NLM_F_ACK: the kernel answers success with an ack (netlink_rcv_skb).
    pub ack: bool,
    pub dev: Vec<u8>,
    pub op: LinkOp,
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The request in `buf` (what one sendto/sendmsg carries), when it is exactly one
/// RTM_NEWLINK / RTM_SETLINK / RTM_DELLINK that names a device of `tun`: by a positive
/// ifi_index, else by IFLA_IFNAME (rtnl_dellink / rtnl_setlink / rtnl_newlink look it
/// up in that order).
pub fn parse<T: SimTun>(tun: &T, buf: &[u8]) -> Option<Request> {
    if buf.len() < NLMSG_HDRLEN + IFADDRMSG_LEN {
        return None;
    }
    let len = le32(buf, 0) as usize;
    let kind = le16(buf, 4);
    let flags = le16(buf, 6);
    if kind == RTM_NEWADDR && flags & NLM_F_REQUEST != 0 && len <= buf.len() && buf.len() - len < 4
    {
        return parse_newaddr(tun, &buf[..len]);
    }
    if kind == RTM_DELADDR && flags & NLM_F_REQUEST != 0 && len <= buf.len() && buf.len() - len < 4
    {
        return parse_deladdr(tun, &buf[..len]);
    }
    if buf.len() < NLMSG_HDRLEN + IFINFOMSG_LEN {
        return None;
    }
    // One message: its length is the buffer's, up to NLMSG_ALIGN padding.
    if len < NLMSG_HDRLEN + IFINFOMSG_LEN || len > buf.len() || buf.len() - len >= 4 {
        return None;
    }
    if flags & NLM_F_REQUEST == 0 || !matches!(kind, RTM_NEWLINK | RTM_SETLINK | RTM_DELLINK) {
        return None;
    }
    let ifm = &buf[NLMSG_HDRLEN..];
    let index = le32(ifm, 4) as i32;
    let (ifi_flags, ifi_change) = (le32(ifm, 8), le32(ifm, 12));
    let mut name = None;
    let mut mtu = None;
    let mut addr = None;
    let mut at = NLMSG_HDRLEN + IFINFOMSG_LEN;
    while at + 4 <= len {
        let alen = le16(buf, at) as usize;
        if alen < 4 || at + alen > len {
            return None;
        }
        let data = &buf[at + 4..at + alen];
        match le16(buf, at + 2) & 0x3fff {
            IFLA_IFNAME => name = Some(data.split(|&c| c == 0).next().unwrap_or(data).to_vec()),
            IFLA_MTU if data.len() >= 4 => mtu = Some(le32(data, 0)),
            IFLA_ADDRESS => addr = Some(data.to_vec()),
            // An attribute not modelled: the kernel answers it.
            _ => return None,
        }
        at += (alen + 3) & !3;
    }
    let dev = if index > 0 {
        let dev = tun.link_name(index as u32)?;
        // A name that differs from the device's is a rename (do_setlink): not modelled.
        if name.as_ref().is_some_and(|n| *n != dev) {
            return None;
        }
        dev
    } else {
        let n = name?;
        tun.link(&n)?;
        n
    };
    let op = match kind {
        RTM_DELLINK => LinkOp::Delete,
        RTM_NEWLINK if flags & NLM_F_EXCL != 0 => LinkOp::Exists,
        _ => LinkOp::Set {
            up: up_flag(ifi_flags, ifi_change),
            mtu,
            addr,
        },
    };
    Some(Request {
        seq: le32(buf, 8),
        ack: flags & NLM_F_ACK != 0,
        dev,
        op,
    })
}

/// An AF_INET ifaddrmsg request on a simulated device (ifa_index), as ifa_ipv4_policy
/// reads it: the device, ifa_prefixlen, and IFA_LOCAL, IFA_ADDRESS and IFA_LABEL where
/// given (IFA_BROADCAST ignored). None for another family, an unknown device, a malformed
/// attribute or one not modelled: the kernel answers those.
struct IfaddrReq {
    dev: Vec<u8>,
    prefix: u8,
    local: Option<[u8; 4]>,
    address: Option<[u8; 4]>,
    label: Option<Vec<u8>>,
}

fn parse_ifaddr<T: SimTun>(tun: &T, msg: &[u8]) -> Option<IfaddrReq> {
    let len = msg.len();
    if len < NLMSG_HDRLEN + IFADDRMSG_LEN {
        return None;
    }
    let ifa = &msg[NLMSG_HDRLEN..];
    let (family, prefix, index) = (ifa[0], ifa[1], le32(ifa, 4));
    if u16::from(family) != AF_INET {
        return None;
    }
    let mut r = IfaddrReq {
        dev: tun.link_name(index)?,
        prefix,
        local: None,
        address: None,
        label: None,
    };
    let mut at = NLMSG_HDRLEN + IFADDRMSG_LEN;
    while at + 4 <= len {
        let alen = le16(msg, at) as usize;
        if alen < 4 || at + alen > len {
            return None;
        }
        let data = &msg[at + 4..at + alen];
        let addr = || <[u8; 4]>::try_from(data).ok();
        match le16(msg, at + 2) & 0x3fff {
            IFA_LOCAL => r.local = Some(addr()?),
            IFA_ADDRESS => r.address = Some(addr()?),
            IFA_LABEL => r.label = Some(data.split(|&c| c == 0).next().unwrap_or(data).to_vec()),
            IFA_BROADCAST => {}
            _ => return None,
        }
        at += (alen + 3) & !3;
    }
    Some(r)
}

/// One RTM_NEWADDR (`msg`, its own length) for an IPv4 address on a simulated device, as
/// rtm_to_ifaddr reads it: IFA_LOCAL is the address, ifa_prefixlen its prefix. Left to the
/// kernel (None): what [`parse_ifaddr`] leaves, a prefix over 32 or no IFA_LOCAL
/// (rtm_to_ifaddr's EINVAL comes before the device lookup, so the kernel's answer is the
/// right one), a peer (IFA_ADDRESS other than IFA_LOCAL) and a label other than the
/// device's name (not modelled).
fn parse_newaddr<T: SimTun>(tun: &T, msg: &[u8]) -> Option<Request> {
    let r = parse_ifaddr(tun, msg)?;
    let local = r.local?;
    if r.prefix > 32
        || r.address.is_some_and(|a| a != local)
        || r.label.as_ref().is_some_and(|l| *l != r.dev)
    {
        return None;
    }
    let flags = le16(msg, 6);
    Some(Request {
        seq: le32(msg, 8),
        ack: flags & NLM_F_ACK != 0,
        dev: r.dev,
        op: LinkOp::NewAddr {
            ifa: Ifa {
                local,
                prefix: r.prefix,
            },
            excl: flags & NLM_F_EXCL != 0,
            replace: flags & NLM_F_REPLACE != 0,
        },
    })
}

/// One RTM_DELADDR (`msg`) for an IPv4 address of a simulated device: what
/// inet_rtm_deladdr matches the address against.
fn parse_deladdr<T: SimTun>(tun: &T, msg: &[u8]) -> Option<Request> {
    let r = parse_ifaddr(tun, msg)?;
    Some(Request {
        seq: le32(msg, 8),
        ack: le16(msg, 6) & NLM_F_ACK != 0,
        dev: r.dev,
        op: LinkOp::DelAddr {
            local: r.local,
            address: r.address,
            prefix: r.prefix,
            label: r.label,
        },
    })
}

/// IFF_UP after do_setlink's dev_change_flags(rtnl_dev_combine_flags): ifi_change 0 means
/// every bit ("bugwards compatibility"), and nothing changes when both are 0.
fn up_flag(flags: u32, change: u32) -> Option<bool> {
    if flags == 0 && change == 0 {
        return None;
    }
    if change == 0 || change & IFF_UP != 0 {
        return Some(flags & IFF_UP != 0);
    }
    None
}

/// Applies `req` to the simulated device.
pub fn apply<T: SimTun>(tun: &mut T, req: &Request) -> Result<(), Errno> {
    match req.op {
        LinkOp::Delete => tun.delete_link(&req.dev),
        LinkOp::Set { up, mtu, ref addr } => {
            if let Some(a) = addr {
                set_address(tun, &req.dev, a)?;
            }
            if up.is_none() && mtu.is_none() {
                return Ok(());
            }
            tun.set_link(&req.dev, up, mtu)
        }
        LinkOp::Exists => Err(Errno::EEXIST),
        LinkOp::NewAddr { ifa, excl, replace } => new_addr(tun, &req.dev, ifa, excl, replace),
        LinkOp::DelAddr {
            local,
            address,
            prefix,
            ref label,
        } => {
            let Some(ifa) = tun.ipv4(&req.dev) else {
                return Err(Errno::EADDRNOTAVAIL);
            };
            // inet_ifa_match: the same network under the address's own mask.
            let same_net = |a: [u8; 4]| {
                let m = u32::from_be_bytes(ifa.mask());
                (u32::from_be_bytes(a) ^ u32::from_be_bytes(ifa.local)) & m == 0
            };
            let matches = local.is_none_or(|l| l == ifa.local)
                && label.as_ref().is_none_or(|l| *l == req.dev)
                && address.is_none_or(|a| prefix == ifa.prefix && same_net(a));
            if !matches {
                return Err(Errno::EADDRNOTAVAIL);
            }
            if tun.del_ipv4(&req.dev) {
                Ok(())
            } else {
                Err(Errno::EOPNOTSUPP)
            }
        }
    }
}

/// do_setlink's IFLA_ADDRESS, before the MTU and the flags: validate_linkmsg's EINVAL for
/// fewer bytes than dev->addr_len (6 for a tap, 0 for a tun), then
/// dev_set_mac_address_user with sa_family dev->type (the model's set_hw_addr: a tun's
/// EOPNOTSUPP, a multicast or zero address EADDRNOTAVAIL). A backend whose devices are
/// real: EOPNOTSUPP from [`not_modelled`]'s view, the kernel answers.
fn set_address<T: SimTun>(tun: &mut T, dev: &[u8], a: &[u8]) -> Result<(), Errno> {
    let Some((family, _)) = tun.hw_addr(dev) else {
        return Err(Errno::EOPNOTSUPP);
    };
    let tap = family == sim::tun::ioctl::ARPHRD_ETHER;
    if tap && a.len() < 6 {
        return Err(Errno::EINVAL);
    }
    let mut data = [0u8; SA_DATA_LEN];
    let n = a.len().min(SA_DATA_LEN);
    data[..n].copy_from_slice(&a[..n]);
    match tun.set_hw_addr(dev, family, &data) {
        Some(r) => r,
        None => Err(Errno::EOPNOTSUPP),
    }
}

/// Whether `e` from [`apply`] means the model does not take `req` (the kernel answers it):
/// EOPNOTSUPP for an address beyond the one modelled or a backend without the operation;
/// a tun's own EOPNOTSUPP for IFLA_ADDRESS is the kernel's answer too, given here.
fn not_modelled<T: SimTun>(tun: &T, req: &Request, e: Errno) -> bool {
    e == Errno::EOPNOTSUPP
        && !matches!(req.op, LinkOp::Set { addr: Some(_), .. } if tun.hw_addr(&req.dev).is_some())
}

/// The message the kernel's handler sets for `e` on `req` (NL_SET_ERR_MSG), which an
/// extended ack carries; None where it sets none.
fn extack_msg(req: &Request, e: Errno) -> Option<&'static str> {
    match (&req.op, e) {
        // net/ipv4/devinet.c: inet_rtm_newaddr, inet_rtm_deladdr.
        (LinkOp::NewAddr { .. }, Errno::EEXIST) => Some("ipv4: Address already assigned"),
        (LinkOp::DelAddr { .. }, Errno::EADDRNOTAVAIL) => Some("ipv4: Address not found"),
        // net/core/dev.c: dev_validate_mtu (tun's min_mtu 68).
        (
            LinkOp::Set {
                mtu: Some(m),
                addr: None,
                ..
            },
            Errno::EINVAL,
        ) if *m < 68 => Some("mtu less than device minimum"),
        (
            LinkOp::Set {
                mtu: Some(_),
                addr: None,
                ..
            },
            Errno::EINVAL,
        ) => Some("mtu greater than device maximum"),
        _ => None,
    }
}

/// inet_rtm_newaddr on the device's one modelled address: a local address of 0 is
/// accepted and adds nothing (__inet_insert_ifa); none yet: added; the same address and
/// prefix (find_matching_ifa): EEXIST with NLM_F_EXCL or without NLM_F_REPLACE, else 0.
/// A second, different address is not modelled (the devinet_ioctl model keeps one per
/// device): EOPNOTSUPP, so the request goes on to the kernel.
fn new_addr<T: SimTun>(
    tun: &mut T,
    dev: &[u8],
    ifa: Ifa,
    excl: bool,
    replace: bool,
) -> Result<(), Errno> {
    if ifa.local == [0; 4] {
        return Ok(());
    }
    match tun.ipv4(dev) {
        None => {
            tun.set_ipv4(dev, ifa);
            Ok(())
        }
        Some(old) if old == ifa => {
            if excl || !replace {
                Err(Errno::EEXIST)
            } else {
                Ok(())
            }
        }
        Some(_) => Err(Errno::EOPNOTSUPP),
    }
}

/// A NETLINK_ROUTE socket: AF_NETLINK with protocol 0 (rustix says None for 0).
fn is_rtnl(sock: &OwnedFd) -> bool {
    rustix::net::sockopt::socket_domain(sock).is_ok_and(|d| d == AddressFamily::NETLINK)
        && rustix::net::sockopt::socket_protocol(sock).is_ok_and(|p| p.is_none())
}

/// write/sendto/sendmsg of the bytes at `ranges` on task `n.pid`'s fd `fd` (`dest`: the
/// struct sockaddr_nl pointer, 0 for none): a request naming a simulated device is
/// applied to it and the send returns its length, as netlink_sendmsg does (the request's
/// result goes to the ack); with NLM_F_ACK the program receives the kernel's success ack
/// (src/rtnl_answer.rs). A request for data about the device (RTM_GETLINK, RTM_GETADDR
/// dumps: src/rtnl_get.rs) is answered the same way. A request the simulated device refuses
/// continues into the kernel, which answers with its own error (the device is not there:
/// ENODEV, or EPERM without CAP_NET_ADMIN); docs/exec.md.
pub fn send_request<T: SimTun>(
    tun: &mut T,
    answers: &mut Answers,
    listener: BorrowedFd<'_>,
    n: &Notif,
    fd: i32,
    ranges: &[(u64, usize)],
    dest: u64,
) -> Reply {
    if fd < 0 || socket_inode(n.pid, fd).is_none() {
        return Reply::Continue;
    }
    let Ok(sock) = sys::steal_fd(n.pid, fd) else {
        return Reply::Continue;
    };
    if !is_rtnl(&sock) {
        return Reply::Continue;
    }
    // struct sockaddr_nl: family, pad, nl_pid, nl_groups; only the kernel (0, 0) is ours.
    if dest != 0 && !sys::read_mem(n.pid, dest, 12).is_ok_and(|b| b.len() == 12 && b[4..] == [0; 8])
    {
        return Reply::Continue;
    }
    let total: usize = ranges.iter().map(|r| r.1).sum();
    if total > MAX_REQUEST {
        return Reply::Continue;
    }
    let buf = match sys::read_mem_iov(n.pid, ranges) {
        Ok(b) if b.len() == total => b,
        _ => return Reply::Continue,
    };
    let Some(inode) = socket_inode(n.pid, fd) else {
        return Reply::Continue;
    };
    if let Some(get) = rtnl_get::parse(tun, &buf) {
        if !sys::notif_id_valid(listener, n.id) {
            return Reply::Answered;
        }
        return rtnl_get::answer(tun, answers, &sock, inode, get, total);
    }
    let Some(req) = parse(tun, &buf) else {
        return Reply::Continue;
    };
    if !sys::notif_id_valid(listener, n.id) {
        return Reply::Answered;
    }
    match apply(tun, &req) {
        Ok(()) => {
            if req.ack {
                let hdr: [u8; NLMSG_HDRLEN] = buf[..NLMSG_HDRLEN].try_into().unwrap_or_default();
                answers.answer(&sock, inode, vec![rtnl_answer::ack(&hdr, req.seq)]);
            }
            Reply::Val(total as i64)
        }
        // Not modelled (a second address, a backend without the operation): the kernel.
        Err(e) if not_modelled(tun, &req, e) => Reply::Continue,
        // netlink_rcv_skb acks an error whether or not NLM_F_ACK was asked.
        Err(e) => {
            let len = (le32(&buf, 0) as usize).min(buf.len());
            let ext_ack = sys::netlink_ext_ack(sock.as_fd());
            let msg = extack_msg(&req, e);
            let err = rtnl_answer::error(&buf[..len], req.seq, e.code(), msg, ext_ack);
            if !answers.answer(&sock, inode, vec![err]) {
                return Reply::Continue;
            }
            Reply::Val(total as i64)
        }
    }
}

/// sendmsg's struct msghdr at `addr`: msg_name and the iovec ranges.
pub fn msghdr(pid: u32, addr: u64) -> Option<(u64, Vec<(u64, usize)>)> {
    let b = sys::read_mem(pid, addr, 56).ok()?;
    if b.len() != 56 {
        return None;
    }
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    let ranges = crate::supervisor::iovecs(pid, word(16), word(24)).ok()?;
    Some((word(0), ranges))
}

#[cfg(test)]
#[path = "rtnl_tests.rs"]
mod tests;
