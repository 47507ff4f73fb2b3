//! Conditional jumps over the abstract state (kernel/bpf/verifier.c: check_cond_jmp_op):
//! which outcomes are possible (is_branch_taken), the scalar bounds on each side
//! (reg_set_min_max), packet ranges from `pkt' OP pkt_end` (try_match_pkt_pointers,
//! find_good_pkt_pointers) and map lookup null checks (mark_ptr_or_null_regs).

use super::state::{PktKind, Range, Reg, State, MAX_PACKET_OFF};
use crate::bpf::insn::{Cond, Src};

/// The states after the jump: (fall-through, taken); None for an impossible side.
pub type Sides = (Option<State>, Option<State>);

fn negate(c: Cond) -> Cond {
    match c {
        Cond::Eq => Cond::Ne,
        Cond::Ne => Cond::Eq,
        Cond::Gt => Cond::Le,
        Cond::Ge => Cond::Lt,
        Cond::Lt => Cond::Ge,
        Cond::Le => Cond::Gt,
        Cond::Sgt => Cond::Sle,
        Cond::Sge => Cond::Slt,
        Cond::Slt => Cond::Sge,
        Cond::Sle => Cond::Sgt,
        Cond::Set => Cond::Set,
    }
}

/// `b OP a` as `a OP' b`.
fn flip(c: Cond) -> Cond {
    match c {
        Cond::Gt => Cond::Lt,
        Cond::Ge => Cond::Le,
        Cond::Lt => Cond::Gt,
        Cond::Le => Cond::Ge,
        Cond::Sgt => Cond::Slt,
        Cond::Sge => Cond::Sle,
        Cond::Slt => Cond::Sgt,
        Cond::Sle => Cond::Sge,
        c => c,
    }
}

fn unsigned(c: Cond) -> Cond {
    match c {
        Cond::Sgt => Cond::Gt,
        Cond::Sge => Cond::Ge,
        Cond::Slt => Cond::Lt,
        Cond::Sle => Cond::Le,
        c => c,
    }
}

/// Ranges of `a` and `b` where `a OP b` holds (unsigned OP); None when it never does.
fn refine(c: Cond, a: Range, b: Range) -> Option<(Range, Range)> {
    let r = |min: u64, max: u64| (min <= max).then_some(Range { min, max });
    match c {
        Cond::Gt if a.max > b.min => Some((
            r(a.min.max(b.min + 1), a.max)?,
            r(b.min, b.max.min(a.max - 1))?,
        )),
        Cond::Ge if a.max >= b.min => {
            Some((r(a.min.max(b.min), a.max)?, r(b.min, b.max.min(a.max))?))
        }
        Cond::Lt if a.min < b.max => Some((
            r(a.min, a.max.min(b.max - 1))?,
            r(b.min.max(a.min + 1), b.max)?,
        )),
        Cond::Le if a.min <= b.max => {
            Some((r(a.min, a.max.min(b.max))?, r(b.min.max(a.min), b.max)?))
        }
        Cond::Eq => {
            let both = r(a.min.max(b.min), a.max.min(b.max))?;
            Some((both, both))
        }
        Cond::Ne => {
            let shave = |x: Range, y: Range| match y.as_const() {
                Some(v) if x.min == v => r(x.min.checked_add(1)?, x.max),
                Some(v) if x.max == v => r(x.min, x.max - 1),
                _ => Some(x),
            };
            Some((shave(a, b)?, shave(b, a)?))
        }
        Cond::Set => match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if x & y == 0 => None,
            _ if a.max == 0 || b.max == 0 => None,
            _ => Some((a, b)),
        },
        _ => None,
    }
}

/// The ranges of both operands on one side of a jump; None when the side is impossible.
type Refined = Option<(Range, Range)>;

/// Scalar `a OP b`: the refined ranges on the (fall-through, taken) sides.
fn scalar_sides(c: Cond, wide: bool, a: Range, b: Range) -> (Refined, Refined) {
    let limit = if wide {
        i64::MAX as u64
    } else {
        i32::MAX as u64
    };
    let fits = wide || (a.fits32() && b.fits32());
    let signed = unsigned(c) != c;
    if !fits || (signed && (a.max > limit || b.max > limit)) {
        // Not tracked: both sides possible, nothing learnt.
        return (Some((a, b)), Some((a, b)));
    }
    let c = unsigned(c);
    let taken = refine(c, a, b);
    let fall = if c == Cond::Set {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if x & y != 0 => None,
            _ => Some((a, b)),
        }
    } else {
        refine(negate(c), a, b)
    };
    (fall, taken)
}

/// Every register (all frames, spills) that is the packet pointer `kind`/`id` gets at
/// least range `r`.
fn mark_range(st: &mut State, kind: PktKind, id: u32, r: i64) {
    st.for_each_reg(|reg| {
        if let Reg::Pkt {
            kind: k,
            id: i,
            r: old,
            ..
        } = reg
        {
            if *k == kind && *i == id {
                *old = (*old).max(r);
            }
        }
    });
}

