//! Private network namespaces on a dedicated thread.
//!
//! # Why a thread, not a forked child
//!
//! `unshare(CLONE_NEWNET)` moves only the calling thread into the new namespace. Running
//! every kernel experiment on a fresh `std::thread` that unshares first gives:
//! - isolation: every device and socket the closure creates lives in a namespace nobody else
//!   can see; the host's interfaces are never visible, so never touched;
//! - cleanup for free: when the thread exits and its descriptors are closed, the namespace
//!   loses its last reference and the kernel deletes every virtual device in it. This also
//!   holds after a panic (the stack unwinds and closes the fds) and after SIGKILL of the
//!   whole process (the kernel closes the fds). Nothing is mounted, nothing is named
//!   (unlike `ip netns add`, whose bind mount survives a crash);
//! - results pass back as ordinary Rust values, no serialization; a panic in the closure is
//!   caught by `join` and becomes a [`KernelError`] with [`Cause::Panicked`].
//!
//! A forked child would give the same isolation but is unsafe in a multi-threaded Rust
//! process (only async-signal-safe calls are allowed after fork) and needs a pipe protocol,
//! so threads were chosen; they proved reliable here.
//!
//! Threads spawned from inside the closure inherit its namespace (clone copies the caller's
//! nsproxy), and so do child processes started with `std::process::Command` from inside the
//! closure (`ip -d link` there shows the private devices).
//!
//! # What follows the thread's namespace, and what does not (verified on 6.18)
//! - netlink, socket ioctls (SIOCETHTOOL, SIOCGIFINDEX), AF_PACKET, `/dev/net/tun`: the
//!   namespace of the thread that creates the socket/fd.
//! - `/proc/sys/net/...`: resolved through the opening task's (thread's) namespace, so
//!   writing `disable_ipv6` there affects only the private namespace. Before writing, the
//!   setup checks that `/proc/sys/net/ipv6/conf` lists only `all`, `default` and `lo`,
//!   which is true in a fresh namespace and false on the host.
//! - `/proc/net` is a link to `/proc/self/net`, the *main thread's* view: use
//!   `/proc/thread-self/net` instead.
//! - `/sys/class/net` follows the mount namespace, not the network namespace: it shows the
//!   host's devices. See [`crate::sysfs`] for a private sysfs mount.
//!
//! # Safety belt
//! Every constructor that can create or configure something (`Rtnl::new`, `Tap` open,
//! `Ethtool::new`, `PacketSocket::bind`) refuses to run when the calling thread's network
//! namespace is the process's main thread's (`/proc/thread-self/ns/net` ==
//! `/proc/self/ns/net`).

use std::any::Any;
use std::collections::BTreeSet;
use std::thread;

use crate::error::{Cause, KernelError};
use crate::rtnl::Rtnl;
use crate::sys::{current_netns_inode, process_netns_inode};
use crate::tap::{Tap, TapConfig};

/// The context handed to the closure of [`Netns::run`]: a netlink socket in the private
/// namespace and the namespace's identity.
#[derive(Debug)]
pub struct Netns {
    inode: u64,
    host_inode: u64,
    rtnl: Rtnl,
    ipv6_disabled: bool,
}

impl Netns {
    /// Run `f` on a new thread inside a fresh network namespace, and join it.
    ///
    /// Before `f` runs: the thread has unshared `CLONE_NEWNET` (checked: its namespace
    /// inode differs from before and from the main thread's), `lo` is up, and IPv6 is
    /// disabled (`all` and `default`) so no router solicitations appear on new devices.
    /// A panic in `f` is returned as an error. Everything `f` creates disappears when the
    /// thread ends, unless `f` returns descriptors (a [`Tap`], a socket) that keep the
    /// namespace alive until they are dropped.
    pub fn run<T, F>(f: F) -> Result<T, KernelError>
    where
        F: FnOnce(&mut Netns) -> Result<T, KernelError> + Send,
        T: Send,
    {
        thread::scope(|s| {
            let handle = thread::Builder::new()
                .name("skbsim-netns".into())
                .spawn_scoped(s, move || -> Result<T, KernelError> {
                    let mut ns = Netns::enter()?;
                    f(&mut ns)
                })
                .map_err(|e| {
                    KernelError::new("spawn netns thread", Cause::Protocol(e.to_string()))
                })?;
            match handle.join() {
                Ok(r) => r,
                Err(payload) => Err(KernelError::new(
                    "Netns::run closure",
                    Cause::Panicked(panic_message(payload.as_ref())),
                )),
            }
        })
    }

