//! Loading clang `-target bpf` ELF objects, the way libbpf does for the parts XDP uses.
//!
//! Supported: program sections (every executable section but `.text`; one program per
//! `STT_FUNC` symbol), the `license` section, maps defined the libbpf way in `.maps`
//! (described only in BTF: the `.maps` DATASEC, `__uint` members as PTR -> ARRAY with
//! `nelems` = value, `__type` members as PTR -> type), legacy `maps` sections of
//! `struct bpf_map_def`, global data (`.rodata*`, `.data*`, `.bss*` become one-element
//! array maps referenced with BPF_PSEUDO_MAP_VALUE), and bpf-to-bpf calls into `.text`
//! (appended to the program as libbpf does). Relocations R_BPF_64_64 on ld_imm64 and
//! R_BPF_64_32 on calls are applied. Not supported: CO-RE relocations, kfuncs,
//! map-in-map, tail-call program arrays, big-endian objects.

use std::path::Path;

use object::{
    Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SectionKind, SymbolKind,
};

use super::insn::{
    parse_insns, Insn, BPF_CALL, BPF_DW, BPF_IMM, BPF_JMP, BPF_LD, BPF_PSEUDO_CALL,
    BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_VALUE,
};
use super::maps::{MapRef, MapSpec, MapType, BPF_F_RDONLY_PROG};
use super::{BpfError, Program};

#[path = "elf_btf.rs"]
mod btf;
#[path = "elf_header.rs"]
mod header;
use btf::btf_map_defs;

const R_BPF_64_64: u32 = 1;
const R_BPF_64_32: u32 = 10;

/// One program of an object, its relocations applied; map slots index [`ElfObject::maps`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfProgram {
    pub section: String,
    pub name: String,
    pub insns: Vec<Insn>,
}

/// What an object file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfObject {
    pub file: String,
    pub license: String,
    pub maps: Vec<MapRef>,
    pub programs: Vec<ElfProgram>,
}

/// The largest program file (ELF object or assembly) accepted. The kernel loads at most
/// BPF_COMPLEXITY_LIMIT_INSNS (1M) instructions (kernel/bpf/syscall.c: bpf_prog_load):
/// 8 MiB of bytecode, about 40 MiB as assembly text; objects add BTF and DWARF beside
/// it. 64 MiB holds any loadable program and keeps `/dev/zero` or a misnamed capture
/// from filling memory.
pub const MAX_PROGRAM_FILE_BYTES: u64 = 64 << 20;

/// Load program `name` (a section name such as "xdp", or a function name) from a file.
pub fn load_elf_file(path: &Path, name: &str) -> Result<Program, BpfError> {
    let file = path.display().to_string();
    let bytes =
        crate::fsutil::read_bounded(path, "XDP program", MAX_PROGRAM_FILE_BYTES).map_err(|e| {
            BpfError::Elf {
                file: file.clone(),
                msg: e.to_string(),
            }
        })?;
    ElfObject::parse(&file, &bytes)?.program(name)
}

struct Loader<'a> {
    file: &'a str,
    stem: String,
    obj: &'a object::File<'a>,
    maps: Vec<MapRef>,
}

