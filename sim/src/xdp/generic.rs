//! Generic XDP on an skb (net/core/dev.c: do_xdp_generic -> netif_receive_generic_xdp ->
//! bpf_prog_run_generic_xdp): the program sees the frame from the MAC header in a linear
//! buffer with at least XDP_PACKET_HEADROOM in front; head and tail moves are applied back
//! to the skb.

use crate::bpf::{BpfError, XdpBuff, XdpRun};
use crate::consts::{skb_data_align, SKB_SHARED_INFO_ALIGNED, XDP_PACKET_HEADROOM};

use super::XdpAttachment;

/// The frame after a generic run, and the run.
#[derive(Debug, Clone)]
pub struct GenericRun {
    pub run: XdpRun,
    /// The frame as the program left it (data..data_end).
    pub frame: Vec<u8>,
    /// How far the program moved data (bpf_xdp_adjust_head): positive pulls bytes off
    /// the front, negative pushes.
    pub head_delta: isize,
}

/// Run `att` over `frame` as generic XDP does. The buffer is the skb made private and
/// linear with XDP_PACKET_HEADROOM of headroom (netif_receive_generic_xdp); its tailroom
/// is the skb's: UNCERTAIN, modelled as the 64-byte alignment slack of the data area.
pub fn run_generic(
    att: &mut XdpAttachment,
    frame: &[u8],
    ifindex: u32,
) -> Result<GenericRun, BpfError> {
    let data_area = skb_data_align(XDP_PACKET_HEADROOM + frame.len());
    let frame_sz = data_area + SKB_SHARED_INFO_ALIGNED;
    let mut buff = XdpBuff::with_layout(frame, XDP_PACKET_HEADROOM, frame_sz)?;
    buff.ingress_ifindex = ifindex;
    let run = att.run(&mut buff)?;
    Ok(GenericRun {
        run,
        frame: buff.data().to_vec(),
        head_delta: buff.data as isize - XDP_PACKET_HEADROOM as isize,
    })
}
