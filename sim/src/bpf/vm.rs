//! The interpreter: runs a [`Program`] over an [`XdpBuff`] with bounds-checked memory.
//!
//! Semantics follow kernel/bpf/core.c (`___bpf_prog_run`) plus the verifier's rewrites:
//! division by zero yields 0 and modulo by zero keeps the dividend (zero-extended for
//! 32-bit ops), signed division of MIN by -1 wraps, shift amounts are masked to the
//! operand width, 32-bit ALU results are zero-extended. A run stops with
//! [`BpfError::BudgetExhausted`] after [`Vm::budget`] instructions.

use super::helpers::{self, XdpEnv};
use super::insn::{AluOp, AtomicOp, ByteOrder, Cond, MemSize, Op, Program, Src};
use super::skb::{SkbCtx, SK_BUFF_SIZE};
use super::xdp::{RedirectTarget, XdpBuff, XdpRun, XDP_MD_SIZE};
use super::{
    BpfError, CTX_ADDR, DEFAULT_INSN_BUDGET, MAP_HANDLE_ADDR, MAP_VALUE_ADDR, MAP_VALUE_STRIDE,
    MAX_CALL_FRAMES, PACKET_ADDR, PACKET_WINDOW, STACK_ADDR, STACK_SIZE,
};

/// A reusable interpreter: owns the stack (zeroed before each run, so that runs are
/// independent) and the instruction budget.
#[derive(Debug, Clone)]
pub struct Vm {
    stack: Vec<u8>,
    budget: u64,
    /// Stack bytes the last run wrote: zeroed before the next run.
    dirty: std::ops::Range<usize>,
}

impl Default for Vm {
    fn default() -> Vm {
        Vm::new()
    }
}

impl Vm {
    pub fn new() -> Vm {
        Vm::with_budget(DEFAULT_INSN_BUDGET)
    }

    pub fn with_budget(budget: u64) -> Vm {
        Vm {
            stack: vec![0; STACK_SIZE * MAX_CALL_FRAMES],
            budget,
            dirty: 0..0,
        }
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Run `prog` on `frame`: r1 = the xdp_md context, r10 = top of a zeroed 512-byte
    /// stack. The program may move `frame.data`/`data_end`/`data_meta` through helpers
    /// and rewrite packet bytes.
    pub fn run_xdp<E: XdpEnv + ?Sized>(
        &mut self,
        prog: &Program,
        frame: &mut XdpBuff,
        env: &mut E,
    ) -> Result<XdpRun, BpfError> {
        self.run(prog, frame, None, env)
    }

    /// Run socket filter `prog` (r1 = the `struct __sk_buff` context `ctx`) on the skb
    /// whose bytes from `skb->data` are `frame`'s data ([`super::skb`]).
    pub fn run_skb<E: XdpEnv + ?Sized>(
        &mut self,
        prog: &Program,
        frame: &mut XdpBuff,
        ctx: &mut SkbCtx,
        env: &mut E,
    ) -> Result<XdpRun, BpfError> {
        self.run(prog, frame, Some(ctx), env)
    }

    fn run<E: XdpEnv + ?Sized>(
        &mut self,
        prog: &Program,
        frame: &mut XdpBuff,
        skb: Option<&mut SkbCtx>,
        env: &mut E,
    ) -> Result<XdpRun, BpfError> {
        if let Some(d) = self.stack.get_mut(self.dirty.clone()) {
            d.fill(0);
        }
        let mut m = Machine {
            regs: [0; 16],
            stack: &mut self.stack,
            stack_top: STACK_ADDR + STACK_SIZE as u64,
            max_depth: 0,
            low_write: usize::MAX,
            frame,
            skb,
            env,
            redirect: None,
            tgt_index: None,
        };
        m.regs[1] = CTX_ADDR;
        m.regs[10] = m.stack_top;
        let res = execute(prog, &mut m, self.budget);
        self.dirty = m.low_write.min(STACK_SIZE)..(m.max_depth + 1) * STACK_SIZE;
        res
    }
}

/// Run `prog` once on a fresh [`Vm`] with the default budget.
pub fn run_xdp<E: XdpEnv + ?Sized>(
    prog: &Program,
    frame: &mut XdpBuff,
    env: &mut E,
) -> Result<XdpRun, BpfError> {
    Vm::new().run_xdp(prog, frame, env)
}

/// Machine state during one run; helpers reach memory and the buffer through it.
pub(crate) struct Machine<'a, E: XdpEnv + ?Sized> {
    pub(crate) regs: [u64; 16],
    stack: &'a mut [u8],
    /// One past the highest stack byte of the current frame.
    stack_top: u64,
    max_depth: usize,
    /// Lowest stack offset written during the run.
    low_write: usize,
    pub(crate) frame: &'a mut XdpBuff,
    /// The socket filter's context; None for an XDP program.
    pub(crate) skb: Option<&'a mut SkbCtx>,
    pub(crate) env: &'a mut E,
    /// bpf_redirect_info as the helpers left it.
    pub(crate) redirect: Option<RedirectTarget>,
    /// ri->tgt_index when set during this run.
    pub(crate) tgt_index: Option<u32>,
}

