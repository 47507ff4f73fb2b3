//! skbsim: replay scenarios through the simulated datapath, compare with goldens, bless,
//! diff traces and pcaps, and benchmark.
//!
//! Exit codes: 0 all good, 1 a mismatch (a diff is printed), 2 bad input or a failure to
//! run (a one-line error naming the file and the problem, or the kernel operation that
//! failed; `--backend tap` without root or /dev/net/tun says why). When stdout's reader
//! goes away (`skbsim run | head -1`) the command stops quietly with 141, as a tool
//! ended by SIGPIPE ([`skbsim::stdout`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use skbsim::{bench, conform, diff, replay, suite};

mod exec;
mod exec_record;
mod lab;

#[derive(Debug, Parser)]
#[command(
    name = "skbsim",
    version,
    about = "Deterministic simulator and conformance bench for the Linux virtual-networking datapath"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay scenarios and compare each trace and output pcap with its golden.
    Run(suite::RunArgs),
    /// Rewrite the goldens of the given scenarios from a fresh replay (atomic writes).
    Bless(suite::RunArgs),
    /// Replay one pcap through a pipeline with flags instead of a scenario file.
    Replay(Box<replay::ReplayArgs>),
    /// Compare two traces (.snap/.txt) or two pcaps field by field.
    Diff {
        left: PathBuf,
        right: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// Trace fields or whole events to leave out, comma separated (e.g.
        /// `--ignore profile,via,batch,used,requeue,ops,per_packet` compares two vhost
        /// profiles' verdicts and bytes only).
        #[arg(long, value_delimiter = ',')]
        ignore: Vec<String>,
    },
    /// Replay scenarios on the simulator and through the real kernel and compare the two
    /// (root and /dev/net/tun); exit 1 on the first divergence of a scenario.
    Conform(conform::ConformArgs),
    /// Time `skbsim replay` itself per pipeline (frames/s, peak RSS, next to tcpreplay
    /// where installed); or the model alone (`--pipeline tun-read|datapaths`); or with
    /// `--backend tap` real frames/s with tx VLAN offload on and off.
    Bench(bench::BenchArgs),
    /// A guest Linux kernel (Debian 12's 6.1) under QEMU for what this kernel lacks (GRE,
    /// 802.1Q devices, vhost_net): fetch it, run conform or checks inside it.
    Lab(skbsim_lab::commands::LabArgs),
    /// Run a program as the calling user with a simulated /dev/net/tun (seccomp user
    /// notification); exits with the program's exit code.
    Exec(exec::ExecArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // One line, as every other error: clap's first line without its "error: ",
            // then where to look (clap's own usage and tip lines are left out).
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            let choices = text
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("[possible values:"))
                .map(|l| format!(" {l}"))
                .unwrap_or_default();
            // The missing arguments are on clap's next lines: name them on this one.
            let missing = match e.get(clap::error::ContextKind::InvalidArg) {
                Some(clap::error::ContextValue::Strings(names))
                    if e.kind() == ErrorKind::MissingRequiredArgument =>
                {
                    format!(" {}", names.join(", "))
                }
                _ => String::new(),
            };
            eprintln!("skbsim: {first}{missing}{choices} (see skbsim --help)");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Run(args) => suite::run(&args, suite::Mode::Check),
        Command::Bless(args) => suite::run(&args, suite::Mode::Bless),
        Command::Replay(args) => replay::replay(&args),
        Command::Diff {
            left,
            right,
            json,
            ignore,
        } => diff::diff(&left, &right, json, &ignore),
        Command::Conform(args) => conform::conform(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Lab(args) => lab::lab(&args),
        Command::Exec(args) => exec::exec(&args),
    };
    // What a command printed last may still be buffered; stdout's errors end here too.
    let result = result.and_then(|code| skbsim::stdout::flush().map(|()| code));
    match result {
        // Its reader has gone (`| head`): quietly, as a tool SIGPIPE ended.
        _ if skbsim::stdout::closed() => ExitCode::from(skbsim::stdout::CLOSED_EXIT),
        Ok(code) => code,
        Err(e) => {
            eprintln!("skbsim: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
