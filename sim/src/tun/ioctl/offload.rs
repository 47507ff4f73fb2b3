//! TUNSETOFFLOAD (drivers/net/tun.c: set_offload) and TUNGETFEATURES (__tun_chr_ioctl).
//! docs/tun-ioctl.md#setoffload, docs/tun-ioctl.md#getfeatures.

use super::iff_flags::*;
use super::tun_f;
use crate::errno::Errno;
use crate::profile::TunIoctlRules;
use crate::tun::Offloads;

/// TUNGETFEATURES: `IFF_TUN | IFF_TAP | IFF_NO_CARRIER | TUN_FEATURES`, where TUN_FEATURES
/// is IFF_NO_PI | IFF_ONE_QUEUE | IFF_VNET_HDR | IFF_MULTI_QUEUE | IFF_NAPI |
/// IFF_NAPI_FRAGS: 0x7173 on 6.0+, 0x7133 before IFF_NO_CARRIER, 0x7103 before IFF_NAPI.
pub fn features_word(rules: &TunIoctlRules) -> u32 {
    let mut w = IFF_TUN | IFF_TAP | IFF_NO_PI | IFF_ONE_QUEUE | IFF_VNET_HDR | IFF_MULTI_QUEUE;
    if rules.napi {
        w |= IFF_NAPI | IFF_NAPI_FRAGS;
    }
    if rules.no_carrier {
        w |= IFF_NO_CARRIER;
    }
    u32::from(w)
}

/// set_offload: the device offloads `arg` asks for, or EINVAL when a bit is left over
/// ("This gives the user a way to test for new features in future by trying to set them").
/// Every bit needs TUN_F_CSUM; TSO_ECN needs TSO4 or TSO6; USO4 and USO6 only together
/// (v6.2); the UDP tunnel bits need a plain GSO (TSO4, TSO6 or USO) and the CSUM one
/// needs UDP_TUNNEL_GSO (v6.17). TUN_F_UFO is accepted (with CSUM) and ignored since
/// v4.14; `ufo` records that it was asked.
pub fn set_offload(rules: &TunIoctlRules, mut arg: u64) -> Result<Offloads, Errno> {
    let mut o = Offloads::default();
    if arg & tun_f::CSUM != 0 {
        o.csum = true;
        arg &= !tun_f::CSUM;
        if arg & (tun_f::TSO4 | tun_f::TSO6) != 0 {
            if arg & tun_f::TSO_ECN != 0 {
                o.tso_ecn = true;
                arg &= !tun_f::TSO_ECN;
            }
            o.tso4 = arg & tun_f::TSO4 != 0;
            o.tso6 = arg & tun_f::TSO6 != 0;
            arg &= !(tun_f::TSO4 | tun_f::TSO6);
        }
        o.ufo = arg & tun_f::UFO != 0;
        arg &= !tun_f::UFO;
        if rules.uso && arg & tun_f::USO4 != 0 && arg & tun_f::USO6 != 0 {
            o.uso4 = true;
            o.uso6 = true;
            arg &= !(tun_f::USO4 | tun_f::USO6);
        }
        // PLAIN_GSO = NETIF_F_GSO_UDP_L4 | NETIF_F_TSO | NETIF_F_TSO6.
        let plain_gso = o.tso4 || o.tso6 || o.uso4;
        if rules.udp_tunnel_gso && plain_gso && arg & tun_f::UDP_TUNNEL_GSO != 0 {
            o.udp_tunnel_gso = true;
            o.udp_tunnel_gso_csum = arg & tun_f::UDP_TUNNEL_GSO_CSUM != 0;
            arg &= !(tun_f::UDP_TUNNEL_GSO | tun_f::UDP_TUNNEL_GSO_CSUM);
        }
    }
    if arg != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(o)
}
