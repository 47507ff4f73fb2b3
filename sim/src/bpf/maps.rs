//! BPF maps: ARRAY, HASH, PERCPU_ARRAY (one CPU), DEVMAP and DEVMAP_HASH.
//!
//! Each map keeps its values in one contiguous storage of `round_up(value_size, 8)`-byte
//! slots. The program sees slot `s` of map `n` at address
//! `MAP_VALUE_ADDR + n * MAP_VALUE_STRIDE + s * w` ([`super::MAP_VALUE_ADDR`],
//! [`MAP_VALUE_STRIDE`]), where `w` is twice the value size rounded up to a power of
//! two: a pointer that walks off its value lands in a gap and faults, as the verifier
//! would have refused it. A
//! lookup from the program returns such a pointer, through which the program loads,
//! stores and atomically adds. HASH maps index the slots with a `BTreeMap`
//! (deterministic dumps, lowest free slot reused first) and enforce `max_entries` with
//! -E2BIG like kernel/bpf/hashtab.c; an update of an existing key rewrites its slot in
//! place (the kernel swaps in a new element). Userspace-side API: [`Maps::create`],
//! [`Map::lookup`], [`Map::update`], [`Map::delete`], [`Map::dump`], [`Map::read_u64`].

use std::collections::BTreeMap;
use std::fmt;

use super::{BpfError, MAP_VALUE_STRIDE};

/// Update flags (BPF_ANY, BPF_NOEXIST, BPF_EXIST).
pub const BPF_ANY: u64 = 0;
pub const BPF_NOEXIST: u64 = 1;
pub const BPF_EXIST: u64 = 2;
/// map_flags: the program may only read the values (also implied for devmaps).
pub const BPF_F_RDONLY_PROG: u32 = 1 << 7;
/// Largest hash key (MAX_BPF_STACK); keys are read from program memory.
pub const MAX_KEY_SIZE: u32 = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MapType {
    Hash,
    Array,
    PercpuArray,
    Devmap,
    DevmapHash,
}

impl MapType {
    /// From `enum bpf_map_type`.
    pub fn from_u32(v: u32) -> Option<MapType> {
        Some(match v {
            1 => MapType::Hash,
            2 => MapType::Array,
            6 => MapType::PercpuArray,
            14 => MapType::Devmap,
            25 => MapType::DevmapHash,
            _ => return None,
        })
    }

    pub fn as_u32(self) -> u32 {
        match self {
            MapType::Hash => 1,
            MapType::Array => 2,
            MapType::PercpuArray => 6,
            MapType::Devmap => 14,
            MapType::DevmapHash => 25,
        }
    }

    pub fn is_devmap(self) -> bool {
        matches!(self, MapType::Devmap | MapType::DevmapHash)
    }
}

/// A map definition (the attributes of BPF_MAP_CREATE).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MapSpec {
    pub map_type: MapType,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
}

impl MapSpec {
    pub fn new(map_type: MapType, key_size: u32, value_size: u32, max_entries: u32) -> MapSpec {
        MapSpec {
            map_type,
            key_size,
            value_size,
            max_entries,
            map_flags: 0,
        }
    }

    /// ARRAY with `__u32` keys.
    pub fn array(value_size: u32, max_entries: u32) -> MapSpec {
        MapSpec::new(MapType::Array, 4, value_size, max_entries)
    }

    pub fn hash(key_size: u32, value_size: u32, max_entries: u32) -> MapSpec {
        MapSpec::new(MapType::Hash, key_size, value_size, max_entries)
    }

    /// DEVMAP of `__u32` ifindexes.
    pub fn devmap(max_entries: u32) -> MapSpec {
        MapSpec::new(MapType::Devmap, 4, 4, max_entries)
    }