fn fault(addr: u64, size: usize, write: bool, why: &'static str) -> BpfError {
    BpfError::BadAccess {
        pc: 0,
        addr,
        size,
        write,
        why,
    }
}

fn read_le(s: &[u8]) -> u64 {
    match *s {
        [a] => u64::from(a),
        [a, b] => u64::from(u16::from_le_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => 0,
    }
}

fn write_le(s: &mut [u8], v: u64) {
    for (d, b) in s.iter_mut().zip(v.to_le_bytes()) {
        *d = b;
    }
}

impl<E: XdpEnv + ?Sized> Machine<'_, E> {
    /// `len` bytes of program-visible memory at `addr`. `insn` accesses of the stack
    /// must be aligned to their size (helpers' memory arguments need not be).
    pub(crate) fn mem(
        &mut self,
        addr: u64,
        len: usize,
        write: bool,
        insn: bool,
    ) -> Result<&mut [u8], BpfError> {
        let n = len as u64;
        if addr >= MAP_VALUE_ADDR {
            let rel = addr - MAP_VALUE_ADDR;
            let idx = u32::try_from(rel / MAP_VALUE_STRIDE)
                .map_err(|_| fault(addr, len, write, "unmapped address"))?;
            let map = self
                .env
                .maps()
                .get_mut(idx)
                .ok_or_else(|| fault(addr, len, write, "no such map"))?;
            return map
                .value_mem(rel % MAP_VALUE_STRIDE, len, write)
                .map_err(|why| fault(addr, len, write, why));
        }
        if addr >= STACK_ADDR {
            let off = addr - STACK_ADDR;
            if off + n > self.stack_top - STACK_ADDR {
                return Err(fault(
                    addr,
                    len,
                    write,
                    "outside the stack (r10-512 .. r10)",
                ));
            }
            if insn && n > 0 && !off.is_multiple_of(n) {
                return Err(fault(addr, len, write, "misaligned stack access"));
            }
            let o = off as usize;
            if write {
                self.low_write = self.low_write.min(o);
            }
            return self
                .stack
                .get_mut(o..o + len)
                .ok_or_else(|| fault(addr, len, write, "outside the stack"));
        }
        if addr >= PACKET_ADDR + PACKET_WINDOW {
            return Err(fault(addr, len, write, "outside the stack (below r10-512)"));
        }
        if addr >= PACKET_ADDR {
            let off = addr - PACKET_ADDR;
            let lo = self.frame.access_start() as u64;
            let hi = self.frame.data_end as u64;
            if off < lo {
                return Err(fault(addr, len, write, "before data_meta/data"));
            }
            if off + n > hi {
                return Err(fault(addr, len, write, "past data_end"));
            }
            let o = off as usize;
            return self
                .frame
                .buf
                .get_mut(o..o + len)
                .ok_or_else(|| fault(addr, len, write, "outside the buffer"));
        }
        if addr.wrapping_sub(CTX_ADDR) < XDP_MD_SIZE as u64 {
            return Err(fault(
                addr,
                len,
                write,
                "the context is only read field by field",
            ));
        }
        Err(fault(addr, len, write, "unmapped address"))
    }

    /// Copy program memory into `out` (helper arguments).
    pub(crate) fn read_into(&mut self, addr: u64, out: &mut [u8]) -> Result<(), BpfError> {
        let s = self.mem(addr, out.len(), false, false)?;
        out.copy_from_slice(s);
        Ok(())
    }

    #[inline]
    fn load(&mut self, addr: u64, size: usize) -> Result<u64, BpfError> {
        if let Some(ctx) = self.skb.as_deref() {
            if addr.wrapping_sub(CTX_ADDR) < SK_BUFF_SIZE as u64 {
                let off = (addr - CTX_ADDR) as usize;
                return ctx
                    .load(off, size)
                    .map_err(|why| fault(addr, size, false, why));
            }
        }
        if addr.wrapping_sub(CTX_ADDR) < XDP_MD_SIZE as u64 {
            let off = (addr - CTX_ADDR) as usize;
            if size != 4 || !off.is_multiple_of(4) {
                return Err(fault(
                    addr,
                    size,
                    false,
                    "xdp_md fields are read as aligned __u32",
                ));
            }
            return self
                .frame
                .md_field(off)
                .map(u64::from)
                .ok_or_else(|| fault(addr, size, false, "invalid xdp_md field"));
        }
        Ok(read_le(self.mem(addr, size, false, true)?))
    }

    #[inline]
    fn store(&mut self, addr: u64, size: usize, v: u64) -> Result<(), BpfError> {
        if let Some(ctx) = self.skb.as_deref_mut() {
            if addr.wrapping_sub(CTX_ADDR) < SK_BUFF_SIZE as u64 {
                let off = (addr - CTX_ADDR) as usize;
                return ctx
                    .store(off, size, v)
                    .map_err(|why| fault(addr, size, true, why));
            }
        }
        write_le(self.mem(addr, size, true, true)?, v);
        Ok(())
    }

    fn atomic(
        &mut self,
        size: MemSize,
        op: AtomicOp,
        fetch: bool,
        addr: u64,
        src: usize,
    ) -> Result<(), BpfError> {
        let n = size.bytes();
        if !addr.is_multiple_of(n as u64) {
            return Err(fault(addr, n, true, "misaligned atomic access"));
        }
        let mask = if n == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        let (r0, v) = (self.regs[0], self.regs[src]);
        let s = self.mem(addr, n, true, true)?;
        let old = read_le(s);
        let new = match op {
            AtomicOp::Add => old.wrapping_add(v),
            AtomicOp::Or => old | v,
            AtomicOp::And => old & v,
            AtomicOp::Xor => old ^ v,
            AtomicOp::Xchg => v,
            AtomicOp::CmpXchg if old == r0 & mask => v,
            AtomicOp::CmpXchg => old,
        };
        write_le(s, new & mask);
        match op {
            AtomicOp::CmpXchg => self.regs[0] = old,
            _ if fetch => self.regs[src] = old,
            _ => {}
        }
        Ok(())
    }

    #[inline]
    fn src(&self, s: Src) -> u64 {
        match s {
            Src::Reg(r) => self.regs[(r & 15) as usize],
            Src::Imm(i) => i64::from(i) as u64,
        }
    }
}

