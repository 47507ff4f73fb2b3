//! The outputs of `skbsim exec --trace FILE --json FILE -o FILE`: the run's record
//! (skbsim_exec::record) as the text trace, as JSON lines (a header line, then one line
//! per event) and as a pcapng of the frames at tun_get_user and tun_put_user, one
//! interface per device and point, each packet commented with its event's metadata.
//! The files are opened (and checked) before the program runs and written after it ends,
//! through [`Output`] (written in place; a file this run created is removed if it fails).

use std::path::{Path, PathBuf};

use sim::pcap::{linktype::LINKTYPE_RAW, PcapFormat, PcapWriter, LINKTYPE_ETHERNET};
use sim::trace::record::Record;
use sim::tun::DeviceKind;
use skbsim::cli_error::CliError;
use skbsim::output::{refuse_overlaps, Output};
use skbsim_exec::record::{Captured, Point};
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
            let mut text = String::new();
            header.write_text(&mut text);
            for r in &rec.records {
                r.write_text(&mut text);
            }
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

/// pcapng: an interface `DEV tun_get_user` / `DEV tun_put_user` for each device and
/// point, added as its first frame comes (raw IP for an IFF_TUN device, Ethernet for a
/// tap).
fn write_capture(o: Output, frames: &[Captured]) -> Result<(), CliError> {
    let name: PathBuf = o.path().to_path_buf();
    let mut w = PcapWriter::begin(o, PcapFormat::PcapNg, name)?;
    let mut ifaces: Vec<(Vec<u8>, Point)> = Vec::new();
    for c in frames {
        let key = (c.dev.clone(), c.point);
        let id = match ifaces.iter().position(|k| *k == key) {
            Some(i) => i as u32,
            None => {
                let link_type = match c.kind {
                    DeviceKind::Tun => LINKTYPE_RAW,
                    DeviceKind::Tap => LINKTYPE_ETHERNET,
                };
                let ifname = format!("{} {}", String::from_utf8_lossy(&c.dev), c.point.name());
                ifaces.push(key);
                w.add_interface(&ifname, link_type, sim::pcap::WRITER_SNAPLEN)?
            }
        };
        let len = u32::try_from(c.data.len()).unwrap_or(u32::MAX);
        w.write_packet(id, c.ts_ns, &c.data, len, Some(&c.comment))?;
    }
    w.finish()?.commit()
}
