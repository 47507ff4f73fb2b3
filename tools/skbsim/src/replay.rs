//! `skbsim replay IN.pcap --pipeline tun-read [flags] -o OUT.pcap`: an ad-hoc scenario
//! built from flags. The flags become the same TOML a scenario file holds, so ad-hoc runs
//! and suite runs go through one validator.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use sim::profile::PROFILES;
use sim::scenario::{Pipeline, Scenario};

use crate::cli_error::CliError;
use crate::engine::{CaptureOut, Dest, JsonOut, Sinks, TraceOut};
use crate::output::Output;
use crate::progress;
use crate::runner::{replay_into, tap_ready, Backend};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Input pcap or pcapng (Ethernet).
    pub input: PathBuf,
    /// Pipeline to replay through.
    #[arg(long, default_value = "tun-read", value_parser = pipeline_names())]
    pub pipeline: String,
    /// Kernel profile: the kernel whose rules the model follows.
    #[arg(long, default_value = "linux-6.18", value_parser = profile_names())]
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
    /// IFF_VNET_HDR with TUNSETVNETHDRSZ of this size (10 ..= 16 MiB).
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
    /// read() buffer sizes in order (the last repeats; each at most 16 MiB).
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
    /// skb_shinfo(skb)->gso_size of a GSO skb.
    #[arg(long, default_value_t = 0)]
    pub gso_size: u16,
    /// vhost-tx: the guest's virtio_net_hdr size (10, or 12 with VIRTIO_NET_F_MRG_RXBUF /
    /// VERSION_1).
    #[arg(long, value_name = "BYTES", help_heading = "vhost-tx")]
    pub guest_hdr_len: Option<usize>,
    /// vhost-tx: how the guest fills its TX ring before kicking: `all` (up to the ring
    /// size), `burst:N`, or `trickle` (one packet per kick).
    #[arg(long, value_name = "FILL", help_heading = "vhost-tx")]
    pub guest_fill: Option<String>,
    /// tap-gro: writes per NAPI poll (1..=65).
    #[arg(long, value_name = "N", help_heading = "tap-gro")]
    pub gro_burst: Option<usize>,
    /// tap-gro: gro_flush_timeout in nanoseconds (0: flush at the end of every poll).
    #[arg(long, value_name = "NS", help_heading = "tap-gro")]
    pub gro_flush_timeout: Option<u64>,
    /// tap-gro: no ETH_P_TEB GRO handler (before the 2015 change).
    #[arg(long, help_heading = "tap-gro")]
    pub no_teb_gro: bool,
    /// tap-gro: UDP ports that are VXLAN tunnels (comma separated).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "PORTS",
        help_heading = "tap-gro"
    )]
    pub vxlan_ports: Vec<u16>,
    /// tap-gro: UDP ports with a local socket that set UDP_GRO (comma separated).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "PORTS",
        help_heading = "tap-gro"
    )]
    pub udp_gro_socket: Vec<u16>,
    /// tap-gro: rx-udp-gro-forwarding on (NETIF_F_GRO_UDP_FWD).
    #[arg(long, help_heading = "tap-gro")]
    pub rx_udp_gro_forwarding: bool,
    /// tap-gro: rx-gro-list on (NETIF_F_GRO_FRAGLIST).
    #[arg(long, help_heading = "tap-gro")]
    pub rx_gro_list: bool,
    /// Source MAC of the Ethernet header put in front of raw IP or loopback frames.
    #[arg(long, value_name = "MAC")]
    pub src_mac: Option<String>,
    /// Destination MAC of that header.
    #[arg(long, value_name = "MAC")]
    pub dst_mac: Option<String>,
    /// Where to write what userspace read ("-" for stdout; written in place, as `cp`
    /// would; a file this run created is removed if it fails).
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

/// `--profile` choices: sim's profiles, so `--help` lists each.
fn profile_names() -> clap::builder::PossibleValuesParser {
    PROFILES.iter().map(|p| p.name).into()
}

/// `--pipeline` choices.
fn pipeline_names() -> clap::builder::PossibleValuesParser {
    Pipeline::ALL.iter().map(|p| p.name()).into()
}

