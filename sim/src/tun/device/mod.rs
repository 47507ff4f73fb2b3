//! A tun/tap device with the kernel's file-descriptor semantics, in process: the
//! `/dev/net/tun` side of one network namespace (drivers/net/tun.c: tun_chr_open,
//! tun_chr_ioctl, tun_chr_read_iter, tun_chr_write_iter, tun_chr_poll, tun_chr_close) and
//! the stack side (dev_queue_xmit into the device, what writes hand to the stack).
//!
//! It is the model the pipelines use, not a second one: ioctls are [`TunNet::ioctl`]
//! (the per-profile rule table), writes are `Net::tun_write` (tun_get_user), reads are
//! [`crate::tun::TunDevice::read_entry`] (tun_put_user). What this module adds is the
//! file: one tx_ring per attached queue, O_NONBLOCK, readiness, queue selection for
//! transmitted skbs and the device's lifetime. docs/tun-device.md.
//!
//! Blocking reads: the model never sleeps. A read of an empty queue answers
//! `Err(EAGAIN)` whether or not the file is O_NONBLOCK; for a blocking file
//! ([`TunHost::would_block`]) that means "the kernel would sleep in tun_ring_recv":
//! a supervisor waits until [`TunHost::poll`] reports `readable` or `error`, then reads
//! again.

mod flow_hash;
mod queue;
mod rw;
#[cfg(test)]
mod tests;
mod xdp;
#[cfg(test)]
mod xdp_tests;

use std::collections::BTreeMap;

pub use flow_hash::{dissect, flow_hash_from_keys, siphash, FlowAddrs, FlowKeys, HASHRND};
use queue::{DevState, FileQueue};
pub use queue::{SkbProg, SkbProgFn, MAX_TAP_FLOWS, TUN_FLT_ALLMULTI};
pub use xdp::XDP_XMIT_CPU;

use super::ioctl::{cmd, Caller, FileId, IoctlAnswer, IoctlArg, TunIf, TunNet, SA_DATA_LEN};
use super::napi::TunNapi;
use super::{DeviceKind, TunConfig, TunDevice, TunStats, VnetEndian, XmitDrop};
use crate::errno::Errno;
use crate::gro::plan::GroPlan;
use crate::net::{Delivery, Net};
use crate::profile::KernelProfile;
use crate::skb::SkBuff;

/// MIN_MTU and MAX_MTU of tun_net_initialize: dev->min_mtu, dev->max_mtu is MAX_MTU
/// minus hard_header_len (ETH_HLEN for a tap).
pub const MIN_MTU: u32 = 68;
pub const MAX_MTU: u32 = 65535;

/// tun_chr_poll's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Readiness {
    /// EPOLLIN | EPOLLRDNORM: the file's tx_ring has an entry.
    pub readable: bool,
    /// EPOLLOUT | EPOLLWRNORM: tun_sock_writeable (IFF_UP and sock_writeable).
    pub writable: bool,
    /// EPOLLERR alone: no device (never attached, or unregistered).
    pub error: bool,
}

impl Readiness {
    /// The poll bits as <uapi/linux/eventpoll.h> numbers them.
    pub fn bits(self) -> u32 {
        const EPOLLIN: u32 = 0x001;
        const EPOLLOUT: u32 = 0x004;
        const EPOLLERR: u32 = 0x008;
        const EPOLLRDNORM: u32 = 0x040;
        const EPOLLWRNORM: u32 = 0x100;
        if self.error {
            return EPOLLERR;
        }
        let mut b = 0;
        if self.readable {
            b |= EPOLLIN | EPOLLRDNORM;
        }
        if self.writable {
            b |= EPOLLOUT | EPOLLWRNORM;
        }
        b
    }
}

