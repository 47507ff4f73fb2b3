//! The tap-gro pipeline through the engine: each write goes through tun_get_user and the
//! NAPI poll; each skb the stack receives is rendered as it comes out of GRO and its
//! buffers recycled, so a long replay holds only what GRO itself holds.

use sim::pipeline::tap_gro::{GroEvent, TapGro};
use sim::pipeline::tap_gro_trace::{
    delivered_record_in, header_record, refused_record, totals_record, GroTotals,
};
use sim::scenario::Scenario;
use sim::trace::gro_cells;
use sim::trace::scratch::Scratch;

use super::capture::Point;
use super::drive::{drive, Render};
use super::summary::{Reason, Tally};
use super::{RunSummary, Sinks};
use crate::cli_error::CliError;

/// What the stack received (AF_PACKET on the tap), the one point tap-gro observes.
const STACK: Point = Point {
    name: "stack",
    link_type: sim::pcap::LINKTYPE_ETHERNET,
};

/// The stack, the one point of the summary ([`STACK`]).
const STACK_POINT: [(&str, &str); 1] = [("stack", "the stack")];

/// Renders tap-gro's events: write errors and deliveries as they come; the XDP verdicts
/// are kept for the totals' `xdp` line.
#[derive(Debug, Default)]
struct GroRender {
    t: GroTotals,
    /// Whether anything reads the tap (`[gro] tap_observer`).
    observed: bool,
    /// What became of each frame, for the summary.
    tally: Tally,
    /// Each delivery's record is built in the last one's buffers.
    scratch: Scratch,
    /// Each delivery's packet comment is written over the last one's.
    comment: String,
}

impl GroRender {
    /// The tally: a delivered skb holds the input frames GRO merged into it (an XDP
    /// verdict after GRO acts on all of them); the stack receives them whether or not
    /// anything reads the tap.
    fn count(&mut self, e: &GroEvent) {
        let t = &mut self.tally;
        match e {
            GroEvent::WriteError(w) => t.dropped(Reason::WriteError(w.errno), 1),
            GroEvent::XdpBeforeGro(x) => {
                if let Some(r) = Reason::of_fate(&x.fate, None, Some(&x.report), false) {
                    t.dropped(r, 1);
                }
            }
            GroEvent::AfterGro(a) => {
                if let Some(r) = a
                    .fate
                    .as_ref()
                    .and_then(|f| Reason::of_fate(f, None, Some(&a.report), false))
                {
                    t.dropped(r, a.frames.len() as u64);
                }
            }
            GroEvent::Deliver(d) => {
                t.delivered(0, d.skb.frames().count() as u64);
                t.skb(0);
            }
        }
    }
}

impl Render<GroEvent> for GroRender {
    #[inline]
    fn event(&mut self, sinks: &mut Sinks, e: &GroEvent) -> Result<(), CliError> {
        self.count(e);
        let t = &mut self.t;
        match e {
            GroEvent::WriteError(e) => {
                t.write_errors += 1;
                if sinks.wants_records() {
                    sinks.record(&refused_record(e))?;
                }
            }
            GroEvent::XdpBeforeGro(x) => t.xdp_before.push(x.clone()),
            GroEvent::AfterGro(a) => t.after_gro.push(a.clone()),
            GroEvent::Deliver(_) if !self.observed => {}
            GroEvent::Deliver(d) => {
                let n = t.delivered as usize;
                t.delivered(d.skb.len());
                let comments = sinks.capture.on() && sinks.capture.comments;
                let scratch = &mut self.scratch;
                let rec =
                    (sinks.wants_records() || comments).then(|| delivered_record_in(n, d, scratch));
                if let Some(rec) = rec.as_ref().filter(|_| sinks.wants_records()) {
                    sinks.record(rec)?;
                }
                if sinks.capture.on() {
                    let comment = rec.as_ref().filter(|_| comments).map(|r| {
                        r.comment_into(&mut self.comment);
                        self.comment.as_str()
                    });
                    let bytes = d.skb.bytes();
                    sinks
                        .capture
                        .frame(0, d.ts_ns, &bytes, bytes.len(), comment)?;
                }
                if let Some(rec) = rec {
                    self.scratch.recycle(rec);
                }
            }
        }
        Ok(())
    }
}

