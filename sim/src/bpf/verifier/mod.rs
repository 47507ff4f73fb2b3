//! The load-time check of an XDP program: what the kernel's verifier
//! (kernel/bpf/verifier.c, bpf_check) proves before a program may run, for the parts
//! the [`Vm`](super::Vm) relies on, so that a program the kernel refuses is refused when
//! the scenario is loaded, naming the instruction, instead of faulting at some frame.
//!
//! Modelled, as a root load on 6.18 sees it (CAP_BPF and CAP_PERFMON: bounded loops,
//! pointer leaks and reads of uninitialized stack allowed):
//!
//! - check_subprogs / check_cfg: jumps stay inside their subprogram ("jump out of range
//!   from insn %d to %d"), each subprogram ends in exit or ja, no unreachable insn.
//!   Back-edges are allowed: bounded loops are accepted since 5.3 (commit 2589726d12a1
//!   "bpf: introduce bounded loops") for bpf_capable loads; a loop is explored
//!   iteration by iteration until its state repeats exactly ("infinite loop detected at
//!   insn %d") or BPF_COMPLEXITY_LIMIT_INSNS (1M) instructions have been processed
//!   ("BPF program is too large").
//! - do_check: a path-sensitive walk over the register types of `struct bpf_reg_state`
//!   ([`state`]): reads of NOT_INIT registers ("R%d !read_ok", check_reg_arg), ALU on
//!   pointers ([`alu`], adjust_ptr_min_max_vals), loads and stores ([`mem`],
//!   check_mem_access: packet access within the range proven by `if (pkt + N >
//!   data_end)` comparisons, stack within fp-512 .. fp and aligned, ctx fields, map
//!   values within value_size and not written when read-only), conditional jumps
//!   ([`branch`]), helper arguments (check_helper_call, check_map_func_compatibility),
//!   bpf-to-bpf calls and R0 at exit.
//!
//! States are compared exactly at prune points (jump targets, after calls), ids
//! renamed canonically; the kernel's states_equal also prunes a state whose ranges lie
//! within an explored one's, which only saves work.
//!
//! Not modelled (the check is stricter than the kernel there): variable-offset stack
//! pointers, tnum bit tracking (scalars are unsigned ranges), scalar id links between
//! copies of a register, precision of spilled sub-register scalars.

mod alu;
mod branch;
mod mem;
mod state;

use std::collections::HashMap;

use super::helpers::{self, *};
use super::insn::{AtomicOp, ByteOrder, Op};
use super::maps::{MapSpec, MapType, Maps};
use super::{BpfError, Program, MAX_CALL_FRAMES};
use mem::Access;
use state::{Frame, Range, Reg, State};

/// BPF_COMPLEXITY_LIMIT_INSNS (include/linux/bpf.h): instructions processed per load.
pub const COMPLEXITY_LIMIT_INSNS: u64 = 1_000_000;
/// BPF_COMPLEXITY_LIMIT_STATES: at most this many states are kept per instruction; past
/// it a path goes on unrecorded (only pruning is lost), which bounds the memory.
const COMPLEXITY_LIMIT_STATES: u32 = 64;

/// Check `prog` against the specs of the maps its slots are bound to in `maps`.
pub fn verify_bound(prog: &Program, maps: &Maps) -> Result<u64, BpfError> {
    let mut specs = Vec::with_capacity(prog.map_refs().len());
    for slot in 0..prog.map_refs().len() as u32 {
        let idx = prog.bound_map(slot)?;
        let map = maps.get(idx).ok_or_else(|| BpfError::Unbound {
            map: format!("slot {slot}"),
        })?;
        specs.push(map.spec().clone());
    }
    verify(prog, &specs)
}

/// Check `prog`, whose map slot `n` refers to a map of spec `maps[n]`. Returns the
/// number of instructions processed; a refusal is a [`BpfError::Rejected`].
pub fn verify(prog: &Program, maps: &[MapSpec]) -> Result<u64, BpfError> {
    verify_limited(prog, maps, COMPLEXITY_LIMIT_INSNS)
}

