//! A tap-gro delivery: the one event both arms give for each skb the stack received, and
//! its one renderer (text and JSON).
//!
//! [`Delivery`] is what a packet socket with `PACKET_VNET_HDR` on the tap shows of an skb:
//! its bytes, the gso type, size and segment count, the checksum state as far as the
//! `virtio_net_hdr` flags tell it, `hdr_len`, and the lengths the vxlan or gretap device's
//! socket saw. The real arm reads it ([`super::gro_observed::ObservedSkb::delivery`]); the
//! model projects its skb onto it ([`project`]). [`delivery_record`] builds the record
//! from it; the model passes its [`Delivered`] along as the extras, whose fields (poll and
//! time, frames, start, rule, end, the exact ip_summed and csum_level, encap, layout) go
//! where the model's trace has them, marked model-only: a comparison leaves them out.

use std::borrow::Cow;

use super::record::{At, Field, Part, Record, Value};
use super::scratch::Scratch;
use crate::gro::napi::Delivered;
use crate::skb::{gso, IpSummed, SkBuff};
use crate::text;
use crate::wire::virtio_net_hdr::{
    VirtioNetHdrRepr, VIRTIO_NET_HDR_F_DATA_VALID, VIRTIO_NET_HDR_F_NEEDS_CSUM,
};

/// The gso type as the arm knows it: the model the skb's SKB_GSO_* bits, the real arm the
/// `virtio_net_hdr`'s VIRTIO_NET_HDR_GSO_* value (the model's `gso` field is compared as
/// the latter: [`super::gro_observed::virtio_gso_names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GsoType {
    Skb(u32),
    Vnet(u8),
}

/// The GSO part of a delivery (a GSO skb only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gso {
    pub gso_type: GsoType,
    pub size: u16,
    /// gso_segs, or for the real arm derived from the length (`None`: no TCP or UDP
    /// header to count from).
    pub segs: Option<u64>,
}

impl Gso {
    /// "TCPV4|UDP_TUNNEL", "TCPV4|TCP_ECN".
    pub fn names(&self) -> String {
        match self.gso_type {
            GsoType::Skb(bits) => gso::names(bits),
            GsoType::Vnet(t) => super::gro_observed::gso_names(&VirtioNetHdrRepr {
                gso_type: t,
                ..VirtioNetHdrRepr::default()
            }),
        }
    }
}

/// The checksum state as `virtio_net_hdr_from_skb` (has_data_valid) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Csum {
    /// CHECKSUM_PARTIAL: VIRTIO_NET_HDR_F_NEEDS_CSUM with the csum start and offset.
    Partial { start: usize, offset: u16 },
    /// CHECKSUM_UNNECESSARY: VIRTIO_NET_HDR_F_DATA_VALID.
    Unnecessary,
    /// CHECKSUM_NONE or CHECKSUM_COMPLETE: flags 0.
    NoneOrComplete,
}

impl Csum {
    /// From a `virtio_net_hdr`'s flags.
    pub fn of_vnet(v: &VirtioNetHdrRepr) -> Csum {
        if v.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 {
            Csum::Partial {
                start: usize::from(v.csum_start),
                offset: v.csum_offset,
            }
        } else if v.flags & VIRTIO_NET_HDR_F_DATA_VALID != 0 {
            Csum::Unnecessary
        } else {
            Csum::NoneOrComplete
        }
    }
}

/// One skb the stack received, as a packet socket on the tap shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery<'a> {
    /// The frame (Ethernet header first).
    pub bytes: Cow<'a, [u8]>,
    pub gso: Option<Gso>,
    pub csum: Csum,
    /// The vnet header's hdr_len (skb_headlen for a GSO skb, else 0).
    pub hdr_len: u16,
    /// The matching decapsulated frame's length on the vxlan device (a VXLAN GSO skb).
    pub vxlan_dev_len: Option<usize>,
    /// The same on the gretap device (a GRE-TEB GSO skb).
    pub gretap_dev_len: Option<usize>,
}

