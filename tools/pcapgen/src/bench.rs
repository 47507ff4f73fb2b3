//! `pcapgen bench`: a deterministic, mixed, realistic-looking capture for throughput
//! measurements.
//!
//! Profile (per frame, from one fixed-seed LCG): 80% IPv4 / 20% IPv6; 10% carry one
//! 802.1Q tag; 35% pure TCP ACKs (padded to 60 bytes), 10% small UDP (DNS-like, 20..200
//! bytes of payload), 15% TCP of a uniform frame size 60..1514, 40% full 1514-byte TCP
//! segments. 64 flows. Frames never exceed 1514 bytes, tag included.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::build::{Csum, FrameSpec, Ipv4Spec, Ipv6Spec, TcpSpec, UdpSpec, VlanTag, L3, L4};

/// Knuth's MMIX LCG; the high bits are used.
#[derive(Debug, Clone)]
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Self {
        Lcg(seed)
    }

    pub fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }

    /// Uniform-ish in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.next_u32() as usize % (hi - lo + 1)
    }
}

pub const DEFAULT_SEED: u64 = 0x5eed_5eed;

/// The next benchmark frame.
pub fn next_frame(rng: &mut Lcg) -> FrameSpec {
    let flow = rng.range(0, 63) as u16;
    let v6 = rng.range(0, 99) < 20;
    let tagged = rng.range(0, 99) < 10;
    let kind = rng.range(0, 99);
    let vlans = if tagged {
        vec![VlanTag {
            tpid: sim::consts::ETH_P_8021Q,
            pcp: 0,
            dei: 0,
            vid: 1 + flow % 8,
        }]
    } else {
        Vec::new()
    };
    let l3 = if v6 {
        L3::V6(Ipv6Spec {
            src: Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1 + flow),
            dst: Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 1, 2),
            hop_limit: 64,
            traffic_class: 0,
            flow_label: (u32::from(flow) * 977) & 0xf_ffff,
            next_header: None,
            ext: Vec::new(),
        })
    } else {
        L3::V4(Ipv4Spec {
            src: Ipv4Addr::new(10, 0, 1, 1 + flow as u8),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            ttl: 64,
            id: rng.next_u32() as u16,
            tos: 0,
            df: true,
            proto: None,
        })
    };
    let headers = 14 + 4 * vlans.len() + if v6 { 40 } else { 20 };
    let udp = (35..45).contains(&kind);
    let l4 = if udp {
        L4::Udp(UdpSpec {
            sport: 40_000 + flow,
            dport: 53,
        })
    } else {
        L4::Tcp(TcpSpec {
            sport: 40_000 + flow,
            dport: if flow.is_multiple_of(2) { 443 } else { 80 },
            seq: rng.next_u32(),
            ack: rng.next_u32(),
            flags: if kind < 35 { 0x10 } else { 0x18 },
            window: 512,
            urg: 0,
        })
    };
    let l4_hdr = if udp { 8 } else { 20 };
    let max_payload = 1514 - headers - l4_hdr;
    let payload_len = match kind {
        0..=34 => 0,
        35..=44 => rng.range(20, 200),
        45..=59 => rng.range(60, 1514).saturating_sub(headers + l4_hdr),
        _ => max_payload,
    }
    .min(max_payload);
    FrameSpec {
        dst: [2, 0, 0, 0, 0, 2],
        src: [2, 0, 0, 0, 1, flow as u8],
        vlans,
        ethertype: None,
        l3,
        l4,
        payload_len,
        pad_to: 60,
        ip_csum: Csum::Good,
        l4_csum: Csum::Good,
        ext: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::build;

    #[test]
    fn profile_is_deterministic_and_in_range() {
        let (mut a, mut b) = (Lcg::new(DEFAULT_SEED), Lcg::new(DEFAULT_SEED));
        let mut out = Vec::new();
        let (mut tagged, mut full) = (0, 0);
        for _ in 0..5000 {
            let s = next_frame(&mut a);
            assert_eq!(s, next_frame(&mut b));
            build(&s, &mut out).expect("builds");
            assert!((60..=1514).contains(&out.len()), "{}", out.len());
            tagged += usize::from(!s.vlans.is_empty());
            full += usize::from(out.len() == 1514);
        }
        assert!((300..700).contains(&tagged), "{tagged}");
        assert!((1500..2500).contains(&full), "{full}");
    }
}
