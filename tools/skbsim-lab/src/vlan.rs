//! The 802.1Q device check, run inside the lab guest (a kernel with `8021q`): a VLAN
//! device `skbvlan7` (iproute2) over the tap under test `skbdut`, an untagged frame sent
//! on the VLAN device with AF_PACKET, read from the tap with tx VLAN offload on and off;
//! and the receive direction, a tagged frame written into the tap and received on the VLAN
//! device.
//!
//! On transmit the VLAN device always hands the core a hw-accel tag
//! (`vlan_dev_hard_start_xmit` with `REORDER_HDR`): with `tx-vlan-hw-insert` on the tap,
//! `tun_put_user` splices it (the hw-accel path of the tun-read scenarios); off,
//! `validate_xmit_vlan` inserts it in software and sets `skb->protocol` to the TPID, which
//! the reader sees as `pi.proto`.

use std::time::Duration;

use sim::wire::{Endian, TunPiRepr, VirtioNetHdrRepr, VnetHdrLayout};
use skbsim_kernel::error::{Cause, KernelError};
use skbsim_kernel::ethtool::Ethtool;
use skbsim_kernel::netns::Netns;
use skbsim_kernel::packet::PacketSocket;
use skbsim_kernel::tap::TapConfig;

/// The tap under test.
pub const TAP: &str = "skbdut";
/// The VLAN device over it.
pub const VLAN_DEV: &str = "skbvlan7";
/// Its VLAN id.
pub const VID: u16 = 7;

/// One frame read from the tap (transmit direction) or received on the VLAN device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanObservation {
    /// `tx offload on`, `tx offload off`, `rx`.
    pub case: String,
    /// The tap reader's PI (transmit cases).
    pub pi: Option<TunPiRepr>,
    /// The tap reader's virtio-net header (transmit cases).
    pub vnet: Option<VirtioNetHdrRepr>,
    /// The frame bytes (after PI and vnet header).
    pub frame: Vec<u8>,
    /// AF_PACKET's view on the receiving device: a tag out of band (`TP_STATUS_VLAN_VALID`)
    /// and its TCI.
    pub aux_vlan: Option<(bool, u16)>,
    /// The tap's tx_bytes for this frame (transmit cases).
    pub tx_bytes: Option<u64>,
}

/// An untagged IPv4/UDP frame from 02:00:00:00:00:01 to 02:00:00:00:00:02 with `payload`
/// bytes of data.
pub fn udp_frame(payload: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len = 20 + 8 + payload;
    let mut ip = vec![
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        1,
        0x40,
        0,
        64,
        17,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ];
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let csum = !(sum as u16);
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    f.extend(ip);
    let udp_len = 8 + payload;
    f.extend([
        0x13,
        0x88,
        0x13,
        0x89,
        (udp_len >> 8) as u8,
        udp_len as u8,
        0,
        0,
    ]);
    f.extend((0..payload).map(|i| i as u8));
    f
}

fn iproute2(ns: &Netns, args: &[&str]) -> Result<(), KernelError> {
    let out = std::process::Command::new(super::GUEST_IPROUTE2)
        .args(args)
        .output()
        .map_err(|e| {
            KernelError::new(
                format!("run {} {}", super::GUEST_IPROUTE2, args.join(" ")),
                Cause::Protocol(e.to_string()),
            )
        })?;
    let _ = ns;
    if out.status.success() {
        Ok(())
    } else {
        Err(KernelError::new(
            format!("ip {}", args.join(" ")),
            Cause::Protocol(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        ))
    }
}

/// Run the check (see the module docs). Needs root, `/dev/net/tun`, the `8021q` module and
/// iproute2 at [`super::GUEST_IPROUTE2`].
pub fn vlan_device_check() -> Result<Vec<VlanObservation>, KernelError> {
    Netns::run(|ns| {
        let tap = ns.tap_up(
            &TapConfig::tap(TAP)
                .no_pi(false)
                .vnet_hdr(true)
                .nonblocking(true),
        )?;
        iproute2(
            ns,
            &[
                "link",
                "add",
                "link",
                TAP,
                "name",
                VLAN_DEV,
                "type",
                "vlan",
                "id",
                &VID.to_string(),
            ],
        )?;
        let vlan = ns.rtnl().link_index(VLAN_DEV)?;
        let tap_ifindex = tap.ifindex();
        ns.rtnl().set_up(vlan, true)?;
        let mut eth = Ethtool::new()?;
        let frame = udp_frame(64);
        let mut out = Vec::new();
        let mut buf = vec![0u8; 65536];
        for offload in [true, false] {
            eth.set_feature(TAP, "tx-vlan-hw-insert", offload)?;
            std::thread::sleep(Duration::from_millis(50));
            while let Ok(n) = tap.read(&mut buf) {
                if n == 0 {
                    break;
                }
            }
            let before = ns.rtnl().stats(tap_ifindex)?;
            let sock = PacketSocket::bind(vlan)?;
            sock.send_with_protocol(&frame, 0x0800)?;
            let n = tap
                .read_timeout(&mut buf, Duration::from_secs(2))
                .map_err(|e| KernelError::sys(format!("read {TAP}"), e))?
                .ok_or_else(|| {
                    KernelError::new(
                        format!("read {TAP}"),
                        Cause::Protocol("no frame within 2 s".into()),
                    )
                })?;
            let after = ns.rtnl().stats(tap_ifindex)?;
            let got = &buf[..n];
            out.push(VlanObservation {
                case: format!("tx offload {}", if offload { "on" } else { "off" }),
                pi: TunPiRepr::from_bytes(got).ok(),
                vnet: VirtioNetHdrRepr::from_bytes(
                    got.get(4..).unwrap_or(&[]),
                    VnetHdrLayout::Basic,
                    Endian::Little,
                )
                .ok(),
                frame: got.get(14..).unwrap_or(&[]).to_vec(),
                aux_vlan: None,
                tx_bytes: Some(after.tx_bytes.saturating_sub(before.tx_bytes)),
            });
        }
        // Receive: a tagged frame written into the tap reaches the VLAN device untagged.
        let mut rx = PacketSocket::bind(vlan)?;
        let mut tagged = frame[..12].to_vec();
        tagged.extend([0x81, 0x00, 0x00, VID as u8]);
        tagged.extend(&frame[12..]);
        let mut write = TunPiRepr {
            flags: 0,
            proto: sim::consts::ETH_P_8021Q,
        }
        .to_bytes()
        .to_vec();
        write.extend(VirtioNetHdrRepr::default().to_basic_bytes(Endian::Little));
        write.extend(&tagged);
        tap.write(&write)
            .map_err(|e| KernelError::sys(format!("write {TAP}"), e))?;
        let got = rx.recv_timeout(Some(Duration::from_secs(2)))?;
        let (bytes, aux) = got.ok_or_else(|| {
            KernelError::new(
                format!("AF_PACKET recv on {VLAN_DEV}"),
                Cause::Protocol("no frame within 2 s".into()),
            )
        })?;
        out.push(VlanObservation {
            case: "rx".into(),
            pi: None,
            vnet: None,
            frame: bytes,
            aux_vlan: Some((aux.vlan_valid, aux.vlan_tci)),
            tx_bytes: None,
        });
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_frame_has_a_valid_ip_checksum() {
        let f = udp_frame(10);
        assert_eq!(f.len(), 14 + 20 + 8 + 10);
        let mut sum: u32 = f[14..34]
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
    }
}
