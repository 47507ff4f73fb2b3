//! TUNSETIFF (drivers/net/tun.c: tun_set_iff, tun_attach, tun_permitted /
//! tun_not_capable), the device name rules it meets in register_netdevice
//! (net/core/dev.c: dev_valid_name, dev_prep_valid_name, __dev_alloc_name) and TUNSETQUEUE
//! (tun_set_queue). docs/tun-ioctl.md#setiff, #permission, #setqueue.

use super::iff_flags::*;
use super::{
    features_word, Caller, DevId, FileId, IoctlAnswer, TunIf, TunNet, IFNAMSIZ, MAX_TAP_QUEUES,
};
use crate::errno::Errno;
use crate::profile::{KernelProfile, TunIoctlRules, TunPermission};
use crate::tun::{DeviceKind, Offloads, DEFAULT_VNET_HDR_SZ};

/// TUN_FEATURES of a profile: the ifr_flags bits a device keeps.
pub(super) fn tun_features(rules: &TunIoctlRules) -> u16 {
    (features_word(rules) as u16) & !(IFF_TUN | IFF_TAP | IFF_NO_CARRIER)
}

/// net/core/dev.c: dev_valid_name. `isspace` is the kernel's lib/ctype.c table, which
/// counts 0xa0 (no-break space) as space.
pub fn dev_valid_name(name: &[u8]) -> bool {
    if name.is_empty() || name.len() >= IFNAMSIZ || name == b"." || name == b".." {
        return false;
    }
    !name
        .iter()
        .any(|&c| c == b'/' || c == b':' || matches!(c, b' ' | 0x09..=0x0d | 0xa0))
}

/// Whether tun_permitted (Debian 6.12.118) / tun_not_capable (6.1, and 6.18 after "tun:
/// revert fix group permission check") let `caller` attach to `dev`.
fn permitted(rules: &TunIoctlRules, caller: &Caller, dev: &TunIf) -> bool {
    let owner_ok = dev.owner.is_none_or(|u| u == caller.euid);
    let group_ok = dev.group.is_none_or(|g| caller.in_egroup(g));
    match rules.permission {
        TunPermission::Permitted => {
            ((dev.owner.is_some() || dev.group.is_some()) && owner_ok && group_ok)
                || caller.net_admin
        }
        TunPermission::NotCapable => (owner_ok && group_ok) || caller.net_admin,
    }
}

impl TunNet {
    /// The name up to the first NUL of the 16 bytes (__tun_chr_ioctl zeroes byte 15).
    fn ifr_name(name: &[u8; IFNAMSIZ]) -> Vec<u8> {
        let mut n = *name;
        n[IFNAMSIZ - 1] = 0;
        let end = n.iter().position(|&c| c == 0).unwrap_or(IFNAMSIZ);
        n[..end].to_vec()
    }

    /// dev_prep_valid_name: a plain name as is, a `%d` pattern numbered with the lowest
    /// free number (__dev_alloc_name).
    fn resolve_name(&self, want: &[u8]) -> Result<Vec<u8>, Errno> {
        if !dev_valid_name(want) {
            return Err(Errno::EINVAL);
        }
        let Some(p) = want.iter().position(|&c| c == b'%') else {
            // Cannot be in use by a tun device (tun_set_iff looked it up first), but can
            // by another device only when it is not found as tun: that was EINVAL there.
            return Ok(want.to_vec());
        };
        if want.get(p + 1) != Some(&b'd') || want[p + 2..].contains(&b'%') {
            return Err(Errno::EINVAL);
        }
        for i in 0..32768u32 {
            let mut buf = want[..p].to_vec();
            buf.extend_from_slice(i.to_string().as_bytes());
            buf.extend_from_slice(&want[p + 2..]);
            buf.truncate(IFNAMSIZ - 1);
            if !self.name_in_use(&buf) {
                return Ok(buf);
            }
        }
        Err(Errno::ENFILE)
    }

