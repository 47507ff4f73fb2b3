//! The rtnetlink messages the kernel writes about a simulated device: RTM_NEWLINK
//! (net/core/rtnetlink.c: rtnl_fill_ifinfo, with drivers/net/tun.c: tun_fill_info for
//! its IFLA_LINKINFO) and RTM_NEWADDR for its IPv4 address (net/ipv4/devinet.c:
//! inet_fill_ifaddr). Built with netlink-packet-route, the crate skbsim-kernel speaks
//! rtnetlink with, in the kernel's attribute order.
//!
//! Left out, as a fresh device on this host's 6.18 kernel shows them but no program here
//! reads them: IFLA_STATS / IFLA_STATS64 (the device's counters live in the model's stack,
//! not in the tun device), IFLA_AF_SPEC's devconf arrays (only the IPv6 address
//! generation mode iproute2 prints is given), IFLA_MAP, IFLA_DEVLINK_PORT, IFLA_DPLL_PIN.

use netlink_packet_core::{DefaultNla, NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, AddressScope, CacheInfo,
};
use netlink_packet_route::link::{
    AfSpecInet6, AfSpecUnspec, In6AddrGenMode, InfoData, InfoKind, InfoTun, LinkAttribute,
    LinkFlags, LinkInfo, LinkLayerType, LinkMessage, LinkXdp, State, XdpAttached,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use sim::tun::ioctl::iff_flags::{IFF_MULTI_QUEUE, IFF_NO_PI, IFF_VNET_HDR};
use sim::tun::ioctl::TunIf;
use sim::tun::DeviceKind;

use crate::loopback::link_flags;
use crate::Ifa;

/// include/uapi/linux/if_link.h: enum ifla_tun (IFLA_TUN_*).
const IFLA_TUN_OWNER: u16 = 1;
const IFLA_TUN_GROUP: u16 = 2;
const IFLA_TUN_TYPE: u16 = 3;
const IFLA_TUN_PI: u16 = 4;
const IFLA_TUN_VNET_HDR: u16 = 5;
const IFLA_TUN_PERSIST: u16 = 6;
const IFLA_TUN_MULTI_QUEUE: u16 = 7;
const IFLA_TUN_NUM_QUEUES: u16 = 8;
const IFLA_TUN_NUM_DISABLED_QUEUES: u16 = 9;
/// include/uapi/linux/if.h: IFF_LOWER_UP, above the 16 bits SIOCGIFFLAGS carries.
const IFF_LOWER_UP: u32 = 1 << 16;
const IFF_RUNNING: u32 = 0x40;
/// drivers/net/tun.c: TUN_READQ_SIZE, the tx_queue_len tun_setup gives a tun; a tap's
/// ether_setup sets DEFAULT_TX_QUEUE_LEN (1000) after it.
const TUN_READQ_SIZE: u32 = 500;
const DEFAULT_TX_QUEUE_LEN: u32 = 1000;
/// drivers/net/tun.c: MIN_MTU and MAX_MTU; tun_net_initialize: max_mtu = MAX_MTU -
/// hard_header_len (ETH_HLEN for a tap).
const MIN_MTU: u32 = 68;
const MAX_MTU: u32 = 65535;
const ETH_HLEN: u32 = 14;
/// drivers/net/tun.c: MAX_TAP_QUEUES, the queues tun_set_iff allocates for
/// IFF_MULTI_QUEUE (1 otherwise).
const MAX_TAP_QUEUES: u32 = 256;
/// include/linux/netdevice.h: GSO_MAX_SIZE / GSO_LEGACY_MAX_SIZE (65536), GSO_MAX_SEGS.
const GSO_LEGACY_MAX_SIZE: u32 = 65536;
const GSO_MAX_SEGS: u32 = 65535;

/// What `rtnl_fill_ifinfo` writes about the tun device `t` with MTU `mtu`;
/// `default_qdisc` is the qdisc dev_activate attaches (net.core.default_qdisc; `mq` for
/// a multiqueue device).
pub fn link_message(t: &TunIf, mtu: u32, default_qdisc: &str) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.interface_family = AddressFamily::Unspec;
    m.header.index = t.ifindex;
    m.header.link_layer_type = LinkLayerType::from(t.link_type);
    // dev_get_flags: IFF_RUNNING and IFF_LOWER_UP follow the carrier of an up device.
    let mut flags = u32::from(link_flags(t.kind, t.up, t.carrier));
    if flags & IFF_RUNNING != 0 {
        flags |= IFF_LOWER_UP;
    }
    m.header.flags = LinkFlags::from_bits_retain(flags);
    let tap = t.kind == DeviceKind::Tap;
    let queues = if t.features & IFF_MULTI_QUEUE != 0 {
        MAX_TAP_QUEUES
    } else {
        1
    };
    // rfc2863_policy: IF_OPER_DOWN without carrier or when down, else IF_OPER_UNKNOWN
    // (tun has no link-mode or dormant state of its own).
    let oper = if t.up && t.carrier {
        State::Unknown
    } else {
        State::Down
    };
    let qdisc = if !t.activated {
        "noop"
    } else if queues > 1 {
        "mq"
    } else {
        default_qdisc
    };
    let a = &mut m.attributes;
    a.push(LinkAttribute::IfName(
        String::from_utf8_lossy(&t.name).into_owned(),
    ));
    a.push(LinkAttribute::TxQueueLen(if tap {
        DEFAULT_TX_QUEUE_LEN
    } else {
        TUN_READQ_SIZE
    }));
    a.push(LinkAttribute::OperState(oper));
    a.push(LinkAttribute::Mode(Default::default()));
    a.push(LinkAttribute::NetnsImmutable(false));
    a.push(LinkAttribute::Mtu(mtu));
    a.push(LinkAttribute::MinMtu(MIN_MTU));
    a.push(LinkAttribute::MaxMtu(if tap {
        MAX_MTU - ETH_HLEN
    } else {
        MAX_MTU
    }));
    a.push(LinkAttribute::Group(0));
    a.push(LinkAttribute::Promiscuity(0));
    a.push(LinkAttribute::AllMulticast(0));
    a.push(LinkAttribute::NumTxQueues(queues));
    a.push(LinkAttribute::GsoMaxSegs(GSO_MAX_SEGS));
    a.push(LinkAttribute::GsoMaxSize(GSO_LEGACY_MAX_SIZE));
    a.push(LinkAttribute::GroMaxSize(GSO_LEGACY_MAX_SIZE));
    a.push(LinkAttribute::GsoIpv4MaxSize(GSO_LEGACY_MAX_SIZE));
    a.push(LinkAttribute::GroIpv4MaxSize(GSO_LEGACY_MAX_SIZE));
    a.push(LinkAttribute::TsoMaxSize(GSO_LEGACY_MAX_SIZE));
    a.push(LinkAttribute::TsoMaxSegs(GSO_MAX_SEGS));
    a.push(LinkAttribute::NumRxQueues(queues));
    a.push(LinkAttribute::Carrier(u8::from(t.carrier)));
    a.push(LinkAttribute::ProtoDown(0));
    if tap {
        a.push(LinkAttribute::Address(t.dev_addr.to_vec()));
        a.push(LinkAttribute::Broadcast(vec![0xff; 6]));
    }
    a.push(LinkAttribute::Xdp(vec![LinkXdp::Attached(
        XdpAttached::None,
    )]));
    a.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Tun),
        LinkInfo::Data(InfoData::Tun(tun_info(t))),
    ]));
    a.push(LinkAttribute::Qdisc(qdisc.to_string()));
    a.push(LinkAttribute::AfSpecUnspec(vec![AfSpecUnspec::Inet6(
        vec![AfSpecInet6::AddrGenMode(In6AddrGenMode::Eui64)],
    )]));
    m
}

