//! Which guest kernel boots: a Debian cloud kernel (`6.1`, `6.12` or an exact
//! `linux-image-...-cloud-amd64` package), each unpacked into its own
//! `<cache>/kernels/<package>/`, or a local build (`--kernel-dir DIR`: a bzImage and the
//! modules tree `make modules_install INSTALL_MOD_PATH=DIR` leaves, the virtme-ng
//! convention), read in place.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::fetch::{commit_tree, download_unpack, meta_kernel_package, stamp_of};
use super::LabError;

/// The metapackage that names Debian 12's own cloud kernel (6.1).
pub const KERNEL_META: &str = "linux-image-cloud-amd64";
/// The kernel `skbsim lab` boots when none is named.
pub const DEFAULT_KERNEL: &str = "6.1";
/// The suffix of Debian's cloud kernel image packages.
const FLAVOUR: &str = "-cloud-amd64";

/// The kernel a lab command asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelChoice {
    /// A Debian cloud kernel: a version (`6.1`, `6.12`: the build apt's candidate
    /// metapackage names) or an exact `linux-image-*-cloud-amd64` package.
    Debian(String),
    /// A local build: a bzImage and a `lib/modules/<release>` tree under this directory.
    Dir(PathBuf),
}

impl Default for KernelChoice {
    fn default() -> KernelChoice {
        KernelChoice::Debian(DEFAULT_KERNEL.to_string())
    }
}

/// Where a prepared kernel came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSource {
    /// The Debian package (`name version`).
    Debian { package: String, version: String },
    /// A local build directory.
    Dir(PathBuf),
}

/// A guest kernel ready to boot.
#[derive(Debug, Clone)]
pub struct GuestKernel {
    /// Its release (`6.1.0-57-cloud-amd64`, `6.12.117+deb12-cloud-amd64`).
    pub kver: String,
    /// The bzImage QEMU boots.
    pub vmlinuz: PathBuf,
    /// `.../lib/modules/<kver>`.
    pub modules: PathBuf,
    pub source: KernelSource,
    /// Where this kernel's base archives and build products are kept.
    pub cache_dir: PathBuf,
    /// True when this call downloaded and unpacked it.
    pub fetched: bool,
    /// How long that took (zero when cached or local).
    pub fetch_time: Duration,
}

/// `6.1`, `6.12`: a major.minor version.
fn is_version(spec: &str) -> bool {
    let mut parts = spec.split('.');
    let ok =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// The image package a version or package name stands for (asks apt's local lists).
pub fn resolve_package(spec: &str) -> Result<String, LabError> {
    if let Some(rest) = spec.strip_prefix("linux-image-") {
        if !rest.ends_with(FLAVOUR) && !rest.ends_with("-cloud-amd64-unsigned") {
            return Err(LabError::new(
                "kernel",
                format!("{spec} is not a Debian cloud kernel image (linux-image-*{FLAVOUR})"),
            ));
        }
        return Ok(spec.to_string());
    }
    if !is_version(spec) {
        return Err(LabError::new(
            "kernel",
            format!("--kernel {spec}: expected a version such as 6.1 or 6.12, or a linux-image-*{FLAVOUR} package"),
        ));
    }
    // linux-image-6.12-cloud-amd64 names the newest 6.12 build; Debian 12's own 6.1 is
    // linux-image-cloud-amd64.
    let prefix = format!("linux-image-{spec}.");
    for meta in [
        format!("linux-image-{spec}{FLAVOUR}"),
        KERNEL_META.to_string(),
    ] {
        if let Some(p) = meta_kernel_package(&meta)? {
            if p.starts_with(&prefix) {
                return Ok(p);
            }
        }
    }
    Err(LabError::new(
        "kernel",
        format!(
            "no Debian cloud kernel {spec} in apt's package lists (`skbsim lab kernels` lists them; is `apt-get update` done?)"
        ),
    ))
}

/// The release found in `<root>/boot/vmlinuz-*`.
fn find_kver(root: &Path) -> Result<String, LabError> {
    let boot = root.join("boot");
    let rd = fs::read_dir(&boot)
        .map_err(|e| LabError::new("unpack", format!("{}: {e}", boot.display())))?;
    let mut found: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("vmlinuz-")
                .map(str::to_string)
        })
        .collect();
    found.sort();
    found
        .pop()
        .ok_or_else(|| LabError::new("unpack", format!("no vmlinuz-* in {}", boot.display())))
}

