//! Shared helpers for the root-only kernel tests. Every test runs inside `Netns::run`.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::time::Duration;

pub const WAIT: Duration = Duration::from_millis(500);

pub const MAC_A: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x0a];
pub const MAC_B: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x0b];
/// IEEE 802 local experimental ethertype: no protocol handler in the kernel.
pub const ETH_P_EXP: u16 = 0x88b5;

/// An Ethernet frame of exactly `len` bytes: dst, src, ethertype, then a counting pattern.
pub fn frame(dst: [u8; 6], src: [u8; 6], ethertype: u16, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    let mut i = 0u8;
    while f.len() < len {
        f.push(i);
        i = i.wrapping_add(1);
    }
    f.truncate(len);
    f
}

/// Insert `tags` (tpid, tci) after the MAC addresses, outermost first.
pub fn tagged(inner: &[u8], tags: &[(u16, u16)]) -> Vec<u8> {
    let mut f = inner[..12].to_vec();
    for (tpid, tci) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&inner[12..]);
    f
}

/// Link names in the calling thread's namespace, from `ip -o link`.
pub fn ip_link_names() -> BTreeSet<String> {
    let out = std::process::Command::new("ip")
        .args(["-o", "link"])
        .output()
        .expect("run ip -o link");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or("").to_string())
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join("")
}

/// One's-complement sum of 16-bit words, not folded.
pub fn csum_add(mut acc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

pub fn csum_fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// IPv4 header (20 bytes, valid checksum) + L4 bytes.
pub fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> Vec<u8> {
    let total = 20 + l4.len();
    let mut h = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0x40,
        0,
        64,
        proto,
        0,
        0,
    ];
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let c = !csum_fold(csum_add(0, &h));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(l4);
    h
}

fn pseudo(src: [u8; 4], dst: [u8; 4], proto: u8, len: usize) -> u32 {
    let mut acc = csum_add(0, &src);
    acc = csum_add(acc, &dst);
    acc + u32::from(proto) + len as u32
}

/// UDP datagram; `partial`: the checksum field holds only the folded pseudo-header sum, as
/// a CHECKSUM_PARTIAL sender leaves it; otherwise a full valid checksum.
pub fn udp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    payload: &[u8],
    partial: bool,
) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut u = Vec::with_capacity(len);
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&(len as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    let ps = pseudo(src, dst, 17, len);
    let c = if partial {
        csum_fold(ps)
    } else {
        !csum_fold(csum_add(ps, &u))
    };
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

/// TCP segment (20-byte header, ACK only (PSH would make GRO flush), valid checksum unless `bad_csum`).
pub fn tcp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    payload: &[u8],
    bad_csum: bool,
) -> Vec<u8> {
    let mut t = Vec::with_capacity(20 + payload.len());
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&1u32.to_be_bytes());
    t.extend_from_slice(&[0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(payload);
    let c = !csum_fold(csum_add(pseudo(src, dst, 6, t.len()), &t));
    let c = if bad_csum { c ^ 0x5a5a } else { c };
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

pub fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + l3.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(l3);
    f
}
