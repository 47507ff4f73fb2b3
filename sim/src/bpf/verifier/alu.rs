//! ALU instructions over the abstract state: scalar ranges
//! (kernel/bpf/verifier.c: adjust_scalar_min_max_vals) and pointer arithmetic
//! (adjust_ptr_min_max_vals, check_reg_sane_offset).

use super::state::{PktKind, Range, Reg, State, MAX_VAR_OFF};
use crate::bpf::insn::{AluOp, Src};

/// The kernel's operator strings (bpf_alu_string in kernel/bpf/disasm.c).
fn op_str(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "+=",
        AluOp::Sub => "-=",
        AluOp::Mul => "*=",
        AluOp::Div | AluOp::SDiv => "/=",
        AluOp::Or => "|=",
        AluOp::And => "&=",
        AluOp::Lsh => "<<=",
        AluOp::Rsh => ">>=",
        AluOp::Neg => "neg",
        AluOp::Mod | AluOp::SMod => "%=",
        AluOp::Xor => "^=",
        AluOp::Mov => "=",
        AluOp::Arsh => "s>>=",
    }
}

/// 64-bit scalar op on ranges; UNKNOWN where the result is not tracked.
pub fn scalar64(op: AluOp, a: Range, b: Range) -> Range {
    let exact = |v: Option<u64>| v.map_or(Range::UNKNOWN, Range::konst);
    let (ca, cb) = (a.as_const(), b.as_const());
    match op {
        AluOp::Mov => b,
        AluOp::Add => match (a.min.checked_add(b.min), a.max.checked_add(b.max)) {
            (Some(min), Some(max)) => Range { min, max },
            _ => Range::UNKNOWN,
        },
        AluOp::Sub if a.min >= b.max => Range {
            min: a.min - b.max,
            max: a.max - b.min,
        },
        AluOp::Sub => exact(ca.zip(cb).map(|(x, y)| x.wrapping_sub(y))),
        AluOp::Mul => match (a.min.checked_mul(b.min), a.max.checked_mul(b.max)) {
            (Some(min), Some(max)) => Range { min, max },
            _ => Range::UNKNOWN,
        },
        AluOp::Div if b.min > 0 => Range {
            min: a.min / b.max,
            max: a.max / b.min,
        },
        AluOp::Mod if b.min > 0 => Range {
            min: 0,
            max: a.max.min(b.max - 1),
        },
        AluOp::And => exact(ca.zip(cb).map(|(x, y)| x & y)).min_with(Range {
            min: 0,
            max: a.max.min(b.max),
        }),
        AluOp::Or | AluOp::Xor => {
            if let Some((x, y)) = ca.zip(cb) {
                return Range::konst(if op == AluOp::Or { x | y } else { x ^ y });
            }
            let bits = 64 - a.max.max(b.max).leading_zeros();
            let max = if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            let min = if op == AluOp::Or { a.min.max(b.min) } else { 0 };
            Range { min, max }
        }
        AluOp::Lsh => match cb {
            Some(s) if s < 64 && a.max.leading_zeros() as u64 >= s => Range {
                min: a.min << s,
                max: a.max << s,
            },
            _ => Range::UNKNOWN,
        },
        AluOp::Rsh => match cb {
            Some(s) if s < 64 => Range {
                min: a.min >> s,
                max: a.max >> s,
            },
            _ => Range { min: 0, max: a.max },
        },
        AluOp::Arsh if a.signed().is_some() => match cb {
            Some(s) if s < 64 => Range {
                min: a.min >> s,
                max: a.max >> s,
            },
            _ => Range { min: 0, max: a.max },
        },
        _ => Range::UNKNOWN,
    }
}

impl Range {
    /// `self` when it is exact, otherwise the bound `other`.
    fn min_with(self, other: Range) -> Range {
        if self.as_const().is_some() {
            self
        } else {
            other
        }
    }
}

