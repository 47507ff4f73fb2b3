//! The instruction syntax of the assembler (asm.rs): one line's tokens to encoded
//! instructions, with any label a jump or call still has to resolve.

use super::{Fix, Parsed, Tok, R};
use crate::bpf::helpers::helper_by_name;
use crate::bpf::insn::*;
use crate::bpf::maps::MapRef;

/// One line's tokens, the parse position, and the program's maps (a `map[name]`
/// reference adds the name).
pub(super) struct Line<'a> {
    pub(super) toks: Vec<Tok>,
    pub(super) pos: usize,
    pub(super) maps: &'a mut Vec<MapRef>,
}

fn reg_of(t: Option<&Tok>) -> Option<(u8, bool)> {
    let Some(Tok::Ident(s)) = t else { return None };
    let wide = match s.as_bytes().first() {
        Some(b'r') => true,
        Some(b'w') => false,
        _ => return None,
    };
    let n: u8 = s[1..].parse().ok()?;
    (n <= 10).then_some((n, wide))
}

fn mem_size(s: &str) -> Option<(u8, bool)> {
    Some(match s {
        "u8" => (BPF_B, false),
        "u16" => (BPF_H, false),
        "u32" => (BPF_W, false),
        "u64" => (BPF_DW, false),
        "s8" => (BPF_B, true),
        "s16" => (BPF_H, true),
        "s32" => (BPF_W, true),
        _ => return None,
    })
}

impl Line<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op)
            || matches!(self.peek(), Some(Tok::Ident(i)) if i == op)
        {
            self.pos += 1;
            return true;
        }
        false
    }

    fn expect(&mut self, op: &str) -> R<()> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(format!("expected {op:?}, found {}", self.found()))
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "end of line".into(),
            Some(Tok::Ident(s)) => format!("{s:?}"),
            Some(Tok::Num(n)) => n.to_string(),
            Some(Tok::Op(o)) => format!("{o:?}"),
        }
    }

    pub(super) fn end(&self) -> R<()> {
        if self.pos < self.toks.len() {
            return Err(format!("unexpected {} at end of instruction", self.found()));
        }
        Ok(())
    }

    fn reg(&mut self) -> R<(u8, bool)> {
        let r = reg_of(self.peek())
            .ok_or_else(|| format!("expected a register, found {}", self.found()))?;
        self.pos += 1;
        Ok(r)
    }

    fn num(&mut self) -> R<i128> {
        let neg = self.eat("-");
        if !neg {
            self.eat("+");
        }
        match self.next() {
            Some(Tok::Num(n)) => Ok(if neg { -n } else { n }),
            _ => {
                self.pos -= 1;
                Err(format!("expected a number, found {}", self.found()))
            }
        }
    }

    fn imm32(&mut self) -> R<i32> {
        let n = self.num()?;
        if n < i128::from(i32::MIN) || n > i128::from(u32::MAX) {
            return Err(format!("immediate {n} does not fit 32 bits"));
        }
        Ok(n as u32 as i32)
    }

    fn ident(&mut self) -> R<String> {
        match self.next() {
            Some(Tok::Ident(s)) => Ok(s),
            _ => {
                self.pos -= 1;
                Err(format!("expected a name, found {}", self.found()))
            }
        }
    }

    /// `(rN + off)` / `(rN - off)` / `(rN)`.
    fn addr(&mut self) -> R<(u8, i16)> {
        let (r, wide) = self.reg()?;
        if !wide {
            return Err("addresses use r registers".into());
        }
        let off = if matches!(self.peek(), Some(Tok::Op("+" | "-"))) {
            self.num()?
        } else {
            0
        };
        let off = i16::try_from(off).map_err(|_| format!("offset {off} does not fit 16 bits"))?;
        Ok((r, off))
    }

    /// `(u32 *)(r1 + 4)` after the leading `*`: (size code, sign-extending, reg, off).
    fn memref(&mut self) -> R<(u8, bool, u8, i16)> {
        self.expect("(")?;
        let sz = self.ident()?;
        let (size, sx) = mem_size(&sz).ok_or_else(|| format!("unknown access size {sz:?}"))?;
        self.expect("*")?;
        self.expect(")")?;
        self.expect("(")?;
        let (r, off) = self.addr()?;
        self.expect(")")?;
        Ok((size, sx, r, off))
    }

    fn map_slot(&mut self, name: &str) -> u32 {
        match self.maps.iter().position(|m| m.name == name) {
            Some(i) => i as u32,
            None => {
                self.maps.push(MapRef::named(name));
                (self.maps.len() - 1) as u32
            }
        }
    }
}

