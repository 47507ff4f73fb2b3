//! `skbsim exec` end to end: C programs (tools/skbsim-exec/tests/c/) built with gcc, run
//! as the unprivileged user `nobody` under `skbsim exec`, and the same binaries run on
//! the real kernel in a private network namespace (`unshare -n`, root). Every answer the
//! real kernel can give is compared line by line; the read path, which the loopback far
//! side stands in for, is checked on its own.

mod exec_common;

use exec_common::lines;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOBODY: &str = "65534";

fn c_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../skbsim-exec/tests/c")
        .join(name)
}

/// gcc `name` into a directory `nobody` can enter. Every test here is `#[ignore]`d: it
/// needs root (to drop to `nobody` and to give the real arm its namespace) and gcc, which
/// ci/install.sh installs; ci/test.sh runs them as root with --include-ignored.
fn build(dir: &tempfile::TempDir, name: &str) -> Option<PathBuf> {
    skbsim_kernel::require_privileges();
    let out = dir.path().join(name.trim_end_matches(".c"));
    let built = Command::new("gcc")
        .args(["-O1", "-Wall", "-pthread", "-o"])
        .arg(&out)
        .arg(c_source(name))
        .status();
    match built {
        Ok(s) if s.success() => {}
        other => panic!("gcc could not build {name}: {other:?}"),
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod temp dir");
    Some(out)
}

/// `skbsim exec ARGS` as `nobody` (no capabilities, no groups).
fn exec_as_nobody(dir: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .arg(env!("CARGO_BIN_EXE_skbsim"))
        .arg("exec")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run setpriv")
}

/// The program on the real kernel, root in a fresh network namespace whose new devices
/// have IPv6 off: otherwise the stack's own frames (addrconf's router solicitations and
/// MLD reports once the tap is up) race the program's reads and polls.
fn real(dir: &Path, program: &Path, args: &[&str]) -> Output {
    Command::new("unshare")
        .args(["-n", "sh", "-c"])
        .arg("echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6 && exec \"$0\" \"$@\"")
        .arg(program)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run unshare")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// Every ioctl answer (the TUN* ioctls on the device fd and the socket ioctls naming the
/// device), poll before any frame, close and the device's end are the real kernel's; the
/// written frame comes back through the loopback and makes the fd readable, and only then.
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn probe_as_nobody_answers_as_the_real_kernel() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(probe) = build(&dir, "tun_probe.c") else {
        return;
    };
    let real = lines(&real(dir.path(), &probe, &[]));
    let sim = lines(&exec_as_nobody(
        dir.path(),
        &["--far-side", "loopback", "--", s(&probe)],
    ));
    // The real kernel ran the whole program (a vacuous comparison would pass too).
    assert_eq!(real.get("setiff").map(String::as_str), Some("0"));
    assert_eq!(real.get("setiff_again").map(String::as_str), Some("EEXIST"));
    // The real tap has no far side: nothing comes back to read.
    let loopback = [
        "poll_after_write",
        "read",
        "read_same",
        "readv",
        "readv_same",
    ];
    // The hardware address (docs/tun-device.md#hwaddr): answered on both.
    assert_eq!(real["siocgifhwaddr"], "0");
    for (k, v) in &real {
        if !loopback.contains(&k.as_str()) {
            assert_eq!(
                sim.get(k),
                Some(v),
                "{k}: exec {:?}, real kernel {v}",
                sim.get(k)
            );
        }
    }
    assert_eq!(sim.len(), real.len(), "exec printed {sim:?}");
    assert_eq!(sim["read"], "60");
    assert_eq!(sim["read_same"], "1");
    // writev's two pieces come back as one frame through readv's two buffers.
    assert_eq!(sim["readv"], "60");
    assert_eq!(sim["readv_same"], "1");
    // POLLIN | POLLOUT while the frame waits, POLLOUT alone before and after.
    assert_eq!(sim["poll_after_write"], "0x5");
    assert_eq!(sim["poll_after_read"], "0x4");
}

/// The device outlives the first of two fds (dup) and a child that used it (fork), and
/// goes with the last close, as tun_chr_close on the last fput: the same lines as the
/// real kernel's.
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn lifecycle_across_dup_fork_close_is_the_real_kernels() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(prog) = build(&dir, "tun_lifecycle.c") else {
        return;
    };
    let real = lines(&real(dir.path(), &prog, &[]));
    let sim = lines(&exec_as_nobody(
        dir.path(),
        &["--far-side", "loopback", "--", s(&prog)],
    ));
    assert_eq!(
        real.get("gone_errno_is_enodev").map(String::as_str),
        Some("1")
    );
    assert_eq!(sim, real);
}