    /// tun_set_iff (drivers/net/tun.c).
    pub(super) fn set_iff(
        &mut self,
        profile: &KernelProfile,
        caller: &Caller,
        f: FileId,
        name: [u8; IFNAMSIZ],
        flags: u16,
    ) -> Result<IoctlAnswer, Errno> {
        let rules = &profile.tun_ioctl;
        if self.files[f.0].detached {
            return Err(Errno::EINVAL);
        }
        if rules.napi && flags & IFF_NAPI_FRAGS != 0 {
            if !caller.init_net_admin {
                return Err(Errno::EPERM);
            }
            if flags & IFF_NAPI == 0 || flags & TUN_TYPE_MASK != IFF_TAP {
                return Err(Errno::EINVAL);
            }
        }
        let want = Self::ifr_name(&name);
        let (d, _attached) = match self.by_name(&want) {
            Some(d) => (d, self.attach_existing(rules, caller, f, d, flags)?),
            None if self.name_in_use(&want) => {
                // Another kind of device: neither tun_netdev_ops nor tap_netdev_ops.
                return Err(if flags & IFF_TUN_EXCL != 0 {
                    Errno::EBUSY
                } else {
                    Errno::EINVAL
                });
            }
            None => (self.create(rules, caller, f, &want, flags)?, true),
        };
        // When tun_attach's filter re-attach "succeeded" without attaching, tun_set_iff
        // goes on all the same: carrier, name.
        let dev = self.dev_mut(d);
        dev.carrier = !(rules.no_carrier && flags & IFF_NO_CARRIER != 0);
        Ok(IoctlAnswer::Ifreq {
            name: dev.name.clone(),
            flags,
        })
    }

    /// The existing-device branch of tun_set_iff.
    fn attach_existing(
        &mut self,
        rules: &TunIoctlRules,
        caller: &Caller,
        f: FileId,
        d: DevId,
        flags: u16,
    ) -> Result<bool, Errno> {
        if flags & IFF_TUN_EXCL != 0 {
            return Err(Errno::EBUSY);
        }
        let dev = self.dev(d).expect("found by name");
        let kind_ok = (flags & IFF_TUN != 0 && dev.kind == DeviceKind::Tun)
            || (flags & IFF_TAP != 0 && dev.kind == DeviceKind::Tap);
        if !kind_ok {
            return Err(Errno::EINVAL);
        }
        let mq = dev.features & IFF_MULTI_QUEUE != 0;
        if (flags & IFF_MULTI_QUEUE != 0) != mq {
            return Err(Errno::EINVAL);
        }
        if !permitted(rules, caller, dev) {
            return Err(Errno::EPERM);
        }
        let attached = self.attach(d, f, flags & IFF_NOFILTER != 0)?;
        let features = tun_features(rules);
        let dev = self.dev_mut(d);
        if !(mq && dev.queues.len() + dev.disabled.len() > 1) {
            dev.features = (dev.features & !features) | (flags & features);
        }
        Ok(attached)
    }

    /// tun_attach for a file that is not detached: Ok(false) when the filter re-attach of
    /// a persistent device's filter succeeded, which returns 0 before attaching
    /// (`if (!err) goto out;` in tun_attach, as read in 6.1 and 6.12).
    fn attach(&mut self, d: DevId, f: FileId, skip_filter: bool) -> Result<bool, Errno> {
        let dev = self.dev(d).expect("registered");
        if dev.features & IFF_MULTI_QUEUE == 0 && dev.queues.len() == 1 {
            return Err(Errno::EBUSY);
        }
        if dev.queues.len() + dev.disabled.len() == MAX_TAP_QUEUES {
            return Err(Errno::E2BIG);
        }
        if !skip_filter && dev.filter_attached {
            self.files[f.0].sk_filter = true;
            return Ok(false);
        }
        self.dev_mut(d).queues.push(f);
        self.files[f.0].tun = Some(d);
        Ok(true)
    }

