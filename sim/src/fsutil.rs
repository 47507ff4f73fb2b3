//! Opening the files a user names as inputs (scenarios, XDP programs, traces, pcaps).
//!
//! Inputs must be regular files: `/dev/zero` as a program would be read until memory
//! runs out, and a FIFO with no writer would block `open()` forever. The checks here are
//! the one definition of that rule; the command line wraps them (`skbsim::input`).
//!
//! Errors are `io::Error`s whose message does not name the file (the callers' error types
//! put the path in front), e.g. "XDP program is a character device, not a regular file"
//! or "scenario is 3 MiB, over the 1 MiB limit".

use std::fs::{File, FileType};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::OFlags;

/// No size limit (pcap inputs stream, so their size does not matter).
pub const UNBOUNDED: u64 = u64::MAX;

/// A file type in words, for errors ("a FIFO", "a character device").
pub fn kind_name(ft: &FileType) -> &'static str {
    if ft.is_file() {
        "a regular file"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// `n` bytes for a reader: binary units when they divide evenly ("64 MiB"), else bytes.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    for (size, unit) in UNITS {
        if n >= size && n.is_multiple_of(size) {
            return format!("{} {unit}", n / size);
        }
    }
    // Otherwise exact: "1.0 GiB, over the 1 GiB limit" would read as no excess at all.
    format!("{n} bytes")
}

fn refuse(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn not_regular(what: &str, ft: &FileType) -> io::Error {
    refuse(format!("{what} is {}, not a regular file", kind_name(ft)))
}

/// Open `path` for reading as `what` ("XDP program", "scenario", "pcap"): a regular file
/// (symbolic links followed) of at most `max_bytes` ([`UNBOUNDED`] for no limit). Never
/// blocks: the open uses `O_NONBLOCK` (a FIFO opens at once instead of waiting for a
/// writer) and the kind is checked on the opened descriptor, so a file swapped between a
/// check and the open cannot slip through; the flag is cleared again before returning.
pub fn open_regular(path: &Path, what: &str, max_bytes: u64) -> io::Result<File> {
    let cannot = |e: io::Error| io::Error::new(e.kind(), format!("cannot read {what}: {e}"));
    // A socket cannot be open()ed at all (ENXIO): name its kind rather than the errno.
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.file_type().is_socket() {
            return Err(not_regular(what, &meta.file_type()));
        }
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.file_type().is_file() {
        return Err(not_regular(what, &meta.file_type()));
    }
    if meta.len() > max_bytes {
        return Err(refuse(format!(
            "{what} is {}, over the {} limit",
            human_bytes(meta.len()),
            human_bytes(max_bytes)
        )));
    }
    let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| cannot(e.into()))?;
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK).map_err(|e| cannot(e.into()))?;
    Ok(file)
}

/// The bytes of the regular file `path` (see [`open_regular`]), at most `max_bytes` even
/// if the file grows while it is read.
pub fn read_bounded(path: &Path, what: &str, max_bytes: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path, what, max_bytes)?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {what}: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(refuse(format!(
            "{what} grew past the {} limit while being read",
            human_bytes(max_bytes)
        )));
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_bounded_to_string(path: &Path, what: &str, max_bytes: u64) -> io::Result<String> {
    String::from_utf8(read_bounded(path, what, max_bytes)?).map_err(|e| {
        refuse(format!(
            "{what} is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(human_bytes(1 << 20), "1 MiB");
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(3 * (1 << 20) + 1), "3145729 bytes");
        assert_eq!(human_bytes(1500), "1500 bytes");
        assert_eq!(human_bytes(10), "10 bytes");
    }

    #[test]
    fn dev_zero_is_refused_by_kind() {
        let e = read_bounded(Path::new("/dev/zero"), "XDP program", 1 << 20).unwrap_err();
        assert_eq!(
            e.to_string(),
            "XDP program is a character device, not a regular file"
        );
    }

    #[test]
    fn a_directory_is_refused() {
        let e = open_regular(Path::new("/"), "scenario", 10).unwrap_err();
        assert_eq!(e.to_string(), "scenario is a directory, not a regular file");
    }

    #[test]
    fn size_limit_names_the_limit_and_exact_size_passes() {
        let dir = std::env::temp_dir().join(format!("sim-fsutil-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f.toml");
        std::fs::write(&p, vec![b'a'; 2048]).unwrap();
        let e = read_bounded(&p, "scenario", 1024).unwrap_err();
        assert_eq!(e.to_string(), "scenario is 2 KiB, over the 1 KiB limit");
        assert_eq!(read_bounded(&p, "scenario", 2048).unwrap().len(), 2048);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_fifo_without_writer_is_refused_at_once() {
        let dir = std::env::temp_dir().join(format!("sim-fsutil-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("in.pcap");
        let _ = std::fs::remove_file(&p);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::Fifo,
            0o600.into(),
            0,
        )
        .unwrap();
        // On a thread with a deadline: a blocking open must fail the test, not hang it.
        let (tx, rx) = std::sync::mpsc::channel();
        let q = p.clone();
        std::thread::spawn(move || {
            let _ = tx.send(
                open_regular(&q, "pcap", UNBOUNDED)
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
            );
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("open blocked on a FIFO");
        assert_eq!(got.unwrap_err(), "pcap is a FIFO, not a regular file");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_file_says_cannot_read() {
        let e = open_regular(Path::new("/nonexistent/x"), "trace", 10).unwrap_err();
        assert!(e.to_string().starts_with("cannot read trace: "), "{e}");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
