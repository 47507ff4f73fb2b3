//! One test per rule of docs/tun-ioctl.md; expected values read in the kernel source
//! named on each (drivers/net/tun.c, drivers/net/tun_vnet.h of the profile's release).

use super::cmd::*;
use super::iff_flags::*;
use super::*;
use crate::profile::{LINUX_3_12, LINUX_4_19, LINUX_6_1, LINUX_6_12, LINUX_6_18};

fn name(s: &str) -> [u8; IFNAMSIZ] {
    let mut n = [0u8; IFNAMSIZ];
    n[..s.len()].copy_from_slice(s.as_bytes());
    n
}

fn ifreq(s: &str, flags: u16) -> IoctlArg {
    IoctlArg::Ifreq {
        name: name(s),
        flags,
    }
}

/// A namespace with one file attached to a new device `dev` made with `flags`.
fn with_dev(p: &KernelProfile, dev: &str, flags: u16) -> (TunNet, FileId) {
    let mut net = TunNet::new();
    let f = net.open();
    net.ioctl(p, &Caller::root(), f, TUNSETIFF, &ifreq(dev, flags))
        .expect("TUNSETIFF");
    (net, f)
}

#[test]
fn getfeatures_per_kernel() {
    // __tun_chr_ioctl: IFF_TUN | IFF_TAP | IFF_NO_CARRIER | TUN_FEATURES; this host's 6.18
    // answered 0x7173.
    let mut net = TunNet::new();
    let f = net.open();
    let word =
        |net: &mut TunNet, p| net.ioctl(p, &Caller::root(), f, TUNGETFEATURES, &IoctlArg::Out);
    assert_eq!(word(&mut net, &LINUX_6_18), Ok(IoctlAnswer::Int(0x7173)));
    assert_eq!(word(&mut net, &LINUX_6_1), Ok(IoctlAnswer::Int(0x7173)));
    assert_eq!(word(&mut net, &LINUX_4_19), Ok(IoctlAnswer::Int(0x7133)));
    assert_eq!(word(&mut net, &LINUX_3_12), Ok(IoctlAnswer::Int(0x7103)));
}

#[test]
fn setoffload_bits_per_kernel() {
    // set_offload: the host observations of the issue, and USO only as a pair from 6.2.
    let r = &LINUX_6_18.tun_ioctl;
    for (arg, ok) in [
        (0x81, false),
        (0x83, true),
        (0x103, false),
        (0x183, true),
        (0x200, false),
        (0x08, false),
        (0x09, false),
        (0x0b, true),
        (0x21, false),
        (0x61, true),
        (0x1e1, true),
        (0x11, true),
        (0x10, false),
    ] {
        assert_eq!(set_offload(r, arg).is_ok(), ok, "{arg:#x}");
    }
    let tnl = set_offload(r, 0x183).unwrap();
    assert!(tnl.udp_tunnel_gso && tnl.udp_tunnel_gso_csum && tnl.tso4 && tnl.csum);
    assert_eq!(set_offload(&LINUX_6_12.tun_ioctl, 0x83), Err(Errno::EINVAL));
    assert!(set_offload(&LINUX_6_12.tun_ioctl, 0x61).is_ok());
    assert_eq!(set_offload(&LINUX_6_1.tun_ioctl, 0x61), Err(Errno::EINVAL));
}

