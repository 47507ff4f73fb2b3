//! The simulated device (`sim::tun::device::TunHost`, profile linux-6.18) against this
//! host's tun, step by step on real `/dev/net/tun` files in a private namespace: reads
//! without a device, of an empty non-blocking queue, of an empty buffer, short reads with
//! and without PI, writes, poll readiness, multiqueue attach and detach (ring purge, queue
//! indexes, the automq flow table steering a reply to its writer's queue), close and
//! RTM_DELLINK. The stack side transmits with an AF_PACKET socket (packet_snd ->
//! dev_queue_xmit), the model with `TunHost::xmit`. Every mismatch is printed, then the
//! test fails if there was one (docs/tun-device.md#conformance).
//!
//! Queue choice is compared only where it does not depend on hashrnd (random in the
//! kernel): one queue, or a flow the table holds.

mod common;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use sim::errno::Errno as SimErrno;
use sim::profile::LINUX_6_18;
use sim::skb::{IpSummed, SkBuff};
use sim::tun::device::TunHost;
use sim::tun::ioctl::cmd::*;
use sim::tun::ioctl::iff_flags::*;
use sim::tun::ioctl::{Caller, FileId, IoctlArg, IFNAMSIZ};
use skbsim_kernel::tun_ioctl::TunProbe;
use skbsim_kernel::{KernelError, Netns, PacketSocket};

/// POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM.
const POLL_EVENTS: i16 = 0x001 | 0x040 | 0x004 | 0x100;

