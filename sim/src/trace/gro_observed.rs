//! The tap-gro trace of a real-kernel run: skbs as an AF_PACKET socket with
//! `PACKET_VNET_HDR` saw them on the tap (and on a vxlan or gretap device), with no model
//! information. Each [`ObservedSkb`] becomes the delivery event both arms give
//! ([`ObservedSkb::delivery`]) and the same record as the model's
//! ([`super::gro_delivery::delivery_record`], without the model's fields), so the two are
//! compared field by field on what both see.
//!
//! What the kernel shows, per delivered skb: its bytes and length (AF_PACKET), and the
//! `virtio_net_hdr` that `virtio_net_hdr_from_skb` builds from it: `gso_type` (only
//! TCPV4, TCPV6 or UDP_L4, plus the ECN bit: tunnel, FIXEDID and ACCECN bits are not
//! expressible), `gso_size`, `hdr_len` (= skb_headlen), and for CHECKSUM_PARTIAL the
//! csum start and offset (DATA_VALID for CHECKSUM_UNNECESSARY). `gso_segs` is not in the
//! header: it is derived from the length, the headers and `gso_size` (exact for a GRO
//! skb: every merged segment but the last carries exactly gso_size bytes).

use std::fmt::Write as _;

use std::borrow::Cow;

use super::gro_delivery::{delivery_record, Csum, Delivery, Gso, GsoType};
use super::record::{Field, Record, Value, HEADER};

use crate::scenario::Scenario;
use crate::wire::virtio_net_hdr::{
    VirtioNetHdrRepr, VIRTIO_NET_HDR_GSO_ECN, VIRTIO_NET_HDR_GSO_NONE, VIRTIO_NET_HDR_GSO_TCPV4,
    VIRTIO_NET_HDR_GSO_TCPV6, VIRTIO_NET_HDR_GSO_UDP, VIRTIO_NET_HDR_GSO_UDP_L4,
};
use crate::wire::walk::{innermost_tcp, plain_udp};
use crate::wire::{tcp, udp, TcpPacket};

/// The gso type of the `virtio_net_hdr` AF_PACKET returned, in the simulator's names
/// ("TCPV4", "TCPV4|TCP_ECN"), "none".
pub fn gso_names(v: &VirtioNetHdrRepr) -> String {
    let base = match v.gso_type & !VIRTIO_NET_HDR_GSO_ECN {
        VIRTIO_NET_HDR_GSO_NONE => return "none".into(),
        VIRTIO_NET_HDR_GSO_TCPV4 => "TCPV4".to_string(),
        VIRTIO_NET_HDR_GSO_UDP => "UDP".to_string(),
        VIRTIO_NET_HDR_GSO_TCPV6 => "TCPV6".to_string(),
        VIRTIO_NET_HDR_GSO_UDP_L4 => "UDP_L4".to_string(),
        other => format!("{other:#04x}"),
    };
    if v.gso_type & VIRTIO_NET_HDR_GSO_ECN != 0 {
        format!("{base}|TCP_ECN")
    } else {
        base
    }
}

/// One skb the stack saw, as a packet socket read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObservedSkb {
    /// The frame (Ethernet header first).
    pub bytes: Vec<u8>,
    /// The virtio-net header (the basic 10 bytes, little endian as AF_PACKET writes it on
    /// x86); `None` when the read failed (see `error`).
    pub vnet: Option<VirtioNetHdrRepr>,
    /// Why the skb could not be read (`recvmsg` failed after the socket had it queued).
    pub error: Option<String>,
    /// The length of the matching decapsulated frame on the vxlan device, for a GSO skb
    /// of a VXLAN flow.
    pub vxlan_dev_len: Option<usize>,
    /// The length of the matching decapsulated frame on the gretap device, for a GSO skb
    /// of a GRE-TEB flow.
    pub gretap_dev_len: Option<usize>,
}

