//! Simulator benchmarks of GRO, the XDP write path and vhost_net batching: frames kept in
//! memory, so the numbers are the model's own cost. Medians of several runs.

use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};
use sim::pipeline::drive::{DriveError, Frames};
use sim::pipeline::tap_write::{TapWriteRun, WriteEvent};
use sim::pipeline::vhost_tx::{VhostTxEvent, VhostTxRun};
use sim::pipeline::{drive, Input, Schedule};
use sim::scenario::Scenario;
use sim::vhost::VhostOps;

use crate::cli_error::CliError;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A 64-byte IPv4/UDP frame (the classic pps size).
fn frame64() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[
        0x45, 0, 0, 50, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    f.extend_from_slice(&[0x13, 0x88, 0x13, 0x89, 0, 30, 0, 0]);
    f.resize(64, 0xab);
    f
}

fn scenario(repo: &Path, text: &str) -> Result<Scenario, CliError> {
    // Program paths resolve against scenarios/xdp/, where the objects are.
    Ok(Scenario::parse(
        &repo.join("scenarios/xdp/bench.toml"),
        text,
    )?)
}

/// Frames/s of a tap-write run with `prog` attached natively, nonblocking writes, the
/// reader draining A after each write.
pub fn xdp_write_fps(repo: &Path, prog: &str, frames: u64, runs: usize) -> Result<f64, CliError> {
    let s = scenario(
        repo,
        &format!(
            "description = \"bench\"\ninput = \"none.pcap\"\npipeline = \"tap-write\"\n[device]\nno_pi = true\n[writer]\nnonblocking = true\n[xdp]\nprogram = \"{prog}.o\"\nmode = \"native\"\n[reader]\nbuffers = [2048]\n"
        ),
    )?;
    let f = frame64();
    let mut rates = Vec::new();
    for _ in 0..runs {
        let mut run = TapWriteRun::new(&s).map_err(|e| CliError(e.0))?;
        let mut n = 0u64;
        let mut count = |_e: &WriteEvent| n += 1;
        let t = Instant::now();
        drive(
            &mut run,
            Schedule::for_scenario(&s),
            &mut same_frame(&f, frames),
            &mut count,
        )
        .map_err(bench_error)?;
        rates.push(frames as f64 / t.elapsed().as_secs_f64());
    }
    Ok(median(rates))
}

/// `n` inputs of the same frame, numbered and timed 0, 1, 2, ... (in memory).
fn same_frame(f: &[u8], n: u64) -> Frames<'_, impl Iterator<Item = Input<'_>>> {
    Frames::new((0..n).map(move |i| Input::Frame {
        index: i,
        ts_ns: i,
        bytes: f,
    }))
}

/// A bench run's error: the pipeline's, or nothing else (frames in memory).
pub fn bench_error(e: DriveError<CliError>) -> CliError {
    match e {
        DriveError::Pipeline(p) => CliError(p.why),
        DriveError::Other(e) => e,
    }
}

/// Packets/s and op counts of a guest sending through vhost_net into a tap with
/// XDP_DROP, under `profile` (batching or not), in bursts of 256 descriptors.
pub fn vhost_drop(
    repo: &Path,
    profile: &str,
    packets: u64,
    runs: usize,
) -> Result<(f64, VhostOps), CliError> {
    let s = scenario(
        repo,
        &format!(
            "description = \"bench\"\ninput = \"none.pcap\"\npipeline = \"vhost-tx\"\nprofile = \"{profile}\"\n[xdp]\nprogram = \"xdp_drop.o\"\nmode = \"native\"\n[vhost]\nhdr_len = 12\nfill = \"burst\"\nburst = 256\n"
        ),
    )?;
    let f = frame64();
    let mut rates = Vec::new();
    let mut ops = VhostOps::default();
    for _ in 0..runs {
        let mut run = VhostTxRun::new(&s).map_err(|e| CliError(e.0))?;
        let mut discard = |_e: &VhostTxEvent| {};
        let t = Instant::now();
        drive(
            &mut run,
            Schedule::for_scenario(&s),
            &mut same_frame(&f, packets),
            &mut discard,
        )
        .map_err(bench_error)?;
        rates.push(packets as f64 / t.elapsed().as_secs_f64());
        ops = run.ops();
    }
    Ok((median(rates), ops))
}

