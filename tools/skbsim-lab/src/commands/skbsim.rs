//! What the `skbsim lab` commands need from the rest of skbsim: its scenarios, its two
//! arms, its comparison of their outputs and its standard output. The CLI implements
//! [`Skbsim`] with its own loader, runner, conform and stdout (the CLI depends on this
//! crate, so this crate cannot call them by name); errors are the CLI's one-line
//! messages.

use std::fmt;
use std::path::PathBuf;

use sim::scenario::Scenario;
use sim::trace::diff::Divergence;
use sim::trace::record_diff::Flat;

/// One arm's replay of a scenario as the lab carries it: the CLI's scenario output
/// without its JSON events (nothing here reads the JSON), its records reduced to what a
/// real arm observes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArmOutput {
    /// The canonical text trace (shown and saved; compared by [`ArmOutput::observed`]).
    pub trace: String,
    /// The trace's records as a real arm observes them, each field with its mark
    /// (`sim::trace::record_diff::observed`): what the comparisons read. A guest sends
    /// its real arm's so, the marks with them.
    pub observed: Vec<Flat>,
    /// A pcap of the frames userspace read.
    pub pcap: Vec<u8>,
    /// Input frames replayed.
    pub frames: u64,
    /// What the real arm noticed that the trace cannot show.
    pub notes: Vec<String>,
}

/// The rest of skbsim, as the lab commands use it.
pub trait Skbsim {
    /// Write `text` to standard output (a closed or full stdout is the error).
    fn print(&self, text: fmt::Arguments<'_>) -> Result<(), String>;
    /// The scenarios under `paths` (files or directories), only shard `K/N` when given.
    fn load_scenarios(
        &self,
        paths: &[PathBuf],
        shard: Option<&str>,
    ) -> Result<Vec<Scenario>, String>;
    /// `Ok(())` when the real arms can run here (root, /dev/net/tun), else the one-line
    /// reason prefixed with `what`.
    fn tap_ready(&self, what: &str) -> Result<(), String>;
    /// `s` replayed on the simulator.
    fn run_sim(&self, s: &Scenario) -> Result<ArmOutput, String>;
    /// `s` replayed through the running kernel (the real arm).
    fn run_real(&self, s: &Scenario) -> Result<ArmOutput, String>;
    /// The first difference between the simulator's and the real arm's outputs of `s`
    /// (trace, then pcap), over what the real arm observes: `left` the simulator's value,
    /// `right` the real one. None when they agree.
    fn first_mismatch(
        &self,
        s: &Scenario,
        sim: &ArmOutput,
        real: &ArmOutput,
    ) -> Result<Option<Divergence>, String>;
}

/// `println!` through [`Skbsim::print`]: `outln!(sk)`, `outln!(sk, "{x}")`.
macro_rules! outln {
    ($sk:expr) => {
        $sk.print(format_args!("\n"))
    };
    ($sk:expr, $($arg:tt)*) => {
        $sk.print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through [`Skbsim::print`].
macro_rules! out {
    ($sk:expr, $($arg:tt)*) => {
        $sk.print(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};
