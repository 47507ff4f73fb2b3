//! Synthetic frames for the GRO unit tests and the bench: Ethernet/IPv4/TCP segments
//! (payload byte i = i as u8, as pcapgen writes them), and GRE-TEB / VXLAN wrappers.
//! Checksums are computed with `wire::checksum`, independently of the GRO code.

use crate::wire::checksum::{checksum, ones_complement_sum};

/// One TCP/IPv4 segment in an Ethernet frame.
#[derive(Debug, Clone)]
pub struct Tcp4 {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub saddr: [u8; 4],
    pub daddr: [u8; 4],
    pub ttl: u8,
    pub tos: u8,
    pub id: u16,
    pub df: bool,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    /// Flag byte (FIN 0x01 SYN 0x02 RST 0x04 PSH 0x08 ACK 0x10 URG 0x20 ECE 0x40 CWR 0x80).
    pub flags: u8,
    pub window: u16,
    /// TCP options, a multiple of 4 bytes.
    pub options: Vec<u8>,
    pub payload: usize,
    pub bad_tcp_csum: bool,
}

impl Default for Tcp4 {
    fn default() -> Self {
        Tcp4 {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            saddr: [10, 0, 0, 1],
            daddr: [10, 0, 0, 2],
            ttl: 64,
            tos: 0,
            id: 1,
            df: true,
            sport: 40000,
            dport: 80,
            seq: 1000,
            ack: 1,
            flags: 0x10,
            window: 512,
            options: Vec::new(),
            payload: 1400,
            bad_tcp_csum: false,
        }
    }
}

// The IPv4 header fields, one argument each, as the frame builders read them.
#[allow(clippy::too_many_arguments)]
fn ipv4_header(
    saddr: [u8; 4],
    daddr: [u8; 4],
    ttl: u8,
    tos: u8,
    id: u16,
    df: bool,
    proto: u8,
    tot: usize,
) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&(tot as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6] = if df { 0x40 } else { 0 };
    h[8] = ttl;
    h[9] = proto;
    h[12..16].copy_from_slice(&saddr);
    h[16..20].copy_from_slice(&daddr);
    let c = checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// Pseudo-header + segment checksum for TCP/UDP over IPv4.
fn l4_checksum(saddr: [u8; 4], daddr: [u8; 4], proto: u8, seg: &[u8]) -> u16 {
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&saddr);
    pseudo.extend_from_slice(&daddr);
    pseudo.extend_from_slice(&[0, proto]);
    pseudo.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    let s = ones_complement_sum(seg, ones_complement_sum(&pseudo, 0));
    !crate::wire::checksum::fold(s)
}

impl Tcp4 {
    /// The frame bytes.
    pub fn build(&self) -> Vec<u8> {
        let thlen = 20 + self.options.len();
        let tot = 20 + thlen + self.payload;
        let mut f = Vec::with_capacity(14 + tot);
        f.extend_from_slice(&self.dst_mac);
        f.extend_from_slice(&self.src_mac);
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&ipv4_header(
            self.saddr, self.daddr, self.ttl, self.tos, self.id, self.df, 6, tot,
        ));
        let mut t = vec![0u8; thlen + self.payload];
        t[0..2].copy_from_slice(&self.sport.to_be_bytes());
        t[2..4].copy_from_slice(&self.dport.to_be_bytes());
        t[4..8].copy_from_slice(&self.seq.to_be_bytes());
        t[8..12].copy_from_slice(&self.ack.to_be_bytes());
        t[12] = ((thlen / 4) as u8) << 4;
        t[13] = self.flags;
        t[14..16].copy_from_slice(&self.window.to_be_bytes());
        t[20..thlen].copy_from_slice(&self.options);
        for (i, b) in t[thlen..].iter_mut().enumerate() {
            *b = i as u8;
        }
        let mut c = l4_checksum(self.saddr, self.daddr, 6, &t);
        if self.bad_tcp_csum {
            c ^= 0x0100;
        }
        t[16..18].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&t);
        f
    }

    /// The same TCP segment behind an IPv6 header instead (fd00::1 -> fd00::2, the TTL
    /// as hop limit, the TOS as Traffic Class, flow label 0): the IPv6 twin.
    pub fn build_v6(&self) -> Vec<u8> {
        let v4 = self.build();
        let tcp = &v4[14 + 20..];
        let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
        src[..2].copy_from_slice(&[0xfd, 0]);
        dst[..2].copy_from_slice(&[0xfd, 0]);
        src[15] = 1;
        dst[15] = 2;
        let mut t = tcp.to_vec();
        t[16..18].copy_from_slice(&[0, 0]);
        let mut pseudo = Vec::with_capacity(40);
        pseudo.extend_from_slice(&src);
        pseudo.extend_from_slice(&dst);
        pseudo.extend_from_slice(&(t.len() as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, 6]);
        let mut c =
            !crate::wire::checksum::fold(ones_complement_sum(&t, ones_complement_sum(&pseudo, 0)));
        if self.bad_tcp_csum {
            c ^= 0x0100;
        }
        t[16..18].copy_from_slice(&c.to_be_bytes());
        let mut f = Vec::with_capacity(14 + 40 + t.len());
        f.extend_from_slice(&self.dst_mac);
        f.extend_from_slice(&self.src_mac);
        f.extend_from_slice(&[0x86, 0xdd]);
        let word = (6u32 << 28) | (u32::from(self.tos) << 20);
        f.extend_from_slice(&word.to_be_bytes());
        f.extend_from_slice(&(t.len() as u16).to_be_bytes());
        f.extend_from_slice(&[6, self.ttl]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&t);
        f
    }

    /// `n` consecutive segments: seq advances by the payload, the IP ID by one.
    pub fn stream(&self, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|k| {
                let mut s = self.clone();
                s.seq = self.seq.wrapping_add((k * self.payload) as u32);
                s.id = self.id.wrapping_add(k as u16);
                s.build()
            })
            .collect()
    }
}

