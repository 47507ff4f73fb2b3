//! Per-device sysfs attributes (`gro_flush_timeout`, `napi_defer_hard_irqs`, ...) of the
//! private network namespace.
//!
//! `/sys/class/net` follows the *mount* namespace: after `unshare(CLONE_NEWNET)` it still
//! shows the host's devices. A sysfs instance shows the network namespace of the task that
//! mounts it, so [`with_sysfs`] runs a closure on a helper thread that
//! 1. inherits the caller's (private) network namespace,
//! 2. `unshare(CLONE_NEWNS)` (allowed per thread: it also unshares the thread's fs_struct),
//!    checked by comparing `/proc/thread-self/ns/mnt` with the main thread's,
//! 3. makes every mount private (`MS_REC | MS_PRIVATE` on `/`) so nothing propagates back
//!    to the host's mount namespace,
//! 4. mounts a new sysfs on `/sys` and checks that `/sys/class/net` lists exactly the
//!    namespace's links (from netlink) before the closure sees it.
//!
//! When the helper thread exits, its mount namespace (and the sysfs mount) is gone.
//!
//! Why not netlink: rtnetlink has no gro_flush_timeout attribute, and the netdev genl
//! family's per-NAPI `gro-flush-timeout` (`napi-set`, 6.13+) cannot reach a tap's NAPI,
//! which has no NAPI id (see [`crate::genl`]).

use std::collections::BTreeSet;
use std::path::Path;
use std::thread;

use rustix::mount::{MountFlags, MountPropagationFlags};

use crate::error::{Cause, Errno, KernelError};
use crate::rtnl::Rtnl;
use crate::sys::{cvt, ensure_private_netns, ns_inode};

/// Run `f` with a sysfs of the calling thread's network namespace mounted at the path it
/// receives (`/sys`, in a private mount namespace of a helper thread).
pub fn with_sysfs<R, F>(f: F) -> Result<R, KernelError>
where
    F: FnOnce(&Path) -> R + Send,
    R: Send,
{
    ensure_private_netns("private sysfs mount")?;
    let mut rtnl = Rtnl::new()?;
    let expected: BTreeSet<String> = rtnl.links()?.into_iter().map(|l| l.name).collect();
    thread::scope(|s| {
        let h = thread::Builder::new()
            .name("skbsim-sysfs".into())
            .spawn_scoped(s, move || -> Result<R, KernelError> {
                enter_private_sysfs(&expected)?;
                Ok(f(Path::new("/sys")))
            })
            .map_err(|e| KernelError::new("spawn sysfs thread", Cause::Protocol(e.to_string())))?;
        match h.join() {
            Ok(r) => r,
            Err(_) => Err(KernelError::new(
                "with_sysfs closure",
                Cause::Panicked("closure panicked".into()),
            )),
        }
    })
}

fn enter_private_sysfs(expected: &BTreeSet<String>) -> Result<(), KernelError> {
    ensure_private_netns("private sysfs mount (helper thread)")?;
    // SAFETY: unshare(2) with a constant flag; affects only this helper thread.
    let ret = unsafe { libc::unshare(libc::CLONE_NEWNS) };
    cvt(ret).map_err(|e| KernelError::sys("unshare(CLONE_NEWNS)", e))?;
    let here = ns_inode("/proc/thread-self/ns/mnt")?;
    let main = ns_inode("/proc/self/ns/mnt")?;
    if here == main {
        return Err(KernelError::new(
            "unshare(CLONE_NEWNS)",
            Cause::Refused("mount namespace did not change".into()),
        ));
    }
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| KernelError::sys("mount --make-rprivate /", crate::error::from_rustix(e)))?;
    rustix::mount::mount(
        "sysfs",
        "/sys",
        "sysfs",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|e| {
        KernelError::sys(
            "mount -t sysfs none /sys (private)",
            crate::error::from_rustix(e),
        )
    })?;
    let listed: BTreeSet<String> = std::fs::read_dir("/sys/class/net")
        .map_err(|e| io_err("read_dir /sys/class/net", e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if &listed != expected {
        return Err(KernelError::new(
            "private sysfs mount",
            Cause::Refused(format!(
                "/sys/class/net lists {listed:?}, netlink lists {expected:?}"
            )),
        ));
    }
    Ok(())
}

fn io_err(op: impl Into<String>, e: std::io::Error) -> KernelError {
    KernelError::new(
        op,
        Cause::Errno {
            errno: Errno::from_raw(e.raw_os_error().unwrap_or(0)),
            extack: Some(e.to_string()),
        },
    )
}

/// Write `/sys/class/net/<ifname>/<attr>` in the calling thread's network namespace.
pub fn write_net_attr(ifname: &str, attr: &str, value: &str) -> Result<(), KernelError> {
    let rel = format!("class/net/{ifname}/{attr}");
    with_sysfs(|sys| std::fs::write(sys.join(&rel), value))?
        .map_err(|e| io_err(format!("write /sys/{rel} = {value}"), e))
}

/// Read `/sys/class/net/<ifname>/<attr>` (trimmed) in the calling thread's namespace.
pub fn read_net_attr(ifname: &str, attr: &str) -> Result<String, KernelError> {
    let rel = format!("class/net/{ifname}/{attr}");
    with_sysfs(|sys| std::fs::read_to_string(sys.join(&rel)))?
        .map(|s| s.trim().to_string())
        .map_err(|e| io_err(format!("read /sys/{rel}"), e))
}

/// Set the device's `gro_flush_timeout` (ns) in the calling thread's namespace. Since
/// 6.13 the sysfs store also copies the value into every NAPI of the device (including a
/// tap's, created at `TUNSETIFF` time with `IFF_NAPI`).
pub fn set_gro_flush_timeout(ifname: &str, ns: u64) -> Result<(), KernelError> {
    write_net_attr(ifname, "gro_flush_timeout", &ns.to_string())
}

/// Read the device's `gro_flush_timeout` (ns).
pub fn gro_flush_timeout(ifname: &str) -> Result<u64, KernelError> {
    let s = read_net_attr(ifname, "gro_flush_timeout")?;
    s.parse().map_err(|_| {
        KernelError::new(
            format!("parse gro_flush_timeout of {ifname}"),
            Cause::Protocol(format!("{s:?}")),
        )
    })
}
