//! Files the user names for output (`replay -o`, `--trace`): written *to what is there*.
//!
//! A regular file (or a new name) is written to a temporary file in the same directory
//! and renamed over the target on [`Output::commit`], so a reader never sees half an
//! output and a failed run leaves the old file alone. Anything else that can take bytes
//! (`/dev/null`, a terminal, a FIFO, `-` for stdout) is written through: replacing it
//! with a regular file would, as root, turn `/dev/null` into a file. A symbolic link is
//! followed and its target replaced; the link stays. A directory, a socket or a block
//! device is an error before anything is written.

use std::fs::{self, File, Permissions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use sim::fsutil::kind_name;
use tempfile::TempPath;

use crate::cli_error::CliError;
use crate::stdout::Stdout;

/// Outputs are written in chunks this large: few syscalls for multi-GB captures, little
/// memory.
const BUF_BYTES: usize = 256 << 10;

/// Symbolic links followed before giving up (the kernel's own limit, MAXSYMLINKS).
const MAX_SYMLINKS: usize = 40;

/// A file the user named for output ("-" = stdout). Regular files (and a symlink's
/// regular target) are written to a temp file in the same dir and renamed over the target
/// on commit(); character devices, FIFOs, terminals, stdout are written through directly;
/// a directory (or other non-writable kind) is an error at open.
/// Dropping an Output without commit() removes its temp file.
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    sink: Sink,
}

#[derive(Debug)]
enum Sink {
    /// Renamed over `target` on commit; `temp` deletes the file when dropped first.
    Atomic {
        w: BufWriter<File>,
        temp: TempPath,
        target: PathBuf,
    },
    Direct(BufWriter<File>),
    Stdout(BufWriter<Stdout>),
}

/// Where a name leads: the last path in its chain of symbolic links and whether the
/// chain went through a `/proc/<pid>/fd/<n>` link (`/dev/stdout`, `/dev/fd/3`), whose
/// "target" is an open file, to be written through rather than replaced by name.
fn follow_links(path: &Path) -> Result<(PathBuf, bool), CliError> {
    let mut p = path.to_path_buf();
    let mut via_fd = false;
    for _ in 0..MAX_SYMLINKS {
        via_fd |= is_proc_fd(&p);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&p).map_err(|e| {
                    CliError(format!(
                        "{}: cannot follow link {}: {e}",
                        path.display(),
                        p.display()
                    ))
                })?;
                p = match p.parent() {
                    Some(dir) if t.is_relative() => dir.join(t),
                    _ => t,
                };
            }
            _ => return Ok((p, via_fd)),
        }
    }
    Err(CliError(format!(
        "{}: more than {MAX_SYMLINKS} symbolic links",
        path.display()
    )))
}

fn is_proc_fd(p: &Path) -> bool {
    let c: Vec<Component<'_>> = p.components().collect();
    matches!(
        c.as_slice(),
        [Component::RootDir, Component::Normal(proc), _, Component::Normal(fd), _]
            if *proc == "proc" && *fd == "fd"
    )
}

impl Output {
    pub fn create(path: &Path) -> Result<Output, CliError> {
        let sink = if path.as_os_str() == "-" {
            Sink::Stdout(BufWriter::with_capacity(BUF_BYTES, Stdout))
        } else {
            Self::open_sink(path)?
        };
        Ok(Output {
            path: path.to_path_buf(),
            sink,
        })
    }

