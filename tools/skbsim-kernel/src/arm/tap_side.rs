//! The host side of the `tap-write` and `vhost-tx` arms: tap A as the scenario's
//! `[device]` says, the redirect target B, the XDP program attached to A, an AF_PACKET
//! socket on A for what the stack received; after each write (or vhost kick) the stack's
//! frames and what A's and B's fds return, as the simulator's [`WriteEvent`]s.

use std::time::{Duration, Instant};

use sim::bpf::{Maps, Program};
use sim::errno::Errno as SimErrno;
use sim::net::Delivery;
use sim::pipeline::tap_write::{WriteEvent, IFINDEX_DUT, IFINDEX_REDIRECT};
use sim::pipeline::tun_read::{header_len, ReadRecord};
use sim::scenario::Scenario;
use sim::skb::VlanTag;
use sim::tun::{DeviceKind, TunConfig, VnetEndian, DEFAULT_VNET_HDR_SZ, TUN_READQ_SIZE};

use super::{kerr, offload_bits, tun_stats, ArmError};
use crate::bpf::{attach_xdp, attached_as, LoadedXdp, XdpMode};
use crate::error::{Cause, Errno, KernelError};
use crate::ethtool::Ethtool;
use crate::netns::Netns;
use crate::packet::{pkttype, PacketSocket};
use crate::tap::{Tap, TapConfig};

/// The tap written to (A).
pub const WRITE_NAME: &str = "skbwa";
/// The redirect target (B).
pub const REDIRECT_NAME: &str = "skbwb";
/// How long the arm waits after the last write for anything late.
pub const LATE_WAIT: Duration = Duration::from_millis(50);
/// `TUNSETSNDBUF` value for `sndbuf = true`: anything but `INT_MAX` disables build_skb.
pub const SNDBUF: i32 = i32::MAX - 1;

/// Create and configure a tap from a scenario device, then bring it up if `dev.up`.
pub fn open_device(
    ns: &mut Netns,
    name: &str,
    dev: &TunConfig,
    nonblocking: bool,
) -> Result<Tap, KernelError> {
    open_device_mq(ns, name, dev, nonblocking, false)
}

/// [`open_device`], with IFF_MULTI_QUEUE when `multi_queue` (the returned file is queue
/// 0; [`Tap::open_queue`] opens the others).
pub fn open_device_mq(
    ns: &mut Netns,
    name: &str,
    dev: &TunConfig,
    nonblocking: bool,
    multi_queue: bool,
) -> Result<Tap, KernelError> {
    let base = match dev.kind {
        DeviceKind::Tap => TapConfig::tap(name),
        DeviceKind::Tun => TapConfig::tun(name),
    };
    let t = base
        .no_pi(dev.no_pi)
        .vnet_hdr(dev.vnet_hdr)
        .napi(dev.napi || dev.napi_frags)
        .napi_frags(dev.napi_frags)
        .multi_queue(multi_queue)
        .nonblocking(nonblocking)
        .open()?;
    let int = |what: &str, v: usize| {
        i32::try_from(v).map_err(|_| {
            KernelError::new(
                format!("{what} on {name}"),
                Cause::Protocol(format!("{v} does not fit an int")),
            )
        })
    };
    if dev.vnet_hdr && dev.vnet_hdr_sz != DEFAULT_VNET_HDR_SZ {
        t.set_vnet_hdr_sz(int("TUNSETVNETHDRSZ", dev.vnet_hdr_sz)?)?;
    }
    if dev.vnet_endian == VnetEndian::Big {
        t.set_vnet_be(true)?;
    }
    let bits = offload_bits(dev);
    if bits != 0 {
        t.set_offload(bits)?;
    }
    if dev.sndbuf_set {
        t.set_sndbuf(SNDBUF)?;
    }
    if dev.kind == DeviceKind::Tap {
        let mut et = Ethtool::new()?;
        for (feature, on) in [
            ("tx-vlan-hw-insert", dev.tx_vlan_ctag),
            ("tx-vlan-stag-hw-insert", dev.tx_vlan_stag),
        ] {
            if et.get_feature(name, feature)? != on {
                et.set_feature(name, feature, on)?;
            }
        }
    }
    if dev.tx_queue_len != TUN_READQ_SIZE {
        let len = u32::try_from(dev.tx_queue_len).map_err(|_| {
            KernelError::new(
                format!("RTM_SETLINK {name} txqueuelen"),
                Cause::Protocol(format!("{} does not fit a u32", dev.tx_queue_len)),
            )
        })?;
        ns.rtnl().set_txqlen(t.ifindex(), len)?;
    }
    let default_mtu = TunConfig::default().mtu;
    if dev.mtu != default_mtu {
        let mtu = u32::try_from(dev.mtu).map_err(|_| {
            KernelError::new(
                format!("RTM_SETLINK {name} mtu"),
                Cause::Protocol(format!("{} does not fit a u32", dev.mtu)),
            )
        })?;
        ns.rtnl().set_mtu(t.ifindex(), mtu)?;
    }
    if dev.up {
        ns.rtnl().set_up(t.ifindex(), true)?;
    }
    Ok(t)
}

