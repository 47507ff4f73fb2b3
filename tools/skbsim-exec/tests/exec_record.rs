//! The record of an exec run ([`Recorder`]): every open, ioctl (argument and answer),
//! write (count or errno, the skbs the stack got, the far side's answers), read (the
//! bytes or errno), link change and close, as `sim::trace::record` records marked with
//! who can see each field; and the frames at tun_get_user / tun_put_user for the capture.
//! In process (no supervisor) and through the supervisor (this test binary re-run as the
//! program). Expected values come from the frames built here and the kernel rules cited.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::Command;

use sim::profile::LINUX_6_18;
use sim::trace::record::{Record, Seen, Value};
use sim::tun::ioctl::{cmd, iff_flags, Caller, IoctlArg, IFNAMSIZ};
use sim::tun::DeviceKind;
use skbsim_exec::record::Point;
use skbsim_exec::{parse_cidr, run, DeviceTun, Errno, Recorder, SimTun, Stack};

const CLIENT: &str = "SKBSIM_EXEC_RECORD_CLIENT";

const ME: [u8; 6] = [2, 0, 0, 0, 0, 1];

/// A 60-byte Ethernet frame: ARP who-has 10.0.0.2 tell 10.0.0.1 (padded with zeros to
/// the Ethernet minimum, as far_ping.c sends it).
fn arp_request() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&ME);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&ME);
    f.extend_from_slice(&[10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2]);
    f.resize(60, 0);
    f
}

fn ifreq(name: &str, flags: u16) -> IoctlArg {
    let mut n = [0u8; IFNAMSIZ];
    n[..name.len()].copy_from_slice(name.as_bytes());
    IoctlArg::Ifreq { name: n, flags }
}

fn stack_device() -> DeviceTun<Stack> {
    let addrs = vec![parse_cidr("10.0.0.2/24").expect("cidr")];
    DeviceTun::new(LINUX_6_18, Caller::root(), Stack::new(addrs))
}

