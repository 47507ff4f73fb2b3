//! The direct JSON writer against the tree it replaced: serde_json's `Map` (a `BTreeMap`
//! here: sorted keys, the last value of a repeated key) serialized by serde_json.

use std::borrow::Cow;

use serde_json::{json, Map, Value as Json};

use crate::trace::record::{At, Field, Part, Record, Seen, Value};

/// The old `Value::to_json`: the reference.
fn tree_value(v: &Value<'_>) -> Json {
    match v {
        Value::Int(n) | Value::Hex { n, .. } | Value::Ts(n) => json!(n),
        Value::Word(w) => json!(w),
        Value::Text(s) => json!(s),
        Value::Parts(parts) => Json::Object(
            parts
                .iter()
                .filter(|p| !p.name.is_empty())
                .map(|p| (p.name.to_string(), tree_value(&p.value)))
                .collect(),
        ),
        Value::Bytes(b) => json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
    }
}

/// The old `Record::to_json`: the reference.
fn tree(r: &Record<'_>) -> Json {
    let mut o = Map::new();
    o.insert("event".into(), json!(r.kind));
    if let Some(i) = r.index {
        o.insert("index".into(), json!(i));
    }
    match r.at {
        Some(At::Frame(f, t)) => {
            o.insert("frame".into(), json!(f));
            o.insert("ts_ns".into(), json!(t));
        }
        Some(At::After(n)) => {
            o.insert("after".into(), json!(n));
        }
        Some(At::Ts(t)) => {
            o.insert("ts_ns".into(), json!(t));
        }
        Some(At::Poll(p, t)) => {
            o.insert("poll".into(), json!(p));
            o.insert("ts_ns".into(), json!(t));
        }
        None => {}
    }
    if let Some(v) = &r.result {
        o.insert("result".into(), tree_value(v));
    }
    let mut model = Map::new();
    for f in &r.fields {
        let to = if f.seen == Seen::ModelOnly {
            &mut model
        } else {
            &mut o
        };
        to.insert(f.name.to_string(), tree_value(&f.value));
    }
    if !model.is_empty() {
        o.insert("model".into(), Json::Object(model));
    }
    Json::Object(o)
}

fn written(r: &Record<'_>) -> String {
    let mut out = Vec::new();
    r.write_json(&mut out);
    String::from_utf8(out).expect("JSON is UTF-8")
}

fn every_kind(at: Option<At>) -> Record<'static> {
    let mut r = Record::new("read");
    r.index = Some(7);
    r.at = at;
    r.result = Some(Value::Parts(vec![
        Part::named("buffer", Value::Int(100)),
        Part::word("bytes"),
        Part::bare("got", Value::Int(64)),
    ]));
    r.push(Field::both("pi", Value::hex(0x800, 4)));
    r.push(Field::model("skb", Value::Ts(1_000_000_001)));
    r.push(Field::label("backend", Value::Word("sim")));
    r.push(Field::arm(
        "layout",
        Value::text("head 14 \"quoted\" \\ tab\t nl\n \u{1} é"),
    ));
    r.push(Field::both(
        "bytes",
        Value::Bytes(Cow::Owned(vec![0, 0xab, 0xff, 0x10])),
    ));
    r.push(Field::model(
        Cow::Owned("map hits[0]".to_string()),
        Value::Parts(vec![
            Part::named("z", Value::Int(1)),
            Part::named("a", Value::Int(2)),
        ]),
    ));
    r
}

#[test]
fn writes_what_the_tree_serialized_for_every_place() {
    for at in [
        None,
        Some(At::Frame(2, 1_000_002_000)),
        Some(At::After(3)),
        Some(At::Ts(5)),
        Some(At::Poll(4, 9)),
    ] {
        let r = every_kind(at);
        assert_eq!(written(&r), tree(&r).to_string(), "{at:?}");
    }
}

#[test]
fn a_repeated_key_is_written_once_with_its_last_value_as_a_map_keeps_it() {
    let mut r = Record::new("totals");
    r.push(Field::both("event", Value::Word("shadowed")));
    r.push(Field::both("x", Value::Int(1)));
    r.push(Field::both("x", Value::Int(2)));
    r.push(Field::both("model", Value::Int(3)));
    r.push(Field::model("m", Value::Int(4)));
    r.push(Field::model("m", Value::Int(5)));
    let w = written(&r);
    assert_eq!(w, r#"{"event":"shadowed","model":{"m":5},"x":2}"#);
    assert_eq!(w, tree(&r).to_string());
}

#[test]
fn a_record_without_model_fields_has_no_model_key() {
    let mut r = Record::new("header");
    r.push(Field::label("backend", Value::Word("sim")));
    assert_eq!(written(&r), r#"{"backend":"sim","event":"header"}"#);
}
