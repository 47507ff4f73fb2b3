//! TCP GRO: net/ipv4/tcp_offload.c: tcp4_gro_receive, tcp_gro_receive, tcp_gro_complete,
//! tcp4_gro_complete; net/ipv6/tcpv6_offload.c: tcp6_gro_receive, tcp6_gro_complete.

use super::core::{checksum_validate, skb_gro_receive};
use super::ipv4::gro_compute_pseudo;
use super::ipv6;
use super::rules::{CwrGso, IpIdRule};
use super::{reason, GroConfig, Reason, SkBuff};
use crate::consts::IPPROTO_TCP;
use crate::skb::{gso, IpSummed};
use crate::wire::checksum as csum;
use crate::wire::tcp::{HEADER_LEN as TCP_HLEN, TCPHDR_FIN, TCPHDR_PSH};
use crate::wire::TcpPacket;

// TCP_FLAG_* as bits of the host-order flag word (TCP header bytes 12..16).
pub const TCP_FLAG_CWR: u32 = 0x0080_0000;
pub const TCP_FLAG_ECE: u32 = 0x0040_0000;
pub const TCP_FLAG_URG: u32 = 0x0020_0000;
pub const TCP_FLAG_ACK: u32 = 0x0010_0000;
pub const TCP_FLAG_PSH: u32 = 0x0008_0000;
pub const TCP_FLAG_RST: u32 = 0x0004_0000;
pub const TCP_FLAG_SYN: u32 = 0x0002_0000;
pub const TCP_FLAG_FIN: u32 = 0x0001_0000;

/// The fixed TCP header at `off` (from data), copied out so the skb's control block can
/// change while it is read; zeroes where the linear part does not hold it (as the
/// kernel's callers never let happen: tcp_gro_pull_header checked it).
fn th_at(skb: &SkBuff, off: usize) -> TcpPacket<[u8; TCP_HLEN]> {
    let h = skb.hdr(off, TCP_HLEN).and_then(|h| h.try_into().ok());
    TcpPacket::new_unchecked(h.unwrap_or_default())
}

/// tcp4_gro_receive: verify the checksum (unless a flush is already pending), pull the
/// header, then tcp_gro_receive.
pub fn tcp4_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let psum = gro_compute_pseudo(skb, IPPROTO_TCP);
    tcp_gro_validate_and_pull(cfg, head, skb, psum)
}

/// tcp6_gro_receive: the same with the IPv6 pseudo header (ip6_gro_compute_pseudo).
pub fn tcp6_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
) -> Option<usize> {
    let psum = ipv6::gro_compute_pseudo(skb, IPPROTO_TCP);
    tcp_gro_validate_and_pull(cfg, head, skb, psum)
}

/// The body both share: skb_gro_checksum_validate with `psum`, tcp_gro_pull_header,
/// tcp_gro_receive.
fn tcp_gro_validate_and_pull(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
    psum: u32,
) -> Option<usize> {
    if !skb.cb.flush && checksum_validate(skb, false, 0, psum) {
        skb.flush(reason::TCP_CSUM);
        return None;
    }
    // tcp_gro_pull_header: the fixed header, then doff at least 5 and the whole header
    // in the linear part (the view's check_len and check_header).
    let th = skb.cb.data_offset;
    let Ok(tcph) = TcpPacket::new_checked(skb.hdr_from(th)) else {
        skb.flush(reason::TCP_DOFF);
        return None;
    };
    let thlen = tcph.header_len();
    skb.cb.data_offset += thlen;
    tcp_gro_receive(cfg, head, skb, th, thlen)
}

/// __gro_receive_network_flush: the IPv6 or the IPv4 rule, by the header's version.
fn network_flush(
    cfg: &GroConfig,
    skb: &SkBuff,
    p: &mut SkBuff,
    nh: usize,
    inner: bool,
) -> Option<Reason> {
    // `((struct iphdr *)nh)->version == 6`.
    if super::ipv4::iph_at(skb, nh).is_some_and(|h| h.version() == 6) {
        ipv6::network_flush(cfg, skb, p, nh)
    } else {
        super::ipv4::network_flush(cfg, skb, p, nh, inner)
    }
}

