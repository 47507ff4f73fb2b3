//! `skbsim bench` (the default, or `--replay`): the speed of `skbsim replay` itself, every
//! pipeline, timed as a whole process, next to tcpreplay through a real tap where it is
//! installed; see [`crate::bench::replay`].
//!
//! `skbsim bench --pipeline tun-read`: the model alone, simulated frames/s through the
//! tun read path next to raw pcap read frames/s, measured in the same run on the same
//! generated pcap, as medians of several runs; and the op counts of the 2013 change
//! (hw-accel splice vs software tag insert). `--pipeline datapaths`: GRO, the XDP write
//! path, vhost_net batching (frames in memory).
//!
//! `skbsim bench --backend tap`: the same change on the real kernel: frames/s written
//! into a tap and read from the bridged tap under test, with its tx VLAN offload on
//! (hw-accel tag spliced by tun_put_user) and off (tag pushed into the packet by
//! validate_xmit_vlan), alternating in slices of each run in one namespace.
//!
//! Generated captures live in a temporary directory removed when the bench ends
//! ([`crate::bench::capture::Scratch`]); `--make-capture PATH` writes one to keep.

pub mod capture;
pub mod gro_model;
pub mod gro_real;
pub mod model;
pub mod replay;
pub mod xdp_real;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use serde_json::json;
use sim::pcap::{EthernetInput, PcapReader};
use sim::pipeline::drive::{DriveError, Frames};
use sim::pipeline::tun_read::{Event, TunReadRun};
use sim::pipeline::{drive, Input, Schedule};
use sim::scenario::Scenario;
use sim::skb::OpCounters;

use crate::bench::capture::{frame_into, Capture, Limit, Scratch, SIZES};
use crate::cli_error::CliError;
use crate::progress;
use crate::runner::{tap_ready, Backend};
use crate::{out, outln};
use skbsim_kernel::arm::{vlan_offload_bench, VlanBenchConfig};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Time `skbsim replay` itself, every pipeline with `-o` and with `-o --trace`
    /// (the default without `--pipeline` or `--backend tap`).
    #[arg(long, conflicts_with_all = ["pipeline", "make_capture"])]
    pub replay: bool,
    /// Frames in the generated pcap (default 1000000), or per timed run with
    /// `--backend tap` (default 200000).
    #[arg(long)]
    pub frames: Option<u64>,
    /// Generate the capture up to this size instead (`2G`, `500M`, `64K`, bytes).
    #[arg(long, value_name = "SIZE", conflicts_with = "frames")]
    pub bytes: Option<String>,
    /// Write the generated capture (`--frames` or `--bytes`) to PATH, keep it, and exit;
    /// then `skbsim bench --input PATH` measures on it.
    #[arg(long, value_name = "PATH")]
    pub make_capture: Option<PathBuf>,
    /// Runs per measurement; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Use this pcap instead of generating one.
    #[arg(long, conflicts_with_all = ["frames", "bytes"])]
    pub input: Option<PathBuf>,
    /// Where the temporary directory (generated capture, replay outputs) is made; it is
    /// removed when the bench ends, also on an error or Ctrl-C.
    #[arg(long, value_name = "DIR")]
    pub tmpdir: Option<PathBuf>,
    /// Do not run tcpreplay next to `skbsim replay`.
    #[arg(long)]
    pub no_tcpreplay: bool,
    /// Print results as JSON.
    #[arg(long)]
    pub json: bool,
    /// `sim`: the model next to raw pcap reads. `tap`: the real kernel (root), tx VLAN
    /// offload on vs off.
    #[arg(long, value_enum, default_value_t = Backend::Sim)]
    pub backend: Backend,
    /// With `--backend tap`: every frame this size (60..=1514 before the 4-byte tag)
    /// instead of the mix of 60..1514.
    #[arg(long)]
    pub frame_size: Option<usize>,
    /// Measure the model instead of `skbsim replay`: `tun-read` (the read path next to
    /// raw pcap reads), or `datapaths` (GRO, the XDP write path, vhost_net batching on
    /// and off; frames in memory).
    /// With `--backend tap`: `xdp-tx` measures XDP_TX attached native vs generic on a
    /// tap (64- and 1500-byte frames, or `--frame-size`); `gro` measures frames/s written
    /// into an IFF_NAPI tap for a TCP stream with GRO on and off, and skbs per MB.
    #[arg(long)]
    pub pipeline: Option<String>,
}