/// [`verify`] with another limit on the instructions processed.
pub fn verify_limited(prog: &Program, maps: &[MapSpec], limit: u64) -> Result<u64, BpfError> {
    let ops = prog.ops();
    check_cfg(ops)?;
    let prune = prune_points(ops);
    Walk {
        ops,
        maps,
        prune,
        limit,
        visited: HashMap::new(),
        per_insn: vec![0; ops.len()],
        cps: Vec::new(),
    }
    .run()
}

fn reject(pc: usize, reason: impl Into<String>) -> BpfError {
    BpfError::Rejected {
        pc,
        reason: reason.into(),
    }
}

/// Where control goes after `ops[pc]` regardless of conditions.
fn successors(ops: &[Op], pc: usize) -> Vec<usize> {
    match ops[pc] {
        Op::Ja { target } => vec![target as usize],
        Op::Jmp { target, .. } => vec![pc + 1, target as usize],
        Op::CallLocal { target } => vec![pc + 1, target as usize],
        Op::Exit | Op::Pad => vec![],
        Op::LdImm64 { .. } | Op::LdMap { .. } | Op::LdMapValue { .. } => vec![pc + 2],
        _ => vec![pc + 1],
    }
}

/// check_subprogs and check_cfg.
fn check_cfg(ops: &[Op]) -> Result<(), BpfError> {
    let mut starts = vec![0usize];
    for op in ops {
        if let Op::CallLocal { target } = op {
            starts.push(*target as usize);
        }
    }
    starts.sort_unstable();
    starts.dedup();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(ops.len());
        for (pc, op) in ops.iter().enumerate().take(e).skip(s) {
            if let Op::Ja { target } | Op::Jmp { target, .. } = *op {
                let t = target as usize;
                if t < s || t >= e {
                    return Err(reject(
                        pc,
                        format!("jump out of range from insn {pc} to {t}"),
                    ));
                }
            }
        }
        if !matches!(ops[e - 1], Op::Exit | Op::Ja { .. }) {
            return Err(reject(e - 1, "last insn is not an exit or jmp"));
        }
    }
    let mut seen = vec![false; ops.len()];
    let mut todo = vec![0usize];
    while let Some(pc) = todo.pop() {
        if pc >= ops.len() || std::mem::replace(&mut seen[pc], true) {
            continue;
        }
        todo.extend(successors(ops, pc));
    }
    match (0..ops.len()).find(|&pc| !seen[pc] && ops[pc] != Op::Pad) {
        Some(pc) => Err(reject(pc, format!("unreachable insn {pc}"))),
        None => Ok(()),
    }
}

/// Jump targets, the instruction after a conditional jump, call targets and return
/// sites (mark_prune_point).
fn prune_points(ops: &[Op]) -> Vec<bool> {
    let mut p = vec![false; ops.len() + 1];
    for (pc, op) in ops.iter().enumerate() {
        match *op {
            Op::Ja { target } => p[target as usize] = true,
            Op::Jmp { target, .. } | Op::CallLocal { target } => {
                p[target as usize] = true;
                p[pc + 1] = true;
            }
            _ => {}
        }
    }
    p
}

/// A recorded state and how many paths below it are still being explored
/// (bpf_verifier_state.branches).
struct Checkpoint {
    parent: Option<usize>,
    branches: u32,
}

struct Path {
    pc: usize,
    st: State,
    cp: Option<usize>,
}

struct Walk<'a> {
    ops: &'a [Op],
    maps: &'a [MapSpec],
    prune: Vec<bool>,
    limit: u64,
    visited: HashMap<(usize, State), usize>,
    per_insn: Vec<u32>,
    cps: Vec<Checkpoint>,
}

