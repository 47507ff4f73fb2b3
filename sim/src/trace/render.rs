//! Rendering the tun-read trace as text and JSON.

use std::fmt::Write as _;

use super::record::{Field, Part, Record, Value, HEADER};
use super::scratch::Scratch;
use crate::scenario::Scenario;
use crate::text;
use crate::tun::{DeviceKind, TunConfig, TunStats, VnetEndian};

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
    /// The header as a record: `backend` names the arm (never compared between arms),
    /// the rest is the scenario's; `attach` where tun-read frames reach the tap another
    /// way than the default.
    pub fn record(&self) -> Record<'_> {
        let mut rec = self.record_with(Vec::new());
        if let Some(a) = &self.attach {
            rec.push(Field::both("attach", Value::text(a.as_str())));
        }
        rec
    }

    /// The header with `after_device` (tap-write's `redirect` and `xdp`) after the
    /// device, and no `attach`.
    pub fn record_with<'h>(&'h self, after_device: Vec<Field<'h>>) -> Record<'h> {
        let mut rec = Record::new(HEADER);
        fn t(s: &str) -> Value<'_> {
            Value::text(s)
        }
        rec.push(Field::both("scenario", t(&self.scenario)));
        rec.push(Field::both("description", t(&self.description)));
        rec.push(Field::label("backend", t(&self.backend)));
        rec.push(Field::both("profile", t(&self.profile)));
        rec.push(Field::both("device", t(&self.device)));
        rec.fields.extend(after_device);
        rec.push(Field::both("reader", t(&self.reader)));
        rec.push(Field::both("input", t(&self.input)));
        rec
    }

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

/// The device counters as a trace value: what /sys/class/net/<dev>/statistics shows
/// (drivers/net/tun.c: tun_get_stats64, dev_get_tstats64).
pub fn counters_value(s: &TunStats) -> Value<'static> {
    counters_value_in(s, &mut Scratch::default())
}

/// [`counters_value`] in a vector from `scratch`.
pub fn counters_value_in(s: &TunStats, scratch: &mut Scratch) -> Value<'static> {
    scratch.parts_of(
        [
            ("tx_packets", s.tx_packets),
            ("tx_bytes", s.tx_bytes),
            ("tx_dropped", s.tx_dropped),
            ("rx_packets", s.rx_packets),
            ("rx_bytes", s.rx_bytes),
            ("rx_dropped", s.rx_dropped),
        ]
        .into_iter()
        .map(|(name, n)| Part::named(name, Value::Int(n))),
    )
}

/// Bytes dumped in full; longer reads show their head and tail (the output pcap keeps
/// every byte and is compared byte for byte).
const HEXDUMP_FULL: usize = 256;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of `data`, two digits a byte (the JSON traces' `bytes`). Hand-written:
/// `format!` per byte costs more than the rest of a trace line.
pub fn hex_string(data: &[u8]) -> String {
    let mut v = Vec::with_capacity(data.len() * 2);
    hex_into(&mut v, data);
    // Every byte is an ASCII hex digit.
    String::from_utf8(v).unwrap_or_default()
}

/// [`hex_string`] appended to a byte buffer (the JSON writer's).
pub fn hex_into(out: &mut Vec<u8>, data: &[u8]) {
    // Grown once and filled in place: a push per byte checked the capacity each time
    // (a fifth of a `--json` replay's instructions).
    let start = out.len();
    out.resize(start + data.len() * 2, 0);
    for (d, b) in out[start..].chunks_exact_mut(2).zip(data) {
        d.copy_from_slice(&HEX_PAIRS[usize::from(*b)]);
    }
}

/// The longest hexdump line: 4 spaces, up to 16 offset digits, ':', 16 x " xx", '\n'.
const HEX_LINE_MAX: usize = 4 + 16 + 1 + 16 * 3 + 1;

/// Every byte's two hex digits, looked up once per byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
    let mut t = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = [HEX[b >> 4], HEX[b & 0xf]];
        b += 1;
    }
    t
};

/// One hexdump line, `    0010: 45 00 ...` (the offset in at least four digits, as
/// `{:04x}` would print it), at the start of `line`, which holds spaces: only the digits,
/// the ':' and the '\n' are written. Returns its length.
fn hex_line(line: &mut [u8], off: usize, chunk: &[u8]) -> usize {
    let digits = (usize::BITS - off.leading_zeros()).div_ceil(4).max(4) as usize;
    let mut n = 4;
    for k in (0..digits).rev() {
        line[n] = HEX[(off >> (4 * k)) & 0xf];
        n += 1;
    }
    line[n] = b':';
    n += 1;
    let chunk = &chunk[..chunk.len().min(16)];
    let end = n + 3 * chunk.len();
    for (d, b) in line[n..end].chunks_exact_mut(3).zip(chunk) {
        d[1..].copy_from_slice(&HEX_PAIRS[usize::from(*b)]);
    }
    line[end] = b'\n';
    end + 1
}

/// The lines of `data` (at most [`HEXDUMP_FULL`] bytes), its first byte at offset
/// `base`: written in place in one buffer of spaces and appended at once (one UTF-8
/// check, one copy).
fn hex_lines(out: &mut String, base: usize, data: &[u8]) {
    let mut buf = [b' '; HEX_LINE_MAX * HEXDUMP_FULL / 16];
    let mut n = 0;
    for (i, chunk) in data.chunks(16).take(HEXDUMP_FULL / 16).enumerate() {
        n += hex_line(&mut buf[n..], base + i * 16, chunk);
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