fn scenario(input: &Path, txvlan: bool) -> Result<Scenario, CliError> {
    let text = format!(
        "description = \"bench\"\ninput = {:?}\npipeline = \"tun-read\"\n[device]\nvnet_hdr = true\nvnet_hdr_sz = 12\ntx_vlan_offload = {{ ctag = {txvlan}, stag = {txvlan} }}\n[reader]\nbuffers = [2048]\n",
        input.to_string_lossy()
    );
    Ok(Scenario::parse(Path::new("bench/bench.toml"), &text)?)
}

fn raw_read(path: &Path) -> Result<(u64, u64), CliError> {
    let mut r = PcapReader::open(path)?;
    let (mut n, mut bytes) = (0u64, 0u64);
    while let Some(f) = r.next_frame() {
        let f = f?;
        n += 1;
        bytes += f.data.len() as u64 + u64::from(f.data.first().copied().unwrap_or(0));
    }
    Ok((n, bytes))
}

fn sim_read(s: &Scenario) -> Result<(u64, OpCounters), CliError> {
    let mut input = EthernetInput::open(&s.input, s.link)?;
    let mut run = TunReadRun::new(s);
    run.record_bytes = false;
    let mut reads = 0u64;
    let mut count = |e: &Event| {
        if matches!(e, Event::Read(_)) {
            reads += 1;
        }
    };
    drive(&mut run, Schedule::for_scenario(s), &mut input, &mut count)
        .map_err(|e| sim_error(s, e))?;
    Ok((reads, run.ops))
}

fn sim_error(s: &Scenario, e: DriveError<CliError>) -> CliError {
    match e {
        DriveError::Pipeline(p) => CliError(format!("{}: {p}", s.input.display())),
        DriveError::Other(e) => e,
    }
}

/// Frames kept in memory for the simulator-only measurement (about 15 MB of a mixed
/// capture), replayed in a cycle.
const PRELOAD_FRAMES: usize = 20_000;

