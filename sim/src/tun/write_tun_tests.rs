//! Writes into an IFF_TUN device (docs/tap-write.md#tun-device). Expectations from
//! drivers/net/tun.c (6.1, 6.12): tun_get_user's IFF_TUN branch (protocol from the PI, or
//! with IFF_NO_PI from the version nibble, anything else dropped with EINVAL and
//! rx_dropped; skb_reset_mac_header, no eth_type_trans), tun_xdp_one's unconditional
//! eth_type_trans, and what userspace puts in a tun write (the IP packet).

use super::*;
use crate::pipeline::tap_write::{compose_write, device_payload};
use crate::profile::LINUX_6_18;
use crate::scenario::Scenario;
use crate::tun::{TunConfig, TunDevice, TunStats};

const A: u32 = 2;

/// 20-byte IPv4 header (no options) + 8 bytes of UDP-ish payload.
fn ipv4() -> Vec<u8> {
    let mut p = vec![
        0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    p.extend_from_slice(&[0x13, 0x88, 0x13, 0x89, 0, 8, 0, 0]);
    p
}

/// A 40-byte IPv6 header with no payload.
fn ipv6() -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0, 0, 0, 59, 64];
    p.extend_from_slice(&[0xfd; 32]);
    p
}

fn tun_net(no_pi: bool) -> Net {
    let mut net = Net::new();
    net.add(
        A,
        TunDevice::new(TunConfig {
            kind: DeviceKind::Tun,
            no_pi,
            ..TunConfig::default()
        }),
    );
    net
}

fn write(net: &mut Net, bytes: &[u8]) -> WriteOutcome {
    let p = &LINUX_6_18;
    net.tun_write(A, bytes, WriteOpts::default(), &p.tun_write, &p.tun_read)
        .unwrap()
}

fn stats(net: &Net) -> TunStats {
    net.dev(A).unwrap().stats
}

fn pi(proto: u16, packet: &[u8]) -> Vec<u8> {
    let mut w = vec![0, 0];
    w.extend_from_slice(&proto.to_be_bytes());
    w.extend_from_slice(packet);
    w
}

#[test]
fn no_pi_protocol_is_the_version_nibble() {
    for (packet, proto) in [(ipv4(), ETH_P_IP), (ipv6(), ETH_P_IPV6)] {
        let mut net = tun_net(true);
        let out = write(&mut net, &packet);
        assert_eq!(out.result, Ok(packet.len()));
        assert_eq!(out.fate, Fate::Stack);
        // The stack gets the packet itself, from its first byte, as skb->protocol says.
        assert_eq!(net.stack.len(), 1);
        assert_eq!(net.stack[0].frame, packet);
        assert_eq!(net.stack[0].protocol, proto);
        let st = stats(&net);
        assert_eq!((st.rx_packets, st.rx_bytes), (1, packet.len() as u64));
        assert_eq!(st.rx_dropped, 0);
    }
}

#[test]
fn no_pi_other_versions_are_einval_and_rx_dropped() {
    // Version 0 (an ARP payload), 5, 15, and an empty write (pskb_may_pull(skb, 1) fails).
    for packet in [
        vec![0x00, 0x01, 0x08, 0x00],
        vec![0x55; 20],
        vec![0xff; 20],
        vec![],
    ] {
        let mut net = tun_net(true);
        let out = write(&mut net, &packet);
        assert_eq!(out.result, Err(Errno::EINVAL), "{packet:02x?}");
        assert!(net.stack.is_empty());
        let st = stats(&net);
        assert_eq!((st.rx_dropped, st.rx_packets, st.rx_bytes), (1, 0, 0));
    }
}

#[test]
fn pi_protocol_is_taken_as_is() {
    // IPv4 bytes under PI proto 0x86dd, and a version-0 packet under ARP: tun_get_user
    // does not look at the packet when there is a PI.
    for (packet, proto) in [(ipv4(), ETH_P_IPV6), (vec![0x00, 0x01, 0x08, 0x00], 0x0806)] {
        let mut net = tun_net(false);
        let w = pi(proto, &packet);
        let out = write(&mut net, &w);
        assert_eq!(out.result, Ok(w.len()));
        assert_eq!(net.stack.len(), 1);
        assert_eq!(net.stack[0].frame, packet);
        assert_eq!(net.stack[0].protocol, proto);
        // rx_bytes counts the packet without the PI.
        assert_eq!(stats(&net).rx_bytes, packet.len() as u64);
    }
}

#[test]
fn a_tun_write_carries_the_ip_packet_not_an_ethernet_frame() {
    // The input is Ethernet (a raw-IP capture is given a synthesized header); what a tun
    // device is written is the packet after the header and any in-band tag.
    let mut eth = vec![
        2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0x00, 0x64, 0x08, 0x00,
    ];
    eth.extend_from_slice(&ipv4());
    assert_eq!(
        device_payload(DeviceKind::Tun, &eth),
        (&ipv4()[..], ETH_P_IP)
    );
    assert_eq!(device_payload(DeviceKind::Tap, &eth), (&eth[..], 0x8100));
    assert_eq!(device_payload(DeviceKind::Tun, &eth[..10]).0, &[] as &[u8]);

    let text = "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"tap-write\"\n\
                [device]\nkind = \"tun\"\nno_pi = false\n";
    let path = std::path::Path::new("scenarios/tap-write/x.toml");
    let sc = Scenario::parse(path, text).expect("scenario");
    let (w, _) = compose_write(&sc, 0, &eth);
    // PI (flags 0, proto 0x0800), then the IPv4 packet: 4 + 28 bytes, no MAC header.
    assert_eq!(w, pi(ETH_P_IP, &ipv4()));
}

#[test]
fn tun_xdp_one_takes_the_ip_header_as_ethernet_on_a_tun() {
    // tun_xdp_one calls eth_type_trans for tun and tap alike: on a tun the stack gets the
    // packet from byte 14 on, protocol from bytes 12-13 (here IPv4's source 10.0 ->
    // 0x0a00, an EtherType since it is >= 0x0600).
    use crate::bpf::XdpBuff;
    use crate::tun::sendmsg::BatchBuff;
    use crate::wire::virtio_net_hdr::VirtioNetHdrRepr;
    let mut net = tun_net(true);
    let packet = ipv4();
    let mut buffs = vec![BatchBuff {
        xdp: XdpBuff::new(&packet),
        gso: VirtioNetHdrRepr::default(),
    }];
    let out = net
        .tun_sendmsg_batch(A, WriteOpts::default(), &mut buffs, &LINUX_6_18.tun_write)
        .unwrap();
    assert_eq!(out.per_buffer[0].result, Ok(()));
    assert_eq!(net.stack.len(), 1);
    assert_eq!(net.stack[0].frame, packet[14..]);
    assert_eq!(net.stack[0].protocol, 0x0a00);
    // dev_sw_netstats_rx_add(datasize): the whole packet.
    assert_eq!(stats(&net).rx_bytes, packet.len() as u64);
}