    fn check(&self) -> Result<(), String> {
        let s = self;
        if s.max_entries == 0 || s.value_size == 0 || s.key_size == 0 {
            return Err("max_entries, key_size and value_size must be non-zero (EINVAL)".into());
        }
        match s.map_type {
            MapType::Array | MapType::PercpuArray | MapType::Devmap | MapType::DevmapHash
                if s.key_size != 4 =>
            {
                return Err(format!("key_size {} must be 4 (EINVAL)", s.key_size));
            }
            MapType::Devmap | MapType::DevmapHash if s.value_size != 4 && s.value_size != 8 => {
                return Err(format!(
                    "devmap value_size {} must be 4 or 8 (EINVAL)",
                    s.value_size
                ));
            }
            MapType::Hash if s.key_size > MAX_KEY_SIZE => {
                return Err(format!(
                    "key_size {} above {MAX_KEY_SIZE} (E2BIG)",
                    s.key_size
                ));
            }
            _ => {}
        }
        let total = u64::from(s.max_entries) * window(s.value_size);
        if total > MAP_VALUE_STRIDE {
            return Err(format!(
                "{total} bytes of value windows exceed the {MAP_VALUE_STRIDE:#x}-byte map window"
            ));
        }
        Ok(())
    }
}

fn stride(value_size: u32) -> usize {
    (value_size as usize).div_ceil(8) * 8
}

/// Address space per value as the program sees it: twice the value size rounded up to a
/// power of two, so that a pointer walking off one value hits a gap, not the next value.
fn window(value_size: u32) -> u64 {
    u64::from(value_size).next_power_of_two() * 2
}

/// A program's reference to a map: by name, with the definition when the program
/// carries one (ELF objects, `.map` assembler directives), and initial contents of
/// value 0 for global-data maps (`.rodata`, `.data`, `.bss`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRef {
    pub name: String,
    pub spec: Option<MapSpec>,
    pub init: Option<Vec<u8>>,
}

impl MapRef {
    /// A reference to a map that must already exist in the [`Maps`] set.
    pub fn named(name: &str) -> MapRef {
        MapRef {
            name: name.to_string(),
            spec: None,
            init: None,
        }
    }

    /// A reference that creates the map if the set has none of that name.
    pub fn defined(name: &str, spec: MapSpec) -> MapRef {
        MapRef {
            name: name.to_string(),
            spec: Some(spec),
            init: None,
        }
    }
}

/// A failed map operation, as the kernel's negative errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapErr {
    /// ENOENT: no such element.
    NoEnt,
    /// EEXIST: BPF_NOEXIST on an existing element (or on any array slot).
    Exists,
    /// E2BIG: index past max_entries, or a full hash map.
    TooBig,
    /// EINVAL: bad flags, bad key or value size, deleting from an array.
    Inval,
    /// EOPNOTSUPP: not modelled (devmap entries carrying a program fd).
    NotSupp,
}

impl MapErr {
    /// The errno (positive); helpers return its negation.
    pub fn errno(self) -> i32 {
        match self {
            MapErr::NoEnt => 2,
            MapErr::Exists => 17,
            MapErr::TooBig => 7,
            MapErr::Inval => 22,
            MapErr::NotSupp => 95,
        }
    }
}

impl fmt::Display for MapErr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = match self {
            MapErr::NoEnt => "ENOENT",
            MapErr::Exists => "EEXIST",
            MapErr::TooBig => "E2BIG",
            MapErr::Inval => "EINVAL",
            MapErr::NotSupp => "EOPNOTSUPP",
        };
        f.write_str(n)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Index {
    /// ARRAY, PERCPU_ARRAY: every slot exists.
    Array,
    /// DEVMAP: a slot exists when an ifindex was stored there.
    Slots(Vec<bool>),
    /// HASH, DEVMAP_HASH: key -> slot; freed slots are reused lowest first.
    Hash {
        keys: BTreeMap<Vec<u8>, u32>,
        free: Vec<u32>,
        used: u32,
    },
}

/// One map and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Map {
    name: String,
    spec: MapSpec,
    stride: usize,
    values: Vec<u8>,
    index: Index,
}

