//! What every tun ioctl answers, per kernel profile: drivers/net/tun.c: __tun_chr_ioctl and
//! the functions it calls, drivers/net/tun_vnet.h: tun_vnet_ioctl (docs/tun-ioctl.md).
//!
//! [`TunNet`] holds what the answers depend on: the tun devices of one network namespace
//! and the open `/dev/net/tun` files. [`TunNet::ioctl`] is `tun_chr_ioctl` with no I/O:
//! the caller copies user memory into an [`IoctlArg`] (or passes [`IoctlArg::Fault`] where
//! that copy would fail) and copies an [`IoctlAnswer`] back. Generic VFS ioctls (FIONBIO,
//! FIOCLEX, ...) never reach the driver and are the caller's.

mod filter;
mod hwaddr;
mod iff;
mod offload;
#[cfg(test)]
mod tests;
mod uapi;

pub use filter::{check_classic, SockFilter};
pub use hwaddr::{ARPHRD_ETHER, ARPHRD_NONE, SA_DATA_LEN};
pub use offload::{features_word, set_offload};
pub use uapi::{cmd, iff_flags, tun_f};

use super::{DeviceKind, Offloads};
use crate::errno::Errno;
use crate::profile::KernelProfile;

/// MAX_TAP_QUEUES (include/linux/netdevice.h via tun.c): queues + disabled queues.
pub const MAX_TAP_QUEUES: usize = 256;
/// IFNAMSIZ.
pub const IFNAMSIZ: usize = 16;
/// The socket's sk_sndbuf after tun_chr_open: INT_MAX.
pub const SNDBUF_DEFAULT: i32 = i32::MAX;

/// The calling process as the kernel's checks see it (init user namespace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub euid: u32,
    pub egid: u32,
    /// Supplementary groups (in_egroup_p looks at egid and these).
    pub groups: Vec<u32>,
    /// CAP_NET_ADMIN in the user namespace owning the network namespace (ns_capable).
    pub net_admin: bool,
    /// CAP_NET_ADMIN in the initial user namespace (capable(): IFF_NAPI_FRAGS).
    pub init_net_admin: bool,
}

impl Caller {
    /// uid 0 with every capability.
    pub fn root() -> Caller {
        Caller {
            euid: 0,
            egid: 0,
            groups: Vec::new(),
            net_admin: true,
            init_net_admin: true,
        }
    }

    /// An unprivileged user.
    pub fn user(euid: u32, egid: u32) -> Caller {
        Caller {
            euid,
            egid,
            groups: Vec::new(),
            net_admin: false,
            init_net_admin: false,
        }
    }

    /// in_egroup_p (kernel/groups.c).
    pub fn in_egroup(&self, gid: u32) -> bool {
        self.egid == gid || self.groups.contains(&gid)
    }
}

/// What a file descriptor passed to TUNSETSTEERINGEBPF / TUNSETFILTEREBPF is; the caller
/// resolves its own fd table (kernel/bpf/syscall.c: bpf_prog_get_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpfFd {
    /// -1: detach the program.
    Detach,
    /// Not an open fd: EBADF.
    NotOpen,
    /// An open fd that is not a BPF program: EINVAL.
    NotProg,
    /// A BPF program; only BPF_PROG_TYPE_SOCKET_FILTER is accepted (else EINVAL).
    Prog { socket_filter: bool },
}

/// An ioctl's argument after the caller copied what the kernel would read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoctlArg {
    /// The `unsigned long` argument itself (TUNSETOFFLOAD, TUNSETPERSIST, TUNSETOWNER,
    /// TUNSETGROUP, TUNSETLINK, TUNSETDEBUG, TUNSETNOCSUM).
    Value(u64),
    /// An `int` read through the pointer (TUNSETSNDBUF, TUNSETVNETHDRSZ, TUNSETVNETLE/BE,
    /// TUNSETCARRIER, TUNSETIFINDEX).
    Int(i32),
    /// `struct ifreq`: the 16 name bytes as given and `ifr_flags` (TUNSETIFF, TUNSETQUEUE,
    /// the SIOC* socket ioctls).
    Ifreq { name: [u8; IFNAMSIZ], flags: u16 },
    /// `struct ifreq`'s `ifr_hwaddr` (SIOCSIFHWADDR): `sa_family` and the 14 bytes of
    /// `sa_data`. An [`IoctlArg::Ifreq`] given instead reads as its flags for the family
    /// and zeroed data (the same bytes).
    Hwaddr {
        family: u16,
        data: [u8; SA_DATA_LEN],
    },
    /// `struct tun_filter` with its `count` addresses (TUNSETTXFILTER).
    TxFilter { flags: u16, addrs: Vec<[u8; 6]> },
    /// `struct sock_fprog` and the instructions at `filter` (TUNATTACHFILTER). Fewer
    /// `insns` than `len` means the rest could not be read (EFAULT).
    Fprog {
        len: u16,
        filter: u64,
        insns: Vec<SockFilter>,
    },
    /// The fd TUNSETSTEERINGEBPF / TUNSETFILTEREBPF read, resolved.
    BpfFd(BpfFd),
    /// A writable pointer the kernel only writes (the TUNGET* ioctls), or no argument.
    Out,
    /// A pointer the kernel cannot read or write: its copy fails with EFAULT.
    Fault,
}

