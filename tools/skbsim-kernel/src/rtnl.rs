//! `NETLINK_ROUTE` link operations: look up, create (bridge, veth, any kind), enslave, set
//! up/down, read `IFLA_STATS64`, attach XDP by fd; addresses and neighbours for the tunnel
//! arms. Messages are `netlink-packet-route`'s typed ones.

use std::net::IpAddr;

use netlink_packet_route::address::{AddressAttribute, AddressHeaderFlags, AddressMessage};
use netlink_packet_route::link::{
    InfoBridge, InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo as Info,
    LinkMessage, LinkXdp, Stats64, XdpAttached as Attached,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage as Msg};

use crate::error::{Cause, KernelError};
use crate::netlink::{emit_nlas, NlSocket, Nla, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL};

/// A link message for `ifindex` with `attributes` (family `AF_UNSPEC`).
fn link_msg(ifindex: u32, attributes: Vec<LinkAttribute>) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = ifindex;
    m.attributes = attributes;
    m
}

/// `struct rtnl_link_stats64`, all 25 counters of 6.18 (fields missing from an older kernel's
/// reply read 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct LinkStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub multicast: u64,
    pub collisions: u64,
    pub rx_length_errors: u64,
    pub rx_over_errors: u64,
    pub rx_crc_errors: u64,
    pub rx_frame_errors: u64,
    pub rx_fifo_errors: u64,
    pub rx_missed_errors: u64,
    pub tx_aborted_errors: u64,
    pub tx_carrier_errors: u64,
    pub tx_fifo_errors: u64,
    pub tx_heartbeat_errors: u64,
    pub tx_window_errors: u64,
    pub rx_compressed: u64,
    pub tx_compressed: u64,
    pub rx_nohandler: u64,
    pub rx_otherhost_dropped: u64,
}

macro_rules! stats_fields {
    ($m:ident) => {
        $m!(
            rx_packets,
            tx_packets,
            rx_bytes,
            tx_bytes,
            rx_errors,
            tx_errors,
            rx_dropped,
            tx_dropped,
            multicast,
            collisions,
            rx_length_errors,
            rx_over_errors,
            rx_crc_errors,
            rx_frame_errors,
            rx_fifo_errors,
            rx_missed_errors,
            tx_aborted_errors,
            tx_carrier_errors,
            tx_fifo_errors,
            tx_heartbeat_errors,
            tx_window_errors,
            rx_compressed,
            tx_compressed,
            rx_nohandler,
            rx_otherhost_dropped
        )
    };
}

impl LinkStats {
    /// The counters of an `IFLA_STATS64` attribute (netlink-packet-route zero-fills the
    /// fields an older kernel's shorter struct lacks).
    pub fn from_stats64(v: &Stats64) -> Self {
        let mut s = LinkStats::default();
        macro_rules! fill {
            ($($f:ident),*) => { $( s.$f = v.$f; )* };
        }
        stats_fields!(fill);
        s
    }

    /// `self - earlier`, field by field (saturating at 0).
    pub fn since(&self, earlier: &LinkStats) -> LinkStats {
        let mut d = LinkStats::default();
        macro_rules! sub {
            ($($f:ident),*) => { $( d.$f = self.$f.saturating_sub(earlier.$f); )* };
        }
        stats_fields!(sub);
        d
    }

    /// The non-zero counters as `name=value` pairs, for logs and assertion messages.
    pub fn nonzero(&self) -> Vec<(&'static str, u64)> {
        let mut v = Vec::new();
        macro_rules! list {
            ($($f:ident),*) => { $( if self.$f != 0 { v.push((stringify!($f), self.$f)); } )* };
        }
        stats_fields!(list);
        v
    }
}

/// XDP attachment reported by `IFLA_XDP_ATTACHED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpAttached {
    /// No program.
    None,
    /// Native (driver) mode: `ip link` shows `xdp`.
    Driver,
    /// Generic (skb) mode: `xdpgeneric`.
    Generic,
    /// Offloaded to hardware.
    Hardware,
    /// Several modes at once.
    Multi,
    /// A value this crate does not know.
    Other(u8),
}

