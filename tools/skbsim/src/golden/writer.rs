//! A scenario's two goldens written as a unit.
//!
//! `bless` writes `trace.snap` and `read.pcap` into a hidden directory beside the
//! scenario's golden directory, `.<stem>.bless-<pid>`, then swaps the two directories in
//! one `renameat2(RENAME_EXCHANGE)`: a reader (or a kill at any instant) sees either both
//! old goldens or both new ones, never a new trace beside an old pcap. A killed bless
//! leaves only the hidden directory, which [`remove_stale_temps`] removes on the next
//! `run` or `bless` once its pid is gone.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use rustix::fs::{renameat_with, RenameFlags, CWD};
use rustix::io::Errno;

use super::{PCAP_FILE, TRACE_FILE};
use crate::cli_error::CliError;
use crate::output::sync_dir;

/// `.<stem>` + this + `<pid>`: the temp directory of a bless in progress.
const BLESS_TAG: &str = ".bless-";
/// Appended to the temp name for the old goldens moved aside, on file systems without
/// RENAME_EXCHANGE.
const OLD_SUFFIX: &str = "-old";
/// `.<file>` + this + `<pid>`: the per-file temp of earlier versions' write_atomic.
const FILE_TMP_TAG: &str = ".tmp-";

const BUF_BYTES: usize = 256 << 10;

/// Writes a scenario's two goldens as a unit.
#[derive(Debug)]
pub struct GoldenWriter {
    dir: PathBuf,
    tmp: PathBuf,
    trace: BufWriter<File>,
    pcap: BufWriter<File>,
}

fn err<'a>(path: &'a Path, what: &str) -> impl Fn(io::Error) -> CliError + 'a {
    let what = what.to_string();
    move |e| CliError(format!("{}: {what}: {e}", path.display()))
}

impl GoldenWriter {
    /// Makes the temp dir `.<stem>.bless-<pid>` beside `dir` and the two files in it.
    /// Files of `dir` other than the two goldens are copied in, so the swap keeps them.
    pub fn begin(dir: &Path) -> Result<GoldenWriter, CliError> {
        // A symlinked golden dir: swap its target, keep the link.
        let dir = match fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => fs::canonicalize(dir)
                .map_err(err(dir, "cannot follow the link to the golden directory"))?,
            _ => dir.to_path_buf(),
        };
        let stem = dir
            .file_name()
            .ok_or_else(|| CliError(format!("{}: not a directory name", dir.display())))?;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(err(&parent, "cannot create"))?;
        let mut name = std::ffi::OsString::from(".");
        name.push(stem);
        name.push(format!("{BLESS_TAG}{}", std::process::id()));
        let tmp = parent.join(name);
        // Only a run of this very pid (killed, the pid reused) can have left this name.
        if fs::symlink_metadata(&tmp).is_ok() {
            fs::remove_dir_all(&tmp).map_err(err(&tmp, "cannot remove a stale bless"))?;
        }
        fs::create_dir(&tmp).map_err(err(&tmp, "cannot create"))?;
        // From here on a failure drops the half-built writer, which removes `tmp`.
        let create = |n: &str| {
            let p = tmp.join(n);
            File::create(&p)
                .map(|f| BufWriter::with_capacity(BUF_BYTES, f))
                .map_err(err(&p, "cannot create"))
        };
        let trace = match create(TRACE_FILE) {
            Ok(t) => t,
            Err(e) => {
                let _ = fs::remove_dir_all(&tmp);
                return Err(e);
            }
        };
        let pcap = match create(PCAP_FILE) {
            Ok(p) => p,
            Err(e) => {
                let _ = fs::remove_dir_all(&tmp);
                return Err(e);
            }
        };
        let w = GoldenWriter {
            dir,
            tmp,
            trace,
            pcap,
        };
        w.carry_over_others()?;
        Ok(w)
    }

    /// Copy the files of the golden dir that bless does not write into the temp dir.
    fn carry_over_others(&self) -> Result<(), CliError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(err(&self.dir, "cannot list")(e)),
        };
        for entry in entries {
            let entry = entry.map_err(err(&self.dir, "cannot list"))?;
            let name = entry.file_name();
            if name == TRACE_FILE || name == PCAP_FILE {
                continue;
            }
            let from = entry.path();
            let ft = entry.file_type().map_err(err(&from, "cannot stat"))?;
            if !ft.is_file() {
                return Err(CliError(format!(
                    "{}: bless swaps the golden directory whole and carries over regular files only",
                    from.display()
                )));
            }
            fs::copy(&from, self.tmp.join(&name)).map_err(err(&from, "cannot copy"))?;
        }
        Ok(())
    }

    /// The trace.snap file (write [`super::SNAP_HEADER`] first, then the trace).
    pub fn trace(&mut self) -> &mut impl Write {
        &mut self.trace
    }

    /// The read.pcap file.
    pub fn pcap(&mut self) -> &mut impl Write {
        &mut self.pcap
    }

    /// A write error on golden `file` (TRACE_FILE or PCAP_FILE) as a one-line error.
    pub fn cannot_write(&self, file: &str, e: io::Error) -> CliError {
        CliError(format!(
            "{}: cannot write: {e}",
            self.dir.join(file).display()
        ))
    }

    /// fsync both files, then swap the temp dir with the golden dir atomically (plain
    /// rename when there is none yet), then remove the old contents.
    pub fn commit(mut self) -> Result<(), CliError> {
        for (file, w) in [(TRACE_FILE, &mut self.trace), (PCAP_FILE, &mut self.pcap)] {
            let p = self.tmp.join(file);
            w.flush().map_err(err(&p, "cannot write"))?;
            w.get_ref().sync_all().map_err(err(&p, "cannot write"))?;
        }
        let swap_err = err(&self.dir, "cannot replace the goldens");
        if let Ok(d) = File::open(&self.tmp) {
            d.sync_all().map_err(&swap_err)?;
        }
        match fs::symlink_metadata(&self.dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::rename(&self.tmp, &self.dir).map_err(&swap_err)?;
            }
            Err(e) => return Err(swap_err(e)),
            Ok(m) if !m.is_dir() => {
                return Err(CliError(format!(
                    "{}: not a directory, cannot hold goldens",
                    self.dir.display()
                )))
            }
            Ok(_) => match renameat_with(CWD, &self.tmp, CWD, &self.dir, RenameFlags::EXCHANGE) {
                Ok(()) => {
                    // `tmp` now holds the old goldens.
                    fs::remove_dir_all(&self.tmp)
                        .map_err(err(&self.tmp, "cannot remove the old goldens"))?;
                }
                Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                    self.swap_by_two_renames()?
                }
                Err(e) => return Err(swap_err(e.into())),
            },
        }
        sync_dir(&self.dir);
        Ok(())
    }

    /// Without RENAME_EXCHANGE: move the old dir aside, the new one in, remove the old.
    /// Killed in between, the golden dir is missing (`run` says so) rather than mixed,
    /// and [`remove_stale_temps`] puts the old goldens back.
    fn swap_by_two_renames(&self) -> Result<(), CliError> {
        let mut old = self.tmp.clone().into_os_string();
        old.push(OLD_SUFFIX);
        let old = PathBuf::from(old);
        let e = err(&self.dir, "cannot replace the goldens");
        fs::rename(&self.dir, &old).map_err(&e)?;
        if let Err(x) = fs::rename(&self.tmp, &self.dir) {
            let _ = fs::rename(&old, &self.dir);
            return Err(e(x));
        }
        fs::remove_dir_all(&old).map_err(err(&old, "cannot remove the old goldens"))
    }
}

