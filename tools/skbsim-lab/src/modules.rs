//! The guest kernel's modules: each `.ko`'s `.modinfo` (its `depends=`, what `depmod`
//! reads: the host has no kmod and the .deb ships no `modules.dep`), the index of a
//! `lib/modules/<release>` tree (Debian 6.12's `.ko.xz` read uncompressed), the load order
//! of the modules a run names, and the `modules.dep` the base archive carries so
//! `modprobe` works in the guest too.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use super::LabError;

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

    /// Every module's (path in the guest, file on the host), sorted: the index is a
    /// HashMap, and what is computed over it (the base archive's key) must not depend on
    /// its order.
    pub fn sorted_files(&self) -> Vec<&(String, PathBuf)> {
        let mut files: Vec<&(String, PathBuf)> = self.files.values().collect();
        files.sort();
        files
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

    #[test]
    fn modinfo_of_a_non_elf_is_none() {
        assert_eq!(modinfo(b"not an elf"), None);
    }
}