/// A link as `RTM_GETLINK` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInfo {
    /// ifindex.
    pub index: u32,
    /// `IFLA_IFNAME`.
    pub name: String,
    /// `ifi_flags` (`IFF_UP`, `IFF_RUNNING`, `IFF_LOWER_UP`, ...).
    pub flags: u32,
    /// `IFLA_MTU`.
    pub mtu: Option<u32>,
    /// `IFLA_MASTER`: the bridge this link is a port of.
    pub master: Option<u32>,
    /// `IFLA_LINKINFO/IFLA_INFO_KIND`: "bridge", "veth", "tun", "vxlan", ...
    pub kind: Option<String>,
    /// `IFLA_ADDRESS`.
    pub address: Option<Vec<u8>>,
    /// `IFLA_OPERSTATE` (RFC 2863: 2 down, 6 up, 0 unknown).
    pub operstate: Option<u8>,
    /// `IFLA_CARRIER`.
    pub carrier: Option<bool>,
    /// `IFLA_TXQLEN`.
    pub txqlen: Option<u32>,
    /// `IFLA_GSO_MAX_SIZE`.
    pub gso_max_size: Option<u32>,
    /// `IFLA_GRO_MAX_SIZE`.
    pub gro_max_size: Option<u32>,
    /// `IFLA_GRO_IPV4_MAX_SIZE` (v6.3).
    pub gro_ipv4_max_size: Option<u32>,
    /// `IFLA_XDP/IFLA_XDP_ATTACHED` and `IFLA_XDP_PROG_ID`.
    pub xdp: Option<(XdpAttached, Option<u32>)>,
    /// `IFLA_STATS64`.
    pub stats: Option<LinkStats>,
}

impl LinkInfo {
    /// Whether `IFF_UP` is set.
    pub fn is_up(&self) -> bool {
        self.flags & libc::IFF_UP as u32 != 0
    }

    fn from_msg(msg: &LinkMessage) -> LinkInfo {
        let mut info = LinkInfo {
            index: msg.header.index,
            name: String::new(),
            flags: msg.header.flags.bits(),
            mtu: None,
            master: None,
            kind: None,
            address: None,
            operstate: None,
            carrier: None,
            txqlen: None,
            gso_max_size: None,
            gro_max_size: None,
            gro_ipv4_max_size: None,
            xdp: None,
            stats: None,
        };
        for attr in &msg.attributes {
            match attr {
                LinkAttribute::IfName(n) => info.name = n.clone(),
                LinkAttribute::Mtu(v) => info.mtu = Some(*v),
                LinkAttribute::Controller(v) => info.master = Some(*v),
                LinkAttribute::Address(v) => info.address = Some(v.clone()),
                LinkAttribute::OperState(s) => info.operstate = Some(u8::from(*s)),
                LinkAttribute::Carrier(c) => info.carrier = Some(*c != 0),
                LinkAttribute::TxQueueLen(v) => info.txqlen = Some(*v),
                LinkAttribute::GsoMaxSize(v) => info.gso_max_size = Some(*v),
                LinkAttribute::GroMaxSize(v) => info.gro_max_size = Some(*v),
                LinkAttribute::GroIpv4MaxSize(v) => info.gro_ipv4_max_size = Some(*v),
                LinkAttribute::Stats64(v) => info.stats = Some(LinkStats::from_stats64(v)),
                LinkAttribute::LinkInfo(infos) => {
                    info.kind = infos.iter().find_map(|i| match i {
                        Info::Kind(k) => Some(k.to_string()),
                        _ => None,
                    });
                }
                LinkAttribute::Xdp(xdp) => info.xdp = Some(xdp_state(xdp)),
                _ => {}
            }
        }
        info
    }
}

/// `IFLA_XDP_ATTACHED` and `IFLA_XDP_PROG_ID` (include/uapi/linux/if_link.h `XDP_ATTACHED_*`).
fn xdp_state(xdp: &[LinkXdp]) -> (XdpAttached, Option<u32>) {
    let mut mode = XdpAttached::None;
    let mut prog = None;
    for x in xdp {
        match x {
            LinkXdp::Attached(a) => {
                mode = match a {
                    Attached::None => XdpAttached::None,
                    Attached::Driver => XdpAttached::Driver,
                    Attached::SocketBuffer => XdpAttached::Generic,
                    Attached::Hardware => XdpAttached::Hardware,
                    Attached::Multiple => XdpAttached::Multi,
                    Attached::Other(n) => XdpAttached::Other(*n),
                    _ => XdpAttached::Other(u8::MAX),
                }
            }
            LinkXdp::ProgId(id) => prog = Some(*id),
            _ => {}
        }
    }
    (mode, prog)
}