impl Walk<'_> {
    /// A path ended: its checkpoints with no other live path below them are complete.
    fn release(&mut self, mut cp: Option<usize>) {
        while let Some(c) = cp {
            self.cps[c].branches -= 1;
            if self.cps[c].branches > 0 {
                return;
            }
            cp = self.cps[c].parent;
        }
    }

    /// Depth-first over the paths, the fall-through side first (do_check, push_stack).
    fn run(mut self) -> Result<u64, BpfError> {
        let mut work = vec![Path {
            pc: 0,
            st: State::entry(),
            cp: None,
        }];
        let mut processed = 0u64;
        while let Some(mut p) = work.pop() {
            loop {
                if self.prune[p.pc] {
                    p.st.canonicalize();
                    let key = (p.pc, p.st.clone());
                    if let Some(&c) = self.visited.get(&key) {
                        if self.cps[c].branches > 0 {
                            return Err(reject(
                                p.pc,
                                format!("infinite loop detected at insn {}", p.pc),
                            ));
                        }
                        self.release(p.cp);
                        break;
                    }
                    if self.per_insn[p.pc] < COMPLEXITY_LIMIT_STATES {
                        self.per_insn[p.pc] += 1;
                        self.cps.push(Checkpoint {
                            parent: p.cp,
                            branches: 1,
                        });
                        p.cp = Some(self.cps.len() - 1);
                        self.visited.insert(key, self.cps.len() - 1);
                    }
                }
                processed += 1;
                if processed > self.limit {
                    return Err(reject(
                        p.pc,
                        format!("BPF program is too large. Processed {processed} insn"),
                    ));
                }
                let mut next =
                    step(self.ops, self.maps, p.pc, p.st).map_err(|m| reject(p.pc, m))?;
                let Some((pc, st)) = next.pop() else {
                    self.release(p.cp);
                    break;
                };
                if let Some((opc, ost)) = next.pop() {
                    // Fork: the other side waits (its parent checkpoint has one more
                    // live path).
                    if let Some(c) = p.cp {
                        self.cps[c].branches += 1;
                    }
                    work.push(Path {
                        pc: opc,
                        st: ost,
                        cp: p.cp,
                    });
                }
                p.pc = pc;
                p.st = st;
            }
        }
        Ok(processed)
    }
}

fn read(st: &State, r: u8) -> Result<Reg, String> {
    match st.reg(r) {
        Reg::Uninit => Err(format!("R{r} !read_ok")),
        v => Ok(v),
    }
}

/// One instruction: the states it leads to, the one to explore first LAST.
fn step(
    ops: &[Op],
    maps: &[MapSpec],
    pc: usize,
    mut st: State,
) -> Result<Vec<(usize, State)>, String> {
    let next = pc + 1;
    match ops[pc] {
        Op::Alu64 { op, dst, src } | Op::Alu32 { op, dst, src } => {
            let wide = matches!(ops[pc], Op::Alu64 { .. });
            if let super::insn::Src::Reg(r) = src {
                read(&st, r)?;
            }
            if op != super::insn::AluOp::Mov {
                read(&st, dst)?;
            }
            alu::alu(&mut st, op, wide, dst, src)?;
        }
        Op::MovSx { wide, dst, src, .. } => {
            read(&st, src)?;
            st.set(
                dst,
                Reg::Scalar(if wide {
                    Range::UNKNOWN
                } else {
                    Range::bytes(4)
                }),
            );
        }
        Op::End { order, dst, bits } => {
            read(&st, dst)?;
            if !(order == ByteOrder::Le && bits == 64) {
                st.set(dst, Reg::Scalar(Range::bytes(usize::from(bits / 8))));
            }
        }
        Op::LdImm64 { dst, imm } => {
            st.set(dst, Reg::Scalar(Range::konst(imm)));
            return Ok(vec![(pc + 2, st)]);
        }
        Op::LdMap { dst, slot } => {
            map_spec(maps, slot)?;
            st.set(dst, Reg::MapPtr { map: slot });
            return Ok(vec![(pc + 2, st)]);
        }
        Op::LdMapValue { dst, slot, off } => {
            let spec = map_spec(maps, slot)?;
            if off >= spec.value_size {
                return Err(format!(
                    "invalid access to map value pointer, value_size={} off={off}",
                    spec.value_size
                ));
            }
            st.set(
                dst,
                Reg::MapValue {
                    map: slot,
                    off: i64::from(off),
                    vmin: 0,
                    vmax: 0,
                    null: false,
                    id: 0,
                },
            );
            return Ok(vec![(pc + 2, st)]);
        }
        Op::Ldx { .. } | Op::St { .. } | Op::Stx { .. } | Op::Atomic { .. } => {
            mem_op(maps, &mut st, ops[pc])?;
        }
        Op::Ja { target } => return Ok(vec![(target as usize, st)]),
        Op::Jmp {
            cond,
            wide,
            dst,
            src,
            target,
        } => {
            let (fall, taken) = branch::cond_jump(&st, cond, wide, dst, src)?;
            let mut out = Vec::with_capacity(2);
            out.extend(taken.map(|s| (target as usize, s)));
            out.extend(fall.map(|s| (next, s)));
            return Ok(out);
        }
        Op::Call { helper } => call_helper(maps, &mut st, helper)?,
        Op::CallLocal { .. } | Op::Exit => {
            return frame_op(&mut st, ops[pc], next)
                .map(|n| n.map(|pc| (pc, st)).into_iter().collect())
        }
        Op::Pad => return Err("invalid insn (second slot of ld_imm64)".to_string()),
    }
    Ok(vec![(next, st)])
}