/// drivers/net/tun.c: tun_fill_info.
fn tun_info(t: &TunIf) -> Vec<InfoTun> {
    let u8_attr = |kind, v: bool| InfoTun::Other(DefaultNla::new(kind, vec![u8::from(v)]));
    let u32_attr = |kind, v: u32| InfoTun::Other(DefaultNla::new(kind, v.to_ne_bytes().to_vec()));
    // tun->flags & TUN_TYPE_MASK: IFF_TUN 1, IFF_TAP 2.
    let kind = match t.kind {
        DeviceKind::Tun => 1u8,
        DeviceKind::Tap => 2,
    };
    let mut v = vec![InfoTun::Other(DefaultNla::new(IFLA_TUN_TYPE, vec![kind]))];
    if let Some(uid) = t.owner {
        v.push(u32_attr(IFLA_TUN_OWNER, uid));
    }
    if let Some(gid) = t.group {
        v.push(u32_attr(IFLA_TUN_GROUP, gid));
    }
    v.push(u8_attr(IFLA_TUN_PI, t.features & IFF_NO_PI == 0));
    v.push(u8_attr(IFLA_TUN_VNET_HDR, t.features & IFF_VNET_HDR != 0));
    v.push(u8_attr(IFLA_TUN_PERSIST, t.persist));
    let mq = t.features & IFF_MULTI_QUEUE != 0;
    v.push(u8_attr(IFLA_TUN_MULTI_QUEUE, mq));
    if mq {
        v.push(u32_attr(IFLA_TUN_NUM_QUEUES, t.queues.len() as u32));
        v.push(u32_attr(
            IFLA_TUN_NUM_DISABLED_QUEUES,
            t.disabled.len() as u32,
        ));
    }
    v
}

