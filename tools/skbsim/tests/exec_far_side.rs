//! `skbsim exec` with the default far side (`stack`): tools/skbsim-exec/tests/c/far_ping.c
//! as `nobody` asks for 10.0.0.2 by ARP on a tap and pings it; the same binary on the real
//! kernel (`unshare -n`, root, 10.0.0.2/24 on the tap) gets the same fields back: ARP
//! reply, ICMP echo reply with its id, seq, checksum, TTL and payload.

mod exec_common;

use exec_common::lines;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn ping_the_far_side_as_the_real_kernel_answers() {
    skbsim_kernel::require_privileges();
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("far_ping");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../skbsim-exec/tests/c/far_ping.c");
    let built = Command::new("gcc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&prog)
        .arg(&src)
        .status();
    assert!(
        built.is_ok_and(|s| s.success()),
        "gcc could not build {}",
        src.display()
    );
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod temp dir");
    let real = Command::new("unshare")
        .args(["-n", "sh", "-c"])
        .arg("echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6 && exec \"$0\" real")
        .arg(&prog)
        .output()
        .expect("run unshare");
    let sim = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_skbsim"))
        .args(["exec", "--"])
        .arg(&prog)
        .current_dir(dir.path())
        .output()
        .expect("run skbsim exec");
    let (real, sim) = (lines(&real), lines(&sim));
    // Computed by hand: the reply's checksum is the request's (0x7271) with type 8 -> 0.
    assert_eq!(real.get("icmp_csum").map(String::as_str), Some("0x7a71"));
    assert_eq!(real.get("arp_op").map(String::as_str), Some("2"));
    assert_eq!(sim, real);
}
