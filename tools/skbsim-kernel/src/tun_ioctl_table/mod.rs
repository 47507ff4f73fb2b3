//! The tun ioctl conformance table (docs/tun-ioctl.md#conformance): one fixed sequence of
//! ioctls ([`record`]) run on real `/dev/net/tun` files in a private namespace, recorded as
//! [`Step`]s with the kernel's answers, and the same steps replayed on the model
//! (`sim::tun::ioctl::TunNet::ioctl`) under any profile ([`replay`]).
//!
//! Recording and replaying are apart so that the lab can record inside a guest kernel
//! (`skbsim lab ioctl --kernel 6.1`) and the host can compare under the guest's profile,
//! and so that a recorded log can be replayed again without a kernel. The sequence only
//! branches on the kernel's answers, which the log holds, so a replay issues the same
//! ioctls the recording did.

mod rows;
mod user;

use std::fs::File;

use sim::errno::Errno as SimErrno;
use sim::profile::KernelProfile;
use sim::tun::ioctl::{cmd, Caller, FileId, IoctlAnswer, IoctlArg, TunNet};

use crate::tun_ioctl::TunProbe;
use crate::{KernelError, Netns};

/// The answer of one ioctl: what it gave back, or the errno number.
pub type Answer = Result<IoctlAnswer, i32>;

/// One step of the sequence, as the recording saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// tun_chr_open: a new file, the next index (0, 1, ...).
    Open,
    /// Close the file of that index (tun_chr_close).
    Close(usize),
    /// `ip link set NAME up` on a tun device the sequence made.
    SetUp(String),
    /// `ioctl(file, cmd, arg)` and the kernel's answer; `what` says what the row checks.
    /// `user`: issued as this (euid, egid) with no supplementary groups and no
    /// capabilities (`Caller::user`); None: as root.
    Io {
        file: usize,
        cmd: u32,
        arg: IoctlArg,
        what: String,
        kernel: Answer,
        user: Option<(u32, u32)>,
    },
}

/// One ioctl row after a replay: the kernel's answer (recorded) and the model's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub what: String,
    /// Issued as this (euid, egid), unprivileged; None: root.
    pub user: Option<(u32, u32)>,
    pub cmd: u32,
    pub arg: IoctlArg,
    pub kernel: Answer,
    pub model: Answer,
}

impl Row {
    pub fn agrees(&self) -> bool {
        self.kernel == self.model
    }

    /// One line: what, the command, the argument and both answers.
    pub fn describe(&self) -> String {
        let by = self
            .user
            .map_or(String::new(), |(u, g)| format!(" as {u}:{g}"));
        format!(
            "{}: {}{by} arg {:?}: kernel {} model {}",
            self.what,
            cmd_name(self.cmd),
            self.arg,
            show(&self.kernel),
            show(&self.model)
        )
    }
}

/// An answer as the table prints it: the value, or the errno's name.
pub fn show(r: &Answer) -> String {
    match r {
        Ok(a) => format!("{a:?}"),
        Err(e) => SimErrno::from_code(*e).map_or(format!("errno {e}"), |e| e.name().to_string()),
    }
}

/// The name of a tun ioctl number (include/uapi/linux/if_tun.h: the sim's table,
/// sim::tun::ioctl::cmd::name), or its hex value.
pub fn cmd_name(c: u32) -> String {
    cmd::name(c).map_or_else(|| format!("{c:#010x}"), str::to_string)
}

/// Run the sequence on the running kernel in `ns`, appending each step to `steps` as it
/// happens (so that a failure part-way leaves the steps before it). The caller runs it as
/// root: it creates devices.
pub fn record(ns: &mut Netns, steps: &mut Vec<Step>) -> Result<(), KernelError> {
    let mut r = Recorder {
        ns,
        real: TunProbe::new(),
        files: Vec::new(),
        steps,
    };
    rows::all(&mut r)
}

