//! The abstract state of the load-time check: what each register and stack slot holds
//! on one path (kernel/bpf/verifier.c: `struct bpf_reg_state`, `struct bpf_stack_state`),
//! with scalars as unsigned ranges (the kernel's umin/umax; its tnum is not modelled).

use crate::bpf::{MAX_CALL_FRAMES, STACK_SIZE};

/// Bytes of one stack slot (BPF_REG_SIZE).
pub const SLOT: i64 = 8;
/// Slots per frame (MAX_BPF_STACK / BPF_REG_SIZE).
pub const SLOTS: usize = STACK_SIZE / SLOT as usize;
/// BPF_MAX_VAR_OFF: the largest offset pointer arithmetic may build (include/linux/bpf_verifier.h).
pub const MAX_VAR_OFF: i64 = 1 << 29;
/// MAX_PACKET_OFF (kernel/bpf/verifier.c): beyond it a packet pointer gets no range.
pub const MAX_PACKET_OFF: i64 = 0xffff;

/// An unsigned range of values, `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Range {
    pub min: u64,
    pub max: u64,
}

impl Range {
    pub const UNKNOWN: Range = Range {
        min: 0,
        max: u64::MAX,
    };
    pub fn konst(v: u64) -> Range {
        Range { min: v, max: v }
    }
    /// Any value of `bytes` bytes (a zero-extended load: coerce_reg_to_size).
    pub fn bytes(bytes: usize) -> Range {
        match bytes {
            0..=7 => Range {
                min: 0,
                max: (1u64 << (8 * bytes)) - 1,
            },
            _ => Range::UNKNOWN,
        }
    }
    pub fn as_const(self) -> Option<u64> {
        (self.min == self.max).then_some(self.min)
    }
    /// The signed bounds when both ends are non-negative as i64; None when the range
    /// may hold a negative value (the kernel's smin would be S64_MIN or negative).
    pub fn signed(self) -> Option<(i64, i64)> {
        (self.max <= i64::MAX as u64).then_some((self.min as i64, self.max as i64))
    }
    /// Whether every value fits in `bytes` bytes.
    pub fn fits_bytes(self, bytes: usize) -> bool {
        self.max <= Range::bytes(bytes).max
    }
    pub fn fits32(self) -> bool {
        self.max <= u64::from(u32::MAX)
    }
}

/// Which packet pointer: `data` (PTR_TO_PACKET) or `data_meta` (PTR_TO_PACKET_META).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PktKind {
    Data,
    Meta,
}

/// A register's type and bounds (`enum bpf_reg_type` for what XDP uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reg {
    /// NOT_INIT: reading it is "R%d !read_ok".
    Uninit,
    Scalar(Range),
    /// PTR_TO_CTX (`struct xdp_md`), `off` bytes in.
    Ctx {
        off: i64,
    },
    /// PTR_TO_PACKET(_META): fixed `off`, variable part `vmin..=vmax` (signed), `r` bytes
    /// from the pointer's base proven to lie before data_end (reg->range), `id` shared
    /// by the copies of one pointer.
    Pkt {
        kind: PktKind,
        id: u32,
        off: i64,
        vmin: i64,
        vmax: i64,
        r: i64,
    },
    /// PTR_TO_PACKET_END.
    PktEnd,
    /// PTR_TO_STACK of call frame `frame`: fp + off.
    Stack {
        frame: u8,
        off: i64,
    },
    /// PTR_TO_MAP_VALUE(_OR_NULL) of map slot `map`; `id` links the copies of a lookup
    /// result until its null check.
    MapValue {
        map: u32,
        off: i64,
        vmin: i64,
        vmax: i64,
        null: bool,
        id: u32,
    },
    /// CONST_PTR_TO_MAP.
    MapPtr {
        map: u32,
    },
}

impl Reg {
    pub const UNKNOWN: Reg = Reg::Scalar(Range::UNKNOWN);

