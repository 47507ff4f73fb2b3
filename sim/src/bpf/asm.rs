//! A small assembler for the llvm-objdump / kernel disassembly syntax, so that tests
//! and scenarios can carry programs without clang.
//!
//! ```text
//! .map counters array 4 8 5     ; name type key_size value_size max_entries
//! r2 = *(u32 *)(r1 + 4)         ; loads: u8 u16 u32 u64, sign-extending s8 s16 s32
//! r1 = *(u32 *)(r1 + 0)
//! r3 = r1                       ; mov; w-registers for 32-bit ALU: w3 = w1
//! r3 += 14                      ; += -= *= /= %= |= &= ^= <<= >>= s>>= s/= s%=
//! if r3 > r2 goto drop          ; == != > >= < <= s> s>= s< s<= &, w-regs for JMP32
//! *(u16 *)(r10 - 2) = r3        ; stores of a register or an immediate
//! lock *(u64 *)(r0 + 0) += r1   ; atomics: += |= &= ^=, and r1 = atomic_fetch_add((u64 *)(r0 + 0), r1),
//!                               ; r1 = xchg_64(r0 + 0, r1), r0 = cmpxchg_64(r1 + 0, r0, r2)
//! r1 = map[counters] ll         ; map reference (BPF_PSEUDO_MAP_FD); map_value[name] + off ll
//! r1 = 0x1122334455667788 ll    ; ld_imm64
//! be16 r1                       ; also le16/le32/le64, bswap16.., or r1 = be16 r1
//! r1 = -r1                      ; neg; r1 = (s8)r2 sign-extending mov
//! call bpf_xdp_adjust_head      ; or call 44; "call label" is a bpf-to-bpf call
//! goto +1                       ; relative offsets or labels
//! drop:
//! r0 = 1
//! exit
//! ```
//!
//! Comments start with `;`, `//` or `#`. A trailing `<LBB0_2>` (llvm-objdump's label
//! hint) is ignored. Errors carry the 1-based line number.

use super::helpers::helper_by_name;
use super::insn::*;
use super::maps::{MapRef, MapSpec, MapType};
use super::{BpfError, Program};

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Num(i128),
    Op(&'static str),
}

const OPS: [&str; 33] = [
    "s>>=", "<<=", ">>=", "s/=", "s%=", "s>=", "s<=", "+=", "-=", "*=", "/=", "%=", "|=", "&=",
    "^=", "==", "!=", ">=", "<=", "s>", "s<", ">", "<", "=", "&", "*", "(", ")", "+", "-", "[",
    "]", ",",
];

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
            let is_signed_op = op.starts_with('s');
            // "s8" or "skip" are identifiers, "s>" an operator.
            if !is_signed_op || rest.len() > 1 && !rest.as_bytes()[1].is_ascii_alphanumeric() {
                out.push(Tok::Op(op));
                rest = rest[op.len()..].trim_start();
                continue;
            }
        }
        let c = rest.as_bytes()[0];
        let end = rest
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.'))
            .unwrap_or(rest.len());
        if end == 0 {
            return Err(format!("unexpected character {:?}", c as char));
        }
        let word = &rest[..end];
        if c.is_ascii_digit() {
            let n = match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
                Some(h) => i128::from_str_radix(h, 16),
                None => word.parse::<i128>(),
            };
            out.push(Tok::Num(n.map_err(|_| format!("bad number {word:?}"))?));
        } else {
            out.push(Tok::Ident(word.to_string()));
        }
        rest = rest[end..].trim_start();
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fix {
    Jump,
    Call,
}

struct Line<'a> {
    toks: Vec<Tok>,
    pos: usize,
    maps: &'a mut Vec<MapRef>,
}

