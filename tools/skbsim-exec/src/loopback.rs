//! [`LoopbackTun`]: NOT the device model. The ioctl answers are the model's
//! ([`sim::tun::ioctl::TunNet`], per profile), but read/write are a plain loopback: a frame
//! written on a file is queued, unchanged, to be read back on that file. It stands in for
//! the far side until the device model (sim::tun::device) is wired in, and lets the
//! supervisor be tested; the CLI offers it only as `--far-side loopback`.

use std::collections::{BTreeMap, VecDeque};

use sim::profile::KernelProfile;
use sim::tun::ioctl::{Caller, TunNet};
use sim::tun::DeviceKind;

use crate::{Errno, FileId, Ifa, IoctlAnswer, IoctlArg, LinkInfo, Readiness, SimTun, SA_DATA_LEN};

/// include/uapi/linux/if.h.
const IFF_UP: u16 = 0x1;
const IFF_BROADCAST: u16 = 0x2;
const IFF_POINTOPOINT: u16 = 0x10;
const IFF_NOARP: u16 = 0x80;
const IFF_RUNNING: u16 = 0x40;
const IFF_MULTICAST: u16 = 0x1000;
/// drivers/net/tun.c: MIN_MTU, MAX_MTU (tun_net_initialize sets min_mtu/max_mtu).
const MIN_MTU: u32 = 68;
const MAX_MTU: u32 = 65535;
/// ETH_DATA_LEN: ether_setup's and tun_net_initialize's default MTU.
const DEFAULT_MTU: u32 = 1500;

#[derive(Debug, Default)]
struct LoopFile {
    nonblock: bool,
    queue: VecDeque<Vec<u8>>,
}

/// Ioctls answered by the model under one profile; frames written come straight back.
#[derive(Debug)]
pub struct LoopbackTun {
    net: TunNet,
    profile: KernelProfile,
    caller: Caller,
    files: BTreeMap<FileId, LoopFile>,
    mtu: BTreeMap<Vec<u8>, u32>,
    ipv4: BTreeMap<Vec<u8>, Ifa>,
}

impl LoopbackTun {
    pub fn new(profile: KernelProfile, caller: Caller) -> LoopbackTun {
        LoopbackTun {
            net: TunNet::new(),
            profile,
            caller,
            files: BTreeMap::new(),
            mtu: BTreeMap::new(),
            ipv4: BTreeMap::new(),
        }
    }

    /// The namespace as the program left it.
    pub fn net(&self) -> &TunNet {
        &self.net
    }

    /// tun_chr_read_iter / tun_chr_write_iter: `if (!tun) return -EBADFD` (a file with no
    /// device, or one TUNSETQUEUE detached).
    fn attached(&self, f: FileId) -> Result<(), Errno> {
        let file = self.net.file(f);
        if file.tun.is_none() || file.detached {
            return Err(Errno::EBADFD);
        }
        Ok(())
    }
}

impl SimTun for LoopbackTun {
    fn open(&mut self, nonblock: bool) -> FileId {
        let f = self.net.open();
        self.files.insert(
            f,
            LoopFile {
                nonblock,
                ..LoopFile::default()
            },
        );
        f
    }

    fn ioctl(&mut self, f: FileId, cmd: u32, arg: &IoctlArg) -> Result<IoctlAnswer, Errno> {
        self.net.ioctl(&self.profile, &self.caller, f, cmd, arg)
    }

    fn set_nonblock(&mut self, f: FileId, nonblock: bool) {
        if let Some(file) = self.files.get_mut(&f) {
            file.nonblock = nonblock;
        }
    }

    fn read(&mut self, f: FileId, buf_len: usize) -> Result<Vec<u8>, Errno> {
        self.attached(f)?;
        let file = self.files.get_mut(&f).ok_or(Errno::EBADF)?;
        let mut frame = file.queue.pop_front().ok_or(Errno::EAGAIN)?;
        frame.truncate(buf_len);
        Ok(frame)
    }

    fn write(&mut self, f: FileId, data: &[u8]) -> Result<usize, Errno> {
        self.attached(f)?;
        let file = self.files.get_mut(&f).ok_or(Errno::EBADF)?;
        file.queue.push_back(data.to_vec());
        Ok(data.len())
    }

    fn poll(&self, f: FileId) -> Readiness {
        let queued = self.files.get(&f).is_some_and(|x| !x.queue.is_empty());
        Readiness {
            readable: queued,
            writable: true,
            error: self.attached(f).is_err(),
        }
    }