/// Name the first difference in the flag word (doff, reserved bits, flags, window).
fn flag_diff_reason(diff: u32) -> Reason {
    if diff & TCP_FLAG_SYN != 0 {
        reason::TCP_FLAGS_SYN
    } else if diff & TCP_FLAG_RST != 0 {
        reason::TCP_FLAGS_RST
    } else if diff & TCP_FLAG_URG != 0 {
        reason::TCP_FLAGS_URG
    } else if diff & TCP_FLAG_CWR != 0 {
        reason::TCP_CWR
    } else if diff & 0xf000_0000 != 0 {
        reason::TCP_HDRLEN
    } else if diff & 0xffff_0000 != 0 {
        reason::TCP_FLAGS
    } else {
        reason::TCP_WINDOW
    }
}

/// tcp_gro_lookup: the first same_flow skb (youngest first) with this port pair; a held
/// skb of another port pair stops being same_flow.
fn tcp_gro_lookup(
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
    th: usize,
    ports: (u16, u16),
) -> Option<usize> {
    for i in (0..head.len()).rev() {
        let p = &mut head[i];
        if !p.cb.same_flow {
            continue;
        }
        let held = p
            .hdr(th, TCP_HLEN)
            .map(TcpPacket::new_unchecked)
            .map_or((0, 0), |t| (t.src_port(), t.dst_port()));
        if held != ports {
            p.cb.same_flow = false;
            p.cb.mismatch = Some(reason::TCP_PORTS);
            skb.saw_mismatch(reason::TCP_PORTS);
            continue;
        }
        return Some(i);
    }
    None
}

/// tcp_gro_receive's IP ID check on the held skb `p`, by kernel generation.
fn tcp_gro_ip_id_flush(cfg: &GroConfig, skb: &SkBuff, p: &mut SkBuff) -> Option<Reason> {
    match cfg.rules.ip_id {
        IpIdRule::PerLevel618 | IpIdRule::PerLevel610 => {
            // gro_receive_network_flush: the outer (or only) level, then the inner.
            let outer = network_flush(cfg, skb, p, p.cb.network_offsets[0], false);
            let inner = if p.cb.encap_mark {
                network_flush(cfg, skb, p, p.cb.network_offsets[1], true)
            } else {
                None
            };
            outer.or(inner)
        }
        IpIdRule::Atomic419 => {
            // The second frame decides between a fixed and an incrementing ID.
            if p.cb.flush_id != 1 || p.cb.count != 1 || !p.cb.is_atomic {
                (p.cb.flush_id != 0).then_some(reason::IPV4_ID)
            } else {
                p.cb.is_atomic = false;
                None
            }
        }
        IpIdRule::Increment312 => None,
    }
}

/// tcp_gro_receive's out_check_final: force a flush if the segment is smaller than mss,
/// or carries URG, PSH, RST, SYN or FIN.
fn out_check_final(
    skb: &SkBuff,
    flags: u32,
    len: usize,
    mss: usize,
    merged: bool,
) -> Option<Reason> {
    if flags & TCP_FLAG_RST != 0 {
        Some(reason::TCP_FLAGS_RST)
    } else if flags & TCP_FLAG_SYN != 0 {
        Some(reason::TCP_FLAGS_SYN)
    } else if flags & TCP_FLAG_URG != 0 {
        Some(reason::TCP_FLAGS_URG)
    } else if flags & TCP_FLAG_FIN != 0 {
        Some(reason::TCP_FLAGS_FIN)
    } else if flags & TCP_FLAG_PSH != 0 {
        Some(reason::TCP_FLAGS_PSH)
    } else if skb.gso_size != 0 {
        // A GSO skb: flush unless it is whole segments of gso_size.
        (len != usize::from(skb.cb.count) * usize::from(skb.gso_size)).then_some(reason::TCP_MSS)
    } else if len < mss {
        Some(if merged {
            reason::TCP_SHORT
        } else {
            reason::TCP_MSS
        })
    } else {
        None
    }
}

