//! The canonical trace: what a scenario did, laid out for a reviewer to read and for
//! `skbsim diff` to compare field by field. The real-kernel arm writes the same format.
//!
//! Layout: a header of `key: value` lines, then one block per event that starts at
//! column 0 (`read 3 (frame 2, ts ...)`), with indented `key: value` fields under it,
//! then the totals. Blank lines separate blocks.
//!
//! Every block is built once as data, a [`record::Record`] of named fields each marked
//! with who can see it ([`record::Seen`]); the text, the JSON lines, the capture's packet
//! comments and the comparison of two arms ([`record_diff`]) all come from it. The
//! pipelines build their records (in their `*_trace` modules); a trace that exists only
//! as text (a golden, a lab guest's) is compared by [`diff`], the one comparison engine.

pub mod diff;
pub mod diff_comment;
pub mod diff_stream;
pub mod gro;
pub mod gro_cells;
pub mod gro_delivery;
pub mod gro_observed;
mod json;
pub mod record;
pub mod record_diff;
pub(crate) mod render;
pub mod scratch;
pub mod vhost;
pub mod write;

pub use render::{counters_value, counters_value_in, describe_device, hex_string, TraceHeader};
