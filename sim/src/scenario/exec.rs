//! `[exec]`: what an `exec` scenario runs (docs/exec.md#scenarios). The scenario names a
//! program, unmodified, that opens /dev/net/tun; `skbsim run` runs it under `skbsim exec`
//! against the profile's device model and compares its record (every open, ioctl, read,
//! write, link change and close on the device) and capture with the goldens; `skbsim
//! conform` runs it again with `--backend tap` and compares what both arms see.
//!
//! ```toml
//! description = "the TUN* ioctls a tun/tap user makes"
//! pipeline = "exec"
//! profile = "linux-6.18"
//!
//! [exec]
//! build = "../../tools/skbsim-exec/tests/c/tun_probe.c"   # a C file, built with `cc`
//! # program = "/usr/bin/socat"                             # or a program as it is
//! args = []
//! far_side = "stack"             # stack (default) | sink | loopback
//! far_addr = ["10.0.0.2/24"]     # the stack far side's addresses (ADDRESS/PREFIX)
//! ```
//!
//! Exactly one of `build` and `program`. `build` is resolved against the scenario's
//! directory; `program` too when it holds a `/`, else it is looked up in PATH when run.
//! `input` is optional: its Ethernet frames (for an IFF_TUN device, the IP packet after
//! the Ethernet header) are what the far side transmits on the program's device, all in
//! order, the first time a device of the program comes up (docs/exec.md#scenarios).

use std::path::PathBuf;

use serde::Deserialize;

use super::file::Check;

/// What is behind the simulated device (`skbsim exec --far-side`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecFarSide {
    /// The device model with a deterministic responder stack.
    #[default]
    Stack,
    /// The device model with a stack that takes every frame and answers none.
    Sink,
    /// Every frame written read back unchanged (not the device model).
    Loopback,
}

impl ExecFarSide {
    pub fn name(self) -> &'static str {
        match self {
            ExecFarSide::Stack => "stack",
            ExecFarSide::Sink => "sink",
            ExecFarSide::Loopback => "loopback",
        }
    }
}

/// `[exec]`, checked.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecPlan {
    /// A C source file compiled with `cc` before the run (resolved against the
    /// scenario's directory by `Scenario::parse`).
    pub build: Option<PathBuf>,
    /// A program run as it is: a path (resolved against the scenario's directory when
    /// it has a `/`) or a name looked up in PATH.
    pub program: Option<PathBuf>,
    /// The program's arguments.
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub far_side: ExecFarSide,
    /// The stack far side's addresses, ADDRESS/PREFIX (checked when run, by the parser
    /// `skbsim exec --far-addr` uses).
    #[serde(default = "default_far_addr")]
    pub far_addr: Vec<String>,
}

/// `skbsim exec`'s default far-side addresses.
pub fn default_far_addr() -> Vec<String> {
    vec!["10.0.0.2/24".to_string(), "fd00::2/64".to_string()]
}

impl ExecPlan {
    /// The program as the trace's header shows it: the source or program as written,
    /// then the arguments (no resolved path, so the trace is the same from every
    /// checkout).
    pub fn shown(&self) -> String {
        let prog = self.build.as_ref().or(self.program.as_ref());
        let name = prog
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        std::iter::once(name)
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Check for ExecPlan {
    fn check(&self) -> Result<(), String> {
        match (&self.build, &self.program) {
            (Some(_), Some(_)) => {
                Err("build: give either build (a C file) or program, not both".into())
            }
            (None, None) => {
                Err("program: an exec scenario needs build (a C file) or program".into())
            }
            (Some(b), None) if b.extension().is_none_or(|e| e != "c") => Err(format!(
                "build: {} is not a C file (.c); name a program with `program` instead",
                b.display()
            )),
            _ if self.far_addr.is_empty() && self.far_side == ExecFarSide::Stack => {
                Err("far_addr: the stack far side needs at least one address".into())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
