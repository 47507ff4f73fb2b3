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
use super::xdp::{RedirectTarget, XdpBuff, ETH_HLEN, XDP_ABORTED, XDP_FRAME_SIZE, XDP_REDIRECT};
use super::{BpfError, CTX_ADDR, MAP_HANDLE_ADDR, MAP_VALUE_ADDR, MAP_VALUE_STRIDE};

pub const FUNC_MAP_LOOKUP_ELEM: u32 = 1;
pub const FUNC_MAP_UPDATE_ELEM: u32 = 2;
pub const FUNC_MAP_DELETE_ELEM: u32 = 3;
pub const FUNC_KTIME_GET_NS: u32 = 5;
pub const FUNC_GET_PRANDOM_U32: u32 = 7;
pub const FUNC_GET_SMP_PROCESSOR_ID: u32 = 8;
pub const FUNC_REDIRECT: u32 = 23;
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

const SUPPORTED: [(u32, &str); 11] = [
    (FUNC_MAP_LOOKUP_ELEM, "bpf_map_lookup_elem"),
    (FUNC_MAP_UPDATE_ELEM, "bpf_map_update_elem"),
    (FUNC_MAP_DELETE_ELEM, "bpf_map_delete_elem"),
    (FUNC_KTIME_GET_NS, "bpf_ktime_get_ns"),
    (FUNC_GET_PRANDOM_U32, "bpf_get_prandom_u32"),
    (FUNC_GET_SMP_PROCESSOR_ID, "bpf_get_smp_processor_id"),
    (FUNC_REDIRECT, "bpf_redirect"),
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
    match id {
        FUNC_MAP_LOOKUP_ELEM => {
            let idx = map_arg(m, id)?;
            let mut kb = [0; MAX_KEY_SIZE as usize];
            let key = key_arg(m, idx, 2, &mut kb)?;
            let off = m.env.maps().get(idx).and_then(|map| map.value_offset(key));
            Ok(off.map_or(0, |o| {
                MAP_VALUE_ADDR + u64::from(idx) * MAP_VALUE_STRIDE + o
            }))
        }
        FUNC_MAP_UPDATE_ELEM | FUNC_MAP_DELETE_ELEM => {
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
mod tests {
    use super::*;

    fn buf(len: usize) -> XdpBuff {
        XdpBuff::new(&vec![0xab; len])
    }

    #[test]
    fn adjust_head_limits() {
        let mut x = buf(60);
        // Forward: strip 14 bytes, then refuse to leave fewer than ETH_HLEN.
        assert_eq!(xdp_adjust_head(&mut x, 14), 0);
        assert_eq!((x.data, x.len()), (270, 46));
        assert_eq!(xdp_adjust_head(&mut x, 33), -EINVAL);
        assert_eq!(xdp_adjust_head(&mut x, 32), 0);
        assert_eq!(x.len(), 14);
        // Back: down to data_hard_start + sizeof(struct xdp_frame) = 40, not one further.
        let mut y = buf(60);
        assert_eq!(xdp_adjust_head(&mut y, -217), -EINVAL);
        assert_eq!(xdp_adjust_head(&mut y, -216), 0);
        assert_eq!((y.data, y.data_meta, y.len()), (40, 40, 276));
    }

    #[test]
    fn adjust_head_moves_metadata() {
        let mut x = buf(60);
        assert_eq!(xdp_adjust_meta(&mut x, -8), 0);
        x.buf[248..256].copy_from_slice(b"metadata");
        // The metadata must also fit behind the xdp_frame.
        assert_eq!(xdp_adjust_head(&mut x, -209), -EINVAL);
        assert_eq!(xdp_adjust_head(&mut x, -16), 0);
        assert_eq!((x.data_meta, x.data), (232, 240));
        assert_eq!(x.meta(), b"metadata");
        assert_eq!(xdp_adjust_head(&mut x, 20), 0);
        assert_eq!(x.meta(), b"metadata");
        // Unsupported metadata follows data and stays unsupported.
        let mut u = buf(60);
        u.set_meta_unsupported();
        assert_eq!(xdp_adjust_head(&mut u, -10), 0);
        assert!(!u.meta_supported());
        assert_eq!(xdp_adjust_meta(&mut u, -4), -ENOTSUPP);
    }

    #[test]
    fn adjust_meta_limits() {
        let mut x = XdpBuff::with_layout(&[0; 60], 400, 4096).unwrap();
        assert_eq!(xdp_adjust_meta(&mut x, -6), -EACCES);
        assert_eq!(xdp_adjust_meta(&mut x, 4), -EINVAL);
        assert_eq!(xdp_adjust_meta(&mut x, -256), -EACCES);
        assert_eq!(xdp_adjust_meta(&mut x, -252), 0);
        assert_eq!(x.metalen(), 252);
        assert_eq!(xdp_adjust_meta(&mut x, 252), 0);
        assert_eq!(x.metalen(), 0);
        let mut near = XdpBuff::with_layout(&[0; 60], 48, 4096).unwrap();
        assert_eq!(xdp_adjust_meta(&mut near, -12), -EINVAL);
        assert_eq!(xdp_adjust_meta(&mut near, -8), 0);
    }

    #[test]
    fn adjust_tail_limits() {
        let mut x = buf(60);
        // Grow up to xdp_data_hard_end = frame_sz - 320 = 3776: 3460 bytes past data_end 316.
        assert_eq!(xdp_adjust_tail(&mut x, 3461), -EINVAL);
        x.buf[316..320].copy_from_slice(&[9; 4]);
        assert_eq!(xdp_adjust_tail(&mut x, 3460), 0);
        assert_eq!(x.len(), 3520);
        assert!(
            x.data()[60..].iter().all(|&b| b == 0),
            "grown bytes are zeroed"
        );
        // Shrink down to ETH_HLEN bytes, not one further.
        assert_eq!(xdp_adjust_tail(&mut x, -3506), 0);
        assert_eq!(x.len(), 14);
        assert_eq!(xdp_adjust_tail(&mut x, -1), -EINVAL);
    }

    #[test]
    fn names_and_numbers() {
        assert_eq!(helper_name(65), "bpf_xdp_adjust_tail");
        assert_eq!(helper_by_name("redirect_map"), Some(51));
        assert_eq!(helper_by_name("bpf_ktime_get_ns"), Some(5));
        assert_eq!(helper_by_name("bpf_nope"), None);
        assert!(is_supported(44) && !is_supported(12));
        let mut e = BasicEnv::default();
        let (a, b) = (e.get_prandom_u32(), e.get_prandom_u32());
        assert_ne!(a, b);
        let mut f = BasicEnv::default();
        assert_eq!(f.get_prandom_u32(), a, "seeded and deterministic");
    }

    use crate::bpf::maps::{MapSpec, BPF_ANY};
    use crate::bpf::xdp::{XDP_DROP, XDP_PASS, XDP_TX};
    use crate::bpf::{assemble, run_xdp, BpfError, Program, XdpRun};

    fn load(src: &str, env: &mut BasicEnv) -> Program {
        let mut p = assemble("t", src).unwrap();
        p.bind_maps(&mut env.maps).unwrap();
        p
    }

    fn run(p: &Program, env: &mut BasicEnv) -> XdpRun {
        run_xdp(p, &mut buf(60), env).unwrap()
    }

    const COUNT: &str = "
        .map counters array 4 8 4
        r1 = 2
        *(u32 *)(r10 - 4) = r1
        r2 = r10
        r2 += -4
        r1 = map[counters] ll
        call bpf_map_lookup_elem
        if r0 == 0 goto miss
        r1 = 5
        lock *(u64 *)(r0 + 0) += r1
        r1 = atomic_fetch_add((u64 *)(r0 + 0), r1)
        r0 = r1
        exit
    miss:
        r0 = 0
        exit";

    #[test]
    fn array_lookup_pointer_takes_atomic_adds() {
        let mut env = BasicEnv::default();
        let p = load(COUNT, &mut env);
        assert_eq!(
            run(&p, &mut env).r0,
            5,
            "fetch returns the value before the add"
        );
        let r = run(&p, &mut env);
        assert_eq!((r.r0, r.helper_calls), (15, 1));
        assert_eq!(env.maps.by_name("counters").unwrap().read_u64(2), Some(20));
        // Userspace writes are seen by the program through the same storage.
        env.maps
            .by_name_mut("counters")
            .unwrap()
            .update(&2u32.to_le_bytes(), &100u64.to_le_bytes(), BPF_ANY)
            .unwrap();
        assert_eq!(run(&p, &mut env).r0, 105);
    }

    #[test]
    fn map_value_bounds_and_read_only_devmaps() {
        let mut env = BasicEnv::default();
        let past_value = COUNT.replace("lock *(u64 *)(r0 + 0) += r1", "r1 = *(u64 *)(r0 + 8)");
        let p = load(&past_value, &mut env);
        let e = run_xdp(&p, &mut buf(60), &mut env).unwrap_err();
        assert!(e.to_string().contains("outside the map value"), "{e}");
        env.maps.create("tx", MapSpec::devmap(4)).unwrap();
        env.maps
            .by_name_mut("tx")
            .unwrap()
            .update(&2u32.to_le_bytes(), &9u32.to_le_bytes(), BPF_ANY)
            .unwrap();
        let write = COUNT
            .replace(".map counters array 4 8 4", "")
            .replace("map[counters]", "map[tx]");
        let p = load(
            &write.replace("lock *(u64 *)(r0 + 0) += r1", "r1 = *(u32 *)(r0 + 0)"),
            &mut env,
        );
        assert!(
            run_xdp(&p, &mut buf(60), &mut env).is_err(),
            "the fetch_add writes"
        );
        let read = "r1 = 2\n*(u32 *)(r10 - 4) = r1\nr2 = r10\nr2 += -4\nr1 = map[tx] ll\ncall 1\nr0 = *(u32 *)(r0 + 0)\nexit";
        assert_eq!(
            run(&load(read, &mut env), &mut env).r0,
            9,
            "devmap lookup reads the ifindex"
        );
    }

    #[test]
    fn hash_update_from_the_program_hits_e2big() {
        let mut env = BasicEnv::default();
        let p = load(
            "
            .map flows hash 4 8 2
            r2 = *(u32 *)(r1 + 12)      ; key = ctx->ingress_ifindex
            *(u32 *)(r10 - 4) = r2
            r3 = 7
            *(u64 *)(r10 - 16) = r3
            r1 = map[flows] ll
            r2 = r10
            r2 += -4
            r3 = r10
            r3 += -16
            r4 = 0                      ; BPF_ANY
            call bpf_map_update_elem
            exit",
            &mut env,
        );
        let mut results = Vec::new();
        for ifindex in [1, 2, 1, 3] {
            let mut x = buf(60);
            x.ingress_ifindex = ifindex;
            results.push(run_xdp(&p, &mut x, &mut env).unwrap().r0 as i64);
        }
        assert_eq!(
            results,
            vec![0, 0, 0, -7],
            "the third distinct key is -E2BIG"
        );
        assert_eq!(env.maps.by_name("flows").unwrap().len(), 2);
    }

    fn redirect_prog(env: &mut BasicEnv, key: u32, flags: u64, before: &str) -> XdpRun {
        let src = format!(
            ".map tx devmap 4 4 8\n{before}\nr1 = map[tx] ll\nr2 = {key}\nr3 = {flags} ll\ncall bpf_redirect_map\nexit"
        );
        let p = load(&src, env);
        run(&p, env)
    }

    #[test]
    fn redirect_map_hits_misses_and_flags() {
        let mut env = BasicEnv::default();
        redirect_prog(&mut env, 0, 0, "");
        let tx = env.maps.index_of("tx").unwrap();
        env.maps
            .get_mut(tx)
            .unwrap()
            .update(&1u32.to_le_bytes(), &7u32.to_le_bytes(), BPF_ANY)
            .unwrap();
        let hit = redirect_prog(&mut env, 1, 0, "");
        assert_eq!(
            (hit.action, hit.redirect),
            (
                XDP_REDIRECT,
                Some(RedirectTarget::Devmap {
                    map: tx,
                    key: 1,
                    ifindex: 7
                })
            )
        );
        // A miss returns the low two bits of flags, the "default action".
        for (flags, want) in [
            (0, XDP_ABORTED),
            (XDP_DROP, XDP_DROP),
            (XDP_PASS, XDP_PASS),
            (XDP_TX, XDP_TX),
        ] {
            let r = redirect_prog(&mut env, 2, u64::from(flags), "");
            assert_eq!((r.action, r.redirect), (want, None), "flags {flags}");
        }
        // Keys past max_entries miss too; flags outside the mask abort even on a hit.
        assert_eq!(redirect_prog(&mut env, 100, 2, "").action, XDP_PASS);
        assert_eq!(redirect_prog(&mut env, 1, 4, "").action, XDP_ABORTED);
        assert_eq!(redirect_prog(&mut env, 1, 1 << 5, "").action, XDP_ABORTED);
        // BPF_F_BROADCAST redirects even on a miss.
        let b = redirect_prog(&mut env, 2, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS | 1, "");
        assert_eq!(
            (b.action, b.redirect),
            (
                XDP_REDIRECT,
                Some(RedirectTarget::Broadcast {
                    map: tx,
                    exclude_ingress: true
                })
            )
        );
        // A miss after bpf_redirect leaves tgt_index: the stale ifindex is the target.
        let stale = redirect_prog(&mut env, 2, 2, "r1 = 5\nr2 = 0\ncall bpf_redirect");
        assert_eq!(
            (stale.action, stale.redirect),
            (XDP_PASS, Some(RedirectTarget::Ifindex(5)))
        );
    }

    #[test]
    fn redirect_ktime_and_adjust_through_the_program() {
        let mut env = BasicEnv::default();
        let r = run(
            &load("r1 = 42\nr2 = 0\ncall bpf_redirect\nexit", &mut env),
            &mut env,
        );
        assert_eq!(
            (r.action, r.redirect),
            (XDP_REDIRECT, Some(RedirectTarget::Ifindex(42)))
        );
        let r = run(
            &load("r1 = 42\nr2 = 1\ncall bpf_redirect\nexit", &mut env),
            &mut env,
        );
        assert_eq!((r.action, r.redirect), (XDP_ABORTED, None));
        env.now_ns = 123_456_789;
        assert_eq!(
            run(&load("call bpf_ktime_get_ns\nexit", &mut env), &mut env).r0,
            123_456_789
        );
        // Pointers are re-read from the context after the helper, as the verifier demands.
        let p = load(
            "r6 = r1\nr2 = 14\ncall bpf_xdp_adjust_head\nif r0 != 0 goto out\nr1 = r6\nr2 = 4\ncall bpf_xdp_adjust_tail\n\
             r2 = *(u32 *)(r6 + 0)\nr3 = *(u32 *)(r6 + 4)\nr0 = r3\nr0 -= r2\nout: exit",
            &mut env,
        );
        let mut x = buf(60);
        assert_eq!(run_xdp(&p, &mut x, &mut env).unwrap().r0, 50);
        assert_eq!((x.data, x.data_end), (270, 320));
    }

    #[test]
    fn arguments_the_verifier_would_refuse() {
        let mut env = BasicEnv::default();
        let bad_map = load("r1 = 0\nr2 = r10\ncall bpf_map_lookup_elem\nexit", &mut env);
        let e = run_xdp(&bad_map, &mut buf(60), &mut env).unwrap_err();
        assert!(
            matches!(
                &e,
                BpfError::Helper {
                    pc: 2,
                    helper: 1,
                    ..
                }
            ),
            "{e}"
        );
        let not_ctx = load("r1 = r10\nr2 = 4\ncall 44\nexit", &mut env);
        assert!(matches!(
            run_xdp(&not_ctx, &mut buf(60), &mut env),
            Err(BpfError::Helper { helper: 44, .. })
        ));
        env.maps.create("dev", MapSpec::devmap(2)).unwrap();
        let upd = load(
            "r1 = map[dev] ll\nr2 = r10\nr2 += -4\nr3 = r2\nr4 = 0\ncall 2\nexit",
            &mut env,
        );
        assert!(run_xdp(&upd, &mut buf(60), &mut env)
            .unwrap_err()
            .to_string()
            .contains("devmaps"));
        env.maps.create("arr", MapSpec::array(4, 2)).unwrap();
        let redir = load("r1 = map[arr] ll\nr2 = 0\nr3 = 0\ncall 51\nexit", &mut env);
        assert!(run_xdp(&redir, &mut buf(60), &mut env).is_err());
        let unbound = assemble("t", "r1 = map[nowhere] ll\nexit").unwrap();
        assert_eq!(
            run_xdp(&unbound, &mut buf(60), &mut env),
            Err(BpfError::Unbound {
                map: "nowhere".into()
            })
        );
    }
}