/// What the kernel gave back on success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoctlAnswer {
    /// Returned 0, wrote nothing.
    Done,
    /// Returned this positive value (TUNSETTXFILTER: the number of exact addresses).
    Returned(i32),
    /// Returned 0 and wrote this `int` / `unsigned int` through the pointer.
    Int(i32),
    /// Returned 0 and wrote back an ifreq: the device name and `ifr_flags`.
    Ifreq { name: Vec<u8>, flags: u16 },
    /// TUNGETFILTER: the `struct sock_fprog` last given to TUNATTACHFILTER.
    Fprog { len: u16, filter: u64 },
    /// A new file descriptor for the device's (TUNGETDEVNETNS) or the file's (SIOCGSKNS)
    /// network namespace; the caller makes it.
    NetnsFd,
    /// SIOCGIFHWADDR: returned 0 and wrote `ifr_hwaddr` (dev->type, the address).
    HwAddr {
        family: u16,
        data: [u8; SA_DATA_LEN],
    },
}

/// An open `/dev/net/tun` file of a [`TunNet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(usize);

impl FileId {
    /// The file's number: 0 for the first open of the namespace, then 1, 2, ... (a
    /// record names files by it).
    pub fn index(self) -> usize {
        self.0
    }

    /// The id of file number `i` of a backend that numbers files itself (exec's real
    /// arm, which holds real `/dev/net/tun` files). Never hand it to a [`TunNet`] that
    /// did not open it: its file table is indexed by it.
    pub fn from_index(i: usize) -> FileId {
        FileId(i)
    }
}

/// A registered tun device of a [`TunNet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevId(usize);

/// `struct tun_file`: one open `/dev/net/tun`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunFile {
    /// tfile->tun: set while attached and while detached by TUNSETQUEUE.
    pub tun: Option<DevId>,
    /// tfile->detached: detached by TUNSETQUEUE IFF_DETACH_QUEUE.
    pub detached: bool,
    /// While detached: the tfile->queue_index the file had when TUNSETQUEUE detached it
    /// (__tun_detach renumbers only the file moved into its slot; tun_attach sets a new
    /// one). Its XDP rxq keeps that index too.
    pub detached_index: usize,
    /// sk->sk_filter is set (TUNATTACHFILTER or the re-attach in tun_attach).
    pub sk_filter: bool,
    /// sk->sk_sndbuf.
    pub sndbuf: i32,
    /// TUNSETIFINDEX: the ifindex a device created through this file gets (0: any).
    pub ifindex: i32,
    open: bool,
}

/// `struct tun_struct` and its net_device, as far as ioctls see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunIf {
    pub name: Vec<u8>,
    pub ifindex: u32,
    pub kind: DeviceKind,
    /// The TUN_FEATURES bits of the TUNSETIFF that set them.
    pub features: u16,
    pub persist: bool,
    pub vnet_le: bool,
    pub vnet_be: bool,
    pub owner: Option<u32>,
    pub group: Option<u32>,
    pub vnet_hdr_sz: i32,
    pub offloads: Offloads,
    /// tun->sndbuf.
    pub sndbuf: i32,
    /// tun->txflt.count: exact addresses of TUNSETTXFILTER (0: no filter).
    pub txflt_count: usize,
    /// tun->fprog as last copied by TUNATTACHFILTER (len, user address).
    pub fprog: (u16, u64),
    pub filter_attached: bool,
    pub steering_prog: bool,
    pub filter_prog: bool,
    /// dev->type (TUNSETLINK).
    pub link_type: u16,
    /// dev->dev_addr of a tap (a tun has addr_len 0): hwaddr.rs.
    pub dev_addr: [u8; 6],
    pub carrier: bool,
    /// IFF_UP (the caller's `ip link set up`: [`TunNet::set_up`]).
    pub up: bool,
    /// dev_activate has run (the first IFF_UP): the default qdisc stays attached from
    /// then on, down or up (net/sched/sch_generic.c: dev_activate ->
    /// attach_default_qdiscs); before it the device shows `noop`.
    pub activated: bool,
    /// tun->tfiles[0..numqueues].
    pub queues: Vec<FileId>,
    /// tun->disabled.
    pub disabled: Vec<FileId>,
}

