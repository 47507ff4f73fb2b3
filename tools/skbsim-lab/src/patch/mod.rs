//! `--patch FILE`: the modules a kernel patch touches, rebuilt for a Debian guest kernel.
//!
//! 1. The files the patch changes (`+++ b/<path>`) and, for each `.c`, the module its
//!    directory's Makefile builds it into (`obj-$(CONFIG_TUN) += tun.o`,
//!    `vhost_net-y := net.o`). A file the kernel's `.config` builds in (`=y`, `obj-y`) is
//!    an error: a module rebuild cannot change it.
//! 2. Debian's `linux-source-<series>` at the guest's exact package version (only the
//!    tarball is kept, in `<cache>/src/<version>/`; the directories the patch needs are
//!    extracted from it once) and the guest's `linux-headers-<release>` with its `-common`
//!    and `linux-kbuild` packages (`<cache>/headers/<release>/`; their absolute paths are
//!    rewritten into the cache).
//! 3. The directories copied, the patch applied (`patch -p1`), and each module built alone
//!    with `make -C <headers> M=<dir> modules` from a generated Kbuild. Its `vermagic`
//!    must equal the stock module's.
//!
//! The result is cached per (kernel, patch contents) in `<kernel cache>/patched/<hash>/`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::kernel::{GuestKernel, KernelSource};
use super::modules::{modinfo, read_module, ModuleIndex};
use super::LabError;

mod sources;

use sources::{headers, series, source_dirs};

/// The modules rebuilt for a patch.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    /// (module name, the rebuilt `.ko`).
    pub modules: Vec<(String, PathBuf)>,
    /// True when the modules came from the cache.
    pub cached: bool,
    /// Fetching sources and building (zero when cached).
    pub time: Duration,
}

fn err(message: impl Into<String>) -> LabError {
    LabError::new("patch", message)
}

/// The files a unified diff changes (its `+++` paths without the `b/` prefix), sorted.
pub fn patched_files(patch: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut minus: Option<String> = None;
    for line in patch.lines() {
        if let Some(p) = line.strip_prefix("--- ") {
            minus = Some(p.split('\t').next().unwrap_or("").trim().to_string());
        } else if let Some(p) = line.strip_prefix("+++ ") {
            let mut p = p.split('\t').next().unwrap_or("").trim().to_string();
            if p == "/dev/null" {
                p = minus.take().unwrap_or_default();
            }
            let p = p.split_once('/').map(|(_, r)| r.to_string()).unwrap_or(p);
            if !p.is_empty() {
                out.insert(p);
            }
        }
    }
    out.into_iter().collect()
}

/// A directory Makefile's logical lines (continuations joined).
fn makefile_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in text.lines() {
        let l = l.split('#').next().unwrap_or("");
        if let Some(s) = l.strip_suffix('\\') {
            cur.push_str(s);
            cur.push(' ');
        } else {
            cur.push_str(l);
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}

/// How a directory's Makefile builds `object` (`tun.o`): the module and the config symbol
/// (`Some("CONFIG_TUN")`, or None for `obj-y`), and the module's objects with their
/// conditions (None = always).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleRule {
    pub module: String,
    pub config: Option<String>,
    pub objects: Vec<(String, Option<String>)>,
    /// `ccflags-*` and `CFLAGS_*` lines, copied into the generated Kbuild.
    pub flags: Vec<String>,
}

fn cond_of(suffix: &str) -> Option<Option<String>> {
    match suffix {
        "y" | "objs" => Some(None),
        s => s
            .strip_prefix("$(")
            .and_then(|s| s.strip_suffix(')'))
            .map(|c| Some(c.to_string())),
    }
}

/// The rule building `object` in Makefile `text`, if any.
pub fn module_rule(text: &str, object: &str) -> Option<ModuleRule> {
    let lines = makefile_lines(text);
    let mut composite: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
    let mut obj: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut flags = Vec::new();
    for l in &lines {
        let t = l.trim();
        if t.starts_with("ccflags-") || t.starts_with("CFLAGS_") {
            flags.push(t.to_string());
            continue;
        }
        let Some((lhs, rhs)) = t
            .split_once(":=")
            .or_else(|| t.split_once("+="))
            .or_else(|| t.split_once('='))
        else {
            continue;
        };
        let lhs = lhs.trim();
        let objs = rhs.split_whitespace().filter(|o| o.ends_with(".o"));
        if let Some(suffix) = lhs.strip_prefix("obj-") {
            let Some(cond) = cond_of(suffix) else {
                continue;
            };
            for o in objs {
                obj.insert(o.to_string(), cond.clone());
            }
        } else if let Some((m, suffix)) = lhs.rsplit_once('-') {
            let Some(cond) = cond_of(suffix) else {
                continue;
            };
            let e = composite.entry(format!("{m}.o")).or_default();
            e.extend(objs.map(|o| (o.to_string(), cond.clone())));
        }
    }
    let module = composite
        .iter()
        .find(|(_, os)| os.iter().any(|(o, _)| o == object))
        .map(|(m, _)| m.clone())
        .unwrap_or_else(|| object.to_string());
    let config = obj.get(&module)?.clone();
    Some(ModuleRule {
        objects: composite.remove(&module).unwrap_or_default(),
        module: module.trim_end_matches(".o").to_string(),
        config,
        flags,
    })
}

