//! [`DeviceTun`]: the program's `/dev/net/tun` files served by the device model the
//! pipelines use ([`sim::tun::device::TunHost`], docs/tun-device.md): ioctls are the
//! per-profile rule table, a write is tun_chr_write_iter -> tun_get_user (GRO for
//! IFF_NAPI) -> the stack, a read is tun_put_user from the file's tx_ring, poll is
//! tun_chr_poll. Behind the device sits a [`FarSide`]: it is handed every skb a write
//! delivered to the stack (netif_receive_skb) and may answer with skbs sent to the device
//! (dev_queue_xmit -> tun_net_xmit -> the tx_ring), which the program then reads.

use std::collections::BTreeMap;
use std::fmt;

use sim::profile::KernelProfile;
use sim::skb::SkBuff;
use sim::trace::gro_delivery::{model_csum, Csum};
use sim::trace::write::fate_line;
use sim::tun::device::{TunHost, XmitFate};
use sim::tun::ioctl::iff_flags::{IFF_NO_PI, IFF_VNET_HDR};
use sim::tun::ioctl::Caller;
use sim::tun::{DeviceKind, TUN_PI_LEN};

use crate::inject::{FarInput, Injected};
use crate::loopback::link_flags;
use crate::record::{Framing, StackSkb, WriteReport};
use crate::stack::HEADROOM;
use crate::{Errno, FileId, Ifa, IoctlAnswer, IoctlArg, LinkInfo, Readiness, SimTun, SA_DATA_LEN};

/// What is on the stack side of the simulated devices.
pub trait FarSide {
    /// An skb the stack received from the device named `dev` of `kind` (after
    /// tun_get_user and, for IFF_NAPI, GRO; data at the network header, mac_header set
    /// for a tap): the skbs to transmit on that device in answer, in order (data at the
    /// Ethernet header for a tap, at the IP header for a tun).
    fn receive(&mut self, dev: &[u8], kind: DeviceKind, skb: SkBuff) -> Vec<SkBuff>;

    /// The stack's IPv4 address on the device named `dev` became `ifa` (SIOCSIFADDR /
    /// SIOCSIFNETMASK: devinet_ioctl -> inet_set_ifa puts it on the kernel's own stack),
    /// or went with the device (None).
    fn address(&mut self, _dev: &[u8], _kind: DeviceKind, _ifa: Option<Ifa>) {}
}

/// A far side that takes every skb and answers none (a stack with no address on the
/// device: what the kernel does with frames no socket wants).
#[derive(Debug, Default)]
pub struct Sink {
    /// The skbs received so far.
    pub received: u64,
}

impl FarSide for Sink {
    fn receive(&mut self, _dev: &[u8], _kind: DeviceKind, _skb: SkBuff) -> Vec<SkBuff> {
        self.received += 1;
        Vec::new()
    }
}

/// The device model with a far side behind it.
pub struct DeviceTun<F> {
    host: TunHost,
    far: F,
    /// How many answers the device did not queue (down, dropped, no device), by fate.
    xmit_lost: u64,
    /// What the last write did, for the record.
    report: WriteReport,
    ipv4: BTreeMap<Vec<u8>, Ifa>,
    /// The scenario's capture, sent when a device first comes up (crate::inject).
    input: FarInput,
    /// What the last link change sent, for the record.
    injected: Vec<Injected>,
}

impl<F> fmt::Debug for DeviceTun<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceTun")
            .field("host", &self.host)
            .field("xmit_lost", &self.xmit_lost)
            .finish_non_exhaustive()
    }
}

impl<F: FarSide> DeviceTun<F> {
    pub fn new(profile: KernelProfile, caller: Caller, far: F) -> DeviceTun<F> {
        DeviceTun {
            host: TunHost::new(&profile, caller),
            far,
            xmit_lost: 0,
            report: WriteReport::default(),
            ipv4: BTreeMap::new(),
            input: FarInput::default(),
            injected: Vec::new(),
        }
    }

    /// The far side sends `input` toward the program when a device first comes up.
    pub fn with_input(mut self, input: FarInput) -> DeviceTun<F> {
        self.input = input;
        self
    }

    /// The devices and files as the program left them.
    pub fn host(&self) -> &TunHost {
        &self.host
    }

