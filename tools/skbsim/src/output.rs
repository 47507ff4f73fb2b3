//! Files the user names for output (`replay -o`, `--trace`, `bench --make-capture`):
//! written *to what is there*, as `cp`, `tcpdump -w` or a shell's `>` write them.
//!
//! An existing regular file is opened and written in place (same inode: its hard links,
//! owner, mode and ACLs stay, and a reader that has it open sees the new bytes); it is
//! truncated only when the first byte is written, so a run that fails before writing
//! anything (a bad flag, a later output that cannot be opened, a corrupt record in the
//! first megabyte) leaves it as it was. A name that does not exist is created (never its
//! directory: a missing directory is an error, as for `cp`), and removed again if the run
//! fails. Anything else that can take bytes (`/dev/null`, a terminal, a FIFO, `-` for
//! stdout, `/dev/stdout`) is written through. A symbolic link is followed; the link
//! stays. A directory, a socket or a block device is an error before anything is written.
//!
//! Not replaced by a temporary file and a rename (an earlier design): a rename gives the
//! name a new inode, so hard links keep the old bytes, the file becomes root's when root
//! runs skbsim, a directory the user cannot write refuses a file they can, and a killed
//! run leaves its temporary file behind.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use sim::fsutil::kind_name;

use crate::cli_error::CliError;
use crate::stdout::Stdout;

/// Outputs are written in chunks this large: few syscalls for multi-GB captures, little
/// memory.
const BUF_BYTES: usize = 256 << 10;

/// Symbolic links followed before giving up (the kernel's own limit, MAXSYMLINKS).
const MAX_SYMLINKS: usize = 40;

/// A file the user named for output ("-" = stdout), written through (see the module
/// doc). Dropping an Output without [`Output::commit`] discards what is still buffered
/// and removes the file if this Output created it.
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    /// `None` once committed.
    sink: Option<Sink>,
}

#[derive(Debug)]
enum Sink {
    /// A regular file; `created` removes it unless the run commits.
    File {
        w: BufWriter<Truncating>,
        created: Option<Created>,
    },
    Stdout(BufWriter<Stdout>),
}

/// A file truncated just before its first write (or at the end, if nothing was written).
#[derive(Debug)]
pub struct Truncating {
    file: File,
    pending: bool,
}

impl Truncating {
    fn settle(&mut self) -> io::Result<()> {
        if self.pending {
            self.file.set_len(0)?;
            self.pending = false;
        }
        Ok(())
    }
}

impl Write for Truncating {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.settle()?;
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// A file this run created: unlinked when dropped armed, if the name still leads to it.
#[derive(Debug)]
struct Created {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl Created {
    /// The run succeeded: the file stays.
    fn keep(mut self) {
        self.path = PathBuf::new();
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        if self.path.as_os_str().is_empty() {
            return;
        }
        let ours = fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.dev() == self.dev && m.ino() == self.ino);
        if ours {
            let _ = fs::remove_file(&self.path);
        }
    }
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

/// The directory a (link-resolved) file name is in.
fn parent_dir(target: &Path) -> PathBuf {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
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
            sink: Some(sink),
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
        let file_sink = |file: File, pending: bool, created: Option<Created>| Sink::File {
            w: BufWriter::with_capacity(BUF_BYTES, Truncating { file, pending }),
            created,
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
            // No O_TRUNC: a device or FIFO has nothing to truncate, an fd link's file was
            // opened (and truncated or not) by whoever holds the fd, and a regular file is
            // truncated at its first write. Opening a FIFO waits for a reader, as a shell
            // redirection does.
            let f = fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(fail)?;
            return Ok(file_sink(f, ft.is_file() && !via_fd, None));
        }
        if target.file_name().is_none() {
            return Err(CliError(format!("{}: not a file name", path.display())));
        }
        // O_EXCL: this run made the file, so removing it on a failure loses nothing.
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&target)
            .map_err(|e| CliError(format!("{}: cannot create: {e}", path.display())))?;
        let m = f.metadata().map_err(fail)?;
        let created = Created {
            path: target,
            dev: m.dev(),
            ino: m.ino(),
        };
        Ok(file_sink(f, false, Some(created)))
    }

    /// The name the user gave (for error messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write error on this output as a one-line CLI error naming it.
    pub fn cannot_write(&self, e: io::Error) -> CliError {
        CliError(format!("{}: cannot write: {e}", self.path.display()))
    }

    /// Flush (and truncate a file nothing was written to); from here on a failure no
    /// longer removes a created file. The error is the bare I/O error: callers name the
    /// output once.
    pub fn finish(mut self) -> io::Result<()> {
        match self.sink.take() {
            Some(Sink::File { w, created }) => {
                let mut t = w.into_inner().map_err(|e| e.into_error())?;
                t.settle()?;
                if let Some(c) = created {
                    c.keep();
                }
                Ok(())
            }
            Some(Sink::Stdout(mut w)) => w.flush(),
            None => Ok(()),
        }
    }

    /// [`Output::finish`] with the error naming the output. No fsync: a replay's output
    /// can be made again, and forcing a multi-GB capture to disk before exiting cost
    /// 0.45 s per 630 MB here. Goldens, which are the record, are fsynced by
    /// `golden::GoldenWriter`.
    pub fn commit(self) -> Result<(), CliError> {
        let path = self.path.clone();
        self.finish()
            .map_err(|e| CliError(format!("{}: cannot write: {e}", path.display())))
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        // Not committed: drop the buffered bytes instead of writing them (BufWriter's own
        // drop would flush, and so truncate a file the run has not written yet).
        match self.sink.take() {
            Some(Sink::File { w, created }) => {
                let _ = w.into_parts();
                drop(created);
            }
            Some(Sink::Stdout(w)) => {
                let _ = w.into_parts();
            }
            None => {}
        }
    }
}

