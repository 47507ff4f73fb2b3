//! XDP on a device of the [`TunHost`]: the program attached (IFLA_XDP) and the file a
//! transmitted frame lands on. The shared write path (`Net::tun_write`) queues XDP_TX
//! and redirected frames on the device's one ring, as a single-queue tap has it; here
//! every file has its own tx_ring, so after each write the frames move to the file the
//! kernel puts them on (docs/tap-write.md#multiqueue):
//! - an xdp_frame (native XDP_TX, a native redirect: ndo_xdp_xmit = tun_xdp_xmit) goes to
//!   `tun->tfiles[smp_processor_id() % numqueues]`; the model's writer runs on CPU
//!   [`XDP_XMIT_CPU`] (the real arm pins itself there);
//! - an skb (generic XDP_TX: generic_xdp_tx -> netdev_core_pick_tx; a generic redirect:
//!   dev_queue_xmit) goes through tun_select_queue and tun_net_xmit ([`TunHost::xmit`]).

use super::{TunHost, XmitFate};
use crate::errno::Errno;
use crate::tun::RingEntry;
use crate::xdp::XdpAttachment;

/// The CPU the model's writes run on: smp_processor_id() in tun_xdp_xmit.
pub const XDP_XMIT_CPU: usize = 0;

impl TunHost {
    /// IFLA_XDP on `dev_name`: attach `xdp` (driver mode or generic), replacing any.
    pub fn attach_xdp(&mut self, dev_name: &[u8], xdp: XdpAttachment) -> Result<(), Errno> {
        let ifindex = self.device(dev_name).ok_or(Errno::ENODEV)?.ifindex;
        let dev = self.stack.dev_mut(ifindex).ok_or(Errno::ENODEV)?;
        dev.xdp = Some(xdp);
        Ok(())
    }

    /// The attached program's maps (per-verdict counters and the like).
    pub fn xdp_maps(&self, dev_name: &[u8]) -> Option<&crate::bpf::Maps> {
        let ifindex = self.device(dev_name)?.ifindex;
        let att = self.stack.dev(ifindex)?.xdp.as_ref()?;
        Some(&att.env.maps)
    }

    /// Move what the last write queued on each device's one ring onto its files (see the
    /// module docs). A frame the kernel's answer for depends on something the model does
    /// not run is [`TunHost::take_fault`]'s.
    pub(super) fn place_transmitted(&mut self) {
        let devices: Vec<(u32, Vec<u8>)> = self
            .net
            .devices()
            .map(|t| (t.ifindex, t.name.clone()))
            .collect();
        for (ifindex, name) in devices {
            while let Some(entry) = self.stack.dev_mut(ifindex).and_then(|d| d.pop()) {
                match entry {
                    RingEntry::Xdp(frame) => self.xdp_xmit(ifindex, &name, frame),
                    RingEntry::Skb(skb) => match self.xmit(&name, *skb) {
                        XmitFate::Queued { .. } | XmitFate::Dropped { .. } => {}
                        XmitFate::DeviceDown | XmitFate::NoDevice => {}
                        XmitFate::Unmodelled(why) => {
                            self.fault = Some(format!("{why} is not modelled"))
                        }
                        XmitFate::ProgFault(why) => self.fault = Some(why),
                    },
                }
            }
        }
    }

    /// tun_xdp_xmit of one frame: the queue of CPU [`XDP_XMIT_CPU`], a full ring
    /// tx_dropped.
    fn xdp_xmit(&mut self, ifindex: u32, name: &[u8], frame: crate::tun::XdpFrame) {
        let queues = self
            .device(name)
            .map(|t| t.queues.clone())
            .unwrap_or_default();
        let Some(&file) = queues.get(XDP_XMIT_CPU % queues.len().max(1)) else {
            // numqueues 0 answers -ENXIO before any frame: tun_xdp_act caught XDP_TX's;
            // a redirect's would be the devmap flush's drop.
            self.fault = Some("a redirect into a tun with no queue attached".into());
            return;
        };
        let cap = self.stack.dev(ifindex).map_or(0, |d| d.config.tx_queue_len);
        let q = self.files.get_mut(&file).expect("an attached file is open");
        if q.ring.len() >= cap {
            if let Some(d) = self.stack.dev_mut(ifindex) {
                d.stats.tx_dropped += 1;
            }
            return;
        }
        q.ring.push_back(RingEntry::Xdp(frame));
    }

    /// Why the model could not place a frame the last writes transmitted, if it could
    /// not (taken).
    pub fn take_fault(&mut self) -> Option<String> {
        self.fault.take()
    }
}