/// What dev_queue_xmit did with an skb sent to a tun device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XmitFate {
    /// On this queue's tx_ring (tun_select_queue's index, netdev_cap_txqueue'd).
    Queued { queue: u16 },
    /// tun_net_xmit dropped it and counted tx_dropped, with this SKB_DROP_REASON.
    Dropped { queue: u16, reason: XmitDrop },
    /// The device is down: the noop qdisc frees it (no tun counter moves).
    DeviceDown,
    /// No tun device by that name.
    NoDevice,
    /// The kernel's answer depends on something the model does not run; nothing moved.
    Unmodelled(&'static str),
    /// The VM stopped the steering or filter program (an access or helper call the
    /// kernel's verifier would have refused at load); nothing moved.
    ProgFault(String),
}

/// One network namespace's tun side: the ioctl state ([`TunNet`]), each device's
/// datapath ([`Net`], one [`TunDevice`] per registered tun by ifindex) and each file's
/// queue.
#[derive(Debug)]
pub struct TunHost {
    profile: KernelProfile,
    caller: Caller,
    net: TunNet,
    stack: Net,
    files: BTreeMap<FileId, FileQueue>,
    devs: BTreeMap<u32, DevState>,
    received: Vec<(Vec<u8>, SkBuff)>,
    /// Keep what the stack's packet taps saw ([`TunHost::take_deliveries`]).
    keep_deliveries: bool,
    deliveries: Vec<Delivery>,
    fault: Option<String>,
    hashrnd: [u64; 2],
}

impl TunHost {
    /// A fresh namespace (only `lo`) whose tun answers as `profile`'s kernel does to
    /// `caller`.
    pub fn new(profile: &KernelProfile, caller: Caller) -> TunHost {
        let mut stack = Net::new();
        stack.keep_skbs = true;
        TunHost {
            profile: *profile,
            caller,
            net: TunNet::new(),
            stack,
            files: BTreeMap::new(),
            devs: BTreeMap::new(),
            received: Vec::new(),
            keep_deliveries: false,
            deliveries: Vec::new(),
            fault: None,
            hashrnd: HASHRND,
        }
    }

    /// The ioctl state: devices, files, queues.
    pub fn tun_net(&self) -> &TunNet {
        &self.net
    }

    /// A non-tun device (a veth, a bridge) that holds a name in the namespace.
    pub fn add_other_device(&mut self, name: &str) {
        self.net.add_other_device(name);
    }

    /// The tun device named `dev_name`, as its ioctls left it.
    pub fn device(&self, dev_name: &[u8]) -> Option<&TunIf> {
        self.net.by_name(dev_name).and_then(|d| self.net.dev(d))
    }

    /// The device's counters (tun_net_get_stats64).
    pub fn stats(&self, dev_name: &[u8]) -> Option<TunStats> {
        let ifindex = self.device(dev_name)?.ifindex;
        self.stack.dev(ifindex).map(|d| d.stats)
    }

    /// tun_chr_open: a file with no device and an empty ring.
    pub fn open(&mut self, nonblock: bool) -> FileId {
        let f = self.net.open();
        self.files.insert(
            f,
            FileQueue {
                nonblock,
                ..FileQueue::default()
            },
        );
        f
    }

    /// fcntl(F_SETFL, O_NONBLOCK) / FIONBIO.
    pub fn set_nonblock(&mut self, f: FileId, nonblock: bool) {
        if let Some(q) = self.files.get_mut(&f) {
            q.nonblock = nonblock;
        }
    }

    /// The queue index of `f` (tfile->queue_index) while attached, not detached.
    pub fn queue_index(&self, f: FileId) -> Option<usize> {
        let tif = self.net.device_of(f)?;
        tif.queues.iter().position(|&q| q == f)
    }

    /// tfile->queue_index of `f` as a write uses it (the XDP rxq, skb_record_rx_queue):
    /// its slot while attached, the slot it left while TUNSETQUEUE-detached.
    pub fn rx_queue(&self, f: FileId) -> u16 {
        let index = match self.queue_index(f) {
            Some(i) => i,
            None if self.net.device_of(f).is_some() => self.net.file(f).detached_index,
            None => 0,
        };
        index as u16
    }

    /// The file at queue index `index` of `dev_name` (tun->tfiles[index]).
    pub fn file_at(&self, dev_name: &[u8], index: usize) -> Option<FileId> {
        self.device(dev_name)?.queues.get(index).copied()
    }

