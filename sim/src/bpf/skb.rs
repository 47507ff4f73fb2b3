//! BPF_PROG_TYPE_SOCKET_FILTER programs over an skb: the `struct __sk_buff` context
//! (include/uapi/linux/bpf.h) and what such a program may do, as tun runs them for
//! TUNSETSTEERINGEBPF (drivers/net/tun.c: tun_ebpf_select_queue) and TUNSETFILTEREBPF
//! (run_ebpf_filter), both through bpf_prog_run_clear_cb (include/linux/filter.h: the
//! control block cleared, then the program on the skb as it is: `skb->data` where the
//! device's xmit gets it, the MAC header on a tap).
//!
//! What the model gives the program (net/core/filter.c: sk_filter_is_valid_access,
//! bpf_convert_ctx_access, sk_filter_func_proto):
//!
//! - reads of `len`, `protocol` and `vlan_proto` (as stored: big-endian), `vlan_present`,
//!   `vlan_tci` and `cb[0..5]`, 4 bytes or narrower from the field's start
//!   (bpf_ctx_narrow_access_ok); writes of `cb[]` only. Other fields (`mark`, `priority`,
//!   `hash`, `pkt_type`, ...) are [`BpfError::BadAccess`] "not modelled", and the direct
//!   packet pointers (`data`, `data_end`) are refused as the kernel refuses them for this
//!   program type.
//! - the packet through bpf_skb_load_bytes (offsets from `skb->data`); the legacy
//!   BPF_ABS/BPF_IND loads are not decoded.
//! - the helpers the VM implements that socket filters have (the map helpers,
//!   bpf_ktime_get_ns, bpf_get_prandom_u32, bpf_get_smp_processor_id); the XDP ones are
//!   refused.
//!
//! The load-time check ([`super::verifier`]) models the XDP verifier only: a socket
//! filter program is not checked at load by the model (the real arm's BPF_PROG_LOAD is).

use super::helpers::XdpEnv;
use super::insn::Program;
use super::vm::Vm;
use super::xdp::{XdpBuff, XdpRun};
use super::BpfError;

/// sizeof(struct __sk_buff) (v6.18).
pub const SK_BUFF_SIZE: usize = 192;
/// `struct __sk_buff` offsets of the fields the model gives.
pub const SKB_LEN: usize = 0;
pub const SKB_PROTOCOL: usize = 16;
pub const SKB_VLAN_PRESENT: usize = 20;
pub const SKB_VLAN_TCI: usize = 24;
pub const SKB_VLAN_PROTO: usize = 28;
/// `__u32 cb[5]`: 48 .. 68.
pub const SKB_CB: usize = 48;
pub const SKB_CB_END: usize = 68;
/// `data`, `data_end`: direct packet access, refused for socket filters.
pub const SKB_DATA: usize = 76;
pub const SKB_DATA_END: usize = 80;

/// BPF_PROG_TYPE_SOCKET_FILTER (`enum bpf_prog_type`).
pub const BPF_PROG_TYPE_SOCKET_FILTER: u32 = 1;

/// The `struct __sk_buff` a socket filter reads: the skb's fields, host order where the
/// kernel's are host order, `protocol` and `vlan_proto` as the kernel stores them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkbCtx {
    /// skb->len.
    pub len: u32,
    /// skb->protocol, host order (the program sees it big-endian).
    pub protocol: u16,
    /// skb->vlan_proto and skb->vlan_tci when the tag is out of band.
    pub vlan: Option<(u16, u16)>,
    /// qdisc_skb_cb(skb)->data: zeroed by bpf_prog_run_clear_cb before the run.
    pub cb: [u32; 5],
}

impl SkbCtx {
    /// The context of `skb` as bpf_prog_run_clear_cb hands it over.
    pub fn of(skb: &crate::skb::SkBuff) -> SkbCtx {
        SkbCtx {
            len: skb.len() as u32,
            protocol: skb.protocol,
            vlan: skb.vlan.map(|v| (v.proto, v.tci)),
            cb: [0; 5],
        }
    }

    /// The 4-byte field at `off` (a multiple of 4), as the program reads it.
    fn word(&self, off: usize) -> Result<u32, &'static str> {
        Ok(match off {
            SKB_LEN => self.len,
            // Loaded from the __be16 in memory: the wire order, zero-extended.
            SKB_PROTOCOL => u32::from(self.protocol.swap_bytes()),
            SKB_VLAN_PRESENT => u32::from(self.vlan.is_some()),
            SKB_VLAN_TCI => self.vlan.map_or(0, |(_, tci)| u32::from(tci)),
            SKB_VLAN_PROTO => self.vlan.map_or(0, |(p, _)| u32::from(p.swap_bytes())),
            SKB_CB..SKB_CB_END => self.cb[(off - SKB_CB) / 4],
            SKB_DATA | SKB_DATA_END => {
                return Err(
                    "socket filters have no direct packet access (__sk_buff data, data_end)",
                )
            }
            _ => return Err("__sk_buff field not modelled for socket filters"),
        })
    }

    /// A load of `size` bytes at `off`: a whole field or its low bytes (little-endian).
    pub(crate) fn load(&self, off: usize, size: usize) -> Result<u64, &'static str> {
        let word = off & !3;
        let shift = off - word;
        if !matches!(size, 1 | 2 | 4) || !shift.is_multiple_of(size) || shift + size > 4 {
            return Err("__sk_buff fields are read as aligned __u32 or narrower");
        }
        if shift != 0 && !(SKB_CB..SKB_CB_END).contains(&word) {
            return Err("narrow __sk_buff reads start at the field");
        }
        let v = self.word(word)? >> (8 * shift);
        Ok(u64::from(v) & (u64::MAX >> (64 - 8 * size)))
    }

    /// A store to `cb[]`, the only field a socket filter writes.
    pub(crate) fn store(&mut self, off: usize, size: usize, v: u64) -> Result<(), &'static str> {
        if !(SKB_CB..SKB_CB_END).contains(&off) || size != 4 || !off.is_multiple_of(4) {
            return Err("socket filters write only __sk_buff cb[], as aligned __u32");
        }
        self.cb[(off - SKB_CB) / 4] = v as u32;
        Ok(())
    }
}

/// Run socket filter `prog` on an skb whose bytes from `skb->data` are `data`: the
/// program's return value (`action`, r0 as a u32) and its cost.
pub fn run_socket_filter<E: XdpEnv + ?Sized>(
    vm: &mut Vm,
    prog: &Program,
    data: &[u8],
    ctx: &mut SkbCtx,
    env: &mut E,
) -> Result<XdpRun, BpfError> {
    let mut frame = XdpBuff::new(data);
    vm.run_skb(prog, &mut frame, ctx, env)
}

/// Load the socket filter program in section `section` of ELF object `path` (the
/// steering and filter programs of a scenario). A program with maps is refused: the
/// model gives socket filters no map set. Errors name the file.
pub fn load_socket_filter(path: &std::path::Path, section: &str) -> Result<Program, String> {
    let prog = super::load_elf_file(path, section).map_err(|e| e.to_string())?;
    if let Some(m) = prog.map_refs().first() {
        return Err(format!(
            "{}: section {section}: map {:?}: socket filter programs with maps are not modelled",
            path.display(),
            m.name
        ));
    }
    Ok(prog)
}
