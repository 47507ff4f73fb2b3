//! Answers written into the program's receives on a NETLINK_ROUTE socket: the data the
//! kernel would send about a simulated device, which the kernel itself cannot (it has no
//! such device) and which the supervisor cannot send to the program's socket either
//! (NETLINK_ROUTE has no NL_CFG_F_NONROOT_SEND: an unprivileged unicast is EPERM).
//!
//! So at the request the supervisor makes the kernel queue one *placeholder* per answer
//! on the program's own socket (an NLMSG_NOOP request with NLM_F_ACK and a marker
//! sequence number, which netlink_rcv_skb acks at once): the socket is readable exactly
//! when the kernel's would be, for poll/epoll/select too. At the receive (recvfrom,
//! recvmsg, read), when the next datagram on the socket is a placeholder, the supervisor
//! takes it and writes the answer into the program's buffer instead, as
//! netlink_recvmsg would (MSG_PEEK, MSG_TRUNC, the kernel's sockaddr_nl as the source,
//! the socket's port id in each header). A dump (NLM_F_DUMP) goes to the kernel as it is;
//! the simulated devices' messages go in before the NLMSG_DONE of its sequence number.
//! Every other receive continues into the kernel untouched.

use std::collections::{BTreeMap, VecDeque};
use std::os::fd::OwnedFd;

use rustix::net::{recv, send, RecvFlags, SendFlags};

use crate::supervisor::{socket_inode, Reply};
use crate::sys;

/// include/uapi/linux/netlink.h.
const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
/// NLM_F_CAPPED: an ack echoes only the request's header (netlink_ack, error 0).
const NLM_F_CAPPED: u16 = 0x100;
const NLMSG_HDRLEN: usize = 16;
const AF_NETLINK: u16 = 16;
/// include/linux/socket.h.
const MSG_PEEK: u32 = 0x2;
const MSG_TRUNC: u32 = 0x20;
/// The placeholder's sequence number ("skbs"): a program never sends NLMSG_NOOP.
const PLACEHOLDER_SEQ: u32 = 0x736b_6273;
/// The largest datagram looked at (a netlink dump's part is at most 32 KiB).
const MAX_DATAGRAM: usize = 1 << 16;

/// A netlink message header (struct nlmsghdr) with no payload yet.
pub fn header(len: usize, kind: u16, flags: u16, seq: u32) -> Vec<u8> {
    let mut m = Vec::with_capacity(len);
    m.extend((len as u32).to_ne_bytes());
    m.extend(kind.to_ne_bytes());
    m.extend(flags.to_ne_bytes());
    m.extend(seq.to_ne_bytes());
    m.extend(0u32.to_ne_bytes());
    m
}

/// netlink_ack with error 0 for the request whose header is `req`: NLMSG_ERROR,
/// NLM_F_CAPPED, the error and the request's header.
pub fn ack(req: &[u8; NLMSG_HDRLEN], seq: u32) -> Vec<u8> {
    let mut m = header(
        NLMSG_HDRLEN + 4 + NLMSG_HDRLEN,
        NLMSG_ERROR,
        NLM_F_CAPPED,
        seq,
    );
    m.extend(0i32.to_ne_bytes());
    m.extend(req);
    m
}

/// include/uapi/linux/netlink.h: NLM_F_ACK_TLVS, NLMSGERR_ATTR_MSG.
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;