/// Run `cmd` (`what` names it in the error); its stdout and stderr, or the error with
/// its last error lines.
fn run(what: &str, cmd: &mut Command) -> Result<String, LabError> {
    let out = cmd
        .output()
        .map_err(|e| err(format!("cannot run {what}: {e}")))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        let last: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("error") || l.contains("FAILED") || l.contains("failed"))
            .take(3)
            .collect();
        let shown = if last.is_empty() {
            text.lines().last().unwrap_or("").to_string()
        } else {
            last.join(" | ")
        };
        return Err(err(format!("{what} failed ({}): {shown}", out.status)));
    }
    Ok(text)
}

fn fnv(data: &[u8], mut h: u64) -> u64 {
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// `KEY=value` of a kernel `.config`.
fn kconfig(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn vermagic(ko: &[u8]) -> Option<String> {
    modinfo(ko)?
        .into_iter()
        .find(|(k, _)| k == "vermagic")
        .map(|(_, v)| v)
}

/// Copy the regular files of `from` (not subdirectories) into `to`.
fn copy_files(from: &Path, to: &Path) -> Result<(), LabError> {
    fs::create_dir_all(to).map_err(|e| err(e.to_string()))?;
    for e in fs::read_dir(from).map_err(|e| err(format!("{}: {e}", from.display())))? {
        let e = e.map_err(|e| err(e.to_string()))?;
        if e.file_type().map_err(|e| err(e.to_string()))?.is_file() {
            fs::copy(e.path(), to.join(e.file_name())).map_err(|e| err(e.to_string()))?;
        }
    }
    Ok(())
}

/// Rebuild the modules `patch` touches for `kernel` (a Debian kernel): the files it
/// changes checked, the cached result reused, else the headers and the sources fetched,
/// each `.c` file's module found ([`module_rules`]), the patch applied to a copy
/// ([`apply`]) and each module built ([`Build::module`]).
pub fn rebuild(
    cache: &Path,
    kernel: &GuestKernel,
    patch: &Path,
    progress: &dyn Fn(&str),
) -> Result<Rebuilt, LabError> {
    let text = fs::read_to_string(patch).map_err(|e| err(format!("{}: {e}", patch.display())))?;
    let KernelSource::Debian { version, .. } = &kernel.source else {
        return Err(err(
            "--patch rebuilds modules of a Debian kernel (--kernel); rebuild a local tree with make",
        ));
    };
    let files = patched_files(&text);
    if files.is_empty() {
        return Err(err(format!(
            "{}: no `+++ b/<file>` lines: not a unified diff",
            patch.display()
        )));
    }
    let key = fnv(
        text.as_bytes(),
        fnv(version.as_bytes(), 0xcbf2_9ce4_8422_2325),
    );
    let out_dir = kernel.cache_dir.join("patched").join(format!("{key:016x}"));
    let done = out_dir.join("modules.txt");
    if let Ok(list) = fs::read_to_string(&done) {
        let modules = list
            .lines()
            .map(|m| (m.to_string(), out_dir.join(format!("{m}.ko"))))
            .collect();
        return Ok(Rebuilt {
            modules,
            cached: true,
            time: Duration::ZERO,
        });
    }
    let start = Instant::now();
    check_files(patch, &files)?;
    let dirs: BTreeSet<String> = files
        .iter()
        .map(|f| f.rsplit_once('/').map_or("", |(d, _)| d).to_string())
        .collect();
    let hdr = headers(cache, &kernel.kver, progress)?;
    let config = kconfig(
        &fs::read_to_string(hdr.join(".config"))
            .map_err(|e| err(format!("{}: {e}", hdr.display())))?,
    );
    let src = source_dirs(cache, &series(&kernel.kver), version, &dirs, progress)?;
    let index = ModuleIndex::load(&kernel.modules)?;
    let rules = module_rules(&files, &src, &config, &index, &kernel.kver)?;
    // The patched copy of those directories, mirroring the source tree for `patch -p1`.
    let build = out_dir.join("build");
    apply(patch, version, &src, &dirs, &build, progress)?;
    fs::create_dir_all(&out_dir).map_err(|e| err(e.to_string()))?;
    let b = Build {
        kver: &kernel.kver,
        hdr: &hdr,
        config: &config,
        index: &index,
        build: &build,
    };
    let mut modules = Vec::new();
    for (name, (dir, rule)) in &rules {
        let built = b.module(name, dir, rule, progress)?;
        let dest = out_dir.join(format!("{name}.ko"));
        fs::write(&dest, &built).map_err(|e| err(e.to_string()))?;
        modules.push((name.clone(), dest));
    }
    let list: String = modules.iter().map(|(n, _)| format!("{n}\n")).collect();
    fs::write(&done, list).map_err(|e| err(e.to_string()))?;
    let _ = fs::remove_dir_all(&build);
    Ok(Rebuilt {
        modules,
        cached: false,
        time: start.elapsed(),
    })
}

/// Only `.c` files, and headers beside one of them, can be rebuilt as modules.
fn check_files(patch: &Path, files: &[String]) -> Result<(), LabError> {
    let c_files: Vec<&String> = files.iter().filter(|f| f.ends_with(".c")).collect();
    for f in files {
        let dir = f.rsplit_once('/').map_or("", |(d, _)| d);
        let beside_c =
            f.ends_with(".h") && c_files.iter().any(|c| c.starts_with(&format!("{dir}/")));
        if !(f.ends_with(".c") || beside_c) {
            return Err(err(format!(
                "{} touches {f}: only .c files of modules (and headers beside them) can be rebuilt",
                patch.display()
            )));
        }
    }
    Ok(())
}

/// Per module the `.c` files of `files` go into: its source directory and its Makefile
/// rule. A file built in (`obj-y`, `=y` in `config`, or in `modules.builtin`) or not
/// built at all is the error.
fn module_rules(
    files: &[String],
    src: &Path,
    config: &BTreeMap<String, String>,
    index: &ModuleIndex,
    kver: &str,
) -> Result<BTreeMap<String, (String, ModuleRule)>, LabError> {
    let mut rules: BTreeMap<String, (String, ModuleRule)> = BTreeMap::new();
    for f in files.iter().filter(|f| f.ends_with(".c")) {
        let (dir, base) = f.rsplit_once('/').unwrap_or(("", f));
        let object = format!("{}.o", base.trim_end_matches(".c"));
        let mk = fs::read_to_string(src.join(dir).join("Makefile")).unwrap_or_default();
        let rule = module_rule(&mk, &object).ok_or_else(|| {
            err(format!(
                "{f}: {dir}/Makefile builds no {object}; cannot tell which module holds it"
            ))
        })?;
        let builtin = match &rule.config {
            None => Some("obj-y".to_string()),
            Some(c) => {
                let sym = c.trim_start_matches("CONFIG_");
                match config.get(&format!("CONFIG_{sym}")).map(String::as_str) {
                    Some("m") => None,
                    Some("y") => Some(format!("CONFIG_{sym}=y")),
                    _ => {
                        return Err(err(format!(
                            "{f}: CONFIG_{sym} is not set in {kver}: the kernel has no such code"
                        )))
                    }
                }
            }
        };
        if let Some(why) = builtin.or_else(|| {
            index
                .is_builtin(&rule.module)
                .then(|| "modules.builtin".to_string())
        }) {
            return Err(err(format!(
                "{f} is built into {kver} ({why}), not a module: a module rebuild cannot change it"
            )));
        }
        rules.insert(rule.module.clone(), (dir.to_string(), rule));
    }
    Ok(rules)
}

/// Copy `dirs` of the source tree `src` under `<build>/src` and apply `patch` there.
fn apply(
    patch: &Path,
    version: &str,
    src: &Path,
    dirs: &BTreeSet<String>,
    build: &Path,
    progress: &dyn Fn(&str),
) -> Result<(), LabError> {
    let _ = fs::remove_dir_all(build);
    for d in dirs {
        copy_files(&src.join(d), &build.join("src").join(d))?;
    }
    progress("patch -p1");
    run(
        &format!("patch -p1 < {}", patch.display()),
        Command::new("patch")
            .args([
                "-p1",
                "--batch",
                "--forward",
                "--no-backup-if-mismatch",
                "-d",
            ])
            .arg(build.join("src"))
            .arg("-i")
            .arg(fs::canonicalize(patch).map_err(|e| err(e.to_string()))?),
    )
    .map_err(|e| {
        err(format!(
            "{} does not apply to linux-source {version}: {}",
            patch.display(),
            e.message
        ))
    })?;
    Ok(())
}

/// What building one module against the guest's headers needs.
struct Build<'a> {
    kver: &'a str,
    /// The guest's linux-headers tree (`make -C`).
    hdr: &'a Path,
    config: &'a BTreeMap<String, String>,
    /// The stock modules, for the vermagic check.
    index: &'a ModuleIndex,
    /// The patched copy ([`apply`]).
    build: &'a Path,
}

impl Build<'_> {
    /// Build module `name` from the patched `dir` alone (a generated Kbuild, `make -C
    /// <headers> M=`); its bytes, once its vermagic is the stock module's.
    fn module(
        &self,
        name: &str,
        dir: &str,
        rule: &ModuleRule,
        progress: &dyn Fn(&str),
    ) -> Result<Vec<u8>, LabError> {
        let m = self.build.join(format!("mod-{name}"));
        copy_files(&self.build.join("src").join(dir), &m)?;
        let _ = fs::remove_file(m.join("Makefile"));
        let mut kbuild = format!("obj-m := {name}.o\n");
        for (o, cond) in &rule.objects {
            let on = match cond {
                None => true,
                Some(c) => matches!(
                    self.config.get(c.as_str()).map(String::as_str),
                    Some("y" | "m")
                ),
            };
            if on {
                kbuild.push_str(&format!("{name}-y += {o}\n"));
            }
        }
        for f in &rule.flags {
            kbuild.push_str(f);
            kbuild.push('\n');
        }
        fs::write(m.join("Kbuild"), kbuild).map_err(|e| err(e.to_string()))?;
        progress(&format!("make M=… {name}.ko"));
        run(
            &format!("make -C {} M={} modules", self.hdr.display(), m.display()),
            Command::new("make")
                .arg("-C")
                .arg(self.hdr)
                .arg(format!("M={}", m.display()))
                // No BTF for the rebuilt module: it needs pahole (6.12's modfinal runs it
                // even without a vmlinux to base it on), and a module loads without it.
                .arg("CONFIG_DEBUG_INFO_BTF_MODULES=")
                .args(["modules", "-j2"]),
        )?;
        let ko = m.join(format!("{name}.ko"));
        let built = fs::read(&ko).map_err(|e| err(format!("{}: {e}", ko.display())))?;
        let kver = self.kver;
        let stock = self
            .index
            .file(name)
            .ok_or_else(|| err(format!("{kver} has no stock module {name}")))?;
        let (a, b) = (vermagic(&built), vermagic(&read_module(stock)?));
        if a.is_none() || a != b {
            return Err(err(format!(
                "{name}.ko: vermagic {:?} differs from the guest's {:?}",
                a.unwrap_or_default(),
                b.unwrap_or_default()
            )));
        }
        Ok(built)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_a_patch() {
        let p = "--- a/drivers/net/tun.c\t2026\n+++ b/drivers/net/tun.c\t2026\n@@ -1 +1 @@\n-x\n+y\n--- a/drivers/vhost/net.c\n+++ b/drivers/vhost/net.c\n";
        assert_eq!(
            patched_files(p),
            ["drivers/net/tun.c", "drivers/vhost/net.c"]
        );
        assert!(patched_files("not a diff").is_empty());
    }

    #[test]
    fn makefile_rules() {
        let vhost = "obj-$(CONFIG_VHOST_NET) += vhost_net.o\nvhost_net-y := net.o\n\nobj-$(CONFIG_VHOST) += vhost.o\n";
        let r = module_rule(vhost, "net.o").unwrap();
        assert_eq!(r.module, "vhost_net");
        assert_eq!(r.config.as_deref(), Some("CONFIG_VHOST_NET"));
        assert_eq!(r.objects, [("net.o".to_string(), None)]);
        let net = "obj-$(CONFIG_MACVTAP) += macvtap.o\nobj-$(CONFIG_TUN) += tun.o \\\n\tveth.o\n";
        let r = module_rule(net, "tun.o").unwrap();
        assert_eq!(
            (r.module.as_str(), r.config.as_deref()),
            ("tun", Some("CONFIG_TUN"))
        );
        assert!(r.objects.is_empty());
        let eth = "obj-y += eth.o eth_netlink.o\n";
        assert_eq!(module_rule(eth, "eth.o").unwrap().config, None);
        assert_eq!(module_rule(eth, "nothere.o"), None);
    }
}
