//! Unit tests of src/rtnl.rs: requests parsed and applied to a simulated device.

use super::*;
use crate::FileId;
use crate::LoopbackTun;
use sim::profile::KernelProfile;
use sim::tun::ioctl::cmd::{TUNSETIFF, TUNSETQUEUE};
use sim::tun::ioctl::iff_flags::IFF_DETACH_QUEUE;
use sim::tun::ioctl::{Caller, IoctlArg};

/// A device `name` and the file attached to it.
fn tun_file(name: &str) -> (LoopbackTun, FileId) {
    let profile = KernelProfile::by_name("linux-6.12").expect("profile");
    let mut tun = LoopbackTun::new(profile, Caller::root());
    let f = tun.open(false);
    let mut ifr = [0u8; 16];
    ifr[..name.len()].copy_from_slice(name.as_bytes());
    // IFF_TAP.
    let arg = IoctlArg::Ifreq {
        name: ifr,
        flags: 0x02,
    };
    tun.ioctl(f, TUNSETIFF, &arg).expect("TUNSETIFF");
    (tun, f)
}

fn tun_with(name: &str) -> LoopbackTun {
    tun_file(name).0
}

/// A request as tun.c's tun_delete builds it: IFLA_IFNAME of IFNAMSIZ bytes.
fn msg(kind: u16, flags: u16, index: i32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut ifm = [0u8; IFINFOMSG_LEN];
    ifm[4..8].copy_from_slice(&index.to_le_bytes());
    nlmsg(kind, flags, &ifm, attrs)
}

/// A netlink message: header (sequence 7), `body`, then the attributes, aligned.
fn nlmsg(kind: u16, flags: u16, body: &[u8], attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut m = vec![0u8; NLMSG_HDRLEN];
    m[4..6].copy_from_slice(&kind.to_le_bytes());
    m[6..8].copy_from_slice(&flags.to_le_bytes());
    m[8..12].copy_from_slice(&7u32.to_le_bytes());
    m.extend_from_slice(body);
    for (t, d) in attrs {
        m.extend_from_slice(&(4 + d.len() as u16).to_le_bytes());
        m.extend_from_slice(&t.to_le_bytes());
        m.extend_from_slice(d);
        m.resize((m.len() + 3) & !3, 0);
    }
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_le_bytes());
    m
}

#[test]
fn dellink_by_name_removes_the_device() {
    let (mut tun, f) = tun_file("tap0");
    let mut name = [0u8; 16];
    name[..4].copy_from_slice(b"tap0");
    let m = msg(RTM_DELLINK, NLM_F_REQUEST, 0, &[(IFLA_IFNAME, &name)]);
    let req = parse(&tun, &m).expect("names tap0");
    assert_eq!(req.op, LinkOp::Delete);
    assert!(!req.ack);
    apply(&mut tun, &req).expect("deleted");
    assert!(tun.link(b"tap0").is_none());
    assert!(parse(&tun, &m).is_none(), "gone: the kernel answers");
    // tun_detach_all left the file open with no device (the selftest's
    // delete_detach_close): TUNSETQUEUE is EINVAL, read and write EBADFD.
    let q = IoctlArg::Ifreq {
        name,
        flags: IFF_DETACH_QUEUE,
    };
    assert_eq!(tun.ioctl(f, TUNSETQUEUE, &q), Err(Errno::EINVAL));
    assert_eq!(tun.read(f, 100), Err(Errno::EBADFD));
    assert_eq!(tun.write(f, &[0; 60]), Err(Errno::EBADFD));
}

#[test]
fn setlink_by_index_sets_up_and_mtu() {
    let mut tun = tun_with("tap0");
    let ifindex = tun.link(b"tap0").expect("tap0").ifindex as i32;
    let mut m = msg(
        RTM_SETLINK,
        NLM_F_REQUEST | NLM_F_ACK,
        ifindex,
        &[(IFLA_MTU, &1400u32.to_le_bytes())],
    );
    m[24..28].copy_from_slice(&IFF_UP.to_le_bytes());
    m[28..32].copy_from_slice(&IFF_UP.to_le_bytes());
    let req = parse(&tun, &m).expect("names tap0");
    assert_eq!(
        req.op,
        LinkOp::Set {
            up: Some(true),
            mtu: Some(1400),
            addr: None,
        }
    );
    assert!(req.ack);
    apply(&mut tun, &req).expect("set");
    let l = tun.link(b"tap0").expect("tap0");
    assert_eq!((l.flags & 1, l.mtu), (1, 1400));
}

