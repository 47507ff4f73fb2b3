//! Kernel helpers by number (include/uapi/linux/bpf.h, `___BPF_FUNC_MAPPER` order) and
//! the environment they read ([`XdpEnv`]).
//!
//! Semantics follow net/core/filter.c and include/linux/filter.h (v6.x):
//!
//! - bpf_xdp_adjust_head keeps `data` within `data_hard_start + sizeof(struct xdp_frame)
//!   + metalen ..= data_end - ETH_HLEN` and moves the metadata along with it.
//! - bpf_xdp_adjust_meta needs metadata support (-ENOTSUPP), stays behind the xdp_frame
//!   and at or before data (-EINVAL), and wants a 4-byte multiple of at most 255 bytes
//!   (-EACCES).
//! - bpf_xdp_adjust_tail stays within `data + ETH_HLEN ..= frame_sz - 320` and zeroes
//!   the bytes it grows.
//! - bpf_redirect with non-zero flags returns XDP_ABORTED.
//! - bpf_redirect_map returns XDP_ABORTED for a flag outside `XDP_TX | BPF_F_BROADCAST |
//!   BPF_F_EXCLUDE_INGRESS`; on a miss without BPF_F_BROADCAST it returns the low two
//!   bits of `flags` (the "default action").

use super::maps::{MapType, Maps, MAX_KEY_SIZE};
use super::vm::Machine;
use super::xdp::{RedirectTarget, XdpBuff, XDP_ABORTED, XDP_FRAME_SIZE, XDP_REDIRECT};
use super::{BpfError, CTX_ADDR, MAP_HANDLE_ADDR, MAP_VALUE_ADDR, MAP_VALUE_STRIDE};
use crate::consts::ETH_HLEN;

pub const FUNC_MAP_LOOKUP_ELEM: u32 = 1;
pub const FUNC_MAP_UPDATE_ELEM: u32 = 2;
pub const FUNC_MAP_DELETE_ELEM: u32 = 3;
pub const FUNC_KTIME_GET_NS: u32 = 5;
pub const FUNC_GET_PRANDOM_U32: u32 = 7;
pub const FUNC_GET_SMP_PROCESSOR_ID: u32 = 8;
pub const FUNC_REDIRECT: u32 = 23;
pub const FUNC_SKB_LOAD_BYTES: u32 = 26;
pub const FUNC_XDP_ADJUST_HEAD: u32 = 44;
pub const FUNC_REDIRECT_MAP: u32 = 51;
pub const FUNC_XDP_ADJUST_META: u32 = 54;
pub const FUNC_XDP_ADJUST_TAIL: u32 = 65;

/// bpf_redirect_map flags.
pub const BPF_F_BROADCAST: u64 = 1 << 3;
pub const BPF_F_EXCLUDE_INGRESS: u64 = 1 << 4;

const EACCES: i32 = 13;
const EINVAL: i32 = 22;
/// Kernel-internal ENOTSUPP (include/linux/errno.h), returned by bpf_xdp_adjust_meta.
const ENOTSUPP: i32 = 524;

const SUPPORTED: [(u32, &str); 12] = [
    (FUNC_MAP_LOOKUP_ELEM, "bpf_map_lookup_elem"),
    (FUNC_MAP_UPDATE_ELEM, "bpf_map_update_elem"),
    (FUNC_MAP_DELETE_ELEM, "bpf_map_delete_elem"),
    (FUNC_KTIME_GET_NS, "bpf_ktime_get_ns"),
    (FUNC_GET_PRANDOM_U32, "bpf_get_prandom_u32"),
    (FUNC_GET_SMP_PROCESSOR_ID, "bpf_get_smp_processor_id"),
    (FUNC_REDIRECT, "bpf_redirect"),
    (FUNC_SKB_LOAD_BYTES, "bpf_skb_load_bytes"),
    (FUNC_XDP_ADJUST_HEAD, "bpf_xdp_adjust_head"),
    (FUNC_REDIRECT_MAP, "bpf_redirect_map"),
    (FUNC_XDP_ADJUST_META, "bpf_xdp_adjust_meta"),
    (FUNC_XDP_ADJUST_TAIL, "bpf_xdp_adjust_tail"),
];

/// The kernel name of a supported helper, or "helper".
pub fn helper_name(id: u32) -> &'static str {
    SUPPORTED
        .iter()
        .find(|(i, _)| *i == id)
        .map_or("helper", |(_, n)| n)
}

