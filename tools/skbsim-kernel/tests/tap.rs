//! Tap read/write paths, reproducing docs/real-kernel.md#tap-basics,
//! docs/real-kernel.md#short-reads and docs/real-kernel.md#write-errors.

mod common;

use common::*;
use sim::consts::TUN_PKT_STRIP;
use skbsim_kernel::packet::pkttype;
use skbsim_kernel::tap::{iff, tun_f};
use skbsim_kernel::{
    Endian, Errno, Netns, PacketSocket, TapConfig, TunPiRepr, VirtioNetHdrRepr, VnetHdrLayout,
};

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn write_60_bytes_counts_one_rx_packet() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let tap = ns.tap_up(&TapConfig::tap("skbt0"))?;
        let mut sniff = PacketSocket::bind(tap.ifindex())?;
        assert_eq!(tap.features()?, 0x7173);
        let before = ns.rtnl().stats(tap.ifindex())?;
        let f = frame(MAC_B, MAC_A, ETH_P_EXP, 60);
        assert_eq!(tap.write(&f), Ok(60));
        let d = ns.rtnl().stats(tap.ifindex())?.since(&before);
        eprintln!("write 60: counter delta {:?}", d.nonzero());
        assert_eq!((d.rx_packets, d.rx_bytes), (1, 60));
        assert_eq!((d.tx_packets, d.tx_bytes), (0, 0));
        let (got, aux) = sniff.recv()?.expect("AF_PACKET sees the written frame");
        eprintln!(
            "AF_PACKET: pkttype {} proto {:#06x} len {}",
            aux.pkttype, aux.protocol, aux.len
        );
        assert_eq!(got, f);
        assert_eq!(aux.pkttype, pkttype::OTHERHOST);
        assert_eq!(aux.protocol, ETH_P_EXP);

        // Without any AF_PACKET listener the frame has no protocol handler.
        drop(sniff);
        let before = ns.rtnl().stats(tap.ifindex())?;
        assert_eq!(tap.write(&f), Ok(60));
        let d = ns.rtnl().stats(tap.ifindex())?.since(&before);
        eprintln!("write 60, no listener: counter delta {:?}", d.nonzero());
        assert_eq!((d.rx_packets, d.rx_bytes), (1, 60));
        // Counted in rx_dropped (core stats), not rx_nohandler (that is for exact-match
        // delivery, e.g. bonding slaves).
        assert_eq!((d.rx_dropped, d.rx_nohandler), (1, 0));
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn read_with_no_pi_pi_and_vnet_hdr() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let f = frame(MAC_A, MAC_B, 0x0800, 60);
        let mut buf = vec![0u8; 2048];

        let plain = ns.tap_up(&TapConfig::tap("skbt0"))?;
        let tx = PacketSocket::bind(plain.ifindex())?;
        assert_eq!(tx.send(&f)?, 60);
        let n = plain.read_timeout(&mut buf, WAIT).unwrap().expect("frame");
        assert_eq!(&buf[..n], &f[..], "IFF_NO_PI: the frame alone");

        let pi = ns.tap_up(&TapConfig::tap("skbt1").no_pi(false))?;
        assert_eq!(pi.iff_flags() & iff::NO_PI, 0);
        let tx = PacketSocket::bind(pi.ifindex())?;
        tx.send(&f)?;
        let n = pi.read_timeout(&mut buf, WAIT).unwrap().expect("frame");
        let hdr = TunPiRepr::from_bytes(&buf).unwrap();
        eprintln!("PI read: {} bytes, head {} -> {hdr:?}", n, hex(&buf[..4]));
        assert_eq!(n, 64);
        assert_eq!(
            hdr,
            TunPiRepr {
                flags: 0,
                proto: 0x0800
            }
        );
        assert_eq!(&buf[4..n], &f[..]);
        // pi.proto is skb->protocol, i.e. sll_protocol when the sender names one.
        tx.send_with_protocol(&f, 0x86dd)?;
        let n = pi.read_timeout(&mut buf, WAIT).unwrap().expect("frame");
        let hdr = TunPiRepr::from_bytes(&buf).unwrap();
        eprintln!("PI read after sendto(proto 0x86dd) of an 0x0800 frame: {hdr:?}");
        assert_eq!(hdr.proto, 0x86dd);
        assert_eq!(&buf[4..n], &f[..]);

        let vnet = ns.tap_up(&TapConfig::tap("skbt2").vnet_hdr(true))?;
        assert_eq!(vnet.vnet_hdr_sz()?, 10);
        let tx = PacketSocket::bind(vnet.ifindex())?;
        tx.send(&f)?;
        let n = vnet.read_timeout(&mut buf, WAIT).unwrap().expect("frame");
        eprintln!("vnet read: {} bytes, head {}", n, hex(&buf[..10]));
        assert_eq!(n, 70);
        assert_eq!(&buf[..10], &[0u8; 10]);
        assert_eq!(
            VirtioNetHdrRepr::from_bytes(&buf, VnetHdrLayout::Basic, Endian::Little),
            Ok(VirtioNetHdrRepr::default())
        );
        assert_eq!(&buf[10..n], &f[..]);

        // PI comes before vnet.
        let both = ns.tap_up(&TapConfig::tap("skbt3").no_pi(false).vnet_hdr(true))?;
        let tx = PacketSocket::bind(both.ifindex())?;
        tx.send(&f)?;
        let mut a = [0u8; 4];
        let mut b = [0u8; 10];
        let mut c = [0u8; 2000];
        let n = both.readv(&mut [&mut a, &mut b, &mut c]).unwrap();
        eprintln!("readv([4,10,2000]) = {n}: pi {} vnet {}", hex(&a), hex(&b));
        assert_eq!(n, 74);
        assert_eq!(TunPiRepr::from_bytes(&a).unwrap().proto, 0x0800);
        assert_eq!(b, [0u8; 10]);
        assert_eq!(&c[..60], &f[..]);
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn short_reads_truncate_and_small_buffers_fail() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let tap = ns.tap_up(&TapConfig::tap("skbt0").no_pi(false))?;
        let tx = PacketSocket::bind(tap.ifindex())?;
        let big = frame(MAC_A, MAC_B, 0x0800, 1000);

        // 100-byte buffer on a 1000-byte frame: 100, TUN_PKT_STRIP, frame consumed, tx 1000.
        let before = ns.rtnl().stats(tap.ifindex())?;
        tx.send(&big)?;
        assert!(tap.wait_readable(WAIT).unwrap());
        let mut small = [0u8; 100];
        assert_eq!(tap.read(&mut small), Ok(100));
        let pi = TunPiRepr::from_bytes(&small).unwrap();
        eprintln!("100-byte read of 1000-byte frame: {pi:?}");
        assert_eq!(pi.flags, TUN_PKT_STRIP);
        assert_eq!(&small[4..], &big[..96]);
        assert!(!tap
            .wait_readable(std::time::Duration::from_millis(50))
            .unwrap());
        let d = ns.rtnl().stats(tap.ifindex())?.since(&before);
        eprintln!("counters: {:?}", d.nonzero());
        assert_eq!((d.tx_packets, d.tx_bytes), (1, 1000));

        // read(0) returns 0 and leaves the frame queued.
        tx.send(&big)?;
        assert!(tap.wait_readable(WAIT).unwrap());
        assert_eq!(tap.read(&mut []), Ok(0));
        assert!(tap.wait_readable(WAIT).unwrap());

        // A buffer smaller than the PI: EINVAL, frame discarded, no counter moves.
        let before = ns.rtnl().stats(tap.ifindex())?;
        let mut tiny = [0u8; 3];
        assert_eq!(tap.read(&mut tiny), Err(Errno::EINVAL));
        assert!(!tap
            .wait_readable(std::time::Duration::from_millis(50))
            .unwrap());
        let d = ns.rtnl().stats(tap.ifindex())?.since(&before);
        eprintln!("after EINVAL read: counter delta {:?}", d.nonzero());
        assert_eq!(d, Default::default());

        // Non-blocking empty queue: EAGAIN.
        tap.set_nonblocking(true)?;
        assert_eq!(tap.read(&mut [0u8; 64]), Err(Errno::EAGAIN));
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn write_side_errors() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let tap = ns.tap(&TapConfig::tap("skbt0"))?;
        let f = frame(MAC_B, MAC_A, ETH_P_EXP, 60);
        assert_eq!(tap.write(&f), Err(Errno::EIO), "tap down");
        tap.set_up()?;
        assert_eq!(tap.write(&f), Ok(60));
        assert_eq!(tap.write(&f[..13]), Err(Errno::EINVAL));
        assert_eq!(tap.write(&[]), Err(Errno::EINVAL));
        let big = frame(MAC_B, MAC_A, ETH_P_EXP, 70000);
        assert_eq!(tap.write(&big), Ok(70000));

        let pi = ns.tap_up(&TapConfig::tap("skbt1").no_pi(false))?;
        assert_eq!(pi.write(&[0, 0, 0]), Err(Errno::EINVAL));

        let vnet = ns.tap_up(&TapConfig::tap("skbt2").vnet_hdr(true))?;
        for bad in [8, 9] {
            let e = vnet.set_vnet_hdr_sz(bad).unwrap_err();
            assert!(e.is_errno(Errno::EINVAL), "{e}");
            if bad == 8 {
                eprintln!("error display: {e}");
                assert_eq!(
                    e.to_string(),
                    "TUNSETVNETHDRSZ on skbt2: Invalid argument (EINVAL)"
                );
            }
        }
        for good in [10, 12, 20, 24, 4096] {
            vnet.set_vnet_hdr_sz(good)?;
        }
        vnet.set_vnet_hdr_sz(10)?;
        assert_eq!(vnet.write(&[0u8; 9]), Err(Errno::EINVAL));
        vnet.set_offload(tun_f::CSUM | tun_f::TSO4 | tun_f::TSO6)?;
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn tunsetiff_errors_carry_the_op_name() {
    skbsim_kernel::require_privileges();
    Netns::run(|_ns| {
        // IFF_TUN and IFF_TAP both unset is invalid.
        let mut cfg = TapConfig::tap("skbt0");
        cfg.napi_frags = true; // NAPI_FRAGS without NAPI (and on a TAP it needs NAPI) -> EINVAL
        let e = cfg.open().unwrap_err();
        eprintln!("TUNSETIFF with NAPI_FRAGS and no NAPI: {e}");
        assert_eq!(e.errno(), Some(Errno::EINVAL));
        assert!(e.to_string().starts_with("TUNSETIFF on skbt0: "), "{e}");
        let e = TapConfig::tap("this-name-is-too-long").open().unwrap_err();
        assert!(e.is_errno(Errno::EINVAL), "{e}");
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn multi_queue_opens_a_second_queue() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let q0 = ns.tap_up(&TapConfig::tap("skbt0").multi_queue(true))?;
        let q1 = q0.open_queue(false)?;
        assert_eq!(q1.ifindex(), q0.ifindex());
        assert_ne!(q1.get_iff()? & iff::MULTI_QUEUE, 0);
        q1.set_queue_attached(false)?;
        q1.set_queue_attached(true)?;
        Ok(())
    })
    .unwrap();
}
