//! The netlink core on the rust-netlink crates: a `netlink-sys` socket per protocol, messages
//! built and parsed by `netlink-packet-core` (and `-route` / `-generic` above it), and one
//! request/ack loop that turns `NLMSG_ERROR` into [`KernelError`] with the extended-ack text.
//! `rtnl` and `genl` build on it.
//!
//! [`Nla`] stays as this crate's own small attribute type: the tunnel arms hand the kernel
//! kind-specific `IFLA_INFO_DATA` (gretap keys, vxlan ports) as raw attributes, which
//! `netlink-packet-route` carries as `InfoData::Other`.

use std::fmt::Debug;

use netlink_packet_core::{
    parse_string, Emitable, ErrorMessage, NetlinkBuffer, NetlinkDeserializable, NetlinkHeader,
    NetlinkMessage, NetlinkPayload, NetlinkSerializable, NlaBuffer, NlasIterator, NLM_F_ACK,
    NLM_F_ACK_TLVS, NLM_F_REQUEST,
};
use netlink_sys::Socket;

use crate::error::{Cause, Errno, KernelError};
use crate::sys::ensure_private_netns;

pub(crate) use netlink_packet_core::{NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL};

/// include/uapi/linux/netlink.h `enum nlmsgerr_attrs`.
const NLMSGERR_ATTR_MSG: u16 = 1;
/// `sizeof(struct nlmsghdr)`: the capped request header echoed in an `NLMSG_ERROR`.
const NLMSG_HDRLEN: usize = 16;

/// One netlink attribute to put in a message: a type and a payload, or nested attributes.
///
/// Used by [`crate::Rtnl::create_link`] for kind-specific `IFLA_INFO_DATA`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nla {
    /// Attribute type (without `NLA_F_NESTED`; nesting is set for [`Nla::nested`]).
    pub ty: u16,
    /// Payload.
    pub value: NlaValue,
}

/// Payload of an [`Nla`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NlaValue {
    /// Raw bytes, copied as they are.
    Bytes(Vec<u8>),
    /// Nested attributes.
    Nested(Vec<Nla>),
}

impl Nla {
    /// Raw payload.
    pub fn bytes(ty: u16, value: &[u8]) -> Self {
        Nla {
            ty,
            value: NlaValue::Bytes(value.to_vec()),
        }
    }
    /// `u8` payload.
    pub fn u8(ty: u16, v: u8) -> Self {
        Self::bytes(ty, &[v])
    }
    /// `u16` in host order.
    pub fn u16(ty: u16, v: u16) -> Self {
        Self::bytes(ty, &v.to_ne_bytes())
    }
    /// `__be16` (ports).
    pub fn be16(ty: u16, v: u16) -> Self {
        Self::bytes(ty, &v.to_be_bytes())
    }
    /// `u32` in host order.
    pub fn u32(ty: u16, v: u32) -> Self {
        Self::bytes(ty, &v.to_ne_bytes())
    }
    /// `u64` in host order.
    pub fn u64(ty: u16, v: u64) -> Self {
        Self::bytes(ty, &v.to_ne_bytes())
    }
    /// NUL-terminated string.
    pub fn string(ty: u16, s: &str) -> Self {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        Nla {
            ty,
            value: NlaValue::Bytes(v),
        }
    }
    /// Nested attributes.
    pub fn nested(ty: u16, inner: Vec<Nla>) -> Self {
        Nla {
            ty,
            value: NlaValue::Nested(inner),
        }
    }
}

impl netlink_packet_core::Nla for Nla {
    fn value_len(&self) -> usize {
        match &self.value {
            NlaValue::Bytes(b) => b.len(),
            NlaValue::Nested(inner) => inner.as_slice().buffer_len(),
        }
    }
    fn kind(&self) -> u16 {
        self.ty
    }
    fn emit_value(&self, buffer: &mut [u8]) {
        match &self.value {
            NlaValue::Bytes(b) => buffer.copy_from_slice(b),
            NlaValue::Nested(inner) => inner.as_slice().emit(buffer),
        }
    }
    fn is_nested(&self) -> bool {
        matches!(self.value, NlaValue::Nested(_))
    }
}

/// The attributes laid out one after the other, each padded to 4 (`nla_put` order).
pub(crate) fn emit_nlas(nlas: &[Nla]) -> Vec<u8> {
    let mut buf = vec![0u8; nlas.buffer_len()];
    nlas.emit(&mut buf);
    buf
}

/// A bound netlink socket of one protocol, in the network namespace of the thread that
/// created it.
#[derive(Debug)]
pub(crate) struct NlSocket {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl NlSocket {
    /// `protocol` is one of `netlink_sys::constants::NETLINK_*`.
    pub(crate) fn open(protocol: isize, what: &str) -> Result<Self, KernelError> {
        let op = format!("open {what} socket");
        ensure_private_netns(&op)?;
        let mut sock =
            Socket::new(protocol).map_err(|e| KernelError::sys(&op, crate::error::from_io(&e)))?;
        sock.bind_auto()
            .map_err(|e| KernelError::sys(format!("{op}: bind"), crate::error::from_io(&e)))?;
        // Best effort: error text in acks, and acks without the echoed request.
        let _ = sock.set_ext_ack(true);
        let _ = sock.set_cap_ack(true);
        Ok(NlSocket {
            sock,
            seq: 1,
            buf: vec![0u8; 1 << 16],
        })
    }