/// The tun devices and `/dev/net/tun` files of one network namespace, plus the names and
/// ifindexes of its other devices (a fresh namespace has `lo`, ifindex 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunNet {
    devices: Vec<Option<TunIf>>,
    files: Vec<TunFile>,
    others: Vec<(Vec<u8>, u32)>,
    /// net->ifindex: the last ifindex handed out.
    last_ifindex: u32,
}

impl Default for TunNet {
    fn default() -> Self {
        TunNet {
            devices: Vec::new(),
            files: Vec::new(),
            others: vec![(b"lo".to_vec(), 1)],
            last_ifindex: 1,
        }
    }
}

impl TunNet {
    /// A fresh namespace: only `lo`.
    pub fn new() -> TunNet {
        TunNet::default()
    }

    /// A non-tun device (a veth, a bridge) holding `name`.
    pub fn add_other_device(&mut self, name: &str) {
        let ifindex = self.next_ifindex();
        self.others.push((name.as_bytes().to_vec(), ifindex));
    }

    /// tun_chr_open: a file with no device.
    pub fn open(&mut self) -> FileId {
        self.files.push(TunFile {
            tun: None,
            detached: false,
            detached_index: 0,
            sk_filter: false,
            sndbuf: SNDBUF_DEFAULT,
            ifindex: 0,
            open: true,
        });
        FileId(self.files.len() - 1)
    }

    pub fn file(&self, f: FileId) -> &TunFile {
        &self.files[f.0]
    }

    /// The device a file is attached to (or detached from by TUNSETQUEUE).
    pub fn device_of(&self, f: FileId) -> Option<&TunIf> {
        self.files[f.0].tun.and_then(|d| self.dev(d))
    }

    pub fn dev(&self, d: DevId) -> Option<&TunIf> {
        self.devices.get(d.0).and_then(|x| x.as_ref())
    }

    fn dev_mut(&mut self, d: DevId) -> &mut TunIf {
        self.devices[d.0]
            .as_mut()
            .expect("a file's device is registered")
    }

    /// The tun device named `name`, if registered.
    pub fn by_name(&self, name: &[u8]) -> Option<DevId> {
        self.devices
            .iter()
            .position(|d| d.as_ref().is_some_and(|d| d.name == name))
            .map(DevId)
    }

    /// `ip link set NAME up/down`.
    pub fn set_up(&mut self, d: DevId, up: bool) {
        let dev = self.dev_mut(d);
        dev.up = up;
        dev.activated |= up;
    }

    /// The registered tun devices, in the order they were made.
    pub fn devices(&self) -> impl Iterator<Item = &TunIf> {
        self.devices.iter().flatten()
    }

    /// tun_chr_close -> tun_detach(tfile, true): leave the device; the last queue of a
    /// non-persistent device unregisters it (drivers/net/tun.c: __tun_detach).
    pub fn close(&mut self, f: FileId) {
        let file = &mut self.files[f.0];
        file.open = false;
        let Some(d) = file.tun.take() else { return };
        file.detached = false;
        let dev = self.dev_mut(d);
        remove_queue(&mut dev.queues, f);
        dev.disabled.retain(|&q| q != f);
        if dev.queues.is_empty() && dev.disabled.is_empty() {
            dev.carrier = false;
            if !dev.persist {
                self.devices[d.0] = None;
            }
        }
    }

    /// The tun device with ifindex `ifindex`, if registered.
    pub fn by_ifindex(&self, ifindex: u32) -> Option<DevId> {
        self.devices
            .iter()
            .position(|d| d.as_ref().is_some_and(|d| d.ifindex == ifindex))
            .map(DevId)
    }