/// The scenario keys the flags set, each with its flag, longest key first where one is
/// a prefix of another. Errors from the scenario validator name the key; the user gave
/// a flag.
const FLAG_OF_KEY: [(&str, &str); 25] = [
    ("device.kind", "--tun"),
    ("device.no_pi", "--no-pi"),
    ("device.vnet_hdr_sz", "--vnet-hdr-sz"),
    ("device.vnet_hdr", "--vnet-hdr-sz"),
    ("device.vnet_be", "--vnet-be"),
    (
        "device.tx_vlan_offload",
        "--no-txvlan-ctag/--no-txvlan-stag",
    ),
    ("device.offloads", "--offloads"),
    ("reader.buffers", "--buffer"),
    ("skb.vlan", "--inband-vlan"),
    ("skb.checksum", "--checksum"),
    ("skb.gso_size", "--gso-size"),
    ("skb.gso", "--gso"),
    ("profile", "--profile"),
    ("pipeline", "--pipeline"),
    ("vhost.hdr_len", "--guest-hdr-len"),
    ("vhost.burst", "--guest-fill burst:N"),
    ("gro.burst", "--gro-burst"),
    ("gro.flush_timeout_ns", "--gro-flush-timeout"),
    ("gro.teb_gro", "--no-teb-gro"),
    ("gro.vxlan_ports", "--vxlan-ports"),
    ("gro.udp_gro_socket", "--udp-gro-socket"),
    ("gro.rx_udp_gro_forwarding", "--rx-udp-gro-forwarding"),
    ("gro.rx_gro_list", "--rx-gro-list"),
    ("link.src_mac", "--src-mac"),
    ("link.dst_mac", "--dst-mac"),
];

/// TOML spelled inside validator and model messages, and the flag spelling; in order
/// (a longer phrase before one it contains).
const FLAG_OF_TOML: [(&str, &str); 8] = [
    ("set checksum = \"partial\"", "add --checksum partial"),
    ("checksum = \"partial\"", "--checksum partial"),
    ("set skb.vlan = \"inband\"", "add --inband-vlan"),
    ("gso_size > 0", "--gso-size > 0"),
    ("gso = ", "--gso "),
    ("vnet_hdr = true", "--vnet-hdr-sz"),
    ("\"csum\" too", "csum in --offloads too"),
    ("but device.offloads lacks it", "but --offloads lacks it"),
];

/// The ad-hoc scenario: its TOML holds a table only when a flag for it differs from
/// the scenario default, so a pipeline that does not read a table only sees it when
/// the user asked for it (and the error names those flags).
fn scenario_toml(a: &ReplayArgs) -> Result<String, CliError> {
    let mut t = String::new();
    let input = std::path::absolute(&a.input)
        .map_err(|e| CliError(format!("{}: {e}", a.input.display())))?;
    let _ = writeln!(t, "description = \"ad-hoc replay\"");
    let _ = writeln!(t, "input = {}", quoted(&input.to_string_lossy()));
    let _ = writeln!(t, "pipeline = {}", quoted(&a.pipeline));
    let _ = writeln!(t, "profile = {}", quoted(&a.profile));
    if let Some(attach) = &a.attach {
        let _ = writeln!(t, "attach = {}", quoted(attach));
    }
    table(&mut t, "device", &device_table(a));
    if !a.buffers.is_empty() {
        let b: Vec<String> = a.buffers.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(t, "[reader]\nbuffers = [{}]", b.join(", "));
    }
    table(&mut t, "skb", &skb_table(a));
    if a.pipeline == "vhost-tx" || a.guest_hdr_len.is_some() || a.guest_fill.is_some() {
        // A guest with defaults unless told: the table vhost-tx needs (written even empty).
        let _ = write!(t, "[vhost]\n{}", vhost_table(a)?);
    }
    table(&mut t, "gro", &gro_table(a));
    let mut link = String::new();
    if let Some(m) = &a.src_mac {
        let _ = writeln!(link, "src_mac = {}", quoted(m));
    }
    if let Some(m) = &a.dst_mac {
        let _ = writeln!(link, "dst_mac = {}", quoted(m));
    }
    table(&mut t, "link", &link);
    Ok(t)
}