/// Loads, stores and atomics (do_check: check_mem_access, check_atomic).
fn mem_op(maps: &[MapSpec], st: &mut State, op: Op) -> Result<(), String> {
    match op {
        Op::Ldx {
            size,
            sx,
            dst,
            src,
            off,
        } => {
            read(st, src)?;
            let mut v = mem::access(st, maps, src, off, size.bytes(), Access::Read)?;
            if sx && matches!(v, Reg::Scalar(_)) {
                v = Reg::UNKNOWN;
            }
            st.set(dst, v);
        }
        Op::St {
            size,
            dst,
            off,
            imm,
        } => {
            read(st, dst)?;
            mem::access(st, maps, dst, off, size.bytes(), Access::Store(imm))?;
        }
        Op::Stx {
            size,
            dst,
            src,
            off,
        } => {
            read(st, dst)?;
            let v = read(st, src)?;
            mem::access(st, maps, dst, off, size.bytes(), Access::Write(v))?;
        }
        Op::Atomic {
            size,
            op,
            fetch,
            dst,
            src,
            off,
        } => {
            read(st, dst)?;
            read(st, src)?;
            if op == AtomicOp::CmpXchg {
                read(st, 0)?;
            }
            mem::access(st, maps, dst, off, size.bytes(), Access::Atomic)?;
            let old = Reg::Scalar(Range::bytes(size.bytes()));
            if op == AtomicOp::CmpXchg {
                st.set(0, old);
            } else if fetch {
                st.set(src, old);
            }
        }
        _ => {}
    }
    Ok(())
}

/// bpf-to-bpf calls and exits (check_func_call, prepare_func_exit); the next insn, or
/// None at the main program's exit.
fn frame_op(st: &mut State, op: Op, next: usize) -> Result<Option<usize>, String> {
    match op {
        Op::CallLocal { target } => {
            if !st.can_call() {
                return Err(format!(
                    "the call stack of {} frames is too deep",
                    MAX_CALL_FRAMES + 1
                ));
            }
            let mut f = Frame::new(st.depth(), Some(next));
            f.regs[1..6].copy_from_slice(&st.cur().regs[1..6]);
            for r in 0..6 {
                st.set(r, Reg::Uninit);
            }
            st.frames.push(f);
            Ok(Some(target as usize))
        }
        Op::Exit => {
            let r0 = read(st, 0)?;
            let depth = st.depth();
            if depth == 1 {
                return Ok(None);
            }
            if let Reg::Stack { frame, .. } = r0 {
                if usize::from(frame) == depth - 1 {
                    return Err("cannot return stack pointer to the caller".to_string());
                }
            }
            let ret = st.cur().ret.unwrap_or(next);
            st.frames.pop();
            st.set(0, r0);
            Ok(Some(ret))
        }
        _ => Ok(Some(next)),
    }
}

fn map_spec(maps: &[MapSpec], slot: u32) -> Result<&MapSpec, String> {
    maps.get(slot as usize)
        .ok_or_else(|| format!("map slot {slot} is not pointing to a valid bpf_map"))
}

