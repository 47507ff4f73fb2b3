//! The real `tap-gro` arm: a scenario's frames written into an `IFF_NAPI` tap in a fresh
//! namespace, and every skb the stack sees after GRO read back with an AF_PACKET socket
//! (`PACKET_VNET_HDR`) on the tap, and on a vxlan device for VXLAN flows. The result is
//! an [`ObservedGro`], which `sim::trace::gro_observed::render_observed` writes in the
//! simulator's tap-gro trace layout.
//!
//! # The setup (one fresh [`Netns::run`] per scenario)
//! - The tap: `IFF_TAP|IFF_NO_PI|IFF_NAPI`, plus `IFF_VNET_HDR` for `[gro] needs_csum`
//!   (each frame then carries `NEEDS_CSUM` at its innermost TCP header, offset 16, as the
//!   model does) and `O_NONBLOCK` for `[gro] nonblocking` (`tun_build_skb`). Its name is
//!   unique per run (`groXXXXX`), so that its NAPI thread can be told apart from another
//!   run's.
//! - `rx-gro` per `[gro] feature` (ethtool), `gro_flush_timeout` per
//!   `[gro] flush_timeout_ns` (sysfs in a private mount namespace), both read back.
//! - VXLAN: one vxlan device per port of `[gro] vxlan_ports` and VNI seen in the frames
//!   (VNI 1 for a port no frame uses), so that every listed port has a VXLAN socket with a
//!   `gro_receive`. When frames carry VXLAN, the tap takes the first such frame's outer
//!   destination MAC and every outer destination IPv4 address (/32), and the devices
//!   `local` = the first of them on the tap's link, so that the stack hands the merged
//!   skb to `vxlan_rcv` and the vxlan device's own AF_PACKET socket sees the inner frame.
//!
//! # Bursts: several writes in one NAPI poll
//! With `IFF_NAPI`, `tun_get_user` queues the skb on the tfile's write queue and calls
//! `napi_schedule`; the NET_RX softirq runs when the write re-enables bottom halves, so
//! every `write()` is its own poll (`[gro] burst = 1`, the default). Userspace cannot
//! pass `MSG_MORE` (only `tun_sendmsg`, i.e. vhost-net, can). For `burst > 1` the arm
//! switches the tap's NAPI to threaded mode (`/sys/class/net/TAP/threaded` = 1): then
//! `napi_schedule` only wakes the `napi/TAP-0` kthread. The arm pins that kthread and
//! the writing thread to one CPU and makes the writer `SCHED_FIFO`, so the kthread cannot
//! run while the writer writes the burst; after `burst` writes (or more than
//! `NAPI_POLL_WEIGHT` queued, when `tun_get_user` would schedule NAPI even under
//! `MSG_MORE`) the writer sleeps until the kthread has polled and gone back to sleep
//! (its `voluntary_ctxt_switches` rose and it is in state S). That poll sees the whole
//! burst: exactly the model's `burst`. (A zero `gro_flush_timeout` would not merge
//! anything with one poll per write, and a nonzero one merges across polls only while
//! no jiffy passes; neither is the model's burst, so neither is used for it.)
//!
//! # Time
//! `gro_flush_timeout` keeps skbs held across polls until the hrtimer fires, but
//! `napi_complete_done` still flushes skbs aged in an older jiffy, so a run that crosses a
//! tick would deliver differently. The arm measures HZ (the resolution of
//! `CLOCK_MONOTONIC_COARSE`, which advances with jiffies), waits for a tick, then writes
//! the first frame at the input's phase within its jiffy, and every burst's first frame no
//! earlier than its input timestamp says (later when the machine is slower than the
//! capture: the scenarios here space frames 1 us apart, and the writes take longer). The
//! writer is `SCHED_FIFO` while it writes (also for `burst = 1`), so no ordinary thread
//! of a busy machine gets between two writes. With a `gro_flush_timeout` the arm checks
//! the write times afterwards (no tick inside a write, the input's jiffy steps, no gap the
//! hrtimer could fire in) and runs the scenario again in a fresh namespace when they
//! failed, up to [`ATTEMPTS`] times; that decision never looks at what was delivered.
//! At the end it waits `gro_flush_timeout` plus a margin and collects until the sockets
//! are quiet.
//!
//! # What is observed
//! Per skb on the tap: the bytes, and the `virtio_net_hdr` that `virtio_net_hdr_from_skb`
//! builds (gso type/size, `hdr_len` = skb_headlen, csum start/offset or DATA_VALID).
//! For a GSO skb of a VXLAN flow: the length of the matching (byte-identical) inner frame
//! on the vxlan device. Totals: the tap's rx_packets/rx_bytes (netlink). Outgoing frames
//! (`PACKET_OUTGOING`) are not deliveries and are skipped.

use std::collections::BTreeSet;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sim::pcap::PcapReader;
use sim::pipeline::tap_gro::innermost_tcp;
use sim::profile::KernelProfile;
use sim::scenario::{Pipeline, Scenario};
use sim::trace::gro_observed::{
    ObservedGro, ObservedSetup, ObservedSkb, ObservedVnet, ObservedWriteError, VNET_F_NEEDS_CSUM,
};

use super::ArmError;
use crate::error::{Cause, Errno, ErrnoExt, KernelError};
use crate::ethtool::Ethtool;
use crate::netlink::{MsgBuilder, NlSocket, Nla, NLM_F_CREATE, NLM_F_EXCL};
use crate::netns::Netns;
use crate::sys::{cvt, cvt_len, ensure_private_netns, owned_fd, poll_one, setsockopt_int};
use crate::sysfs::{gro_flush_timeout, set_gro_flush_timeout, write_net_attr};
use crate::tap::TapConfig;

/// `NAPI_POLL_WEIGHT`: tun's NAPI budget, and the queue length past which
/// `tun_get_user` schedules NAPI whatever `MSG_MORE` says.
pub const NAPI_POLL_WEIGHT: usize = 64;

const ETH_P_ALL: u16 = 0x0003;
const SOL_PACKET: libc::c_int = 263;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_OUTGOING: u8 = 4;
const VNET_LEN: usize = 10;
/// Receive buffer of the capture sockets (`SO_RCVBUFFORCE`).
const CAPTURE_RCVBUF: libc::c_int = 32 << 20;

const RTM_NEWADDR: u16 = 20;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFLA_VXLAN_ID: u16 = 1;
const IFLA_VXLAN_LINK: u16 = 3;
const IFLA_VXLAN_LOCAL: u16 = 4;
const IFLA_VXLAN_PORT: u16 = 15;
/// More vxlan devices than this is not a GRO scenario.
const MAX_VXLAN_DEVICES: usize = 16;