impl Delivery<'_> {
    /// The segments it stands for in the totals (1 for a non-GSO skb or an uncountable one).
    pub fn segs(&self) -> usize {
        self.gso
            .and_then(|g| g.segs)
            .map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// The model's skb as a packet socket on the tap would show it (`csum_start` unshifted:
/// the tap's skbs carry no accelerated VLAN tag).
pub fn project(s: &SkBuff) -> Delivery<'_> {
    Delivery {
        bytes: s.bytes(),
        gso: model_gso(s),
        csum: model_csum(s),
        hdr_len: if s.is_gso() { s.headlen() as u16 } else { 0 },
        vxlan_dev_len: super::gro::vxlan_dev_len(s),
        gretap_dev_len: super::gro::gretap_dev_len(s),
    }
}

/// The model's ip_summed as the vnet flags would show it.
pub fn model_csum(s: &SkBuff) -> Csum {
    match s.ip_summed {
        IpSummed::Partial => Csum::Partial {
            start: s.checksum_start_offset(),
            offset: s.csum_offset,
        },
        IpSummed::Unnecessary => Csum::Unnecessary,
        IpSummed::None | IpSummed::Complete => Csum::NoneOrComplete,
    }
}

/// The GSO part of the model's skb.
pub fn model_gso(s: &SkBuff) -> Option<Gso> {
    s.is_gso().then(|| Gso {
        gso_type: GsoType::Skb(s.gso_type),
        size: s.gso_size,
        segs: Some(super::gro::segs_of(s)),
    })
}

/// The checksum field's value (its key is `csum` for CHECKSUM_PARTIAL, else
/// `ip_summed`): "CHECKSUM_PARTIAL start 34 offset 16", or what the vnet flags say, or
/// the model's exact ip_summed and csum_level where `model` has them.
pub fn csum_value(out: &mut String, c: Csum, model: Option<&SkBuff>) {
    match (c, model) {
        (Csum::Partial { start, offset }, _) => {
            out.push_str("CHECKSUM_PARTIAL start ");
            text::dec(out, start);
            out.push_str(" offset ");
            text::dec(out, offset);
        }
        (_, Some(s)) => {
            out.push_str(s.ip_summed.kernel_name());
            out.push_str(" level ");
            text::dec(out, s.csum_level);
        }
        (Csum::Unnecessary, None) => out.push_str("CHECKSUM_UNNECESSARY (vnet DATA_VALID)"),
        (Csum::NoneOrComplete, None) => {
            out.push_str("CHECKSUM_NONE or CHECKSUM_COMPLETE (vnet flags 0)")
        }
    }
}

/// "TCPV4 size 1400 segs 10", "none".
pub fn gso_text(g: Option<&Gso>) -> String {
    let Some(g) = g else {
        return "none".into();
    };
    let segs = g.segs.map_or_else(|| "?".to_string(), |n| n.to_string());
    format!("{} size {} segs {segs}", g.names(), g.size)
}

/// One delivery's record (`kind` `deliver` or `tunnel`): the fields of `d` both arms
/// see, and where the model has them (`model`), the fields only it knows, where its trace
/// has them; a real arm's own view of the layout and the checksum state is its own
/// ([`Seen::ArmOnly`](super::record::Seen::ArmOnly)).
pub fn delivery_record(
    kind: &'static str,
    n: usize,
    d: &Delivery<'_>,
    model: Option<&Delivered>,
) -> Record<'static> {
    delivery_record_in(kind, n, d, model, &mut Scratch::default())
}

