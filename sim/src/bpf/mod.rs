//! A safe, deterministic eBPF interpreter for XDP programs.
//!
//! The simulator runs the very bytes the kernel runs: clang `-target bpf` objects
//! ([`elf`]), or small programs written in the llvm/kernel disassembly syntax ([`asm`]).
//! No unsafe code and no host pointers: the program sees a 64-bit virtual address
//! space in which the context, the packet, the stack and the map values sit at fixed
//! addresses, and every load and store is resolved with a bounds check.
//!
//! | region | virtual address | bytes the program may touch |
//! |---|---|---|
//! | `struct xdp_md` context | [`CTX_ADDR`] | 24, read-only, 4-byte loads only |
//! | packet buffer (`data_hard_start`) | [`PACKET_ADDR`] | `data_meta .. data_end` |
//! | stack, frame `d` | [`STACK_ADDR`] `+ d * 512` | frames `0..=d`, aligned accesses |
//! | values of map `n` | [`MAP_VALUE_ADDR`] `+ n * ` [`MAP_VALUE_STRIDE`] | inside one value |
//! | map handles (`struct bpf_map *`) | [`MAP_HANDLE_ADDR`] `+ n` | none (helper arguments only) |
//!
//! Packet addresses stay below 4 GiB because `xdp_md` carries them as `__u32`. An
//! access outside these windows, a bad instruction, an unknown helper or a helper
//! argument the verifier would have refused is a [`BpfError`], never a panic.
//!
//! Module map: [`insn`] decodes the ISA into [`Program`]s, [`verifier`] checks them at
//! load as the kernel's verifier would, [`vm`] executes them,
//! [`xdp`] mirrors `struct xdp_buff` and the verdicts, [`skb`] the `struct __sk_buff` of
//! socket filter programs (tun's steering and filter programs), [`helpers`] implements the
//! kernel helpers by number, [`maps`] the map types.
//!
//! ```
//! use sim::bpf::{assemble, run_xdp, BasicEnv, XdpBuff, xdp::XDP_TX};
//!
//! // Count the verdict in an array map, then send the frame back.
//! let mut prog = assemble("tx", "
//!     .map verdicts array 4 8 5
//!     r1 = 3
//!     *(u32 *)(r10 - 4) = r1
//!     r2 = r10
//!     r2 += -4
//!     r1 = map[verdicts] ll
//!     call bpf_map_lookup_elem
//!     if r0 == 0 goto out
//!     r1 = 1
//!     lock *(u64 *)(r0 + 0) += r1
//! out:
//!     r0 = 3
//!     exit").unwrap();
//! let mut env = BasicEnv::default();
//! prog.bind_maps(&mut env.maps).unwrap(); // creates `verdicts`
//! let mut frame = XdpBuff::new(&[0u8; 64]);
//! let run = run_xdp(&prog, &mut frame, &mut env).unwrap();
//! assert_eq!((run.action, run.insns), (XDP_TX, 11));
//! assert_eq!(env.maps.by_name("verdicts").unwrap().read_u64(XDP_TX), Some(1));
//! ```

pub mod asm;
pub mod elf;
pub mod helpers;
pub mod insn;
pub mod maps;
pub mod skb;
pub mod verifier;
pub mod vm;
pub mod xdp;

use std::fmt;

pub use asm::assemble;
pub use elf::{load_elf_file, ElfObject};
pub use helpers::{BasicEnv, XdpEnv};
pub use insn::{Insn, Program};
pub use maps::{Map, MapErr, MapRef, MapSpec, MapType, Maps};
pub use skb::{load_socket_filter, run_socket_filter, SkbCtx};
pub use vm::{run_xdp, Vm};
pub use xdp::{RedirectTarget, XdpAction, XdpBuff, XdpRun};

/// Virtual address of the `struct xdp_md` context (r1 at entry).
pub const CTX_ADDR: u64 = 0x1000;
/// Virtual address of `data_hard_start`, byte 0 of [`XdpBuff::buf`].
pub const PACKET_ADDR: u64 = 0x1000_0000;
/// Largest packet buffer (128 MiB); the gap up to the stack catches stack underflows.
pub const PACKET_WINDOW: u64 = 0x0800_0000;
/// Virtual address of the lowest byte of stack frame 0; r10 starts at `STACK_ADDR + 512`.
pub const STACK_ADDR: u64 = 0x2000_0000;
/// Bytes of stack per call frame (MAX_BPF_STACK).
pub const STACK_SIZE: usize = 512;
/// Deepest bpf-to-bpf call chain, main program included (MAX_CALL_FRAMES).
pub const MAX_CALL_FRAMES: usize = 8;
/// Virtual address of the value storage of map 0.
pub const MAP_VALUE_ADDR: u64 = 0x3000_0000;
/// Distance between the value storages of consecutive maps (256 MiB each).
pub const MAP_VALUE_STRIDE: u64 = 0x1000_0000;
/// Map handles: `MAP_HANDLE_ADDR + map index`; not dereferenceable.
pub const MAP_HANDLE_ADDR: u64 = 0x0800_0000;
/// Instructions one run may execute before it is stopped.
pub const DEFAULT_INSN_BUDGET: u64 = 1_000_000;

