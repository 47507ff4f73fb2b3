//! Kernel profiles: the rules that changed between the kernels skbsim models, as data.
//!
//! A profile is named after the kernel whose behaviour it reproduces. `linux-6.18` is the
//! default and must match the kernel of the machines this bench runs on (see
//! shared/spec/real-kernel-observations.md); older profiles reproduce the source of that
//! release as read (shared/spec/kernel-datapath.md, tags [3.12], [4.19]).

use std::fmt;

/// How tun_put_user decides TUN_PKT_STRIP in tun_pi.flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StripRule {
    /// Set when the buffer is shorter than the whole logical length: PI + vnet + frame +
    /// the spliced tag ([CUR] tun.c: tun_put_user, `iov_iter_count(iter) < total`).
    BufferShorterThanTotal,
    /// 3.12: set when buffer − 4 < skb->len; the vnet area and the tag are ignored.
    BufferMinusPiShorterThanSkbLen,
}

/// What tun_put_user returns and adds to tx_bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutUserAccounting {
    /// Return the full logical length; tx_bytes += skb->len + vlan length (since ~3.19,
    /// and 923347bb83c6 "tun: unbreak truncated packet signalling" for the return value).
    FullLength,
    /// 3.12 as merged with 6680ec68eff4: return the bytes written; tx_bytes += the final
    /// `len` ("room") value, which for a tagged skb leaves out the MACs and the tag.
    BytesWritten312,
}

/// The rules of the tun read path (drivers/net/tun.c: tun_put_user, tun_vnet.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunReadRules {
    pub strip: StripRule,
    pub accounting: PutUserAccounting,
    /// "tun: Fix csum_start with VLAN acceleration" (~2014-15): csum_start += 4 when a
    /// tag is spliced in front of the checksummed bytes.
    pub csum_start_vlan_shift: bool,
    /// 4adf74971018 "tun: Pad virtio headers" (v6.15): zero-fill vnet_hdr_sz beyond the
    /// real header; before it the bytes were skipped and kept the reader's old content.
    pub vnet_pad_zero: bool,
    /// 3.12 still mapped SKB_GSO_UDP (UFO) to VIRTIO_NET_HDR_GSO_UDP; later kernels
    /// return -EINVAL for it on read.
    pub ufo_on_read: bool,
    /// virtio_net_hdr_from_skb knows SKB_GSO_UDP_L4 (USO, v6.2).
    pub uso_on_read: bool,
    /// 16-bit vnet fields converted with tun16 (LE/BE selection, ~3.19-4.0). 3.12 wrote
    /// host order (little-endian on x86), which equals `Little` there.
    pub vnet_endian_selectable: bool,
}

/// One modelled kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelProfile {
    pub name: &'static str,
    pub tun_read: TunReadRules,
}

/// Linux 6.18: the machines' kernel ([CUR] plus [CUR+] fixes).
pub const LINUX_6_18: KernelProfile = KernelProfile {
    name: "linux-6.18",
    tun_read: TunReadRules {
        strip: StripRule::BufferShorterThanTotal,
        accounting: PutUserAccounting::FullLength,
        csum_start_vlan_shift: true,
        vnet_pad_zero: true,
        ufo_on_read: false,
        uso_on_read: true,
        vnet_endian_selectable: true,
    },
};

/// Linux 4.19 ([4.19]): as 6.18 on the read path except that the vnet padding is skipped
/// and USO does not exist yet.
pub const LINUX_4_19: KernelProfile = KernelProfile {
    name: "linux-4.19",
    tun_read: TunReadRules {
        vnet_pad_zero: false,
        uso_on_read: false,
        ..LINUX_6_18.tun_read
    },
};

/// Linux 3.12: 6680ec68eff4 "tuntap: hardware vlan tx support" as merged ([3.12]).
pub const LINUX_3_12: KernelProfile = KernelProfile {
    name: "linux-3.12",
    tun_read: TunReadRules {
        strip: StripRule::BufferMinusPiShorterThanSkbLen,
        accounting: PutUserAccounting::BytesWritten312,
        csum_start_vlan_shift: false,
        vnet_pad_zero: false,
        ufo_on_read: true,
        uso_on_read: false,
        vnet_endian_selectable: false,
    },
};

/// Every profile, default first.
pub const PROFILES: [KernelProfile; 3] = [LINUX_6_18, LINUX_4_19, LINUX_3_12];

impl KernelProfile {
    /// The profile named `name`, or an error listing the known names.
    pub fn by_name(name: &str) -> Result<KernelProfile, UnknownProfile> {
        PROFILES
            .iter()
            .find(|p| p.name == name)
            .copied()
            .ok_or_else(|| UnknownProfile(name.to_string()))
    }
}

impl Default for KernelProfile {
    fn default() -> Self {
        LINUX_6_18
    }
}

/// A profile name skbsim does not model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProfile(pub String);

impl fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        write!(
            f,
            "unknown kernel profile '{}' (known: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownProfile {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_by_name_and_unknown_names_list_the_choices() {
        assert_eq!(KernelProfile::by_name("linux-3.12").unwrap(), LINUX_3_12);
        let err = KernelProfile::by_name("linux-2.6").unwrap_err().to_string();
        assert!(err.contains("linux-6.18, linux-4.19, linux-3.12"), "{err}");
    }
}