    /// The far side (its counters).
    pub fn far(&self) -> &F {
        &self.far
    }

    /// Answers of the far side that dev_queue_xmit did not put on a tx_ring.
    pub fn xmit_lost(&self) -> u64 {
        self.xmit_lost
    }

    /// Hands what the writes delivered to the far side and transmits its answers; both
    /// go into the write's report.
    fn serve_far_side(&mut self) {
        for (dev, skb) in self.host.take_received() {
            let Some(kind) = self.host.device(&dev).map(|d| d.kind) else {
                continue;
            };
            // The frame from the MAC header on for a tap (the model's eth_type_trans
            // may leave data there; the kernel's pulls ETH_HLEN): what AF_PACKET sees.
            let mac_pulled = match (kind, skb.mac_header) {
                (DeviceKind::Tap, Some(mac)) => skb.data_offset().saturating_sub(mac),
                _ => 0,
            };
            self.report.skbs.push(StackSkb {
                protocol: skb.protocol,
                len: skb.len() + mac_pulled,
                gso_type: Some(skb.gso_type),
                gso_size: skb.gso_size,
                gso_segs: Some(skb.gso_segs),
                csum: Some(match model_csum(&skb) {
                    Csum::Partial { start, offset } => Csum::Partial {
                        start: start + mac_pulled,
                        offset,
                    },
                    c => c,
                }),
            });
            for answer in self.far.receive(&dev, kind, skb) {
                let len = answer.len();
                let fate = self.host.xmit(&dev, answer);
                if !matches!(fate, XmitFate::Queued { .. }) {
                    self.xmit_lost += 1;
                }
                self.report.answers.push((len, xmit_line(&fate)));
            }
        }
    }
}

impl<F: FarSide> SimTun for DeviceTun<F> {
    fn open(&mut self, nonblock: bool) -> FileId {
        self.host.open(nonblock)
    }

    fn ioctl(&mut self, f: FileId, cmd: u32, arg: &IoctlArg) -> Result<IoctlAnswer, Errno> {
        self.host.ioctl(f, cmd, arg)
    }

    fn set_nonblock(&mut self, f: FileId, nonblock: bool) {
        self.host.set_nonblock(f, nonblock);
    }

    fn read(&mut self, f: FileId, buf_len: usize) -> Result<Vec<u8>, Errno> {
        self.host.read(f, buf_len)
    }

    fn write(&mut self, f: FileId, data: &[u8]) -> Result<usize, Errno> {
        let out = self.host.write_outcome(f, data);
        self.report = WriteReport {
            fate: Some(fate_line(&out.fate)),
            ..WriteReport::default()
        };
        self.serve_far_side();
        out.result
    }

    fn poll(&self, f: FileId) -> Readiness {
        let r = self.host.poll(f);
        Readiness {
            readable: r.readable,
            writable: r.writable,
            error: r.error,
        }
    }

    /// tun_ring_recv sleeps only on a blocking file with a device; otherwise the read
    /// answers at once (EAGAIN, or EBADFD without a device).
    fn would_block(&self, f: FileId) -> bool {
        self.host.would_block(f)
    }

    fn close(&mut self, f: FileId) {
        self.host.close(f);
    }

    /// SIOCSIFFLAGS / RTM_NEWLINK; the first time a device comes up, the far side sends
    /// the scenario's capture on it through the path its answers take (dev_queue_xmit
    /// -> tun_net_xmit -> the tx_ring: [`TunHost::xmit`]; crate::inject).
    fn set_link(&mut self, dev: &[u8], up: Option<bool>, mtu: Option<u32>) -> Result<(), Errno> {
        let was = self.host.device(dev).map(|d| (d.up, d.kind));
        self.host.set_link(dev, up, mtu)?;
        let Some((was_up, kind)) = was else {
            return Ok(());
        };
        for (data, protocol) in self.input.on_link_change(kind, was_up, up) {
            let mut skb = SkBuff::from_frame(&data, HEADROOM, data.len());
            skb.protocol = protocol;
            let fate = self.host.xmit(dev, skb);
            if !matches!(fate, XmitFate::Queued { .. }) {
                self.xmit_lost += 1;
            }
            self.injected.push(Injected {
                dev: dev.to_vec(),
                kind,
                data,
                fate: Some(xmit_line(&fate)),
            });
        }
        Ok(())
    }