/// The helper number for a name, with or without the `bpf_` prefix.
pub fn helper_by_name(name: &str) -> Option<u32> {
    let n = name.strip_prefix("bpf_").unwrap_or(name);
    SUPPORTED
        .iter()
        .find(|(_, s)| s.strip_prefix("bpf_") == Some(n))
        .map(|(i, _)| *i)
}

pub fn is_supported(id: u32) -> bool {
    SUPPORTED.iter().any(|(i, _)| *i == id)
}

/// What the helpers read besides the packet: the maps and a simulated clock.
pub trait XdpEnv {
    /// The map set the program's map references were bound to.
    fn maps(&mut self) -> &mut Maps;
    /// bpf_ktime_get_ns: the simulated monotonic clock.
    fn ktime_get_ns(&mut self) -> u64;
    /// bpf_get_prandom_u32. Defaults to 0; [`BasicEnv`] uses a seeded xorshift.
    fn get_prandom_u32(&mut self) -> u32 {
        0
    }
}

/// A ready-made environment: a map set, a clock the caller advances, a seeded PRNG.
#[derive(Debug, Clone, Default)]
pub struct BasicEnv {
    pub maps: Maps,
    pub now_ns: u64,
    pub rng: u32,
}

impl BasicEnv {
    pub fn new(maps: Maps) -> BasicEnv {
        BasicEnv {
            maps,
            now_ns: 0,
            rng: 0,
        }
    }
}

impl XdpEnv for BasicEnv {
    fn maps(&mut self) -> &mut Maps {
        &mut self.maps
    }

    fn ktime_get_ns(&mut self) -> u64 {
        self.now_ns
    }

    fn get_prandom_u32(&mut self) -> u32 {
        let mut x = if self.rng == 0 { 0x9e37_79b9 } else { self.rng };
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }
}

fn neg(errno: i32) -> u64 {
    i64::from(-errno) as u64
}

fn arg_err(helper: u32, reason: impl Into<String>) -> BpfError {
    BpfError::Helper {
        pc: 0,
        helper,
        reason: reason.into(),
    }
}

fn map_arg<E: XdpEnv + ?Sized>(m: &mut Machine<'_, E>, helper: u32) -> Result<u32, BpfError> {
    let idx = m.regs[1].wrapping_sub(MAP_HANDLE_ADDR);
    if idx < m.env.maps().len() as u64 {
        Ok(idx as u32)
    } else {
        Err(arg_err(
            helper,
            format!("r1 = {:#x} is not a map pointer", m.regs[1]),
        ))
    }
}

fn ctx_arg<E: XdpEnv + ?Sized>(m: &Machine<'_, E>, helper: u32) -> Result<(), BpfError> {
    if m.regs[1] == CTX_ADDR {
        Ok(())
    } else {
        Err(arg_err(
            helper,
            format!("r1 = {:#x} is not the context", m.regs[1]),
        ))
    }
}

/// The key a map helper points at with `reg`, read into `buf`.
fn key_arg<'k, E: XdpEnv + ?Sized>(
    m: &mut Machine<'_, E>,
    idx: u32,
    reg: usize,
    buf: &'k mut [u8; MAX_KEY_SIZE as usize],
) -> Result<&'k [u8], BpfError> {
    let ks = m
        .env
        .maps()
        .get(idx)
        .map_or(0, |map| map.spec().key_size as usize);
    let key = buf
        .get_mut(..ks)
        .ok_or_else(|| arg_err(FUNC_MAP_LOOKUP_ELEM, "key too large"))?;
    m.read_into(m.regs[reg], key)?;
    Ok(key)
}

fn map_type<E: XdpEnv + ?Sized>(m: &mut Machine<'_, E>, idx: u32) -> Option<MapType> {
    m.env.maps().get(idx).map(|map| map.spec().map_type)
}

