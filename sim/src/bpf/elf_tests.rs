//! Tests of elf.rs.

use super::*;
use crate::bpf::xdp::{XDP_DROP, XDP_PASS, XDP_REDIRECT, XDP_TX};
use crate::bpf::{run_xdp, BasicEnv, Maps, RedirectTarget, XdpBuff};
use std::path::PathBuf;
use std::process::Command;

/// Minimal BTF writer: types as (name, kind, vlen, size_or_type, extra words).
struct Btf {
    types: Vec<u8>,
    strs: Vec<u8>,
}

impl Btf {
    fn s(&mut self, name: &str) -> u32 {
        let off = self.strs.len() as u32;
        self.strs.extend_from_slice(name.as_bytes());
        self.strs.push(0);
        off
    }

    fn t(&mut self, name: &str, kind: u32, vlen: u32, size_or_type: u32, extra: &[u32]) {
        let n = if name.is_empty() { 0 } else { self.s(name) };
        for w in [n, kind << 24 | vlen, size_or_type].iter().chain(extra) {
            self.types.extend_from_slice(&w.to_le_bytes());
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = vec![0x9f, 0xeb, 1, 0];
        let (tl, sl) = (self.types.len() as u32, self.strs.len() as u32);
        for w in [24, 0, tl, tl, sl] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.strs);
        out
    }
}

/// `struct { __uint(type, T); __uint(max_entries, 16); __type(key, __u32); __type(value, struct pair); } flows SEC(".maps");`
fn map_btf(map_type: u32) -> Vec<u8> {
    let mut b = Btf {
        types: Vec::new(),
        strs: vec![0],
    };
    b.t("unsigned int", 1, 0, 4, &[32]); // 1
    b.t("", 3, 0, 0, &[1, 1, map_type]); // 2: int[T]
    b.t("", 2, 0, 2, &[]); // 3: ptr
    b.t("", 3, 0, 0, &[1, 1, 16]); // 4: int[16]
    b.t("", 2, 0, 4, &[]); // 5
    b.t("__u32", 8, 0, 1, &[]); // 6: typedef
    b.t("", 2, 0, 6, &[]); // 7
    b.t("pair", 4, 0, 12, &[]); // 8: struct pair, 12 bytes
    b.t("", 2, 0, 8, &[]); // 9
    let (ty, me, k, v) = (b.s("type"), b.s("max_entries"), b.s("key"), b.s("value"));
    b.t("", 4, 4, 32, &[ty, 3, 0, me, 5, 64, k, 7, 128, v, 9, 192]); // 10
    b.t("flows", 14, 0, 10, &[1]); // 11: var
    b.t(".maps", 15, 1, 32, &[11, 0, 32]); // 12: datasec
    b.bytes()
}

#[test]
fn btf_defined_maps() {
    let defs = btf_map_defs(&map_btf(1)).unwrap();
    assert_eq!(defs, vec![("flows".to_string(), MapSpec::hash(4, 12, 16))]);
    assert!(btf_map_defs(&map_btf(3))
        .unwrap_err()
        .contains("unsupported map type 3"));
    assert!(btf_map_defs(&[0; 8]).unwrap_err().contains("magic"));
    let mut cut = map_btf(2);
    cut.truncate(60);
    assert!(btf_map_defs(&cut).is_err());
}

#[test]
fn errors_name_the_file() {
    let e = ElfObject::parse("junk.o", b"not an elf").unwrap_err();
    assert!(
        matches!(&e, BpfError::Elf { file, msg } if file == "junk.o" && msg.contains("not an ELF")),
        "{e}"
    );
    let e = load_elf_file(Path::new("/nonexistent/prog.o"), "xdp").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/prog.o: cannot read"),
        "{e}"
    );
}

/// A 64-byte ELF64 header with no sections: class, data, e_type and e_machine as given.
fn elf_header(class: u8, data: u8, e_type: u16, e_machine: u16) -> Vec<u8> {
    let mut h = vec![0x7f, b'E', b'L', b'F', class, data, 1];
    h.resize(16, 0);
    h.extend_from_slice(&e_type.to_le_bytes());
    h.extend_from_slice(&e_machine.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes()); // e_version
    h.extend_from_slice(&[0; 24]); // e_entry, e_phoff, e_shoff
    h.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    for half in [64u16, 0, 0, 64, 0, 0] {
        // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
        h.extend_from_slice(&half.to_le_bytes());
    }
    assert_eq!(h.len(), 64);
    h
}

#[test]
fn header_checks_follow_libbpf_elf_init() {
    const EM_X86_64: u16 = 62;
    let refused = |bytes: Vec<u8>| match ElfObject::parse("p.o", &bytes) {
        Err(BpfError::Elf { file, msg }) => {
            assert_eq!(file, "p.o");
            assert!(!msg.contains('\n'), "{msg}");
            msg
        }
        other => panic!("accepted: {other:?}"),
    };
    let msg = refused(elf_header(2, 1, 1, EM_X86_64));
    assert!(
        msg.contains("e_machine 62") && msg.contains("EM_BPF (247)"),
        "{msg}"
    );
    let msg = refused(elf_header(2, 1, 2, 247));
    assert!(msg.contains("ET_EXEC") && msg.contains("ET_REL"), "{msg}");
    let msg = refused(elf_header(1, 1, 1, 247));
    assert!(msg.contains("ELFCLASS64"), "{msg}");
    let msg = refused(elf_header(2, 2, 1, 247));
    assert!(msg.contains("big-endian"), "{msg}");
    // EM_BPF, and EM_NONE from old LLVM, pass the header checks: the loader goes on to
    // look for programs, which this header-only object lacks.
    for machine in [247, 0] {
        let msg = refused(elf_header(2, 1, 1, machine));
        assert_eq!(msg, "no program section");
    }
}

