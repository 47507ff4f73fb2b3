//! Pipelines: a scenario's frames driven through a modelled path, with no I/O. Every
//! pipeline has one shape, in the style of quinn-proto's `Connection` (a state machine
//! that only does what its inputs say and hands back events): the caller feeds
//! [`Input`]s (a frame written, a guest's kick, a read by userspace, time advancing, the
//! end of input) to [`Pipeline::handle`], and receives the pipeline's events through a
//! callback as they happen. The same events feed the trace, the output pcap and the
//! benchmarks; a pipeline keeps no list of its results and reads no clock: time is what
//! the inputs' timestamps say.
//!
//! Who decides when userspace reads or the guest kicks is not the pipeline but the
//! scenario's plan for userspace ([`Schedule`]: `[reader] read_every`, `[vhost] fill`),
//! which turns each input frame into the inputs that follow it. Every run, the CLI's
//! replay, the bench and the tests' recorders alike, goes through the one loop of
//! [`drive`].

pub mod drive;
pub mod frame_meta;
mod mq_tap;
pub mod schedule;
pub mod tap_gro;
pub mod tap_gro_record;
pub mod tap_gro_trace;
pub mod tap_write;
pub mod tap_write_trace;
pub mod tun_read;
pub mod tun_read_trace;
pub mod vhost_tx;

pub use drive::{drive, Driver};
pub use schedule::Schedule;

/// One input to a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input<'a> {
    /// Input frame `index`, at `ts_ns`, enters the path: userspace writes it (tap-write,
    /// tap-gro), a peer sends it into the tap (tun-read), or the guest queues it on its
    /// TX ring (vhost-tx). The clock moves to `ts_ns` first.
    Frame {
        index: u64,
        ts_ns: u64,
        bytes: &'a [u8],
    },
    /// The guest kicks vhost_net (vhost-tx): the worker takes what the guest queued.
    Kick,
    /// Userspace reads the tap fds (and the redirect target's) until they are empty.
    Read,
    /// Time reaches `ts_ns` without a frame (the clock never goes back); a NAPI poll run
    /// after it sees what is due by then (the gro_flush_timeout hrtimer).
    AdvanceTo { ts_ns: u64 },
    /// End of input: the guest's last kick, the reader's last reads, the last NAPI poll
    /// and a pending hrtimer.
    End,
}

/// Why a pipeline could not go on: the scenario's, not the kernel's (a recipe that does
/// not fit the frame, a program the VM cannot run); what the kernel refuses is an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineError {
    /// The input frame it concerns, when there is one.
    pub frame: Option<u64>,
    pub why: String,
}

impl std::fmt::Display for PipelineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.frame {
            Some(i) => write!(f, "frame {i}: {}", self.why),
            None => f.write_str(&self.why),
        }
    }
}

impl std::error::Error for PipelineError {}

impl PipelineError {
    /// The model's refusal as the pipeline's error, about input frame `frame` (or none):
    /// for `map_err` in a [`Pipeline::handle`].
    pub fn at(frame: Option<u64>) -> impl Fn(crate::tun::write::ModelError) -> PipelineError {
        move |e| PipelineError { frame, why: e.0 }
    }
}

/// What every pipeline implements.
pub trait Pipeline {
    /// What happened, in order.
    type Event;

    /// Handle one input; every event it causes goes to `events` before this returns.
    fn handle(
        &mut self,
        input: Input<'_>,
        events: &mut impl FnMut(Self::Event),
    ) -> Result<(), PipelineError>;

    /// What of an event can serve again (a frame's buffer, an skb).
    type Spare;

    /// The reusable part of a rendered event, if it has one.
    fn spare(event: Self::Event) -> Option<Self::Spare>;

    /// Give it back for later inputs (a streamed run renders each event and then returns
    /// its buffers, so a long replay allocates nothing per frame).
    fn recycle(&mut self, spare: Self::Spare);
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod shape_tests;
