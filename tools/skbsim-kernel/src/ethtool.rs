//! Netdev features through the `SIOCETHTOOL` ioctl (what `ethtool -k/-K` does), without
//! shelling out: `ETHTOOL_GSSET_INFO` + `ETHTOOL_GSTRINGS` (ETH_SS_FEATURES) map names to
//! bit indexes, `ETHTOOL_GFEATURES` reads, `ETHTOOL_SFEATURES` writes.
//!
//! Why the ioctl and not ethtool's generic netlink family: the rust-netlink `ethtool` crate
//! (0.3.0) has `ETHTOOL_MSG_FEATURES_GET` but no `ETHTOOL_MSG_FEATURES_SET`, and it is
//! async only (netlink-proto, futures); writing the `ETHTOOL_A_BITSET_*` encoding by hand
//! over netlink-packet-generic would be more hand-built netlink, not less. The ioctl is one
//! `unsafe` block ([`Ethtool::ioctl`]); the socket and `struct ifreq` are [`crate::sys`]'s.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use crate::error::{Cause, KernelError};
use crate::sys::{ctl_socket, cvt, ensure_private_netns, ifname_array, IfreqPtr};

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETHTOOL_GFEATURES: u32 = 0x3a;
const ETHTOOL_SFEATURES: u32 = 0x3b;
const ETH_SS_FEATURES: u32 = 4;
const ETH_GSTRING_LEN: usize = 32;

/// `ETHTOOL_F_UNSUPPORTED`: a requested feature cannot be changed on this device.
pub const ETHTOOL_F_UNSUPPORTED: u32 = 1;
/// `ETHTOOL_F_WISH`: stored as wanted but not active (a dependency is missing).
pub const ETHTOOL_F_WISH: u32 = 2;
/// `ETHTOOL_F_COMPAT`: some legacy feature changes were ignored.
pub const ETHTOOL_F_COMPAT: u32 = 4;

/// ethtool's short names for the kernel's feature strings (`ethtool -K dev txvlan off`).
pub fn canonical_feature_name(name: &str) -> &str {
    match name {
        "txvlan" | "tx-vlan-offload" => "tx-vlan-hw-insert",
        "rxvlan" | "rx-vlan-offload" => "rx-vlan-hw-parse",
        "gro" | "generic-receive-offload" => "rx-gro",
        "lro" | "large-receive-offload" => "rx-lro",
        "gso" | "generic-segmentation-offload" => "tx-generic-segmentation",
        "tso" | "tcp-segmentation-offload" => "tx-tcp-segmentation",
        "sg" | "scatter-gather" => "tx-scatter-gather",
        "rx" | "rx-checksumming" => "rx-checksum",
        "rxhash" | "receive-hashing" => "rx-hashing",
        "ntuple" | "ntuple-filters" => "rx-ntuple-filter",
        "gro-hw" => "rx-gro-hw",
        other => other,
    }
}

/// One feature bit of a device, as `ETHTOOL_GFEATURES` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feature {
    /// Kernel string ("tx-vlan-hw-insert").
    pub name: String,
    /// Bit index in the feature words.
    pub bit: u32,
    /// In `hw_features`: user-changeable.
    pub available: bool,
    /// In `wanted_features`.
    pub requested: bool,
    /// In `features`: what the datapath uses.
    pub active: bool,
    /// In `NETIF_F_NEVER_CHANGE`: fixed forever.
    pub never_changed: bool,
}

/// A `SIOCETHTOOL` handle bound to the network namespace of the thread that created it.
#[derive(Debug)]
pub struct Ethtool {
    sock: OwnedFd,
    names: Option<Vec<String>>,
}

impl Ethtool {
    /// A handle in the calling thread's namespace (refused in the main namespace).
    pub fn new() -> Result<Self, KernelError> {
        ensure_private_netns("SIOCETHTOOL socket")?;
        Ok(Ethtool {
            sock: ctl_socket("SIOCETHTOOL")?,
            names: None,
        })
    }

    fn ioctl(&self, op: &str, ifname: &str, data: *mut libc::c_void) -> Result<i32, KernelError> {
        let mut req = IfreqPtr::new(ifname_array(op, ifname)?, data);
        // SAFETY: SIOCETHTOOL reads the ifreq; the kernel reads/writes the command buffer
        // `data` points to, which the caller keeps alive and sizes for the command.
        let ret = unsafe { libc::ioctl(self.sock.as_fd().as_raw_fd(), SIOCETHTOOL, &mut req) };
        cvt(ret).map_err(|e| KernelError::sys(op, e))
    }