/// What inet_fill_ifaddr writes about the IPv4 address `ifa` of the device `name`
/// (ifindex `ifindex`) that `ip addr add` / SIOCSIFADDR gave it: IFA_ADDRESS and
/// IFA_LOCAL (no peer), the label, IFA_F_PERMANENT, infinite lifetimes. Its time stamps
/// (hundredths of a second since boot on the real kernel) are 0: the model has no boot.
pub fn addr_message(ifindex: u32, name: &[u8], ifa: &Ifa) -> AddressMessage {
    let mut m = AddressMessage::default();
    m.header.family = AddressFamily::Inet;
    m.header.prefix_len = ifa.prefix;
    m.header.flags = AddressHeaderFlags::Permanent;
    m.header.scope = AddressScope::Universe;
    m.header.index = ifindex;
    let ip = std::net::IpAddr::from(ifa.local);
    let a = &mut m.attributes;
    a.push(AddressAttribute::Address(ip));
    a.push(AddressAttribute::Local(ip));
    a.push(AddressAttribute::Label(
        String::from_utf8_lossy(name).into_owned(),
    ));
    a.push(AddressAttribute::Flags(AddressFlags::Permanent));
    let mut cache = CacheInfo::default();
    cache.ifa_preferred = u32::MAX;
    cache.ifa_valid = u32::MAX;
    a.push(AddressAttribute::CacheInfo(cache));
    m
}

/// The tun devices of `net` by name, in ifindex order (a dump's order: for_each_netdev_dump
/// walks the namespace's devices by ifindex).
pub fn names_by_ifindex(net: &sim::tun::ioctl::TunNet) -> Vec<Vec<u8>> {
    let mut devs: Vec<(u32, Vec<u8>)> =
        net.devices().map(|d| (d.ifindex, d.name.clone())).collect();
    devs.sort();
    devs.into_iter().map(|(_, n)| n).collect()
}

/// The qdisc dev_activate attaches to a single-queue device: this host's
/// net.core.default_qdisc (the real kernel here reads the same), pfifo_fast where unset.
pub fn default_qdisc() -> String {
    std::fs::read_to_string("/proc/sys/net/core/default_qdisc")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "pfifo_fast".to_string())
}