/// How long the arm waits for a quiet capture socket at the end, beyond the flush timeout.
const QUIET: Duration = Duration::from_millis(20);
/// Attempts at a run whose writes keep the input's timing (see [`run_tap_gro`]).
pub const ATTEMPTS: usize = 5;
/// The longest a burst's NAPI poll may take before the arm gives up.
const POLL_WAIT: Duration = Duration::from_secs(2);

/// What the real arm produced for one scenario.
#[derive(Debug, Clone)]
pub struct RealTapGro {
    /// What the sockets saw, for `render_observed`.
    pub observed: ObservedGro,
    /// For each delivery, the input timestamp of the last frame written before the arm
    /// collected it (the arm does not time deliveries; the output pcap uses these).
    pub delivered_ts: Vec<u64>,
    /// Input frames.
    pub frames: u64,
    /// What the trace cannot say (how bursts were made, vxlan matching, lost frames).
    pub notes: Vec<String>,
}

/// This kernel's HZ: `CLOCK_MONOTONIC_COARSE` advances once per tick.
pub fn host_hz() -> Result<u32, KernelError> {
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec through the pointer, which lives for the call.
    let ret = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) };
    cvt(ret).op(|| "clock_getres(CLOCK_MONOTONIC_COARSE)".to_string())?;
    let ns = res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64;
    if ns == 0 {
        return Err(KernelError::new(
            "clock_getres(CLOCK_MONOTONIC_COARSE)",
            Cause::Protocol("resolution 0".into()),
        ));
    }
    Ok(((1_000_000_000 + ns / 2) / ns) as u32)
}

fn coarse_now() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the pointer; a valid clock id.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Return right after the next tick (jiffies advanced), then `phase` into the jiffy.
fn align_to_tick(phase: Duration, jiffy: Duration) {
    let start = coarse_now();
    let give_up = Instant::now() + jiffy * 3;
    while coarse_now() == start && Instant::now() < give_up {
        std::hint::spin_loop();
    }
    let tick = Instant::now();
    while tick.elapsed() < phase {
        std::hint::spin_loop();
    }
}

/// Whether this kernel was built with `symbol` (`=y` or `=m`), from `/proc/config.gz`
/// (through `zcat`); `None` when the configuration cannot be read.
pub fn kernel_config(symbol: &str) -> Option<bool> {
    let out = std::process::Command::new("zcat")
        .arg("/proc/config.gz")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| {
        if l == format!("# {symbol} is not set") {
            Some(false)
        } else {
            l.strip_prefix(symbol)
                .and_then(|r| r.strip_prefix('='))
                .map(|v| v == "y" || v == "m")
        }
    })
}

/// Whether a frame is IPv4 carrying GRE (protocol 47).
fn is_gre(f: &[u8]) -> bool {
    f.get(12..14) == Some(&[0x08, 0x00]) && f.get(23) == Some(&47)
}

fn load_frames(scenario: &Scenario) -> Result<Vec<(u64, u64, Vec<u8>)>, ArmError> {
    PcapReader::open(&scenario.input)
        .map_err(|e| ArmError::Input(e.to_string()))?
        .map(|f| f.map(|f| (f.index, f.ts_ns, f.data)))
        .collect::<Result<_, _>>()
        .map_err(|e| ArmError::Input(format!("{}: {e}", scenario.input.display())))
}

/// `Ok(())` when the real kernel here can run `scenario`; otherwise the reason, fit for
/// `sim_only = "..."`. Reads the input pcap (GRE frames need a kernel with GRE).
pub fn expressible(scenario: &Scenario) -> Result<(), ArmError> {
    expressible_with(scenario, &load_frames(scenario)?)
}

fn expressible_with(scenario: &Scenario, frames: &[(u64, u64, Vec<u8>)]) -> Result<(), ArmError> {
    let host = KernelProfile::default();
    if scenario.profile.name != host.name {
        return Err(ArmError::Unsupported(format!(
            "profile {} is not the host kernel's ({})",
            scenario.profile.name, host.name
        )));
    }
    super::real_arm(scenario.pipeline).map_err(ArmError::Unsupported)?;
    if scenario.pipeline != Pipeline::TapGro {
        return Err(ArmError::Unsupported(format!(
            "the tap-gro arm cannot replay a {} scenario",
            scenario.pipeline.name()
        )));
    }
    let plan = &scenario.gro;
    let hz = host_hz()?;
    if plan.hz != hz {
        return Err(ArmError::Unsupported(format!(
            "gro.hz = {}: this kernel runs CONFIG_HZ={hz}",
            plan.hz
        )));
    }
    if !plan.teb_gro {
        return Err(ArmError::Unsupported(
            "gro.teb_gro = false: this kernel always registers the ETH_P_TEB GRO offload (eth_gro_receive, v4.0)"
                .into(),
        ));
    }
    if plan.vlan_gro {
        return Err(ArmError::Unsupported(
            match kernel_config("CONFIG_VLAN_8021Q") {
                Some(false) => {
                    "gro.vlan_gro = true: this kernel has no CONFIG_VLAN_8021Q, so no 802.1Q GRO"
                }
                _ => "gro.vlan_gro = true: the arm does not set up 802.1Q GRO",
            }
            .into(),
        ));
    }
    if let Some((index, _, _)) = frames.iter().find(|f| is_gre(&f.2)) {
        if kernel_config("CONFIG_NET_IPGRE_DEMUX") == Some(false) {
            return Err(ArmError::Unsupported(format!(
                "frame {index} is GRE and this kernel has no GRE (CONFIG_NET_IPGRE_DEMUX is not set): no gre_gro_receive"
            )));
        }
    }
    Ok(())
}

/// Replay `scenario` through the real kernel in a fresh namespace.
///
/// With a `gro_flush_timeout`, what GRO delivers depends on when the writes happen
/// (jiffies, the hrtimer). A run whose writes did not keep the input's timing (a tick
/// inside a write, other jiffy steps than the input's timestamps give, a gap the hrtimer
/// could fire in) is discarded and run again in a fresh namespace, up to [`ATTEMPTS`]
/// times; this is decided from the write times alone, never from what was delivered.
pub fn run_tap_gro(scenario: &Scenario) -> Result<RealTapGro, ArmError> {
    let frames = load_frames(scenario)?;
    expressible_with(scenario, &frames)?;
    let mut retried = Vec::new();
    loop {
        let (mut real, timing) = Netns::run(|ns| Ok(replay(ns, scenario, &frames)))??;
        match timing {
            Some(why) if retried.len() + 1 < ATTEMPTS => retried.push(why),
            timing => {
                if !retried.is_empty() {
                    real.notes.push(format!(
                        "{} earlier attempt(s) discarded because the writes did not keep the input's timing: {}",
                        retried.len(),
                        retried.join("; ")
                    ));
                }
                if let Some(why) = timing {
                    real.notes.push(format!(
                        "after {ATTEMPTS} attempts the writes still did not keep the input's timing ({why}); this run's deliveries may not be the scenario's"
                    ));
                }
                return Ok(real);
            }
        }
    }
}

