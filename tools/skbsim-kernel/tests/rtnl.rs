//! NETLINK_ROUTE link operations.

mod common;

use skbsim_kernel::{Cause, Errno, Netns, TapConfig};

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn links_bridge_veth_mtu_address_delete() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let tap = ns.tap(&TapConfig::tap("skbt0"))?;
        let br = ns.bridge("skbtbr", &[tap.ifindex()])?;
        let rt = ns.rtnl();
        let (v0, v1) = rt.create_veth("skbtv0", "skbtv1")?;
        rt.set_mtu(v0, 9000)?;
        rt.set_address(v0, [0x02, 0, 0, 0, 0, 0x42])?;
        rt.set_master(v1, Some(br))?;
        let l0 = rt.link(v0)?;
        let l1 = rt.link_by_name("skbtv1")?;
        let lt = rt.link(tap.ifindex())?;
        let lb = rt.link(br)?;
        eprintln!("{l0:?}\n{lt:?}");
        assert_eq!(l0.kind.as_deref(), Some("veth"));
        assert_eq!(l0.mtu, Some(9000));
        assert_eq!(l0.address.as_deref(), Some(&[0x02, 0, 0, 0, 0, 0x42][..]));
        assert_eq!(l1.master, Some(br));
        assert_eq!(lt.master, Some(br));
        assert_eq!(lt.kind.as_deref(), Some("tun"));
        assert_eq!(lb.kind.as_deref(), Some("bridge"));
        assert!(lb.is_up());
        assert!(!lt.is_up());
        rt.set_master(v1, None)?;
        assert_eq!(rt.link(v1)?.master, None);

        // Errors carry the op, the errno and the kernel's extended-ack text.
        let e = rt.create_bridge("skbtbr").unwrap_err();
        eprintln!("duplicate bridge: {e}");
        assert!(e.is_errno(Errno::EEXIST), "{e}");
        let e = rt.create_link("skbtx", "no-such-kind", &[]).unwrap_err();
        eprintln!("unknown kind: {e}");
        assert!(e.errno().is_some(), "{e}");
        let e = rt.link_by_name("skbtnone").unwrap_err();
        assert!(e.is_errno(Errno::ENODEV), "{e}");
        let e = rt.set_mtu(v0, 10).unwrap_err();
        eprintln!("mtu 10: {e}");
        assert!(
            matches!(
                e.cause,
                Cause::Errno {
                    errno: Errno::EINVAL,
                    ..
                }
            ),
            "{e}"
        );

        rt.delete_link(v0)?;
        assert!(rt.link(v1).is_err());
        assert_eq!(rt.links()?.len(), 3, "lo, skbt0, skbtbr");
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn gro_max_sizes_set_and_read_back_on_a_tap() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let tap = ns.tap(&TapConfig::tap("skbtg0"))?;
        let rt = ns.rtnl();
        let l = rt.link(tap.ifindex())?;
        // GRO_LEGACY_MAX_SIZE by default (both attributes on this 6.18 kernel).
        assert_eq!(
            (l.gro_max_size, l.gro_ipv4_max_size),
            (Some(65536), Some(65536))
        );
        rt.set_gro_max_sizes(tap.ifindex(), Some(185_000), Some(100_000))?;
        let l = rt.link(tap.ifindex())?;
        assert_eq!(
            (l.gro_max_size, l.gro_ipv4_max_size),
            (Some(185_000), Some(100_000))
        );
        // netif_set_gro_max_size: a size of at most 65536 lowers the IPv4 one too.
        rt.set_gro_max_sizes(tap.ifindex(), Some(30_000), None)?;
        let l = rt.link(tap.ifindex())?;
        assert_eq!(
            (l.gro_max_size, l.gro_ipv4_max_size),
            (Some(30_000), Some(30_000))
        );
        // do_setlink refuses more than GRO_MAX_SIZE (8 * 65535).
        let e = rt
            .set_gro_max_sizes(tap.ifindex(), Some(524_281), None)
            .unwrap_err();
        assert!(e.is_errno(Errno::EINVAL), "{e}");
        Ok(())
    })
    .unwrap();
}
