//! The GRO bench's streams and runs (`skbsim bench --pipeline datapaths`, and the frames
//! of the real GRO bench): TCP streams written into a plain IFF_NAPI tap, driven through
//! the one drive loop ([`sim::pipeline::drive`]) with nothing recorded.

use sim::gro::frames::{Outer, Tcp4};
use sim::gro::plan::GroPlan;
use sim::pipeline::drive::Frames;
use sim::pipeline::tap_gro::{GroCounts, GroEvent, TapGro};
use sim::pipeline::{drive, Input, Schedule};
use sim::profile::KernelProfile;

use crate::cli_error::CliError;

/// The bench's input streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchStream {
    /// One TCP flow, 1400-byte payloads (1454-byte frames).
    Tcp,
    /// The same flow inside GRE-TEB with a key (1496-byte frames).
    GreTeb,
    /// The same flow over IPv6 (1474-byte frames).
    Tcp6,
}

/// `n` frames of a bench stream (deterministic).
pub fn bench_frames(kind: BenchStream, n: usize) -> Vec<Vec<u8>> {
    let inner = Tcp4::default();
    (0..n)
        .map(|k| {
            let mut s = inner.clone();
            s.seq = s.seq.wrapping_add((k * s.payload) as u32);
            s.id = s.id.wrapping_add(k as u16);
            let f = s.build();
            match kind {
                BenchStream::Tcp => f,
                BenchStream::Tcp6 => s.build_v6(),
                BenchStream::GreTeb => {
                    let o = Outer {
                        id: 100u16.wrapping_add(k as u16),
                        ..Outer::default()
                    };
                    o.gre_teb(Some(42), None, &f)
                }
            }
        })
        .collect()
}

/// The plan the bench uses: 32 writes per NAPI poll (a vhost batch), no flush timeout.
pub fn bench_plan(profile: &KernelProfile, teb_gro: bool) -> GroPlan {
    GroPlan {
        burst: 32,
        teb_gro,
        ..GroPlan::defaults(&profile.gro)
    }
}

/// Run `frames` through GRO without recording skbs; `rounds` drives over the same
/// frames, each ended as an input ends (the last poll), with timestamps that keep
/// increasing 1 us apart. Returns the totals.
pub fn bench_run(
    profile: &KernelProfile,
    plan: &GroPlan,
    frames: &[Vec<u8>],
    rounds: usize,
) -> Result<GroCounts, CliError> {
    let mut run = TapGro::new(profile, plan);
    // Each event is handed back as soon as it comes: nothing is recorded.
    let mut discard = |_: &GroEvent| {};
    for round in 0..rounds {
        let first = (round * frames.len()) as u64;
        let inputs = (first..).zip(frames).map(|(i, f)| Input::Frame {
            index: i,
            ts_ns: 1_000_000_000 + i * 1000,
            bytes: f,
        });
        drive(
            &mut run,
            Schedule::Frames,
            &mut Frames::new(inputs),
            &mut discard,
        )
        .map_err(|e| match e {
            sim::pipeline::drive::DriveError::Pipeline(p) => CliError(format!("GRO bench: {p}")),
            sim::pipeline::drive::DriveError::Other(e) => e,
        })?;
    }
    Ok(run.counts)
}

/// Skbs the stack sees per MB (10^6 bytes) written, for a GRE-TEB TCP stream of
/// `segments` segments, with or without an ETH_P_TEB offload.
pub fn teb_skbs_per_mb(
    profile: &KernelProfile,
    teb_gro: bool,
    segments: usize,
) -> Result<f64, CliError> {
    let frames = bench_frames(BenchStream::GreTeb, segments);
    let c = bench_run(profile, &bench_plan(profile, teb_gro), &frames, 1)?;
    let written: usize = frames.iter().map(Vec::len).sum();
    Ok(c.skbs as f64 * 1e6 / written as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::profile::LINUX_6_18;

    #[test]
    fn teb_gro_off_delivers_every_frame_on_delivers_one_skb_per_poll() {
        // 1496-byte GRE-TEB frames (14 + 20 + 8 GRE with a key + 1454): off, net/ipv4/
        // gre_offload.c: gre_gro_receive finds no ETH_P_TEB offload and flushes every
        // frame, 10^6 / 1496 = 668.4 skbs per MB; on, one skb per 32-frame poll
        // (tun_napi_poll ends in napi_complete_done): 668.4 / 32 = 20.9.
        let off = teb_skbs_per_mb(&LINUX_6_18, false, 3200).expect("runs");
        let on = teb_skbs_per_mb(&LINUX_6_18, true, 3200).expect("runs");
        assert!((off - 1e6 / 1496.0).abs() < 0.01, "{off}");
        assert!((on - 1e6 / 1496.0 / 32.0).abs() < 0.01, "{on}");
    }

    #[test]
    fn rounds_continue_the_frame_numbers_and_each_ends_with_its_last_poll() {
        // 40 plain TCP segments, 32 writes per poll: each round is one poll of 32 and
        // the end's poll of 8, 2 skbs; 3 rounds, 120 frames, 6 skbs, 120 segments.
        let p = sim::profile::KernelProfile::default();
        let frames = bench_frames(BenchStream::Tcp, 40);
        let c = bench_run(&p, &bench_plan(&p, true), &frames, 3).expect("runs");
        assert_eq!((c.frames, c.skbs, c.segs), (120, 6, 120));
    }
}