/// A `write()` the tap refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedWriteError {
    pub frame: u64,
    pub ts_ns: u64,
    pub len: usize,
    /// The errno's name ("EINVAL").
    pub errno: String,
}

/// The configuration the real arm applied (and read back where the kernel tells it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedSetup {
    /// What `backend:` says (how the run was made).
    pub backend: String,
    pub feature: bool,
    pub teb_gro: bool,
    pub vlan_gro: bool,
    pub vxlan_ports: Vec<u16>,
    pub burst: usize,
    pub flush_timeout_ns: u64,
    pub hz: u32,
    pub weight: usize,
    /// Plain UDP GRO: ports with a UDP_GRO socket, rx-udp-gro-forwarding, rx-gro-list
    /// (the `udp_gro:` line, written only when one is set).
    pub udp_gro: UdpGroSetup,
    /// The tap's gro_max_size and gro_ipv4_max_size (read back by the real arm).
    pub gro_max_size: usize,
    pub gro_ipv4_max_size: usize,
}

/// The plain UDP GRO settings of a run (`[gro] udp_gro_socket`, `rx_udp_gro_forwarding`,
/// `rx_gro_list`), as set (sim) or read back from the device (real).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UdpGroSetup {
    pub sockets: Vec<u16>,
    pub forwarding: bool,
    pub gro_list: bool,
}

/// A whole real run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedGro {
    pub setup: ObservedSetup,
    pub write_errors: Vec<ObservedWriteError>,
    pub deliveries: Vec<ObservedSkb>,
    /// Writes the tap accepted.
    pub written: u64,
    /// The tap's counters at the end.
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// What each tunnel device's packet socket read (device description, skb), device by
    /// device; rendered when the scenario runs gro_cells (super::gro_cells).
    pub tunnel: Vec<(String, ObservedSkb)>,
}

/// gso_segs of a GRO skb: the TCP payload (after the innermost TCP header, through
/// VXLAN on `vxlan_ports`), or else the plain UDP payload, over gso_size, rounded up.
/// `None` when there is neither header to find.
pub fn derived_segs(bytes: &[u8], gso_size: u16, vxlan_ports: &[u16]) -> Option<usize> {
    if gso_size == 0 {
        return None;
    }
    let payload = match innermost_tcp(bytes, vxlan_ports) {
        Some(th) => {
            let tcph = TcpPacket::new_unchecked(bytes.get(th..th + tcp::HEADER_LEN)?);
            bytes.len().checked_sub(th + tcph.header_len())?
        }
        // Plain UDP GRO (SKB_GSO_UDP_L4): the payload after the UDP header.
        None => bytes
            .len()
            .checked_sub(plain_udp(bytes)? + udp::HEADER_LEN)?,
    };
    Some(payload.div_ceil(usize::from(gso_size)))
}

impl ObservedSkb {
    /// What it shows as a delivery event (flags 0 and no GSO when the read failed);
    /// `ports` are the VXLAN ports the segment count looks through.
    pub fn delivery(&self, ports: &[u16]) -> Delivery<'_> {
        let v = self.vnet.unwrap_or_default();
        let gso = (v.gso_type != 0).then(|| Gso {
            gso_type: GsoType::Vnet(v.gso_type),
            size: v.gso_size,
            segs: derived_segs(&self.bytes, v.gso_size, ports).map(|n| n as u64),
        });
        Delivery {
            bytes: Cow::Borrowed(&self.bytes),
            gso,
            csum: Csum::of_vnet(&v),
            hdr_len: v.hdr_len,
            vxlan_dev_len: self.vxlan_dev_len,
            gretap_dev_len: self.gretap_dev_len,
        }
    }
}