impl Loader<'_> {
    fn err(&self, msg: impl Into<String>) -> BpfError {
        BpfError::Elf {
            file: self.file.to_string(),
            msg: msg.into(),
        }
    }

    fn insns_of(&self, sec: &object::Section<'_, '_>) -> Result<Vec<Insn>, BpfError> {
        let name = sec.name().unwrap_or("?");
        let data = sec
            .data()
            .map_err(|e| self.err(format!("section {name}: {e}")))?;
        parse_insns(data).map_err(|_| {
            self.err(format!(
                "section {name}: size {} is not a multiple of 8",
                data.len()
            ))
        })
    }

    /// Map and data relocations are applied in place; calls into `.text` are returned
    /// as (insn index, target index within `.text`).
    fn relocate(
        &mut self,
        sec: &object::Section<'_, '_>,
        insns: &mut [Insn],
    ) -> Result<Vec<(usize, usize)>, BpfError> {
        let sname = sec.name().unwrap_or("?").to_string();
        let mut calls = Vec::new();
        for (off, rel) in sec.relocations() {
            let at = format!("relocation at {sname}+{off:#x}");
            let idx = (off / 8) as usize;
            if off % 8 != 0 || idx >= insns.len() {
                return Err(self.err(format!("{at}: not at an instruction")));
            }
            let (RelocationFlags::Elf { r_type }, RelocationTarget::Symbol(si)) =
                (rel.flags(), rel.target())
            else {
                return Err(self.err(format!("{at}: not an ELF symbol relocation")));
            };
            let sym = self
                .obj
                .symbol_by_index(si)
                .map_err(|e| self.err(format!("{at}: {e}")))?;
            let sym_name = sym.name().unwrap_or("?").to_string();
            let target_sec = match sym.section_index() {
                Some(i) => self
                    .obj
                    .section_by_index(i)
                    .map_err(|e| self.err(format!("{at}: {e}")))?,
                None => {
                    return Err(self.err(format!(
                        "{at}: symbol {sym_name:?} is undefined (extern/kfunc not supported)"
                    )))
                }
            };
            let tname = target_sec.name().unwrap_or("?").to_string();
            match r_type {
                R_BPF_64_64 => {
                    if insns[idx].code != BPF_LD | BPF_IMM | BPF_DW || idx + 1 >= insns.len() {
                        return Err(self.err(format!(
                            "{at}: relocation of {sym_name:?} not on an ld_imm64"
                        )));
                    }
                    if tname == ".maps" || tname == "maps" {
                        let slot = self.maps.iter().position(|m| m.name == sym_name).ok_or_else(|| {
                            self.err(format!("{at}: {sym_name:?} in {tname} is not a map definition this loader understood"))
                        })?;
                        insns[idx].src = BPF_PSEUDO_MAP_FD;
                        insns[idx].imm = slot as i32;
                    } else if [".rodata", ".data", ".bss"]
                        .iter()
                        .any(|p| tname.starts_with(p))
                    {
                        let slot = self.data_map(&target_sec)?;
                        insns[idx + 1].imm = insns[idx].imm.wrapping_add(sym.address() as i32);
                        insns[idx].src = BPF_PSEUDO_MAP_VALUE;
                        insns[idx].imm = slot as i32;
                    } else {
                        return Err(self.err(format!(
                            "{at}: reference to {sym_name:?} in unsupported section {tname}"
                        )));
                    }
                }
                R_BPF_64_32 => {
                    let i = insns[idx];
                    if i.code != BPF_JMP | BPF_CALL || i.src != BPF_PSEUDO_CALL {
                        return Err(
                            self.err(format!("{at}: call relocation not on a bpf-to-bpf call"))
                        );
                    }
                    if tname != ".text" {
                        return Err(self.err(format!(
                            "{at}: call into {tname}: only .text subprograms are supported"
                        )));
                    }
                    let target = (sym.address() / 8) as i64 + i64::from(i.imm) + 1;
                    calls.push((
                        idx,
                        usize::try_from(target)
                            .map_err(|_| self.err(format!("{at}: bad call target")))?,
                    ));
                }
                t => return Err(self.err(format!("{at}: unsupported relocation type {t}"))),
            }
        }
        Ok(calls)
    }

    /// The slot of the array map standing for a global-data section, created on first use.
    fn data_map(&mut self, sec: &object::Section<'_, '_>) -> Result<u32, BpfError> {
        let sname = sec.name().unwrap_or("?");
        let name = format!("{}{}", self.stem, sname);
        if let Some(i) = self.maps.iter().position(|m| m.name == name) {
            return Ok(i as u32);
        }
        let size = u32::try_from(sec.size())
            .map_err(|_| self.err(format!("{sname} too large")))?
            .max(1);
        let mut spec = MapSpec::array(size, 1);
        if sname.starts_with(".rodata") {
            spec.map_flags |= BPF_F_RDONLY_PROG;
        }
        let init = if sec.kind() == SectionKind::UninitializedData {
            Vec::new()
        } else {
            sec.data().unwrap_or(&[]).to_vec()
        };
        self.maps.push(MapRef {
            name,
            spec: Some(spec),
            init: Some(init),
        });
        Ok((self.maps.len() - 1) as u32)
    }

    /// Legacy `struct bpf_map_def { type, key_size, value_size, max_entries, map_flags }`.
    fn legacy_maps(&mut self, sec: &object::Section<'_, '_>) -> Result<(), BpfError> {
        let data = sec.data().map_err(|e| self.err(format!("maps: {e}")))?;
        let mut syms: Vec<_> = self
            .obj
            .symbols()
            .filter(|s| s.section_index() == Some(sec.index()) && s.kind() != SymbolKind::Section)
            .collect();
        syms.sort_by_key(|s| s.address());
        for s in syms {
            let name = s.name().unwrap_or("?").to_string();
            let at = s.address() as usize;
            let field = |i: usize| {
                data.get(at + 4 * i..at + 4 * i + 4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            };
            let (Some(ty), Some(k), Some(v), Some(n)) = (field(0), field(1), field(2), field(3))
            else {
                return Err(self.err(format!("maps: definition of {name:?} is truncated")));
            };
            let map_type = MapType::from_u32(ty)
                .ok_or_else(|| self.err(format!("map {name:?}: unsupported map type {ty}")))?;
            let mut spec = MapSpec::new(map_type, k, v, n);
            spec.map_flags = field(4).unwrap_or(0);
            self.maps.push(MapRef::defined(&name, spec));
        }
        Ok(())
    }
    /// Maps defined in BTF (`.maps`), then legacy `maps` definitions
    /// (libbpf: bpf_object__init_maps).
    fn init_maps(&mut self) -> Result<(), BpfError> {
        if let Some(btf) = self.obj.section_by_name(".BTF") {
            let data = btf.data().map_err(|e| self.err(format!(".BTF: {e}")))?;
            let defs = btf_map_defs(data).map_err(|m| self.err(format!(".BTF: {m}")))?;
            self.maps
                .extend(defs.into_iter().map(|(n, s)| MapRef::defined(&n, s)));
        } else if self.obj.section_by_name(".maps").is_some() {
            return Err(self.err(".maps section without .BTF (build with -g)"));
        }
        if let Some(sec) = self.obj.section_by_name("maps") {
            self.legacy_maps(&sec)?;
        }
        Ok(())
    }

    /// `.text`: subprograms, relocated in place (calls within .text stay relative).
    fn subprograms(&mut self) -> Result<Vec<Insn>, BpfError> {
        let Some(sec) = self.obj.section_by_name(".text") else {
            return Ok(Vec::new());
        };
        let mut text = self.insns_of(&sec)?;
        for (idx, target) in self.relocate(&sec, &mut text)? {
            text[idx].imm = (target as i64 - idx as i64 - 1) as i32;
        }
        Ok(text)
    }

    /// The programs of one executable section, one per `STT_FUNC` symbol (or the whole
    /// section when it has none), relocated (libbpf: bpf_object__add_programs).
    fn section_programs(
        &mut self,
        sec: &object::Section<'_, '_>,
        text: &[Insn],
    ) -> Result<Vec<ElfProgram>, BpfError> {
        let sname = sec.name().unwrap_or("").to_string();
        let mut insns = self.insns_of(sec)?;
        let calls = self.relocate(sec, &mut insns)?;
        let mut funcs: Vec<(String, usize, usize)> = self
            .obj
            .symbols()
            .filter(|s| s.section_index() == Some(sec.index()) && s.kind() == SymbolKind::Text)
            .map(|s| {
                (
                    s.name().unwrap_or("?").to_string(),
                    (s.address() / 8) as usize,
                    (s.size() / 8) as usize,
                )
            })
            .collect();
        funcs.sort_by_key(|f| f.1);
        if funcs.is_empty() {
            funcs.push((sname.clone(), 0, insns.len()));
        }
        let mut programs = Vec::new();
        for (name, start, len) in funcs {
            let mut p: Vec<Insn> = insns
                .get(start..start + len)
                .ok_or_else(|| self.err(format!("{name}: symbol outside {sname}")))?
                .to_vec();
            append_subprograms(&mut p, start, &calls, text)
                .map_err(|m| self.err(format!("{name}: {m}")))?;
            programs.push(ElfProgram {
                section: sname.clone(),
                name,
                insns: p,
            });
        }
        Ok(programs)
    }
}

