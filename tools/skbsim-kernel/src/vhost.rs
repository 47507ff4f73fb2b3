//! A userspace vhost_net client: what QEMU does for a virtio-net TX queue, and no more.
//!
//! `/dev/vhost-net`, `VHOST_SET_OWNER`, `VHOST_SET_FEATURES`, a memory table of one
//! region (this process's own anonymous mapping, guest-physical = userspace address), the
//! TX virtqueue (index 1: split ring, descriptors, avail and used rings in that mapping),
//! kick and call eventfds, and `VHOST_NET_SET_BACKEND` to a tap fd. The "guest" writes
//! one readable descriptor per packet (virtio_net_hdr + frame), publishes it in the avail
//! ring and kicks; the vhost worker (drivers/vhost/net.c: handle_tx) sends it into the
//! tap and returns the descriptor in the used ring.
//!
//! The mapping is shared with the kernel's vhost worker, which writes the used ring
//! while this process runs: every access to the rings goes through volatile reads and
//! writes with fences, never through Rust references.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use rustix::event::EventfdFlags;
use sim::consts::PAGE_SIZE;

use crate::error::{Cause, Errno, KernelError, OsErrno};
use crate::sys::cvt;

const VHOST_VIRTIO: u64 = 0xAF;

const fn ioc(dir: u64, nr: u64, size: u64) -> u64 {
    (dir << 30) | (size << 16) | (VHOST_VIRTIO << 8) | nr
}
const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;

// include/uapi/linux/vhost.h
const VHOST_GET_FEATURES: u64 = ioc(IOC_READ, 0x00, 8);
const VHOST_SET_FEATURES: u64 = ioc(IOC_WRITE, 0x00, 8);
const VHOST_SET_OWNER: u64 = ioc(0, 0x01, 0);
const VHOST_SET_MEM_TABLE: u64 = ioc(IOC_WRITE, 0x03, 8);
const VHOST_SET_VRING_NUM: u64 = ioc(IOC_WRITE, 0x10, 8);
const VHOST_SET_VRING_ADDR: u64 = ioc(IOC_WRITE, 0x11, 40);
const VHOST_SET_VRING_BASE: u64 = ioc(IOC_WRITE, 0x12, 8);
const VHOST_SET_VRING_KICK: u64 = ioc(IOC_WRITE, 0x20, 8);
const VHOST_SET_VRING_CALL: u64 = ioc(IOC_WRITE, 0x21, 8);
const VHOST_NET_SET_BACKEND: u64 = ioc(IOC_WRITE, 0x30, 8);

/// VIRTIO_F_VERSION_1: a 12-byte virtio_net_hdr (docs/vhost-tx.md#header-size,
/// vhost_net_set_features).
pub const VIRTIO_F_VERSION_1: u64 = 1 << 32;

/// The TX virtqueue of virtio-net.
const TX_VQ: u32 = 1;
/// The largest split ring vhost accepts (vhost_vring_set_num: num <= 0xffff, a power of
/// two); skbsim uses at most 32768 descriptors.
pub const MAX_RING: usize = 32768;

/// The vhost-net device with its TX ring in a private mapping.
#[derive(Debug)]
pub struct VhostNet {
    /// Held open for the device's lifetime: closing it stops the worker and detaches the tap.
    _dev: OwnedFd,
    kick: OwnedFd,
    call: OwnedFd,
    mem: Mapping,
    num: usize,
    desc_off: usize,
    avail_off: usize,
    used_off: usize,
    data_off: usize,
    /// Next free byte of the data area.
    data_next: usize,
    /// Next avail slot (free-running, as the ring's idx).
    avail_idx: u16,
    /// Used entries consumed so far.
    used_seen: u16,
}

