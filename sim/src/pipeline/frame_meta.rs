//! How an input frame becomes the skb that reaches the device under test: the metadata
//! the receive and transmit paths attach before tun_net_xmit (skb_vlan_untag,
//! eth_type_trans, CHECKSUM_PARTIAL from a TSO/CSUM sender, GSO fields).

use crate::consts::ETH_HLEN;
use crate::consts::{ETH_P_IP, ETH_P_IPV6, IPPROTO_TCP, IPPROTO_UDP, VLAN_HLEN};
use crate::skb::{gso, IpSummed, SkBuff};
use crate::wire::vlan::eth_type_vlan;
use crate::wire::walk::{self, Ipv4Rule, Rule, TpidRule, Tunnels};

/// Where the headers of a frame are, from the start of the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// EtherType after any in-band tags.
    pub l3_proto: u16,
    pub l3_offset: usize,
    /// IP protocol, if the frame is IPv4/IPv6 and the header is complete.
    pub l4_proto: Option<u8>,
    pub l4_offset: usize,
    /// TCP data offset * 4 or 8 for UDP, when the L4 header is complete.
    pub l4_hlen: Option<usize>,
}

impl Layout {
    /// All header bytes up to the L4 payload, when known.
    pub fn headers_len(&self) -> Option<usize> {
        self.l4_hlen.map(|h| self.l4_offset + h)
    }
}

/// The walk of [`layout`]: the sender's side. The offsets become the virtio-net header
/// the real arm's writer hands to virtio_net_hdr_to_skb, which takes csum_start as
/// given, so the tags are what capture tools decode ([`TpidRule::Capture`], 0x9100
/// included: behaviour kept from before the walker); IPv4 as ip_rcv_core checks it;
/// IPv6 extension headers are not walked.
const LAYOUT_RULE: Rule<'static> = Rule {
    tpid: TpidRule::Capture,
    max_tags: usize::MAX,
    ipv4: Ipv4Rule::Checked,
    ipv6_ext: None,
    tunnels: Tunnels {
        vxlan_ports: &[],
        gre_teb: false,
        ip_in_ip: false,
    },
};

/// Walk the Ethernet header, in-band tags, IPv4 (IHL) or IPv6 (fixed header; extension
/// headers are not walked) and TCP/UDP ([`walk::ethernet`] by [`LAYOUT_RULE`]). None
/// when the frame is shorter than an Ethernet header.
pub fn layout(frame: &[u8]) -> Option<Layout> {
    let l = walk::ethernet(frame, 0, &LAYOUT_RULE)?;
    // A tag the frame cuts short: the network header would follow it.
    let l3_offset = if l.tags.truncated {
        l.l3_offset + VLAN_HLEN
    } else {
        l.l3_offset
    };
    Some(Layout {
        l3_proto: l.l3_proto,
        l3_offset,
        l4_proto: l.transport.map(|t| t.proto),
        l4_offset: l.transport.map_or(l3_offset, |t| t.offset),
        l4_hlen: l.transport.and_then(|t| walk::transport_len(frame, t)),
    })
}

/// What kind of GSO the sender asked for (a scenario's `skb.gso`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GsoKind {
    #[default]
    None,
    /// TSO: SKB_GSO_TCPV4 or SKB_GSO_TCPV6 by the IP version.
    Tcp,
    /// USO: SKB_GSO_UDP_L4.
    UdpL4,
    /// UFO: SKB_GSO_UDP (removed from the read path after 3.x).
    Ufo,
}

/// How the skb arises from the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SkbRecipe {
    /// The receive path moves an outer 802.1Q/802.1ad tag into the hw-accel fields
    /// (__netif_receive_skb_core -> skb_vlan_untag), as when a frame written into one tap
    /// is bridged to the tap under test. False: the tag stays in-band.
    pub vlan_hwaccel: bool,
    pub checksum: IpSummed,
    pub gso: GsoKind,
    pub gso_ecn: bool,
    pub gso_size: u16,
    /// skb_headlen: None = everything linear; Some(None) = exactly the headers (a locally
    /// generated TSO skb); Some(Some(n)) = n bytes.
    pub headlen: Option<Option<usize>>,
}

/// Why a frame cannot get the metadata a recipe asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipeError(pub String);

