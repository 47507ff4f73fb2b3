//! Real clients under `skbsim exec` against the real kernel (issue 23, item 5):
//! - the kernel's own tun selftest (ci/tun-selftest.sh: tools/testing/selftests/net/tun.c
//!   from Debian's linux-source, built statically), every test's verdict compared;
//! - rtnetlink on the simulated device (tools/skbsim-exec/tests/c/tun_rtnl.c): the acks of
//!   RTM_SETLINK up/down/MTU, what the socket ioctls then see, and the files left by
//!   RTM_DELLINK, line by line.
//!
//! Both need root (the real arm's namespace, and dropping to `nobody` for exec): they are
//! `#[ignore]`d and ci/test.sh runs them as root with --include-ignored.

mod exec_common;

use exec_common::lines;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn root_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// ci/tun-selftest.sh with this build's skbsim: the 6.12 source's tests under the 6.12 and
/// 6.18 profiles. Before exec answered RTM_DELLINK, delete_detach_close was "not ok" under
/// exec (its TUNSETQUEUE after the delete found the device still there) and the script
/// exited 1 with a DIFFERENT line.
#[test]
#[ignore = "real kernel, gcc and the lab's linux-source: needs root; ci/test.sh runs it as root with --include-ignored"]
fn kernel_tun_selftest_same_verdicts_as_the_real_kernel() {
    skbsim_kernel::require_privileges();
    let out = Command::new(root_dir().join("ci/tun-selftest.sh"))
        .args(["6.12", "linux-6.12", "linux-6.18"])
        .env("SKBSIM", env!("CARGO_BIN_EXE_skbsim"))
        .output()
        .expect("run ci/tun-selftest.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // Not vacuous: the five queue-lifecycle tests ran on both sides, under both profiles.
    let both_ok = stdout
        .lines()
        .filter(|l| l.starts_with("tun.") && l.split_whitespace().skip(1).eq(["ok", "ok"]))
        .count();
    assert_eq!(both_ok, 10, "{stdout}");
}

/// Before exec answered rtnetlink: the acks came from the real kernel (-1: EPERM, the
/// program is `nobody`), up and mtu stayed 0 and 1500, and TUNSETQUEUE after the delete
/// was 0 (the device still there).
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn rtnetlink_on_the_simulated_device_is_the_real_kernels() {
    skbsim_kernel::require_privileges();
    let dir = tempfile::tempdir().expect("temp dir");
    let probe = dir.path().join("tun_rtnl");
    let src = root_dir().join("tools/skbsim-exec/tests/c/tun_rtnl.c");
    let built = Command::new("gcc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&probe)
        .arg(&src)
        .status()
        .expect("run gcc");
    assert!(built.success(), "gcc {}", src.display());
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod temp dir");
    let real = lines(
        &Command::new("unshare")
            .arg("-n")
            .arg(&probe)
            .output()
            .expect("run unshare"),
    );
    let sim = lines(
        &Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_skbsim"))
            .args(["exec", "--far-side", "loopback", "--"])
            .arg(&probe)
            .current_dir(dir.path())
            .output()
            .expect("run setpriv"),
    );
    // The real kernel ran it all: acks, the changes, the delete.
    assert_eq!(real["setlink_up_mtu"], "0 seq_ok=1");
    assert_eq!(real["mtu"], "1400");
    assert_eq!(real["setqueue_after_del"], "EINVAL");
    assert_eq!(sim, real);
}