/// 32-bit scalar op: computed on 64-bit ranges when both operands and the result fit
/// in 32 bits, otherwise any 32-bit value (the result is zero-extended).
pub fn scalar32(op: AluOp, a: Range, b: Range) -> Range {
    let trunc = |r: Range| {
        if r.fits32() {
            r
        } else {
            r.as_const()
                .map_or(Range::bytes(4), |v| Range::konst(v & 0xffff_ffff))
        }
    };
    let (a, b) = (trunc(a), trunc(b));
    match op {
        AluOp::Mov => b,
        AluOp::Arsh | AluOp::SDiv | AluOp::SMod | AluOp::Neg => Range::bytes(4),
        AluOp::Lsh | AluOp::Rsh if b.as_const().is_none_or(|s| s >= 32) => Range::bytes(4),
        _ => {
            let r = scalar64(op, a, b);
            if r.fits32() {
                r
            } else {
                Range::bytes(4)
            }
        }
    }
}

/// Why an ALU instruction is refused.
pub type AluResult = Result<(), String>;

/// `dst op= src` on the state (check_alu_op).
pub fn alu(st: &mut State, op: AluOp, wide: bool, dst: u8, src: Src) -> AluResult {
    let b = match src {
        Src::Reg(r) => st.reg(r),
        Src::Imm(i) if wide => Reg::Scalar(Range::konst(i64::from(i) as u64)),
        Src::Imm(i) => Reg::Scalar(Range::konst(u64::from(i as u32))),
    };
    if op == AluOp::Mov {
        let v = match b {
            Reg::Scalar(r) if !wide => Reg::Scalar(scalar32(op, r, r)),
            // A 32-bit copy of a pointer is a scalar to a root load (allow_ptr_leaks).
            p if !wide && p.is_pointer() => Reg::Scalar(Range::bytes(4)),
            v => v,
        };
        st.set(dst, v);
        return Ok(());
    }
    let a = st.reg(dst);
    let res = match (a, b) {
        (Reg::Scalar(x), Reg::Scalar(y)) => Reg::Scalar(if wide {
            scalar64(op, x, y)
        } else {
            scalar32(op, x, y)
        }),
        _ if op == AluOp::Neg => Reg::UNKNOWN,
        (p, q) if p.is_pointer() && q.is_pointer() => {
            if op == AluOp::Sub {
                Reg::UNKNOWN
            } else {
                return Err(format!("R{dst} pointer {} pointer prohibited", op_str(op)));
            }
        }
        _ if !wide => {
            if op == AluOp::Sub {
                Reg::Scalar(Range::bytes(4))
            } else {
                return Err(format!("R{dst} 32-bit pointer arithmetic prohibited"));
            }
        }
        (p, Reg::Scalar(y)) => pointer_op(st, dst, op, p, y, false)?,
        (Reg::Scalar(x), p) => pointer_op(st, dst, op, p, x, true)?,
        _ => unreachable_pair(dst)?,
    };
    st.set(dst, res);
    Ok(())
}

fn unreachable_pair(dst: u8) -> Result<Reg, String> {
    Err(format!("R{dst} !read_ok"))
}

/// `ptr op scalar` (or `scalar op ptr` when `swapped`): adjust_ptr_min_max_vals.
fn pointer_op(
    st: &mut State,
    dst: u8,
    op: AluOp,
    ptr: Reg,
    s: Range,
    swapped: bool,
) -> Result<Reg, String> {
    check_ptr_opcode(dst, op, swapped)?;
    check_ptr_type(dst, &ptr)?;
    let tname = ptr.type_name();
    let neg = op == AluOp::Sub;
    // check_reg_sane_offset on the scalar.
    let Some((smin, smax)) = s.signed() else {
        if let Some(c) = s.as_const() {
            return add_const(
                st,
                dst,
                ptr,
                if neg {
                    (c as i64).wrapping_neg()
                } else {
                    c as i64
                },
            );
        }
        return Err(format!(
            "math between {tname} pointer and register with unbounded min value is not allowed"
        ));
    };
    if smin >= MAX_VAR_OFF {
        return Err(format!(
            "value {smin} makes {tname} pointer be out of bounds"
        ));
    }
    if smin == smax {
        return add_const(st, dst, ptr, if neg { -smin } else { smin });
    }
    if smax >= MAX_VAR_OFF {
        // The pointer's variable part would be unbounded: any access through it fails.
        return Err(format!(
            "R{dst} unbounded memory access, make sure to bounds check any such access"
        ));
    }
    let (lo, hi) = if neg { (-smax, -smin) } else { (smin, smax) };
    add_variable(st, dst, ptr, lo, hi)
}