/// A TOML basic string (Rust's Debug quoting escapes the same characters TOML needs).
fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// `[name]` and its keys, when it has any.
fn table(t: &mut String, name: &str, keys: &str) {
    if !keys.is_empty() {
        let _ = write!(t, "[{name}]\n{keys}");
    }
}

fn device_table(a: &ReplayArgs) -> String {
    let mut device = String::new();
    if a.tun {
        let _ = writeln!(device, "kind = \"tun\"");
    }
    if a.no_pi {
        let _ = writeln!(device, "no_pi = true");
    }
    if let Some(sz) = a.vnet_hdr_sz {
        let _ = writeln!(device, "vnet_hdr = true\nvnet_hdr_sz = {sz}");
    }
    if a.vnet_be {
        let _ = writeln!(device, "vnet_be = true");
    }
    if a.no_txvlan_ctag || a.no_txvlan_stag {
        let _ = writeln!(
            device,
            "tx_vlan_offload = {{ ctag = {}, stag = {} }}",
            !a.no_txvlan_ctag, !a.no_txvlan_stag
        );
    }
    if !a.offloads.is_empty() {
        let offloads: Vec<String> = a.offloads.iter().map(|o| quoted(o)).collect();
        let _ = writeln!(device, "offloads = [{}]", offloads.join(", "));
    }
    device
}

fn skb_table(a: &ReplayArgs) -> String {
    let mut skb = String::new();
    if a.inband_vlan {
        let _ = writeln!(skb, "vlan = \"inband\"");
    }
    if a.checksum != "none" {
        let _ = writeln!(skb, "checksum = {}", quoted(&a.checksum));
    }
    if a.gso != "none" {
        let _ = writeln!(skb, "gso = {}", quoted(&a.gso));
    }
    if a.gso_size > 0 {
        let _ = writeln!(skb, "gso_size = {}", a.gso_size);
    }
    skb
}

fn vhost_table(a: &ReplayArgs) -> Result<String, CliError> {
    let mut vhost = String::new();
    if let Some(h) = a.guest_hdr_len {
        let _ = writeln!(vhost, "hdr_len = {h}");
    }
    match a.guest_fill.as_deref() {
        None => {}
        Some(fill @ ("all" | "trickle")) => {
            let _ = writeln!(vhost, "fill = {}", quoted(fill));
        }
        Some(other) => match other.strip_prefix("burst:").map(str::parse::<usize>) {
            Some(Ok(n)) => {
                let _ = writeln!(vhost, "fill = \"burst\"\nburst = {n}");
            }
            _ => {
                return Err(CliError(format!(
                    "--guest-fill {other}: expected all, burst:N or trickle"
                )))
            }
        },
    }
    Ok(vhost)
}

fn gro_table(a: &ReplayArgs) -> String {
    let mut gro = String::new();
    if let Some(b) = a.gro_burst {
        let _ = writeln!(gro, "burst = {b}");
    }
    if let Some(ns) = a.gro_flush_timeout {
        let _ = writeln!(gro, "flush_timeout_ns = {ns}");
    }
    if a.no_teb_gro {
        let _ = writeln!(gro, "teb_gro = false");
    }
    if !a.vxlan_ports.is_empty() {
        let p: Vec<String> = a.vxlan_ports.iter().map(u16::to_string).collect();
        let _ = writeln!(gro, "vxlan_ports = [{}]", p.join(", "));
    }
    if !a.udp_gro_socket.is_empty() {
        let p: Vec<String> = a.udp_gro_socket.iter().map(u16::to_string).collect();
        let _ = writeln!(gro, "udp_gro_socket = [{}]", p.join(", "));
    }
    if a.rx_udp_gro_forwarding {
        let _ = writeln!(gro, "rx_udp_gro_forwarding = true");
    }
    if a.rx_gro_list {
        let _ = writeln!(gro, "rx_gro_list = true");
    }
    gro
}

/// A writer for what the user named ("-" is stdout), written through (see [`Output`]).
fn dest(path: &std::path::Path) -> Result<Dest, CliError> {
    Ok(Dest::Writer {
        // Written on its own thread while this one models (see engine::background).
        w: Box::new(crate::engine::background::Background::new(Box::new(
            Output::create(path)?,
        ))),
        name: path.to_path_buf(),
    })
}

