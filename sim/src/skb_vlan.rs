//! The VLAN helpers of the skb: the hw-accel tag (include/linux/if_vlan.h:
//! __vlan_hwaccel_put_tag, __vlan_hwaccel_push_inside, vlan_insert_tag_set_proto), the
//! receive path's untag (net/core/skbuff.c: skb_vlan_untag) and the head reallocation
//! the insert may need (net/core/skbuff.c: pskb_expand_head). The tag is read and
//! written through the wire views (`EthernetPacket`, `VlanPacket`).

use super::{IpSummed, SkBuff, VlanTag};
use crate::consts::{ETH_ALEN, ETH_HLEN, NET_SKB_PAD, VLAN_HLEN};
use crate::wire::vlan::eth_type_vlan;
use crate::wire::{EthernetPacket, VlanPacket};

impl SkBuff {
    /// __vlan_hwaccel_put_tag (include/linux/if_vlan.h).
    pub fn vlan_hwaccel_put_tag(&mut self, proto: u16, tci: u16) {
        self.vlan = Some(VlanTag { proto, tci });
    }

    /// skb_vlan_untag (net/core/skbuff.c), the receive path's move of an in-band outer
    /// tag into the hw-accel fields: read the tag after the MACs, pull it out with a
    /// memmove of the 12 MAC bytes (skb_vlan_untag -> vlan_remove_tag ->
    /// skb_pull_rcsum + vlan_set_encap_proto + skb_reset_mac_header). Returns false
    /// (and leaves the skb alone) when the frame has no 802.1Q/802.1ad outer tag or is
    /// too short, as the kernel would.
    ///
    /// The receive path works on an skb whose data points past the MAC header; this
    /// model keeps data at the MAC header, so the net effect is the same 4 bytes gone
    /// from offset 12 and the protocol set to the encapsulated EtherType.
    pub fn vlan_untag(&mut self) -> bool {
        if self.vlan.is_some() || self.headlen() < ETH_HLEN + VLAN_HLEN {
            return false;
        }
        let d = self.data;
        // headlen covers the MAC header and the tag: both views are in bounds.
        let eth = EthernetPacket::new_unchecked(&self.buf[d..d + ETH_HLEN + VLAN_HLEN]);
        let tpid = eth.ethertype();
        if !eth_type_vlan(tpid) {
            return false;
        }
        let tag = VlanPacket::new_unchecked(eth.payload());
        let (tci, inner) = (tag.tci(), tag.ethertype());
        let sap = (|| Some([self.byte(18)?, self.byte(19)?]))();
        self.buf.copy_within(d..d + 2 * ETH_ALEN, d + VLAN_HLEN);
        self.ops.bytes_memmoved += (2 * ETH_ALEN) as u64;
        self.data += VLAN_HLEN;
        self.mac_header = Some(self.data);
        self.vlan = Some(VlanTag { proto: tpid, tci });
        // vlan_set_encap_proto: the eth_type_trans rule on the field after the tag.
        self.protocol = crate::ethernet::encap_proto(inner, sap);
        true
    }

    /// __vlan_hwaccel_push_inside -> vlan_insert_tag_set_proto (include/linux/if_vlan.h):
    /// the software insertion the 2013 patch avoided. skb_cow_head makes room when the
    /// headroom is short (a reallocation and copy), skb_push(VLAN_HLEN), the two MACs are
    /// memmoved 4 bytes to the front, the tag is written after them, skb->protocol becomes
    /// the TPID, and the hw-accel tag is cleared.
    pub fn vlan_hwaccel_push_inside(&mut self) {
        let Some(tag) = self.vlan.take() else {
            return;
        };
        if self.data < VLAN_HLEN {
            self.expand_head(NET_SKB_PAD);
        }
        self.data -= VLAN_HLEN;
        let d = self.data;
        self.buf
            .copy_within(d + VLAN_HLEN..d + VLAN_HLEN + 2 * ETH_ALEN, d);
        self.ops.bytes_memmoved += (2 * ETH_ALEN) as u64;
        // The TPID where the EtherType was, the TCI after it (the encapsulated
        // protocol is the EtherType the MACs' memmove left in place). The memmove
        // needed 16 bytes from d, all the two setters write.
        let end = (d + ETH_HLEN + VLAN_HLEN).min(self.buf.len());
        let mut eth = EthernetPacket::new_unchecked(&mut self.buf[d..end]);
        eth.set_ethertype(tag.proto);
        VlanPacket::new_unchecked(eth.payload_mut()).set_tci(tag.tci);
        if let Some(m) = self.mac_header.as_mut() {
            *m = m.saturating_sub(VLAN_HLEN);
        }
        self.protocol = tag.proto;
    }

    /// pskb_expand_head(skb, nhead, 0): a new head with `extra` more bytes of headroom;
    /// every header offset shifts with it.
    fn expand_head(&mut self, extra: usize) {
        let mut nbuf = vec![0u8; self.buf.len() + extra];
        nbuf[extra..].copy_from_slice(&self.buf);
        self.ops.allocations += 1;
        self.ops.bytes_copied_realloc += (self.tail - self.data) as u64;
        self.buf = nbuf;
        self.data += extra;
        self.tail += extra;
        for h in [
            &mut self.mac_header,
            &mut self.network_header,
            &mut self.transport_header,
            &mut self.inner_mac_header,
            &mut self.inner_network_header,
            &mut self.inner_transport_header,
        ]
        .into_iter()
        .flatten()
        {
            *h += extra;
        }
        if self.ip_summed == IpSummed::Partial {
            self.csum_start += extra;
        }
    }
}