/// Only `ptr += scalar` and `ptr -= scalar` are pointer arithmetic
/// (adjust_ptr_min_max_vals: the opcode checks before `switch (opcode)`).
fn check_ptr_opcode(dst: u8, op: AluOp, swapped: bool) -> Result<(), String> {
    match op {
        AluOp::Add => Ok(()),
        AluOp::Sub if swapped => Err(format!("R{dst} tried to subtract pointer from scalar")),
        AluOp::Sub => Ok(()),
        AluOp::And | AluOp::Or | AluOp::Xor => Err(format!(
            "R{dst} bitwise operator {} on pointer prohibited",
            op_str(op)
        )),
        _ => Err(format!(
            "R{dst} pointer arithmetic with {} operator prohibited",
            op_str(op)
        )),
    }
}

/// Pointer types that take no arithmetic
/// (adjust_ptr_min_max_vals: `switch (ptr_reg->type)`).
fn check_ptr_type(dst: u8, ptr: &Reg) -> Result<(), String> {
    let tname = ptr.type_name();
    match ptr {
        Reg::MapValue { null: true, .. } => Err(format!(
            "R{dst} pointer arithmetic on {tname} prohibited, null-check it first"
        )),
        Reg::PktEnd | Reg::MapPtr { .. } => {
            Err(format!("R{dst} pointer arithmetic on {tname} prohibited"))
        }
        _ => Ok(()),
    }
}

/// A bounded variable `[lo, hi]` moves the pointer's variable part (var_off / the
/// smin/smax bounds) rather than its fixed offset
/// (adjust_ptr_min_max_vals: the BPF_ADD / BPF_SUB cases).
fn add_variable(st: &mut State, dst: u8, ptr: Reg, lo: i64, hi: i64) -> Result<Reg, String> {
    Ok(match ptr {
        Reg::Pkt {
            kind,
            off,
            vmin,
            vmax,
            ..
        } => Reg::Pkt {
            kind,
            // Something variable was added: a new id and no range yet.
            id: st.fresh_id(),
            off,
            vmin: vmin + lo,
            vmax: vmax + hi,
            r: 0,
        },
        Reg::MapValue {
            map,
            off,
            vmin,
            vmax,
            null,
            id,
        } => Reg::MapValue {
            map,
            off,
            vmin: vmin + lo,
            vmax: vmax + hi,
            null,
            id,
        },
        Reg::Ctx { .. } => return Err(format!("R{dst} variable ctx access prohibited")),
        Reg::Stack { .. } => {
            return Err(format!(
                "R{dst} variable stack access prohibited (not modelled: use a constant offset)"
            ))
        }
        other => other,
    })
}

/// A constant moves the fixed offset (reg->off).
fn add_const(st: &mut State, dst: u8, ptr: Reg, c: i64) -> Result<Reg, String> {
    let _ = st;
    let tname = ptr.type_name();
    let bump = |off: i64| -> Result<i64, String> {
        let n = off.saturating_add(c);
        if c.abs() >= MAX_VAR_OFF || n.abs() >= MAX_VAR_OFF {
            return Err(format!("value {c} makes {tname} pointer be out of bounds"));
        }
        Ok(n)
    };
    Ok(match ptr {
        Reg::Ctx { off } => Reg::Ctx { off: bump(off)? },
        Reg::Stack { frame, off } => Reg::Stack {
            frame,
            off: bump(off)?,
        },
        Reg::Pkt {
            kind,
            id,
            off,
            vmin,
            vmax,
            r,
        } => Reg::Pkt {
            kind,
            id,
            off: bump(off)?,
            vmin,
            vmax,
            r,
        },
        Reg::MapValue {
            map,
            off,
            vmin,
            vmax,
            null,
            id,
        } => Reg::MapValue {
            map,
            off: bump(off)?,
            vmin,
            vmax,
            null,
            id,
        },
        _ => return Err(format!("R{dst} pointer arithmetic on {tname} prohibited")),
    })
}

/// The initial `data`/`data_meta` pointer: id 0, no offset, no range.
pub fn pkt_base(kind: PktKind) -> Reg {
    Reg::Pkt {
        kind,
        id: 0,
        off: 0,
        vmin: 0,
        vmax: 0,
        r: 0,
    }
}
