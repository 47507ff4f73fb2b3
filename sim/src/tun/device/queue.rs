//! The transmit side of a multiqueue tun device: which queue an skb from the stack lands
//! in (net/core/dev.c: netdev_core_pick_tx -> drivers/net/tun.c: tun_select_queue,
//! tun_automq_select_queue / tun_ebpf_select_queue), the automq flow table
//! (tun_flow_update, tun_flow_delete_by_queue) and tun_net_xmit onto the queue's
//! tx_ring. docs/tun-device.md#queues.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use super::flow_hash;
use super::{TunHost, XmitFate};
use crate::bpf::{run_socket_filter, BasicEnv, Program, SkbCtx, Vm};
use crate::skb::{SkBuff, ETH_HLEN};
use crate::tun::{DeviceKind, RingEntry, XmitDrop};

/// MAX_TAP_FLOWS (tun.c): tun_flow_update creates no entry past this many.
pub const MAX_TAP_FLOWS: usize = 4096;

/// A stand-in for a program (tests): its return value for an skb.
pub type SkbProgFn = fn(&SkBuff) -> u32;

/// The program TUNSETSTEERINGEBPF / TUNSETFILTEREBPF attached (a
/// BPF_PROG_TYPE_SOCKET_FILTER program), as the model runs it.
#[derive(Debug, Clone)]
pub enum SkbProg {
    /// Run by the eBPF VM on the skb ([`crate::bpf::skb`]); a program without maps.
    Bpf(Arc<Program>),
    /// A stand-in function.
    Fn(SkbProgFn),
}

impl SkbProg {
    /// bpf_prog_run_clear_cb(prog, skb): the program's return value, or why the VM
    /// stopped it.
    pub fn run(&self, skb: &SkBuff) -> Result<u32, String> {
        match self {
            SkbProg::Fn(f) => Ok(f(skb)),
            SkbProg::Bpf(prog) => {
                let mut data = Vec::with_capacity(skb.len());
                skb.append_to(&mut data);
                let mut ctx = SkbCtx::of(skb);
                let mut env = BasicEnv::default();
                run_socket_filter(&mut Vm::new(), prog, &data, &mut ctx, &mut env)
                    .map(|r| r.action)
                    .map_err(|e| format!("{}: {e}", prog.name))
            }
        }
    }
}

/// One open file's side of a queue: `struct tun_file`'s tx_ring and O_NONBLOCK.
#[derive(Debug, Default)]
pub(super) struct FileQueue {
    pub nonblock: bool,
    /// tfile->tx_ring: a ptr_ring of dev->tx_queue_len entries (sized by tun_attach).
    pub ring: VecDeque<RingEntry>,
}

/// What the model keeps of a tun device beyond TunNet's ioctl state.
#[derive(Debug, Clone, Default)]
pub(super) struct DevState {
    /// tun->flows: rxhash -> queue_index (no ageing: the model has no clock; the kernel
    /// forgets an entry TUN_FLOW_EXPIRE, 3 s, after its last update).
    pub flows: BTreeMap<u32, u16>,
    pub steering: Option<SkbProg>,
    pub filter: Option<SkbProg>,
    /// tun->txflt: the exact addresses and TUN_FLT_ALLMULTI (TUNSETTXFILTER).
    pub txflt_exact: Vec<[u8; 6]>,
    pub txflt_allmulti: bool,
}

impl DevState {
    /// tun_flow_update: the flow was last written on `queue_index`.
    pub fn flow_update(&mut self, rxhash: u32, queue_index: u16) {
        if let Some(q) = self.flows.get_mut(&rxhash) {
            *q = queue_index;
        } else if self.flows.len() < MAX_TAP_FLOWS {
            self.flows.insert(rxhash, queue_index);
        }
    }

    /// tun_flow_delete_by_queue(tun, tun->numqueues + 1), as __tun_detach calls it after
    /// the decrement: the index one past the queue that moved, which no queue had, so
    /// nothing useful goes; the moved queue's entries keep its old index (kept as the
    /// kernel has it, see docs/tun-device.md#automq).
    pub fn flow_delete_by_queue(&mut self, queue_index: u16) {
        self.flows.retain(|_, q| *q != queue_index);
    }
}

/// TUN_FLT_ALLMULTI (include/uapi/linux/if_tun.h).
pub const TUN_FLT_ALLMULTI: u16 = 0x0001;

impl TunHost {
    /// __skb_get_hash_symmetric of an skb from the stack: the dissection starts at the
    /// network header with skb->protocol. An skb without a network header offset starts
    /// at its MAC header on a tap (network header after ETH_HLEN) and at the IP header on
    /// a tun; a tap skb without skb->protocol takes its Ethernet type.
    pub(super) fn skb_hash(&self, kind: DeviceKind, skb: &SkBuff) -> u32 {
        let mut bytes = Vec::with_capacity(skb.len());
        skb.append_to(&mut bytes);
        let tap = kind == DeviceKind::Tap;
        let nhoff =
            skb.offset_from_data(skb.network_header)
                .unwrap_or(if tap { ETH_HLEN } else { 0 });
        let proto = match (skb.protocol, bytes.get(12..14)) {
            (0, Some(t)) if tap => u16::from_be_bytes([t[0], t[1]]),
            (p, _) => p,
        };
        flow_hash::hash_symmetric(&bytes, nhoff, proto, self.hashrnd)
    }

