//! The JSON Lines writer of a [`Record`]: written straight into a reused byte buffer,
//! with no `serde_json::Value` tree built per record (a `Map` per record and per part,
//! a `String` per key and per value was most of a `--trace x.jsonl` replay's time).
//!
//! It writes exactly what serializing [`Record::to_json`]'s old tree wrote: the same
//! keys in the same (sorted: serde_json's `Map` without `preserve_order` is a
//! `BTreeMap`) order, a key given twice written once with its last value, strings
//! escaped by serde_json itself. `json_tests` checks it against that tree.

use super::record::{At, Field, Record, Seen, Value};

/// One key of a JSON object and what it holds.
enum Item<'r, 'a> {
    Int(u64),
    Str(&'r str),
    Val(&'r Value<'a>),
    /// The model-only fields, as an object.
    Model(Vec<&'r Field<'a>>),
}

impl<'a> Record<'a> {
    /// The record as one JSON line (without its newline) appended to `out`: `event` (the
    /// kind), `index`, `frame`, `ts_ns`, `result`, then every field by name; model-only
    /// fields under `model`. The one JSON writer: [`Record::to_json`] reads it back.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let mut items: Vec<(&str, Item<'_, 'a>)> = Vec::with_capacity(self.fields.len() + 6);
        items.push(("event", Item::Str(self.kind)));
        if let Some(i) = self.index {
            items.push(("index", Item::Int(i)));
        }
        match self.at {
            Some(At::Frame(f, t)) => {
                items.push(("frame", Item::Int(f)));
                items.push(("ts_ns", Item::Int(t)));
            }
            Some(At::After(n)) => items.push(("after", Item::Int(n))),
            Some(At::Ts(t)) => items.push(("ts_ns", Item::Int(t))),
            Some(At::Poll(p, t)) => {
                items.push(("poll", Item::Int(p)));
                items.push(("ts_ns", Item::Int(t)));
            }
            None => {}
        }
        if let Some(r) = &self.result {
            items.push(("result", Item::Val(r)));
        }
        let mut model = Vec::new();
        for f in &self.fields {
            if f.seen == Seen::ModelOnly {
                model.push(f);
            } else {
                items.push((&f.name, Item::Val(&f.value)));
            }
        }
        if !model.is_empty() {
            items.push(("model", Item::Model(model)));
        }
        object(out, items, |out, item| match item {
            Item::Int(n) => int(out, n),
            Item::Str(s) => string(out, s),
            Item::Val(v) => v.write_json(out),
            Item::Model(fields) => object(
                out,
                fields.iter().map(|f| (&*f.name, &f.value)).collect(),
                |out, v| v.write_json(out),
            ),
        });
    }
}

impl Value<'_> {
    /// The value as JSON appended to `out`: numbers for `Int`, `Hex` and `Ts`, an object
    /// of the named parts, bytes as lowercase hex.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Value::Int(n) | Value::Hex { n, .. } | Value::Ts(n) => int(out, *n),
            Value::Word(w) => string(out, w),
            Value::Text(s) => string(out, s),
            Value::Parts(parts) => object(
                out,
                parts
                    .iter()
                    .filter(|p| !p.name.is_empty())
                    .map(|p| (p.name, &p.value))
                    .collect(),
                |out, v| v.write_json(out),
            ),
            Value::Bytes(b) => {
                out.push(b'"');
                super::render::hex_into(out, b);
                out.push(b'"');
            }
        }
    }
}

/// `{"k":v,...}` as a `BTreeMap` serializes what was inserted in this order: keys in byte
/// order, a repeated key once with its last value.
fn object<T>(out: &mut Vec<u8>, mut items: Vec<(&str, T)>, mut value: impl FnMut(&mut Vec<u8>, T)) {
    // Stable: equal keys stay in insertion order, and the last of them is kept.
    items.sort_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    let mut first = true;
    let mut it = items.into_iter().peekable();
    while let Some((k, v)) = it.next() {
        if it.peek().is_some_and(|(next, _)| *next == k) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        string(out, k);
        out.push(b':');
        value(out, v);
    }
    out.push(b'}');
}

fn int(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// The bytes a JSON string escapes (serde_json's set: the control characters, `"`, `\\`),
/// looked up once per byte.
const ESCAPED: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// A JSON string, escaped as serde_json escapes it (by serde_json).
fn string(out: &mut Vec<u8>, s: &str) {
    if !s.bytes().any(|b| ESCAPED[usize::from(b)]) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
