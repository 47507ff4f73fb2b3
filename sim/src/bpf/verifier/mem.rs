//! Loads and stores over the abstract state (kernel/bpf/verifier.c: check_mem_access,
//! check_packet_access, check_ctx_access via xdp_is_valid_access in net/core/filter.c,
//! check_stack_write_fixed_off / check_stack_read_fixed_off, check_map_access).

use super::alu::pkt_base;
use super::state::{PktKind, Range, Reg, Slot, State, MAX_VAR_OFF, SLOT};
use crate::bpf::maps::{MapSpec, BPF_F_RDONLY_PROG};
use crate::bpf::xdp::{
    XDP_MD_DATA, XDP_MD_DATA_END, XDP_MD_DATA_META, XDP_MD_EGRESS_IFINDEX, XDP_MD_SIZE,
};
use crate::bpf::STACK_SIZE;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    /// A store of this register (BPF_STX).
    Write(Reg),
    /// A store of this immediate (BPF_ST).
    Store(i32),
    /// BPF_ATOMIC: read and written.
    Atomic,
}

impl Access {
    fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }
}

/// Access `size` bytes at `R{regno} + off`; a read returns what lands in the destination.
pub fn access(
    st: &mut State,
    maps: &[MapSpec],
    regno: u8,
    off: i16,
    size: usize,
    acc: Access,
) -> Result<Reg, String> {
    let reg = st.reg(regno);
    let off = i64::from(off);
    let sz = size as i64;
    let loaded = Reg::Scalar(Range::bytes(size));
    match reg {
        Reg::Uninit => Err(format!("R{regno} !read_ok")),
        Reg::Pkt {
            id,
            off: roff,
            vmin,
            r,
            ..
        } => {
            if acc == Access::Atomic {
                return Err(format!(
                    "BPF_ATOMIC stores into R{regno} {} is not allowed",
                    reg.type_name()
                ));
            }
            if vmin < 0 {
                return Err(format!("R{regno} min value is negative, either use unsigned index or do a if (index >=0) check."));
            }
            let o = roff + off;
            if o < 0 || o + sz > r {
                return Err(format!(
                    "invalid access to packet, off={o} size={size}, R{regno}(id={id},off={o},r={r})"
                ));
            }
            Ok(loaded)
        }
        Reg::Ctx { off: roff } => ctx_access(regno, roff, off, size, acc),
        Reg::Stack { frame, off: roff } => stack_access(st, regno, frame, (roff, off), size, acc),
        Reg::MapValue {
            map,
            off: roff,
            vmin,
            vmax,
            null: false,
            ..
        } => {
            let spec = maps
                .get(map as usize)
                .ok_or_else(|| format!("map slot {map} is not bound to a map"))?;
            let vs = i64::from(spec.value_size);
            if vmin < 0 {
                return Err(format!("R{regno} min value is negative, either use unsigned index or do a if (index >=0) check."));
            }
            if vmax + roff + off >= MAX_VAR_OFF {
                return Err(format!(
                    "R{regno} unbounded memory access, make sure to bounds check any such access"
                ));
            }
            let (lo, hi) = (roff + off + vmin, roff + off + vmax);
            if lo < 0 || hi + sz > vs {
                let at = if lo < 0 { lo } else { hi };
                return Err(format!(
                    "invalid access to map value, value_size={vs} off={at} size={size}"
                ));
            }
            let rdonly = spec.map_flags & BPF_F_RDONLY_PROG != 0 || spec.map_type.is_devmap();
            if acc.writes() && rdonly {
                return Err(format!(
                    "write into map forbidden, value_size={vs} off={lo} size={size}"
                ));
            }
            Ok(loaded)
        }
        _ => Err(format!("R{regno} invalid mem access '{}'", reg.type_name())),
    }
}

/// struct xdp_md: read-only, aligned __u32 fields; data, data_meta and data_end load as
/// packet pointers (net/core/filter.c: xdp_is_valid_access, __is_valid_xdp_access);
/// egress_ifindex only for BPF_XDP_DEVMAP programs.
fn ctx_access(regno: u8, roff: i64, off: i64, size: usize, acc: Access) -> Result<Reg, String> {
    if roff != 0 {
        return Err(format!(
            "dereference of modified ctx ptr R{regno} off={roff} disallowed"
        ));
    }
    match acc {
        Access::Store(_) => return Err(format!("BPF_ST stores into R{regno} ctx is not allowed")),
        Access::Atomic => {
            return Err(format!(
                "BPF_ATOMIC stores into R{regno} ctx is not allowed"
            ))
        }
        _ => {}
    }
    let field = usize::try_from(off).ok();
    let valid = acc == Access::Read
        && size == 4
        && field.is_some_and(|f| f < XDP_MD_SIZE && f % 4 == 0 && f != XDP_MD_EGRESS_IFINDEX);
    if !valid {
        return Err(format!("invalid bpf_context access off={off} size={size}"));
    }
    Ok(match field {
        Some(XDP_MD_DATA) => pkt_base(PktKind::Data),
        Some(XDP_MD_DATA_META) => pkt_base(PktKind::Meta),
        Some(XDP_MD_DATA_END) => Reg::PktEnd,
        _ => Reg::Scalar(Range::bytes(4)),
    })
}