/// tcp_gro_receive: find the held skb of this port pair, apply every flush rule, merge,
/// then the final flush check. Returns the held skb to complete, if any.
pub fn tcp_gro_receive(
    cfg: &GroConfig,
    head: &mut [Box<SkBuff>],
    skb: &mut SkBuff,
    th: usize,
    thlen: usize,
) -> Option<usize> {
    let len = skb.gro_len();
    let tcph = th_at(skb, th);
    // tcp_flag_word(th): doff, the reserved bits, the flags and the window.
    let flags = tcph.flag_word();
    let ports = (tcph.src_port(), tcph.dst_port());
    let found = tcp_gro_lookup(head, skb, th, ports);
    let mut mss = 1usize;
    if let Some(i) = found {
        let p = &mut head[i];
        let th2 = p.offset_from_data(p.transport_header).unwrap_or(0);
        let tcph2 = th_at(p, th2);
        let flags2 = tcph2.flag_word();
        // Every rule that fires, in the kernel's order; the first names the flush.
        let mut all: Vec<Reason> = Vec::new();
        let mut add = |cond: bool, r: Reason| {
            if cond && !all.contains(&r) {
                all.push(r);
            }
        };
        // [4.19]/[3.12]: flush starts from the IP layer's verdict on p.
        add(p.cb.flush, p.cb.flush_reason.unwrap_or(reason::IPV4_ID));
        add(flags & TCP_FLAG_CWR != 0, reason::TCP_CWR);
        let mask = if cfg.rules.cwr_in_flag_xor {
            !(TCP_FLAG_FIN | TCP_FLAG_PSH)
        } else {
            !(TCP_FLAG_CWR | TCP_FLAG_FIN | TCP_FLAG_PSH)
        };
        let diff = (flags ^ flags2) & mask;
        add(diff != 0, flag_diff_reason(diff));
        add(tcph.ack_number() != tcph2.ack_number(), reason::TCP_ACK);
        // The option words of the new header against the same bytes of the held skb
        // (its options when doff matches; a different doff already differs in flags).
        let opts = skb.hdr(th + TCP_HLEN, thlen.saturating_sub(TCP_HLEN));
        add(
            opts != p.hdr(th2 + TCP_HLEN, thlen.saturating_sub(TCP_HLEN)),
            reason::TCP_OPTIONS,
        );
        if let Some(r) = tcp_gro_ip_id_flush(cfg, skb, p) {
            add(true, r);
        }
        mss = usize::from(p.gso_size);
        if skb.gso_size != 0 {
            // A GSO skb (from gro_cells) merges only with the same gso_size.
            add(mss != usize::from(skb.gso_size), reason::TCP_MSS);
        } else {
            // A single frame larger than the first segment, or an empty one, never merges.
            add(len.wrapping_sub(1) >= mss, reason::TCP_MSS);
        }
        let seq = tcph.seq_number();
        let seq2 = tcph2.seq_number();
        let merged_payload = p.gro_len() as u32;
        add(seq2.wrapping_add(merged_payload) != seq, reason::TCP_SEQ);
        match all.first().copied() {
            Some(r) => {
                skb.cb.nomerge = Some(r);
                skb.cb.nomerge_also = all[1..].to_vec();
                mss = 1;
            }
            None => match skb_gro_receive(cfg, p, skb) {
                Ok(()) => {
                    // tcp_flag_word(th2) |= flags & (TCP_FLAG_FIN | TCP_FLAG_PSH): the
                    // held flags byte ORs in the new FIN and PSH.
                    if let Some(h) = p.hdr_mut(th2, TCP_HLEN) {
                        let mut t2 = TcpPacket::new_unchecked(h);
                        t2.set_flags(t2.flags() | (tcph.flags() & (TCPHDR_FIN | TCPHDR_PSH)));
                    }
                }
                Err(r) => {
                    skb.cb.nomerge = Some(r);
                    mss = 1;
                }
            },
        }
    }
    let merged = skb.cb.same_flow;
    let final_why = out_check_final(skb, flags, len, mss, merged);
    let flush = final_why.is_some();
    let pp = found.filter(|_| !merged || flush);
    if let Some(r) = final_why {
        if merged {
            skb.cb.merged_flush = Some(r);
        }
        skb.flush(skb.cb.nomerge.unwrap_or(r));
    }
    pp
}