/// A tap name no other run uses at the same time: "gro" and five hex digits (so that
/// `napi/<name>-0` fits the 15 characters of a task's comm).
fn unique_tap_name() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = u64::from(std::process::id()) << 32 | u64::from(n) << 20 | u64::from(nanos);
    // splitmix64 finaliser: spread every input bit over the 20 kept.
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    format!("gro{:05x}", x & 0xf_ffff)
}

/// What an outer IPv4/UDP/VXLAN frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct VxlanFrame {
    dst_mac: [u8; 6],
    dst_ip: [u8; 4],
    port: u16,
    vni: u32,
    /// Offset of the inner Ethernet header.
    inner: usize,
}

/// The VXLAN view of `f` when it is IPv4/UDP to a port in `ports`.
fn vxlan_of(f: &[u8], ports: &[u16]) -> Option<VxlanFrame> {
    if f.get(12..14)? != [0x08, 0x00] {
        return None;
    }
    let ihl = usize::from(f.get(14)? & 0x0f) * 4;
    if *f.get(14 + 9)? != 17 || ihl < 20 {
        return None;
    }
    let udp = 14 + ihl;
    let port = u16::from_be_bytes([*f.get(udp + 2)?, *f.get(udp + 3)?]);
    if !ports.contains(&port) {
        return None;
    }
    let v = f.get(udp + 8..udp + 16)?;
    let vni = u32::from_be_bytes([0, v[4], v[5], v[6]]);
    Some(VxlanFrame {
        dst_mac: f.get(0..6)?.try_into().ok()?,
        dst_ip: f.get(30..34)?.try_into().ok()?,
        port,
        vni,
        inner: udp + 16,
    })
}

/// The vxlan side of the setup, from the frames.
#[derive(Debug, Default)]
struct VxlanSetup {
    tap_mac: Option<[u8; 6]>,
    addrs: Vec<[u8; 4]>,
    devices: Vec<(u16, u32)>,
}

fn vxlan_setup(frames: &[(u64, u64, Vec<u8>)], ports: &[u16]) -> VxlanSetup {
    let mut s = VxlanSetup::default();
    let mut devs = BTreeSet::new();
    for (_, _, f) in frames {
        if let Some(VxlanFrame {
            dst_mac: mac,
            dst_ip: ip,
            port,
            vni,
            ..
        }) = vxlan_of(f, ports)
        {
            s.tap_mac.get_or_insert(mac);
            if !s.addrs.contains(&ip) {
                s.addrs.push(ip);
            }
            devs.insert((port, vni));
        }
    }
    for &p in ports {
        if !devs.iter().any(|(q, _)| *q == p) {
            devs.insert((p, 1));
        }
    }
    s.devices = devs.into_iter().collect();
    s
}

/// `ip addr add A/prefix dev ifindex` (RTM_NEWADDR).
fn add_ipv4(ifindex: u32, addr: [u8; 4], prefix: u8) -> Result<(), KernelError> {
    let op = format!(
        "RTM_NEWADDR {}.{}.{}.{}/{prefix} ifindex {ifindex}",
        addr[0], addr[1], addr[2], addr[3]
    );
    let mut sock = NlSocket::open(libc::NETLINK_ROUTE, "NETLINK_ROUTE")?;
    // struct ifaddrmsg { u8 family, prefixlen, flags, scope; u32 index; }
    let mut hdr = [0u8; 8];
    hdr[0] = libc::AF_INET as u8;
    hdr[1] = prefix;
    hdr[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    let mut m = MsgBuilder::new(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
    m.header(&hdr)
        .attr(IFA_LOCAL, &addr)
        .attr(IFA_ADDRESS, &addr);
    sock.request(&op, m).map(|_| ())
}

/// An AF_PACKET socket with `PACKET_VNET_HDR` on one device: every frame comes with the
/// `virtio_net_hdr` the kernel builds from its skb.
#[derive(Debug)]
pub struct VnetCapture {
    fd: OwnedFd,
    ifindex: u32,
    buf: Vec<u8>,
}

/// One received frame: the vnet header (or why there is none) and the bytes.
type Captured = (Result<ObservedVnet, String>, Vec<u8>);

impl VnetCapture {
    /// Bind to `ifindex` (refused in the process's main namespace).
    pub fn bind(ifindex: u32) -> Result<Self, KernelError> {
        let op = format!("AF_PACKET PACKET_VNET_HDR bind ifindex {ifindex}");
        ensure_private_netns(&op)?;
        // SAFETY: socket(2) with constant arguments; protocol 0 receives nothing before bind.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        let fd = owned_fd(fd).op(|| format!("{op}: socket"))?;
        setsockopt_int(fd.as_fd(), SOL_PACKET, PACKET_VNET_HDR, 1)
            .op(|| format!("{op}: PACKET_VNET_HDR"))?;
        setsockopt_int(
            fd.as_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            CAPTURE_RCVBUF,
        )
        .op(|| format!("{op}: SO_RCVBUFFORCE"))?;
        // SAFETY: an all-zero sockaddr_ll is valid; the fields that matter are set below.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ALL.to_be();
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is a sockaddr_ll whose size is passed with it.
        let ret = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        cvt(ret).op(|| op.clone())?;
        Ok(VnetCapture {
            fd,
            ifindex,
            buf: vec![0u8; VNET_LEN + (1 << 18)],
        })
    }

    /// The next incoming frame within `timeout` (outgoing ones are skipped), or `None`.
    pub fn recv(&mut self, timeout: Duration) -> Result<Option<Captured>, KernelError> {
        let op = || format!("AF_PACKET recv on ifindex {}", self.ifindex);
        loop {
            if !poll_one(self.fd.as_fd(), libc::POLLIN, Some(timeout)).op(op)? {
                return Ok(None);
            }
            // SAFETY: an all-zero sockaddr_ll is a valid value to be overwritten.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut iov = libc::iovec {
                iov_base: self.buf.as_mut_ptr().cast(),
                iov_len: self.buf.len(),
            };
            // SAFETY: an all-zero msghdr is valid; the pointers are filled in below.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_name = (&mut from as *mut libc::sockaddr_ll).cast();
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            // SAFETY: msg points at a live sockaddr_ll and one iovec into self.buf, with
            // their sizes; MSG_DONTWAIT because poll said a frame is ready.
            let n = unsafe {
                libc::recvmsg(
                    self.fd.as_raw_fd(),
                    &mut msg,
                    libc::MSG_TRUNC | libc::MSG_DONTWAIT,
                )
            };
            let n = match cvt_len(n) {
                Ok(n) => n,
                Err(Errno::EAGAIN) => return Ok(None),
                // packet_rcv_vnet: virtio_net_hdr_from_skb could not express the skb; the
                // kernel dropped it.
                Err(e @ Errno::EINVAL) => {
                    return Ok(Some((
                        Err(format!(
                            "recvmsg: {} ({}): virtio_net_hdr_from_skb cannot describe this skb",
                            e.name(),
                            e.description()
                        )),
                        Vec::new(),
                    )))
                }
                Err(e) => return Err(KernelError::sys(op(), e)),
            };
            if from.sll_pkttype == PACKET_OUTGOING {
                continue;
            }
            if n > self.buf.len() || n < VNET_LEN {
                return Err(KernelError::new(
                    op(),
                    Cause::Protocol(format!(
                        "{n}-byte packet for a {}-byte buffer",
                        self.buf.len()
                    )),
                ));
            }
            let vnet = ObservedVnet::parse(&self.buf[..VNET_LEN])
                .ok_or_else(|| "short virtio-net header".to_string());
            return Ok(Some((vnet, self.buf[VNET_LEN..n].to_vec())));
        }
    }

    /// Every frame queued now.
    pub fn drain_now(&mut self, into: &mut Vec<Captured>) -> Result<(), KernelError> {
        while let Some(c) = self.recv(Duration::ZERO)? {
            into.push(c);
        }
        Ok(())
    }

    /// Frames until none arrives for `quiet`.
    pub fn drain_quiet(
        &mut self,
        quiet: Duration,
        into: &mut Vec<Captured>,
    ) -> Result<(), KernelError> {
        while let Some(c) = self.recv(quiet)? {
            into.push(c);
        }
        Ok(())
    }
}

/// A `cpu_set_t` with one CPU.
fn one_cpu(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit of the local set; cpu < CPU_SETSIZE is checked by
    // the caller (sched_getcpu's answer).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set
}

fn set_affinity(tid: libc::pid_t, set: &libc::cpu_set_t, who: &str) -> Result<(), KernelError> {
    // SAFETY: sched_setaffinity reads a cpu_set_t of the given size, alive for the call.
    let ret = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) };
    cvt(ret).op(|| format!("sched_setaffinity {who}"))?;
    Ok(())
}

