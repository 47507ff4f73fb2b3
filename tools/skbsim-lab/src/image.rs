//! The guest's initramfs: a cached base archive (busybox, the guest kernel's networking
//! modules, iproute2, /init) and a per-run payload archive (the host's `skbsim` binary with
//! the glibc it links, the command, the files it reads, the modules to load), written back
//! to back into one uncompressed `initrd.cpio` (the kernel unpacks concatenated archives
//! in order; leaving it uncompressed saves the guest a gunzip under TCG).
//!
//! Module dependencies come from each `.ko`'s `.modinfo` `depends=` (what `depmod` reads;
//! the host has no kmod and the .deb ships no `modules.dep`). The base archive carries a
//! `modules.dep` for the modules it holds, so `modprobe` works in the guest too.
//!
//! Host binaries (skbsim, iproute2's `ip`) are dynamically linked against the host's
//! glibc: `ldd` names the loader and libraries, copied into the archive at their host
//! paths, so the binaries run unchanged (no musl target is installable here).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::cpio::CpioWriter;
use super::fetch::Tools;
use super::kernel::{GuestKernel, KernelSource};
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

/// A kernel module file in the guest tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// `8021q`, `ip_gre` (dashes as underscores).
    pub name: String,
    /// Relative to `/lib/modules/<kver>`: `kernel/net/8021q/8021q.ko`.
    pub rel: String,
    /// Names of the modules it needs.
    pub depends: Vec<String>,
}

/// The `key=value` entries of an ELF64 little-endian object's `.modinfo` section.
pub fn modinfo(elf: &[u8]) -> Option<Vec<(String, String)>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?));
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let shoff = usize::try_from(u64_at(0x28)?).ok()?;
    let shentsize = usize::from(u16_at(0x3a)?);
    let shnum = usize::from(u16_at(0x3c)?);
    let shstrndx = usize::from(u16_at(0x3e)?);
    let section = |i: usize| -> Option<(u32, usize, usize)> {
        let h = shoff + i * shentsize;
        Some((
            u32_at(h)?,
            usize::try_from(u64_at(h + 0x18)?).ok()?,
            usize::try_from(u64_at(h + 0x20)?).ok()?,
        ))
    };
    let (_, stroff, strsize) = section(shstrndx)?;
    let strtab = elf.get(stroff..stroff + strsize)?;
    for i in 0..shnum {
        let (name, off, size) = section(i)?;
        let name = strtab.get(name as usize..)?;
        let end = name.iter().position(|&b| b == 0)?;
        if &name[..end] == b".modinfo" {
            let data = elf.get(off..off + size)?;
            return Some(
                data.split(|&b| b == 0)
                    .filter_map(|e| std::str::from_utf8(e).ok())
                    .filter_map(|e| e.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
        }
    }
    None
}

/// Every module under `<modules>/kernel`, by name, and the built-in ones.
#[derive(Debug)]
pub struct ModuleIndex {
    /// Name -> (path in the guest relative to `/lib/modules/<kver>`, always `.ko`; the
    /// file on the host, possibly `.ko.xz`).
    files: HashMap<String, (String, PathBuf)>,
    builtin: BTreeSet<String>,
    /// Modules replaced by rebuilt ones ([`ModuleIndex::replace`]).
    replaced: BTreeSet<String>,
}

fn module_name(file: &str) -> String {
    file.trim_end_matches(".xz")
        .trim_end_matches(".ko")
        .replace('-', "_")
}

/// A module file's contents, uncompressed: Debian's 6.12 ships `.ko.xz` (busybox insmod
/// passes its file to init_module as is, so the guest gets plain `.ko`). lzma-rs is pure
/// Rust: no liblzma or xz binary needed on the host.
pub fn read_module(path: &Path) -> Result<Vec<u8>, LabError> {
    let err = |e: String| LabError::new("modules", format!("{}: {e}", path.display()));
    let data = fs::read(path).map_err(|e| err(e.to_string()))?;
    if !path.to_string_lossy().ends_with(".xz") {
        return Ok(data);
    }
    let mut out = Vec::new();
    lzma_rs::xz_decompress(&mut &data[..], &mut out).map_err(|e| err(format!("xz: {e}")))?;
    Ok(out)
}

impl ModuleIndex {
    pub fn load(modules: &Path) -> Result<ModuleIndex, LabError> {
        let err =
            |p: &Path, e: std::io::Error| LabError::new("modules", format!("{}: {e}", p.display()));
        let mut files = HashMap::new();
        let mut stack = vec![modules.join("kernel")];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).map_err(|e| err(&d, e))?.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let f = e.file_name().to_string_lossy().into_owned();
                if f.ends_with(".ko.zst") || f.ends_with(".ko.gz") {
                    return Err(LabError::new(
                        "modules",
                        format!(
                            "{} is compressed other than with xz; the lab reads .ko and .ko.xz",
                            p.display()
                        ),
                    ));
                }
                if f.ends_with(".ko") || f.ends_with(".ko.xz") {
                    let rel = p
                        .strip_prefix(modules)
                        .map_err(|_| {
                            LabError::new(
                                "modules",
                                format!("{} outside {}", p.display(), modules.display()),
                            )
                        })?
                        .to_string_lossy()
                        .trim_end_matches(".xz")
                        .to_string();
                    files.insert(module_name(&f), (rel, p));
                }
            }
        }
        let builtin = fs::read_to_string(modules.join("modules.builtin"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.rsplit('/').next())
            .map(module_name)
            .collect();
        Ok(ModuleIndex {
            files,
            builtin,
            replaced: BTreeSet::new(),
        })
    }

    /// Load `name` from `file` (a rebuilt module) instead of the stock one.
    pub fn replace(&mut self, name: &str, file: PathBuf) -> Result<(), LabError> {
        let name = module_name(name);
        let entry = self.files.get_mut(&name).ok_or_else(|| {
            LabError::new(
                "modules",
                format!("the guest kernel has no module {name} to replace"),
            )
        })?;
        entry.1 = file;
        self.replaced.insert(name);
        Ok(())
    }

    /// `name` was replaced by a rebuilt module.
    pub fn is_replaced(&self, name: &str) -> bool {
        self.replaced.contains(&module_name(name))
    }

    /// The host file of module `name`.
    pub fn file(&self, name: &str) -> Option<&Path> {
        self.files.get(&module_name(name)).map(|(_, p)| p.as_path())
    }

    /// The contents (uncompressed) of the module at guest path `rel`.
    pub fn read_rel(&self, rel: &str) -> Result<Vec<u8>, LabError> {
        let (_, path) = self
            .files
            .values()
            .find(|(r, _)| r == rel)
            .ok_or_else(|| LabError::new("modules", format!("no module at {rel}")))?;
        read_module(path)
    }

    /// `name` is compiled into the kernel.
    pub fn is_builtin(&self, name: &str) -> bool {
        self.builtin.contains(&name.replace('-', "_"))
    }

    fn module(&self, name: &str) -> Result<Module, LabError> {
        let (rel, path) = self.files.get(name).ok_or_else(|| {
            LabError::new("modules", format!("the guest kernel has no module {name}"))
        })?;
        let bytes = read_module(path)?;
        let info = modinfo(&bytes).ok_or_else(|| {
            LabError::new(
                "modules",
                format!("{}: no .modinfo section", path.display()),
            )
        })?;
        let depends = info
            .iter()
            .filter(|(k, _)| k == "depends")
            .flat_map(|(_, v)| v.split(','))
            .filter(|d| !d.is_empty())
            .map(module_name)
            .collect();
        Ok(Module {
            name: name.to_string(),
            rel: rel.clone(),
            depends,
        })
    }

    /// `names` and everything they need, dependencies first (the insmod order); built-in
    /// modules are left out.
    pub fn resolve(&self, names: &[&str]) -> Result<Vec<Module>, LabError> {
        let mut order: Vec<Module> = Vec::new();
        let mut done = BTreeSet::new();
        // Iterative post-order DFS: (module, dependencies pushed yet).
        let mut stack: Vec<(String, bool)> = names
            .iter()
            .rev()
            .map(|n| (module_name(n), false))
            .collect();
        let mut cache: BTreeMap<String, Module> = BTreeMap::new();
        let mut on_path = BTreeSet::new();
        while let Some((name, expanded)) = stack.pop() {
            if done.contains(&name) || self.is_builtin(&name) {
                continue;
            }
            if !cache.contains_key(&name) {
                let m = self.module(&name)?;
                cache.insert(name.clone(), m);
            }
            let m = &cache[&name];
            if expanded {
                on_path.remove(&name);
                done.insert(name.clone());
                order.push(m.clone());
                continue;
            }
            if !on_path.insert(name.clone()) {
                return Err(LabError::new(
                    "modules",
                    format!("dependency cycle through {name}"),
                ));
            }
            stack.push((name.clone(), true));
            for d in m.depends.iter().rev() {
                if !done.contains(d) {
                    stack.push((d.clone(), false));
                }
            }
        }
        Ok(order)
    }
}

