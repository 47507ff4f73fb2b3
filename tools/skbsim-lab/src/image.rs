//! The guest's initramfs: a cached base archive (busybox, the guest kernel's networking
//! modules, iproute2, /init) and a per-run payload archive (the host's `skbsim` binary with
//! the glibc it links, the command, the files it reads, the modules to load), written back
//! to back into one uncompressed `initrd.cpio` (the kernel unpacks concatenated archives
//! in order; leaving it uncompressed saves the guest a gunzip under TCG).
//!
//! Module dependencies come from each `.ko`'s `.modinfo` `depends=` ([`crate::modules`]:
//! what `depmod` reads; the host has no kmod and the .deb ships no `modules.dep`). The
//! base archive carries a `modules.dep` for the modules it holds, so `modprobe` works in
//! the guest too.
//!
//! Host binaries (skbsim, iproute2's `ip`) are dynamically linked against the host's
//! glibc: `ldd` names the loader and libraries, copied into the archive at their host
//! paths, so the binaries run unchanged (no musl target is installable here).

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::cpio::CpioWriter;
use super::fetch::Tools;
use super::kernel::{GuestKernel, KernelSource};
use super::modules::{modules_dep, ModuleIndex};
use super::LabError;

/// The modules the base archive holds (with their dependencies): tun/tap, vhost_net,
/// veth, the bridge, 802.1Q, GRE (gretap) and VXLAN.
pub const LAB_MODULES: [&str; 10] = [
    "tun",
    "tap",
    "vhost_net",
    "veth",
    "bridge",
    "8021q",
    "gre",
    "ip_gre",
    "ip6_gre",
    "vxlan",
];

/// The guest's data channel: the command's stdout goes to the second serial port, which
/// QEMU writes to a file, between these markers. The console (first serial port) carries
/// the kernel log, the command's stderr and `skbsim-lab:` progress lines.
pub const DATA_BEGIN: &str = "=== skbsim-lab begin ===";
/// Followed by ` rc=N ===`.
pub const DATA_END_PREFIX: &str = "=== skbsim-lab end";
/// Console line once /init runs (boot done).
pub const CONSOLE_INIT: &str = "skbsim-lab: init";
/// Console line when the command starts.
pub const CONSOLE_BEGIN: &str = "skbsim-lab: begin";
/// Console line when the command ended, followed by ` rc=N`.
pub const CONSOLE_END: &str = "skbsim-lab: end";

/// Where iproute2's `ip` sits in the guest (busybox's `ip` applet is `/bin/ip`; busybox
/// `sh` prefers its applet for a bare `ip`, so scripts call this path).
pub const GUEST_IPROUTE2: &str = "/usr/bin/ip";
/// Where the host's skbsim binary sits in the guest.
pub const GUEST_SKBSIM: &str = "/usr/bin/skbsim";

const INIT: &str = r#"#!/bin/busybox sh
# skbsim lab guest /init: mount, load modules, run /lab/cmd with its stdout on ttyS1
# between markers, power off.
/bin/busybox mkdir -p /proc /sys /dev /run /tmp /var /root
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox mount -t tmpfs tmpfs /run
# No tmpfs over /tmp: the rootfs is writable already, and the payload's files sit at
# their host paths, which may be under /tmp (a CI clone in mktemp -d).
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
echo "skbsim-lab: init $(uname -r)"
data=/dev/ttyS1
stty -F $data raw -echo 2>/dev/null
# ip_gre (like ipip, sit, ...) would add its fallback devices (gretap0, erspan0, gre0)
# to every new namespace; the arms only run in namespaces that hold nothing but lo.
echo 1 > /proc/sys/net/core/fb_tunnels_only_for_init_net
while read -r m; do
  [ -n "$m" ] || continue
  insmod "$m" || echo "skbsim-lab: insmod $m failed"
