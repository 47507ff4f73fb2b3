//! How the receive path names a frame's protocol: net/ethernet/eth.c: eth_type_trans,
//! and the same rule after a VLAN tag (include/linux/if_vlan.h: vlan_set_encap_proto,
//! called by skb_vlan_untag). One definition for every pipeline: the tap write path, the
//! skbs of the tun read path (which crossed a writer tap's eth_type_trans in the real
//! arm) and tap-gro.
//!
//! The type/length field is an EtherType from ETH_P_802_3_MIN up (eth_proto_is_802_3).
//! Below it the field is an 802.3 length and the protocol comes from the first two
//! payload bytes: 0xffff is Novell's raw 802.3 (IPX without an LLC header, never a valid
//! DSAP/SSAP pair), so ETH_P_802_3; anything else is an 802.2 LLC frame, ETH_P_802_2.

use crate::consts::ETH_HLEN;
use crate::consts::{ETH_P_802_2, ETH_P_802_3, ETH_P_802_3_MIN};
use crate::skb::SkBuff;
use crate::wire::ethernet;

/// eth_proto_is_802_3 (include/linux/etherdevice.h): the field is an EtherType, not an
/// 802.3 length.
pub fn eth_proto_is_802_3(proto: u16) -> bool {
    proto >= ETH_P_802_3_MIN
}

/// skb->protocol for a type/length field `proto` whose payload starts with `sap` (the
/// two bytes after the field, None when the frame ends first). eth_type_trans reads
/// them with skb_header_pointer, so a frame that ends at the field is 802.2;
/// vlan_set_encap_proto reads them after the tag.
pub fn encap_proto(proto: u16, sap: Option<[u8; 2]>) -> u16 {
    if eth_proto_is_802_3(proto) {
        proto
    } else if sap == Some([0xff, 0xff]) {
        ETH_P_802_3
    } else {
        ETH_P_802_2
    }
}

/// eth_type_trans's protocol for a frame, from its MAC header on (a frame shorter than
/// the header has a zero type field: the write paths reject those first).
pub fn type_trans(frame: &[u8]) -> u16 {
    let Ok(eth) = ethernet::Packet::new_checked(frame) else {
        return encap_proto(0, None);
    };
    let sap = eth.payload().get(..2).map(|b| [b[0], b[1]]);
    encap_proto(eth.ethertype(), sap)
}

/// eth_type_trans on an skb whose data is at the MAC header: skb_reset_mac_header and
/// skb->protocol. (The model keeps data at the MAC header; the kernel also pulls it.)
/// The header and the two bytes after it may be paged: they are copied out first, as
/// skb_header_pointer does, and read through the Ethernet view.
pub fn eth_type_trans(skb: &mut SkBuff) {
    skb.reset_mac_header();
    let mut hdr = [0u8; ETH_HLEN + 2];
    let mut n = 0;
    while let (Some(slot), Some(b)) = (hdr.get_mut(n), skb.byte(n)) {
        *slot = b;
        n += 1;
    }
    skb.protocol = type_trans(&hdr[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::frame_meta::{build_skb, SkbRecipe};

    fn frame(ty: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ty.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn ethertypes_lengths_llc_and_raw_802_3() {
        // An EtherType is taken as is, from 0x0600 up (0x05ff is the largest length).
        assert_eq!(type_trans(&frame(0x0800, &[0x45])), 0x0800);
        assert_eq!(type_trans(&frame(0x0600, &[0xff, 0xff])), 0x0600);
        // STP BPDU: length 38, DSAP/SSAP 0x42: 802.2.
        assert_eq!(type_trans(&frame(38, &[0x42, 0x42, 0x03])), ETH_P_802_2);
        assert_eq!(type_trans(&frame(0x05ff, &[0xff, 0xfe])), ETH_P_802_2);
        // Novell raw 802.3: the IPX checksum field 0xffff where the SAPs would be.
        assert_eq!(type_trans(&frame(30, &[0xff, 0xff, 0, 30])), ETH_P_802_3);
        // Nothing after the field: skb_header_pointer fails, 802.2.
        assert_eq!(type_trans(&frame(0, &[])), ETH_P_802_2);
        assert_eq!(type_trans(&frame(0, &[0xff])), ETH_P_802_2);
    }

    #[test]
    fn the_skb_form_agrees_with_the_frame_form_and_reads_paged_bytes() {
        for (ty, payload) in [
            (0x86dd, &[0x60][..]),
            (46, &[0xaa, 0xaa, 0x03]),
            (46, &[0xff, 0xff]),
        ] {
            let f = frame(ty, payload);
            // Linear part ends right after the type field: the SAP bytes are paged.
            let mut skb = SkBuff::from_frame(&f, 64, ETH_HLEN);
            eth_type_trans(&mut skb);
            assert_eq!(skb.protocol, type_trans(&f), "type 0x{ty:04x}");
        }
    }

    #[test]
    fn tun_read_skbs_get_the_protocol_a_writer_tap_gave_them() {
        // pipeline/frame_meta.rs: the real arm bridges frames in from a writer tap, whose
        // eth_type_trans set skb->protocol (so pi.proto). Length 38, LLC SAPs 0x42:
        // ETH_P_802_2, not the length, behind a hw-accelerated tag too.
        let mut llc = vec![
            2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x00, 0x26, 0x42, 0x42, 0x03,
        ];
        llc.resize(60, 0);
        let mut tagged = llc[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        tagged.extend_from_slice(&llc[12..56]);
        let hwaccel = SkbRecipe {
            vlan_hwaccel: true,
            ..SkbRecipe::default()
        };
        let mut skb = SkBuff::default();
        for (f, recipe) in [(&llc, SkbRecipe::default()), (&tagged, hwaccel)] {
            build_skb(&mut skb, f, &recipe, false).unwrap();
            assert_eq!(skb.protocol, ETH_P_802_2);
        }
        assert!(skb.vlan.is_some());
        // Novell raw 802.3 (0xffff after the length): ETH_P_802_3.
        llc[14..16].copy_from_slice(&[0xff, 0xff]);
        build_skb(&mut skb, &llc, &SkbRecipe::default(), false).unwrap();
        assert_eq!(skb.protocol, ETH_P_802_3);
    }
}