/// One ALU for both widths, as kernel/bpf/core.c writes ___bpf_prog_run's ALU and
/// ALU64 cases from one macro: division by zero gives 0, modulo by zero keeps the
/// dividend (the verifier's patched-in checks), shifts are masked to the width.
macro_rules! alu {
    ($name:ident, $u:ty, $i:ty, $mask:expr) => {
        #[inline]
        fn $name(op: AluOp, a: $u, b: $u) -> $u {
            match op {
                AluOp::Add => a.wrapping_add(b),
                AluOp::Sub => a.wrapping_sub(b),
                AluOp::Mul => a.wrapping_mul(b),
                AluOp::Div => a.checked_div(b).unwrap_or(0),
                AluOp::SDiv if b == 0 => 0,
                AluOp::SDiv => (a as $i).wrapping_div(b as $i) as $u,
                AluOp::Mod => a.checked_rem(b).unwrap_or(a),
                AluOp::SMod if b == 0 => a,
                AluOp::SMod => (a as $i).wrapping_rem(b as $i) as $u,
                AluOp::Or => a | b,
                AluOp::And => a & b,
                AluOp::Xor => a ^ b,
                AluOp::Lsh => a << (b & $mask),
                AluOp::Rsh => a >> (b & $mask),
                AluOp::Arsh => ((a as $i) >> (b & $mask)) as $u,
                AluOp::Neg => (a as $i).wrapping_neg() as $u,
                AluOp::Mov => b,
            }
        }
    };
}
alu!(alu64, u64, i64, 63);
alu!(alu32, u32, i32, 31);

