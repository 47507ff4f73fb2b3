//! Tests of helpers.rs.

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