impl Drop for GoldenWriter {
    /// Without commit the new goldens are discarded; after it `tmp` is gone already.
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.tmp);
    }
}

/// What a hidden name left by bless is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Temp {
    /// `.<stem>.bless-<pid>`: new goldens being written.
    Bless,
    /// `.<stem>.bless-<pid>-old`: old goldens moved aside.
    Old,
    /// `.<file>.tmp-<pid>`: a per-file temp of an earlier bless.
    File,
}

/// `(stem, pid, kind)` of a temp name, None for any other name.
fn parse_temp(name: &str) -> Option<(&str, u32, Temp)> {
    let rest = name.strip_prefix('.')?;
    let digits = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    if let Some((stem, tail)) = rest.rsplit_once(BLESS_TAG) {
        if stem.is_empty() {
            return None;
        }
        if let Some(pid) = tail.strip_suffix(OLD_SUFFIX).and_then(digits) {
            return Some((stem, pid, Temp::Old));
        }
        return digits(tail).map(|pid| (stem, pid, Temp::Bless));
    }
    let (file, tail) = rest.rsplit_once(FILE_TMP_TAG)?;
    if file != TRACE_FILE && file != PCAP_FILE {
        return None;
    }
    digits(tail).map(|pid| (file, pid, Temp::File))
}

/// Whether a bless of `pid` may still be running. This process counts as not running
/// one: it is called before this process begins its own, and a pid reused after a kill
/// (common in containers) must not keep a stale temp forever. Without /proc nothing can
/// be told apart, so everything counts as running and nothing is removed.
fn may_be_running(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    !Path::new("/proc/self").exists() || Path::new("/proc").join(pid.to_string()).exists()
}

/// Remove temp dirs/files a killed bless left under a golden root (names matching the
/// temp pattern whose pid is no longer alive); old goldens a kill left moved aside are
/// put back when their directory is missing. Returns how many were cleaned. Called at
/// the start of run and bless, before this process writes any golden.
pub fn remove_stale_temps(root: &Path) -> Result<usize, CliError> {
    let mut n = 0;
    clean(root, &mut n, 0)?;
    Ok(n)
}

/// Golden trees are `<root>/<area>/<stem>/`; deeper trees are no goldens.
const MAX_DEPTH: usize = 8;

fn clean(dir: &Path, n: &mut usize, depth: usize) -> Result<(), CliError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound && depth == 0 => return Ok(()),
        Err(e) => return Err(err(dir, "cannot list")(e)),
    };
    for entry in entries {
        let entry = entry.map_err(err(dir, "cannot list"))?;
        let path = entry.path();
        let ft = entry.file_type().map_err(err(&path, "cannot stat"))?;
        let name = entry.file_name();
        let temp = name.to_str().and_then(parse_temp);
        match temp {
            Some((_, pid, _)) if may_be_running(pid) => {}
            Some((_, _, Temp::File)) if ft.is_file() => {
                fs::remove_file(&path).map_err(err(&path, "cannot remove"))?;
                *n += 1;
            }
            Some((_, _, Temp::Bless)) if ft.is_dir() => {
                fs::remove_dir_all(&path).map_err(err(&path, "cannot remove"))?;
                *n += 1;
            }
            Some((stem, _, Temp::Old)) if ft.is_dir() => {
                let home = dir.join(stem);
                if fs::symlink_metadata(&home).is_err() {
                    fs::rename(&path, &home).map_err(err(&path, "cannot restore"))?;
                } else {
                    fs::remove_dir_all(&path).map_err(err(&path, "cannot remove"))?;
                }
                *n += 1;
            }
            _ if ft.is_dir() && depth < MAX_DEPTH => clean(&path, n, depth + 1)?,
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