/// The state letter and `voluntary_ctxt_switches` of a task.
fn task_status(pid: u32) -> Result<(char, u64), KernelError> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        KernelError::new(
            format!("read {path}"),
            Cause::Protocol(format!("the NAPI thread is gone? {e}")),
        )
    })?;
    let mut state = '?';
    let mut vol = None;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("State:") {
            state = v.trim().chars().next().unwrap_or('?');
        } else if let Some(v) = line.strip_prefix("voluntary_ctxt_switches:") {
            vol = v.trim().parse().ok();
        }
    }
    let vol = vol.ok_or_else(|| {
        KernelError::new(
            format!("parse {path}"),
            Cause::Protocol("no voluntary_ctxt_switches".into()),
        )
    })?;
    Ok((state, vol))
}

/// Kernel threads whose comm starts with `prefix`.
fn kthreads_named(prefix: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim_end().starts_with(prefix))
        })
        .collect()
}

/// The calling thread as `SCHED_FIFO` (priority 10), optionally pinned to one CPU,
/// until dropped: no ordinary thread (another test, the build) preempts the writes, so
/// their spacing follows the input and not the machine's load.
#[derive(Debug)]
pub struct RealtimeWriter {
    saved_affinity: libc::cpu_set_t,
    saved_policy: libc::c_int,
    saved_param: libc::sched_param,
}

impl RealtimeWriter {
    /// Switch the calling thread; `pin` also restricts it to that CPU.
    pub fn enter(pin: Option<usize>) -> Result<RealtimeWriter, KernelError> {
        // SAFETY: an all-zero cpu_set_t is valid to be overwritten.
        let mut saved_affinity: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: sched_getaffinity writes a cpu_set_t of the given size for this thread.
        let ret = unsafe {
            libc::sched_getaffinity(
                0,
                std::mem::size_of::<libc::cpu_set_t>(),
                &mut saved_affinity,
            )
        };
        cvt(ret).op(|| "sched_getaffinity".to_string())?;
        // SAFETY: sched_getscheduler(0) queries the calling thread.
        let saved_policy = unsafe { libc::sched_getscheduler(0) };
        cvt(saved_policy).op(|| "sched_getscheduler".to_string())?;
        let mut saved_param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_getparam writes one sched_param for the calling thread.
        let ret = unsafe { libc::sched_getparam(0, &mut saved_param) };
        cvt(ret).op(|| "sched_getparam".to_string())?;
        // From here on, Drop puts the thread back whatever fails below.
        let guard = RealtimeWriter {
            saved_affinity,
            saved_policy,
            saved_param,
        };
        if let Some(cpu) = pin {
            set_affinity(0, &one_cpu(cpu), "writer")?;
        }
        let fifo = libc::sched_param { sched_priority: 10 };
        // SAFETY: sched_setscheduler on the calling thread with a live sched_param.
        let ret = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &fifo) };
        cvt(ret).op(|| "sched_setscheduler SCHED_FIFO (writer)".to_string())?;
        Ok(guard)
    }
}

impl Drop for RealtimeWriter {
    fn drop(&mut self) {
        // SAFETY: restoring the calling thread's own policy and affinity from live values
        // saved by `enter` on this thread.
        unsafe {
            libc::sched_setscheduler(0, self.saved_policy, &self.saved_param);
            libc::sched_setaffinity(
                0,
                std::mem::size_of::<libc::cpu_set_t>(),
                &self.saved_affinity,
            );
        }
    }
}

/// The tap's NAPI in threaded mode, its kthread on the writer's CPU, the writer
/// `SCHED_FIFO` there (see the module docs). Dropping it puts the writer back.
#[derive(Debug)]
pub struct NapiThread {
    pid: u32,
    cpu: usize,
    mark: u64,
    /// Polls waited for.
    pub polls: u64,
    _writer: RealtimeWriter,
}

