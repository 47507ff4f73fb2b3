//! The ELF header checks libbpf makes before it reads a BPF object's sections
//! (tools/lib/bpf/libbpf.c: bpf_object__elf_init, bpf_object__check_endianness): a
//! 64-bit (`elf64_getehdr`), little-endian (this host's order) relocatable object
//! (`e_type == ET_REL`) for EM_BPF, or EM_NONE, which old LLVM wrote ("Old LLVM set
//! e_machine to EM_NONE").

use object::elf::{
    FileHeader64, ELFCLASS32, ELFCLASS64, ELFDATA2LSB, ELFDATA2MSB, ELFMAG, EM_BPF, EM_NONE,
    ET_DYN, ET_EXEC, ET_REL,
};
use object::read::elf::FileHeader as _;
use object::LittleEndian;

/// e_ident offsets (include/uapi/linux/elf.h).
const EI_CLASS: usize = 4;
const EI_DATA: usize = 5;

/// `Ok(())` for a header libbpf would load; otherwise what is wrong, in one line.
pub(super) fn check(bytes: &[u8]) -> Result<(), String> {
    if bytes.get(..4) != Some(&ELFMAG[..]) {
        return Err("not an ELF object (no \\x7fELF magic)".into());
    }
    match bytes.get(EI_CLASS).copied() {
        Some(ELFCLASS64) => {}
        Some(ELFCLASS32) => {
            return Err("ELFCLASS32: a BPF object is ELFCLASS64 (libbpf: elf64_getehdr)".into())
        }
        c => return Err(format!("e_ident class {c:?} is not ELFCLASS64")),
    }
    match bytes.get(EI_DATA).copied() {
        Some(ELFDATA2LSB) => {}
        Some(ELFDATA2MSB) => {
            return Err(
                "big-endian BPF objects are not supported (this host is little-endian)".into(),
            )
        }
        d => return Err(format!("e_ident data {d:?} is not ELFDATA2LSB")),
    }
    let h = FileHeader64::<LittleEndian>::parse(bytes)
        .map_err(|e| format!("not an ELF object: {e}"))?;
    let e_type = h.e_type(LittleEndian);
    if e_type != ET_REL {
        let name = match e_type {
            ET_EXEC => " (ET_EXEC)",
            ET_DYN => " (ET_DYN)",
            _ => "",
        };
        return Err(format!(
            "e_type {e_type}{name} is not ET_REL: a BPF object is relocatable (clang -c)"
        ));
    }
    let e_machine = h.e_machine(LittleEndian);
    if e_machine != EM_BPF && e_machine != EM_NONE {
        return Err(format!(
            "e_machine {e_machine} is not EM_BPF ({EM_BPF}): not built with clang -target bpf"
        ));
    }
    Ok(())
}