/// Call helper `id` with r1-r5; the result goes to r0.
pub(crate) fn call<E: XdpEnv + ?Sized>(id: u32, m: &mut Machine<'_, E>) -> Result<u64, BpfError> {
    // Which helpers a program type has: xdp_func_proto, sk_filter_func_proto
    // (net/core/filter.c).
    let socket_filter = m.skb.is_some();
    match id {
        FUNC_REDIRECT | FUNC_REDIRECT_MAP | FUNC_XDP_ADJUST_HEAD | FUNC_XDP_ADJUST_META
        | FUNC_XDP_ADJUST_TAIL
            if socket_filter =>
        {
            return Err(arg_err(
                id,
                "not a socket filter helper (sk_filter_func_proto)",
            ));
        }
        FUNC_SKB_LOAD_BYTES if !socket_filter => {
            return Err(arg_err(id, "not an XDP helper (xdp_func_proto)"));
        }
        _ => {}
    }
    match id {
        FUNC_SKB_LOAD_BYTES => {
            ctx_arg(m, id)?;
            skb_load_bytes(m)
        }
        FUNC_MAP_LOOKUP_ELEM => {
            let idx = map_arg(m, id)?;
            let mut kb = [0; MAX_KEY_SIZE as usize];
            let key = key_arg(m, idx, 2, &mut kb)?;
            let off = m.env.maps().get(idx).and_then(|map| map.value_offset(key));
            Ok(off.map_or(0, |o| {
                MAP_VALUE_ADDR + u64::from(idx) * MAP_VALUE_STRIDE + o
            }))
        }
        FUNC_MAP_UPDATE_ELEM | FUNC_MAP_DELETE_ELEM => map_update_or_delete(m, id),
        FUNC_KTIME_GET_NS => Ok(m.env.ktime_get_ns()),
        FUNC_GET_PRANDOM_U32 => Ok(u64::from(m.env.get_prandom_u32())),
        FUNC_GET_SMP_PROCESSOR_ID => Ok(0),
        FUNC_REDIRECT => {
            // bpf_xdp_redirect: any flag aborts; otherwise map type UNSPEC, map_id INT_MAX.
            if m.regs[2] != 0 {
                return Ok(u64::from(XDP_ABORTED));
            }
            let ifindex = m.regs[1] as u32;
            m.tgt_index = Some(ifindex);
            m.redirect = Some(RedirectTarget::Ifindex(ifindex));
            Ok(u64::from(XDP_REDIRECT))
        }
        FUNC_REDIRECT_MAP => {
            let idx = map_arg(m, id)?;
            if !map_type(m, idx).is_some_and(MapType::is_devmap) {
                return Err(arg_err(
                    id,
                    "only DEVMAP and DEVMAP_HASH targets are modelled",
                ));
            }
            redirect_map(m, idx)
        }
        FUNC_XDP_ADJUST_HEAD | FUNC_XDP_ADJUST_META | FUNC_XDP_ADJUST_TAIL => {
            ctx_arg(m, id)?;
            let offset = m.regs[2] as i32;
            let ret = match id {
                FUNC_XDP_ADJUST_HEAD => xdp_adjust_head(m.frame, offset),
                FUNC_XDP_ADJUST_META => xdp_adjust_meta(m.frame, offset),
                _ => xdp_adjust_tail(m.frame, offset),
            };
            Ok(i64::from(ret) as u64)
        }
        _ => Err(arg_err(id, "unsupported helper")),
    }
}

/// bpf_map_update_elem(map, key, value, flags) / bpf_map_delete_elem(map, key): 0 or
/// the map's -errno. A devmap is read-only from a program (kernel/bpf/verifier.c:
/// check_map_func_compatibility allows only lookup and redirect_map on it).
fn map_update_or_delete<E: XdpEnv + ?Sized>(
    m: &mut Machine<'_, E>,
    id: u32,
) -> Result<u64, BpfError> {
    let idx = map_arg(m, id)?;
    if map_type(m, idx).is_some_and(MapType::is_devmap) {
        return Err(arg_err(
            id,
            "devmaps can only be read and redirected to from a program",
        ));
    }
    let mut kb = [0; MAX_KEY_SIZE as usize];
    let key = key_arg(m, idx, 2, &mut kb)?;
    let res = if id == FUNC_MAP_UPDATE_ELEM {
        let vs = m
            .env
            .maps()
            .get(idx)
            .map_or(0, |map| map.spec().value_size as usize);
        let mut value = vec![0; vs];
        m.read_into(m.regs[3], &mut value)?;
        let flags = m.regs[4];
        m.env
            .maps()
            .get_mut(idx)
            .map(|map| map.update(key, &value, flags))
    } else {
        m.env.maps().get_mut(idx).map(|map| map.delete(key))
    };
    Ok(match res {
        Some(Ok(())) => 0,
        Some(Err(e)) => neg(e.errno()),
        None => neg(EINVAL),
    })
}

