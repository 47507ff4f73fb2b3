//! A tun device's hardware address: what SIOCGIFHWADDR reads and SIOCSIFHWADDR (or
//! RTM_SETLINK's IFLA_ADDRESS) sets (net/core/dev_ioctl.c: dev_ifsioc_locked,
//! dev_ifsioc; net/core/dev.c: dev_get_mac_address, dev_set_mac_address;
//! net/ethernet/eth.c: eth_mac_addr). docs/tun-device.md#hwaddr.

use super::{DevId, TunNet};
use crate::errno::Errno;
use crate::tun::DeviceKind;

/// ARPHRD_ETHER: a tap's dev->type (ether_setup).
pub const ARPHRD_ETHER: u16 = 1;
/// ARPHRD_NONE: a tun's dev->type (tun_net_initialize).
pub const ARPHRD_NONE: u16 = 0xfffe;
/// sizeof(sa->sa_data_min): what dev_get_mac_address fills.
pub const SA_DATA_LEN: usize = 14;

/// The address a tap gets at creation. The kernel's is random (tun_net_initialize ->
/// eth_hw_addr_random: locally administered, unicast); the model's is fixed by the
/// ifindex so a run is repeatable: 02:00:00:00:HI:LO. A program that prints its tap's
/// address before setting one sees different bytes on the two arms.
pub fn initial_tap_addr(ifindex: u32) -> [u8; 6] {
    let [.., hi, lo] = ifindex.to_be_bytes();
    [0x02, 0, 0, 0, hi, lo]
}

/// is_valid_ether_addr (include/linux/etherdevice.h): not multicast, not all zeros.
fn is_valid_ether_addr(a: &[u8; 6]) -> bool {
    a[0] & 1 == 0 && *a != [0; 6]
}

impl TunNet {
    /// dev_get_mac_address: `(sa_family, sa_data)`: dev->type, then the address (a tap's
    /// 6 bytes) or, for a device with addr_len 0 (a tun), zeros.
    pub fn hw_addr(&self, d: DevId) -> Option<(u16, [u8; SA_DATA_LEN])> {
        let dev = self.dev(d)?;
        let mut data = [0u8; SA_DATA_LEN];
        if dev.kind == DeviceKind::Tap {
            data[..6].copy_from_slice(&dev.dev_addr);
        }
        Some((dev.link_type, data))
    }

    /// dev_set_mac_address with struct sockaddr `family`/`data`, in its order: a tun has
    /// no ndo_set_mac_address (tun_netdev_ops): EOPNOTSUPP; a family other than dev->type:
    /// EINVAL; then a tap's eth_mac_addr -> eth_prepare_mac_addr_change: IFF_LIVE_ADDR_CHANGE
    /// is set on every tap (tun_net_initialize), so a running device is no EBUSY, and an
    /// address that is multicast or zero is EADDRNOTAVAIL. The same address again skips
    /// the driver (the memcmp) and succeeds.
    pub fn set_hw_addr(&mut self, d: DevId, family: u16, data: &[u8]) -> Result<(), Errno> {
        let dev = self.dev(d).ok_or(Errno::ENODEV)?;
        if dev.kind == DeviceKind::Tun {
            return Err(Errno::EOPNOTSUPP);
        }
        if family != dev.link_type {
            return Err(Errno::EINVAL);
        }
        let mut addr = [0u8; 6];
        addr.copy_from_slice(&data[..6]);
        if addr == dev.dev_addr {
            return Ok(());
        }
        if !is_valid_ether_addr(&addr) {
            return Err(Errno::EADDRNOTAVAIL);
        }
        self.dev_mut(d).dev_addr = addr;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tun::ioctl::{cmd, iff_flags::*, Caller, IoctlArg, IFNAMSIZ};

    fn device(net: &mut TunNet, flags: u16) -> DevId {
        let f = net.open();
        let mut name = [0u8; IFNAMSIZ];
        name[..4].copy_from_slice(b"dev0");
        net.ioctl(
            &crate::profile::LINUX_6_18,
            &Caller::root(),
            f,
            cmd::TUNSETIFF,
            &IoctlArg::Ifreq { name, flags },
        )
        .expect("TUNSETIFF");
        net.by_name(b"dev0").expect("registered")
    }

    #[test]
    fn a_tap_reads_back_the_address_it_was_given_and_refuses_invalid_ones() {
        let mut net = TunNet::new();
        let d = device(&mut net, IFF_TAP | IFF_NO_PI);
        let (family, data) = net.hw_addr(d).unwrap();
        assert_eq!(family, ARPHRD_ETHER);
        assert_eq!(data[0] & 3, 2, "locally administered unicast");
        let mac = [0x00, 0xfe, 0x98, 0x94, 0xd2, 0x43];
        assert_eq!(net.set_hw_addr(d, ARPHRD_ETHER, &mac), Ok(()));
        assert_eq!(&net.hw_addr(d).unwrap().1[..6], &mac);
        assert_eq!(net.hw_addr(d).unwrap().1[6..], [0; 8]);
        // Running makes no difference to a tap (IFF_LIVE_ADDR_CHANGE).
        net.set_up(d, true);
        let multicast = [0x01, 0, 0x5e, 0, 0, 1];
        assert_eq!(
            net.set_hw_addr(d, ARPHRD_ETHER, &multicast),
            Err(Errno::EADDRNOTAVAIL)
        );
        assert_eq!(
            net.set_hw_addr(d, ARPHRD_ETHER, &[0; 6]),
            Err(Errno::EADDRNOTAVAIL)
        );
        assert_eq!(net.set_hw_addr(d, ARPHRD_NONE, &mac), Err(Errno::EINVAL));
        assert_eq!(&net.hw_addr(d).unwrap().1[..6], &mac);
    }

    #[test]
    fn a_tun_has_no_address_to_set() {
        let mut net = TunNet::new();
        let d = device(&mut net, IFF_TUN | IFF_NO_PI);
        assert_eq!(net.hw_addr(d), Some((ARPHRD_NONE, [0; SA_DATA_LEN])));
        assert_eq!(
            net.set_hw_addr(d, ARPHRD_NONE, &[2, 0, 0, 0, 0, 1]),
            Err(Errno::EOPNOTSUPP)
        );
    }
}
