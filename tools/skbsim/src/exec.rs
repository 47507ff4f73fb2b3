//! `skbsim exec [--profile NAME] [--far-side stack|sink|loopback] [--far-addr CIDR]...
//! [--input PCAP] [--trace FILE] [--json FILE] [-o FILE] -- PROGRAM [ARGS...]`: run an
//! unmodified program as the calling user with every open of /dev/net/tun answered by a
//! simulated device (skbsim_exec; docs/exec.md). Exits with the program's exit code (128 +
//! the signal that killed it), or 2 with one line when it cannot be supervised or run.
//! With --trace, --json or -o the run is recorded (skbsim_exec::record, src/exec_record.rs).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::{Args, ValueEnum};
use sim::profile::{KernelProfile, PROFILES};
use skbsim::cli_error::CliError;
use skbsim::exec_scenario::{caller, far_addrs, read_far_input, run_on};
use skbsim::exec_tap::TapTun;
use skbsim_exec::{DeviceTun, FarInput, LoopbackTun, Sink, Stack};

use crate::exec_record::RecordOutputs;

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Kernel profile whose rules answer the device's ioctls.
    #[arg(long, default_value = "linux-6.18", value_parser = profile_names())]
    pub profile: String,
    /// What is behind the device. `stack` (default): the device model with a
    /// deterministic responder (smoltcp) holding the --far-addr addresses, answering ARP,
    /// NDP, ICMP echo and UDP and TCP echo on port 7 (GSO TCP skbs segmented first). `sink`: the device model (tun_get_user, tun_put_user,
    /// the tx_ring) with a stack that takes every frame written and answers none.
    /// `loopback`: every frame written is read back unchanged (a stand-in for tests, not
    /// the device model).
    #[arg(long, value_enum, default_value = "stack")]
    pub far_side: FarSide,
    /// An address of the stack far side, ADDRESS/PREFIX (repeatable).
    #[arg(long, default_values = ["10.0.0.2/24", "fd00::2/64"])]
    pub far_addr: Vec<String>,
    /// A capture (Ethernet) whose frames the far side sends on the program's device when
    /// it first comes up, as an exec scenario's `input` (docs/exec.md#scenarios): read
    /// back in order on a tap, after the Ethernet header on a tun. Not with `loopback`.
    #[arg(long, value_name = "PCAP")]
    pub input: Option<PathBuf>,
    /// `sim` (the device model) or `tap`: real tun/tap files in a private network
    /// namespace where the program runs, the Linux stack holding the --far-addr
    /// addresses as the far side (root; docs/exec.md#tap).
    #[arg(long, value_enum, default_value = "sim")]
    pub backend: ExecBackend,
    /// Where to write the run's record as a text trace: every open, ioctl (argument and
    /// answer), read, write (with the skbs the stack got), link change and close ("-"
    /// for stdout, which the program shares).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Where to write the record as JSON lines (a header line, then one per event).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Where to write a pcapng of the frames at tun_get_user (written) and tun_put_user
    /// (read), one interface per device and point.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub program: Vec<OsString>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExecBackend {
    Sim,
    Tap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FarSide {
    Stack,
    Sink,
    Loopback,
}

fn profile_names() -> clap::builder::PossibleValuesParser {
    PROFILES.iter().map(|p| p.name).into()
}

pub fn exec(args: &ExecArgs) -> Result<ExitCode, CliError> {
    let profile = KernelProfile::by_name(&args.profile).map_err(|e| CliError(e.to_string()))?;
    let (program, rest) = args
        .program
        .split_first()
        .ok_or_else(|| CliError("exec: no program given".into()))?;
    let caller = caller();
    let mut cmd = Command::new(program);
    cmd.args(rest);
    let addrs = far_addrs(&args.far_addr, "exec: --far-addr")?;
    let input = match (&args.input, args.far_side) {
        (None, _) => FarInput::default(),
        (Some(_), FarSide::Loopback) => return Err(CliError(
            "exec: --input: the loopback far side sends no capture; use --far-side stack or sink"
                .into(),
        )),
        (Some(p), _) => read_far_input(p, "exec: --input")?,
    };
    let outputs = RecordOutputs::open(
        args.trace.as_deref(),
        args.json.as_deref(),
        args.output.as_deref(),
    )?;
    let record = outputs.wanted();
    let (code, rec) = match (args.backend, args.far_side) {
        (ExecBackend::Tap, FarSide::Stack) => return run_tap(args, cmd, &addrs, input, outputs),
        (ExecBackend::Tap, _) => {
            return Err(CliError(
                "exec: --backend tap has the Linux stack as its far side (--far-side stack)".into(),
            ))
        }
        (ExecBackend::Sim, FarSide::Stack) => run_on(
            DeviceTun::new(profile, caller, Stack::new(addrs)).with_input(input),
            cmd,
            record,
        ),
        (ExecBackend::Sim, FarSide::Sink) => run_on(
            DeviceTun::new(profile, caller, Sink::default()).with_input(input),
            cmd,
            record,
        ),
        (ExecBackend::Sim, FarSide::Loopback) => {
            run_on(LoopbackTun::new(profile, caller), cmd, record)
        }
    }
    .map_err(|e| CliError(format!("exec: {e}")))?;
    if let Some(rec) = rec {
        outputs.write(&header(args, "sim"), &rec)?;
    }
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// The record's header: the arm, the profile, the far side, the program as given.
fn header(args: &ExecArgs, backend: &str) -> sim::trace::record::Record<'static> {
    let far = args
        .far_side
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    let shown: Vec<String> = args
        .program
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    skbsim_exec::record::header(backend, &args.profile, &far, &shown.join(" "))
}

/// `--backend tap`: the program and the supervisor in a fresh private network namespace
/// (skbsim_kernel::Netns: lo up, IPv6 off), real files behind the program's fds
/// (src/exec_tap.rs).
fn run_tap(
    args: &ExecArgs,
    cmd: Command,
    addrs: &[skbsim_exec::IpCidr],
    input: FarInput,
    outputs: RecordOutputs,
) -> Result<ExitCode, CliError> {
    skbsim::runner::tap_ready("exec --backend tap")?;
    let far: Vec<(std::net::IpAddr, u8)> = addrs
        .iter()
        .map(|c| (c.address().into(), c.prefix_len()))
        .collect();
    let record = outputs.wanted();
    let ran =
        skbsim_kernel::Netns::run(move |_ns| Ok(run_on(TapTun::new(far, input)?, cmd, record)))
            .map_err(|e| CliError(format!("exec --backend tap: {e}")))?;
    let (code, rec) = ran.map_err(|e| CliError(format!("exec: {e}")))?;
    if let Some(rec) = rec {
        outputs.write(&header(args, "tap"), &rec)?;
    }
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}
