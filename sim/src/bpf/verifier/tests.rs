//! The load-time check on hand-written programs (each rule once, accepted and refused)
//! and on the committed objects: every scenario program passes, every program in
//! scenarios/xdp/rejected is refused at the instruction and with the message the
//! kernel's verifier gives (tools/skbsim-kernel/tests/verifier.rs checks those against
//! the real kernel).

use std::path::{Path, PathBuf};

use super::*;
use crate::bpf::{assemble, load_elf_file};

fn check(src: &str) -> Result<u64, BpfError> {
    let mut prog = assemble("t", src).expect("assembles");
    let mut maps = Maps::new();
    prog.bind_maps(&mut maps).expect("binds");
    verify_bound(&prog, &maps)
}

#[track_caller]
fn refused(src: &str, pc: usize, reason: &str) {
    match check(src) {
        Err(BpfError::Rejected { pc: p, reason: r }) => {
            assert_eq!((p, r.as_str()), (pc, reason), "{src}")
        }
        other => panic!("expected a refusal at insn {pc} ({reason}), got {other:?}\n{src}"),
    }
}

#[track_caller]
fn accepted(src: &str) -> u64 {
    check(src).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// r2 = data, r3 = data_end, r4 = data + 14 (insns 0-3).
const PKT: &str = "r2 = *(u32 *)(r1 + 0)\nr3 = *(u32 *)(r1 + 4)\nr4 = r2\nr4 += 14\n";

#[test]
fn packet_reads_need_a_data_end_check_covering_them() {
    refused(
        &format!("{PKT}r0 = *(u8 *)(r2 + 12)\nexit"),
        4,
        "invalid access to packet, off=12 size=1, R2(id=0,off=12,r=0)",
    );
    // pkt + 14 > data_end falls through with r = 14: bytes 0..14.
    let gt = |read: i16| {
        format!("{PKT}if r4 > r3 goto out\nr0 = *(u8 *)(r2 + {read})\nout:\nr0 = 2\nexit")
    };
    accepted(&gt(13));
    refused(
        &gt(14),
        5,
        "invalid access to packet, off=14 size=1, R2(id=0,off=14,r=14)",
    );
    // pkt + 14 < data_end is taken with r = 15 (find_good_pkt_pointers, range_right_open).
    let lt = |read: i16| {
        format!("{PKT}if r4 < r3 goto ok\nr0 = 2\nexit\nok:\nr0 = *(u8 *)(r2 + {read})\nexit")
    };
    accepted(&lt(14));
    refused(
        &lt(15),
        7,
        "invalid access to packet, off=15 size=1, R2(id=0,off=15,r=15)",
    );
    // data_end >= pkt + 14, operands swapped: taken with r = 14; the copy r4 gets it too.
    accepted(&format!(
        "{PKT}if r3 >= r4 goto ok\nr0 = 2\nexit\nok:\nr0 = *(u16 *)(r4 - 2)\nexit"
    ));
    // A fresh load of data is a new pointer with no range.
    refused(
        &format!("{PKT}if r4 > r3 goto out\nr5 = *(u32 *)(r1 + 0)\nr0 = *(u8 *)(r5 + 0)\nout:\nr0 = 2\nexit"),
        6,
        "invalid access to packet, off=0 size=1, R5(id=0,off=0,r=0)",
    );
}

#[test]
fn variable_packet_offsets_are_bounded_or_refused() {
    // ip = data + 14 + (byte & 0xf) * 4, checked for 4 more bytes: readable.
    let var = |mask: &str| {
        format!(
            "{PKT}if r4 > r3 goto out\nr5 = *(u8 *)(r2 + 0)\n{mask}r5 <<= 2\nr5 += r4\nr6 = r5\nr6 += 4\n\
             if r6 > r3 goto out\nr0 = *(u32 *)(r5 + 0)\nout:\nr0 = 2\nexit"
        )
    };
    accepted(&var("r5 &= 15\n"));
    // Unmasked: byte << 2 is still below 1024, so the check still covers it.
    accepted(&var(""));
    // A full 64-bit unknown cannot be added to a packet pointer.
    refused(
        "r6 = *(u32 *)(r1 + 0)\ncall bpf_get_prandom_u32\nr6 += r0\nr0 = 2\nexit",
        2,
        "math between pkt pointer and register with unbounded min value is not allowed",
    );
}

#[test]
fn helpers_that_move_data_invalidate_packet_pointers_and_calls_scratch_r1_to_r5() {
    refused(
        &format!("{PKT}r6 = r2\nif r4 > r3 goto out\nr2 = 4\ncall bpf_xdp_adjust_head\nr0 = *(u8 *)(r6 + 0)\nout:\nr0 = 2\nexit"),
        8,
        "R6 invalid mem access 'scalar'",
    );
    refused(
        "r0 = 0\ncall bpf_ktime_get_ns\nr0 = r1\nexit",
        2,
        "R1 !read_ok",
    );
    refused(
        "r1 = 1\ncall bpf_xdp_adjust_head\nr0 = 2\nexit",
        1,
        "R2 !read_ok",
    );
    refused(
        "r2 = 1\nr1 = 0\ncall bpf_xdp_adjust_head\nr0 = 2\nexit",
        2,
        "R1 type=scalar expected=ctx",
    );
}

#[test]
fn stack_context_and_registers() {
    refused("exit", 0, "R0 !read_ok");
    refused(
        "r0 = 0\n*(u64 *)(r10 + 0) = r0\nexit",
        1,
        "invalid write to stack R10 off=0 size=8",
    );
    refused(
        "r0 = *(u64 *)(r10 - 520)\nexit",
        0,
        "invalid read from stack R10 off=-520 size=8",
    );
    refused(
        "r0 = 0\n*(u32 *)(r10 - 6) = r0\nexit",
        1,
        "misaligned stack access off 0+0+-6 size 4",
    );
    // A root load may read stack nothing wrote (allow_uninit_stack).
    accepted("r0 = *(u64 *)(r10 - 512)\nexit");
    // A spilled packet pointer comes back with its range.
    accepted(&format!(
        "{PKT}if r4 > r3 goto out\n*(u64 *)(r10 - 8) = r2\nr5 = *(u64 *)(r10 - 8)\nr0 = *(u8 *)(r5 + 13)\nout:\nr0 = 2\nexit"
    ));
    refused(
        &format!("{PKT}*(u32 *)(r10 - 8) = r2\nr0 = 2\nexit"),
        4,
        "invalid size of register spill",
    );
    refused(
        "r0 = 0\n*(u32 *)(r1 + 0) = r0\nexit",
        1,
        "invalid bpf_context access off=0 size=4",
    );
    refused(
        "r0 = *(u16 *)(r1 + 0)\nexit",
        0,
        "invalid bpf_context access off=0 size=2",
    );
    refused(
        "r0 = *(u32 *)(r1 + 20)\nexit",
        0,
        "invalid bpf_context access off=20 size=4",
    );
    refused(
        "r0 = *(u32 *)(r1 + 4)\nr0 += 1\nexit",
        1,
        "R0 pointer arithmetic on pkt_end prohibited",
    );
}

#[test]
fn map_lookups_are_null_checked_unless_a_constant_array_key_cannot_miss() {
    let lookup = |map: &str, key: i32, body: &str| {
        format!(
            ".map m {map} 4 8 4\n*(u32 *)(r10 - 8) = {key}\nr2 = r10\nr2 += -8\nr1 = map[m] ll\n\
             call bpf_map_lookup_elem\n{body}"
        )
    };
    let deref = "r0 = *(u64 *)(r0 + 0)\nexit";
    refused(
        &lookup("hash", 0, deref),
        6,
        "R0 invalid mem access 'map_value_or_null'",
    );
    accepted(&lookup("array", 3, deref));
    refused(
        &lookup("array", 4, deref),
        6,
        "R0 invalid mem access 'map_value_or_null'",
    );
    let checked =
        |off: i16| format!("if r0 == 0 goto out\nr0 = *(u64 *)(r0 + {off})\nout:\nr0 = 2\nexit");
    accepted(&lookup("hash", 0, &checked(0)));
    refused(
        &lookup("hash", 0, &checked(4)),
        7,
        "invalid access to map value, value_size=8 off=4 size=8",
    );
    refused(
        ".map d devmap 4 4 1\nr1 = map[d] ll\nr2 = r10\nr2 += -8\ncall bpf_map_delete_elem\nr0 = 2\nexit",
        4,
        "cannot pass map_type 14 into func bpf_map_delete_elem#3",
    );
}

#[test]
fn control_flow() {
    refused("r0 = 2\nexit\nr0 = 1\nexit", 2, "unreachable insn 2");
    refused("l:\nr0 = 0\ngoto l", 0, "infinite loop detected at insn 0");
    // A bounded loop (accepted since 5.3 for bpf_capable loads) is walked per iteration.
    let n = accepted("r1 = 0\nl:\nr1 += 1\nif r1 < 10 goto l\nr0 = 2\nexit");
    assert!(n >= 20, "{n} insns processed");
    // An unbounded one runs into the complexity limit (1M; 1000 here to keep it quick).
    let mut prog = assemble("t", "r1 = 0\nl:\nr1 += 1\nif r1 != 0 goto l\nr0 = 2\nexit").unwrap();
    prog.bind_maps(&mut Maps::new()).unwrap();
    assert_eq!(
        verify_limited(&prog, &[], 1000),
        Err(BpfError::Rejected {
            pc: 2,
            reason: "BPF program is too large. Processed 1001 insn".into()
        })
    );
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn objects(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "o" || x == "s"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_program_in_scenarios_xdp_passes() {
    let progs = objects("scenarios/xdp");
    assert!(progs.len() >= 14, "{progs:?}");
    for p in progs {
        let mut prog = if p.extension().is_some_and(|x| x == "o") {
            load_elf_file(&p, "xdp").expect("loads")
        } else {
            assemble("s", &std::fs::read_to_string(&p).expect("read")).expect("assembles")
        };
        let mut maps = Maps::new();
        prog.bind_maps(&mut maps).expect("binds");
        if let Err(e) = verify_bound(&prog, &maps) {
            panic!("{}: {e}", p.display());
        }
    }
}

#[test]
fn every_rejected_program_names_its_insn() {
    // (file, insn, the kernel verifier's message).
    let want = [
        ("jump_oob", 0, "jump out of range from insn 0 to 101"),
        ("map_null", 7, "R0 invalid mem access 'map_value_or_null'"),
        (
            "map_value_oob",
            10,
            "invalid access to map value, value_size=8 off=8 size=8",
        ),
        (
            "pkt_past_check",
            6,
            "invalid access to packet, off=23 size=1, R1(id=0,off=23,r=14)",
        ),
        (
            "pkt_unchecked",
            1,
            "invalid access to packet, off=12 size=1, R1(id=0,off=12,r=0)",
        ),
        ("stack_oob", 1, "invalid write to stack R10 off=-520 size=8"),
        ("uninit_reg", 0, "R7 !read_ok"),
    ];
    let files = objects("scenarios/xdp/rejected");
    assert_eq!(files.len(), want.len(), "{files:?}");
    for (p, (name, pc, reason)) in files.iter().zip(want) {
        assert!(p.ends_with(format!("{name}.o")), "{}", p.display());
        let got = load_elf_file(p, "xdp").and_then(|mut prog| {
            let mut maps = Maps::new();
            prog.bind_maps(&mut maps)?;
            verify_bound(&prog, &maps)
        });
        let text = match got {
            Ok(_) => panic!("{name}: accepted"),
            Err(e) => e.to_string(),
        };
        // The decoder (jump_oob) says "program NAME: invalid program at insn N: ..." and
        // the verifier "insn N: ...": both name the instruction.
        assert!(
            text.ends_with(&format!("insn {pc}: {reason}")),
            "{name}: {text}"
        );
    }
}
