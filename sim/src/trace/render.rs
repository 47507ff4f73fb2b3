//! Rendering the tun-read trace as text and JSON.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::pipeline::tun_read::{Event, ReadRecord};
use crate::scenario::Scenario;
use crate::skb::{gso, OpCounters};
use crate::text;
use crate::tun::read::SkbInfo;
use crate::tun::{DeviceKind, TunConfig, TunStats, VnetEndian, TUN_PI_LEN};
use crate::wire::summary::{describe_into, vlan_tci_into};
use crate::wire::tun_pi::TunPi;
use crate::wire::virtio_net_hdr::{
    flags_names, gso_type_name, VirtioNetHdr, VirtioNetHdrRepr, VnetHdrLayout,
};

/// The lines above the events.
#[derive(Debug, Clone)]
pub struct TraceHeader {
    pub scenario: String,
    pub description: String,
    pub backend: String,
    pub profile: String,
    pub device: String,
    pub reader: String,
    pub input: String,
    /// How frames reach the tap, when not the device's default (a tap on a bridge).
    pub attach: Option<String>,
}

impl TraceHeader {
    /// The header for `scenario` run on `backend` ("sim" or "tap").
    pub fn for_scenario(scenario: &Scenario, backend: &str) -> TraceHeader {
        let r = &scenario.reader;
        let buffers: Vec<String> = r.buffers.iter().map(|b| b.to_string()).collect();
        TraceHeader {
            scenario: scenario.name.clone(),
            description: scenario.description.clone(),
            backend: backend.to_string(),
            profile: scenario.profile.name.to_string(),
            device: describe_device(&scenario.device),
            reader: format!(
                "buffers [{}] fill {:#04x} read_every {}",
                buffers.join(", "),
                r.fill,
                r.read_every
            ),
            input: scenario
                .input
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            attach: (scenario.attach != crate::bridge::Attach::default_for(scenario.device.kind))
                .then(|| scenario.attach.name().to_string()),
        }
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// "tap pi vnet_hdr 12 le tx-vlan ctag on stag on offloads csum,tso4 tx_queue_len 500"
pub fn describe_device(c: &TunConfig) -> String {
    let mut s = String::from(match c.kind {
        DeviceKind::Tap => "tap",
        DeviceKind::Tun => "tun",
    });
    s.push_str(if c.no_pi { " no_pi" } else { " pi" });
    if c.vnet_hdr {
        let e = match c.vnet_endian {
            VnetEndian::Little => "le",
            VnetEndian::Big => "be",
        };
        let _ = write!(s, " vnet_hdr {} {e}", c.vnet_hdr_sz);
    }
    let _ = write!(
        s,
        " tx-vlan ctag {} stag {}",
        on_off(c.tx_vlan_ctag),
        on_off(c.tx_vlan_stag)
    );
    let o = &c.offloads;
    let names: Vec<&str> = [
        (o.csum, "csum"),
        (o.tso4, "tso4"),
        (o.tso6, "tso6"),
        (o.tso_ecn, "tso_ecn"),
        (o.ufo, "ufo"),
        (o.uso4, "uso4"),
        (o.uso6, "uso6"),
        (o.udp_tunnel_gso, "udp_tunnel_gso"),
        (o.udp_tunnel_gso_csum, "udp_tunnel_gso_csum"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, n)| n)
    .collect();
    if !names.is_empty() {
        let _ = write!(s, " offloads {}", names.join(","));
    }
    let _ = write!(s, " tx_queue_len {}", c.tx_queue_len);
    s
}

pub(crate) fn ts(ns: u64) -> String {
    let mut s = String::new();
    text::ts(&mut s, ns);
    s
}

pub(crate) fn counters(s: &TunStats) -> String {
    let mut out = String::new();
    counters_into(&mut out, s);
    out
}

/// "tx_packets 1 tx_bytes 60 tx_dropped 0 rx_packets 0 rx_bytes 0 rx_dropped 0".
pub(crate) fn counters_into(out: &mut String, s: &TunStats) {
    for (name, n) in [
        ("tx_packets ", s.tx_packets),
        (" tx_bytes ", s.tx_bytes),
        (" tx_dropped ", s.tx_dropped),
        (" rx_packets ", s.rx_packets),
        (" rx_bytes ", s.rx_bytes),
        (" rx_dropped ", s.rx_dropped),
    ] {
        out.push_str(name);
        text::dec(out, n);
    }
}

fn skb_line(k: &SkbInfo) -> String {
    let mut s = String::new();
    skb_line_into(&mut s, k);
    s
}

/// "len {} headlen {} protocol {:#06x}", the tag, the checksum state and GSO.
fn skb_line_into(s: &mut String, k: &SkbInfo) {
    s.push_str("len ");
    text::dec(s, k.len);
    s.push_str(" headlen ");
    text::dec(s, k.headlen);
    s.push_str(" protocol ");
    text::hex0x(s, u64::from(k.protocol), 4);
    if let Some(v) = k.vlan {
        s.push_str(" hwaccel-tag ");
        vlan_tci_into(s, v.proto, v.tci);
    }
    s.push(' ');
    s.push_str(k.ip_summed.kernel_name());
    if k.ip_summed == crate::skb::IpSummed::Partial {
        let _ = write!(
            s,
            " csum_start {} csum_offset {}",
            k.csum_start, k.csum_offset
        );
    }
    if k.gso_size != 0 {
        let _ = write!(
            s,
            " gso {} size {} segs {}",
            gso::names(k.gso_type),
            k.gso_size,
            k.gso_segs
        );
    }
}

/// Bytes dumped in full; longer reads show their head and tail (the output pcap keeps
/// every byte and is compared byte for byte).
const HEXDUMP_FULL: usize = 256;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of `data`, two digits a byte (the JSON traces' `bytes`). Hand-written:
/// `format!` per byte costs more than the rest of a trace line.
pub fn hex_string(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len() * 2);
    for b in data {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    s
}

/// The longest hexdump line: 4 spaces, up to 16 offset digits, ':', 16 x " xx", '\n'.
const HEX_LINE_MAX: usize = 4 + 16 + 1 + 16 * 3 + 1;

/// One hexdump line, `    0010: 45 00 ...` (the offset in at least four digits, as
/// `{:04x}` would print it), into `line`; returns its length.
fn hex_line(line: &mut [u8; HEX_LINE_MAX], off: usize, chunk: &[u8]) -> usize {
    line.fill(b' ');
    let digits = (usize::BITS - off.leading_zeros()).div_ceil(4).max(4) as usize;
    let mut n = 4;
    for k in (0..digits).rev() {
        line[n] = HEX[(off >> (4 * k)) & 0xf];
        n += 1;
    }
    line[n] = b':';
    n += 1;
    for b in chunk.iter().take(16) {
        line[n + 1] = HEX[usize::from(b >> 4)];
        line[n + 2] = HEX[usize::from(b & 0xf)];
        n += 3;
    }
    line[n] = b'\n';
    n + 1
}

/// The lines of `data` (at most [`HEXDUMP_FULL`] bytes), its first byte at offset
/// `base`: built in one buffer and appended at once (one UTF-8 check, one copy).
fn hex_lines(out: &mut String, base: usize, data: &[u8]) {
    let mut buf = [0u8; HEX_LINE_MAX * HEXDUMP_FULL / 16];
    let mut line = [b' '; HEX_LINE_MAX];
    let mut n = 0;
    for (i, chunk) in data.chunks(16).take(HEXDUMP_FULL / 16).enumerate() {
        let len = hex_line(&mut line, base + i * 16, chunk);
        buf[n..n + len].copy_from_slice(&line[..len]);
        n += len;
    }
    // Every byte written above is ASCII.
    out.push_str(std::str::from_utf8(&buf[..n]).unwrap_or_default());
}

pub(crate) fn hexdump(out: &mut String, data: &[u8]) {
    if data.len() <= HEXDUMP_FULL {
        hex_lines(out, 0, data);
        return;
    }
    hex_lines(out, 0, &data[..128]);
    let tail = (data.len() - 1) / 16 * 16;
    out.push_str("    ...: ");
    text::dec(out, tail - 128);
    out.push_str(" bytes not shown (all in the output pcap)\n");
    hex_lines(out, tail, &data[tail..]);
}

/// PI and vnet header as userspace sees them in `data`.
struct Decoded<'r> {
    pi: Option<(u16, u16)>,
    /// The header and the bytes of the area past it.
    vnet: Option<(VirtioNetHdrRepr, &'r [u8])>,
    /// The header is struct virtio_net_hdr_v1_hash_tunnel.
    tunnel: bool,
}

fn decode<'r>(r: &'r ReadRecord, dev: &TunConfig) -> Decoded<'r> {
    let mut pos = 0;
    let mut d = Decoded {
        pi: None,
        vnet: None,
        tunnel: false,
    };
    if !dev.no_pi {
        if let Ok(pi) = TunPi::new_checked(&r.data[..]) {
            d.pi = Some((pi.flags(), pi.proto()));
        }
        pos = TUN_PI_LEN;
    }
    if dev.vnet_hdr && r.result.is_ok() && r.data.len() >= pos + dev.vnet_hdr_sz {
        let area = &r.data[pos..pos + dev.vnet_hdr_sz];
        // With the UDP tunnel offload tun writes the 24-byte header
        // (docs/tun-read.md#vnet-tunnel).
        let layout = if dev.offloads.udp_tunnel_gso {
            VnetHdrLayout::HashTunnel
        } else {
            VnetHdrLayout::Basic
        };
        if let Ok(view) = VirtioNetHdr::new_checked(area, layout, dev.vnet_endian) {
            if let Ok(h) = VirtioNetHdrRepr::parse(&view) {
                d.vnet = Some((h, &area[layout.header_len()..]));
                d.tunnel = layout == VnetHdrLayout::HashTunnel;
            }
        }
    }
    d
}

/// `Ok(n)` as n, an error by its name.
pub(crate) fn result_into<T: itoa::Integer>(out: &mut String, r: Result<T, crate::errno::Errno>) {
    match r {
        Ok(n) => text::dec(out, n),
        Err(e) => out.push_str(e.name()),
    }
}

/// The block of one read. The lines every read has are written by hand (see
/// crate::text): a traced replay renders one per frame.
pub(crate) fn render_read(out: &mut String, label: &str, r: &ReadRecord, dev: &TunConfig) {
    // "{label} {read} (frame {f}, ts {t}): buffer {len} -> {result}"
    out.push_str(label);
    out.push(' ');
    text::dec(out, r.read);
    if let Some((f, t)) = r.frame {
        out.push_str(" (frame ");
        text::dec(out, f);
        out.push_str(", ts ");
        text::ts(out, t);
        out.push(')');
    }
    out.push_str(": buffer ");
    text::dec(out, r.buffer_len);
    out.push_str(" -> ");
    result_into(out, r.result);
    out.push('\n');
    if let Some(k) = r.model.as_ref().and_then(|m| m.skb.as_ref()) {
        out.push_str("  skb: ");
        skb_line_into(out, k);
        out.push('\n');
    }
    if r.model.as_ref().is_some_and(|m| m.xdp_frame) {
        let what = if dev.no_pi {
            "an xdp_frame, read by tun_put_user_xdp (zero vnet area, no offload metadata)"
        } else {
            "an xdp_frame, read by tun_put_user_xdp: no PI is written, so a PI reader takes the frame's first 4 bytes for one"
        };
        let _ = writeln!(out, "  note: {what}");
    }
    let d = decode(r, dev);
    if let Some((flags, proto)) = d.pi {
        let strip = if flags & crate::tun::TUN_PKT_STRIP != 0 {
            " (TUN_PKT_STRIP)"
        } else {
            ""
        };
        // "  pi: flags {flags:#06x}{strip} proto {proto:#06x}"
        out.push_str("  pi: flags ");
        text::hex0x(out, u64::from(flags), 4);
        out.push_str(strip);
        out.push_str(" proto ");
        text::hex0x(out, u64::from(proto), 4);
        out.push('\n');
    }
    if let Some((h, pad)) = &d.vnet {
        out.push_str("  vnet: ");
        vnet_fields_into(out, h);
        out.push('\n');
        if d.tunnel {
            let _ = writeln!(
                out,
                "  vnet_tunnel: num_buffers {} hash_value {} hash_report {} outer_th_offset {} inner_nh_offset {}",
                h.num_buffers, h.hash_value, h.hash_report, h.outer_th_offset, h.inner_nh_offset
            );
        }
        if !pad.is_empty() {
            let zero = pad.iter().all(|b| *b == 0);
            out.push_str("  vnet_pad: ");
            text::dec(out, pad.len());
            out.push_str(if zero {
                " bytes zero\n"
            } else {
                " bytes not zeroed\n"
            });
        }
    }
    if let Some(m) = &r.model {
        if m.skb.is_some() {
            match m.put_user_ret {
                Some(ret) => {
                    out.push_str("  put_user: ");
                    text::dec(out, ret);
                    out.push_str("\n  frame: ");
                    text::dec(out, m.frame_copied);
                    out.push_str(" of ");
                    text::dec(out, m.frame_len);
                    out.push_str(" bytes\n");
                }
                None => {
                    let e = r.result.err().map_or("EINVAL", |e| e.name());
                    let _ = writeln!(out, "  put_user: {e}, skb freed, no counter moves");
                }
            }
        } else if r.buffer_len == 0 {
            let _ = writeln!(out, "  note: read(0) returns 0 and leaves the frame queued");
        }
    }
    if r.result.is_ok_and(|n| n > 0) {
        out.push_str("  summary: ");
        describe_into(out, r.frame_bytes(dev));
        out.push('\n');
    }
    if let Some(m) = &r.model {
        if m.skb.is_some() {
            out.push_str("  ops: ");
            m.ops.text_into(out);
            out.push('\n');
        }
    }
    out.push_str("  counters: ");
    counters_into(out, &r.stats);
    out.push('\n');
    if !r.data.is_empty() {
        out.push_str("  bytes:\n");
        hexdump(out, &r.data);
    }
}

/// The skb metadata of a read, for a pcapng packet comment: what the trace's `skb:`,
/// `pi:` and `vnet:` lines say (the skb only where the model knows it).
pub fn read_comment(r: &ReadRecord, dev: &TunConfig) -> String {
    let mut c = String::new();
    if let Some(k) = r.model.as_ref().and_then(|m| m.skb.as_ref()) {
        let _ = write!(c, "skb: {}", skb_line(k));
    }
    let d = decode(r, dev);
    if let Some((flags, proto)) = d.pi {
        let sep = if c.is_empty() { "" } else { "; " };
        let _ = write!(c, "{sep}pi: flags {flags:#06x} proto {proto:#06x}");
    }
    if let Some((h, _)) = &d.vnet {
        if !c.is_empty() {
            c.push_str("; ");
        }
        c.push_str("vnet: ");
        vnet_fields_into(&mut c, h);
    }
    c
}

/// "flags {} gso_type {} hdr_len {} gso_size {} csum_start {} csum_offset {}".
fn vnet_fields_into(out: &mut String, h: &VirtioNetHdrRepr) {
    out.push_str("flags ");
    // The common header (no flags, no GSO) without the names' allocations.
    if h.flags == 0 {
        out.push_str("none");
    } else {
        out.push_str(&flags_names(h.flags));
    }
    out.push_str(" gso_type ");
    if h.gso_type == crate::wire::virtio_net_hdr::VIRTIO_NET_HDR_GSO_NONE {
        out.push_str("NONE");
    } else {
        out.push_str(&gso_type_name(h.gso_type));
    }
    for (name, n) in [
        (" hdr_len ", h.hdr_len),
        (" gso_size ", h.gso_size),
        (" csum_start ", h.csum_start),
        (" csum_offset ", h.csum_offset),
    ] {
        out.push_str(name);
        text::dec(out, n);
    }
}

/// Trace fields only the model knows; a comparison with the real kernel skips them.
pub const MODEL_ONLY_FIELDS: [&str; 7] =
    ["backend", "skb", "put_user", "frame", "ops", "note", "why"];

/// The header lines of a tun-read trace.
pub fn tun_read_header(out: &mut String, header: &TraceHeader) {
    let _ = writeln!(out, "scenario: {}", header.scenario);
    let _ = writeln!(out, "description: {}", header.description);
    let _ = writeln!(out, "backend: {}", header.backend);
    let _ = writeln!(out, "profile: {}", header.profile);
    let _ = writeln!(out, "device: {}", header.device);
    let _ = writeln!(out, "reader: {}", header.reader);
    let _ = writeln!(out, "input: {}", header.input);
    if let Some(a) = &header.attach {
        let _ = writeln!(out, "attach: {a}");
    }
}

/// Reads and drops seen so far (the totals line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TunReadCounts {
    pub reads: u64,
    pub drops: u64,
    /// Frames the bridge did not deliver.
    pub bridge_drops: u64,
}

