//! The interpreter: runs a [`Program`] over an [`XdpBuff`] with bounds-checked memory.
//!
//! Semantics follow kernel/bpf/core.c (`___bpf_prog_run`) plus the verifier's rewrites:
//! division by zero yields 0 and modulo by zero keeps the dividend (zero-extended for
//! 32-bit ops), signed division of MIN by -1 wraps, shift amounts are masked to the
//! operand width, 32-bit ALU results are zero-extended. A run stops with
//! [`BpfError::BudgetExhausted`] after [`Vm::budget`] instructions.

use super::helpers::{self, XdpEnv};
use super::insn::{AluOp, AtomicOp, ByteOrder, Cond, MemSize, Op, Program, Src};
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

#[inline]
fn alu64(op: AluOp, a: u64, b: u64) -> u64 {
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::Div => a.checked_div(b).unwrap_or(0),
        AluOp::SDiv if b == 0 => 0,
        AluOp::SDiv => (a as i64).wrapping_div(b as i64) as u64,
        AluOp::Mod => a.checked_rem(b).unwrap_or(a),
        AluOp::SMod if b == 0 => a,
        AluOp::SMod => (a as i64).wrapping_rem(b as i64) as u64,
        AluOp::Or => a | b,
        AluOp::And => a & b,
        AluOp::Xor => a ^ b,
        AluOp::Lsh => a << (b & 63),
        AluOp::Rsh => a >> (b & 63),
        AluOp::Arsh => ((a as i64) >> (b & 63)) as u64,
        AluOp::Neg => (a as i64).wrapping_neg() as u64,
        AluOp::Mov => b,
    }
}

#[inline]
fn alu32(op: AluOp, a: u32, b: u32) -> u32 {
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::Div => a.checked_div(b).unwrap_or(0),
        AluOp::SDiv if b == 0 => 0,
        AluOp::SDiv => (a as i32).wrapping_div(b as i32) as u32,
        AluOp::Mod => a.checked_rem(b).unwrap_or(a),
        AluOp::SMod if b == 0 => a,
        AluOp::SMod => (a as i32).wrapping_rem(b as i32) as u32,
        AluOp::Or => a | b,
        AluOp::And => a & b,
        AluOp::Xor => a ^ b,
        AluOp::Lsh => a << (b & 31),
        AluOp::Rsh => a >> (b & 31),
        AluOp::Arsh => ((a as i32) >> (b & 31)) as u32,
        AluOp::Neg => (a as i32).wrapping_neg() as u32,
        AluOp::Mov => b,
    }
}