impl NapiThread {
    /// Make `ifname`'s NAPI threaded and set up the writer (the calling thread).
    pub fn start(ifname: &str) -> Result<NapiThread, KernelError> {
        write_net_attr(ifname, "threaded", "1")?;
        let prefix = format!("napi/{ifname}-");
        let found = kthreads_named(&prefix);
        let pid = match found.as_slice() {
            [pid] => *pid,
            other => {
                return Err(KernelError::new(
                    format!("find the NAPI kthread of {ifname}"),
                    Cause::Protocol(format!(
                        "{} kernel threads named {prefix}*: {other:?}",
                        other.len()
                    )),
                ))
            }
        };
        // SAFETY: sched_getcpu has no arguments.
        let cpu = unsafe { libc::sched_getcpu() };
        let cpu =
            usize::try_from(cpu).map_err(|_| KernelError::sys("sched_getcpu", Errno::last()))?;
        set_affinity(
            pid as libc::pid_t,
            &one_cpu(cpu),
            &format!("napi thread {pid}"),
        )?;
        let writer = RealtimeWriter::enter(Some(cpu))?;
        let mut t = NapiThread {
            pid,
            cpu,
            mark: 0,
            polls: 0,
            _writer: writer,
        };
        t.mark()?;
        Ok(t)
    }

    /// The kthread's pid and the CPU it shares with the writer.
    pub fn describe(&self) -> String {
        format!("napi kthread {} on CPU {}", self.pid, self.cpu)
    }

    /// Record where the kthread is before a burst's first write.
    pub fn mark(&mut self) -> Result<(), KernelError> {
        self.mark = task_status(self.pid)?.1;
        Ok(())
    }

    /// Sleep until the kthread has polled what the burst queued and is asleep again.
    pub fn let_poll(&mut self) -> Result<(), KernelError> {
        let start = Instant::now();
        loop {
            std::thread::sleep(Duration::from_micros(20));
            let (state, vol) = task_status(self.pid)?;
            if vol > self.mark && matches!(state, 'S' | 'I') {
                self.mark = vol;
                self.polls += 1;
                return Ok(());
            }
            if start.elapsed() > POLL_WAIT {
                return Err(KernelError::new(
                    format!("wait for NAPI kthread {}", self.pid),
                    Cause::Protocol(format!(
                        "no poll within {POLL_WAIT:?} (state {state}, {vol} voluntary switches)"
                    )),
                ));
            }
        }
    }
}

/// When one write happened: its input time, the wall clock around it, and the jiffy
/// (coarse clock over the tick length) before and after.
#[derive(Debug, Clone, Copy)]
struct WriteTime {
    ts: u64,
    before: Instant,
    after: Instant,
    jiffy_before: u64,
    jiffy_after: u64,
}

/// Whether the writes kept the input's timing where GRO can see it, with a
/// `gro_flush_timeout`: every write inside one jiffy, the same jiffy steps between writes
/// as the input's timestamps (jiffies = ts * HZ / 1e9, as the model counts them), and no
/// gap the hrtimer could fire in where the input has none. `None` when it did.
fn timing_problem(times: &[WriteTime], hz: u32, timeout_ns: u64) -> Option<String> {
    if timeout_ns == 0 {
        return None;
    }
    let jiffy_of = |ts: u64| (u128::from(ts) * u128::from(hz) / 1_000_000_000) as u64;
    let first = times.first()?;
    for (k, w) in times.iter().enumerate() {
        if w.jiffy_before != w.jiffy_after {
            return Some(format!("write {k} straddled a tick"));
        }
        let want = jiffy_of(w.ts).wrapping_sub(jiffy_of(first.ts));
        let got = w.jiffy_after.wrapping_sub(first.jiffy_after);
        if want != got {
            return Some(format!(
                "write {k} landed {got} jiffies after the first, the input says {want}"
            ));
        }
        if k > 0 {
            let prev = &times[k - 1];
            let input_gap = w.ts.saturating_sub(prev.ts);
            let real_gap = w.after.duration_since(prev.before);
            if input_gap < timeout_ns && real_gap >= Duration::from_nanos(timeout_ns) {
                return Some(format!(
                    "writes {} and {k} were {real_gap:?} apart (input: {input_gap} ns), the gro_flush_timeout hrtimer could fire between them",
                    k - 1
                ));
            }
        }
    }
    None
}

fn jiffy_now(jiffy_ns: u64) -> u64 {
    (coarse_now().as_nanos() / u128::from(jiffy_ns.max(1))) as u64
}

/// Take what `cap` has queued now; each new capture gets the input time `last`.
fn collect(
    cap: &mut VnetCapture,
    captured: &mut Vec<Captured>,
    ts: &mut Vec<u64>,
    last: u64,
) -> Result<(), KernelError> {
    cap.drain_now(captured)?;
    ts.resize(captured.len(), last);
    Ok(())
}