/// Anonymous shared memory, page aligned, unmapped on drop.
#[derive(Debug)]
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; all access goes through
// `&self`/`&mut self` methods doing bounds-checked volatile accesses.
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(len: usize) -> Result<Mapping, KernelError> {
        // SAFETY: an anonymous mapping with no address hint; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(KernelError::sys("mmap vhost memory", Errno::last()));
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    fn addr(&self, off: usize) -> u64 {
        self.ptr as u64 + off as u64
    }

    fn check(&self, off: usize, n: usize) {
        assert!(
            off.checked_add(n).is_some_and(|e| e <= self.len),
            "vhost mapping access {off}+{n} beyond {}",
            self.len
        );
    }

    fn write_bytes(&mut self, off: usize, data: &[u8]) {
        self.check(off, data.len());
        // SAFETY: in bounds (checked); the kernel only reads descriptor buffers.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), data.len()) }
    }

    fn write_u16(&mut self, off: usize, v: u16) {
        self.check(off, 2);
        // SAFETY: in bounds and 2-aligned (ring offsets are); volatile: the kernel reads it.
        unsafe { std::ptr::write_volatile(self.ptr.add(off).cast::<u16>(), v.to_le()) }
    }

    fn write_u32(&mut self, off: usize, v: u32) {
        self.check(off, 4);
        // SAFETY: as write_u16, 4-aligned.
        unsafe { std::ptr::write_volatile(self.ptr.add(off).cast::<u32>(), v.to_le()) }
    }

    fn write_u64(&mut self, off: usize, v: u64) {
        self.check(off, 8);
        // SAFETY: as write_u16, 8-aligned.
        unsafe { std::ptr::write_volatile(self.ptr.add(off).cast::<u64>(), v.to_le()) }
    }

    fn read_u16(&self, off: usize) -> u16 {
        self.check(off, 2);
        // SAFETY: in bounds and aligned; volatile: the kernel writes it concurrently.
        u16::from_le(unsafe { std::ptr::read_volatile(self.ptr.add(off).cast::<u16>()) })
    }

    fn read_u32(&self, off: usize) -> u32 {
        self.check(off, 4);
        // SAFETY: as read_u16.
        u32::from_le(unsafe { std::ptr::read_volatile(self.ptr.add(off).cast::<u32>()) })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from mmap and are unmapped once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

fn align(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

fn eventfd(op: &str) -> Result<OwnedFd, KernelError> {
    rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
        .map_err(|e| KernelError::sys(op, crate::error::from_rustix(e)))
}

/// Open `/dev/vhost-net` and become its owner (`VHOST_SET_OWNER`: drivers/vhost/net.c:
/// vhost_net_set_owner).
fn open_owned() -> Result<OwnedFd, KernelError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/vhost-net")
        .map_err(|e| {
            KernelError::sys(
                "open /dev/vhost-net",
                Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
            )
        })?;
    let fd = OwnedFd::from(file);
    // SAFETY: VHOST_SET_OWNER takes no argument.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), VHOST_SET_OWNER as libc::c_ulong) })
        .map_err(|e| KernelError::sys("VHOST_SET_OWNER", e))?;
    Ok(fd)
}

/// `VHOST_GET_FEATURES`, then `VHOST_SET_FEATURES` with `features`, refused when the
/// device does not offer them all.
fn negotiate_features(fd: &OwnedFd, features: u64) -> Result<(), KernelError> {
    let mut have = 0u64;
    // SAFETY: VHOST_GET_FEATURES writes one u64 into `have`.
    cvt(unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            VHOST_GET_FEATURES as libc::c_ulong,
            &mut have as *mut u64,
        )
    })
    .map_err(|e| KernelError::sys("VHOST_GET_FEATURES", e))?;
    if have & features != features {
        return Err(KernelError::new(
            "VHOST_SET_FEATURES",
            Cause::Protocol(format!(
                "the device offers {have:#x}, without {:#x}",
                features & !have
            )),
        ));
    }
    ioctl_ptr(fd, VHOST_SET_FEATURES, &features, "VHOST_SET_FEATURES")?;
    Ok(())
}

/// Offsets of the descriptor table, avail ring, used ring and packet buffers in the
/// mapping, and its length.
fn ring_layout(num: usize, data: usize) -> (usize, usize, usize, usize, usize) {
    // Split ring layout (virtio 1.x 2.7): desc 16 x num, avail 6 + 2 x num, used
    // 6 + 8 x num, each on its own page; packet buffers after.
    let desc_off = 0;
    let avail_off = align(16 * num, PAGE_SIZE);
    let used_off = avail_off + align(6 + 2 * num, PAGE_SIZE);
    let data_off = used_off + align(6 + 8 * num, PAGE_SIZE);
    let len = align(data_off + data.max(1), PAGE_SIZE);
    (desc_off, avail_off, used_off, data_off, len)
}

/// `VHOST_SET_MEM_TABLE`: one region, guest-physical = userspace address.
fn set_mem_table(fd: &OwnedFd, mem: &Mapping, len: usize) -> Result<(), KernelError> {
    let table = MemTable1 {
        nregions: 1,
        padding: 0,
        guest_phys_addr: mem.addr(0),
        memory_size: len as u64,
        userspace_addr: mem.addr(0),
        flags_padding: 0,
    };
    ioctl_ptr(fd, VHOST_SET_MEM_TABLE, &table, "VHOST_SET_MEM_TABLE")?;
    Ok(())
}

