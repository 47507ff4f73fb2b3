//! Every tun ioctl row of docs/tun-ioctl.md against this host's kernel: the sequence of
//! `skbsim_kernel::tun_ioctl_table` runs on real `/dev/net/tun` files in a private
//! namespace and is replayed on the model (`sim::tun::ioctl::TunNet`, profile
//! linux-6.18); every mismatch is printed, then the test fails if there was one
//! (docs/tun-ioctl.md#conformance). The lab runs the same sequence in its 6.1 and 6.12
//! guests (`skbsim lab ioctl`).

use sim::profile::LINUX_6_18;
use skbsim_kernel::tun_ioctl_table::{record, replay};
use skbsim_kernel::Netns;

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn every_tun_ioctl_answers_as_the_model_says() {
    skbsim_kernel::require_privileges();
    let mut steps = Vec::new();
    Netns::run(|ns| record(ns, &mut steps)).unwrap();
    let rows = replay(&LINUX_6_18, &steps).unwrap();
    let bad: Vec<_> = rows.iter().filter(|r| !r.agrees()).collect();
    for r in &bad {
        eprintln!("MISMATCH {}", r.describe());
    }
    eprintln!("{} rows, {} mismatches", rows.len(), bad.len());
    assert!(rows.len() > 1000, "the whole sequence ran");
    assert!(bad.is_empty(), "{} mismatches", bad.len());
}