/// tcp4_gro_complete: the TCP checksum becomes the folded pseudo-header sum of the
/// merged length (not complemented), gso_type gains TCPV4 (+ FIXEDID bits), then
/// tcp_gro_complete.
pub fn tcp4_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, thoff: usize) {
    if skb.headlen() < thoff + TCP_HLEN {
        return;
    }
    let nh = skb.cb.network_offsets[usize::from(skb.encapsulation)];
    let (saddr, daddr) = super::ipv4::addrs(skb, nh);
    let check = csum::fold(csum::pseudo_v4(
        saddr,
        daddr,
        IPPROTO_TCP,
        skb.len() - thoff,
    ));
    set_check(skb, thoff, check);
    skb.gso_type |= gso::TCPV4;
    if cfg.rules.fixedid_on_complete {
        if skb.cb.ip_fixedid & 1 != 0 {
            skb.gso_type |= gso::TCP_FIXEDID;
        }
        if skb.cb.ip_fixedid & 2 != 0 {
            skb.gso_type |= gso::TCP_FIXEDID_INNER;
        }
    }
    tcp_gro_complete(cfg, skb, thoff);
}

/// tcp6_gro_complete: the TCP checksum becomes ~tcp_v6_check(len, saddr, daddr, 0), the
/// folded IPv6 pseudo-header sum; gso_type gains TCPV6; then tcp_gro_complete.
pub fn tcp6_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, nhoff: usize, thoff: usize) {
    if skb.headlen() < thoff + TCP_HLEN {
        return;
    }
    let (saddr, daddr) = ipv6::addrs(skb, nhoff);
    let check = csum::fold(csum::pseudo_v6(
        saddr,
        daddr,
        IPPROTO_TCP,
        skb.len() - thoff,
    ));
    set_check(skb, thoff, check);
    skb.gso_type |= gso::TCPV6;
    tcp_gro_complete(cfg, skb, thoff);
}

/// th->check of the TCP header at `thoff` (the completions checked it is there).
fn set_check(skb: &mut SkBuff, thoff: usize, check: u16) {
    if let Some(h) = skb.hdr_mut(thoff, TCP_HLEN) {
        TcpPacket::new_unchecked(h).set_checksum(check);
    }
}