fn alu_code(op: &str) -> Option<(u8, i16)> {
    Some(match op {
        "+=" => (BPF_ADD, 0),
        "-=" => (BPF_SUB, 0),
        "*=" => (BPF_MUL, 0),
        "/=" => (BPF_DIV, 0),
        "s/=" => (BPF_DIV, 1),
        "%=" => (BPF_MOD, 0),
        "s%=" => (BPF_MOD, 1),
        "|=" => (BPF_OR, 0),
        "&=" => (BPF_AND, 0),
        "^=" => (BPF_XOR, 0),
        "<<=" => (BPF_LSH, 0),
        ">>=" => (BPF_RSH, 0),
        "s>>=" => (BPF_ARSH, 0),
        "=" => (BPF_MOV, 0),
        _ => return None,
    })
}

fn jmp_code(op: &str) -> Option<u8> {
    Some(match op {
        "==" => BPF_JEQ,
        "!=" => BPF_JNE,
        ">" => BPF_JGT,
        ">=" => BPF_JGE,
        "<" => BPF_JLT,
        "<=" => BPF_JLE,
        "s>" => BPF_JSGT,
        "s>=" => BPF_JSGE,
        "s<" => BPF_JSLT,
        "s<=" => BPF_JSLE,
        "&" => BPF_JSET,
        _ => return None,
    })
}

fn swap_op(name: &str) -> Option<(u8, u8, i32)> {
    let (class, order, bits) = if let Some(b) = name.strip_prefix("bswap") {
        (BPF_ALU64, BPF_TO_LE, b)
    } else if let Some(b) = name.strip_prefix("be") {
        (BPF_ALU, BPF_TO_BE, b)
    } else {
        (BPF_ALU, BPF_TO_LE, name.strip_prefix("le")?)
    };
    let bits: i32 = bits.parse().ok()?;
    matches!(bits, 16 | 32 | 64).then_some((class, order, bits))
}

fn one(i: Insn) -> R<Parsed> {
    Ok((vec![i], None))
}

/// An instruction whose label, if any, a jump fixup resolves later.
fn jump(i: Insn, label: Option<String>) -> R<Parsed> {
    Ok((vec![i], label.map(|s| (s, Fix::Jump))))
}

/// A jump target: a relative `+N`/`-N` or a label still to resolve.
fn jump_target(l: &mut Line<'_>) -> R<(i16, Option<String>)> {
    if matches!(l.peek(), Some(Tok::Op("+" | "-"))) {
        let n = l.num()?;
        return Ok((
            i16::try_from(n).map_err(|_| format!("jump offset {n} does not fit 16 bits"))?,
            None,
        ));
    }
    Ok((0, Some(l.ident()?)))
}