#[test]
fn other_requests_continue() {
    let tun = tun_with("tap0");
    let other = msg(RTM_DELLINK, NLM_F_REQUEST, 0, &[(IFLA_IFNAME, b"eth0\0")]);
    assert!(parse(&tun, &other).is_none());
    let index = msg(RTM_DELLINK, NLM_F_REQUEST, 1, &[]);
    assert!(parse(&tun, &index).is_none(), "ifindex 1 is lo");
    let addr = msg(
        RTM_SETLINK,
        NLM_F_REQUEST,
        0,
        &[(IFLA_IFNAME, b"tap0\0"), (13, &[0; 4])],
    );
    assert!(parse(&tun, &addr).is_none(), "IFLA_TXQLEN is not modelled");
    let getlink = msg(18, NLM_F_REQUEST, 0, &[(IFLA_IFNAME, b"tap0\0")]);
    assert!(parse(&tun, &getlink).is_none());
}

#[test]
fn newlink_excl_on_an_existing_device_is_eexist() {
    let mut tun = tun_with("tap0");
    let m = msg(
        RTM_NEWLINK,
        NLM_F_REQUEST | NLM_F_EXCL,
        0,
        &[(IFLA_IFNAME, b"tap0\0")],
    );
    let req = parse(&tun, &m).expect("names tap0");
    assert_eq!(apply(&mut tun, &req), Err(Errno::EEXIST));
}

/// An RTM_NEWADDR as iproute2's `ip addr add A/P dev D` builds it.
fn newaddr(flags: u16, prefix: u8, index: u32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut ifa = [0u8; IFADDRMSG_LEN];
    ifa[0] = AF_INET as u8;
    ifa[1] = prefix;
    ifa[4..8].copy_from_slice(&index.to_le_bytes());
    nlmsg(RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK | flags, &ifa, attrs)
}

#[test]
fn newaddr_gives_the_device_its_address_once() {
    let mut tun = tun_with("ad0");
    let index = tun.link(b"ad0").expect("device").ifindex;
    let a = [10, 9, 0, 1];
    let add = newaddr(NLM_F_EXCL, 24, index, &[(IFA_LOCAL, &a), (IFA_ADDRESS, &a)]);
    let req = parse(&tun, &add).expect("ours");
    assert_eq!(apply(&mut tun, &req), Ok(()));
    assert_eq!(
        tun.ipv4(b"ad0"),
        Some(Ifa {
            local: a,
            prefix: 24
        })
    );
    // inet_rtm_newaddr: find_matching_ifa, then NLM_F_EXCL or no NLM_F_REPLACE.
    assert_eq!(apply(&mut tun, &req), Err(Errno::EEXIST));
    let replace = newaddr(NLM_F_REPLACE, 24, index, &[(IFA_LOCAL, &a)]);
    let req = parse(&tun, &replace).unwrap();
    assert_eq!(apply(&mut tun, &req), Ok(()));
    // A second address is not modelled: the request goes on to the kernel.
    let other = newaddr(NLM_F_EXCL, 24, index, &[(IFA_LOCAL, &[10, 9, 0, 2])]);
    let req = parse(&tun, &other).unwrap();
    assert_eq!(apply(&mut tun, &req), Err(Errno::EOPNOTSUPP));
}

#[test]
fn newaddr_the_kernel_answers_is_left_to_it() {
    let tun = tun_with("ad0");
    let index = tun.link(b"ad0").expect("device").ifindex;
    let a: &[u8] = &[10, 9, 0, 1];
    // rtm_to_ifaddr: no IFA_LOCAL, a prefix over 32 (EINVAL before the device lookup).
    assert!(parse(&tun, &newaddr(0, 24, index, &[(IFA_ADDRESS, a)])).is_none());
    assert!(parse(&tun, &newaddr(0, 33, index, &[(IFA_LOCAL, a)])).is_none());
    // A peer, another label, a real device's index.
    let peer: &[u8] = &[10, 9, 0, 2];
    assert!(parse(
        &tun,
        &newaddr(0, 24, index, &[(IFA_LOCAL, a), (IFA_ADDRESS, peer)])
    )
    .is_none());
    assert!(parse(
        &tun,
        &newaddr(0, 24, index, &[(IFA_LOCAL, a), (IFA_LABEL, b"ad0:1\0")])
    )
    .is_none());
    assert!(parse(&tun, &newaddr(0, 24, 1, &[(IFA_LOCAL, a)])).is_none());
    assert!(parse(
        &tun,
        &newaddr(0, 24, index, &[(IFA_LOCAL, a), (IFA_LABEL, b"ad0\0")])
    )
    .is_some());
}
