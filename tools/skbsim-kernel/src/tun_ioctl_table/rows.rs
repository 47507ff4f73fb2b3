//! The sequence of the tun ioctl table (docs/tun-ioctl.md#conformance): without a device,
//! TUNSETIFF names and flag combinations, offloads and the vnet header, the device
//! settings, the tx and socket filters, multi-queue attach/detach, and (last, in
//! `super::user`) who may attach as an unprivileged user.

use sim::tun::ioctl::cmd::*;
use sim::tun::ioctl::iff_flags::*;
use sim::tun::ioctl::{BpfFd, IoctlArg, SockFilter, IFNAMSIZ};

use super::Recorder;
use crate::KernelError;

/// Every part, in order.
pub(super) fn all(b: &mut Recorder) -> Result<(), KernelError> {
    no_device(b)?;
    setiff(b)?;
    offload_and_vnet(b)?;
    device_settings(b)?;
    filters(b)?;
    queues(b)?;
    super::user::permission(b)
}

fn ifreq_raw(name: &[u8], flags: u16) -> IoctlArg {
    let mut n = [0u8; IFNAMSIZ];
    n[..name.len()].copy_from_slice(name);
    IoctlArg::Ifreq { name: n, flags }
}

pub(super) fn ifreq(name: &str, flags: u16) -> IoctlArg {
    ifreq_raw(name.as_bytes(), flags)
}

const RET_ALL: SockFilter = SockFilter {
    code: 0x06,
    jt: 0,
    jf: 0,
    k: 0xffff_ffff,
};

fn prog(insns: Vec<SockFilter>) -> IoctlArg {
    IoctlArg::Fprog {
        len: insns.len() as u16,
        filter: 0x1000,
        insns,
    }
}

/// A file with no device: EBADFD except TUNGETFEATURES, TUNSETQUEUE, TUNSETIFINDEX,
/// SIOCGSKNS.
fn no_device(b: &mut Recorder) -> Result<(), KernelError> {
    let f = b.open()?;
    b.io(f, TUNGETFEATURES, IoctlArg::Out, "features");
    b.io(
        f,
        TUNGETFEATURES,
        IoctlArg::Fault,
        "features to a bad address",
    );
    for (cmd, arg) in [
        (TUNGETIFF, IoctlArg::Out),
        (TUNSETOFFLOAD, IoctlArg::Value(1)),
        (TUNSETVNETHDRSZ, IoctlArg::Int(12)),
        (TUNSETPERSIST, IoctlArg::Value(1)),
        (TUNGETDEVNETNS, IoctlArg::Out),
        (0x4004_54ff, IoctlArg::Value(0)),
    ] {
        b.io(f, cmd, arg, "no device");
    }
    for flags in [0, IFF_ATTACH_QUEUE, IFF_DETACH_QUEUE] {
        b.io(f, TUNSETQUEUE, ifreq("", flags), "queue, no device");
    }
    b.io(f, TUNSETQUEUE, IoctlArg::Fault, "queue, bad ifreq");
    b.io(f, TUNSETIFF, IoctlArg::Fault, "setiff, bad ifreq");
    b.io(f, SIOCGSKNS, IoctlArg::Out, "SIOCGSKNS");
    b.io(f, TUNSETIFINDEX, IoctlArg::Int(-1), "ifindex -1");
    b.io(f, TUNSETIFINDEX, IoctlArg::Fault, "ifindex fault");
    // lo holds ifindex 1.
    b.io(f, TUNSETIFINDEX, IoctlArg::Int(1), "ifindex 1");
    b.io(
        f,
        TUNSETIFF,
        ifreq("idx", IFF_TAP),
        "create on lo's ifindex",
    );
    Ok(())
}

