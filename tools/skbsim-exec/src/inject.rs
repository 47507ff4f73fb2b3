//! The scenario's capture sent toward the program (docs/exec.md#scenarios): the far
//! side transmits every frame of it on the program's device, in order, directly
//! (dev_queue_xmit -> tun_net_xmit, as tun-read's `attach = "direct"`: an AF_PACKET
//! socket bound to the device sends it, net/packet/af_packet.c: packet_snd), at one
//! moment both arms reproduce: the first time a device of the program comes up
//! (SIOCSIFFLAGS with IFF_UP, or RTM_NEWLINK / RTM_SETLINK), before the supervisor
//! answers that request, so before the program's next operation. Frames the tx_ring has
//! no room for are dropped as tun_net_xmit drops them (SKB_DROP_REASON_FULL_RING).

use sim::tun::DeviceKind;

/// A frame the far side sent on a device, for the record ([`crate::Recorder`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injected {
    /// The device's name.
    pub dev: Vec<u8>,
    pub kind: DeviceKind,
    /// The frame as transmitted: the Ethernet frame on a tap, the IP packet after the
    /// Ethernet header on an IFF_TUN device.
    pub data: Vec<u8>,
    /// What dev_queue_xmit did with it (the model's; None where the arm cannot see it).
    pub fate: Option<String>,
}

/// The capture's frames, sent once.
#[derive(Debug, Clone, Default)]
pub struct FarInput {
    /// Ethernet frames, until sent.
    frames: Option<Vec<Vec<u8>>>,
}

impl FarInput {
    /// `frames`: Ethernet frames (a capture's, LINKTYPE_ETHERNET).
    pub fn new(frames: Vec<Vec<u8>>) -> FarInput {
        FarInput {
            frames: Some(frames).filter(|f| !f.is_empty()),
        }
    }

    /// The frames to send now, each as the device carries it with its skb->protocol,
    /// when a link change (`up` asked, the device `was_up` before, the change done)
    /// is the first time a device came up; then never again.
    pub fn on_link_change(
        &mut self,
        kind: DeviceKind,
        was_up: bool,
        up: Option<bool>,
    ) -> Vec<(Vec<u8>, u16)> {
        if was_up || up != Some(true) {
            return Vec::new();
        }
        self.frames
            .take()
            .unwrap_or_default()
            .iter()
            .map(|f| as_sent(kind, f))
            .collect()
    }
}

/// An Ethernet frame as AF_PACKET sends it on a device of `kind`, and its skb->protocol
/// (the frame's type/length field: packet_snd takes sll_protocol, which the sender sets
/// to it; for a tap, dev_parse_header_protocol gives the same). On an IFF_TUN device
/// (ARPHRD_NONE, no link header) the packet after the Ethernet header.
pub fn as_sent(kind: DeviceKind, eth: &[u8]) -> (Vec<u8>, u16) {
    let proto = eth
        .get(12..14)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let data = match kind {
        DeviceKind::Tap => eth.to_vec(),
        DeviceKind::Tun => eth.get(14..).unwrap_or_default().to_vec(),
    };
    (data, proto)
}