/// The header of a tap-gro trace, real or simulated; `device_note` qualifies the
/// device.
pub(crate) fn header_record(
    sc: &Scenario,
    o: &ObservedSetup,
    device_note: &str,
) -> Record<'static> {
    let on = |b: bool| if b { "on" } else { "off" };
    let ports: Vec<String> = o.vxlan_ports.iter().map(|x| x.to_string()).collect();
    let mut rec = Record::new(HEADER);
    let mut add = |name: &'static str, v: String| rec.push(Field::both(name, Value::text(v)));
    add("scenario", sc.name.clone());
    add("description", sc.description.clone());
    let d = &sc.device;
    let mut dev = String::from("tap IFF_NAPI");
    if d.napi_frags {
        dev.push_str(" IFF_NAPI_FRAGS");
    }
    dev.push_str(if d.no_pi { " no_pi" } else { " pi" });
    if d.vnet_hdr {
        let _ = write!(dev, " vnet_hdr {}", d.vnet_hdr_sz);
    }
    dev.push_str(device_note);
    let mut fields = vec![
        Field::label("backend", Value::text(o.backend.clone())),
        Field::both("profile", Value::Word(sc.profile.name)),
        Field::both("device", Value::text(dev)),
    ];
    if let Some(x) = &sc.xdp {
        let prog = format!("{} {}", x.label(), x.mode.name());
        fields.push(Field::both("xdp", Value::text(prog)));
    }
    let gro = format!(
        "{} teb {} vlan {} vxlan_ports [{}]",
        on(o.feature),
        on(o.teb_gro),
        on(o.vlan_gro),
        ports.join(", ")
    );
    fields.push(Field::both("gro", Value::text(gro)));
    let u = &o.udp_gro;
    if u != &UdpGroSetup::default() {
        let socks: Vec<String> = u.sockets.iter().map(|x| x.to_string()).collect();
        let v = format!(
            "sockets [{}] rx-udp-gro-forwarding {} rx-gro-list {}",
            socks.join(", "),
            on(u.forwarding),
            on(u.gro_list)
        );
        fields.push(Field::both("udp_gro", Value::text(v)));
    }
    let napi = format!(
        "burst {} gro_flush_timeout {} ns HZ {} weight {}",
        o.burst, o.flush_timeout_ns, o.hz, o.weight
    );
    fields.push(Field::both("napi", Value::text(napi)));
    // Only a setting other than GRO_LEGACY_MAX_SIZE is named (docs/gro.md#big-tcp).
    let legacy = crate::gro::GRO_LEGACY_MAX_SIZE;
    if o.gro_max_size != legacy || o.gro_ipv4_max_size != legacy {
        let v = format!(
            "{} gro_ipv4_max_size {}",
            o.gro_max_size, o.gro_ipv4_max_size
        );
        fields.push(Field::both("gro_max_size", Value::text(v)));
    }
    let write = format!(
        "{} {}",
        if sc.writer.nonblocking {
            "nonblocking"
        } else {
            "blocking"
        },
        if d.vnet_hdr {
            "virtio_net_hdr"
        } else {
            "CHECKSUM_NONE"
        }
    );
    fields.push(Field::both("write", Value::text(write)));
    let input = sc
        .input
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    fields.push(Field::both("input", Value::text(input)));
    rec.fields.extend(fields);
    rec
}

/// One delivery a packet socket read: the delivery record, or why the skb could not be
/// read.
pub(crate) fn skb_record(n: usize, s: &ObservedSkb, ports: &[u16]) -> Record<'static> {
    if s.vnet.is_none() {
        let mut rec = Record::new("deliver");
        rec.index = Some(n as u64);
        rec.result = Some(Value::Word("unreadable"));
        let why = s.error.as_deref().unwrap_or("no virtio-net header");
        rec.push(Field::both("error", Value::text(why.to_string())));
        return rec;
    }
    delivery_record("deliver", n, &s.delivery(ports), None)
}