fn kinds(records: &[Record<'_>]) -> Vec<&'static str> {
    records.iter().map(|r| r.kind).collect()
}

fn text(r: &Record<'_>) -> String {
    let mut s = String::new();
    r.write_block(&mut s);
    s
}

/// The field `name` of `r`: its text and who can see it.
fn field(r: &Record<'_>, name: &str) -> Option<(String, Seen)> {
    r.fields.iter().find(|f| f.name == name).map(|f| {
        let mut s = String::new();
        f.value.text_into(&mut s);
        (s, f.seen)
    })
}

/// The run of `in_process_run_is_recorded`: open, TUNSETIFF tap, up, the ARP request,
/// the reply read, a refused TUNSETVNETHDRSZ, a second file's write without a device,
/// close.
fn tap_session() -> (Vec<Record<'static>>, Vec<skbsim_exec::record::Captured>) {
    let mut t = Recorder::new(stack_device());
    let f = t.open(false);
    let flags = iff_flags::IFF_TAP | iff_flags::IFF_NO_PI;
    t.ioctl(f, cmd::TUNSETIFF, &ifreq("rec0", flags))
        .expect("TUNSETIFF");
    t.set_link(b"rec0", Some(true), None).expect("up");
    assert_eq!(t.write(f, &arp_request()), Ok(60));
    let reply = t.read(f, 1600).expect("the ARP reply");
    assert_eq!(reply.len(), 42);
    // tun.c: TUNSETVNETHDRSZ: `if (vnet_hdr_sz < (int)sizeof(struct virtio_net_hdr))
    // return -EINVAL` (10 bytes).
    assert_eq!(
        t.ioctl(f, cmd::TUNSETVNETHDRSZ, &IoctlArg::Int(7)),
        Err(Errno::EINVAL)
    );
    let g = t.open(true);
    // tun_chr_write_iter: no device, -EBADFD.
    assert_eq!(t.write(g, &arp_request()), Err(Errno::EBADFD));
    t.close(f);
    let (_, rec) = t.finish();
    (rec.records, rec.frames)
}

#[test]
fn in_process_run_is_recorded() {
    let (records, frames) = tap_session();
    assert_eq!(
        kinds(&records),
        ["open", "ioctl", "link", "write", "read", "ioctl", "open", "write", "close"]
    );
    // Events are numbered by their place in the run.
    let numbers: Vec<Option<u64>> = records.iter().map(|r| r.index).collect();
    assert_eq!(numbers, (0..9).map(Some).collect::<Vec<_>>());

    assert_eq!(text(&records[0]), "open 0: file 0\n  nonblock: no\n");
    // TUNSETIFF: its number, the ifreq given and the ifreq copied back (tun_set_iff
    // keeps the flags given: IFF_TAP 0x0002 | IFF_NO_PI 0x1000).
    assert_eq!(
        text(&records[1]),
        "ioctl 1: TUNSETIFF -> 0\n  file: 0\n  cmd: 0x400454ca\n  arg: name rec0 flags 0x1002\n  answer: name rec0 flags 0x1002\n"
    );
    assert_eq!(
        text(&records[2]),
        "link 2: rec0 -> 0\n  dev: rec0\n  up: yes\n"
    );

    // The write: 60 bytes accepted; the stack got one skb, protocol ETH_P_ARP from
    // eth_type_trans, the 60-byte frame, no GSO; the far side answered one frame of 42
    // bytes (14 Ethernet + 28 ARP), queued on the file's queue.
    // No vnet header: tun_get_user leaves ip_summed CHECKSUM_NONE (vnet flags 0).
    let w = &records[3];
    assert_eq!(
        field(w, "skb"),
        Some((
            "protocol 0x0806 len 60 gso_type 0 gso_size 0 gso_segs 0 csum CHECKSUM_NONE or CHECKSUM_COMPLETE (vnet flags 0)".into(),
            Seen::Both
        ))
    );
    assert_eq!(
        field(w, "fate"),
        Some(("delivered to the stack".into(), Seen::ModelOnly))
    );
    assert_eq!(
        field(w, "xmit 0"),
        Some(("len 42 queued on queue 0".into(), Seen::ModelOnly))
    );
    assert!(text(w).starts_with("write 3: 60 bytes -> 60\n"));
    // The model-only fields go under "model" in JSON.
    let j = w.to_json();
    assert_eq!(j["model"]["fate"], "delivered to the stack");
    assert_eq!(j["skb"]["protocol"], 0x0806);
    assert_eq!(j["skb"]["len"], 60);

    // The read: the reply's 42 bytes, ARP op 2 (reply) from 10.0.0.2 to us.
    let r = &records[4];
    assert!(text(r).starts_with("read 4: buffer 1600 -> 42\n"));
    let Some(Value::Bytes(b)) = r
        .fields
        .iter()
        .find(|f| f.name == "bytes")
        .map(|f| &f.value)
    else {
        panic!("no bytes in {}", text(r));
    };
    assert_eq!(&b[..6], &ME);
    assert_eq!(&b[12..14], &[0x08, 0x06]);
    assert_eq!(&b[20..22], &[0, 2]);
    assert_eq!(&b[28..32], &[10, 0, 0, 2]);

    assert_eq!(
        text(&records[5]),
        "ioctl 5: TUNSETVNETHDRSZ -> EINVAL\n  file: 0\n  cmd: 0x400454d8\n  arg: int 7\n"
    );
    assert_eq!(text(&records[6]), "open 6: file 1\n  nonblock: yes\n");
    // No skb: tun_chr_write_iter refused it before tun_get_user.
    assert_eq!(
        text(&records[7]),
        "write 7: 60 bytes -> EBADFD\n  file: 1\n  fate: rejected before an skb existed\n"
    );
    assert_eq!(text(&records[8]), "close 8: file 0\n");

    // The capture: the frame at tun_get_user (the write, no PI or vnet header here) and
    // at tun_put_user (the read), Ethernet frames of rec0, stamped by their event.
    assert_eq!(frames.len(), 2);
    assert_eq!(
        (frames[0].point, frames[0].event, frames[0].kind),
        (Point::TunGetUser, 3, DeviceKind::Tap)
    );
    assert_eq!(frames[0].data, arp_request());
    assert_eq!(frames[0].dev, b"rec0");
    assert_eq!(frames[0].ts_ns, 1_000_003_000);
    assert!(frames[0].comment.contains("skb: protocol 0x0806 len 60"));
    assert_eq!((frames[1].point, frames[1].event), (Point::TunPutUser, 4));
    assert_eq!(frames[1].data[..], b[..]);
}

#[test]
fn the_same_run_gives_the_same_record() {
    let (a, fa) = tap_session();
    let (b, fb) = tap_session();
    assert_eq!(a, b);
    assert_eq!(fa, fb);
}

/// A 28-byte IPv4/UDP packet 10.0.0.1:1000 -> 10.0.0.2:9 (discard: nobody answers).
fn udp_packet() -> Vec<u8> {
    vec![
        0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, 17, 0x26, 0xce, 10, 0, 0, 1, 10, 0, 0, 2, 0x03, 0xe8, 0,
        9, 0, 8, 0, 0,
    ]
}

#[test]
fn capture_leaves_out_the_pi_and_the_vnet_header() {
    let mut t = Recorder::new(stack_device());
    let f = t.open(false);
    // A tun with the PI (no IFF_NO_PI) and a vnet header (default vnet_hdr_sz 10).
    let flags = iff_flags::IFF_TUN | iff_flags::IFF_VNET_HDR;
    t.ioctl(f, cmd::TUNSETIFF, &ifreq("rec1", flags))
        .expect("TUNSETIFF");
    t.set_link(b"rec1", Some(true), None).expect("up");
    // tun_pi: flags 0, proto ETH_P_IP; virtio_net_hdr: all zero (no csum, no GSO).
    let mut w = vec![0, 0, 0x08, 0];
    w.extend_from_slice(&[0; 10]);
    w.extend_from_slice(&udp_packet());
    assert_eq!(t.write(f, &w), Ok(42));
    let (_, rec) = t.finish();
    let write = &rec.records[3];
    assert_eq!(write.kind, "write");
    // The skb is the IP packet: protocol from the PI, 28 bytes, no GSO.
    assert_eq!(
        field(write, "skb").map(|f| f.0),
        Some("protocol 0x0800 len 28 gso_type 0 gso_size 0 gso_segs 0 csum CHECKSUM_NONE or CHECKSUM_COMPLETE (vnet flags 0)".into())
    );
    assert_eq!(rec.frames.len(), 1);
    assert_eq!(rec.frames[0].data, udp_packet());
    assert_eq!(rec.frames[0].kind, DeviceKind::Tun);
}

/// The program of `supervised_run_is_recorded`: open, TUNSETIFF tap "rec2", up (a
/// socket's SIOCSIFFLAGS), the ARP request, a blocking read of the reply.
fn client() -> i32 {
    let Ok(mut tun) = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
    else {
        return 10;
    };
    let mut ifr = [0u8; 40];
    ifr[..4].copy_from_slice(b"rec2");
    let flags = iff_flags::IFF_TAP | iff_flags::IFF_NO_PI;
    ifr[16..18].copy_from_slice(&flags.to_le_bytes());
    // SAFETY: TUNSETIFF reads and writes the 40-byte ifreq, alive for the call.
    if unsafe { libc::ioctl(tun.as_raw_fd(), cmd::TUNSETIFF as _, ifr.as_mut_ptr()) } != 0 {
        return 11;
    }
    // SAFETY: plain socket(2).
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    ifr[16..18].copy_from_slice(&(libc::IFF_UP as u16).to_le_bytes());
    // SAFETY: SIOCSIFFLAGS reads the 40-byte ifreq, alive for the call.
    if unsafe { libc::ioctl(s, libc::SIOCSIFFLAGS as _, ifr.as_mut_ptr()) } != 0 {
        return 12;
    }
    if !matches!(tun.write(&arp_request()), Ok(60)) {
        return 13;
    }
    let mut buf = [0u8; 1600];
    match tun.read(&mut buf) {
        Ok(42) => 0,
        _ => 14,
    }
}

#[test]
fn supervised_run_is_recorded() {
    if std::env::var_os(CLIENT).is_some() {
        std::process::exit(client());
    }
    let mut me = Command::new(std::env::current_exe().expect("test binary"));
    me.args(["--exact", "supervised_run_is_recorded", "--test-threads=1"])
        .env(CLIENT, "1");
    let (code, rec) = run(Recorder::new(stack_device()), me).expect("supervised run");
    assert_eq!(code, 0, "the client's step {code} failed");
    let (_, rec) = rec.finish();
    // The last close is recorded when the program's end of the socketpair is gone (its
    // exit): tun_chr_close on the last fput.
    assert_eq!(
        kinds(&rec.records),
        ["open", "ioctl", "link", "write", "read", "close"]
    );
    assert!(text(&rec.records[1]).starts_with("ioctl 1: TUNSETIFF -> 0\n"));
    assert!(text(&rec.records[4]).starts_with("read 4: buffer 1600 -> 42\n"));
    assert_eq!(rec.frames.len(), 2);
    assert_eq!(rec.frames[0].data, arp_request());
}