    /// The feature strings of `ETH_SS_FEATURES`, indexed by bit (the set is global to the
    /// kernel; cached after the first call).
    pub fn feature_names(&mut self, ifname: &str) -> Result<Vec<String>, KernelError> {
        if let Some(n) = &self.names {
            return Ok(n.clone());
        }
        // struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[1]; }
        let op = format!("ETHTOOL_GSSET_INFO on {ifname}");
        let mask = 1u64 << ETH_SS_FEATURES;
        let mut info = [0u8; 24];
        info[0..4].copy_from_slice(&ETHTOOL_GSSET_INFO.to_ne_bytes());
        info[8..16].copy_from_slice(&mask.to_ne_bytes());
        self.ioctl(&op, ifname, info.as_mut_ptr().cast())?;
        let got = u64::from_ne_bytes(info[8..16].try_into().unwrap_or_default());
        if got & mask == 0 {
            return Err(KernelError::new(
                op,
                Cause::NotFound("ETH_SS_FEATURES".into()),
            ));
        }
        let count = u32::from_ne_bytes(info[16..20].try_into().unwrap_or_default()) as usize;

        // struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
        let op = format!("ETHTOOL_GSTRINGS features on {ifname}");
        let total = 12 + count * ETH_GSTRING_LEN;
        let mut buf = vec![0u32; total.div_ceil(4)];
        buf[0] = ETHTOOL_GSTRINGS;
        buf[1] = ETH_SS_FEATURES;
        buf[2] = count as u32;
        self.ioctl(&op, ifname, buf.as_mut_ptr().cast())?;
        let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let n = (buf[2] as usize).min(count);
        let names = (0..n)
            .map(|i| {
                let s = &bytes[12 + i * ETH_GSTRING_LEN..12 + (i + 1) * ETH_GSTRING_LEN];
                crate::sys::ifname_from_array(s)
            })
            .collect::<Vec<_>>();
        self.names = Some(names.clone());
        Ok(names)
    }

    /// Every feature of `ifname` with its four bits.
    pub fn features(&mut self, ifname: &str) -> Result<Vec<Feature>, KernelError> {
        let names = self.feature_names(ifname)?;
        let nwords = names.len().div_ceil(32);
        // struct ethtool_gfeatures { u32 cmd; u32 size; struct { u32 available, requested,
        // active, never_changed; } features[]; }
        let op = format!("ETHTOOL_GFEATURES on {ifname}");
        let mut buf = vec![0u32; 2 + 4 * nwords];
        buf[0] = ETHTOOL_GFEATURES;
        buf[1] = nwords as u32;
        self.ioctl(&op, ifname, buf.as_mut_ptr().cast())?;
        let bit = |set: usize, i: usize| buf[2 + 4 * (i / 32) + set] & (1 << (i % 32)) != 0;
        Ok(names
            .iter()
            .enumerate()
            .map(|(i, name)| Feature {
                name: name.clone(),
                bit: i as u32,
                available: bit(0, i),
                requested: bit(1, i),
                active: bit(2, i),
                never_changed: bit(3, i),
            })
            .collect())
    }

    /// One feature by kernel name or ethtool alias.
    pub fn feature(&mut self, ifname: &str, name: &str) -> Result<Feature, KernelError> {
        let want = canonical_feature_name(name);
        self.features(ifname)?
            .into_iter()
            .find(|f| f.name == want)
            .ok_or_else(|| {
                KernelError::new(
                    format!("ethtool feature lookup on {ifname}"),
                    Cause::NotFound(format!("feature {name:?}")),
                )
            })
    }

    /// Whether the feature is active.
    pub fn get_feature(&mut self, ifname: &str, name: &str) -> Result<bool, KernelError> {
        Ok(self.feature(ifname, name)?.active)
    }

    /// `ETHTOOL_SFEATURES` for one feature, then read it back. Errors with
    /// [`Cause::FeatureNotApplied`] (with the ioctl's `ETHTOOL_F_*` bits) when the active
    /// value is not the one asked for.
    pub fn set_feature(
        &mut self,
        ifname: &str,
        name: &str,
        on: bool,
    ) -> Result<Feature, KernelError> {
        let f = self.feature(ifname, name)?;
        let nwords = self.feature_names(ifname)?.len().div_ceil(32);
        let op = format!(
            "ETHTOOL_SFEATURES {}={} on {ifname}",
            f.name,
            if on { "on" } else { "off" }
        );
        // struct ethtool_sfeatures { u32 cmd; u32 size; struct { u32 valid, requested; } [] }
        let mut buf = vec![0u32; 2 + 2 * nwords];
        buf[0] = ETHTOOL_SFEATURES;
        buf[1] = nwords as u32;
        let w = (f.bit / 32) as usize;
        let b = 1u32 << (f.bit % 32);
        buf[2 + 2 * w] = b;
        if on {
            buf[2 + 2 * w + 1] = b;
        }
        let flags = self.ioctl(&op, ifname, buf.as_mut_ptr().cast())? as u32;
        let after = self.feature(ifname, &f.name)?;
        if after.active != on {
            return Err(KernelError::new(
                op,
                Cause::FeatureNotApplied {
                    wanted: on,
                    active: after.active,
                    ethtool_flags: flags,
                },
            ));
        }
        Ok(after)
    }
}

/// Whether a feature is active on `ifname` (calling thread's namespace).
pub fn get_feature(ifname: &str, name: &str) -> Result<bool, KernelError> {
    Ethtool::new()?.get_feature(ifname, name)
}

/// Set a feature on `ifname` (calling thread's namespace); see [`Ethtool::set_feature`].
pub fn set_feature(ifname: &str, name: &str, on: bool) -> Result<(), KernelError> {
    Ethtool::new()?.set_feature(ifname, name, on).map(|_| ())
}
