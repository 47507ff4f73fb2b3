//! The reader's one buffer over any `Read`.

use std::io::{self, Read};

/// Initial size of the one read buffer (small enough that frames are still in L2 when
/// the simulator reads them); it grows only to hold a larger single record.
const INITIAL_BUF: usize = 128 * 1024;

/// A buffered byte source that hands out slices of its one buffer.
pub(super) struct Source<R> {
    inner: R,
    pub(super) buf: Vec<u8>,
    /// Next unread byte in `buf`.
    pub(super) pos: usize,
    /// End of valid bytes in `buf`.
    pub(super) end: usize,
    /// File offset of `buf[0]`.
    pub(super) base: u64,
    eof: bool,
}

impl<R: Read> Source<R> {
    pub(super) fn new(inner: R) -> Self {
        Source {
            inner,
            buf: vec![0; INITIAL_BUF],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    pub(super) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes `n` bytes available at `pos` if the input has them; returns how many are
    /// (less than `n` only at end of input).
    #[inline]
    pub(super) fn fill(&mut self, n: usize) -> io::Result<usize> {
        if self.end - self.pos >= n {
            Ok(n)
        } else {
            self.fill_slow(n)
        }
    }

    #[cold]
    #[inline(never)]
    fn fill_slow(&mut self, n: usize) -> io::Result<usize> {
        if self.pos + n > self.buf.len() {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
            if n > self.buf.len() {
                self.buf.resize(n, 0);
            }
        }
        while self.end - self.pos < n && !self.eof {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                // `min` keeps a misbehaving reader from pushing `end` past the buffer.
                Ok(k) => self.end = (self.end + k).min(self.buf.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok((self.end - self.pos).min(n))
    }

    /// The `n` bytes at `pos`; `fill(n)` must have returned `n`.
    #[inline]
    pub(super) fn peek(&self, n: usize) -> &[u8] {
        &self.buf[self.pos..self.pos + n]
    }

    #[inline]
    pub(super) fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    /// Consumes up to `n` bytes without keeping them; returns how many there were.
    pub(super) fn skip(&mut self, n: u64) -> io::Result<u64> {
        let mut left = n;
        loop {
            let avail = (self.end - self.pos) as u64;
            if avail >= left {
                self.pos += left as usize;
                return Ok(n);
            }
            left -= avail;
            self.base += self.end as u64;
            self.pos = 0;
            self.end = 0;
            if self.eof {
                return Ok(n - left);
            }
            let want = left.min(self.buf.len() as u64) as usize;
            self.fill_slow(want)?;
        }
    }
}
