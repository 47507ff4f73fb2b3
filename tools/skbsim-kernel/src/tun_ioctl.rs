//! Any tun ioctl, issued on a real `/dev/net/tun` file with the model's typed argument
//! ([`sim::tun::ioctl::IoctlArg`]) and read back as the model's answer, so that a test can
//! compare the kernel with `sim::tun::ioctl::TunNet::ioctl` row by row
//! (docs/tun-ioctl.md#conformance).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use rustix::ioctl::Opcode;
use sim::tun::ioctl::{cmd, BpfFd, IoctlAnswer, IoctlArg, IFNAMSIZ};

use crate::error::{Errno, KernelError};
use crate::ioctl::RawIoctl;
use crate::sys::ensure_private_netns;

/// An address no process maps: the kernel's copy from or to it fails with EFAULT.
const BAD_ADDRESS: usize = 8;

/// Open `/dev/net/tun` files in a private network namespace, and the user memory their
/// ioctls read and write.
#[derive(Debug, Default)]
pub struct TunProbe {
    /// TUNATTACHFILTER's `filter` values: (the model's, the real array's address). The
    /// arrays stay alive here so that TUNGETFILTER answers a known address.
    filters: Vec<(u64, Box<[[u8; 8]]>)>,
    /// An open fd that is not a BPF program (TUNSETSTEERINGEBPF's [`BpfFd::NotProg`]).
    not_prog: Option<File>,
}

impl TunProbe {
    pub fn new() -> TunProbe {
        TunProbe::default()
    }

    /// tun_chr_open: a file with no device. Refused in the main network namespace.
    pub fn open(&self) -> Result<File, KernelError> {
        ensure_private_netns("open /dev/net/tun")?;
        OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun")
            .map_err(|e| {
                KernelError::sys(
                    "open /dev/net/tun",
                    Errno::from_raw(e.raw_os_error().unwrap_or(0)),
                )
            })
    }

    /// `ioctl(file, cmd, arg)`: the answer as the model gives it, or the errno number.
    pub fn ioctl(&mut self, file: &File, cmd: u32, arg: &IoctlArg) -> Result<IoctlAnswer, i32> {
        let mut buf = [0u8; 64];
        let argv: *mut libc::c_void = match arg {
            IoctlArg::Value(v) => *v as usize as *mut libc::c_void,
            IoctlArg::Fault => BAD_ADDRESS as *mut libc::c_void,
            IoctlArg::Out => buf.as_mut_ptr().cast(),
            IoctlArg::Int(v) => {
                buf[..4].copy_from_slice(&v.to_ne_bytes());
                buf.as_mut_ptr().cast()
            }
            IoctlArg::BpfFd(b) => {
                let fd = self.bpf_fd(*b);
                buf[..4].copy_from_slice(&fd.to_ne_bytes());
                buf.as_mut_ptr().cast()
            }
            IoctlArg::Ifreq { name, flags } => {
                buf[..IFNAMSIZ].copy_from_slice(name);
                buf[IFNAMSIZ..IFNAMSIZ + 2].copy_from_slice(&flags.to_ne_bytes());
                buf.as_mut_ptr().cast()
            }
            IoctlArg::Hwaddr { family, data } => {
                // ifr_hwaddr: struct sockaddr right after the name.
                buf[IFNAMSIZ..IFNAMSIZ + 2].copy_from_slice(&family.to_ne_bytes());
                buf[IFNAMSIZ + 2..IFNAMSIZ + 16].copy_from_slice(data);
                buf.as_mut_ptr().cast()
            }
            IoctlArg::TxFilter { flags, addrs } => {
                let mut v = Vec::with_capacity(4 + 6 * addrs.len());
                v.extend_from_slice(&flags.to_ne_bytes());
                v.extend_from_slice(&(addrs.len() as u16).to_ne_bytes());
                addrs.iter().for_each(|a| v.extend_from_slice(a));
                return self.call(file, cmd, v.as_mut_ptr().cast(), &buf, arg);
            }
            IoctlArg::Fprog { len, filter, insns } => {
                let arr: Box<[[u8; 8]]> = insns
                    .iter()
                    .map(|i| {
                        let mut b = [0u8; 8];
                        b[..2].copy_from_slice(&i.code.to_ne_bytes());
                        b[2] = i.jt;
                        b[3] = i.jf;
                        b[4..].copy_from_slice(&i.k.to_ne_bytes());
                        b
                    })
                    .collect();
                let addr = if *filter == 0 { 0 } else { arr.as_ptr() as u64 };
                buf[..2].copy_from_slice(&len.to_ne_bytes());
                buf[8..16].copy_from_slice(&addr.to_ne_bytes());
                self.filters.push((*filter, arr));
                buf.as_mut_ptr().cast()
            }
        };
        self.call(file, cmd, argv, &buf, arg)
    }

