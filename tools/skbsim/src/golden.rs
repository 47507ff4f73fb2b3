//! Golden files: `golden/<area>/<scenario>/trace.snap` (an insta snapshot, so
//! `cargo insta review` works on it) and `read.pcap` (what userspace read). They change
//! only through `skbsim bless` (or `cargo insta review`), and are written atomically.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sim::scenario::Scenario;
use sim::trace::diff::first_divergence;

use crate::cli_error::CliError;
use crate::diff::pcap_divergence;
use crate::runner::ScenarioOutput;

pub const TRACE_FILE: &str = "trace.snap";
pub const PCAP_FILE: &str = "read.pcap";

/// The insta header of a golden trace: what insta writes for `assert_snapshot!("trace",
/// trace)` in `tests/scenarios.rs` (the source relative to the workspace, the expression,
/// no `input_file`), so `cargo insta accept` and `skbsim bless` write the same bytes
/// (`tests/golden_format.rs`, `ci/insta-check.sh`). Written by hand rather than through
/// insta because insta offers no public way to build snapshot metadata.
const SNAP_HEADER: &str = "---\nsource: tools/skbsim/tests/scenarios.rs\nexpression: trace\n---\n";

/// `<repo>/golden/<area>/<stem>` for a scenario at `<repo>/scenarios/<area>/<stem>.toml`,
/// or under `root` when given.
pub fn golden_dir(scenario: &Scenario, root: Option<&Path>) -> PathBuf {
    let base = match root {
        Some(r) => r.to_path_buf(),
        None => scenario
            .path
            .parent()
            .and_then(Path::parent)
            .and_then(Path::parent)
            .map(|p| p.join("golden"))
            .unwrap_or_else(|| PathBuf::from("golden")),
    };
    base.join(&scenario.name)
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

/// Write `bytes` to `path` through a temporary file and a rename, so a reader never sees
/// half a golden.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)
        .map_err(|e| CliError(format!("{}: cannot create: {e}", dir.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let fail = |e: std::io::Error| CliError(format!("{}: cannot write: {e}", path.display()));
    let mut f = fs::File::create(&tmp).map_err(fail)?;
    f.write_all(bytes).map_err(fail)?;
    f.sync_all().map_err(fail)?;
    fs::rename(&tmp, path).map_err(fail)
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
    let golden = fs::read_to_string(&trace_path)
        .map_err(|e| CliError(format!("{}: cannot read: {e}", trace_path.display())))?;
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
    let golden_pcap = fs::read(&pcap_path)
        .map_err(|e| CliError(format!("{}: cannot read: {e}", pcap_path.display())))?;
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

/// Write both goldens for a replay.
pub fn bless(dir: &Path, out: &ScenarioOutput) -> Result<(), CliError> {
    write_atomic(&dir.join(TRACE_FILE), to_snap(&out.trace).as_bytes())?;
    write_atomic(&dir.join(PCAP_FILE), &out.pcap)
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