    /// netdev_core_pick_tx: ndo_select_queue only when real_num_tx_queues is not 1
    /// (tun_set_real_num_queues keeps it at numqueues, never below 1), then
    /// netdev_cap_txqueue (an index past the real queues is queue 0). Err: the steering
    /// program the model cannot run.
    fn pick_tx(
        &self,
        st: &DevState,
        tif: (DeviceKind, usize, bool),
        skb: &SkBuff,
    ) -> Result<usize, XmitFate> {
        let (kind, numqueues, steering) = tif;
        if numqueues <= 1 {
            return Ok(0);
        }
        let txq = if steering {
            // tun_ebpf_select_queue: "u16 ret = bpf_prog_run_clear_cb(prog->prog, skb);
            // return ret % numqueues;": the program's u32 return truncated to u16 first.
            let Some(prog) = &st.steering else {
                return Err(XmitFate::Unmodelled(
                    "a TUNSETSTEERINGEBPF program the model was not given (set_steering)",
                ));
            };
            let ret = prog.run(skb).map_err(XmitFate::ProgFault)? as u16;
            usize::from(ret) % numqueues
        } else {
            // tun_automq_select_queue: the flow table, else reciprocal_scale.
            let hash = self.skb_hash(kind, skb);
            match st.flows.get(&hash) {
                Some(&q) => usize::from(q),
                None => ((u64::from(hash) * numqueues as u64) >> 32) as usize,
            }
        };
        Ok(if txq >= numqueues { 0 } else { txq })
    }

    /// dev_queue_xmit on the tun device `dev_name`: pick the queue, then tun_net_xmit.
    /// The skb is what ndo_select_queue gets (the core's validate_xmit_skb already
    /// applied, except the VLAN tag insertion: net/core/dev.c: __dev_queue_xmit picks the
    /// queue first and validate_xmit_skb -> validate_xmit_vlan runs before
    /// ndo_start_xmit, so it is done here after the pick, and the TUNSETTXFILTER and
    /// TUNSETFILTEREBPF checks see a tag the device could not offload in the bytes).
    pub fn xmit(&mut self, dev_name: &[u8], mut skb: SkBuff) -> XmitFate {
        let Some(tif) = self.net.by_name(dev_name).and_then(|d| self.net.dev(d)) else {
            return XmitFate::NoDevice;
        };
        // A down device has the noop qdisc (dev_deactivate): dropped before the driver.
        if !tif.up {
            return XmitFate::DeviceDown;
        }
        let (ifindex, queues, filter_prog) = (tif.ifindex, tif.queues.clone(), tif.filter_prog);
        let pick = (tif.kind, queues.len(), tif.steering_prog);
        let st = self
            .devs
            .get(&ifindex)
            .expect("every registered tun has its state");
        let txq = match self.pick_tx(st, pick, &skb) {
            Ok(q) => q,
            Err(fate) => return fate,
        };
        self.stack
            .dev(ifindex)
            .expect("registered tun in the stack")
            .validate_xmit_vlan(&mut skb);
        // tun_net_xmit: "Drop packet if interface is not attached".
        let Some(&file) = queues.get(txq) else {
            return self.xmit_drop(ifindex, txq, XmitDrop::DevReady);
        };
        // check_filter (TUNSETTXFILTER, taps only).
        if !st.txflt_exact.is_empty() {
            let dest: [u8; 6] = skb
                .linear()
                .get(..6)
                .and_then(|d| d.try_into().ok())
                .unwrap_or([0; 6]);
            if !st.txflt_exact.contains(&dest) {
                if dest[0] & 1 == 0 {
                    return self.xmit_drop(ifindex, txq, XmitDrop::TapTxfilter);
                }
                if !st.txflt_allmulti {
                    return XmitFate::Unmodelled(
                        "TUNSETTXFILTER's multicast hash (addr_hash_test)",
                    );
                }
            }
        }
        if self.net.file(file).sk_filter {
            return XmitFate::Unmodelled("a TUNATTACHFILTER classic BPF filter (sk_filter)");
        }
        // run_ebpf_filter: the program's return is the length kept, 0 drops.
        if filter_prog {
            let Some(prog) = &st.filter else {
                return XmitFate::Unmodelled(
                    "a TUNSETFILTEREBPF program the model was not given (set_filter)",
                );
            };
            let len = match prog.run(&skb) {
                Ok(len) => len as usize,
                Err(e) => return XmitFate::ProgFault(e),
            };
            if len == 0 {
                return self.xmit_drop(ifindex, txq, XmitDrop::TapFilter);
            }
            if len < skb.len() {
                return XmitFate::Unmodelled("pskb_trim to the TUNSETFILTEREBPF program's length");
            }
        }
        let cap = self
            .stack
            .dev(ifindex)
            .expect("registered tun in the stack")
            .config
            .tx_queue_len;
        let q = self.files.get_mut(&file).expect("an attached file is open");
        // ptr_ring_produce fails on a full ring.
        if q.ring.len() >= cap {
            return self.xmit_drop(ifindex, txq, XmitDrop::FullRing);
        }
        q.ring.push_back(RingEntry::Skb(Box::new(skb)));
        XmitFate::Queued { queue: txq as u16 }
    }

    /// tun_net_xmit's drop label: dev->tx_dropped += 1.
    fn xmit_drop(&mut self, ifindex: u32, txq: usize, reason: XmitDrop) -> XmitFate {
        if let Some(dev) = self.stack.dev_mut(ifindex) {
            dev.stats.tx_dropped += 1;
        }
        XmitFate::Dropped {
            queue: txq as u16,
            reason,
        }
    }
}
