//! Booting the guest: `qemu-system-x86_64` from the cache with the guest kernel and an
//! initrd, the console (ttyS0) on a pipe watched line by line, the data channel (ttyS1)
//! in a file. A watchdog kills QEMU (by its pid) on "KVM internal error", a kernel panic,
//! a boot that does not reach /init in time, or a command that outlives its timeout.
//!
//! KVM is tried first only when `/dev/kvm` exists and no earlier run recorded it as
//! unusable (`<cache>/kvm-unusable`); on failure before /init the boot is retried under
//! TCG. (On nested hosts KVM may abort with "failed to set MSR 0x10a" or hang.)

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::fetch::Tools;
use super::image::{CONSOLE_BEGIN, CONSOLE_END, CONSOLE_INIT, DATA_BEGIN, DATA_END_PREFIX};
use super::LabError;

/// Which accelerator to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// KVM when /dev/kvm exists and was not found unusable before, else TCG.
    Auto,
    Kvm,
    Tcg,
}

/// How to boot.
#[derive(Debug, Clone)]
pub struct BootSpec {
    pub initrd: PathBuf,
    /// Where the console log, the data file and QEMU's stderr go.
    pub run_dir: PathBuf,
    pub accel: Accel,
    pub memory_mb: u32,
    /// From QEMU's start to the console's `skbsim-lab: init` line.
    pub boot_timeout: Duration,
    /// For the command (from `skbsim-lab: begin` to `skbsim-lab: end`).
    pub run_timeout: Duration,
}

/// What a boot produced.
#[derive(Debug, Clone)]
pub struct BootResult {
    /// `kvm` or `tcg`.
    pub accel: &'static str,
    /// Why KVM was not used, when it was tried and failed.
    pub kvm_failure: Option<String>,
    /// QEMU start to /init.
    pub boot_time: Duration,
    /// The command's wall clock in the guest (begin to end marker, seen on the console).
    pub run_time: Duration,
    /// QEMU start to QEMU exit.
    pub total_time: Duration,
    /// The command's exit status.
    pub rc: i32,
    /// The command's stdout (between the data markers).
    pub output: String,
    /// The console from the begin to the end marker (the command's stderr and kernel
    /// messages).
    pub stderr: String,
    /// The guest's `uname -r`.
    pub guest_kernel: String,
}

/// How long the guest may take to power off after its command ended.
const POWEROFF_WAIT: Duration = Duration::from_secs(30);

enum Line {
    Text(String),
    Eof,
}

fn spawn(art: &Tools, vmlinuz: &Path, spec: &BootSpec, kvm: bool) -> Result<Child, LabError> {
    let data = spec.run_dir.join("data.txt");
    let _ = fs::remove_file(&data);
    let stderr = fs::File::create(spec.run_dir.join("qemu.stderr"))
        .map_err(|e| LabError::new("boot", format!("{}: {e}", spec.run_dir.display())))?;
    let mut cmd = Command::new(&art.qemu);
    cmd.env("LD_LIBRARY_PATH", &art.lib_path)
        .env("QEMU_MODULE_DIR", &art.qemu_module_dir);
    for fw in &art.firmware {
        cmd.arg("-L").arg(fw);
    }
    if kvm {
        cmd.args(["-accel", "kvm", "-cpu", "host"]);
    } else {
        cmd.args(["-accel", "tcg"]);
    }
    cmd.args(["-m", &spec.memory_mb.to_string()])
        .args([
            "-nographic",
            "-monitor",
            "none",
            "-no-reboot",
            "-nic",
            "none",
        ])
        .args(["-serial", "stdio", "-serial"])
        .arg(format!("file:{}", data.display()))
        .arg("-kernel")
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(&spec.initrd)
        .args([
            "-append",
            "console=ttyS0 panic=-1 loglevel=5 8250.nr_uarts=2 rdinit=/init",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr));
    cmd.spawn()
        .map_err(|e| LabError::new("boot", format!("cannot start {}: {e}", art.qemu.display())))
}