#[test]
fn no_device_is_ebadfd_except_the_device_free_ioctls() {
    let mut net = TunNet::new();
    let f = net.open();
    let root = Caller::root();
    let p = &LINUX_6_18;
    for (cmd, arg) in [
        (TUNGETIFF, IoctlArg::Out),
        (TUNSETOFFLOAD, IoctlArg::Value(1)),
        (TUNSETVNETHDRSZ, IoctlArg::Int(12)),
        (0x4004_54ff, IoctlArg::Value(0)),
    ] {
        assert_eq!(
            net.ioctl(p, &root, f, cmd, &arg),
            Err(Errno::EBADFD),
            "{cmd:#x}"
        );
    }
    // tun_set_queue runs before the lookup: EINVAL, not EBADFD.
    let q = ifreq("", IFF_ATTACH_QUEUE);
    assert_eq!(net.ioctl(p, &root, f, TUNSETQUEUE, &q), Err(Errno::EINVAL));
    assert_eq!(
        net.ioctl(p, &root, f, TUNSETIFINDEX, &IoctlArg::Int(-1)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        net.ioctl(p, &root, f, SIOCGSKNS, &IoctlArg::Out),
        Ok(IoctlAnswer::NetnsFd)
    );
}

#[test]
fn setiff_names_and_flags() {
    let p = &LINUX_6_18;
    let root = Caller::root();
    let mut net = TunNet::new();
    let mut try_iff = |n: &str, flags: u16| {
        let f = net.open();
        net.ioctl(p, &root, f, TUNSETIFF, &ifreq(n, flags))
    };
    let named = |n: &str, flags| {
        Ok(IoctlAnswer::Ifreq {
            name: n.as_bytes().to_vec(),
            flags,
        })
    };
    assert_eq!(try_iff("", IFF_TAP), named("tap0", IFF_TAP));
    assert_eq!(try_iff("", IFF_TAP), named("tap1", IFF_TAP));
    assert_eq!(
        try_iff("", IFF_TUN | IFF_TAP),
        named("tun0", IFF_TUN | IFF_TAP)
    );
    assert_eq!(try_iff("x%d", IFF_TUN), named("x0", IFF_TUN));
    // dev_valid_name and __dev_alloc_name.
    for bad in ["a/b", "a:b", "a b", ".", "..", "x%s", "x%d%d"] {
        assert_eq!(try_iff(bad, IFF_TAP), Err(Errno::EINVAL), "{bad}");
    }
    assert_eq!(try_iff("", 0), Err(Errno::EINVAL));
    // lo: not a tun device; IFF_TUN_EXCL on any existing name.
    assert_eq!(try_iff("lo", IFF_TAP), Err(Errno::EINVAL));
    assert_eq!(try_iff("lo", IFF_TAP | IFF_TUN_EXCL), Err(Errno::EBUSY));
    assert_eq!(try_iff("tap0", IFF_TAP | IFF_TUN_EXCL), Err(Errno::EBUSY));
    // A single-queue device has its queue: EBUSY; wrong kind or MQ: EINVAL.
    assert_eq!(try_iff("tap0", IFF_TAP), Err(Errno::EBUSY));
    assert_eq!(try_iff("tap0", IFF_TUN), Err(Errno::EINVAL));
    assert_eq!(
        try_iff("tap0", IFF_TAP | IFF_MULTI_QUEUE),
        Err(Errno::EINVAL)
    );
    // IFF_NAPI_FRAGS needs IFF_NAPI and exactly IFF_TAP (v4.15); ignored in 3.12.
    assert_eq!(try_iff("nf", IFF_TAP | IFF_NAPI_FRAGS), Err(Errno::EINVAL));
    assert_eq!(
        try_iff("nf", IFF_TUN | IFF_NAPI | IFF_NAPI_FRAGS),
        Err(Errno::EINVAL)
    );
    assert!(try_iff("nf", IFF_TAP | IFF_NAPI | IFF_NAPI_FRAGS).is_ok());
    let mut old = TunNet::new();
    let f = old.open();
    assert!(old
        .ioctl(
            &LINUX_3_12,
            &root,
            f,
            TUNSETIFF,
            &ifreq("nf", IFF_TAP | IFF_NAPI_FRAGS)
        )
        .is_ok());
    // The name is cut to 15 bytes.
    let f = net.open();
    let long = IoctlArg::Ifreq {
        name: *b"abcdefghijklmnop",
        flags: IFF_TAP,
    };
    assert_eq!(
        net.ioctl(p, &root, f, TUNSETIFF, &long),
        named("abcdefghijklmno", IFF_TAP)
    );
    // A second TUNSETIFF on an attached file.
    assert_eq!(net.ioctl(p, &root, f, TUNSETIFF, &long), Err(Errno::EEXIST));
}

#[test]
fn getiff_reports_features_persist_and_nofilter() {
    // tun_get_iff + TUNGETIFF: IFF_NOFILTER (= IFF_NO_PI) without a socket filter.
    let p = &LINUX_6_18;
    let (mut net, f) = with_dev(p, "t", IFF_TAP | IFF_VNET_HDR | IFF_NO_CARRIER | 0x0080);
    let root = Caller::root();
    net.ioctl(p, &root, f, TUNSETPERSIST, &IoctlArg::Value(1))
        .unwrap();
    assert_eq!(
        net.ioctl(p, &root, f, TUNGETIFF, &IoctlArg::Out),
        Ok(IoctlAnswer::Ifreq {
            name: b"t".to_vec(),
            flags: IFF_TAP | IFF_VNET_HDR | IFF_PERSIST | IFF_NOFILTER
        })
    );
}

#[test]
fn vnet_hdr_sz_le_be() {
    // tun_vnet_ioctl: >= sizeof(struct virtio_net_hdr); BE without CROSS_LE is EINVAL.
    let p = &LINUX_6_18;
    let (mut net, f) = with_dev(p, "t", IFF_TAP);
    let root = Caller::root();
    let mut io = |cmd, arg| net.ioctl(p, &root, f, cmd, &arg);
    assert_eq!(io(TUNGETVNETHDRSZ, IoctlArg::Out), Ok(IoctlAnswer::Int(10)));
    for (sz, ok) in [
        (8, false),
        (9, false),
        (10, true),
        (24, true),
        (4096, true),
        (-1, false),
    ] {
        assert_eq!(io(TUNSETVNETHDRSZ, IoctlArg::Int(sz)).is_ok(), ok, "{sz}");
    }
    assert_eq!(
        io(TUNGETVNETHDRSZ, IoctlArg::Out),
        Ok(IoctlAnswer::Int(4096))
    );
    assert_eq!(io(TUNSETVNETHDRSZ, IoctlArg::Fault), Err(Errno::EFAULT));
    assert_eq!(io(TUNSETVNETLE, IoctlArg::Int(7)), Ok(IoctlAnswer::Done));
    assert_eq!(io(TUNGETVNETLE, IoctlArg::Out), Ok(IoctlAnswer::Int(1)));
    assert_eq!(io(TUNSETVNETBE, IoctlArg::Fault), Err(Errno::EINVAL));
    let (mut old, f) = with_dev(&LINUX_3_12, "t", IFF_TAP);
    let r = old.ioctl(&LINUX_3_12, &root, f, TUNSETVNETLE, &IoctlArg::Int(1));
    assert_eq!(r, Err(Errno::EINVAL));
}

#[test]
fn sndbuf_owner_group_link_carrier() {
    let p = &LINUX_6_18;
    let (mut net, f) = with_dev(p, "t", IFF_TUN);
    let root = Caller::root();
    let io = |net: &mut TunNet, cmd, arg| net.ioctl(p, &root, f, cmd, &arg);
    assert_eq!(
        io(&mut net, TUNGETSNDBUF, IoctlArg::Out),
        Ok(IoctlAnswer::Int(i32::MAX))
    );
    assert_eq!(
        io(&mut net, TUNSETSNDBUF, IoctlArg::Int(0)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        io(&mut net, TUNSETSNDBUF, IoctlArg::Int(4096)),
        Ok(IoctlAnswer::Done)
    );
    assert_eq!(
        io(&mut net, TUNGETSNDBUF, IoctlArg::Out),
        Ok(IoctlAnswer::Int(4096))
    );
    assert_eq!(
        io(&mut net, TUNSETOWNER, IoctlArg::Value(0xffff_ffff)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        io(&mut net, TUNSETGROUP, IoctlArg::Value(0x1_0000_0005)),
        Ok(IoctlAnswer::Done)
    );
    assert_eq!(
        io(&mut net, TUNSETLINK, IoctlArg::Value(1)),
        Ok(IoctlAnswer::Done)
    );
    let d = net.by_name(b"t").unwrap();
    net.set_up(d, true);
    assert_eq!(
        io(&mut net, TUNSETLINK, IoctlArg::Value(1)),
        Err(Errno::EBUSY)
    );
    // Tap-only ioctls on a tun device.
    assert_eq!(
        io(&mut net, TUNSETTXFILTER, IoctlArg::Fault),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        io(&mut net, TUNGETFILTER, IoctlArg::Out),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        io(&mut net, TUNSETCARRIER, IoctlArg::Int(1)),
        Ok(IoctlAnswer::Done)
    );
    let r = net.ioctl(&LINUX_4_19, &root, f, TUNSETCARRIER, &IoctlArg::Int(1));
    assert_eq!(r, Err(Errno::EINVAL));
    assert_eq!(net.dev(d).unwrap().group, Some(5));
}

#[test]
fn setqueue_rules() {
    // tun_set_queue: MQ only; attach needs a detached file; the last queue may detach.
    let p = &LINUX_6_18;
    let root = Caller::root();
    let (mut net, f) = with_dev(p, "mq", IFF_TAP | IFF_MULTI_QUEUE);
    let detach = ifreq("", IFF_DETACH_QUEUE);
    let attach = ifreq("", IFF_ATTACH_QUEUE);
    assert_eq!(
        net.ioctl(p, &root, f, TUNSETQUEUE, &attach),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        net.ioctl(p, &root, f, TUNSETQUEUE, &detach),
        Ok(IoctlAnswer::Done)
    );
    assert_eq!(
        net.ioctl(p, &root, f, TUNSETQUEUE, &detach),
        Err(Errno::EINVAL)
    );
    let flags = match net.ioctl(p, &root, f, TUNGETIFF, &IoctlArg::Out) {
        Ok(IoctlAnswer::Ifreq { flags, .. }) => flags,
        other => panic!("{other:?}"),
    };
    assert_ne!(flags & IFF_DETACH_QUEUE, 0);
    assert_eq!(
        net.ioctl(
            p,
            &root,
            f,
            TUNSETIFF,
            &ifreq("mq", IFF_TAP | IFF_MULTI_QUEUE)
        ),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        net.ioctl(p, &root, f, TUNSETQUEUE, &attach),
        Ok(IoctlAnswer::Done)
    );
    assert_eq!(
        net.ioctl(p, &root, f, TUNSETQUEUE, &ifreq("", 0)),
        Err(Errno::EINVAL)
    );
    let (mut single, g) = with_dev(p, "sq", IFF_TAP);
    assert_eq!(
        single.ioctl(p, &root, g, TUNSETQUEUE, &detach),
        Err(Errno::EINVAL)
    );
}

#[test]
fn permission_rule_per_kernel() {
    // tun_permitted (Debian 6.12.118) vs tun_not_capable (6.1, and 6.18 after the
    // revert): a device with no owner and no group. The lab and this host saw each
    // (tools/skbsim-lab/tests/data/tun-ioctl-*.jsonl, "user attaches, neither set").
    for (p, ok) in [
        (&LINUX_6_12, false),
        (&LINUX_6_18, true),
        (&LINUX_6_1, true),
    ] {
        let (mut net, f) = with_dev(p, "p", IFF_TAP);
        let root = Caller::root();
        net.ioctl(p, &root, f, TUNSETPERSIST, &IoctlArg::Value(1))
            .unwrap();
        net.close(f);
        let g = net.open();
        let user = Caller::user(1000, 1000);
        let r = net.ioctl(p, &user, g, TUNSETIFF, &ifreq("p", IFF_TAP));
        assert_eq!(r.is_ok(), ok, "{}", p.name);
        // Creating a device needs CAP_NET_ADMIN in both.
        let h = net.open();
        assert_eq!(
            net.ioctl(p, &user, h, TUNSETIFF, &ifreq("q", IFF_TAP)),
            Err(Errno::EPERM)
        );
        assert_eq!(
            net.ioctl(p, &user, h, TUNGETDEVNETNS, &IoctlArg::Out),
            Err(Errno::EBADFD)
        );
    }
    // With the owner set, that user may attach in both.
    let p = &LINUX_6_18;
    let (mut net, f) = with_dev(p, "p", IFF_TAP);
    let root = Caller::root();
    net.ioctl(p, &root, f, TUNSETOWNER, &IoctlArg::Value(1000))
        .unwrap();
    net.ioctl(p, &root, f, TUNSETPERSIST, &IoctlArg::Value(1))
        .unwrap();
    net.close(f);
    let g = net.open();
    assert!(net
        .ioctl(
            p,
            &Caller::user(1000, 1000),
            g,
            TUNSETIFF,
            &ifreq("p", IFF_TAP)
        )
        .is_ok());
    let h = net.open();
    net.close(g);
    let r = net.ioctl(
        p,
        &Caller::user(1001, 1000),
        h,
        TUNSETIFF,
        &ifreq("p", IFF_TAP),
    );
    assert_eq!(r, Err(Errno::EPERM));
}

#[test]
fn close_unregisters_a_non_persistent_device() {
    let p = &LINUX_6_18;
    let (mut net, f) = with_dev(p, "gone", IFF_TAP);
    net.close(f);
    assert!(net.by_name(b"gone").is_none());
}

#[test]
fn txfilter_and_socket_filter() {
    let p = &LINUX_6_18;
    let root = Caller::root();
    let (mut net, f) = with_dev(p, "t", IFF_TAP);
    let mcast = [0x01, 0, 0x5e, 0, 0, 1];
    let ucast = [0x02, 0, 0, 0, 0, 1];
    let tx = |addrs: Vec<[u8; 6]>| IoctlArg::TxFilter { flags: 0, addrs };
    let io = |net: &mut TunNet, cmd, arg: IoctlArg| net.ioctl(p, &root, f, cmd, &arg);
    assert_eq!(
        io(&mut net, TUNSETTXFILTER, tx(vec![])),
        Ok(IoctlAnswer::Done)
    );
    assert_eq!(
        io(&mut net, TUNSETTXFILTER, tx(vec![ucast; 3])),
        Ok(IoctlAnswer::Returned(3))
    );
    assert_eq!(
        io(&mut net, TUNSETTXFILTER, tx(vec![ucast; 9])),
        Ok(IoctlAnswer::Done)
    );
    let mut nine = vec![ucast; 8];
    nine.push(mcast);
    assert_eq!(
        io(&mut net, TUNSETTXFILTER, tx(nine)),
        Ok(IoctlAnswer::Returned(8))
    );
    let ret = SockFilter {
        code: 0x06,
        jt: 0,
        jf: 0,
        k: 0xffff_ffff,
    };
    let prog = |insns: Vec<SockFilter>| IoctlArg::Fprog {
        len: insns.len() as u16,
        filter: 0x1000,
        insns,
    };
    assert_eq!(
        io(&mut net, TUNGETFILTER, IoctlArg::Out),
        Ok(IoctlAnswer::Fprog { len: 0, filter: 0 })
    );
    let bad = SockFilter { code: 0x00, ..ret }; // ld #imm, then no ret
    assert_eq!(
        io(&mut net, TUNATTACHFILTER, prog(vec![bad])),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        io(&mut net, TUNGETFILTER, IoctlArg::Out),
        Ok(IoctlAnswer::Fprog {
            len: 1,
            filter: 0x1000
        })
    );
    assert_eq!(
        io(&mut net, TUNATTACHFILTER, prog(vec![ret])),
        Ok(IoctlAnswer::Done)
    );
    let flags = match io(&mut net, TUNGETIFF, IoctlArg::Out) {
        Ok(IoctlAnswer::Ifreq { flags, .. }) => flags,
        other => panic!("{other:?}"),
    };
    assert_eq!(flags & IFF_NOFILTER, 0);
    assert_eq!(
        io(&mut net, TUNDETACHFILTER, IoctlArg::Out),
        Ok(IoctlAnswer::Done)
    );
    // EBPF: -1 detaches; a non-socket-filter program is EINVAL, a closed fd EBADF.
    let ebpf = |b| IoctlArg::BpfFd(b);
    assert_eq!(
        io(&mut net, TUNSETSTEERINGEBPF, ebpf(BpfFd::Detach)),
        Ok(IoctlAnswer::Done)
    );
    assert_eq!(
        io(&mut net, TUNSETFILTEREBPF, ebpf(BpfFd::NotOpen)),
        Err(Errno::EBADF)
    );
    let xdp = BpfFd::Prog {
        socket_filter: false,
    };
    assert_eq!(
        io(&mut net, TUNSETFILTEREBPF, ebpf(xdp)),
        Err(Errno::EINVAL)
    );
}

#[test]
fn classic_checks() {
    // bpf_check_classic: division by constant 0, jumps out of range, unknown ancillary,
    // reading scratch memory never stored.
    let ret = SockFilter {
        code: 0x06,
        jt: 0,
        jf: 0,
        k: 0,
    };
    let ok = |v: &[SockFilter]| check_classic(1, v.len() as u16, v);
    assert_eq!(ok(&[ret]), Ok(()));
    assert_eq!(check_classic(0, 1, &[ret]), Err(Errno::EINVAL));
    assert_eq!(check_classic(1, 0, &[]), Err(Errno::EINVAL));
    assert_eq!(check_classic(1, 2, &[ret]), Err(Errno::EFAULT));
    let div0 = SockFilter { code: 0x34, ..ret };
    assert_eq!(ok(&[div0, ret]), Err(Errno::EINVAL));
    let ja_far = SockFilter {
        code: 0x05,
        k: 1,
        ..ret
    };
    assert_eq!(ok(&[ja_far, ret]), Err(Errno::EINVAL));
    let ldmem = SockFilter {
        code: 0x60,
        k: 3,
        ..ret
    };
    assert_eq!(ok(&[ldmem, ret]), Err(Errno::EINVAL));
    let st = SockFilter {
        code: 0x02,
        k: 3,
        ..ret
    };
    assert_eq!(ok(&[st, ldmem, ret]), Ok(()));
    let anc = SockFilter {
        code: 0x20,
        k: 0xffff_f000 + 64,
        ..ret
    };
    assert_eq!(ok(&[anc, ret]), Err(Errno::EINVAL));
    let proto = SockFilter {
        code: 0x28,
        k: 0xffff_f000,
        ..ret
    };
    assert_eq!(ok(&[proto, ret]), Ok(()));
}