    /// Set what no ioctl sets on the device's datapath (dev->tx_queue_len, the VLAN
    /// insert features, dev->mtu) from `config`; the rest is re-read from the ioctl state
    /// at every read and write.
    pub fn set_device_config(&mut self, dev_name: &[u8], config: &TunConfig) {
        let Some(ifindex) = self.device(dev_name).map(|t| t.ifindex) else {
            return;
        };
        if let Some(dev) = self.stack.dev_mut(ifindex) {
            dev.config = config.clone();
        }
    }

    /// Entries waiting on `f`'s tx_ring.
    pub fn queued(&self, f: FileId) -> usize {
        self.files.get(&f).map_or(0, |q| q.ring.len())
    }

    /// Whether a read that answered EAGAIN would have slept in the kernel: a blocking
    /// file with a device (tun_ring_recv waits; see the module docs).
    pub fn would_block(&self, f: FileId) -> bool {
        self.files.get(&f).is_some_and(|q| !q.nonblock) && self.net.device_of(f).is_some()
    }

    /// tun_chr_ioctl (the rule table: [`TunNet::ioctl`]), then what the answer changes in
    /// the datapath: a new device, a queue detached (its ring purged), a filter.
    pub fn ioctl(&mut self, f: FileId, cmd: u32, arg: &IoctlArg) -> Result<IoctlAnswer, Errno> {
        let before = self.queue_index(f);
        let answer = self.net.ioctl(&self.profile, &self.caller, f, cmd, arg)?;
        let Some(tif) = self.net.device_of(f) else {
            return Ok(answer);
        };
        let (ifindex, name, numqueues) = (tif.ifindex, tif.name.clone(), tif.queues.len());
        if !self.devs.contains_key(&ifindex) {
            self.register(ifindex, name);
        }
        if before.is_some() && self.queue_index(f).is_none() {
            // TUNSETQUEUE IFF_DETACH_QUEUE: __tun_detach(tfile, false).
            self.detached(f, ifindex, numqueues);
        }
        if cmd == cmd::TUNSETTXFILTER {
            let st = self.devs.get_mut(&ifindex).expect("registered above");
            st.txflt_exact.clear();
            if let (IoctlArg::TxFilter { flags, addrs }, IoctlAnswer::Returned(n)) = (arg, &answer)
            {
                st.txflt_exact = addrs[..*n as usize].to_vec();
                st.txflt_allmulti = flags & TUN_FLT_ALLMULTI != 0;
            }
        }
        Ok(answer)
    }

    /// register_netdevice of a device TUNSETIFF created: its datapath at `ifindex`.
    /// An IFF_NAPI device gets its NAPI instance with the profile's default GRO setup
    /// (gro_flush_timeout 0, one write per poll: write() passes more = false).
    fn register(&mut self, ifindex: u32, name: Vec<u8>) {
        use super::ioctl::iff_flags::IFF_NAPI;
        let tif = self.device(&name);
        let kind = tif.map_or(DeviceKind::Tap, |t| t.kind);
        if tif.is_some_and(|t| t.features & IFF_NAPI != 0) {
            let plan = GroPlan::defaults(&self.profile.gro);
            self.stack
                .enable_napi(ifindex, TunNapi::new(&self.profile, &plan));
        }
        self.stack.add(
            ifindex,
            TunDevice::new(TunConfig {
                kind,
                ..TunConfig::default()
            }),
        );
        self.devs.insert(ifindex, DevState::default());
    }

    /// The queue `f` left (numqueues: the device's count after it left): __tun_detach's
    /// tun_flow_delete_by_queue(tun, tun->numqueues + 1) and tun_queue_purge.
    fn detached(&mut self, f: FileId, ifindex: u32, numqueues: usize) {
        if let Some(st) = self.devs.get_mut(&ifindex) {
            st.flow_delete_by_queue((numqueues + 1) as u16);
        }
        if let Some(q) = self.files.get_mut(&f) {
            q.ring.clear();
        }
    }