/// One attempt; the second value says why its timing did not follow the input's, if it
/// did not.
fn replay(
    ns: &mut Netns,
    scenario: &Scenario,
    frames: &[(u64, u64, Vec<u8>)],
) -> Result<(RealTapGro, Option<String>), ArmError> {
    let plan = &scenario.gro;
    let mut notes = Vec::new();
    let name = unique_tap_name();
    let tap = TapConfig::tap(&name)
        .napi(true)
        .vnet_hdr(plan.needs_csum)
        .nonblocking(plan.nonblocking)
        .open()?;
    let vx = vxlan_setup(frames, &plan.vxlan_ports);
    if vx.devices.len() > MAX_VXLAN_DEVICES {
        return Err(ArmError::Unsupported(format!(
            "{} (port, VNI) pairs: more vxlan devices than the arm creates ({MAX_VXLAN_DEVICES})",
            vx.devices.len()
        )));
    }
    if let Some(mac) = vx.tap_mac {
        ns.rtnl().set_address(tap.ifindex(), mac)?;
    }
    for a in &vx.addrs {
        add_ipv4(tap.ifindex(), *a, 32)?;
    }
    ns.rtnl().set_up(tap.ifindex(), true)?;
    let mut et = Ethtool::new()?;
    if et.get_feature(&name, "rx-gro")? != plan.feature {
        et.set_feature(&name, "rx-gro", plan.feature)?;
    }
    let feature = et.get_feature(&name, "rx-gro")?;
    let mut vx_devs = Vec::new();
    for (i, (port, vni)) in vx.devices.iter().enumerate() {
        let dname = format!("skbvx{i}");
        let mut data = vec![
            Nla::u32(IFLA_VXLAN_ID, *vni),
            Nla::be16(IFLA_VXLAN_PORT, *port),
        ];
        if let Some(local) = vx.addrs.first() {
            data.push(Nla::bytes(IFLA_VXLAN_LOCAL, local));
            data.push(Nla::u32(IFLA_VXLAN_LINK, tap.ifindex()));
        }
        let idx = ns.rtnl().create_link(&dname, "vxlan", &data)?;
        ns.rtnl().set_up(idx, true)?;
        vx_devs.push((dname, idx, *port, *vni));
    }
    set_gro_flush_timeout(&name, plan.flush_timeout_ns)?;
    let timeout = gro_flush_timeout(&name)?;
    let hz = host_hz()?;
    let mut cap = VnetCapture::bind(tap.ifindex())?;
    let mut vcaps = vx_devs
        .iter()
        .map(|(_, idx, _, _)| VnetCapture::bind(*idx))
        .collect::<Result<Vec<_>, _>>()?;
    let mut napi = if plan.burst > 1 {
        Some(NapiThread::start(&name)?)
    } else {
        None
    };
    // Without CAP_SYS_NICE the single-write case still runs (the timing check below
    // catches a preempted writer); bursts cannot.
    let rt = match napi {
        Some(_) => None,
        None => match RealtimeWriter::enter(None) {
            Ok(g) => Some(g),
            Err(e) => {
                notes.push(format!("the writer runs without SCHED_FIFO: {e}"));
                None
            }
        },
    };
    let backend = match &napi {
        Some(t) => format!(
            "real (AF_PACKET PACKET_VNET_HDR; bursts: threaded NAPI, {}, writer SCHED_FIFO)",
            t.describe()
        ),
        None => format!(
            "real (AF_PACKET PACKET_VNET_HDR; every write() polls NAPI{})",
            if rt.is_some() {
                ", writer SCHED_FIFO"
            } else {
                ""
            }
        ),
    };
    let vxlan_ports: Vec<u16> = vx_devs
        .iter()
        .map(|d| d.2)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if vx_devs.iter().any(|d| vx.addrs.is_empty() || d.3 != 1) {
        let list: Vec<String> = vx_devs
            .iter()
            .map(|(n, _, p, v)| format!("{n} port {p} vni {v}"))
            .collect();
        notes.push(format!("vxlan devices: {}", list.join(", ")));
    }

    let mut captured: Vec<Captured> = Vec::new();
    let mut captured_ts: Vec<u64> = Vec::new();
    let mut write_errors = Vec::new();
    let mut written = 0u64;
    let mut wire = Vec::new();
    let jiffy = Duration::from_nanos(1_000_000_000 / u64::from(hz.max(1)));
    let ts0 = frames.first().map_or(0, |f| f.1);
    let phase = Duration::from_nanos(ts0 % jiffy.as_nanos() as u64);
    align_to_tick(phase, jiffy);
    let t0 = Instant::now();
    let mut pending = 0usize;
    let mut last_ts = ts0;
    let jiffy_ns = jiffy.as_nanos() as u64;
    let mut times = Vec::with_capacity(frames.len());
    for (index, ts, data) in frames {
        if pending == 0 {
            let due = Duration::from_nanos(ts.saturating_sub(ts0));
            while t0.elapsed() < due {
                let left = due - t0.elapsed();
                if left > Duration::from_micros(200) {
                    std::thread::sleep(left - Duration::from_micros(100));
                } else {
                    std::hint::spin_loop();
                }
            }
            if let Some(t) = napi.as_mut() {
                t.mark()?;
            }
        }
        wire.clear();
        if plan.needs_csum {
            let mut h = [0u8; VNET_LEN];
            if let Some(th) = innermost_tcp(data, &plan.vxlan_ports) {
                let start = u16::try_from(th).map_err(|_| {
                    ArmError::Input(format!("frame {index}: TCP header beyond 65535"))
                })?;
                h[0] = VNET_F_NEEDS_CSUM;
                h[6..8].copy_from_slice(&start.to_le_bytes());
                h[8..10].copy_from_slice(&16u16.to_le_bytes());
            }
            wire.extend_from_slice(&h);
        }
        wire.extend_from_slice(data);
        last_ts = *ts;
        let (before, jiffy_before) = (Instant::now(), jiffy_now(jiffy_ns));
        let result = tap.write(&wire);
        times.push(WriteTime {
            ts: *ts,
            before,
            after: Instant::now(),
            jiffy_before,
            jiffy_after: jiffy_now(jiffy_ns),
        });
        match result {
            Ok(n) if n == wire.len() => written += 1,
            Ok(n) => {
                return Err(ArmError::Kernel(KernelError::new(
                    format!("write of frame {index} into {name}"),
                    Cause::Protocol(format!("short write: {n} of {} bytes", wire.len())),
                )))
            }
            Err(e) => {
                write_errors.push(ObservedWriteError {
                    frame: *index,
                    ts_ns: *ts,
                    len: data.len(),
                    errno: e.name().to_string(),
                });
                continue;
            }
        }
        pending += 1;
        match napi.as_mut() {
            Some(t) => {
                if pending >= plan.burst || pending > NAPI_POLL_WEIGHT {
                    pending = 0;
                    t.let_poll()?;
                    collect(&mut cap, &mut captured, &mut captured_ts, last_ts)?;
                }
            }
            None => {
                pending = 0;
                collect(&mut cap, &mut captured, &mut captured_ts, last_ts)?;
            }
        }
    }
    if let (Some(t), true) = (napi.as_mut(), pending > 0) {
        t.let_poll()?;
    }
    drop(rt);
    let timing = timing_problem(&times, hz, timeout);
    // The gro_flush_timeout hrtimer, then whatever is still in flight.
    std::thread::sleep(Duration::from_nanos(timeout) + Duration::from_millis(2));
    let quiet = QUIET + Duration::from_nanos(timeout.saturating_mul(2));
    cap.drain_quiet(quiet, &mut captured)?;
    captured_ts.resize(captured.len(), last_ts);
    let mut vx_frames: Vec<(usize, Vec<u8>)> = Vec::new();
    for (k, c) in vcaps.iter_mut().enumerate() {
        let mut got = Vec::new();
        c.drain_quiet(Duration::from_millis(5), &mut got)?;
        vx_frames.extend(got.into_iter().map(|(_, b)| (k, b)));
    }
    if let Some(t) = &napi {
        notes.push(format!(
            "bursts: threaded NAPI, {}; {} polls waited for",
            t.describe(),
            t.polls
        ));
    }
    drop(napi);
    let stats = ns.rtnl().stats(tap.ifindex())?;

    // Deliveries, and the vxlan device's frame for each GSO skb of a VXLAN flow.
    let mut used = vec![false; vx_frames.len()];
    let mut deliveries = Vec::new();
    for (n, (vnet, bytes)) in captured.into_iter().enumerate() {
        let mut skb = ObservedSkb {
            bytes,
            ..ObservedSkb::default()
        };
        match vnet {
            Ok(v) => skb.vnet = Some(v),
            Err(e) => {
                notes.push(format!("delivery {n}: {e}"));
                skb.error = Some(e);
            }
        }
        if let (Some(v), Some(VxlanFrame { inner, .. })) =
            (&skb.vnet, vxlan_of(&skb.bytes, &vxlan_ports))
        {
            if v.gso_type != 0 {
                let want = skb.bytes.get(inner..).unwrap_or(&[]);
                match (0..vx_frames.len()).find(|&i| !used[i] && vx_frames[i].1 == want) {
                    Some(i) => {
                        used[i] = true;
                        skb.vxlan_dev_len = Some(vx_frames[i].1.len());
                    }
                    None => notes.push(format!(
                        "delivery {n} (GSO, VXLAN) has no byte-identical inner frame on a vxlan device"
                    )),
                }
            }
        }
        deliveries.push(skb);
    }
    let segs_seen: usize = deliveries
        .iter()
        .map(|d| match &d.vnet {
            Some(v) if v.gso_type != 0 => {
                sim::trace::gro_observed::derived_segs(&d.bytes, v.gso_size, &vxlan_ports)
                    .unwrap_or(1)
            }
            _ => 1,
        })
        .sum();
    if segs_seen as u64 != written {
        notes.push(format!(
            "{written} frames written, {segs_seen} segments delivered on {name}"
        ));
    }
    let vx_seen = vx_frames.len();
    let vx_matched = used.iter().filter(|u| **u).count();
    if vx_seen > 0 {
        notes.push(format!(
            "vxlan devices received {vx_seen} frame(s), {vx_matched} matched to GSO skbs on the tap"
        ));
    }
    let setup = ObservedSetup {
        backend,
        feature,
        teb_gro: plan.teb_gro,
        vlan_gro: plan.vlan_gro,
        vxlan_ports,
        burst: plan.burst,
        flush_timeout_ns: timeout,
        hz,
        weight: NAPI_POLL_WEIGHT,
        nonblocking: plan.nonblocking,
        needs_csum: plan.needs_csum,
    };
    let real = RealTapGro {
        observed: ObservedGro {
            setup,
            write_errors,
            deliveries,
            written,
            rx_packets: stats.rx_packets,
            rx_bytes: stats.rx_bytes,
        },
        delivered_ts: captured_ts,
        frames: frames.len() as u64,
        notes,
    };
    Ok((real, timing))
}

