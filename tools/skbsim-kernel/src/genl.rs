//! Generic netlink, just enough for the `netdev` family's NAPI objects (`napi-get`,
//! `napi-set`), which carry a per-NAPI `gro-flush-timeout` on kernels >= 6.13.
//!
//! Finding on 6.18 (see the `napi_listing` test): tun/tap registers its NAPI with
//! `netif_napi_add_tx()`, which marks it `NAPI_STATE_NO_BUSY_POLL`, so it never gets a NAPI
//! id; `napi-get` lists nothing for a tap and `napi-set` cannot address it. The per-device
//! sysfs attribute is the only route for taps (see [`crate::sysfs`]).

use netlink_packet_core::{DecodeError, Emitable, NlaBuffer, NlasIterator, ParseableParametrized};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlHeader, GenlMessage};

use crate::error::{Cause, KernelError};
use crate::netlink::{NlSocket, Nla, NlaValue, NLM_F_DUMP};

/// include/uapi/linux/netdev.h (Documentation/netlink/specs/netdev.yaml).
const NETDEV_CMD_NAPI_GET: u8 = 11;
const NETDEV_CMD_NAPI_SET: u8 = 14;
const NETDEV_A_NAPI_IFINDEX: u16 = 1;
const NETDEV_A_NAPI_ID: u16 = 2;
const NETDEV_A_NAPI_IRQ: u16 = 3;
const NETDEV_A_NAPI_PID: u16 = 4;
const NETDEV_A_NAPI_DEFER_HARD_IRQS: u16 = 5;
const NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT: u16 = 6;

/// One message of the `netdev` family: a command and its attributes, kept raw (the family
/// has no crate of its own; the few attributes used are read below).
#[derive(Debug, Clone)]
struct Netdev {
    cmd: u8,
    attrs: Vec<Nla>,
}

impl GenlFamily for Netdev {
    fn family_name() -> &'static str {
        "netdev"
    }
    fn command(&self) -> u8 {
        self.cmd
    }
    fn version(&self) -> u8 {
        1
    }
}

impl Emitable for Netdev {
    fn buffer_len(&self) -> usize {
        self.attrs.as_slice().buffer_len()
    }
    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer)
    }
}

impl ParseableParametrized<[u8], GenlHeader> for Netdev {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        let attrs = NlasIterator::new(buf)
            .map(|nla| nla.map(|n: NlaBuffer<&[u8]>| Nla::bytes(n.kind(), n.value())))
            .collect::<Result<_, _>>()?;
        Ok(Netdev {
            cmd: header.cmd,
            attrs,
        })
    }
}

/// A `u32` attribute's value; a `u64` one read whole.
fn value_u64(v: &[u8]) -> Option<u64> {
    match v.len() {
        4 => Some(u32::from_ne_bytes(v.try_into().ok()?).into()),
        n if n >= 8 => Some(u64::from_ne_bytes(v[..8].try_into().ok()?)),
        _ => None,
    }
}

/// One NAPI instance as the `netdev` family reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NapiInfo {
    /// NAPI id.
    pub id: u32,
    /// Device.
    pub ifindex: u32,
    /// IRQ, if any.
    pub irq: Option<u32>,
    /// Thread pid, for threaded NAPI.
    pub pid: Option<u32>,
    /// `defer-hard-irqs`.
    pub defer_hard_irqs: Option<u32>,
    /// `gro-flush-timeout` in ns.
    pub gro_flush_timeout: Option<u64>,
}

/// A generic netlink socket with the `netdev` family resolved.
#[derive(Debug)]
pub struct NetdevGenl {
    sock: NlSocket,
    family: u16,
}

impl NetdevGenl {
    /// Open a `NETLINK_GENERIC` socket and resolve the `netdev` family.
    pub fn new() -> Result<Self, KernelError> {
        let mut sock = NlSocket::open(netlink_sys::constants::NETLINK_GENERIC, "NETLINK_GENERIC")?;
        let op = "CTRL_CMD_GETFAMILY netdev";
        let req = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName(Netdev::family_name().into())],
        });
        let replies = sock.request(op, req, 0)?;
        let family = replies
            .iter()
            .flat_map(|r| &r.payload.nlas)
            .find_map(|a| match a {
                GenlCtrlAttrs::FamilyId(id) => Some(*id),
                _ => None,
            })
            .ok_or_else(|| KernelError::new(op, Cause::NotFound("genl family netdev".into())))?;
        Ok(NetdevGenl { sock, family })
    }

    fn request(
        &mut self,
        op: &str,
        cmd: u8,
        attrs: Vec<Nla>,
        flags: u16,
    ) -> Result<Vec<Netdev>, KernelError> {
        let mut req = GenlMessage::from_payload(Netdev { cmd, attrs });
        req.set_resolved_family_id(self.family);
        let replies = self.sock.request(op, req, flags)?;
        Ok(replies.into_iter().map(|r| r.payload).collect())
    }

    /// `napi-get` dump, optionally for one ifindex.
    pub fn napis(&mut self, ifindex: Option<u32>) -> Result<Vec<NapiInfo>, KernelError> {
        let attrs = ifindex
            .map(|i| Nla::u32(NETDEV_A_NAPI_IFINDEX, i))
            .into_iter()
            .collect();
        let op = match ifindex {
            Some(i) => format!("netdev napi-get ifindex {i}"),
            None => "netdev napi-get".to_string(),
        };
        let replies = self.request(&op, NETDEV_CMD_NAPI_GET, attrs, NLM_F_DUMP)?;
        Ok(replies
            .iter()
            .map(|r| {
                let mut n = NapiInfo::default();
                for a in &r.attrs {
                    let NlaValue::Bytes(bytes) = &a.value else {
                        continue;
                    };
                    let v = value_u64(bytes);
                    let v32 = v.map(|v| v as u32);
                    match a.ty {
                        NETDEV_A_NAPI_ID => n.id = v32.unwrap_or(0),
                        NETDEV_A_NAPI_IFINDEX => n.ifindex = v32.unwrap_or(0),
                        NETDEV_A_NAPI_IRQ => n.irq = v32,
                        NETDEV_A_NAPI_PID => n.pid = v32,
                        NETDEV_A_NAPI_DEFER_HARD_IRQS => n.defer_hard_irqs = v32,
                        NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT => n.gro_flush_timeout = v,
                        _ => {}
                    }
                }
                n
            })
            .collect())
    }

    /// `napi-set id=... gro-flush-timeout=...`.
    pub fn set_napi_gro_flush_timeout(&mut self, napi_id: u32, ns: u64) -> Result<(), KernelError> {
        let attrs = vec![
            Nla::u32(NETDEV_A_NAPI_ID, napi_id),
            Nla::u64(NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT, ns),
        ];
        let op = format!("netdev napi-set id {napi_id} gro-flush-timeout {ns}");
        self.request(&op, NETDEV_CMD_NAPI_SET, attrs, 0).map(|_| ())
    }
}