/// A `NETLINK_ROUTE` socket in the network namespace of the thread that opened it.
///
/// Creating one is refused in the process's main network namespace (see [`crate::Netns`]).
#[derive(Debug)]
pub struct Rtnl {
    sock: NlSocket,
}

impl Rtnl {
    /// Open and bind the socket.
    pub fn new() -> Result<Self, KernelError> {
        Ok(Rtnl {
            sock: NlSocket::open(netlink_sys::constants::NETLINK_ROUTE, "NETLINK_ROUTE")?,
        })
    }

    fn request(&mut self, op: &str, msg: Msg, flags: u16) -> Result<Vec<Msg>, KernelError> {
        self.sock.request(op, msg, flags)
    }

    /// `RTM_GETLINK` by index.
    pub fn link(&mut self, ifindex: u32) -> Result<LinkInfo, KernelError> {
        let op = format!("RTM_GETLINK ifindex {ifindex}");
        self.get_one(&op, link_msg(ifindex, vec![]))
    }

    /// `RTM_GETLINK` by name.
    pub fn link_by_name(&mut self, name: &str) -> Result<LinkInfo, KernelError> {
        let op = format!("RTM_GETLINK {name}");
        self.get_one(&op, link_msg(0, vec![LinkAttribute::IfName(name.into())]))
    }

    fn get_one(&mut self, op: &str, m: LinkMessage) -> Result<LinkInfo, KernelError> {
        let replies = self.request(op, Msg::GetLink(m), 0)?;
        replies
            .iter()
            .find_map(|r| match r {
                Msg::NewLink(l) => Some(LinkInfo::from_msg(l)),
                _ => None,
            })
            .ok_or_else(|| KernelError::new(op, Cause::Protocol("no RTM_NEWLINK in reply".into())))
    }

    /// Every link in the namespace (`RTM_GETLINK` dump).
    pub fn links(&mut self) -> Result<Vec<LinkInfo>, KernelError> {
        let replies = self.request(
            "RTM_GETLINK dump",
            Msg::GetLink(LinkMessage::default()),
            NLM_F_DUMP,
        )?;
        Ok(replies
            .iter()
            .filter_map(|r| match r {
                Msg::NewLink(l) => Some(LinkInfo::from_msg(l)),
                _ => None,
            })
            .collect())
    }

    /// ifindex of a link by name.
    pub fn link_index(&mut self, name: &str) -> Result<u32, KernelError> {
        Ok(self.link_by_name(name)?.index)
    }

    /// The link's `IFLA_STATS64` counters.
    pub fn stats(&mut self, ifindex: u32) -> Result<LinkStats, KernelError> {
        let info = self.link(ifindex)?;
        info.stats.ok_or_else(|| {
            KernelError::new(
                format!("RTM_GETLINK ifindex {ifindex}"),
                Cause::Protocol("no IFLA_STATS64".into()),
            )
        })
    }

    fn set_link(
        &mut self,
        op: &str,
        ifindex: u32,
        attrs: Vec<LinkAttribute>,
    ) -> Result<(), KernelError> {
        self.request(op, Msg::SetLink(link_msg(ifindex, attrs)), 0)
            .map(|_| ())
    }

    /// Set `IFF_UP` on or off.
    pub fn set_up(&mut self, ifindex: u32, up: bool) -> Result<(), KernelError> {
        let op = format!(
            "RTM_SETLINK {} ifindex {ifindex}",
            if up { "up" } else { "down" }
        );
        let mut m = link_msg(ifindex, vec![]);
        m.header.change_mask = LinkFlags::Up;
        if up {
            m.header.flags = LinkFlags::Up;
        }
        self.request(&op, Msg::SetLink(m), 0).map(|_| ())
    }

    /// Make `ifindex` a port of `master` (a bridge), or release it with `None`.
    pub fn set_master(&mut self, ifindex: u32, master: Option<u32>) -> Result<(), KernelError> {
        let op = match master {
            Some(m) => format!("RTM_SETLINK ifindex {ifindex} master {m}"),
            None => format!("RTM_SETLINK ifindex {ifindex} nomaster"),
        };
        let controller = LinkAttribute::Controller(master.unwrap_or(0));
        self.set_link(&op, ifindex, vec![controller])
    }

    /// Set the MTU.
    pub fn set_mtu(&mut self, ifindex: u32, mtu: u32) -> Result<(), KernelError> {
        let op = format!("RTM_SETLINK ifindex {ifindex} mtu {mtu}");
        self.set_link(&op, ifindex, vec![LinkAttribute::Mtu(mtu)])
    }

