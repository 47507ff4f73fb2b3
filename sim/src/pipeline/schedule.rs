//! The scenario's plan for userspace and the guest: which inputs follow each input frame.
//! The pipelines only do what their inputs say; this is what says when the reader reads
//! (`[reader] read_every`, every write for tap-write) and when the guest kicks (`[vhost]
//! fill`). The last kick and the last reads come with [`super::Input::End`].

use crate::scenario::{GuestPlan, Pipeline as Kind, Scenario};

use super::vhost_tx::kicks_now;
use super::Input;

const NOTHING: &[Input<'static>] = &[];
const READ: &[Input<'static>] = &[Input::Read];
/// vhost_net's host side: the stack's frames and the readers come after every kick.
const KICK_READ: &[Input<'static>] = &[Input::Kick, Input::Read];

/// Which inputs follow each frame.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// Nothing but the frames (tap-gro: the NAPI poll is the kernel's, every `[gro]
    /// burst` writes, inside the write).
    Frames,
    /// A read after every `every` frames (tun-read's `[reader] read_every`; 1 for
    /// tap-write, whose reader drains after each write).
    ReadEvery { every: usize, since: usize },
    /// A kick when the guest's fill plan says so, then the host's reads.
    Guest { guest: GuestPlan, pending: usize },
}

impl Schedule {
    pub fn for_scenario(scenario: &Scenario) -> Schedule {
        match scenario.pipeline {
            Kind::TunRead => Schedule::ReadEvery {
                every: scenario.reader.read_every,
                since: 0,
            },
            Kind::TapWrite => Schedule::ReadEvery { every: 1, since: 0 },
            // An exec scenario has no frames: its program makes the traffic.
            Kind::TapGro | Kind::Exec => Schedule::Frames,
            Kind::VhostTx => match &scenario.guest {
                Some(g) => Schedule::Guest {
                    guest: g.clone(),
                    pending: 0,
                },
                // VhostTxRun::new refuses the scenario.
                None => Schedule::Frames,
            },
        }
    }

    /// The inputs that follow the frame just fed.
    #[inline]
    pub fn after_frame(&mut self) -> &'static [Input<'static>] {
        match self {
            Schedule::Frames => NOTHING,
            Schedule::ReadEvery { every, since } => {
                *since += 1;
                if *since >= *every {
                    *since = 0;
                    READ
                } else {
                    NOTHING
                }
            }
            Schedule::Guest { guest, pending } => {
                *pending += 1;
                if kicks_now(guest, *pending) {
                    *pending = 0;
                    KICK_READ
                } else {
                    NOTHING
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{GuestFill, WriterVnet};

    #[test]
    fn read_every_three_frames() {
        let mut s = Schedule::ReadEvery { every: 3, since: 0 };
        let got: Vec<usize> = (0..7).map(|_| s.after_frame().len()).collect();
        assert_eq!(got, [0, 0, 1, 0, 0, 1, 0]);
    }

    #[test]
    fn a_burst_of_two_kicks_every_second_frame_then_reads() {
        let guest = GuestPlan {
            hdr_len: 12,
            fill: GuestFill::Burst(2),
            vnet: WriterVnet::default(),
            overrides: Vec::new(),
        };
        let mut s = Schedule::Guest { guest, pending: 0 };
        assert!(s.after_frame().is_empty());
        assert_eq!(s.after_frame(), [Input::Kick, Input::Read]);
        assert!(s.after_frame().is_empty());
    }
}