/// Parse one instruction; a label target, if any, is returned for later resolution.
pub(super) fn parse_insn(l: &mut Line<'_>) -> R<Parsed> {
    let Some(first) = l.peek().cloned() else {
        return Ok((vec![], None));
    };
    let w = match first {
        Tok::Ident(w) => w,
        Tok::Op("*") => {
            l.pos += 1;
            return parse_store(l);
        }
        _ => return parse_assign(l),
    };
    match w.as_str() {
        "exit" => {
            l.pos += 1;
            one(Insn::new(BPF_JMP | BPF_EXIT, 0, 0, 0, 0))
        }
        "call" => {
            l.pos += 1;
            parse_call(l)
        }
        "goto" => {
            l.pos += 1;
            let (off, label) = jump_target(l)?;
            jump(Insn::new(BPF_JMP | BPF_JA, 0, 0, off, 0), label)
        }
        "if" => {
            l.pos += 1;
            parse_cond_jump(l)
        }
        "lock" => {
            l.pos += 1;
            parse_lock(l)
        }
        _ if swap_op(&w).is_some() => {
            l.pos += 1;
            let (dst, _) = l.reg()?;
            one(swap_insn(&w, dst)?)
        }
        _ => parse_assign(l),
    }
}

/// `call 44`, `call bpf_helper_name`, or `call label` (a bpf-to-bpf call).
fn parse_call(l: &mut Line<'_>) -> R<Parsed> {
    if let Some(Tok::Num(_)) = l.peek() {
        return one(Insn::new(BPF_JMP | BPF_CALL, 0, 0, 0, l.imm32()?));
    }
    let name = l.ident()?;
    match helper_by_name(&name) {
        Some(id) => one(Insn::new(BPF_JMP | BPF_CALL, 0, 0, 0, id as i32)),
        None => Ok((
            vec![Insn::new(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 0)],
            Some((name, Fix::Call)),
        )),
    }
}

/// `if rD OP (rS | imm) goto target` after the `if`; w-registers make it JMP32.
fn parse_cond_jump(l: &mut Line<'_>) -> R<Parsed> {
    let (dst, wide) = l.reg()?;
    let op = match l.next() {
        Some(Tok::Op(o)) => jmp_code(o).ok_or_else(|| format!("unknown condition {o:?}"))?,
        _ => return Err("expected a condition".into()),
    };
    let class = if wide { BPF_JMP } else { BPF_JMP32 };
    let (src_bits, src, imm) = match reg_of(l.peek()) {
        Some((s, w)) if w == wide => {
            l.pos += 1;
            (BPF_X, s, 0)
        }
        Some(_) => return Err("mixed r and w registers".into()),
        None => (BPF_K, 0, l.imm32()?),
    };
    l.expect("goto")?;
    let (off, label) = jump_target(l)?;
    jump(Insn::new(class | op | src_bits, dst, src, off, imm), label)
}

/// `lock *(u64 *)(rD + off) OP= rS` after the `lock`: a non-fetching atomic.
fn parse_lock(l: &mut Line<'_>) -> R<Parsed> {
    l.expect("*")?;
    let (size, sx, dst, off) = l.memref()?;
    let op = match l.next() {
        Some(Tok::Op("+=")) => BPF_ADD,
        Some(Tok::Op("|=")) => BPF_OR,
        Some(Tok::Op("&=")) => BPF_AND,
        Some(Tok::Op("^=")) => BPF_XOR,
        _ => return Err("expected += |= &= or ^= after lock".into()),
    };
    let (src, _) = l.reg()?;
    if sx || (size != BPF_W && size != BPF_DW) {
        return Err("atomics are u32 or u64".into());
    }
    one(Insn::new(
        BPF_STX | BPF_ATOMIC | size,
        dst,
        src,
        off,
        i32::from(op),
    ))
}

/// `*(u16 *)(rD + off) = (rS | imm)` after the leading `*`.
fn parse_store(l: &mut Line<'_>) -> R<Parsed> {
    let (size, sx, dst, off) = l.memref()?;
    if sx {
        return Err("stores take u8/u16/u32/u64".into());
    }
    l.expect("=")?;
    match reg_of(l.peek()) {
        Some((src, _)) => {
            l.pos += 1;
            one(Insn::new(BPF_STX | BPF_MEM | size, dst, src, off, 0))
        }
        None => one(Insn::new(BPF_ST | BPF_MEM | size, dst, 0, off, l.imm32()?)),
    }
}

