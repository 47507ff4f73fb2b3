//! The tap itself: a name no concurrent run uses, and its GRO size limits.

use super::*;

/// A tap name no other run uses at the same time: "gro" and five hex digits (so that
/// `napi/<name>-0` fits the 15 characters of a task's comm).
pub(super) fn unique_tap_name() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = u64::from(std::process::id()) << 32 | u64::from(n) << 20 | u64::from(nanos);
    // splitmix64 finaliser: spread every input bit over the 20 kept.
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    format!("gro{:05x}", x & 0xf_ffff)
}

/// `[gro] gro_max_size` / `gro_ipv4_max_size` on the tap through rtnetlink (only those
/// other than GRO_LEGACY_MAX_SIZE), read back: what the kernel reports (65536 for an
/// attribute it does not report).
pub(super) fn set_gro_sizes(
    ns: &mut Netns,
    ifindex: u32,
    plan: &sim::gro::plan::GroPlan,
) -> Result<(usize, usize), KernelError> {
    let legacy = sim::gro::GRO_LEGACY_MAX_SIZE;
    let want = |v: usize| (v != legacy).then_some(v as u32);
    let (v6, v4) = (want(plan.gro_max_size), want(plan.gro_ipv4_max_size));
    if v6.is_some() || v4.is_some() {
        ns.rtnl().set_gro_max_sizes(ifindex, v6, v4)?;
    }
    let link = ns.rtnl().link(ifindex)?;
    let read = |v: Option<u32>| v.map_or(legacy, |v| v as usize);
    Ok((read(link.gro_max_size), read(link.gro_ipv4_max_size)))
}
