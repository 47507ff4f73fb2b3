//! The tap-write pipeline through the engine (and the host side of vhost-tx): writes,
//! what the stack received, reads on A and B; the simulator's and the real arm's events
//! through one renderer.

use indicatif::ProgressBar;
use sim::bpf::Maps;
use sim::pipeline::tap_write::{TapWriteRun, WriteEvent};
use sim::pipeline::tap_write_trace::{
    header_record, host_event_comment_into, host_event_record_in, totals_record,
};
use sim::pipeline::PipelineError;
use sim::scenario::Scenario;
use sim::trace::record::Record;
use sim::trace::scratch::Scratch;
use sim::trace::TraceHeader;
use sim::tun::TunStats;

use super::capture::Point;
use super::drive::{drive, render_all, Render};
use super::summary::{read_fate, Reason, Tally};
use super::{RunSummary, Sinks};
use crate::cli_error::CliError;

/// Renders host-side events (tap-write, and vhost-tx's host) into the sinks.
#[derive(Debug)]
pub struct HostRender<'s> {
    scenario: &'s Scenario,
    pub last_a: TunStats,
    pub last_b: Option<TunStats>,
    /// The capture's timestamp for every frame the stack received: the first write's
    /// (tap-write) or the first input frame's (vhost-tx).
    pub capture_ts: Option<u64>,
    /// What became of each frame, for the summary: reads on A and B; the stack's frames
    /// are counted by fate when the model gives one ([`HostRender::fate`]).
    tally: Tally,
    /// Frames whose fate was the stack, and whether any fate was known (the real arm's
    /// writes have none: its stack point counts the frames AF_PACKET saw).
    stack_fates: u64,
    fates_known: bool,
    /// Each event's record is built in the last one's buffers.
    scratch: Scratch,
    /// Each frame's packet comment is written over the last one's.
    comment: String,
}

/// The host's observation points, in the capture's order.
const STACK: usize = 0;
const READ_A: usize = 1;
const READ_B: usize = 2;

impl<'s> HostRender<'s> {
    /// The header; `extra` adds pipeline fields (vhost-tx's guest).
    pub fn begin(
        scenario: &'s Scenario,
        backend: &str,
        sinks: &mut Sinks,
        extra: impl FnOnce(&mut Record<'_>),
    ) -> Result<HostRender<'s>, CliError> {
        let header = TraceHeader::for_scenario(scenario, backend);
        if sinks.wants_records() {
            let mut rec = header_record(&header, scenario);
            extra(&mut rec);
            sinks.record(&rec)?;
        }
        let mut points = vec![
            Point::for_device("stack", &scenario.device),
            Point::for_device("read A", &scenario.device),
        ];
        if let Some(b) = &scenario.redirect {
            points.push(Point::for_device("read B", b));
        }
        sinks.capture.begin(&points)?;
        let mut observed = vec![
            ("stack", "the stack"),
            ("read A", "the reader of A (XDP_TX)"),
        ];
        if scenario.redirect.is_some() {
            observed.push(("read B", "the reader of B (redirect)"));
        }
        Ok(HostRender {
            scenario,
            last_a: TunStats::default(),
            last_b: None,
            capture_ts: None,
            tally: Tally::new(&observed),
            stack_fates: 0,
            fates_known: false,
            scratch: Scratch::default(),
            comment: String::new(),
        })
    }

    /// What became of one written (or vhost-sent) frame: the model's fate, the errno
    /// write() or sendmsg returned, the last XDP run.
    pub fn fate(
        &mut self,
        fate: &sim::tun::write::Fate,
        errno: Option<sim::errno::Errno>,
        xdp: Option<&sim::tun::write::XdpReport>,
    ) {
        self.fates_known = true;
        if *fate == sim::tun::write::Fate::Stack {
            self.stack_fates += 1;
        }
        // XDP_TX and XDP_REDIRECT frames are counted where they are read (A, B).
        if let Some(r) = Reason::of_fate(fate, errno, xdp, true) {
            self.tally.dropped(r, 1);
        }
    }

    /// The tally of the host's events.
    fn count(&mut self, e: &WriteEvent) {
        match e {
            WriteEvent::Write(w) => match &w.model {
                Some(m) => self.fate(&m.fate, w.result.err(), m.xdp.last()),
                // The real arm: only the errno.
                None => {
                    if let Err(errno) = w.result {
                        self.tally.dropped(Reason::WriteError(errno), 1);
                    }
                }
            },
            WriteEvent::Stack { .. } => self.tally.skb(STACK),
            WriteEvent::Queue { .. } => {}
            WriteEvent::Read {
                on_redirect,
                record,
            } => {
                let point = if *on_redirect { READ_B } else { READ_A };
                match read_fate(record) {
                    Some(Ok(())) => self.tally.delivered(point, 1),
                    Some(Err(errno)) => self.tally.dropped(Reason::ReadError(errno), 1),
                    None => {}
                }
            }
        }
    }