/// find_good_pkt_pointers for the packet pointer `p` on side `st`.
fn find_good(st: &mut State, p: Reg, right_open: bool) {
    let Reg::Pkt {
        kind,
        id,
        off,
        vmin,
        vmax,
        ..
    } = p
    else {
        return;
    };
    if off < 0 || (off == 0 && right_open) {
        return;
    }
    let umax = if vmin < 0 { i64::MAX } else { vmax };
    if umax > MAX_PACKET_OFF || umax + off > MAX_PACKET_OFF {
        return;
    }
    mark_range(st, kind, id, off + i64::from(right_open));
}

/// `ptr OP end` where end is the pointer that bounds `ptr`: pkt_end for pkt, the initial
/// pkt pointer for pkt_meta. Returns false when the pair is not such a comparison.
fn pkt_compare(c: Cond, ptr: Reg, end: Reg, fall: &mut State, taken: &mut State) -> bool {
    let bounded = matches!(
        (ptr, end),
        (
            Reg::Pkt {
                kind: PktKind::Data,
                ..
            },
            Reg::PktEnd
        ) | (
            Reg::Pkt {
                kind: PktKind::Meta,
                ..
            },
            Reg::Pkt {
                kind: PktKind::Data,
                off: 0,
                vmin: 0,
                vmax: 0,
                ..
            },
        )
    );
    if !bounded {
        return false;
    }
    match c {
        Cond::Gt => find_good(fall, ptr, false),
        Cond::Ge => find_good(fall, ptr, true),
        Cond::Lt => find_good(taken, ptr, true),
        Cond::Le => find_good(taken, ptr, false),
        _ => return false,
    }
    true
}

/// A null check of lookup result `id`: (the state where it is NULL, where it is not).
fn null_check(st: &State, id: u32) -> Sides {
    let mark = |null: bool| {
        let mut s = st.clone();
        s.for_each_reg(|r| {
            if let Reg::MapValue {
                id: i, null: true, ..
            } = r
            {
                if *i == id {
                    *r = if null {
                        Reg::Scalar(Range::konst(0))
                    } else if let Reg::MapValue {
                        map,
                        off,
                        vmin,
                        vmax,
                        ..
                    } = *r
                    {
                        Reg::MapValue {
                            map,
                            off,
                            vmin,
                            vmax,
                            null: false,
                            id: 0,
                        }
                    } else {
                        *r
                    };
                }
            }
        });
        s
    };
    (Some(mark(true)), Some(mark(false)))
}

/// Both sides of `if dst OP src goto`.
pub fn cond_jump(st: &State, c: Cond, wide: bool, dst: u8, src: Src) -> Result<Sides, String> {
    let a = st.reg(dst);
    if a == Reg::Uninit {
        return Err(format!("R{dst} !read_ok"));
    }
    let b = match src {
        Src::Reg(r) => st.reg(r),
        Src::Imm(i) if wide => Reg::Scalar(Range::konst(i64::from(i) as u64)),
        Src::Imm(i) => Reg::Scalar(Range::konst(u64::from(i as u32))),
    };
    if let (Src::Reg(r), Reg::Uninit) = (src, b) {
        return Err(format!("R{r} !read_ok"));
    }
    let zero_imm = src == Src::Imm(0);
    match (a, b) {
        (Reg::Scalar(x), Reg::Scalar(y)) => {
            let (f, t) = scalar_sides(c, wide, x, y);
            let side = |rr: Option<(Range, Range)>| {
                rr.map(|(x2, y2)| {
                    let mut s = st.clone();
                    if let Src::Reg(r) = src {
                        s.set(r, Reg::Scalar(y2));
                    }
                    s.set(dst, Reg::Scalar(x2));
                    s
                })
            };
            Ok((side(f), side(t)))
        }
        (Reg::MapValue { null: true, id, .. }, _)
            if wide && zero_imm && matches!(c, Cond::Eq | Cond::Ne) =>
        {
            let (is_null, not_null) = null_check(st, id);
            Ok(if c == Cond::Eq {
                (not_null, is_null)
            } else {
                (is_null, not_null)
            })
        }
        // A checked map value is never NULL (is_branch_taken, reg_not_null).
        (Reg::MapValue { null: false, .. }, _) if wide && zero_imm && c == Cond::Eq => {
            Ok((Some(st.clone()), None))
        }
        (Reg::MapValue { null: false, .. }, _) if wide && zero_imm && c == Cond::Ne => {
            Ok((None, Some(st.clone())))
        }
        _ => {
            let (mut fall, mut taken) = (st.clone(), st.clone());
            if wide && !pkt_compare(c, a, b, &mut fall, &mut taken) {
                pkt_compare(flip(c), b, a, &mut fall, &mut taken);
            }
            Ok((Some(fall), Some(taken)))
        }
    }
}