    /// Set the GRO size limits (`ip link set DEV gro_max_size N gro_ipv4_max_size M`);
    /// `None` leaves one alone. A kernel before v6.3 ignores IFLA_GRO_IPV4_MAX_SIZE.
    pub fn set_gro_max_sizes(
        &mut self,
        ifindex: u32,
        ipv6: Option<u32>,
        ipv4: Option<u32>,
    ) -> Result<(), KernelError> {
        let op = format!(
            "RTM_SETLINK ifindex {ifindex} gro_max_size {ipv6:?} gro_ipv4_max_size {ipv4:?}"
        );
        let mut attrs = Vec::new();
        attrs.extend(ipv6.map(LinkAttribute::GroMaxSize));
        attrs.extend(ipv4.map(LinkAttribute::GroIpv4MaxSize));
        self.set_link(&op, ifindex, attrs)
    }

    /// Set the MAC address.
    pub fn set_address(&mut self, ifindex: u32, mac: [u8; 6]) -> Result<(), KernelError> {
        let op = format!("RTM_SETLINK ifindex {ifindex} address");
        self.set_link(&op, ifindex, vec![LinkAttribute::Address(mac.to_vec())])
    }

    /// Attach an XDP program by fd (`IFLA_XDP {FD, FLAGS}`); `fd = -1` detaches. Flags:
    /// `XDP_FLAGS_SKB_MODE` = 2, `XDP_FLAGS_DRV_MODE` = 4, `XDP_FLAGS_UPDATE_IF_NOEXIST` = 1.
    pub fn set_xdp_fd(&mut self, ifindex: u32, fd: i32, flags: u32) -> Result<(), KernelError> {
        let op = format!("RTM_SETLINK ifindex {ifindex} IFLA_XDP fd {fd} flags {flags:#x}");
        let xdp = LinkAttribute::Xdp(vec![LinkXdp::Fd(fd), LinkXdp::Flags(flags)]);
        self.set_link(&op, ifindex, vec![xdp])
    }

    /// `RTM_NEWLINK` (create, exclusive) of `kind` with optional `IFLA_INFO_DATA` attributes;
    /// returns the new ifindex. The link starts down.
    pub fn create_link(
        &mut self,
        name: &str,
        kind: &str,
        info_data: &[Nla],
    ) -> Result<u32, KernelError> {
        let data = (!info_data.is_empty()).then(|| InfoData::Other(emit_nlas(info_data)));
        self.create(name, InfoKind::from(kind), data)?;
        self.link_index(name)
    }

    /// `RTM_NEWLINK` with `NLM_F_CREATE | NLM_F_EXCL`: `IFLA_IFNAME`, then `IFLA_LINKINFO`
    /// with the kind and its `IFLA_INFO_DATA`.
    fn create(
        &mut self,
        name: &str,
        kind: InfoKind,
        data: Option<InfoData>,
    ) -> Result<(), KernelError> {
        let op = format!("RTM_NEWLINK {kind} {name}");
        let mut info = vec![Info::Kind(kind)];
        info.extend(data.map(Info::Data));
        let m = link_msg(
            0,
            vec![
                LinkAttribute::IfName(name.into()),
                LinkAttribute::LinkInfo(info),
            ],
        );
        self.request(&op, Msg::NewLink(m), NLM_F_CREATE | NLM_F_EXCL)
            .map(|_| ())
    }

    /// A plain bridge (no VLAN filtering, STP off: ports forward as soon as they are up).
    pub fn create_bridge(&mut self, name: &str) -> Result<u32, KernelError> {
        self.create(name, InfoKind::Bridge, None)?;
        self.link_index(name)
    }

    /// A plain bridge that sends nothing of its own: also multicast snooping off
    /// (`IFLA_BR_MCAST_SNOOPING` 0). With snooping on (the default), a bridge that goes up
    /// joins the all-snoopers group 224.0.0.106 and floods IGMPv3 reports
    /// (01:00:5e:00:00:16) out of every port within seconds, which a reader on a port
    /// would read as frames nobody wrote.
    pub fn create_quiet_bridge(&mut self, name: &str) -> Result<u32, KernelError> {
        let data = InfoData::Bridge(vec![InfoBridge::MulticastSnooping(false)]);
        self.create(name, InfoKind::Bridge, Some(data))?;
        self.link_index(name)
    }

