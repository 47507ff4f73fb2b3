//! The hardware-accelerated VLAN tag path into tun_put_user: an in-band tagged frame written
//! into tap A, bridged to tap B, read from B. Reproduces "Hardware-accelerated VLAN tag
//! into tun_put_user" of the observations, with tap B's tx-vlan offloads on and off.

mod common;

use common::*;
use skbsim_kernel::{Endian, Ethtool, KernelError, Netns, PacketSocket, Tap, TapConfig, TunPiRepr};

struct Outcome {
    read: Vec<u8>,
    pi: TunPiRepr,
    /// AF_PACKET on A (ingress): vlan_valid, tpid, tci, proto.
    a_aux: (bool, u16, u16, u16),
    /// AF_PACKET on B (egress, before tun): vlan_valid, tpid, tci, proto.
    b_aux: (bool, u16, u16, u16),
}

fn one(
    a: &Tap,
    b: &Tap,
    sa: &mut PacketSocket,
    sb: &mut PacketSocket,
    f: &[u8],
) -> Result<Outcome, KernelError> {
    sa.drain()?;
    sb.drain()?;
    b.drain().unwrap();
    assert_eq!(a.write(f), Ok(f.len()));
    let mut buf = vec![0u8; 4096];
    let n = b
        .read_timeout(&mut buf, WAIT)
        .unwrap()
        .expect("frame forwarded to tap B");
    let (_, aa) = sa.recv()?.expect("AF_PACKET on A");
    let (_, ab) = sb.recv()?.expect("AF_PACKET on B");
    Ok(Outcome {
        read: buf[4..n].to_vec(),
        pi: TunPiRepr::from_bytes(&buf).unwrap(),
        a_aux: (aa.vlan_valid, aa.vlan_tpid, aa.vlan_tci, aa.protocol),
        b_aux: (ab.vlan_valid, ab.vlan_tpid, ab.vlan_tci, ab.protocol),
    })
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn tagged_frames_cross_the_bridge_byte_identical_with_offload_on_and_off() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        let a = ns.tap_up(&TapConfig::tap("skbta"))?;
        let b = ns.tap_up(&TapConfig::tap("skbtb").no_pi(false))?;
        ns.bridge("skbtbr", &[a.ifindex(), b.ifindex()])?;
        let mut sa = PacketSocket::bind(a.ifindex())?;
        let mut sb = PacketSocket::bind(b.ifindex())?;
        let mut et = Ethtool::new()?;
        assert!(et.get_feature("skbtb", "tx-vlan-hw-insert")?);
        assert!(et.get_feature("skbtb", "txvlan")?);
        assert!(et.get_feature("skbtb", "tx-vlan-stag-hw-insert")?);

        let inner = frame(MAC_B, MAC_A, 0x0800, 60);
        let cases: Vec<(&str, Vec<(u16, u16)>)> = vec![
            ("8100 pcp5 dei1 vid100", vec![(0x8100, 0xb064)]),
            ("88a8 vid100", vec![(0x88a8, 0x0064)]),
            ("qinq 88a8/8100", vec![(0x88a8, 0x00c8), (0x8100, 0x0064)]),
            ("priority tag vid0", vec![(0x8100, 0x6000)]),
            ("tci ffff", vec![(0x8100, 0xffff)]),
            ("9100 in-band", vec![(0x9100, 0x0064)]),
        ];
        for (ctag, stag) in [(true, true), (false, true), (true, false), (false, false)] {
            et.set_feature("skbtb", "tx-vlan-hw-insert", ctag)?;
            et.set_feature("skbtb", "tx-vlan-stag-hw-insert", stag)?;
            for (label, tags) in &cases {
                let f = tagged(&inner, tags);
                let o = one(&a, &b, &mut sa, &mut sb, &f)?;
                eprintln!(
                    "txvlan {:3} stag {:3} | {label:22} | identical {} | pi {:#06x}/{:#06x} | A aux {:04x?} | B aux {:04x?}",
                    if ctag { "on" } else { "off" },
                    if stag { "on" } else { "off" },
                    o.read == f,
                    o.pi.flags,
                    o.pi.proto,
                    o.a_aux,
                    o.b_aux,
                );
                // Byte-identical whatever the offload state.
                assert_eq!(o.read, f, "{label}: read {} wrote {}", hex(&o.read), hex(&f));
                let (outer_tpid, outer_tci) = tags[0];
                let after_outer = u16::from_be_bytes([f[16], f[17]]);
                let accel_rx = matches!(outer_tpid, 0x8100 | 0x88a8);
                let accel_tx = match outer_tpid {
                    0x8100 => ctag,
                    0x88a8 => stag,
                    _ => false,
                };
                // Ingress on A: the receive path moved the outer tag into skb->vlan_tci.
                if accel_rx {
                    assert_eq!(o.a_aux, (true, outer_tpid, outer_tci, after_outer), "{label}");
                } else {
                    assert_eq!(o.a_aux, (false, 0, 0, outer_tpid), "{label}");
                }
                // Egress on B: still out of band when B's offload takes it, else already
                // pushed in band by the core (validate_xmit_vlan) before tun sees the skb.
                if accel_tx {
                    assert_eq!(o.b_aux, (true, outer_tpid, outer_tci, after_outer), "{label}");
                    // pi.proto: skb->protocol, the ethertype after the hw-accel tag.
                    assert_eq!(o.pi.proto, after_outer, "{label}");
                } else {
                    assert_eq!(o.b_aux, (false, 0, 0, outer_tpid), "{label}");
                    // Software insertion sets skb->protocol to the tag's TPID.
                    assert_eq!(o.pi.proto, outer_tpid, "{label}");
                }
                assert_eq!(o.pi.flags, 0);
            }
        }
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn partial_checksum_with_tag_reads_the_same_with_offload_on_and_off() {
    skbsim_kernel::require_privileges();
    Netns::run(|ns| {
        use skbsim_kernel::tap::tun_f;
        use skbsim_kernel::{VirtioNetHdrRepr, VnetHdrLayout};
        let a = ns.tap_up(&TapConfig::tap("skbta").vnet_hdr(true))?;
        let b = ns.tap_up(&TapConfig::tap("skbtb").vnet_hdr(true).no_pi(false))?;
        b.set_offload(tun_f::CSUM)?;
        ns.bridge("skbtbr", &[a.ifindex(), b.ifindex()])?;
        let mut et = Ethtool::new()?;
        let (s, d) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let l3 = ipv4(s, d, 17, &udp(s, d, 1000, 2000, &[0xab; 32], true));
        let f = tagged(&eth(MAC_B, MAC_A, 0x0800, &l3), &[(0x8100, 0x0064)]);
        // Writer: NEEDS_CSUM, csum_start counted from the frame start (tag included).
        let hdr = VirtioNetHdrRepr {
            flags: 1,
            csum_start: 38,
            csum_offset: 6,
            ..Default::default()
        };
        let mut wire = hdr.to_basic_bytes(Endian::Little).to_vec();
        wire.extend_from_slice(&f);
        let mut seen = Vec::new();
        for offload in [true, false] {
            et.set_feature("skbtb", "tx-vlan-hw-insert", offload)?;
            b.drain().unwrap();
            assert_eq!(a.write(&wire), Ok(wire.len()));
            let mut buf = vec![0u8; 4096];
            let n = b.read_timeout(&mut buf, WAIT).unwrap().expect("frame on B");
            let pi = TunPiRepr::from_bytes(&buf).unwrap();
            let v = VirtioNetHdrRepr::from_bytes(&buf[4..], VnetHdrLayout::Basic, Endian::Little)
                .unwrap();
            eprintln!(
                "txvlan {}: pi {pi:04x?} vnet {v:?} frame identical {}",
                if offload { "on" } else { "off" },
                buf[14..n] == f[..]
            );
            assert_eq!((v.flags, v.csum_start, v.csum_offset), (1, 38, 6));
            assert_eq!(&buf[14..n], &f[..]);
            seen.push((pi, buf[4..n].to_vec()));
        }
        // Headers and frame identical; only pi.proto differs (inner ethertype vs TPID).
        assert_eq!(seen[0].1, seen[1].1);
        assert_eq!(seen[0].0.proto, 0x0800);
        assert_eq!(seen[1].0.proto, 0x8100);
        Ok(())
    })
    .unwrap();
}
