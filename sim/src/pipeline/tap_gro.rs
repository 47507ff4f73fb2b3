//! The `tap-gro` pipeline: frames written into an IFF_NAPI tap (docs/gro.md#tun-napi),
//! a configuration of the one tap datapath: each write goes through `Net::tun_write`
//! (tun_get_user: the scenario's PI and vnet header, tun_build_skb and native XDP, tun's
//! generic XDP), which hands the skb to tun's NAPI (tun/napi.rs); after every `[gro]
//! burst` writes (or when more than NAPI_POLL_WEIGHT are queued) the softirq runs
//! tun_napi_poll, which feeds up to 64 skbs to napi_gro_receive and ends in
//! napi_complete_done; a gro_flush_timeout keeps young skbs held until the hrtimer fires.
//! What GRO completes goes through netif_receive_skb (a core xdpgeneric program sees the
//! merged skb) to the stack, and an AF_PACKET socket on the tap sees it.
//!
//! Without a vnet header a frame is CHECKSUM_NONE, so GRO verifies every checksum in
//! software; a `[writer]` vnet header with NEEDS_CSUM makes it CHECKSUM_PARTIAL.

use crate::errno::Errno;
use crate::gro::napi::{Delivered, Napi};
use crate::gro::plan::GroPlan;
use crate::gro::GroConfig;
use crate::net::Net;
use crate::profile::KernelProfile;
use crate::scenario::Scenario;
use crate::tun::napi::AfterGro;
use crate::tun::write::{Fate, ModelError, WriteOpts, XdpReport};
use crate::tun::{DeviceKind, TunConfig, TunDevice, TunStats};

use super::tap_write::{compose_write_into, dut_net, scenario_net, IFINDEX_DUT};
use super::{Input, Pipeline, PipelineError};

pub use super::tap_gro_record::{run_tap_gro, GroRunOutput, TapGroRun};

/// A write() that tun_get_user refused (EINVAL: shorter than ETH_HLEN, a bad vnet
/// header, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteError {
    pub frame: u64,
    pub ts_ns: u64,
    /// The frame's length (without PI and vnet header).
    pub len: usize,
    pub errno: Errno,
}

/// An XDP run before GRO (native in tun_build_skb, or tun's generic fallback) whose
/// verdict kept the frame from the stack (model only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpBeforeGro {
    pub frame: u64,
    pub report: XdpReport,
    pub fate: Fate,
}

/// Totals of a run (the trace's totals), kept even when skbs are not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroCounts {
    pub frames: u64,
    pub skbs: u64,
    pub bytes: u64,
    pub segs: u64,
}

/// What happened, in order.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum GroEvent {
    /// tun_get_user refused a write.
    WriteError(WriteError),
    /// An XDP verdict before GRO kept the frame from the stack (model only).
    XdpBeforeGro(XdpBeforeGro),
    /// A core xdpgeneric program ran on an skb GRO completed (model only).
    AfterGro(AfterGro),
    /// The stack received an skb GRO completed (AF_PACKET on the tap sees it).
    Deliver(Delivered),
}

/// One run of the pipeline.
#[derive(Debug)]
pub struct TapGro {
    pub cfg: GroConfig,
    pub plan: GroPlan,
    profile: KernelProfile,
    /// The tap (IFINDEX_DUT) with its NAPI instance.
    pub net: Net,
    /// The scenario whose [device], [writer] and [xdp] the writes use; `None`: plain
    /// frames into IFF_TAP|IFF_NO_PI|IFF_NAPI (the GRO unit tests, the CLI's bench).
    scenario: Option<Box<Scenario>>,
    /// O_NONBLOCK for plain frames (a scenario's [writer] says it otherwise).
    pub nonblocking: bool,
    /// The tap's counters after the last write.
    pub stats: TunStats,
    pub counts: GroCounts,
    wbuf: Vec<u8>,
    /// The tunnel devices' gro_cells after the stack ([`GroPlan::cells`]).
    pub cells: Option<crate::gro::cells::GroCells>,
}

