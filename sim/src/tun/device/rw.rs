//! read() and write() on a tun file: tun_chr_read_iter -> tun_do_read (the queue's
//! tx_ring, then the shared tun_put_user model) and tun_chr_write_iter -> tun_get_user
//! (the shared write model), plus the automq flow table update at the end of a write
//! (drivers/net/tun.c: tun_get_user, tun_flow_update). docs/tun-device.md#read-write.

use super::{flow_hash, TunHost};
use crate::errno::Errno;
use crate::skb::ETH_HLEN;
use crate::tun::ioctl::iff_flags::{IFF_NO_PI, IFF_VNET_HDR};
use crate::tun::ioctl::FileId;
use crate::tun::read::ReadOutcome;
use crate::tun::write::{Fate, WriteOpts, WriteOutcome, XdpWhere};
use crate::tun::{DeviceKind, TUN_PI_LEN};

impl TunHost {
    /// read(fd, buf, buf_len): the bytes read() puts in the buffer (its return value is
    /// their count). EBADFD without a device; 0 bytes for an empty buffer, before the
    /// ring is looked at; EAGAIN on an empty ring (see the module docs for blocking
    /// files); a short buffer gets what fits and the full frame is consumed
    /// (tun_chr_read_iter returns min(tun_put_user's total, buf_len)).
    pub fn read(&mut self, f: FileId, buf_len: usize) -> Result<Vec<u8>, Errno> {
        self.read_outcome(f, buf_len).map(|(bytes, _)| bytes)
    }

    /// [`TunHost::read`] with what tun_put_user did (the PI flags written, the vnet
    /// header, the skb's metadata), for traces; None when nothing was dequeued (an empty
    /// buffer).
    pub fn read_outcome(
        &mut self,
        f: FileId,
        buf_len: usize,
    ) -> Result<(Vec<u8>, Option<ReadOutcome>), Errno> {
        let mut buf = vec![0u8; buf_len];
        let out = self.read_into(f, &mut buf)?;
        let n = out.result?;
        buf.truncate(n);
        Ok((buf, (buf_len > 0).then_some(out)))
    }

    /// [`TunHost::read_outcome`] into the caller's buffer, which keeps its bytes where
    /// tun_put_user writes nothing. Err: the read touched no frame (EBADFD, EAGAIN); a
    /// frame tun_put_user refused is the outcome's own error (the frame is consumed).
    pub fn read_into(&mut self, f: FileId, buf: &mut [u8]) -> Result<ReadOutcome, Errno> {
        // tun_chr_read_iter: tun_get(tfile), or -EBADFD.
        let ifindex = self.net.device_of(f).ok_or(Errno::EBADFD)?.ifindex;
        // tun_do_read: !iov_iter_count(to) returns 0 before the ring.
        if buf.is_empty() {
            return Ok(ReadOutcome::nothing(Ok(0)));
        }
        let Some(entry) = self.files.get_mut(&f).and_then(|q| q.ring.pop_front()) else {
            return Err(Errno::EAGAIN);
        };
        self.sync_config(f, ifindex);
        let dev = self
            .stack
            .dev_mut(ifindex)
            .expect("a file's device is in the stack");
        Ok(dev.read_entry(Some(entry), buf, &self.profile.tun_read))
    }

    /// write(fd, data): tun_get_user's answer, the byte count or the errno.
    pub fn write(&mut self, f: FileId, data: &[u8]) -> Result<usize, Errno> {
        self.write_outcome(f, data).result
    }