/// check_helper_call for the helpers the VM implements: argument types (the
/// `bpf_func_proto`s in kernel/bpf/helpers.c and net/core/filter.c), map and function
/// compatibility, R0 from the return type, r1-r5 scratched, and packet pointers
/// invalidated by the helpers that move data (bpf_helper_changes_pkt_data:
/// clear_all_pkt_pointers, which to a root load leaves unknown scalars).
fn call_helper(maps: &[MapSpec], st: &mut State, id: u32) -> Result<(), String> {
    let name = helpers::helper_name(id);
    if id == FUNC_SKB_LOAD_BYTES {
        // Not in xdp_func_proto: check_helper_call's refusal.
        return Err(format!("unknown func {name}#{id}"));
    }
    let nargs = match id {
        FUNC_MAP_UPDATE_ELEM => 4,
        FUNC_REDIRECT_MAP => 3,
        FUNC_MAP_LOOKUP_ELEM | FUNC_MAP_DELETE_ELEM | FUNC_REDIRECT | FUNC_XDP_ADJUST_HEAD
        | FUNC_XDP_ADJUST_META | FUNC_XDP_ADJUST_TAIL => 2,
        _ => 0,
    };
    for r in 1..=nargs {
        read(st, r)?;
    }
    let mut r0 = Reg::UNKNOWN;
    match id {
        FUNC_MAP_LOOKUP_ELEM | FUNC_MAP_UPDATE_ELEM | FUNC_MAP_DELETE_ELEM | FUNC_REDIRECT_MAP => {
            let Reg::MapPtr { map } = st.reg(1) else {
                return Err(format!(
                    "R1 type={} expected=map_ptr",
                    st.reg(1).type_name()
                ));
            };
            let spec = map_spec(maps, map)?.clone();
            let ok = match id {
                FUNC_REDIRECT_MAP => spec.map_type.is_devmap(),
                FUNC_MAP_LOOKUP_ELEM => true,
                _ => !spec.map_type.is_devmap(),
            };
            if !ok {
                return Err(format!(
                    "cannot pass map_type {} into func {name}#{id}",
                    spec.map_type.as_u32()
                ));
            }
            if id != FUNC_REDIRECT_MAP {
                let expect = "fp, pkt, pkt_meta, map_key, map_value";
                mem::helper_mem(st, maps, 2, spec.key_size, expect)?;
            }
            if id == FUNC_MAP_UPDATE_ELEM {
                mem::helper_mem(
                    st,
                    maps,
                    3,
                    spec.value_size,
                    "fp, pkt, pkt_meta, map_key, map_value",
                )?;
            }
            if id == FUNC_MAP_LOOKUP_ELEM {
                // An array lookup with a constant key below max_entries cannot miss: R0 is
                // not NULL (can_elide_value_nullness, since 6.14: "bpf: verifier: Support
                // eliding map lookup nullness").
                let array = matches!(spec.map_type, MapType::Array | MapType::PercpuArray);
                let hit = array
                    && mem::const_key(st, 2, spec.key_size)
                        .is_some_and(|k| k < u64::from(spec.max_entries));
                let fresh = if hit { 0 } else { st.fresh_id() };
                r0 = Reg::MapValue {
                    map,
                    off: 0,
                    vmin: 0,
                    vmax: 0,
                    null: !hit,
                    id: fresh,
                };
            }
        }
        FUNC_XDP_ADJUST_HEAD | FUNC_XDP_ADJUST_META | FUNC_XDP_ADJUST_TAIL => {
            match st.reg(1) {
                Reg::Ctx { off: 0 } => {}
                Reg::Ctx { off } => {
                    return Err(format!(
                        "dereference of modified ctx ptr R1 off={off} disallowed"
                    ))
                }
                other => return Err(format!("R1 type={} expected=ctx", other.type_name())),
            }
            st.for_each_reg(|r| {
                if matches!(r, Reg::Pkt { .. } | Reg::PktEnd) {
                    *r = Reg::UNKNOWN;
                }
            });
        }
        _ => {}
    }
    st.set(0, r0);
    for r in 1..6 {
        st.set(r, Reg::Uninit);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