/// The tap-gro device without a scenario: IFF_TAP | IFF_NO_PI | IFF_NAPI.
fn plain_tap() -> TunConfig {
    TunConfig {
        kind: DeviceKind::Tap,
        no_pi: true,
        napi: true,
        ..TunConfig::default()
    }
}

impl TapGro {
    pub fn new(profile: &KernelProfile, plan: &GroPlan) -> TapGro {
        let net = dut_net(TunDevice::new(plain_tap()), profile, plan);
        TapGro::with_net(profile, plan, net, None)
    }

    /// A run of `scenario`: tap-write's devices ([`scenario_net`]: the tap with its
    /// program, IFF_NAPI, the redirect target), its writer, and the scenario's `[gro]`.
    pub fn for_scenario(scenario: &Scenario) -> Result<TapGro, ModelError> {
        if !scenario.device.napi {
            // Scenario::parse makes a tap-gro tap IFF_NAPI; another pipeline's is not.
            return Err(ModelError("tap-gro: the tap is not IFF_NAPI".into()));
        }
        let net = scenario_net(scenario)?;
        let sc = Some(Box::new(scenario.clone()));
        Ok(TapGro::with_net(&scenario.profile, &scenario.gro, net, sc))
    }

    /// The run over `net`, whose tap (IFINDEX_DUT) is IFF_NAPI ([`dut_net`]).
    fn with_net(
        profile: &KernelProfile,
        plan: &GroPlan,
        mut net: Net,
        scenario: Option<Box<Scenario>>,
    ) -> TapGro {
        // The run's record of the stack is the GRO skbs themselves (`delivered`).
        if let Some(n) = net.napi_mut(IFINDEX_DUT) {
            n.stack_copies = false;
        }
        TapGro {
            cfg: plan.config(profile.gro),
            plan: plan.clone(),
            profile: *profile,
            net,
            scenario,
            nonblocking: false,
            stats: TunStats::default(),
            counts: GroCounts::default(),
            wbuf: Vec::new(),
            cells: plan
                .cells()
                .then(|| crate::gro::cells::GroCells::new(plan.tap_observer, u64::from(plan.hz))),
        }
    }

    /// The tap's NAPI instance (counters, polls).
    pub fn napi(&self) -> &Napi {
        &self
            .net
            .napi(IFINDEX_DUT)
            .expect("the tap-gro tap has NAPI")
            .napi
    }

    /// write(fd, frame) at `ts_ns`, composed into a reused buffer with the scenario's PI
    /// and vnet header as userspace writes it. An `Err` is the scenario's (a program the
    /// VM cannot run), not the kernel's.
    fn write(
        &mut self,
        index: u64,
        ts_ns: u64,
        frame: &[u8],
        events: &mut impl FnMut(GroEvent),
    ) -> Result<(), ModelError> {
        let mut bytes = std::mem::take(&mut self.wbuf);
        let nonblocking = match &self.scenario {
            Some(sc) => compose_write_into(&mut bytes, sc, index, frame),
            None => {
                bytes.clear();
                bytes.extend_from_slice(frame);
                self.nonblocking
            }
        };
        self.advance_to(ts_ns);
        if let Some(n) = self.net.napi_mut(IFINDEX_DUT) {
            n.frame = index;
        }
        let p = &self.profile;
        let out = self.net.tun_write(
            IFINDEX_DUT,
            &bytes,
            WriteOpts {
                nonblocking,
                rx_queue: 0,
                detached: false,
            },
            &p.tun_write,
            &p.tun_read,
        );
        self.wbuf = bytes;
        let o = out?;
        match o.result {
            Err(errno) => events(GroEvent::WriteError(WriteError {
                frame: index,
                ts_ns,
                len: frame.len(),
                errno,
            })),
            Ok(_) => {
                self.counts.frames += 1;
                if o.fate != Fate::Stack {
                    if let Some(report) = o.xdp.last() {
                        events(GroEvent::XdpBeforeGro(XdpBeforeGro {
                            frame: index,
                            report: report.clone(),
                            fate: o.fate.clone(),
                        }));
                    }
                }
            }
        }
        self.collect(events);
        Ok(())
    }

