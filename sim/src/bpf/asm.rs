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

type R<T> = Result<T, String>;
/// Encoded instructions and the label a jump or call still has to resolve.
type Parsed = (Vec<Insn>, Option<(String, Fix)>);

#[path = "asm_insn.rs"]
mod syntax;
use syntax::{parse_insn, Line};

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

/// A jump or call at `.0` to label `.1`, from source line `.3`.
type Fixup = (usize, String, Fix, usize);

/// The line without its comment (`;`, `//`, `#`) and llvm-objdump's `<LBB0_2>` hint.
fn strip_comment(raw: &str) -> &str {
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
    text
}

/// Define the leading `label:`s of `text` at instruction `at`; returns the rest.
fn take_labels<'t>(mut text: &'t str, labels: &mut Vec<(String, usize)>, at: usize) -> R<&'t str> {
    while let Some(colon) = text.find(':') {
        let label = text[..colon].trim();
        if label.is_empty()
            || !label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(format!("bad label {label:?}"));
        }
        if labels.iter().any(|(l, _)| l == label) {
            return Err(format!("label {label:?} defined twice"));
        }
        labels.push((label.to_string(), at));
        text = text[colon + 1..].trim();
    }
    Ok(text)
}

/// `.map NAME TYPE KEY_SIZE VALUE_SIZE MAX_ENTRIES` (after `.map`); a map may be
/// referenced before its definition, but defined once.
fn define_map(def: &str, maps: &mut Vec<MapRef>) -> R<()> {
    let f: Vec<&str> = def.split_whitespace().collect();
    let [mname, ty, k, v, n] = f[..] else {
        return Err(".map NAME TYPE KEY_SIZE VALUE_SIZE MAX_ENTRIES".into());
    };
    let ty = map_type(ty).ok_or_else(|| format!("unknown map type {ty:?}"))?;
    let num = |s: &str| s.parse::<u32>().map_err(|_| format!("bad number {s:?}"));
    let spec = MapSpec::new(ty, num(k)?, num(v)?, num(n)?);
    match maps.iter_mut().find(|m| m.name == mname) {
        Some(m) if m.spec.is_some() => return Err(format!("map {mname:?} defined twice")),
        Some(m) => m.spec = Some(spec),
        None => maps.push(MapRef::defined(mname, spec)),
    }
    Ok(())
}

/// Point each jump's `off` / bpf-to-bpf call's `imm` at its label, relative to the next insn.
fn resolve_fixups(
    insns: &mut [Insn],
    labels: &[(String, usize)],
    fixups: Vec<Fixup>,
) -> Result<(), BpfError> {
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
    Ok(())
}

/// Assemble `src` into a program named `name`.
pub fn assemble(name: &str, src: &str) -> Result<Program, BpfError> {
    let mut maps: Vec<MapRef> = Vec::new();
    let mut insns: Vec<Insn> = Vec::new();
    let mut labels: Vec<(String, usize)> = Vec::new();
    let mut fixups: Vec<Fixup> = Vec::new();
    for (ln, raw) in src.lines().enumerate() {
        let line = ln + 1;
        let err = |msg: String| BpfError::Asm { line, msg };
        let text = take_labels(strip_comment(raw), &mut labels, insns.len()).map_err(err)?;
        if let Some(def) = text.strip_prefix(".map") {
            define_map(def, &mut maps).map_err(err)?;
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
    resolve_fixups(&mut insns, &labels, fixups)?;
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
