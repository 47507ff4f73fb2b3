//! The trace as data: every header, event and totals block is one [`Record`] of named
//! [`Field`]s, each marked with who can see it ([`Seen`]). The text trace
//! ([`Record::write_text`]), the JSON line ([`Record::to_json`]), the capture's packet
//! comment ([`Record::comment`]) and the field-level comparison ([`Record::flat`], see
//! [`super::diff`]) are all derived from it, so a field is defined once and a real arm's
//! comparison leaves out exactly the fields marked model-only, with no list to keep.
//!
//! This module depends on no pipeline type: the pipelines (and the engine's renderers)
//! turn their own events into records.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::text;

/// Who can see a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Seen {
    /// Userspace sees it on the real kernel too (what read() returned, the PI and vnet
    /// headers, the device counters, the bytes): a real arm's trace has it and
    /// `conform` compares it.
    Both,
    /// Only the model knows it (the skb's fields, the ops it counted, why it did what it
    /// did): a real arm's trace leaves it out and `conform` does not compare it.
    ModelOnly,
    /// Describes the run, not the datapath (`backend: sim` / `tap`): differs between
    /// arms by design, never compared between them.
    Label,
    /// A real arm's own view of what the model reports in its own terms (tap-gro's
    /// `layout: head N (vnet hdr_len)` beside the model's head and frags): shown, not
    /// compared.
    ArmOnly,
}

/// One field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// Decimal in text, a number in JSON.
    Int(u64),
    /// `0x` and at least `digits` hex digits in text (`{:#06x}` is 4), a number in JSON.
    Hex { n: u64, digits: u8 },
    /// A timestamp in ns: `1.000000001` in text, the ns in JSON.
    Ts(u64),
    /// A name or a fixed phrase.
    Word(&'static str),
    /// Text made at run time (a summary, a reason).
    Text(Cow<'a, str>),
    /// Named parts, written `name value name value` in text and as an object in JSON.
    Parts(Vec<Part<'a>>),
    /// Bytes: a hexdump under the field in text, lowercase hex in JSON.
    Bytes(Cow<'a, [u8]>),
}

/// One part of a [`Value::Parts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    /// The JSON key; empty for a part only the text shows (a literal word).
    pub name: &'static str,
    /// What the text writes before the value (`None`: the value alone).
    pub label: Option<&'static str>,
    pub value: Value<'a>,
}

impl<'a> Part<'a> {
    /// `name value` in text, `"name": value` in JSON.
    pub fn named(name: &'static str, value: Value<'a>) -> Part<'a> {
        Part {
            name,
            label: Some(name),
            value,
        }
    }

    /// The value alone in text, `"name": value` in JSON.
    pub fn bare(name: &'static str, value: Value<'a>) -> Part<'a> {
        Part {
            name,
            label: None,
            value,
        }
    }

    /// A word only the text shows (`bytes` in `60 of 60 bytes`).
    pub fn word(w: &'static str) -> Part<'a> {
        Part {
            name: "",
            label: None,
            value: Value::Word(w),
        }
    }
}

/// One named field of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<'a> {
    /// Mostly fixed (`pi`); made at run time for a map entry (`map hits[0]`).
    pub name: Cow<'static, str>,
    pub value: Value<'a>,
    pub seen: Seen,
    /// Part of the packet's metadata: its place in the capture's packet comment (1
    /// first; 0: not in the comment).
    pub meta: u8,
    /// What a real arm can see of the value when that is less than the text shows
    /// (tap-gro's `gso`: only the gso types a virtio_net_hdr carries): compared instead
    /// of the value.
    pub compare_as: Option<Value<'a>>,
}

impl<'a> Field<'a> {
    pub fn both(name: impl Into<Cow<'static, str>>, value: Value<'a>) -> Field<'a> {
        Field {
            name: name.into(),
            value,
            compare_as: None,
            seen: Seen::Both,
            meta: 0,
        }
    }

    pub fn model(name: impl Into<Cow<'static, str>>, value: Value<'a>) -> Field<'a> {
        Field {
            name: name.into(),
            value,
            compare_as: None,
            seen: Seen::ModelOnly,
            meta: 0,
        }
    }

    pub fn label(name: impl Into<Cow<'static, str>>, value: Value<'a>) -> Field<'a> {
        Field {
            name: name.into(),
            value,
            compare_as: None,
            seen: Seen::Label,
            meta: 0,
        }
    }

    /// A real arm's own view (see [`Seen::ArmOnly`]).
    pub fn arm(name: impl Into<Cow<'static, str>>, value: Value<'a>) -> Field<'a> {
        Field {
            seen: Seen::ArmOnly,
            ..Field::both(name, value)
        }
    }

    /// The same field, compared as `v` (see [`Field::compare_as`]).
    pub fn compared_as(mut self, v: Value<'a>) -> Field<'a> {
        self.compare_as = Some(v);
        self
    }

    /// The same field, in the packet comment too (after the fields before it).
    pub fn meta(self) -> Field<'a> {
        self.meta_at(1)
    }

    /// The same field, at place `n` of the packet comment.
    pub fn meta_at(mut self, n: u8) -> Field<'a> {
        self.meta = n;
        self
    }
}