    #[inline]
    pub fn event(&mut self, sinks: &mut Sinks, e: &WriteEvent) -> Result<(), CliError> {
        match e {
            WriteEvent::Write(w) => {
                self.last_a = w.stats;
                self.last_b = w.redirect_stats;
                self.capture_ts.get_or_insert(w.ts_ns);
            }
            WriteEvent::Read {
                on_redirect: true,
                record,
            } => self.last_b = Some(record.stats),
            WriteEvent::Read { record, .. } => self.last_a = record.stats,
            WriteEvent::Queue { stats, .. } => self.last_a = *stats,
            WriteEvent::Stack { .. } => {}
        }
        self.count(e);
        let comments = sinks.capture.comments;
        let scratch = &mut self.scratch;
        let rec = sinks
            .wants_records()
            .then(|| host_event_record_in(self.scenario, e, scratch));
        if let Some(rec) = rec.as_ref() {
            sinks.record(rec)?;
        }
        // Built only for an event that puts a frame in the capture (below); with no
        // record wanted (`replay -o`), only the comment's fields are built.
        let framed = match e {
            WriteEvent::Stack { .. } => true,
            WriteEvent::Read { record, .. } => record.result.is_ok(),
            WriteEvent::Write(_) | WriteEvent::Queue { .. } => false,
        };
        let buf = &mut self.comment;
        let comment = match (framed && comments, rec.as_ref()) {
            (false, _) => None,
            (true, Some(rec)) => {
                rec.comment_into(buf);
                Some(buf.as_str())
            }
            (true, None) => host_event_comment_into(self.scenario, e, buf).then_some(buf.as_str()),
        };
        let ts = self.capture_ts.unwrap_or(0);
        match e {
            WriteEvent::Stack { delivery, .. } => {
                let f = &delivery.frame;
                sinks.capture.frame(0, ts, f, f.len(), comment)?;
            }
            WriteEvent::Read {
                on_redirect,
                record,
            } if record.result.is_ok() => {
                let dev = match (*on_redirect, &self.scenario.redirect) {
                    (true, Some(b)) => b,
                    _ => &self.scenario.device,
                };
                let data = record.frame_bytes(dev);
                let orig = record.model.as_ref().map_or(data.len(), |m| m.frame_len);
                let point = if *on_redirect { 2 } else { 1 };
                sinks.capture.frame(point, ts, data, orig, comment)?;
            }
            _ => {}
        }
        if let Some(rec) = rec {
            self.scratch.recycle(rec);
        }
        Ok(())
    }

    /// The totals: A's and B's final counters (`last` overrides the latest seen), maps,
    /// and `extra` fields (vhost-tx's op counts). Returns the tally for the summary: the
    /// frames a full ring of A or B dropped are their `tx_dropped` (tun_net_xmit and
    /// tun_xdp_xmit count nothing else there).
    pub fn end(
        &self,
        sinks: &mut Sinks,
        last: Option<(TunStats, Option<TunStats>)>,
        maps: Option<&Maps>,
        extra: impl FnOnce(&mut Record<'static>),
    ) -> Result<Tally, CliError> {
        let (a, b) = last.unwrap_or((self.last_a, self.last_b));
        if sinks.wants_records() {
            let mut rec = totals_record(&a, b.as_ref(), maps);
            extra(&mut rec);
            sinks.record(&rec)?;
        }
        let mut tally = self.tally.clone();
        let stack = tally.points[STACK].skbs.unwrap_or(0);
        tally.delivered(
            STACK,
            if self.fates_known {
                self.stack_fates
            } else {
                stack
            },
        );
        tally.dropped(
            Reason::TxDropped,
            a.tx_dropped + b.map_or(0, |b| b.tx_dropped),
        );
        Ok(tally)
    }
}

impl Render<WriteEvent> for HostRender<'_> {
    #[inline]
    fn event(&mut self, sinks: &mut Sinks, e: &WriteEvent) -> Result<(), CliError> {
        HostRender::event(self, sinks, e)
    }
}

/// A pipeline error of the host side, naming the scenario's pcap.
pub fn model_error(scenario: &Scenario) -> impl Fn(PipelineError) -> CliError + '_ {
    |e| CliError(format!("{}: {e}", scenario.input.display()))
}

/// Replay a tap-write scenario on the simulator into `sinks`.
pub fn run_sim(
    scenario: &Scenario,
    sinks: &mut Sinks,
    progress: Option<&ProgressBar>,
) -> Result<RunSummary, CliError> {
    let mut run = TapWriteRun::new(scenario)
        .map_err(|e| CliError(format!("{}: {}", scenario.path.display(), e.0)))?;
    let mut render = HostRender::begin(scenario, "sim", sinks, |_| {})?;
    let (frames, skipped) = drive(
        scenario,
        &mut run,
        sinks,
        &mut render,
        progress,
        model_error(scenario),
    )?;
    let tally = render.end(sinks, None, run.maps(), |_| {})?;
    Ok(RunSummary {
        frames,
        skipped,
        notes: Vec::new(),
        tally: tally.finish(frames),
    })
}

/// The real kernel's tap-write run into `sinks`.
pub fn run_real(scenario: &Scenario, sinks: &mut Sinks) -> Result<RunSummary, CliError> {
    let real = skbsim_kernel::arm::run_tap_write(scenario)
        .map_err(|e| CliError(format!("{}: {e}", scenario.name)))?;
    let mut render = HostRender::begin(scenario, "tap", sinks, |_| {})?;
    render_all(sinks, &mut render, &real.events)?;
    let tally = render.end(sinks, None, real.maps.as_ref(), |_| {})?;
    Ok(RunSummary {
        frames: real.frames,
        notes: real.notes,
        // The real arm's input skips are counted by `runner::replay_into`.
        skipped: Default::default(),
        tally: tally.finish(real.frames),
    })
}
