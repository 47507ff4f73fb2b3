//! include/net/xdp.h: xdp_convert_buff_to_frame, the xdp_buff turned into the xdp_frame
//! that XDP_TX and XDP_REDIRECT queue on a device.

use crate::bpf::xdp::XDP_FRAME_SIZE;
use crate::bpf::XdpBuff;
use crate::tun::XdpFrame;

/// xdp_convert_buff_to_frame: the xdp_frame struct lives in the headroom, so headroom
/// less metadata must hold it (else NULL, which tun turns into -EOVERFLOW).
pub(crate) fn xdp_convert_buff_to_frame(buff: &XdpBuff) -> Option<XdpFrame> {
    if buff.headroom() - buff.metalen() < XDP_FRAME_SIZE || buff.data_end > buff.hard_end() {
        return None;
    }
    Some(XdpFrame {
        data: buff.data().to_vec(),
    })
}
