//! Real-kernel arms: a scenario replayed through real devices in a private namespace,
//! producing the same events the simulator produces, so one renderer writes both traces
//! and `skbsim conform` compares them field by field.
//!
//! - [`tun_read`]: the `tun-read` pipeline (a writer tap bridged to the tap under test).
//! - [`bench`]: real frames/s through that path, tx VLAN offload on vs off.
//! - [`tap_write`]: the `tap-write` pipeline (writes into a tap through its XDP program),
//!   and the real XDP_TX native-vs-generic benchmark ([`tap_write::xdp_tx_bench`]).
//! - [`tap_gro`]: the `tap-gro` pipeline (writes into an IFF_NAPI tap, GRO, AF_PACKET
//!   with PACKET_VNET_HDR), and the real GRO on/off benchmark ([`tap_gro::gro_bench`]).
//! - [`vhost_tx`]: the `vhost-tx` pipeline (a userspace vhost_net client as the guest,
//!   the tap's host side as in tap-write); needs /dev/vhost-net (the lab's guest).

pub mod bench;
pub mod tap_gro;
pub mod tap_side;
pub mod tap_write;
pub mod tun_read;
pub mod tun_read_path;
pub mod vhost_tx;

use std::fmt;

use sim::scenario::Pipeline;

use sim::tun::{TunConfig, TunStats};

use crate::error::{Errno, KernelError};
use crate::rtnl::LinkStats;

/// `Ok(())` when the real backend has an arm for `pipeline`; otherwise why not.
pub fn real_arm(pipeline: Pipeline) -> Result<(), String> {
    match pipeline {
        Pipeline::TunRead => Ok(()),
        Pipeline::TapWrite => Ok(()),
        Pipeline::TapGro => Ok(()),
        Pipeline::VhostTx => Ok(()),
        // Not an arm of this module: an exec scenario's program runs on real tun/tap
        // files through `skbsim exec --backend tap` (tools/skbsim/src/exec_tap.rs),
        // which only `skbsim conform` on this machine runs (the lab's guest has no
        // compiler, and `run --backend tap` compares captures' replays).
        Pipeline::Exec => Err(
            "an exec scenario's program is compared with the real kernel by `skbsim conform` on this machine"
                .into(),
        ),
    }
}

pub use bench::{vlan_offload_bench, BenchFrame, VlanBench, VlanBenchConfig, VlanModeResult};
pub use tap_write::{run_tap_write, RealTapWrite};
pub use tun_read::{expressible, run_tun_read, RealTunRead, WriterKind};
pub use vhost_tx::{run_vhost_tx, RealVhostTx};

/// The arms set a scenario up as the running kernel's; one written for another profile
/// (`linux-4.19`, ...) cannot run as itself (`lab conform --old-profiles` sets it up as
/// the host profile's and compares under its own).
pub(crate) fn host_profile_only(scenario: &sim::scenario::Scenario) -> Result<(), ArmError> {
    let host = sim::profile::KernelProfile::default();
    if scenario.profile.name != host.name {
        return Err(ArmError::Unsupported(format!(
            "profile {} is not the host kernel's ({})",
            scenario.profile.name, host.name
        )));
    }
    Ok(())
}

/// The scenario's input frames as (index, ts, bytes); an unreadable pcap is an input
/// error naming the file.
pub(crate) fn load_frames(
    scenario: &sim::scenario::Scenario,
) -> Result<Vec<(u64, u64, Vec<u8>)>, ArmError> {
    // The same Ethernet frames the simulator reads, whatever the capture's link type.
    sim::pcap::EthernetInput::read_all(&scenario.input, scenario.link)
        .map_err(|e| ArmError::Input(e.to_string()))
}

/// Why a real-kernel arm could not produce a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArmError {
    /// A kernel operation failed; displays as `op: cause`.
    Kernel(KernelError),
    /// The scenario's input is unusable (pcap, frame, metadata recipe): `file: problem`.
    Input(String),
    /// The scenario asks for something the real kernel here cannot be made to do; the
    /// scenario needs `sim_only = "<this reason>"`.
    Unsupported(String),
}

impl fmt::Display for ArmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArmError::Kernel(e) => write!(f, "{e}"),
            ArmError::Input(m) => f.write_str(m),
            ArmError::Unsupported(m) => write!(f, "the real kernel here cannot run this: {m}"),
        }
    }
}

impl std::error::Error for ArmError {}

impl From<KernelError> for ArmError {
    fn from(e: KernelError) -> Self {
        ArmError::Kernel(e)
    }
}

/// A failed kernel operation as an arm error.
pub(crate) fn kerr(op: String, e: Errno) -> ArmError {
    ArmError::Kernel(KernelError::sys(op, e))
}

/// The netlink counters in the simulator's terms.
pub(crate) fn tun_stats(s: &LinkStats) -> TunStats {
    TunStats {
        rx_packets: s.rx_packets,
        rx_bytes: s.rx_bytes,
        rx_dropped: s.rx_dropped,
        rx_frame_errors: s.rx_frame_errors,
        tx_packets: s.tx_packets,
        tx_bytes: s.tx_bytes,
        tx_dropped: s.tx_dropped,
    }
}

/// TUNSETOFFLOAD bits for a scenario device.
pub(crate) fn offload_bits(dev: &TunConfig) -> u32 {
    // Every TUN_F_ bit is below 0x200: the unsigned long argument fits the u32.
    dev.offloads.tun_f_bits() as u32
}