/// netlink_ack with `errno` for the request `req` (its whole message: an error echoes it,
/// the socket not having NETLINK_CAP_ACK), and with `ext_ack` the message the kernel's
/// handler set (NL_SET_ERR_MSG) as NLMSGERR_ATTR_MSG.
pub fn error(req: &[u8], seq: u32, errno: i32, msg: Option<&str>, ext_ack: bool) -> Vec<u8> {
    let mut tlv = Vec::new();
    if let (Some(m), true) = (msg, ext_ack) {
        let len = 4 + m.len() + 1;
        tlv.extend((len as u16).to_ne_bytes());
        tlv.extend(NLMSGERR_ATTR_MSG.to_ne_bytes());
        tlv.extend(m.as_bytes());
        tlv.push(0);
        tlv.resize((tlv.len() + 3) & !3, 0);
    }
    let echo_len = (req.len() + 3) & !3;
    let flags = if tlv.is_empty() { 0 } else { NLM_F_ACK_TLVS };
    let mut m = header(
        NLMSG_HDRLEN + 4 + echo_len + tlv.len(),
        NLMSG_ERROR,
        flags,
        seq,
    );
    m.extend((-errno).to_ne_bytes());
    m.extend(req);
    m.resize(NLMSG_HDRLEN + 4 + echo_len, 0);
    m.extend(tlv);
    m
}

/// NLMSG_DONE of a dump (netlink_dump_done: the int dump_done_errno, 0) with `flags`.
pub fn done(seq: u32, flags: u16) -> Vec<u8> {
    let mut m = header(NLMSG_HDRLEN + 4, NLMSG_DONE, flags, seq);
    m.extend(0i32.to_ne_bytes());
    m
}

/// The messages to put before a dump's NLMSG_DONE.
#[derive(Debug)]
struct DumpAppend {
    seq: u32,
    msgs: Vec<u8>,
}

/// One socket's answers not yet received.
#[derive(Debug, Default)]
struct Pending {
    /// Datagrams, each taking the place of one placeholder, in order.
    datagrams: VecDeque<Vec<u8>>,
    dumps: Vec<DumpAppend>,
}

/// A receive the program made: where its bytes go and what it asked.
#[derive(Debug)]
pub struct RecvCall {
    pub pid: u32,
    pub fd: i32,
    pub ranges: Vec<(u64, usize)>,
    pub flags: u32,
    /// The source address buffer and the pointer to its length (socklen_t, in and out).
    pub name: Option<(u64, u64)>,
    /// recvmsg's struct msghdr (msg_controllen and msg_flags are written back).
    pub msghdr: Option<u64>,
}

/// The answers of every NETLINK_ROUTE socket the program asked about a simulated device,
/// by the socket's inode.
#[derive(Debug, Default)]
pub struct Answers {
    socks: BTreeMap<u64, Pending>,
}

impl Answers {
    /// Whether no answer waits (every receive then continues at once).
    pub fn is_empty(&self) -> bool {
        self.socks.is_empty()
    }

    /// Queues `datagrams` for the socket `sock` (inode `inode`) and one placeholder each
    /// on it. False when the kernel would not take a placeholder (the socket's receive
    /// buffer is full): nothing queued.
    pub fn answer(&mut self, sock: &OwnedFd, inode: u64, datagrams: Vec<Vec<u8>>) -> bool {
        let placeholder = header(
            NLMSG_HDRLEN,
            NLMSG_NOOP,
            NLM_F_REQUEST | NLM_F_ACK,
            PLACEHOLDER_SEQ,
        );
        let mut sent = 0;
        for _ in &datagrams {
            if send(sock, &placeholder, SendFlags::DONTWAIT).is_err() {
                break;
            }
            sent += 1;
        }
        let p = self.socks.entry(inode).or_default();
        p.datagrams.extend(datagrams.into_iter().take(sent));
        sent > 0
    }

    /// The simulated devices' `msgs` go before the NLMSG_DONE of dump `seq` on `inode`.
    pub fn append_to_dump(&mut self, inode: u64, seq: u32, msgs: Vec<u8>) {
        self.socks
            .entry(inode)
            .or_default()
            .dumps
            .push(DumpAppend { seq, msgs });
    }