/// A validator message about the flags' TOML, in terms of the flags: `--buffer: ...`.
fn flag_message(a: &ReplayArgs, message: &str) -> String {
    // Positions in the generated TOML mean nothing to the user.
    let m = match message.rfind(" (line ") {
        Some(i) if message.ends_with(')') => &message[..i],
        _ => message,
    };
    let pipeline = a.pipeline.as_str();
    if m.starts_with('[') && m.contains("] is not used by pipeline") {
        // Every flag the pipeline ignores, not only those of the first table.
        let reads = Pipeline::ALL
            .iter()
            .find(|p| p.name() == pipeline)
            .map(|p| p.tables())
            .unwrap_or_default();
        // Per table the user's flags put keys in: those flags and the pipelines that
        // read it.
        let groups: Vec<(Vec<&str>, String)> = ["device", "reader", "skb", "vhost", "gro"]
            .iter()
            .filter(|t| !reads.contains(t))
            .map(|t| (flags_of_table(a, t), pipelines_reading(t)))
            .filter(|(flags, _)| !flags.is_empty())
            .collect();
        if !groups.is_empty() {
            let flags: Vec<&str> = groups.iter().flat_map(|(f, _)| f.iter().copied()).collect();
            let one = groups.len() == 1;
            let needs: Vec<String> = groups
                .iter()
                .map(|(f, p)| match (one, f.len()) {
                    (true, 1) => format!("it needs --pipeline {p}"),
                    (true, _) => format!("they need --pipeline {p}"),
                    (false, 1) => format!("{} needs --pipeline {p}", f[0]),
                    (false, _) => format!("{} need --pipeline {p}", f.join(", ")),
                })
                .collect();
            let needs = needs.join("; ");
            return format!(
                "{}: not used by --pipeline {pipeline} ({needs})",
                flags.join(", ")
            );
        }
    }
    if m.starts_with("pipeline vhost-tx needs a [vhost] table") {
        return "--pipeline vhost-tx: the guest's [vhost] table has no flags; use a scenario file"
            .into();
    }
    let mapped = m.split_once(": ").and_then(|(key, why)| {
        // A list index goes: reader.buffers[1] is --buffer.
        let bare = key.split('[').next().unwrap_or(key);
        FLAG_OF_KEY
            .iter()
            .find(|(k, _)| *k == bare)
            .map(|(_, flag)| format!("{flag}: {why}"))
    });
    in_flag_terms(&mapped.unwrap_or_else(|| m.to_string()))
}

/// `message` with TOML spellings of flag settings replaced by the flags.
fn in_flag_terms(message: &str) -> String {
    FLAG_OF_TOML
        .iter()
        .fold(message.to_string(), |m, (toml, flag)| m.replace(toml, flag))
}

/// An error of a replay with flags, in terms of the flags (the model's messages say how
/// to fix a scenario file).
pub fn flag_error(e: CliError) -> CliError {
    CliError(in_flag_terms(&e.0))
}