/// `payload` as one netlink message to the socket with port id `pid`, answering the
/// request with sequence number `seq`; `multi` for a dump's part (NLM_F_MULTI).
pub fn message(payload: RouteNetlinkMessage, seq: u32, pid: u32, multi: bool) -> Vec<u8> {
    let mut header = NetlinkHeader::default();
    header.sequence_number = seq;
    header.port_number = pid;
    if multi {
        // include/uapi/linux/netlink.h: NLM_F_MULTI.
        header.flags = 0x2;
    }
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(payload));
    msg.finalize();
    let mut bytes = vec![0; msg.buffer_len()];
    msg.serialize(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::Emitable;
    use sim::tun::ioctl::{Caller, TunNet};

    /// A persistent IFF_TUN | IFF_NO_PI device as `ip tuntap add dev ad0 mode tun` leaves it.
    fn ad0() -> TunIf {
        use sim::tun::ioctl::{cmd, iff_flags::IFF_TUN, IoctlArg, IFNAMSIZ};
        let p = sim::profile::KernelProfile::by_name("linux-6.18").expect("profile");
        let root = Caller::root();
        let mut net = TunNet::new();
        let f = net.open();
        let mut name = [0u8; IFNAMSIZ];
        name[..3].copy_from_slice(b"ad0");
        let ifr = IoctlArg::Ifreq {
            name,
            flags: IFF_TUN | IFF_NO_PI,
        };
        net.ioctl(&p, &root, f, cmd::TUNSETIFF, &ifr)
            .expect("TUNSETIFF");
        net.ioctl(&p, &root, f, cmd::TUNSETPERSIST, &IoctlArg::Value(1))
            .expect("TUNSETPERSIST");
        net.close(f);
        let dev = net.devices().next().expect("ad0").clone();
        dev
    }

    /// The attribute `kind`'s value in the emitted message `m`.
    fn attr(m: &LinkMessage, kind: u16) -> Vec<u8> {
        let mut b = vec![0; m.buffer_len()];
        m.emit(&mut b);
        let mut at = 16;
        while at + 4 <= b.len() {
            let len = usize::from(u16::from_ne_bytes([b[at], b[at + 1]]));
            if u16::from_ne_bytes([b[at + 2], b[at + 3]]) & 0x3fff == kind {
                return b[at + 4..at + len].to_vec();
            }
            at += (len + 3) & !3;
        }
        panic!("no attribute {kind}");
    }

    /// The values this host's 6.18 kernel wrote for the same device (`ip tuntap add dev
    /// ad0 mode tun` in `unshare -n`, RTM_GETLINK read with a python3 netlink socket):
    /// ifinfomsg type 0xfffe, flags 0x1090; TXQLEN f4010000, OPERSTATE 02, MTU dc050000,
    /// MIN_MTU 44000000, MAX_MTU ffff0000, NUM_TX_QUEUES 01000000, CARRIER 00, QDISC
    /// "noop", and IFLA_LINKINFO byte for byte.
    #[test]
    fn a_fresh_persistent_tun_as_the_kernel_describes_it() {
        let m = link_message(&ad0(), 1500, "pfifo_fast");
        assert_eq!(u16::from(m.header.link_layer_type), 0xfffe);
        assert_eq!(m.header.flags.bits(), 0x1090);
        assert_eq!(attr(&m, 13), [0xf4, 0x01, 0, 0]);
        assert_eq!(attr(&m, 16), [2]);
        assert_eq!(attr(&m, 4), [0xdc, 0x05, 0, 0]);
        assert_eq!(attr(&m, 50), [0x44, 0, 0, 0]);
        assert_eq!(attr(&m, 51), [0xff, 0xff, 0, 0]);
        assert_eq!(attr(&m, 31), [1, 0, 0, 0]);
        assert_eq!(attr(&m, 33), [0]);
        assert_eq!(attr(&m, 6), b"noop\0");
        let linkinfo = [
            0x08, 0x00, 0x01, 0x00, 0x74, 0x75, 0x6e, 0x00, 0x2c, 0x00, 0x02, 0x00, 0x05, 0x00,
            0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x05, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x06, 0x00, 0x01, 0x00,
            0x00, 0x00, 0x05, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        assert_eq!(attr(&m, 18), linkinfo);
    }
}
