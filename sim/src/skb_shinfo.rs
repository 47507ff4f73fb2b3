//! The paged part of an skb, as skb_shared_info holds it (include/linux/skbuff.h):
//! `frags` (page pieces: a page, an offset into it, a length; skb_frag_t) and
//! `frag_list` (chained skbs). Every reader of the packet's bytes walks the pieces in
//! order: the linear part, the frags, then each frag_list skb the same way
//! (skb_copy_bits, skb_copy_datagram_iter, skb_checksum all do).

use std::borrow::Cow;
use std::ops::ControlFlow;

use super::SkBuff;

/// One skb_frag_t: `len` bytes at `off` in `page`. The model's page is a byte buffer
/// owned by the frag; GRO moves a merged skb's whole head buffer in and points the frag
/// at the payload, as skb_gro_receive does with the head page (no copy).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkbFrag {
    page: Vec<u8>,
    off: usize,
    len: usize,
}

impl SkbFrag {
    /// skb_frag_fill_page_desc(frag, page, off, len), clamped to the page.
    pub fn new(page: Vec<u8>, off: usize, len: usize) -> SkbFrag {
        let off = off.min(page.len());
        let len = len.min(page.len() - off);
        SkbFrag { page, off, len }
    }

    /// skb_frag_address .. + skb_frag_size.
    pub fn bytes(&self) -> &[u8] {
        &self.page[self.off..self.off + self.len]
    }

    /// skb_frag_off.
    pub fn off(&self) -> usize {
        self.off
    }

    /// skb_frag_size.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The page, for reuse (a replay loop recycles its buffers).
    pub fn into_page(self) -> Vec<u8> {
        self.page
    }
}

impl SkBuff {
    /// skb_shinfo(skb)->frags[0..nr_frags].
    pub fn frags(&self) -> &[SkbFrag] {
        &self.frags
    }

    /// skb_shinfo(skb)->nr_frags.
    pub fn nr_frags(&self) -> usize {
        self.frags.len()
    }

    /// skb_shinfo(skb)->frag_list, in order (skb_walk_frags).
    pub fn frag_list(&self) -> &[SkBuff] {
        &self.frag_list
    }

    /// The last skb on frag_list, if any (NAPI_GRO_CB(p)->last when it is not p).
    pub fn frag_list_last_mut(&mut self) -> Option<&mut SkBuff> {
        self.frag_list.last_mut()
    }

    /// Attach `frag` after the existing frags: len and data_len grow by its size
    /// (skb_add_rx_frag without the truesize).
    pub fn push_frag(&mut self, frag: SkbFrag) {
        self.data_len += frag.len;
        self.frags.push(frag);
    }

    /// Chain `skb` at the end of frag_list: len and data_len grow by its len.
    pub fn push_frag_list(&mut self, skb: SkBuff) {
        self.data_len += skb.len();
        self.frag_list.push(skb);
    }

    /// Account `n` more paged bytes that were attached to a frag_list member (its own
    /// len grew; skb_gro_receive updates p->len as well as lp->len).
    pub fn add_paged_len(&mut self, n: usize) {
        self.data_len += n;
    }

    /// Take the frags out (for moving them to another skb); len shrinks accordingly.
    pub fn take_frags(&mut self) -> Vec<SkbFrag> {
        let frags = std::mem::take(&mut self.frags);
        self.data_len -= frags.iter().map(SkbFrag::len).sum::<usize>();
        frags
    }

    /// Call `f` on each piece of the packet in order, stopping at the first Break.
    fn try_for_each_piece<B, F: FnMut(&[u8]) -> ControlFlow<B>>(
        &self,
        f: &mut F,
    ) -> ControlFlow<B> {
        f(self.linear())?;
        for frag in &self.frags {
            f(frag.bytes())?;
        }
        for skb in &self.frag_list {
            skb.try_for_each_piece(f)?;
        }
        ControlFlow::Continue(())
    }

    /// Call `f` on each piece of the packet in order: the linear part (possibly empty),
    /// each frag, then each frag_list skb's pieces.
    pub fn for_each_piece(&self, mut f: impl FnMut(&[u8])) {
        let _ = self.try_for_each_piece(&mut |p| -> ControlFlow<()> {
            f(p);
            ControlFlow::Continue(())
        });
    }

