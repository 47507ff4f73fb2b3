//! An output written on its own thread: the replay thread reads and models while this
//! one makes the write() calls, which on a long replay cost as much as the model itself
//! (the page cache copy). Chunks are recycled through a bounded channel, so at most
//! [`CHUNKS`] of [`CHUNK`] bytes are in flight: memory stays bounded however long the run.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::Finish;

/// Bytes handed to the writer thread at a time.
pub const CHUNK: usize = 1 << 20;
/// Chunks queued before the replay thread waits for the writer.
pub const CHUNKS: usize = 4;

/// A [`Finish`] writer whose writes happen on a background thread. Dropped unfinished
/// (a failed run), it tells the thread to write nothing more and waits for it, so the
/// inner writer is dropped (an [`crate::output::Output`] removes a file it created)
/// before the process can exit.
pub struct Background {
    buf: Vec<u8>,
    tx: Option<SyncSender<Vec<u8>>>,
    back: Receiver<Vec<u8>>,
    worker: Option<JoinHandle<io::Result<Box<dyn Finish + Send>>>>,
    abandoned: Arc<AtomicBool>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("buffered", &self.buf.len())
            .finish_non_exhaustive()
    }
}

impl Background {
    pub fn new(mut inner: Box<dyn Finish + Send>) -> Background {
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(CHUNKS);
        let (back_tx, back) = mpsc::sync_channel::<Vec<u8>>(CHUNKS + 1);
        let abandoned = Arc::new(AtomicBool::new(false));
        let stop = abandoned.clone();
        let worker = std::thread::spawn(move || {
            for mut chunk in rx {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                inner.write_all(&chunk)?;
                chunk.clear();
                // The replay thread may have finished: a chunk nobody takes back is freed.
                let _ = back_tx.try_send(chunk);
            }
            Ok(inner)
        });
        Background {
            buf: Vec::with_capacity(CHUNK),
            tx: Some(tx),
            back,
            worker: Some(worker),
            abandoned,
        }
    }

    /// The writer thread's error, once it has stopped.
    fn failed(&mut self) -> io::Error {
        self.tx = None;
        match self.worker.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => e,
            Some(Err(_)) => io::Error::other("the output thread panicked"),
            _ => io::Error::other("the output thread stopped"),
        }
    }

    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = self
            .back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.buf, next);
        let sent = match &self.tx {
            Some(tx) => tx.send(full).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            Err(self.failed())
        }
    }
}

impl Write for Background {
    #[inline]
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.write_all(data)?;
        Ok(data.len())
    }

    #[inline]
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

impl Finish for Background {
    fn finish(mut self: Box<Self>) -> io::Result<()> {
        self.send()?;
        self.tx = None;
        let inner = match self.worker.take().map(JoinHandle::join) {
            Some(Ok(r)) => r?,
            Some(Err(_)) => return Err(io::Error::other("the output thread panicked")),
            None => return Err(io::Error::other("the output thread stopped")),
        };
        inner.finish()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.abandoned.store(true, Ordering::Relaxed);
        self.tx = None;
        if let Some(w) = self.worker.take() {
            // The inner writer is dropped on the worker or here, either way before this
            // returns. At most the one write in progress is waited for.
            drop(w.join());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Collects what the thread wrote; fails after `limit` bytes.
    struct Collect(Arc<Mutex<Vec<u8>>>, usize);
    impl Write for Collect {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let mut v = self.0.lock().map_err(|_| io::Error::other("poisoned"))?;
            if v.len() + b.len() > self.1 {
                return Err(io::Error::other("disk full"));
            }
            v.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Finish for Collect {
        fn finish(self: Box<Self>) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_byte_arrives_in_order() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let mut w = Box::new(Background::new(Box::new(Collect(got.clone(), usize::MAX))));
        let mut want = Vec::new();
        for i in 0..300_000u32 {
            let b = i.to_le_bytes();
            w.write_all(&b).unwrap();
            want.extend_from_slice(&b);
        }
        w.finish().unwrap();
        assert_eq!(*got.lock().unwrap(), want);
    }

    #[test]
    fn a_write_error_reaches_the_writer() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let mut w = Box::new(Background::new(Box::new(Collect(got, 3 * CHUNK / 2))));
        let chunk = vec![7u8; 4096];
        let mut failed = None;
        for _ in 0..(16 * CHUNK / 4096) {
            if let Err(e) = w.write_all(&chunk) {
                failed = Some(e);
                break;
            }
        }
        let e = failed.unwrap_or_else(|| w.finish().unwrap_err());
        assert_eq!(e.to_string(), "disk full");
    }

    /// Sets its flag when dropped.
    struct Dropped(Arc<AtomicBool>);
    impl Write for Dropped {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Finish for Dropped {
        fn finish(self: Box<Self>) -> io::Result<()> {
            Ok(())
        }
    }
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn dropping_unfinished_drops_the_inner_writer_before_returning() {
        let dropped = Arc::new(AtomicBool::new(false));
        let mut w = Background::new(Box::new(Dropped(dropped.clone())));
        w.write_all(&vec![1u8; 3 * CHUNK]).unwrap();
        drop(w);
        assert!(dropped.load(Ordering::SeqCst));
    }
}
