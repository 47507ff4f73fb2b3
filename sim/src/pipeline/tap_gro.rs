//! The `tap-gro` pipeline: frames written into an IFF_NAPI tap (docs/gro.md#tun-napi).
//! tun_get_user queues each skb on tfile->sk.sk_write_queue; after every `[gro] burst` writes (or
//! when more than NAPI_POLL_WEIGHT are queued) the softirq runs tun_napi_poll, which
//! feeds up to 64 skbs to napi_gro_receive and ends in napi_complete_done; a
//! gro_flush_timeout keeps young skbs held until the hrtimer fires. What comes out is
//! what the stack (and an AF_PACKET socket on the tap) sees.
//!
//! Frames are written without a vnet header: CHECKSUM_NONE, so GRO verifies every
//! checksum in software (`[gro] needs_csum` models NEEDS_CSUM instead).

use crate::gro::napi::{Delivered, Napi};
use crate::gro::plan::GroPlan;
use crate::gro::{GroConfig, GroSkb, NAPI_POLL_WEIGHT};
use crate::profile::KernelProfile;
use crate::scenario::Scenario;
use crate::skb::IpSummed;

use super::frame_meta::RecipeError;

/// What `run_tap_gro` returns: the text trace and the frames as the stack sees them.
#[derive(Debug, Clone)]
pub struct GroRunOutput {
    pub trace: String,
    pub delivered: Vec<(u64, Vec<u8>)>,
}

/// A write() that tun_get_user refused (EINVAL: shorter than ETH_HLEN); nothing counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteError {
    pub frame: u64,
    pub ts_ns: u64,
    pub len: usize,
}

/// The tap's receive counters (tun_get_user: rx_packets/rx_bytes per accepted write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TapStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
}

/// Totals of a run, kept even when skbs are not recorded (the bench).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BenchCounts {
    pub frames: u64,
    pub skbs: u64,
    pub bytes: u64,
    pub segs: u64,
}

/// One run of the pipeline.
#[derive(Debug)]
pub struct TapGroRun {
    pub cfg: GroConfig,
    pub plan: GroPlan,
    pub napi: Napi,
    pending: usize,
    last_ts: u64,
    pub stats: TapStats,
    pub write_errors: Vec<WriteError>,
    /// Keep every delivered skb (trace and pcap); off for the bench.
    pub record: bool,
    pub delivered: Vec<Delivered>,
    pub counts: BenchCounts,
    pool: Vec<Vec<u8>>,
    /// The tunnel devices' gro_cells after the stack ([`GroPlan::cells`]).
    pub cells: Option<crate::gro::cells::GroCells>,
}

const ETH_HLEN: usize = 14;

impl TapGroRun {
    pub fn new(profile: &KernelProfile, plan: &GroPlan) -> TapGroRun {
        TapGroRun {
            cfg: plan.config(profile.gro),
            plan: plan.clone(),
            napi: Napi::new(plan.flush_timeout_ns, u64::from(plan.hz)),
            pending: 0,
            last_ts: 0,
            stats: TapStats::default(),
            write_errors: Vec::new(),
            record: true,
            delivered: Vec::new(),
            counts: BenchCounts::default(),
            pool: Vec::new(),
            cells: plan
                .cells()
                .then(|| crate::gro::cells::GroCells::new(plan.tap_observer, u64::from(plan.hz))),
        }
    }

    /// write(fd, frame) at `ts_ns`: tun_get_user, then the NAPI poll when due.
    pub fn write(&mut self, index: u64, ts_ns: u64, frame: Vec<u8>) {
        self.last_ts = self.last_ts.max(ts_ns);
        if frame.len() < ETH_HLEN {
            // tun_get_user: a tap frame needs ETH_HLEN bytes; -EINVAL, nothing counted.
            self.write_errors.push(WriteError {
                frame: index,
                ts_ns,
                len: frame.len(),
            });
            return;
        }
        self.counts.frames += 1;
        self.stats.rx_packets += 1;
        self.stats.rx_bytes += frame.len() as u64;
        let mut skb = GroSkb::new(index, ts_ns, frame);
        skb.protocol = crate::ethernet::type_trans(&skb.data);
        // tun_build_skb (page-frag head) only for non-blocking writes that fit.
        skb.head_frag = self.plan.nonblocking
            && self
                .cfg
                .rules
                .tun_build_skb_max
                .is_some_and(|m| skb.len <= m);
        if self.plan.needs_csum {
            if let Some(th) = innermost_tcp(&skb.data, &self.cfg.vxlan_ports) {
                skb.ip_summed = IpSummed::Partial;
                skb.csum_start = th;
                skb.csum_offset = 16;
            }
        }
        self.napi.queue.push_back(skb);
        self.pending += 1;
        // IFF_NAPI: napi_schedule unless MSG_MORE with <= NAPI_POLL_WEIGHT queued; the
        // softirq runs when the write re-enables bottom halves.
        if self.pending >= self.plan.burst || self.napi.queue.len() > NAPI_POLL_WEIGHT {
            self.pending = 0;
            self.napi.poll(&self.cfg, ts_ns);
            self.collect();
        }
    }

    /// [`TapGroRun::write`] from a borrowed frame (copied into a recycled buffer, as
    /// tun_get_user copies from userspace).
    pub fn write_slice(&mut self, index: u64, ts_ns: u64, frame: &[u8]) {
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        self.write(index, ts_ns, buf);
    }

