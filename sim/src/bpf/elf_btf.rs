//! The BTF part of loading an object: the types of `.BTF` and the maps libbpf defines
//! from its `.maps` DATASEC (tools/lib/bpf/libbpf.c: bpf_object__init_user_btf_maps,
//! parse_btf_map_def).

use crate::bpf::maps::{MapSpec, MapType};

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
pub(super) fn btf_map_defs(data: &[u8]) -> Result<Vec<(String, MapSpec)>, String> {
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
