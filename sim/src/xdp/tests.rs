//! The redirect checks of both XDP flavours, each expectation from the kernel source:
//! include/linux/netdevice.h: xdp_ok_fwd_dev (the target must be IFF_UP, -ENETDOWN, and
//! the frame at most mtu + hard_header_len (ETH_HLEN) + VLAN_HLEN, -EMSGSIZE);
//! net/core/filter.c: a target index with no device is -EINVAL; include/net/xdp.h:
//! xdp_convert_buff_to_frame needs sizeof(struct xdp_frame) of headroom.

use crate::bpf::XdpBuff;
use crate::errno::Errno;
use crate::net::Net;
use crate::skb::SkBuff;
use crate::tun::{TunConfig, TunDevice};

use super::xdp_do_redirect::xdp_do_redirect;

const A: u32 = 2;
const B: u32 = 3;

fn net(b_up: bool) -> Net {
    let mut net = Net::new();
    net.add(A, TunDevice::new(TunConfig::default()));
    net.add(
        B,
        TunDevice::new(TunConfig {
            up: b_up,
            ..TunConfig::default()
        }),
    );
    net
}

fn frame(len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.resize(len, 0);
    f
}

#[test]
fn generic_redirect_takes_mtu_plus_eth_and_vlan_headers() {
    let mut net = net(true);
    // mtu 1500: 1518 bytes fit, 1519 do not.
    let fits = SkBuff::from_frame(&frame(1518), 64, 1518);
    assert_eq!(net.xdp_do_generic_redirect(&fits, Some(B)), Ok(B));
    assert_eq!(net.dev(B).unwrap().queued(), 1);
    let big = SkBuff::from_frame(&frame(1519), 64, 1519);
    assert_eq!(
        net.xdp_do_generic_redirect(&big, Some(B)),
        Err(Errno::EMSGSIZE)
    );
    assert_eq!(net.dev(B).unwrap().queued(), 1);
}

#[test]
fn generic_redirect_needs_a_target_that_exists_and_is_up() {
    let skb = SkBuff::from_frame(&frame(60), 64, 60);
    let mut down = net(false);
    assert_eq!(
        down.xdp_do_generic_redirect(&skb, Some(B)),
        Err(Errno::ENETDOWN)
    );
    assert_eq!(
        down.xdp_do_generic_redirect(&skb, Some(9)),
        Err(Errno::EINVAL)
    );
    assert_eq!(down.dev(B).unwrap().queued(), 0);
}

#[test]
fn native_redirect_checks_headroom_then_the_target() {
    let f = frame(1519);
    // 256 bytes of headroom hold the xdp_frame; the 1519-byte frame is too big for B.
    let roomy = XdpBuff::with_layout(&f, 256, 4096).unwrap();
    let mut up = net(true);
    assert_eq!(
        xdp_do_redirect(&mut up, &roomy, Some(B)),
        Err(Errno::EMSGSIZE)
    );
    let small = XdpBuff::with_layout(&f[..1518], 256, 4096).unwrap();
    assert_eq!(xdp_do_redirect(&mut up, &small, Some(B)), Ok(B));
    assert_eq!(
        xdp_do_redirect(&mut net(false), &small, Some(B)),
        Err(Errno::ENETDOWN)
    );
    assert_eq!(
        xdp_do_redirect(&mut up, &small, Some(9)),
        Err(Errno::EINVAL)
    );
    // 39 bytes of headroom cannot hold the 40-byte xdp_frame: -EOVERFLOW, whatever the
    // target, and nothing more is queued on B.
    let tight = XdpBuff::with_layout(&f[..60], 39, 4096).unwrap();
    assert_eq!(
        xdp_do_redirect(&mut up, &tight, Some(B)),
        Err(Errno::EOVERFLOW)
    );
    assert_eq!(up.dev(B).unwrap().queued(), 1);
}