    /// `ip link del` (RTM_DELLINK: rtnl_dellink -> tun_link_ops.dellink, the default
    /// unregister_netdevice_queue) -> tun_net_uninit -> tun_detach_all
    /// (drivers/net/tun.c): every attached queue's `tfile->tun` is cleared, every
    /// TUNSETQUEUE-detached one is re-enabled (tun_enable_queue: `tfile->detached =
    /// NULL`) and cleared; the files stay open with no device (read/write: EBADFD,
    /// TUNSETQUEUE: EINVAL, TUNSETIFF may attach them anew).
    pub fn unregister(&mut self, d: DevId) {
        if self.dev(d).is_none() {
            return;
        }
        for file in &mut self.files {
            if file.tun == Some(d) {
                file.tun = None;
                file.detached = false;
            }
        }
        self.devices[d.0] = None;
    }

    fn next_ifindex(&mut self) -> u32 {
        loop {
            self.last_ifindex += 1;
            if !self.ifindex_in_use(self.last_ifindex) {
                return self.last_ifindex;
            }
        }
    }

    fn ifindex_in_use(&self, ifindex: u32) -> bool {
        self.others.iter().any(|o| o.1 == ifindex)
            || self.devices.iter().flatten().any(|d| d.ifindex == ifindex)
    }

    fn name_in_use(&self, name: &[u8]) -> bool {
        self.others.iter().any(|o| o.0 == name) || self.by_name(name).is_some()
    }

    /// tun_chr_ioctl (drivers/net/tun.c: __tun_chr_ioctl) for `caller` on file `f`.
    pub fn ioctl(
        &mut self,
        profile: &KernelProfile,
        caller: &Caller,
        f: FileId,
        cmd: u32,
        arg: &IoctlArg,
    ) -> Result<IoctlAnswer, Errno> {
        let rules = &profile.tun_ioctl;
        // The ifreq is copied first for TUNSETIFF, TUNSETQUEUE and the socket ioctls.
        let sock_ioc = (cmd >> 8) & 0xff == 0x89 && cmd != cmd::SIOCGSKNS;
        let ifreq = match arg {
            IoctlArg::Ifreq { name, flags } => Some((*name, *flags)),
            IoctlArg::Hwaddr { family, .. } => Some(([0; IFNAMSIZ], *family)),
            _ => None,
        };
        let wants_ifreq = cmd == cmd::TUNSETIFF || cmd == cmd::TUNSETQUEUE || sock_ioc;
        if wants_ifreq && ifreq.is_none() {
            return Err(Errno::EFAULT);
        }
        match cmd {
            cmd::TUNGETFEATURES => return out_int(arg, features_word(rules) as i32),
            cmd::TUNSETQUEUE => return self.set_queue(f, ifreq.map_or(0, |r| r.1)),
            cmd::SIOCGSKNS => return netns_fd(caller),
            _ => {}
        }
        let tun = self.files[f.0].tun;
        if cmd == cmd::TUNSETIFF {
            if tun.is_some() {
                return Err(Errno::EEXIST);
            }
            let (name, flags) = ifreq.expect("checked above");
            return self.set_iff(profile, caller, f, name, flags);
        }
        if cmd == cmd::TUNSETIFINDEX {
            if tun.is_some() {
                return Err(Errno::EPERM);
            }
            let ifindex = in_int(arg)?;
            if ifindex < 0 {
                return Err(Errno::EINVAL);
            }
            self.files[f.0].ifindex = ifindex;
            return Ok(IoctlAnswer::Done);
        }
        let Some(d) = tun else {
            return Err(Errno::EBADFD);
        };
        self.device_ioctl(profile, caller, f, d, cmd, arg)
    }

