//! The ioctls this crate issues with a typed argument, through `rustix::ioctl`.
//!
//! Each [`Request`] variant pairs one opcode with the argument its kernel handler reads or
//! writes, so the one `unsafe` call in [`ioctl`] is sound for every variant: a caller can
//! name a request but cannot pair an opcode with a wrong buffer. [`RawIoctl`] is the
//! rustix `Ioctl` for a run-time opcode (also used by [`crate::tun_ioctl`], which probes
//! every tun ioctl with the model's arguments).

use std::os::fd::BorrowedFd;

use rustix::ioctl::{Ioctl, IoctlOutput, Opcode};

use crate::error::Errno;
use crate::sys::IfreqFlags;
use crate::tap::{
    TUNGETFEATURES, TUNGETIFF, TUNGETVNETHDRSZ, TUNSETFILTEREBPF, TUNSETIFF, TUNSETOFFLOAD,
    TUNSETQUEUE, TUNSETSNDBUF, TUNSETSTEERINGEBPF, TUNSETVNETBE, TUNSETVNETHDRSZ, TUNSETVNETLE,
};

/// One ioctl with a run-time opcode and an argument that is a pointer or a plain value.
pub(crate) struct RawIoctl {
    pub(crate) opcode: Opcode,
    pub(crate) arg: *mut libc::c_void,
}

// SAFETY: `arg` is either a plain integer the kernel never dereferences, an address the
// kernel only reaches through copy_{from,to}_user (which fail with EFAULT on a bad one),
// or a pointer to a live buffer of the size the opcode's kernel handler copies; each
// constructor of a RawIoctl says which.
unsafe impl Ioctl for RawIoctl {
    type Output = IoctlOutput;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn as_ptr(&mut self) -> *mut libc::c_void {
        self.arg
    }

    unsafe fn output_from_ptr(
        out: IoctlOutput,
        _ptr: *mut libc::c_void,
    ) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// An ioctl and its argument. The kernel handler named on each variant copies at most the
/// argument's size (`struct ifreq`: 40 bytes; `int`/`unsigned int`: 4), or takes a value.
#[derive(Debug)]
pub(crate) enum Request<'a> {
    /// drivers/net/tun.c: __tun_chr_ioctl `TUNSETIFF`: reads a `struct ifreq`, writes back
    /// the name.
    TunSetIff(&'a mut IfreqFlags),
    /// `TUNGETIFF`: writes a `struct ifreq` (tun_get_iff).
    TunGetIff(&'a mut IfreqFlags),
    /// `TUNSETQUEUE`: reads a `struct ifreq` (tun_set_queue).
    TunSetQueue(&'a mut IfreqFlags),
    /// `TUNGETFEATURES`: writes one `unsigned int`.
    TunGetFeatures(&'a mut libc::c_uint),
    /// `TUNGETVNETHDRSZ`: writes one `int`.
    TunGetVnetHdrSz(&'a mut libc::c_int),
    /// `TUNSETVNETHDRSZ`: reads one `int`.
    TunSetVnetHdrSz(libc::c_int),
    /// `TUNSETVNETLE`: reads one `int` (tun_set_vnet_le).
    TunSetVnetLe(libc::c_int),
    /// `TUNSETVNETBE`: reads one `int` (tun_set_vnet_be).
    TunSetVnetBe(libc::c_int),
    /// `TUNSETSNDBUF`: reads one `int`.
    TunSetSndbuf(libc::c_int),
    /// `TUNSETOFFLOAD`: the `TUN_F_*` bits by value (set_offload).
    TunSetOffload(libc::c_uint),
    /// `TUNSETSTEERINGEBPF`: reads one `int`, a program fd or -1 (tun_set_ebpf).
    TunSetSteeringEbpf(libc::c_int),
    /// `TUNSETFILTEREBPF`: reads one `int`, as TUNSETSTEERINGEBPF.
    TunSetFilterEbpf(libc::c_int),
    /// net/core/dev_ioctl.c: dev_ifsioc_locked `SIOCGIFFLAGS`: writes `ifr_flags`.
    GetIfFlags(&'a mut IfreqFlags),
    /// dev_ifsioc `SIOCSIFFLAGS`: reads `ifr_flags`.
    SetIfFlags(&'a mut IfreqFlags),
}

/// Issue `req` on `fd`; the handler's non-negative return value.
pub(crate) fn ioctl(fd: BorrowedFd<'_>, req: Request<'_>) -> Result<i32, Errno> {
    let mut int: libc::c_int = 0;
    let (opcode, arg): (libc::c_ulong, *mut libc::c_void) = match req {
        Request::TunSetIff(r) => (TUNSETIFF, ptr(r)),
        Request::TunGetIff(r) => (TUNGETIFF, ptr(r)),
        Request::TunSetQueue(r) => (TUNSETQUEUE, ptr(r)),
        Request::TunGetFeatures(v) => (TUNGETFEATURES, ptr(v)),
        Request::TunGetVnetHdrSz(v) => (TUNGETVNETHDRSZ, ptr(v)),
        Request::TunSetVnetHdrSz(v) => (TUNSETVNETHDRSZ, ptr(set(&mut int, v))),
        Request::TunSetVnetLe(v) => (TUNSETVNETLE, ptr(set(&mut int, v))),
        Request::TunSetVnetBe(v) => (TUNSETVNETBE, ptr(set(&mut int, v))),
        Request::TunSetSndbuf(v) => (TUNSETSNDBUF, ptr(set(&mut int, v))),
        Request::TunSetOffload(bits) => (TUNSETOFFLOAD, bits as usize as *mut libc::c_void),
        Request::TunSetSteeringEbpf(fd) => (TUNSETSTEERINGEBPF, ptr(set(&mut int, fd))),
        Request::TunSetFilterEbpf(fd) => (TUNSETFILTEREBPF, ptr(set(&mut int, fd))),
        Request::GetIfFlags(r) => (libc::SIOCGIFFLAGS, ptr(r)),
        Request::SetIfFlags(r) => (libc::SIOCSIFFLAGS, ptr(r)),
    };
    let raw = RawIoctl {
        opcode: opcode as Opcode,
        arg,
    };
    // SAFETY: the pointer (if any) is to the variant's live argument or to `int`, both
    // outliving the call and as large as the handler named on the variant copies; the
    // value of TUNSETOFFLOAD is never dereferenced.
    unsafe { rustix::ioctl::ioctl(fd, raw) }.map_err(crate::error::from_rustix)
}

fn set(slot: &mut libc::c_int, v: libc::c_int) -> &mut libc::c_int {
    *slot = v;
    slot
}

fn ptr<T>(r: &mut T) -> *mut libc::c_void {
    (r as *mut T).cast()
}