    fn take_injected(&mut self) -> Vec<Injected> {
        std::mem::take(&mut self.injected)
    }

    fn link(&self, dev: &[u8]) -> Option<LinkInfo> {
        let tun = self.host.device(dev)?;
        Some(LinkInfo {
            ifindex: tun.ifindex,
            flags: link_flags(tun.kind, tun.up, tun.carrier),
            mtu: self.host.mtu(dev)?,
        })
    }

    fn hw_addr(&self, dev: &[u8]) -> Option<(u16, [u8; SA_DATA_LEN])> {
        self.host.hw_addr(dev)
    }

    fn set_hw_addr(
        &mut self,
        dev: &[u8],
        family: u16,
        data: &[u8; SA_DATA_LEN],
    ) -> Option<Result<(), Errno>> {
        self.host.device(dev)?;
        Some(self.host.set_hw_addr(dev, family, data))
    }

    fn link_message(&self, dev: &[u8]) -> Option<crate::LinkMessage> {
        let t = self.host.device(dev)?;
        let qdisc = crate::rtnl_link::default_qdisc();
        Some(crate::rtnl_link::link_message(
            t,
            self.host.mtu(dev)?,
            &qdisc,
        ))
    }

    fn link_names(&self) -> Vec<Vec<u8>> {
        crate::rtnl_link::names_by_ifindex(self.host.tun_net())
    }

    fn link_name(&self, ifindex: u32) -> Option<Vec<u8>> {
        let net = self.host.tun_net();
        Some(net.dev(net.by_ifindex(ifindex)?)?.name.clone())
    }

    /// RTM_DELLINK: unregister_netdevice -> tun_detach_all ([`TunHost::del_link`]: the
    /// queues' rings purged, the files left with no device).
    fn delete_link(&mut self, dev: &[u8]) -> Result<(), Errno> {
        let kind = self.host.device(dev).map(|d| d.kind);
        self.host.del_link(dev)?;
        if let (Some(kind), Some(_)) = (kind, self.ipv4.remove(dev)) {
            self.far.address(dev, kind, None);
        }
        Ok(())
    }

    fn ipv4(&self, dev: &[u8]) -> Option<Ifa> {
        self.ipv4.get(dev).copied()
    }

    fn del_ipv4(&mut self, dev: &[u8]) -> bool {
        let Some(kind) = self.host.device(dev).map(|d| d.kind) else {
            return false;
        };
        self.ipv4.remove(dev);
        self.far.address(dev, kind, None);
        true
    }

    fn set_ipv4(&mut self, dev: &[u8], ifa: Ifa) {
        let Some(kind) = self.host.device(dev).map(|d| d.kind) else {
            return;
        };
        self.ipv4.insert(dev.to_vec(), ifa);
        self.far.address(dev, kind, Some(ifa));
    }

    fn take_write_report(&mut self) -> WriteReport {
        std::mem::take(&mut self.report)
    }

    /// tun_get_user / tun_put_user: the tun_pi unless IFF_NO_PI, then vnet_hdr_sz bytes
    /// with IFF_VNET_HDR, then the frame.
    fn framing(&self, f: FileId) -> Option<Framing> {
        let tif = self.host.tun_net().device_of(f)?;
        let mut header = 0;
        if tif.features & IFF_NO_PI == 0 {
            header += TUN_PI_LEN;
        }
        if tif.features & IFF_VNET_HDR != 0 {
            header += tif.vnet_hdr_sz.max(0) as usize;
        }
        Some(Framing {
            dev: tif.name.clone(),
            kind: tif.kind,
            header,
        })
    }
}

/// What dev_queue_xmit did with a far side's answer, for the record.
fn xmit_line(f: &XmitFate) -> String {
    match f {
        XmitFate::Queued { queue } => format!("queued on queue {queue}"),
        XmitFate::Dropped { queue, reason } => format!("dropped on queue {queue}: {reason}"),
        XmitFate::DeviceDown => "freed: device down".into(),
        XmitFate::NoDevice => "no device".into(),
        XmitFate::Unmodelled(why) => format!("not modelled: {why}"),
        XmitFate::ProgFault(why) => format!("program stopped: {why}"),
    }
}