    /// The NAPI clock moves to `ts_ns` (never back) for the write at that time: its poll
    /// sees what is due.
    fn advance_to(&mut self, ts_ns: u64) {
        if let Some(n) = self.net.napi_mut(IFINDEX_DUT) {
            n.now_ns = n.now_ns.max(ts_ns);
        }
    }

    /// End of input: the last burst is polled and a pending hrtimer fires.
    fn finish(&mut self, events: &mut impl FnMut(GroEvent)) {
        let _ = self
            .net
            .tun_napi_finish(IFINDEX_DUT, &self.profile.tun_write);
        self.collect(events);
    }

    /// What GRO handed to the stack since the last call, as events.
    fn collect(&mut self, events: &mut impl FnMut(GroEvent)) {
        if let Some(d) = self.net.dev(IFINDEX_DUT) {
            self.stats = d.stats;
        }
        // The stack's copies (Net::deliver) are not needed: the GRO skbs are the record.
        let mut stack = std::mem::take(&mut self.net.stack);
        for d in stack.drain(..) {
            self.net.recycle_frame(d.frame);
        }
        self.net.stack = stack;
        let Some(n) = self.net.napi_mut(IFINDEX_DUT) else {
            return;
        };
        for a in n.after_gro.drain(..) {
            events(GroEvent::AfterGro(a));
        }
        // Taken and given back empty: its allocation serves the next poll (a Vec freed
        // here and grown again by the next delivery was a malloc and a free a frame).
        let mut rx = std::mem::take(&mut n.rx);
        if let Some(c) = &mut self.cells {
            c.after_tap_polls(&n.cfg, &rx);
        }
        for d in rx.drain(..) {
            self.counts.skbs += 1;
            self.counts.bytes += d.skb.len() as u64;
            self.counts.segs += crate::trace::gro::segs_of(&d.skb);
            events(GroEvent::Deliver(d));
        }
        if let Some(n) = self.net.napi_mut(IFINDEX_DUT) {
            if n.rx.is_empty() {
                n.rx = rx;
            }
        }
    }

    /// Give a delivered skb's buffers back for later writes.
    pub fn recycle_delivered(&mut self, d: Delivered) {
        if let Some(n) = self.net.napi_mut(IFINDEX_DUT) {
            n.recycle(d);
        }
    }
}

impl Pipeline for TapGro {
    type Event = GroEvent;

    #[inline]
    fn handle(
        &mut self,
        input: Input<'_>,
        events: &mut impl FnMut(GroEvent),
    ) -> Result<(), PipelineError> {
        match input {
            Input::Frame {
                index,
                ts_ns,
                bytes,
            } => self
                .write(index, ts_ns, bytes, events)
                .map_err(PipelineError::at(Some(index))),
            Input::AdvanceTo { ts_ns } => {
                let r = self
                    .net
                    .tun_napi_advance(IFINDEX_DUT, ts_ns, &self.profile.tun_write);
                self.collect(events);
                r.map_err(PipelineError::at(None))
            }
            Input::End => {
                self.finish(events);
                Ok(())
            }
            // The tap's reader is AF_PACKET (the deliveries); no guest.
            Input::Read | Input::Kick => Ok(()),
        }
    }

    type Spare = Delivered;

    #[inline]
    fn spare(event: GroEvent) -> Option<Delivered> {
        match event {
            GroEvent::Deliver(d) => Some(d),
            _ => None,
        }
    }

    fn recycle(&mut self, d: Delivered) {
        self.recycle_delivered(d);
    }
}

#[cfg(test)]
#[path = "tap_gro_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "tap_gro_setup_tests.rs"]
mod setup_tests;
