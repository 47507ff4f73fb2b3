//! [`Stack`]: a deterministic responder behind each simulated device (smoltcp), standing
//! for the host's own IP stack on the far side of the tun/tap. Per device: a smoltcp
//! `Interface` (Medium::Ip for IFF_TUN, Medium::Ethernet with the fixed MAC
//! [`STACK_MAC`] for IFF_TAP) holding the configured addresses, answering ARP, NDP and
//! ICMP/ICMPv6 echo for them, a UDP echo socket on [`UDP_ECHO_PORT`] (answering from
//! the address the datagram was sent to) and a TCP echo listener on [`TCP_ECHO_PORT`]
//! (one connection at a time, no delayed ACK, no Nagle: the clock only moves with
//! frames). The addresses are the `--far-addr` ones and
//! the IPv4 address the program gave the device (SIOCSIFADDR: [`FarSide::address`]). Time is a
//! virtual clock advanced by 1 ms per frame received: no wall clock, so a run's answers
//! are the same every time.
//!
//! A CHECKSUM_PARTIAL skb (a virtio_net_hdr with NEEDS_CSUM) has its checksum completed
//! and a GSO TCP skb (SKB_GSO_TCPV4/TCPV6: a guest's TSO) is cut into gso_size segments
//! before the responder sees it (src/segment.rs). Other GSO skbs (UDP, tunnels) are
//! refused and counted ([`Stack::refused_gso`]).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use sim::skb::{gso, IpSummed, SkBuff};
use sim::tun::DeviceKind;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetAddress, HardwareAddress, IpCidr, IpProtocol, Ipv4Address, Ipv4Packet,
};

use crate::device::FarSide;
use crate::segment;
use crate::Ifa;

/// The far side's MAC on a tap (locally administered).
pub const STACK_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// UDP port whose datagrams are sent back to their sender (RFC 862 echo).
pub const UDP_ECHO_PORT: u16 = 7;
/// TCP port whose connection's bytes are sent back (RFC 862 echo).
pub const TCP_ECHO_PORT: u16 = 7;
/// Headroom of the skbs the stack transmits (LL_RESERVED_SPACE-like; any value works).
pub(crate) const HEADROOM: usize = 64;

/// In-memory frames between the device model and one smoltcp interface.
#[derive(Debug)]
struct Queues {
    medium: Medium,
    rx: VecDeque<Vec<u8>>,
    tx: Vec<Vec<u8>>,
}

struct RxToken(Vec<u8>);
struct TxToken<'a>(&'a mut Vec<Vec<u8>>);

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut buf = vec![0u8; len];
        let r = f(&mut buf);
        self.0.push(buf);
        r
    }
}

impl phy::Device for Queues {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(RxToken, TxToken<'_>)> {
        let frame = self.rx.pop_front()?;
        Some((RxToken(frame), TxToken(&mut self.tx)))
    }

    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_>> {
        Some(TxToken(&mut self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = self.medium;
        caps.max_transmission_unit = 65535;
        caps
    }
}

/// One device's responder.
struct Responder {
    iface: Interface,
    dev: Queues,
    sockets: SocketSet<'static>,
    udp: SocketHandle,
    tcp: SocketHandle,
}

impl Responder {
    fn new(kind: DeviceKind, addrs: &[IpCidr], now: Instant) -> Responder {
        let (medium, hw) = match kind {
            DeviceKind::Tap => (
                Medium::Ethernet,
                HardwareAddress::Ethernet(EthernetAddress(STACK_MAC)),
            ),
            DeviceKind::Tun => (Medium::Ip, HardwareAddress::Ip),
        };
        let mut dev = Queues {
            medium,
            rx: VecDeque::new(),
            tx: Vec::new(),
        };
        let mut iface = Interface::new(Config::new(hw), &mut dev, now);
        set_addrs(&mut iface, addrs);
        let buf = || udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 16], vec![0; 65535]);
        let mut sock = udp::Socket::new(buf(), buf());
        // Binding a fresh socket to a non-zero port cannot fail.
        let _ = sock.bind(UDP_ECHO_PORT);
        let mut sockets = SocketSet::new(Vec::new());
        let udp = sockets.add(sock);
        let tcp = sockets.add(tcp_listener());
        Responder {
            iface,
            dev,
            sockets,
            udp,
            tcp,
        }
    }