#[path = "tap_write_mq.rs"]
mod mq;

/// An IFF_MULTI_QUEUE device from `dev`, left down: file 0 (`nonblocking` as asked) and
/// `plan.count - 1` more non-blocking files (TUNSETIFF on each attaches it as the next
/// queue: tun_set_iff -> tun_attach), then `[queues]`' steering and filter programs. The
/// caller brings it up.
pub(crate) fn open_queues_down(
    ns: &mut Netns,
    name: &str,
    dev: &TunConfig,
    plan: &sim::scenario::QueuePlan,
    nonblocking: bool,
) -> Result<(Tap, Vec<Tap>), KernelError> {
    use std::os::fd::AsRawFd;
    let down = TunConfig {
        up: false,
        ..dev.clone()
    };
    let dut = open_device_mq(ns, name, &down, nonblocking, true)?;
    let mut queues = Vec::new();
    for _ in 1..plan.count {
        queues.push(dut.open_queue(true)?);
    }
    // The same instructions the model's VM runs, as BPF_PROG_TYPE_SOCKET_FILTER; the
    // device keeps its reference after the fd closes.
    for (path, steering) in [(&plan.steering, true), (&plan.filter, false)] {
        let Some(path) = path else { continue };
        let prog = sim::bpf::load_socket_filter(path, sim::scenario::SOCKET_FILTER_SECTION)
            .map_err(|e| {
                KernelError::new(format!("load {}", path.display()), Cause::Protocol(e))
            })?;
        let fd = crate::bpf::load_socket_filter(&prog)?;
        if steering {
            dut.set_steering_ebpf(fd.as_raw_fd())?;
        } else {
            dut.set_filter_ebpf(fd.as_raw_fd())?;
        }
    }
    Ok((dut, queues))
}

/// One frame from the AF_PACKET socket, if one is queued within `timeout`. A socket
/// bound to a device that is down reports `ENETDOWN` once (`packet_do_bind` sets
/// `sk_err`); that is not a frame and not a failure.
fn recv_packet(
    packet: &mut PacketSocket,
    timeout: Duration,
) -> Result<Option<(Vec<u8>, crate::packet::AuxData)>, KernelError> {
    for _ in 0..4 {
        match packet.recv_timeout(Some(timeout)) {
            Err(e) if e.is_errno(Errno::ENETDOWN) => continue,
            other => return other,
        }
    }
    packet.recv_timeout(Some(timeout))
}

/// The host side of a tap under a writer (userspace writes, or vhost_net): tap A, the
/// redirect target B, the AF_PACKET socket on A, and the events seen so far.
pub(crate) struct TapSide<'s> {
    pub(crate) scenario: &'s Scenario,
    pub(crate) a: Tap,
    /// `[queues]`: A's files after the first (`a` is file 0), in opening order.
    pub(crate) queues: Vec<Tap>,
    pub(crate) b: Option<Tap>,
    pub(crate) packet: PacketSocket,
    pub(crate) events: Vec<WriteEvent>,
    reads_a: usize,
    reads_b: usize,
    outgoing: usize,
    pub(crate) notes: Vec<String>,
    buf: Vec<u8>,
}