    /// A receive on the program's fd: answered when the socket's next datagram is a
    /// placeholder or ends a dump that has messages to add; else it continues.
    pub fn recv(&mut self, c: &RecvCall) -> Reply {
        if self.socks.is_empty() {
            return Reply::Continue;
        }
        let Some(inode) = socket_inode(c.pid, c.fd) else {
            return Reply::Continue;
        };
        let Some(p) = self.socks.get_mut(&inode) else {
            return Reply::Continue;
        };
        let Ok(sock) = sys::steal_fd(c.pid, c.fd) else {
            return Reply::Continue;
        };
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let peek = RecvFlags::PEEK | RecvFlags::DONTWAIT | RecvFlags::TRUNC;
        let Ok((got, full)) = recv(&sock, &mut buf[..], peek) else {
            return Reply::Continue;
        };
        if full > got {
            return Reply::Continue;
        }
        let head = &buf[..got];
        let cap: usize = c.ranges.iter().map(|r| r.1).sum();
        let consume = c.flags & MSG_PEEK == 0;
        let mut requeue = None;
        let out = if is_placeholder(head) {
            let Some(d) = p.datagrams.front() else {
                return Reply::Continue;
            };
            let mut d = d.clone();
            set_port_id(&mut d, port_id(head));
            if consume {
                let _ = recv(&sock, &mut [0u8; NLMSG_HDRLEN][..], RecvFlags::DONTWAIT);
                p.datagrams.pop_front();
            }
            d
        } else if let Some((i, at)) = dump_done(head, &p.dumps) {
            let mut ours = p.dumps[i].msgs.clone();
            set_port_id(&mut ours, port_id(head));
            let mut whole = head[..at].to_vec();
            whole.extend(&ours);
            whole.extend(&head[at..]);
            let fits = at == 0 || whole.len() <= cap;
            let out = if fits { whole } else { head[..at].to_vec() };
            if consume {
                p.dumps.remove(i);
                if !fits {
                    // The rest comes as the next datagram, behind a placeholder of its own.
                    let mut next = ours;
                    next.extend(&head[at..]);
                    requeue = Some(next);
                }
                let _ = recv(&sock, &mut [0u8; NLMSG_HDRLEN][..], RecvFlags::DONTWAIT);
            }
            out
        } else {
            return Reply::Continue;
        };
        if p.datagrams.is_empty() && p.dumps.is_empty() {
            self.socks.remove(&inode);
        }
        if let Some(next) = requeue {
            self.answer(&sock, inode, vec![next]);
        }
        deliver(c, &out, cap)
    }
}

/// The kernel's ack of a placeholder: NLMSG_ERROR 0 echoing NLMSG_NOOP with the marker.
fn is_placeholder(d: &[u8]) -> bool {
    let le16 = |at: usize| u16::from_ne_bytes([d[at], d[at + 1]]);
    let le32 = |at: usize| u32::from_ne_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
    d.len() >= 2 * NLMSG_HDRLEN + 4
        && le16(4) == NLMSG_ERROR
        && le32(16) == 0
        && le16(20 + 4) == NLMSG_NOOP
        && le32(20 + 8) == PLACEHOLDER_SEQ
}

/// The port id the kernel wrote in the first header of `d`.
fn port_id(d: &[u8]) -> u32 {
    d.get(12..16)
        .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// Each message of `d` gets the port id `pid` (netlink_unicast to that socket).
fn set_port_id(d: &mut [u8], pid: u32) {
    let mut at = 0;
    while at + NLMSG_HDRLEN <= d.len() {
        let len = u32::from_ne_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]) as usize;
        d[at + 12..at + 16].copy_from_slice(&pid.to_ne_bytes());
        if len < NLMSG_HDRLEN {
            break;
        }
        at += (len + 3) & !3;
    }
}

/// The index of the dump of `dumps` whose NLMSG_DONE is in `d`, and that message's offset.
fn dump_done(d: &[u8], dumps: &[DumpAppend]) -> Option<(usize, usize)> {
    let mut at = 0;
    while at + NLMSG_HDRLEN <= d.len() {
        let len = u32::from_ne_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]) as usize;
        let kind = u16::from_ne_bytes([d[at + 4], d[at + 5]]);
        let seq = u32::from_ne_bytes([d[at + 8], d[at + 9], d[at + 10], d[at + 11]]);
        if kind == NLMSG_DONE {
            return dumps.iter().position(|a| a.seq == seq).map(|i| (i, at));
        }
        if len < NLMSG_HDRLEN {
            return None;
        }
        at += (len + 3) & !3;
    }
    None
}