/// A program starting at `start` of its section that calls into `.text` gets all of
/// `.text` appended and its calls pointed there (libbpf: bpf_object__append_subprog_code,
/// bpf_object__reloc_code).
fn append_subprograms(
    p: &mut Vec<Insn>,
    start: usize,
    calls: &[(usize, usize)],
    text: &[Insn],
) -> Result<(), String> {
    let end = start + p.len();
    let mine: Vec<_> = calls
        .iter()
        .filter(|(i, _)| (start..end).contains(i))
        .collect();
    if mine.is_empty() {
        return Ok(());
    }
    let base = p.len();
    p.extend_from_slice(text);
    for &&(i, target) in &mine {
        if target >= text.len() {
            return Err(format!("call target {target} outside .text"));
        }
        p[i - start].imm = ((base + target) as i64 - (i - start) as i64 - 1) as i32;
    }
    Ok(())
}

/// The `license` section's string (libbpf: bpf_object__init_license); empty without one.
fn license(obj: &object::File<'_>) -> String {
    obj.section_by_name("license")
        .and_then(|s| {
            s.data().ok().map(|d| {
                String::from_utf8_lossy(d.split(|&b| b == 0).next().unwrap_or(&[])).into_owned()
            })
        })
        .unwrap_or_default()
}

impl ElfObject {
    /// Parse an object; `file` names it in errors.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<ElfObject, BpfError> {
        let err = |msg: String| BpfError::Elf {
            file: file.to_string(),
            msg,
        };
        header::check(bytes).map_err(err)?;
        let obj = object::File::parse(bytes).map_err(|e| err(format!("not an ELF object: {e}")))?;
        let stem = Path::new(file)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("obj")
            .to_string();
        let mut l = Loader {
            file,
            stem,
            obj: &obj,
            maps: Vec::new(),
        };
        l.init_maps()?;
        let license = license(&obj);
        let text = l.subprograms()?;
        let mut programs = Vec::new();
        for sec in obj.sections() {
            let sname = sec.name().unwrap_or("");
            if sec.kind() != SectionKind::Text || sname == ".text" || sec.size() == 0 {
                continue;
            }
            programs.extend(l.section_programs(&sec, &text)?);
        }
        if programs.is_empty() {
            return Err(err("no program section".into()));
        }
        Ok(ElfObject {
            file: file.to_string(),
            license,
            maps: l.maps,
            programs,
        })
    }

    /// The program whose section or function is `name`, validated, referencing all maps.
    pub fn program(&self, name: &str) -> Result<Program, BpfError> {
        let found: Vec<&ElfProgram> = self.programs.iter().filter(|p| p.name == name).collect();
        let found = if found.is_empty() {
            self.programs.iter().filter(|p| p.section == name).collect()
        } else {
            found
        };
        let list = || {
            self.programs
                .iter()
                .map(|p| format!("{}/{}", p.section, p.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let p = match found[..] {
            [p] => p,
            [] => {
                return Err(BpfError::Elf {
                    file: self.file.clone(),
                    msg: format!("no program {name:?} (have {})", list()),
                })
            }
            _ => {
                return Err(BpfError::Elf {
                    file: self.file.clone(),
                    msg: format!("{name:?} is ambiguous (have {})", list()),
                })
            }
        };
        let mut prog = Program::new(&p.name, p.insns.clone(), self.maps.clone()).map_err(|e| {
            BpfError::Elf {
                file: self.file.clone(),
                msg: format!("program {}: {e}", p.name),
            }
        })?;
        prog.license = self.license.clone();
        Ok(prog)
    }
}

#[cfg(test)]
#[path = "elf_tests.rs"]
mod tests;