/// Replay `steps` on a fresh [`TunNet`] under `profile` as root: one [`Row`] per ioctl.
/// A log that is not a recording (a file index never opened, a device never made) is the
/// error, naming the step.
pub fn replay(profile: &KernelProfile, steps: &[Step]) -> Result<Vec<Row>, String> {
    let mut model = TunNet::new();
    let mut files: Vec<FileId> = Vec::new();
    let mut rows = Vec::new();
    let file = |files: &[FileId], i: usize, n: usize| {
        files
            .get(i)
            .copied()
            .ok_or_else(|| format!("step {n}: file {i} was never opened"))
    };
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::Open => files.push(model.open()),
            Step::Close(i) => model.close(file(&files, *i, n)?),
            Step::SetUp(name) => {
                let d = model
                    .by_name(name.as_bytes())
                    .ok_or_else(|| format!("step {n}: no tun device {name:?} to set up"))?;
                model.set_up(d, true);
            }
            Step::Io {
                file: i,
                cmd,
                arg,
                what,
                kernel,
                user,
            } => {
                let f = file(&files, *i, n)?;
                let caller = user.map_or_else(Caller::root, |(u, g)| Caller::user(u, g));
                let answer = model
                    .ioctl(profile, &caller, f, *cmd, arg)
                    .map_err(SimErrno::code);
                rows.push(Row {
                    what: what.clone(),
                    user: *user,
                    cmd: *cmd,
                    arg: arg.clone(),
                    kernel: kernel.clone(),
                    model: answer,
                });
            }
        }
    }
    Ok(rows)
}

/// The real side of the sequence: real files, and the steps written down.
struct Recorder<'a> {
    ns: &'a mut Netns,
    real: TunProbe,
    files: Vec<Option<File>>,
    steps: &'a mut Vec<Step>,
}

impl Recorder<'_> {
    fn open(&mut self) -> Result<usize, KernelError> {
        let f = self.real.open()?;
        self.files.push(Some(f));
        self.steps.push(Step::Open);
        Ok(self.files.len() - 1)
    }

    fn close(&mut self, i: usize) {
        self.files[i] = None;
        self.steps.push(Step::Close(i));
    }

    /// One row: the ioctl on the real file.
    fn io(&mut self, i: usize, cmd: u32, arg: IoctlArg, what: &str) {
        let _ = self.ask(i, cmd, arg, what);
    }

    /// One row, and the kernel's answer (for the steps that depend on it).
    fn ask(&mut self, i: usize, cmd: u32, arg: IoctlArg, what: &str) -> Answer {
        let file = self.files[i]
            .as_ref()
            .expect("the sequence uses open files");
        let kernel = self.real.ioctl(file, cmd, &arg);
        self.steps.push(Step::Io {
            file: i,
            cmd,
            arg,
            what: what.to_string(),
            kernel: kernel.clone(),
            user: None,
        });
        kernel
    }

    /// One row as the unprivileged (euid, egid) `user`.
    fn io_as(
        &mut self,
        user: (u32, u32),
        i: usize,
        cmd: u32,
        arg: IoctlArg,
        what: &str,
    ) -> Result<(), KernelError> {
        self.ask_as(user, i, cmd, arg, what).map(|_| ())
    }

    /// One row as the unprivileged (euid, egid) `user` ([`user::as_user`]); the kernel's
    /// answer.
    fn ask_as(
        &mut self,
        (euid, egid): (u32, u32),
        i: usize,
        cmd: u32,
        arg: IoctlArg,
        what: &str,
    ) -> Result<Answer, KernelError> {
        let file = self.files[i]
            .as_ref()
            .expect("the sequence uses open files");
        let real = &mut self.real;
        let kernel = user::as_user(euid, egid, || real.ioctl(file, cmd, &arg))?;
        self.steps.push(Step::Io {
            file: i,
            cmd,
            arg,
            what: what.to_string(),
            kernel: kernel.clone(),
            user: Some((euid, egid)),
        });
        Ok(kernel)
    }

    /// `ip link set NAME up`.
    fn set_up(&mut self, name: &str) -> Result<(), KernelError> {
        let ifindex = self.ns.rtnl().link_index(name)?;
        self.ns.rtnl().set_up(ifindex, true)?;
        self.steps.push(Step::SetUp(name.to_string()));
        Ok(())
    }

    /// A new file with a device `name` made with `flags`.
    fn dev(&mut self, name: &str, flags: u16) -> Result<usize, KernelError> {
        let f = self.open()?;
        self.ask(
            f,
            cmd::TUNSETIFF,
            rows::ifreq(name, flags),
            &format!("create {name}"),
        )
        .map_err(|e| KernelError::sys(format!("TUNSETIFF {name}"), crate::Errno::from_raw(e)))?;
        Ok(f)
    }
}
