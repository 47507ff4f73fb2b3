//! The eBPF instruction set: raw 8-byte instructions, their decoding into [`Op`]s, and
//! [`Program`], a validated instruction stream plus the maps it references.
//!
//! Encoding per include/uapi/linux/bpf.h and
//! Documentation/bpf/standardization/instruction-set.rst. Decoding also performs the
//! structural checks of the verifier (opcodes, registers, jump targets, constant
//! division by zero, shift ranges, helper numbers, a final exit or jump), so that a
//! [`Program`] never holds an instruction the interpreter cannot execute.

use super::helpers;
use super::maps::{MapRef, Maps};
use super::BpfError;

pub const BPF_LD: u8 = 0x00;
pub const BPF_LDX: u8 = 0x01;
pub const BPF_ST: u8 = 0x02;
pub const BPF_STX: u8 = 0x03;
pub const BPF_ALU: u8 = 0x04;
pub const BPF_JMP: u8 = 0x05;
pub const BPF_JMP32: u8 = 0x06;
pub const BPF_ALU64: u8 = 0x07;

pub const BPF_W: u8 = 0x00;
pub const BPF_H: u8 = 0x08;
pub const BPF_B: u8 = 0x10;
pub const BPF_DW: u8 = 0x18;

pub const BPF_IMM: u8 = 0x00;
pub const BPF_ABS: u8 = 0x20;
pub const BPF_IND: u8 = 0x40;
pub const BPF_MEM: u8 = 0x60;
pub const BPF_MEMSX: u8 = 0x80;
pub const BPF_ATOMIC: u8 = 0xc0;

pub const BPF_K: u8 = 0x00;
pub const BPF_X: u8 = 0x08;

pub const BPF_ADD: u8 = 0x00;
pub const BPF_SUB: u8 = 0x10;
pub const BPF_MUL: u8 = 0x20;
pub const BPF_DIV: u8 = 0x30;
pub const BPF_OR: u8 = 0x40;
pub const BPF_AND: u8 = 0x50;
pub const BPF_LSH: u8 = 0x60;
pub const BPF_RSH: u8 = 0x70;
pub const BPF_NEG: u8 = 0x80;
pub const BPF_MOD: u8 = 0x90;
pub const BPF_XOR: u8 = 0xa0;
pub const BPF_MOV: u8 = 0xb0;
pub const BPF_ARSH: u8 = 0xc0;
pub const BPF_END: u8 = 0xd0;
pub const BPF_TO_LE: u8 = 0x00;
pub const BPF_TO_BE: u8 = 0x08;

pub const BPF_JA: u8 = 0x00;
pub const BPF_JEQ: u8 = 0x10;
pub const BPF_JGT: u8 = 0x20;
pub const BPF_JGE: u8 = 0x30;
pub const BPF_JSET: u8 = 0x40;
pub const BPF_JNE: u8 = 0x50;
pub const BPF_JSGT: u8 = 0x60;
pub const BPF_JSGE: u8 = 0x70;
pub const BPF_CALL: u8 = 0x80;
pub const BPF_EXIT: u8 = 0x90;
pub const BPF_JLT: u8 = 0xa0;
pub const BPF_JLE: u8 = 0xb0;
pub const BPF_JSLT: u8 = 0xc0;
pub const BPF_JSLE: u8 = 0xd0;

/// Atomic operations, in `imm` of a `BPF_STX | BPF_ATOMIC` instruction.
pub const BPF_FETCH: i32 = 0x01;
pub const BPF_XCHG: i32 = 0xe0 | BPF_FETCH;
pub const BPF_CMPXCHG: i32 = 0xf0 | BPF_FETCH;