    /// The `switch (cmd)` of __tun_chr_ioctl, on a file with a device.
    fn device_ioctl(
        &mut self,
        profile: &KernelProfile,
        caller: &Caller,
        f: FileId,
        d: DevId,
        cmd: u32,
        arg: &IoctlArg,
    ) -> Result<IoctlAnswer, Errno> {
        let rules = &profile.tun_ioctl;
        let is_tap = self.dev_mut(d).kind == DeviceKind::Tap;
        match cmd {
            cmd::TUNGETIFF => {
                if *arg == IoctlArg::Fault {
                    return Err(Errno::EFAULT);
                }
                Ok(self.get_iff(f, d))
            }
            cmd::TUNSETNOCSUM | cmd::TUNSETDEBUG => Ok(IoctlAnswer::Done),
            cmd::TUNSETPERSIST => {
                self.dev_mut(d).persist = value(arg) != 0;
                Ok(IoctlAnswer::Done)
            }
            // make_kuid / make_kgid of the uid_t the unsigned long truncates to; (uid_t)-1
            // is the invalid id.
            cmd::TUNSETOWNER | cmd::TUNSETGROUP => {
                let id = value(arg) as u32;
                if id == u32::MAX {
                    return Err(Errno::EINVAL);
                }
                let dev = self.dev_mut(d);
                if cmd == cmd::TUNSETOWNER {
                    dev.owner = Some(id);
                } else {
                    dev.group = Some(id);
                }
                Ok(IoctlAnswer::Done)
            }
            cmd::TUNSETLINK => {
                let dev = self.dev_mut(d);
                if dev.up {
                    return Err(Errno::EBUSY);
                }
                dev.link_type = value(arg) as u16;
                Ok(IoctlAnswer::Done)
            }
            cmd::TUNSETOFFLOAD => {
                let offloads = set_offload(rules, value(arg))?;
                self.dev_mut(d).offloads = offloads;
                Ok(IoctlAnswer::Done)
            }
            cmd::TUNSETTXFILTER if !is_tap => Err(Errno::EINVAL),
            cmd::TUNSETTXFILTER => self.set_txfilter(d, arg),
            // __tun_chr_ioctl: dev_get_mac_address / dev_set_mac_address_user on tun->dev
            // (hwaddr.rs).
            cmd::SIOCGIFHWADDR => {
                let (family, data) = self.hw_addr(d).expect("attached device");
                Ok(IoctlAnswer::HwAddr { family, data })
            }
            cmd::SIOCSIFHWADDR => {
                let (family, data) = match arg {
                    IoctlArg::Hwaddr { family, data } => (*family, *data),
                    IoctlArg::Ifreq { flags, .. } => (*flags, [0; SA_DATA_LEN]),
                    _ => return Err(Errno::EFAULT),
                };
                self.set_hw_addr(d, family, &data)?;
                Ok(IoctlAnswer::Done)
            }
            cmd::TUNGETSNDBUF => out_int(arg, self.files[f.0].sndbuf),
            cmd::TUNSETSNDBUF => {
                let sndbuf = in_int(arg)?;
                if sndbuf <= 0 && rules.sndbuf_positive {
                    return Err(Errno::EINVAL);
                }
                // tun_set_sndbuf: every attached queue's socket.
                self.dev_mut(d).sndbuf = sndbuf;
                for q in self.dev_mut(d).queues.clone() {
                    self.files[q.0].sndbuf = sndbuf;
                }
                Ok(IoctlAnswer::Done)
            }
            cmd::TUNATTACHFILTER | cmd::TUNDETACHFILTER | cmd::TUNGETFILTER if !is_tap => {
                Err(Errno::EINVAL)
            }
            cmd::TUNATTACHFILTER => self.attach_filter(d, arg),
            cmd::TUNDETACHFILTER => Ok(self.detach_filter(d)),
            cmd::TUNGETFILTER => self.get_filter(d, arg),
            cmd::TUNSETSTEERINGEBPF | cmd::TUNSETFILTEREBPF if rules.ebpf => {
                let attached = set_ebpf(arg)?;
                let dev = self.dev_mut(d);
                if cmd == cmd::TUNSETSTEERINGEBPF {
                    dev.steering_prog = attached;
                } else {
                    dev.filter_prog = attached;
                }
                Ok(IoctlAnswer::Done)
            }
            cmd::TUNSETCARRIER if rules.set_carrier => {
                let on = in_int(arg)? != 0;
                let dev = self.dev_mut(d);
                // tun_net_change_carrier: no carrier without a queue.
                if on && dev.queues.is_empty() {
                    return Err(Errno::EPERM);
                }
                dev.carrier = on;
                Ok(IoctlAnswer::Done)
            }
            cmd::TUNGETDEVNETNS if rules.get_devnetns => netns_fd(caller),
            _ => self.vnet_ioctl(profile, d, cmd, arg),
        }
    }

