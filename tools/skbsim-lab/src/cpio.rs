//! A newc ("070701") cpio writer: what the kernel's initramfs unpacker reads.
//!
//! Every entry has uid/gid 0, mtime 0 and nlink 1 (so the unpacker never treats two
//! entries as hard links), which keeps an archive byte-for-byte reproducible. Parent
//! directories are created on demand. Two archives written back to back form a valid
//! initramfs: the kernel unpacks them in order (a later file replaces an earlier one).

use std::collections::BTreeSet;
use std::io::{self, Write};

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

/// Writes a newc cpio archive to `W`.
#[derive(Debug)]
pub struct CpioWriter<W: Write> {
    out: W,
    written: u64,
    next_ino: u32,
    dirs: BTreeSet<String>,
}

/// `/a/b/` -> `a/b`: archive names are relative and have no trailing slash.
fn clean(path: &str) -> String {
    path.trim_matches('/').to_string()
}

impl<W: Write> CpioWriter<W> {
    pub fn new(out: W) -> CpioWriter<W> {
        CpioWriter {
            out,
            written: 0,
            next_ino: 1,
            dirs: BTreeSet::new(),
        }
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.out.write_all(&[0u8; 3][..n])?;
        self.written += n as u64;
        Ok(())
    }

    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) -> io::Result<()> {
        let ino = self.next_ino;
        self.next_ino += 1;
        let fields = [
            ino,
            mode,
            0, // uid
            0, // gid
            1, // nlink
            0, // mtime
            u32::try_from(data.len())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file over 4 GiB"))?,
            0, // devmajor
            0, // devminor
            rdev.0,
            rdev.1,
            u32::try_from(name.len() + 1)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name too long"))?,
            0, // check
        ];
        let mut header = String::with_capacity(110);
        header.push_str("070701");
        for f in fields {
            header.push_str(&format!("{f:08X}"));
        }
        self.out.write_all(header.as_bytes())?;
        self.out.write_all(name.as_bytes())?;
        self.out.write_all(&[0])?;
        self.written += header.len() as u64 + name.len() as u64 + 1;
        self.pad()?;
        self.out.write_all(data)?;
        self.written += data.len() as u64;
        self.pad()
    }

    fn parents(&mut self, name: &str) -> io::Result<()> {
        let mut prefix = String::new();
        let parts: Vec<&str> = name.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if !self.dirs.contains(&prefix) {
                let p = prefix.clone();
                self.entry(&p, S_IFDIR | 0o755, (0, 0), &[])?;
                self.dirs.insert(p);
            }
        }
        Ok(())
    }

    /// A directory (and its parents); a second call for the same path does nothing.
    pub fn dir(&mut self, path: &str) -> io::Result<()> {
        let name = clean(path);
        if name.is_empty() || self.dirs.contains(&name) {
            return Ok(());
        }
        self.parents(&name)?;
        self.entry(&name, S_IFDIR | 0o755, (0, 0), &[])?;
        self.dirs.insert(name);
        Ok(())
    }

    /// A regular file with permission bits `perm` (0o755, 0o644).
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) -> io::Result<()> {
        let name = clean(path);
        self.parents(&name)?;
        self.entry(&name, S_IFREG | (perm & 0o7777), (0, 0), data)
    }

    /// A symbolic link `path` -> `target`.
    pub fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        let name = clean(path);
        self.parents(&name)?;
        self.entry(&name, S_IFLNK | 0o777, (0, 0), target.as_bytes())
    }

    /// A character device node (`/dev/console` is 5:1; the kernel needs it before
    /// devtmpfs is mounted to give /init its stdio).
    pub fn char_dev(&mut self, path: &str, perm: u32, major: u32, minor: u32) -> io::Result<()> {
        let name = clean(path);
        self.parents(&name)?;
        self.entry(&name, S_IFCHR | (perm & 0o7777), (major, minor), &[])
    }

    /// Write the trailer, pad to 512 bytes, and return the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, (0, 0), &[])?;
        let n = (512 - (self.written % 512) as usize) % 512;
        self.out.write_all(&vec![0u8; n])?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, mode, filesize, data) of every entry, parsed back.
    fn parse(a: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut off = 0usize;
        let hex = |s: &[u8]| u32::from_str_radix(std::str::from_utf8(s).unwrap(), 16).unwrap();
        loop {
            assert_eq!(&a[off..off + 6], b"070701", "magic at {off}");
            let h = &a[off..off + 110];
            let mode = hex(&h[14..22]);
            let size = hex(&h[54..62]) as usize;
            let namesize = hex(&h[94..102]) as usize;
            let name = String::from_utf8(a[off + 110..off + 110 + namesize - 1].to_vec()).unwrap();
            off = (off + 110 + namesize + 3) & !3;
            let data = a[off..off + size].to_vec();
            off = (off + size + 3) & !3;
            if name == "TRAILER!!!" {
                break;
            }
            out.push((name, mode, data));
        }
        out
    }

    #[test]
    fn entries_round_trip_with_parents_and_padding() {
        let mut w = CpioWriter::new(Vec::new());
        w.dir("/dev").unwrap();
        w.char_dev("/dev/console", 0o600, 5, 1).unwrap();
        w.file("/usr/bin/x", 0o755, b"hello").unwrap();
        w.symlink("/bin/sh", "busybox").unwrap();
        w.dir("usr/bin/").unwrap();
        let a = w.finish().unwrap();
        assert_eq!(a.len() % 512, 0);
        let e = parse(&a);
        let names: Vec<&str> = e.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "dev",
                "dev/console",
                "usr",
                "usr/bin",
                "usr/bin/x",
                "bin",
                "bin/sh"
            ]
        );
        assert_eq!(e[1].1, S_IFCHR | 0o600);
        assert_eq!(
            e[4],
            ("usr/bin/x".into(), S_IFREG | 0o755, b"hello".to_vec())
        );
        assert_eq!(e[6].2, b"busybox");
    }
}