done < /lab/modules
/bin/ip link set lo up
cd "$(cat /lab/cwd)" 2>/dev/null || cd /
echo "=== skbsim-lab begin ===" > $data
echo "skbsim-lab: begin"
# The command's stderr through a pipe to the console: not a terminal, so a skbsim in a
# `lab run` script draws no progress bar over the console lines the host parses.
{ sh /lab/cmd 2>&1 > $data; echo $? > /run/lab-rc; } | cat
rc=$(cat /run/lab-rc)
echo "=== skbsim-lab end rc=$rc ===" > $data
# On a line of its own, whatever the command left unterminated.
printf '\nskbsim-lab: end rc=%s\n' "$rc"
sync
poweroff -f
"#;

/// The host files `binary` needs at run time (loader and libraries) per `ldd`; empty for a
/// static binary.
pub fn host_libraries(binary: &Path) -> Result<Vec<PathBuf>, LabError> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| LabError::new("initramfs", format!("cannot run ldd: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.contains("not a dynamic executable") {
        return Ok(Vec::new());
    }
    let mut libs = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if l.contains("not found") {
            return Err(LabError::new(
                "initramfs",
                format!("{}: {l}", binary.display()),
            ));
        }
        let path = match l.split_once("=> ") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => l.split_whitespace().next().filter(|p| p.starts_with('/')),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

fn add_host_file<W: Write>(
    cpio: &mut CpioWriter<W>,
    host: &Path,
    guest: &str,
    perm: u32,
) -> Result<(), LabError> {
    let data = fs::read(host)
        .map_err(|e| LabError::new("initramfs", format!("{}: {e}", host.display())))?;
    cpio.file(guest, perm, &data)
        .map_err(|e| LabError::new("initramfs", format!("writing {guest}: {e}")))
}

/// A dynamically linked host binary at `guest`, with its loader and libraries at their
/// host paths (each added once per archive, tracked in `added`).
fn add_host_binary<W: Write>(
    cpio: &mut CpioWriter<W>,
    host: &Path,
    guest: &str,
    added: &mut BTreeSet<PathBuf>,
) -> Result<(), LabError> {
    add_host_file(cpio, host, guest, 0o755)?;
    for lib in host_libraries(host)? {
        if added.insert(lib.clone()) {
            add_host_file(cpio, &lib, &lib.to_string_lossy(), 0o755)?;
        }
    }
    Ok(())
}

/// The host's iproute2 `ip`.
fn host_iproute2() -> Option<PathBuf> {
    ["/usr/bin/ip", "/usr/sbin/ip", "/bin/ip", "/sbin/ip"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn fnv(data: &[u8], mut h: u64) -> u64 {
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// A file's size and modification time, as key material (zeros when it cannot be read).
fn stat_key(path: &Path, h: u64) -> u64 {
    let (len, mtime) = fs::metadata(path).map_or((0, 0), |md| {
        let mtime = md
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        (md.len(), mtime)
    });
    fnv(&mtime.to_le_bytes(), fnv(&len.to_le_bytes(), h))
}

/// The key of a kernel's base archive: /init, the release, the module list, the bzImage
/// and every module file of the index (size and mtime), and the iproute2 binary's size.
/// A local build changes in place, and a developer who rebuilds only tun.ko and runs
/// `make modules_install` again leaves the bzImage as it was: keying on the bzImage alone
/// would boot the old tun.ko. Stat-ing a Debian tree's few thousand modules takes a few
/// milliseconds; reading them would take seconds.
fn base_key(kernel: &GuestKernel, index: &ModuleIndex, ip: Option<&Path>) -> u64 {
    let mut key = fnv(INIT.as_bytes(), 0xcbf2_9ce4_8422_2325);
    key = fnv(kernel.kver.as_bytes(), key);
    key = fnv(LAB_MODULES.join(",").as_bytes(), key);
    key = stat_key(&kernel.vmlinuz, key);
    for (rel, host) in index.sorted_files() {
        key = stat_key(host, fnv(rel.as_bytes(), key));
    }
    for f in ["modules.builtin", "modules.order"] {
        key = stat_key(&kernel.modules.join(f), key);
    }
    if let Some(ip) = ip {
        let len = fs::metadata(ip).map(|m| m.len()).unwrap_or(0);
        key = fnv(&len.to_le_bytes(), key);
    }
    key
}

/// The base archive, built once per key ([`base_key`]) into the kernel's cache directory.
/// Returns its path and the index of the modules it holds. A local build's older archives
/// are removed when a new one is written: they hold a state of the tree that is gone.
pub fn base_archive(
    tools: &Tools,
    kernel: &GuestKernel,
) -> Result<(PathBuf, ModuleIndex), LabError> {
    let index = ModuleIndex::load(&kernel.modules)?;
    let ip = host_iproute2();
    let key = base_key(kernel, &index, ip.as_deref());
    fs::create_dir_all(&kernel.cache_dir)
        .map_err(|e| LabError::new("initramfs", format!("{}: {e}", kernel.cache_dir.display())))?;
    let name = format!("base-{key:016x}.cpio");
    let path = kernel.cache_dir.join(&name);
    if path.exists() {
        return Ok((path, index));
    }
    let mods = index.resolve(&LAB_MODULES)?;
    let tmp = path.with_extension("cpio.tmp");
    let f = fs::File::create(&tmp)
        .map_err(|e| LabError::new("initramfs", format!("{}: {e}", tmp.display())))?;
    let mut cpio = CpioWriter::new(BufWriter::new(f));
    let io = |e: std::io::Error| LabError::new("initramfs", format!("{}: {e}", tmp.display()));
    for d in [
        "dev", "proc", "sys", "run", "tmp", "var", "root", "etc", "bin", "sbin", "usr/bin",
        "usr/sbin", "lab",
    ] {
        cpio.dir(d).map_err(io)?;
    }
    cpio.char_dev("dev/console", 0o600, 5, 1).map_err(io)?;
    cpio.char_dev("dev/null", 0o666, 1, 3).map_err(io)?;
    cpio.file("init", 0o755, INIT.as_bytes()).map_err(io)?;
    add_host_file(&mut cpio, &tools.busybox, "bin/busybox", 0o755)?;
    cpio.symlink("bin/sh", "busybox").map_err(io)?;
    let mut added = BTreeSet::new();
    if let Some(ip) = &ip {
        add_host_binary(&mut cpio, ip, GUEST_IPROUTE2, &mut added)?;
    }
    let moddir = format!("lib/modules/{}", kernel.kver);
    for m in &mods {
        let data = index.read_rel(&m.rel)?;
        cpio.file(&format!("{moddir}/{}", m.rel), 0o644, &data)
            .map_err(io)?;
    }
    cpio.file(
        &format!("{moddir}/modules.dep"),
        0o644,
        modules_dep(&mods).as_bytes(),
    )
    .map_err(io)?;
    for f in ["modules.builtin", "modules.order"] {
        if let Ok(data) = fs::read(kernel.modules.join(f)) {
            cpio.file(&format!("{moddir}/{f}"), 0o644, &data)
                .map_err(io)?;
        }
    }
    cpio.finish().map_err(io)?;
    fs::rename(&tmp, &path).map_err(io)?;
    if matches!(kernel.source, KernelSource::Dir(_)) {
        remove_other_archives(&kernel.cache_dir, &name);
    }
    Ok((path, index))
}

/// Remove the `base-*.cpio` files in `dir` other than `keep` (best effort: a file that
/// cannot be removed is only space).
fn remove_other_archives(dir: &Path, keep: &str) {
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n != keep && n.starts_with("base-") && n.ends_with(".cpio") {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// What one guest run does.
#[derive(Debug, Clone)]
pub struct Payload {
    /// The shell script /init runs (its stdout is the data channel).
    pub script: String,
    /// Modules to load first (dependencies are added).
    pub modules: Vec<String>,
    /// The guest's working directory (the host's, mirrored).
    pub cwd: PathBuf,
    /// Host files (absolute) copied into the guest at the same paths.
    pub files: Vec<PathBuf>,
    /// The host's skbsim binary, installed as [`GUEST_SKBSIM`] when set.
    pub skbsim: Option<PathBuf>,
}

/// `base` followed by the payload archive, written to `out`.
pub fn build_initrd(
    base: &Path,
    index: &ModuleIndex,
    kver: &str,
    payload: &Payload,
    out: &Path,
) -> Result<(), LabError> {
    let io = |e: std::io::Error| LabError::new("initramfs", format!("{}: {e}", out.display()));
    let names: Vec<&str> = payload.modules.iter().map(String::as_str).collect();
    let mods = index.resolve(&names)?;
    let base_mods: BTreeSet<String> = index
        .resolve(&LAB_MODULES)?
        .into_iter()
        .map(|m| m.rel)
        .collect();
    let mut f = BufWriter::new(fs::File::create(out).map_err(io)?);
    let mut base_file = fs::File::open(base).map_err(io)?;
    std::io::copy(&mut base_file, &mut f).map_err(io)?;
    let mut cpio = CpioWriter::new(f);
    let moddir = format!("lib/modules/{kver}");
    let mut order = String::new();
    for m in &mods {
        // A rebuilt module goes to its own path: the stock one stays in the base archive.
        let guest = if index.is_replaced(&m.name) {
            format!("lab/patched/{}", m.rel)
        } else {
            format!("{moddir}/{}", m.rel)
        };
        if index.is_replaced(&m.name) || !base_mods.contains(&m.rel) {
            let data = index.read_rel(&m.rel)?;
            cpio.file(&guest, 0o644, &data).map_err(io)?;
        }
        order.push_str(&format!("/{guest}\n"));
    }
    cpio.file("lab/modules", 0o644, order.as_bytes())
        .map_err(io)?;
    cpio.file("lab/cmd", 0o755, payload.script.as_bytes())
        .map_err(io)?;
    cpio.file("lab/cwd", 0o644, payload.cwd.to_string_lossy().as_bytes())
        .map_err(io)?;
    cpio.dir(&payload.cwd.to_string_lossy()).map_err(io)?;
    let mut added = BTreeSet::new();
    if let Some(bin) = &payload.skbsim {
        add_host_binary(&mut cpio, bin, GUEST_SKBSIM, &mut added)?;
    }
    let mut seen = BTreeSet::new();
    for file in &payload.files {
        if seen.insert(file.clone()) {
            add_host_file(&mut cpio, file, &file.to_string_lossy(), 0o644)?;
        }
    }
    cpio.finish().map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rebuilt module in a local tree (`make modules_install` again, the bzImage left as
    /// it was) must give a new base archive, or the guest boots the old module.
    #[test]
    fn base_key_follows_the_module_files() {
        let root = std::env::temp_dir().join(format!("skbsim-base-key-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let modules = root.join("lib/modules/6.12.0-test");
        fs::create_dir_all(modules.join("kernel/drivers/net")).unwrap();
        let tun = modules.join("kernel/drivers/net/tun.ko");
        fs::write(&tun, b"stock tun").unwrap();
        fs::write(modules.join("kernel/drivers/net/veth.ko"), b"veth").unwrap();
        fs::write(root.join("bzImage"), b"image").unwrap();
        let kernel = GuestKernel {
            vmlinuz: root.join("bzImage"),
            modules: modules.clone(),
            cache_dir: root.join("cache"),
            kver: "6.12.0-test".into(),
            source: KernelSource::Dir(root.clone()),
            fetched: false,
            fetch_time: std::time::Duration::ZERO,
        };
        let key = || base_key(&kernel, &ModuleIndex::load(&modules).unwrap(), None);
        let stock = key();
        assert_eq!(key(), stock, "the same tree, the same key");
        // Same size, a later mtime (a rebuild of the same length).
        let later =
            fs::metadata(&tun).unwrap().modified().unwrap() + std::time::Duration::from_secs(5);
        fs::write(&tun, b"patch tun").unwrap();
        fs::File::options()
            .write(true)
            .open(&tun)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let rebuilt = key();
        assert_ne!(rebuilt, stock, "a rebuilt tun.ko");
        fs::write(&tun, b"patched tun, longer").unwrap();
        assert_ne!(key(), rebuilt, "a module of another size");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn remove_other_archives_keeps_the_named_one() {
        let dir = std::env::temp_dir().join(format!("skbsim-archives-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        for f in ["base-1.cpio", "base-2.cpio", "source", "base-3.cpio.tmp"] {
            fs::write(dir.join(f), b"x").unwrap();
        }
        remove_other_archives(&dir, "base-2.cpio");
        let mut left: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["base-2.cpio", "base-3.cpio.tmp", "source"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
