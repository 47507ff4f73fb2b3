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

#[path = "elf_header.rs"]
mod header;

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
        if let Some(btf) = obj.section_by_name(".BTF") {
            let data = btf.data().map_err(|e| err(format!(".BTF: {e}")))?;
            let defs = btf_map_defs(data).map_err(|m| err(format!(".BTF: {m}")))?;
            l.maps
                .extend(defs.into_iter().map(|(n, s)| MapRef::defined(&n, s)));
        } else if obj.section_by_name(".maps").is_some() {
            return Err(err(".maps section without .BTF (build with -g)".into()));
        }
        if let Some(sec) = obj.section_by_name("maps") {
            l.legacy_maps(&sec)?;
        }
        let license = obj
            .section_by_name("license")
            .and_then(|s| {
                s.data().ok().map(|d| {
                    String::from_utf8_lossy(d.split(|&b| b == 0).next().unwrap_or(&[])).into_owned()
                })
            })
            .unwrap_or_default();
        // .text: subprograms, relocated in place (calls within .text stay relative).
        let mut text: Vec<Insn> = Vec::new();
        if let Some(sec) = obj.section_by_name(".text") {
            text = l.insns_of(&sec)?;
            for (idx, target) in l.relocate(&sec, &mut text)? {
                text[idx].imm = (target as i64 - idx as i64 - 1) as i32;
            }
        }
        let mut programs = Vec::new();
        for sec in obj.sections() {
            let sname = sec.name().unwrap_or("").to_string();
            if sec.kind() != SectionKind::Text || sname == ".text" || sec.size() == 0 {
                continue;
            }
            let mut insns = l.insns_of(&sec)?;
            let calls = l.relocate(&sec, &mut insns)?;
            let mut funcs: Vec<(String, usize, usize)> = obj
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
            for (name, start, len) in funcs {
                let end = start + len;
                let mut p: Vec<Insn> = insns
                    .get(start..end)
                    .ok_or_else(|| err(format!("{name}: symbol outside {sname}")))?
                    .to_vec();
                let mine: Vec<_> = calls
                    .iter()
                    .filter(|(i, _)| (start..end).contains(i))
                    .collect();
                if !mine.is_empty() {
                    let base = p.len();
                    p.extend_from_slice(&text);
                    for &&(i, target) in &mine {
                        if target >= text.len() {
                            return Err(err(format!("{name}: call target {target} outside .text")));
                        }
                        p[i - start].imm = ((base + target) as i64 - (i - start) as i64 - 1) as i32;
                    }
                }
                programs.push(ElfProgram {
                    section: sname.clone(),
                    name,
                    insns: p,
                });
            }
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

/// BTF kinds (include/uapi/linux/btf.h).
#[derive(Debug, Clone)]
enum Ty {
    Sized(u32),
    Ptr(u32),
    Array {
        elem: u32,
        nelems: u32,
    },
    Struct {
        size: u32,
        members: Vec<(String, u32)>,
    },
    Alias(u32),
    Var {
        name: String,
        ty: u32,
    },
    Datasec {
        name: String,
        vars: Vec<u32>,
    },
    Other,
}

fn btf_types(data: &[u8]) -> Result<Vec<Ty>, String> {
    let u32_at = |d: &[u8], o: usize| {
        d.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or("truncated")
    };
    if data.get(..2) != Some(&[0x9f, 0xeb]) {
        return Err("bad magic (not little-endian BTF)".into());
    }
    let hdr_len = u32_at(data, 4)? as usize;
    let (type_off, type_len) = (u32_at(data, 8)? as usize, u32_at(data, 12)? as usize);
    let (str_off, str_len) = (u32_at(data, 16)? as usize, u32_at(data, 20)? as usize);
    let types = data
        .get(hdr_len + type_off..hdr_len + type_off + type_len)
        .ok_or("type section out of range")?;
    let strs = data
        .get(hdr_len + str_off..hdr_len + str_off + str_len)
        .ok_or("string section out of range")?;
    let name = |off: u32| -> String {
        let s = strs.get(off as usize..).unwrap_or(&[]);
        String::from_utf8_lossy(s.split(|&b| b == 0).next().unwrap_or(&[])).into_owned()
    };
    let mut out = vec![Ty::Other]; // id 0 is void
    let mut o = 0;
    while o < types.len() {
        let (name_off, info, size_or_type) = (
            u32_at(types, o)?,
            u32_at(types, o + 4)?,
            u32_at(types, o + 8)?,
        );
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        o += 12;
        let ty = match kind {
            1 => {
                o += 4;
                Ty::Sized(size_or_type)
            }
            2 => Ty::Ptr(size_or_type),
            3 => {
                let t = Ty::Array {
                    elem: u32_at(types, o)?,
                    nelems: u32_at(types, o + 8)?,
                };
                o += 12;
                t
            }
            4 | 5 => {
                let mut members = Vec::with_capacity(vlen);
                for _ in 0..vlen {
                    members.push((name(u32_at(types, o)?), u32_at(types, o + 4)?));
                    o += 12;
                }
                Ty::Struct {
                    size: size_or_type,
                    members,
                }
            }
            6 | 19 => {
                o += vlen * if kind == 6 { 8 } else { 12 };
                Ty::Sized(size_or_type)
            }
            8..=11 | 18 => Ty::Alias(size_or_type),
            7 | 12 => Ty::Other,
            13 => {
                o += vlen * 8;
                Ty::Other
            }
            14 => {
                o += 4;
                Ty::Var {
                    name: name(name_off),
                    ty: size_or_type,
                }
            }
            15 => {
                let mut vars = Vec::with_capacity(vlen);
                for _ in 0..vlen {
                    vars.push(u32_at(types, o)?);
                    o += 12;
                }
                Ty::Datasec {
                    name: name(name_off),
                    vars,
                }
            }
            16 => Ty::Sized(size_or_type),
            17 => {
                o += 4;
                Ty::Other
            }
            k => return Err(format!("unknown BTF kind {k}")),
        };
        out.push(ty);
    }
    Ok(out)
}

/// The map definitions of the `.maps` DATASEC, in section order.
fn btf_map_defs(data: &[u8]) -> Result<Vec<(String, MapSpec)>, String> {
    let types = btf_types(data)?;
    let get = |id: u32| {
        types
            .get(id as usize)
            .ok_or_else(|| format!("type id {id} out of range"))
    };
    let strip = |mut id: u32| -> Result<u32, String> {
        for _ in 0..32 {
            match get(id)? {
                Ty::Alias(t) => id = *t,
                _ => return Ok(id),
            }
        }
        Err("type chain too long".into())
    };
    fn size_of(types: &[Ty], id: u32, depth: u32) -> Option<u32> {
        match types.get(id as usize)? {
            _ if depth > 32 => None,
            Ty::Sized(s) | Ty::Struct { size: s, .. } => Some(*s),
            Ty::Ptr(_) => Some(8),
            Ty::Array { elem, nelems } => size_of(types, *elem, depth + 1)?.checked_mul(*nelems),
            Ty::Alias(t) => size_of(types, *t, depth + 1),
            _ => None,
        }
    }
    let Some(Ty::Datasec { vars, .. }) = types
        .iter()
        .find(|t| matches!(t, Ty::Datasec { name, .. } if name == ".maps"))
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for &v in vars {
        let Ty::Var { name, ty } = get(v)? else {
            return Err(format!("{v} in .maps is not a variable"));
        };
        let Ty::Struct { members, .. } = get(strip(*ty)?)? else {
            return Err(format!("map {name}: not a struct"));
        };
        let (mut map_type, mut key, mut value, mut max, mut flags) = (None, None, None, None, 0);
        for (m, mt) in members {
            let pointee = match get(strip(*mt)?)? {
                Ty::Ptr(t) => *t,
                _ => {
                    return Err(format!(
                        "map {name}: member {m} is not a pointer (__uint/__type)"
                    ))
                }
            };
            let uint = || match get(strip(pointee)?)? {
                Ty::Array { nelems, .. } => Ok(*nelems),
                _ => Err(format!("map {name}: member {m} is not __uint()")),
            };
            match m.as_str() {
                "type" => map_type = Some(uint()?),
                "max_entries" => max = Some(uint()?),
                "map_flags" => flags = uint()?,
                "key_size" => key = Some(uint()?),
                "value_size" => value = Some(uint()?),
                "key" => {
                    key = Some(
                        size_of(&types, pointee, 0)
                            .ok_or_else(|| format!("map {name}: key size unknown"))?,
                    )
                }
                "value" => {
                    value = Some(
                        size_of(&types, pointee, 0)
                            .ok_or_else(|| format!("map {name}: value size unknown"))?,
                    )
                }
                "values" => return Err(format!("map {name}: map-in-map is not supported")),
                _ => {} // pinning, numa_node, map_extra
            }
        }
        let t = map_type.ok_or_else(|| format!("map {name}: no type"))?;
        let mt =
            MapType::from_u32(t).ok_or_else(|| format!("map {name}: unsupported map type {t}"))?;
        let (key, value) = match mt {
            MapType::Devmap | MapType::DevmapHash => (key.unwrap_or(4), value.unwrap_or(4)),
            _ => (
                key.ok_or_else(|| format!("map {name}: no key"))?,
                value.ok_or_else(|| format!("map {name}: no value"))?,
            ),
        };
        let mut spec = MapSpec::new(
            mt,
            key,
            value,
            max.ok_or_else(|| format!("map {name}: no max_entries"))?,
        );
        spec.map_flags = flags;
        out.push((name.clone(), spec));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "elf_tests.rs"]
mod tests;