/// The records of a real run, in the simulator's layout.
pub fn observed_records(sc: &Scenario, o: &ObservedGro) -> Vec<Record<'static>> {
    let mut header = header_record(sc, &o.setup, "");
    super::gro_cells::cells_field(&mut header, &sc.gro);
    let mut out = vec![header];
    for e in &o.write_errors {
        out.push(super::gro::write_error_record(
            e.frame, e.ts_ns, e.len, &e.errno,
        ));
    }
    let ports = &o.setup.vxlan_ports;
    if !super::gro_cells::tap_observed(&sc.gro) {
        out.push(super::gro_cells::unobserved_tap_totals(
            o.written,
            o.write_errors.len() as u64,
            o.rx_packets,
            o.rx_bytes,
        ));
        out.extend(super::gro_cells::cells_records_observed(&o.tunnel, ports));
        return out;
    }
    for (n, s) in o.deliveries.iter().enumerate() {
        out.push(skb_record(n, s, ports));
    }
    let lengths: Vec<usize> = o
        .deliveries
        .iter()
        .take(super::gro::TOTALS_LENGTHS_MAX)
        .map(|d| d.bytes.len())
        .collect();
    let bytes: usize = o.deliveries.iter().map(|d| d.bytes.len()).sum();
    let segs: usize = o.deliveries.iter().map(|d| d.delivery(ports).segs()).sum();
    out.push(super::gro::totals_record(&super::gro::TotalsHead {
        written: o.written,
        write_errors: o.write_errors.len() as u64,
        delivered: o.deliveries.len() as u64,
        rx_packets: o.rx_packets,
        rx_bytes: o.rx_bytes,
        stack: (o.deliveries.len() as u64, bytes as u64, segs as u64),
        lengths: &lengths,
    }));
    if sc.gro.cells() {
        out.extend(super::gro_cells::cells_records_observed(&o.tunnel, ports));
    }
    out
}

/// The part of a gso type name list (`TCPV4|UDP_TUNNEL`) a `virtio_net_hdr` can carry:
/// the first of TCPV4, TCPV6, UDP_L4 (virtio_net_hdr_from_skb's order), plus TCP_ECN.
pub fn virtio_gso_names(names: &str) -> String {
    let set: Vec<&str> = names.split('|').collect();
    let Some(base) = ["TCPV4", "TCPV6", "UDP_L4"]
        .into_iter()
        .find(|n| set.contains(n))
    else {
        return format!("{names} (no virtio_net_hdr gso type)");
    };
    if set.contains(&"TCP_ECN") {
        format!("{base}|TCP_ECN")
    } else {
        base.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtio_net_hdr_keeps_one_base_type_and_ecn() {
        assert_eq!(
            virtio_gso_names("TCPV4|TCP_FIXEDID|TCP_ECN"),
            "TCPV4|TCP_ECN"
        );
        assert_eq!(virtio_gso_names("TCPV4|TCP_ACCECN"), "TCPV4");
        assert!(virtio_gso_names("GRE").contains("no virtio_net_hdr"));
    }

    #[test]
    fn vnet_parses_little_endian_and_names_gso() {
        use crate::wire::{Endian, VnetHdrLayout};
        let v = VirtioNetHdrRepr::from_bytes(
            &[1, 0x81, 0xae, 5, 0x78, 5, 34, 0, 16, 0],
            VnetHdrLayout::Basic,
            Endian::Little,
        )
        .unwrap();
        assert_eq!(
            (v.hdr_len, v.gso_size, v.csum_start, v.csum_offset),
            (1454, 1400, 34, 16)
        );
        assert_eq!(gso_names(&v), "TCPV4|TCP_ECN");
        assert_eq!(gso_names(&VirtioNetHdrRepr::default()), "none");
    }

    #[test]
    fn segs_are_the_payload_over_gso_size_rounded_up() {
        let frames = crate::gro::frames::Tcp4::default().stream(1);
        let f = &frames[0];
        // 1454 bytes: 54 of headers, 1400 of payload.
        assert_eq!(derived_segs(f, 1400, &[4789]), Some(1));
        assert_eq!(derived_segs(f, 700, &[4789]), Some(2));
        assert_eq!(derived_segs(f, 699, &[4789]), Some(3));
        assert_eq!(derived_segs(f, 0, &[4789]), None);
    }
}
