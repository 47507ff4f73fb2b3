//! Real frames/s through the tap read path (write into tap A, bridge, read from tap B) with
//! B's tx VLAN offload on and off, measured in one namespace in one run: the before/after
//! of the 2013 "hardware vlan tx" change on one kernel.
//!
//! With the offload on, the receive path's hw-accel tag reaches `tun_put_user`, which
//! splices it into the copy to userspace; with it off, `validate_xmit_vlan` pushes the tag
//! back into the packet data (`__vlan_hwaccel_push_inside`: a memmove of the MACs, and a
//! reallocation when the head has no room) before `tun_net_xmit`.

use std::time::{Duration, Instant};

use crate::error::{Cause, Errno, KernelError};
use crate::ethtool::Ethtool;
use crate::netns::Netns;
use crate::tap::{Tap, TapConfig};

/// One frame to cycle through (an in-band tagged Ethernet frame).
pub type BenchFrame = Vec<u8>;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanBenchConfig {
    /// Frames per timed run (each written once and read once).
    pub frames: u64,
    /// Timed runs per mode (each cut into `slices` that alternate between the modes);
    /// the median is reported.
    pub runs: usize,
    /// Frames written before B is read (at most the tx_ring, 500).
    pub batch: usize,
    /// B's `IFF_NO_PI`.
    pub no_pi: bool,
    /// B's virtio-net header size (0: no `IFF_VNET_HDR`).
    pub vnet_hdr_sz: usize,
    /// Untimed frames after each mode switch.
    pub warmup: u64,
    /// Alternating slices per run (see [`vlan_offload_bench`]).
    pub slices: usize,
}

impl Default for VlanBenchConfig {
    fn default() -> Self {
        VlanBenchConfig {
            frames: 200_000,
            runs: 5,
            batch: 64,
            no_pi: false,
            vnet_hdr_sz: 12,
            warmup: 500,
            slices: 10,
        }
    }
}

/// One mode's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct VlanModeResult {
    /// `tx-vlan-hw-insert` and `tx-vlan-stag-hw-insert` on B.
    pub offload: bool,
    /// frames/s of each timed run, in order.
    pub runs_fps: Vec<f64>,
    /// The median of `runs_fps`.
    pub median_fps: f64,
    /// Bytes read from B per frame, averaged (PI + vnet + frame).
    pub bytes_per_read: f64,
    /// What B returned for the first frame of the set (PI, vnet header and frame).
    pub sample: Vec<u8>,
}

/// Both modes.
#[derive(Debug, Clone, PartialEq)]
pub struct VlanBench {
    pub on: VlanModeResult,
    pub off: VlanModeResult,
    /// `on.median_fps / off.median_fps`.
    pub ratio: f64,
    /// Distinct frames cycled through.
    pub distinct_frames: usize,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

fn set_offload(et: &mut Ethtool, ifname: &str, on: bool) -> Result<(), KernelError> {
    for f in ["tx-vlan-hw-insert", "tx-vlan-stag-hw-insert"] {
        if et.get_feature(ifname, f)? != on {
            et.set_feature(ifname, f, on)?;
        }
    }
    Ok(())
}

struct Path {
    a: Tap,
    b: Tap,
    buf: Vec<u8>,
}

impl Path {
    /// Write `count` frames (cycling from `start`), reading B after every `batch`; returns
    /// bytes read.
    fn pump(
        &mut self,
        frames: &[BenchFrame],
        count: u64,
        batch: usize,
    ) -> Result<u64, KernelError> {
        let mut bytes = 0u64;
        let mut queued = 0usize;
        for i in 0..count {
            let f = &frames[(i % frames.len() as u64) as usize];
            let n = self
                .a
                .write(f)
                .map_err(|e| KernelError::sys(format!("bench write into {}", self.a.name()), e))?;
            if n != f.len() {
                return Err(KernelError::new(
                    format!("bench write into {}", self.a.name()),
                    Cause::Protocol(format!("short write {n} of {}", f.len())),
                ));
            }
            queued += 1;
            if queued >= batch || i + 1 == count {
                bytes += self.read_n(queued)?;
                queued = 0;
            }
        }
        Ok(bytes)
    }

