//! TUNSETTXFILTER (drivers/net/tun.c: update_filter) and TUNATTACHFILTER
//! (tun_attach_filter -> sk_attach_filter, net/core/filter.c: bpf_check_basics_ok,
//! bpf_check_classic, check_load_and_stores). docs/tun-ioctl.md#filters.

use super::{DevId, IoctlAnswer, IoctlArg, TunNet};
use crate::errno::Errno;

/// `struct sock_filter`: one classic BPF instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SockFilter {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// FLT_EXACT_COUNT (tun.c): addresses matched exactly; the rest are hashed.
const FLT_EXACT_COUNT: usize = 8;
/// BPF_MAXINSNS.
const BPF_MAXINSNS: usize = 4096;
/// BPF_MEMWORDS: scratch cells.
const BPF_MEMWORDS: u32 = 16;
/// SKF_AD_OFF (-0x1000) and SKF_AD_MAX: the ancillary loads.
const SKF_AD_OFF: u32 = 0xffff_f000;
const SKF_AD_MAX: u32 = 64;

// Classic BPF opcodes (include/uapi/linux/bpf_common.h, filter.h).
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ST: u16 = 0x02;
const STX: u16 = 0x03;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const MISC: u16 = 0x07;
const W: u16 = 0x00;
const H: u16 = 0x08;
const B: u16 = 0x10;
const IMM: u16 = 0x00;
const ABS: u16 = 0x20;
const IND: u16 = 0x40;
const MEM: u16 = 0x60;
const LEN: u16 = 0x80;
const MSH: u16 = 0xa0;
const K: u16 = 0x00;
const A: u16 = 0x10;
const JA: u16 = 0x00;
const DIV: u16 = 0x30;
const MOD: u16 = 0x90;
const LSH: u16 = 0x60;
const RSH: u16 = 0x70;
const NEG: u16 = 0x80;

/// chk_code_allowed: the codes bpf_check_classic's table admits.
fn code_allowed(code: u16) -> bool {
    let alu_ops = [0x00, 0x10, 0x20, DIV, MOD, 0x50, 0x40, 0xa0, LSH, RSH];
    let jmp_ops = [0x10, 0x20, 0x30, 0x40]; // JEQ JGT JGE JSET
    (code & 0x07 == ALU
        && (code == ALU | NEG || (alu_ops.contains(&(code & 0xf0)) && code & !0xf8 == ALU)))
        || [
            LD | W | ABS,
            LD | H | ABS,
            LD | B | ABS,
            LD | W | LEN,
            LD | W | IND,
            LD | H | IND,
            LD | B | IND,
            LD | IMM,
            LD | MEM,
            LDX | W | LEN,
            LDX | B | MSH,
            LDX | IMM,
            LDX | MEM,
            ST,
            STX,
            MISC,        // TAX
            MISC | 0x80, // TXA
            RET | K,
            RET | A,
            JMP | JA,
        ]
        .contains(&code)
        || (code & 0x07 == JMP && jmp_ops.contains(&(code & 0xf0)) && code & !0xf8 == JMP)
}

fn is_cond_jump(code: u16) -> bool {
    code & 0x07 == JMP && code & 0xf0 != JA
}

/// bpf_check_basics_ok + bpf_check_classic + check_load_and_stores: EINVAL for what
/// sk_attach_filter refuses. Not modelled: sk_filter_charge's optmem_max (ENOMEM for a
/// big program).
pub fn check_classic(filter_ptr: u64, len: u16, insns: &[SockFilter]) -> Result<(), Errno> {
    let flen = usize::from(len);
    if filter_ptr == 0 || flen == 0 || flen > BPF_MAXINSNS {
        return Err(Errno::EINVAL);
    }
    if insns.len() < flen {
        return Err(Errno::EFAULT);
    }
    let insns = &insns[..flen];
    for (pc, ins) in insns.iter().enumerate() {
        if !code_allowed(ins.code) {
            return Err(Errno::EINVAL);
        }
        let bad = match ins.code {
            c if c == ALU | DIV | K || c == ALU | MOD | K => ins.k == 0,
            c if c == ALU | LSH | K || c == ALU | RSH | K => ins.k >= 32,
            c if c == LD | MEM || c == LDX | MEM || c == ST || c == STX => ins.k >= BPF_MEMWORDS,
            c if c == JMP | JA => u64::from(ins.k) >= (flen - pc - 1) as u64,
            c if is_cond_jump(c) => {
                pc + usize::from(ins.jt) + 1 >= flen || pc + usize::from(ins.jf) + 1 >= flen
            }
            c if c == LD | W | ABS || c == LD | H | ABS || c == LD | B | ABS => {
                // bpf_anc_helper: only the known SKF_AD_* offsets (multiples of 4).
                ins.k >= SKF_AD_OFF && (ins.k - SKF_AD_OFF >= SKF_AD_MAX || ins.k % 4 != 0)
            }
            _ => false,
        };
        if bad {
            return Err(Errno::EINVAL);
        }
    }
    let last = insns[flen - 1].code;
    if last != RET | K && last != RET | A {
        return Err(Errno::EINVAL);
    }
    check_load_and_stores(insns)
}

