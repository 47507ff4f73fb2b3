//! Fetching QEMU and busybox (and, through [`download_unpack`], the guest kernels of
//! `kernel.rs` and the sources of `patch.rs`) through the system package manager without
//! installing anything: `apt-get download` into `<cache>/debs-<tag>`, `dpkg-deb -x` into
//! `<cache>/tools`, then the .debs are deleted. Nothing on the host is upgraded, removed or
//! configured (installing Debian 12's qemu-system-x86 would remove a newer qemu-utils).
//!
//! QEMU's shared libraries: the closure of `Depends`/`Pre-Depends` is walked from the QEMU
//! packages, stopping at any package the host already has installed (any alternative of a
//! dependency group counts), so only the missing libraries are fetched; QEMU then runs with
//! `LD_LIBRARY_PATH` pointing into the cache. `ldd` checks that nothing is left missing.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::LabError;

/// QEMU's packages (qemu-system-common carries the TCG accelerator module).
pub const QEMU_PACKAGES: [&str; 4] = [
    "qemu-system-x86",
    "qemu-system-common",
    "qemu-system-data",
    "seabios",
];
/// A statically linked busybox.
pub const BUSYBOX_PACKAGE: &str = "busybox-static";

/// Written last into `<cache>/root`: the packages unpacked there, one `name version` per
/// line. Its presence means the tree is complete.
const STAMP: &str = ".skbsim-lab-packages";

/// QEMU and busybox, inside the cache (shared by every guest kernel).
#[derive(Debug, Clone)]
pub struct Tools {
    /// `<cache>/tools`: every package unpacked.
    pub root: PathBuf,
    /// `<root>/usr/bin/qemu-system-x86_64`.
    pub qemu: PathBuf,
    /// QEMU's `LD_LIBRARY_PATH`.
    pub lib_path: String,
    /// QEMU's `QEMU_MODULE_DIR` (accel-tcg-x86_64.so).
    pub qemu_module_dir: PathBuf,
    /// Firmware directories for `-L`.
    pub firmware: Vec<PathBuf>,
    /// `<root>/bin/busybox` (static).
    pub busybox: PathBuf,
    /// `name version` of every unpacked package.
    pub packages: Vec<String>,
    /// True when this call downloaded and unpacked (a cold cache).
    pub fetched: bool,
    /// How long fetching took (zero when cached).
    pub fetch_time: Duration,
}