/// One event's block, preceded by its blank separator line.
pub fn tun_read_event(out: &mut String, device: &TunConfig, e: &Event, n: &mut TunReadCounts) {
    out.push('\n');
    match e {
        Event::XmitDropped {
            frame,
            ts_ns,
            stats,
        } => {
            n.drops += 1;
            let _ = writeln!(
                out,
                "xmit-drop (frame {frame}, ts {}): tx_ring full",
                ts(*ts_ns)
            );
            let _ = writeln!(out, "  counters: {}", counters(stats));
        }
        Event::Read(r) => {
            n.reads += 1;
            render_read(out, "read", r, device);
        }
        Event::BridgeDropped {
            frame,
            ts_ns,
            reason,
            stats,
        } => {
            n.bridge_drops += 1;
            let _ = writeln!(
                out,
                "bridge-drop (frame {frame}, ts {}): not delivered",
                ts(*ts_ns)
            );
            if let Some(why) = reason {
                let _ = writeln!(out, "  why: {why}");
            }
            let _ = writeln!(out, "  counters: {}", counters(stats));
        }
    }
}

/// The totals block.
pub fn tun_read_totals(
    out: &mut String,
    n: &TunReadCounts,
    stats: &TunStats,
    ops: Option<&OpCounters>,
) {
    out.push('\n');
    let _ = write!(out, "totals: reads {} xmit_drops {}", n.reads, n.drops);
    if n.bridge_drops > 0 {
        let _ = write!(out, " bridge_drops {}", n.bridge_drops);
    }
    out.push('\n');
    let _ = writeln!(out, "  counters: {}", counters(stats));
    if let Some(ops) = ops {
        let _ = writeln!(out, "  ops: {ops}");
    }
}

