//! The real GRO bench: frames/s and skbs per MB with GRO on (with and without a flush
//! timeout) and off.

#[allow(unused_imports)]
use super::*;

/// What the stack does with each skb GRO hands it, in [`gro_bench`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchStack {
    /// The frames are for another MAC: `ip_rcv` drops every skb at once (counted in the
    /// tap's `rx_otherhost_dropped`). The least per-skb work the stack can do.
    OtherHost,
    /// The frames are for the tap's MAC and a local address with no listener on the port:
    /// IP input, route and TCP lookup, and a RST sent back out of the tap (to a permanent
    /// neighbour, into the tap's tx ring nobody reads). Counted in `Ip: InReceives`.
    LocalTcp,
}

impl BenchStack {
    /// A short name ("otherhost", "local-tcp").
    pub fn name(self) -> &'static str {
        match self {
            BenchStack::OtherHost => "otherhost",
            BenchStack::LocalTcp => "local-tcp",
        }
    }
}

/// What to measure with [`gro_bench`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroBenchConfig {
    /// Frames per timed run per mode.
    pub frames: u64,
    /// Timed runs per mode; the median is reported.
    pub runs: usize,
    /// Alternating slices per run (as in the VLAN bench: all modes share the noise).
    pub slices: usize,
    /// Untimed frames before each slice.
    pub warmup: u64,
    /// The `gro_flush_timeout` of the "GRO on" mode that merges across writes.
    pub flush_timeout_ns: u64,
    /// What the stack does with the skbs.
    pub stack: BenchStack,
}

impl Default for GroBenchConfig {
    fn default() -> Self {
        GroBenchConfig {
            frames: 200_000,
            runs: 5,
            slices: 10,
            warmup: 200,
            flush_timeout_ns: 1_000_000,
            stack: BenchStack::OtherHost,
        }
    }
}

/// One mode of the GRO bench.
#[derive(Debug, Clone, PartialEq)]
pub struct GroModeResult {
    /// What the mode is ("gro on, gro_flush_timeout 1000000 ns").
    pub label: String,
    /// `rx-gro`.
    pub gro: bool,
    /// The tap's `gro_flush_timeout`.
    pub flush_timeout_ns: u64,
    /// Frames/s written, per timed run.
    pub runs_fps: Vec<f64>,
    /// The median of `runs_fps`.
    pub median_fps: f64,
    /// Frames written (timed and warm-up).
    pub frames: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Skbs the stack got from the tap (see [`BenchStack`] for the counter).
    pub skbs: u64,
    /// `skbs` per 10^6 bytes written.
    pub skbs_per_mb: f64,
}

/// Every mode.
#[derive(Debug, Clone, PartialEq)]
pub struct GroBench {
    pub stack: BenchStack,
    pub modes: Vec<GroModeResult>,
    /// Distinct frames cycled through.
    pub distinct_frames: usize,
    /// Their length.
    pub frame_len: usize,
}

pub(super) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

/// `ip neigh add ADDR lladdr MAC dev IFINDEX nud permanent` (RTM_NEWNEIGH).
pub(super) fn add_neighbour(ifindex: u32, addr: [u8; 4], mac: [u8; 6]) -> Result<(), KernelError> {
    crate::Rtnl::new()?.add_neighbour(ifindex, addr.into(), mac)
}

/// `Ip: InReceives` of the calling thread's namespace.
pub(super) fn ip_in_receives() -> Result<u64, KernelError> {
    let path = "/proc/thread-self/net/snmp";
    let text = std::fs::read_to_string(path)
        .map_err(|e| KernelError::new(format!("read {path}"), Cause::Protocol(e.to_string())))?;
    let mut ip = text.lines().filter(|l| l.starts_with("Ip: "));
    let (names, values) = (ip.next(), ip.next());
    names
        .zip(values)
        .and_then(|(n, v)| {
            let i = n.split_whitespace().position(|w| w == "InReceives")?;
            v.split_whitespace().nth(i)?.parse().ok()
        })
        .ok_or_else(|| {
            KernelError::new(
                format!("parse {path}"),
                Cause::Protocol("no Ip: InReceives".into()),
            )
        })
}