/// The outer Ethernet + IPv4 of a tunnel.
#[derive(Debug, Clone)]
pub struct Outer {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub saddr: [u8; 4],
    pub daddr: [u8; 4],
    pub ttl: u8,
    pub id: u16,
    pub df: bool,
}

impl Default for Outer {
    fn default() -> Self {
        Outer {
            src_mac: [2, 0, 0, 0, 1, 1],
            dst_mac: [2, 0, 0, 0, 1, 2],
            saddr: [192, 168, 0, 1],
            daddr: [192, 168, 0, 2],
            ttl: 64,
            id: 100,
            df: false,
        }
    }
}

impl Outer {
    fn wrap(&self, proto: u8, l4: &[u8]) -> Vec<u8> {
        let mut f = Vec::with_capacity(34 + l4.len());
        f.extend_from_slice(&self.dst_mac);
        f.extend_from_slice(&self.src_mac);
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&ipv4_header(
            self.saddr,
            self.daddr,
            self.ttl,
            0,
            self.id,
            self.df,
            proto,
            20 + l4.len(),
        ));
        f.extend_from_slice(l4);
        f
    }

    /// Outer IPv4 + GRE (protocol ETH_P_TEB, optional key and checksum) + `inner`.
    pub fn gre_teb(&self, key: Option<u32>, csum: Option<bool>, inner: &[u8]) -> Vec<u8> {
        self.wrap(47, &gre_teb_header_and(key, csum, inner))
    }

    /// Outer IPv4 + UDP to 4789 + VXLAN (I flag, `vni`) + `inner`.
    pub fn vxlan(&self, sport: u16, vni: u32, udp_csum: bool, inner: &[u8]) -> Vec<u8> {
        let mut u = vxlan_udp_and(sport, vni, inner);
        if udp_csum {
            let c = match l4_checksum(self.saddr, self.daddr, 17, &u) {
                0 => 0xffff,
                c => c,
            };
            u[6..8].copy_from_slice(&c.to_be_bytes());
        }
        self.wrap(17, &u)
    }
}

/// A GRE header (protocol ETH_P_TEB; the C bit and a checksum when `csum` is `Some`, a
/// wrong one for `Some(false)`; the K bit and `key`) followed by `inner`: the GRE part
/// of [`Outer::gre_teb`] and [`super::frames6::Outer6::gre_teb`].
pub(crate) fn gre_teb_header_and(key: Option<u32>, csum: Option<bool>, inner: &[u8]) -> Vec<u8> {
    let mut flags = 0u16;
    if csum.is_some() {
        flags |= 0x8000;
    }
    if key.is_some() {
        flags |= 0x2000;
    }
    let mut g = Vec::new();
    g.extend_from_slice(&flags.to_be_bytes());
    g.extend_from_slice(&crate::consts::ETH_P_TEB.to_be_bytes());
    if csum.is_some() {
        g.extend_from_slice(&[0, 0, 0, 0]);
    }
    if let Some(k) = key {
        g.extend_from_slice(&k.to_be_bytes());
    }
    g.extend_from_slice(inner);
    if let Some(good) = csum {
        let mut c = checksum(&g);
        if !good {
            c ^= 0x0100;
        }
        g[4..6].copy_from_slice(&c.to_be_bytes());
    }
    g
}

/// A UDP header to 4789 (checksum zero, for the caller's pseudo header) and a VXLAN
/// header (I flag, `vni`), followed by `inner`.
pub(crate) fn vxlan_udp_and(sport: u16, vni: u32, inner: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&4789u16.to_be_bytes());
    u.extend_from_slice(&((16 + inner.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(&[0x08, 0, 0, 0]);
    u.extend_from_slice(&(vni << 8).to_be_bytes());
    u.extend_from_slice(inner);
    u
}

/// Test streams in a tunnel: segment k wrapped by `wrap(k, outer, segment)`, the outer
/// header's IP ID `first_id + k` (a sender's incrementing outer IDs).
pub trait Encapsulate {
    fn encapsulated(
        &self,
        first_id: u16,
        wrap: impl Fn(usize, &Outer, &[u8]) -> Vec<u8>,
    ) -> Vec<Vec<u8>>;
}

impl Encapsulate for [Vec<u8>] {
    fn encapsulated(
        &self,
        first_id: u16,
        wrap: impl Fn(usize, &Outer, &[u8]) -> Vec<u8>,
    ) -> Vec<Vec<u8>> {
        self.iter()
            .enumerate()
            .map(|(k, f)| {
                let outer = Outer {
                    id: first_id.wrapping_add(k as u16),
                    ..Outer::default()
                };
                wrap(k, &outer, f)
            })
            .collect()
    }
}
