//! A hand-built netlink core: one socket per protocol, a message builder with nested
//! attributes, a request/ack loop that turns `NLMSG_ERROR` into [`KernelError`] (with the
//! extended-ack text), and an attribute iterator. `rtnl` and `genl` build on it.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use crate::error::{Cause, Errno, KernelError};
use crate::sys::{cvt, cvt_len, ensure_private_netns, owned_fd, setsockopt_int};

pub(crate) const NLMSG_HDRLEN: usize = 16;
pub(crate) const NLMSG_NOOP: u16 = 1;
pub(crate) const NLMSG_ERROR: u16 = 2;
pub(crate) const NLMSG_DONE: u16 = 3;

pub(crate) const NLM_F_REQUEST: u16 = 0x1;
pub(crate) const NLM_F_ACK: u16 = 0x4;
pub(crate) const NLM_F_DUMP: u16 = 0x300;
pub(crate) const NLM_F_EXCL: u16 = 0x200;
pub(crate) const NLM_F_CREATE: u16 = 0x400;

const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;

const SOL_NETLINK: libc::c_int = 270;
const NETLINK_CAP_ACK: libc::c_int = 10;
const NETLINK_EXT_ACK: libc::c_int = 11;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

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

/// A netlink message under construction.
#[derive(Debug)]
pub(crate) struct MsgBuilder {
    buf: Vec<u8>,
}

impl MsgBuilder {
    pub(crate) fn new(ty: u16, flags: u16) -> Self {
        let mut buf = vec![0u8; NLMSG_HDRLEN];
        buf[4..6].copy_from_slice(&ty.to_ne_bytes());
        buf[6..8].copy_from_slice(&(flags | NLM_F_REQUEST).to_ne_bytes());
        MsgBuilder { buf }
    }

    /// A fixed family header (ifinfomsg, genlmsghdr), padded to 4.
    pub(crate) fn header(&mut self, bytes: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(bytes);
        self.buf.resize(align4(self.buf.len()), 0);
        self
    }