/// The TX virtqueue's size, base and ring addresses (`VHOST_SET_VRING_NUM`, `_BASE`,
/// `_ADDR`).
fn set_tx_vring(
    fd: &OwnedFd,
    mem: &Mapping,
    num: usize,
    (desc_off, avail_off, used_off): (usize, usize, usize),
) -> Result<(), KernelError> {
    let state = |num: u32| VringState { index: TX_VQ, num };
    ioctl_ptr(
        fd,
        VHOST_SET_VRING_NUM,
        &state(num as u32),
        "VHOST_SET_VRING_NUM",
    )?;
    ioctl_ptr(fd, VHOST_SET_VRING_BASE, &state(0), "VHOST_SET_VRING_BASE")?;
    let addr = VringAddr {
        index: TX_VQ,
        flags: 0,
        desc_user_addr: mem.addr(desc_off),
        used_user_addr: mem.addr(used_off),
        avail_user_addr: mem.addr(avail_off),
        log_guest_addr: 0,
    };
    ioctl_ptr(fd, VHOST_SET_VRING_ADDR, &addr, "VHOST_SET_VRING_ADDR")?;
    Ok(())
}

/// The TX virtqueue's kick and call eventfds (`VHOST_SET_VRING_KICK`, `_CALL`).
fn set_tx_eventfds(fd: &OwnedFd) -> Result<(OwnedFd, OwnedFd), KernelError> {
    let kick = eventfd("eventfd (kick)")?;
    let call = eventfd("eventfd (call)")?;
    for (req, efd, op) in [
        (VHOST_SET_VRING_KICK, &kick, "VHOST_SET_VRING_KICK"),
        (VHOST_SET_VRING_CALL, &call, "VHOST_SET_VRING_CALL"),
    ] {
        let f = VringFile {
            index: TX_VQ,
            fd: efd.as_raw_fd(),
        };
        ioctl_ptr(fd, req, &f, op)?;
    }
    Ok((kick, call))
}

/// `VHOST_NET_SET_BACKEND`: the tap behind the TX virtqueue.
fn set_backend(fd: &OwnedFd, tap: &impl AsRawFd) -> Result<(), KernelError> {
    let backend = VringFile {
        index: TX_VQ,
        fd: tap.as_raw_fd(),
    };
    ioctl_ptr(fd, VHOST_NET_SET_BACKEND, &backend, "VHOST_NET_SET_BACKEND")?;
    Ok(())
}

fn ioctl_ptr<T>(fd: &OwnedFd, req: u64, arg: &T, op: &str) -> Result<(), KernelError> {
    // SAFETY: `arg` is a live, properly laid out argument for `req` (the structs below
    // are #[repr(C)] copies of the uapi ones); the kernel only reads it for _IOW.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req as libc::c_ulong, arg as *const T) };
    cvt(r).map(drop).map_err(|e| KernelError::sys(op, e))
}

#[repr(C)]
struct VringState {
    index: u32,
    num: u32,
}

#[repr(C)]
struct VringFile {
    index: u32,
    fd: i32,
}

#[repr(C)]
struct VringAddr {
    index: u32,
    flags: u32,
    desc_user_addr: u64,
    used_user_addr: u64,
    avail_user_addr: u64,
    log_guest_addr: u64,
}

#[repr(C)]
struct MemTable1 {
    nregions: u32,
    padding: u32,
    guest_phys_addr: u64,
    memory_size: u64,
    userspace_addr: u64,
    flags_padding: u64,
}

impl VhostNet {
    /// Open `/dev/vhost-net` with a TX ring of `num` descriptors (a power of two) and
    /// `data` bytes of packet buffers, negotiating `features`, with `tap` as backend.
    pub fn open(
        tap: &impl AsRawFd,
        num: usize,
        data: usize,
        features: u64,
    ) -> Result<VhostNet, KernelError> {
        if !num.is_power_of_two() || num > MAX_RING {
            return Err(KernelError::new(
                "VHOST_SET_VRING_NUM",
                Cause::Protocol(format!(
                    "{num} descriptors: not a power of two up to {MAX_RING}"
                )),
            ));
        }
        let fd = open_owned()?;
        negotiate_features(&fd, features)?;
        let (desc_off, avail_off, used_off, data_off, len) = ring_layout(num, data);
        let mem = Mapping::new(len)?;
        set_mem_table(&fd, &mem, len)?;
        set_tx_vring(&fd, &mem, num, (desc_off, avail_off, used_off))?;
        let (kick, call) = set_tx_eventfds(&fd)?;
        set_backend(&fd, tap)?;
        Ok(VhostNet {
            _dev: fd,
            kick,
            call,
            mem,
            num,
            desc_off,
            avail_off,
            used_off,
            data_off,
            data_next: 0,
            avail_idx: 0,
            used_seen: 0,
        })
    }