/// `src_reg` of an ld_imm64: `imm` is a map (fd, here the program's map slot).
pub const BPF_PSEUDO_MAP_FD: u8 = 1;
/// `src_reg` of an ld_imm64: address of map value 0 of `imm`, plus the second `imm`.
pub const BPF_PSEUDO_MAP_VALUE: u8 = 2;
/// fd_array variants of the two above.
pub const BPF_PSEUDO_MAP_IDX: u8 = 5;
pub const BPF_PSEUDO_MAP_IDX_VALUE: u8 = 6;
/// `src_reg` of a call: bpf-to-bpf call, `imm` is the relative target.
pub const BPF_PSEUDO_CALL: u8 = 1;

/// One raw 8-byte instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    pub fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            dst,
            src,
            off,
            imm,
        }
    }

    /// Little-endian host layout, as on x86_64: dst_reg in the low nibble of byte 1.
    pub fn from_bytes(b: [u8; 8]) -> Insn {
        Insn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    pub fn to_bytes(self) -> [u8; 8] {
        let o = self.off.to_le_bytes();
        let i = self.imm.to_le_bytes();
        [
            self.code,
            (self.dst & 0x0f) | (self.src << 4),
            o[0],
            o[1],
            i[0],
            i[1],
            i[2],
            i[3],
        ]
    }

    pub fn class(self) -> u8 {
        self.code & 0x07
    }
}

/// Split a byte string into instructions.
pub fn parse_insns(bytes: &[u8]) -> Result<Vec<Insn>, BpfError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(BpfError::invalid(
            bytes.len() / 8,
            format!(
                "{} bytes is not a whole number of instructions",
                bytes.len()
            ),
        ));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| Insn::from_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

/// The bytes of an instruction stream.
pub fn insns_to_bytes(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.to_bytes()).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Div,
    SDiv,
    Or,
    And,
    Lsh,
    Rsh,
    Neg,
    Mod,
    SMod,
    Xor,
    Mov,
    Arsh,
}

