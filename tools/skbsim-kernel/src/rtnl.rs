//! `NETLINK_ROUTE` link operations: look up, create (bridge, veth, any kind), enslave, set
//! up/down, read `IFLA_STATS64`, attach XDP by fd.

use crate::error::{Cause, KernelError};
use crate::netlink::{
    attr_string, attr_u32, attrs, MsgBuilder, NlSocket, Nla, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL,
};

const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_GETLINK: u16 = 18;
const RTM_SETLINK: u16 = 19;

const IFLA_ADDRESS: u16 = 1;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_MASTER: u16 = 10;
const IFLA_TXQLEN: u16 = 13;
const IFLA_OPERSTATE: u16 = 16;
const IFLA_LINKINFO: u16 = 18;
const IFLA_STATS64: u16 = 23;
const IFLA_CARRIER: u16 = 33;
const IFLA_GSO_MAX_SIZE: u16 = 40;
const IFLA_XDP: u16 = 43;
const IFLA_GRO_MAX_SIZE: u16 = 58;
/// include/uapi/linux/if_link.h (v6.3; libc stops at IFLA_ALLMULTI, 61).
const IFLA_GRO_IPV4_MAX_SIZE: u16 = 64;

const IFLA_INFO_KIND: u16 = 1;
/// `IFLA_BR_MCAST_SNOOPING` inside a bridge's `IFLA_INFO_DATA`.
const IFLA_BR_MCAST_SNOOPING: u16 = 23;
/// `IFLA_BR_FDB_FLUSH` (a flag) inside a bridge's `IFLA_INFO_DATA`.
const IFLA_BR_FDB_FLUSH: u16 = 21;
const IFLA_INFO_DATA: u16 = 2;
const VETH_INFO_PEER: u16 = 1;

const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_ATTACHED: u16 = 2;
const IFLA_XDP_FLAGS: u16 = 3;
const IFLA_XDP_PROG_ID: u16 = 4;

