//! `--patch`'s sources: the guest's linux-headers (with its -common and linux-kbuild
//! packages, their absolute paths rewritten into the cache) and the directories of
//! Debian's linux-source a patch touches, each fetched or extracted once.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{err, run};
use crate::fetch::{commit_tree, download_unpack, stamp_of};
use crate::LabError;

/// `6.1` from `6.1.0-57-cloud-amd64`, `6.12` from `6.12.117+deb12-cloud-amd64`.
pub(super) fn series(kver: &str) -> String {
    kver.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// The guest's headers tree (`.../usr/src/linux-headers-<release>`), fetched once.
pub(super) fn headers(
    cache: &Path,
    kver: &str,
    progress: &dyn Fn(&str),
) -> Result<PathBuf, LabError> {
    let root = cache.join("headers").join(kver);
    let dir = root.join("usr/src").join(format!("linux-headers-{kver}"));
    if stamp_of(&root).is_some() {
        return Ok(dir);
    }
    let pkg = format!("linux-headers-{kver}");
    let deps = crate::fetch::depends_of(std::slice::from_ref(&pkg))?;
    let groups = deps
        .get(&pkg)
        .ok_or_else(|| err(format!("apt knows no package {pkg}")))?;
    let mut wanted = vec![pkg.clone()];
    for alts in groups {
        if let Some(a) = alts
            .iter()
            .find(|a| a.starts_with("linux-headers-") || a.starts_with("linux-kbuild-"))
        {
            wanted.push(a.clone());
        }
    }
    fs::create_dir_all(cache.join("headers")).map_err(|e| err(e.to_string()))?;
    let tmp = cache.join("headers").join(format!("{kver}.tmp"));
    progress(&format!("fetching {}", wanted.join(", ")));
    let stamp = download_unpack(
        cache,
        &format!("headers-{kver}"),
        &wanted,
        &tmp,
        &[],
        progress,
    )?;
    // The packages point at /usr/src and /usr/lib absolutely: into the cache instead.
    let tdir = tmp.join("usr/src").join(format!("linux-headers-{kver}"));
    let mk = tdir.join("Makefile");
    let text = fs::read_to_string(&mk).map_err(|e| err(format!("{}: {e}", mk.display())))?;
    let moved = text.replace("include /usr/", &format!("include {}/usr/", root.display()));
    fs::write(&mk, moved).map_err(|e| err(format!("{}: {e}", mk.display())))?;
    let mut stack = vec![tmp.join("usr")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let Ok(md) = p.symlink_metadata() else {
                continue;
            };
            if md.file_type().is_symlink() {
                if let Ok(t) = fs::read_link(&p) {
                    if t.is_absolute() {
                        let _ = fs::remove_file(&p);
                        let target = root.join(t.strip_prefix("/").unwrap_or(&t));
                        std::os::unix::fs::symlink(target, &p)
                            .map_err(|e| err(format!("{}: {e}", p.display())))?;
                    }
                }
            } else if md.is_dir() {
                stack.push(p);
            }
        }
    }
    commit_tree(&tmp, &root, &stamp)?;
    Ok(dir)
}

/// The directories `dirs` of linux-source-<series> at `version`, extracted into
/// `<cache>/src/<version>/tree` (each once).
pub(super) fn source_dirs(
    cache: &Path,
    series: &str,
    version: &str,
    dirs: &BTreeSet<String>,
    progress: &dyn Fn(&str),
) -> Result<PathBuf, LabError> {
    let base = cache.join("src").join(version.replace(['~', ':'], "_"));
    let tree = base.join("tree");
    let tarball = base.join(format!("linux-source-{series}.tar.xz"));
    fs::create_dir_all(&tree).map_err(|e| err(e.to_string()))?;
    let have = |d: &str| {
        tree.join(format!("linux-source-{series}"))
            .join(d)
            .join(".skbsim-extracted")
            .exists()
    };
    let missing: Vec<&String> = dirs.iter().filter(|d| !have(d)).collect();
    if missing.is_empty() {
        return Ok(tree.join(format!("linux-source-{series}")));
    }
    if !tarball.exists() {
        let pkg = format!("linux-source-{series}");
        progress(&format!("apt-get download {pkg}={version} (about 140 MB)"));
        let dl = base.join("dl");
        let _ = fs::remove_dir_all(&dl);
        fs::create_dir_all(&dl).map_err(|e| err(e.to_string()))?;
        run(
            "apt-get download",
            Command::new("apt-get")
                .current_dir(&dl)
                .args(["download", "-q", "-o", "APT::Sandbox::User=root"])
                .arg(format!("{pkg}={version}")),
        )?;
        let deb = fs::read_dir(&dl)
            .map_err(|e| err(e.to_string()))?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "deb"))
            .ok_or_else(|| err(format!("apt-get download {pkg}={version} left no .deb")))?;
        // Only the tarball: `dpkg-deb --fsys-tarfile | tar -x` of that one member.
        let sh = format!(
            "dpkg-deb --fsys-tarfile {} | tar -x -C {} ./usr/src/linux-source-{series}.tar.xz",
            crate::shell_quote(&deb.to_string_lossy()),
            crate::shell_quote(&dl.to_string_lossy())
        );
        run(
            "dpkg-deb --fsys-tarfile",
            Command::new("sh").args(["-c", &sh]),
        )?;
        fs::rename(
            dl.join(format!("usr/src/linux-source-{series}.tar.xz")),
            &tarball,
        )
        .map_err(|e| err(e.to_string()))?;
        let _ = fs::remove_dir_all(&dl);
    }
    progress(&format!(
        "extracting {} from linux-source-{series}",
        missing
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut cmd = Command::new("tar");
    cmd.arg("-C")
        .arg(&tree)
        .arg("-xJf")
        .arg(&tarball)
        // The files of each directory, not its subdirectories (drivers/net/ethernet alone
        // is 130 MB): a module's sources sit beside its Makefile.
        .args([
            "--wildcards",
            "--no-wildcards-match-slash",
            "--no-recursion",
        ]);
    for d in &missing {
        cmd.arg(format!("linux-source-{series}/{d}/*"));
    }
    run("tar -xJf linux-source", &mut cmd)?;
    for d in &missing {
        let p = tree.join(format!("linux-source-{series}")).join(d.as_str());
        fs::write(p.join(".skbsim-extracted"), "").map_err(|e| err(e.to_string()))?;
    }
    Ok(tree.join(format!("linux-source-{series}")))
}