/// bpf_skb_load_bytes(skb, offset, to, len): `len` bytes from `skb->data + offset` to
/// `to`; -EFAULT (and `to` zeroed) past the skb or for an offset over INT_MAX. The
/// verifier wants `len` a constant 1 ..= stack or value size (ARG_CONST_SIZE).
fn skb_load_bytes<E: XdpEnv + ?Sized>(m: &mut Machine<'_, E>) -> Result<u64, BpfError> {
    const EFAULT: i32 = 14;
    let (offset, to, len) = (m.regs[2] as u32, m.regs[3], m.regs[4]);
    if len == 0 || len > super::STACK_SIZE as u64 {
        return Err(arg_err(
            FUNC_SKB_LOAD_BYTES,
            format!("len {len} is not 1 ..= {}", super::STACK_SIZE),
        ));
    }
    let len = len as usize;
    let src = (offset <= i32::MAX as u32)
        .then(|| {
            m.frame
                .data()
                .get(offset as usize..)
                .and_then(|d| d.get(..len))
        })
        .flatten()
        .map(<[u8]>::to_vec);
    let dst = m.mem(to, len, true, false)?;
    match src {
        Some(bytes) => {
            dst.copy_from_slice(&bytes);
            Ok(0)
        }
        None => {
            dst.fill(0);
            Ok(neg(EFAULT))
        }
    }
}

/// __bpf_xdp_redirect_map with dev_map_redirect's flag mask.
fn redirect_map<E: XdpEnv + ?Sized>(m: &mut Machine<'_, E>, idx: u32) -> Result<u64, BpfError> {
    const ACTION_MASK: u64 = 3; // XDP_ABORTED | XDP_DROP | XDP_PASS | XDP_TX
    let (key, flags) = (m.regs[2] as u32, m.regs[3]);
    if flags & !(ACTION_MASK | BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS) != 0 {
        return Ok(u64::from(XDP_ABORTED));
    }
    let hit = m.env.maps().get(idx).and_then(|map| map.dev_ifindex(key));
    let broadcast = flags & BPF_F_BROADCAST != 0;
    match hit {
        None if !broadcast => {
            // map_id = INT_MAX, map_type = UNSPEC: tgt_index is left as it was.
            m.redirect = m.tgt_index.map(RedirectTarget::Ifindex);
            Ok(flags & ACTION_MASK)
        }
        _ => {
            m.tgt_index = Some(key);
            m.redirect = Some(match hit {
                Some(ifindex) if !broadcast => RedirectTarget::Devmap {
                    map: idx,
                    key,
                    ifindex,
                },
                _ => RedirectTarget::Broadcast {
                    map: idx,
                    exclude_ingress: flags & BPF_F_EXCLUDE_INGRESS != 0,
                },
            });
            Ok(u64::from(XDP_REDIRECT))
        }
    }
}

/// bpf_xdp_adjust_head: 0 or -EINVAL.
pub fn xdp_adjust_head(x: &mut XdpBuff, offset: i32) -> i32 {
    let metalen = x.metalen();
    let data_start = (x.data_hard_start + XDP_FRAME_SIZE + metalen) as i64;
    let data = x.data as i64 + i64::from(offset);
    if data < data_start || data > x.data_end as i64 - ETH_HLEN as i64 {
        return -EINVAL;
    }
    let meta = (x.data_meta as i64 + i64::from(offset)) as usize;
    if metalen > 0 {
        if meta + metalen > x.buf.len() {
            return -EINVAL;
        }
        x.buf.copy_within(x.data_meta..x.data, meta);
    }
    x.data_meta = meta;
    x.data = data as usize;
    0
}

/// bpf_xdp_adjust_meta: 0, -ENOTSUPP (524), -EINVAL or -EACCES.
pub fn xdp_adjust_meta(x: &mut XdpBuff, offset: i32) -> i32 {
    let meta = x.data_meta as i64 + i64::from(offset);
    if !x.meta_supported() {
        return -ENOTSUPP;
    }
    if meta < (x.data_hard_start + XDP_FRAME_SIZE) as i64 || meta > x.data as i64 {
        return -EINVAL;
    }
    // xdp_metalen_invalid: 4-byte aligned, at most type_max(skb_shared_info.meta_len) = 255.
    let metalen = x.data as i64 - meta;
    if metalen % 4 != 0 || metalen > 255 {
        return -EACCES;
    }
    x.data_meta = meta as usize;
    0
}

/// bpf_xdp_adjust_tail on a linear buffer: 0 or -EINVAL; grown bytes are zeroed.
pub fn xdp_adjust_tail(x: &mut XdpBuff, offset: i32) -> i32 {
    let data_end = x.data_end as i64 + i64::from(offset);
    if data_end > x.hard_end() as i64 || data_end < (x.data + ETH_HLEN) as i64 {
        return -EINVAL;
    }
    let new_end = data_end as usize;
    if new_end > x.data_end {
        if let Some(grown) = x.buf.get_mut(x.data_end..new_end) {
            grown.fill(0);
        }
    }
    x.data_end = new_end;
    0
}

#[cfg(test)]
#[path = "helpers_tests.rs"]
mod tests;
