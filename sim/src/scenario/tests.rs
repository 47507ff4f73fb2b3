//! Tests of scenario.rs.

use super::*;
use crate::skb::IpSummed;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(Path::new("scenarios/tun-read/x.toml"), text)
}

const MINIMAL: &str = "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"tun-read\"\n";

#[test]
fn minimal_scenario_gets_kernel_defaults() {
    let s = parse(MINIMAL).unwrap();
    assert_eq!(s.name, "tun-read/x");
    assert_eq!(s.input, Path::new("scenarios/tun-read/../pcaps/a.pcap"));
    assert_eq!(s.profile.name, "linux-6.18");
    assert_eq!(s.device, TunConfig::default());
    assert!(s.skb.vlan_hwaccel);
    assert_eq!(s.reader.buffer(7), 65536);
}

#[test]
fn unknown_key_names_file_and_key() {
    let e = parse(&format!("{MINIMAL}[device]\nno_pii = true\n")).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("scenarios/tun-read/x.toml: "), "{msg}");
    assert!(msg.contains("no_pii"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn bad_values_are_explained() {
    let cases = [
        ("[device]\nvnet_hdr = true\nvnet_hdr_sz = 8\n", "below 10"),
        ("profile = \"linux-2.4\"\n", "unknown kernel profile"),
        ("[reader]\nbuffers = [100, 0]\n", "must be > 0"),
        (
            "[skb]\ngso = \"tcp\"\ngso_size = 1000\n",
            "CHECKSUM_PARTIAL",
        ),
        ("[skb]\nheadlen = \"some\"\n", "headlen"),
        ("[device]\noffloads = [\"tso4\"]\n", "csum"),
        ("[device]\noffloads = [\"csum\", \"uso4\"]\n", "go together"),
        ("pipeline2 = 1\n", "pipeline2"),
    ];
    for (extra, want) in cases {
        // Keys before any table header belong to the root table.
        let text = if extra.starts_with('[') {
            format!("{MINIMAL}{extra}")
        } else {
            format!("{extra}{MINIMAL}")
        };
        let msg = parse(&text).unwrap_err().to_string();
        assert!(msg.contains(want), "{extra:?}: {msg}");
    }
}

#[test]
fn per_frame_overrides_inherit_the_scenario_recipe() {
    let s = parse(&format!(
        "{MINIMAL}[skb]\nvlan = \"inband\"\n[[skb.frame]]\nindex = 2\nchecksum = \"unnecessary\"\n"
    ))
    .unwrap();
    assert!(!s.recipe_for(0).vlan_hwaccel);
    assert!(!s.recipe_for(2).vlan_hwaccel);
    assert_eq!(s.recipe_for(2).checksum, IpSummed::Unnecessary);
}
