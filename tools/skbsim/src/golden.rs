//! Golden files: `golden/<area>/<scenario>/trace.snap` (an insta snapshot, so
//! `cargo insta review` works on it) and `read.pcap` (what userspace read). They change
//! only through `skbsim bless` (or `cargo insta review`), and are written atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use sim::scenario::Scenario;
use sim::trace::diff::first_divergence;

use crate::cli_error::CliError;
use crate::diff::pcap_divergence;
use crate::input::{read_regular, read_regular_to_string, MAX_TRACE_BYTES};
use crate::runner::ScenarioOutput;

mod writer;
pub use writer::{remove_stale_temps, GoldenWriter};

pub const TRACE_FILE: &str = "trace.snap";
pub const PCAP_FILE: &str = "read.pcap";

/// A golden pcap is compared in memory with the replay's; goldens are the repository's
/// own small captures (the largest is a few hundred KiB), so 1 GiB only stops a golden
/// dir pointing at something absurd.
const MAX_GOLDEN_PCAP_BYTES: u64 = 1 << 30;

/// The insta header of a golden trace: what insta writes for `assert_snapshot!("trace",
/// trace)` in `tests/scenarios.rs` (the source relative to the workspace, the expression,
/// no `input_file`), so `cargo insta accept` and `skbsim bless` write the same bytes
/// (`tests/golden_format.rs`, `ci/insta-check.sh`). Written by hand rather than through
/// insta because insta offers no public way to build snapshot metadata.
pub const SNAP_HEADER: &str =
    "---\nsource: tools/skbsim/tests/scenarios.rs\nexpression: trace\n---\n";

/// The suite a scenario file belongs to, from where the file really is (its path made
/// absolute and its symbolic links resolved): `<suite>` for a file at
/// `<suite>/scenarios/<area>/<stem>.toml`, the layout `run` and `bless` use. The same
/// answer from every working directory and through every link; `None` for a file
/// anywhere else (it has no golden unless `--golden` names a root).
pub fn suite_of(scenario: &Path) -> Option<Suite> {
    let real = std::fs::canonicalize(scenario).ok()?;
    let area_dir = real.parent()?;
    let scenarios = area_dir.parent()?;
    if scenarios.file_name()? != "scenarios" || real.extension()? != "toml" {
        return None;
    }
    Some(Suite {
        root: scenarios.parent()?.to_path_buf(),
        name: Scenario::name_of(&real),
    })
}

/// Where a scenario file sits in its suite ([`suite_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suite {
    /// The directory holding `scenarios/` and `golden/`.
    pub root: PathBuf,
    /// `<area>/<stem>` of the real file: its golden directory under `golden/`.
    pub name: String,
}

/// Why `bless` has nowhere to write a scenario's goldens (one line, naming the file).
pub fn not_in_a_suite(scenario: &Path) -> CliError {
    CliError(format!(
        "{}: not in a suite (a scenarios/<pipeline>/ directory beside golden/), so it has no golden to bless; give --golden DIR to bless it there",
        scenario.display()
    ))
}

/// The golden root of a scenario file: `root` when given, else `<suite>/golden` of the
/// suite the file is in; `None` outside any suite.
pub fn golden_root(scenario: &Path, root: Option<&Path>) -> Option<PathBuf> {
    match root {
        Some(r) => Some(r.to_path_buf()),
        None => suite_of(scenario).map(|s| s.root.join("golden")),
    }
}

/// A scenario's golden directory: `<suite>/golden/<area>/<stem>` for a file at
/// `<suite>/scenarios/<area>/<stem>.toml` ([`suite_of`]), or `<root>/<name>` when a
/// root is given; `None` outside any suite.
pub fn golden_dir(scenario: &Scenario, root: Option<&Path>) -> Option<PathBuf> {
    match root {
        Some(r) => Some(r.join(&scenario.name)),
        None => suite_of(&scenario.path).map(|s| s.root.join("golden").join(s.name)),
    }
}

/// The trace inside an insta snapshot file (everything after the header).
pub fn snap_body(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix("---\n") {
        if let Some(end) = rest.find("\n---\n") {
            return &rest[end + 5..];
        }
    }
    text
}

/// The file contents bless writes for a trace: the header, the trace without trailing
/// whitespace, one newline (insta's own normalisation of a file snapshot).
pub fn to_snap(trace: &str) -> String {
    format!("{SNAP_HEADER}{}\n", trace.trim_end())
}

/// A golden trace file's text (a regular file of bounded size).
pub fn read_golden_trace(path: &Path) -> Result<String, CliError> {
    read_regular_to_string(path, "golden trace", MAX_TRACE_BYTES)
}

/// A golden pcap's bytes (a regular file of bounded size).
pub fn read_golden_pcap(path: &Path) -> Result<Vec<u8>, CliError> {
    read_regular(path, "golden pcap", MAX_GOLDEN_PCAP_BYTES)
}

/// How a replay compares with its goldens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// No golden yet (bless to create it).
    Missing(PathBuf),
    /// A readable field-level description of the first difference.
    Mismatch(String),
}

/// Compare a replay with the goldens in `dir`.
pub fn check(dir: &Path, out: &ScenarioOutput) -> Result<Verdict, CliError> {
    let trace_path = dir.join(TRACE_FILE);
    let pcap_path = dir.join(PCAP_FILE);
    if !trace_path.exists() {
        return Ok(Verdict::Missing(trace_path));
    }
    if !pcap_path.exists() {
        return Ok(Verdict::Missing(pcap_path));
    }
    let golden = read_golden_trace(&trace_path)?;
    let golden = snap_body(&golden).trim_end();
    let now = out.trace.trim_end();
    if golden != now {
        let detail = match first_divergence(golden, now, &[]) {
            Some(d) => d.to_string(),
            None => "the traces differ only in blank lines or line order".to_string(),
        };
        return Ok(Verdict::Mismatch(format!(
            "{} (- golden, + now)\n{detail}",
            trace_path.display()
        )));
    }
    let golden_pcap = read_golden_pcap(&pcap_path)?;
    if golden_pcap != out.pcap {
        let detail = pcap_divergence(&golden_pcap, &out.pcap, &pcap_path, Path::new("(replay)"))?
            .unwrap_or_else(|| "the pcap files differ in their headers".to_string());
        return Ok(Verdict::Mismatch(format!(
            "{} (- golden, + now)\n{detail}",
            pcap_path.display()
        )));
    }
    Ok(Verdict::Pass)
}

/// Write both goldens for a replay, as a unit ([`GoldenWriter`]).
pub fn bless(dir: &Path, out: &ScenarioOutput) -> Result<(), CliError> {
    let mut w = GoldenWriter::begin(dir)?;
    let snap = to_snap(&out.trace);
    w.trace()
        .write_all(snap.as_bytes())
        .map_err(|e| w.cannot_write(TRACE_FILE, e))?;
    w.pcap()
        .write_all(&out.pcap)
        .map_err(|e| w.cannot_write(PCAP_FILE, e))?;
    w.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snap_round_trip_keeps_the_trace() {
        let t = "scenario: a\n\nread 0: buffer 1 -> 1\n";
        assert_eq!(snap_body(&to_snap(t)).trim_end(), t.trim_end());
        assert_eq!(snap_body("no header"), "no header");
    }
}