    /// Send `payload` with `flags` (`NLM_F_REQUEST | NLM_F_ACK` added) and collect the
    /// reply messages with our sequence number until the ack (`NLMSG_ERROR` with 0) or
    /// `NLMSG_DONE`.
    pub(crate) fn request<T>(
        &mut self,
        op: &str,
        payload: T,
        flags: u16,
    ) -> Result<Vec<T>, KernelError>
    where
        T: NetlinkSerializable + NetlinkDeserializable + Debug,
    {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut header = NetlinkHeader::default();
        header.flags = flags | NLM_F_REQUEST | NLM_F_ACK;
        header.sequence_number = seq;
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(payload));
        msg.finalize();
        let mut bytes = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut bytes);
        self.sock
            .send(&bytes, 0)
            .map_err(|e| KernelError::sys(format!("{op}: send"), crate::error::from_io(&e)))?;

        let mut replies = Vec::new();
        loop {
            let n = self
                .recv()
                .map_err(|e| KernelError::sys(format!("{op}: recv"), e))?;
            let mut off = 0;
            while off < n {
                let len = NetlinkBuffer::new_checked(&self.buf[off..n])
                    .map_err(|e| protocol(op, format!("bad netlink header: {e}")))?
                    .length() as usize;
                let raw = &self.buf[off..off + len];
                off += len.next_multiple_of(4);
                let msg = NetlinkMessage::<T>::deserialize(raw)
                    .map_err(|e| protocol(op, format!("cannot parse the reply: {e}")))?;
                if msg.header.sequence_number != seq {
                    continue;
                }
                match msg.payload {
                    NetlinkPayload::Noop => {}
                    NetlinkPayload::Error(err) => {
                        return match err.code {
                            None => Ok(replies),
                            Some(code) => Err(KernelError::new(
                                op,
                                Cause::Errno {
                                    errno: Errno::from_raw(-code.get()),
                                    extack: extack(msg.header.flags, &err),
                                },
                            )),
                        }
                    }
                    NetlinkPayload::Done(done) if done.code < 0 => {
                        return Err(KernelError::sys(op, Errno::from_raw(-done.code)))
                    }
                    NetlinkPayload::Done(_) => return Ok(replies),
                    NetlinkPayload::InnerMessage(inner) => replies.push(inner),
                    other => {
                        return Err(protocol(op, format!("unexpected message {other:?}")));
                    }
                }
            }
        }
    }

    fn recv(&mut self) -> Result<usize, Errno> {
        loop {
            let mut buf = &mut self.buf[..];
            match self.sock.recv(&mut buf, 0) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(crate::error::from_io(&e)),
                Ok(n) => return Ok(n.min(self.buf.len())),
            }
        }
    }
}

fn protocol(op: &str, what: String) -> KernelError {
    KernelError::new(op, Cause::Protocol(what))
}

/// The extended-ack message (`NLMSGERR_ATTR_MSG`): with `NLM_F_ACK_TLVS` set, the TLVs
/// follow the errno and the echoed request header (capped: `NETLINK_CAP_ACK` is set, so the
/// request's payload is not echoed). net/netlink/af_netlink.c: netlink_ack.
fn extack(flags: u16, err: &ErrorMessage) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    let tlvs = err.header.get(NLMSG_HDRLEN..)?;
    NlasIterator::new(tlvs)
        .filter_map(Result::ok)
        .find(|nla: &NlaBuffer<&[u8]>| nla.kind() == NLMSGERR_ATTR_MSG)
        .and_then(|nla| parse_string(nla.value()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// include/uapi/linux/netlink.h: `struct nlattr { __u16 nla_len; __u16 nla_type; }`,
    /// payload padded to 4, `NLA_F_NESTED` (bit 15) on a nested attribute's type; laid out
    /// here by hand.
    #[test]
    fn nested_attributes_lay_out_as_nla_put_does() {
        let bytes = emit_nlas(&[
            Nla::nested(18, vec![Nla::string(1, "bridge")]),
            Nla::u8(23, 0),
        ]);
        let mut want = Vec::new();
        want.extend_from_slice(&16u16.to_ne_bytes());
        want.extend_from_slice(&(18u16 | 0x8000).to_ne_bytes());
        want.extend_from_slice(&11u16.to_ne_bytes());
        want.extend_from_slice(&1u16.to_ne_bytes());
        want.extend_from_slice(b"bridge\0\0");
        want.extend_from_slice(&5u16.to_ne_bytes());
        want.extend_from_slice(&23u16.to_ne_bytes());
        want.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(bytes, want);
    }

    /// An `NLMSG_ERROR` payload after the errno: the echoed 16-byte header, then
    /// `NLMSGERR_ATTR_MSG` (type 1) with the text, as netlink_ack() writes it.
    #[test]
    fn extack_text_is_read_after_the_echoed_header() {
        let mut header = vec![0u8; NLMSG_HDRLEN];
        header.extend_from_slice(&emit_nlas(&[
            Nla::u32(2, 40),
            Nla::string(NLMSGERR_ATTR_MSG, "Unknown device type"),
        ]));
        let mut err = ErrorMessage::default();
        err.code = std::num::NonZeroI32::new(-libc::EOPNOTSUPP);
        err.header = header;
        assert_eq!(
            extack(NLM_F_ACK_TLVS, &err).as_deref(),
            Some("Unknown device type")
        );
        assert_eq!(extack(0, &err), None);
    }
}