/// A blocking read in one thread waits until another thread's write queues a frame
/// (loopback), and epoll on the device fd sees a queued frame.
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn blocking_read_wakes_and_epoll_sees_the_frame() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(prog) = build(&dir, "tun_lifecycle.c") else {
        return;
    };
    let sim = lines(&exec_as_nobody(
        dir.path(),
        &["--far-side", "loopback", "--", s(&prog), "blocking"],
    ));
    assert_eq!(sim["epoll_before"], "0");
    assert_eq!(sim["write"], "60");
    assert_eq!(sim["blocking_read"], "60");
    assert_eq!(sim["epoll_after_write"], "1");
}

/// The profile answers: TUNGETFEATURES under linux-3.12 is IFF_TUN | IFF_TAP |
/// TUN_FEATURES of 3.12's tun.c (IFF_NO_PI | IFF_ONE_QUEUE | IFF_VNET_HDR |
/// IFF_MULTI_QUEUE) = 0x7103: no IFF_NAPI, IFF_NAPI_FRAGS, IFF_NO_CARRIER.
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn profile_decides_the_answers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(probe) = build(&dir, "tun_probe.c") else {
        return;
    };
    let out = exec_as_nobody(
        dir.path(),
        &[
            "--profile",
            "linux-3.12",
            "--far-side",
            "loopback",
            "--",
            s(&probe),
        ],
    );
    assert_eq!(lines(&out)["features"], "0x7103");
}

/// The program's exit code is exec's, a signal's death is 128 + the signal, and a
/// program that cannot start is one line and exit 2.
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn exit_codes() {
    let dir = tempfile::tempdir().expect("temp dir");
    if build(&dir, "tun_probe.c").is_none() {
        return;
    }
    let code = |args: &[&str]| exec_as_nobody(dir.path(), args).status.code();
    let lb = ["--far-side", "loopback", "--"];
    assert_eq!(code(&[&lb[..], &["sh", "-c", "exit 7"]].concat()), Some(7));
    assert_eq!(
        code(&[&lb[..], &["sh", "-c", "kill -9 $$"]].concat()),
        Some(137)
    );
    let missing = exec_as_nobody(dir.path(), &[&lb[..], &["/nonexistent/prog"]].concat());
    assert_eq!(missing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot run /nonexistent/prog"), "{err}");
}

/// A program that cannot be supervised gets one line saying why, exit 2: inside another
/// `skbsim exec` a second listener is refused (kernel/seccomp.c: init_listener, EBUSY:
/// one listener per filter chain).
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn unsupervisable_says_why() {
    let dir = tempfile::tempdir().expect("temp dir");
    if build(&dir, "tun_probe.c").is_none() {
        return;
    }
    let skbsim = env!("CARGO_BIN_EXE_skbsim");
    let lb = ["--far-side", "loopback", "--"];
    let inner = [skbsim, "exec", "--far-side", "loopback", "--", "true"];
    let out = exec_as_nobody(dir.path(), &[&lb[..], &inner[..]].concat());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot supervise true: seccomp user notification is unavailable"),
        "{err}"
    );
}
