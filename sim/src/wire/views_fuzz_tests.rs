//! Every view, on seeded random bytes of every length up to 80: once `check_len` passes,
//! no getter, payload or walk panics, whatever the lengths inside say; and `new_checked`
//! accepts only buffers whose declared lengths fit.

use std::net::{IpAddr, Ipv4Addr};

use super::{ethernet, ipv4, ipv6, tcp, udp, vlan, vxlan};

/// xorshift64*: a fixed seed, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
    }
}

/// Checks that no getter, payload or walk of a view panics on seeded random bytes once
/// `check_len` passes (the `let _` calls), and that `new_checked` accepts only buffers
/// whose declared lengths fit (the asserts).
#[test]
fn views_never_panic_on_random_bytes() {
    let mut rng = Rng(0x5eed_0f5b_5eed_0f5b);
    let any = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut checked = [0usize; 4];
    for round in 0..4000 {
        let len = round % 81;
        let mut buf: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
        if len > 0 && round % 3 == 0 {
            // Often a plausible version nibble, so the IP checks get past it.
            buf[0] = (buf[0] & 0x0f) | if round % 2 == 0 { 0x40 } else { 0x60 };
        }
        // Often lengths that fit: IPv4 tot_len (bytes 2..4) and UDP len (4..6), or IPv6
        // payload_len (4..6), so new_checked succeeds and its promises are tested.
        let n = u8::try_from(len).unwrap_or(0);
        if len >= 8 && round % 5 == 0 {
            buf[2..6].copy_from_slice(&[0, n, 0, n]);
        } else if len >= 40 && round % 7 == 0 {
            buf[4..6].copy_from_slice(&[0, n - 40]);
        }
        let b = &buf[..];

        let e = ethernet::Packet::new_unchecked(b);
        if e.check_len().is_ok() {
            let _ = (e.src_addr(), e.dst_addr(), e.ethertype(), e.payload().len());
        }
        let v = vlan::Packet::new_unchecked(b);
        if v.check_len().is_ok() {
            let _ = (
                v.tci(),
                v.pcp(),
                v.dei(),
                v.vid(),
                v.ethertype(),
                v.payload(),
            );
        }
        let x = vxlan::Packet::new_unchecked(b);
        if x.check_len().is_ok() {
            let _ = (
                x.flags_word(),
                x.flags(),
                x.vni_valid(),
                x.vni_word(),
                x.vni(),
                x.payload(),
                vxlan::Repr::parse(&x),
            );
        }

        let p = ipv4::Packet::new_unchecked(b);
        if p.check_len().is_ok() {
            let _ = (p.version(), p.header_len(), p.total_len(), p.frag_offset());
            let _ = (p.options(), p.payload(), p.verify_checksum());
            if ipv4::Packet::new_checked(b).is_ok() {
                checked[0] += 1;
                assert!(p.header_len() >= 20 && usize::from(p.total_len()) <= len);
                assert_eq!(
                    p.payload().len(),
                    usize::from(p.total_len()) - p.header_len()
                );
            }
        }

        let p = ipv6::Packet::new_unchecked(b);
        if p.check_len().is_ok() {
            let _ = (
                p.traffic_class(),
                p.flow_label(),
                p.src_addr(),
                p.dst_addr(),
            );
            if ipv6::Packet::new_checked(b).is_ok() {
                checked[1] += 1;
            }
            let mut walk = ipv6::ExtHeaders::new(p.next_header(), p.payload());
            let steps = walk.by_ref().count();
            assert!(steps <= ipv6::MAX_EXT_HEADERS);
            assert!(walk.offset() <= p.payload().len());
            let h = walk.current();
            let _ = (h.header_len(), h.data(), h.payload());
        }
        for kind in [0, 43, 44, 51, 60] {
            let h = ipv6::ExtHeader::new_unchecked(kind, b);
            if h.check_len().is_ok() {
                let _ = (h.next_header(), h.hdr_ext_len(), h.data(), h.payload());
                let _ = (
                    h.routing_type(),
                    h.segments_left(),
                    h.frag_offset(),
                    h.frag_ident(),
                );
                assert!(h.header_len() <= len);
            }
        }

        let t = tcp::Packet::new_unchecked(b);
        if t.check_len().is_ok() {
            let _ = (
                t.src_port(),
                t.flags(),
                t.flag_word(),
                t.options(),
                t.payload(),
            );
            let _ = t.verify_checksum(any, any);
            // Each option is at least one byte, so the walk ends.
            assert!(t.options_iter().count() <= t.options().len());
            if tcp::Packet::new_checked(b).is_ok() {
                checked[2] += 1;
                assert_eq!(t.options().len() + 20 + t.payload().len(), len);
            }
        }

        let u = udp::Packet::new_unchecked(b);
        if u.check_len().is_ok() {
            let _ = (
                u.src_port(),
                u.len(),
                u.payload(),
                u.verify_checksum(any, any),
            );
            if udp::Packet::new_checked(b).is_ok() {
                checked[3] += 1;
                assert_eq!(u.payload().len() + 8, usize::from(u.len()));
            }
        }
    }
    // Every checked path ran (IPv4, IPv6, TCP, UDP).
    assert!(checked.iter().all(|c| *c > 10), "{checked:?}");
}
