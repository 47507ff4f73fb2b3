//! [`DeviceTun`] under the supervisor: a Rust client (this test binary, re-run) opens a
//! tun, brings it up and writes an IPv4/UDP packet; the device model hands the skb to the
//! far side (here one that sends every skb back), whose answer goes through
//! dev_queue_xmit -> tun_net_xmit to the file's tx_ring and is read by the program, by a
//! read that was already blocked before the write. And a blocking read on a file with no
//! device answers EBADFD at once (tun_chr_read_iter: `if (!tun) return -EBADFD`) instead
//! of waiting for a frame that can never come.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use sim::profile::LINUX_6_18;
use sim::skb::SkBuff;
use sim::tun::ioctl::{cmd, iff_flags, Caller};
use sim::tun::DeviceKind;
use skbsim_exec::{run, DeviceTun, FarSide, LoopbackTun};

const CLIENT: &str = "SKBSIM_EXEC_FAR_SIDE_CLIENT";

/// Sends every skb the stack received back out of the device it came in on.
#[derive(Debug, Default)]
struct Echo {
    seen: Vec<(Vec<u8>, Vec<u8>)>,
}

impl FarSide for Echo {
    fn receive(&mut self, dev: &[u8], _kind: DeviceKind, skb: SkBuff) -> Vec<SkBuff> {
        let bytes = skb.linear().to_vec();
        self.seen.push((dev.to_vec(), bytes.clone()));
        vec![SkBuff::from_frame(&bytes, 64, bytes.len())]
    }
}

/// A 28-byte IPv4/UDP packet 10.0.0.1:1000 -> 10.0.0.2:7, header checksum filled in.
fn packet() -> Vec<u8> {
    let mut p = vec![
        0x45u8, 0, 0, 28, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x03, 0xe8,
        0, 7, 0, 8, 0, 0,
    ];
    let sum: u32 = p[..20]
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    let folded = (sum & 0xffff) + (sum >> 16);
    let csum = !((folded & 0xffff) + (folded >> 16)) as u16;
    p[10..12].copy_from_slice(&csum.to_be_bytes());
    p
}

fn open_tun() -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
}

/// TUNSETIFF (IFF_TUN | IFF_NO_PI, "fs0"), then SIOCSIFFLAGS IFF_UP on a socket.
fn make_up_tun(tun: &File) -> Result<(), String> {
    let mut ifr = [0u8; 40];
    ifr[..3].copy_from_slice(b"fs0");
    let flags = iff_flags::IFF_TUN | iff_flags::IFF_NO_PI;
    ifr[16..18].copy_from_slice(&flags.to_le_bytes());
    // SAFETY: TUNSETIFF reads and writes the 40-byte ifreq, alive for the call.
    let r = unsafe { libc::ioctl(tun.as_raw_fd(), cmd::TUNSETIFF as _, ifr.as_mut_ptr()) };
    if r != 0 {
        return Err(format!("TUNSETIFF: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: plain socket(2).
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    ifr[16..18].copy_from_slice(&(libc::IFF_UP as u16).to_le_bytes());
    // SAFETY: SIOCSIFFLAGS reads the 40-byte ifreq, alive for the call.
    let r = unsafe { libc::ioctl(s, libc::SIOCSIFFLAGS as _, ifr.as_mut_ptr()) };
    if r != 0 {
        return Err(format!("SIOCSIFFLAGS: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The echo client: exits 0 only when the answer came back to a read blocked before it.
fn echo_client() -> i32 {
    let mut tun = match open_tun() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("open: {e}");
            return 10;
        }
    };
    if let Err(e) = make_up_tun(&tun) {
        eprintln!("{e}");
        return 11;
    }
    let mut reader = match tun.try_clone() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("dup: {e}");
            return 12;
        }
    };
    let blocked = std::thread::spawn(move || {
        let mut back = [0u8; 200];
        reader.read(&mut back).map(|n| back[..n].to_vec())
    });
    // Give the reader time to block on the empty queue first.
    std::thread::sleep(Duration::from_millis(200));
    let p = packet();
    if !matches!(tun.write(&p), Ok(28)) {
        eprintln!("write failed");
        return 13;
    }
    match blocked.join() {
        Ok(Ok(back)) if back == p => 0,
        other => {
            eprintln!("read: {other:?}");
            14
        }
    }
}

/// A blocking read on a file never attached to a device: EBADFD, at once.
fn unattached_client() -> i32 {
    let mut tun = match open_tun() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("open: {e}");
            return 10;
        }
    };
    let mut buf = [0u8; 100];
    match tun.read(&mut buf) {
        Err(e) if e.raw_os_error() == Some(libc::EBADFD) => 0,
        other => {
            eprintln!("read: {other:?}");
            15
        }
    }
}

fn rerun(test: &str, role: &str) -> Command {
    let mut me = Command::new(std::env::current_exe().expect("test binary"));
    me.args(["--exact", test, "--test-threads=1"])
        .env(CLIENT, role);
    me
}

#[test]
fn far_side_answer_reaches_a_blocked_read() {
    match std::env::var(CLIENT).as_deref() {
        Ok("echo") => std::process::exit(echo_client()),
        Ok(_) => return,
        Err(_) => {}
    }
    let tun = DeviceTun::new(LINUX_6_18, Caller::root(), Echo::default());
    let (code, tun) =
        run(tun, rerun("far_side_answer_reaches_a_blocked_read", "echo")).expect("supervised run");
    assert_eq!(code, 0, "the client's step {code} failed (see its stderr)");
    // The far side got the packet as the program wrote it, from the device it named.
    assert_eq!(tun.far().seen, vec![(b"fs0".to_vec(), packet())]);
    assert_eq!(tun.xmit_lost(), 0);
}

#[test]
fn blocking_read_without_a_device_is_ebadfd() {
    match std::env::var(CLIENT).as_deref() {
        Ok("unattached") => std::process::exit(unattached_client()),
        Ok(_) => return,
        Err(_) => {}
    }
    let test = "blocking_read_without_a_device_is_ebadfd";
    let device = DeviceTun::new(LINUX_6_18, Caller::root(), Echo::default());
    let (code, _) = run(device, rerun(test, "unattached")).expect("supervised run");
    assert_eq!(code, 0, "device model: the client's step {code} failed");
    let lb = LoopbackTun::new(LINUX_6_18, Caller::root());
    let (code, _) = run(lb, rerun(test, "unattached")).expect("supervised run");
    assert_eq!(code, 0, "loopback: the client's step {code} failed");
}