/// The simulator alone: frames already in memory, so no pcap parsing or page-cache copy.
fn sim_in_memory(s: &Scenario, frames: &[sim::pcap::Frame], total: u64) -> Result<f64, CliError> {
    let mut run = TunReadRun::new(s);
    run.record_bytes = false;
    let mut discard = |_e: &Event| {};
    let inputs = (0..total)
        .zip(frames.iter().cycle())
        .map(|(i, f)| Input::Frame {
            index: i,
            ts_ns: f.ts_ns,
            bytes: &f.data,
        });
    let t = Instant::now();
    drive(
        &mut run,
        Schedule::for_scenario(s),
        &mut Frames::new(inputs),
        &mut discard,
    )
    .map_err(|e| sim_error(s, e))?;
    Ok(total as f64 / t.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Peak resident set size in KiB (VmHWM), where /proc tells it.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

pub fn bench(args: &BenchArgs) -> Result<ExitCode, CliError> {
    if args.runs == 0 {
        return Err(CliError("--runs must be at least 1".into()));
    }
    crate::bench::capture::install_interrupt_handler();
    let limit = match &args.bytes {
        Some(b) => Limit::Bytes(crate::bench::capture::parse_bytes(b)?),
        None => Limit::Frames(args.frames.unwrap_or(1_000_000)),
    };
    if limit == Limit::Frames(0) {
        return Err(CliError("--frames must be at least 1".into()));
    }
    if let Some(path) = &args.make_capture {
        let g = crate::bench::capture::make_capture(path, limit)?;
        outln!(
            "{}: {} frames, {} bytes (60-1514 B, a third 802.1Q)",
            path.display(),
            g.frames,
            g.bytes
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.replay && args.backend == Backend::Tap {
        return Err(CliError(
            "--replay times `skbsim replay` on the simulator; it takes no --backend tap".into(),
        ));
    }
    let pipeline = args.pipeline.as_deref();
    if args.backend == Backend::Tap {
        return match pipeline {
            Some("gro") => crate::bench::gro_real::bench(args),
            Some("xdp-tx") => crate::bench::xdp_real::bench(args),
            _ => bench_tap(args),
        };
    }
    match pipeline {
        None => crate::bench::replay::bench(args, limit),
        Some("tun-read") => bench_model(args, limit),
        Some("datapaths" | "xdp-vhost") => {
            let repo =
                std::env::current_dir().map_err(|e| CliError(format!("current directory: {e}")))?;
            if !repo.join("scenarios/xdp/xdp_drop.o").exists() {
                return Err(CliError(format!(
                    "{}: no scenarios/xdp/xdp_drop.o here; run from the repository root",
                    repo.display()
                )));
            }
            let (js, text) =
                crate::bench::model::run(&repo, args.frames.unwrap_or(1_000_000), args.runs)?;
            if args.json {
                outln!("{js}")?;
            } else {
                out!("{text}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(CliError(format!(
            "--pipeline {other}: expected tun-read or datapaths (or none: time `skbsim replay`)"
        ))),
    }
}

/// `--pipeline tun-read`: the model next to raw pcap reads.
fn bench_model(args: &BenchArgs, limit: Limit) -> Result<ExitCode, CliError> {
    let scratch = Scratch::new(args.tmpdir.as_deref())?;
    let cap = Capture::prepare(args.input.as_deref(), limit, &scratch)?;
    let input = cap.path.clone();
    let file_bytes = cap.bytes;
    let hw = scenario(&input, true)?;
    let sw = scenario(&input, false)?;
    let pb = progress::bar((args.runs * 3) as u64, "bench");
    let (mut raw_t, mut hw_t, mut sw_t) = (Vec::new(), Vec::new(), Vec::new());
    let (mut frames, mut hw_ops, mut sw_ops) = (0, OpCounters::default(), OpCounters::default());
    for _ in 0..args.runs {
        if crate::bench::capture::interrupted() {
            return Err(CliError("interrupted".into()));
        }
        let t = Instant::now();
        frames = raw_read(&input)?.0;
        raw_t.push(t.elapsed().as_secs_f64());
        pb.inc(1);
        let t = Instant::now();
        hw_ops = sim_read(&hw)?.1;
        hw_t.push(t.elapsed().as_secs_f64());
        pb.inc(1);
        let t = Instant::now();
        sw_ops = sim_read(&sw)?.1;
        sw_t.push(t.elapsed().as_secs_f64());
        pb.inc(1);
    }
    // Peak RSS of the streaming replays, before the in-memory measurement loads frames.
    let rss = peak_rss_kib();
    let preload: Vec<sim::pcap::Frame> = PcapReader::open(&input)?
        .take(PRELOAD_FRAMES)
        .collect::<Result<_, _>>()?;
    let mut mem_fps = Vec::new();
    for _ in 0..args.runs {
        mem_fps.push(sim_in_memory(&hw, &preload, frames)?);
    }
    let mem = median(mem_fps);
    pb.finish_and_clear();
    let fps = |t: f64| frames as f64 / t;
    let (raw, hwf, swf) = (fps(median(raw_t)), fps(median(hw_t)), fps(median(sw_t)));
    let per = |x: u64| x as f64 / frames.max(1) as f64;
    if args.json {
        outln!(
            "{}",
            json!({
                "input": input, "frames": frames, "file_bytes": file_bytes, "runs": args.runs,
                "raw_read_fps": raw, "tun_read_hwaccel_fps": hwf, "tun_read_sw_insert_fps": swf,
                "sim_over_raw": hwf / raw, "tun_read_in_memory_fps": mem,
                "per_frame_ops": {
                    "hwaccel": {"memmoved": per(hw_ops.bytes_memmoved), "copied_to_user": per(hw_ops.bytes_copied_to_user), "allocations": per(hw_ops.allocations)},
                    "sw_insert": {"memmoved": per(sw_ops.bytes_memmoved), "copied_to_user": per(sw_ops.bytes_copied_to_user), "allocations": per(sw_ops.allocations)},
                },
                "peak_rss_kib": rss,
            })
        )?;
    } else {
        outln!(
            "input            {} ({frames} frames, {:.1} MB)",
            input.display(),
            file_bytes as f64 / 1e6
        )?;
        outln!("runs             {} (medians)", args.runs)?;
        outln!("raw pcap read    {:>8.2} M frames/s", raw / 1e6)?;
        outln!(
            "tun-read hwaccel {:>8.2} M frames/s  ({:.2} of raw)",
            hwf / 1e6,
            hwf / raw
        )?;
        outln!(
            "tun-read sw tag  {:>8.2} M frames/s  ({:.2} of hwaccel)",
            swf / 1e6,
            swf / hwf
        )?;
        outln!(
            "tun-read alone   {:>8.2} M frames/s  (frames preloaded in memory, no pcap read)",
            mem / 1e6
        )?;
        outln!(
            "per frame        hwaccel: memmoved {:.2} B, copied to user {:.1} B, allocs {:.2}",
            per(hw_ops.bytes_memmoved),
            per(hw_ops.bytes_copied_to_user),
            per(hw_ops.allocations)
        )?;
        outln!(
            "                 sw tag:  memmoved {:.2} B, copied to user {:.1} B, allocs {:.2}",
            per(sw_ops.bytes_memmoved),
            per(sw_ops.bytes_copied_to_user),
            per(sw_ops.allocations)
        )?;
        if let Some(k) = rss {
            outln!("peak RSS         {:.1} MiB", k as f64 / 1024.0)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Frames for the real bench: 802.1Q-tagged (vid 100) IPv4 UDP/TCP, the sizes of the
/// simulated mix (or one size), alternating UDP and TCP.
fn tap_frames(frame_size: Option<usize>) -> Result<Vec<Vec<u8>>, CliError> {
    let sizes: Vec<usize> = match frame_size {
        Some(s) if (60..=1514).contains(&s) => vec![s],
        Some(s) => {
            return Err(CliError(format!(
                "--frame-size {s}: must be 60..=1514 (the size before the 4-byte tag)"
            )))
        }
        None => SIZES.to_vec(),
    };
    let mut out = Vec::new();
    for (i, size) in sizes.iter().enumerate() {
        for tcp in [false, true] {
            let mut buf = Vec::new();
            frame_into(&mut buf, *size, true, tcp ^ (i % 2 == 1));
            out.push(buf);
        }
    }
    Ok(out)
}

/// Where the two samples (first frame read with the offload on and off) differ:
/// `(offset, on, off)`, plus the lengths.
fn byte_diff(on: &[u8], off: &[u8]) -> Vec<(usize, u8, u8)> {
    on.iter()
        .zip(off.iter())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i, *a, *b))
        .collect()
}

fn bench_tap(args: &BenchArgs) -> Result<ExitCode, CliError> {
    tap_ready("--backend tap")?;
    let frames = tap_frames(args.frame_size)?;
    let cfg = VlanBenchConfig {
        frames: args.frames.unwrap_or(200_000),
        runs: args.runs,
        ..VlanBenchConfig::default()
    };
    if cfg.frames == 0 {
        return Err(CliError("--frames must be at least 1".into()));
    }
    eprintln!(
        "real tap read path: {} runs x {} frames per mode, tx VLAN offload on and off alternating in {} slices per run",
        cfg.runs, cfg.frames, cfg.slices
    );
    let r = vlan_offload_bench(&frames, &cfg)
        .map_err(|e| CliError(format!("bench --backend tap: {e}")))?;
    let diff = byte_diff(&r.on.sample, &r.off.sample);
    let same_len = r.on.sample.len() == r.off.sample.len();
    let hexs = |v: &[u8]| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
    if args.json {
        outln!(
            "{}",
            json!({
                "backend": "tap",
                "frames_per_run": cfg.frames, "runs": cfg.runs, "batch": cfg.batch, "slices": cfg.slices,
                "distinct_frames": r.distinct_frames,
                "reader": {"no_pi": cfg.no_pi, "vnet_hdr_sz": cfg.vnet_hdr_sz},
                "offload_on": {"median_fps": r.on.median_fps, "runs_fps": r.on.runs_fps, "bytes_per_read": r.on.bytes_per_read},
                "offload_off": {"median_fps": r.off.median_fps, "runs_fps": r.off.runs_fps, "bytes_per_read": r.off.bytes_per_read},
                "on_over_off": r.ratio,
                "sample": {
                    "on": hexs(&r.on.sample), "off": hexs(&r.off.sample),
                    "same_length": same_len,
                    "differing_bytes": diff.iter().map(|(i, a, b)| json!({"offset": i, "on": a, "off": b})).collect::<Vec<_>>(),
                },
            })
        )?;
    } else {
        outln!(
            "frames           {} per run x {} runs per mode (medians), {} distinct 802.1Q frames",
            cfg.frames,
            cfg.runs,
            r.distinct_frames
        )?;
        outln!(
            "reader           tap {} vnet_hdr {}, batches of {}",
            if cfg.no_pi { "no_pi" } else { "pi" },
            cfg.vnet_hdr_sz,
            cfg.batch
        )?;
        let runs = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{:.3}", x / 1e6))
                .collect::<Vec<_>>()
                .join(" ")
        };
        outln!(
            "txvlan on        {:>8.3} M frames/s  (runs: {})",
            r.on.median_fps / 1e6,
            runs(&r.on.runs_fps)
        )?;
        outln!(
            "txvlan off       {:>8.3} M frames/s  (runs: {})",
            r.off.median_fps / 1e6,
            runs(&r.off.runs_fps)
        )?;
        outln!(
            "on / off         {:>8.3}  ({:+.1}%; the 2013 patch claimed +21%)",
            r.ratio,
            (r.ratio - 1.0) * 100.0
        )?;
        if diff.is_empty() && same_len {
            outln!("bytes read       identical with the offload on and off")?;
        } else {
            let shown: Vec<String> = diff
                .iter()
                .map(|(i, a, b)| format!("offset {i}: {a:#04x} on, {b:#04x} off"))
                .collect();
            outln!(
                "bytes read       {} of {} differ: {}{}",
                diff.len(),
                r.on.sample.len(),
                shown.join("; "),
                if same_len { "" } else { " (lengths differ)" }
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
