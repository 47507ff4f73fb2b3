//! The frame description format (TOML) and its resolution into [`FrameSpec`]s.
//!
//! ```toml
//! # What these frames are for.
//! format = "pcap"            # or "pcapng"; optional, default "pcap"
//! start_ns = 1_000_000_000   # timestamp of frame 0; optional
//! interval_ns = 1_000        # frame k is at start_ns + k * interval_ns; optional
//!
//! [defaults]                 # optional; every key optional
//! src_mac = "02:00:00:00:00:01"
//! dst_mac = "02:00:00:00:00:02"
//! ipv4_src = "10.0.0.1"      # ipv4_dst = "10.0.0.2", ipv6_src = "fd00::1", ipv6_dst = "fd00::2"
//! pad_to = 60                # default 0: frames are NOT padded to the Ethernet minimum
//!
//! [[frame]]
//! vlan = [{ tpid = 0x8100, pcp = 3, dei = 0, vid = 100 }]  # outermost first
//! ipv4 = { src = "10.0.0.1", dst = "10.0.0.2", ttl = 64, id = 1, tos = 0, df = true }
//! tcp = { sport = 1000, dport = 80, seq = 1, ack = 0, flags = "A", window = 512 }
//! payload = 100              # bytes; byte i of the payload is (i as u8)
//! count = 1                  # repeat; TCP seq advances by the segment, IPv4 id by 1
//! gap_ns = 0                 # idle time added before this frame (and all later ones)
//! ```
//!
//! Frames are numbered from 0 in the order of their `[[frame]]` tables. A frame is one
//! of: `raw = "hex"` (exact bytes); `ethertype = 0x88cc` with no IP (payload follows
//! the Ethernet header); `ipv4` or `ipv6`, optionally with `tcp` or `udp`.
//! `ipv4_csum`, `tcp_csum`, `udp_csum` take "good" (default), "bad" (the right value
//! with bit 8 flipped, never 0), "zero", and for TCP/UDP "partial" (the folded
//! pseudo-header sum a CHECKSUM_PARTIAL skb carries). An explicit `ethertype` next to
//! `ipv4`/`ipv6` overrides the one they imply. `tcp_options`, `ipv4_frag` and `tunnel`
//! (GRE-TEB / VXLAN around the frame) are documented in `tunnel.rs`, IPv6 extension
//! headers (`ipv6 = { ext = [...] }`) in `ipv6_ext.rs`.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use serde::Deserialize;
use sim::pcap::{PcapFormat, MAX_CAPLEN};

use crate::build::{Csum, FrameSpec, Ipv4Spec, Ipv6Spec, TcpSpec, UdpSpec, VlanTag, L3, L4};
use crate::locate;

/// A description file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Desc {
    #[serde(default)]
    pub format: Format,
    pub start_ns: Option<u64>,
    pub interval_ns: Option<u64>,
    #[serde(default)]
    pub defaults: Defaults,
    #[serde(default)]
    pub frame: Vec<FrameDesc>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Pcap,
    Pcapng,
}