impl Map {
    fn new(name: &str, spec: MapSpec) -> Result<Map, BpfError> {
        spec.check().map_err(|reason| BpfError::Map {
            map: name.to_string(),
            reason,
        })?;
        let stride = stride(spec.value_size);
        let n = spec.max_entries as usize;
        let (values, index) = match spec.map_type {
            MapType::Array | MapType::PercpuArray => (vec![0; n * stride], Index::Array),
            MapType::Devmap => (vec![0; n * stride], Index::Slots(vec![false; n])),
            MapType::Hash | MapType::DevmapHash => (
                Vec::new(),
                Index::Hash {
                    keys: BTreeMap::new(),
                    free: Vec::new(),
                    used: 0,
                },
            ),
        };
        Ok(Map {
            name: name.to_string(),
            spec,
            stride,
            values,
            index,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn spec(&self) -> &MapSpec {
        &self.spec
    }

    /// Elements present.
    pub fn len(&self) -> usize {
        match &self.index {
            Index::Array => self.spec.max_entries as usize,
            Index::Slots(p) => p.iter().filter(|&&b| b).count(),
            Index::Hash { keys, .. } => keys.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn array_index(&self, key: &[u8]) -> Option<usize> {
        let k = u32::from_le_bytes(key.try_into().ok()?) as usize;
        (k < self.spec.max_entries as usize).then_some(k)
    }

    /// Offset of the value for `key` from the map's base address (the program's lookup).
    pub(crate) fn value_offset(&self, key: &[u8]) -> Option<u64> {
        let slot = self.slot_of(key)?;
        Some(slot as u64 * window(self.spec.value_size))
    }

    fn slot_of(&self, key: &[u8]) -> Option<usize> {
        if key.len() != self.spec.key_size as usize {
            return None;
        }
        let slot = match &self.index {
            Index::Array => self.array_index(key)?,
            Index::Slots(present) => self.array_index(key).filter(|&i| present[i])?,
            Index::Hash { keys, .. } => *keys.get(key)? as usize,
        };
        Some(slot)
    }

    /// The value stored for `key` (BPF_MAP_LOOKUP_ELEM).
    pub fn lookup(&self, key: &[u8]) -> Result<&[u8], MapErr> {
        if key.len() != self.spec.key_size as usize {
            return Err(MapErr::Inval);
        }
        let off = self.slot_of(key).ok_or(MapErr::NoEnt)? * self.stride;
        self.values
            .get(off..off + self.spec.value_size as usize)
            .ok_or(MapErr::NoEnt)
    }

    /// Lookup with a `__u32` key.
    pub fn lookup_u32(&self, key: u32) -> Option<&[u8]> {
        self.lookup(&key.to_le_bytes()).ok()
    }

    /// The first 8 bytes of the value for `__u32` key `key`, as a counter.
    pub fn read_u64(&self, key: u32) -> Option<u64> {
        let v = self.lookup_u32(key)?;
        Some(u64::from_le_bytes(v.get(..8)?.try_into().ok()?))
    }

    /// The ifindex a devmap holds at `key` (what __dev_map_lookup_elem finds).
    pub(crate) fn dev_ifindex(&self, key: u32) -> Option<u32> {
        let v = self.lookup_u32(key)?;
        Some(u32::from_le_bytes(v.get(..4)?.try_into().ok()?))
    }

    /// BPF_MAP_UPDATE_ELEM semantics (arraymap.c, hashtab.c, devmap.c).
    pub fn update(&mut self, key: &[u8], value: &[u8], flags: u64) -> Result<(), MapErr> {
        if key.len() != self.spec.key_size as usize
            || value.len() != self.spec.value_size as usize
            || flags > BPF_EXIST
        {
            return Err(MapErr::Inval);
        }
        let mut value = value.to_vec();
        let ty = self.spec.map_type;
        let max = self.spec.max_entries as usize;
        let arr = self.array_index(key);
        let slot = match &mut self.index {
            Index::Array => {
                let i = arr.ok_or(MapErr::TooBig)?;
                if flags == BPF_NOEXIST {
                    return Err(MapErr::Exists);
                }
                i
            }
            Index::Slots(present) => {
                let i = arr.ok_or(MapErr::TooBig)?;
                if flags == BPF_NOEXIST {
                    return Err(MapErr::Exists);
                }
                let ifindex = check_devmap_value(&mut value, true)?;
                if let Some(p) = present.get_mut(i) {
                    *p = ifindex != 0;
                }
                i
            }
            Index::Hash { keys, free, used } => {
                if ty == MapType::DevmapHash && check_devmap_value(&mut value, false)? == 0 {
                    return Err(MapErr::Inval);
                }
                match keys.get(key).copied() {
                    Some(_) if flags == BPF_NOEXIST => return Err(MapErr::Exists),
                    Some(s) => s as usize,
                    // dev_map_hash_update_elem does not check BPF_EXIST.
                    None if flags == BPF_EXIST && ty == MapType::Hash => return Err(MapErr::NoEnt),
                    None => {
                        if keys.len() >= max {
                            return Err(MapErr::TooBig);
                        }
                        let s = match free.pop() {
                            Some(s) => s,
                            None => {
                                *used += 1;
                                self.values.resize(*used as usize * self.stride, 0);
                                *used - 1
                            }
                        };
                        keys.insert(key.to_vec(), s);
                        s as usize
                    }
                }
            }
        };
        let off = slot * self.stride;
        if let Some(dst) = self.values.get_mut(off..off + value.len()) {
            dst.copy_from_slice(&value);
        }
        Ok(())
    }

    /// BPF_MAP_DELETE_ELEM: -EINVAL on arrays, -ENOENT for a missing hash key.
    pub fn delete(&mut self, key: &[u8]) -> Result<(), MapErr> {
        if key.len() != self.spec.key_size as usize {
            return Err(MapErr::Inval);
        }
        match &mut self.index {
            Index::Array => Err(MapErr::Inval),
            Index::Slots(present) => {
                let i = u32::from_le_bytes(key.try_into().map_err(|_| MapErr::Inval)?) as usize;
                let p = present.get_mut(i).ok_or(MapErr::Inval)?;
                *p = false;
                Ok(())
            }
            Index::Hash { keys, free, .. } => {
                let s = keys.remove(key).ok_or(MapErr::NoEnt)?;
                // Keep the free list sorted high to low so the lowest slot is reused first.
                let at = free.partition_point(|&f| f > s);
                free.insert(at, s);
                Ok(())
            }
        }
    }

    /// Every present element as (key, value), arrays by index, hashes by key bytes.
    pub fn dump(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let vs = self.spec.value_size as usize;
        let val = |slot: usize| {
            self.values
                .get(slot * self.stride..slot * self.stride + vs)
                .unwrap_or(&[])
                .to_vec()
        };
        match &self.index {
            Index::Array => (0..self.spec.max_entries)
                .map(|k| (k.to_le_bytes().to_vec(), val(k as usize)))
                .collect(),
            Index::Slots(p) => (0..self.spec.max_entries)
                .filter(|&k| p[k as usize])
                .map(|k| (k.to_le_bytes().to_vec(), val(k as usize)))
                .collect(),
            Index::Hash { keys, .. } => keys
                .iter()
                .map(|(k, &s)| (k.clone(), val(s as usize)))
                .collect(),
        }
    }

    /// Program access to `len` bytes at `off` from the map's base address: inside one
    /// value of an allocated slot, and not a write into a read-only map.
    pub(crate) fn value_mem(
        &mut self,
        off: u64,
        len: usize,
        write: bool,
    ) -> Result<&mut [u8], &'static str> {
        let win = window(self.spec.value_size);
        let (slot, within) = (off / win, off % win);
        if within + len as u64 > u64::from(self.spec.value_size) {
            return Err("outside the map value");
        }
        if write && (self.spec.map_type.is_devmap() || self.spec.map_flags & BPF_F_RDONLY_PROG != 0)
        {
            return Err("map is read-only for the program");
        }
        let start = (slot * self.stride as u64 + within) as usize;
        self.values
            .get_mut(start..start + len)
            .ok_or("no such map value")
    }
}

/// Devmap values are `struct bpf_devmap_val { u32 ifindex; int prog_fd; }` (4 or 8
/// bytes). Returns the ifindex; the stored program id is 0.
fn check_devmap_value(value: &mut [u8], allow_clear: bool) -> Result<u32, MapErr> {
    let ifindex = u32::from_le_bytes(
        value
            .get(..4)
            .ok_or(MapErr::Inval)?
            .try_into()
            .map_err(|_| MapErr::Inval)?,
    );
    if let Some(fd) = value.get_mut(4..8) {
        let prog_fd = i32::from_le_bytes([fd[0], fd[1], fd[2], fd[3]]);
        if ifindex == 0 && allow_clear && prog_fd > -1 {
            return Err(MapErr::Inval);
        }
        if prog_fd > 0 {
            return Err(MapErr::NotSupp);
        }
        fd.copy_from_slice(&[0; 4]);
    }
    Ok(ifindex)
}

/// A set of maps, addressed by index (what ld_imm64 map references bind to) or name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maps {
    maps: Vec<Map>,
    names: BTreeMap<String, u32>,
}

impl Maps {
    pub fn new() -> Maps {
        Maps::default()
    }

    /// Create a map; names are unique within the set.
    pub fn create(&mut self, name: &str, spec: MapSpec) -> Result<u32, BpfError> {
        if self.names.contains_key(name) {
            return Err(BpfError::Map {
                map: name.to_string(),
                reason: "a map of that name exists".into(),
            });
        }
        let map = Map::new(name, spec)?;
        let idx = self.maps.len() as u32;
        self.maps.push(map);
        self.names.insert(name.to_string(), idx);
        Ok(idx)
    }

    /// The index for a program's map reference, creating the map from its spec if needed.
    pub fn resolve(&mut self, r: &MapRef) -> Result<u32, BpfError> {
        if let Some(idx) = self.index_of(&r.name) {
            if let (Some(want), Some(have)) = (&r.spec, self.get(idx).map(Map::spec)) {
                let key = |s: &MapSpec| (s.map_type, s.key_size, s.value_size, s.max_entries);
                if key(want) != key(have) {
                    return Err(BpfError::Map {
                        map: r.name.clone(),
                        reason: format!("exists as {have:?}, the program wants {want:?}"),
                    });
                }
            }
            return Ok(idx);
        }
        let spec = r.spec.clone().ok_or_else(|| BpfError::Unbound {
            map: r.name.clone(),
        })?;
        let idx = self.create(&r.name, spec)?;
        if let (Some(init), Some(m)) = (&r.init, self.maps.get_mut(idx as usize)) {
            let n = init.len().min(m.values.len());
            m.values[..n].copy_from_slice(&init[..n]);
        }
        Ok(idx)
    }

    pub fn index_of(&self, name: &str) -> Option<u32> {
        self.names.get(name).copied()
    }

    pub fn get(&self, idx: u32) -> Option<&Map> {
        self.maps.get(idx as usize)
    }

    pub fn get_mut(&mut self, idx: u32) -> Option<&mut Map> {
        self.maps.get_mut(idx as usize)
    }

    pub fn by_name(&self, name: &str) -> Option<&Map> {
        self.get(self.index_of(name)?)
    }

    pub fn by_name_mut(&mut self, name: &str) -> Option<&mut Map> {
        let i = self.index_of(name)?;
        self.get_mut(i)
    }

    pub fn len(&self) -> usize {
        self.maps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Map> {
        self.maps.iter()
    }
}

#[cfg(test)]
#[path = "maps_tests.rs"]
mod tests;