    /// End of input: the last burst is polled and a pending hrtimer fires.
    pub fn finish(&mut self) {
        if self.pending > 0 || !self.napi.queue.is_empty() {
            self.pending = 0;
            self.napi.poll(&self.cfg, self.last_ts);
        }
        self.napi.finish(&self.cfg);
        self.collect();
    }

    /// Give a delivered skb's buffers back for later writes (a streamed run renders each
    /// delivery, then recycles it).
    pub fn recycle(&mut self, d: Delivered) {
        let GroSkb { data, segs, .. } = d.skb;
        self.pool.push(data);
        self.pool.extend(segs.into_iter().map(|s| s.bytes));
    }

    fn collect(&mut self) {
        if let Some(c) = &mut self.cells {
            c.after_tap_polls(&self.cfg, &self.napi.rx);
        }
        for d in self.napi.rx.drain(..) {
            self.counts.skbs += 1;
            self.counts.bytes += d.skb.len as u64;
            self.counts.segs += u64::from(d.skb.cb.count);
            if self.record {
                self.delivered.push(d);
            } else {
                let GroSkb { data, segs, .. } = d.skb;
                self.pool.push(data);
                self.pool.extend(segs.into_iter().map(|s| s.bytes));
            }
        }
    }
}

/// The innermost TCP header (NEEDS_CSUM's csum_start): Ethernet, IPv4 or IPv6 (no
/// extension headers), then through GRE-TEB or VXLAN (to a VXLAN port) to the inner
/// Ethernet/IP/TCP.
pub fn innermost_tcp(f: &[u8], vxlan_ports: &[u16]) -> Option<usize> {
    let be16 = |o: usize| f.get(o..o + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let mut off = 0;
    for _ in 0..2 {
        let ip = off + ETH_HLEN;
        let (l4, proto) = match be16(off + 12)? {
            0x0800 => (ip + usize::from(*f.get(ip)? & 0x0f) * 4, *f.get(ip + 9)?),
            0x86dd => (ip + 40, *f.get(ip + 6)?),
            _ => return None,
        };
        match proto {
            6 => return Some(l4),
            17 if vxlan_ports.contains(&be16(l4 + 2)?) => off = l4 + 16,
            47 if be16(l4 + 2)? == 0x6558 => {
                let flags = be16(l4)?;
                off = l4
                    + 4
                    + 4 * (usize::from(flags & 0x8000 != 0)
                        + usize::from(flags & 0x2000 != 0)
                        + usize::from(flags & 0x1000 != 0));
            }
            _ => return None,
        }
    }
    None
}

/// Replay `frames` (input index, timestamp, bytes) through the scenario's tap-gro path.
pub fn run_tap_gro(
    scenario: &Scenario,
    frames: impl Iterator<Item = (u64, u64, Vec<u8>)>,
) -> Result<GroRunOutput, RecipeError> {
    let mut run = TapGroRun::new(&scenario.profile, &scenario.gro);
    for (index, ts, data) in frames {
        run.write(index, ts, data);
    }
    run.finish();
    let trace = crate::trace::gro::render_tap_gro(scenario, &run);
    let delivered = run
        .delivered
        .iter()
        .map(|d| (d.ts_ns, d.skb.to_vec()))
        .collect();
    Ok(GroRunOutput { trace, delivered })
}

/// The bench's input streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchStream {
    /// One TCP flow, 1400-byte payloads (1454-byte frames).
    Tcp,
    /// The same flow inside GRE-TEB with a key (1492-byte frames).
    GreTeb,
}

/// `n` frames of a bench stream (deterministic).
pub fn bench_frames(kind: BenchStream, n: usize) -> Vec<Vec<u8>> {
    use crate::gro::frames::{Outer, Tcp4};
    let inner = Tcp4::default();
    (0..n)
        .map(|k| {
            let mut s = inner.clone();
            s.seq = s.seq.wrapping_add((k * s.payload) as u32);
            s.id = s.id.wrapping_add(k as u16);
            let f = s.build();
            match kind {
                BenchStream::Tcp => f,
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

/// Run `frames` through GRO without recording skbs; `rounds` passes over the same
/// frames (timestamps keep increasing, 1 us apart). Returns the totals.
pub fn bench_run(
    profile: &KernelProfile,
    plan: &GroPlan,
    frames: &[Vec<u8>],
    rounds: usize,
) -> BenchCounts {
    let mut run = TapGroRun::new(profile, plan);
    run.record = false;
    let mut i = 0u64;
    for _ in 0..rounds {
        for f in frames {
            run.write_slice(i, 1_000_000_000 + i * 1000, f);
            i += 1;
        }
        run.finish();
    }
    run.counts
}

/// Skbs the stack sees per MB (10^6 bytes) written, for a GRE-TEB TCP stream of
/// `segments` segments, with or without an ETH_P_TEB offload.
pub fn bench_teb_skbs_per_mb(profile: &KernelProfile, teb_gro: bool, segments: usize) -> f64 {
    let frames = bench_frames(BenchStream::GreTeb, segments);
    let c = bench_run(profile, &bench_plan(profile, teb_gro), &frames, 1);
    let written: usize = frames.iter().map(Vec::len).sum();
    c.skbs as f64 * 1e6 / written as f64
}

#[cfg(test)]
#[path = "tap_gro_tests.rs"]
mod tests;