    fn enter() -> Result<Netns, KernelError> {
        let before = current_netns_inode()?;
        let host_inode = process_netns_inode()?;
        // SAFETY: unshare(2) with a constant flag; affects only this thread.
        let ret = unsafe { libc::unshare(libc::CLONE_NEWNET) };
        crate::sys::cvt(ret).map_err(|e| KernelError::sys("unshare(CLONE_NEWNET)", e))?;
        let inode = current_netns_inode()?;
        if inode == before || inode == host_inode {
            return Err(KernelError::new(
                "unshare(CLONE_NEWNET)",
                Cause::Refused(format!(
                    "namespace did not change (before net:[{before}], after net:[{inode}], \
                     main thread net:[{host_inode}])"
                )),
            ));
        }
        let mut rtnl = Rtnl::new()?;
        let lo = rtnl.link_index("lo")?;
        rtnl.set_up(lo, true)?;
        let ipv6_disabled = disable_ipv6()?;
        Ok(Netns {
            inode,
            host_inode,
            rtnl,
            ipv6_disabled,
        })
    }

    /// Inode of this namespace (`net:[N]`).
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// Inode of the main thread's (host) namespace.
    pub fn host_inode(&self) -> u64 {
        self.host_inode
    }

    /// Whether IPv6 was found and disabled (false when the kernel has no IPv6).
    pub fn ipv6_disabled(&self) -> bool {
        self.ipv6_disabled
    }

    /// The namespace's netlink socket.
    pub fn rtnl(&mut self) -> &mut Rtnl {
        &mut self.rtnl
    }

    /// Create a tun/tap queue (same as `cfg.open()`).
    pub fn tap(&mut self, cfg: &TapConfig) -> Result<Tap, KernelError> {
        cfg.open()
    }

    /// Create a tap and bring it up.
    pub fn tap_up(&mut self, cfg: &TapConfig) -> Result<Tap, KernelError> {
        let t = cfg.open()?;
        self.rtnl.set_up(t.ifindex(), true)?;
        Ok(t)
    }

    /// Create a bridge, enslave `ports`, and bring the bridge up; returns its ifindex.
    pub fn bridge(&mut self, name: &str, ports: &[u32]) -> Result<u32, KernelError> {
        let br = self.rtnl.create_bridge(name)?;
        for &p in ports {
            self.rtnl.set_master(p, Some(br))?;
        }
        self.rtnl.set_up(br, true)?;
        Ok(br)
    }

    /// Like [`Netns::bridge`], but with multicast snooping off so that the bridge itself
    /// never sends a frame out of its ports (see [`Rtnl::create_quiet_bridge`]).
    pub fn quiet_bridge(&mut self, name: &str, ports: &[u32]) -> Result<u32, KernelError> {
        let br = self.rtnl.create_quiet_bridge(name)?;
        for &p in ports {
            self.rtnl.set_master(p, Some(br))?;
        }
        self.rtnl.set_up(br, true)?;
        Ok(br)
    }

    /// Write `value` to `/proc/sys/net/<key>` (e.g. `bridge/bridge-nf-call-iptables`).
    /// `/proc/sys/net` resolves through the calling thread's namespace (see the module
    /// docs), and a [`Netns`] only exists on its own namespace's thread, so this never
    /// touches the host's settings.
    pub fn sysctl(&mut self, key: &str, value: &str) -> Result<(), KernelError> {
        let path = format!("/proc/sys/net/{key}");
        std::fs::write(&path, value).map_err(|e| {
            KernelError::new(
                format!("write {value} to {path}"),
                Cause::Errno {
                    errno: crate::Errno::from_raw(e.raw_os_error().unwrap_or(0)),
                    extack: None,
                },
            )
        })
    }

    /// Run a command inside this namespace and return its stdout (for diagnostics such as
    /// `ip -d link`). The child inherits the calling thread's namespace.
    pub fn command_output(&self, program: &str, args: &[&str]) -> Result<String, KernelError> {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .map_err(|e| {
                KernelError::new(format!("run {program}"), Cause::Protocol(e.to_string()))
            })?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Disable IPv6 in the calling thread's (fresh) namespace, after checking that
/// `/proc/sys/net` really shows this namespace. Returns false when IPv6 is absent.
fn disable_ipv6() -> Result<bool, KernelError> {
    let conf = "/proc/sys/net/ipv6/conf";
    let entries = match std::fs::read_dir(conf) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect::<BTreeSet<_>>(),
        Err(_) => return Ok(false),
    };
    let fresh: BTreeSet<String> = ["all", "default", "lo"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if entries != fresh {
        return Err(KernelError::new(
            "disable IPv6",
            Cause::Refused(format!(
                "{conf} lists {entries:?}, not a fresh namespace's [all, default, lo]; \
                 not writing sysctls"
            )),
        ));
    }
    for which in ["default", "all"] {
        let path = format!("{conf}/{which}/disable_ipv6");
        std::fs::write(&path, "1").map_err(|e| {
            KernelError::new(
                format!("write {path}"),
                Cause::Errno {
                    errno: crate::Errno::from_raw(e.raw_os_error().unwrap_or(0)),
                    extack: None,
                },
            )
        })?;
    }
    Ok(true)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(e) = payload.downcast_ref::<KernelError>() {
        e.to_string()
    } else {
        "non-string panic payload".to_string()
    }
}
