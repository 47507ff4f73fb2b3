//! bpf(2): maps, program load, `BPF_PROG_TEST_RUN`, and XDP attachment.
//!
//! The programs come from skbsim's own loader ([`sim::bpf::Program`], e.g. from
//! [`sim::bpf::load_elf_file`]), so the kernel runs exactly the instruction bytes the
//! simulator's VM runs. [`LoadedXdp::load`] creates one kernel map per map reference of
//! the program (same type, key and value sizes, entries and flags), patches every map
//! reference (`ld_imm64` with `src_reg` `BPF_PSEUDO_MAP_FD`/`_VALUE`, whose `imm` is the
//! map's slot in [`Program::map_refs`]) with the kernel map's fd, and loads the result as
//! `BPF_PROG_TYPE_XDP`. A verifier refusal carries the verifier log in the error.
//!
//! Attaching: [`attach_xdp`] through netlink (`IFLA_XDP {FD, FLAGS}`, the program stays
//! on the device until it is replaced or the device goes away) or [`XdpLink::create`]
//! (`BPF_LINK_CREATE`, detached when the link fd closes), both in native
//! (`XDP_FLAGS_DRV_MODE`) or generic (`XDP_FLAGS_SKB_MODE`) mode.
//!
//! Nothing here touches a network device except the attach calls, which go through
//! [`Rtnl`] (refused outside a private namespace) or name an ifindex of the calling
//! thread's namespace.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use sim::bpf::insn::{BPF_DW, BPF_IMM, BPF_LD, BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_VALUE};
use sim::bpf::maps::BPF_F_RDONLY_PROG;
use sim::bpf::{Insn, MapSpec, MapType, Maps, Program};

use crate::error::{Cause, Errno, KernelError};
use crate::rtnl::{Rtnl, XdpAttached};
use crate::sys::{cvt, owned_fd};

/// `enum bpf_cmd` values used here.
pub mod cmd {
    /// `BPF_MAP_CREATE`.
    pub const MAP_CREATE: u32 = 0;
    /// `BPF_MAP_LOOKUP_ELEM`.
    pub const MAP_LOOKUP_ELEM: u32 = 1;
    /// `BPF_MAP_UPDATE_ELEM`.
    pub const MAP_UPDATE_ELEM: u32 = 2;
    /// `BPF_MAP_GET_NEXT_KEY`.
    pub const MAP_GET_NEXT_KEY: u32 = 4;
    /// `BPF_PROG_LOAD`.
    pub const PROG_LOAD: u32 = 5;
    /// `BPF_PROG_TEST_RUN`.
    pub const PROG_TEST_RUN: u32 = 10;
    /// `BPF_MAP_FREEZE`.
    pub const MAP_FREEZE: u32 = 22;
    /// `BPF_LINK_CREATE`.
    pub const LINK_CREATE: u32 = 28;
}

/// `BPF_PROG_TYPE_XDP`.
pub const BPF_PROG_TYPE_XDP: u32 = 6;
/// `BPF_XDP` (`enum bpf_attach_type`).
pub const BPF_XDP: u32 = 37;

/// `sizeof(union bpf_attr)` on 6.18; the kernel accepts it (and shorter ones).
const ATTR_SIZE: usize = 144;
/// The verifier log buffer for a failed load.
const LOG_SIZE: usize = 1 << 22;
/// How much of the verifier log goes into an error message (its tail).
const LOG_TAIL: usize = 16 * 1024;

/// A zeroed `union bpf_attr` with typed setters at byte offsets.
struct Attr([u8; ATTR_SIZE]);

impl Attr {
    fn new() -> Attr {
        Attr([0; ATTR_SIZE])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn ptr<T>(&mut self, off: usize, p: *const T) -> &mut Attr {
        self.u64(off, p as usize as u64)
    }
    fn get_u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes([
            self.0[off],
            self.0[off + 1],
            self.0[off + 2],
            self.0[off + 3],
        ])
    }
}