impl<'s> TapSide<'s> {
    /// Taps A and B from the scenario, the program loaded and attached to A (devmaps
    /// pointing at B), the AF_PACKET socket on A; anything queued before the replay is
    /// discarded and noted. A starts blocking or not as `a_nonblocking` says.
    pub(crate) fn setup(
        ns: &mut Netns,
        scenario: &'s Scenario,
        prog: Option<&(Program, XdpMode)>,
        a_nonblocking: bool,
    ) -> Result<(TapSide<'s>, Option<LoadedXdp>), ArmError> {
        let (a, queues) = match &scenario.queues {
            Some(plan) => mq::open_queues(ns, scenario, plan, a_nonblocking)?,
            None => (
                open_device(ns, WRITE_NAME, &scenario.device, a_nonblocking)?,
                Vec::new(),
            ),
        };
        let b = match &scenario.redirect {
            Some(cfg) => Some(open_device(ns, REDIRECT_NAME, cfg, true)?),
            None => None,
        };
        // The simulator's A and B are ifindex 2 and 3; only a difference is worth a note
        // (the devmap carries B's real ifindex either way).
        let mut notes = Vec::new();
        let b_index = b.as_ref().map(Tap::ifindex);
        if a.ifindex() != IFINDEX_DUT || b_index.is_some_and(|i| i != IFINDEX_REDIRECT) {
            notes.push(format!(
                "ifindex A {} (model {IFINDEX_DUT}){}",
                a.ifindex(),
                b_index
                    .map(|i| format!(", B {i} (model {IFINDEX_REDIRECT})"))
                    .unwrap_or_default()
            ));
        }
        let loaded = match prog {
            Some((p, mode)) => {
                let l = LoadedXdp::load(p)?;
                if let Some(b) = &b {
                    l.fill_devmaps(b.ifindex())?;
                }
                attach_xdp(ns.rtnl(), a.ifindex(), &l, *mode)?;
                Some(l)
            }
            None => None,
        };
        let mut packet = PacketSocket::bind(a.ifindex())?;
        packet.set_timeout(Some(Duration::ZERO));
        // Nothing should be queued yet; anything that is was not written by the replay.
        let mut stray = 0;
        while recv_packet(&mut packet, Duration::ZERO)?.is_some() {
            stray += 1;
        }
        for t in std::iter::once(&a).chain(&queues).chain(b.as_ref()) {
            t.set_nonblocking(true)?;
            stray += t
                .drain()
                .map_err(|e| kerr(format!("drain {} before the replay", t.name()), e))?;
        }
        if stray > 0 {
            notes.push(format!(
                "{stray} frame(s) nobody wrote were queued before the replay and were discarded"
            ));
        }
        let side = TapSide {
            scenario,
            a,
            queues,
            b,
            packet,
            events: Vec::new(),
            reads_a: 0,
            reads_b: 0,
            outgoing: 0,
            notes,
            buf: Vec::new(),
        };
        Ok((side, loaded))
    }

    /// After the last kick or write: late arrivals, outgoing frames, whether the program
    /// is still attached, and its maps read back.
    pub(crate) fn finish(
        &mut self,
        ns: &mut Netns,
        loaded: Option<&LoadedXdp>,
        prog: Option<&(Program, XdpMode)>,
    ) -> Result<Option<Maps>, ArmError> {
        self.late()?;
        if self.outgoing > 0 {
            self.notes.push(format!(
                "AF_PACKET on {WRITE_NAME} also saw {} outgoing frame(s) (PACKET_OUTGOING), left out",
                self.outgoing
            ));
        }
        let Some(l) = loaded else {
            return Ok(None);
        };
        if let Some((_, mode)) = prog {
            let still = ns.rtnl().link(self.a.ifindex())?.xdp;
            if !matches!(still, Some((m, Some(_))) if m == attached_as(*mode)) {
                self.notes.push(format!(
                    "the program is no longer attached as {:?} at the end: {still:?}",
                    attached_as(*mode)
                ));
            }
        }
        Ok(Some(l.sim_maps()?))
    }

    /// What the stack received since the last call, then the readers of A and B.
    pub(crate) fn after(
        &mut self,
        ns: &mut Netns,
        write: usize,
        frame: u64,
        ts: u64,
    ) -> Result<(), ArmError> {
        self.stack(write)?;
        if self.queues.is_empty() {
            self.drain(ns, None, frame, ts)?;
        } else {
            for file in 0..=self.queues.len() {
                self.drain(ns, Some(file), frame, ts)?;
            }
        }
        if self.b.is_some() {
            self.drain_redirect(ns, frame, ts)?;
        }
        Ok(())
    }

    /// Drain the AF_PACKET socket into `Stack` events.
    fn stack(&mut self, write: usize) -> Result<usize, ArmError> {
        let mut n = 0;
        while let Some((frame, aux)) = recv_packet(&mut self.packet, Duration::ZERO)? {
            if aux.pkttype == pkttype::OUTGOING {
                self.outgoing += 1;
                continue;
            }
            if aux.truncated {
                self.notes.push(format!(
                    "AF_PACKET truncated a {}-byte frame after write {write}",
                    aux.len
                ));
            }
            let vlan = aux.vlan_valid.then_some(VlanTag {
                proto: if aux.vlan_tpid_valid {
                    aux.vlan_tpid
                } else {
                    sim::consts::ETH_P_8021Q
                },
                tci: aux.vlan_tci,
            });
            self.events.push(WriteEvent::Stack {
                write,
                delivery: Delivery {
                    ifindex: aux.ifindex,
                    frame,
                    vlan,
                    protocol: aux.protocol,
                },
            });
            n += 1;
        }
        Ok(n)
    }