/// What the stack does with each skb GRO hands it, in [`gro_bench`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchStack {
    /// The frames are for another MAC: `ip_rcv` drops every skb at once (counted in the
    /// tap's `rx_otherhost_dropped`). The least per-skb work the stack can do.
    OtherHost,
    /// The frames are for the tap's MAC and a local address with no listener on the port:
    /// IP input, route and TCP lookup, and a RST sent back out of the tap (to a permanent
    /// neighbour, into the tap's tx ring nobody reads). Counted in `Ip: InReceives`.
    LocalTcp,
}

impl BenchStack {
    /// A short name ("otherhost", "local-tcp").
    pub fn name(self) -> &'static str {
        match self {
            BenchStack::OtherHost => "otherhost",
            BenchStack::LocalTcp => "local-tcp",
        }
    }
}

/// What to measure with [`gro_bench`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroBenchConfig {
    /// Frames per timed run per mode.
    pub frames: u64,
    /// Timed runs per mode; the median is reported.
    pub runs: usize,
    /// Alternating slices per run (as in the VLAN bench: all modes share the noise).
    pub slices: usize,
    /// Untimed frames before each slice.
    pub warmup: u64,
    /// The `gro_flush_timeout` of the "GRO on" mode that merges across writes.
    pub flush_timeout_ns: u64,
    /// What the stack does with the skbs.
    pub stack: BenchStack,
}

impl Default for GroBenchConfig {
    fn default() -> Self {
        GroBenchConfig {
            frames: 200_000,
            runs: 5,
            slices: 10,
            warmup: 200,
            flush_timeout_ns: 1_000_000,
            stack: BenchStack::OtherHost,
        }
    }
}

/// One mode of the GRO bench.
#[derive(Debug, Clone, PartialEq)]
pub struct GroModeResult {
    /// What the mode is ("gro on, gro_flush_timeout 1000000 ns").
    pub label: String,
    /// `rx-gro`.
    pub gro: bool,
    /// The tap's `gro_flush_timeout`.
    pub flush_timeout_ns: u64,
    /// Frames/s written, per timed run.
    pub runs_fps: Vec<f64>,
    /// The median of `runs_fps`.
    pub median_fps: f64,
    /// Frames written (timed and warm-up).
    pub frames: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Skbs the stack got from the tap (see [`BenchStack`] for the counter).
    pub skbs: u64,
    /// `skbs` per 10^6 bytes written.
    pub skbs_per_mb: f64,
}

