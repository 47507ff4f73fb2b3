//! The skb metadata of a capture's packet comments, compared field by field with the
//! trace diff's engine ([`super::diff::compare_blocks`]): `skbsim diff` of two pcapng
//! files names the first frame and field whose metadata differ, as it does for traces.
//!
//! A comment is read back into the record structure it was written from
//! ([`Flat::from_comment`], the reader of what [`super::record::Record::comment`]
//! writes): `skb`, `pi` and `vnet` are fields there as they are of a trace's read.

use super::diff::{compare_blocks, Divergence};
use super::record_diff::{seen_by_both, Flat};

/// The first field where two packet comments differ, as event `event` of a trace
/// (`frame 3`). `None` for no comment: a field on one side only is `field: value`
/// against `(absent)`. `ignore` leaves fields out as it does for traces (`--ignore skb`).
pub fn comment_divergence(
    event: &str,
    left: Option<&str>,
    right: Option<&str>,
    ignore: &[&str],
) -> Option<Divergence> {
    let read = |c: Option<&str>| Flat::from_comment(event, c.unwrap_or(""));
    let (a, b) = (read(left), read(right));
    compare_blocks(&seen_by_both(&a), &seen_by_both(&b), ignore)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ON: &str = "skb: len 154 protocol 0x0800 CHECKSUM_NONE; pi: flags 0x0000 proto 0x0800";

    #[test]
    fn a_record_s_comment_reads_back_as_its_packet_fields() {
        use crate::trace::record::{Field, Part, Record, Value};
        let mut r = Record::new("read");
        r.push(Field::model("skb", Value::text("len 154 protocol 0x0800")).meta());
        let pi = Value::Parts(vec![
            Part::named("flags", Value::hex(0, 4)),
            Part::named("proto", Value::hex(0x0800, 4)),
        ]);
        r.push(Field::both("pi", pi).meta_at(2));
        r.push(Field::both("counters", Value::text("tx_packets 1")));
        let f = Flat::from_comment("frame 0", &r.comment());
        let fields: Vec<(&str, &str)> = f
            .fields
            .iter()
            .map(|(k, v, _)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                ("skb", "len 154 protocol 0x0800"),
                ("pi", "flags 0x0000 proto 0x0800")
            ]
        );
    }

    #[test]
    fn names_the_first_differing_field_and_both_values() {
        let off = "skb: len 158 protocol 0x8100 CHECKSUM_NONE; pi: flags 0x0000 proto 0x8100";
        let d = comment_divergence("frame 0", Some(ON), Some(off), &[]).expect("differs");
        assert_eq!(
            (
                d.event.as_str(),
                d.field.as_str(),
                d.left.as_str(),
                d.right.as_str()
            ),
            (
                "frame 0",
                "skb",
                "len 154 protocol 0x0800 CHECKSUM_NONE",
                "len 158 protocol 0x8100 CHECKSUM_NONE"
            )
        );
        let d = comment_divergence("frame 0", Some(ON), Some(off), &["skb"]).expect("pi");
        assert_eq!(
            (d.field.as_str(), d.left.as_str(), d.right.as_str()),
            (
                "pi",
                "flags 0x0000 proto 0x0800",
                "flags 0x0000 proto 0x8100"
            )
        );
        assert_eq!(
            comment_divergence("frame 0", Some(ON), Some(off), &["skb", "pi"]),
            None
        );
        assert_eq!(comment_divergence("frame 0", Some(ON), Some(ON), &[]), None);
    }

    #[test]
    fn parts_without_a_colon_are_keyed_by_their_first_word() {
        let a = "skb: len 100 protocol 0x0800 gso none CHECKSUM_NONE; frames 2";
        let d = comment_divergence(
            "frame 1",
            Some(a),
            Some(&a.replace("frames 2", "frames 3")),
            &[],
        )
        .expect("differs");
        assert_eq!((d.field.as_str(), d.left.as_str()), ("frames", "2"));
        let d = comment_divergence(
            "frame 0",
            Some("protocol 0x0800"),
            Some("protocol 0x8100 vlan 802.1Q vid 5"),
            &[],
        )
        .expect("differs");
        assert_eq!(
            (d.field.as_str(), d.right.as_str()),
            ("protocol", "0x8100 vlan 802.1Q vid 5")
        );
    }

    #[test]
    fn a_comment_on_one_side_only_is_absent_on_the_other() {
        let d = comment_divergence("frame 2", None, Some(ON), &[]).expect("differs");
        assert_eq!(
            (d.field.as_str(), d.left.as_str(), d.right.as_str()),
            (
                "skb",
                "(absent)",
                "skb: len 154 protocol 0x0800 CHECKSUM_NONE"
            )
        );
        assert_eq!(comment_divergence("frame 2", None, None, &[]), None);
    }
}