/// Build the skb for `frame` per `recipe`, into `skb` (its buffer is reused).
/// `l3_only` strips the Ethernet header (IFF_TUN devices carry IP packets).
pub fn build_skb(
    skb: &mut SkBuff,
    frame: &[u8],
    recipe: &SkbRecipe,
    l3_only: bool,
) -> Result<(), RecipeError> {
    if frame.len() < ETH_HLEN {
        return Err(RecipeError(format!(
            "frame of {} bytes is shorter than an Ethernet header (14)",
            frame.len()
        )));
    }
    let untag = recipe.vlan_hwaccel
        && eth_type_vlan(u16::from_be_bytes([frame[12], frame[13]]))
        && frame.len() >= ETH_HLEN + VLAN_HLEN;
    // The layout the skb will have once the outer tag is out of band.
    let shift = if untag { 4 } else { 0 };
    let lay = layout(frame).ok_or_else(|| RecipeError("no Ethernet header".into()))?;
    let headers = lay.headers_len().map(|h| h - shift);
    let full = frame.len();
    // skb_vlan_untag pulls the tag into the linear part (pskb_may_pull), so an untagged
    // skb's linear part always holds the MACs and the tag.
    let min_linear = if untag { ETH_HLEN + 4 } else { 0 };
    let headlen = match recipe.headlen {
        None => full,
        Some(None) => headers.map(|h| h + shift).ok_or_else(|| {
            RecipeError("headlen = \"headers\" needs a complete IPv4/IPv6 TCP or UDP header".into())
        })?,
        Some(Some(n)) => (n + shift).min(full),
    }
    .max(min_linear);
    skb.fill_from_frame(frame, crate::consts::NET_SKB_PAD, headlen);
    skb.reset_mac_header();
    skb.protocol = lay.l3_proto;
    if untag {
        skb.vlan_untag();
        // vlan_set_encap_proto took the tag's inner EtherType; further in-band tags
        // (QinQ inner) stay in the frame and in skb->protocol.
    } else {
        // eth_type_trans on the writer tap's receive (the real arm bridges the frame in).
        skb.protocol = crate::ethernet::type_trans(frame);
    }
    let l3_off = lay.l3_offset - shift;
    let l4_off = lay.l4_offset - shift;
    skb.set_network_header(l3_off);
    if lay.l4_proto.is_some() {
        skb.set_transport_header(l4_off);
    }

    match recipe.checksum {
        IpSummed::Partial => {
            let csum_offset = match lay.l4_proto {
                Some(IPPROTO_TCP) => 16,
                Some(IPPROTO_UDP) => 6,
                _ => {
                    return Err(RecipeError(
                        "checksum = \"partial\" needs a TCP or UDP frame".into(),
                    ))
                }
            };
            skb.partial_csum_set(l4_off, csum_offset);
        }
        other => skb.ip_summed = other,
    }

    if recipe.gso != GsoKind::None {
        let (Some(l4), Some(hdrs)) = (lay.l4_proto, headers) else {
            return Err(RecipeError("gso needs a complete TCP or UDP header".into()));
        };
        let bits = match (recipe.gso, l4, lay.l3_proto) {
            (GsoKind::Tcp, IPPROTO_TCP, ETH_P_IP) => gso::TCPV4,
            (GsoKind::Tcp, IPPROTO_TCP, ETH_P_IPV6) => gso::TCPV6,
            (GsoKind::UdpL4, IPPROTO_UDP, _) => gso::UDP_L4,
            (GsoKind::Ufo, IPPROTO_UDP, _) => gso::UDP,
            (kind, _, _) => {
                return Err(RecipeError(format!(
                    "gso = {kind:?} does not fit a frame with IP protocol {l4}"
                )))
            }
        };
        if recipe.gso_size == 0 {
            return Err(RecipeError("gso needs gso_size > 0".into()));
        }
        skb.gso_type = bits | if recipe.gso_ecn { gso::TCP_ECN } else { 0 };
        skb.gso_size = recipe.gso_size;
        let payload = (full - shift).saturating_sub(hdrs);
        // tcp_gso_segs-style count: DIV_ROUND_UP(payload, mss).
        skb.gso_segs = payload.div_ceil(usize::from(recipe.gso_size)) as u16;
    }

    if l3_only {
        // An IFF_TUN device gets the packet from the network header on.
        skb.pull(l3_off).map_err(|e| RecipeError(e.to_string()))?;
        skb.mac_header = None;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 802.1Q vid 100, IPv4 (IHL 5), TCP (doff 5), 10 bytes payload.
    fn tagged_tcp() -> Vec<u8> {
        let mut f = vec![
            2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0x00, 0x64, 0x08, 0x00,
        ];
        let mut ip = vec![
            0x45, 0, 0, 60, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        f.append(&mut ip);
        let mut tcp = vec![0u8; 20];
        tcp[12] = 0x50;
        f.append(&mut tcp);
        f.extend_from_slice(&[0xab; 10]);
        f
    }

    #[test]
    fn layout_walks_tags_ip_and_tcp() {
        let l = layout(&tagged_tcp()).unwrap();
        assert_eq!(
            l,
            Layout {
                l3_proto: ETH_P_IP,
                l3_offset: 18,
                l4_proto: Some(6),
                l4_offset: 38,
                l4_hlen: Some(20)
            }
        );
        assert_eq!(l.headers_len(), Some(58));
        assert!(layout(&[0u8; 13]).is_none());
    }

    #[test]
    fn hwaccel_partial_gso_skb_has_offsets_after_the_untag() {
        let f = tagged_tcp();
        let mut skb = SkBuff::default();
        let recipe = SkbRecipe {
            vlan_hwaccel: true,
            checksum: IpSummed::Partial,
            gso: GsoKind::Tcp,
            gso_size: 4,
            headlen: Some(None),
            ..SkbRecipe::default()
        };
        build_skb(&mut skb, &f, &recipe, false).unwrap();
        assert_eq!(skb.len(), f.len() - 4);
        assert_eq!(skb.headlen(), 54);
        assert_eq!(skb.protocol, ETH_P_IP);
        assert_eq!(skb.checksum_start_offset(), 34);
        assert_eq!(skb.csum_offset, 16);
        assert_eq!(skb.gso_type, gso::TCPV4);
        assert_eq!(skb.gso_segs, 3); // 10 bytes of payload in 4-byte segments
    }

    #[test]
    fn inband_keeps_the_tag_and_tpid_as_protocol() {
        let f = tagged_tcp();
        let mut skb = SkBuff::default();
        build_skb(&mut skb, &f, &SkbRecipe::default(), false).unwrap();
        assert_eq!(skb.protocol, crate::consts::ETH_P_8021Q);
        assert_eq!(skb.vlan, None);
        assert_eq!(skb.to_vec(), f);
    }

    #[test]
    fn gso_on_a_non_tcp_frame_is_a_recipe_error() {
        let mut f = tagged_tcp();
        f[18 + 9] = 17; // UDP in the IP header, but bytes say TCP-sized header
        let mut skb = SkBuff::default();
        let recipe = SkbRecipe {
            gso: GsoKind::Tcp,
            gso_size: 100,
            ..SkbRecipe::default()
        };
        assert!(build_skb(&mut skb, &f, &recipe, false).is_err());
    }
}