    /// The kernel's name of the type (reg_type_str).
    pub fn type_name(&self) -> &'static str {
        match self {
            Reg::Uninit => "?",
            Reg::Scalar(_) => "scalar",
            Reg::Ctx { .. } => "ctx",
            Reg::Pkt {
                kind: PktKind::Data,
                ..
            } => "pkt",
            Reg::Pkt {
                kind: PktKind::Meta,
                ..
            } => "pkt_meta",
            Reg::PktEnd => "pkt_end",
            Reg::Stack { .. } => "fp",
            Reg::MapValue { null: true, .. } => "map_value_or_null",
            Reg::MapValue { .. } => "map_value",
            Reg::MapPtr { .. } => "map_ptr",
        }
    }

    pub fn is_pointer(&self) -> bool {
        !matches!(self, Reg::Uninit | Reg::Scalar(_))
    }

    fn id_mut(&mut self) -> Option<&mut u32> {
        match self {
            Reg::Pkt { id, .. } => Some(id),
            Reg::MapValue { id, .. } if *id != 0 => Some(id),
            _ => None,
        }
    }
}

/// A stack slot (`struct bpf_stack_state`): bytes of data, with a bit set in the mask for
/// each byte known to be zero (STACK_ZERO; the others are STACK_MISC or STACK_INVALID,
/// which a root load may read: env->allow_uninit_stack), or a spilled register of `size`
/// bytes at the slot's lowest address (STACK_SPILL; scalars may be spilled narrower).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Slot {
    Bytes(u8),
    Spill { reg: Reg, size: u8 },
}

/// One call frame (`struct bpf_func_state`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    pub regs: [Reg; 11],
    pub stack: [Slot; SLOTS],
    /// Where the caller continues (None for the main program).
    pub ret: Option<usize>,
}

impl Frame {
    pub fn new(depth: usize, ret: Option<usize>) -> Frame {
        let mut regs = [Reg::Uninit; 11];
        regs[10] = Reg::Stack {
            frame: depth as u8,
            off: 0,
        };
        Frame {
            regs,
            stack: [Slot::Bytes(0); SLOTS],
            ret,
        }
    }
}

/// The state of one path (`struct bpf_verifier_state`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    pub frames: Vec<Frame>,
    /// Next fresh id (env->id_gen, per path so that equal states compare equal).
    pub next_id: u32,
}

impl State {
    /// At entry: r1 = ctx, r10 = fp, everything else NOT_INIT.
    pub fn entry() -> State {
        let mut f = Frame::new(0, None);
        f.regs[1] = Reg::Ctx { off: 0 };
        State {
            frames: vec![f],
            next_id: 1,
        }
    }

    pub fn cur(&self) -> &Frame {
        &self.frames[self.frames.len() - 1]
    }

    pub fn cur_mut(&mut self) -> &mut Frame {
        let n = self.frames.len() - 1;
        &mut self.frames[n]
    }

    pub fn reg(&self, r: u8) -> Reg {
        self.cur().regs[usize::from(r & 15).min(10)]
    }

    pub fn set(&mut self, r: u8, v: Reg) {
        self.cur_mut().regs[usize::from(r & 15).min(10)] = v;
    }

    pub fn fresh_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id - 1
    }

    pub fn depth(&self) -> usize {
        self.frames.len()
    }

    pub fn can_call(&self) -> bool {
        self.frames.len() < MAX_CALL_FRAMES
    }

    /// Every register and spilled register of every frame.
    pub fn for_each_reg(&mut self, mut f: impl FnMut(&mut Reg)) {
        for fr in &mut self.frames {
            fr.regs.iter_mut().for_each(&mut f);
            for s in &mut fr.stack {
                if let Slot::Spill { reg, .. } = s {
                    f(reg);
                }
            }
        }
    }

    /// Renumber the ids in order of first appearance, so that two states that differ
    /// only in the ids they were handed compare equal (the kernel's states_equal does
    /// this with an idmap).
    pub fn canonicalize(&mut self) {
        let mut map: Vec<(u32, u32)> = Vec::new();
        self.for_each_reg(|r| {
            if let Some(id) = r.id_mut() {
                if *id == 0 {
                    return;
                }
                let new = match map.iter().find(|(old, _)| old == id) {
                    Some(&(_, n)) => n,
                    None => {
                        let n = map.len() as u32 + 1;
                        map.push((*id, n));
                        n
                    }
                };
                *id = new;
            }
        });
        self.next_id = map.len() as u32 + 1;
    }
}
