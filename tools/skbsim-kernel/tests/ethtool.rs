//! SIOCETHTOOL features by name.

mod common;

use skbsim_kernel::ethtool::ETHTOOL_F_UNSUPPORTED;
use skbsim_kernel::{get_feature, set_feature, Cause, Errno, Ethtool, Netns, TapConfig};

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn tap_features_list_and_toggle() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let _tap = ns.tap_up(&TapConfig::tap("skbt0"))?;
        let mut et = Ethtool::new()?;
        let feats = et.features("skbt0")?;
        let on: Vec<_> = feats.iter().filter(|f| f.active).map(|f| f.name.as_str()).collect();
        let changeable: Vec<_> = feats.iter().filter(|f| f.available).map(|f| f.name.as_str()).collect();
        eprintln!("{} feature strings; tap active: {on:?}", feats.len());
        eprintln!("tap changeable: {changeable:?}");
        for name in ["tx-vlan-hw-insert", "tx-vlan-stag-hw-insert", "rx-gro"] {
            assert!(get_feature("skbt0", name)?, "{name} on by default");
        }
        assert!(!et.get_feature("skbt0", "rx-gro-hw")?);

        for name in ["tx-vlan-hw-insert", "tx-vlan-stag-hw-insert", "gro"] {
            set_feature("skbt0", name, false)?;
            assert!(!get_feature("skbt0", name)?);
            set_feature("skbt0", name, true)?;
            assert!(get_feature("skbt0", name)?);
        }

        // Not in the tap's hw_features: accepted with ETHTOOL_F_UNSUPPORTED, nothing changes.
        let e = et.set_feature("skbt0", "rx-vlan-hw-parse", true).unwrap_err();
        eprintln!("rx-vlan-hw-parse on: {e}");
        assert!(matches!(
            e.cause,
            Cause::FeatureNotApplied { wanted: true, active: false, ethtool_flags } if ethtool_flags & ETHTOOL_F_UNSUPPORTED != 0
        ), "{e}");

        // NETIF_F_NEVER_CHANGE bits are outside NETIF_F_ETHTOOL_BITS: EINVAL.
        let fixed: Vec<_> = feats.iter().filter(|f| f.never_changed).map(|f| f.name.clone()).collect();
        eprintln!("never_changed: {fixed:?}");
        assert!(!fixed.is_empty());
        let e = et.set_feature("skbt0", &fixed[0], true).unwrap_err();
        eprintln!("{} on: {e}", fixed[0]);
        assert!(e.is_errno(Errno::EINVAL), "{e}");

        let e = et.get_feature("skbt0", "no-such-feature").unwrap_err();
        assert!(matches!(e.cause, Cause::NotFound(_)), "{e}");
        let e = et.get_feature("skbtnone", "rx-gro").unwrap_err();
        eprintln!("missing device: {e}");
        assert!(e.is_errno(Errno::ENODEV), "{e}");
        Ok(())
    })
    .unwrap();
}
