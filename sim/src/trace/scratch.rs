//! Reuse of the allocations behind [`Record`]s: a traced replay builds one record per
//! event, and building each as a fresh tree of owned values (a `Vec` of fields, a `Vec`
//! per [`Value::Parts`], a `String` per run-time text) and dropping it again was a quarter
//! of the instructions of `replay --trace` in malloc, free and realloc (callgrind,
//! tun-read, 20k frames). A [`Scratch`] keeps those buffers between events: a renderer
//! takes its record's vectors and strings from it ([`Scratch::record`],
//! [`Scratch::parts`], [`Scratch::string`]) and gives the record back when every sink
//! has had it ([`Scratch::recycle`]), cleared, capacity kept. The record itself is
//! unchanged: one structure, every writer reads it as before.
//!
//! A builder given a fresh `Scratch::default()` allocates as before (an empty scratch
//! holds nothing), so the functions that take no scratch are the same code.

use std::borrow::Cow;

use super::record::{Field, Part, Record, Value};

/// A string taken from an empty scratch starts with room for the usual run-time text
/// (a frame's summary, the op counts), so it does not grow from empty either.
const STRING_ROOM: usize = 128;

/// Buffers of each kind kept at most: more than one record holds (a read has about ten
/// vectors and strings). A builder that makes some of its values without the scratch
/// (`vec!`, `format!`) gives back more than it takes; without a bound the surplus would
/// pile up, a few per event, for the whole run.
const KEEP_MAX: usize = 32;

/// Buffers kept between records (see the module doc).
#[derive(Debug, Default)]
pub struct Scratch {
    fields: Vec<Vec<Field<'static>>>,
    parts: Vec<Vec<Part<'static>>>,
    strings: Vec<String>,
}

/// `v`, emptied, as a vector of another element type of the same size and alignment
/// (the same type with another lifetime): the standard library collects a vector's
/// `into_iter().map(..)` in place, in its own allocation, so the capacity is kept.
fn relabel<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector is empty"))
        .collect()
}

impl Scratch {
    /// An empty record of `kind` (as [`Record::new`]) whose fields go into a kept vector.
    pub fn record<'a>(&mut self, kind: &'static str) -> Record<'a> {
        let mut rec = Record::new(kind);
        if let Some(v) = self.fields.pop() {
            rec.fields = relabel(v);
        }
        rec
    }

    /// An empty vector for a [`Value::Parts`].
    pub fn parts<'a>(&mut self) -> Vec<Part<'a>> {
        self.parts.pop().map_or_else(Vec::new, relabel)
    }

    /// [`Scratch::parts`] filled from `parts`.
    pub fn parts_of<'a>(&mut self, parts: impl IntoIterator<Item = Part<'a>>) -> Value<'a> {
        let mut v = self.parts();
        v.extend(parts);
        Value::Parts(v)
    }

    /// An empty string for a [`Value::Text`].
    pub fn string(&mut self) -> String {
        self.strings
            .pop()
            .unwrap_or_else(|| String::with_capacity(STRING_ROOM))
    }

    /// Keep `rec`'s vectors and strings for the next record.
    pub fn recycle(&mut self, mut rec: Record<'_>) {
        if let Some(v) = rec.result.take() {
            self.keep(v);
        }
        for f in rec.fields.drain(..) {
            self.keep(f.value);
            if let Some(v) = f.compare_as {
                self.keep(v);
            }
        }
        if self.fields.len() < KEEP_MAX {
            self.fields.push(relabel(rec.fields));
        }
    }

    fn keep(&mut self, v: Value<'_>) {
        match v {
            Value::Parts(mut p) => {
                for part in p.drain(..) {
                    self.keep(part.value);
                }
                if self.parts.len() < KEEP_MAX {
                    self.parts.push(relabel(p));
                }
            }
            Value::Text(Cow::Owned(mut s)) if self.strings.len() < KEEP_MAX => {
                s.clear();
                self.strings.push(s);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the scratch is for: a record given back lends its buffers, emptied, to the
    /// next one (the same allocations, not new ones).
    #[test]
    fn recycled_buffers_come_back_empty_with_their_capacity() {
        let mut s = Scratch::default();
        let mut rec = s.record("read");
        let mut parts = s.parts();
        parts.push(Part::named("len", Value::Int(60)));
        let mut text = s.string();
        text.push_str("IPv4 10.0.0.1 > 10.0.0.2");
        let (parts_at, text_at) = (parts.as_ptr() as usize, text.as_ptr());
        rec.push(Field::both("skb", Value::Parts(parts)));
        rec.push(Field::both("summary", Value::text(text)));
        let fields_at = rec.fields.as_ptr() as usize;
        s.recycle(rec);

        let again = s.record("read");
        assert!(again.fields.is_empty());
        assert_eq!(again.fields.as_ptr() as usize, fields_at);
        let p = s.parts();
        assert!(p.is_empty());
        assert_eq!(p.as_ptr() as usize, parts_at);
        let t = s.string();
        assert!(t.is_empty());
        assert_eq!(t.as_ptr(), text_at);
    }

    /// Records built partly without the scratch (values from `vec!` and `format!`, as
    /// some builders make them) give back more than they take: what is kept stays
    /// bounded however many events go by (it grew by three buffers an event, to 90 MiB
    /// peak on a 200k-frame tap-gro `replay --trace`, before the bound).
    #[test]
    fn what_is_kept_stays_bounded() {
        let mut s = Scratch::default();
        for i in 0..10_000u64 {
            let mut rec = s.record("deliver");
            let extra = vec![Part::named("len", Value::Int(i))];
            rec.push(Field::model("head", Value::Parts(extra)));
            rec.push(Field::model("encap", Value::text(format!("none {i}"))));
            rec.result = Some(s.parts_of([Part::named("len", Value::Int(i))]));
            s.recycle(rec);
        }
        // Far fewer than the 10,000 events (one per event is the growth this catches).
        let kept = [s.fields.len(), s.parts.len(), s.strings.len()];
        assert!(kept.iter().all(|n| *n <= 100), "{kept:?}");
    }

    /// Borrowed text is not the scratch's to keep; an empty scratch allocates as before.
    #[test]
    fn borrowed_values_are_left_alone() {
        let mut s = Scratch::default();
        let mut rec = s.record("read");
        rec.push(Field::both("summary", Value::text("borrowed")));
        s.recycle(rec);
        assert!(s.strings.is_empty());
        assert_eq!(s.fields.len(), 1);
        assert_eq!(s.string().capacity(), STRING_ROOM);
    }
}
