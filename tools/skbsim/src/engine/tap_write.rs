//! The tap-write pipeline through the engine (and the host side of vhost-tx): writes,
//! what the stack received, reads on A and B; the simulator's and the real arm's events
//! through one renderer.

use indicatif::ProgressBar;
use serde_json::json;
use sim::bpf::Maps;
use sim::pipeline::tap_write::{TapWriteRun, WriteEvent};
use sim::pipeline::PipelineError;
use sim::scenario::Scenario;
use sim::trace::write::{render_header, render_host_event, render_totals, tap_write_event_json};
use sim::trace::{header_json, read_comment, TraceHeader};
use sim::tun::TunStats;

use super::capture::Point;
use super::drive::{drive, render_all, Render};
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
    /// The packet comment being built, reused.
    comment: String,
}

impl<'s> HostRender<'s> {
    /// The header; `extra` adds pipeline lines (vhost-tx's guest line).
    pub fn begin(
        scenario: &'s Scenario,
        backend: &str,
        sinks: &mut Sinks,
        extra: impl FnOnce(&mut String),
    ) -> Result<HostRender<'s>, CliError> {
        let header = TraceHeader::for_scenario(scenario, backend);
        sinks.header(
            |out| {
                render_header(out, &header, scenario);
                extra(out);
            },
            || header_json(&header),
        )?;
        let mut points = vec![
            Point::for_device("stack", &scenario.device),
            Point::for_device("read A", &scenario.device),
        ];
        if let Some(b) = &scenario.redirect {
            points.push(Point::for_device("read B", b));
        }
        sinks.capture.begin(&points)?;
        Ok(HostRender {
            scenario,
            last_a: TunStats::default(),
            last_b: None,
            capture_ts: None,
            comment: String::new(),
        })
    }

    #[inline]
    pub fn event(&mut self, sinks: &mut Sinks, e: &WriteEvent) -> Result<(), CliError> {
        if sinks.trace.on() {
            sinks.trace.buf.push('\n');
            render_host_event(
                &mut sinks.trace.buf,
                self.scenario,
                e,
                &mut self.last_a,
                &mut self.last_b,
            );
            sinks.trace.flush()?;
        } else {
            match e {
                WriteEvent::Write(w) => {
                    self.last_a = w.stats;
                    self.last_b = w.redirect_stats;
                }
                WriteEvent::Read {
                    on_redirect: true,
                    record,
                } => self.last_b = Some(record.stats),
                WriteEvent::Read { record, .. } => self.last_a = record.stats,
                WriteEvent::Stack { .. } => {}
            }
        }
        if let WriteEvent::Write(w) = e {
            self.capture_ts.get_or_insert(w.ts_ns);
        }
        if sinks.json.on() {
            sinks.json.line(&tap_write_event_json(e))?;
        }
        let ts = self.capture_ts.unwrap_or(0);
        match e {
            WriteEvent::Stack { delivery, .. } => {
                let comment = if sinks.capture.comments {
                    // "protocol {:#06x}" and " vlan {tag}", by hand (sim::text).
                    self.comment.clear();
                    self.comment.push_str("protocol ");
                    sim::text::hex0x(&mut self.comment, u64::from(delivery.protocol), 4);
                    if let Some(v) = delivery.vlan {
                        self.comment.push_str(" vlan ");
                        sim::wire::summary::vlan_tci_into(&mut self.comment, v.proto, v.tci);
                    }
                    Some(self.comment.as_str())
                } else {
                    None
                };
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
                let comment = sinks.capture.comments.then(|| read_comment(record, dev));
                let point = if *on_redirect { 2 } else { 1 };
                sinks
                    .capture
                    .frame(point, ts, data, orig, comment.as_deref())?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The totals: A's and B's final counters (`last` overrides the latest seen), maps,
    /// and `extra` lines (vhost-tx's op counts).
    pub fn end(
        &self,
        sinks: &mut Sinks,
        last: Option<(TunStats, Option<TunStats>)>,
        maps: Option<&Maps>,
        extra: impl FnOnce(&mut String),
    ) -> Result<(), CliError> {
        let (a, b) = last.unwrap_or((self.last_a, self.last_b));
        if sinks.trace.on() {
            let out = &mut sinks.trace.buf;
            out.push_str("\ntotals:\n");
            render_totals(out, &a, b.as_ref(), maps);
            extra(out);
            sinks.trace.flush()?;
        }
        if sinks.json.on() {
            sinks.json.line(&json!({
                "event": "totals",
                "counters": sim::trace::stats_json(&a),
                "redirect_counters": b.as_ref().map(sim::trace::stats_json),
            }))?;
        }
        Ok(())
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
    render.end(sinks, None, run.maps(), |_| {})?;
    Ok(RunSummary {
        frames,
        skipped,
        notes: Vec::new(),
    })
}

/// The real kernel's tap-write run into `sinks`.
pub fn run_real(scenario: &Scenario, sinks: &mut Sinks) -> Result<RunSummary, CliError> {
    let real = skbsim_kernel::arm::run_tap_write(scenario)
        .map_err(|e| CliError(format!("{}: {e}", scenario.name)))?;
    let mut render = HostRender::begin(scenario, "tap", sinks, |_| {})?;
    render_all(sinks, &mut render, &real.events)?;
    render.end(sinks, None, real.maps.as_ref(), |_| {})?;
    Ok(RunSummary {
        frames: real.frames,
        notes: real.notes,
        // The real arm's input skips are counted by `runner::replay_into`.
        skipped: Default::default(),
    })
}
