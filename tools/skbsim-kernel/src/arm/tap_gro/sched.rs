//! Making a burst of writes share one NAPI poll: threaded NAPI, CPU pinning, a
//! SCHED_FIFO writer, and the timing checks that tell a run to be redone.

#[allow(unused_imports)]
use super::*;
use rustix::process::Pid;
use rustix::thread::CpuSet;
use rustix::time::ClockId;

/// A CPU set with one CPU.
pub(super) fn one_cpu(cpu: usize) -> CpuSet {
    let mut set = CpuSet::new();
    set.set(cpu);
    set
}

/// `sched_setaffinity(tid, set)`; tid 0 is the calling thread.
pub(super) fn set_affinity(tid: libc::pid_t, set: &CpuSet, who: &str) -> Result<(), KernelError> {
    rustix::thread::sched_setaffinity(Pid::from_raw(tid), set)
        .map_err(crate::error::from_rustix)
        .op(|| format!("sched_setaffinity {who}"))
}

/// The state letter and `voluntary_ctxt_switches` of a task.
pub(super) fn task_status(pid: u32) -> Result<(char, u64), KernelError> {
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

/// A task's voluntary context switches and CPU time at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskMark {
    pid: u32,
    voluntary: u64,
    runtime_ns: Option<u64>,
}

impl TaskMark {
    pub fn take(pid: u32) -> Result<TaskMark, KernelError> {
        Ok(TaskMark {
            pid,
            voluntary: task_status(pid)?.1,
            runtime_ns: task_runtime_ns(pid),
        })
    }

    /// Whether the task ran since the mark was taken: a voluntary switch, or CPU time.
    pub fn ran_since(&self) -> Result<bool, KernelError> {
        let now = TaskMark::take(self.pid)?;
        Ok(now.voluntary != self.voluntary || now.runtime_ns != self.runtime_ns)
    }
}

/// A task's time on a CPU in ns: the first field of /proc/PID/schedstat (None without
/// CONFIG_SCHED_INFO).
pub(super) fn task_runtime_ns(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Kernel threads whose comm starts with `prefix`.
pub(super) fn kthreads_named(prefix: &str) -> Vec<u32> {
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
    pub(super) saved_affinity: CpuSet,
    pub(super) saved_policy: libc::c_int,
    pub(super) saved_param: libc::sched_param,
}

impl RealtimeWriter {
    /// Switch the calling thread; `pin` also restricts it to that CPU.
    pub fn enter(pin: Option<usize>) -> Result<RealtimeWriter, KernelError> {
        let saved_affinity = rustix::thread::sched_getaffinity(None)
            .map_err(crate::error::from_rustix)
            .op(|| "sched_getaffinity".to_string())?;
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
        // SAFETY: restoring the calling thread's own policy from a live sched_param saved
        // by `enter` on this thread. (rustix has no sched_setscheduler.)
        unsafe {
            libc::sched_setscheduler(0, self.saved_policy, &self.saved_param);
        }
        let _ = rustix::thread::sched_setaffinity(None, &self.saved_affinity);
    }
}

/// The tap's NAPI in threaded mode, its kthread on the writer's CPU, the writer
/// `SCHED_FIFO` there (see the module docs). Dropping it puts the writer back.
#[derive(Debug)]
pub struct NapiThread {
    pub(super) pid: u32,
    pub(super) cpu: usize,
    pub(super) mark: u64,
    /// Where the kthread was when the burst began, to tell whether it ran during it.
    pub(super) burst_mark: Option<TaskMark>,
    /// Polls waited for.
    pub polls: u64,
    pub(super) _writer: RealtimeWriter,
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
        let cpu = current_cpu()?;
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
            burst_mark: None,
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
        let mark = TaskMark::take(self.pid)?;
        self.mark = mark.voluntary;
        self.burst_mark = Some(mark);
        Ok(())
    }

    /// Whether the kthread ran since [`NapiThread::mark`], i.e. polled part of a burst
    /// before the burst's last write: the writer is SCHED_FIFO on the kthread's CPU, but
    /// a writer that sleeps inside a write, RT throttling (`sched_rt_runtime_us`) or,
    /// from v6.12, the fair deadline server (kernel/sched/deadline.c: `dl_server`, 50 ms
    /// of every second for starved SCHED_OTHER tasks) still let it run; a slow TCG guest
    /// on a loaded host once split a 70-write burst 33 + 37 that way. Asked before the
    /// burst's poll; decided from the kthread's CPU time and context switches alone.
    pub fn ran_since_mark(&self) -> Result<bool, KernelError> {
        match &self.burst_mark {
            Some(m) => m.ran_since(),
            None => Ok(false),
        }
    }

    /// Sleep until the kthread has polled what the burst queued and is asleep again.
    pub fn let_poll(&mut self) -> Result<(), KernelError> {
        self.let_poll_within(POLL_WAIT).map(|_| ())
    }

    /// [`NapiThread::let_poll`] for a burst that may have queued nothing (an XDP program
    /// consumed every frame before tun_get_user reached the NAPI queue, so nothing called
    /// napi_schedule): `Ok(false)` when the kthread stayed asleep for `IDLE_WAIT`.
    ///
    /// Asleep with no new switch after `IDLE_WAIT` means nothing woke it (napi_schedule
    /// makes it runnable at once). Any other state means it was woken and a busy machine
    /// has not let it finish yet: wait for that poll as for a queued burst, up to
    /// POLL_WAIT in all (a conform_gro run under two spinners and a second test process
    /// once gave up here after 200 ms).
    pub fn let_poll_if_queued(&mut self) -> Result<bool, KernelError> {
        if self.let_poll_within(IDLE_WAIT).is_ok() {
            return Ok(true);
        }
        let (state, vol) = task_status(self.pid)?;
        if vol == self.mark && matches!(state, 'S' | 'I') {
            return Ok(false);
        }
        self.let_poll_within(POLL_WAIT.saturating_sub(IDLE_WAIT))?;
        Ok(true)
    }

    fn let_poll_within(&mut self, wait: Duration) -> Result<(), KernelError> {
        let start = Instant::now();
        loop {
            std::thread::sleep(Duration::from_micros(20));
            let (state, vol) = task_status(self.pid)?;
            if vol > self.mark && matches!(state, 'S' | 'I') {
                self.mark = vol;
                self.polls += 1;
                return Ok(());
            }
            if start.elapsed() > wait {
                return Err(KernelError::new(
                    format!("wait for NAPI kthread {}", self.pid),
                    Cause::Protocol(format!(
                        "no poll within {wait:?} (state {state}, {vol} voluntary switches)"
                    )),
                ));
            }
        }
    }
}