    /// Read B's fd until `EAGAIN`.
    fn drain_redirect(&mut self, ns: &mut Netns, frame: u64, ts: u64) -> Result<usize, ArmError> {
        self.drain_fd(ns, true, None, frame, ts)
    }

    /// Read A's fd (with `[queues]`: A's file `queue`) until `EAGAIN`.
    fn drain(
        &mut self,
        ns: &mut Netns,
        queue: Option<usize>,
        frame: u64,
        ts: u64,
    ) -> Result<usize, ArmError> {
        self.drain_fd(ns, false, queue, frame, ts)
    }

    /// A's file 0 and, with `[queues]`, its others.
    pub(crate) fn file(&self, file: usize) -> &Tap {
        match file {
            0 => &self.a,
            n => &self.queues[n - 1],
        }
    }

    /// Read A's (or B's) fd until `EAGAIN`, one `Read` event per read.
    fn drain_fd(
        &mut self,
        ns: &mut Netns,
        on_redirect: bool,
        queue: Option<usize>,
        frame: u64,
        ts: u64,
    ) -> Result<usize, ArmError> {
        let (tap, dev) = if on_redirect {
            match (&self.b, &self.scenario.redirect) {
                (Some(b), Some(cfg)) => (b, cfg),
                _ => return Ok(0),
            }
        } else {
            let tap = match queue.unwrap_or(0) {
                0 => &self.a,
                n => &self.queues[n - 1],
            };
            (tap, &self.scenario.device)
        };
        tap.set_nonblocking(true)?;
        let plan = &self.scenario.reader;
        let name = tap.name().to_string();
        let mut done = 0usize;
        loop {
            let n = if on_redirect {
                self.reads_b
            } else {
                self.reads_a
            };
            let size = plan.buffer(n);
            if size == 0
                && !tap
                    .wait_readable(Duration::ZERO)
                    .map_err(|e| kerr(format!("poll on {name}"), e))?
            {
                break;
            }
            self.buf.clear();
            self.buf.resize(size, plan.fill);
            let result = match tap.read(&mut self.buf) {
                Err(Errno::EAGAIN) => break,
                Ok(got) => Ok(got),
                Err(e) => Err(SimErrno::from_code(e.code()).ok_or_else(|| {
                    kerr(
                        format!(
                            "read {n} ({size}-byte buffer) on {name}: an errno the trace format cannot show"
                        ),
                        e,
                    )
                })?),
            };
            let visible = match result {
                Ok(got) => got,
                Err(_) => size.min(header_len(dev)),
            };
            let stats = tun_stats(&ns.rtnl().stats(tap.ifindex())?);
            self.events.push(WriteEvent::Read {
                on_redirect,
                record: ReadRecord {
                    queue,
                    read: n,
                    frame: Some((frame, ts)),
                    buffer_len: size,
                    result,
                    data: self.buf[..visible.min(self.buf.len())].to_vec(),
                    stats,
                    model: None,
                },
            });
            if on_redirect {
                self.reads_b += 1;
            } else {
                self.reads_a += 1;
            }
            done += 1;
            if done > 4 * TUN_READQ_SIZE + plan.buffers.len() + 64 {
                return Err(ArmError::Kernel(KernelError::new(
                    format!("read loop on {name}"),
                    Cause::Protocol(format!(
                        "{done} reads without EAGAIN; the reader plan never drains the queue"
                    )),
                )));
            }
        }
        Ok(done)
    }

    /// After the last write: anything arriving within [`LATE_WAIT`] is a note (the trace
    /// has only what was there right after each write).
    fn late(&mut self) -> Result<(), ArmError> {
        let until = Instant::now() + LATE_WAIT;
        let mut late = Vec::new();
        loop {
            if let Some((f, aux)) = recv_packet(&mut self.packet, Duration::from_millis(5))? {
                if aux.pkttype != pkttype::OUTGOING {
                    late.push(format!("AF_PACKET on {WRITE_NAME}: {} bytes", f.len()));
                }
            }
            for t in std::iter::once(&self.a)
                .chain(&self.queues)
                .chain(self.b.as_ref())
            {
                if t.wait_readable(Duration::ZERO)
                    .map_err(|e| kerr(format!("poll on {}", t.name()), e))?
                {
                    let n = t
                        .drain()
                        .map_err(|e| kerr(format!("drain {}", t.name()), e))?;
                    late.push(format!("{n} frame(s) on {}'s fd", t.name()));
                }
            }
            if Instant::now() >= until {
                break;
            }
        }
        if !late.is_empty() {
            self.notes.push(format!(
                "arrived after the replay's reads (not in the trace): {}",
                late.join("; ")
            ));
        }
        Ok(())
    }
}