/// TUNSETIFF: names and flag combinations, each on a new file.
fn setiff(b: &mut Recorder) -> Result<(), KernelError> {
    let names: Vec<&[u8]> = vec![
        b"",
        b"a/b",
        b"a:b",
        b"a b",
        b"a\tb",
        b"a\xa0b",
        b".",
        b"..",
        b"x%s",
        b"x%d%d",
        b"x%d",
        b"x%d",
        b"%d",
        b"lo",
        b"abcdefghijklmnop",
        b"abcdefghijklmno",
    ];
    for name in names {
        for flags in [IFF_TAP, IFF_TAP | IFF_TUN_EXCL] {
            let f = b.open()?;
            let what = format!("setiff {:?}", String::from_utf8_lossy(name));
            b.io(f, TUNSETIFF, ifreq_raw(name, flags | IFF_NO_PI), &what);
        }
    }
    let combos = [
        0,
        IFF_TUN,
        IFF_TAP,
        IFF_TUN | IFF_TAP,
        IFF_TAP | IFF_NAPI,
        IFF_TAP | IFF_NAPI_FRAGS,
        IFF_TUN | IFF_NAPI | IFF_NAPI_FRAGS,
        IFF_TUN | IFF_TAP | IFF_NAPI | IFF_NAPI_FRAGS,
        IFF_TAP | IFF_NAPI | IFF_NAPI_FRAGS,
        IFF_TAP | IFF_NO_CARRIER | IFF_VNET_HDR | IFF_ONE_QUEUE,
        IFF_TAP | IFF_PERSIST | IFF_ATTACH_QUEUE | 0x0080,
        IFF_TUN | IFF_MULTI_QUEUE | IFF_NO_PI,
    ];
    for (i, flags) in combos.into_iter().enumerate() {
        let f = b.open()?;
        let name = format!("fl{i}");
        let made = b.ask(
            f,
            TUNSETIFF,
            ifreq(&name, flags),
            &format!("flags {flags:#x}"),
        );
        if made.is_ok() {
            b.io(
                f,
                TUNGETIFF,
                IoctlArg::Out,
                &format!("getiff after {flags:#x}"),
            );
            b.io(f, TUNSETIFF, ifreq(&name, flags), "setiff twice");
            // A second file on the same device.
            let g = b.open()?;
            for f2 in [
                flags,
                flags ^ IFF_MULTI_QUEUE,
                IFF_TUN | IFF_TAP,
                IFF_TUN_EXCL | flags,
            ] {
                b.io(
                    g,
                    TUNSETIFF,
                    ifreq(&name, f2),
                    &format!("second {flags:#x} {f2:#x}"),
                );
            }
        }
    }
    Ok(())
}

fn offload_and_vnet(b: &mut Recorder) -> Result<(), KernelError> {
    let f = b.dev("ofl", IFF_TAP | IFF_NO_PI | IFF_VNET_HDR)?;
    for arg in (0..0x400u64).chain([0x800, 1 << 31, 1 << 32, u64::MAX]) {
        b.io(f, TUNSETOFFLOAD, IoctlArg::Value(arg), "offload");
    }
    for sz in (-1..=32).chain([4096, i32::MAX, i32::MIN]) {
        b.io(f, TUNSETVNETHDRSZ, IoctlArg::Int(sz), "vnet hdr sz");
        b.io(f, TUNGETVNETHDRSZ, IoctlArg::Out, "vnet hdr sz back");
    }
    b.io(f, TUNSETVNETHDRSZ, IoctlArg::Fault, "vnet hdr sz fault");
    b.io(f, TUNGETVNETHDRSZ, IoctlArg::Fault, "vnet hdr sz out fault");
    for (set, get) in [(TUNSETVNETLE, TUNGETVNETLE), (TUNSETVNETBE, TUNGETVNETBE)] {
        for v in [1, 0, -7] {
            b.io(f, set, IoctlArg::Int(v), "vnet endian");
            b.io(f, get, IoctlArg::Out, "vnet endian back");
        }
        b.io(f, set, IoctlArg::Fault, "vnet endian fault");
    }
    Ok(())
}