type R<T> = Result<T, String>;
/// Encoded instructions and the label a jump or call still has to resolve.
type Parsed = (Vec<Insn>, Option<(String, Fix)>);

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

    fn end(&self) -> R<()> {
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

/// Parse one instruction; a label target, if any, is returned for later resolution.
fn parse_insn(l: &mut Line<'_>) -> R<Parsed> {
    let one = |i: Insn| Ok((vec![i], None));
    let target = |l: &mut Line<'_>| -> R<(i16, Option<String>)> {
        if matches!(l.peek(), Some(Tok::Op("+" | "-"))) {
            let n = l.num()?;
            return Ok((
                i16::try_from(n).map_err(|_| format!("jump offset {n} does not fit 16 bits"))?,
                None,
            ));
        }
        Ok((0, Some(l.ident()?)))
    };
    let Some(first) = l.peek().cloned() else {
        return Ok((vec![], None));
    };
    match first {
        Tok::Ident(w) if w == "exit" => {
            l.pos += 1;
            one(Insn::new(BPF_JMP | BPF_EXIT, 0, 0, 0, 0))
        }
        Tok::Ident(w) if w == "call" => {
            l.pos += 1;
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
        Tok::Ident(w) if w == "goto" => {
            l.pos += 1;
            let (off, label) = target(l)?;
            Ok((
                vec![Insn::new(BPF_JMP | BPF_JA, 0, 0, off, 0)],
                label.map(|s| (s, Fix::Jump)),
            ))
        }
        Tok::Ident(w) if w == "if" => {
            l.pos += 1;
            let (dst, wide) = l.reg()?;
            let op = match l.next() {
                Some(Tok::Op(o)) => {
                    jmp_code(o).ok_or_else(|| format!("unknown condition {o:?}"))?
                }
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
            let (off, label) = target(l)?;
            Ok((
                vec![Insn::new(class | op | src_bits, dst, src, off, imm)],
                label.map(|s| (s, Fix::Jump)),
            ))
        }
        Tok::Ident(w) if w == "lock" => {
            l.pos += 1;
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
        Tok::Ident(w) if swap_op(&w).is_some() => {
            l.pos += 1;
            let (class, order, bits) = swap_op(&w).ok_or("bad byte swap")?;
            let (dst, _) = l.reg()?;
            one(Insn::new(class | BPF_END | order, dst, 0, 0, bits))
        }
        Tok::Op("*") => {
            l.pos += 1;
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
        _ => parse_assign(l),
    }
}

/// Everything of the form `rD op ...`.
fn parse_assign(l: &mut Line<'_>) -> R<Parsed> {
    let one = |i: Insn| Ok((vec![i], None));
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
        Some(Tok::Ident(w)) if w == "map" || w == "map_value" => {
            l.pos += 1;
            l.expect("[")?;
            let name = l.ident()?;
            l.expect("]")?;
            let slot = l.map_slot(&name) as i32;
            let (src, extra) = if w == "map" {
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
        Some(Tok::Ident(w)) if swap_op(&w).is_some() => {
            l.pos += 1;
            let (class, order, bits) = swap_op(&w).ok_or("bad byte swap")?;
            let (src, _) = l.reg()?;
            if src != dst {
                return Err("byte swaps work in place: rN = be16 rN".into());
            }
            one(Insn::new(class | BPF_END | order, dst, 0, 0, bits))
        }
        Some(Tok::Ident(w))
            if w.starts_with("atomic_fetch_")
                || w.starts_with("xchg")
                || w.starts_with("cmpxchg") =>
        {
            l.pos += 1;
            let op = match w.as_str() {
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
                l.expect("(")?;
                let sz = l.ident()?;
                let (size, _) =
                    mem_size(&sz).ok_or_else(|| format!("unknown access size {sz:?}"))?;
                l.expect("*")?;
                l.expect(")")?;
                l.expect("(")?;
                let (b, o) = l.addr()?;
                l.expect(")")?;
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
        _ => {
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
    }
}

fn map_type(s: &str) -> Option<MapType> {
    match s {
        "hash" => Some(MapType::Hash),
        "array" => Some(MapType::Array),
        "percpu_array" => Some(MapType::PercpuArray),
        "devmap" => Some(MapType::Devmap),
        "devmap_hash" => Some(MapType::DevmapHash),
        n => n.parse().ok().and_then(MapType::from_u32),
    }
}

/// Assemble `src` into a program named `name`.
pub fn assemble(name: &str, src: &str) -> Result<Program, BpfError> {
    let mut maps: Vec<MapRef> = Vec::new();
    let mut insns: Vec<Insn> = Vec::new();
    let mut labels: Vec<(String, usize)> = Vec::new();
    let mut fixups: Vec<(usize, String, Fix, usize)> = Vec::new();
    for (ln, raw) in src.lines().enumerate() {
        let line = ln + 1;
        let err = |msg: String| BpfError::Asm { line, msg };
        let mut text = raw;
        for c in [";", "//", "#"] {
            if let Some(i) = text.find(c) {
                text = &text[..i];
            }
        }
        let mut text = text.trim();
        if text.ends_with('>') {
            if let Some(i) = text.rfind(" <") {
                text = text[..i].trim_end();
            }
        }
        while let Some(colon) = text.find(':') {
            let label = text[..colon].trim();
            if label.is_empty()
                || !label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return Err(err(format!("bad label {label:?}")));
            }
            if labels.iter().any(|(l, _)| l == label) {
                return Err(err(format!("label {label:?} defined twice")));
            }
            labels.push((label.to_string(), insns.len()));
            text = text[colon + 1..].trim();
        }
        if let Some(def) = text.strip_prefix(".map") {
            let f: Vec<&str> = def.split_whitespace().collect();
            let [mname, ty, k, v, n] = f[..] else {
                return Err(err(".map NAME TYPE KEY_SIZE VALUE_SIZE MAX_ENTRIES".into()));
            };
            let ty = map_type(ty).ok_or_else(|| err(format!("unknown map type {ty:?}")))?;
            let num = |s: &str| {
                s.parse::<u32>()
                    .map_err(|_| err(format!("bad number {s:?}")))
            };
            let spec = MapSpec::new(ty, num(k)?, num(v)?, num(n)?);
            match maps.iter_mut().find(|m| m.name == mname) {
                Some(m) if m.spec.is_some() => {
                    return Err(err(format!("map {mname:?} defined twice")))
                }
                Some(m) => m.spec = Some(spec),
                None => maps.push(MapRef::defined(mname, spec)),
            }
            continue;
        }
        let toks = tokenize(text).map_err(err)?;
        let mut l = Line {
            toks,
            pos: 0,
            maps: &mut maps,
        };
        let (out, fix) = parse_insn(&mut l)
            .and_then(|r| l.end().map(|_| r))
            .map_err(err)?;
        if let Some((label, kind)) = fix {
            fixups.push((insns.len(), label, kind, line));
        }
        insns.extend(out);
    }
    for (at, label, kind, line) in fixups {
        let Some(&(_, target)) = labels.iter().find(|(l, _)| *l == label) else {
            let what = if kind == Fix::Call {
                "unknown helper or label"
            } else {
                "unknown label"
            };
            return Err(BpfError::Asm {
                line,
                msg: format!("{what} {label:?}"),
            });
        };
        let rel = target as i64 - at as i64 - 1;
        let insn = &mut insns[at];
        match kind {
            Fix::Jump => {
                insn.off = i16::try_from(rel).map_err(|_| BpfError::Asm {
                    line,
                    msg: format!("jump to {label:?} too far"),
                })?
            }
            Fix::Call => insn.imm = rel as i32,
        }
    }
    Program::new(name, insns, maps).map_err(|e| match e {
        BpfError::Invalid { pc, reason } => BpfError::Asm {
            line: 0,
            msg: format!("insn {pc}: {reason}"),
        },
        e => e,
    })
}

#[cfg(test)]
#[path = "asm_tests.rs"]
mod tests;