fn debian_kernel(dir: &Path, fetched: bool, fetch_time: Duration) -> Result<GuestKernel, LabError> {
    let kver = find_kver(dir)?;
    let stamp = stamp_of(dir).unwrap_or_default();
    let (package, version) = stamp
        .iter()
        .find_map(|l| l.split_once(' '))
        .map(|(p, v)| (p.to_string(), v.to_string()))
        .unwrap_or_default();
    let k = GuestKernel {
        vmlinuz: dir.join("boot").join(format!("vmlinuz-{kver}")),
        modules: dir.join("lib/modules").join(&kver),
        kver,
        source: KernelSource::Debian { package, version },
        cache_dir: dir.to_path_buf(),
        fetched,
        fetch_time,
    };
    if !k.modules.join("kernel").is_dir() {
        return Err(LabError::new(
            "unpack",
            format!("the guest's modules are missing: {}", k.modules.display()),
        ));
    }
    Ok(k)
}

/// `<cache>/kernels`.
pub fn kernels_dir(cache: &Path) -> PathBuf {
    cache.join("kernels")
}

/// The Debian kernel `package`, fetched into `<cache>/kernels/<package>` unless there.
pub fn prepare_debian(
    cache: &Path,
    package: &str,
    progress: &dyn Fn(&str),
) -> Result<GuestKernel, LabError> {
    let dir = kernels_dir(cache).join(package);
    if stamp_of(&dir).is_some() {
        return debian_kernel(&dir, false, Duration::ZERO);
    }
    let start = Instant::now();
    fs::create_dir_all(kernels_dir(cache))
        .map_err(|e| LabError::new("download", format!("{}: {e}", cache.display())))?;
    let tmp = kernels_dir(cache).join(format!("{package}.tmp"));
    // The image alone: its dependencies (kmod, initramfs-tools) are for installing it.
    let junk = ["usr/share/doc", "usr/share/lintian", "usr/lib/linux"];
    let stamp = download_unpack(
        cache,
        package,
        &[package.to_string()],
        &tmp,
        &junk,
        progress,
    )?;
    debian_kernel(&tmp, true, Duration::ZERO)?;
    commit_tree(&tmp, &dir, &stamp)?;
    debian_kernel(&dir, true, start.elapsed())
}

/// The release a bzImage announces (the setup header's `kernel_version` string, whose
/// first word is the release `uname -r` prints; Documentation/arch/x86/boot.rst).
pub fn bzimage_release(image: &[u8]) -> Option<String> {
    if image.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let off = u16::from_le_bytes(image.get(0x20e..0x210)?.try_into().ok()?);
    let start = 0x200 + usize::from(off);
    let s = image.get(start..start.checked_add(256)?.min(image.len()))?;
    let end = s.iter().position(|&b| b == 0 || b == b' ')?;
    std::str::from_utf8(&s[..end]).ok().map(str::to_string)
}

fn dir_err(dir: &Path, what: impl Into<String>) -> LabError {
    LabError::new("kernel dir", format!("{}: {}", dir.display(), what.into()))
}