    fn close(&mut self, f: FileId) {
        self.files.remove(&f);
        self.net.close(f);
    }

    /// net/core/dev_ioctl.c: dev_ifsioc SIOCSIFFLAGS -> dev_change_flags (IFF_UP), and
    /// SIOCSIFMTU -> dev_set_mtu -> dev_validate_mtu (tun's min_mtu/max_mtu: EINVAL).
    fn set_link(&mut self, dev: &[u8], up: Option<bool>, mtu: Option<u32>) -> Result<(), Errno> {
        let d = self.net.by_name(dev).ok_or(Errno::ENXIO)?;
        if let Some(mtu) = mtu {
            if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
                return Err(Errno::EINVAL);
            }
            self.mtu.insert(dev.to_vec(), mtu);
        }
        if let Some(up) = up {
            self.net.set_up(d, up);
        }
        Ok(())
    }

    /// The device's flags ([`link_flags`]) and its MTU.
    fn link(&self, dev: &[u8]) -> Option<LinkInfo> {
        let tun = self.net.dev(self.net.by_name(dev)?)?;
        Some(LinkInfo {
            ifindex: tun.ifindex,
            flags: link_flags(tun.kind, tun.up, tun.carrier),
            mtu: self.mtu.get(dev).copied().unwrap_or(DEFAULT_MTU),
        })
    }

    fn hw_addr(&self, dev: &[u8]) -> Option<(u16, [u8; SA_DATA_LEN])> {
        self.net.hw_addr(self.net.by_name(dev)?)
    }

    fn set_hw_addr(
        &mut self,
        dev: &[u8],
        family: u16,
        data: &[u8; SA_DATA_LEN],
    ) -> Option<Result<(), Errno>> {
        let d = self.net.by_name(dev)?;
        Some(self.net.set_hw_addr(d, family, data))
    }

    fn link_message(&self, dev: &[u8]) -> Option<crate::LinkMessage> {
        let t = self.net.dev(self.net.by_name(dev)?)?;
        let mtu = self.mtu.get(dev).copied().unwrap_or(DEFAULT_MTU);
        let qdisc = crate::rtnl_link::default_qdisc();
        Some(crate::rtnl_link::link_message(t, mtu, &qdisc))
    }

    fn link_names(&self) -> Vec<Vec<u8>> {
        crate::rtnl_link::names_by_ifindex(&self.net)
    }

    fn link_name(&self, ifindex: u32) -> Option<Vec<u8>> {
        let d = self.net.by_ifindex(ifindex)?;
        Some(self.net.dev(d)?.name.clone())
    }

    /// drivers/net/tun.c: tun_net_uninit -> tun_detach_all ([`TunNet::unregister`]); the
    /// frames queued for the files go with it (tun_queue_purge).
    fn delete_link(&mut self, dev: &[u8]) -> Result<(), Errno> {
        let d = self.net.by_name(dev).ok_or(Errno::ENXIO)?;
        let files: Vec<FileId> = self
            .files
            .keys()
            .copied()
            .filter(|&f| self.net.file(f).tun == Some(d))
            .collect();
        for f in files {
            if let Some(file) = self.files.get_mut(&f) {
                file.queue.clear();
            }
        }
        self.net.unregister(d);
        self.mtu.remove(dev);
        self.ipv4.remove(dev);
        Ok(())
    }

    fn ipv4(&self, dev: &[u8]) -> Option<Ifa> {
        self.ipv4.get(dev).copied()
    }

    fn del_ipv4(&mut self, dev: &[u8]) -> bool {
        self.ipv4.remove(dev).is_some()
    }

    fn set_ipv4(&mut self, dev: &[u8], ifa: Ifa) {
        self.ipv4.insert(dev.to_vec(), ifa);
    }
}

/// dev_get_flags (net/core/dev.c): IFF_RUNNING while up with carrier; the device's own
/// flags from tun_net_initialize (tun: IFF_POINTOPOINT | IFF_NOARP | IFF_MULTICAST) or
/// ether_setup (tap: IFF_BROADCAST | IFF_MULTICAST).
pub(crate) fn link_flags(kind: DeviceKind, up: bool, carrier: bool) -> u16 {
    let mut flags = match kind {
        DeviceKind::Tap => IFF_BROADCAST | IFF_MULTICAST,
        DeviceKind::Tun => IFF_POINTOPOINT | IFF_NOARP | IFF_MULTICAST,
    };
    if up {
        flags |= IFF_UP;
        if carrier {
            flags |= IFF_RUNNING;
        }
    }
    flags
}
