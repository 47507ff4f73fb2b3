//! Records compared field by field, by their marks: the comparison of a simulator trace
//! with a real arm's keeps only the fields both can see ([`Seen::Both`]), so no list of
//! model-only fields is kept anywhere. The fields are those the text trace shows and the
//! text comparison ([`super::diff`]) parses (the `bytes` dump a field per line,
//! `bytes+0010`), compared by the same engine ([`compare_blocks`]).

use serde::{Deserialize, Serialize};

use super::diff::{
    all_block_differences, compare_blocks, extra_event, split_kv, Block, Divergence,
};
use super::record::{At, Record, Seen, Value, HEADER};

/// A record as the text comparison sees it: the event (the title before `: `) and its
/// fields as text, each with its mark. What a lab guest sends back of its real arm's
/// records ([`observed`]), so its marks cross the serial port with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flat {
    pub event: String,
    pub fields: Vec<(String, String, Seen)>,
}

impl Flat {
    /// A capture's packet comment ([`Record::comment`]) read back as the fields of event
    /// `event` (`frame 3`): `; `-separated `name: value` parts, or `name value` (the
    /// words form, `protocol 0x0800 vlan ...`, is field `protocol`; older captures have
    /// `frames 3`). A comment has no marks: every field counts.
    pub fn from_comment(event: &str, comment: &str) -> Flat {
        let fields = comment
            .split("; ")
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p
                    .split_once(": ")
                    .or_else(|| p.split_once(' '))
                    .unwrap_or((p, ""));
                (k.to_string(), v.to_string(), Seen::Both)
            })
            .collect();
        Flat {
            event: event.to_string(),
            fields,
        }
    }

    /// Field `name`'s value and mark, where the record has it.
    pub fn field_mut(&mut self, name: &str) -> Option<(&mut String, &mut Seen)> {
        self.fields
            .iter_mut()
            .find(|(k, _, _)| k == name)
            .map(|(_, v, s)| (v, s))
    }
}

impl Record<'_> {
    /// The record's fields as the text trace shows them (what [`super::diff`] parses
    /// from it), each with its mark.
    pub fn flat(&self) -> Flat {
        self.flat_as(false)
    }

    /// [`Record::flat`], or with `observed` as a real arm can see it: the title without
    /// the model's poll and time ([`super::record::At::Poll`]), each field's
    /// [`super::record::Field::compare_as`] for its value.
    fn flat_as(&self, observed: bool) -> Flat {
        let mut fields = Vec::new();
        let event = if self.kind == HEADER {
            HEADER.to_string()
        } else {
            let mut title = String::new();
            let mut shown = self.clone();
            if observed && matches!(self.at, Some(At::Poll(..))) {
                shown.at = None;
            }
            shown.title_into(&mut title);
            let (event, result) = match title.split_once(": ") {
                Some((e, r)) => (e.to_string(), r.to_string()),
                None => (title.clone(), String::new()),
            };
            fields.push(("result".to_string(), result, Seen::Both));
            event
        };
        let mut one = Record::new(HEADER);
        let mut text = String::new();
        for f in &self.fields {
            // Each field written alone, as the header writes it, and parsed back.
            one.fields.clear();
            let mut f = f.clone();
            if let (true, Some(v)) = (observed, f.compare_as.take()) {
                f.value = v;
            }
            one.fields.push(f);
            text.clear();
            one.write_text(&mut text);
            for line in text.lines() {
                let (k, v) = split_kv(line);
                fields.push((k, v.to_string(), one.fields[0].seen));
            }
        }
        Flat { event, fields }
    }
}

/// The fields of `f` both arms can see, as a block of the text comparison.
pub(crate) fn seen_by_both(f: &Flat) -> Block<'_> {
    Block {
        event: &f.event,
        fields: f
            .fields
            .iter()
            .filter(|(_, _, s)| *s == Seen::Both)
            .map(|(k, v, _)| (k.clone(), v.as_str()))
            .collect(),
    }
}

/// What of `records` a real arm can see: the records marked [`Seen::Both`], each run of
/// consecutive [`Record::sums`] records of one kind as one, flattened (the model's poll
/// and time left out, each field's [`super::record::Field::compare_as`] for its value).
pub fn observed(records: &[Record<'_>]) -> Vec<Flat> {
    let mut out: Vec<Flat> = Vec::new();
    let mut run: Option<Record<'_>> = None;
    for r in records.iter().filter(|r| r.seen == Seen::Both) {
        match run.as_mut() {
            Some(acc) if r.sums && acc.kind == r.kind => add_results(acc, r),
            _ => {
                if let Some(acc) = run.take() {
                    out.push(acc.flat_as(true));
                }
                if r.sums {
                    run = Some(r.clone());
                } else {
                    out.push(r.flat_as(true));
                }
            }
        }
    }
    if let Some(acc) = run {
        out.push(acc.flat_as(true));
    }
    out
}

/// `acc`'s result with `r`'s numbers added, part by part.
fn add_results(acc: &mut Record<'_>, r: &Record<'_>) {
    if let (Some(Value::Parts(a)), Some(Value::Parts(b))) = (acc.result.as_mut(), &r.result) {
        for (x, y) in a.iter_mut().zip(b) {
            if let (Value::Int(m), Value::Int(n)) = (&mut x.value, &y.value) {
                *m += n;
            }
        }
    }
}

/// The first difference between two traces as records (the simulator's, left, and a
/// real arm's, right), comparing only what is marked [`Seen::Both`] on its side: a
/// field or an event only the model knows is in neither comparison.
pub fn first_record_divergence(left: &[Record<'_>], right: &[Record<'_>]) -> Option<Divergence> {
    first_flat_divergence(&observed(left), &observed(right))
}

/// [`first_record_divergence`] of two traces already reduced by [`observed`] (a lab
/// guest's comes so).
pub fn first_flat_divergence(a: &[Flat], b: &[Flat]) -> Option<Divergence> {
    for (x, y) in a.iter().zip(b.iter()) {
        if let Some(d) = compare_blocks(&seen_by_both(x), &seen_by_both(y), &[]) {
            return Some(d);
        }
    }
    if a.len() != b.len() {
        let n = a.len().min(b.len());
        let (x, y) = (a.get(n).map(seen_by_both), b.get(n).map(seen_by_both));
        return Some(extra_event(x.as_ref(), y.as_ref()));
    }
    None
}

/// Every difference between two [`observed`] traces over what both arms see, events
/// matched by name and occurrence (`skbsim lab conform` lists them all).
pub fn all_flat_differences(a: &[Flat], b: &[Flat]) -> Vec<Divergence> {
    let (x, y): (Vec<Block<'_>>, Vec<Block<'_>>) = (
        a.iter().map(seen_by_both).collect(),
        b.iter().map(seen_by_both).collect(),
    );
    all_block_differences(&x, &y)
}
