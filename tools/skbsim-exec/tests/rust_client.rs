//! The library in-process: [`skbsim_exec::run`] supervises a Rust program (this test
//! binary, re-run as the client) that opens /dev/net/tun with std, makes its ioctls with
//! libc and reads and writes with std::io; afterwards the [`LoopbackTun`] it returns shows
//! the device as the program left it. Runs as whoever runs the tests: no root needed.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::Command;

use sim::profile::LINUX_6_18;
use sim::tun::ioctl::{cmd, iff_flags, Caller};
use skbsim_exec::{run, LoopbackTun};

const CLIENT: &str = "SKBSIM_EXEC_TEST_CLIENT";

/// The client: exits 0 only when every step answered as the kernel would.
fn client() -> i32 {
    let mut tun = match OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("open: {e}");
            return 10;
        }
    };
    let mut ifr = [0u8; 40];
    ifr[..6].copy_from_slice(b"rust%d");
    let flags = iff_flags::IFF_TUN | iff_flags::IFF_NO_PI;
    ifr[16..18].copy_from_slice(&flags.to_le_bytes());
    // SAFETY: TUNSETIFF reads and writes the 40-byte ifreq, alive for the call.
    let r = unsafe { libc::ioctl(tun.as_raw_fd(), cmd::TUNSETIFF as _, ifr.as_mut_ptr()) };
    if r != 0 || &ifr[..6] != b"rust0\0" {
        eprintln!("TUNSETIFF: {r} {:?}", &ifr[..8]);
        return 11;
    }
    // An IPv4 header's first bytes: the loopback gives them back unchanged.
    let packet = [
        0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    match tun.write(&packet) {
        Ok(20) => {}
        other => {
            eprintln!("write: {other:?}");
            return 12;
        }
    }
    let mut back = [0u8; 100];
    match tun.read(&mut back) {
        Ok(20) if back[..20] == packet => 0,
        other => {
            eprintln!("read: {other:?}");
            13
        }
    }
}

#[test]
fn rust_program_under_the_supervisor() {
    if std::env::var_os(CLIENT).is_some() {
        std::process::exit(client());
    }
    let mut me = Command::new(std::env::current_exe().expect("test binary"));
    me.args([
        "--exact",
        "rust_program_under_the_supervisor",
        "--test-threads=1",
    ])
    .env(CLIENT, "1");
    let tun = LoopbackTun::new(LINUX_6_18, Caller::root());
    let (code, tun) = run(tun, me).expect("supervised run");
    assert_eq!(code, 0, "the client's step {code} failed (see its stderr)");
    // The client exited: its file closed and took the non-persistent device with it.
    assert_eq!(tun.net().by_name(b"rust0"), None);
}

/// A program that never opens the device runs untouched (its reads and writes on pipes
/// continue into the kernel) and its exit code comes back.
#[test]
fn a_command_that_never_opens_the_device_runs_untouched() {
    if std::env::var_os(CLIENT).is_some() {
        return;
    }
    let mut sh = Command::new("sh");
    sh.args(["-c", "test \"$(printf abc | cat)\" = abc && exit 3"]);
    let tun = LoopbackTun::new(LINUX_6_18, Caller::root());
    let (code, _) = run(tun, sh).expect("supervised run");
    assert_eq!(code, 3);
}
