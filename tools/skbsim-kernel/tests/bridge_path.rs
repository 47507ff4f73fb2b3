//! What the tun-read arm's bridge path relies on (6.18): its sysctls stay in the private
//! namespace, the AF_PACKET observer on the tap knows right after `write()` whether the
//! bridge delivered a frame, and `IFLA_BR_FDB_FLUSH` forgets learned addresses.

mod common;

use std::time::Duration;

use common::*;
use sim::bridge::{Attach, TAP_MAC, UPLINK_MAC};
use skbsim_kernel::arm::tun_read_path::{bridge, Observer};
use skbsim_kernel::{Cause, KernelError, Netns, TapConfig};

const NF_CALL: &str = "/proc/sys/net/bridge/bridge-nf-call-iptables";

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn sysctls_are_the_namespaces_own() {
    skbsim_kernel::require_privileges();
    // This test is about br_netfilter's sysctl: a kernel without it cannot run it, and
    // that is a failure to report, not a pass (the host's 6.18 has it built in).
    assert!(
        std::path::Path::new(NF_CALL).exists(),
        "no br_netfilter here ({NF_CALL} is absent): this test cannot run"
    );
    let host = std::fs::read_to_string(NF_CALL).ok();
    Netns::run(|ns| {
        let fresh = std::fs::read_to_string(NF_CALL).unwrap_or_default();
        ns.sysctl("bridge/bridge-nf-call-iptables", "0")?;
        let set = std::fs::read_to_string(NF_CALL).unwrap_or_default();
        assert_eq!(
            (fresh.trim(), set.trim()),
            ("1", "0"),
            "a new namespace starts at 1"
        );
        Ok(())
    })
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(NF_CALL).ok(),
        host,
        "host value unchanged"
    );
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn the_observer_sees_delivery_at_once_and_a_flush_forgets_learned_addresses() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let w = ns.tap_up(&TapConfig::tap("skbwplain"))?;
        ns.rtnl().set_address(w.ifindex(), UPLINK_MAC)?;
        let dut = TapConfig::tap("skbdut").nonblocking(true).open()?;
        ns.rtnl().set_address(dut.ifindex(), TAP_MAC)?;
        ns.rtnl().set_up(dut.ifindex(), true)?;
        let br = bridge(ns, Attach::Bridge, "skbbr", &[w.ifindex(), dut.ifindex()])
            .map_err(|e| KernelError::new("bridge path", Cause::Protocol(e.to_string())))?;
        let mut seen = Observer::new(dut.ifindex(), Some(br))?;
        let mut buf = [0u8; 2048];
        // A > B floods (B unknown) and teaches A.
        w.write(&frame(MAC_B, MAC_A, ETH_P_EXP, 60)).unwrap();
        assert_eq!(seen.arrived(Duration::ZERO)?, 1);
        assert_eq!(dut.read(&mut buf), Ok(60));
        // B > A: A is on the writer's port; nothing reaches the tap, and it is known now.
        w.write(&frame(MAC_A, MAC_B, ETH_P_EXP, 60)).unwrap();
        assert_eq!(seen.arrived(Duration::ZERO)?, 0);
        assert!(dut.read(&mut buf).is_err(), "nothing queued");
        // A frame to the tap's own address is the bridge's (local fdb entry).
        w.write(&frame(TAP_MAC, MAC_A, ETH_P_EXP, 60)).unwrap();
        assert_eq!(seen.arrived(Duration::ZERO)?, 0);
        // After the flush A is unknown again: B > A floods.
        ns.rtnl().bridge_fdb_flush(br)?;
        w.write(&frame(MAC_A, MAC_B, ETH_P_EXP, 60)).unwrap();
        assert_eq!(seen.arrived(Duration::ZERO)?, 1);
        assert_eq!(dut.read(&mut buf), Ok(60));
        Ok(())
    })
    .unwrap();
}
