//! XDP as the tap sees it: an attached program (native driver mode or generic skb mode)
//! and what each verdict does. A file per kernel function:
//!
//! | file | kernel function |
//! | --- | --- |
//! | [`tun_build_skb`] | drivers/net/tun.c: tun_build_skb (the native run of a write) |
//! | [`tun_xdp_one`] | drivers/net/tun.c: tun_xdp_one (the native run of a vhost batch buffer) |
//! | [`tun_xdp_act`] | drivers/net/tun.c: tun_xdp_act (native TX, REDIRECT, DROP) |
//! | [`xdp_convert_buff_to_frame`] | include/net/xdp.h: xdp_convert_buff_to_frame |
//! | [`xdp_do_redirect`] | net/core/filter.c: xdp_do_redirect (native REDIRECT) |
//! | [`netif_receive_generic_xdp`] | net/core/dev.c: netif_receive_generic_xdp, bpf_prog_run_generic_xdp |
//! | [`do_xdp_generic`] | net/core/dev.c: do_xdp_generic (generic verdicts) |
//! | [`generic_xdp_tx`] | net/core/dev.c: generic_xdp_tx (generic TX) |
//! | [`xdp_do_generic_redirect`] | net/core/filter.c: xdp_do_generic_redirect (generic REDIRECT) |
//!
//! Where each runs is tun_get_user's choice (`tun/write.rs`) and tun_xdp_one's
//! (`tun/sendmsg.rs`). The program itself runs in the safe eBPF VM of `crate::bpf`, on
//! the same bytes the kernel loads; its context, the xdp_buff and the xdp_md it reads,
//! stays in `crate::bpf::xdp` because the VM and the helpers (bpf_xdp_adjust_head and
//! the rest) operate on it, and `bpf` must not depend on the device side here.

pub(crate) mod do_xdp_generic;
pub(crate) mod generic_xdp_tx;
pub(crate) mod netif_receive_generic_xdp;
pub(crate) mod tun_build_skb;
pub(crate) mod tun_xdp_act;
pub(crate) mod tun_xdp_one;
pub(crate) mod xdp_convert_buff_to_frame;
pub(crate) mod xdp_do_generic_redirect;
pub(crate) mod xdp_do_redirect;

use serde::Deserialize;

use crate::bpf::{BasicEnv, BpfError, Program, RedirectTarget, Vm, XdpBuff, XdpRun};
use crate::consts::{XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE};

/// How the program was attached (XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE). A scenario
/// names it `mode = "native"` or `"generic"`; the real arm attaches it with
/// [`XdpMode::flags`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum XdpMode {
    /// `ip link set dev X xdpdrv`: tun runs it natively in tun_build_skb, and falls back to
    /// generic XDP inside tun_get_user when build_skb is not used
    /// (docs/tap-write.md#path-choice, docs/tap-write.md#generic-xdp).
    Native,
    /// `xdpgeneric`: the core runs it on every skb in netif_receive_skb (do_xdp_generic),
    /// after tun has counted the packet.
    Generic,
}

impl XdpMode {
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        }
    }

    /// The `XDP_FLAGS_*` mode bit of an `IFLA_XDP` attach.
    pub fn flags(self) -> u32 {
        match self {
            XdpMode::Native => XDP_FLAGS_DRV_MODE,
            XdpMode::Generic => XDP_FLAGS_SKB_MODE,
        }
    }
}

/// A program attached to a device, with its maps and a VM to run it.
#[derive(Debug, Clone)]
pub struct XdpAttachment {
    pub prog: Program,
    pub mode: XdpMode,
    /// The maps the program's references are bound to, and the simulated clock.
    pub env: BasicEnv,
    vm: Vm,
    /// Instructions executed over all runs (the cost model's unit).
    pub insns: u64,
    pub runs: u64,
}

impl XdpAttachment {
    pub fn new(prog: Program, mode: XdpMode, env: BasicEnv) -> XdpAttachment {
        XdpAttachment {
            prog,
            mode,
            env,
            vm: Vm::new(),
            insns: 0,
            runs: 0,
        }
    }

    /// bpf_prog_run_xdp. A VM fault is a program the kernel's verifier would have refused.
    pub fn run(&mut self, buff: &mut XdpBuff) -> Result<XdpRun, BpfError> {
        let run = self.vm.run_xdp(&self.prog, buff, &mut self.env)?;
        self.insns += run.insns;
        self.runs += 1;
        Ok(run)
    }
}

/// The device an XDP_REDIRECT aims at, per the bpf_redirect_info the run left behind.
/// None: xdp_do_redirect fails with -EINVAL (no target, or a broadcast, which tun's
/// single-device scenarios do not model).
pub fn redirect_ifindex(run: &XdpRun) -> Option<u32> {
    match run.redirect? {
        RedirectTarget::Ifindex(i) => Some(i),
        RedirectTarget::Devmap { ifindex, .. } => Some(ifindex),
        RedirectTarget::Broadcast { .. } => None,
    }
}

#[cfg(test)]
mod tests;
