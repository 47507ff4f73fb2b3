//! Pipelines: a scenario's frames driven through a modelled path, with no I/O. The caller
//! feeds frames (from a pcap or anywhere) and receives events; the same events feed the
//! trace, the output pcap and the benchmarks.

pub mod frame_meta;
pub mod tap_gro;
pub mod tap_write;
pub mod tun_read;
pub mod vhost_tx;