    /// Delete the bridge's learned (non-static) fdb entries: `IFLA_BR_FDB_FLUSH` through
    /// `RTM_NEWLINK` on the existing bridge (br_changelink: br_fdb_flush), synchronous.
    pub fn bridge_fdb_flush(&mut self, bridge: u32) -> Result<(), KernelError> {
        let op = format!("RTM_NEWLINK ifindex {bridge} IFLA_BR_FDB_FLUSH");
        let info = vec![
            Info::Kind(InfoKind::Bridge),
            Info::Data(InfoData::Bridge(vec![InfoBridge::FdbFlush])),
        ];
        let m = link_msg(bridge, vec![LinkAttribute::LinkInfo(info)]);
        self.request(&op, Msg::NewLink(m), 0).map(|_| ())
    }

    /// Set `tx_queue_len` (`IFLA_TXQLEN`); for a tun/tap this resizes its tx_ring.
    pub fn set_txqlen(&mut self, ifindex: u32, len: u32) -> Result<(), KernelError> {
        let op = format!("RTM_SETLINK ifindex {ifindex} txqueuelen {len}");
        self.set_link(&op, ifindex, vec![LinkAttribute::TxQueueLen(len)])
    }

    /// A veth pair; returns both ifindexes.
    pub fn create_veth(&mut self, name: &str, peer: &str) -> Result<(u32, u32), KernelError> {
        // VETH_INFO_PEER carries a struct ifinfomsg followed by the peer's attributes.
        let peer_msg = link_msg(0, vec![LinkAttribute::IfName(peer.into())]);
        let data = InfoData::Veth(InfoVeth::Peer(peer_msg));
        self.create(name, InfoKind::Veth, Some(data))?;
        Ok((self.link_index(name)?, self.link_index(peer)?))
    }

    /// `RTM_DELLINK`.
    pub fn delete_link(&mut self, ifindex: u32) -> Result<(), KernelError> {
        let op = format!("RTM_DELLINK ifindex {ifindex}");
        self.request(&op, Msg::DelLink(link_msg(ifindex, vec![])), 0)
            .map(|_| ())
    }

    /// `ip addr add ADDR/PREFIX dev IFINDEX` (`RTM_NEWADDR`, exclusive). An IPv4 address goes
    /// in both `IFA_LOCAL` and `IFA_ADDRESS` (what iproute2 sends); an IPv6 one in
    /// `IFA_ADDRESS` with `IFA_F_NODAD`, so it is usable at once instead of tentative
    /// (net/ipv6/addrconf.c: inet6_rtm_newaddr).
    pub fn add_address(
        &mut self,
        ifindex: u32,
        addr: IpAddr,
        prefix: u8,
    ) -> Result<(), KernelError> {
        let op = match addr {
            IpAddr::V4(_) => format!("RTM_NEWADDR {addr}/{prefix} ifindex {ifindex}"),
            IpAddr::V6(_) => format!("RTM_NEWADDR {addr}/{prefix} nodad ifindex {ifindex}"),
        };
        let mut m = AddressMessage::default();
        m.header.prefix_len = prefix;
        m.header.index = ifindex;
        match addr {
            IpAddr::V4(_) => {
                m.header.family = AddressFamily::Inet;
                m.attributes = vec![
                    AddressAttribute::Local(addr),
                    AddressAttribute::Address(addr),
                ];
            }
            IpAddr::V6(_) => {
                m.header.family = AddressFamily::Inet6;
                m.header.flags = AddressHeaderFlags::Nodad;
                m.attributes = vec![AddressAttribute::Address(addr)];
            }
        }
        self.request(&op, Msg::NewAddress(m), NLM_F_CREATE | NLM_F_EXCL)
            .map(|_| ())
    }

    /// `ip neigh add ADDR lladdr MAC dev IFINDEX nud permanent` (`RTM_NEWNEIGH`, exclusive).
    pub fn add_neighbour(
        &mut self,
        ifindex: u32,
        addr: std::net::Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<(), KernelError> {
        let op = format!("RTM_NEWNEIGH {:?} ifindex {ifindex}", addr.octets());
        let mut m = NeighbourMessage::default();
        m.header.family = AddressFamily::Inet;
        m.header.ifindex = ifindex;
        m.header.state = NeighbourState::Permanent;
        m.attributes = vec![
            NeighbourAttribute::Destination(NeighbourAddress::Inet(addr)),
            NeighbourAttribute::LinkLayerAddress(mac.to_vec()),
        ];
        self.request(&op, Msg::NewNeighbour(m), NLM_F_CREATE | NLM_F_EXCL)
            .map(|_| ())
    }
}
