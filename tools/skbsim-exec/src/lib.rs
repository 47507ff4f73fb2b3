//! `skbsim exec`: run an unmodified program, as the calling user, with every open of
//! `/dev/net/tun` answered by a simulated device (docs/exec.md).
//!
//! The program runs under a seccomp filter whose listed syscalls (openat, ioctl, read,
//! write, ...: [`filter::intercepted`]) stop in SECCOMP_RET_USER_NOTIF; the supervisor
//! ([`run`]) answers those on the simulated device's fds through a [`SimTun`] and lets
//! every other one continue into the kernel. The program's device fd is one end of a
//! SOCK_SEQPACKET socketpair, so poll/epoll/select see the device's readiness.

mod device;
mod devinet;
mod filter;
pub mod inject;
mod ioctl;
mod loopback;
pub mod record;
mod rtnl;
mod rtnl_answer;
mod rtnl_get;
pub mod rtnl_link;
mod segment;
mod spawn;
mod stack;
mod supervisor;
mod sys;

use std::fmt;
use std::process::Command;

pub use device::{DeviceTun, FarSide, Sink};
pub use devinet::Ifa;
pub use inject::{FarInput, Injected};
pub use loopback::LoopbackTun;
pub use netlink_packet_route::link::LinkMessage;
pub use record::{ExecRecord, Framing, Recorder, StackSkb, WriteReport};
pub use sim::errno::Errno;
pub use sim::tun::ioctl::{FileId, IoctlAnswer, IoctlArg, SA_DATA_LEN};
pub use smoltcp::wire::IpCidr;
pub use stack::{parse_cidr, Stack, STACK_MAC, TCP_ECHO_PORT, UDP_ECHO_PORT};

/// What poll(2) on a device file reports (drivers/net/tun.c: tun_chr_poll).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness {
    /// EPOLLIN | EPOLLRDNORM: the queue has a frame.
    pub readable: bool,
    /// EPOLLOUT | EPOLLWRNORM: the socket is writeable.
    pub writable: bool,
    /// EPOLLERR: the file has no device.
    pub error: bool,
}

/// A network device as the socket ioctls see it (net/core/dev_ioctl.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkInfo {
    pub ifindex: u32,
    /// dev_get_flags, low 16 bits (IFF_UP, IFF_BROADCAST, IFF_RUNNING, ...).
    pub flags: u16,
    pub mtu: u32,
}