fn device_settings(b: &mut Recorder) -> Result<(), KernelError> {
    let f = b.dev("set", IFF_TUN | IFF_NO_PI)?;
    for v in [-1, 0, 1, 4096] {
        b.io(f, TUNSETSNDBUF, IoctlArg::Int(v), "sndbuf");
        b.io(f, TUNGETSNDBUF, IoctlArg::Out, "sndbuf back");
    }
    for cmd in [TUNSETOWNER, TUNSETGROUP] {
        for v in [0, 1000, 0xffff_ffff, 0x1_0000_0005, u64::MAX] {
            b.io(f, cmd, IoctlArg::Value(v), "owner/group");
        }
    }
    for cmd in [TUNSETDEBUG, TUNSETNOCSUM] {
        b.io(f, cmd, IoctlArg::Value(1), "debug/nocsum");
    }
    b.io(f, TUNSETLINK, IoctlArg::Value(1), "link while down");
    b.io(f, TUNSETLINK, IoctlArg::Value(0xfffe), "link back to none");
    b.set_up("set")?;
    b.io(f, TUNSETLINK, IoctlArg::Value(1), "link while up");
    for v in [0, 1, 2] {
        b.io(f, TUNSETCARRIER, IoctlArg::Int(v), "carrier");
    }
    b.io(f, TUNSETCARRIER, IoctlArg::Fault, "carrier fault");
    b.io(f, TUNGETDEVNETNS, IoctlArg::Out, "devnetns");
    b.io(f, SIOCGSKNS, IoctlArg::Out, "SIOCGSKNS on a device");
    for cmd in [TUNSETSTEERINGEBPF, TUNSETFILTEREBPF] {
        for fd in [BpfFd::Detach, BpfFd::NotOpen, BpfFd::NotProg] {
            b.io(f, cmd, IoctlArg::BpfFd(fd), "ebpf fd");
        }
        b.io(f, cmd, IoctlArg::Fault, "ebpf fault");
    }
    b.io(f, TUNSETPERSIST, IoctlArg::Value(1), "persist");
    b.io(f, TUNGETIFF, IoctlArg::Out, "getiff persist");
    b.io(f, TUNGETIFF, IoctlArg::Fault, "getiff fault");
    b.close(f);
    let g = b.open()?;
    b.io(g, TUNSETIFF, ifreq("set", IFF_TUN), "reattach persistent");
    b.io(g, TUNSETPERSIST, IoctlArg::Value(0), "unpersist");
    b.close(g);
    let h = b.open()?;
    b.io(
        h,
        TUNSETIFF,
        ifreq("set", IFF_TAP),
        "name free again (as tap)",
    );
    Ok(())
}

fn filters(b: &mut Recorder) -> Result<(), KernelError> {
    let t = b.dev("tunf", IFF_TUN)?;
    for cmd in [
        TUNSETTXFILTER,
        TUNATTACHFILTER,
        TUNDETACHFILTER,
        TUNGETFILTER,
    ] {
        b.io(t, cmd, IoctlArg::Fault, "tap-only on tun");
    }
    let f = b.dev("tapf", IFF_TAP)?;
    let m = [0x01, 0, 0x5e, 0, 0, 1];
    let u = [0x02, 0, 0, 0, 0, 1];
    for addrs in [vec![], vec![u], vec![u; 8], vec![u; 9], vec![m; 12], {
        let mut v = vec![u; 8];
        v.push(m);
        v
    }] {
        b.io(
            f,
            TUNSETTXFILTER,
            IoctlArg::TxFilter { flags: 1, addrs },
            "txfilter",
        );
    }
    b.io(f, TUNSETTXFILTER, IoctlArg::Fault, "txfilter fault");
    b.io(f, TUNGETFILTER, IoctlArg::Out, "getfilter before");
    let ld = |code, k| SockFilter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = SockFilter {
        code: 0x15,
        jt: 0,
        jf: 5,
        k: 0,
    };
    for insns in [
        vec![],
        vec![ld(0x00, 0)],
        vec![ld(0x34, 0), RET_ALL],
        vec![ld(0x64, 32), RET_ALL],
        vec![ld(0x05, 1), RET_ALL],
        vec![jeq, RET_ALL],
        vec![ld(0x60, 3), RET_ALL],
        vec![ld(0x02, 3), ld(0x60, 3), RET_ALL],
        vec![ld(0x20, 0xffff_f000 + 64), RET_ALL],
        vec![ld(0x28, 0xffff_f000), RET_ALL],
        vec![ld(0xff, 0), RET_ALL],
        vec![RET_ALL],
    ] {
        b.io(f, TUNATTACHFILTER, prog(insns), "attach filter");
        b.io(f, TUNGETFILTER, IoctlArg::Out, "getfilter");
    }
    b.io(
        f,
        TUNATTACHFILTER,
        IoctlArg::Fprog {
            len: 1,
            filter: 0,
            insns: vec![RET_ALL],
        },
        "NULL filter",
    );
    b.io(f, TUNGETIFF, IoctlArg::Out, "getiff with a filter");
    b.io(f, TUNDETACHFILTER, IoctlArg::Out, "detach filter");
    b.io(f, TUNGETIFF, IoctlArg::Out, "getiff without a filter");
    Ok(())
}

