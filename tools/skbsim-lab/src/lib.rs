//! The kernel lab: a guest Linux kernel under QEMU for what this machine's kernel lacks
//! (GRE, 802.1Q devices, vhost_net; Debian 12's cloud kernel has them as modules), and
//! the `skbsim lab` commands that run the real arms in it and compare their traces with
//! the simulator's.
//!
//! - [`fetch`]: QEMU and busybox from the system's package manager (`apt-get download` +
//!   `dpkg-deb -x` into the cache; nothing is installed).
//! - [`kernel`]: the guest kernel: a Debian cloud kernel by version or package, each in
//!   its own cache directory, or a local build (`--kernel-dir`).
//! - [`patch`]: `--patch`: the modules a kernel patch touches, rebuilt from Debian's
//!   linux-source against its linux-headers.
//! - [`image`]: the initramfs (a cached base archive and a per-run payload).
//! - [`modules`]: the guest kernel's modules and their dependencies from `.modinfo`.
//! - [`cpio`]: the newc writer.
//! - [`qemu`]: the boot, the watchdog, KVM-then-TCG.
//! - [`vlan`]: the 802.1Q device check the guest runs (a VLAN device over a tap).
//! - [`commands`]: `skbsim lab ...`: the arguments, the guest side (`guest-conform`,
//!   `guest-vlan`) and the host side (conform, diff, vlan, gre, run, fetch, kernels). What
//!   they need from the rest of skbsim (scenarios, the simulator, the real arms, the
//!   comparison, stdout) comes through [`commands::Skbsim`], which the CLI implements:
//!   the CLI depends on this crate, so this crate cannot call it.
//!
//! [`Lab::open`] fetches (first run) and builds the base archive; [`Lab::run`] boots the
//! guest for one [`Payload`] and returns the command's stdout and timings.

pub mod commands;
pub mod cpio;
pub mod fetch;
pub mod image;
pub mod kernel;
pub mod modules;
pub mod patch;
pub mod qemu;
pub mod vlan;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use fetch::Tools;
pub use image::{Payload, GUEST_IPROUTE2, GUEST_SKBSIM};
pub use kernel::{GuestKernel, KernelChoice, KernelSource};
pub use modules::ModuleIndex;
pub use qemu::{Accel, BootResult};

/// A lab failure: the step that failed (`download`, `unpack`, `modules`, `initramfs`,
/// `qemu libraries`, `boot`, `boot timeout`, `kvm`, `kernel panic`, `run timeout`,
/// `guest`) and what happened, on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabError {
    pub step: &'static str,
    pub message: String,
}

impl LabError {
    pub fn new(step: &'static str, message: impl Into<String>) -> LabError {
        LabError {
            step,
            message: message.into().replace('\n', " "),
        }
    }
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lab {}: {}", self.step, self.message)
    }
}

impl std::error::Error for LabError {}

/// The cache: `$SKBSIM_LAB_CACHE`, else `$XDG_CACHE_HOME/skbsim-lab`, else
/// `$HOME/.cache/skbsim-lab`, else `target/skbsim-lab`.
pub fn default_cache_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("SKBSIM_LAB_CACHE") {
        return d;
    }
    if let Some(d) = env("XDG_CACHE_HOME") {
        return d.join("skbsim-lab");
    }
    if let Some(d) = env("HOME") {
        return d.join(".cache").join("skbsim-lab");
    }
    PathBuf::from("target/skbsim-lab")
}

/// How a run boots.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub accel: Accel,
    pub memory_mb: u32,
    pub boot_timeout: Duration,
    pub run_timeout: Duration,
    /// A name for the run directory (`<cache>/runs/<name>`).
    pub name: String,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            accel: Accel::Auto,
            memory_mb: 1024,
            boot_timeout: Duration::from_secs(120),
            run_timeout: Duration::from_secs(1800),
            name: "run".into(),
        }
    }
}

/// A prepared lab: QEMU and the guest kernel fetched, base archive built.
#[derive(Debug)]
pub struct Lab {
    pub cache: PathBuf,
    pub tools: Tools,
    pub kernel: GuestKernel,
    pub base: PathBuf,
    index: ModuleIndex,
    /// Time spent building the base archive (zero when cached).
    pub base_time: Duration,
}

/// Timings and output of one [`Lab::run`].
#[derive(Debug, Clone)]
pub struct LabRun {
    pub boot: BootResult,
    /// Building the run's initrd.
    pub initrd_time: Duration,
    pub initrd_bytes: u64,
    pub run_dir: PathBuf,
}