pub(super) fn run(step: &'static str, cmd: &mut Command) -> Result<String, LabError> {
    let shown = format!("{cmd:?}").replace('"', "");
    let out = cmd
        .output()
        .map_err(|e| LabError::new(step, format!("cannot run {shown}: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.starts_with("W:"))
            .unwrap_or("")
            .trim();
        return Err(LabError::new(
            step,
            format!("{shown} failed ({}): {last}", out.status),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Packages installed on the host (dpkg status `installed`).
pub(super) fn installed_packages() -> Result<HashSet<String>, LabError> {
    let out = run(
        "download",
        Command::new("dpkg-query").args(["-W", "-f", "${Package} ${db:Status-Status}\\n"]),
    )?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, s)| *s == "installed")
        .map(|(p, _)| p.to_string())
        .collect())
}

/// A dependency list (`a (>= 1), b | c`) as groups of alternatives, names only.
fn parse_depends(list: &str) -> Vec<Vec<String>> {
    list.split(',')
        .map(|group| {
            group
                .split('|')
                .map(|a| {
                    let name = a.split('(').next().unwrap_or("").trim();
                    name.split(':').next().unwrap_or("").to_string()
                })
                .filter(|n| !n.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|alts| !alts.is_empty())
        .collect()
}

/// The dependency groups of each of `pkgs`' candidate versions, from one `apt-cache show`
/// (each call reads apt's whole cache: about a second). A name apt knows no real package
/// for (a virtual package) is absent from the map.
pub(super) fn depends_of(pkgs: &[String]) -> Result<HashMap<String, Vec<Vec<String>>>, LabError> {
    let out = Command::new("apt-cache")
        .args(["show", "--no-all-versions"])
        .args(pkgs)
        .output()
        .map_err(|e| LabError::new("download", format!("cannot run apt-cache: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut map = HashMap::new();
    for stanza in text.split("\n\n") {
        let mut name = None;
        let mut groups = Vec::new();
        for line in stanza.lines() {
            if let Some(p) = line.strip_prefix("Package: ") {
                name = Some(p.trim().to_string());
            } else if let Some(list) = line
                .strip_prefix("Depends: ")
                .or_else(|| line.strip_prefix("Pre-Depends: "))
            {
                groups.extend(parse_depends(list));
            }
        }
        if let Some(n) = name {
            map.entry(n).or_insert(groups);
        }
    }
    Ok(map)
}

/// The packages to fetch for `roots`: the roots and every dependency the host lacks
/// (breadth first, one `apt-cache` call per level).
pub fn closure(roots: &[&str], installed: &HashSet<String>) -> Result<Vec<String>, LabError> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let mut level: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
    while !level.is_empty() {
        level.retain(|p| !installed.contains(p) && seen.insert(p.clone()));
        if level.is_empty() {
            break;
        }
        let deps = depends_of(&level)?;
        let mut next = Vec::new();
        for p in &level {
            let Some(groups) = deps.get(p) else {
                if roots.contains(&p.as_str()) {
                    return Err(LabError::new(
                        "download",
                        format!("apt knows no package {p} (is `apt-get update` done?)"),
                    ));
                }
                // A virtual package nobody installed: the ldd check reports what is missing.
                continue;
            };
            out.push(p.clone());
            for alts in groups {
                if !alts.iter().any(|a| installed.contains(a)) {
                    next.push(alts[0].clone());
                }
            }
        }
        level = next;
    }
    Ok(out)
}

/// The guest kernel image packages a metapackage depends on (`linux-image-...`), from its
/// candidate version.
pub(super) fn meta_kernel_package(meta: &str) -> Result<Option<String>, LabError> {
    Ok(depends_of(&[meta.to_string()])?
        .remove(meta)
        .and_then(|groups| {
            groups
                .into_iter()
                .flatten()
                .find(|p| p.starts_with("linux-image-"))
        }))
}

/// `dpkg-deb -f` fields of a .deb.
fn deb_fields(deb: &Path) -> Result<(String, String), LabError> {
    let info = run(
        "unpack",
        Command::new("dpkg-deb")
            .args(["-f"])
            .arg(deb)
            .args(["Package", "Version"]),
    )?;
    let mut name = String::new();
    let mut version = String::new();
    for l in info.lines() {
        if let Some(v) = l.strip_prefix("Package: ") {
            name = v.trim().to_string();
        } else if let Some(v) = l.strip_prefix("Version: ") {
            version = v.trim().to_string();
        }
    }
    Ok((name, version))
}

/// `apt-get download` `packages` into `<cache>/debs-<tag>` and `dpkg-deb -x` them into a
/// fresh `tmp` (removed first), then delete the .debs and the `junk` paths. Returns the
/// stamp text (`name version` per line).
pub(super) fn download_unpack(
    cache: &Path,
    tag: &str,
    packages: &[String],
    tmp: &Path,
    junk: &[&str],
    progress: &dyn Fn(&str),
) -> Result<String, LabError> {
    let debs = cache.join(format!("debs-{tag}"));
    let _ = fs::remove_dir_all(&debs);
    fs::create_dir_all(&debs)
        .map_err(|e| LabError::new("download", format!("{}: {e}", debs.display())))?;
    progress(&format!("apt-get download: {} packages", packages.len()));
    run(
        "download",
        Command::new("apt-get")
            .current_dir(&debs)
            .args(["download", "-q", "-o", "APT::Sandbox::User=root"])
            .args(packages),
    )?;
    let _ = fs::remove_dir_all(tmp);
    fs::create_dir_all(tmp)
        .map_err(|e| LabError::new("unpack", format!("{}: {e}", tmp.display())))?;
    let mut files: Vec<PathBuf> = fs::read_dir(&debs)
        .map_err(|e| LabError::new("unpack", format!("{}: {e}", debs.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    files.sort();
    let mut stamp = BTreeSet::new();
    for (i, deb) in files.iter().enumerate() {
        progress(&format!(
            "dpkg-deb -x {}/{}: {}",
            i + 1,
            files.len(),
            deb.file_name().unwrap_or_default().to_string_lossy()
        ));
        run(
            "unpack",
            Command::new("dpkg-deb").arg("-x").arg(deb).arg(tmp),
        )?;
        let (name, version) = deb_fields(deb)?;
        stamp.insert(format!("{name} {version}"));
    }
    for j in junk {
        let p = tmp.join(j);
        let _ = if p.is_dir() {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        };
    }
    let _ = fs::remove_dir_all(&debs);
    Ok(stamp.iter().map(|l| format!("{l}\n")).collect())
}

/// Move a complete `tmp` tree to `dest` with its stamp written last.
pub(super) fn commit_tree(tmp: &Path, dest: &Path, stamp: &str) -> Result<(), LabError> {
    fs::write(tmp.join(STAMP), stamp)
        .map_err(|e| LabError::new("unpack", format!("{}: {e}", tmp.display())))?;
    let _ = fs::remove_dir_all(dest);
    fs::rename(tmp, dest).map_err(|e| LabError::new("unpack", format!("{}: {e}", dest.display())))
}

/// The `name version` lines of a complete tree, or None when it is not complete.
pub(super) fn stamp_of(dir: &Path) -> Option<Vec<String>> {
    fs::read_to_string(dir.join(STAMP))
        .ok()
        .map(|s| s.lines().map(str::to_string).collect())
}

fn tools(root: &Path, fetched: bool, fetch_time: Duration) -> Result<Tools, LabError> {
    let lib_dirs = ["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"];
    let lib_path = lib_dirs
        .iter()
        .map(|d| root.join(d).display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let a = Tools {
        root: root.to_path_buf(),
        qemu: root.join("usr/bin/qemu-system-x86_64"),
        lib_path,
        qemu_module_dir: root.join("usr/lib/x86_64-linux-gnu/qemu"),
        firmware: vec![root.join("usr/share/qemu"), root.join("usr/share/seabios")],
        busybox: root.join("bin/busybox"),
        packages: stamp_of(root).unwrap_or_default(),
        fetched,
        fetch_time,
    };
    for (what, p) in [("QEMU", &a.qemu), ("busybox", &a.busybox)] {
        if !p.exists() {
            return Err(LabError::new(
                "unpack",
                format!("{what} is missing: {}", p.display()),
            ));
        }
    }
    Ok(a)
}

/// QEMU and busybox in `<cache>/tools`, fetched first unless a complete tree is there.
/// `progress` is told each step. (A cache from before per-kernel caches kept everything
/// in `<cache>/root`; it is left alone, as an older skbsim sharing the cache still reads
/// it.)
pub fn prepare(cache: &Path, progress: &dyn Fn(&str)) -> Result<Tools, LabError> {
    let root = cache.join("tools");
    if stamp_of(&root).is_some() {
        return tools(&root, false, Duration::ZERO);
    }
    let start = Instant::now();
    fs::create_dir_all(cache)
        .map_err(|e| LabError::new("download", format!("{}: {e}", cache.display())))?;
    progress("resolving packages");
    let installed = installed_packages()?;
    // busybox is taken alone: its dependencies are for installing it, not for running it.
    let mut wanted: Vec<String> = vec![BUSYBOX_PACKAGE.to_string()];
    for p in closure(&QEMU_PACKAGES, &installed)? {
        if !wanted.contains(&p) {
            wanted.push(p);
        }
    }
    let tmp = cache.join("tools.tmp");
    // What a headless x86_64 boot never reads.
    let junk = [
        "usr/share/doc",
        "usr/share/man",
        "usr/share/lintian",
        "usr/libexec/qemu-system-i386",
        "usr/bin/qemu-system-x86_64-microvm",
    ];
    let stamp = download_unpack(cache, "tools", &wanted, &tmp, &junk, progress)?;
    let partial = tools(&tmp, true, Duration::ZERO)?;
    check_qemu_libs(&partial)?;
    commit_tree(&tmp, &root, &stamp)?;
    tools(&root, true, start.elapsed())
}

/// `ldd` QEMU with the cache's libraries: every library must resolve.
fn check_qemu_libs(a: &Tools) -> Result<(), LabError> {
    let out = run(
        "qemu libraries",
        Command::new("ldd")
            .arg(&a.qemu)
            .env("LD_LIBRARY_PATH", &a.lib_path),
    )?;
    let missing: BTreeSet<&str> = out
        .lines()
        .filter(|l| l.contains("not found"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(LabError::new(
            "qemu libraries",
            format!(
                "{} needs libraries neither the host nor the fetched packages have: {}",
                a.qemu.display(),
                missing.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ))
    }
}

/// Total size in bytes of the files under `dir` (symlinks not followed).
pub fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let Ok(md) = e.path().symlink_metadata() else {
                continue;
            };
            if md.is_dir() {
                stack.push(e.path());
            } else {
                total += md.len();
            }
        }
    }
    total
}