fn clang() -> Option<PathBuf> {
    let candidates = [
        std::env::var("CLANG").unwrap_or_default(),
        "/usr/lib/llvm-14/bin/clang".into(),
        "clang".into(),
    ];
    let found = candidates.into_iter().filter(|c| !c.is_empty()).find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let headers = Path::new("/usr/include/bpf/bpf_helpers.h").exists();
    found.filter(|_| headers).map(PathBuf::from)
}

/// Build testdata/`name`.c; None (and a "skipped" line) without clang and libbpf headers.
fn build(name: &str) -> Option<Vec<u8>> {
    let Some(cc) = clang() else {
        // ci/install.sh installs clang-14 and libbpf-dev, so CI never skips this.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must build the clang test programs: clang-14 or libbpf-dev is missing"
        );
        println!("skipped: clang not installed (or libbpf-dev headers missing)");
        return None;
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/bpf/testdata")
        .join(format!("{name}.c"));
    let out = std::env::temp_dir().join(format!("skbsim-bpf-{}-{name}.o", std::process::id()));
    let st = Command::new(cc)
        .args([
            "-O2",
            "-g",
            "-target",
            "bpf",
            "-I/usr/include/x86_64-linux-gnu",
            "-c",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("run clang");
    assert!(st.success(), "clang failed on {}", src.display());
    let bytes = std::fs::read(&out).expect("read object");
    let _ = std::fs::remove_file(&out);
    Some(bytes)
}

fn frame(proto: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    if len >= 14 {
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&proto.to_be_bytes());
    }
    f
}

#[test]
fn clang_xdp_count_with_btf_array_of_verdict_counters() {
    let Some(obj) = build("xdp_count") else {
        return;
    };
    let o = ElfObject::parse("xdp_count.o", &obj).unwrap();
    assert_eq!(o.license, "GPL");
    assert_eq!(
        o.maps,
        vec![MapRef::defined("verdicts", MapSpec::array(8, 5))]
    );
    let mut prog = o.program("xdp").unwrap();
    assert_eq!(prog.name, "xdp_count");
    let mut env = BasicEnv::new(Maps::new());
    prog.bind_maps(&mut env.maps).unwrap();
    let cases = [
        (frame(0x0806, 60), XDP_TX),
        (frame(0x0800, 60), XDP_PASS),
        (frame(0, 10), XDP_DROP),
        (frame(0x0806, 42), XDP_TX),
    ];
    for (f, want) in cases {
        let mut x = XdpBuff::new(&f);
        let run = run_xdp(&prog, &mut x, &mut env).unwrap();
        assert_eq!(run.action, want);
        if want == XDP_TX {
            assert_eq!(
                &x.data()[..12],
                &[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1],
                "MACs swapped"
            );
        }
    }
    let counters = env.maps.by_name("verdicts").unwrap();
    let got: Vec<u64> = (0..5).map(|k| counters.read_u64(k).unwrap()).collect();
    assert_eq!(got, vec![0, 1, 1, 2, 0]);
}

#[test]
fn clang_subprogram_devmap_and_global_data() {
    let Some(obj) = build("xdp_features") else {
        return;
    };
    let o = ElfObject::parse("xdp_features.o", &obj).unwrap();
    let names: Vec<&str> = o.maps.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["tx_ports", "xdp_features.bss", "xdp_features.rodata"]
    );
    let mut prog = o.program("xdp_steer").unwrap();
    let mut env = BasicEnv::new(Maps::new());
    prog.bind_maps(&mut env.maps).unwrap();
    // The load-time check follows the bpf-to-bpf call and the global data.
    crate::bpf::verifier::verify_bound(&prog, &env.maps).expect("the verifier accepts it");
    env.maps
        .by_name_mut("tx_ports")
        .unwrap()
        .update(&3u32.to_le_bytes(), &7u32.to_le_bytes(), 0)
        .unwrap();
    // Even first byte: tx_ports[3 + 0] = ifindex 7.
    let run = run_xdp(&prog, &mut XdpBuff::new(&[0x02; 60]), &mut env).unwrap();
    assert_eq!(run.action, XDP_REDIRECT);
    let tx = env.maps.index_of("tx_ports").unwrap();
    assert_eq!(
        run.redirect,
        Some(RedirectTarget::Devmap {
            map: tx,
            key: 3,
            ifindex: 7
        })
    );
    // Odd: tx_ports[4] is empty, the default action XDP_DROP comes back.
    assert_eq!(
        run_xdp(&prog, &mut XdpBuff::new(&[0x01; 60]), &mut env)
            .unwrap()
            .action,
        XDP_DROP
    );
    // 0xff: the .text subprogram strips 4 bytes.
    let mut x = XdpBuff::new(&[0xff; 60]);
    let run = run_xdp(&prog, &mut x, &mut env).unwrap();
    assert_eq!((run.action, x.len(), x.data), (XDP_PASS, 56, 260));
    assert_eq!(
        env.maps.by_name("xdp_features.bss").unwrap().read_u64(0),
        Some(3)
    );
    let rodata = env.maps.by_name("xdp_features.rodata").unwrap();
    assert_eq!(rodata.lookup_u32(0), Some(&3u32.to_le_bytes()[..]));
}