impl Lab {
    /// Fetch (when the cache is cold) QEMU and the kernel `choice` names, and build the
    /// base archive.
    pub fn open(
        cache: &Path,
        choice: &KernelChoice,
        progress: &dyn Fn(&str),
    ) -> Result<Lab, LabError> {
        let tools = fetch::prepare(cache, progress)?;
        let kernel = kernel::prepare(cache, choice, progress)?;
        let start = Instant::now();
        progress("base initramfs");
        let (base, index) = image::base_archive(&tools, &kernel)?;
        Ok(Lab {
            cache: cache.to_path_buf(),
            tools,
            kernel,
            base,
            index,
            base_time: start.elapsed(),
        })
    }

    /// The guest kernel's modules.
    pub fn modules(&self) -> &ModuleIndex {
        &self.index
    }

    /// Load the rebuilt `name` (a `.ko` file) in the guest instead of the stock module.
    pub fn replace_module(&mut self, name: &str, file: PathBuf) -> Result<(), LabError> {
        self.index.replace(name, file)
    }

    /// Build the run's initrd and boot it.
    pub fn run(
        &self,
        payload: &Payload,
        opts: &RunOptions,
        progress: &dyn Fn(&str),
    ) -> Result<LabRun, LabError> {
        // Held until the guest is done: a second lab process (another `skbsim lab`, a
        // test) takes the next free directory instead of overwriting this one's initrd.
        let (run_dir, _claim) = claim_run_dir(&self.cache.join("runs"), &opts.name)?;
        let start = Instant::now();
        progress("initramfs payload");
        let initrd = run_dir.join("initrd.cpio");
        image::build_initrd(&self.base, &self.index, &self.kernel.kver, payload, &initrd)?;
        let initrd_time = start.elapsed();
        let initrd_bytes = std::fs::metadata(&initrd).map(|m| m.len()).unwrap_or(0);
        let spec = qemu::BootSpec {
            initrd,
            run_dir: run_dir.clone(),
            accel: opts.accel,
            memory_mb: opts.memory_mb,
            boot_timeout: opts.boot_timeout,
            run_timeout: opts.run_timeout,
        };
        let boot = qemu::boot(
            &self.tools,
            &self.kernel.vmlinuz,
            &self.cache,
            &spec,
            progress,
        )?;
        // Kept only when the boot failed (to retry by hand); it is rebuilt every run.
        let _ = std::fs::remove_file(&spec.initrd);
        Ok(LabRun {
            boot,
            initrd_time,
            initrd_bytes,
            run_dir,
        })
    }
}

/// How many lab runs of one name may share a cache at once.
const MAX_CONCURRENT_RUNS: usize = 16;

/// `<runs>/<name>`, or `<name>.1`, `<name>.2`, ... when another process holds it: the
/// directory whose `<dir>.lock` this process could lock (released when the file drops).
fn claim_run_dir(runs: &Path, name: &str) -> Result<(PathBuf, std::fs::File), LabError> {
    let err =
        |p: &Path, e: std::io::Error| LabError::new("initramfs", format!("{}: {e}", p.display()));
    std::fs::create_dir_all(runs).map_err(|e| err(runs, e))?;
    for i in 0..MAX_CONCURRENT_RUNS {
        let dir_name = if i == 0 {
            name.to_string()
        } else {
            format!("{name}.{i}")
        };
        let lock_path = runs.join(format!("{dir_name}.lock"));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| err(&lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {
                let dir = runs.join(&dir_name);
                std::fs::create_dir_all(&dir).map_err(|e| err(&dir, e))?;
                return Ok((dir, lock));
            }
            Err(std::fs::TryLockError::WouldBlock) => continue,
            Err(std::fs::TryLockError::Error(e)) => return Err(err(&lock_path, e)),
        }
    }
    Err(LabError::new(
        "initramfs",
        format!(
            "{}: {MAX_CONCURRENT_RUNS} lab runs named {name} are already running on this cache",
            runs.display()
        ),
    ))
}

/// Single-quote `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_of_the_same_name_takes_the_next_directory() {
        let runs = std::env::temp_dir().join(format!("skbsim-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&runs);
        let (a, lock_a) = claim_run_dir(&runs, "conform").unwrap();
        let (b, _lock_b) = claim_run_dir(&runs, "conform").unwrap();
        assert_eq!(a, runs.join("conform"));
        assert_eq!(b, runs.join("conform.1"));
        drop(lock_a);
        let (c, _lock_c) = claim_run_dir(&runs, "conform").unwrap();
        assert_eq!(c, runs.join("conform"));
        let _ = std::fs::remove_dir_all(&runs);
    }
}
