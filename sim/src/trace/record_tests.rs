use super::*;
use crate::trace::diff::parse_block;
use crate::trace::record_diff::first_record_divergence;
use serde_json::json;

fn header(backend: &'static str) -> Record<'static> {
    let mut h = Record::new(HEADER);
    h.push(Field::both("scenario", Value::Word("tun-read/x")));
    h.push(Field::label("backend", Value::Word(backend)));
    h
}

/// A read as the simulator records it; `real` leaves out what only the model knows.
fn read(real: bool, pi_flags: u64) -> Record<'static> {
    let mut r = Record::new("read");
    r.index = Some(3);
    r.at = Some(At::Frame(2, 1_000_002_000));
    r.result = Some(Value::Parts(vec![
        Part::named("buffer", Value::Int(100)),
        Part::word("->"),
        Part::bare("result", Value::Int(64)),
    ]));
    if !real {
        r.push(
            Field::model(
                "skb",
                Value::Parts(vec![
                    Part::named("len", Value::Int(60)),
                    Part::bare("ip_summed", Value::Word("CHECKSUM_NONE")),
                ]),
            )
            .meta(),
        );
    }
    r.push(
        Field::both(
            "pi",
            Value::Parts(vec![
                Part::named("flags", Value::hex(pi_flags, 4)),
                Part::named("proto", Value::hex(0x0800, 4)),
            ]),
        )
        .meta(),
    );
    r.push(Field::both("bytes", Value::Bytes((0u8..18).collect())));
    r
}

const READ_TEXT: &str = "\nread 3 (frame 2, ts 1.000002000): buffer 100 -> 64
  skb: len 60 CHECKSUM_NONE
  pi: flags 0x0000 proto 0x0800
  bytes:
    0000: 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f
    0010: 10 11
";

#[test]
fn the_text_is_the_trace_format() {
    let mut out = String::new();
    header("sim").write_text(&mut out);
    read(false, 0).write_text(&mut out);
    assert_eq!(
        out,
        format!("scenario: tun-read/x\nbackend: sim\n{READ_TEXT}")
    );
}

#[test]
fn json_puts_model_only_fields_under_model() {
    let j = read(false, 0).to_json();
    assert_eq!(
        j,
        json!({
            "event": "read", "index": 3, "frame": 2, "ts_ns": 1_000_002_000u64,
            "result": {"buffer": 100, "result": 64},
            "pi": {"flags": 0, "proto": 0x0800},
            "bytes": "000102030405060708090a0b0c0d0e0f1011",
            "model": {"skb": {"len": 60, "ip_summed": "CHECKSUM_NONE"}},
        })
    );
    assert_eq!(read(true, 0).to_json().get("model"), None);
}

#[test]
fn the_comment_holds_the_metadata_fields() {
    assert_eq!(
        read(false, 1).comment(),
        "skb: len 60 CHECKSUM_NONE; pi: flags 0x0001 proto 0x0800"
    );
    assert_eq!(read(true, 0).comment(), "pi: flags 0x0000 proto 0x0800");
}

#[test]
fn flat_fields_are_what_the_text_comparison_parses() {
    for rec in [header("sim"), read(false, 0), read(true, 1)] {
        let mut text = String::new();
        rec.write_block(&mut text);
        let parsed = parse_block(&text, rec.kind == HEADER).expect("a block");
        let flat = rec.flat();
        assert_eq!(flat.event, parsed.event);
        let ours: Vec<(&str, &str)> = flat
            .fields
            .iter()
            .map(|(k, v, _)| (k.as_str(), v.as_str()))
            .collect();
        let theirs: Vec<(&str, &str)> = parsed
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        assert_eq!(ours, theirs);
    }
}

#[test]
fn arms_are_compared_on_the_fields_both_see() {
    let sim = [header("sim"), read(false, 0)];
    // The real arm: another backend, no skb. Nothing both see differs.
    let real = [header("tap"), read(true, 0)];
    assert_eq!(first_record_divergence(&sim, &real), None);
    // A field both see differs: named, with both values.
    let real = [header("tap"), read(true, 1)];
    let d = first_record_divergence(&sim, &real).expect("pi differs");
    assert_eq!(
        (
            d.event.as_str(),
            d.field.as_str(),
            d.left.as_str(),
            d.right.as_str()
        ),
        (
            "read 3 (frame 2, ts 1.000002000)",
            "pi",
            "flags 0x0000 proto 0x0800",
            "flags 0x0001 proto 0x0800"
        )
    );
    // A byte of the dump differs.
    let mut r = read(true, 0);
    r.fields[1].value = Value::Bytes((1u8..19).collect());
    let d = first_record_divergence(&sim, &[header("tap"), r]).expect("bytes differ");
    assert_eq!(d.field, "bytes+0000");
    // An event on one side only.
    let d = first_record_divergence(&sim, &sim[..1]).expect("one event more");
    assert_eq!(
        (d.left.as_str(), d.right.as_str()),
        ("read 3 (frame 2, ts 1.000002000)", "(no more events)")
    );
}

#[test]
fn a_stack_frame_s_comment_is_words_in_the_comment_s_order() {
    // The capture comment of a frame the stack received, as the goldens' pcapng files
    // carry it: "protocol 0x8100 vlan ..." though the trace shows the tag first.
    let mut r = Record::new("stack");
    r.comment_words = true;
    r.push(Field::both("vlan", Value::Word("0x8100 vid 5")).meta_at(2));
    r.push(Field::both("protocol", Value::hex(0x0800, 4)).meta_at(1));
    r.push(Field::both("summary", Value::Word("IPv4")));
    assert_eq!(r.comment(), "protocol 0x0800 vlan 0x8100 vid 5");
}