#[inline]
fn cmp64(c: Cond, a: u64, b: u64) -> bool {
    let (sa, sb) = (a as i64, b as i64);
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

#[inline]
fn cmp32(c: Cond, a: u32, b: u32) -> bool {
    let (sa, sb) = (a as i32, b as i32);
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
mod tests {
    use super::*;
    use crate::bpf::helpers::BasicEnv;
    use crate::bpf::xdp::XDP_MD_DATA_END;

    /// One instruction as its 8 raw bytes (little-endian `struct bpf_insn`).
    fn x(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
        let (o, i) = (off.to_le_bytes(), imm.to_le_bytes());
        [code, src << 4 | dst, o[0], o[1], i[0], i[1], i[2], i[3]]
    }
    /// `rN = v ll` (two slots).
    fn ld64(dst: u8, v: u64) -> [[u8; 8]; 2] {
        [
            x(0x18, dst, 0, 0, v as u32 as i32),
            x(0, 0, 0, 0, (v >> 32) as u32 as i32),
        ]
    }
    const EXIT: [u8; 8] = [0x95, 0, 0, 0, 0, 0, 0, 0];

    fn prog(parts: &[&[[u8; 8]]]) -> Program {
        let bytes: Vec<u8> = parts
            .iter()
            .flat_map(|p| p.iter().flatten().copied())
            .collect();
        Program::from_bytes("t", &bytes, Vec::new()).unwrap()
    }

    fn run_on(p: &Program, frame: &mut XdpBuff) -> Result<XdpRun, BpfError> {
        run_xdp(p, frame, &mut BasicEnv::default())
    }

    fn r0(parts: &[&[[u8; 8]]]) -> u64 {
        run_on(&prog(parts), &mut XdpBuff::new(&[0; 60]))
            .unwrap()
            .r0
    }

    /// r0 = a; r1 = b; r0 op= r1 (code), then the same with b as an immediate when the
    /// decoder accepts that form (no constant division by zero or oversized shift).
    fn alu(code: u8, off: i16, a: u64, b: u64) -> u64 {
        let by_reg = r0(&[
            &ld64(0, a),
            &ld64(1, b),
            &[x(code | 0x08, 0, 1, off, 0), EXIT],
        ]);
        if let Ok(imm) = i32::try_from(b as i64) {
            let bytes: Vec<u8> =
                [ld64(0, a)[0], ld64(0, a)[1], x(code, 0, 0, off, imm), EXIT].concat();
            if let Ok(p) = Program::from_bytes("t", &bytes, Vec::new()) {
                let by_imm = run_on(&p, &mut XdpBuff::new(&[0; 60])).unwrap().r0;
                assert_eq!(
                    by_reg, by_imm,
                    "code {code:#x}: register and immediate forms differ"
                );
            }
        }
        by_reg
    }

    #[test]
    fn alu64_ops() {
        let m = u64::MAX;
        let min = i64::MIN as u64;
        let neg = |v: i64| v as u64;
        let cases: [(u8, i16, u64, u64, u64); 22] = [
            (0x07, 0, m, 2, 1),                // add wraps
            (0x17, 0, 1, 2, m),                // sub
            (0x27, 0, 1 << 32, 1 << 32, 0),    // mul wraps
            (0x37, 0, 7, 2, 3),                // div
            (0x37, 0, 7, 0, 0),                // div by zero: 0
            (0x97, 0, 7, 3, 1),                // mod
            (0x97, 0, 7, 0, 7),                // mod by zero keeps the dividend
            (0x37, 1, neg(-7), 2, neg(-3)),    // sdiv truncates
            (0x37, 1, min, neg(-1), min),      // sdiv MIN / -1 wraps
            (0x37, 1, 9, 0, 0),                // sdiv by zero
            (0x97, 1, neg(-7), 2, neg(-1)),    // smod takes the dividend's sign
            (0x97, 1, min, neg(-1), 0),        // smod MIN % -1
            (0x47, 0, 0b1010, 0b0101, 0b1111), // or
            (0x57, 0, 0b1110, 0b0111, 0b0110), // and
            (0xa7, 0, 0b1110, 0b0111, 0b1001), // xor
            (0x67, 0, 1, 63, 1 << 63),         // lsh
            (0x67, 0, 1, 65 + (1 << 40), 2),   // lsh amount masked to 6 bits (register only)
            (0x77, 0, m, 60, 15),              // rsh
            (0xc7, 0, neg(-16), 2, neg(-4)),   // arsh
            (0xb7, 0, 5, neg(-1), m),          // mov, immediate sign-extended
            (0x17, 0, 0, 1 << 63, 1 << 63),    // sub 0 - MIN
            (0x27, 0, neg(-3), 3, neg(-9)),    // mul signed values
        ];
        for (code, off, a, b, want) in cases {
            assert_eq!(
                alu(code, off, a, b),
                want,
                "code {code:#x} off {off}: {a:#x} op {b:#x}"
            );
        }
        assert_eq!(
            r0(&[&ld64(0, 5), &[x(0x87, 0, 0, 0, 0), EXIT]]),
            neg(-5),
            "neg"
        );
    }

    #[test]
    fn alu32_ops_zero_extend() {
        let hi = 0xdead_beef_0000_0000u64;
        let cases: [(u8, i16, u64, u64, u64); 14] = [
            (0x04, 0, hi | 0xffff_ffff, 2, 1),                // add
            (0x14, 0, hi, 1, 0xffff_ffff),                    // sub
            (0x24, 0, hi | 0x10000, 0x10000, 0),              // mul
            (0x34, 0, hi | 7, 0, 0),                          // div by zero
            (0x94, 0, hi | 7, 0, 7), // mod by zero: dividend, upper half cleared
            (0x34, 1, 0xffff_fff9, 2, 0xffff_fffd), // sdiv -7 / 2
            (0x94, 1, 0xffff_fff9, 2, 0xffff_ffff), // smod -7 % 2
            (0x34, 1, 0x8000_0000, 0xffff_ffff, 0x8000_0000), // sdiv MIN / -1
            (0x44, 0, hi | 1, 2, 3), // or
            (0x54, 0, hi | 3, 6, 2), // and
            (0xa4, 0, hi | 3, 6, 5), // xor
            (0x64, 0, 1, 33, 2),     // lsh amount masked to 5 bits
            (0x74, 0, hi | 0x8000_0000, 31, 1), // rsh
            (0xc4, 0, 0x8000_0000, 4, 0xf800_0000), // arsh
        ];
        for (code, off, a, b, want) in cases {
            assert_eq!(
                alu(code, off, a, b),
                want,
                "code {code:#x} off {off}: {a:#x} op {b:#x}"
            );
        }
        assert_eq!(
            r0(&[&ld64(0, hi | 1), &[x(0x84, 0, 0, 0, 0), EXIT]]),
            0xffff_ffff,
            "neg32"
        );
        assert_eq!(
            r0(&[&[x(0xb4, 0, 0, 0, -1), EXIT]]),
            0xffff_ffff,
            "mov32 imm"
        );
        assert_eq!(
            r0(&[&ld64(1, hi | 9), &[x(0xbc, 0, 1, 0, 0), EXIT]]),
            9,
            "mov32 reg"
        );
    }

    #[test]
    fn byte_swaps_and_sign_extending_moves() {
        let v = 0x1122_3344_5566_7788u64;
        let cases: [(u8, i32, u64); 9] = [
            (0xd4, 16, 0x7788),
            (0xd4, 32, 0x5566_7788),
            (0xd4, 64, v),
            (0xdc, 16, 0x8877),
            (0xdc, 32, 0x8877_6655),
            (0xdc, 64, 0x8877_6655_4433_2211),
            (0xd7, 16, 0x8877), // bswap16 (v4)
            (0xd7, 32, 0x8877_6655),
            (0xd7, 64, 0x8877_6655_4433_2211),
        ];
        for (code, bits, want) in cases {
            assert_eq!(
                r0(&[&ld64(0, v), &[x(code, 0, 0, 0, bits), EXIT]]),
                want,
                "{code:#x}/{bits}"
            );
        }
        let movsx = |code, bits, src: u64| r0(&[&ld64(1, src), &[x(code, 0, 1, bits, 0), EXIT]]);
        assert_eq!(movsx(0xbf, 8, 0x80), 0xffff_ffff_ffff_ff80);
        assert_eq!(movsx(0xbf, 16, 0x7fff), 0x7fff);
        assert_eq!(movsx(0xbf, 32, 0x8000_0000), 0xffff_ffff_8000_0000);
        assert_eq!(movsx(0xbc, 16, 0x8000), 0xffff_8000);
    }

    #[test]
    fn jumps_64_and_32() {
        let lo_neg1 = 0x0000_0001_ffff_ffffu64; // low half -1, 64-bit positive
        let m = u64::MAX;
        // (op, a, b, taken as JMP, taken as JMP32)
        let cases: [(u8, u64, u64, bool, bool); 16] = [
            (0x10, 1 << 32 | 5, 5, false, true),  // jeq
            (0x50, 1 << 32 | 5, 5, true, false),  // jne
            (0x20, 1 << 32, 1, true, false),      // jgt
            (0x30, 5, 5, true, true),             // jge
            (0xa0, 1, m, true, true),             // jlt
            (0xb0, 1 << 32, 0, false, true),      // jle
            (0x40, 0b1010, 0b0100, false, false), // jset
            (0x40, 1 << 33 | 2, 1 << 33, true, false),
            (0x60, m, 1, false, false), // jsgt: -1 > 1
            (0x60, lo_neg1, 1, true, false),
            (0x70, 1, 1, true, true), // jsge
            (0xc0, m, 1, true, true), // jslt
            (0xc0, lo_neg1, 1, false, true),
            (0xd0, 2, 2, true, true), // jsle
            (0xd0, 3, 2, false, false),
            (0x20, m, 1, true, true), // jgt unsigned
        ];
        for (op, a, b, t64, t32) in cases {
            for (class, want) in [(0x05u8, t64), (0x06, t32)] {
                let tail = [
                    x(0xb7, 0, 0, 0, 0),
                    x(class | op | 0x08, 1, 2, 1, 0),
                    EXIT,
                    x(0xb7, 0, 0, 0, 1),
                    EXIT,
                ];
                let got = r0(&[&ld64(1, a), &ld64(2, b), &tail]) == 1;
                assert_eq!(got, want, "class {class:#x} op {op:#x}: {a:#x} vs {b:#x}");
                if let Ok(imm) = i32::try_from(b as i64) {
                    let tail = [
                        x(0xb7, 0, 0, 0, 0),
                        x(class | op, 1, 0, 1, imm),
                        EXIT,
                        x(0xb7, 0, 0, 0, 1),
                        EXIT,
                    ];
                    assert_eq!(
                        r0(&[&ld64(1, a), &tail]) == 1,
                        want,
                        "imm form of {class:#x}/{op:#x}"
                    );
                }
            }
        }
        // ja, and the v4 JMP32 ja with its offset in imm.
        assert_eq!(
            r0(&[&[
                x(0xb7, 0, 0, 0, 1),
                x(0x05, 0, 0, 1, 0),
                x(0xb7, 0, 0, 0, 2),
                EXIT
            ]]),
            1
        );
        assert_eq!(
            r0(&[&[
                x(0xb7, 0, 0, 0, 1),
                x(0x06, 0, 0, 0, 1),
                x(0xb7, 0, 0, 0, 2),
                EXIT
            ]]),
            1
        );
    }

    #[test]
    fn bpf_to_bpf_calls_keep_callee_saved_registers() {
        let p = prog(&[&[
            x(0xb7, 6, 0, 0, 7),   // r6 = 7
            x(0x7b, 10, 6, -8, 0), // *(u64 *)(r10 - 8) = r6
            x(0x85, 0, 1, 0, 4),   // call pc+4
            x(0x79, 1, 10, -8, 0), // r1 = *(u64 *)(r10 - 8): the caller's frame is intact
            x(0x0f, 0, 6, 0, 0),   // r0 += r6
            x(0x0f, 0, 1, 0, 0),   // r0 += r1
            EXIT,
            x(0xb7, 6, 0, 0, 100), // callee: clobber r6
            x(0x7b, 10, 6, -8, 0), // and its own stack frame
            x(0xb7, 0, 0, 0, 1000),
            EXIT,
        ]]);
        assert_eq!(run_on(&p, &mut XdpBuff::new(&[0; 60])).unwrap().r0, 1014);
        let deep = prog(&[&[x(0x85, 0, 1, 0, -1), EXIT]]);
        let e = run_on(&deep, &mut XdpBuff::new(&[0; 60])).unwrap_err();
        assert!(e.to_string().contains("call frames"), "{e}");
    }

    #[test]
    fn every_memory_width() {
        let v = 0x1122_3344_5566_7788u64;
        let load = |code: u8, off: i16| {
            r0(&[
                &ld64(1, v),
                &[
                    x(0x7b, 10, 1, -8, 0),
                    x(0x7a, 10, 0, -16, -1),
                    x(code, 0, 10, off, 0),
                    EXIT,
                ],
            ])
        };
        assert_eq!(load(0x71, -8), 0x88); // u8
        assert_eq!(load(0x69, -8), 0x7788); // u16
        assert_eq!(load(0x61, -4), 0x1122_3344); // u32
        assert_eq!(load(0x79, -8), v); // u64
        assert_eq!(load(0x91, -8), 0xffff_ffff_ffff_ff88); // s8
        assert_eq!(load(0x89, -8), 0x7788); // s16
        assert_eq!(load(0x81, -16), u64::MAX); // s32 of the ST DW -1
        assert_eq!(load(0x79, -16), u64::MAX); // ST DW imm is sign-extended
                                               // Narrow stores, register and immediate, into the packet.
        let p = prog(&[&[
            x(0x61, 2, 1, 0, 0),      // r2 = ctx->data
            x(0x72, 2, 0, 0, 0x11),   // *(u8 *)(r2 + 0) = 0x11
            x(0x6a, 2, 0, 1, 0x2233), // *(u16 *)(r2 + 1) = 0x2233
            x(0xb7, 3, 0, 0, 0x4455_6677),
            x(0x63, 2, 3, 3, 0),  // *(u32 *)(r2 + 3) = r3
            x(0x7b, 2, 3, 7, 0),  // *(u64 *)(r2 + 7) = r3
            x(0x73, 2, 3, 15, 0), // *(u8 *)(r2 + 15) = r3
            EXIT,
        ]]);
        let mut f = XdpBuff::new(&[0; 20]);
        run_on(&p, &mut f).unwrap();
        assert_eq!(
            f.data(),
            &[
                0x11, 0x33, 0x22, 0x77, 0x66, 0x55, 0x44, 0x77, 0x66, 0x55, 0x44, 0, 0, 0, 0, 0x77,
                0, 0, 0, 0
            ]
        );
    }

    #[test]
    fn atomics_on_the_stack() {
        let run = |insns: &[[u8; 8]]| {
            let setup = [x(0x7a, 10, 0, -8, 10), x(0xb7, 1, 0, 0, 3)]; // *(u64 *)(r10 - 8) = 10; r1 = 3
            r0(&[
                &setup,
                insns,
                &[
                    x(0x79, 2, 10, -8, 0),
                    x(0x27, 0, 0, 0, 1000),
                    x(0x0f, 0, 2, 0, 0),
                    EXIT,
                ],
            ])
        };
        // r0 * 1000 + memory afterwards
        assert_eq!(
            run(&[x(0xdb, 10, 1, -8, 0x00), x(0xbf, 0, 1, 0, 0)]),
            3 * 1000 + 13
        ); // add
        assert_eq!(
            run(&[x(0xdb, 10, 1, -8, 0x01), x(0xbf, 0, 1, 0, 0)]),
            10 * 1000 + 13
        ); // fetch_add
        assert_eq!(
            run(&[x(0xdb, 10, 1, -8, 0x41), x(0xbf, 0, 1, 0, 0)]),
            10 * 1000 + 11
        ); // fetch_or
        assert_eq!(
            run(&[x(0xdb, 10, 1, -8, 0x51), x(0xbf, 0, 1, 0, 0)]),
            10 * 1000 + 2
        ); // fetch_and
        assert_eq!(
            run(&[x(0xdb, 10, 1, -8, 0xa1), x(0xbf, 0, 1, 0, 0)]),
            10 * 1000 + 9
        ); // fetch_xor
        assert_eq!(
            run(&[x(0xdb, 10, 1, -8, 0xe1), x(0xbf, 0, 1, 0, 0)]),
            10 * 1000 + 3
        ); // xchg
        assert_eq!(
            run(&[x(0xb7, 0, 0, 0, 10), x(0xdb, 10, 1, -8, 0xf1)]),
            10 * 1000 + 3
        ); // cmpxchg hit
        assert_eq!(
            run(&[x(0xb7, 0, 0, 0, 9), x(0xdb, 10, 1, -8, 0xf1)]),
            10 * 1000 + 10
        ); // cmpxchg miss
           // 32-bit: wraps within the word, fetch zero-extends.
        assert_eq!(
            run(&[
                x(0xb7, 1, 0, 0, -1),
                x(0xc3, 10, 1, -8, 0x01),
                x(0xbf, 0, 1, 0, 0)
            ]),
            10 * 1000 + 9
        );
    }

    fn fails(insns: &[[u8; 8]], frame_len: usize, why: &str) {
        let e = run_on(&prog(&[insns]), &mut XdpBuff::new(&vec![0; frame_len])).unwrap_err();
        assert!(
            matches!(e, BpfError::BadAccess { .. }) && e.to_string().contains(why),
            "{e} lacks {why:?}"
        );
    }

    #[test]
    fn bounds_are_checked() {
        let data = x(0x61, 2, 1, 0, 0);
        let data_end = x(0x61, 3, 1, XDP_MD_DATA_END as i16, 0);
        fails(&[x(0x61, 0, 1, 24, 0), EXIT], 60, "unmapped");
        fails(&[x(0x71, 0, 1, 0, 0), EXIT], 60, "aligned __u32");
        fails(&[x(0x62, 1, 0, 0, 1), EXIT], 60, "only read field by field");
        fails(&[data_end, x(0x71, 0, 3, 0, 0), EXIT], 60, "past data_end");
        fails(&[data, x(0x61, 0, 2, 58, 0), EXIT], 60, "past data_end");
        fails(
            &[data, x(0x71, 0, 2, -1, 0), EXIT],
            60,
            "before data_meta/data",
        );
        fails(&[x(0x7a, 10, 0, -520, 0), EXIT], 60, "outside the stack");
        fails(&[x(0x7a, 10, 0, 0, 0), EXIT], 60, "outside the stack");
        fails(&[x(0x62, 10, 0, -6, 0), EXIT], 60, "misaligned");
        fails(&[x(0x79, 0, 0, 0, 0), EXIT], 60, "unmapped");
        fails(
            &[x(0xdb, 2, 0, 0, 0), data, x(0xdb, 2, 0, 1, 0), EXIT],
            60,
            "unmapped",
        );
        // The edges themselves are fine.
        let ok = prog(&[&[x(0x7a, 10, 0, -512, 1), data, x(0x71, 0, 2, 59, 0), EXIT]]);
        assert!(run_on(&ok, &mut XdpBuff::new(&[0; 60])).is_ok());
    }

    #[test]
    fn budget_stops_runaway_loops_and_counts_instructions() {
        let spin = prog(&[&[x(0x05, 0, 0, -1, 0), EXIT]]);
        let e = Vm::with_budget(1000)
            .run_xdp(&spin, &mut XdpBuff::new(&[0; 60]), &mut BasicEnv::default())
            .unwrap_err();
        assert_eq!(
            e,
            BpfError::BudgetExhausted {
                pc: 0,
                budget: 1000
            }
        );
        let p = prog(&[&ld64(0, 3), &[x(0x07, 0, 0, 0, 1), EXIT]]);
        let run = run_on(&p, &mut XdpBuff::new(&[0; 60])).unwrap();
        assert_eq!((run.action, run.insns, run.helper_calls), (4, 3, 0));
    }

    #[test]
    fn reused_vm_starts_each_run_with_a_clean_stack() {
        let p = prog(&[&[x(0x79, 0, 10, -8, 0), x(0x7a, 10, 0, -8, 5), EXIT]]);
        let mut vm = Vm::new();
        let mut env = BasicEnv::default();
        for _ in 0..2 {
            assert_eq!(
                vm.run_xdp(&p, &mut XdpBuff::new(&[0; 60]), &mut env)
                    .unwrap()
                    .r0,
                0
            );
        }
    }

    /// MAC swap and XDP_TX: 16 instructions executed on a 64-byte frame.
    pub(crate) const MAC_SWAP: &str = "
        r2 = *(u32 *)(r1 + 4)
        r1 = *(u32 *)(r1 + 0)
        r3 = r1
        r3 += 14
        if r3 > r2 goto drop
        r2 = *(u32 *)(r1 + 0)
        r3 = *(u16 *)(r1 + 4)
        r4 = *(u32 *)(r1 + 6)
        r5 = *(u16 *)(r1 + 10)
        *(u32 *)(r1 + 0) = r4
        *(u16 *)(r1 + 4) = r5
        *(u32 *)(r1 + 6) = r2
        *(u16 *)(r1 + 10) = r3
        r0 = 3
        exit
    drop:
        r0 = 1
        exit";

    #[test]
    fn mac_swap_tx() {
        let p = crate::bpf::assemble("swap", MAC_SWAP).unwrap();
        let mut f: Vec<u8> = (0..64).collect();
        let mut x = XdpBuff::new(&f);
        let run = run_on(&p, &mut x).unwrap();
        assert_eq!((run.action, run.insns), (3, 15));
        f[..12].rotate_left(6);
        assert_eq!(x.data(), &f[..]);
    }

    /// xdp_count.c as clang -O2 compiles it (see testdata), assembled.
    const COUNTED: &str = "
        .map verdicts array 4 8 5
        r2 = *(u32 *)(r1 + 4)
        r1 = *(u32 *)(r1 + 0)
        r3 = 2
        *(u32 *)(r10 - 4) = r3
        r3 = r1
        r3 += 14
        if r2 >= r3 goto +2
        r1 = 1
        goto +6
        r2 = *(u8 *)(r1 + 12)
        r1 = *(u8 *)(r1 + 13)
        r1 <<= 8
        r1 |= r2
        if r1 != 1544 goto +2
        r1 = 3
        *(u32 *)(r10 - 4) = r1
        r2 = r10
        r2 += -4
        r1 = map[verdicts] ll
        call 1
        if r0 == 0 goto +2
        r1 = 1
        lock *(u64 *)(r0 + 0) += r1
        r0 = *(u32 *)(r10 - 4)
        exit";

    #[test]
    fn counted_program_counts_each_verdict_in_its_map_slot() {
        let mut maps = crate::bpf::Maps::new();
        let mut p = crate::bpf::assemble("counted", COUNTED).unwrap();
        p.bind_maps(&mut maps).unwrap();
        let mut env = crate::bpf::BasicEnv::new(maps);
        let mut arp = [0u8; 60];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let ip = {
            let mut f = vec![0u8; 60];
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            f
        };
        // ARP: XDP_TX (3); IPv4: XDP_PASS (2); a 10-byte frame: XDP_DROP (1).
        for (frame, want) in [
            (&arp[..], 3u32),
            (&ip[..], 2),
            (&arp[..10], 1),
            (&arp[..], 3),
        ] {
            let mut x = XdpBuff::new(frame);
            let run = Vm::new().run_xdp(&p, &mut x, &mut env).unwrap();
            assert_eq!(run.action, want);
        }
        let m = env.maps.by_name("verdicts").unwrap();
        let counts: Vec<u64> = (0..5).map(|k| m.read_u64(k).unwrap_or(0)).collect();
        assert_eq!(counts, vec![0, 1, 1, 2, 0]);
    }
}