    /// One frame in, the frames smoltcp sends in answer out.
    fn answer(&mut self, frame: Vec<u8>, now: Instant) -> Vec<Vec<u8>> {
        self.dev.rx.push_back(frame);
        self.iface.poll(now, &mut self.dev, &mut self.sockets);
        let sock = self.sockets.get_mut::<udp::Socket>(self.udp);
        // The answer's source is the datagram's destination (meta.local_address), as
        // from an echo server bound to that address.
        while let Ok((data, meta)) = sock.recv() {
            let data = data.to_vec();
            let _ = sock.send_slice(&data, meta);
        }
        tcp_echo(self.sockets.get_mut::<tcp::Socket>(self.tcp));
        self.iface.poll(now, &mut self.dev, &mut self.sockets);
        std::mem::take(&mut self.dev.tx)
    }
}

/// The interface's addresses: `addrs` (the `--far-addr` ones first, so they are the
/// source smoltcp picks for what it originates), as many as smoltcp holds.
fn set_addrs(iface: &mut Interface, addrs: &[IpCidr]) {
    iface.update_ip_addrs(|a| {
        a.clear();
        for c in addrs {
            let _ = a.push(*c);
        }
    });
}

/// The responders, one per device, created on the device's first frame.
pub struct Stack {
    addrs: Vec<IpCidr>,
    /// The IPv4 address each device was given (SIOCSIFADDR).
    dev_addrs: BTreeMap<Vec<u8>, IpCidr>,
    clock_ms: i64,
    per_dev: BTreeMap<Vec<u8>, Responder>,
    refused_gso: u64,
}

impl fmt::Debug for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stack")
            .field("addrs", &self.addrs)
            .field("clock_ms", &self.clock_ms)
            .field("refused_gso", &self.refused_gso)
            .finish_non_exhaustive()
    }
}

impl Stack {
    /// A stack holding `addrs` on every device.
    pub fn new(addrs: Vec<IpCidr>) -> Stack {
        Stack {
            addrs,
            dev_addrs: BTreeMap::new(),
            clock_ms: 0,
            per_dev: BTreeMap::new(),
            refused_gso: 0,
        }
    }

    /// GSO skbs refused (not segmented; see the module docs).
    pub fn refused_gso(&self) -> u64 {
        self.refused_gso
    }

    /// The addresses the stack holds on the device named `dev`.
    fn addrs_of(&self, dev: &[u8]) -> Vec<IpCidr> {
        let mut a = self.addrs.clone();
        a.extend(self.dev_addrs.get(dev));
        a
    }
}

impl FarSide for Stack {
    fn receive(&mut self, dev: &[u8], kind: DeviceKind, mut skb: SkBuff) -> Vec<SkBuff> {
        // eth_type_trans pulled the Ethernet header: the responder wants the frame.
        let mut l3 = 0;
        if let (DeviceKind::Tap, Some(mac)) = (kind, skb.mac_header) {
            l3 = skb.data_offset().saturating_sub(mac);
            if skb.push(l3).is_err() {
                return Vec::new();
            }
        }
        let Some(frames) = whole_packets(&skb, l3) else {
            self.refused_gso += 1;
            return Vec::new();
        };
        let addrs = self.addrs_of(dev);
        let mut answers = Vec::new();
        for frame in frames {
            self.clock_ms += 1;
            let now = Instant::from_millis(self.clock_ms);
            let r = self
                .per_dev
                .entry(dev.to_vec())
                .or_insert_with(|| Responder::new(kind, &addrs, now));
            answers.extend(r.answer(frame, now));
        }
        answers
            .into_iter()
            .map(|mut f| {
                icmp_without_df(&mut f, kind);
                let mut out = SkBuff::from_frame(&f, HEADROOM, f.len());
                out.protocol = match kind {
                    DeviceKind::Tap => u16::from_be_bytes([f[12], f[13]]),
                    DeviceKind::Tun if f.first().is_some_and(|b| b >> 4 == 6) => 0x86dd,
                    DeviceKind::Tun => 0x0800,
                };
                out
            })
            .collect()
    }

    fn address(&mut self, dev: &[u8], _kind: DeviceKind, ifa: Option<Ifa>) {
        match ifa {
            Some(ifa) => {
                let ip = Ipv4Address::from(ifa.local);
                self.dev_addrs
                    .insert(dev.to_vec(), IpCidr::new(ip.into(), ifa.prefix));
            }
            None => {
                self.dev_addrs.remove(dev);
            }
        }
        let addrs = self.addrs_of(dev);
        if let Some(r) = self.per_dev.get_mut(dev) {
            set_addrs(&mut r.iface, &addrs);
        }
    }
}