/// One `bpf(cmd, attr, size)` call. The caller keeps every buffer `attr` points to alive
/// and correctly sized for the call.
fn sys_bpf(cmd: u32, attr: &mut Attr) -> Result<i32, Errno> {
    // SAFETY: `attr` is a live ATTR_SIZE-byte union bpf_attr; every pointer stored in it
    // refers to a buffer the caller keeps alive for this call, with the size the kernel
    // will use for it recorded next to it (or implied by the map's key/value sizes).
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_long,
            attr.0.as_mut_ptr(),
            ATTR_SIZE as libc::c_long,
        )
    };
    cvt(ret as libc::c_int)
}

/// Map names may hold `[A-Za-z0-9_.]`, 15 bytes at most.
fn object_name(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (o, c) in out
        .iter_mut()
        .zip(
            name.bytes()
                .filter(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.'),
        )
        .take(15)
    {
        *o = c;
    }
    out
}

fn possible_cpus() -> Result<usize, KernelError> {
    let path = "/sys/devices/system/cpu/possible";
    let text = std::fs::read_to_string(path)
        .map_err(|e| KernelError::new(format!("read {path}"), Cause::Protocol(e.to_string())))?;
    let bad = || KernelError::new(format!("parse {path}"), Cause::Protocol(text.clone()));
    let mut n = 0usize;
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        n = n.max(b + 1);
        if b < a {
            return Err(bad());
        }
    }
    Ok(n.max(1))
}

/// A map's elements as (key, value) bytes.
pub type MapEntries = Vec<(Vec<u8>, Vec<u8>)>;

/// A kernel BPF map.
#[derive(Debug)]
pub struct BpfMap {
    fd: OwnedFd,
    name: String,
    spec: MapSpec,
    /// Bytes a userspace lookup returns: the value, or one 8-byte-aligned value per
    /// possible CPU for a per-CPU map.
    lookup_len: usize,
}

impl BpfMap {
    /// `BPF_MAP_CREATE` with `spec` (type, key/value sizes, entries, flags).
    pub fn create(name: &str, spec: &MapSpec) -> Result<BpfMap, KernelError> {
        let op = format!(
            "BPF_MAP_CREATE {name} ({:?}, key {}, value {}, {} entries)",
            spec.map_type, spec.key_size, spec.value_size, spec.max_entries
        );
        let mut a = Attr::new();
        a.u32(0, spec.map_type.as_u32())
            .u32(4, spec.key_size)
            .u32(8, spec.value_size)
            .u32(12, spec.max_entries)
            .u32(16, spec.map_flags);
        a.0[28..44].copy_from_slice(&object_name(name));
        let fd = sys_bpf(cmd::MAP_CREATE, &mut a).map_err(|e| KernelError::sys(&op, e))?;
        let fd = owned_fd(fd).map_err(|e| KernelError::sys(&op, e))?;
        let lookup_len = if spec.map_type == MapType::PercpuArray {
            (spec.value_size as usize).div_ceil(8) * 8 * possible_cpus()?
        } else {
            spec.value_size as usize
        };
        Ok(BpfMap {
            fd,
            name: name.to_string(),
            spec: spec.clone(),
            lookup_len,
        })
    }

    /// The name it was created with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its definition.
    pub fn spec(&self) -> &MapSpec {
        &self.spec
    }

