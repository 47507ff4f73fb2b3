//! skbsim's model of the Linux virtual-networking datapath.
//!
//! No network I/O, no wall clock, no unseeded randomness: the same input gives the same
//! bytes out on every run. Modules follow the kernel's own split.

pub mod pcap;
pub mod skb;
pub mod wire;
