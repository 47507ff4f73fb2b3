//! Timing a child process as a whole and reading its exact peak memory, for benches that
//! measure the command a user runs (`skbsim replay`, `tcpreplay`) from outside.
//!
//! # Why wait4, and why not /proc/PID/status
//! The peak resident set of a process is its mm's `hiwater_rss`, shown as `VmHWM` in
//! `/proc/PID/status` while it runs. Once it has exited it is a zombie without an mm, and
//! `/proc/PID/status` no longer has any `Vm*` line, so even a `waitid(WNOWAIT)` before
//! reaping cannot read it there. At exit, `do_exit` (kernel/exit.c) folds the hiwater
//! mark into `signal->maxrss` (`setmax_mm_hiwater_rss`), and `wait_task_zombie` hands
//! exactly that child's `getrusage(RUSAGE_BOTH)` to the reaper: `wait4`'s `ru_maxrss` is
//! the child's own `VmHWM` (KiB), or its own children's if larger (the replay has none).
//! `getrusage(RUSAGE_CHILDREN)` instead is a max over every child ever reaped, useless
//! for one run among several.
//!
//! rustix has no `wait4` with an rusage (its `waitpid` drops it), so that one call is
//! made through libc here; `waitid` and `kill` go through rustix.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, waitid, Pid, Signal, WaitId, WaitIdOptions};

/// One finished child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// How it ended.
    pub status: ExitStatus,
    /// From just before `spawn` to its exit (observed by `waitid`, before reaping).
    pub wall: Duration,
    /// Its peak resident set (`VmHWM`, from `wait4`'s `ru_maxrss`), in KiB.
    pub peak_rss_kib: u64,
}

/// The child [`run_measured`] is waiting for, 0 when none: [`interrupt_running`] sends it
/// SIGTERM. It is cleared after the child has exited but before it is reaped, so the pid
/// cannot have been reused by another process when a signal handler reads it.
static RUNNING: AtomicI32 = AtomicI32::new(0);

/// Spawn `cmd`, wait for it, and return its status, wall time and peak RSS. Its
/// stdin/stdout/stderr are whatever `cmd` says.
pub fn run_measured(cmd: &mut Command) -> io::Result<Measured> {
    let t0 = Instant::now();
    let child = cmd.spawn()?;
    finish(child, t0)
}

fn finish(child: Child, t0: Instant) -> io::Result<Measured> {
    let raw = i32::try_from(child.id()).map_err(|_| io::Error::other("pid out of range"))?;
    let pid = Pid::from_raw(raw).ok_or_else(|| io::Error::other("pid 0"))?;
    RUNNING.store(raw, Ordering::SeqCst);
    // Exited, but left waitable (a zombie) so its pid stays reserved while RUNNING holds it.
    let waited = loop {
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other,
        }
    };
    let wall = t0.elapsed();
    RUNNING.store(0, Ordering::SeqCst);
    waited.map_err(io::Error::from)?;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes one int and one rusage, both live locals; `raw` is our child,
    // which is a zombie now (waitid above), so this reaps it without blocking.
    let ret = unsafe { libc::wait4(raw, &mut status, 0, &mut usage) };
    if ret != raw {
        return Err(io::Error::last_os_error());
    }
    // Reaped: `child` must not be waited for again. Dropping a std Child only closes
    // its pipes.
    drop(child);
    Ok(Measured {
        status: ExitStatus::from_raw(status),
        wall,
        peak_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    })
}

/// SIGTERM to the child [`run_measured`] is waiting for, if any. Safe to call from a
/// Ctrl-C handler thread: the waiter then returns with the child's (signalled) status.
pub fn interrupt_running() {
    let raw = RUNNING.load(Ordering::SeqCst);
    if let Some(pid) = Pid::from_raw(raw) {
        let _ = kill_process(pid, Signal::TERM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_rss_is_the_childs_own_and_not_the_largest_earlier_child() {
        // 48 MiB touched, then a small child: each reports its own peak, so the second
        // one's is far below the first (RUSAGE_CHILDREN would repeat the first's).
        let big = run_measured(Command::new("sh").args([
            "-c",
            "v=$(head -c 50331648 /dev/zero | tr '\\0' a); echo ${#v} >/dev/null",
        ]))
        .expect("run big");
        assert!(big.status.success(), "{big:?}");
        let small = run_measured(&mut Command::new("true")).expect("run true");
        assert!(small.status.success());
        assert!(
            big.peak_rss_kib > 40 * 1024,
            "the shell held 48 MiB: {big:?}"
        );
        assert!(
            small.peak_rss_kib < 16 * 1024,
            "`true` is small: {small:?} after {big:?}"
        );
    }

    #[test]
    fn exit_status_and_wall_time_are_the_childs() {
        let m = run_measured(Command::new("sh").args(["-c", "sleep 0.2; exit 3"])).expect("run sh");
        assert_eq!(m.status.code(), Some(3));
        assert!(m.wall >= Duration::from_millis(200), "{m:?}");
        assert_eq!(RUNNING.load(Ordering::SeqCst), 0);
    }
}