impl From<Format> for PcapFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Pcap => PcapFormat::Pcap,
            Format::Pcapng => PcapFormat::PcapNg,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    pub src_mac: Option<Mac>,
    pub dst_mac: Option<Mac>,
    pub ipv4_src: Option<Ipv4Addr>,
    pub ipv4_dst: Option<Ipv4Addr>,
    pub ipv6_src: Option<Ipv6Addr>,
    pub ipv6_dst: Option<Ipv6Addr>,
    pub pad_to: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameDesc {
    pub src_mac: Option<Mac>,
    pub dst_mac: Option<Mac>,
    pub vlan: Option<Vec<VlanDesc>>,
    pub ethertype: Option<u16>,
    pub ipv4: Option<Ipv4Desc>,
    pub ipv6: Option<Ipv6Desc>,
    pub tcp: Option<TcpDesc>,
    pub udp: Option<UdpDesc>,
    pub payload: Option<usize>,
    pub ipv4_csum: Option<Csum>,
    pub tcp_csum: Option<Csum>,
    pub udp_csum: Option<Csum>,
    pub pad_to: Option<usize>,
    pub count: Option<u32>,
    /// Idle time before this frame, on top of the interval; later frames keep it.
    pub gap_ns: Option<u64>,
    pub raw: Option<String>,
    /// TCP options as hex (see `tunnel.rs`).
    pub tcp_options: Option<String>,
    /// IPv4 MF / fragment offset.
    pub ipv4_frag: Option<crate::tunnel::FragDesc>,
    /// Outer headers around the frame (GRE-TEB or VXLAN).
    pub tunnel: Option<crate::tunnel::TunnelDesc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlanDesc {
    #[serde(default = "tpid_8021q")]
    pub tpid: u16,
    #[serde(default)]
    pub pcp: u8,
    #[serde(default)]
    pub dei: u8,
    pub vid: u16,
}

fn tpid_8021q() -> u16 {
    sim::consts::ETH_P_8021Q
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ipv4Desc {
    pub src: Option<Ipv4Addr>,
    pub dst: Option<Ipv4Addr>,
    pub ttl: Option<u8>,
    pub id: Option<u16>,
    pub tos: Option<u8>,
    pub df: Option<bool>,
    /// Protocol number; defaults to TCP/UDP's, or 253 (experimental) without L4.
    pub proto: Option<u8>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ipv6Desc {
    pub src: Option<Ipv6Addr>,
    pub dst: Option<Ipv6Addr>,
    pub hop_limit: Option<u8>,
    pub traffic_class: Option<u8>,
    pub flow_label: Option<u32>,
    /// Defaults to TCP/UDP's, or 59 (no next header) without L4.
    pub next_header: Option<u8>,
    /// Extension headers, in order (`ipv6_ext.rs`).
    #[serde(default)]
    pub ext: Vec<crate::ipv6_ext::ExtDesc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpDesc {
    pub sport: u16,
    pub dport: u16,
    pub seq: Option<u32>,
    pub ack: Option<u32>,
    /// Letters from "FSRPAUEC" (FIN SYN RST PSH ACK URG ECE CWR); default "A".
    pub flags: Option<TcpFlags>,
    pub window: Option<u16>,
    pub urg: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpDesc {
    pub sport: u16,
    pub dport: u16,
}

/// A MAC address written `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Mac(pub [u8; 6]);

impl TryFrom<String> for Mac {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        let mut mac = [0u8; 6];
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 6 {
            return Err(format!(
                "MAC address {s:?} is not six colon-separated hex bytes"
            ));
        }
        for (slot, part) in mac.iter_mut().zip(parts) {
            *slot = hex_byte(part.as_bytes())
                .ok_or_else(|| format!("MAC address {s:?}: {part:?} is not a hex byte"))?;
        }
        Ok(Mac(mac))
    }
}

/// TCP flags written as letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct TcpFlags(pub u8);

impl TryFrom<String> for TcpFlags {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        let mut bits = 0u8;
        for c in s.chars() {
            bits |= match c {
                'F' => 0x01,
                'S' => 0x02,
                'R' => 0x04,
                'P' => 0x08,
                'A' => 0x10,
                'U' => 0x20,
                'E' => 0x40,
                'C' => 0x80,
                _ => {
                    return Err(format!(
                        "TCP flags {s:?}: {c:?} is not one of F S R P A U E C"
                    ))
                }
            };
        }
        Ok(TcpFlags(bits))
    }
}

pub const DEFAULT_SRC_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
pub const DEFAULT_DST_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
pub const DEFAULT_START_NS: u64 = 1_000_000_000;
pub const DEFAULT_INTERVAL_NS: u64 = 1_000;
/// Frames one description may produce (they are planned in memory).
pub const MAX_FRAMES: usize = 1_000_000;

/// One frame to write: its timestamp and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Raw(Vec<u8>),
    /// Boxed: a spec is some 240 bytes, a raw frame's Vec 24.
    Built(Box<FrameSpec>),
}

/// One frame of the output: when, from which `[[frame]]` table, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub ts_ns: u64,
    /// Index of the `[[frame]]` table it comes from (differs from the pcap index
    /// once a table has `count`).
    pub entry: usize,
    pub body: Body,
}

/// A description resolved into frames, ready to build.
#[derive(Debug)]
pub struct Resolved {
    pub format: PcapFormat,
    pub frames: Vec<Planned>,
}

/// Reads and resolves `path`. Errors are one line naming the file.
pub fn load(path: &Path) -> Result<Resolved, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Parses and resolves description text; `name` is what errors call it.
pub fn parse(text: &str, name: &str) -> Result<Resolved, String> {
    let desc: Desc = toml::from_str(text).map_err(|e| locate::toml_error(text, name, &e))?;
    resolve(&desc, text, name)
}

fn resolve(desc: &Desc, text: &str, name: &str) -> Result<Resolved, String> {
    let start = desc.start_ns.unwrap_or(DEFAULT_START_NS);
    let interval = desc.interval_ns.unwrap_or(DEFAULT_INTERVAL_NS);
    let mut frames = Vec::new();
    let mut idle = 0u64;
    for (k, f) in desc.frame.iter().enumerate() {
        let at = |key: &str, msg: String| {
            let line = locate::frame_line(text, k).map_or(String::new(), |l| format!(":{l}"));
            format!("{name}{line}: [[frame]] {k}: key `{key}`: {msg}")
        };
        let count = f.count.unwrap_or(1);
        if count == 0 {
            return Err(at("count", "must be at least 1".into()));
        }
        if frames.len() + count as usize > MAX_FRAMES {
            return Err(at(
                "count",
                format!("a description makes at most {MAX_FRAMES} frames (use `pcapgen bench`)"),
            ));
        }
        let body = resolve_frame(f, &desc.defaults).map_err(|(key, msg)| at(key, msg))?;
        idle = idle
            .checked_add(f.gap_ns.unwrap_or(0))
            .ok_or_else(|| at("gap_ns", "timestamps overflow u64 nanoseconds".into()))?;
        for rep in 0..count {
            let ts = u64::try_from(frames.len())
                .ok()
                .and_then(|n| n.checked_mul(interval))
                .and_then(|d| d.checked_add(start))
                .and_then(|d| d.checked_add(idle))
                .ok_or_else(|| at("count", "timestamps overflow u64 nanoseconds".into()))?;
            frames.push(Planned {
                ts_ns: ts,
                entry: k,
                body: repeat(&body, rep),
            });
        }
    }
    Ok(Resolved {
        format: desc.format.into(),
        frames,
    })
}

/// The `rep`-th copy of a frame: TCP seq advances by what each segment consumes,
/// the IPv4 id by one.
fn repeat(body: &Body, rep: u32) -> Body {
    let Body::Built(spec) = body else {
        return body.clone();
    };
    let mut s = (**spec).clone();
    if let L3::V4(ip) = &mut s.l3 {
        ip.id = ip.id.wrapping_add(rep as u16);
    }
    if let L4::Tcp(t) = &mut s.l4 {
        let syn_fin = u32::from(t.flags & 0x01 != 0) + u32::from(t.flags & 0x02 != 0);
        let step = s.payload_len as u32 + syn_fin;
        t.seq = t.seq.wrapping_add(step.wrapping_mul(rep));
    }
    crate::tunnel::repeat(&mut s.ext, rep);
    Body::Built(Box::new(s))
}

type KeyErr = (&'static str, String);

fn resolve_frame(f: &FrameDesc, d: &Defaults) -> Result<Body, KeyErr> {
    if let Some(hex) = &f.raw {
        return resolve_raw(f, hex);
    }
    let vlans = resolve_vlans(f)?;
    let l3 = resolve_l3(f, d)?;
    let l4 = resolve_l4(f, &l3)?;
    check_csums(f, &l3, &l4)?;
    let ext = crate::tunnel::resolve(
        f.tcp_options.as_deref(),
        f.ipv4_frag,
        f.tunnel.as_ref(),
        matches!(l4, L4::Tcp(_)),
        matches!(l3, L3::V4(_)),
    )?;
    Ok(Body::Built(Box::new(FrameSpec {
        dst: f.dst_mac.or(d.dst_mac).map_or(DEFAULT_DST_MAC, |m| m.0),
        src: f.src_mac.or(d.src_mac).map_or(DEFAULT_SRC_MAC, |m| m.0),
        vlans,
        ethertype: f.ethertype,
        l3,
        l4,
        payload_len: f.payload.unwrap_or(0),
        pad_to: f.pad_to.or(d.pad_to).unwrap_or(0),
        ip_csum: f.ipv4_csum.unwrap_or_default(),
        l4_csum: f.tcp_csum.or(f.udp_csum).unwrap_or_default(),
        ext,
    })))
}

/// A `raw` frame: the exact bytes, alone (no other frame key), within the snaplen.
fn resolve_raw(f: &FrameDesc, hex: &str) -> Result<Body, KeyErr> {
    let others = [
        ("src_mac", f.src_mac.is_some()),
        ("dst_mac", f.dst_mac.is_some()),
        ("vlan", f.vlan.is_some()),
        ("ethertype", f.ethertype.is_some()),
        ("ipv4", f.ipv4.is_some()),
        ("ipv6", f.ipv6.is_some()),
        ("tcp", f.tcp.is_some()),
        ("udp", f.udp.is_some()),
        ("payload", f.payload.is_some()),
        ("ipv4_csum", f.ipv4_csum.is_some()),
        ("tcp_csum", f.tcp_csum.is_some()),
        ("udp_csum", f.udp_csum.is_some()),
        ("pad_to", f.pad_to.is_some()),
        ("tcp_options", f.tcp_options.is_some()),
        ("ipv4_frag", f.ipv4_frag.is_some()),
        ("tunnel", f.tunnel.is_some()),
    ];
    if let Some((key, _)) = others.iter().find(|(_, set)| *set) {
        return Err((
            key,
            "cannot be combined with `raw` (raw gives the exact frame)".into(),
        ));
    }
    let bytes = parse_hex(hex).map_err(|m| ("raw", m))?;
    if bytes.len() > MAX_CAPLEN as usize {
        let n = bytes.len();
        return Err((
            "raw",
            format!("{n} bytes is more than the {MAX_CAPLEN}-byte snaplen"),
        ));
    }
    Ok(Body::Raw(bytes))
}

/// The `vlan` tags, outermost first, each field in its 802.1Q range.
fn resolve_vlans(f: &FrameDesc) -> Result<Vec<VlanTag>, KeyErr> {
    let mut vlans = Vec::new();
    for (i, v) in f.vlan.iter().flatten().enumerate() {
        let check = |ok: bool, what: &str, val: u16, max: u16| {
            if ok {
                Ok(())
            } else {
                Err((
                    "vlan",
                    format!("tag {i}: {what} {val} is out of range 0..={max}"),
                ))
            }
        };
        check(v.pcp <= 7, "pcp", v.pcp.into(), 7)?;
        check(v.dei <= 1, "dei", v.dei.into(), 1)?;
        check(v.vid <= 4095, "vid", v.vid, 4095)?;
        vlans.push(VlanTag {
            tpid: v.tpid,
            pcp: v.pcp,
            dei: v.dei,
            vid: v.vid,
        });
    }
    Ok(vlans)
}

/// The `ipv4` or `ipv6` header with the defaults filled in; a frame without either
/// needs an `ethertype` (raw L3).
fn resolve_l3(f: &FrameDesc, d: &Defaults) -> Result<L3, KeyErr> {
    let l3 = match (&f.ipv4, &f.ipv6) {
        (Some(_), Some(_)) => {
            return Err(("ipv6", "a frame has `ipv4` or `ipv6`, not both".into()))
        }
        (Some(ip), None) => L3::V4(Ipv4Spec {
            src: ip.src.or(d.ipv4_src).unwrap_or(Ipv4Addr::new(10, 0, 0, 1)),
            dst: ip.dst.or(d.ipv4_dst).unwrap_or(Ipv4Addr::new(10, 0, 0, 2)),
            ttl: ip.ttl.unwrap_or(64),
            id: ip.id.unwrap_or(0),
            tos: ip.tos.unwrap_or(0),
            df: ip.df.unwrap_or(true),
            proto: ip.proto,
        }),
        (None, Some(ip)) => {
            let flow_label = ip.flow_label.unwrap_or(0);
            if flow_label > 0xf_ffff {
                return Err((
                    "ipv6",
                    format!("flow_label {flow_label} is wider than 20 bits"),
                ));
            }
            L3::V6(Ipv6Spec {
                src: ip
                    .src
                    .or(d.ipv6_src)
                    .unwrap_or(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
                dst: ip
                    .dst
                    .or(d.ipv6_dst)
                    .unwrap_or(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)),
                hop_limit: ip.hop_limit.unwrap_or(64),
                traffic_class: ip.traffic_class.unwrap_or(0),
                flow_label,
                next_header: ip.next_header,
                ext: crate::ipv6_ext::resolve(&ip.ext).map_err(|e| ("ipv6", e))?,
            })
        }
        (None, None) => L3::None,
    };
    if matches!(l3, L3::None) && f.ethertype.is_none() {
        return Err((
            "ethertype",
            "a frame needs `ipv4`, `ipv6`, `ethertype` (raw L3) or `raw`".into(),
        ));
    }
    Ok(l3)
}

/// The `tcp` or `udp` header with the defaults filled in; it needs an IP header under it.
fn resolve_l4(f: &FrameDesc, l3: &L3) -> Result<L4, KeyErr> {
    let l4 = match (&f.tcp, &f.udp) {
        (Some(_), Some(_)) => return Err(("udp", "a frame has `tcp` or `udp`, not both".into())),
        (Some(t), None) => L4::Tcp(TcpSpec {
            sport: t.sport,
            dport: t.dport,
            seq: t.seq.unwrap_or(1),
            ack: t.ack.unwrap_or(0),
            flags: t.flags.map_or(0x10, |f| f.0),
            window: t.window.unwrap_or(512),
            urg: t.urg.unwrap_or(0),
        }),
        (None, Some(u)) => L4::Udp(UdpSpec {
            sport: u.sport,
            dport: u.dport,
        }),
        (None, None) => L4::None,
    };
    let key = match l4 {
        L4::Tcp(_) => "tcp",
        _ => "udp",
    };
    if !matches!(l4, L4::None) && matches!(l3, L3::None) {
        return Err((key, "needs `ipv4` or `ipv6` under it".into()));
    }
    Ok(l4)
}

/// Each checksum key applies to its own header only; "partial" to the L4 ones only.
fn check_csums(f: &FrameDesc, l3: &L3, l4: &L4) -> Result<(), KeyErr> {
    if f.ipv4_csum.is_some() && !matches!(l3, L3::V4(_)) {
        return Err(("ipv4_csum", "only applies to an `ipv4` frame".into()));
    }
    if f.ipv4_csum == Some(Csum::Partial) {
        return Err((
            "ipv4_csum",
            "\"partial\" applies to tcp_csum/udp_csum only".into(),
        ));
    }
    if f.tcp_csum.is_some() && !matches!(l4, L4::Tcp(_)) {
        return Err(("tcp_csum", "only applies to a `tcp` frame".into()));
    }
    if f.udp_csum.is_some() && !matches!(l4, L4::Udp(_)) {
        return Err(("udp_csum", "only applies to a `udp` frame".into()));
    }
    Ok(())
}

pub(crate) fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b':')
        .collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            hex_byte(pair)
                .ok_or_else(|| format!("byte {i}: {:?} is not hex", String::from_utf8_lossy(pair)))
        })
        .collect()
}

/// Exactly two hex digits.
fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |b: u8| char::from(b).to_digit(16);
    match pair {
        [hi, lo] => Some((digit(*hi)? * 16 + digit(*lo)?) as u8),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