/// check_load_and_stores: a scratch cell read before every path to it stored it.
fn check_load_and_stores(insns: &[SockFilter]) -> Result<(), Errno> {
    let mut masks = vec![u16::MAX; insns.len()];
    let mut memvalid: u16 = 0;
    for (pc, ins) in insns.iter().enumerate() {
        memvalid &= masks[pc];
        match ins.code {
            c if c == ST || c == STX => memvalid |= 1 << ins.k,
            c if (c == LD | MEM || c == LDX | MEM) && memvalid & (1 << ins.k) == 0 => {
                return Err(Errno::EINVAL);
            }
            c if c == JMP | JA => {
                masks[pc + 1 + ins.k as usize] &= memvalid;
                memvalid = u16::MAX;
            }
            c if is_cond_jump(c) => {
                masks[pc + 1 + usize::from(ins.jt)] &= memvalid;
                masks[pc + 1 + usize::from(ins.jf)] &= memvalid;
                memvalid = u16::MAX;
            }
            _ => {}
        }
    }
    Ok(())
}

fn is_multicast(addr: &[u8; 6]) -> bool {
    addr[0] & 1 != 0
}

impl TunNet {
    /// TUNSETTXFILTER on a tap: update_filter's return, the number of exact addresses
    /// (the first 8), or 0 with the filter off when a hashed address is unicast.
    pub(super) fn set_txfilter(&mut self, d: DevId, arg: &IoctlArg) -> Result<IoctlAnswer, Errno> {
        let IoctlArg::TxFilter { addrs, .. } = arg else {
            return Err(Errno::EFAULT);
        };
        let dev = self.dev_mut(d);
        dev.txflt_count = 0;
        if addrs.is_empty() {
            return Ok(IoctlAnswer::Done);
        }
        let nexact = addrs.len().min(FLT_EXACT_COUNT);
        if addrs[nexact..].iter().any(|a| !is_multicast(a)) {
            return Ok(IoctlAnswer::Done);
        }
        dev.txflt_count = nexact;
        Ok(IoctlAnswer::Returned(nexact as i32))
    }

    /// TUNATTACHFILTER on a tap: tun->fprog is copied first (and kept whatever follows),
    /// then sk_attach_filter on every attached queue (tun_attach_filter).
    pub(super) fn attach_filter(&mut self, d: DevId, arg: &IoctlArg) -> Result<IoctlAnswer, Errno> {
        let IoctlArg::Fprog { len, filter, insns } = arg else {
            return Err(Errno::EFAULT);
        };
        self.dev_mut(d).fprog = (*len, *filter);
        let queues = self.dev_mut(d).queues.clone();
        if !queues.is_empty() {
            if let Err(e) = check_classic(*filter, *len, insns) {
                // The first queue failed: tun_detach_filter(tun, 0) detaches nothing.
                self.dev_mut(d).filter_attached = false;
                return Err(e);
            }
        }
        for q in queues {
            self.files[q.0].sk_filter = true;
        }
        self.dev_mut(d).filter_attached = true;
        Ok(IoctlAnswer::Done)
    }

    /// TUNDETACHFILTER: tun_detach_filter on every attached queue.
    pub(super) fn detach_filter(&mut self, d: DevId) -> IoctlAnswer {
        for q in self.dev_mut(d).queues.clone() {
            self.files[q.0].sk_filter = false;
        }
        self.dev_mut(d).filter_attached = false;
        IoctlAnswer::Done
    }

    /// TUNGETFILTER: copy_to_user of tun->fprog.
    pub(super) fn get_filter(&self, d: DevId, arg: &IoctlArg) -> Result<IoctlAnswer, Errno> {
        if *arg == IoctlArg::Fault {
            return Err(Errno::EFAULT);
        }
        let (len, filter) = self.dev(d).expect("registered").fprog;
        Ok(IoctlAnswer::Fprog { len, filter })
    }
}