/// One block of a trace: the header, an event or the totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    /// `header`, `totals` or the event's name (`read`, `xmit-drop`, `read A`).
    pub kind: &'static str,
    /// The event's number (`read 3`).
    pub index: Option<u64>,
    /// Where the event sits, in parentheses after the number.
    pub at: Option<At>,
    /// What the title line says after `: ` (`buffer 100 -> 64`).
    pub result: Option<Value<'a>>,
    pub fields: Vec<Field<'a>>,
    /// Who can see the event at all: a [`Seen::ModelOnly`] record (vhost's batches) is
    /// left out of a comparison with a real arm whole.
    pub seen: Seen,
    /// Consecutive records of this kind are one observation of a real arm: compared as
    /// one, the numbers of their results added (the model's used-ring update per flush
    /// against the guest's one view of the used index per kick).
    pub sums: bool,
    /// The packet comment as words (`protocol 0x0800 vlan ...`, a stack frame's) rather
    /// than `name: value` parts joined by `; `.
    pub comment_words: bool,
}

/// Where an event sits, as its title shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// The input frame and its timestamp in ns: `(frame 2, ts 1.000002000)`.
    Frame(u64, u64),
    /// After write N: `(after 3)`.
    After(u64),
    /// A timestamp in ns: `(ts 1.000002000)`.
    Ts(u64),
    /// The NAPI poll that delivered it and its time, which only the model knows:
    /// `(poll 2, ts 1.000002000)`, left out of a comparison with a real arm.
    Poll(u64, u64),
}

/// The kind of the header record: its fields are written at column 0 with no title.
pub const HEADER: &str = "header";

impl<'a> Record<'a> {
    pub fn new(kind: &'static str) -> Record<'a> {
        Record {
            kind,
            index: None,
            at: None,
            result: None,
            fields: Vec::new(),
            seen: Seen::Both,
            sums: false,
            comment_words: false,
        }
    }

    pub fn push(&mut self, f: Field<'a>) {
        self.fields.push(f);
    }

    /// The record with nothing borrowed (to keep it past the event it came from).
    pub fn into_owned(self) -> Record<'static> {
        Record {
            kind: self.kind,
            index: self.index,
            at: self.at,
            result: self.result.map(Value::into_owned),
            fields: self
                .fields
                .into_iter()
                .map(|f| Field {
                    name: f.name,
                    value: f.value.into_owned(),
                    seen: f.seen,
                    meta: f.meta,
                    compare_as: f.compare_as.map(Value::into_owned),
                })
                .collect(),
            seen: self.seen,
            sums: self.sums,
            comment_words: self.comment_words,
        }
    }

    /// The title line without its end: `read 3 (frame 2, ts 1.000002000)`, then `: ` and
    /// the result if there is one.
    pub fn title_into(&self, out: &mut String) {
        out.push_str(self.kind);
        if let Some(i) = self.index {
            out.push(' ');
            text::dec(out, i);
        }
        match self.at {
            Some(At::Frame(f, t)) => {
                out.push_str(" (frame ");
                text::dec(out, f);
                out.push_str(", ts ");
                text::ts(out, t);
                out.push(')');
            }
            Some(At::After(n)) => {
                out.push_str(" (after ");
                text::dec(out, n);
                out.push(')');
            }
            Some(At::Ts(t)) => {
                out.push_str(" (ts ");
                text::ts(out, t);
                out.push(')');
            }
            Some(At::Poll(p, t)) => {
                out.push_str(" (poll ");
                text::dec(out, p);
                out.push_str(", ts ");
                text::ts(out, t);
                out.push(')');
            }
            None => {}
        }
        out.push(':');
        if let Some(r) = &self.result {
            out.push(' ');
            r.text_into(out);
        }
    }

    /// The record as the text trace writes it: the header's `key: value` lines at
    /// column 0; an event or the totals after a blank line, its title, then its fields
    /// indented by two.
    pub fn write_text(&self, out: &mut String) {
        if self.kind != HEADER {
            out.push('\n');
        }
        self.write_block(out);
    }