/// fp-512 ..= fp, aligned to the size (check_stack_access_within_bounds,
/// check_ptr_alignment: stack accesses are always strict).
fn stack_access(
    st: &mut State,
    regno: u8,
    frame: u8,
    (roff, ioff): (i64, i64),
    size: usize,
    acc: Access,
) -> Result<Reg, String> {
    let (off, sz) = (roff + ioff, size as i64);
    if off < -(STACK_SIZE as i64) || off + sz > 0 {
        let what = if acc.writes() {
            "write to"
        } else {
            "read from"
        };
        return Err(format!(
            "invalid {what} stack R{regno} off={off} size={size}"
        ));
    }
    if off % sz != 0 {
        return Err(format!(
            "misaligned stack access off 0+{roff}+{ioff} size {size}"
        ));
    }
    let idx = ((off + STACK_SIZE as i64) / SLOT) as usize;
    let b = (off.rem_euclid(SLOT)) as u32;
    let slot = &mut st.frames[usize::from(frame)].stack[idx];
    let bits = (((1u16 << size) - 1) << b) as u8;
    match acc {
        Access::Read => Ok(match *slot {
            Slot::Spill { reg, size: n } if b == 0 && usize::from(n) == size => match reg {
                Reg::Scalar(r) if size < 8 && !r.fits_bytes(size) => {
                    Reg::Scalar(Range::bytes(size))
                }
                r => r,
            },
            Slot::Spill { reg, .. } if reg.is_pointer() => {
                return Err("invalid size of register fill".to_string())
            }
            Slot::Bytes(zero) if zero & bits == bits => Reg::Scalar(Range::konst(0)),
            _ => Reg::Scalar(Range::bytes(size)),
        }),
        Access::Write(v) if v.is_pointer() => {
            if size != SLOT as usize {
                return Err("invalid size of register spill".to_string());
            }
            *slot = Slot::Spill { reg: v, size: 8 };
            Ok(Reg::Uninit)
        }
        // check_stack_write_fixed_off: a scalar (register or BPF_ST immediate) written at
        // a slot boundary is spilled with its size; anything else is data, zero or not.
        Access::Write(Reg::Scalar(r)) if b == 0 => {
            *slot = Slot::Spill {
                reg: Reg::Scalar(r),
                size: size as u8,
            };
            Ok(Reg::Uninit)
        }
        Access::Store(imm) if b == 0 => {
            *slot = Slot::Spill {
                reg: Reg::Scalar(Range::konst(i64::from(imm) as u64)),
                size: size as u8,
            };
            Ok(Reg::Uninit)
        }
        _ => {
            let zero = match acc {
                Access::Write(Reg::Scalar(r)) => r.as_const() == Some(0),
                Access::Store(imm) => imm == 0,
                _ => false,
            };
            let old = match *slot {
                Slot::Bytes(z) => z,
                Slot::Spill { .. } => 0,
            };
            *slot = Slot::Bytes(if zero { old | bits } else { old & !bits });
            Ok(Reg::Uninit)
        }
    }
}

/// A helper's memory argument (ARG_PTR_TO_MAP_KEY / ARG_PTR_TO_MAP_VALUE): `size`
/// readable bytes at `R{regno}` (check_helper_mem_access).
pub fn helper_mem(
    st: &mut State,
    maps: &[MapSpec],
    regno: u8,
    size: u32,
    expected: &str,
) -> Result<(), String> {
    let reg = st.reg(regno);
    match reg {
        Reg::Uninit => Err(format!("R{regno} !read_ok")),
        Reg::Stack { off, .. } => {
            let sz = i64::from(size);
            if off < -(STACK_SIZE as i64) || off + sz > 0 || size == 0 {
                return Err(format!(
                    "invalid indirect access to stack R{regno} off={off} size={size}"
                ));
            }
            Ok(())
        }
        Reg::Pkt { .. } | Reg::MapValue { null: false, .. } => {
            // A read of the whole area: the bounds of a load of that size.
            let mut probe = st.clone();
            access(&mut probe, maps, regno, 0, size as usize, Access::Read)?;
            Ok(())
        }
        _ => Err(format!(
            "R{regno} type={} expected={expected}",
            reg.type_name()
        )),
    }
}

/// The key a `bpf_map_lookup_elem` argument points at when it is a known constant: zero
/// bytes, or a scalar spilled with the key's size (get_constant_map_key).
pub fn const_key(st: &State, regno: u8, key_size: u32) -> Option<u64> {
    let Reg::Stack { frame, off } = st.reg(regno) else {
        return None;
    };
    if !(-(STACK_SIZE as i64)..0).contains(&off) {
        return None;
    }
    let idx = ((off + STACK_SIZE as i64) / SLOT) as usize;
    let b = off.rem_euclid(SLOT) as u32;
    match st.frames.get(usize::from(frame))?.stack[idx] {
        Slot::Bytes(zero) => {
            let run = (zero >> b).trailing_ones();
            (run >= key_size).then_some(0)
        }
        Slot::Spill {
            reg: Reg::Scalar(r),
            size,
        } if b == 0 && u32::from(size) == key_size => r.as_const(),
        _ => None,
    }
}
