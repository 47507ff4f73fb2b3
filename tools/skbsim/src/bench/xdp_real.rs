//! `skbsim bench --backend tap --pipeline xdp-tx`: real frames/s of XDP_TX on a tap, the
//! same program (scenarios/xdp/xdp_tx.o through skbsim's ELF loader) attached native
//! (`XDP_FLAGS_DRV_MODE`, non-blocking writes: tun_build_skb, `tun_xdp_xmit`) and generic
//! (`XDP_FLAGS_SKB_MODE`: an skb, `do_xdp_generic`, `generic_xdp_tx`), each frame
//! written and read back on the same non-blocking `IFF_NO_PI` fd, 64-byte and 1500-byte
//! frames (or `--frame-size`), modes and sizes alternating in slices of each run, medians
//! of `--runs`. 59655a5b6c83 ("tuntap: XDP_TX can use native XDP", v4.17) claimed about
//! +20% (1.5 to 1.8 Mpps) for the native path. See
//! `skbsim_kernel::arm::tap_write::xdp_tx_bench`.

use std::process::ExitCode;

use serde_json::json;
use skbsim_kernel::arm::tap_write::{xdp_tx_bench, xdp_tx_program, XdpTxBenchConfig};
use skbsim_kernel::LinkStats;

use crate::bench::BenchArgs;
use crate::cli_error::CliError;
use crate::outln;
use crate::runner::tap_ready;

/// Frame sizes measured by default (bytes written and read back).
pub const SIZES: [usize; 2] = [64, 1500];
/// The largest frame tun_build_skb takes natively on 6.18 (docs/tap-write.md#path-choice).
pub const MAX_NATIVE: usize = 3456;

/// An IPv4/UDP frame of exactly `size` bytes (02:..:01 > 02:..:02, 10.0.0.1:5000 >
/// 10.0.0.2:5001), payload bytes counting up.
pub fn udp_frame(size: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len = (size - 14) as u16;
    let ip = [
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        1,
        0x40,
        0,
        64,
        17,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ];
    f.extend_from_slice(&ip);
    let udp_len = ip_len - 20;
    f.extend_from_slice(&[0x13, 0x88, 0x13, 0x89]);
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    let mut i = 0u8;
    while f.len() < size {
        f.push(i);
        i = i.wrapping_add(1);
    }
    f
}

fn counters(s: &LinkStats) -> serde_json::Value {
    json!({
        "rx_packets": s.rx_packets, "rx_bytes": s.rx_bytes, "rx_dropped": s.rx_dropped,
        "tx_packets": s.tx_packets, "tx_bytes": s.tx_bytes, "tx_dropped": s.tx_dropped,
    })
}

/// Run the real XDP_TX bench and print it (text or `--json`).
pub fn bench(args: &BenchArgs) -> Result<ExitCode, CliError> {
    tap_ready("--backend tap")?;
    let repo = std::env::current_dir().map_err(|e| CliError(format!("current directory: {e}")))?;
    if !repo.join("scenarios/xdp/xdp_tx.o").exists() {
        return Err(CliError(format!(
            "{}: no scenarios/xdp/xdp_tx.o here; run from the repository root",
            repo.display()
        )));
    }
    let prog = xdp_tx_program(&repo).map_err(CliError)?;
    let sizes: Vec<usize> = match args.frame_size {
        Some(s) if (42..=MAX_NATIVE).contains(&s) => vec![s],
        Some(s) => {
            return Err(CliError(format!(
                "--frame-size {s}: must be 42..={MAX_NATIVE} (an IPv4/UDP frame that tun_build_skb takes natively)"
            )))
        }
        None => SIZES.to_vec(),
    };
    let frames: Vec<Vec<u8>> = sizes.iter().map(|&s| udp_frame(s)).collect();
    let cfg = XdpTxBenchConfig {
        frames: args.frames.unwrap_or(200_000),
        runs: args.runs,
        ..XdpTxBenchConfig::default()
    };
    if cfg.frames == 0 {
        return Err(CliError("--frames must be at least 1".into()));
    }
    eprintln!(
        "real tap, XDP_TX native vs generic: {} runs x {} frames per size and mode, alternating in {} slices per run",
        cfg.runs, cfg.frames, cfg.slices
    );
    let r = xdp_tx_bench(&prog, &frames, &cfg)
        .map_err(|e| CliError(format!("bench --backend tap --pipeline xdp-tx: {e}")))?;
    if args.json {
        outln!(
            "{}",
            json!({
                "backend": "tap",
                "pipeline": "xdp-tx",
                "program": {"file": "scenarios/xdp/xdp_tx.o", "insns": prog.len()},
                "frames_per_run": cfg.frames, "runs": cfg.runs, "slices": cfg.slices,
                "warmup": cfg.warmup,
                "attached": {"native": format!("{:?}", r.attached.0), "generic": format!("{:?}", r.attached.1)},
                "sizes": r.sizes.iter().map(|s| json!({
                    "frame_len": s.size,
                    "native": {"median_fps": s.native_fps, "runs_fps": s.native_runs, "counters": counters(&s.native_stats)},
                    "generic": {"median_fps": s.generic_fps, "runs_fps": s.generic_runs, "counters": counters(&s.generic_stats)},
                    "native_over_generic": s.ratio,
                })).collect::<Vec<_>>(),
                "claimed_2018": {"commit": "59655a5b6c83", "native_over_generic": 1.2},
            })
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "program          scenarios/xdp/xdp_tx.o ({} insns, skbsim's ELF loader), attached {:?} and {:?}",
        prog.len(),
        r.attached.0,
        r.attached.1
    )?;
    outln!(
        "frames           {} per run x {} runs per size and mode (medians), write + read back on one non-blocking IFF_NO_PI fd",
        cfg.frames, cfg.runs
    )?;
    let runs = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{:.3}", x / 1e6))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for s in &r.sizes {
        outln!(
            "{:>5} B native   {:>8.3} M frames/s  (runs: {})",
            s.size,
            s.native_fps / 1e6,
            runs(&s.native_runs)
        )?;
        outln!(
            "{:>5} B generic  {:>8.3} M frames/s  (runs: {})",
            s.size,
            s.generic_fps / 1e6,
            runs(&s.generic_runs)
        )?;
        outln!(
            "{:>5} B native / generic {:>6.3}  ({:+.1}%)",
            s.size,
            s.ratio,
            (s.ratio - 1.0) * 100.0
        )?;
    }
    outln!("59655a5b6c83 (2018, v4.17) claimed about +20% (1.5 -> 1.8 Mpps) for native XDP_TX")?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_asked_length_and_consistent_headers() {
        for size in [42, 64, 1500, MAX_NATIVE] {
            let f = udp_frame(size);
            assert_eq!(f.len(), size);
            assert_eq!(u16::from_be_bytes([f[16], f[17]]) as usize, size - 14);
            assert_eq!(u16::from_be_bytes([f[38], f[39]]) as usize, size - 34);
        }
    }
}