/// TUNSETQUEUE and multi-queue attach, and the filter re-attach of tun_attach.
fn queues(b: &mut Recorder) -> Result<(), KernelError> {
    let mq = IFF_TAP | IFF_MULTI_QUEUE | IFF_NO_PI;
    let f1 = b.dev("mq", mq)?;
    let f2 = b.open()?;
    b.io(f2, TUNSETIFF, ifreq("mq", mq), "second queue");
    let attach = || ifreq("", IFF_ATTACH_QUEUE);
    let detach = || ifreq("", IFF_DETACH_QUEUE);
    b.io(f1, TUNSETQUEUE, attach(), "attach an attached queue");
    b.io(f1, TUNSETQUEUE, detach(), "detach");
    b.io(f1, TUNSETQUEUE, detach(), "detach again");
    b.io(f1, TUNGETIFF, IoctlArg::Out, "getiff detached");
    b.io(f1, TUNSETIFF, ifreq("mq", mq), "setiff on a detached file");
    b.io(
        f1,
        TUNSETOFFLOAD,
        IoctlArg::Value(1),
        "offload on a detached file",
    );
    b.io(f2, TUNSETQUEUE, detach(), "detach the last queue");
    b.io(f2, TUNSETCARRIER, IoctlArg::Int(1), "carrier with no queue");
    b.io(
        f2,
        TUNSETQUEUE,
        ifreq("", IFF_ATTACH_QUEUE | IFF_DETACH_QUEUE),
        "both bits",
    );
    b.io(f1, TUNSETQUEUE, ifreq("", 0), "no bit");
    b.io(f1, TUNSETQUEUE, attach(), "re-attach");
    let s = b.dev("sq", IFF_TAP)?;
    b.io(s, TUNSETQUEUE, detach(), "detach single queue");
    // A filter on a multi-queue tap: a later attach without IFF_NOFILTER (= IFF_NO_PI).
    let g1 = b.dev("mqf", IFF_TAP | IFF_MULTI_QUEUE)?;
    b.io(g1, TUNATTACHFILTER, prog(vec![RET_ALL]), "filter on mq");
    let g2 = b.open()?;
    b.io(
        g2,
        TUNSETIFF,
        ifreq("mqf", IFF_TAP | IFF_MULTI_QUEUE),
        "attach with filter",
    );
    b.io(
        g2,
        TUNGETIFF,
        IoctlArg::Out,
        "getiff after attach with filter",
    );
    let g3 = b.open()?;
    b.io(
        g3,
        TUNSETIFF,
        ifreq("mqf", IFF_TAP | IFF_MULTI_QUEUE | IFF_NOFILTER),
        "nofilter",
    );
    b.io(g3, TUNGETIFF, IoctlArg::Out, "getiff nofilter");
    b.io(g1, TUNSETQUEUE, detach(), "detach filtered");
    b.io(g1, TUNSETQUEUE, attach(), "re-attach filtered");
    b.io(
        g1,
        TUNGETIFF,
        IoctlArg::Out,
        "getiff after re-attach filtered",
    );
    Ok(())
}