/// The in-place byte swap named `w` (be16, le32, bswap64, ...) of `dst`.
fn swap_insn(w: &str, dst: u8) -> R<Insn> {
    let (class, order, bits) = swap_op(w).ok_or("bad byte swap")?;
    Ok(Insn::new(class | BPF_END | order, dst, 0, 0, bits))
}

/// Everything of the form `rD op ...`.
fn parse_assign(l: &mut Line<'_>) -> R<Parsed> {
    let (dst, wide) = l.reg()?;
    let class = if wide { BPF_ALU64 } else { BPF_ALU };
    let op = match l.next() {
        Some(Tok::Op(o)) => o,
        _ => return Err("expected an assignment operator".into()),
    };
    let (code, off) = alu_code(op).ok_or_else(|| format!("unknown operator {op:?}"))?;
    if code != BPF_MOV {
        return match reg_of(l.peek()) {
            Some((src, _)) => {
                l.pos += 1;
                one(Insn::new(class | code | BPF_X, dst, src, off, 0))
            }
            None => one(Insn::new(class | code | BPF_K, dst, 0, off, l.imm32()?)),
        };
    }
    // rD = ...
    match l.peek().cloned() {
        Some(Tok::Op("*")) => {
            l.pos += 1;
            let (size, sx, src, off) = l.memref()?;
            let mode = if sx { BPF_MEMSX } else { BPF_MEM };
            one(Insn::new(BPF_LDX | mode | size, dst, src, off, 0))
        }
        Some(Tok::Op("-")) if reg_of(l.toks.get(l.pos + 1)).is_some() => {
            l.pos += 1;
            let (src, _) = l.reg()?;
            if src != dst {
                return Err("neg works in place: rN = -rN".into());
            }
            one(Insn::new(class | BPF_NEG, dst, 0, 0, 0))
        }
        Some(Tok::Op("(")) => {
            l.pos += 1;
            parse_sign_extend(l, dst, class)
        }
        Some(Tok::Ident(w)) if w == "map" || w == "map_value" => {
            l.pos += 1;
            parse_map_ref(l, dst, w == "map")
        }
        Some(Tok::Ident(w)) if swap_op(&w).is_some() => {
            l.pos += 1;
            let (src, _) = l.reg()?;
            if src != dst {
                return Err("byte swaps work in place: rN = be16 rN".into());
            }
            one(swap_insn(&w, dst)?)
        }
        Some(Tok::Ident(w))
            if w.starts_with("atomic_fetch_")
                || w.starts_with("xchg")
                || w.starts_with("cmpxchg") =>
        {
            l.pos += 1;
            parse_fetch_atomic(l, dst, &w)
        }
        _ => parse_mov(l, dst, wide, class),
    }
}

/// `rD = (s8)rS` after the `(`: the sign-extending mov (off = source bits).
fn parse_sign_extend(l: &mut Line<'_>, dst: u8, class: u8) -> R<Parsed> {
    let sz = l.ident()?;
    let bits = match sz.as_str() {
        "s8" => 8,
        "s16" => 16,
        "s32" => 32,
        _ => return Err(format!("unknown cast {sz:?}")),
    };
    l.expect(")")?;
    let (src, _) = l.reg()?;
    one(Insn::new(class | BPF_MOV | BPF_X, dst, src, bits, 0))
}