    fn read_n(&mut self, n: usize) -> Result<u64, KernelError> {
        let mut bytes = 0;
        for k in 0..n {
            match self.b.read(&mut self.buf) {
                Ok(got) => bytes += got as u64,
                Err(Errno::EAGAIN) => {
                    // Forwarding is synchronous in write(); wait once before calling it lost.
                    let ready = self
                        .b
                        .wait_readable(Duration::from_secs(1))
                        .map_err(|e| KernelError::sys(format!("poll on {}", self.b.name()), e))?;
                    if !ready {
                        return Err(KernelError::new(
                            format!("bench read from {}", self.b.name()),
                            Cause::Protocol(format!(
                                "only {k} of {n} frames arrived; the bridge or tun_net_xmit dropped some"
                            )),
                        ));
                    }
                    let got = self.b.read(&mut self.buf).map_err(|e| {
                        KernelError::sys(format!("bench read from {}", self.b.name()), e)
                    })?;
                    bytes += got as u64;
                }
                Err(e) => {
                    return Err(KernelError::sys(
                        format!("bench read from {}", self.b.name()),
                        e,
                    ))
                }
            }
        }
        Ok(bytes)
    }
}

/// Measure both modes. `frames` must be non-empty, every one a valid Ethernet frame no
/// longer than 1518 bytes (the bridge drops longer non-GSO frames).
pub fn vlan_offload_bench(
    frames: &[BenchFrame],
    cfg: &VlanBenchConfig,
) -> Result<VlanBench, KernelError> {
    if frames.is_empty() || cfg.runs == 0 || cfg.batch == 0 || cfg.batch > 500 {
        return Err(KernelError::new(
            "vlan offload bench",
            Cause::Protocol("needs frames, runs >= 1 and 1 <= batch <= 500".into()),
        ));
    }
    Netns::run(|ns| {
        let a = ns.tap_up(&TapConfig::tap("skbbenchA"))?;
        let b = TapConfig::tap("skbbenchB")
            .no_pi(cfg.no_pi)
            .vnet_hdr(cfg.vnet_hdr_sz > 0)
            .nonblocking(true)
            .open()?;
        if cfg.vnet_hdr_sz > 0 && cfg.vnet_hdr_sz != 10 {
            b.set_vnet_hdr_sz(cfg.vnet_hdr_sz as i32)?;
        }
        ns.rtnl().set_up(b.ifindex(), true)?;
        ns.quiet_bridge("skbbenchbr", &[a.ifindex(), b.ifindex()])?;
        let bname = b.name().to_string();
        let mut et = Ethtool::new()?;
        let mut path = Path {
            a,
            b,
            buf: vec![0u8; 65536],
        };
        let mut results = [
            (true, Vec::new(), 0u64, Vec::new()),
            (false, Vec::new(), 0u64, Vec::new()),
        ];
        for (on, _, _, sample) in results.iter_mut() {
            set_offload(&mut et, &bname, *on)?;
            path.b
                .drain()
                .map_err(|e| KernelError::sys(format!("drain {bname}"), e))?;
            // One frame, read alone: buf holds exactly what B returned for it.
            let n = path.pump(&frames[..1], 1, 1)? as usize;
            *sample = path.buf[..n].to_vec();
        }
        // Each run is cut into slices that alternate between the modes, so both see the
        // same background load (a shared 2-core machine is noisy); a run's rate is its
        // frames over the summed time of its slices.
        let slices = cfg.slices.max(1) as u64;
        for _ in 0..cfg.runs {
            let mut secs = [0f64; 2];
            for k in 0..slices {
                let count = cfg.frames / slices + u64::from(k < cfg.frames % slices);
                for (i, (on, _, bytes, _)) in results.iter_mut().enumerate() {
                    set_offload(&mut et, &bname, *on)?;
                    path.pump(frames, cfg.warmup, cfg.batch)?;
                    let t = Instant::now();
                    *bytes += path.pump(frames, count, cfg.batch)?;
                    secs[i] += t.elapsed().as_secs_f64();
                }
            }
            for (i, (_, fps, _, _)) in results.iter_mut().enumerate() {
                fps.push(cfg.frames as f64 / secs[i].max(1e-9));
            }
        }
        let total = (cfg.frames * cfg.runs as u64).max(1) as f64;
        let [on, off] = results.map(|(offload, runs_fps, bytes, sample)| VlanModeResult {
            offload,
            median_fps: median(&runs_fps),
            runs_fps,
            bytes_per_read: bytes as f64 / total,
            sample,
        });
        let ratio = if off.median_fps > 0.0 {
            on.median_fps / off.median_fps
        } else {
            0.0
        };
        Ok(VlanBench {
            on,
            off,
            ratio,
            distinct_frames: frames.len(),
        })
    })
}
