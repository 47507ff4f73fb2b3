//! The IPv4 address of a simulated device as the AF_INET socket ioctls set and read it:
//! net/ipv4/devinet.c: devinet_ioctl (SIOCSIFADDR, SIOCSIFNETMASK, SIOCGIFADDR,
//! SIOCGIFNETMASK), reached from inet_ioctl (net/ipv4/af_inet.c) on an AF_INET socket.
//! The address is the far side's: the kernel puts it on its own stack (inet_set_ifa), so
//! the stack behind the simulated device answers for it ([`crate::FarSide::address`]).
//!
//! One address per device, the one labelled with the device's name (devinet_ioctl finds
//! the ifa by `ifa_label == ifr_name`); RTM_NEWADDR sets the same one (src/rtnl.rs), a
//! second address is not modelled (docs/exec.md#limits).

use crate::Errno;

/// AF_INET (include/linux/socket.h).
pub const AF_INET: u16 = 2;

/// The ifa devinet_ioctl keeps for the device: ifa_local and ifa_prefixlen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ifa {
    pub local: [u8; 4],
    pub prefix: u8,
}

impl Ifa {
    /// ifa_mask: inet_make_mask(ifa_prefixlen).
    pub fn mask(&self) -> [u8; 4] {
        let bits = u32::MAX
            .checked_shl(32 - u32::from(self.prefix))
            .unwrap_or(0);
        bits.to_be_bytes()
    }
}

/// include/linux/inetdevice.h: inet_abc_len: the classful prefix length, None for an
/// address no class takes (multicast: SIOCSIFADDR is EINVAL).
fn inet_abc_len(a: [u8; 4]) -> Option<u8> {
    if a[0] == 0 || a == [255; 4] {
        return Some(0);
    }
    match a[0] {
        0..=127 => Some(8),
        128..=191 => Some(16),
        192..=223 => Some(24),
        240..=255 => Some(32),
        _ => None,
    }
}

/// SIOCSIFADDR with `sin_family`/`addr` on a device (`pointopoint`: IFF_POINTOPOINT, as a
/// tun is): family not AF_INET or an address of no class: EINVAL; a point-to-point device
/// gets /32, any other the classful prefix (devinet_ioctl: `if (!(dev->flags &
/// IFF_POINTOPOINT)) ifa_prefixlen = inet_abc_len(...) else 32`). Setting the address it
/// already has changes nothing (the prefix stays).
pub fn set_addr(
    old: Option<Ifa>,
    family: u16,
    addr: [u8; 4],
    pointopoint: bool,
) -> Result<Ifa, Errno> {
    if family != AF_INET {
        return Err(Errno::EINVAL);
    }
    let abc = inet_abc_len(addr).ok_or(Errno::EINVAL)?;
    if let Some(old) = old.filter(|o| o.local == addr) {
        return Ok(old);
    }
    let prefix = if pointopoint { 32 } else { abc };
    Ok(Ifa {
        local: addr,
        prefix,
    })
}

/// SIOCSIFNETMASK: family not AF_INET or a mask whose ones are not contiguous
/// (bad_mask): EINVAL; no address yet: EADDRNOTAVAIL (checked first in devinet_ioctl,
/// after the family). The prefix becomes inet_mask_len(mask).
pub fn set_netmask(old: Option<Ifa>, family: u16, mask: [u8; 4]) -> Result<Ifa, Errno> {
    if family != AF_INET {
        return Err(Errno::EINVAL);
    }
    let old = old.ok_or(Errno::EADDRNOTAVAIL)?;
    let m = u32::from_be_bytes(mask);
    let host = !m;
    if host & host.wrapping_add(1) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(Ifa {
        local: old.local,
        prefix: m.count_ones() as u8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tun_gets_32_then_the_netmask() {
        let a = set_addr(None, AF_INET, [10, 0, 0, 1], true).unwrap();
        assert_eq!(a.prefix, 32);
        let a = set_netmask(Some(a), AF_INET, [255, 255, 255, 0]).unwrap();
        assert_eq!((a.local, a.prefix), ([10, 0, 0, 1], 24));
        assert_eq!(a.mask(), [255, 255, 255, 0]);
    }

    #[test]
    fn a_tap_gets_the_classful_prefix() {
        assert_eq!(
            set_addr(None, AF_INET, [10, 1, 2, 3], false)
                .unwrap()
                .prefix,
            8
        );
        assert_eq!(
            set_addr(None, AF_INET, [172, 16, 0, 1], false)
                .unwrap()
                .prefix,
            16
        );
        assert_eq!(
            set_addr(None, AF_INET, [192, 168, 0, 1], false)
                .unwrap()
                .prefix,
            24
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(set_addr(None, 10, [10, 0, 0, 1], true), Err(Errno::EINVAL));
        assert_eq!(
            set_addr(None, AF_INET, [224, 0, 0, 1], true),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            set_netmask(None, AF_INET, [255, 0, 0, 0]),
            Err(Errno::EADDRNOTAVAIL)
        );
        let a = set_addr(None, AF_INET, [10, 0, 0, 1], true).ok();
        assert_eq!(
            set_netmask(a, AF_INET, [255, 0, 255, 0]),
            Err(Errno::EINVAL)
        );
        assert_eq!(set_netmask(a, AF_INET, [0, 0, 0, 0]).unwrap().prefix, 0);
    }
}