/// What an output or input name is, to tell two names of one file apart.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Identity {
    /// An existing file: (st_dev, st_ino).
    File(u64, u64),
    /// A name to be created: its directory's (st_dev, st_ino) and the name in it.
    New(u64, u64, OsString),
}

/// The identity of `path` ("-": stdout's file); `None` for what several outputs may share
/// (a character device such as `/dev/null` or a terminal) or what cannot be told (a
/// missing directory, which opening reports).
fn identity(path: &Path) -> Option<Identity> {
    let m = if path.as_os_str() == "-" {
        let st = rustix::fs::fstat(io::stdout()).ok()?;
        let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
        if kind == rustix::fs::FileType::CharacterDevice {
            return None;
        }
        return Some(Identity::File(st.st_dev, st.st_ino));
    } else {
        fs::metadata(path)
    };
    match m {
        Ok(m) if m.file_type().is_char_device() => None,
        Ok(m) => Some(Identity::File(m.dev(), m.ino())),
        Err(_) => {
            let (target, _) = follow_links(path).ok()?;
            let name = target.file_name()?.to_os_string();
            let dir = fs::metadata(parent_dir(&target)).ok()?;
            Some(Identity::New(dir.dev(), dir.ino(), name))
        }
    }
}

/// Refuse, before anything is opened, an output that is one of `inputs` or the same file
/// as another output (through symbolic or hard links, or stdout redirected to it):
/// writing it would destroy the input, or leave one of two outputs. `outputs` are
/// (flag, name) pairs; several outputs may share a character device (`/dev/null`).
pub fn refuse_overlaps(inputs: &[&Path], outputs: &[(&str, &Path)]) -> Result<(), CliError> {
    let ids: Vec<Option<Identity>> = outputs.iter().map(|(_, p)| identity(p)).collect();
    for (i, ((flag, out), id)) in outputs.iter().zip(&ids).enumerate() {
        let Some(id) = id else { continue };
        let name = |p: &Path| {
            if p.as_os_str() == "-" {
                "- (stdout)".to_string()
            } else {
                p.display().to_string()
            }
        };
        for input in inputs {
            if identity(input).as_ref() == Some(id) {
                return Err(CliError(format!(
                    "{}: {flag} names the input {}, which writing would destroy; name another file",
                    name(out),
                    input.display()
                )));
            }
        }
        if let Some((other, _)) = outputs[..i]
            .iter()
            .zip(&ids)
            .find(|(_, o)| o.as_ref() == Some(id))
        {
            return Err(CliError(format!(
                "{}: {} and {flag} name the same file; give each its own",
                name(out),
                other.0
            )));
        }
    }
    Ok(())
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

impl Output {
    fn writer(&mut self) -> io::Result<&mut dyn Write> {
        match &mut self.sink {
            Some(Sink::File { w, .. }) => Ok(w),
            Some(Sink::Stdout(w)) => Ok(w),
            None => Err(io::Error::other("output already finished")),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer()?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer()?.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer()?.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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
    fn an_existing_file_is_written_in_place_from_its_first_write() {
        let d = scratch("inplace");
        let p = d.join("out.pcap");
        fs::write(&p, b"old bytes").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        fs::hard_link(&p, d.join("link")).unwrap();
        let ino = fs::metadata(&p).unwrap().ino();
        let mut o = Output::create(&p).unwrap();
        assert_eq!(
            fs::read(&p).unwrap(),
            b"old bytes",
            "untouched until written"
        );
        o.write_all(b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(fs::read(d.join("link")).unwrap(), b"new", "one inode");
        let m = fs::metadata(&p).unwrap();
        assert_eq!((m.ino(), m.permissions().mode() & 0o7777), (ino, 0o640));
        assert_eq!(entries(&d), ["link", "out.pcap"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn an_empty_commit_truncates_and_an_unwritten_drop_does_not() {
        let d = scratch("empty");
        let p = d.join("t.txt");
        fs::write(&p, b"old").unwrap();
        drop(Output::create(&p).unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"old");
        let mut o = Output::create(&p).unwrap();
        o.write_all(b"buffered, never flushed").unwrap();
        drop(o);
        assert_eq!(fs::read(&p).unwrap(), b"old");
        Output::create(&p).unwrap().commit().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_created_file_is_removed_unless_committed() {
        let d = scratch("created");
        let p = d.join("new.pcap");
        let mut o = Output::create(&p).unwrap();
        o.write_all(&vec![7u8; BUF_BYTES * 2]).unwrap();
        assert_eq!(entries(&d), ["new.pcap"], "written through, no temp file");
        drop(o);
        assert!(entries(&d).is_empty());
        let mut o = Output::create(&p).unwrap();
        o.write_all(b"kept").unwrap();
        o.commit().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"kept");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_missing_directory_is_an_error_and_not_created() {
        let d = scratch("nodir");
        let e = Output::create(&d.join("no/x.pcap")).unwrap_err();
        assert!(
            e.0.ends_with("no/x.pcap: cannot create: No such file or directory (os error 2)"),
            "{e}"
        );
        assert!(entries(&d).is_empty());
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
