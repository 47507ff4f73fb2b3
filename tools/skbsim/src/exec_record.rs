//! The outputs of `skbsim exec --trace FILE --json FILE -o FILE`: the run's record
//! (skbsim_exec::record) as the text trace, as JSON lines (a header line, then one line
//! per event) and as a pcapng of the frames at tun_get_user and tun_put_user, one
//! interface per device and point, each packet commented with its event's metadata.
//! The files are opened (and checked) before the program runs and written after it ends,
//! through [`Output`] (written in place; a file this run created is removed if it fails).

use std::path::{Path, PathBuf};

use sim::trace::record::Record;
use skbsim::cli_error::CliError;
use skbsim::output::{refuse_overlaps, Output};
use skbsim_exec::record::Captured;
use skbsim_exec::ExecRecord;

/// The outputs asked for, opened.
#[derive(Debug, Default)]
pub struct RecordOutputs {
    trace: Option<Output>,
    json: Option<Output>,
    capture: Option<Output>,
}

impl RecordOutputs {
    /// Opens the named outputs (none may be the same file as another; at most one may
    /// be `-`, stdout, which the program writes to as well).
    pub fn open(
        trace: Option<&Path>,
        json: Option<&Path>,
        capture: Option<&Path>,
    ) -> Result<RecordOutputs, CliError> {
        let named: Vec<(&str, &Path)> = [("--trace", trace), ("--json", json), ("-o", capture)]
            .into_iter()
            .filter_map(|(f, p)| p.map(|p| (f, p)))
            .collect();
        if named.iter().filter(|(_, p)| p.as_os_str() == "-").count() > 1 {
            return Err(CliError(
                "exec: only one of --trace, --json and -o can be - (stdout); name a file for the others"
                    .into(),
            ));
        }
        refuse_overlaps(&[], &named)?;
        let open = |p: Option<&Path>| p.map(Output::create).transpose();
        Ok(RecordOutputs {
            trace: open(trace)?,
            json: open(json)?,
            capture: open(capture)?,
        })
    }

    /// Whether anything wants the record.
    pub fn wanted(&self) -> bool {
        self.trace.is_some() || self.json.is_some() || self.capture.is_some()
    }

    /// Writes the record into every output asked for, and commits them.
    pub fn write(self, header: &Record<'_>, rec: &ExecRecord) -> Result<(), CliError> {
        if let Some(mut o) = self.trace {
            let text = skbsim::exec_scenario::trace_text(header, &rec.records);
            put(&mut o, text.as_bytes())?;
            o.commit()?;
        }
        if let Some(mut o) = self.json {
            let mut lines = String::new();
            for r in std::iter::once(header).chain(&rec.records) {
                lines.push_str(&r.to_json().to_string());
                lines.push('\n');
            }
            put(&mut o, lines.as_bytes())?;
            o.commit()?;
        }
        if let Some(o) = self.capture {
            write_capture(o, &rec.frames)?;
        }
        Ok(())
    }
}

fn put(o: &mut Output, bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write;
    o.write_all(bytes).map_err(|e| o.cannot_write(e))
}

/// The capture (skbsim::exec_scenario::write_capture), committed to `o`.
fn write_capture(o: Output, frames: &[Captured]) -> Result<(), CliError> {
    let name: PathBuf = o.path().to_path_buf();
    skbsim::exec_scenario::write_capture(o, name, frames)?.commit()
}
