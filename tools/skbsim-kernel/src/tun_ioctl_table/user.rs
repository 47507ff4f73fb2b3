//! The table's rows as an unprivileged caller (docs/tun-ioctl.md#permission): for one
//! ioctl the sequence's thread takes another effective uid and gid and no supplementary
//! groups, then root back. setresuid(2), setresgid(2) and setgroups(2) as raw syscalls
//! change the calling thread's credentials only (rustix's `set_thread_*`), and the
//! sequence runs on [`crate::Netns::run`]'s own thread. Capabilities follow the effective
//! uid (capabilities(7), "Effect of user ID changes on capabilities": 0 to nonzero clears
//! the effective set, nonzero to 0 copies the permitted set back); the real and saved uid
//! stay 0, so the permitted set is kept and root comes back whole.

use rustix::process::{getegid, getgroups, Gid, Uid};
use rustix::thread::{set_thread_groups, set_thread_res_gid, set_thread_res_uid};

use sim::tun::ioctl::cmd::*;
use sim::tun::ioctl::iff_flags::*;
use sim::tun::ioctl::IoctlArg;

use super::rows::ifreq;
use super::Recorder;
use crate::{Errno, KernelError};

fn sys(what: &str, e: rustix::io::Errno) -> KernelError {
    KernelError::sys(what.to_string(), Errno::from_raw(e.raw_os_error()))
}

/// `f` run as `euid`:`egid` with no supplementary groups and no capabilities.
pub(super) fn as_user<R>(euid: u32, egid: u32, f: impl FnOnce() -> R) -> Result<R, KernelError> {
    let groups = getgroups().map_err(|e| sys("getgroups", e))?;
    let old_egid = getegid();
    set_thread_groups(&[]).map_err(|e| sys("setgroups []", e))?;
    set_thread_res_gid(None, Gid::from_raw(egid), None).map_err(|e| sys("setresgid", e))?;
    set_thread_res_uid(None, Uid::from_raw(euid), None).map_err(|e| sys("setresuid", e))?;
    let r = f();
    set_thread_res_uid(None, Uid::ROOT, None).map_err(|e| sys("setresuid back to 0", e))?;
    set_thread_res_gid(None, old_egid, None).map_err(|e| sys("setresgid back", e))?;
    set_thread_groups(&groups).map_err(|e| sys("setgroups back", e))?;
    Ok(r)
}

/// The unprivileged caller of the rows: uid and gid 1000, no supplementary groups.
const USER: (u32, u32) = (1000, 1000);

/// Who may attach to an existing device (drivers/net/tun.c: tun_set_iff, asking
/// tun_not_capable on 6.1 and 6.18, tun_permitted on Debian's 6.12.118):
/// for each owner/group setting a fresh multi-queue device (an owner or group once set
/// cannot be unset: TUNSETOWNER -1 is EINVAL) and a file of [`USER`] attaching to it;
/// creating a device and the namespace ioctls as the user.
pub(super) fn permission(b: &mut Recorder) -> Result<(), KernelError> {
    let mq = IFF_TAP | IFF_MULTI_QUEUE | IFF_NO_PI;
    let u = b.open()?;
    b.io_as(USER, u, TUNSETIFF, ifreq("uperm", IFF_TAP), "user creates")?;
    b.io_as(USER, u, SIOCGSKNS, IoctlArg::Out, "user SIOCGSKNS")?;
    b.close(u);
    let (me, other) = (u64::from(USER.0), u64::from(USER.0 + 1));
    let cases = [
        (None, None, "neither set"),
        (Some(me), None, "owner matches"),
        (Some(other), None, "owner differs"),
        (None, Some(me), "group matches"),
        (None, Some(other), "group differs"),
        (Some(me), Some(me), "both match"),
        (Some(me), Some(other), "owner matches, group differs"),
        (Some(other), Some(me), "group matches, owner differs"),
    ];
    for (i, (owner, group, what)) in cases.into_iter().enumerate() {
        let name = format!("perm{i}");
        let f = b.dev(&name, mq)?;
        if let Some(o) = owner {
            b.io(f, TUNSETOWNER, IoctlArg::Value(o), "permission: owner");
        }
        if let Some(g) = group {
            b.io(f, TUNSETGROUP, IoctlArg::Value(g), "permission: group");
        }
        let u = b.open()?;
        let what = format!("user attaches, {what}");
        let attached = b.ask_as(USER, u, TUNSETIFF, ifreq(&name, mq), &what)?;
        if attached.is_ok() {
            b.io_as(USER, u, TUNGETIFF, IoctlArg::Out, "user TUNGETIFF")?;
            b.io_as(
                USER,
                u,
                TUNGETDEVNETNS,
                IoctlArg::Out,
                "user TUNGETDEVNETNS",
            )?;
            b.io_as(USER, u, TUNSETPERSIST, IoctlArg::Value(1), "user persist")?;
            b.io_as(USER, u, TUNSETPERSIST, IoctlArg::Value(0), "user unpersist")?;
        }
        b.close(u);
        b.close(f);
    }
    Ok(())
}
