//! `skbsim exec [--profile NAME] [--far-side stack|sink|loopback] [--far-addr CIDR]...
//! -- PROGRAM [ARGS...]`: run an
//! unmodified program as the calling user with every open of /dev/net/tun answered by a
//! simulated device (skbsim_exec; docs/exec.md). Exits with the program's exit code (128 +
//! the signal that killed it), or 2 with one line when it cannot be supervised or run.

use std::ffi::OsString;
use std::process::{Command, ExitCode};

use clap::{Args, ValueEnum};
use sim::profile::{KernelProfile, PROFILES};
use sim::tun::ioctl::Caller;
use skbsim::cli_error::CliError;
use skbsim_exec::{parse_cidr, DeviceTun, LoopbackTun, Sink, Stack};

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Kernel profile whose rules answer the device's ioctls.
    #[arg(long, default_value = "linux-6.18", value_parser = profile_names())]
    pub profile: String,
    /// What is behind the device. `stack` (default): the device model with a
    /// deterministic responder (smoltcp) holding the --far-addr addresses, answering ARP,
    /// NDP, ICMP echo and UDP echo on port 7. `sink`: the device model (tun_get_user, tun_put_user,
    /// the tx_ring) with a stack that takes every frame written and answers none.
    /// `loopback`: every frame written is read back unchanged (a stand-in for tests, not
    /// the device model).
    #[arg(long, value_enum, default_value = "stack")]
    pub far_side: FarSide,
    /// An address of the stack far side, ADDRESS/PREFIX (repeatable).
    #[arg(long, default_values = ["10.0.0.2/24", "fd00::2/64"])]
    pub far_addr: Vec<String>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub program: Vec<OsString>,
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
    // The program is root of a user namespace owning the simulated network namespace
    // (as under `unshare -rn`): CAP_NET_ADMIN there, none in the initial namespace.
    let caller = Caller {
        init_net_admin: false,
        ..Caller::root()
    };
    let mut cmd = Command::new(program);
    cmd.args(rest);
    let addrs = args
        .far_addr
        .iter()
        .map(|a| parse_cidr(a).map_err(|e| CliError(format!("exec: --far-addr {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let code = match args.far_side {
        FarSide::Stack => {
            skbsim_exec::run(DeviceTun::new(profile, caller, Stack::new(addrs)), cmd).map(|r| r.0)
        }
        FarSide::Sink => {
            skbsim_exec::run(DeviceTun::new(profile, caller, Sink::default()), cmd).map(|r| r.0)
        }
        FarSide::Loopback => skbsim_exec::run(LoopbackTun::new(profile, caller), cmd).map(|r| r.0),
    }
    .map_err(|e| CliError(format!("exec: {e}")))?;
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}