/// One jump condition for both widths (JMP and JMP32 in ___bpf_prog_run).
macro_rules! cmp {
    ($name:ident, $u:ty, $i:ty) => {
        #[inline]
        fn $name(c: Cond, a: $u, b: $u) -> bool {
            let (sa, sb) = (a as $i, b as $i);
            match c {
                Cond::Eq => a == b,
                Cond::Ne => a != b,
                Cond::Gt => a > b,
                Cond::Ge => a >= b,
                Cond::Lt => a < b,
                Cond::Le => a <= b,
                Cond::Set => a & b != 0,
                Cond::Sgt => sa > sb,
                Cond::Sge => sa >= sb,
                Cond::Slt => sa < sb,
                Cond::Sle => sa <= sb,
            }
        }
    };
}
cmp!(cmp64, u64, i64);
cmp!(cmp32, u32, i32);

fn sign_extend(v: u64, size: MemSize) -> u64 {
    match size {
        MemSize::B => v as u8 as i8 as i64 as u64,
        MemSize::H => v as u16 as i16 as i64 as u64,
        MemSize::W => v as u32 as i32 as i64 as u64,
        MemSize::DW => v,
    }
}

struct Frame {
    ret: usize,
    saved: [u64; 4],
}

#[inline]
fn r(x: u8) -> usize {
    (x & 15) as usize
}

