//! bpf(2) through `skbsim_kernel::bpf` (root only): maps, program load with the verifier
//! log on refusal, test runs, and both ways of attaching XDP.

mod common;

use sim::bpf::{assemble, MapSpec, MapType};
use skbsim_kernel::bpf::{attach_xdp, detach_xdp, BpfMap, LoadedXdp, XdpLink, XdpMode};
use skbsim_kernel::{Netns, TapConfig, XdpAttached};

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn maps_update_lookup_iterate_and_copy_to_the_model() {
    skbsim_kernel::require_privileges();
    Netns::run(|_| {
        let h = BpfMap::create("h", &MapSpec::hash(4, 8, 4))?;
        for k in [7u32, 3, 9] {
            h.update(&k.to_le_bytes(), &u64::from(k * 10).to_le_bytes(), 0)?;
        }
        assert_eq!(h.lookup(&5u32.to_le_bytes())?, None);
        assert_eq!(
            h.lookup(&3u32.to_le_bytes())?,
            Some(30u64.to_le_bytes().to_vec())
        );
        let mut d = h.dump()?;
        d.sort();
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].0, 3u32.to_le_bytes());
        let full = h.update(&11u32.to_le_bytes(), &[0; 8], 0);
        assert!(full.is_ok(), "4 entries fit: {full:?}");
        let e = h.update(&12u32.to_le_bytes(), &[0; 8], 0).unwrap_err();
        assert_eq!(e.errno(), Some(skbsim_kernel::Errno::E2BIG), "{e}");

        let pc = BpfMap::create("pc", &MapSpec::new(MapType::PercpuArray, 4, 8, 2))?;
        let v = pc.lookup(&1u32.to_le_bytes())?.expect("array slots exist");
        assert!(v.len() >= 8 && v.len() % 8 == 0, "{} bytes", v.len());
        let mut ones = vec![0u8; v.len()];
        for c in ones.chunks_mut(8) {
            c[0] = 1;
        }
        pc.update(&1u32.to_le_bytes(), &ones, 0)?;
        let a = BpfMap::create("a", &MapSpec::array(8, 3))?;
        assert_eq!(a.dump()?.len(), 3);
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn a_refused_program_carries_the_verifier_log() {
    skbsim_kernel::require_privileges();
    // r0 is read before it is written: the verifier says so.
    let prog = assemble("bad", "r0 = r2\nexit").unwrap();
    let e = Netns::run(|_| LoadedXdp::load(&prog).map(|_| ())).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("BPF_PROG_LOAD bad"), "{text}");
    assert!(text.contains("verifier log"), "{text}");
    assert!(text.contains("R2 !read_ok"), "{text}");
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn test_run_returns_verdict_and_bytes_and_counts_in_maps() {
    skbsim_kernel::require_privileges();
    let mut prog = assemble(
        "count",
        "
        .map verdicts array 4 8 5
        r1 = 3
        *(u32 *)(r10 - 4) = r1
        r2 = r10
        r2 += -4
        r1 = map[verdicts] ll
        call bpf_map_lookup_elem
        if r0 == 0 goto out
        r1 = 1
        lock *(u64 *)(r0 + 0) += r1
    out:
        r0 = 3
        exit",
    )
    .unwrap();
    let mut maps = sim::bpf::Maps::new();
    prog.bind_maps(&mut maps).unwrap();
    Netns::run(|_| {
        let l = LoadedXdp::load(&prog)?;
        let frame = common::frame(common::MAC_A, common::MAC_B, common::ETH_P_EXP, 60);
        for _ in 0..3 {
            let r = l.test_run(&frame)?;
            assert_eq!(r.retval, 3);
            assert_eq!(r.data, frame);
        }
        let short = l.test_run(&frame[..13]).unwrap_err();
        assert!(short.is_errno(skbsim_kernel::Errno::EINVAL), "{short}");
        let m = l.sim_maps()?;
        assert_eq!(m.by_name("verdicts").and_then(|v| v.read_u64(3)), Some(3));
        assert_eq!(m.by_name("verdicts").and_then(|v| v.read_u64(0)), Some(0));
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn netlink_and_link_attach_in_both_modes() {
    skbsim_kernel::require_privileges();
    let prog = assemble("pass", "r0 = 2\nexit").unwrap();
    Netns::run(|ns| {
        let t = ns.tap_up(&TapConfig::tap("skbbpf0"))?;
        let l = LoadedXdp::load(&prog)?;
        let mode_of = |ns: &mut Netns| -> Result<XdpAttached, skbsim_kernel::KernelError> {
            Ok(ns
                .rtnl()
                .link(t.ifindex())?
                .xdp
                .map_or(XdpAttached::None, |x| x.0))
        };
        attach_xdp(ns.rtnl(), t.ifindex(), &l, XdpMode::Native)?;
        assert_eq!(mode_of(ns)?, XdpAttached::Driver);
        detach_xdp(ns.rtnl(), t.ifindex(), XdpMode::Native)?;
        assert_eq!(mode_of(ns)?, XdpAttached::None);
        attach_xdp(ns.rtnl(), t.ifindex(), &l, XdpMode::Generic)?;
        assert_eq!(mode_of(ns)?, XdpAttached::Generic);
        detach_xdp(ns.rtnl(), t.ifindex(), XdpMode::Generic)?;
        {
            let link = XdpLink::create(&l, t.ifindex(), XdpMode::Native)?;
            assert_eq!(link.ifindex(), t.ifindex());
            assert_eq!(mode_of(ns)?, XdpAttached::Driver);
        }
        // Closing the link fd detaches the program.
        assert_eq!(mode_of(ns)?, XdpAttached::None);
        let link = XdpLink::create(&l, t.ifindex(), XdpMode::Generic)?;
        assert_eq!(mode_of(ns)?, XdpAttached::Generic);
        drop(link);
        assert_eq!(mode_of(ns)?, XdpAttached::None);
        Ok(())
    })
    .unwrap();
}