struct Bench<'a> {
    ns: &'a mut Netns,
    model: TunHost,
    probe: TunProbe,
    files: Vec<(FileId, Option<File>)>,
    mismatches: Vec<String>,
    steps: usize,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn sys_read(f: &File, len: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` is a live writable buffer of `len` bytes.
    let n = unsafe { libc::read(f.as_raw_fd(), buf.as_mut_ptr().cast(), len) };
    if n < 0 {
        return Err(errno());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

fn sys_write(f: &File, data: &[u8]) -> Result<usize, i32> {
    // SAFETY: `data` is a live readable buffer of its length.
    let n = unsafe { libc::write(f.as_raw_fd(), data.as_ptr().cast(), data.len()) };
    if n < 0 {
        return Err(errno());
    }
    Ok(n as usize)
}

/// poll(2) with all four events asked: revents is tun_chr_poll's mask.
fn sys_poll(f: &File, timeout_ms: i32) -> u32 {
    let mut p = libc::pollfd {
        fd: f.as_raw_fd(),
        events: POLL_EVENTS,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, timeout_ms) };
    u32::from(p.revents as u16)
}

fn set_nonblock(f: &File) {
    // SAFETY: fcntl on an fd this test owns.
    unsafe {
        let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

fn ifreq(name: &str, flags: u16) -> IoctlArg {
    let mut n = [0u8; IFNAMSIZ];
    n[..name.len()].copy_from_slice(name.as_bytes());
    IoctlArg::Ifreq { name: n, flags }
}

/// Ethernet + IPv4 + UDP, 10.0.0.`a`:`sport` -> 10.0.0.`b`:`dport`, 16 payload bytes.
fn udp(a: u8, b: u8, sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, b, 2, 0, 0, 0, 0, a, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 44, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, a, 10, 0, 0, b]);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 24, 0, 0]);
    f.extend_from_slice(b"sixteen bytes...");
    f
}

impl Bench<'_> {
    fn open(&mut self) -> Result<usize, KernelError> {
        let real = self.probe.open()?;
        set_nonblock(&real);
        self.files.push((self.model.open(true), Some(real)));
        Ok(self.files.len() - 1)
    }

    fn real(&self, i: usize) -> &File {
        self.files[i].1.as_ref().expect("open")
    }

    fn check<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, real: T, model: T) {
        self.steps += 1;
        if real != model {
            self.mismatches
                .push(format!("{what}: kernel {real:?} model {model:?}"));
        }
    }

    fn ioctl(&mut self, i: usize, cmd: u32, arg: IoctlArg, what: &str) {
        let file = self.files[i].1.as_ref().expect("open");
        let real = self.probe.ioctl(file, cmd, &arg);
        let model = self
            .model
            .ioctl(self.files[i].0, cmd, &arg)
            .map_err(SimErrno::code);
        self.check(what, real, model);
    }

    fn read(&mut self, i: usize, len: usize, what: &str) {
        let real = sys_read(self.real(i), len);
        let model = self
            .model
            .read(self.files[i].0, len)
            .map_err(SimErrno::code);
        self.check(what, real, model);
    }

    fn write(&mut self, i: usize, data: &[u8], what: &str) {
        let real = sys_write(self.real(i), data);
        let model = self
            .model
            .write(self.files[i].0, data)
            .map_err(SimErrno::code);
        self.check(what, real, model);
    }

    fn poll(&mut self, i: usize, what: &str) {
        let real = sys_poll(self.real(i), 0);
        let model = self.model.poll(self.files[i].0).bits();
        self.check(what, real, model);
    }

    fn close(&mut self, i: usize) {
        self.files[i].1 = None;
        self.model.close(self.files[i].0);
    }

    fn up(&mut self, name: &str) -> Result<(), KernelError> {
        let ifindex = self.ns.rtnl().link_index(name)?;
        self.ns.rtnl().set_up(ifindex, true)?;
        self.model
            .set_link(name.as_bytes(), Some(true), None)
            .expect("model device");
        Ok(())
    }

    /// The stack transmits `frame` on `name`; on the kernel, wait until file `expect`
    /// is readable so that later steps see the ring filled.
    fn xmit(&mut self, name: &str, frame: &[u8], expect: usize) -> Result<(), KernelError> {
        let ifindex = self.ns.rtnl().link_index(name)?;
        PacketSocket::bind(ifindex)?.send_with_protocol(frame, 0x0800)?;
        let start = Instant::now();
        while sys_poll(self.real(expect), 10) & 1 == 0 && start.elapsed() < Duration::from_secs(1) {
        }
        let mut skb = SkBuff::from_frame(frame, 64, frame.len());
        skb.protocol = 0x0800;
        skb.set_network_header(14);
        self.model.xmit(name.as_bytes(), skb);
        Ok(())
    }

    fn gone(&mut self, name: &str, what: &str) {
        let real = self.ns.rtnl().link_index(name).is_err();
        let model = self.model.device(name.as_bytes()).is_none();
        self.check(what, real, model);
    }
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn the_simulated_device_answers_as_the_kernel() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let mut b = Bench {
            ns,
            model: TunHost::new(&LINUX_6_18, Caller::root()),
            probe: TunProbe::new(),
            files: Vec::new(),
            mismatches: Vec::new(),
            steps: 0,
        };
        single_queue(&mut b)?;
        multi_queue(&mut b)?;
        napi_checksum(&mut b)?;
        for m in &b.mismatches {
            eprintln!("MISMATCH {m}");
        }
        eprintln!("{} steps, {} mismatches", b.steps, b.mismatches.len());
        assert!(b.mismatches.is_empty(), "{} mismatches", b.mismatches.len());
        Ok(())
    })
    .unwrap();
}

/// One tap with PI: no device, empty queue, empty buffer, short read, write, down/up,
/// RTM_DELLINK under an open file.
fn single_queue(b: &mut Bench) -> Result<(), KernelError> {
    let f = b.open()?;
    b.read(f, 100, "read, no device");
    b.write(f, &[0; 60], "write, no device");
    b.poll(f, "poll, no device");
    b.ioctl(f, TUNSETIFF, ifreq("pi0", IFF_TAP), "TUNSETIFF pi0");
    b.poll(f, "poll, down");
    b.write(f, &[0; 64], "write, down");
    b.up("pi0")?;
    b.poll(f, "poll, up");
    b.read(f, 1500, "read, empty non-blocking queue");
    let frame = udp(1, 2, 1000, 2000);
    b.xmit("pi0", &frame, f)?;
    b.poll(f, "poll, one queued");
    b.read(f, 0, "read, empty buffer");
    b.poll(f, "poll, still queued after an empty read");
    b.read(f, 10, "read, 10 bytes of PI + frame");
    b.read(f, 1500, "read after the short read");
    b.xmit("pi0", &frame, f)?;
    b.read(f, 4 + frame.len(), "read, exact buffer");
    let mut pi_frame = vec![0, 0, 0x08, 0x00];
    pi_frame.extend_from_slice(&udp(2, 1, 2000, 1000));
    b.write(f, &pi_frame, "write, PI + frame");
    b.write(f, &[0, 0, 0x08], "write, shorter than the PI");
    b.ioctl(f, TUNSETSNDBUF, IoctlArg::Int(3), "TUNSETSNDBUF 3");
    b.poll(f, "poll, sk_sndbuf 3");
    b.ioctl(f, TUNSETSNDBUF, IoctlArg::Int(4), "TUNSETSNDBUF 4");
    b.poll(f, "poll, sk_sndbuf 4");
    let ifindex = b.ns.rtnl().link_index("pi0")?;
    b.ns.rtnl().delete_link(ifindex)?;
    b.model.del_link(b"pi0").expect("model device");
    b.read(f, 100, "read after RTM_DELLINK");
    b.poll(f, "poll after RTM_DELLINK");
    b.write(f, &pi_frame, "write after RTM_DELLINK");
    b.close(f);
    Ok(())
}

/// Three queues: the flow table, a detach (purge, the last queue's new index, the
/// moved queue's flows), attach again, close.
fn multi_queue(b: &mut Bench) -> Result<(), KernelError> {
    const MQ: u16 = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE;
    let q: Vec<usize> = (0..3).map(|_| b.open()).collect::<Result<_, _>>()?;
    for (n, &f) in q.iter().enumerate() {
        b.ioctl(
            f,
            TUNSETIFF,
            ifreq("mq0", MQ),
            &format!("TUNSETIFF mq0 queue {n}"),
        );
    }
    b.up("mq0")?;
    // Flow Z written on queue 0, A on queue 1, C on queue 2.
    for (&f, port) in q.iter().zip([3000u16, 1111, 2222]) {
        b.write(f, &udp(1, 2, port, 53), &format!("write flow {port}"));
    }
    // Replies: the flow table sends each to its writer's queue.
    for (&f, port) in q.iter().zip([3000u16, 1111, 2222]) {
        b.xmit("mq0", &udp(2, 1, 53, port), f)?;
        for (n, &g) in q.iter().enumerate() {
            b.poll(g, &format!("poll queue {n} after the reply to {port}"));
        }
    }
    b.read(q[1], 20, "queue 1: short read without PI");
    b.read(q[2], 1500, "queue 2: reply to 2222");
    // Queue 0 still holds the reply to 3000: the detach purges it; the last queue
    // (file 2) takes index 0; flow A keeps index 1 (file 1), flow C index 2 (capped to 0).
    b.ioctl(
        q[0],
        TUNSETQUEUE,
        ifreq("", IFF_DETACH_QUEUE),
        "detach queue 0",
    );
    b.read(q[0], 1500, "read on the detached queue");
    b.poll(q[0], "poll on the detached queue");
    b.write(q[0], &udp(1, 2, 4444, 53), "write on the detached queue");
    b.xmit("mq0", &udp(2, 1, 53, 1111), q[1])?;
    b.xmit("mq0", &udp(2, 1, 53, 2222), q[2])?;
    for (n, &g) in q.iter().enumerate() {
        b.poll(
            g,
            &format!("poll file {n} after the detach and two replies"),
        );
    }
    b.read(q[1], 1500, "file 1: reply to 1111 after the detach");
    b.read(q[2], 1500, "file 2: reply to 2222 after the detach");
    b.ioctl(
        q[0],
        TUNSETQUEUE,
        ifreq("", IFF_ATTACH_QUEUE),
        "attach queue 0 again",
    );
    b.poll(q[0], "poll on the attached-again queue");
    for f in q {
        b.close(f);
    }
    b.gone("mq0", "mq0 gone after the last close");
    Ok(())
}

/// Ethernet + IPv4 + TCP (ACK, 10 payload bytes) with correct IP and TCP checksums.
fn tcp_frame() -> Vec<u8> {
    sim::gro::frames::Tcp4 {
        payload: 10,
        ..Default::default()
    }
    .stream(1)
    .remove(0)
}

/// A valid TCP segment written to an IFF_NAPI tap reaches the stack through GRO, which
/// validated its checksum (AF_PACKET: TP_STATUS_CSUM_VALID); through a plain tap it does
/// not (the model: CHECKSUM_UNNECESSARY vs CHECKSUM_NONE).
fn napi_checksum(b: &mut Bench) -> Result<(), KernelError> {
    const CSUM_VALID: u32 = 0x80;
    for (name, flags) in [
        ("napi0", IFF_TAP | IFF_NO_PI | IFF_NAPI),
        ("plain0", IFF_TAP | IFF_NO_PI),
    ] {
        let f = b.open()?;
        b.ioctl(
            f,
            TUNSETIFF,
            ifreq(name, flags),
            &format!("TUNSETIFF {name}"),
        );
        b.up(name)?;
        let ifindex = b.ns.rtnl().link_index(name)?;
        let mut sock = PacketSocket::bind(ifindex)?;
        let frame = tcp_frame();
        b.model.take_received();
        b.write(f, &frame, &format!("{name}: write a valid TCP segment"));
        let real = sock
            .recv_timeout(Some(Duration::from_secs(1)))?
            .map(|(_, aux)| aux.status & CSUM_VALID != 0);
        let model = b
            .model
            .take_received()
            .first()
            .map(|(_, skb)| skb.ip_summed == IpSummed::Unnecessary);
        b.check(
            &format!("{name}: the stack's skb has a validated checksum"),
            real,
            model,
        );
        b.close(f);
    }
    Ok(())
}