/// Everything that can go wrong loading or running a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BpfError {
    /// The verifier would refuse the program: bad opcode, register, jump target...
    Invalid { pc: usize, reason: String },
    /// The load-time check ([`verifier`]) refuses the program at instruction `pc`, with
    /// the kernel verifier's wording where it has one.
    Rejected { pc: usize, reason: String },
    /// A load or store outside the memory the program may touch.
    BadAccess {
        pc: usize,
        addr: u64,
        size: usize,
        write: bool,
        why: &'static str,
    },
    /// The run executed more instructions than its budget.
    BudgetExhausted { pc: usize, budget: u64 },
    /// A helper was called with an argument the verifier would refuse.
    Helper {
        pc: usize,
        helper: u32,
        reason: String,
    },
    /// The program refers to a map that is not bound or not defined.
    Unbound { map: String },
    /// Creating a map or using the userspace map API went wrong.
    Map { map: String, reason: String },
    /// Assembler error, with the 1-based source line.
    Asm { line: usize, msg: String },
    /// ELF loader error, with the file name.
    Elf { file: String, msg: String },
}

impl BpfError {
    /// The same error at instruction `pc` (run-time errors are raised without one).
    pub(crate) fn at(mut self, at: usize) -> BpfError {
        match &mut self {
            BpfError::Invalid { pc, .. }
            | BpfError::Rejected { pc, .. }
            | BpfError::BadAccess { pc, .. }
            | BpfError::BudgetExhausted { pc, .. }
            | BpfError::Helper { pc, .. } => *pc = at,
            _ => {}
        }
        self
    }

    pub(crate) fn invalid(pc: usize, reason: impl Into<String>) -> BpfError {
        BpfError::Invalid {
            pc,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for BpfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BpfError::Invalid { pc, reason } => write!(f, "invalid program at insn {pc}: {reason}"),
            BpfError::Rejected { pc, reason } => write!(f, "insn {pc}: {reason}"),
            BpfError::BadAccess {
                pc,
                addr,
                size,
                write,
                why,
            } => {
                let rw = if *write { "write" } else { "read" };
                write!(f, "insn {pc}: bad {size}-byte {rw} at {addr:#x}: {why}")
            }
            BpfError::BudgetExhausted { pc, budget } => {
                write!(f, "insn {pc}: instruction budget of {budget} exhausted")
            }
            BpfError::Helper { pc, helper, reason } => {
                write!(
                    f,
                    "insn {pc}: helper {}#{helper}: {reason}",
                    helpers::helper_name(*helper)
                )
            }
            BpfError::Unbound { map } => write!(f, "map {map:?} is not bound to a map set"),
            BpfError::Map { map, reason } => write!(f, "map {map:?}: {reason}"),
            BpfError::Asm { line, msg } => write!(f, "asm line {line}: {msg}"),
            BpfError::Elf { file, msg } => write!(f, "{file}: {msg}"),
        }
    }
}

impl std::error::Error for BpfError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line() {
        let errs = [
            BpfError::invalid(3, "unknown opcode 0xff"),
            BpfError::BadAccess {
                pc: 1,
                addr: 0x1000_0100,
                size: 4,
                write: false,
                why: "past data_end",
            },
            BpfError::BudgetExhausted { pc: 7, budget: 10 },
            BpfError::Helper {
                pc: 2,
                helper: 51,
                reason: "not a devmap".into(),
            },
            BpfError::Unbound {
                map: "counters".into(),
            },
            BpfError::Map {
                map: "m".into(),
                reason: "key size 3 != 4".into(),
            },
            BpfError::Asm {
                line: 4,
                msg: "unknown mnemonic".into(),
            },
            BpfError::Elf {
                file: "prog.o".into(),
                msg: "no section xdp".into(),
            },
        ];
        for e in errs {
            let s = e.to_string();
            assert!(!s.contains('\n') && !s.is_empty(), "{s}");
        }
        assert_eq!(
            BpfError::Helper {
                pc: 2,
                helper: 51,
                reason: "x".into()
            }
            .to_string(),
            "insn 2: helper bpf_redirect_map#51: x"
        );
        assert_eq!(
            BpfError::BudgetExhausted { pc: 0, budget: 1 }.at(9),
            BpfError::BudgetExhausted { pc: 9, budget: 1 }
        );
    }
}
