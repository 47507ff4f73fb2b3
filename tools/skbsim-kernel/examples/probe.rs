//! Temporary probe (deleted before hand-off).
use skbsim_kernel::tap::tun_f;
use skbsim_kernel::{Netns, TapConfig, VirtioNetHdr};
use std::time::Duration;

fn hex(b: &[u8]) -> String { b.iter().map(|x| format!("{x:02x}")).collect() }

fn main() {
    let frames = sim::pcap::read_all(std::env::args().nth(1).unwrap()).unwrap();
    let mode = std::env::args().nth(2).unwrap_or_default();
    let hdr_len: u16 = std::env::args().nth(3).map(|s| s.parse().unwrap()).unwrap_or(0);
    let gso_size: u16 = std::env::args().nth(4).map(|s| s.parse().unwrap()).unwrap_or(0);
    let gso_type: u8 = std::env::args().nth(5).map(|s| s.parse().unwrap()).unwrap_or(0);
    let csum_start: u16 = std::env::args().nth(6).map(|s| s.parse().unwrap()).unwrap_or(0);
    let csum_off: u16 = std::env::args().nth(7).map(|s| s.parse().unwrap()).unwrap_or(0);
    let offl: u32 = std::env::args().nth(8).map(|s| s.parse().unwrap()).unwrap_or(0);
    let r = Netns::run(|ns| {
        let writer = std::env::var("WRITER").unwrap_or_default();
        let split: usize = std::env::var("SPLIT").ok().map(|s| s.parse().unwrap()).unwrap_or(0);
        let cfg = match writer.as_str() {
            "napi" => TapConfig::tap("skbA").vnet_hdr(true).napi(true),
            "frags" => TapConfig::tap("skbA").vnet_hdr(true).napi(true).napi_frags(true),
            _ => TapConfig::tap("skbA").vnet_hdr(true),
        };
        let a = ns.tap_up(&cfg)?;
        if std::env::var("GROOFF").is_ok() { skbsim_kernel::set_feature("skbA", "rx-gro", false)?; }
        let b = ns.tap_up(&TapConfig::tap("skbB").vnet_hdr(true).nonblocking(true))?;
        if let Err(e) = b.set_vnet_be(true) { println!("TUNSETVNETBE: {e}"); } else { println!("TUNSETVNETBE ok"); b.set_vnet_be(false)?; }
        b.set_offload(if offl != 0 { offl } else { tun_f::CSUM | tun_f::TSO4 | tun_f::TSO6 | tun_f::USO4 | tun_f::USO6 })?;
        let br = ns.rtnl().create_link("skbbr", "bridge", &[skbsim_kernel::Nla::u8(23, 0)])?;
        for p in [a.ifindex(), b.ifindex()] { ns.rtnl().set_master(p, Some(br))?; }
        ns.rtnl().set_up(br, true)?;
        std::thread::sleep(Duration::from_millis(3000));
        for f in &frames {
            let flags = match mode.as_str() { "partial" => 1, "valid" => 2, _ => 0 };
            let h = VirtioNetHdr { flags, gso_type, hdr_len, gso_size, csum_start, csum_offset: csum_off, num_buffers: None };
            let mut w = h.to_bytes(10);
            w.extend_from_slice(&f.data);
            let n = if split > 0 { a.writev(&[&w[..10], &w[10..10 + split], &w[10 + split..]]) } else { a.write(&w) };
            let imm = b.wait_readable(Duration::ZERO);
            println!("write {} -> {:?}; readable immediately {:?}", w.len(), n, imm);
            std::thread::sleep(Duration::from_millis(50));
            let mut buf = vec![0u8; 70000];
            loop {
                match b.read(&mut buf) {
                    Ok(n) => println!("  read {n}: vnet {:?} head {}", VirtioNetHdr::parse(&buf[..10], false), hex(&buf[10..n.min(80)])),
                    Err(e) => { println!("  {e:?}"); break; }
                }
            }
            println!("  B stats {:?}", ns.rtnl().stats(b.ifindex())?.nonzero());
            println!("  A stats {:?}", ns.rtnl().stats(a.ifindex())?.nonzero());
        }
        Ok(())
    });
    println!("{r:?}");
}
