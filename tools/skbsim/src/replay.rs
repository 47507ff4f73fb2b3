//! `skbsim replay IN.pcap --pipeline tun-read [flags] -o OUT.pcap`: an ad-hoc scenario
//! built from flags. The flags become the same TOML a scenario file holds, so ad-hoc runs
//! and suite runs go through one validator.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use sim::scenario::Scenario;

use crate::cli_error::CliError;
use crate::engine::{CaptureOut, Dest, JsonOut, Sinks, TraceOut};
use crate::progress;
use crate::runner::{replay_into, tap_ready, Backend};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Input pcap or pcapng (Ethernet).
    pub input: PathBuf,
    /// Pipeline to replay through.
    #[arg(long, default_value = "tun-read")]
    pub pipeline: String,
    /// Kernel profile (linux-6.18, linux-4.19, linux-3.12).
    #[arg(long, default_value = "linux-6.18")]
    pub profile: String,
    /// How frames reach the tap (tun-read): bridge (a default Linux bridge), bridge-nf
    /// (the same with br_netfilter's bridge-nf-call-* on) or direct (no bridge).
    #[arg(long)]
    pub attach: Option<String>,
    /// IFF_TUN instead of IFF_TAP.
    #[arg(long)]
    pub tun: bool,
    /// IFF_NO_PI.
    #[arg(long)]
    pub no_pi: bool,
    /// IFF_VNET_HDR with TUNSETVNETHDRSZ of this size.
    #[arg(long, value_name = "BYTES")]
    pub vnet_hdr_sz: Option<usize>,
    /// TUNSETVNETBE.
    #[arg(long)]
    pub vnet_be: bool,
    /// tx-vlan-hw-insert (802.1Q) off: the core inserts the tag in software.
    #[arg(long)]
    pub no_txvlan_ctag: bool,
    /// tx-vlan-stag-hw-insert (802.1ad) off.
    #[arg(long)]
    pub no_txvlan_stag: bool,
    /// TUNSETOFFLOAD bits, comma separated: csum,tso4,tso6,tso_ecn,ufo,uso4,uso6.
    #[arg(long, value_delimiter = ',')]
    pub offloads: Vec<String>,
    /// read() buffer sizes in order (the last repeats).
    #[arg(long = "buffer", value_name = "BYTES")]
    pub buffers: Vec<usize>,
    /// Keep in-band VLAN tags in the frame instead of moving them to the hw-accel tag.
    #[arg(long)]
    pub inband_vlan: bool,
    /// none | unnecessary | partial.
    #[arg(long, default_value = "none")]
    pub checksum: String,
    /// none | tcp | udp_l4 | ufo (needs --gso-size and --checksum partial).
    #[arg(long, default_value = "none")]
    pub gso: String,
    #[arg(long, default_value_t = 0)]
    pub gso_size: u16,
    /// Where to write what userspace read.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Where to write the text trace ("-" for stdout).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Print the trace as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// `sim` (the model) or `tap` (the real kernel: root and /dev/net/tun).
    #[arg(long, value_enum, default_value_t = Backend::Sim)]
    pub backend: Backend,
}

fn scenario_toml(a: &ReplayArgs) -> Result<String, CliError> {
    let mut t = String::new();
    let input = std::path::absolute(&a.input)
        .map_err(|e| CliError(format!("{}: {e}", a.input.display())))?;
    let q = |s: &str| format!("{s:?}");
    let _ = writeln!(t, "description = \"ad-hoc replay\"");
    let _ = writeln!(t, "input = {}", q(&input.to_string_lossy()));
    let _ = writeln!(t, "pipeline = {}", q(&a.pipeline));
    let _ = writeln!(t, "profile = {}", q(&a.profile));
    if let Some(attach) = &a.attach {
        let _ = writeln!(t, "attach = {}", q(attach));
    }
    let _ = writeln!(t, "[device]");
    let _ = writeln!(t, "kind = {}", q(if a.tun { "tun" } else { "tap" }));
    let _ = writeln!(t, "no_pi = {}", a.no_pi);
    if let Some(sz) = a.vnet_hdr_sz {
        let _ = writeln!(t, "vnet_hdr = true\nvnet_hdr_sz = {sz}");
    }
    let _ = writeln!(t, "vnet_be = {}", a.vnet_be);
    let _ = writeln!(
        t,
        "tx_vlan_offload = {{ ctag = {}, stag = {} }}",
        !a.no_txvlan_ctag, !a.no_txvlan_stag
    );
    let offloads: Vec<String> = a.offloads.iter().map(|o| q(o)).collect();
    let _ = writeln!(t, "offloads = [{}]", offloads.join(", "));
    if !a.buffers.is_empty() {
        let b: Vec<String> = a.buffers.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(t, "[reader]\nbuffers = [{}]", b.join(", "));
    }
    let _ = writeln!(t, "[skb]");
    let _ = writeln!(
        t,
        "vlan = {}",
        q(if a.inband_vlan { "inband" } else { "hwaccel" })
    );
    let _ = writeln!(t, "checksum = {}", q(&a.checksum));
    let _ = writeln!(t, "gso = {}", q(&a.gso));
    if a.gso_size > 0 {
        let _ = writeln!(t, "gso_size = {}", a.gso_size);
    }
    Ok(t)
}

/// A writer for what the user named: "-" is stdout.
fn dest(path: &std::path::Path) -> Result<Dest, CliError> {
    if path.as_os_str() == "-" {
        return Ok(Dest::Writer {
            w: Box::new(std::io::BufWriter::with_capacity(
                256 * 1024,
                std::io::stdout(),
            )),
            name: PathBuf::from("(stdout)"),
        });
    }
    let f = std::fs::File::create(path)
        .map_err(|e| CliError(format!("{}: cannot create: {e}", path.display())))?;
    Ok(Dest::Writer {
        w: Box::new(std::io::BufWriter::with_capacity(256 * 1024, f)),
        name: path.to_path_buf(),
    })
}

pub fn replay(args: &ReplayArgs) -> Result<ExitCode, CliError> {
    if args.backend == Backend::Tap {
        tap_ready("--backend tap")?;
    }
    let toml = scenario_toml(args)?;
    let here = std::env::current_dir().map_err(|e| CliError(format!("current directory: {e}")))?;
    let scenario = Scenario::parse(&here.join("replay").join("flags.toml"), &toml)
        .map_err(|e| CliError(format!("replay flags: {}", e.message)))?;
    let to_stdout = |p: &Option<PathBuf>| p.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if [to_stdout(&args.output), to_stdout(&args.trace), args.json]
        .iter()
        .filter(|b| **b)
        .count()
        > 1
    {
        return Err(CliError(
            "only one of -o -, --trace - and --json can use standard output".into(),
        ));
    }
    let mut sinks = Sinks {
        trace: match &args.trace {
            Some(p) => TraceOut::to(dest(p)?),
            None => TraceOut::off(),
        },
        json: if args.json {
            JsonOut::to(dest(std::path::Path::new("-"))?)
        } else {
            JsonOut::off()
        },
        capture: match &args.output {
            Some(p) => CaptureOut::to(dest(p)?),
            None => CaptureOut::off(),
        },
    };
    let pb = progress::bar(1, "replaying");
    let summary = replay_into(&scenario, args.backend, &mut sinks, Some(&pb))?;
    pb.finish_and_clear();
    sinks.finish()?;
    if !args.json && args.trace.is_none() && !to_stdout(&args.output) {
        eprintln!(
            "replayed {} frames from {}{}",
            summary.frames,
            args.input.display(),
            args.output
                .as_ref()
                .map(|o| format!(" into {}", o.display()))
                .unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}