/// Replay a tap-gro scenario on the simulator into `sinks`.
pub fn run_sim(
    scenario: &Scenario,
    sinks: &mut Sinks,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<RunSummary, CliError> {
    let mut run = TapGro::for_scenario(scenario)
        .map_err(|e| CliError(format!("{}: {}", scenario.name, e.0)))?;
    if sinks.wants_records() {
        sinks.record(&header_record(scenario, &run))?;
    }
    sinks.capture.begin(&[STACK])?;
    let mut render = GroRender {
        observed: gro_cells::tap_observed(&run.plan),
        tally: Tally::new(&STACK_POINT),
        ..GroRender::default()
    };
    let (frames, skipped) = drive(scenario, &mut run, sinks, &mut render, progress, |e| {
        CliError(format!("{}: {e}", scenario.name))
    })?;
    let (t, tally) = (render.t, render.tally);
    if sinks.wants_records() {
        sinks.record(&totals_record(&run, &t))?;
        if let Some(c) = &run.cells {
            for rec in gro_cells::cells_records(c) {
                sinks.record(&rec)?;
            }
        }
    }
    if let Some(c) = run
        .cells
        .as_ref()
        .filter(|_| !gro_cells::tap_observed(&run.plan))
    {
        for (_, d) in c.deliveries() {
            let bytes = d.skb.bytes();
            sinks.capture.frame(0, d.ts_ns, &bytes, bytes.len(), None)?;
        }
    }
    Ok(RunSummary {
        frames,
        skipped,
        notes: Vec::new(),
        tally: tally.finish(frames),
    })
}

/// The real kernel's tap-gro run into `sinks`: the observed trace, its deliveries
/// written by the model's delivery renderer (`sim::trace::gro_delivery`), the frames the
/// AF_PACKET socket saw.
pub fn run_real(scenario: &Scenario, sinks: &mut Sinks) -> Result<RunSummary, CliError> {
    use sim::trace::gro_observed::observed_records;
    use skbsim_kernel::arm::{tap_gro::run_tap_gro, ArmError};
    let real = run_tap_gro(scenario).map_err(|e| match e {
        ArmError::Kernel(k) => CliError(format!("{}: {k}", scenario.name)),
        other => CliError(format!("{}: {other}", scenario.name)),
    })?;
    if sinks.wants_records() {
        for rec in observed_records(scenario, &real.observed) {
            sinks.record(&rec)?;
        }
    }
    sinks.capture.begin(&[STACK])?;
    for (d, ts) in real.observed.deliveries.iter().zip(&real.delivered_ts) {
        sinks.capture.frame(0, *ts, &d.bytes, d.bytes.len(), None)?;
    }
    if !gro_cells::tap_observed(&scenario.gro) {
        // No tap capture: the output pcap holds what the tunnel devices received.
        let ts = real.delivered_ts.last().copied().unwrap_or(0);
        // As many as the model lists (sim::gro::cells::TUNNEL_LISTED_MAX).
        let listed = sim::gro::cells::TUNNEL_LISTED_MAX;
        for (_, d) in real.observed.tunnel.iter().take(listed) {
            sinks.capture.frame(0, ts, &d.bytes, d.bytes.len(), None)?;
        }
    }
    Ok(RunSummary {
        frames: real.frames,
        notes: real.notes,
        // The real arm's input skips are counted by `runner::replay_into`.
        skipped: Default::default(),
        tally: observed_tally(scenario, &real.observed).finish(real.frames),
    })
}

/// The real arm's tally: the write errors it saw, and the frames in each skb the
/// stack's AF_PACKET socket read (a GRO skb's segments, as the trace derives them).
fn observed_tally(scenario: &Scenario, o: &sim::trace::gro_observed::ObservedGro) -> Tally {
    use sim::trace::gro_observed::derived_segs;
    let mut t = Tally::new(&STACK_POINT);
    for w in &o.write_errors {
        let errno = (1..=133)
            .filter_map(sim::errno::Errno::from_code)
            .find(|e| e.name() == w.errno);
        t.dropped(errno.map_or(Reason::Unobserved, Reason::WriteError), 1);
    }
    for d in &o.deliveries {
        let gso = d.vnet.as_ref().map_or(0, |v| v.gso_size);
        let segs = derived_segs(&d.bytes, gso, &scenario.gro.vxlan_ports).unwrap_or(1);
        t.delivered(0, segs as u64);
        t.skb(0);
    }
    t
}