/// [`delivery_record`] in buffers from `s`.
pub fn delivery_record_in(
    kind: &'static str,
    n: usize,
    d: &Delivery<'_>,
    model: Option<&Delivered>,
    s: &mut Scratch,
) -> Record<'static> {
    let mut rec = s.record(kind);
    rec.index = Some(n as u64);
    rec.at = model.map(|m| At::Poll(m.poll, m.ts_ns));
    rec.result = Some(s.parts_of([Part::named("len", Value::Int(d.bytes.len() as u64))]));
    if let Some(m) = model {
        super::gro::model_head_fields(&mut rec, m);
    }
    let gso = Field::both("gso", Value::text(gso_text(d.gso.as_ref()))).meta();
    rec.push(match &d.gso {
        // A virtio_net_hdr carries only some gso types (super::gro_observed::virtio_gso_names).
        Some(g) => {
            let segs = g.segs.map_or_else(|| "?".to_string(), |n| n.to_string());
            let seen = super::gro_observed::virtio_gso_names(&g.names());
            gso.compared_as(Value::text(format!("{seen} size {} segs {segs}", g.size)))
        }
        None => gso,
    });
    let mut csum = s.string();
    csum_value(&mut csum, d.csum, model.map(|m| &*m.skb));
    rec.push(
        match (d.csum, model) {
            (Csum::Partial { .. }, _) => Field::both("csum", Value::text(csum)),
            (_, Some(_)) => Field::model("ip_summed", Value::text(csum)),
            (_, None) => Field::arm("ip_summed", Value::text(csum)),
        }
        .meta(),
    );
    if let Some(m) = model {
        rec.push(Field::model(
            "encap",
            Value::text(super::gro::encap_text(&m.skb)),
        ));
    }
    let mut len = |v: usize| s.parts_of([Part::named("len", Value::Int(v as u64))]);
    if let Some(v) = d.vxlan_dev_len {
        rec.push(Field::both("vxlan_dev", len(v)));
    }
    if let Some(v) = d.gretap_dev_len {
        rec.push(Field::both("gretap_dev", len(v)));
    }
    if let Some(m) = model {
        let mut l = s.string();
        super::gro::layout_into(&mut l, &m.skb);
        rec.push(Field::model("layout", Value::text(l)));
    } else if d.gso.is_some() {
        let l = format!("head {} (vnet hdr_len)", d.hdr_len);
        rec.push(Field::arm("layout", Value::text(l)));
    }
    let mut summary = s.string();
    crate::wire::summary::describe_into(&mut summary, &d.bytes);
    rec.push(Field::both("summary", Value::text(summary)));
    rec.push(Field::both(
        "bytes",
        Value::Bytes(Cow::Owned(d.bytes.clone().into_owned())),
    ));
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_arm_block_shows_the_vnet_view_only() {
        let frame = crate::gro::frames::Tcp4::default().stream(1).remove(0);
        let d = Delivery {
            bytes: Cow::Owned(frame),
            gso: Some(Gso {
                gso_type: GsoType::Vnet(1),
                size: 700,
                segs: Some(2),
            }),
            csum: Csum::Partial {
                start: 34,
                offset: 16,
            },
            hdr_len: 1454,
            vxlan_dev_len: None,
            gretap_dev_len: None,
        };
        let mut t = String::new();
        delivery_record("deliver", 3, &d, None).write_block(&mut t);
        let head: Vec<&str> = t.lines().take(4).collect();
        assert_eq!(
            head,
            [
                "deliver 3: len 1454",
                "  gso: TCPV4 size 700 segs 2",
                "  csum: CHECKSUM_PARTIAL start 34 offset 16",
                "  layout: head 1454 (vnet hdr_len)",
            ]
        );
        let d = Delivery {
            gso: None,
            csum: Csum::Unnecessary,
            ..d
        };
        let mut t = String::new();
        let rec = delivery_record("deliver", 0, &d, None);
        rec.write_block(&mut t);
        assert!(t.contains(
            "\n  gso: none\n  ip_summed: CHECKSUM_UNNECESSARY (vnet DATA_VALID)\n  summary: "
        ));
        // The real arm's own view of the checksum state: shown, not compared.
        let f = rec.fields.iter().find(|f| f.name == "ip_summed").unwrap();
        assert_eq!(f.seen, crate::trace::record::Seen::ArmOnly);
    }
}