    /// Put one packet (`bytes`: virtio_net_hdr + frame) in descriptor `head` and in the
    /// avail ring, not yet visible to the device (see [`VhostNet::kick`]).
    pub fn add(&mut self, head: u16, bytes: &[u8]) -> Result<(), KernelError> {
        let head_i = usize::from(head);
        if head_i >= self.num {
            return Err(KernelError::new(
                "vhost add",
                Cause::Protocol(format!("head {head} outside a ring of {}", self.num)),
            ));
        }
        let off = self.data_off + self.data_next;
        if off + bytes.len() > self.mem.len {
            return Err(KernelError::new(
                "vhost add",
                Cause::Protocol(format!(
                    "{} bytes do not fit the {}-byte buffer area",
                    bytes.len(),
                    self.mem.len - self.data_off
                )),
            ));
        }
        self.mem.write_bytes(off, bytes);
        self.data_next = align(self.data_next + bytes.len(), 64);
        // struct vring_desc { le64 addr; le32 len; le16 flags; le16 next; }: one
        // device-readable descriptor, no chaining.
        let d = self.desc_off + 16 * head_i;
        self.mem.write_u64(d, self.mem.addr(off));
        self.mem.write_u32(d + 8, bytes.len() as u32);
        self.mem.write_u16(d + 12, 0);
        self.mem.write_u16(d + 14, 0);
        let slot = usize::from(self.avail_idx) % self.num;
        self.mem.write_u16(self.avail_off + 4 + 2 * slot, head);
        self.avail_idx = self.avail_idx.wrapping_add(1);
        Ok(())
    }

    /// Publish the avail index (descriptors before index: a release fence) and write the
    /// kick eventfd.
    pub fn kick(&mut self) -> Result<(), KernelError> {
        fence(Ordering::Release);
        self.mem.write_u16(self.avail_off + 2, self.avail_idx);
        fence(Ordering::SeqCst);
        match rustix::io::write(&self.kick, &1u64.to_ne_bytes()) {
            Ok(8) => Ok(()),
            Ok(n) => Err(KernelError::new(
                "write kick eventfd",
                Cause::Protocol(format!("wrote {n} of 8 bytes")),
            )),
            Err(e) => Err(KernelError::sys(
                "write kick eventfd",
                crate::error::from_rustix(e),
            )),
        }
    }

    /// Descriptors published and not yet returned.
    pub fn outstanding(&self) -> u16 {
        self.avail_idx.wrapping_sub(self.used_idx())
    }

    fn used_idx(&self) -> u16 {
        let v = self.mem.read_u16(self.used_off + 2);
        fence(Ordering::Acquire);
        v
    }

    /// Wait until every published descriptor is used, or `timeout` passes with no
    /// progress; then return the new used entries as (head, len).
    pub fn wait_used(&mut self, timeout: Duration) -> Vec<(u32, u32)> {
        let mut last = self.used_idx();
        let mut progress = Instant::now();
        while last != self.avail_idx && progress.elapsed() < timeout {
            std::thread::sleep(Duration::from_micros(200));
            let now = self.used_idx();
            if now != last {
                last = now;
                progress = Instant::now();
            }
        }
        self.drain_call();
        let mut out = Vec::new();
        while self.used_seen != last {
            let slot = usize::from(self.used_seen) % self.num;
            let e = self.used_off + 4 + 8 * slot;
            out.push((self.mem.read_u32(e), self.mem.read_u32(e + 4)));
            self.used_seen = self.used_seen.wrapping_add(1);
        }
        out
    }

    /// Reset the call eventfd (the signals themselves are the kernel's business: the
    /// ring's idx is what the arm counts).
    fn drain_call(&self) {
        // Non-blocking: EAGAIN when no signal is pending.
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&self.call, &mut buf);
    }
}
