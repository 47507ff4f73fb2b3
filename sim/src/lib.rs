//! skbsim's model of the Linux virtual-networking datapath.
//!
//! No network I/O, no wall clock, no unseeded randomness: the same input gives the same
//! bytes out on every run. Modules follow the kernel's own split: the sk_buff (`skb`),
//! the tun/tap device and its read and write paths (`tun`), XDP on it (`xdp`, running the
//! program in the safe eBPF VM of `bpf`), and the pipelines that drive a
//! scenario's frames through them (`pipeline`).

pub mod bpf;
pub mod bridge;
pub mod consts;
pub mod errno;
pub mod ethernet;
pub mod fsutil;
pub mod gro;
pub mod net;
pub mod pcap;
pub mod pipeline;
pub mod pool;
pub mod profile;
pub mod scenario;
pub mod skb;
pub mod text;
pub mod trace;
pub mod tun;
pub mod vhost;
pub mod wire;
pub mod xdp;
