//! `skbsim lab --kernel-dir`: a local kernel build (bzImage + `make modules_install
//! INSTALL_MOD_PATH=` tree) boots like a Debian one. The tree is made from the files of
//! Debian's 6.12 cloud kernel package (`skbsim lab fetch --kernel 6.12` unpacks it into the
//! lab cache; CI's ci/lab.sh has done so before the tests run): its vmlinuz as
//! `arch/x86/boot/bzImage`, its `lib/modules/<release>` (xz-compressed modules) beside.
//! Needs root (apt, and the guest's arms), like the rest of the lab; boots QEMU once.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn skbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("run skbsim")
}

/// One lab at a time: the tests share the cache (a cold one is filled by the first) and
/// two TCG guests at once would only slow each other down.
static LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Copy `from` to `to` recursively (regular files and directories).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("lab test setup");
    for e in fs::read_dir(from).expect("lab test setup").flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().expect("lab test setup").is_dir() {
            copy_tree(&src, &dst);
        } else if e.file_type().expect("lab test setup").is_file() {
            fs::copy(&src, &dst).expect("lab test setup");
        }
    }
}

/// A kernel-dir tree from the cached Debian 6.12 package: (tree, release).
fn tree_from_debian_612(name: &str) -> (PathBuf, String) {
    let out = skbsim(&["lab", "fetch", "--kernel", "6.12", "--json"]);
    assert!(
        out.status.success(),
        "lab fetch --kernel 6.12: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("fetch --json");
    let release = v["setup"]["guest_kernel"]
        .as_str()
        .expect("lab test setup")
        .to_string();
    let cache = PathBuf::from(v["setup"]["cache"].as_str().expect("lab test setup"));
    let package = cache.join("kernels").join(format!("linux-image-{release}"));
    assert!(package.is_dir(), "{} missing", package.display());
    let tree = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&tree);
    fs::create_dir_all(tree.join("arch/x86/boot")).expect("lab test setup");
    fs::copy(
        package.join(format!("boot/vmlinuz-{release}")),
        tree.join("arch/x86/boot/bzImage"),
    )
    .expect("lab test setup");
    copy_tree(
        &package.join("lib/modules").join(&release),
        &tree.join("lib/modules").join(&release),
    );
    (tree, release)
}

