//! `skbsim bench --backend tap --pipeline gro`: real frames/s written into an `IFF_NAPI`
//! tap for one plain TCP stream (the simulator's bench stream: 1454-byte frames, 1400
//! bytes of payload, 1000 consecutive segments cycled), with GRO on and off, and the skbs
//! the stack got per MB written, in one run (modes alternate in slices), medians of
//! `--runs`, for two stacks: one that drops every skb at `ip_rcv` (the least per-skb
//! work) and one that delivers to a local address with no listener (a RST per skb). See
//! `skbsim_kernel::arm::tap_gro::gro_bench` for the modes.

use std::process::ExitCode;

use crate::bench::gro_model::{bench_frames, BenchStream};
use serde_json::json;
use skbsim_kernel::arm::tap_gro::{gro_bench, BenchStack, GroBench, GroBenchConfig, GroModeResult};

use crate::bench::BenchArgs;
use crate::cli_error::CliError;
use crate::outln;
use crate::runner::tap_ready;

/// Distinct segments cycled through.
const STREAM_SEGMENTS: usize = 1000;

/// Run the real GRO bench for both stacks and print it (text or `--json`).
pub fn bench(args: &BenchArgs) -> Result<ExitCode, CliError> {
    tap_ready("--backend tap")?;
    let base = GroBenchConfig {
        frames: args.frames.unwrap_or(200_000),
        runs: args.runs,
        ..GroBenchConfig::default()
    };
    if base.frames == 0 {
        return Err(CliError("--frames must be at least 1".into()));
    }
    let frames = bench_frames(BenchStream::Tcp, STREAM_SEGMENTS);
    eprintln!(
        "real IFF_NAPI tap, plain TCP stream: {} runs x {} frames per mode, modes alternating in {} slices per run, two stacks",
        base.runs, base.frames, base.slices
    );
    let mut results = Vec::new();
    for stack in [BenchStack::OtherHost, BenchStack::LocalTcp] {
        let cfg = GroBenchConfig {
            stack,
            ..base.clone()
        };
        let r = gro_bench(&frames, &cfg).map_err(|e| {
            CliError(format!(
                "bench --backend tap --pipeline gro ({}): {e}",
                stack.name()
            ))
        })?;
        results.push(r);
    }
    if args.json {
        print_json(&results, &base, &frames)?;
    } else {
        print_text(&results, &base, &frames)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A mode's rate over the same stack's GRO-off mode.
fn ratio(r: &GroBench, m: &GroModeResult) -> Option<f64> {
    r.modes
        .iter()
        .find(|x| !x.gro)
        .map(|o| m.median_fps / o.median_fps.max(1e-9))
}

fn print_json(
    results: &[GroBench],
    base: &GroBenchConfig,
    frames: &[Vec<u8>],
) -> Result<(), CliError> {
    let stacks: Vec<_> = results
        .iter()
        .map(|r| {
            json!({
                "stack": r.stack.name(),
                "modes": r.modes.iter().map(|m| json!({
                    "label": m.label, "gro": m.gro, "flush_timeout_ns": m.flush_timeout_ns,
                    "median_fps": m.median_fps, "runs_fps": m.runs_fps,
                    "frames_written": m.frames, "bytes_written": m.bytes,
                    "skbs": m.skbs, "skbs_per_mb": m.skbs_per_mb,
                    "frames_per_skb": m.frames as f64 / m.skbs.max(1) as f64,
                    "over_gro_off": ratio(r, m),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    outln!(
        "{}",
        json!({
            "backend": "tap",
            "pipeline": "gro",
            "frames_per_run": base.frames, "runs": base.runs, "slices": base.slices,
            "warmup": base.warmup,
            "stream": {"frame_len": frames[0].len(), "distinct_frames": frames.len()},
            "stacks": stacks,
        })
    )?;
    Ok(())
}

fn print_text(
    results: &[GroBench],
    base: &GroBenchConfig,
    frames: &[Vec<u8>],
) -> Result<(), CliError> {
    outln!(
        "stream   {} distinct {}-byte segments of one TCP flow, cycled; {} frames per run x {} runs per mode (medians)",
        frames.len(),
        frames[0].len(),
        base.frames,
        base.runs
    )?;
    for r in results {
        outln!(
            "stack    {}",
            match r.stack {
                BenchStack::OtherHost =>
                    "otherhost: ip_rcv drops every skb (frames for another MAC)",
                BenchStack::LocalTcp =>
                    "local-tcp: to a local address, no listener: TCP lookup and a RST per skb",
            }
        )?;
        for m in &r.modes {
            let runs: Vec<String> = m
                .runs_fps
                .iter()
                .map(|x| format!("{:.3}", x / 1e6))
                .collect();
            let vs = ratio(r, m)
                .map(|x| format!(" ({x:.2}x gro off)"))
                .unwrap_or_default();
            outln!(
                "  {:<38} {:>7.3} M frames/s{vs}  runs: {}",
                m.label,
                m.median_fps / 1e6,
                runs.join(" ")
            )?;
            outln!(
                "  {:<38} {:>7.1} skbs per MB, {:.1} frames per skb",
                "",
                m.skbs_per_mb,
                m.frames as f64 / m.skbs.max(1) as f64
            )?;
        }
    }
    Ok(())
}
