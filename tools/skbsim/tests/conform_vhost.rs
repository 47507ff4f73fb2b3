//! The vhost-tx simulator against the real kernel: one test per scenario file in
//! scenarios/vhost-tx. `sim_only` ones (old profiles) only check their reason; the others
//! run both arms where the kernel has vhost_net and must agree on what it exposes. This
//! host kernel has no /dev/vhost-net: there `conform_one` says which feature is missing and
//! the test checks that the lab brings it (`skbsim lab conform` runs the same comparison
//! in the guest, in CI).

mod common;
use common::{assert_agrees, stem};

use std::path::PathBuf;

use rstest::rstest;
use sim::scenario::Scenario;
use skbsim_kernel::features::{required, KernelFeature};

#[rstest]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn sim_and_real_agree(#[files("../../scenarios/vhost-tx/*.toml")] path: PathBuf) {
    let name = stem(&path);
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        required(&scenario).contains(&KernelFeature::VhostNet),
        "{name}: a vhost-tx scenario needs vhost_net"
    );
    if let Some(reason) = &scenario.sim_only {
        assert!(
            reason.contains("old kernel profile"),
            "{name}: only old-profile vhost-tx scenarios are sim-only, not: {reason}"
        );
        eprintln!("sim-only {name}: {reason}");
        return;
    }
    skbsim_kernel::require_privileges();
    assert_agrees(&name, &scenario);
}