/// The bzImage of a kernel directory: `arch/x86/boot/bzImage` (a build tree), `bzImage`,
/// or the one `boot/vmlinuz-*`.
fn find_image(dir: &Path) -> Result<PathBuf, LabError> {
    for rel in ["arch/x86/boot/bzImage", "bzImage"] {
        let p = dir.join(rel);
        if p.is_file() {
            return Ok(p);
        }
    }
    let mut found: Vec<PathBuf> = fs::read_dir(dir.join("boot"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
        .collect();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(dir_err(
            dir,
            "no kernel image (arch/x86/boot/bzImage, bzImage or boot/vmlinuz-*)",
        )),
        _ => Err(dir_err(dir, "more than one boot/vmlinuz-*; keep one")),
    }
}

/// A local kernel: its bzImage and `lib/modules/<release>` (or `usr/lib/modules`) under
/// `dir`, the release taken from the bzImage and checked against the modules tree.
pub fn prepare_dir(cache: &Path, dir: &Path) -> Result<GuestKernel, LabError> {
    let dir = fs::canonicalize(dir).map_err(|e| dir_err(dir, e.to_string()))?;
    let image = find_image(&dir)?;
    let bytes = fs::read(&image).map_err(|e| dir_err(&image, e.to_string()))?;
    let kver = bzimage_release(&bytes)
        .ok_or_else(|| dir_err(&image, "not an x86 bzImage (no HdrS setup header)"))?;
    let modules = ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|m| dir.join(m).join(&kver))
        .find(|m| m.join("kernel").is_dir())
        .ok_or_else(|| {
            let have: Vec<String> = ["lib/modules", "usr/lib/modules"]
                .iter()
                .flat_map(|m| fs::read_dir(dir.join(m)).into_iter().flatten().flatten())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            dir_err(
                &dir,
                format!(
                    "the bzImage is {kver} but there is no lib/modules/{kver}/kernel (found: {}); run `make modules_install INSTALL_MOD_PATH={}`",
                    if have.is_empty() { "none".to_string() } else { have.join(", ") },
                    dir.display()
                ),
            )
        })?;
    // Keyed by the directory, so two trees of one release do not share base archives.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in dir.to_string_lossy().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    let cache_dir = local_dir(cache).join(format!("{kver}-{h:016x}"));
    // Each tree gets its own entry, so a CI that builds a tree in a fresh clone each run
    // would fill the cache: an entry whose tree is gone (or was never recorded, by an
    // older skbsim) can never be used again and goes now.
    for stale in cached_local(cache) {
        if !stale.tree_present && stale.cache_dir != cache_dir {
            let _ = fs::remove_dir_all(&stale.cache_dir);
        }
    }
    // The tree this cache entry belongs to, for `skbsim lab kernels` (the name is a hash).
    fs::create_dir_all(&cache_dir)
        .and_then(|()| {
            fs::write(
                cache_dir.join(LOCAL_SOURCE),
                dir.as_os_str().as_encoded_bytes(),
            )
        })
        .map_err(|e| dir_err(&cache_dir, e.to_string()))?;
    Ok(GuestKernel {
        vmlinuz: image,
        modules,
        cache_dir,
        kver,
        source: KernelSource::Dir(dir),
        fetched: false,
        fetch_time: Duration::ZERO,
    })
}

/// Prepare the kernel `choice` names.
pub fn prepare(
    cache: &Path,
    choice: &KernelChoice,
    progress: &dyn Fn(&str),
) -> Result<GuestKernel, LabError> {
    match choice {
        KernelChoice::Dir(d) => prepare_dir(cache, d),
        KernelChoice::Debian(spec) => {
            progress(&format!("resolving kernel {spec}"));
            let package = match resolve_package(spec) {
                Ok(p) => p,
                // Offline: the newest cached build of that version still boots.
                Err(e) => cached(cache)
                    .into_iter()
                    .rev()
                    .find(|c| is_version(spec) && c.kver.starts_with(&format!("{spec}.")))
                    .map(|c| c.package)
                    .ok_or(e)?,
            };
            prepare_debian(cache, &package, progress)
        }
    }
}

/// A kernel in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedKernel {
    pub package: String,
    pub version: String,
    pub kver: String,
    pub bytes: u64,
}

/// The Debian kernels in `<cache>/kernels`, by package name.
pub fn cached(cache: &Path) -> Vec<CachedKernel> {
    let mut out: Vec<CachedKernel> = fs::read_dir(kernels_dir(cache))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let dir = e.path();
            let stamp = stamp_of(&dir)?;
            let (package, version) = stamp.first()?.split_once(' ')?;
            Some(CachedKernel {
                package: package.to_string(),
                version: version.to_string(),
                kver: find_kver(&dir).ok()?,
                bytes: super::fetch::dir_size(&dir),
            })
        })
        .collect();
    out.sort_by(|a, b| a.package.cmp(&b.package));
    out
}