/// Every mode.
#[derive(Debug, Clone, PartialEq)]
pub struct GroBench {
    pub stack: BenchStack,
    pub modes: Vec<GroModeResult>,
    /// Distinct frames cycled through.
    pub distinct_frames: usize,
    /// Their length.
    pub frame_len: usize,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

const RTM_NEWNEIGH: u16 = 28;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;
const NUD_PERMANENT: u16 = 0x80;

/// `ip neigh add ADDR lladdr MAC dev IFINDEX nud permanent` (RTM_NEWNEIGH).
fn add_neighbour(ifindex: u32, addr: [u8; 4], mac: [u8; 6]) -> Result<(), KernelError> {
    let op = format!("RTM_NEWNEIGH {addr:?} ifindex {ifindex}");
    let mut sock = NlSocket::open(libc::NETLINK_ROUTE, "NETLINK_ROUTE")?;
    // struct ndmsg { u8 family, pad1; u16 pad2; s32 ifindex; u16 state; u8 flags, type; }
    let mut hdr = [0u8; 12];
    hdr[0] = libc::AF_INET as u8;
    hdr[4..8].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    hdr[8..10].copy_from_slice(&NUD_PERMANENT.to_ne_bytes());
    let mut m = MsgBuilder::new(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_EXCL);
    m.header(&hdr).attr(NDA_DST, &addr).attr(NDA_LLADDR, &mac);
    sock.request(&op, m).map(|_| ())
}

/// `Ip: InReceives` of the calling thread's namespace.
fn ip_in_receives() -> Result<u64, KernelError> {
    let path = "/proc/thread-self/net/snmp";
    let text = std::fs::read_to_string(path)
        .map_err(|e| KernelError::new(format!("read {path}"), Cause::Protocol(e.to_string())))?;
    let mut ip = text.lines().filter(|l| l.starts_with("Ip: "));
    let (names, values) = (ip.next(), ip.next());
    names
        .zip(values)
        .and_then(|(n, v)| {
            let i = n.split_whitespace().position(|w| w == "InReceives")?;
            v.split_whitespace().nth(i)?.parse().ok()
        })
        .ok_or_else(|| {
            KernelError::new(
                format!("parse {path}"),
                Cause::Protocol("no Ip: InReceives".into()),
            )
        })
}

/// Frames/s written into an `IFF_NAPI` tap (blocking `write()`, no vnet header) for a
/// TCP stream of `frames` (cycled; every frame an Ethernet/IPv4/TCP segment of one flow),
/// in three modes of one tap, switched in alternating slices: GRO on with
/// `cfg.flush_timeout_ns` (skbs held across the per-write polls, so the stream merges),
/// GRO on with timeout 0 (every write flushed: GRO's cost without its merging), GRO off.
/// Also the skbs the stack got per MB written. After each slice the arm waits for the
/// flush timeout so that each mode's skbs are counted under it.
pub fn gro_bench(frames: &[Vec<u8>], cfg: &GroBenchConfig) -> Result<GroBench, KernelError> {
    let first = frames
        .first()
        .ok_or_else(|| KernelError::new("gro bench", Cause::Protocol("no frames".into())))?;
    if cfg.runs == 0 || cfg.frames == 0 || first.len() < 34 {
        return Err(KernelError::new(
            "gro bench",
            Cause::Protocol("needs IPv4 frames, runs >= 1 and frames >= 1".into()),
        ));
    }
    let modes = [
        (true, cfg.flush_timeout_ns),
        (true, 0),
        (false, cfg.flush_timeout_ns),
    ];
    let dst_mac: [u8; 6] = first[0..6].try_into().unwrap_or_default();
    let src_mac: [u8; 6] = first[6..12].try_into().unwrap_or_default();
    let src_ip: [u8; 4] = first[26..30].try_into().unwrap_or_default();
    let dst_ip: [u8; 4] = first[30..34].try_into().unwrap_or_default();
    Netns::run(|ns| {
        let name = "skbgrobench";
        let tap = TapConfig::tap(name).napi(true).open()?;
        match cfg.stack {
            // A MAC no frame is sent to: ip_rcv drops each skb as PACKET_OTHERHOST.
            BenchStack::OtherHost => ns
                .rtnl()
                .set_address(tap.ifindex(), [0x02, 0x5b, 0x5b, 0x5b, 0x5b, 0x5b])?,
            BenchStack::LocalTcp => {
                ns.rtnl().set_address(tap.ifindex(), dst_mac)?;
                add_ipv4(tap.ifindex(), dst_ip, 24)?;
            }
        }
        ns.rtnl().set_up(tap.ifindex(), true)?;
        if cfg.stack == BenchStack::LocalTcp {
            add_neighbour(tap.ifindex(), src_ip, src_mac)?;
        }
        let mut et = Ethtool::new()?;
        let count_skbs = |ns: &mut Netns| -> Result<u64, KernelError> {
            match cfg.stack {
                BenchStack::OtherHost => Ok(ns.rtnl().stats(tap.ifindex())?.rx_otherhost_dropped),
                BenchStack::LocalTcp => ip_in_receives(),
            }
        };
        let write = |from: u64, count: u64| -> Result<u64, KernelError> {
            let mut bytes = 0u64;
            for i in from..from + count {
                let f = &frames[(i % frames.len() as u64) as usize];
                let n = tap
                    .write(f)
                    .map_err(|e| KernelError::sys(format!("bench write into {name}"), e))?;
                bytes += n as u64;
            }
            Ok(bytes)
        };
        let settle = Duration::from_nanos(cfg.flush_timeout_ns) + Duration::from_millis(2);
        let mut fps = vec![Vec::new(); modes.len()];
        let mut totals = vec![(0u64, 0u64, 0u64); modes.len()];
        let mut next = 0u64;
        let slices = cfg.slices.max(1) as u64;
        for _ in 0..cfg.runs {
            let mut secs = vec![0f64; modes.len()];
            for k in 0..slices {
                let count = cfg.frames / slices + u64::from(k < cfg.frames % slices);
                for (m, (gro, timeout)) in modes.iter().enumerate() {
                    if et.get_feature(name, "rx-gro")? != *gro {
                        et.set_feature(name, "rx-gro", *gro)?;
                    }
                    set_gro_flush_timeout(name, *timeout)?;
                    let before = count_skbs(ns)?;
                    let b = write(next, cfg.warmup)?;
                    next += cfg.warmup;
                    let c = Instant::now();
                    let b2 = write(next, count)?;
                    secs[m] += c.elapsed().as_secs_f64();
                    next += count;
                    std::thread::sleep(settle);
                    let skbs = count_skbs(ns)? - before;
                    let t = &mut totals[m];
                    t.0 += cfg.warmup + count;
                    t.1 += b + b2;
                    t.2 += skbs;
                }
            }
            for (m, s) in secs.iter().enumerate() {
                fps[m].push(cfg.frames as f64 / s.max(1e-9));
            }
        }
        let out = modes
            .iter()
            .zip(fps)
            .zip(totals)
            .map(
                |(((gro, timeout), runs_fps), (frames, bytes, skbs))| GroModeResult {
                    label: format!(
                        "gro {}, gro_flush_timeout {timeout} ns",
                        if *gro { "on" } else { "off" }
                    ),
                    gro: *gro,
                    flush_timeout_ns: *timeout,
                    median_fps: median(&runs_fps),
                    runs_fps,
                    frames,
                    bytes,
                    skbs,
                    skbs_per_mb: skbs as f64 * 1e6 / bytes.max(1) as f64,
                },
            )
            .collect();
        Ok(GroBench {
            stack: cfg.stack,
            modes: out,
            distinct_frames: frames.len(),
            frame_len: first.len(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tap_names_fit_the_napi_thread_comm() {
        let a = unique_tap_name();
        let b = unique_tap_name();
        assert_ne!(a, b);
        assert_eq!(a.len(), 8);
        assert!(format!("napi/{a}-0").len() <= 15);
    }

    #[test]
    fn vxlan_frames_give_mac_address_and_devices() {
        let inner = sim::gro::frames::Tcp4::default().stream(1).remove(0);
        let outer = sim::gro::frames::Outer::default();
        let f = outer.vxlan(50000, 42, false, &inner);
        let v = vxlan_of(&f, &[4789]).expect("a VXLAN frame");
        let (mac, ip) = (v.dst_mac, v.dst_ip);
        assert_eq!((v.port, v.vni, v.inner), (4789, 42, 50));
        assert_eq!(&f[v.inner..], &inner[..]);
        let s = vxlan_setup(&[(0, 0, f.clone())], &[4789, 8472]);
        assert_eq!(s.tap_mac, Some(mac));
        assert_eq!(s.addrs, vec![ip]);
        assert_eq!(s.devices, vec![(4789, 42), (8472, 1)]);
        assert!(vxlan_of(&f, &[8472]).is_none());
        assert!(vxlan_of(&inner, &[4789]).is_none());
    }
}