/// Second operand: a register, or the immediate (sign-extended to 64 bits when used).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    Reg(u8),
    Imm(i32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    Eq,
    Gt,
    Ge,
    Set,
    Ne,
    Sgt,
    Sge,
    Lt,
    Le,
    Slt,
    Sle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemSize {
    B,
    H,
    W,
    DW,
}

impl MemSize {
    pub fn bytes(self) -> usize {
        match self {
            MemSize::B => 1,
            MemSize::H => 2,
            MemSize::W => 4,
            MemSize::DW => 8,
        }
    }

    fn from_code(code: u8) -> MemSize {
        match code & 0x18 {
            BPF_W => MemSize::W,
            BPF_H => MemSize::H,
            BPF_B => MemSize::B,
            _ => MemSize::DW,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Or,
    And,
    Xor,
    Xchg,
    CmpXchg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// BPF_TO_LE: on a little-endian host, truncation to the width.
    Le,
    /// BPF_TO_BE: byte swap of the low `bits`, zero-extended.
    Be,
    /// v4 `BPF_ALU64 | BPF_END`: unconditional byte swap.
    Swap,
}

/// A decoded instruction. Jump targets are absolute instruction indexes.
#[rustfmt::skip]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Alu64 { op: AluOp, dst: u8, src: Src },
    Alu32 { op: AluOp, dst: u8, src: Src },
    MovSx { wide: bool, dst: u8, src: u8, bits: u8 },
    End { order: ByteOrder, dst: u8, bits: u8 },
    LdImm64 { dst: u8, imm: u64 },
    LdMap { dst: u8, slot: u32 },
    LdMapValue { dst: u8, slot: u32, off: u32 },
    Ldx { size: MemSize, sx: bool, dst: u8, src: u8, off: i16 },
    St { size: MemSize, dst: u8, off: i16, imm: i32 },
    Stx { size: MemSize, dst: u8, src: u8, off: i16 },
    Atomic { size: MemSize, op: AtomicOp, fetch: bool, dst: u8, src: u8, off: i16 },
    Ja { target: u32 },
    Jmp { cond: Cond, wide: bool, dst: u8, src: Src, target: u32 },
    Call { helper: u32 },
    CallLocal { target: u32 },
    Exit,
    /// Second slot of an ld_imm64; never executed (jumps into it are refused).
    Pad,
}

/// Refuse instruction `pc` with a formatted reason.
macro_rules! bail {
    ($pc:expr, $($fmt:tt)+) => {
        return Err(BpfError::invalid($pc, format!($($fmt)+)))
    };
}

fn alu_op(code: u8, off: i16, pc: usize) -> Result<AluOp, BpfError> {
    let signed = match off {
        0 => false,
        1 if matches!(code & 0xf0, BPF_DIV | BPF_MOD) => true,
        _ => bail!(pc, "ALU op {code:#04x} with offset {off}"),
    };
    Ok(match code & 0xf0 {
        BPF_ADD => AluOp::Add,
        BPF_SUB => AluOp::Sub,
        BPF_MUL => AluOp::Mul,
        BPF_DIV if signed => AluOp::SDiv,
        BPF_DIV => AluOp::Div,
        BPF_OR => AluOp::Or,
        BPF_AND => AluOp::And,
        BPF_LSH => AluOp::Lsh,
        BPF_RSH => AluOp::Rsh,
        BPF_NEG => AluOp::Neg,
        BPF_MOD if signed => AluOp::SMod,
        BPF_MOD => AluOp::Mod,
        BPF_XOR => AluOp::Xor,
        BPF_MOV => AluOp::Mov,
        BPF_ARSH => AluOp::Arsh,
        _ => bail!(pc, "unknown ALU op {code:#04x}"),
    })
}

fn cond(code: u8, pc: usize) -> Result<Cond, BpfError> {
    Ok(match code & 0xf0 {
        BPF_JEQ => Cond::Eq,
        BPF_JGT => Cond::Gt,
        BPF_JGE => Cond::Ge,
        BPF_JSET => Cond::Set,
        BPF_JNE => Cond::Ne,
        BPF_JSGT => Cond::Sgt,
        BPF_JSGE => Cond::Sge,
        BPF_JLT => Cond::Lt,
        BPF_JLE => Cond::Le,
        BPF_JSLT => Cond::Slt,
        BPF_JSLE => Cond::Sle,
        _ => bail!(pc, "unknown jump op {code:#04x}"),
    })
}

fn reg(r: u8, pc: usize, write: bool) -> Result<u8, BpfError> {
    if r > 10 {
        bail!(pc, "invalid register r{r}");
    }
    if write && r == 10 {
        bail!(pc, "frame pointer is read-only: r10");
    }
    Ok(r)
}

/// The second operand: BPF_X takes src_reg (imm must be 0), BPF_K takes imm (src_reg 0).
fn src_operand(i: Insn, pc: usize) -> Result<Src, BpfError> {
    if i.code & BPF_X != 0 {
        if i.imm != 0 {
            bail!(pc, "register operand with non-zero imm");
        }
        Ok(Src::Reg(reg(i.src, pc, false)?))
    } else {
        if i.src != 0 {
            bail!(pc, "immediate operand with non-zero src_reg");
        }
        Ok(Src::Imm(i.imm))
    }
}

fn decode_alu(i: Insn, pc: usize) -> Result<Op, BpfError> {
    let (code, wide) = (i.code, i.class() == BPF_ALU64);
    let dst = reg(i.dst, pc, true)?;
    if code & 0xf0 == BPF_END {
        if !matches!(i.imm, 16 | 32 | 64) {
            bail!(pc, "byte swap of {} bits", i.imm);
        }
        if i.src != 0 || i.off != 0 {
            bail!(pc, "byte swap with src_reg or offset");
        }
        let order = match (wide, code & BPF_X) {
            (false, BPF_TO_LE) => ByteOrder::Le,
            (false, _) => ByteOrder::Be,
            (true, BPF_TO_LE) => ByteOrder::Swap,
            (true, _) => bail!(pc, "BPF_ALU64|BPF_END|BPF_X is reserved"),
        };
        return Ok(Op::End {
            order,
            dst,
            bits: i.imm as u8,
        });
    }
    if code & 0xf0 == BPF_MOV && i.off != 0 {
        if !matches!((i.off, wide), (8 | 16, _) | (32, true)) {
            bail!(pc, "movsx from {} bits", i.off);
        }
        let Src::Reg(src) = src_operand(i, pc)? else {
            bail!(pc, "movsx needs a register source")
        };
        return Ok(Op::MovSx {
            wide,
            dst,
            src,
            bits: i.off as u8,
        });
    }
    let op = alu_op(code, i.off, pc)?;
    let src = if op == AluOp::Neg {
        if code & BPF_X != 0 || i.src != 0 || i.imm != 0 {
            bail!(pc, "neg takes no operand");
        }
        Src::Imm(0)
    } else {
        src_operand(i, pc)?
    };
    if let Src::Imm(imm) = src {
        let width = if wide { 64 } else { 32 };
        match op {
            AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod if imm == 0 => {
                bail!(pc, "division by zero")
            }
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh if !(0..width).contains(&imm) => {
                bail!(pc, "invalid shift {imm}")
            }
            _ => {}
        }
    }
    Ok(if wide {
        Op::Alu64 { op, dst, src }
    } else {
        Op::Alu32 { op, dst, src }
    })
}

/// Jumps get their target later; `jumps` collects (pc, relative offset).
fn decode_jmp(i: Insn, pc: usize, jumps: &mut Vec<(usize, i64)>) -> Result<Op, BpfError> {
    let (code, wide) = (i.code, i.class() == BPF_JMP);
    match code & 0xf0 {
        BPF_JA => {
            if code & BPF_X != 0 || i.src != 0 || i.dst != 0 {
                bail!(pc, "malformed ja");
            }
            // JMP32|JA is the v4 long jump with the offset in imm.
            jumps.push((
                pc,
                if wide {
                    i64::from(i.off)
                } else {
                    i64::from(i.imm)
                },
            ));
            Ok(Op::Ja { target: 0 })
        }
        BPF_CALL if wide => {
            if code & BPF_X != 0 || i.dst != 0 || i.off != 0 {
                bail!(pc, "malformed call");
            }
            match i.src {
                0 if helpers::is_supported(i.imm as u32) => Ok(Op::Call {
                    helper: i.imm as u32,
                }),
                0 => bail!(pc, "unknown or unsupported helper #{}", i.imm),
                BPF_PSEUDO_CALL => {
                    jumps.push((pc, i64::from(i.imm)));
                    Ok(Op::CallLocal { target: 0 })
                }
                s => bail!(pc, "call with src_reg {s} (kfuncs are not supported)"),
            }
        }
        BPF_EXIT if wide => {
            if code & BPF_X != 0 || i.src != 0 || i.dst != 0 || i.off != 0 || i.imm != 0 {
                bail!(pc, "malformed exit");
            }
            Ok(Op::Exit)
        }
        _ => {
            let (cond, dst, src) = (cond(code, pc)?, reg(i.dst, pc, false)?, src_operand(i, pc)?);
            jumps.push((pc, i64::from(i.off)));
            Ok(Op::Jmp {
                cond,
                wide,
                dst,
                src,
                target: 0,
            })
        }
    }
}

/// ld_imm64 (the only BPF_LD allowed in XDP), `hi` being its second slot.
fn decode_ld(i: Insn, hi: Option<&Insn>, pc: usize, nmaps: usize) -> Result<Op, BpfError> {
    if i.code != BPF_LD | BPF_IMM | BPF_DW {
        if matches!(i.code & 0xe0, BPF_ABS | BPF_IND) {
            bail!(
                pc,
                "legacy packet loads (BPF_ABS/BPF_IND) are not allowed in XDP"
            );
        }
        bail!(pc, "unknown BPF_LD instruction {:#04x}", i.code);
    }
    let dst = reg(i.dst, pc, true)?;
    let Some(&hi) = hi else {
        bail!(pc, "ld_imm64 without its second slot")
    };
    if hi.code != 0 || hi.dst != 0 || hi.src != 0 || hi.off != 0 || i.off != 0 {
        bail!(pc + 1, "malformed second slot of ld_imm64");
    }
    let slot = i.imm as u32;
    if i.src != 0 && slot as usize >= nmaps {
        bail!(pc, "map slot {slot} out of range ({nmaps} maps)");
    }
    Ok(match i.src {
        0 => Op::LdImm64 {
            dst,
            imm: u64::from(i.imm as u32) | (u64::from(hi.imm as u32) << 32),
        },
        BPF_PSEUDO_MAP_FD | BPF_PSEUDO_MAP_IDX if hi.imm != 0 => {
            bail!(pc, "map reference with a non-zero second imm")
        }
        BPF_PSEUDO_MAP_FD | BPF_PSEUDO_MAP_IDX => Op::LdMap { dst, slot },
        BPF_PSEUDO_MAP_VALUE | BPF_PSEUDO_MAP_IDX_VALUE => Op::LdMapValue {
            dst,
            slot,
            off: hi.imm as u32,
        },
        s => bail!(pc, "ld_imm64 with unsupported src_reg {s}"),
    })
}

fn decode_mem(i: Insn, pc: usize) -> Result<Op, BpfError> {
    let (code, size) = (i.code, MemSize::from_code(i.code));
    match i.class() {
        BPF_LDX => {
            let sx = match code & 0xe0 {
                BPF_MEM => false,
                BPF_MEMSX if size != MemSize::DW => true,
                _ => bail!(pc, "unknown load {code:#04x}"),
            };
            if i.imm != 0 {
                bail!(pc, "load with non-zero imm");
            }
            let (dst, src) = (reg(i.dst, pc, true)?, reg(i.src, pc, false)?);
            Ok(Op::Ldx {
                size,
                sx,
                dst,
                src,
                off: i.off,
            })
        }
        BPF_ST if code & 0xe0 == BPF_MEM && i.src == 0 => Ok(Op::St {
            size,
            dst: reg(i.dst, pc, false)?,
            off: i.off,
            imm: i.imm,
        }),
        BPF_ST => bail!(pc, "unknown store {code:#04x}"),
        _ => {
            let (dst, src, off) = (reg(i.dst, pc, false)?, reg(i.src, pc, false)?, i.off);
            match code & 0xe0 {
                BPF_MEM if i.imm == 0 => Ok(Op::Stx {
                    size,
                    dst,
                    src,
                    off,
                }),
                BPF_ATOMIC if matches!(size, MemSize::W | MemSize::DW) => {
                    let op = match i.imm {
                        BPF_XCHG => AtomicOp::Xchg,
                        BPF_CMPXCHG if src == 0 => bail!(pc, "cmpxchg with r0 as the new value"),
                        BPF_CMPXCHG => AtomicOp::CmpXchg,
                        imm => match (imm & !BPF_FETCH) as u8 {
                            BPF_ADD => AtomicOp::Add,
                            BPF_OR => AtomicOp::Or,
                            BPF_AND => AtomicOp::And,
                            BPF_XOR => AtomicOp::Xor,
                            _ => bail!(pc, "unknown atomic op {imm:#x}"),
                        },
                    };
                    Ok(Op::Atomic {
                        size,
                        op,
                        fetch: i.imm & BPF_FETCH != 0,
                        dst,
                        src,
                        off,
                    })
                }
                _ => bail!(pc, "unknown store {code:#04x} imm {:#x}", i.imm),
            }
        }
    }
}

/// Decode and validate an instruction stream that references `nmaps` maps.
pub fn decode(insns: &[Insn], nmaps: usize) -> Result<Vec<Op>, BpfError> {
    let n = insns.len();
    if n == 0 {
        bail!(0, "empty program");
    }
    let mut ops = Vec::with_capacity(n);
    let mut jumps: Vec<(usize, i64)> = Vec::new();
    let mut pc = 0;
    while let Some(&i) = insns.get(pc) {
        match i.class() {
            BPF_ALU | BPF_ALU64 => ops.push(decode_alu(i, pc)?),
            BPF_JMP | BPF_JMP32 => ops.push(decode_jmp(i, pc, &mut jumps)?),
            BPF_LD => {
                ops.push(decode_ld(i, insns.get(pc + 1), pc, nmaps)?);
                ops.push(Op::Pad);
                pc += 1;
            }
            _ => ops.push(decode_mem(i, pc)?),
        }
        pc += 1;
    }
    for (at, rel) in jumps {
        let target = at as i64 + 1 + rel;
        // kernel/bpf/verifier.c: check_subprogs / push_insn wording.
        if target < 0 || target >= n as i64 {
            bail!(at, "jump out of range from insn {at} to {target}");
        }
        if ops[target as usize] == Op::Pad {
            bail!(
                at,
                "jump from insn {at} into the middle of ld_imm64 insn {}",
                target - 1
            );
        }
        if let Op::Ja { target: t } | Op::Jmp { target: t, .. } | Op::CallLocal { target: t } =
            &mut ops[at]
        {
            *t = target as u32;
        }
    }
    match ops[n - 1] {
        Op::Exit | Op::Ja { .. } => Ok(ops),
        _ => bail!(n - 1, "last insn is not an exit or jmp"),
    }
}

/// A validated program: its instructions, decoded ops and the maps it references.
///
/// Map references inside the instructions (ld_imm64 with src_reg 1/2/5/6) carry the
/// index of a [`MapRef`] in [`Program::map_refs`]. [`Program::bind_maps`] resolves those
/// names against a [`Maps`] set before the program runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub name: String,
    pub license: String,
    insns: Vec<Insn>,
    ops: Vec<Op>,
    map_refs: Vec<MapRef>,
    bound: Vec<u32>,
}

impl Program {
    pub fn new(name: &str, insns: Vec<Insn>, map_refs: Vec<MapRef>) -> Result<Program, BpfError> {
        let ops = decode(&insns, map_refs.len())?;
        Ok(Program {
            name: name.to_string(),
            license: "GPL".to_string(),
            insns,
            ops,
            map_refs,
            bound: Vec::new(),
        })
    }

    /// A program from raw instruction bytes (as in `BPF_PROG_LOAD`'s `insns`).
    pub fn from_bytes(
        name: &str,
        bytes: &[u8],
        map_refs: Vec<MapRef>,
    ) -> Result<Program, BpfError> {
        Program::new(name, parse_insns(bytes)?, map_refs)
    }

    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        insns_to_bytes(&self.insns)
    }

    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    pub fn map_refs(&self) -> &[MapRef] {
        &self.map_refs
    }

    /// Number of instruction slots (an ld_imm64 counts two).
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    /// Resolve each referenced map by name in `maps`, creating the ones that carry a
    /// [`MapSpec`](super::maps::MapSpec) and do not exist yet (as libbpf reuses pinned
    /// maps). An existing map must match the spec.
    pub fn bind_maps(&mut self, maps: &mut Maps) -> Result<(), BpfError> {
        let mut bound = Vec::with_capacity(self.map_refs.len());
        for r in &self.map_refs {
            bound.push(maps.resolve(r)?);
        }
        self.bound = bound;
        Ok(())
    }

    /// The [`Maps`] index bound to map slot `slot`.
    pub fn bound_map(&self, slot: u32) -> Result<u32, BpfError> {
        match self.bound.get(slot as usize) {
            Some(&i) => Ok(i),
            None => {
                let map = self
                    .map_refs
                    .get(slot as usize)
                    .map_or_else(|| format!("slot {slot}"), |r| r.name.clone());
                Err(BpfError::Unbound { map })
            }
        }
    }
}

#[cfg(test)]
#[path = "insn_tests.rs"]
mod tests;
