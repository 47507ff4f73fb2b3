//! The tun ioctl ABI: numbers and flag bits of include/uapi/linux/if_tun.h.

/// The tun ioctl numbers (include/uapi/linux/if_tun.h, x86_64 `_IOW`/`_IOR` encoding).
pub mod cmd {
    pub const TUNSETNOCSUM: u32 = 0x4004_54c8;
    pub const TUNSETDEBUG: u32 = 0x4004_54c9;
    pub const TUNSETIFF: u32 = 0x4004_54ca;
    pub const TUNSETPERSIST: u32 = 0x4004_54cb;
    pub const TUNSETOWNER: u32 = 0x4004_54cc;
    pub const TUNSETLINK: u32 = 0x4004_54cd;
    pub const TUNSETGROUP: u32 = 0x4004_54ce;
    pub const TUNGETFEATURES: u32 = 0x8004_54cf;
    pub const TUNSETOFFLOAD: u32 = 0x4004_54d0;
    pub const TUNSETTXFILTER: u32 = 0x4004_54d1;
    pub const TUNGETIFF: u32 = 0x8004_54d2;
    pub const TUNGETSNDBUF: u32 = 0x8004_54d3;
    pub const TUNSETSNDBUF: u32 = 0x4004_54d4;
    /// `_IOW('T', 213, struct sock_fprog)`: 16 bytes on x86_64.
    pub const TUNATTACHFILTER: u32 = 0x4010_54d5;
    pub const TUNDETACHFILTER: u32 = 0x4010_54d6;
    pub const TUNGETVNETHDRSZ: u32 = 0x8004_54d7;
    pub const TUNSETVNETHDRSZ: u32 = 0x4004_54d8;
    pub const TUNSETQUEUE: u32 = 0x4004_54d9;
    pub const TUNSETIFINDEX: u32 = 0x4004_54da;
    pub const TUNGETFILTER: u32 = 0x8010_54db;
    pub const TUNSETVNETLE: u32 = 0x4004_54dc;
    pub const TUNGETVNETLE: u32 = 0x8004_54dd;
    pub const TUNSETVNETBE: u32 = 0x4004_54de;
    pub const TUNGETVNETBE: u32 = 0x8004_54df;
    pub const TUNSETSTEERINGEBPF: u32 = 0x8004_54e0;
    pub const TUNSETFILTEREBPF: u32 = 0x8004_54e1;
    pub const TUNSETCARRIER: u32 = 0x4004_54e2;
    pub const TUNGETDEVNETNS: u32 = 0x0000_54e3;
    /// Socket ioctls tun_chr_ioctl also serves (SOCK_IOC_TYPE 0x89).
    pub const SIOCSIFHWADDR: u32 = 0x8924;
    pub const SIOCGIFHWADDR: u32 = 0x8927;
    pub const SIOCGSKNS: u32 = 0x894c;

    /// Every command above with its name, in the order of if_tun.h.
    const NAMES: [(u32, &str); 31] = [
        (TUNSETNOCSUM, "TUNSETNOCSUM"),
        (TUNSETDEBUG, "TUNSETDEBUG"),
        (TUNSETIFF, "TUNSETIFF"),
        (TUNSETPERSIST, "TUNSETPERSIST"),
        (TUNSETOWNER, "TUNSETOWNER"),
        (TUNSETLINK, "TUNSETLINK"),
        (TUNSETGROUP, "TUNSETGROUP"),
        (TUNGETFEATURES, "TUNGETFEATURES"),
        (TUNSETOFFLOAD, "TUNSETOFFLOAD"),
        (TUNSETTXFILTER, "TUNSETTXFILTER"),
        (TUNGETIFF, "TUNGETIFF"),
        (TUNGETSNDBUF, "TUNGETSNDBUF"),
        (TUNSETSNDBUF, "TUNSETSNDBUF"),
        (TUNATTACHFILTER, "TUNATTACHFILTER"),
        (TUNDETACHFILTER, "TUNDETACHFILTER"),
        (TUNGETVNETHDRSZ, "TUNGETVNETHDRSZ"),
        (TUNSETVNETHDRSZ, "TUNSETVNETHDRSZ"),
        (TUNSETQUEUE, "TUNSETQUEUE"),
        (TUNSETIFINDEX, "TUNSETIFINDEX"),
        (TUNGETFILTER, "TUNGETFILTER"),
        (TUNSETVNETLE, "TUNSETVNETLE"),
        (TUNGETVNETLE, "TUNGETVNETLE"),
        (TUNSETVNETBE, "TUNSETVNETBE"),
        (TUNGETVNETBE, "TUNGETVNETBE"),
        (TUNSETSTEERINGEBPF, "TUNSETSTEERINGEBPF"),
        (TUNSETFILTEREBPF, "TUNSETFILTEREBPF"),
        (TUNSETCARRIER, "TUNSETCARRIER"),
        (TUNGETDEVNETNS, "TUNGETDEVNETNS"),
        (SIOCSIFHWADDR, "SIOCSIFHWADDR"),
        (SIOCGIFHWADDR, "SIOCGIFHWADDR"),
        (SIOCGSKNS, "SIOCGSKNS"),
    ];

    /// The command's name as if_tun.h spells it (`TUNSETIFF`); None for a number that
    /// is none of them.
    pub fn name(c: u32) -> Option<&'static str> {
        NAMES.iter().find(|(n, _)| *n == c).map(|(_, s)| *s)
    }
}

/// TUNSETIFF / TUNGETIFF / TUNSETQUEUE `ifr_flags` (include/uapi/linux/if_tun.h).
pub mod iff_flags {
    pub const IFF_TUN: u16 = 0x0001;
    pub const IFF_TAP: u16 = 0x0002;
    pub const IFF_NAPI: u16 = 0x0010;
    pub const IFF_NAPI_FRAGS: u16 = 0x0020;
    pub const IFF_NO_CARRIER: u16 = 0x0040;
    pub const IFF_MULTI_QUEUE: u16 = 0x0100;
    pub const IFF_ATTACH_QUEUE: u16 = 0x0200;
    pub const IFF_DETACH_QUEUE: u16 = 0x0400;
    pub const IFF_PERSIST: u16 = 0x0800;
    pub const IFF_NO_PI: u16 = 0x1000;
    /// The same bit as IFF_NO_PI: TUNSETIFF with IFF_NO_PI also skips the filter
    /// re-attach, and TUNGETIFF reports "no socket filter" with it.
    pub const IFF_NOFILTER: u16 = 0x1000;
    pub const IFF_ONE_QUEUE: u16 = 0x2000;
    pub const IFF_VNET_HDR: u16 = 0x4000;
    pub const IFF_TUN_EXCL: u16 = 0x8000;
    /// TUN_TYPE_MASK.
    pub const TUN_TYPE_MASK: u16 = 0x000f;
}

/// TUNSETOFFLOAD bits (include/uapi/linux/if_tun.h).
pub mod tun_f {
    pub const CSUM: u64 = 0x01;
    pub const TSO4: u64 = 0x02;
    pub const TSO6: u64 = 0x04;
    pub const TSO_ECN: u64 = 0x08;
    pub const UFO: u64 = 0x10;
    pub const USO4: u64 = 0x20;
    pub const USO6: u64 = 0x40;
    pub const UDP_TUNNEL_GSO: u64 = 0x80;
    pub const UDP_TUNNEL_GSO_CSUM: u64 = 0x100;
}