/// `struct ifinfomsg`.
fn ifinfomsg(index: u32, flags: u32, change: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0] = libc::AF_UNSPEC as u8;
    b[4..8].copy_from_slice(&(index as i32).to_ne_bytes());
    b[8..12].copy_from_slice(&flags.to_ne_bytes());
    b[12..16].copy_from_slice(&change.to_ne_bytes());
    b
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
    /// Parse the `IFLA_STATS64` payload (native-endian u64 array, in field order).
    pub fn from_bytes(b: &[u8]) -> Self {
        let mut words = b
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        let mut s = LinkStats::default();
        macro_rules! fill {
            ($($f:ident),*) => { $( s.$f = words.next().unwrap_or(0); )* };
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

    fn parse(payload: &[u8]) -> Option<LinkInfo> {
        let hdr = payload.get(..16)?;
        let index = i32::from_ne_bytes(hdr[4..8].try_into().ok()?) as u32;
        let flags = u32::from_ne_bytes(hdr[8..12].try_into().ok()?);
        let mut info = LinkInfo {
            index,
            name: String::new(),
            flags,
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
        for (ty, v) in attrs(&payload[16..]) {
            match ty {
                IFLA_IFNAME => info.name = attr_string(v),
                IFLA_MTU => info.mtu = attr_u32(v),
                IFLA_MASTER => info.master = attr_u32(v),
                IFLA_ADDRESS => info.address = Some(v.to_vec()),
                IFLA_OPERSTATE => info.operstate = v.first().copied(),
                IFLA_CARRIER => info.carrier = v.first().map(|&c| c != 0),
                IFLA_TXQLEN => info.txqlen = attr_u32(v),
                IFLA_GSO_MAX_SIZE => info.gso_max_size = attr_u32(v),
                IFLA_GRO_MAX_SIZE => info.gro_max_size = attr_u32(v),
                IFLA_GRO_IPV4_MAX_SIZE => info.gro_ipv4_max_size = attr_u32(v),
                IFLA_STATS64 => info.stats = Some(LinkStats::from_bytes(v)),
                IFLA_LINKINFO => {
                    for (ity, iv) in attrs(v) {
                        if ity == IFLA_INFO_KIND {
                            info.kind = Some(attr_string(iv));
                        }
                    }
                }
                IFLA_XDP => {
                    let mut mode = XdpAttached::None;
                    let mut prog = None;
                    for (xty, xv) in attrs(v) {
                        match xty {
                            IFLA_XDP_ATTACHED => {
                                mode = match xv.first().copied().unwrap_or(0) {
                                    0 => XdpAttached::None,
                                    1 => XdpAttached::Driver,
                                    2 => XdpAttached::Generic,
                                    3 => XdpAttached::Hardware,
                                    4 => XdpAttached::Multi,
                                    n => XdpAttached::Other(n),
                                }
                            }
                            IFLA_XDP_PROG_ID => prog = attr_u32(xv),
                            _ => {}
                        }
                    }
                    info.xdp = Some((mode, prog));
                }
                _ => {}
            }
        }
        Some(info)
    }
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
            sock: NlSocket::open(libc::NETLINK_ROUTE, "NETLINK_ROUTE")?,
        })
    }

    /// `RTM_GETLINK` by index.
    pub fn link(&mut self, ifindex: u32) -> Result<LinkInfo, KernelError> {
        let op = format!("RTM_GETLINK ifindex {ifindex}");
        let mut m = MsgBuilder::new(RTM_GETLINK, 0);
        m.header(&ifinfomsg(ifindex, 0, 0));
        self.get_one(&op, m)
    }

    /// `RTM_GETLINK` by name.
    pub fn link_by_name(&mut self, name: &str) -> Result<LinkInfo, KernelError> {
        let op = format!("RTM_GETLINK {name}");
        let mut m = MsgBuilder::new(RTM_GETLINK, 0);
        m.header(&ifinfomsg(0, 0, 0)).attr_str(IFLA_IFNAME, name);
        self.get_one(&op, m)
    }

    fn get_one(&mut self, op: &str, m: MsgBuilder) -> Result<LinkInfo, KernelError> {
        let replies = self.sock.request(op, m)?;
        replies
            .iter()
            .filter(|r| r.ty == RTM_NEWLINK)
            .find_map(|r| LinkInfo::parse(&r.payload))
            .ok_or_else(|| KernelError::new(op, Cause::Protocol("no RTM_NEWLINK in reply".into())))
    }

    /// Every link in the namespace (`RTM_GETLINK` dump).
    pub fn links(&mut self) -> Result<Vec<LinkInfo>, KernelError> {
        let mut m = MsgBuilder::new(RTM_GETLINK, NLM_F_DUMP);
        m.header(&ifinfomsg(0, 0, 0));
        let replies = self.sock.request("RTM_GETLINK dump", m)?;
        Ok(replies
            .iter()
            .filter(|r| r.ty == RTM_NEWLINK)
            .filter_map(|r| LinkInfo::parse(&r.payload))
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
        flags: u32,
        change: u32,
        attrs: &[Nla],
    ) -> Result<(), KernelError> {
        let mut m = MsgBuilder::new(RTM_SETLINK, 0);
        m.header(&ifinfomsg(ifindex, flags, change));
        for a in attrs {
            m.nla(a);
        }
        self.sock.request(op, m).map(|_| ())
    }

    /// Set `IFF_UP` on or off.
    pub fn set_up(&mut self, ifindex: u32, up: bool) -> Result<(), KernelError> {
        let op = format!(
            "RTM_SETLINK {} ifindex {ifindex}",
            if up { "up" } else { "down" }
        );
        let iff_up = libc::IFF_UP as u32;
        self.set_link(&op, ifindex, if up { iff_up } else { 0 }, iff_up, &[])
    }

    /// Make `ifindex` a port of `master` (a bridge), or release it with `None`.
    pub fn set_master(&mut self, ifindex: u32, master: Option<u32>) -> Result<(), KernelError> {
        let op = match master {
            Some(m) => format!("RTM_SETLINK ifindex {ifindex} master {m}"),
            None => format!("RTM_SETLINK ifindex {ifindex} nomaster"),
        };
        self.set_link(
            &op,
            ifindex,
            0,
            0,
            &[Nla::u32(IFLA_MASTER, master.unwrap_or(0))],
        )
    }

    /// Set the MTU.
    pub fn set_mtu(&mut self, ifindex: u32, mtu: u32) -> Result<(), KernelError> {
        let op = format!("RTM_SETLINK ifindex {ifindex} mtu {mtu}");
        self.set_link(&op, ifindex, 0, 0, &[Nla::u32(IFLA_MTU, mtu)])
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
        attrs.extend(ipv6.map(|v| Nla::u32(IFLA_GRO_MAX_SIZE, v)));
        attrs.extend(ipv4.map(|v| Nla::u32(IFLA_GRO_IPV4_MAX_SIZE, v)));
        self.set_link(&op, ifindex, 0, 0, &attrs)
    }

    /// Set the MAC address.
    pub fn set_address(&mut self, ifindex: u32, mac: [u8; 6]) -> Result<(), KernelError> {
        let op = format!("RTM_SETLINK ifindex {ifindex} address");
        self.set_link(&op, ifindex, 0, 0, &[Nla::bytes(IFLA_ADDRESS, &mac)])
    }

    /// Attach an XDP program by fd (`IFLA_XDP {FD, FLAGS}`); `fd = -1` detaches. Flags:
    /// `XDP_FLAGS_SKB_MODE` = 2, `XDP_FLAGS_DRV_MODE` = 4, `XDP_FLAGS_UPDATE_IF_NOEXIST` = 1.
    pub fn set_xdp_fd(&mut self, ifindex: u32, fd: i32, flags: u32) -> Result<(), KernelError> {
        let op = format!("RTM_SETLINK ifindex {ifindex} IFLA_XDP fd {fd} flags {flags:#x}");
        let xdp = Nla::nested(
            IFLA_XDP,
            vec![
                Nla::bytes(IFLA_XDP_FD, &fd.to_ne_bytes()),
                Nla::u32(IFLA_XDP_FLAGS, flags),
            ],
        );
        self.set_link(&op, ifindex, 0, 0, &[xdp])
    }

    /// `RTM_NEWLINK` (create, exclusive) of `kind` with optional `IFLA_INFO_DATA` attributes;
    /// returns the new ifindex. The link starts down.
    pub fn create_link(
        &mut self,
        name: &str,
        kind: &str,
        info_data: &[Nla],
    ) -> Result<u32, KernelError> {
        let op = format!("RTM_NEWLINK {kind} {name}");
        self.new_link(&op, name, kind, info_data, &[])?;
        self.link_index(name)
    }

    fn new_link(
        &mut self,
        op: &str,
        name: &str,
        kind: &str,
        info_data: &[Nla],
        extra: &[Nla],
    ) -> Result<(), KernelError> {
        let mut m = MsgBuilder::new(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
        m.header(&ifinfomsg(0, 0, 0)).attr_str(IFLA_IFNAME, name);
        for a in extra {
            m.nla(a);
        }
        let mut li = vec![Nla::string(IFLA_INFO_KIND, kind)];
        if !info_data.is_empty() {
            li.push(Nla::nested(IFLA_INFO_DATA, info_data.to_vec()));
        }
        m.nla(&Nla::nested(IFLA_LINKINFO, li));
        self.sock.request(op, m).map(|_| ())
    }

    /// A plain bridge (no VLAN filtering, STP off: ports forward as soon as they are up).
    pub fn create_bridge(&mut self, name: &str) -> Result<u32, KernelError> {
        self.create_link(name, "bridge", &[])
    }

    /// A plain bridge that sends nothing of its own: also multicast snooping off
    /// (`IFLA_BR_MCAST_SNOOPING` 0). With snooping on (the default), a bridge that goes up
    /// joins the all-snoopers group 224.0.0.106 and floods IGMPv3 reports
    /// (01:00:5e:00:00:16) out of every port within seconds, which a reader on a port
    /// would read as frames nobody wrote.
    pub fn create_quiet_bridge(&mut self, name: &str) -> Result<u32, KernelError> {
        self.create_link(name, "bridge", &[Nla::u8(IFLA_BR_MCAST_SNOOPING, 0)])
    }

    /// Delete the bridge's learned (non-static) fdb entries: `IFLA_BR_FDB_FLUSH` through
    /// `RTM_NEWLINK` on the existing bridge (br_changelink: br_fdb_flush), synchronous.
    pub fn bridge_fdb_flush(&mut self, bridge: u32) -> Result<(), KernelError> {
        let op = format!("RTM_NEWLINK ifindex {bridge} IFLA_BR_FDB_FLUSH");
        let mut m = MsgBuilder::new(RTM_NEWLINK, 0);
        m.header(&ifinfomsg(bridge, 0, 0));
        m.nla(&Nla::nested(
            IFLA_LINKINFO,
            vec![
                Nla::string(IFLA_INFO_KIND, "bridge"),
                Nla::nested(IFLA_INFO_DATA, vec![Nla::bytes(IFLA_BR_FDB_FLUSH, &[])]),
            ],
        ));
        self.sock.request(&op, m).map(|_| ())
    }

    /// Set `tx_queue_len` (`IFLA_TXQLEN`); for a tun/tap this resizes its tx_ring.
    pub fn set_txqlen(&mut self, ifindex: u32, len: u32) -> Result<(), KernelError> {
        let op = format!("RTM_SETLINK ifindex {ifindex} txqueuelen {len}");
        self.set_link(&op, ifindex, 0, 0, &[Nla::u32(IFLA_TXQLEN, len)])
    }

    /// A veth pair; returns both ifindexes.
    pub fn create_veth(&mut self, name: &str, peer: &str) -> Result<(u32, u32), KernelError> {
        let op = format!("RTM_NEWLINK veth {name} peer {peer}");
        // VETH_INFO_PEER carries a struct ifinfomsg followed by the peer's attributes.
        let mut peer_payload = ifinfomsg(0, 0, 0).to_vec();
        let mut name_attr = MsgBuilder::new(0, 0);
        name_attr.attr_str(IFLA_IFNAME, peer);
        peer_payload.extend_from_slice(name_attr.body());
        let info = [Nla::bytes(VETH_INFO_PEER, &peer_payload)];
        self.new_link(&op, name, "veth", &info, &[])?;
        Ok((self.link_index(name)?, self.link_index(peer)?))
    }

    /// `RTM_DELLINK`.
    pub fn delete_link(&mut self, ifindex: u32) -> Result<(), KernelError> {
        let op = format!("RTM_DELLINK ifindex {ifindex}");
        let mut m = MsgBuilder::new(RTM_DELLINK, 0);
        m.header(&ifinfomsg(ifindex, 0, 0));
        self.sock.request(&op, m).map(|_| ())
    }
}
