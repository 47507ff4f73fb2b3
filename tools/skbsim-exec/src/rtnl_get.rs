//! rtnetlink requests whose answer is data about a simulated device: RTM_GETLINK for
//! one device (net/core/rtnetlink.c: rtnl_getlink, by ifi_index or IFLA_IFNAME),
//! RTM_GETLINK dumps (rtnl_dump_ifinfo) and RTM_GETADDR dumps (net/ipv4/devinet.c:
//! inet_dump_ifaddr). The answers go through [`crate::rtnl_answer::Answers`].

use std::os::fd::OwnedFd;

use netlink_packet_route::RouteNetlinkMessage;

use crate::rtnl_answer::{ack, done, Answers};
use crate::rtnl_link::{addr_message, message};
use crate::supervisor::Reply;
use crate::SimTun;

/// include/uapi/linux/rtnetlink.h.
const RTM_GETLINK: u16 = 18;
const RTM_GETADDR: u16 = 22;
/// include/uapi/linux/netlink.h.
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_MULTI: u16 = 0x2;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
/// NLM_F_DUMP_FILTERED: a strict dump's answer filtered by the request's ifa_index.
const NLM_F_DUMP_FILTERED: u16 = 0x20;
const NLMSG_HDRLEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;
const IFADDRMSG_LEN: usize = 8;
const IFLA_IFNAME: u16 = 3;
const IFLA_ALT_IFNAME: u16 = 53;
const AF_UNSPEC: u8 = 0;
const AF_INET: u8 = 2;

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A request for data that concerns a simulated device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Get {
    /// RTM_GETLINK naming the device `dev`.
    Link { dev: Vec<u8>, ack: bool },
    /// RTM_GETLINK with NLM_F_DUMP.
    LinkDump,
    /// RTM_GETADDR with NLM_F_DUMP for IPv4 (AF_INET or AF_UNSPEC), all devices or the
    /// simulated device `dev` (a strict dump's ifa_index).
    AddrDump { dev: Option<Vec<u8>> },
}

/// The request in `buf` (its first message), if it asks for data about a simulated
/// device: its header, sequence number and what it asks.
pub fn parse<T: SimTun>(tun: &T, buf: &[u8]) -> Option<([u8; NLMSG_HDRLEN], u32, Get)> {
    if buf.len() < NLMSG_HDRLEN {
        return None;
    }
    let len = le32(buf, 0) as usize;
    let (kind, flags, seq) = (le16(buf, 4), le16(buf, 6), le32(buf, 8));
    if flags & NLM_F_REQUEST == 0 || len > buf.len() {
        return None;
    }
    let hdr: [u8; NLMSG_HDRLEN] = buf[..NLMSG_HDRLEN].try_into().ok()?;
    let msg = &buf[..len];
    let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
    let get = match kind {
        RTM_GETLINK if dump => Get::LinkDump,
        RTM_GETLINK if len >= NLMSG_HDRLEN + IFINFOMSG_LEN => Get::Link {
            dev: link_target(tun, msg)?,
            ack: flags & NLM_F_ACK != 0,
        },
        RTM_GETADDR if dump && len >= NLMSG_HDRLEN + IFADDRMSG_LEN => {
            let family = msg[NLMSG_HDRLEN];
            if family != AF_UNSPEC && family != AF_INET {
                return None;
            }
            let index = le32(msg, NLMSG_HDRLEN + 4);
            let dev = match index {
                0 => None,
                i => Some(tun.link_name(i)?),
            };
            Get::AddrDump { dev }
        }
        _ => return None,
    };
    Some((hdr, seq, get))
}

/// rtnl_getlink's device: ifi_index, else IFLA_IFNAME / IFLA_ALT_IFNAME; a simulated one.
fn link_target<T: SimTun>(tun: &T, msg: &[u8]) -> Option<Vec<u8>> {
    let index = le32(msg, NLMSG_HDRLEN + 4) as i32;
    if index > 0 {
        return tun.link_name(index as u32);
    }
    let mut at = NLMSG_HDRLEN + IFINFOMSG_LEN;
    while at + 4 <= msg.len() {
        let alen = le16(msg, at) as usize;
        if alen < 4 || at + alen > msg.len() {
            return None;
        }
        if matches!(le16(msg, at + 2) & 0x3fff, IFLA_IFNAME | IFLA_ALT_IFNAME) {
            let data = &msg[at + 4..at + alen];
            let name = data.split(|&c| c == 0).next().unwrap_or(data);
            tun.link(name)?;
            return Some(name.to_vec());
        }
        at += (alen + 3) & !3;
    }
    None
}

/// Answers `get` (request header `hdr`, sequence `seq`) on the program's socket `sock`
/// (inode `inode`): a single device's answer in place of the kernel's ENODEV (the send
/// returns its length, as netlink_sendmsg does); a dump continues into the kernel with
/// the simulated devices' messages to go before its NLMSG_DONE.
pub fn answer<T: SimTun>(
    tun: &T,
    answers: &mut Answers,
    sock: &OwnedFd,
    inode: u64,
    (hdr, seq, get): ([u8; NLMSG_HDRLEN], u32, Get),
    sent: usize,
) -> Reply {
    match get {
        Get::Link {
            dev,
            ack: wants_ack,
        } => {
            let Some(link) = tun.link_message(&dev) else {
                return Reply::Continue;
            };
            let mut datagrams = vec![message(RouteNetlinkMessage::NewLink(link), seq, 0, false)];
            if wants_ack {
                datagrams.push(ack(&hdr, seq));
            }
            if !answers.answer(sock, inode, datagrams) {
                return Reply::Continue;
            }
            Reply::Val(sent as i64)
        }
        Get::LinkDump => {
            let mut msgs = Vec::new();
            for dev in tun.link_names() {
                if let Some(link) = tun.link_message(&dev) {
                    msgs.extend(message(RouteNetlinkMessage::NewLink(link), seq, 0, true));
                }
            }
            if !msgs.is_empty() {
                answers.append_to_dump(inode, seq, msgs);
            }
            Reply::Continue
        }
        Get::AddrDump { dev: None } => {
            let msgs = addr_messages(tun, &tun.link_names(), seq, NLM_F_MULTI);
            if !msgs.is_empty() {
                answers.append_to_dump(inode, seq, msgs);
            }
            Reply::Continue
        }
        Get::AddrDump { dev: Some(dev) } => {
            // The kernel has no such ifindex (ENODEV): the whole strict dump is ours.
            let flags = NLM_F_MULTI | NLM_F_DUMP_FILTERED;
            let msgs = addr_messages(tun, &[dev], seq, flags);
            let mut datagrams = Vec::new();
            if !msgs.is_empty() {
                datagrams.push(msgs);
            }
            datagrams.push(done(seq, flags));
            if !answers.answer(sock, inode, datagrams) {
                return Reply::Continue;
            }
            Reply::Val(sent as i64)
        }
    }
}

/// The RTM_NEWADDR messages of the devices `devs` that have an IPv4 address.
fn addr_messages<T: SimTun>(tun: &T, devs: &[Vec<u8>], seq: u32, flags: u16) -> Vec<u8> {
    let mut out = Vec::new();
    for dev in devs {
        let (Some(ifa), Some(link)) = (tun.ipv4(dev), tun.link(dev)) else {
            continue;
        };
        let m = addr_message(link.ifindex, dev, &ifa);
        let mut bytes = message(RouteNetlinkMessage::NewAddress(m), seq, 0, true);
        bytes[6..8].copy_from_slice(&flags.to_ne_bytes());
        out.extend(bytes);
    }
    out
}