    /// [`TunHost::write`] with everything the write did (path, XDP runs, the frame's
    /// fate). The skbs it handed to the stack are in [`TunHost::take_received`].
    pub fn write_outcome(&mut self, f: FileId, data: &[u8]) -> WriteOutcome {
        // tun_chr_write_iter: tun_get(tfile), or -EBADFD.
        let Some(tif) = self.net.device_of(f) else {
            return WriteOutcome {
                result: Err(Errno::EBADFD),
                path: None,
                xdp: Vec::new(),
                fate: Fate::Rejected,
            };
        };
        let (ifindex, name, kind, features) =
            (tif.ifindex, tif.name.clone(), tif.kind, tif.features);
        // tun_get_user computes the rxhash only without a steering program, with more
        // than one queue, on a queue that is not detached.
        let hashed = !tif.steering_prog && tif.queues.len() > 1 && !self.net.file(f).detached;
        let vnet_hdr_sz = tif.vnet_hdr_sz.max(0) as usize;
        self.sync_config(f, ifindex);
        let opts = WriteOpts {
            nonblocking: self.files.get(&f).is_some_and(|q| q.nonblock),
            rx_queue: self.rx_queue(f),
            detached: self.net.file(f).detached,
        };
        let out = self
            .stack
            .tun_write(
                ifindex,
                data,
                opts,
                &self.profile.tun_write,
                &self.profile.tun_read,
            )
            .unwrap_or_else(|_| WriteOutcome {
                // Only a missing device or an XDP program fails the model; neither here.
                result: Err(Errno::EIO),
                path: None,
                xdp: Vec::new(),
                fate: Fate::Dropped("model error"),
            });
        self.after_send(ifindex, &name);
        // "if (rxhash) tun_flow_update(tun, rxhash, tfile)": every write that reached the
        // hand-off to the stack, whatever the core's xdpgeneric program then did with it
        // (tun_get_user learns after netif_receive_skb returns); a verdict of tun's own
        // (native, or its generic run) ends the write before.
        let handed_off = out.fate == Fate::Stack
            || out
                .xdp
                .last()
                .is_some_and(|x| x.place == XdpWhere::CoreGeneric);
        if hashed && out.result.is_ok() && handed_off {
            let mut start = 0;
            if features & IFF_NO_PI == 0 {
                start += TUN_PI_LEN;
            }
            if features & IFF_VNET_HDR != 0 {
                start += vnet_hdr_sz;
            }
            let hash = write_hash(kind, features & IFF_NO_PI == 0, data, start, self.hashrnd);
            let queue_index = self.queue_index(f).expect("hashed: attached") as u16;
            if let Some(st) = self.devs.get_mut(&ifindex) {
                st.flow_update(hash, queue_index);
            }
        }
        out
    }

    /// What a write or sendmsg leaves behind, taken off the shared model: the skbs the
    /// stack got (`received`, and the packet taps' view with keep_deliveries), GRO's own
    /// record, and the frames it transmitted placed on their files.
    fn after_send(&mut self, ifindex: u32, name: &[u8]) {
        for (_, skb) in self.stack.delivered_skbs.drain(..) {
            self.received.push((name.to_vec(), skb));
        }
        if self.keep_deliveries {
            self.deliveries.append(&mut self.stack.stack);
        }
        for d in self.stack.stack.drain(..) {
            self.stack.spare_frames.give(d.frame);
        }
        self.place_transmitted();
        // GRO's own record of what it completed (the stack copies are above).
        if let Some(n) = self.stack.napi_mut(ifindex) {
            n.after_gro.clear();
            let done: Vec<_> = n.rx.drain(..).collect();
            for d in done {
                n.recycle(d);
            }
        }
    }

    /// vhost_net's side of the file `f`: `send` runs the sendmsg calls of one worker run
    /// on the shared datapath with the file's [`WriteOpts`] (its queue index, whether
    /// TUNSETQUEUE detached it; MSG_DONTWAIT), then what they left behind is handled as
    /// after a write. None: the file has no device (tun_sendmsg: -EBADFD). The automq
    /// flow table does not learn from these packets (tun_xdp_one's tun_flow_update is not
    /// modelled; docs/vhost-tx.md#multiqueue).
    pub fn with_file<R>(
        &mut self,
        f: FileId,
        send: impl FnOnce(&mut crate::net::Net, WriteOpts) -> R,
    ) -> Option<R> {
        let tif = self.net.device_of(f)?;
        let (ifindex, name) = (tif.ifindex, tif.name.clone());
        self.sync_config(f, ifindex);
        let opts = WriteOpts {
            nonblocking: true,
            rx_queue: self.rx_queue(f),
            detached: self.net.file(f).detached,
        };
        let r = send(&mut self.stack, opts);
        self.after_send(ifindex, &name);
        Some(r)
    }
}

/// __skb_get_hash_symmetric of the skb tun_get_user built from the frame at `start` of
/// a write: a tap's after eth_type_trans (network header after the Ethernet header,
/// skb->protocol its type), a tun's with the PI's protocol or the version nibble.
fn write_hash(kind: DeviceKind, pi: bool, data: &[u8], start: usize, hashrnd: [u64; 2]) -> u32 {
    let frame = &data[start.min(data.len())..];
    let (nhoff, proto) = match kind {
        DeviceKind::Tap => {
            let ty = frame
                .get(12..14)
                .map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
            (ETH_HLEN, ty)
        }
        DeviceKind::Tun if pi => (0, u16::from_be_bytes([data[2], data[3]])),
        DeviceKind::Tun => (
            0,
            if frame.first().is_some_and(|b| b >> 4 == 6) {
                0x86dd
            } else {
                0x0800
            },
        ),
    };
    flow_hash::hash_symmetric(frame, nhoff, proto, hashrnd)
}