/// The skb (data at the frame's start, the network header `l3` bytes in) as the packets
/// the responder takes: its checksum completed when CHECKSUM_PARTIAL, a GSO TCP skb cut
/// into its segments (src/segment.rs); None for another GSO skb.
fn whole_packets(skb: &SkBuff, l3: usize) -> Option<Vec<Vec<u8>>> {
    let mut frame = skb.to_vec();
    if skb.is_gso() {
        if skb.gso_type & (gso::TCPV4 | gso::TCPV6) == 0 {
            return None;
        }
        let fixed_id = skb.gso_type & gso::TCP_FIXEDID != 0;
        return segment::tcp_segments(&frame, l3, usize::from(skb.gso_size), fixed_id);
    }
    if skb.ip_summed == IpSummed::Partial {
        let start = skb.checksum_start_offset();
        // A field outside the packet: the kernel drops it (skb_checksum_help's EINVAL);
        // the responder would drop its bad checksum the same.
        let _ = segment::checksum_help(&mut frame, start, usize::from(skb.csum_offset));
    }
    Some(vec![frame])
}

/// The TCP echo socket, listening.
fn tcp_listener() -> tcp::Socket<'static> {
    let buf = || tcp::SocketBuffer::new(vec![0; 65535]);
    let mut sock = tcp::Socket::new(buf(), buf());
    // Time moves 1 ms per frame: a delayed ACK or a Nagle hold would wait for the
    // program's next frame, which may be waiting for it.
    sock.set_ack_delay(None);
    sock.set_nagle_enabled(false);
    // Listening on a fresh socket with a non-zero port cannot fail.
    let _ = sock.listen(TCP_ECHO_PORT);
    sock
}

/// What the connection received goes back (as much as the send buffer takes); the
/// peer's FIN is answered by ours once everything is sent; a closed socket listens again.
fn tcp_echo(sock: &mut tcp::Socket<'static>) {
    let room = sock.send_capacity() - sock.send_queue();
    if sock.can_recv() && room > 0 {
        let data = sock
            .recv(|b| {
                let n = b.len().min(room);
                (n, b[..n].to_vec())
            })
            .unwrap_or_default();
        let _ = sock.send_slice(&data);
    }
    if sock.state() == tcp::State::CloseWait && sock.send_queue() == 0 && !sock.can_recv() {
        sock.close();
    }
    if !sock.is_open() {
        let _ = sock.listen(TCP_ECHO_PORT);
    }
}

/// An ICMP packet the kernel sends (an echo reply) has DF clear: its ICMP sockets are
/// IP_PMTUDISC_DONT (net/ipv4/icmp.c: icmp_init); smoltcp sets DF on everything. Cleared
/// here, with the header checksum refilled.
fn icmp_without_df(frame: &mut [u8], kind: DeviceKind) {
    let at = match kind {
        DeviceKind::Tap if frame.get(12..14) == Some(&[0x08, 0x00]) => 14,
        DeviceKind::Tun => 0,
        DeviceKind::Tap => return,
    };
    let Some(ip) = frame.get_mut(at..) else {
        return;
    };
    if let Ok(mut p) = Ipv4Packet::new_checked(ip) {
        if p.version() == 4 && p.next_header() == IpProtocol::Icmp && p.dont_frag() {
            p.set_dont_frag(false);
            p.fill_checksum();
        }
    }
}

/// `ADDR/PREFIX` (IPv4 or IPv6), as `ip addr add` takes it; the error names what is wrong.
pub fn parse_cidr(s: &str) -> Result<IpCidr, String> {
    let (addr, len) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?}: expected ADDRESS/PREFIX"))?;
    let ip: std::net::IpAddr = addr
        .parse()
        .map_err(|_| format!("{s:?}: {addr:?} is not an IP address"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len: u8 = len
        .parse()
        .ok()
        .filter(|l| *l <= max)
        .ok_or_else(|| format!("{s:?}: prefix length must be 0..={max}"))?;
    Ok(IpCidr::new(ip.into(), len))
}

#[cfg(test)]
#[path = "stack_tcp_tests.rs"]
mod tcp_tests;
