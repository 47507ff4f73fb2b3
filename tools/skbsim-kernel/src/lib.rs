//! OS-facing backend of skbsim: everything that touches the real kernel.
//!
//! All work happens inside private network namespaces ([`Netns::run`]); constructors that
//! create or configure devices refuse to run in the process's main namespace.
//!
//! - [`Netns`]: a fresh network namespace on a dedicated thread, `lo` up, IPv6 off.
//! - [`TapConfig`] / [`Tap`]: `/dev/net/tun` queues and their ioctls.
//! - [`tun_ioctl::TunProbe`]: any tun ioctl with the model's typed argument and answer.
//! - [`tun_ioctl_table`]: the tun ioctl conformance sequence, recorded on a kernel and
//!   replayed on the model under any profile.
//! - [`Rtnl`]: `NETLINK_ROUTE` link operations and `IFLA_STATS64` counters.
//! - [`Ethtool`]: netdev features by name through `SIOCETHTOOL`.
//! - [`PacketSocket`]: AF_PACKET with `PACKET_AUXDATA`.
//! - [`bpf`]: bpf(2) maps, XDP program load (skbsim's own instruction bytes), test runs
//!   and XDP attachment.
//! - [`sysfs`]: per-device sysfs attributes through a private sysfs mount
//!   ([`set_gro_flush_timeout`]).
//! - [`genl::NetdevGenl`]: the netdev generic netlink family's NAPI objects.
//! - [`arm`]: scenarios replayed through the real kernel ([`arm::run_tun_read`]) and the
//!   real tx-VLAN-offload benchmark ([`arm::vlan_offload_bench`]).
//! - [`features`]: the kernel features a scenario needs (GRE, vhost_net, USO on tap),
//!   probed on the running kernel.
//! - [`vhost`]: a userspace vhost_net client (owner, memory table, TX vring, eventfds,
//!   backend) for the vhost-tx arm.
//! - [`child`]: a child process timed from outside with its exact peak RSS (`wait4`).
//! - [`tcpreplay`]: tcpreplay through a real tap (write and read path) for `skbsim bench`.
//!
//! The kernel lab (a guest kernel under QEMU for what this machine's kernel lacks) is its
//! own crate, `skbsim-lab`, built on this one.

pub mod arm;
pub mod bpf;
pub mod child;
pub mod error;
pub mod ethtool;
pub mod features;
pub mod genl;
mod ioctl;
pub mod netlink;
pub mod netns;
pub mod packet;
pub mod rtnl;
pub mod sys;
pub mod sysfs;
pub mod tap;
pub mod tcpreplay;
pub mod tun_ioctl;
pub mod tun_ioctl_table;
pub mod vhost;

pub use error::{Cause, Errno, KernelError, OsErrno};
pub use ethtool::{get_feature, set_feature, Ethtool, Feature};
pub use netlink::{Nla, NlaValue};
pub use netns::Netns;
pub use packet::{AuxData, PacketSocket, RxVnet};
pub use rtnl::{LinkInfo, LinkStats, Rtnl, XdpAttached};
pub use sys::{current_netns_inode, in_private_netns, process_netns_inode};
pub use sysfs::{gro_flush_timeout, set_gro_flush_timeout};
pub use tap::{Tap, TapConfig};
// The headers a tap read or write carries: the model's own wire views, one definition.
pub use sim::wire::{Endian, TunPiRepr, VirtioNetHdrRepr, VnetHdrLayout};

/// `Ok(())` when this process can run the kernel backend: effective uid 0 and
/// `/dev/net/tun` opens. Otherwise a one-line reason, for callers to skip or exit cleanly.
/// (Opening `/dev/net/tun` creates nothing; a device exists only after `TUNSETIFF`.)
pub fn privileges_ok() -> Result<(), String> {
    let euid = rustix::process::geteuid().as_raw();
    if euid != 0 {
        return Err(format!(
            "not root (euid {euid}); the kernel backend needs root"
        ));
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
    {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("cannot open /dev/net/tun: {e}")),
    }
}

/// The one guard of the real-kernel tests: panics, naming what is missing, unless
/// [`privileges_ok`]. Every such test is also `#[ignore]`d, so a run that cannot use the
/// kernel reports it as ignored, never as passed; `cargo test -- --include-ignored`
/// (ci/test.sh as root) runs it, and there a missing privilege is a failure.
pub fn require_privileges() {
    if let Err(reason) = privileges_ok() {
        panic!(
            "this real-kernel test needs root and /dev/net/tun ({reason}); \
             it is #[ignore]d: run it as root with `cargo test -- --include-ignored`"
        );
    }
}