/// netlink_recvmsg's copy of `d` into the program's receive: as much as fits, the
/// source address (the kernel: port 0, no groups), MSG_TRUNC in msg_flags when cut, and
/// the whole length returned for MSG_TRUNC.
fn deliver(c: &RecvCall, d: &[u8], cap: usize) -> Reply {
    let copy = d.len().min(cap);
    if sys::write_mem_iov(c.pid, &c.ranges, &d[..copy]).is_err() {
        return Reply::Err(libc::EFAULT);
    }
    if let Some((addr, len_ptr)) = c.name {
        if addr != 0 && len_ptr != 0 {
            let room = sys::read_mem(c.pid, len_ptr, 4)
                .ok()
                .and_then(|b| b.try_into().ok())
                .map_or(0, u32::from_ne_bytes) as usize;
            let mut sa = Vec::with_capacity(12);
            sa.extend(AF_NETLINK.to_ne_bytes());
            sa.extend([0u8; 10]);
            let _ = sys::write_mem_iov(c.pid, &[(addr, room.min(12))], &sa[..room.min(12)]);
            let _ = sys::write_mem_iov(c.pid, &[(len_ptr, 4)], &12u32.to_ne_bytes());
        }
    }
    if let Some(m) = c.msghdr {
        let flags: u32 = if d.len() > cap { MSG_TRUNC } else { 0 };
        let _ = sys::write_mem_iov(c.pid, &[(m + 40, 8)], &0u64.to_ne_bytes());
        let _ = sys::write_mem_iov(c.pid, &[(m + 48, 4)], &flags.to_ne_bytes());
    }
    let n = if c.flags & MSG_TRUNC != 0 {
        d.len()
    } else {
        copy
    };
    Reply::Val(n as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_ack_of_a_placeholder_is_recognised() {
        // What this host's 6.18 kernel queued for the placeholder (netlink_ack: len 36,
        // NLMSG_ERROR, NLM_F_CAPPED, seq, the socket's port id, error 0, the request's
        // header), read back with a python3 socket.
        let mut kernel = header(36, NLMSG_ERROR, NLM_F_CAPPED, PLACEHOLDER_SEQ);
        kernel[12..16].copy_from_slice(&4321u32.to_ne_bytes());
        kernel.extend(0i32.to_ne_bytes());
        kernel.extend(header(
            16,
            NLMSG_NOOP,
            NLM_F_REQUEST | NLM_F_ACK,
            PLACEHOLDER_SEQ,
        ));
        assert!(is_placeholder(&kernel));
        assert_eq!(port_id(&kernel), 4321);
        let mut other = kernel.clone();
        other[28..32].copy_from_slice(&7u32.to_ne_bytes());
        assert!(!is_placeholder(&other));
    }

    #[test]
    fn a_dumps_done_is_found_after_its_messages() {
        let mut d = header(20, 16, 2, 9);
        d.extend([0u8; 4]);
        d.extend(done(9, 2));
        let dumps = [DumpAppend {
            seq: 9,
            msgs: Vec::new(),
        }];
        assert_eq!(dump_done(&d, &dumps), Some((0, 20)));
        let other = [DumpAppend {
            seq: 8,
            msgs: Vec::new(),
        }];
        assert_eq!(dump_done(&d, &other), None);
    }

    #[test]
    fn port_ids_go_in_every_header() {
        let mut d = done(1, 2);
        d.extend(done(1, 2));
        set_port_id(&mut d, 77);
        assert_eq!(port_id(&d), 77);
        assert_eq!(port_id(&d[20..]), 77);
    }
}