/// The pipelines that read `[table]`: "tap-gro or vhost-tx".
fn pipelines_reading(table: &str) -> String {
    let names: Vec<&str> = Pipeline::ALL
        .iter()
        .filter(|p| p.tables().contains(&table))
        .map(|p| p.name())
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// The flags given that put keys into `[table]`.
fn flags_of_table(a: &ReplayArgs, table: &str) -> Vec<&'static str> {
    let given = [
        ("device", "--tun", a.tun),
        ("device", "--no-pi", a.no_pi),
        ("device", "--vnet-hdr-sz", a.vnet_hdr_sz.is_some()),
        ("device", "--vnet-be", a.vnet_be),
        ("device", "--no-txvlan-ctag", a.no_txvlan_ctag),
        ("device", "--no-txvlan-stag", a.no_txvlan_stag),
        ("device", "--offloads", !a.offloads.is_empty()),
        ("reader", "--buffer", !a.buffers.is_empty()),
        ("skb", "--inband-vlan", a.inband_vlan),
        ("skb", "--checksum", a.checksum != "none"),
        ("skb", "--gso", a.gso != "none"),
        ("skb", "--gso-size", a.gso_size > 0),
        ("vhost", "--guest-hdr-len", a.guest_hdr_len.is_some()),
        ("vhost", "--guest-fill", a.guest_fill.is_some()),
        ("gro", "--gro-burst", a.gro_burst.is_some()),
        ("gro", "--gro-flush-timeout", a.gro_flush_timeout.is_some()),
        ("gro", "--no-teb-gro", a.no_teb_gro),
        ("gro", "--vxlan-ports", !a.vxlan_ports.is_empty()),
        ("gro", "--udp-gro-socket", !a.udp_gro_socket.is_empty()),
        ("gro", "--rx-udp-gro-forwarding", a.rx_udp_gro_forwarding),
        ("gro", "--rx-gro-list", a.rx_gro_list),
    ];
    given
        .iter()
        .filter(|(t, _, on)| *t == table && *on)
        .map(|(_, flag, _)| *flag)
        .collect()
}

/// The scenario the flags describe, validated like a scenario file; errors name flags.
pub fn scenario_from_flags(args: &ReplayArgs) -> Result<Scenario, CliError> {
    let toml = scenario_toml(args)?;
    let here = std::env::current_dir().map_err(|e| CliError(format!("current directory: {e}")))?;
    Scenario::parse(&here.join("replay").join("flags.toml"), &toml)
        .map_err(|e| CliError(flag_message(args, &e.message)))
}

/// pcapng for a `.pcapng` name or a pcapng input (its timestamps may not fit classic
/// pcap's 32-bit seconds), else classic pcap; a pipeline with several observation points
/// writes pcapng in any case.
fn output_format(
    output: &std::path::Path,
    scenario: &Scenario,
) -> Result<sim::pcap::PcapFormat, CliError> {
    let input = sim::pcap::PcapReader::open_with(&scenario.input, sim::pcap::LinkPolicy::Any)?;
    Ok(sim::pcap::PcapFormat::for_output(output, input.format()))
}

pub fn replay(args: &ReplayArgs) -> Result<ExitCode, CliError> {
    if args.backend == Backend::Tap {
        tap_ready("--backend tap")?;
    }
    let scenario = scenario_from_flags(args)?;
    let to_stdout = |p: &Option<PathBuf>| p.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if [to_stdout(&args.output), to_stdout(&args.trace), args.json]
        .iter()
        .filter(|b| **b)
        .count()
        > 1
    {
        return Err(CliError(
            "only one of -o -, --trace - and --json can use stdout; name a file for the others"
                .into(),
        ));
    }
    let mut outputs: Vec<(&str, &std::path::Path)> = Vec::new();
    if let Some(p) = &args.output {
        outputs.push(("-o", p));
    }
    if let Some(p) = &args.trace {
        outputs.push(("--trace", p));
    }
    if args.json {
        outputs.push(("--json", std::path::Path::new("-")));
    }
    crate::output::refuse_overlaps(&[&args.input], &outputs)?;
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
            Some(p) => CaptureOut::to(dest(p)?, output_format(p, &scenario)?),
            None => CaptureOut::off(),
        },
        records: None,
    };
    let pb = progress::bar(1, "replaying");
    let summary =
        replay_into(&scenario, args.backend, &mut sinks, Some(&pb)).map_err(flag_error)?;
    pb.finish_and_clear();
    let tally = &summary.tally;
    sinks.json.line(&tally.json())?;
    sinks.finish()?;
    // On stderr whatever the outputs are: frames in, delivered, not delivered by reason.
    let name = |p: &std::path::Path| match p.as_os_str() == "-" {
        true => "stdout".to_string(),
        false => p.display().to_string(),
    };
    let output = args.output.as_deref().map(name);
    eprintln!("{}", tally.line(&name(&args.input), output.as_deref()));
    if let Some(hint) = tally.hint() {
        eprintln!("{hint}");
    }
    if summary.skipped.total() > 0 {
        eprintln!("skbsim: skipped {}", summary.skipped);
    }
    Ok(ExitCode::SUCCESS)
}