    /// [`Record::write_text`] without the blank line before an event.
    pub fn write_block(&self, out: &mut String) {
        let indent = if self.kind == HEADER {
            ""
        } else {
            self.title_into(out);
            out.push('\n');
            "  "
        };
        for f in &self.fields {
            out.push_str(indent);
            out.push_str(&f.name);
            out.push(':');
            match &f.value {
                Value::Bytes(b) => {
                    out.push('\n');
                    super::render::hexdump(out, b);
                }
                v => {
                    out.push(' ');
                    v.text_into(out);
                    out.push('\n');
                }
            }
        }
    }

    /// The record as one JSON line's value (see [`Record::write_json`], the one JSON
    /// writer, read back).
    pub fn to_json(&self) -> Json {
        let mut line = Vec::new();
        self.write_json(&mut line);
        serde_json::from_slice(&line).unwrap_or(Json::Null)
    }

    /// The packet comment: the fields marked [`Field::meta`] in their places, `name:
    /// value` joined by `; ` (`skb: len 60 ...; pi: flags 0x0000 proto 0x0800`), or as
    /// words ([`Record::comment_words`]: `protocol 0x0800 vlan ...`).
    pub fn comment(&self) -> String {
        // Room for the usual comment (`protocol 0x0800 vlan ...`, `skb: len ...; pi:
        // ...`) at once: growing it from empty was 12% of tap-write `replay -o`'s
        // instructions (callgrind, 100k frames: 482 M, 422 M with this).
        let mut c = String::with_capacity(128);
        self.comment_into(&mut c);
        c
    }

    /// [`Record::comment`] into `out` (cleared first), so that a per-frame caller
    /// (`replay -o` to pcapng) reuses one buffer instead of allocating a comment a frame.
    pub fn comment_into(&self, out: &mut String) {
        out.clear();
        let (sep, kv) = if self.comment_words {
            (" ", " ")
        } else {
            ("; ", ": ")
        };
        let put = |f: &Field<'_>| {
            if !out.is_empty() {
                out.push_str(sep);
            }
            out.push_str(&f.name);
            out.push_str(kv);
            f.value.text_into(out);
        };
        let meta = || self.fields.iter().filter(|f| f.meta > 0);
        // Most records push their comment's fields in their places already: then they
        // are written as they come, without collecting and sorting them on every frame.
        let mut last = 0;
        if meta().all(|f| std::mem::replace(&mut last, f.meta) <= f.meta) {
            meta().for_each(put);
        } else {
            let mut sorted: Vec<&Field<'_>> = meta().collect();
            sorted.sort_by_key(|f| f.meta);
            sorted.into_iter().for_each(put);
        }
    }
}

impl<'a> Value<'a> {
    pub fn text(s: impl Into<Cow<'a, str>>) -> Value<'a> {
        Value::Text(s.into())
    }

    pub fn hex(n: u64, digits: u8) -> Value<'a> {
        Value::Hex { n, digits }
    }

    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Int(n) => Value::Int(n),
            Value::Hex { n, digits } => Value::Hex { n, digits },
            Value::Ts(t) => Value::Ts(t),
            Value::Word(w) => Value::Word(w),
            Value::Text(s) => Value::Text(Cow::Owned(s.into_owned())),
            Value::Parts(p) => Value::Parts(
                p.into_iter()
                    .map(|p| Part {
                        name: p.name,
                        label: p.label,
                        value: p.value.into_owned(),
                    })
                    .collect(),
            ),
            Value::Bytes(b) => Value::Bytes(Cow::Owned(b.into_owned())),
        }
    }

    /// The value on one line (bytes as their hex).
    pub fn text_into(&self, out: &mut String) {
        match self {
            Value::Int(n) => text::dec(out, *n),
            Value::Hex { n, digits } => text::hex0x(out, *n, usize::from(*digits)),
            Value::Ts(t) => text::ts(out, *t),
            Value::Word(w) => out.push_str(w),
            Value::Text(s) => out.push_str(s),
            Value::Parts(parts) => {
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    if let Some(l) = p.label {
                        out.push_str(l);
                        out.push(' ');
                    }
                    p.value.text_into(out);
                }
            }
            Value::Bytes(b) => out.push_str(&super::render::hex_string(b)),
        }
    }

    /// The value as JSON (see [`Value::write_json`], read back).
    pub fn to_json(&self) -> Json {
        let mut v = Vec::new();
        self.write_json(&mut v);
        serde_json::from_slice(&v).unwrap_or(Json::Null)
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