// Over 100 lines: the interpreter's dispatch loop, one match arm per instruction class
// (kernel/bpf/core.c: ___bpf_prog_run); splitting the arms would scatter pc/frame state.
fn execute<E: XdpEnv + ?Sized>(
    prog: &Program,
    m: &mut Machine<'_, E>,
    budget: u64,
) -> Result<XdpRun, BpfError> {
    let ops = prog.ops();
    let mut pc = 0usize;
    let mut executed = 0u64;
    let mut helper_calls = 0u64;
    let mut frames: Vec<Frame> = Vec::new();
    loop {
        let Some(op) = ops.get(pc) else {
            return Err(BpfError::invalid(pc, "fell off the end of the program"));
        };
        if executed >= budget {
            return Err(BpfError::BudgetExhausted { pc, budget });
        }
        executed += 1;
        let cur = pc;
        pc += 1;
        match *op {
            Op::Alu64 { op, dst, src } => {
                let b = m.src(src);
                let d = &mut m.regs[r(dst)];
                *d = alu64(op, *d, b);
            }
            Op::Alu32 { op, dst, src } => {
                let b = m.src(src) as u32;
                let d = &mut m.regs[r(dst)];
                *d = u64::from(alu32(op, *d as u32, b));
            }
            Op::MovSx {
                wide,
                dst,
                src,
                bits,
            } => {
                let v = m.regs[r(src)];
                let x = match bits {
                    8 => i64::from(v as i8),
                    16 => i64::from(v as i16),
                    _ => i64::from(v as i32),
                };
                m.regs[r(dst)] = if wide { x as u64 } else { u64::from(x as u32) };
            }
            Op::End { order, dst, bits } => {
                let v = m.regs[r(dst)];
                m.regs[r(dst)] = match (order, bits) {
                    (ByteOrder::Le, 16) => v & 0xffff,
                    (ByteOrder::Le, 32) => v & 0xffff_ffff,
                    (ByteOrder::Le, _) => v,
                    (_, 16) => u64::from((v as u16).swap_bytes()),
                    (_, 32) => u64::from((v as u32).swap_bytes()),
                    (_, _) => v.swap_bytes(),
                };
            }
            // ld_imm64 occupies two slots.
            Op::LdImm64 { dst, imm } => {
                m.regs[r(dst)] = imm;
                pc += 1;
            }
            Op::LdMap { dst, slot } => {
                let idx = prog.bound_map(slot)?;
                m.regs[r(dst)] = MAP_HANDLE_ADDR + u64::from(idx);
                pc += 1;
            }
            Op::LdMapValue { dst, slot, off } => {
                let idx = prog.bound_map(slot)?;
                m.regs[r(dst)] =
                    MAP_VALUE_ADDR + u64::from(idx) * MAP_VALUE_STRIDE + u64::from(off);
                pc += 1;
            }
            Op::Ldx {
                size,
                sx,
                dst,
                src,
                off,
            } => {
                let addr = m.regs[r(src)].wrapping_add(off as u64);
                let v = m.load(addr, size.bytes()).map_err(|e| e.at(cur))?;
                m.regs[r(dst)] = if sx { sign_extend(v, size) } else { v };
            }
            Op::St {
                size,
                dst,
                off,
                imm,
            } => {
                let addr = m.regs[r(dst)].wrapping_add(off as u64);
                m.store(addr, size.bytes(), i64::from(imm) as u64)
                    .map_err(|e| e.at(cur))?;
            }
            Op::Stx {
                size,
                dst,
                src,
                off,
            } => {
                let addr = m.regs[r(dst)].wrapping_add(off as u64);
                let v = m.regs[r(src)];
                m.store(addr, size.bytes(), v).map_err(|e| e.at(cur))?;
            }
            Op::Atomic {
                size,
                op,
                fetch,
                dst,
                src,
                off,
            } => {
                let addr = m.regs[r(dst)].wrapping_add(off as u64);
                m.atomic(size, op, fetch, addr, r(src))
                    .map_err(|e| e.at(cur))?;
            }
            Op::Ja { target } => pc = target as usize,
            Op::Jmp {
                cond,
                wide,
                dst,
                src,
                target,
            } => {
                let (a, b) = (m.regs[r(dst)], m.src(src));
                let taken = if wide {
                    cmp64(cond, a, b)
                } else {
                    cmp32(cond, a as u32, b as u32)
                };
                if taken {
                    pc = target as usize;
                }
            }
            Op::Call { helper } => {
                helper_calls += 1;
                m.regs[0] = helpers::call(helper, m).map_err(|e| e.at(cur))?;
            }
            Op::CallLocal { target } => {
                if frames.len() + 1 >= MAX_CALL_FRAMES {
                    return Err(BpfError::invalid(
                        cur,
                        format!("more than {MAX_CALL_FRAMES} call frames"),
                    ));
                }
                frames.push(Frame {
                    ret: pc,
                    saved: [m.regs[6], m.regs[7], m.regs[8], m.regs[9]],
                });
                m.stack_top += STACK_SIZE as u64;
                m.regs[10] = m.stack_top;
                m.max_depth = m.max_depth.max(frames.len());
                pc = target as usize;
            }
            Op::Exit => match frames.pop() {
                Some(f) => {
                    m.regs[6..10].copy_from_slice(&f.saved);
                    m.stack_top -= STACK_SIZE as u64;
                    m.regs[10] = m.stack_top;
                    pc = f.ret;
                }
                None => {
                    let r0 = m.regs[0];
                    return Ok(XdpRun {
                        action: r0 as u32,
                        r0,
                        redirect: m.redirect,
                        insns: executed,
                        helper_calls,
                    });
                }
            },
            Op::Pad => {
                return Err(BpfError::invalid(
                    cur,
                    "executed the second slot of ld_imm64",
                ))
            }
        }
    }
}

#[cfg(test)]
#[path = "vm_tests.rs"]
mod tests;