/// The CPU the calling thread runs on.
pub(super) fn current_cpu() -> Result<usize, KernelError> {
    Ok(rustix::thread::sched_getcpu())
}

/// The writer's CPU's ksoftirqd, for one write per poll (`burst = 1`).
///
/// The write's NAPI poll is the NET_RX softirq that `tun_get_user`'s `local_bh_enable`
/// runs on the way out, unless ksoftirqd is runnable on that CPU: until v6.5
/// (kernel/softirq.c: `do_softirq` and `invoke_softirq` check `ksoftirqd_running`, from
/// 4cd13c21b207 "softirq: Let ksoftirqd do its job", v4.9; reverted by d15121be7485 in
/// v6.5) the pending softirq is then left to ksoftirqd. A TCG guest wakes ksoftirqd
/// often (a softirq run past MAX_SOFTIRQ_TIME, 2 ms), and a SCHED_FIFO writer keeps it
/// from running, so on 6.1 all ten writes of `tcp-napi-no-timeout` were once polled
/// together and merged. After each write the writer checks ksoftirqd; when it is
/// runnable the writer sleeps until it has run, so that poll holds this write alone, as
/// the model's one poll per write says.
#[derive(Debug)]
pub(super) struct SoftirqWait {
    /// `/proc/<ksoftirqd>/stat`, kept open: one pread per write.
    stat: Option<(u32, std::fs::File)>,
    /// Writes after which the writer slept for ksoftirqd.
    pub(super) waits: u64,
}

impl SoftirqWait {
    /// `ksoftirqd/<cpu>` (none found: nothing to wait for).
    pub(super) fn on(cpu: usize) -> SoftirqWait {
        let name = format!("ksoftirqd/{cpu}");
        let stat = kthreads_named(&name)
            .into_iter()
            .find(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim_end() == name)
            })
            .and_then(|pid| {
                let f = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
                Some((pid, f))
            });
        SoftirqWait { stat, waits: 0 }
    }

    /// The task state letter: the field after the `(comm)` of /proc/PID/stat.
    fn state(pid: u32, f: &std::fs::File) -> Result<char, KernelError> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        let n = f.read_at(&mut buf, 0).map_err(|e| {
            KernelError::new(
                format!("read /proc/{pid}/stat"),
                Cause::Protocol(e.to_string()),
            )
        })?;
        let text = &buf[..n];
        let close = text.iter().rposition(|&b| b == b')');
        Ok(close
            .and_then(|i| text.get(i + 2))
            .map_or('?', |&b| char::from(b)))
    }

    /// After a write: sleep while ksoftirqd is runnable, up to POLL_WAIT.
    pub(super) fn let_run(&mut self) -> Result<(), KernelError> {
        let Some((pid, f)) = &self.stat else {
            return Ok(());
        };
        if Self::state(*pid, f)? != 'R' {
            return Ok(());
        }
        self.waits += 1;
        let start = Instant::now();
        loop {
            std::thread::sleep(Duration::from_micros(20));
            if Self::state(*pid, f)? != 'R' {
                return Ok(());
            }
            if start.elapsed() > POLL_WAIT {
                return Err(KernelError::new(
                    format!("wait for ksoftirqd {pid}"),
                    Cause::Protocol(format!("still runnable after {POLL_WAIT:?}")),
                ));
            }
        }
    }
}