/// GRO frames/s for a plain TCP, a GRE-TEB and an IPv6 TCP stream (32 writes per NAPI
/// poll), and the skbs the stack sees per MB of a GRE-TEB stream with and without the
/// ETH_P_TEB offload.
pub fn gro(frames: u64, runs: usize) -> Result<(f64, f64, f64, f64, f64), CliError> {
    use crate::bench::gro_model::{
        bench_frames, bench_plan, bench_run, teb_skbs_per_mb, BenchStream,
    };
    let p = sim::profile::KernelProfile::default();
    let rate = |kind: BenchStream| {
        let fs = bench_frames(kind, 1000);
        let rounds = (frames / 1000).max(1) as usize;
        let plan = bench_plan(&p, true);
        let mut v = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            bench_run(&p, &plan, &fs, rounds)?;
            v.push((rounds * fs.len()) as f64 / t.elapsed().as_secs_f64());
        }
        Ok::<f64, CliError>(median(v))
    };
    Ok((
        rate(BenchStream::Tcp)?,
        rate(BenchStream::GreTeb)?,
        rate(BenchStream::Tcp6)?,
        teb_skbs_per_mb(&p, false, 10_000)?,
        teb_skbs_per_mb(&p, true, 10_000)?,
    ))
}

fn per(ops: &VhostOps, n: u64) -> Value {
    let p = |x: u64| x as f64 / n.max(1) as f64;
    json!({
        "sendmsg": p(ops.sendmsg_batched + ops.sendmsg_single),
        "xdp_do_flush": p(ops.xdp_flushes),
        "used_updates": p(ops.used_updates),
        "signals": p(ops.signals),
        "bytes_copied": p(ops.bytes_copied),
        "page_puts": p(ops.page_puts),
    })
}

/// Run both benchmarks; print them for people or return JSON.
pub fn run(repo: &Path, frames: u64, runs: usize) -> Result<(Value, String), CliError> {
    let tx = xdp_write_fps(repo, "xdp_tx", frames, runs)?;
    let drop = xdp_write_fps(repo, "xdp_drop", frames, runs)?;
    let (on, on_ops) = vhost_drop(repo, "linux-6.18", frames, runs)?;
    let (off, off_ops) = vhost_drop(repo, "linux-4.19", frames, runs)?;
    let (gro_tcp, gro_teb, gro_tcp6, teb_off, teb_on) = gro(frames, runs)?;
    let js = json!({
        "gro_tcp_fps": gro_tcp, "gro_gre_teb_fps": gro_teb, "gro_tcp6_fps": gro_tcp6,
        "gro_tcp6_over_tcp": gro_tcp6 / gro_tcp,
        "gre_teb_skbs_per_mb": {"teb_gro_off": teb_off, "teb_gro_on": teb_on},
        "frames": frames, "runs": runs,
        "xdp_tx_native_write_fps": tx, "xdp_drop_native_write_fps": drop,
        "vhost_xdp_drop_batched_pps": on, "vhost_xdp_drop_per_packet_pps": off,
        "vhost_sim_speed_batched_over_per_packet": on / off,
        "vhost_per_packet_ops": {"batched": per(&on_ops, frames), "per_packet": per(&off_ops, frames)},
    });
    let p = |o: &VhostOps| {
        let n = frames.max(1) as f64;
        format!(
            "sendmsg {:.4}, used updates {:.4}, signals {:.4}, page puts {:.4}",
            (o.sendmsg_batched + o.sendmsg_single) as f64 / n,
            o.used_updates as f64 / n,
            o.signals as f64 / n,
            o.page_puts as f64 / n
        )
    };
    let text = format!(
        "GRO (simulated, 32 writes per NAPI poll)\n  plain TCP {:>8.2} M frames/s\n  GRE-TEB   {:>8.2} M frames/s\n  TCP/IPv6  {:>8.2} M frames/s ({:.0}% of IPv4)\n  GRE-TEB skbs up the stack per MB: {:.1} with teb_gro off, {:.1} on ({:.1}x fewer)\nxdp write path (simulated, 64 B frames, native, eBPF interpreter)\n  XDP_TX   {:>8.2} M frames/s (write + read back)\n  XDP_DROP {:>8.2} M frames/s\nvhost_net -> tap, XDP_DROP (simulated, bursts of 256; the rates are the simulator's speed,\nthe per-packet counts are the modelled kernel work)\n  batched (6.18)      {:>8.2} M packets/s  per packet: {}\n  per packet (4.19)   {:>8.2} M packets/s  per packet: {}\n  sendmsg calls per packet: {:.0}x fewer with batching\n",
        gro_tcp / 1e6,
        gro_teb / 1e6,
        gro_tcp6 / 1e6,
        100.0 * gro_tcp6 / gro_tcp,
        teb_off,
        teb_on,
        teb_off / teb_on,
        tx / 1e6,
        drop / 1e6,
        on / 1e6,
        p(&on_ops),
        off / 1e6,
        p(&off_ops),
        (off_ops.sendmsg_batched + off_ops.sendmsg_single) as f64
            / (on_ops.sendmsg_batched + on_ops.sendmsg_single).max(1) as f64
    );
    Ok((js, text))
}
