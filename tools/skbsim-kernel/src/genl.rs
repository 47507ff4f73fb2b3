//! Generic netlink, just enough for the `netdev` family's NAPI objects (`napi-get`,
//! `napi-set`), which carry a per-NAPI `gro-flush-timeout` on kernels >= 6.13.
//!
//! Finding on 6.18 (see the `napi_listing` test): tun/tap registers its NAPI with
//! `netif_napi_add_tx()`, which marks it `NAPI_STATE_NO_BUSY_POLL`, so it never gets a NAPI
//! id; `napi-get` lists nothing for a tap and `napi-set` cannot address it. The per-device
//! sysfs attribute is the only route for taps (see [`crate::sysfs`]).

use crate::error::{Cause, KernelError};
use crate::netlink::{attr_u32, attr_u64, attrs, MsgBuilder, NlSocket, NLM_F_DUMP};

const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;

const NETDEV_CMD_NAPI_GET: u8 = 11;
const NETDEV_CMD_NAPI_SET: u8 = 14;
const NETDEV_A_NAPI_IFINDEX: u16 = 1;
const NETDEV_A_NAPI_ID: u16 = 2;
const NETDEV_A_NAPI_IRQ: u16 = 3;
const NETDEV_A_NAPI_PID: u16 = 4;
const NETDEV_A_NAPI_DEFER_HARD_IRQS: u16 = 5;
const NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT: u16 = 6;

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

fn genl_header(cmd: u8) -> [u8; 4] {
    [cmd, 1, 0, 0]
}

impl NetdevGenl {
    /// Open a `NETLINK_GENERIC` socket and resolve the `netdev` family.
    pub fn new() -> Result<Self, KernelError> {
        let mut sock = NlSocket::open(libc::NETLINK_GENERIC, "NETLINK_GENERIC")?;
        let mut m = MsgBuilder::new(GENL_ID_CTRL, 0);
        m.header(&genl_header(CTRL_CMD_GETFAMILY))
            .attr_str(CTRL_ATTR_FAMILY_NAME, "netdev");
        let op = "CTRL_CMD_GETFAMILY netdev";
        let replies = sock.request(op, m)?;
        let family = replies
            .iter()
            .flat_map(|r| attrs(r.payload.get(4..).unwrap_or(&[])).collect::<Vec<_>>())
            .find(|(ty, _)| *ty == CTRL_ATTR_FAMILY_ID)
            .and_then(|(_, v)| v.get(..2).map(|b| u16::from_ne_bytes([b[0], b[1]])))
            .ok_or_else(|| KernelError::new(op, Cause::NotFound("genl family netdev".into())))?;
        Ok(NetdevGenl { sock, family })
    }

    /// `napi-get` dump, optionally for one ifindex.
    pub fn napis(&mut self, ifindex: Option<u32>) -> Result<Vec<NapiInfo>, KernelError> {
        let mut m = MsgBuilder::new(self.family, NLM_F_DUMP);
        m.header(&genl_header(NETDEV_CMD_NAPI_GET));
        if let Some(i) = ifindex {
            m.attr_u32(NETDEV_A_NAPI_IFINDEX, i);
        }
        let op = match ifindex {
            Some(i) => format!("netdev napi-get ifindex {i}"),
            None => "netdev napi-get".to_string(),
        };
        let replies = self.sock.request(&op, m)?;
        Ok(replies
            .iter()
            .map(|r| {
                let mut n = NapiInfo::default();
                for (ty, v) in attrs(r.payload.get(4..).unwrap_or(&[])) {
                    match ty {
                        NETDEV_A_NAPI_ID => n.id = attr_u32(v).unwrap_or(0),
                        NETDEV_A_NAPI_IFINDEX => n.ifindex = attr_u32(v).unwrap_or(0),
                        NETDEV_A_NAPI_IRQ => n.irq = attr_u32(v),
                        NETDEV_A_NAPI_PID => n.pid = attr_u32(v),
                        NETDEV_A_NAPI_DEFER_HARD_IRQS => n.defer_hard_irqs = attr_u32(v),
                        NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT => n.gro_flush_timeout = attr_u64(v),
                        _ => {}
                    }
                }
                n
            })
            .collect())
    }

    /// `napi-set id=... gro-flush-timeout=...`.
    pub fn set_napi_gro_flush_timeout(&mut self, napi_id: u32, ns: u64) -> Result<(), KernelError> {
        let mut m = MsgBuilder::new(self.family, 0);
        m.header(&genl_header(NETDEV_CMD_NAPI_SET))
            .attr_u32(NETDEV_A_NAPI_ID, napi_id)
            .attr(NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT, &ns.to_ne_bytes());
        let op = format!("netdev napi-set id {napi_id} gro-flush-timeout {ns}");
        self.sock.request(&op, m).map(|_| ())
    }
}
