//! gro_flush_timeout through a private sysfs mount, the netdev genl NAPI view of a tap, and
//! the GRO result it enables ("GRO on tap" in the observations).

mod common;

use common::*;
use skbsim_kernel::arm::tap_gro::{align_to_tick, host_hz, jiffy_now, RealtimeWriter};
use skbsim_kernel::genl::NetdevGenl;
use skbsim_kernel::{
    gro_flush_timeout, set_feature, set_gro_flush_timeout, KernelError, Netns, PacketSocket, Tap,
    TapConfig,
};
use std::sync::Mutex;
use std::time::Duration;

/// Held by each test of this file for its whole run: the other test forks `ip` and
/// mounts sysfs, and a fork write-protects this process's pages, so a SCHED_FIFO burst
/// running beside it can fault and wait for the fork (a 16 ms stall seen under load: a
/// tick inside the burst). One test at a time in this process.
static ALONE: Mutex<()> = Mutex::new(());

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn gro_flush_timeout_set_and_read_back_in_the_namespace_only() {
    skbsim_kernel::require_privileges();
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let host_names = ip_link_names();
    Netns::run(|ns| {
        let tap = ns.tap_up(&TapConfig::tap("skbt0").napi(true))?;
        assert_eq!(gro_flush_timeout("skbt0")?, 0);
        set_gro_flush_timeout("skbt0", 1_000_000)?;
        assert_eq!(gro_flush_timeout("skbt0")?, 1_000_000);
        // This thread's /sys is still the host's: the mount was private to a helper thread.
        assert!(!std::path::Path::new("/sys/class/net/skbt0").exists());

        let mut genl = NetdevGenl::new()?;
        let napis = genl.napis(Some(tap.ifindex()))?;
        let all = genl.napis(None)?;
        eprintln!("netdev napi-get for the IFF_NAPI tap: {napis:?}; whole namespace: {all:?}");
        assert!(
            napis.is_empty(),
            "tap NAPI has no NAPI id, so napi-set cannot reach it"
        );
        let e = genl
            .set_napi_gro_flush_timeout(12345, 1_000_000)
            .unwrap_err();
        eprintln!("napi-set on an unknown id: {e}");
        assert!(e.errno().is_some(), "{e}");
        Ok(())
    })
    .unwrap();
    assert_eq!(ip_link_names(), host_names);
}

const SRC: [u8; 4] = [10, 0, 0, 1];
const DST: [u8; 4] = [10, 0, 0, 2];

fn segments(n: usize, mss: usize, bad: Option<usize>) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let payload = vec![(i as u8).wrapping_mul(7); mss];
            let seq = 1000 + (i * mss) as u32;
            let l4 = tcp(SRC, DST, 40000, 5201, seq, &payload, bad == Some(i));
            eth(MAC_B, MAC_A, 0x0800, &ipv4(SRC, DST, 6, &l4))
        })
        .collect()
}

/// gro_flush_timeout of the merging runs: 20 ms, five jiffies at HZ 250 and a hundred
/// times a ten-write burst, so the hrtimer cannot fire between two writes of a burst
/// (with 1 ms, a writer preempted for 1 ms split the burst: [12654, 1454]).
const FLUSH_TIMEOUT_NS: u64 = 20_000_000;

/// Write the segments as one burst and return the lengths the stack delivered (AF_PACKET
/// on the tap), waiting `settle` for the flush timeout first.
///
/// Each write() polls the tap's NAPI by itself (the softirq runs on the way out), so with
/// a gro_flush_timeout GRO keeps a merged skb across polls only inside the jiffy it began
/// in: napi_complete_done -> gro_flush_normal(flush_old) completes every older one
/// (net/core/dev.c: napi_complete_done, net/core/gro.c: __gro_flush_chain). The test
/// therefore times the burst itself: it starts right after a tick, from a SCHED_FIFO
/// thread no ordinary task preempts, and a tick inside the burst fails the test with that
/// reason instead of showing up as a split merge.
fn delivered(
    tap: &Tap,
    sniff: &mut PacketSocket,
    segs: &[Vec<u8>],
    settle: Duration,
) -> Result<Vec<usize>, KernelError> {
    sniff.drain()?;
    let jiffy = Duration::from_nanos(1_000_000_000 / u64::from(host_hz()?.max(1)));
    let jiffy_ns = jiffy.as_nanos() as u64;
    {
        let _fifo = RealtimeWriter::enter(None)?;
        align_to_tick(Duration::ZERO, jiffy);
        let first = jiffy_now(jiffy_ns);
        for s in segs {
            assert_eq!(tap.write(s), Ok(s.len()));
        }
        let last = jiffy_now(jiffy_ns);
        assert_eq!(
            first,
            last,
            "a tick fell inside the burst of {} writes although it began right after one, from a SCHED_FIFO writer",
            segs.len()
        );
    }
    std::thread::sleep(settle);
    let mut lens = Vec::new();
    while let Some((f, aux)) = sniff.recv_timeout(Some(Duration::from_millis(100)))? {
        lens.push(aux.len.max(f.len() as u32) as usize);
    }
    Ok(lens)
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn napi_tap_merges_ten_segments_only_with_a_flush_timeout() {
    skbsim_kernel::require_privileges();
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    Netns::run(|ns| {
        let tap = ns.tap_up(&TapConfig::tap("skbt0").napi(true))?;
        let mut sniff = PacketSocket::bind(tap.ifindex())?;
        let segs = segments(10, 1400, None);

        let quick = Duration::from_millis(20);
        let settle = Duration::from_nanos(FLUSH_TIMEOUT_NS) + quick;
        let lens = delivered(&tap, &mut sniff, &segs, quick)?;
        eprintln!("IFF_NAPI, gro_flush_timeout 0: {lens:?}");
        assert_eq!(lens.len(), 10);

        set_gro_flush_timeout("skbt0", FLUSH_TIMEOUT_NS)?;
        let lens = delivered(&tap, &mut sniff, &segs, settle)?;
        eprintln!("IFF_NAPI, gro_flush_timeout 20ms: {lens:?}");
        assert_eq!(lens, vec![14054]);

        set_feature("skbt0", "gro", false)?;
        let lens = delivered(&tap, &mut sniff, &segs, settle)?;
        eprintln!("IFF_NAPI, timeout, gro off: {lens:?}");
        assert_eq!(lens.len(), 10);
        set_feature("skbt0", "gro", true)?;

        let lens = delivered(&tap, &mut sniff, &segments(10, 1400, Some(4)), settle)?;
        eprintln!("IFF_NAPI, timeout, bad checksum on segment 4: {lens:?}");
        // The bad segment goes up alone, before the merged segments 0-3 (flushed on the
        // flow's mismatch), then 5-9 merge.
        assert_eq!(lens, vec![1454, 5654, 7054]);

        for (label, cfg) in [
            ("no IFF_NAPI", TapConfig::tap("skbt1")),
            (
                "IFF_NAPI_FRAGS",
                TapConfig::tap("skbt2").napi(true).napi_frags(true),
            ),
        ] {
            let t = ns.tap_up(&cfg)?;
            set_gro_flush_timeout(t.name(), FLUSH_TIMEOUT_NS)?;
            let mut s = PacketSocket::bind(t.ifindex())?;
            let lens = delivered(&t, &mut s, &segs, settle)?;
            eprintln!("{label}, timeout 20ms: {lens:?}");
            assert_eq!(lens.len(), 10, "{label}");
        }
        Ok(())
    })
    .unwrap();
}