/// When one write happened: its input time, the wall clock around it, and the jiffy
/// (coarse clock over the tick length) before and after.
#[derive(Debug, Clone, Copy)]
pub(super) struct WriteTime {
    pub(super) ts: u64,
    pub(super) before: Instant,
    pub(super) after: Instant,
    pub(super) jiffy_before: u64,
    pub(super) jiffy_after: u64,
}

/// Whether the writes kept the input's timing where GRO can see it, with a
/// `gro_flush_timeout`: every write inside one jiffy, the same jiffy steps between writes
/// as the input's timestamps (jiffies = ts * HZ / 1e9, as the model counts them), and no
/// gap the hrtimer could fire in where the input has none. `None` when it did.
pub(super) fn timing_problem(times: &[WriteTime], hz: u32, timeout_ns: u64) -> Option<String> {
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

/// The coarse clock (which the tick advances with jiffies) in units of `jiffy_ns`.
pub fn jiffy_now(jiffy_ns: u64) -> u64 {
    (coarse_now().as_nanos() / u128::from(jiffy_ns.max(1))) as u64
}

/// How long a burst that may have queued nothing (an `[xdp]` program) waits for a poll
/// before the arm takes it that nothing called napi_schedule.
const IDLE_WAIT: Duration = Duration::from_millis(200);

/// Let the NAPI kthread poll a burst. With an `[xdp]` program the burst may have queued
/// nothing (each frame dropped, sent back or redirected before tun_get_user's hand-off),
/// and then no poll comes: counted in `idle`.
pub(super) fn poll_burst(
    t: &mut NapiThread,
    scenario: &Scenario,
    idle: &mut usize,
) -> Result<(), KernelError> {
    if scenario.xdp.is_none() {
        return t.let_poll();
    }
    if !t.let_poll_if_queued()? {
        *idle += 1;
    }
    Ok(())
}

/// This kernel's HZ: `CLOCK_MONOTONIC_COARSE` advances once per tick.
pub fn host_hz() -> Result<u32, KernelError> {
    let res = rustix::time::clock_getres(ClockId::MonotonicCoarse);
    let ns = res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64;
    if ns == 0 {
        return Err(KernelError::new(
            "clock_getres(CLOCK_MONOTONIC_COARSE)",
            Cause::Protocol("resolution 0".into()),
        ));
    }
    Ok(((1_000_000_000 + ns / 2) / ns) as u32)
}

pub(super) fn coarse_now() -> Duration {
    let t = rustix::time::clock_gettime(ClockId::MonotonicCoarse);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Return right after the next tick (jiffies advanced), then `phase` into the jiffy.
pub fn align_to_tick(phase: Duration, jiffy: Duration) {
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

#[cfg(test)]
mod task_mark_tests {
    use super::TaskMark;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A thread blocked on a channel has not run since its mark; once it has been woken
    /// to do some work and block again, it has.
    #[test]
    fn a_mark_tells_a_sleeping_task_from_one_that_ran() {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<u32>();
        let (done_tx, done_rx) = mpsc::channel();
        let worker = std::thread::spawn(move || {
            tid_tx
                .send(rustix::thread::gettid().as_raw_nonzero().get() as u32)
                .unwrap();
            while let Ok(n) = go_rx.recv() {
                let mut x = 0u64;
                for i in 0..u64::from(n) {
                    x = std::hint::black_box(x.wrapping_add(i));
                }
                done_tx.send(x).unwrap();
            }
        });
        let tid = tid_rx.recv().unwrap();
        // Let it reach recv() and sleep.
        std::thread::sleep(Duration::from_millis(50));
        let mark = TaskMark::take(tid).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!mark.ran_since().unwrap(), "a blocked thread ran: {mark:?}");
        go_tx.send(1_000_000).unwrap();
        done_rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            mark.ran_since().unwrap(),
            "a woken thread did not run: {mark:?}"
        );
        drop(go_tx);
        worker.join().unwrap();
    }
}
