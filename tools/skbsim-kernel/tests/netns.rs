//! Namespace isolation, the safety belt, and cleanup.

mod common;

use common::*;
use skbsim_kernel::{Cause, Netns, Rtnl, TapConfig};

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn runs_in_a_fresh_namespace_with_lo_up_and_ipv6_off() {
    skbsim_kernel::require_privileges();
    let host_ipv6 = std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/disable_ipv6").ok();
    let host_ino = skbsim_kernel::current_netns_inode().unwrap();
    let (ino, links, v6, ipnames) = Netns::run(|ns| {
        let links = ns.rtnl().links()?;
        let v6 = std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/disable_ipv6").ok();
        let ipnames = ip_link_names();
        Ok((ns.inode(), links, v6, ipnames))
    })
    .unwrap();
    assert_ne!(ino, host_ino);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].name, "lo");
    assert!(links[0].is_up());
    assert_eq!(
        ipnames.into_iter().collect::<Vec<_>>(),
        vec!["lo".to_string()]
    );
    if host_ipv6.is_some() {
        assert_eq!(v6.as_deref().map(str::trim), Some("1"));
    }
    // The host's sysctl is untouched.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/disable_ipv6").ok(),
        host_ipv6
    );
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn constructors_refuse_the_main_namespace() {
    skbsim_kernel::require_privileges();
    // The test thread is in the process's main (host) namespace.
    let e = Rtnl::new().unwrap_err();
    assert!(matches!(e.cause, Cause::Refused(_)), "{e}");
    let e = TapConfig::tap("skbtrefuse").open().unwrap_err();
    assert!(matches!(e.cause, Cause::Refused(_)), "{e}");
    let e = skbsim_kernel::PacketSocket::bind(1).unwrap_err();
    assert!(matches!(e.cause, Cause::Refused(_)), "{e}");
    let e = skbsim_kernel::Ethtool::new().unwrap_err();
    assert!(matches!(e.cause, Cause::Refused(_)), "{e}");
    eprintln!("refusal reads: {e}");
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn namespaces_are_distinct_per_run() {
    skbsim_kernel::require_privileges();
    let a = Netns::run(|ns| Ok(ns.inode())).unwrap();
    let b = Netns::run(|ns| Ok(ns.inode())).unwrap();
    assert_ne!(a, b);
}

fn make_devices(ns: &mut Netns) -> Result<Vec<skbsim_kernel::Tap>, skbsim_kernel::KernelError> {
    let a = ns.tap_up(&TapConfig::tap("skbtc0"))?;
    let b = ns.tap_up(&TapConfig::tap("skbtc1"))?;
    ns.bridge("skbtcbr", &[a.ifindex(), b.ifindex()])?;
    ns.rtnl().create_veth("skbtcv0", "skbtcv1")?;
    Ok(vec![a, b])
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn devices_never_reach_the_host_and_vanish_after_a_panic() {
    skbsim_kernel::require_privileges();
    let before = ip_link_names();
    let inside = Netns::run(|ns| {
        let _taps = make_devices(ns)?;
        Ok(ip_link_names())
    })
    .unwrap();
    for n in ["skbtc0", "skbtc1", "skbtcbr", "skbtcv0", "skbtcv1"] {
        assert!(inside.contains(n), "{n} missing inside: {inside:?}");
    }
    let err = Netns::run(|ns| -> Result<(), _> {
        let _taps = make_devices(ns)?;
        panic!("deliberate panic with devices alive");
    })
    .unwrap_err();
    assert!(
        matches!(err.cause, Cause::Panicked(ref m) if m.contains("deliberate")),
        "{err}"
    );
    eprintln!("panic became: {err}");
    let after = ip_link_names();
    assert_eq!(before, after);
    assert!(after.iter().all(|n| !n.starts_with("skbt")), "{after:?}");
}