    fn open_sink(path: &Path) -> Result<Sink, CliError> {
        let fail = |e: io::Error| CliError(format!("{}: cannot write: {e}", path.display()));
        let (target, via_fd) = follow_links(path)?;
        // The kernel's view (it follows /proc magic links that read_link cannot name).
        let existing = match fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(fail(e)),
        };
        if let Some(m) = &existing {
            let ft = m.file_type();
            if ft.is_dir() || ft.is_socket() || ft.is_block_device() {
                return Err(CliError(format!(
                    "{}: is {}; outputs go to regular files, character devices, FIFOs or - (stdout)",
                    path.display(),
                    kind_name(&ft)
                )));
            }
            if !ft.is_file() || via_fd {
                // No O_TRUNC: a device or FIFO has nothing to truncate, and an fd link's
                // file was opened (and truncated or not) by whoever holds the fd. Opening
                // a FIFO waits for a reader, as a shell redirection does.
                let f = fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(fail)?;
                return Ok(Sink::Direct(BufWriter::with_capacity(BUF_BYTES, f)));
            }
        }
        let name = target
            .file_name()
            .ok_or_else(|| CliError(format!("{}: not a file name", path.display())))?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&dir)
            .map_err(|e| CliError(format!("{}: cannot create: {e}", dir.display())))?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        // 0666 less the umask, as File::create would make it.
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(&dir)
            .map_err(fail)?;
        let (file, temp) = tmp.into_parts();
        if let Some(m) = &existing {
            // Replacing a file keeps its mode.
            file.set_permissions(Permissions::from_mode(m.permissions().mode() & 0o7777))
                .map_err(fail)?;
        }
        Ok(Sink::Atomic {
            w: BufWriter::with_capacity(BUF_BYTES, file),
            temp,
            target,
        })
    }

    /// The name the user gave (for error messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write error on this output as a one-line CLI error naming it.
    pub fn cannot_write(&self, e: io::Error) -> CliError {
        CliError(format!("{}: cannot write: {e}", self.path.display()))
    }

    /// Flush; for files written through a temp file also rename it over the target.
    /// No fsync: the rename already keeps a reader (or a killed run) from ever seeing
    /// half a file, a replay's output can be made again, and forcing a multi-GB capture
    /// to disk before exiting cost 0.45 s per 630 MB here (ext4 also flushes a file
    /// renamed over another at the rename: auto_da_alloc). Goldens, which are the
    /// record, are fsynced by `golden::GoldenWriter`.
    pub fn commit(self) -> Result<(), CliError> {
        let fail = |e: io::Error| CliError(format!("{}: cannot write: {e}", self.path.display()));
        match self.sink {
            Sink::Stdout(mut w) => w.flush().map_err(fail),
            Sink::Direct(mut w) => w.flush().map_err(fail),
            Sink::Atomic { w, temp, target } => {
                let file = w.into_inner().map_err(|e| fail(e.into_error()))?;
                drop(file);
                temp.persist(&target).map_err(|e| fail(e.error))?;
                Ok(())
            }
        }
    }
}

/// fsync the directory holding `path`, best effort: some file systems refuse fsync on a
/// directory (EINVAL), and the data itself is already on disk.
pub(crate) fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Atomic { w, .. } | Sink::Direct(w) => w.write(buf),
            Sink::Stdout(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Sink::Atomic { w, .. } | Sink::Direct(w) => w.write_all(buf),
            Sink::Stdout(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Atomic { w, .. } | Sink::Direct(w) => w.flush(),
            Sink::Stdout(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("skbsim-output-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn regular_file_appears_only_on_commit() {
        let d = scratch("commit");
        let p = d.join("out.pcap");
        fs::write(&p, b"old").unwrap();
        let mut o = Output::create(&p).unwrap();
        o.write_all(b"new bytes").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"old");
        o.commit().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new bytes");
        assert_eq!(entries(&d), ["out.pcap"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn drop_without_commit_keeps_the_old_file_and_no_temp() {
        let d = scratch("drop");
        let p = d.join("t.txt");
        fs::write(&p, b"old").unwrap();
        let mut o = Output::create(&p).unwrap();
        o.write_all(&vec![7u8; BUF_BYTES * 2]).unwrap();
        assert_eq!(entries(&d).len(), 2, "a temp file while writing");
        drop(o);
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(entries(&d), ["t.txt"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn replacing_keeps_the_mode() {
        let d = scratch("mode");
        let p = d.join("x");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, Permissions::from_mode(0o640)).unwrap();
        let mut o = Output::create(&p).unwrap();
        o.write_all(b"n").unwrap();
        o.commit().unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn proc_fd_paths_are_recognised() {
        assert!(is_proc_fd(Path::new("/proc/self/fd/1")));
        assert!(is_proc_fd(Path::new("/proc/123/fd/4")));
        assert!(!is_proc_fd(Path::new("/proc/self/status")));
        assert!(!is_proc_fd(Path::new("/tmp/proc/self/fd/1")));
    }
}