    pub(crate) fn attr(&mut self, ty: u16, value: &[u8]) -> &mut Self {
        let len = 4 + value.len();
        self.buf.extend_from_slice(&(len as u16).to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(value);
        self.buf.resize(align4(self.buf.len()), 0);
        self
    }

    pub(crate) fn attr_u32(&mut self, ty: u16, v: u32) -> &mut Self {
        self.attr(ty, &v.to_ne_bytes())
    }

    pub(crate) fn attr_str(&mut self, ty: u16, s: &str) -> &mut Self {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.attr(ty, &v)
    }

    pub(crate) fn nla(&mut self, nla: &Nla) -> &mut Self {
        match &nla.value {
            NlaValue::Bytes(b) => self.attr(nla.ty, b),
            NlaValue::Nested(inner) => {
                let start = self.begin_nested(nla.ty);
                for a in inner {
                    self.nla(a);
                }
                self.end_nested(start)
            }
        }
    }

    pub(crate) fn begin_nested(&mut self, ty: u16) -> usize {
        let start = self.buf.len();
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        self.buf
            .extend_from_slice(&(ty | NLA_F_NESTED).to_ne_bytes());
        start
    }

    pub(crate) fn end_nested(&mut self, start: usize) -> &mut Self {
        let len = (self.buf.len() - start) as u16;
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
        self
    }

    /// Everything after the 16-byte netlink header.
    pub(crate) fn body(&self) -> &[u8] {
        &self.buf[NLMSG_HDRLEN..]
    }

    fn finish(&mut self, seq: u32) -> &[u8] {
        let len = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        &self.buf
    }
}

/// One received netlink message: type, flags, and the payload after the 16-byte header.
#[derive(Debug, Clone)]
pub(crate) struct NlMsg {
    pub ty: u16,
    pub payload: Vec<u8>,
}

/// Iterate the attributes in `data` (type with flag bits masked off, payload).
pub(crate) fn attrs(data: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut rest = data;
    std::iter::from_fn(move || {
        if rest.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([rest[0], rest[1]]) as usize;
        let ty = u16::from_ne_bytes([rest[2], rest[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > rest.len() {
            return None;
        }
        let payload = &rest[4..len];
        rest = &rest[align4(len).min(rest.len())..];
        Some((ty, payload))
    })
}

pub(crate) fn attr_u32(payload: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(payload.get(..4)?.try_into().ok()?))
}

pub(crate) fn attr_u64(payload: &[u8]) -> Option<u64> {
    match payload.len() {
        4 => attr_u32(payload).map(u64::from),
        n if n >= 8 => Some(u64::from_ne_bytes(payload[..8].try_into().ok()?)),
        _ => None,
    }
}

pub(crate) fn attr_string(payload: &[u8]) -> String {
    let end = payload
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(payload.len());
    String::from_utf8_lossy(&payload[..end]).into_owned()
}

/// A bound netlink socket of one protocol, in the network namespace of the thread that
/// created it.
#[derive(Debug)]
pub(crate) struct NlSocket {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

impl NlSocket {
    pub(crate) fn open(protocol: libc::c_int, what: &str) -> Result<Self, KernelError> {
        let op = format!("open {what} socket");
        ensure_private_netns(&op)?;
        // SAFETY: socket(2) with constant arguments; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                protocol,
            )
        };
        let fd = owned_fd(fd).map_err(|e| KernelError::sys(&op, e))?;
        // SAFETY: an all-zero sockaddr_nl is valid; we set the family below.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `addr` is a sockaddr_nl whose size is passed with it.
        let ret = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        cvt(ret).map_err(|e| KernelError::sys(format!("{op}: bind"), e))?;
        // Best effort: error text in acks, and acks without the echoed request.
        let _ = setsockopt_int(fd.as_fd(), SOL_NETLINK, NETLINK_EXT_ACK, 1);
        let _ = setsockopt_int(fd.as_fd(), SOL_NETLINK, NETLINK_CAP_ACK, 1);
        Ok(NlSocket {
            fd,
            seq: 1,
            buf: vec![0u8; 1 << 16],
        })
    }

    /// Send `msg` (NLM_F_ACK is added) and collect the reply messages with our sequence
    /// number until the ack (`NLMSG_ERROR` with 0) or `NLMSG_DONE`.
    pub(crate) fn request(
        &mut self,
        op: &str,
        mut msg: MsgBuilder,
    ) -> Result<Vec<NlMsg>, KernelError> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let flags = u16::from_ne_bytes([msg.buf[6], msg.buf[7]]) | NLM_F_ACK;
        msg.buf[6..8].copy_from_slice(&flags.to_ne_bytes());
        let bytes = msg.finish(seq);
        // SAFETY: `bytes` is a valid buffer of the given length for the duration of send.
        let sent =
            unsafe { libc::send(self.fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
        cvt_len(sent).map_err(|e| KernelError::sys(format!("{op}: send"), e))?;

        let mut replies = Vec::new();
        loop {
            let n = self
                .recv()
                .map_err(|e| KernelError::sys(format!("{op}: recv"), e))?;
            let mut off = 0;
            while off + NLMSG_HDRLEN <= n {
                let b = &self.buf[off..n];
                let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
                let ty = u16::from_ne_bytes([b[4], b[5]]);
                let mflags = u16::from_ne_bytes([b[6], b[7]]);
                let mseq = u32::from_ne_bytes([b[8], b[9], b[10], b[11]]);
                if len < NLMSG_HDRLEN || len > b.len() {
                    return Err(KernelError::new(
                        op,
                        Cause::Protocol(format!("bad nlmsg_len {len}")),
                    ));
                }
                let payload = &b[NLMSG_HDRLEN..len];
                off += align4(len);
                if mseq != seq {
                    continue;
                }
                match ty {
                    NLMSG_NOOP => {}
                    NLMSG_ERROR => {
                        let code = payload
                            .get(..4)
                            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                            .ok_or_else(|| {
                                KernelError::new(op, Cause::Protocol("short NLMSG_ERROR".into()))
                            })?;
                        if code == 0 {
                            return Ok(replies);
                        }
                        let extack = if mflags & NLM_F_ACK_TLVS != 0 {
                            parse_extack(payload)
                        } else {
                            None
                        };
                        return Err(KernelError::new(
                            op,
                            Cause::Errno {
                                errno: Errno(-code),
                                extack,
                            },
                        ));
                    }
                    NLMSG_DONE => {
                        let code = payload
                            .get(..4)
                            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                            .unwrap_or(0);
                        if code < 0 {
                            return Err(KernelError::sys(op, Errno(-code)));
                        }
                        return Ok(replies);
                    }
                    _ => replies.push(NlMsg {
                        ty,
                        payload: payload.to_vec(),
                    }),
                }
            }
        }
    }

    fn recv(&mut self) -> Result<usize, Errno> {
        loop {
            // SAFETY: `self.buf` is a writable buffer of the given length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            match cvt_len(n) {
                Err(Errno::EINTR) => continue,
                other => return other,
            }
        }
    }
}

/// The extended-ack TLVs come after the errno and the (capped) original header.
fn parse_extack(payload: &[u8]) -> Option<String> {
    // struct nlmsgerr { int error; struct nlmsghdr msg; } then TLVs (NETLINK_CAP_ACK set, so
    // the original payload is not echoed).
    let tlvs = payload.get(4 + NLMSG_HDRLEN..)?;
    attrs(tlvs)
        .find(|(ty, _)| *ty == NLMSGERR_ATTR_MSG)
        .map(|(_, v)| attr_string(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_lays_out_nested_attributes() {
        let mut m = MsgBuilder::new(16, 0);
        m.header(&[0u8; 16]);
        m.nla(&Nla::nested(18, vec![Nla::string(1, "bridge")]));
        let bytes = m.finish(7).to_vec();
        assert_eq!(bytes.len(), 16 + 16 + 4 + 12);
        assert_eq!(u32::from_ne_bytes(bytes[0..4].try_into().unwrap()), 48);
        let outer: Vec<_> = attrs(&bytes[32..]).collect();
        assert_eq!(outer.len(), 1);
        assert_eq!(outer[0].0, 18);
        let inner: Vec<_> = attrs(outer[0].1).collect();
        assert_eq!(inner, vec![(1u16, &b"bridge\0"[..])]);
    }
}
