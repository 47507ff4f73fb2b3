//! What tap-write's and vhost-tx's records say about an XDP run and a frame's fate
//! (the records themselves are built by the tap-write pipeline's `tap_write_trace`).

use std::fmt::Write as _;

use crate::bpf::xdp::XdpAction;
use crate::tun::write::Fate;

/// An XDP verdict's name (`XDP_DROP`), an unknown value as `unknown action 7`: the one
/// namer of every trace.
pub fn action_name(a: u32) -> String {
    match XdpAction::from_u32(a) {
        Some(x) => x.name().to_string(),
        None => format!("unknown action {a}"),
    }
}

/// What became of a frame, as the traces write it (`delivered to the stack`).
pub fn fate_line(f: &Fate) -> String {
    let mut s = String::new();
    fate_into(&mut s, f);
    s
}

/// What became of a frame, appended to `out`.
pub(crate) fn fate_into(out: &mut String, f: &Fate) {
    match f {
        Fate::Rejected => out.push_str("rejected before an skb existed"),
        Fate::Stack => out.push_str("delivered to the stack"),
        Fate::XdpDropped => out.push_str("dropped by XDP"),
        Fate::XdpTx => out.push_str("sent back out of A (XDP_TX)"),
        Fate::XdpRedirected { ifindex } => {
            out.push_str("redirected to ifindex ");
            crate::text::dec(out, *ifindex);
        }
        Fate::XdpError(e) => {
            let _ = write!(out, "XDP action failed: {e}");
        }
        Fate::Dropped(why) => {
            out.push_str("dropped: ");
            out.push_str(why);
        }
    }
}

pub(crate) fn action_line(x: &crate::tun::write::XdpReport) -> String {
    let redirect = x
        .redirect_to
        .map(|i| format!(" to ifindex {i}"))
        .unwrap_or_default();
    format!(
        "{} {}{redirect} len {} -> {} insns {}",
        x.place.name(),
        action_name(x.action),
        x.len_before,
        x.len_after,
        x.insns
    )
}