    /// The map fd.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn check_key(&self, op: &str, key: &[u8]) -> Result<(), KernelError> {
        if key.len() != self.spec.key_size as usize {
            return Err(KernelError::new(
                op,
                Cause::Protocol(format!(
                    "key of {} bytes, the map's key_size is {}",
                    key.len(),
                    self.spec.key_size
                )),
            ));
        }
        Ok(())
    }

    /// `BPF_MAP_UPDATE_ELEM` (`flags`: `BPF_ANY` 0, `BPF_NOEXIST` 1, `BPF_EXIST` 2).
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<(), KernelError> {
        let op = format!("BPF_MAP_UPDATE_ELEM {}", self.name);
        self.check_key(&op, key)?;
        if value.len() != self.lookup_len {
            return Err(KernelError::new(
                &op,
                Cause::Protocol(format!(
                    "value of {} bytes, the map takes {}",
                    value.len(),
                    self.lookup_len
                )),
            ));
        }
        let mut a = Attr::new();
        a.u32(0, self.fd() as u32)
            .ptr(8, key.as_ptr())
            .ptr(16, value.as_ptr())
            .u64(24, flags);
        sys_bpf(cmd::MAP_UPDATE_ELEM, &mut a).map_err(|e| KernelError::sys(op, e))?;
        Ok(())
    }

    /// `BPF_MAP_LOOKUP_ELEM`: `None` for a missing element (ENOENT). A per-CPU map
    /// returns every possible CPU's value, each padded to 8 bytes.
    pub fn lookup(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KernelError> {
        let op = format!("BPF_MAP_LOOKUP_ELEM {}", self.name);
        self.check_key(&op, key)?;
        let mut value = vec![0u8; self.lookup_len];
        let mut a = Attr::new();
        a.u32(0, self.fd() as u32)
            .ptr(8, key.as_ptr())
            .ptr(16, value.as_mut_ptr());
        match sys_bpf(cmd::MAP_LOOKUP_ELEM, &mut a) {
            Ok(_) => Ok(Some(value)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(KernelError::sys(op, e)),
        }
    }

    /// `BPF_MAP_GET_NEXT_KEY`: the first key (`None`) or the one after `key`; `None`
    /// at the end.
    pub fn next_key(&self, key: Option<&[u8]>) -> Result<Option<Vec<u8>>, KernelError> {
        let op = format!("BPF_MAP_GET_NEXT_KEY {}", self.name);
        if let Some(k) = key {
            self.check_key(&op, k)?;
        }
        let mut next = vec![0u8; self.spec.key_size as usize];
        let mut a = Attr::new();
        a.u32(0, self.fd() as u32)
            .ptr(8, key.map_or(std::ptr::null(), |k| k.as_ptr()))
            .ptr(16, next.as_mut_ptr());
        match sys_bpf(cmd::MAP_GET_NEXT_KEY, &mut a) {
            Ok(_) => Ok(Some(next)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(KernelError::sys(op, e)),
        }
    }

    /// `BPF_MAP_FREEZE`: no more userspace writes (what libbpf does to `.rodata`).
    pub fn freeze(&self) -> Result<(), KernelError> {
        let mut a = Attr::new();
        a.u32(0, self.fd() as u32);
        sys_bpf(cmd::MAP_FREEZE, &mut a)
            .map_err(|e| KernelError::sys(format!("BPF_MAP_FREEZE {}", self.name), e))?;
        Ok(())
    }

    /// Every element as (key, value), in key order for arrays and devmaps, in the
    /// kernel's iteration order for hashes. Per-CPU values are as [`BpfMap::lookup`]
    /// returns them.
    pub fn dump(&self) -> Result<MapEntries, KernelError> {
        let mut out = Vec::new();
        match self.spec.map_type {
            MapType::Array | MapType::PercpuArray | MapType::Devmap => {
                for k in 0..self.spec.max_entries {
                    let key = k.to_le_bytes();
                    if let Some(v) = self.lookup(&key)? {
                        out.push((key.to_vec(), v));
                    }
                }
            }
            MapType::Hash | MapType::DevmapHash => {
                let mut key = self.next_key(None)?;
                let mut guard = 0u64;
                while let Some(k) = key {
                    if let Some(v) = self.lookup(&k)? {
                        out.push((k.clone(), v));
                    }
                    key = self.next_key(Some(&k))?;
                    guard += 1;
                    if guard > u64::from(self.spec.max_entries) * 2 + 16 {
                        return Err(KernelError::new(
                            format!("dump {}", self.name),
                            Cause::Protocol("BPF_MAP_GET_NEXT_KEY does not end".into()),
                        ));
                    }
                }
            }
        }
        Ok(out)
    }

    /// One value as the simulator keeps it: per-CPU values summed (as little-endian
    /// numbers of the value size, up to 8 bytes; wider values: CPU 0's).
    fn sim_value(&self, raw: &[u8]) -> Vec<u8> {
        let vs = self.spec.value_size as usize;
        if self.spec.map_type != MapType::PercpuArray {
            return raw.to_vec();
        }
        let stride = vs.div_ceil(8) * 8;
        if vs > 8 {
            return raw[..vs].to_vec();
        }
        let mut sum = 0u64;
        for c in raw.chunks(stride) {
            let mut b = [0u8; 8];
            b[..vs].copy_from_slice(&c[..vs]);
            sum = sum.wrapping_add(u64::from_le_bytes(b));
        }
        sum.to_le_bytes()[..vs].to_vec()
    }
}

/// What one `BPF_PROG_TEST_RUN` returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// The program's return value (`retval`).
    pub retval: u32,
    /// The packet after the run (`data_out`, `data_size_out` bytes): metadata, if the
    /// program added any, then the frame.
    pub data: Vec<u8>,
    /// `duration`: average ns per repetition.
    pub duration_ns: u32,
}

/// An XDP program loaded into the kernel, with the maps it references.
#[derive(Debug)]
pub struct LoadedXdp {
    fd: OwnedFd,
    name: String,
    maps: Vec<BpfMap>,
}

impl LoadedXdp {
    /// Create the program's maps (one per [`Program::map_refs`] entry, by its spec, with
    /// its initial contents for global data), patch the map references with their fds
    /// and `BPF_PROG_LOAD` it as an XDP program. A verifier refusal includes the log.
    pub fn load(prog: &Program) -> Result<LoadedXdp, KernelError> {
        let mut maps = Vec::with_capacity(prog.map_refs().len());
        for r in prog.map_refs() {
            let spec = r.spec.as_ref().ok_or_else(|| {
                KernelError::new(
                    format!("load {}", prog.name),
                    Cause::Protocol(format!(
                        "map {:?} has no definition to create it from",
                        r.name
                    )),
                )
            })?;
            let m = BpfMap::create(&r.name, spec)?;
            if let Some(init) = &r.init {
                let mut v = vec![0u8; spec.value_size as usize];
                let n = init.len().min(v.len());
                v[..n].copy_from_slice(&init[..n]);
                m.update(&0u32.to_le_bytes(), &v, 0)?;
                if spec.map_flags & BPF_F_RDONLY_PROG != 0 {
                    m.freeze()?;
                }
            }
            maps.push(m);
        }
        let insns = patch_map_fds(&prog.name, prog.insns(), &maps)?;
        let fd = prog_load(&prog.name, &prog.license, &insns)?;
        Ok(LoadedXdp {
            fd,
            name: prog.name.clone(),
            maps,
        })
    }

    /// `BPF_PROG_LOAD` raw instructions without map references, e.g. one that
    /// [`Program`]'s decoder refuses, to compare refusals with the kernel's verifier.
    pub fn load_insns(name: &str, license: &str, insns: &[Insn]) -> Result<LoadedXdp, KernelError> {
        let fd = prog_load(name, license, insns)?;
        Ok(LoadedXdp {
            fd,
            name: name.to_string(),
            maps: Vec::new(),
        })
    }

    /// The program fd.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The program's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The maps, in the program's map slot order.
    pub fn maps(&self) -> &[BpfMap] {
        &self.maps
    }

    /// A map by name.
    pub fn map(&self, name: &str) -> Option<&BpfMap> {
        self.maps.iter().find(|m| m.name == name)
    }

    /// Store `ifindex` at key 0 of every DEVMAP/DEVMAP_HASH (the harness convention:
    /// `bpf_redirect_map(&map, 0, ...)` goes to the redirect target). The kernel checks
    /// that the device exists in the calling thread's namespace.
    pub fn fill_devmaps(&self, ifindex: u32) -> Result<(), KernelError> {
        for m in self.maps.iter().filter(|m| m.spec.map_type.is_devmap()) {
            let mut v = vec![0u8; m.spec.value_size as usize];
            v[..4].copy_from_slice(&ifindex.to_le_bytes());
            if v.len() >= 8 {
                // struct bpf_devmap_val.bpf_prog.fd: no program.
                v[4..8].copy_from_slice(&(-1i32).to_le_bytes());
            }
            m.update(&0u32.to_le_bytes(), &v, 0)?;
        }
        Ok(())
    }

    /// `BPF_PROG_TEST_RUN` once (`repeat` 1) on a copy of `frame`: the kernel puts it
    /// behind [`sim::consts::XDP_PACKET_HEADROOM`] bytes in a page with the shared-info
    /// tailroom, runs the program with the loopback device's rx queue, and returns the
    /// verdict and the packet (from `data_meta` to `data_end`).
    pub fn test_run(&self, frame: &[u8]) -> Result<TestRun, KernelError> {
        self.test_run_repeat(frame, 1)
    }

    /// Like [`LoadedXdp::test_run`] with `repeat` runs over the same (modified) buffer.
    pub fn test_run_repeat(&self, frame: &[u8], repeat: u32) -> Result<TestRun, KernelError> {
        let op = || {
            format!(
                "BPF_PROG_TEST_RUN {} ({}-byte frame, repeat {repeat})",
                self.name,
                frame.len()
            )
        };
        let mut out = vec![0u8; (frame.len() + 4096).max(1 << 16)];
        let mut a = Attr::new();
        a.u32(0, self.fd() as u32)
            .u32(8, frame.len() as u32)
            .u32(12, out.len() as u32)
            .ptr(16, frame.as_ptr())
            .ptr(24, out.as_mut_ptr())
            .u32(32, repeat);
        sys_bpf(cmd::PROG_TEST_RUN, &mut a).map_err(|e| KernelError::sys(op(), e))?;
        let size = a.get_u32(12) as usize;
        if size > out.len() {
            return Err(KernelError::new(
                op(),
                Cause::Protocol(format!(
                    "data_size_out {size} beyond the {}-byte buffer",
                    out.len()
                )),
            ));
        }
        out.truncate(size);
        Ok(TestRun {
            retval: a.get_u32(4),
            data: out,
            duration_ns: a.get_u32(36),
        })
    }

    /// The kernel maps' contents as a simulator [`Maps`] set (same names, specs and
    /// slot order), for the trace's totals. Per-CPU values are summed over the CPUs.
    pub fn sim_maps(&self) -> Result<Maps, KernelError> {
        let mut out = Maps::new();
        for m in &self.maps {
            let err = |what: String| {
                KernelError::new(
                    format!("copy map {} to the model", m.name),
                    Cause::Protocol(what),
                )
            };
            let idx = out
                .create(&m.name, m.spec.clone())
                .map_err(|e| err(e.to_string()))?;
            let sm = out
                .get_mut(idx)
                .ok_or_else(|| err("map vanished".to_string()))?;
            for (k, v) in m.dump()? {
                let mut v = m.sim_value(&v);
                if m.spec.map_type.is_devmap() {
                    // The kernel reports the program id (0) in bpf_prog.fd; the model
                    // takes -1 or 0 for "no program".
                    if let Some(fd) = v.get_mut(4..8) {
                        fd.copy_from_slice(&0i32.to_le_bytes());
                    }
                }
                sm.update(&k, &v, 0)
                    .map_err(|e| err(format!("update key {k:02x?}: {e}")))?;
            }
        }
        Ok(out)
    }
}

/// The program's instructions with each map reference's slot replaced by the fd of the
/// kernel map created for that slot.
fn patch_map_fds(name: &str, insns: &[Insn], maps: &[BpfMap]) -> Result<Vec<Insn>, KernelError> {
    const LD_IMM64: u8 = BPF_LD | BPF_IMM | BPF_DW;
    /// BPF_PSEUDO_MAP_IDX / _IDX_VALUE: slots into fd_array; rewritten as FD / VALUE.
    const PSEUDO_MAP_IDX: u8 = 5;
    const PSEUDO_MAP_IDX_VALUE: u8 = 6;
    let mut out = insns.to_vec();
    let mut i = 0;
    while i < out.len() {
        let insn = out[i];
        if insn.code == LD_IMM64 {
            let src = match insn.src {
                BPF_PSEUDO_MAP_FD | PSEUDO_MAP_IDX => Some(BPF_PSEUDO_MAP_FD),
                BPF_PSEUDO_MAP_VALUE | PSEUDO_MAP_IDX_VALUE => Some(BPF_PSEUDO_MAP_VALUE),
                _ => None,
            };
            if let Some(src) = src {
                let m = usize::try_from(insn.imm)
                    .ok()
                    .and_then(|slot| maps.get(slot))
                    .ok_or_else(|| {
                        KernelError::new(
                            format!("load {name}"),
                            Cause::Protocol(format!(
                                "insn {i}: map slot {} of {} maps",
                                insn.imm,
                                maps.len()
                            )),
                        )
                    })?;
                out[i].src = src;
                out[i].imm = m.fd();
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    Ok(out)
}

/// `BPF_PROG_LOAD` `prog` (no map references) as a `BPF_PROG_TYPE_SOCKET_FILTER` program,
/// e.g. for tun's TUNSETSTEERINGEBPF / TUNSETFILTEREBPF; the program fd.
pub fn load_socket_filter(prog: &Program) -> Result<OwnedFd, KernelError> {
    if let Some(m) = prog.map_refs().first() {
        return Err(KernelError::new(
            format!("load {}", prog.name),
            Cause::Protocol(format!(
                "map {:?}: socket filters with maps are not supported",
                m.name
            )),
        ));
    }
    prog_load_as(
        &prog.name,
        &prog.license,
        prog.insns(),
        (
            sim::bpf::skb::BPF_PROG_TYPE_SOCKET_FILTER,
            0,
            "SOCKET_FILTER",
        ),
    )
}

fn prog_load(name: &str, license: &str, insns: &[Insn]) -> Result<OwnedFd, KernelError> {
    prog_load_as(name, license, insns, (BPF_PROG_TYPE_XDP, BPF_XDP, "XDP"))
}

/// `BPF_PROG_LOAD` as (prog_type, expected_attach_type, its name for errors).
fn prog_load_as(
    name: &str,
    license: &str,
    insns: &[Insn],
    (prog_type, attach_type, type_name): (u32, u32, &str),
) -> Result<OwnedFd, KernelError> {
    let op = format!("BPF_PROG_LOAD {name} ({type_name}, {} insns)", insns.len());
    let bytes: Vec<u8> = insns.iter().flat_map(|i| i.to_bytes()).collect();
    let license = CString::new(license.trim_end_matches('\0'))
        .map_err(|_| KernelError::new(&op, Cause::Protocol("NUL inside the license".into())))?;
    let attempt = |log: Option<&mut Vec<u8>>| {
        let mut a = Attr::new();
        a.u32(0, prog_type)
            .u32(4, insns.len() as u32)
            .ptr(8, bytes.as_ptr())
            .ptr(16, license.as_ptr())
            .u32(68, attach_type);
        if let Some(log) = log {
            a.u32(24, 1)
                .u32(28, log.len() as u32)
                .ptr(32, log.as_mut_ptr());
            sys_bpf(cmd::PROG_LOAD, &mut a)
        } else {
            sys_bpf(cmd::PROG_LOAD, &mut a)
        }
        .and_then(owned_fd)
    };
    match attempt(None) {
        Ok(fd) => Ok(fd),
        Err(first) => {
            // Load again with the verifier log on, for the error message.
            let mut log = vec![0u8; LOG_SIZE];
            let again = attempt(Some(&mut log));
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let tail = if text.len() > LOG_TAIL {
                let mut at = text.len() - LOG_TAIL;
                while !text.is_char_boundary(at) {
                    at += 1;
                }
                format!("...{}", &text[at..])
            } else {
                text.into_owned()
            };
            match again {
                // Loaded with the log on: the first failure was transient; keep it.
                Ok(fd) => Ok(fd),
                Err(e) => Err(KernelError::new(
                    op,
                    Cause::Errno {
                        errno: e,
                        extack: Some(if tail.trim().is_empty() {
                            format!("no verifier log (first attempt: {first})")
                        } else {
                            format!("verifier log:\n{}", tail.trim_end())
                        }),
                    },
                )),
            }
        }
    }
}

/// Where an XDP program runs on a device: the model's own mode, one definition.
pub use sim::xdp::XdpMode;

/// What `IFLA_XDP_ATTACHED` reports for a program attached in `mode`.
pub fn attached_as(mode: XdpMode) -> XdpAttached {
    match mode {
        XdpMode::Native => XdpAttached::Driver,
        XdpMode::Generic => XdpAttached::Generic,
    }
}

/// Attach `prog` to `ifindex` in `mode` through netlink (`IFLA_XDP {FD, FLAGS}`), then
/// check with `RTM_GETLINK` that the device reports that mode.
pub fn attach_xdp(
    rtnl: &mut Rtnl,
    ifindex: u32,
    prog: &LoadedXdp,
    mode: XdpMode,
) -> Result<(), KernelError> {
    rtnl.set_xdp_fd(ifindex, prog.fd(), mode.flags())?;
    let info = rtnl.link(ifindex)?;
    match info.xdp {
        Some((m, Some(_))) if m == attached_as(mode) => Ok(()),
        other => Err(KernelError::new(
            format!("attach XDP {} to ifindex {ifindex}", prog.name()),
            Cause::Protocol(format!(
                "asked for {:?}, the device reports {other:?}",
                attached_as(mode)
            )),
        )),
    }
}

/// Detach whatever XDP program `mode` has on `ifindex` (netlink, fd -1).
pub fn detach_xdp(rtnl: &mut Rtnl, ifindex: u32, mode: XdpMode) -> Result<(), KernelError> {
    rtnl.set_xdp_fd(ifindex, -1, mode.flags())
}

/// A `BPF_LINK_CREATE` XDP attachment; closing it (drop) detaches the program.
#[derive(Debug)]
pub struct XdpLink {
    fd: OwnedFd,
    ifindex: u32,
}

impl XdpLink {
    /// Attach `prog` to `ifindex` (of the calling thread's namespace) in `mode`.
    pub fn create(prog: &LoadedXdp, ifindex: u32, mode: XdpMode) -> Result<XdpLink, KernelError> {
        crate::sys::ensure_private_netns("BPF_LINK_CREATE")?;
        let op = format!(
            "BPF_LINK_CREATE XDP {} on ifindex {ifindex} flags {:#x}",
            prog.name(),
            mode.flags()
        );
        let mut a = Attr::new();
        a.u32(0, prog.fd() as u32)
            .u32(4, ifindex)
            .u32(8, BPF_XDP)
            .u32(12, mode.flags());
        let fd = sys_bpf(cmd::LINK_CREATE, &mut a)
            .and_then(owned_fd)
            .map_err(|e| KernelError::sys(op, e))?;
        Ok(XdpLink { fd, ifindex })
    }

    /// The link fd.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The device it is attached to.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::bpf::assemble;

    #[test]
    fn map_references_are_patched_with_fds_and_other_insns_kept() {
        // Without a kernel: patch against fake maps is impossible (BpfMap needs an fd), so
        // check the slot bookkeeping on a program without maps and the name filter.
        let prog = assemble("p", "r0 = 2\nexit").unwrap();
        let out = patch_map_fds("p", prog.insns(), &[]).unwrap();
        assert_eq!(out, prog.insns());
        assert_eq!(&object_name("tx_port")[..8], b"tx_port\0");
        assert_eq!(&object_name(".rodata.str1.1")[..15], b".rodata.str1.1\0");
        assert_eq!(object_name("a-b c")[..4], *b"abc\0");
        assert_eq!(object_name(&"x".repeat(40))[15], 0);
    }

    #[test]
    fn an_unknown_slot_is_an_error() {
        let prog = assemble("p", ".map m array 4 8 1\nr1 = map[m] ll\nr0 = 2\nexit").unwrap();
        let e = patch_map_fds("p", prog.insns(), &[]).unwrap_err();
        assert!(e.to_string().contains("map slot 0 of 0 maps"), "{e}");
    }
}
