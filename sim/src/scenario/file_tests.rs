//! Tests of file.rs: a table's own checks run as serde reads it, so their errors carry
//! the key path and the table's position like serde's own.

use std::path::Path;

use super::join_key;
use crate::scenario::Scenario;

/// The message for `tables` after a tun-read head (3 lines: the tables start on line 4).
fn error(tables: &str) -> String {
    let text = format!(
        "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"tun-read\"\n{tables}"
    );
    Scenario::parse(Path::new("s/tun-read/x.toml"), &text)
        .expect_err(tables)
        .message
}

#[test]
fn a_table_check_names_the_key_and_the_tables_line() {
    assert_eq!(
        error("[device]\nmtu = 70000\n"),
        "device.mtu: 70000 is outside 68..=65521 (the min_mtu..=max_mtu of a tap; \
         dev_set_mtu refuses others) (line 4, column 1)"
    );
    assert_eq!(
        error("[skb]\n[[skb.frame]]\nindex = 1\nheadlen = \"x\"\n"),
        "skb.frame[0].headlen: \"x\" is not \"all\", \"headers\" or a byte count (line 4, column 1)"
    );
    // A value serde reads through a check is placed at the value.
    assert_eq!(
        error("[link]\nsrc_mac = \"zz\"\n"),
        "link.src_mac: \"zz\" is not a MAC address (aa:bb:cc:dd:ee:ff) (line 5, column 11)"
    );
}

#[test]
fn skb_and_its_frames_share_keys_but_only_a_frame_has_an_index() {
    assert_eq!(
        error("[skb]\nindex = 3\n"),
        "skb.index: only a [[skb.frame]] has an index (line 4, column 1)"
    );
    assert!(error("[skb]\n[[skb.frame]]\nvlan = \"inband\"\n")
        .starts_with("skb.frame[0]: missing field `index`"));
    assert!(
        error("[skb]\n[[skb.frame]]\nindex = 1\n[[skb.frame.frame]]\nindex = 2\n")
            .starts_with("skb.frame[0].frame: a [[skb.frame]] has no frames of its own")
    );
}

#[test]
fn only_a_checks_key_is_joined_to_the_path() {
    assert_eq!(join_key("reader", "buffers[1]: 0"), "reader.buffers[1]: 0");
    assert_eq!(
        join_key("skb", "frame[0].gso_size: x"),
        "skb.frame[0].gso_size: x"
    );
    // serde's own messages are not keys.
    assert_eq!(
        join_key("device.mtu", "invalid type: string \"big\", expected usize"),
        "device.mtu: invalid type: string \"big\", expected usize"
    );
    assert_eq!(
        join_key("xdp", "missing field `mode`"),
        "xdp: missing field `mode`"
    );
}