/// `<cache>/local`: one directory per local build (`--kernel-dir`), its base archives.
pub fn local_dir(cache: &Path) -> PathBuf {
    cache.join("local")
}

/// The file in a local build's cache directory naming the tree it was made from.
const LOCAL_SOURCE: &str = "source";

/// A local build (`--kernel-dir`) the cache holds base archives for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedLocalKernel {
    pub kver: String,
    /// The tree it was made from (None for an entry made before the lab recorded it).
    pub tree: Option<PathBuf>,
    /// Whether that tree still has its bzImage (a removed tree's entry can be deleted).
    pub tree_present: bool,
    /// The cache directory and its size.
    pub cache_dir: PathBuf,
    pub bytes: u64,
}

/// The local builds in `<cache>/local`, by release then tree.
pub fn cached_local(cache: &Path) -> Vec<CachedLocalKernel> {
    let mut out: Vec<CachedLocalKernel> = fs::read_dir(local_dir(cache))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let cache_dir = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            // `<release>-<16 hex digits>`.
            let (kver, hash) = name.rsplit_once('-')?;
            if hash.len() != 16 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let tree = fs::read(cache_dir.join(LOCAL_SOURCE))
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .map(PathBuf::from);
            let tree_present = tree.as_deref().is_some_and(|t| find_image(t).is_ok());
            Some(CachedLocalKernel {
                kver: kver.to_string(),
                tree,
                tree_present,
                bytes: super::fetch::dir_size(&cache_dir),
                cache_dir,
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.kver, &a.tree).cmp(&(&b.kver, &b.tree)));
    out
}

/// A Debian cloud kernel apt offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvailableKernel {
    /// `6.1`, `6.12`.
    pub series: String,
    pub package: String,
}

/// The signed `linux-image-<release>-cloud-amd64` packages in apt's lists (no -dbg, no
/// -unsigned, no metapackages), by series then name.
pub fn available() -> Result<Vec<AvailableKernel>, LabError> {
    let out = Command::new("apt-cache")
        .args(["pkgnames", "linux-image-"])
        .output()
        .map_err(|e| LabError::new("kernel", format!("cannot run apt-cache: {e}")))?;
    let mut list: Vec<AvailableKernel> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|p| p.ends_with(FLAVOUR))
        .filter_map(|p| {
            let release = p.strip_prefix("linux-image-")?.strip_suffix(FLAVOUR)?;
            let mut parts = release.split(['.', '-', '+']);
            let series = format!("{}.{}", parts.next()?, parts.next()?);
            // A metapackage (linux-image-6.12-cloud-amd64) has no third component.
            parts.next()?;
            is_version(&series).then(|| AvailableKernel {
                series,
                package: p.to_string(),
            })
        })
        .collect();
    let key = |k: &AvailableKernel| -> Vec<u64> {
        k.package
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect()
    };
    list.sort_by_key(key);
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_packages() {
        assert!(is_version("6.1") && is_version("6.12"));
        assert!(!is_version("6") && !is_version("6.1.2") && !is_version("6.x"));
        assert_eq!(
            resolve_package("linux-image-6.12.117+deb12-cloud-amd64").unwrap(),
            "linux-image-6.12.117+deb12-cloud-amd64"
        );
        let e = resolve_package("linux-image-6.1.0-57-amd64").unwrap_err();
        assert_eq!(e.step, "kernel");
        assert!(resolve_package("latest").is_err());
    }

    #[test]
    fn bzimage_release_reads_the_setup_header() {
        // A setup header: "HdrS" at 0x202, kernel_version = 0x100 -> string at 0x300.
        let mut img = vec![0u8; 0x400];
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        let v = b"6.12.117+deb12-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP\0";
        img[0x300..0x300 + v.len()].copy_from_slice(v);
        assert_eq!(
            bzimage_release(&img).as_deref(),
            Some("6.12.117+deb12-cloud-amd64")
        );
        img[0x202] = b'X';
        assert_eq!(bzimage_release(&img), None);
        assert_eq!(bzimage_release(b"short"), None);
    }
}