    /// drivers/net/tun_vnet.h: tun_vnet_ioctl, the default branch of __tun_chr_ioctl
    /// (before 6.14 the same cases were inline in __tun_chr_ioctl).
    fn vnet_ioctl(
        &mut self,
        profile: &KernelProfile,
        d: DevId,
        cmd: u32,
        arg: &IoctlArg,
    ) -> Result<IoctlAnswer, Errno> {
        let rules = &profile.tun_ioctl;
        let dev = self.dev_mut(d);
        match cmd {
            cmd::TUNGETVNETHDRSZ => out_int(arg, dev.vnet_hdr_sz),
            cmd::TUNSETVNETHDRSZ => {
                let sz = in_int(arg)?;
                if sz < super::DEFAULT_VNET_HDR_SZ as i32 {
                    return Err(Errno::EINVAL);
                }
                dev.vnet_hdr_sz = sz;
                Ok(IoctlAnswer::Done)
            }
            cmd::TUNGETVNETLE if rules.vnet_le => out_int(arg, dev.vnet_le as i32),
            cmd::TUNSETVNETLE if rules.vnet_le => {
                dev.vnet_le = in_int(arg)? != 0;
                Ok(IoctlAnswer::Done)
            }
            // Without CONFIG_TUN_VNET_CROSS_LE both are EINVAL before any copy.
            cmd::TUNGETVNETBE if rules.vnet_be => out_int(arg, dev.vnet_be as i32),
            cmd::TUNSETVNETBE if rules.vnet_be => {
                dev.vnet_be = in_int(arg)? != 0;
                Ok(IoctlAnswer::Done)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// tun_get_iff plus __tun_chr_ioctl's TUNGETIFF additions.
    fn get_iff(&self, f: FileId, d: DevId) -> IoctlAnswer {
        let dev = self.dev(d).expect("attached device");
        let file = &self.files[f.0];
        let mut flags = dev.features | kind_flag(dev.kind);
        if dev.persist {
            flags |= iff_flags::IFF_PERSIST;
        }
        if file.detached {
            flags |= iff_flags::IFF_DETACH_QUEUE;
        }
        if !file.sk_filter {
            flags |= iff_flags::IFF_NOFILTER;
        }
        IoctlAnswer::Ifreq {
            name: dev.name.clone(),
            flags,
        }
    }
}

/// __tun_detach: `tun->tfiles[index] = tun->tfiles[numqueues - 1]`: the last queue takes
/// the leaving queue's index (so queue numbers, and the automq flow table's, move).
pub(super) fn remove_queue(queues: &mut Vec<FileId>, f: FileId) {
    if let Some(i) = queues.iter().position(|&q| q == f) {
        queues.swap_remove(i);
    }
}

fn kind_flag(kind: DeviceKind) -> u16 {
    match kind {
        DeviceKind::Tun => iff_flags::IFF_TUN,
        DeviceKind::Tap => iff_flags::IFF_TAP,
    }
}

/// The `unsigned long` of a by-value ioctl.
fn value(arg: &IoctlArg) -> u64 {
    match arg {
        IoctlArg::Value(v) => *v,
        IoctlArg::Int(v) => *v as i64 as u64,
        _ => 0,
    }
}

/// get_user / copy_from_user of an int.
fn in_int(arg: &IoctlArg) -> Result<i32, Errno> {
    match arg {
        IoctlArg::Int(v) => Ok(*v),
        _ => Err(Errno::EFAULT),
    }
}

/// put_user / copy_to_user of an int.
fn out_int(arg: &IoctlArg, v: i32) -> Result<IoctlAnswer, Errno> {
    match arg {
        IoctlArg::Fault => Err(Errno::EFAULT),
        _ => Ok(IoctlAnswer::Int(v)),
    }
}

/// TUNGETDEVNETNS / SIOCGSKNS: ns_capable(net->user_ns, CAP_NET_ADMIN), then
/// open_related_ns.
fn netns_fd(caller: &Caller) -> Result<IoctlAnswer, Errno> {
    if !caller.net_admin {
        return Err(Errno::EPERM);
    }
    Ok(IoctlAnswer::NetnsFd)
}

/// tun_set_ebpf: whether a program is attached afterwards.
fn set_ebpf(arg: &IoctlArg) -> Result<bool, Errno> {
    match arg {
        IoctlArg::BpfFd(BpfFd::Detach) | IoctlArg::Int(-1) => Ok(false),
        IoctlArg::BpfFd(BpfFd::Prog {
            socket_filter: true,
        }) => Ok(true),
        IoctlArg::BpfFd(BpfFd::NotOpen) => Err(Errno::EBADF),
        IoctlArg::BpfFd(_) => Err(Errno::EINVAL),
        // An fd number the caller did not resolve: not open.
        IoctlArg::Int(_) => Err(Errno::EBADF),
        _ => Err(Errno::EFAULT),
    }
}