/// `modules.dep` text for `mods` (every dependency among them).
pub fn modules_dep(mods: &[Module]) -> String {
    let by_name: HashMap<&str, &Module> = mods.iter().map(|m| (m.name.as_str(), m)).collect();
    let mut out = String::new();
    for m in mods {
        // Transitive dependencies, nearest first, as depmod writes them.
        let mut deps: Vec<&str> = Vec::new();
        let mut queue: Vec<&str> = m.depends.iter().map(String::as_str).collect();
        while let Some(d) = queue.first().copied() {
            queue.remove(0);
            if let Some(dm) = by_name.get(d) {
                if !deps.contains(&dm.rel.as_str()) {
                    deps.push(dm.rel.as_str());
                    queue.extend(dm.depends.iter().map(String::as_str));
                }
            }
        }
        out.push_str(&format!("{}: {}\n", m.rel, deps.join(" ")).replace(": \n", ":\n"));
    }
    out
}

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
    // Sorted: the index is a HashMap, and the key must not depend on its order.
    let mut files: Vec<&(String, PathBuf)> = index.files.values().collect();
    files.sort();
    for (rel, host) in files {
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

    #[test]
    fn modules_dep_lists_transitive_dependencies() {
        let m = |name: &str, deps: &[&str]| Module {
            name: name.into(),
            rel: format!("kernel/{name}.ko"),
            depends: deps.iter().map(|d| d.to_string()).collect(),
        };
        let mods = [
            m("llc", &[]),
            m("stp", &["llc"]),
            m("bridge", &["stp", "llc"]),
        ];
        assert_eq!(
            modules_dep(&mods),
            "kernel/llc.ko:\nkernel/stp.ko: kernel/llc.ko\nkernel/bridge.ko: kernel/stp.ko kernel/llc.ko\n"
        );
    }

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

    #[test]
    fn modinfo_of_a_non_elf_is_none() {
        assert_eq!(modinfo(b"not an elf"), None);
    }
}