    /// Append the whole packet to `out`.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.len());
        self.for_each_piece(|p| out.extend_from_slice(p));
    }

    /// The whole packet as one contiguous vector (test and trace use; not the hot path).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        self.append_to(&mut v);
        v
    }

    /// The whole packet: the linear bytes themselves when there is no paged part (no
    /// copy), else [`SkBuff::to_vec`].
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        if self.data_len == 0 {
            Cow::Borrowed(self.linear())
        } else {
            Cow::Owned(self.to_vec())
        }
    }

    /// Byte `i` of the packet (linear or paged), as skb_copy_bits would read it.
    ///
    /// Inline for the linear case every header read takes (eth_type_trans reads three
    /// bytes per frame); the walk over the pieces stays out of line. Without the hint
    /// the inlining depended on which codegen unit the caller landed in: moving the
    /// VLAN helpers to their own file cost tap-write 6% more instructions.
    #[inline]
    pub fn byte(&self, i: usize) -> Option<u8> {
        match self.linear().get(i) {
            Some(b) => Some(*b),
            None => self.paged_byte(i),
        }
    }

    /// [`SkBuff::byte`] past the linear part.
    fn paged_byte(&self, i: usize) -> Option<u8> {
        let mut pos = 0;
        match self.try_for_each_piece(&mut |p| {
            if i < pos + p.len() {
                return ControlFlow::Break(p[i - pos]);
            }
            pos += p.len();
            ControlFlow::Continue(())
        }) {
            ControlFlow::Break(b) => Some(b),
            ControlFlow::Continue(()) => None,
        }
    }

    /// skb_copy_datagram_iter(skb, offset, to, len) into `out`: copies packet bytes
    /// `offset..offset+out.len()` across the pieces and counts them. Returns how many
    /// bytes were available and copied.
    pub fn copy_bits_to_user(&mut self, offset: usize, out: &mut [u8]) -> usize {
        let len = self.len();
        if offset >= len {
            return 0;
        }
        let n = out.len().min(len - offset);
        let (mut pos, mut done) = (0usize, 0usize);
        let _ = self.try_for_each_piece(&mut |p| {
            let end = pos + p.len();
            if end > offset + done {
                let from = offset + done - pos;
                let m = (p.len() - from).min(n - done);
                out[done..done + m].copy_from_slice(&p[from..from + m]);
                done += m;
            }
            pos = end;
            if done == n {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        self.ops.bytes_copied_to_user += n as u64;
        n
    }

    /// Give every buffer this skb owns (head, frag pages, frag_list skbs') to `pool`:
    /// a replay loop recycles them instead of allocating per frame.
    pub fn release_buffers(mut self, pool: &mut Vec<Vec<u8>>) {
        self.take_buffers(pool);
    }

    /// [`SkBuff::release_buffers`] keeping the skb itself (its head, frags and frag_list
    /// taken, the rest left as it was) for a caller that reuses its allocation.
    pub fn take_buffers(&mut self, pool: &mut Vec<Vec<u8>>) {
        pool.push(std::mem::take(&mut self.buf));
        pool.extend(self.frags.drain(..).map(SkbFrag::into_page));
        for skb in self.frag_list.drain(..) {
            skb.release_buffers(pool);
        }
    }
}

impl SkbFrag {
    /// skb_frag_off_add(frag, n) + skb_frag_size_sub(frag, n): drop `n` bytes from the
    /// front (clamped to the frag).
    pub fn trim_front(&mut self, n: usize) {
        let n = n.min(self.len);
        self.off += n;
        self.len -= n;
    }
}

impl SkBuff {
    /// The head buffer leaves the skb as a frag starting `offset` bytes after data
    /// (skb_gro_receive with skb->head_frag: NAPI_GRO_FREE_STOLEN_HEAD). The skb keeps
    /// no linear bytes.
    pub fn steal_head(&mut self, offset: usize) -> SkbFrag {
        let offset = offset.min(self.headlen());
        let (off, len) = (self.data + offset, self.headlen() - offset);
        let frag = SkbFrag::new(std::mem::take(&mut self.buf), off, len);
        self.data = 0;
        self.tail = 0;
        frag
    }

    /// Remove `n` bytes from the front: past the linear part they come off the first
    /// frag (skb_gro_receive's merge path: skb_frag_off_add on frags[0], then
    /// __skb_pull of the linear part).
    pub fn pull_across(&mut self, n: usize) {
        let lin = n.min(self.headlen());
        self.data += lin;
        let mut eat = n - lin;
        for f in &mut self.frags {
            if eat == 0 {
                break;
            }
            let m = eat.min(f.len);
            f.trim_front(m);
            self.data_len -= m;
            eat -= m;
        }
    }
}