/// Why one attempt failed: before /init (KVM may be retried as TCG) or after.
enum Failure {
    BeforeInit(LabError),
    After(LabError),
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// One boot: QEMU started, its console watched ([`Console`]) until it exits or the
/// watchdog kills it, then the command's result read back ([`Console::outcome`]).
fn attempt(
    art: &Tools,
    vmlinuz: &Path,
    spec: &BootSpec,
    kvm: bool,
    progress: &dyn Fn(&str),
) -> Result<BootResult, Failure> {
    let start = Instant::now();
    let mut child = spawn(art, vmlinuz, spec, kvm).map_err(Failure::BeforeInit)?;
    let Some(stdout) = child.stdout.take() else {
        kill(&mut child);
        return Err(Failure::BeforeInit(LabError::new(
            "boot",
            "QEMU's stdout is not a pipe",
        )));
    };
    let (rx, reader) = read_lines(stdout);
    let console_path = spec.run_dir.join("console.log");
    let accel = if kvm { "kvm" } else { "tcg" };
    let mut c = Console::new(start, accel);
    let fail = |child: &mut Child, c: &Console, e: LabError| {
        kill(child);
        let _ = fs::write(&console_path, &c.log);
        if c.init_at.is_some() {
            Failure::After(e)
        } else {
            Failure::BeforeInit(e)
        }
    };
    loop {
        let deadline = c.deadline(spec);
        let now = Instant::now();
        if now >= deadline && c.end.is_some() {
            // The command ended but the guest did not power off: its result stands.
            kill(&mut child);
            break;
        }
        if now >= deadline {
            return Err(fail(&mut child, &c, c.timeout(spec)));
        }
        let line = match rx.recv_timeout(deadline - now) {
            Ok(Line::Text(l)) => l,
            Ok(Line::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
        };
        if let Err(e) = c.take(line, progress) {
            return Err(fail(&mut child, &c, e));
        }
    }
    // QEMU closed its stdout: it is exiting.
    let status = child.wait();
    let _ = reader.join();
    let total_time = start.elapsed();
    let _ = fs::write(&console_path, &c.log);
    c.outcome(spec, kvm, total_time, status)
}

/// QEMU's stdout (the guest console) line by line on a channel, read by a thread that
/// ends with [`Line::Eof`] when QEMU closes it.
fn read_lines(stdout: ChildStdout) -> (mpsc::Receiver<Line>, thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let reader = thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(Line::Eof);
                    return;
                }
                Ok(_) => {
                    let s = String::from_utf8_lossy(&buf)
                        .trim_end_matches(['\r', '\n'])
                        .to_string();
                    if tx.send(Line::Text(s)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    (rx, reader)
}

/// What the guest's console has shown so far in one boot.
struct Console {
    /// QEMU's start.
    start: Instant,
    /// `kvm` or `tcg`.
    accel: &'static str,
    /// Every line, for `console.log`.
    log: String,
    /// When `/init` announced itself.
    init_at: Option<Instant>,
    /// When the command began.
    begin_at: Option<Instant>,
    /// When the command ended, and its exit status.
    end: Option<(Instant, i32)>,
    /// The guest's `uname -r` (from the init line).
    guest_kernel: String,
    /// The lines between the begin and end markers (the command's stderr, kernel messages).
    stderr: String,
}

impl Console {
    fn new(start: Instant, accel: &'static str) -> Console {
        Console {
            start,
            accel,
            log: String::new(),
            init_at: None,
            begin_at: None,
            end: None,
            guest_kernel: String::new(),
            stderr: String::new(),
        }
    }

    /// When the watchdog acts next: the power-off wait after the command ended, else the
    /// boot timeout (plus a minute for /init to start the command), else the run timeout.
    fn deadline(&self, spec: &BootSpec) -> Instant {
        match (self.init_at, self.begin_at, self.end) {
            (_, _, Some((e, _))) => e + POWEROFF_WAIT,
            (None, _, _) => self.start + spec.boot_timeout,
            (Some(_), None, _) => self.start + spec.boot_timeout + Duration::from_secs(60),
            (Some(_), Some(b), _) => b + spec.run_timeout,
        }
    }

    /// The error for a deadline passed before the command ended.
    fn timeout(&self, spec: &BootSpec) -> LabError {
        let (step, what) = match (self.init_at, self.begin_at) {
            (None, _) => (
                "boot timeout",
                format!(
                    "the guest did not reach /init within {:?} ({})",
                    spec.boot_timeout, self.accel
                ),
            ),
            (Some(_), None) => (
                "boot timeout",
                "the guest's /init did not start the command".to_string(),
            ),
            (Some(_), Some(_)) => (
                "run timeout",
                format!("the command in the guest ran over {:?}", spec.run_timeout),
            ),
        };
        LabError::new(step, what)
    }

    /// Take one console line: logged, the markers noted, progress shown; a KVM internal
    /// error or a kernel panic is the error that ends the boot.
    fn take(&mut self, line: String, progress: &dyn Fn(&str)) -> Result<(), LabError> {
        let accel = self.accel;
        self.log.push_str(&line);
        self.log.push('\n');
        if self.begin_at.is_some() && self.end.is_none() && !line.starts_with(CONSOLE_END) {
            self.stderr.push_str(&line);
            self.stderr.push('\n');
        }
        if line.contains("KVM internal error") {
            return Err(LabError::new("kvm", line.trim().to_string()));
        }
        if line.contains("Kernel panic") {
            return Err(LabError::new("kernel panic", line.trim().to_string()));
        }
        if let Some(rest) = line.strip_prefix(CONSOLE_INIT) {
            self.init_at = Some(Instant::now());
            self.guest_kernel = rest.trim().to_string();
            progress(&format!(
                "guest {} up ({accel}, {:.1} s)",
                self.guest_kernel,
                self.start.elapsed().as_secs_f64()
            ));
        } else if line.starts_with(CONSOLE_BEGIN) {
            self.begin_at = Some(Instant::now());
        } else if let Some(rest) = line.strip_prefix(CONSOLE_END) {
            let rc = rest
                .trim()
                .strip_prefix("rc=")
                .and_then(|r| r.parse().ok())
                .unwrap_or(-1);
            self.end = Some((Instant::now(), rc));
        } else if self.begin_at.is_some() && self.end.is_none() {
            let short: String = line.chars().take(100).collect();
            progress(&short);
        } else if self.init_at.is_none() && !line.trim().is_empty() {
            progress(&format!(
                "booting ({accel}): {}",
                line.chars().take(80).collect::<String>()
            ));
        }
        Ok(())
    }

    /// After QEMU exited (`status`): the command's result, or why there is none (QEMU's
    /// last stderr line when it never reached /init).
    fn outcome(
        self,
        spec: &BootSpec,
        kvm: bool,
        total_time: Duration,
        status: std::io::Result<ExitStatus>,
    ) -> Result<BootResult, Failure> {
        let qemu_err = fs::read_to_string(spec.run_dir.join("qemu.stderr")).unwrap_or_default();
        let qemu_err = qemu_err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.contains("warning:"))
            .unwrap_or("")
            .trim()
            .to_string();
        let Some(init) = self.init_at else {
            let why = if qemu_err.is_empty() {
                format!(
                    "QEMU exited ({}) before the guest reached /init",
                    status.map(|s| s.to_string()).unwrap_or_default()
                )
            } else {
                qemu_err
            };
            return Err(Failure::BeforeInit(LabError::new(
                if kvm { "kvm" } else { "boot" },
                why,
            )));
        };
        let (Some(begin), Some((end_at, rc))) = (self.begin_at, self.end) else {
            let tail: Vec<&str> = self.log.lines().rev().take(3).collect();
            return Err(Failure::After(LabError::new(
                "guest",
                format!(
                    "the guest stopped before its command ended (console: {})",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ),
            )));
        };
        let data = fs::read(spec.run_dir.join("data.txt")).unwrap_or_default();
        let output = between_markers(&String::from_utf8_lossy(&data)).ok_or_else(|| {
            Failure::After(LabError::new(
                "guest",
                format!(
                    "no output between the data markers in {}",
                    spec.run_dir.join("data.txt").display()
                ),
            ))
        })?;
        Ok(BootResult {
            accel: self.accel,
            kvm_failure: None,
            boot_time: init - self.start,
            run_time: end_at - begin,
            total_time,
            rc,
            output,
            stderr: self.stderr,
            guest_kernel: self.guest_kernel,
        })
    }
}

/// The text between the data channel's begin and end markers (carriage returns dropped).
pub fn between_markers(data: &str) -> Option<String> {
    let data = data.replace('\r', "");
    let start = data.find(DATA_BEGIN)? + DATA_BEGIN.len();
    let rest = data[start..].strip_prefix('\n').unwrap_or(&data[start..]);
    let end = rest.find(DATA_END_PREFIX)?;
    Some(rest[..end].to_string())
}

fn kvm_note(cache: &Path) -> PathBuf {
    cache.join("kvm-unusable")
}

/// Boot per `spec`, falling back from KVM to TCG (see the module docs).
pub fn boot(
    art: &Tools,
    vmlinuz: &Path,
    cache: &Path,
    spec: &BootSpec,
    progress: &dyn Fn(&str),
) -> Result<BootResult, LabError> {
    fs::create_dir_all(&spec.run_dir)
        .map_err(|e| LabError::new("boot", format!("{}: {e}", spec.run_dir.display())))?;
    let kvm_present = Path::new("/dev/kvm").exists();
    let try_kvm = match spec.accel {
        Accel::Tcg => false,
        Accel::Kvm => true,
        Accel::Auto => kvm_present && !kvm_note(cache).exists(),
    };
    let mut kvm_failure = None;
    if try_kvm {
        progress("booting under KVM");
        let kvm_spec = BootSpec {
            boot_timeout: spec.boot_timeout.min(Duration::from_secs(20)),
            ..spec.clone()
        };
        match attempt(art, vmlinuz, &kvm_spec, true, progress) {
            Ok(r) => return Ok(r),
            Err(Failure::After(e)) => return Err(e),
            Err(Failure::BeforeInit(e)) => {
                if spec.accel == Accel::Kvm {
                    return Err(e);
                }
                let _ = fs::write(kvm_note(cache), format!("{e}\n"));
                progress(&format!("KVM unusable ({e}); falling back to TCG"));
                kvm_failure = Some(e.to_string());
            }
        }
    }
    progress("booting under TCG");
    match attempt(art, vmlinuz, spec, false, progress) {
        Ok(mut r) => {
            r.kvm_failure = kvm_failure;
            Ok(r)
        }
        Err(Failure::After(e) | Failure::BeforeInit(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_between_markers() {
        let d = "junk\r\n=== skbsim-lab begin ===\r\n{\"a\":1}\r\nline 2\r\n=== skbsim-lab end rc=0 ===\r\n";
        assert_eq!(between_markers(d).as_deref(), Some("{\"a\":1}\nline 2\n"));
        assert_eq!(between_markers("=== skbsim-lab begin ===\n"), None);
    }
}