    /// tun_chr_close -> tun_detach(tfile, true): the queue goes (its ring with it); the
    /// last queue of a non-persistent device unregisters it.
    pub fn close(&mut self, f: FileId) {
        let attached = self.queue_index(f).is_some();
        let dev = self.net.device_of(f).map(|t| (t.ifindex, t.name.clone()));
        self.net.close(f);
        self.files.remove(&f);
        let Some((ifindex, name)) = dev else { return };
        if attached {
            let numqueues = self.device(&name).map_or(0, |t| t.queues.len());
            if let Some(st) = self.devs.get_mut(&ifindex) {
                st.flow_delete_by_queue((numqueues + 1) as u16);
            }
        }
        if self.device(&name).is_none() {
            self.unregistered(ifindex);
        }
    }

    fn unregistered(&mut self, ifindex: u32) {
        self.stack.devices.remove(&ifindex);
        self.stack.napi.remove(&ifindex);
        self.devs.remove(&ifindex);
    }

    /// `ip link set DEV up/down mtu N` (SIOCSIFFLAGS / SIOCSIFMTU / RTM_SETLINK):
    /// dev_change_flags, dev_set_mtu (dev_validate_mtu against tun_net_initialize's
    /// min_mtu and max_mtu: EINVAL). ENODEV: no tun device by that name.
    pub fn set_link(
        &mut self,
        dev_name: &[u8],
        up: Option<bool>,
        mtu: Option<u32>,
    ) -> Result<(), Errno> {
        let d = self.net.by_name(dev_name).ok_or(Errno::ENODEV)?;
        let tif = self.net.dev(d).expect("found by name");
        let ifindex = tif.ifindex;
        if let Some(mtu) = mtu {
            let hard_header_len = if tif.kind == DeviceKind::Tap { 14 } else { 0 };
            if !(MIN_MTU..=MAX_MTU - hard_header_len).contains(&mtu) {
                return Err(Errno::EINVAL);
            }
            if let Some(dev) = self.stack.dev_mut(ifindex) {
                dev.config.mtu = mtu as usize;
            }
        }
        if let Some(up) = up {
            self.net.set_up(d, up);
        }
        Ok(())
    }

    /// SIOCGIFHWADDR on a socket: `(sa_family, sa_data)` of the tun device `dev_name`
    /// (TunNet::hw_addr: dev_get_mac_address).
    pub fn hw_addr(&self, dev_name: &[u8]) -> Option<(u16, [u8; SA_DATA_LEN])> {
        self.net.hw_addr(self.net.by_name(dev_name)?)
    }

    /// SIOCSIFHWADDR on a socket (dev_ifsioc -> dev_set_mac_address_user): ENODEV for no
    /// tun device by that name, else TunNet::set_hw_addr's answer.
    pub fn set_hw_addr(
        &mut self,
        dev_name: &[u8],
        family: u16,
        data: &[u8; SA_DATA_LEN],
    ) -> Result<(), Errno> {
        let d = self.net.by_name(dev_name).ok_or(Errno::ENODEV)?;
        self.net.set_hw_addr(d, family, data)
    }

    /// The device's MTU (dev->mtu: 1500 at creation).
    pub fn mtu(&self, dev_name: &[u8]) -> Option<u32> {
        let ifindex = self.device(dev_name)?.ifindex;
        self.stack.dev(ifindex).map(|d| d.config.mtu as u32)
    }

    /// `ip link del DEV` (RTM_DELLINK): unregister_netdevice -> tun_detach_all: every
    /// queue's ring purged, every file (attached or detached) left without a device.
    pub fn del_link(&mut self, dev_name: &[u8]) -> Result<(), Errno> {
        let d = self.net.by_name(dev_name).ok_or(Errno::ENODEV)?;
        let tif = self.net.dev(d).expect("found by name");
        let ifindex = tif.ifindex;
        for f in tif.queues.iter().chain(&tif.disabled) {
            if let Some(q) = self.files.get_mut(f) {
                q.ring.clear();
            }
        }
        self.net.unregister(d);
        self.unregistered(ifindex);
        Ok(())
    }