    /// The new-device branch of tun_set_iff, register_netdevice and tun_net_init.
    fn create(
        &mut self,
        rules: &TunIoctlRules,
        caller: &Caller,
        f: FileId,
        want: &[u8],
        flags: u16,
    ) -> Result<DevId, Errno> {
        if !caller.net_admin {
            return Err(Errno::EPERM);
        }
        let (kind, pattern): (_, &[u8]) = if flags & IFF_TUN != 0 {
            (DeviceKind::Tun, b"tun%d")
        } else if flags & IFF_TAP != 0 {
            (DeviceKind::Tap, b"tap%d")
        } else {
            return Err(Errno::EINVAL);
        };
        let name = self.resolve_name(if want.is_empty() { pattern } else { want })?;
        let wanted_ifindex = self.files[f.0].ifindex as u32;
        if wanted_ifindex != 0 && self.ifindex_in_use(wanted_ifindex) {
            return Err(Errno::EBUSY);
        }
        let ifindex = if wanted_ifindex != 0 {
            wanted_ifindex
        } else {
            self.next_ifindex()
        };
        let dev = TunIf {
            name,
            ifindex,
            kind,
            features: flags & tun_features(rules),
            persist: false,
            vnet_le: false,
            vnet_be: false,
            owner: None,
            group: None,
            vnet_hdr_sz: DEFAULT_VNET_HDR_SZ as i32,
            offloads: Offloads::default(),
            sndbuf: self.files[f.0].sndbuf,
            txflt_count: 0,
            fprog: (0, 0),
            filter_attached: false,
            steering_prog: false,
            filter_prog: false,
            // ARPHRD_NONE for tun (tun_net_initialize), ARPHRD_ETHER for tap.
            link_type: if kind == DeviceKind::Tun { 0xfffe } else { 1 },
            dev_addr: if kind == DeviceKind::Tap {
                super::hwaddr::initial_tap_addr(ifindex)
            } else {
                [0; 6]
            },
            carrier: true,
            up: false,
            activated: false,
            queues: vec![f],
            disabled: Vec::new(),
        };
        self.devices.push(Some(dev));
        let d = DevId(self.devices.len() - 1);
        self.files[f.0].tun = Some(d);
        Ok(d)
    }

    /// tun_set_queue (drivers/net/tun.c). Needs no device: it runs before __tun_chr_ioctl
    /// looks one up.
    pub(super) fn set_queue(&mut self, f: FileId, flags: u16) -> Result<IoctlAnswer, Errno> {
        let file = &self.files[f.0];
        if flags & IFF_ATTACH_QUEUE != 0 {
            let Some(d) = file.tun.filter(|_| file.detached) else {
                return Err(Errno::EINVAL);
            };
            // tun_attach of a detached tfile: no ring resize, no E2BIG; the filter
            // re-attach returns 0 and leaves the queue detached.
            if self.dev(d).expect("registered").filter_attached {
                self.files[f.0].sk_filter = true;
                return Ok(IoctlAnswer::Done);
            }
            let dev = self.dev_mut(d);
            dev.disabled.retain(|&q| q != f);
            dev.queues.push(f);
            self.files[f.0].detached = false;
            Ok(IoctlAnswer::Done)
        } else if flags & IFF_DETACH_QUEUE != 0 {
            let Some(d) = file.tun else {
                return Err(Errno::EINVAL);
            };
            if file.detached || self.dev(d).expect("registered").features & IFF_MULTI_QUEUE == 0 {
                return Err(Errno::EINVAL);
            }
            // __tun_detach(tfile, false): even the last queue may go.
            let dev = self.dev_mut(d);
            let index = dev.queues.iter().position(|&q| q == f).unwrap_or(0);
            super::remove_queue(&mut dev.queues, f);
            dev.disabled.push(f);
            self.files[f.0].detached = true;
            self.files[f.0].detached_index = index;
            Ok(IoctlAnswer::Done)
        } else {
            Err(Errno::EINVAL)
        }
    }
}
