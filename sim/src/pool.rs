//! Buffers handed back for reuse by the next packet.
//!
//! A long replay would otherwise allocate (and free, and regrow) a frame, an skb, a
//! guest descriptor and an XDP buffer per packet: malloc, free and realloc were a fifth
//! of a replay's time. A pool keeps at most `CAP` buffers, so what a run holds stays
//! bounded whatever the input; every user overwrites (or clears) a buffer it takes
//! before reading it, so reuse changes no result, only where the bytes live.

/// The least room a frame buffer is made with: any MTU-sized frame (1514 bytes, a tag, a
/// virtio_net_hdr) fits, so a recycled buffer does not grow again for the next frame
/// (reallocations of small spares were 4% of vhost-tx `replay -o`'s instructions).
pub const FRAME_BUF: usize = 2048;

/// At most `CAP` spare `T`s; [`Pool::take`] falls back to `T::default()`.
#[derive(Debug, Clone)]
pub struct Pool<T, const CAP: usize> {
    items: Vec<T>,
}

impl<T, const CAP: usize> Default for Pool<T, CAP> {
    fn default() -> Self {
        Pool { items: Vec::new() }
    }
}

impl<T: Default, const CAP: usize> Pool<T, CAP> {
    /// A spare, or a new one when none is left.
    pub fn take(&mut self) -> T {
        self.items.pop().unwrap_or_default()
    }

    /// Keep `item` for later, unless `CAP` are kept already.
    pub fn give(&mut self, item: T) {
        if self.items.len() < CAP {
            self.items.push(item);
        }
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl<const CAP: usize> Pool<Vec<u8>, CAP> {
    /// A spare byte buffer, emptied, with room for at least `len` bytes and never less
    /// than [`FRAME_BUF`].
    pub fn take_buf(&mut self, len: usize) -> Vec<u8> {
        let mut b = self.take();
        b.clear();
        b.reserve(len.max(FRAME_BUF));
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_cap_and_hands_them_back_last_in_first_out() {
        let mut p: Pool<Vec<u8>, 2> = Pool::default();
        p.give(vec![1]);
        p.give(vec![2]);
        p.give(vec![3]);
        assert_eq!(p.len(), 2);
        assert_eq!(p.take(), vec![2]);
        assert_eq!(p.take(), vec![1]);
        // Empty: a fresh one.
        assert_eq!(p.take(), Vec::<u8>::new());
    }
}