    fn call(
        &mut self,
        file: &File,
        cmd: u32,
        argv: *mut libc::c_void,
        buf: &[u8; 64],
        arg: &IoctlArg,
    ) -> Result<IoctlAnswer, i32> {
        let req = RawIoctl {
            opcode: cmd as Opcode,
            arg: argv,
        };
        // SAFETY: see `RawIoctl`; `buf` (or the caller's vector) outlives the call and is
        // 64 bytes, more than any tun ioctl copies (struct ifreq: 40).
        let ret =
            unsafe { rustix::ioctl::ioctl(file.as_fd(), req) }.map_err(|e| e.raw_os_error())?;
        Ok(self.answer(cmd, ret, buf, arg))
    }

    fn answer(&self, cmd: u32, ret: i32, buf: &[u8; 64], arg: &IoctlArg) -> IoctlAnswer {
        if cmd == cmd::TUNGETDEVNETNS || cmd == cmd::SIOCGSKNS {
            // SAFETY: on success these ioctls return a new fd that nothing else owns.
            drop(unsafe { OwnedFd::from_raw_fd(ret) });
            return IoctlAnswer::NetnsFd;
        }
        if ret > 0 {
            return IoctlAnswer::Returned(ret);
        }
        let ifreq_out = cmd == cmd::TUNGETIFF || cmd == cmd::TUNSETIFF;
        if ifreq_out && matches!(arg, IoctlArg::Out | IoctlArg::Ifreq { .. }) {
            let name = &buf[..IFNAMSIZ];
            let end = name.iter().position(|&c| c == 0).unwrap_or(IFNAMSIZ);
            return IoctlAnswer::Ifreq {
                name: name[..end].to_vec(),
                flags: u16::from_ne_bytes([buf[16], buf[17]]),
            };
        }
        if cmd == cmd::SIOCGIFHWADDR {
            let mut data = [0u8; 14];
            data.copy_from_slice(&buf[IFNAMSIZ + 2..IFNAMSIZ + 16]);
            return IoctlAnswer::HwAddr {
                family: u16::from_ne_bytes([buf[IFNAMSIZ], buf[IFNAMSIZ + 1]]),
                data,
            };
        }
        if cmd == cmd::TUNGETFILTER {
            let len = u16::from_ne_bytes([buf[0], buf[1]]);
            let addr = u64::from_ne_bytes(buf[8..16].try_into().expect("8 bytes"));
            let filter = self
                .filters
                .iter()
                .rev()
                .find(|(_, a)| a.as_ptr() as u64 == addr)
                .map_or(addr, |(m, _)| *m);
            return IoctlAnswer::Fprog { len, filter };
        }
        // _IOR: the kernel wrote an int.
        if *arg == IoctlArg::Out && cmd >> 30 == 2 {
            return IoctlAnswer::Int(i32::from_ne_bytes(buf[..4].try_into().expect("4 bytes")));
        }
        IoctlAnswer::Done
    }

    fn bpf_fd(&mut self, b: BpfFd) -> i32 {
        match b {
            BpfFd::Detach => -1,
            // Far above any fd this process opens.
            BpfFd::NotOpen => 1 << 20,
            BpfFd::NotProg | BpfFd::Prog { .. } => {
                let f = self
                    .not_prog
                    .get_or_insert_with(|| File::open("/dev/null").expect("/dev/null opens"));
                f.as_raw_fd()
            }
        }
    }
}
