//! `skbsim bench`: simulated frames/s through the tun read path next to raw pcap read
//! frames/s, measured in the same run on the same generated pcap, as medians of several
//! runs; and the op counts of the 2013 change (hw-accel splice vs software tag insert).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use serde_json::json;
use sim::pcap::{PcapFormat, PcapReader, PcapWriter};
use sim::pipeline::tun_read::{Event, TunReadRun};
use sim::scenario::Scenario;
use sim::skb::OpCounters;

use crate::cli_error::CliError;
use crate::progress;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Frames in the generated pcap.
    #[arg(long, default_value_t = 1_000_000)]
    pub frames: u64,
    /// Runs per measurement; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Use this pcap instead of generating one.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Print results as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A deterministic mix: sizes 60..1514, a third 802.1Q-tagged, IPv4 UDP/TCP.
fn generate(path: &Path, frames: u64) -> Result<(), CliError> {
    const SIZES: [usize; 8] = [60, 64, 128, 256, 590, 1024, 1280, 1514];
    let mut w = PcapWriter::create(path, PcapFormat::Pcap)?;
    let mut seed: u64 = 0x5eed;
    let mut buf = Vec::with_capacity(1600);
    for i in 0..frames {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let size = SIZES[(seed >> 33) as usize % SIZES.len()];
        let tagged = (seed >> 40) % 3 == 0;
        let tcp = (seed >> 45) & 1 == 1;
        buf.clear();
        buf.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        if tagged {
            buf.extend_from_slice(&[0x81, 0x00, 0x00, 0x64]);
        }
        buf.extend_from_slice(&[0x08, 0x00]);
        let ip_len = (size - 14) as u16;
        let proto = if tcp { 6 } else { 17 };
        buf.extend_from_slice(&[0x45, 0, (ip_len >> 8) as u8, ip_len as u8, 0, 1, 0x40, 0, 64, proto, 0, 0]);
        buf.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        if tcp {
            buf.extend_from_slice(&[0x03, 0xe8, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0x02, 0, 0, 0, 0, 0]);
        } else {
            let l = ip_len - 20;
            buf.extend_from_slice(&[0x13, 0x88, 0, 53, (l >> 8) as u8, l as u8, 0, 0]);
        }
        let target = size + if tagged { 4 } else { 0 };
        buf.resize(target, 0xab);
        w.write_frame(1_000_000_000 + i * 1000, &buf)?;
    }
    w.finish()?;
    Ok(())
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
    let mut r = PcapReader::open(&s.input)?;
    let mut run = TunReadRun::new(s);
    run.record_bytes = false;
    let mut reads = 0u64;
    let mut sink = |e: Event| {
        if matches!(e, Event::Read(_)) {
            reads += 1;
        }
    };
    while let Some(f) = r.next_frame() {
        let f = f?;
        run.frame(f.index, f.ts_ns, f.data, &mut sink)
            .map_err(|e| CliError(format!("{}: {}", s.input.display(), e.0)))?;
    }
    run.finish(&mut sink);
    Ok((reads, run.ops))
}

/// Frames kept in memory for the simulator-only measurement (about 15 MB of a mixed
/// capture), replayed in a cycle.
const PRELOAD_FRAMES: usize = 20_000;

/// The simulator alone: frames already in memory, so no pcap parsing or page-cache copy.
fn sim_in_memory(s: &Scenario, frames: &[sim::pcap::Frame], total: u64) -> Result<f64, CliError> {
    let mut run = TunReadRun::new(s);
    run.record_bytes = false;
    let mut sink = |_e: Event| {};
    let t = Instant::now();
    for i in 0..total {
        let f = &frames[(i % frames.len() as u64) as usize];
        run.frame(i, f.ts_ns, &f.data, &mut sink)
            .map_err(|e| CliError(format!("{}: {}", s.input.display(), e.0)))?;
    }
    run.finish(&mut sink);
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
    let input = match &args.input {
        Some(p) => p.clone(),
        None => {
            let p = std::env::temp_dir().join(format!("skbsim-bench-{}.pcap", args.frames));
            if !p.exists() {
                eprintln!("generating {} frames into {}", args.frames, p.display());
                generate(&p, args.frames)?;
            }
            p
        }
    };
    let file_bytes = std::fs::metadata(&input)
        .map_err(|e| CliError(format!("{}: {e}", input.display())))?
        .len();
    let hw = scenario(&input, true)?;
    let sw = scenario(&input, false)?;
    let pb = progress::bar((args.runs * 3) as u64, "bench");
    let (mut raw_t, mut hw_t, mut sw_t) = (Vec::new(), Vec::new(), Vec::new());
    let (mut frames, mut hw_ops, mut sw_ops) = (0, OpCounters::default(), OpCounters::default());
    for _ in 0..args.runs {
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
        println!(
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
        );
    } else {
        println!("input            {} ({frames} frames, {:.1} MB)", input.display(), file_bytes as f64 / 1e6);
        println!("runs             {} (medians)", args.runs);
        println!("raw pcap read    {:>8.2} M frames/s", raw / 1e6);
        println!("tun-read hwaccel {:>8.2} M frames/s  ({:.2} of raw)", hwf / 1e6, hwf / raw);
        println!("tun-read sw tag  {:>8.2} M frames/s  ({:.2} of hwaccel)", swf / 1e6, swf / hwf);
        println!("tun-read alone   {:>8.2} M frames/s  (frames preloaded in memory, no pcap read)", mem / 1e6);
        println!(
            "per frame        hwaccel: memmoved {:.2} B, copied to user {:.1} B, allocs {:.2}",
            per(hw_ops.bytes_memmoved),
            per(hw_ops.bytes_copied_to_user),
            per(hw_ops.allocations)
        );
        println!(
            "                 sw tag:  memmoved {:.2} B, copied to user {:.1} B, allocs {:.2}",
            per(sw_ops.bytes_memmoved),
            per(sw_ops.bytes_copied_to_user),
            per(sw_ops.allocations)
        );
        if let Some(k) = rss {
            println!("peak RSS         {:.1} MiB", k as f64 / 1024.0);
        }
    }
    Ok(ExitCode::SUCCESS)
}