/// The simulated tun/tap devices behind the program's `/dev/net/tun` files: what the
/// supervisor asks: [`DeviceTun`] (the device model with a [`FarSide`] behind it) or
/// [`LoopbackTun`] (a stand-in that reads back what was written).
pub trait SimTun {
    /// tun_chr_open.
    fn open(&mut self, nonblock: bool) -> FileId;
    /// tun_chr_ioctl with the argument already copied from the program.
    fn ioctl(&mut self, f: FileId, cmd: u32, arg: &IoctlArg) -> Result<IoctlAnswer, Errno>;
    /// fcntl(F_SETFL) / FIONBIO changed the file's O_NONBLOCK.
    fn set_nonblock(&mut self, f: FileId, nonblock: bool);
    /// tun_chr_read_iter with a buffer of `buf_len` bytes: the bytes read.
    fn read(&mut self, f: FileId, buf_len: usize) -> Result<Vec<u8>, Errno>;
    /// tun_chr_write_iter: the count the write returns.
    fn write(&mut self, f: FileId, data: &[u8]) -> Result<usize, Errno>;
    /// tun_chr_poll.
    fn poll(&self, f: FileId) -> Readiness;
    /// A read of `f` with nothing queued would sleep in tun_ring_recv (a blocking file
    /// with a device) rather than answer at once (EAGAIN, EBADFD). The supervisor holds
    /// such a read until [`SimTun::poll`] reports readable or error.
    fn would_block(&self, f: FileId) -> bool {
        !self.poll(f).error
    }
    /// tun_chr_close: the file's last reference went away.
    fn close(&mut self, f: FileId);
    /// SIOCSIFFLAGS (IFF_UP) / SIOCSIFMTU on the device named `dev`.
    fn set_link(&mut self, dev: &[u8], up: Option<bool>, mtu: Option<u32>) -> Result<(), Errno>;
    /// The device named `dev`, if it is one of the simulated ones.
    fn link(&self, dev: &[u8]) -> Option<LinkInfo>;
    /// SIOCGIFHWADDR on a socket naming `dev`: `(sa_family, sa_data)`. None: the kernel
    /// answers (a backend whose devices are real).
    fn hw_addr(&self, _dev: &[u8]) -> Option<(u16, [u8; SA_DATA_LEN])> {
        None
    }
    /// SIOCSIFHWADDR on a socket naming `dev`. None: the kernel answers.
    fn set_hw_addr(
        &mut self,
        _dev: &[u8],
        _family: u16,
        _data: &[u8; SA_DATA_LEN],
    ) -> Option<Result<(), Errno>> {
        None
    }
    /// The RTM_NEWLINK the kernel writes about the simulated device `dev`
    /// ([`rtnl_link::link_message`]). None: the kernel answers (a backend whose devices
    /// are real, or no such device).
    fn link_message(&self, _dev: &[u8]) -> Option<LinkMessage> {
        None
    }
    /// The simulated devices' names, in ifindex order (what a dump adds).
    fn link_names(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }
    /// The name of the simulated device with ifindex `ifindex`, if there is one.
    fn link_name(&self, ifindex: u32) -> Option<Vec<u8>>;
    /// RTM_DELLINK on the device named `dev` (the device is unregistered; its files stay
    /// open with no device).
    fn delete_link(&mut self, dev: &[u8]) -> Result<(), Errno>;
    /// What the last [`SimTun::write`] did beyond its count (the frame's fate, the skbs
    /// the stack got, the far side's answers), taken; for the record ([`Recorder`]).
    fn take_write_report(&mut self) -> WriteReport {
        WriteReport::default()
    }
    /// How `f`'s reads and writes frame a packet (its device, the PI and vnet header
    /// before the frame); None without a device. For the record's capture.
    fn framing(&self, _f: FileId) -> Option<Framing> {
        None
    }
    /// An fd that polls readable when a frame may have come for `f` without an
    /// operation of the program (a real device, whose stack answers on its own time):
    /// the supervisor watches it while `f` is not readable. None for a model, whose
    /// queues change only inside its calls.
    fn wake_fd(&self, _f: FileId) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }
    /// The frames the far side sent toward the program during the last
    /// [`SimTun::set_link`] (the scenario's capture, [`inject`]), taken; for the record.
    fn take_injected(&mut self) -> Vec<Injected> {
        Vec::new()
    }
    /// The IPv4 address SIOCSIFADDR / SIOCSIFNETMASK gave the device named `dev`.
    fn ipv4(&self, dev: &[u8]) -> Option<Ifa>;
    /// RTM_DELADDR: the device named `dev` loses its IPv4 address. False where the backend
    /// does not model it (the kernel answers the request).
    fn del_ipv4(&mut self, _dev: &[u8]) -> bool {
        false
    }
    /// Gives the device named `dev` the IPv4 address `ifa` (devinet_ioctl's rules already
    /// applied: src/devinet.rs).
    fn set_ipv4(&mut self, dev: &[u8], ifa: Ifa);
}

/// Why the program could not be run under the supervisor.
#[derive(Debug)]
pub enum ExecError {
    /// The seccomp filter with a listener could not be installed (seccomp unavailable,
    /// no SECCOMP_FILTER_FLAG_NEW_LISTENER before Linux 5.0, ...).
    Unsupervisable(String),
    /// The program could not be started (not found, not executable).
    Spawn(String),
    /// The supervisor itself failed (a listener ioctl).
    Supervisor(String),
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Unsupervisable(s) | ExecError::Spawn(s) | ExecError::Supervisor(s) => {
                f.write_str(s)
            }
        }
    }
}

impl std::error::Error for ExecError {}

/// How the program ended: its exit code, or 128 + the signal that killed it (as a shell
/// reports it).
pub type ExitCode = i32;

/// Runs `cmd` under the supervisor until the program and every task that inherited its
/// filter have exited; the program's exit code and the devices as they were left.
pub fn run<T: SimTun + Send + 'static>(tun: T, cmd: Command) -> Result<(ExitCode, T), ExecError> {
    spawn::run(tun, cmd)
}