/// `rD = map[name] ll` (BPF_PSEUDO_MAP_FD) or `rD = map_value[name] + off ll`
/// (BPF_PSEUDO_MAP_VALUE) after the `map`/`map_value`: a two-slot ld_imm64.
fn parse_map_ref(l: &mut Line<'_>, dst: u8, fd: bool) -> R<Parsed> {
    l.expect("[")?;
    let name = l.ident()?;
    l.expect("]")?;
    let slot = l.map_slot(&name) as i32;
    let (src, extra) = if fd {
        (BPF_PSEUDO_MAP_FD, 0)
    } else {
        (
            BPF_PSEUDO_MAP_VALUE,
            if matches!(l.peek(), Some(Tok::Op("+"))) {
                l.imm32()?
            } else {
                0
            },
        )
    };
    l.eat("ll");
    Ok((
        vec![
            Insn::new(BPF_LD | BPF_IMM | BPF_DW, dst, src, 0, slot),
            Insn::new(0, 0, 0, 0, extra),
        ],
        None,
    ))
}

/// The fetching atomics after their name `w`: `rS = atomic_fetch_add((u64 *)(rB + off), rS)`,
/// `rS = xchg_64(rB + off, rS)`, `r0 = cmpxchg_64(rB + off, r0, rS)`.
fn parse_fetch_atomic(l: &mut Line<'_>, dst: u8, w: &str) -> R<Parsed> {
    let op = match w {
        "atomic_fetch_add" => i32::from(BPF_ADD) | BPF_FETCH,
        "atomic_fetch_or" => i32::from(BPF_OR) | BPF_FETCH,
        "atomic_fetch_and" => i32::from(BPF_AND) | BPF_FETCH,
        "atomic_fetch_xor" => i32::from(BPF_XOR) | BPF_FETCH,
        "xchg_64" | "xchg32_32" => BPF_XCHG,
        "cmpxchg_64" | "cmpxchg32_32" => BPF_CMPXCHG,
        _ => return Err(format!("unknown atomic {w:?}")),
    };
    l.expect("(")?;
    let (size, base, off) = if w.starts_with("atomic_fetch_") {
        let (size, _, b, o) = l.memref()?;
        (size, b, o)
    } else {
        let (b, o) = l.addr()?;
        (if w.ends_with("_64") { BPF_DW } else { BPF_W }, b, o)
    };
    l.expect(",")?;
    if op == BPF_CMPXCHG {
        let (r0, _) = l.reg()?;
        if r0 != 0 || dst != 0 {
            return Err("cmpxchg compares and returns r0".into());
        }
        l.expect(",")?;
    }
    let (src, _) = l.reg()?;
    l.expect(")")?;
    if op != BPF_CMPXCHG && src != dst {
        return Err("fetch atomics return into their source register".into());
    }
    one(Insn::new(BPF_STX | BPF_ATOMIC | size, base, src, off, op))
}

/// `rD = rS`, `rD = imm`, or `rD = imm ll` (ld_imm64, r registers only).
fn parse_mov(l: &mut Line<'_>, dst: u8, wide: bool, class: u8) -> R<Parsed> {
    if let Some((src, _)) = reg_of(l.peek()) {
        l.pos += 1;
        return one(Insn::new(class | BPF_MOV | BPF_X, dst, src, 0, 0));
    }
    let n = l.num()?;
    if l.eat("ll") {
        if !wide {
            return Err("ld_imm64 needs an r register".into());
        }
        if n < i128::from(i64::MIN) || n > i128::from(u64::MAX) {
            return Err(format!("immediate {n} does not fit 64 bits"));
        }
        let v = n as u64;
        let (lo, hi) = (v as u32 as i32, (v >> 32) as u32 as i32);
        return Ok((
            vec![
                Insn::new(BPF_LD | BPF_IMM | BPF_DW, dst, 0, 0, lo),
                Insn::new(0, 0, 0, 0, hi),
            ],
            None,
        ));
    }
    if n < i128::from(i32::MIN) || n > i128::from(u32::MAX) {
        return Err(format!("immediate {n} does not fit 32 bits (use ll)"));
    }
    one(Insn::new(
        class | BPF_MOV | BPF_K,
        dst,
        0,
        0,
        n as u32 as i32,
    ))
}