/// tcp_gro_complete: CHECKSUM_PARTIAL at the TCP header, gso_segs = count, and the ECN
/// GSO bit when the head segment has CWR.
pub fn tcp_gro_complete(cfg: &GroConfig, skb: &mut SkBuff, thoff: usize) {
    if skb.encapsulation {
        skb.set_inner_transport_header(thoff);
    }
    skb.csum_start = skb.data_offset() + thoff;
    skb.csum_offset = 16;
    skb.ip_summed = IpSummed::Partial;
    skb.gso_segs = skb.cb.count;
    if th_at(skb, thoff).cwr() {
        skb.gso_type |= match cfg.rules.cwr_gso {
            CwrGso::TcpEcn => gso::TCP_ECN,
            CwrGso::AccEcn => gso::TCP_ACCECN,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::super::napi::End;
    use super::super::testutil::{five, lens, run};
    use super::super::{frames::Tcp4, reason};
    use crate::profile::{LINUX_4_19, LINUX_6_18};

    const ONE: usize = 1454;
    const TWO: usize = 54 + 2800;
    const THREE: usize = 54 + 4200;

    #[test]
    fn psh_and_fin_merge_then_flush() {
        for (flags, why) in [(0x18, reason::TCP_FLAGS_PSH), (0x11, reason::TCP_FLAGS_FIN)] {
            let d = run(&LINUX_6_18, five(|s| s.flags = flags));
            // Segments 0-2 (the PSH/FIN one merged last), then 3-4.
            assert_eq!(lens(&d), vec![THREE, TWO], "{}", why.name);
            assert_eq!(
                d[0].end,
                End::Frame {
                    frame: 2,
                    reason: why,
                    merged: true
                }
            );
        }
    }

    #[test]
    fn syn_rst_urg_never_merge_and_go_up_alone() {
        for (flags, why) in [
            (0x12, reason::TCP_FLAGS_SYN),
            (0x14, reason::TCP_FLAGS_RST),
            (0x30, reason::TCP_FLAGS_URG),
        ] {
            let d = run(&LINUX_6_18, five(|s| s.flags = flags));
            // The flag word differs: held 0-1 completes, segment 2 is flushed unheld
            // (final check), 3-4 start again.
            assert_eq!(lens(&d), vec![TWO, ONE, TWO], "{}", why.name);
            assert_eq!(d[1].skb.model.start, Some(why));
            assert_eq!(d[1].end, End::Normal);
        }
    }

    #[test]
    fn window_ack_options_and_header_length_split_the_flow() {
        let ts = |v: u32| {
            let mut o = vec![1, 1, 8, 10];
            o.extend_from_slice(&v.to_be_bytes());
            o.extend_from_slice(&0u32.to_be_bytes());
            o
        };
        let cases: Vec<(Vec<Vec<u8>>, _)> = vec![
            (five(|s| s.window = 1024), reason::TCP_WINDOW),
            (five(|s| s.ack = 2), reason::TCP_ACK),
            (five(|s| s.options = ts(5)), reason::TCP_HDRLEN),
        ];
        for (frames, why) in cases {
            let d = run(&LINUX_6_18, frames);
            // Segment 2 completes 0-1 and is held alone; 3 differs from it again.
            let l = lens(&d);
            assert_eq!(l[0], TWO, "{}", why.name);
            assert_eq!(d[1].skb.model.start, Some(why));
            assert_eq!(d.len(), 3);
        }
        // Same option length, different timestamp value: tcp:options.
        let frames: Vec<Vec<u8>> = (0..5u32)
            .map(|k| {
                Tcp4 {
                    seq: 1000 + k * 1400,
                    id: 1 + k as u16,
                    options: ts(if k == 2 { 9 } else { 5 }),
                    ..Tcp4::default()
                }
                .build()
            })
            .collect();
        let d = run(&LINUX_6_18, frames);
        assert_eq!(lens(&d), vec![2 * 1400 + 66, 1466, 2 * 1400 + 66]);
        assert_eq!(d[1].skb.model.start, Some(reason::TCP_OPTIONS));
    }

    #[test]
    fn mss_rule_large_small_small_large_and_pure_ack() {
        // Large then small: the 700-byte last segment merges and forces the flush.
        let f: Vec<Vec<u8>> = (0..5u32)
            .map(|k| {
                Tcp4 {
                    seq: 1000 + k * 1400,
                    id: 1 + k as u16,
                    payload: if k == 4 { 700 } else { 1400 },
                    ..Tcp4::default()
                }
                .build()
            })
            .collect();
        let d = run(&LINUX_6_18, f);
        assert_eq!(lens(&d), vec![54 + 4 * 1400 + 700]);
        assert_eq!(
            d[0].end,
            End::Frame {
                frame: 4,
                reason: reason::TCP_SHORT,
                merged: true
            }
        );
        // Small then large: mss = 700, (1400 - 1) >= 700 flushes.
        let f: Vec<Vec<u8>> = (0..3u32)
            .map(|k| {
                Tcp4 {
                    seq: if k == 0 { 1000 } else { 1700 + (k - 1) * 1400 },
                    id: 1 + k as u16,
                    payload: if k == 0 { 700 } else { 1400 },
                    ..Tcp4::default()
                }
                .build()
            })
            .collect();
        let d = run(&LINUX_6_18, f);
        assert_eq!(lens(&d), vec![754, TWO]);
        assert_eq!(d[1].skb.model.start, Some(reason::TCP_MSS));
        // A pure ACK (no payload, seq unchanged) in the middle: held 0-1 completes, the
        // ACK goes up alone (len 0 < mss), 3-4 (seq 1000 + 2 x 1400 + 1400) restart.
        let f: Vec<Vec<u8>> = (0..5u32)
            .map(|k| {
                let (seq, payload) = match k {
                    0 | 1 => (1000 + k * 1400, 1400),
                    2 => (3800, 0),
                    _ => (3800 + (k - 3) * 1400, 1400),
                };
                Tcp4 {
                    seq,
                    payload,
                    id: 1 + k as u16,
                    ..Tcp4::default()
                }
                .build()
            })
            .collect();
        let d = run(&LINUX_6_18, f);
        assert_eq!(lens(&d), vec![TWO, 54, TWO]);
        assert_eq!(d[1].skb.model.start, Some(reason::TCP_MSS));
    }

    #[test]
    fn seq_gap_and_checksum() {
        let d = run(&LINUX_6_18, five(|s| s.seq += 1));
        assert_eq!(lens(&d), vec![TWO, ONE, TWO]);
        assert_eq!(d[1].skb.model.start, Some(reason::TCP_SEQ));
        let d = run(&LINUX_6_18, five(|s| s.bad_tcp_csum = true));
        // The bad segment goes up first; 0-1 stay held until 3 fails ipv4:id/tcp:seq.
        assert_eq!(lens(&d), vec![ONE, TWO, TWO]);
        assert_eq!(d[0].skb.model.start, Some(reason::TCP_CSUM));
    }

    #[test]
    fn cwr_flushes_and_6_18_keeps_cwr_in_the_flag_word() {
        // 6.18: CWR on segment 2 flushes (not merged, held); 3 differs in CWR: flush.
        let d = run(&LINUX_6_18, five(|s| s.flags = 0x90));
        assert_eq!(lens(&d), vec![TWO, ONE, TWO]);
        assert_eq!(d[1].skb.model.start, Some(reason::TCP_CWR));
        // 4.19 masked CWR in the XOR: 3-4 merge into the CWR head, gso TCP_ECN.
        let d = run(&LINUX_4_19, five(|s| s.flags = 0x90));
        assert_eq!(lens(&d), vec![TWO, THREE]);
        assert_eq!(
            d[1].skb.gso_type,
            crate::skb::gso::TCPV4 | crate::skb::gso::TCP_ECN
        );
    }

    #[test]
    fn interleaved_flows_merge_separately() {
        let f: Vec<Vec<u8>> = (0..8u32)
            .map(|k| {
                Tcp4 {
                    sport: if k % 2 == 0 { 1 } else { 2 },
                    seq: 1000 + (k / 2) * 1400,
                    id: 1 + (k / 2) as u16,
                    ..Tcp4::default()
                }
                .build()
            })
            .collect();
        let d = run(&LINUX_6_18, f);
        assert_eq!(lens(&d), vec![54 + 5600, 54 + 5600]);
        assert_eq!(d[1].skb.model.start, Some(reason::FLOW_NEW));
    }
}