    /// tun_chr_poll.
    pub fn poll(&self, f: FileId) -> Readiness {
        let Some(tif) = self.net.device_of(f) else {
            return Readiness {
                error: true,
                ..Readiness::default()
            };
        };
        // sock_writeable: sk_wmem_alloc (1 for the socket itself; the model holds no
        // skb of a write past the write) < sk_sndbuf / 2.
        let sndbuf = self.net.file(f).sndbuf;
        Readiness {
            readable: self.queued(f) > 0,
            writable: tif.up && 1 < (sndbuf >> 1),
            error: false,
        }
    }

    /// The program behind the fd TUNSETSTEERINGEBPF attached (the ioctl's
    /// [`crate::tun::ioctl::BpfFd`] only says that it is a socket filter). Without it, an
    /// skb that needs the program is [`XmitFate::Unmodelled`].
    pub fn set_steering(&mut self, dev_name: &[u8], prog: Option<SkbProg>) -> Result<(), Errno> {
        let st = self.dev_state_mut(dev_name)?;
        st.steering = prog;
        Ok(())
    }

    /// TUNSETFILTEREBPF's program, as for [`TunHost::set_steering`].
    pub fn set_filter(&mut self, dev_name: &[u8], prog: Option<SkbProg>) -> Result<(), Errno> {
        let st = self.dev_state_mut(dev_name)?;
        st.filter = prog;
        Ok(())
    }

    fn dev_state_mut(&mut self, dev_name: &[u8]) -> Result<&mut DevState, Errno> {
        let ifindex = self.device(dev_name).ok_or(Errno::ENODEV)?.ifindex;
        Ok(self.devs.get_mut(&ifindex).expect("registered"))
    }

    /// From now on keep each frame the stack's packet taps saw (AF_PACKET's view, in
    /// order) for [`TunHost::take_deliveries`].
    pub fn keep_deliveries(&mut self) {
        self.keep_deliveries = true;
    }

    /// The frames the stack received since the last call (with [`TunHost::keep_deliveries`]).
    pub fn take_deliveries(&mut self) -> Vec<Delivery> {
        std::mem::take(&mut self.deliveries)
    }

    /// The skbs writes handed to the stack (netif_receive_skb, after GRO for IFF_NAPI),
    /// with the name of the device they came in on, in order; taken, not copied.
    pub fn take_received(&mut self) -> Vec<(Vec<u8>, SkBuff)> {
        std::mem::take(&mut self.received)
    }

    /// The TunConfig the shared write and read paths read, from the ioctl state of the
    /// device and of the file `f` (its sk_sndbuf decides build_skb).
    fn sync_config(&mut self, f: FileId, ifindex: u32) {
        use super::ioctl::iff_flags::{IFF_NAPI, IFF_NAPI_FRAGS, IFF_NO_PI, IFF_VNET_HDR};
        let Some(tif) = self.net.device_of(f) else {
            return;
        };
        let sndbuf_set = self.net.file(f).sndbuf != super::ioctl::SNDBUF_DEFAULT;
        let Some(dev) = self.stack.dev_mut(ifindex) else {
            return;
        };
        let c = &mut dev.config;
        c.kind = tif.kind;
        c.no_pi = tif.features & IFF_NO_PI != 0;
        c.vnet_hdr = tif.features & IFF_VNET_HDR != 0;
        c.vnet_hdr_sz = tif.vnet_hdr_sz.max(0) as usize;
        // tun_is_little_endian: TUN_VNET_LE, or not TUN_VNET_BE on a little-endian host.
        c.vnet_endian = if tif.vnet_be && !tif.vnet_le {
            VnetEndian::Big
        } else {
            VnetEndian::Little
        };
        c.offloads = tif.offloads;
        c.up = tif.up;
        c.napi = tif.features & IFF_NAPI != 0;
        c.napi_frags = tif.features & IFF_NAPI_FRAGS != 0;
        c.sndbuf_set = sndbuf_set;
        dev.numqueues = tif.queues.len() as u16;
    }
}
