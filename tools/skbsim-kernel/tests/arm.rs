//! What the real tun-read arm relies on about its writers and its bridge (6.18): the
//! facts behind the writer choice in `arm::tun_read`.

mod common;

use std::time::Duration;

use common::*;
use skbsim_kernel::arm::tun_read::{BRIDGE_NAME, DUT_NAME};
use skbsim_kernel::tap::tun_f;
use skbsim_kernel::{
    Endian, Errno, Ethtool, KernelError, Netns, Tap, TapConfig, VirtioNetHdrRepr, VnetHdrLayout,
};

const SRC: [u8; 4] = [10, 0, 0, 1];
const DST: [u8; 4] = [10, 0, 0, 2];

/// Writer `w` and a non-blocking vnet reader bridged by a quiet bridge; returns the reader.
fn reader(ns: &mut Netns, writers: &[&Tap], offloads: u32) -> Result<Tap, KernelError> {
    let b = TapConfig::tap(DUT_NAME)
        .vnet_hdr(true)
        .nonblocking(true)
        .open()?;
    if offloads != 0 {
        b.set_offload(offloads)?;
    }
    ns.rtnl().set_up(b.ifindex(), true)?;
    let mut ports: Vec<u32> = writers.iter().map(|w| w.ifindex()).collect();
    ports.push(b.ifindex());
    ns.quiet_bridge(BRIDGE_NAME, &ports)?;
    Ok(b)
}

/// Write `frame` behind `hdr` (split after `linear` frame bytes when given) and read it
/// back from `b`: (vnet header, frame).
fn through(
    w: &Tap,
    b: &Tap,
    hdr: &VirtioNetHdrRepr,
    frame: &[u8],
    linear: Option<usize>,
) -> (VirtioNetHdrRepr, Vec<u8>) {
    let h = hdr.to_basic_bytes(Endian::Little);
    let n = match linear {
        Some(l) => w.writev(&[&h, &frame[..l], &frame[l..]]),
        None => w.writev(&[&h, frame]),
    };
    assert_eq!(n, Ok(10 + frame.len()));
    let mut buf = vec![0u8; 65536];
    let got = b
        .read_timeout(&mut buf, WAIT)
        .unwrap()
        .expect("the frame reaches the reader");
    assert_eq!(
        b.read(&mut buf[..]),
        Err(Errno::EAGAIN),
        "exactly one frame"
    );
    (
        VirtioNetHdrRepr::from_bytes(&buf, VnetHdrLayout::Basic, Endian::Little).unwrap(),
        buf[10..got].to_vec(),
    )
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn data_valid_needs_the_gro_writer() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let plain = ns.tap_up(&TapConfig::tap("skbwplain").vnet_hdr(true))?;
        let gro = ns.tap_up(&TapConfig::tap("skbwgro").vnet_hdr(true).napi(true))?;
        let b = reader(ns, &[&plain, &gro], 0)?;
        let f = eth(
            MAC_B,
            MAC_A,
            0x0800,
            &ipv4(SRC, DST, 17, &udp(SRC, DST, 5000, 5001, &[7; 20], false)),
        );
        let valid = VirtioNetHdrRepr {
            flags: 2,
            ..VirtioNetHdrRepr::default()
        };
        let (h, got) = through(&plain, &b, &valid, &f, None);
        eprintln!("plain writer, DATA_VALID written: reader flags {}", h.flags);
        assert_eq!(h.flags, 0, "tun_get_user ignores DATA_VALID");
        assert_eq!(got, f);
        plain.drain().unwrap();
        gro.drain().unwrap();
        let (h, got) = through(&gro, &b, &VirtioNetHdrRepr::default(), &f, None);
        eprintln!("IFF_NAPI writer, GRO on: reader flags {}", h.flags);
        assert_eq!(
            h.flags, 2,
            "GRO validated the UDP checksum: CHECKSUM_UNNECESSARY"
        );
        assert_eq!(got, f);
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn gso_hdr_len_is_the_writers_linear_part() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let plain = ns.tap_up(&TapConfig::tap("skbwplain").vnet_hdr(true))?;
        let frags = ns.tap_up(
            &TapConfig::tap("skbwfrags")
                .vnet_hdr(true)
                .napi(true)
                .napi_frags(true),
        )?;
        Ethtool::new()?.set_feature("skbwfrags", "rx-gro", false)?;
        let offloads = tun_f::CSUM | tun_f::USO4 | tun_f::USO6;
        let b = reader(ns, &[&plain, &frags], offloads)?;
        // A 3042-byte USO frame: 42 bytes of headers, smaller than a page.
        let f = eth(
            MAC_B,
            MAC_A,
            0x0800,
            &ipv4(SRC, DST, 17, &udp(SRC, DST, 5000, 5001, &[9; 3000], true)),
        );
        let hdr = VirtioNetHdrRepr {
            flags: 1,
            gso_type: 5,
            hdr_len: 42,
            gso_size: 1400,
            csum_start: 34,
            csum_offset: 6,
            ..VirtioNetHdrRepr::default()
        };
        let (h, got) = through(&plain, &b, &hdr, &f, None);
        eprintln!("plain writer: {h:?}");
        assert_eq!(got, f, "not segmented");
        assert_eq!(
            (h.gso_type, h.gso_size, h.hdr_len),
            (5, 1400, 3042),
            "tun_alloc_skb makes a frame under a page fully linear whatever hdr_len says"
        );
        plain.drain().unwrap();
        frags.drain().unwrap();
        let (h, got) = through(&frags, &b, &hdr, &f, Some(42));
        eprintln!("IFF_NAPI_FRAGS writer, writev split at 42: {h:?}");
        assert_eq!(got, f);
        assert_eq!((h.gso_type, h.hdr_len, h.csum_start), (5, 42, 34));
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn uso_needs_both_offload_bits() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let t = ns.tap(&TapConfig::tap("skbt0").vnet_hdr(true))?;
        for bits in [tun_f::CSUM | tun_f::USO4, tun_f::CSUM | tun_f::USO6] {
            let e = t.set_offload(bits).expect_err("one USO bit alone");
            eprintln!("{e}");
            assert!(e.is_errno(Errno::EINVAL));
        }
        t.set_offload(tun_f::CSUM | tun_f::USO4 | tun_f::USO6)?;
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn a_quiet_bridge_sends_nothing_of_its_own() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let w = ns.tap_up(&TapConfig::tap("skbwplain"))?;
        let b = reader(ns, &[&w], 0)?;
        let mut buf = vec![0u8; 2048];
        let got = b.read_timeout(&mut buf, Duration::from_secs(2)).unwrap();
        assert_eq!(got, None, "a frame nobody wrote: {:02x?}", &buf[..64]);
        Ok(())
    })
    .unwrap();
}