#[test]
#[ignore = "kernel lab: needs root, /dev/net/tun and QEMU guests; ci/test.sh runs it as root with --include-ignored"]
fn kernel_dir_from_debian_package_files_boots_and_conforms() {
    skbsim_kernel::require_privileges();
    let _lab = LAB.lock().unwrap_or_else(|e| e.into_inner());
    let (tree, release) = tree_from_debian_612("kdir-612");
    // vnet12-pad tells 6.12 (padding skipped) from 6.18 (zeroed): it passes only if the
    // release read from the bzImage picked linux-6.12. batch-64 loads vhost_net (and its
    // dependencies) from the local tree's .ko.xz files.
    let out = skbsim(&[
        "lab",
        "conform",
        "--json",
        "--kernel-dir",
        tree.to_str().unwrap(),
        "scenarios/tun-read/vnet12-pad.toml",
        "scenarios/vhost-tx/batch-64.toml",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lab conform --kernel-dir: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).expect("conform --json");
    assert_eq!(v["guest_kernel"], release.as_str());
    assert_eq!(v["passed"], 2, "{v}");
    let source = v["setup"]["kernel_source"].as_str().unwrap();
    assert!(source.starts_with("local build "), "{source}");

    // `lab kernels` lists the local build with the tree it came from.
    let out = skbsim(&["lab", "kernels", "--json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("kernels --json");
    let canonical = fs::canonicalize(&tree).unwrap();
    let local = v["local"].as_array().expect("kernels --json: local");
    assert!(
        local.iter().any(|k| k["release"] == release.as_str()
            && k["tree"] == canonical.to_str().unwrap()
            && k["tree_present"] == true),
        "{} not listed: {v}",
        canonical.display()
    );

    // `lab diff` takes a local build as a side: the Debian package and a tree made of its
    // files are the same kernel, so every scenario is `same` (exit 0).
    let out = skbsim(&[
        "lab",
        "diff",
        "--json",
        "--kernel",
        "6.12",
        "--kernel-dir",
        tree.to_str().unwrap(),
        "scenarios/tun-read/vnet12-pad.toml",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lab diff --kernel-dir: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).expect("diff --json");
    assert_eq!(v["a"]["kernel"], release.as_str(), "{v}");
    assert_eq!(v["b"]["kernel"], release.as_str(), "{v}");
    assert_eq!(
        (v["same"].as_u64(), v["skipped"].as_u64()),
        (Some(1), Some(0)),
        "{v}"
    );
    assert_eq!(v["results"][0]["verdict"], "same", "{v}");
}

/// A kernel developer's loop: rebuild one module, `make modules_install` again (the
/// bzImage untouched), run again. The guest must boot the new module, not the archive the
/// cache built from the old one. The "rebuild" is tun.ko with
/// scenarios/kernel-patches/tun-zero-vnet-pad-6.1.patch (it applies to 6.12's tun.c as
/// well), built by `lab conform --kernel 6.12 --patch`: vnet12-pad then passes under
/// linux-6.18 (padding zeroed) where the stock tree passes it under linux-6.12 (skipped).
#[test]
#[ignore = "kernel lab: needs root, /dev/net/tun and QEMU guests; ci/test.sh runs it as root with --include-ignored"]
fn kernel_dir_module_rebuilt_in_place_is_what_the_guest_loads() {
    skbsim_kernel::require_privileges();
    let _lab = LAB.lock().unwrap_or_else(|e| e.into_inner());
    let (tree, release) = tree_from_debian_612("kdir-612-rebuilt");
    let conform = |extra: &[&str]| -> Value {
        let mut args = vec!["lab", "conform", "--json"];
        args.extend_from_slice(extra);
        args.push("scenarios/tun-read/vnet12-pad.toml");
        let out = skbsim(&args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "lab conform {extra:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&stdout).expect("conform --json")
    };
    let dir = tree.to_str().unwrap();
    let stock = conform(&["--kernel-dir", dir]);
    assert_eq!(stock["passed"], 1, "stock tree under linux-6.12: {stock}");

    let patched = conform(&[
        "--kernel",
        "6.12",
        "--patch",
        "scenarios/kernel-patches/tun-zero-vnet-pad-6.1.patch",
        "--profile",
        "linux-6.18",
    ]);
    assert_eq!(
        patched["passed"], 1,
        "patched 6.12 under linux-6.18: {patched}"
    );
    let built = patched["setup"]["patch"]["built"][0]
        .as_str()
        .expect("the rebuilt tun.ko");
    let net = tree
        .join("lib/modules")
        .join(&release)
        .join("kernel/drivers/net");
    fs::remove_file(net.join("tun.ko.xz")).unwrap();
    fs::copy(built, net.join("tun.ko")).unwrap();

    let rebuilt = conform(&["--kernel-dir", dir, "--profile", "linux-6.18"]);
    assert_eq!(
        rebuilt["passed"], 1,
        "the rebuilt tun.ko zeroes the padding: {rebuilt}"
    );
    let stale = conform(&["--kernel-dir", dir]);
    assert_eq!(
        stale["failed"], 1,
        "and linux-6.12's skipped padding no longer holds: {stale}"
    );
}

#[test]
#[ignore = "kernel lab: needs root, /dev/net/tun and QEMU guests; ci/test.sh runs it as root with --include-ignored"]
fn kernel_dir_without_matching_modules_is_a_one_line_error() {
    skbsim_kernel::require_privileges();
    let _lab = LAB.lock().unwrap_or_else(|e| e.into_inner());
    let (tree, release) = tree_from_debian_612("kdir-612-nomods");
    fs::rename(
        tree.join("lib/modules").join(&release),
        tree.join("lib/modules/6.12.0-other"),
    )
    .unwrap();
    let out = skbsim(&["lab", "fetch", "--kernel-dir", tree.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("lab kernel dir")
            && err.contains(&format!("the bzImage is {release}"))
            && err.contains("6.12.0-other"),
        "{err}"
    );
}

/// scenarios/kernel-patches/tun-zero-vnet-pad-6.1.patch turns tun_put_user's skip of the
/// vnet header padding into a zero fill (what 4adf74971018 did in v6.15). Rebuilt into
/// tun.ko and loaded in the 6.1 guest, it must change exactly the tun-read scenarios
/// whose vnet_hdr_sz exceeds the header (12 and 24: vnet12-pad, vnet24-pi,
/// vlan-8021q-vnet12), first at their `vnet_pad` field, and linux-6.18's rule (zeroed
/// padding) must predict each.
#[test]
#[ignore = "kernel lab: needs root, /dev/net/tun and QEMU guests; ci/test.sh runs it as root with --include-ignored"]
fn patched_tun_changes_only_the_padding_as_the_patch_implies() {
    skbsim_kernel::require_privileges();
    let _lab = LAB.lock().unwrap_or_else(|e| e.into_inner());
    let out = skbsim(&[
        "lab",
        "diff",
        "--json",
        "--kernel",
        "6.1",
        "--patch",
        "scenarios/kernel-patches/tun-zero-vnet-pad-6.1.patch",
        "--profile-b",
        "linux-6.18",
        "scenarios/tun-read",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lab diff --patch: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).expect("diff --json");
    assert_eq!(
        v["b"]["setup"]["patch"]["modules"],
        serde_json::json!(["tun"])
    );
    let mut changed: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["real"].is_null())
        .map(|r| {
            assert_eq!(r["real"]["field"], "vnet_pad", "{r}");
            assert!(
                r["real"]["b"].as_str().unwrap().ends_with("bytes zero"),
                "{r}"
            );
            assert_eq!(r["verdict"], "predicted", "{r}");
            r["scenario"].as_str().unwrap()
        })
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        [
            "tun-read/vlan-8021q-vnet12",
            "tun-read/vnet12-pad",
            "tun-read/vnet24-pi"
        ]
    );
    assert!(v["same"].as_u64().unwrap() >= 30, "{v}");
}

#[test]
#[ignore = "kernel lab: needs root, /dev/net/tun and QEMU guests; ci/test.sh runs it as root with --include-ignored"]
fn patch_to_built_in_code_is_a_clear_error() {
    skbsim_kernel::require_privileges();
    let _lab = LAB.lock().unwrap_or_else(|e| e.into_inner());
    let patch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("eth-builtin.patch");
    fs::write(
        &patch,
        "--- a/net/ethernet/eth.c\n+++ b/net/ethernet/eth.c\n@@ -1,1 +1,1 @@\n-x\n+y\n",
    )
    .unwrap();
    let out = skbsim(&[
        "lab",
        "conform",
        "--kernel",
        "6.1",
        "--patch",
        patch.to_str().unwrap(),
        "scenarios/tun-read/vnet10.toml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("lab patch: net/ethernet/eth.c is built into 6.1.")
            && err.contains("a module rebuild cannot change it"),
        "{err}"
    );
}

/// `lab kernels` lists what `--kernel 6.1` and `--kernel 6.12` resolve to, every build of
/// each, and the cached ones (6.12 is cached by the fetch above).
#[test]
#[ignore = "kernel lab: needs root, /dev/net/tun and QEMU guests; ci/test.sh runs it as root with --include-ignored"]
fn lab_kernels_lists_both_series_and_the_cache() {
    skbsim_kernel::require_privileges();
    let _lab = LAB.lock().unwrap_or_else(|e| e.into_inner());
    let fetched = skbsim(&["lab", "fetch", "--kernel", "6.12", "--json"]);
    assert!(fetched.status.success());
    let out = skbsim(&["lab", "kernels", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("kernels --json");
    for series in ["6.1", "6.12"] {
        let r = v["resolves"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kernel"] == series)
            .unwrap_or_else(|| panic!("{series} not offered: {v}"));
        let package = r["package"].as_str().unwrap();
        assert!(
            package.starts_with(&format!("linux-image-{series}."))
                && package.ends_with("-cloud-amd64"),
            "{package}"
        );
        assert!(
            v["available"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["package"] == package && k["series"] == series),
            "{package} not among the available builds"
        );
    }
    let cached: Vec<&str> = v["cached"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["release"].as_str().unwrap())
        .collect();
    assert!(cached.iter().any(|r| r.starts_with("6.12.")), "{cached:?}");
}

/// `lab run`: the script finds this skbsim at /usr/bin/skbsim (what the help says) and the
/// `--file`s at their host paths, so a script can loop over the real arms in the guest.
#[test]
#[ignore = "kernel lab: needs root, /dev/net/tun and QEMU guests; ci/test.sh runs it as root with --include-ignored"]
fn lab_run_has_this_skbsim_and_the_named_files() {
    skbsim_kernel::require_privileges();
    let _lab = LAB.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let data = dir.join("lab-run-data.txt");
    fs::write(&data, "carried into the guest\n").unwrap();
    let script = dir.join("lab-run.sh");
    fs::write(
        &script,
        format!(
            "skbsim --version\ncat {}\nskbsim conform scenarios/tun-read/vnet10.toml | tail -n 1\n",
            data.display()
        ),
    )
    .unwrap();
    let out = skbsim(&[
        "lab",
        "run",
        "--kernel",
        "6.1",
        "--file",
        data.to_str().unwrap(),
        "--file",
        "scenarios/tun-read/vnet10.toml",
        "--file",
        "scenarios/pcaps/untagged-tcp4.pcap",
        script.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lab run: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(concat!("skbsim ", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(stdout.contains("carried into the guest"), "{stdout}");
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
}