pub fn stats_json(s: &TunStats) -> Value {
    json!({
        "tx_packets": s.tx_packets, "tx_bytes": s.tx_bytes, "tx_dropped": s.tx_dropped,
        "rx_packets": s.rx_packets, "rx_bytes": s.rx_bytes, "rx_dropped": s.rx_dropped,
    })
}

/// The JSON of one tun-read event.
pub fn tun_read_event_json(device: &TunConfig, e: &Event) -> Value {
    match e {
        Event::XmitDropped {
            frame,
            ts_ns,
            stats,
        } => {
            json!({"event": "xmit-drop", "frame": frame, "ts_ns": ts_ns, "counters": stats_json(stats)})
        }
        Event::BridgeDropped {
            frame,
            ts_ns,
            reason,
            stats,
        } => {
            json!({"event": "bridge-drop", "frame": frame, "ts_ns": ts_ns,
                "model": reason.as_ref().map(|r| json!({"why": r.to_string()})),
                "counters": stats_json(stats)})
        }
        Event::Read(r) => {
            let d = decode(r, device);
            let m = r.model.as_ref();
            json!({
                "event": "read",
                "read": r.read,
                "frame": r.frame.map(|f| f.0),
                "ts_ns": r.frame.map(|f| f.1),
                "buffer": r.buffer_len,
                "result": match r.result { Ok(n) => json!(n), Err(e) => json!(e.name()) },
                "pi": d.pi.map(|(f, p)| json!({"flags": f, "proto": p})),
                "vnet": d.vnet.as_ref().map(|(h, pad)| json!({
                    "flags": h.flags, "gso_type": h.gso_type, "hdr_len": h.hdr_len,
                    "gso_size": h.gso_size, "csum_start": h.csum_start,
                    "csum_offset": h.csum_offset, "pad": pad.len(),
                })),
                "model": m.map(|m| json!({
                    "skb": m.skb.as_ref().map(skb_line),
                    "put_user": m.put_user_ret,
                    "frame_len": m.frame_len,
                    "frame_copied": m.frame_copied,
                })),
                "counters": stats_json(&r.stats),
                "bytes": hex_string(&r.data),
            })
        }
    }
}

/// The header of a trace for machines (the first JSON line of a streamed trace).
pub fn header_json(header: &TraceHeader) -> Value {
    let mut v = json!({
        "scenario": header.scenario,
        "backend": header.backend,
        "profile": header.profile,
        "device": header.device,
        "reader": header.reader,
        "input": header.input,
    });
    if let Some(a) = &header.attach {
        v["attach"] = json!(a);
    }
    v
}