/// Frames/s written into an `IFF_NAPI` tap (blocking `write()`, no vnet header) for a
/// TCP stream of `frames` (cycled; every frame an Ethernet/IPv4/TCP segment of one flow),
/// in three modes of one tap, switched in alternating slices: GRO on with
/// `cfg.flush_timeout_ns` (skbs held across the per-write polls, so the stream merges),
/// GRO on with timeout 0 (every write flushed: GRO's cost without its merging), GRO off.
/// Also the skbs the stack got per MB written. After each slice the arm waits for the
/// flush timeout so that each mode's skbs are counted under it.
pub fn gro_bench(frames: &[Vec<u8>], cfg: &GroBenchConfig) -> Result<GroBench, KernelError> {
    let first = frames
        .first()
        .ok_or_else(|| KernelError::new("gro bench", Cause::Protocol("no frames".into())))?;
    if cfg.runs == 0 || cfg.frames == 0 || first.len() < 34 {
        return Err(KernelError::new(
            "gro bench",
            Cause::Protocol("needs IPv4 frames, runs >= 1 and frames >= 1".into()),
        ));
    }
    let modes = [
        (true, cfg.flush_timeout_ns),
        (true, 0),
        (false, cfg.flush_timeout_ns),
    ];
    Netns::run(|ns| {
        let name = BENCH_TAP;
        let tap = bench_tap(ns, cfg.stack, first)?;
        let mut et = Ethtool::new()?;
        let count_skbs = |ns: &mut Netns| count_skbs(ns, cfg.stack, tap.ifindex());
        let write = |from: u64, count: u64| write_cycled(&tap, frames, from, count);
        let settle = Duration::from_nanos(cfg.flush_timeout_ns) + Duration::from_millis(2);
        let mut fps = vec![Vec::new(); modes.len()];
        let mut totals = vec![(0u64, 0u64, 0u64); modes.len()];
        let mut next = 0u64;
        let slices = cfg.slices.max(1) as u64;
        for _ in 0..cfg.runs {
            let mut secs = vec![0f64; modes.len()];
            for k in 0..slices {
                let count = cfg.frames / slices + u64::from(k < cfg.frames % slices);
                for (m, (gro, timeout)) in modes.iter().enumerate() {
                    if et.get_feature(name, "rx-gro")? != *gro {
                        et.set_feature(name, "rx-gro", *gro)?;
                    }
                    set_gro_flush_timeout(name, *timeout)?;
                    let before = count_skbs(ns)?;
                    let b = write(next, cfg.warmup)?;
                    next += cfg.warmup;
                    let c = Instant::now();
                    let b2 = write(next, count)?;
                    secs[m] += c.elapsed().as_secs_f64();
                    next += count;
                    std::thread::sleep(settle);
                    let skbs = count_skbs(ns)? - before;
                    let t = &mut totals[m];
                    t.0 += cfg.warmup + count;
                    t.1 += b + b2;
                    t.2 += skbs;
                }
            }
            for (m, s) in secs.iter().enumerate() {
                fps[m].push(cfg.frames as f64 / s.max(1e-9));
            }
        }
        let out = mode_results(&modes, fps, totals);
        Ok(GroBench {
            stack: cfg.stack,
            modes: out,
            distinct_frames: frames.len(),
            frame_len: first.len(),
        })
    })
}

/// The bench's tap.
const BENCH_TAP: &str = "skbgrobench";

/// The `IFF_NAPI` tap, up, with the addresses `stack` needs (from the first frame's
/// Ethernet and IPv4 header).
fn bench_tap(
    ns: &mut Netns,
    stack: BenchStack,
    first: &[u8],
) -> Result<crate::tap::Tap, KernelError> {
    let dst_mac: [u8; 6] = first[0..6].try_into().unwrap_or_default();
    let src_mac: [u8; 6] = first[6..12].try_into().unwrap_or_default();
    let src_ip: [u8; 4] = first[26..30].try_into().unwrap_or_default();
    let dst_ip: [u8; 4] = first[30..34].try_into().unwrap_or_default();
    let tap = TapConfig::tap(BENCH_TAP).napi(true).open()?;
    match stack {
        // A MAC no frame is sent to: ip_rcv drops each skb as PACKET_OTHERHOST.
        BenchStack::OtherHost => ns
            .rtnl()
            .set_address(tap.ifindex(), [0x02, 0x5b, 0x5b, 0x5b, 0x5b, 0x5b])?,
        BenchStack::LocalTcp => {
            ns.rtnl().set_address(tap.ifindex(), dst_mac)?;
            add_ipv4(tap.ifindex(), dst_ip, 24)?;
        }
    }
    ns.rtnl().set_up(tap.ifindex(), true)?;
    if stack == BenchStack::LocalTcp {
        add_neighbour(tap.ifindex(), src_ip, src_mac)?;
    }
    Ok(tap)
}

/// The skbs the stack has received so far: PACKET_OTHERHOST drops on the tap, or
/// IP InReceives.
fn count_skbs(ns: &mut Netns, stack: BenchStack, ifindex: u32) -> Result<u64, KernelError> {
    match stack {
        BenchStack::OtherHost => Ok(ns.rtnl().stats(ifindex)?.rx_otherhost_dropped),
        BenchStack::LocalTcp => ip_in_receives(),
    }
}

/// Write frames `from..from + count` (cycling through `frames`); the bytes written.
fn write_cycled(
    tap: &crate::tap::Tap,
    frames: &[Vec<u8>],
    from: u64,
    count: u64,
) -> Result<u64, KernelError> {
    let mut bytes = 0u64;
    for i in from..from + count {
        let f = &frames[(i % frames.len() as u64) as usize];
        let n = tap
            .write(f)
            .map_err(|e| KernelError::sys(format!("bench write into {BENCH_TAP}"), e))?;
        bytes += n as u64;
    }
    Ok(bytes)
}

/// One result per mode: its runs' frames per second and its totals.
fn mode_results(
    modes: &[(bool, u64)],
    fps: Vec<Vec<f64>>,
    totals: Vec<(u64, u64, u64)>,
) -> Vec<GroModeResult> {
    modes
        .iter()
        .zip(fps)
        .zip(totals)
        .map(
            |(((gro, timeout), runs_fps), (frames, bytes, skbs))| GroModeResult {
                label: format!(
                    "gro {}, gro_flush_timeout {timeout} ns",
                    if *gro { "on" } else { "off" }
                ),
                gro: *gro,
                flush_timeout_ns: *timeout,
                median_fps: median(&runs_fps),
                runs_fps,
                frames,
                bytes,
                skbs,
                skbs_per_mb: skbs as f64 * 1e6 / bytes.max(1) as f64,
            },
        )
        .collect()
}
