//! Tests of vm.rs.

use super::*;
use crate::bpf::helpers::BasicEnv;
use crate::bpf::xdp::XDP_MD_DATA_END;

/// One instruction as its 8 raw bytes (little-endian `struct bpf_insn`).
fn x(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
    let (o, i) = (off.to_le_bytes(), imm.to_le_bytes());
    [code, src << 4 | dst, o[0], o[1], i[0], i[1], i[2], i[3]]
}
/// `rN = v ll` (two slots).
fn ld64(dst: u8, v: u64) -> [[u8; 8]; 2] {
    [
        x(0x18, dst, 0, 0, v as u32 as i32),
        x(0, 0, 0, 0, (v >> 32) as u32 as i32),
    ]
}
const EXIT: [u8; 8] = [0x95, 0, 0, 0, 0, 0, 0, 0];

fn prog(parts: &[&[[u8; 8]]]) -> Program {
    let bytes: Vec<u8> = parts
        .iter()
        .flat_map(|p| p.iter().flatten().copied())
        .collect();
    Program::from_bytes("t", &bytes, Vec::new()).unwrap()
}

fn run_on(p: &Program, frame: &mut XdpBuff) -> Result<XdpRun, BpfError> {
    run_xdp(p, frame, &mut BasicEnv::default())
}

fn r0(parts: &[&[[u8; 8]]]) -> u64 {
    run_on(&prog(parts), &mut XdpBuff::new(&[0; 60]))
        .unwrap()
        .r0
}

/// r0 = a; r1 = b; r0 op= r1 (code), then the same with b as an immediate when the
/// decoder accepts that form (no constant division by zero or oversized shift).
fn alu(code: u8, off: i16, a: u64, b: u64) -> u64 {
    let by_reg = r0(&[
        &ld64(0, a),
        &ld64(1, b),
        &[x(code | 0x08, 0, 1, off, 0), EXIT],
    ]);
    if let Ok(imm) = i32::try_from(b as i64) {
        let bytes: Vec<u8> = [ld64(0, a)[0], ld64(0, a)[1], x(code, 0, 0, off, imm), EXIT].concat();
        if let Ok(p) = Program::from_bytes("t", &bytes, Vec::new()) {
            let by_imm = run_on(&p, &mut XdpBuff::new(&[0; 60])).unwrap().r0;
            assert_eq!(
                by_reg, by_imm,
                "code {code:#x}: register and immediate forms differ"
            );
        }
    }
    by_reg
}

#[test]
fn alu64_ops() {
    let m = u64::MAX;
    let min = i64::MIN as u64;
    let neg = |v: i64| v as u64;
    let cases: [(u8, i16, u64, u64, u64); 22] = [
        (0x07, 0, m, 2, 1),                // add wraps
        (0x17, 0, 1, 2, m),                // sub
        (0x27, 0, 1 << 32, 1 << 32, 0),    // mul wraps
        (0x37, 0, 7, 2, 3),                // div
        (0x37, 0, 7, 0, 0),                // div by zero: 0
        (0x97, 0, 7, 3, 1),                // mod
        (0x97, 0, 7, 0, 7),                // mod by zero keeps the dividend
        (0x37, 1, neg(-7), 2, neg(-3)),    // sdiv truncates
        (0x37, 1, min, neg(-1), min),      // sdiv MIN / -1 wraps
        (0x37, 1, 9, 0, 0),                // sdiv by zero
        (0x97, 1, neg(-7), 2, neg(-1)),    // smod takes the dividend's sign
        (0x97, 1, min, neg(-1), 0),        // smod MIN % -1
        (0x47, 0, 0b1010, 0b0101, 0b1111), // or
        (0x57, 0, 0b1110, 0b0111, 0b0110), // and
        (0xa7, 0, 0b1110, 0b0111, 0b1001), // xor
        (0x67, 0, 1, 63, 1 << 63),         // lsh
        (0x67, 0, 1, 65 + (1 << 40), 2),   // lsh amount masked to 6 bits (register only)
        (0x77, 0, m, 60, 15),              // rsh
        (0xc7, 0, neg(-16), 2, neg(-4)),   // arsh
        (0xb7, 0, 5, neg(-1), m),          // mov, immediate sign-extended
        (0x17, 0, 0, 1 << 63, 1 << 63),    // sub 0 - MIN
        (0x27, 0, neg(-3), 3, neg(-9)),    // mul signed values
    ];
    for (code, off, a, b, want) in cases {
        assert_eq!(
            alu(code, off, a, b),
            want,
            "code {code:#x} off {off}: {a:#x} op {b:#x}"
        );
    }
    assert_eq!(
        r0(&[&ld64(0, 5), &[x(0x87, 0, 0, 0, 0), EXIT]]),
        neg(-5),
        "neg"
    );
}

#[test]
fn alu32_ops_zero_extend() {
    let hi = 0xdead_beef_0000_0000u64;
    let cases: [(u8, i16, u64, u64, u64); 14] = [
        (0x04, 0, hi | 0xffff_ffff, 2, 1),                // add
        (0x14, 0, hi, 1, 0xffff_ffff),                    // sub
        (0x24, 0, hi | 0x10000, 0x10000, 0),              // mul
        (0x34, 0, hi | 7, 0, 0),                          // div by zero
        (0x94, 0, hi | 7, 0, 7), // mod by zero: dividend, upper half cleared
        (0x34, 1, 0xffff_fff9, 2, 0xffff_fffd), // sdiv -7 / 2
        (0x94, 1, 0xffff_fff9, 2, 0xffff_ffff), // smod -7 % 2
        (0x34, 1, 0x8000_0000, 0xffff_ffff, 0x8000_0000), // sdiv MIN / -1
        (0x44, 0, hi | 1, 2, 3), // or
        (0x54, 0, hi | 3, 6, 2), // and
        (0xa4, 0, hi | 3, 6, 5), // xor
        (0x64, 0, 1, 33, 2),     // lsh amount masked to 5 bits
        (0x74, 0, hi | 0x8000_0000, 31, 1), // rsh
        (0xc4, 0, 0x8000_0000, 4, 0xf800_0000), // arsh
    ];
    for (code, off, a, b, want) in cases {
        assert_eq!(
            alu(code, off, a, b),
            want,
            "code {code:#x} off {off}: {a:#x} op {b:#x}"
        );
    }
    assert_eq!(
        r0(&[&ld64(0, hi | 1), &[x(0x84, 0, 0, 0, 0), EXIT]]),
        0xffff_ffff,
        "neg32"
    );
    assert_eq!(
        r0(&[&[x(0xb4, 0, 0, 0, -1), EXIT]]),
        0xffff_ffff,
        "mov32 imm"
    );
    assert_eq!(
        r0(&[&ld64(1, hi | 9), &[x(0xbc, 0, 1, 0, 0), EXIT]]),
        9,
        "mov32 reg"
    );
}

#[test]
fn byte_swaps_and_sign_extending_moves() {
    let v = 0x1122_3344_5566_7788u64;
    let cases: [(u8, i32, u64); 9] = [
        (0xd4, 16, 0x7788),
        (0xd4, 32, 0x5566_7788),
        (0xd4, 64, v),
        (0xdc, 16, 0x8877),
        (0xdc, 32, 0x8877_6655),
        (0xdc, 64, 0x8877_6655_4433_2211),
        (0xd7, 16, 0x8877), // bswap16 (v4)
        (0xd7, 32, 0x8877_6655),
        (0xd7, 64, 0x8877_6655_4433_2211),
    ];
    for (code, bits, want) in cases {
        assert_eq!(
            r0(&[&ld64(0, v), &[x(code, 0, 0, 0, bits), EXIT]]),
            want,
            "{code:#x}/{bits}"
        );
    }
    let movsx = |code, bits, src: u64| r0(&[&ld64(1, src), &[x(code, 0, 1, bits, 0), EXIT]]);
    assert_eq!(movsx(0xbf, 8, 0x80), 0xffff_ffff_ffff_ff80);
    assert_eq!(movsx(0xbf, 16, 0x7fff), 0x7fff);
    assert_eq!(movsx(0xbf, 32, 0x8000_0000), 0xffff_ffff_8000_0000);
    assert_eq!(movsx(0xbc, 16, 0x8000), 0xffff_8000);
}

#[test]
fn jumps_64_and_32() {
    let lo_neg1 = 0x0000_0001_ffff_ffffu64; // low half -1, 64-bit positive
    let m = u64::MAX;
    // (op, a, b, taken as JMP, taken as JMP32)
    let cases: [(u8, u64, u64, bool, bool); 16] = [
        (0x10, 1 << 32 | 5, 5, false, true),  // jeq
        (0x50, 1 << 32 | 5, 5, true, false),  // jne
        (0x20, 1 << 32, 1, true, false),      // jgt
        (0x30, 5, 5, true, true),             // jge
        (0xa0, 1, m, true, true),             // jlt
        (0xb0, 1 << 32, 0, false, true),      // jle
        (0x40, 0b1010, 0b0100, false, false), // jset
        (0x40, 1 << 33 | 2, 1 << 33, true, false),
        (0x60, m, 1, false, false), // jsgt: -1 > 1
        (0x60, lo_neg1, 1, true, false),
        (0x70, 1, 1, true, true), // jsge
        (0xc0, m, 1, true, true), // jslt
        (0xc0, lo_neg1, 1, false, true),
        (0xd0, 2, 2, true, true), // jsle
        (0xd0, 3, 2, false, false),
        (0x20, m, 1, true, true), // jgt unsigned
    ];
    for (op, a, b, t64, t32) in cases {
        for (class, want) in [(0x05u8, t64), (0x06, t32)] {
            let tail = [
                x(0xb7, 0, 0, 0, 0),
                x(class | op | 0x08, 1, 2, 1, 0),
                EXIT,
                x(0xb7, 0, 0, 0, 1),
                EXIT,
            ];
            let got = r0(&[&ld64(1, a), &ld64(2, b), &tail]) == 1;
            assert_eq!(got, want, "class {class:#x} op {op:#x}: {a:#x} vs {b:#x}");
            if let Ok(imm) = i32::try_from(b as i64) {
                let tail = [
                    x(0xb7, 0, 0, 0, 0),
                    x(class | op, 1, 0, 1, imm),
                    EXIT,
                    x(0xb7, 0, 0, 0, 1),
                    EXIT,
                ];
                assert_eq!(
                    r0(&[&ld64(1, a), &tail]) == 1,
                    want,
                    "imm form of {class:#x}/{op:#x}"
                );
            }
        }
    }
    // ja, and the v4 JMP32 ja with its offset in imm.
    assert_eq!(
        r0(&[&[
            x(0xb7, 0, 0, 0, 1),
            x(0x05, 0, 0, 1, 0),
            x(0xb7, 0, 0, 0, 2),
            EXIT
        ]]),
        1
    );
    assert_eq!(
        r0(&[&[
            x(0xb7, 0, 0, 0, 1),
            x(0x06, 0, 0, 0, 1),
            x(0xb7, 0, 0, 0, 2),
            EXIT
        ]]),
        1
    );
}

#[test]
fn bpf_to_bpf_calls_keep_callee_saved_registers() {
    let p = prog(&[&[
        x(0xb7, 6, 0, 0, 7),   // r6 = 7
        x(0x7b, 10, 6, -8, 0), // *(u64 *)(r10 - 8) = r6
        x(0x85, 0, 1, 0, 4),   // call pc+4
        x(0x79, 1, 10, -8, 0), // r1 = *(u64 *)(r10 - 8): the caller's frame is intact
        x(0x0f, 0, 6, 0, 0),   // r0 += r6
        x(0x0f, 0, 1, 0, 0),   // r0 += r1
        EXIT,
        x(0xb7, 6, 0, 0, 100), // callee: clobber r6
        x(0x7b, 10, 6, -8, 0), // and its own stack frame
        x(0xb7, 0, 0, 0, 1000),
        EXIT,
    ]]);
    assert_eq!(run_on(&p, &mut XdpBuff::new(&[0; 60])).unwrap().r0, 1014);
    let deep = prog(&[&[x(0x85, 0, 1, 0, -1), EXIT]]);
    let e = run_on(&deep, &mut XdpBuff::new(&[0; 60])).unwrap_err();
    assert!(e.to_string().contains("call frames"), "{e}");
}

#[test]
fn every_memory_width() {
    let v = 0x1122_3344_5566_7788u64;
    let load = |code: u8, off: i16| {
        r0(&[
            &ld64(1, v),
            &[
                x(0x7b, 10, 1, -8, 0),
                x(0x7a, 10, 0, -16, -1),
                x(code, 0, 10, off, 0),
                EXIT,
            ],
        ])
    };
    assert_eq!(load(0x71, -8), 0x88); // u8
    assert_eq!(load(0x69, -8), 0x7788); // u16
    assert_eq!(load(0x61, -4), 0x1122_3344); // u32
    assert_eq!(load(0x79, -8), v); // u64
    assert_eq!(load(0x91, -8), 0xffff_ffff_ffff_ff88); // s8
    assert_eq!(load(0x89, -8), 0x7788); // s16
    assert_eq!(load(0x81, -16), u64::MAX); // s32 of the ST DW -1
    assert_eq!(load(0x79, -16), u64::MAX); // ST DW imm is sign-extended
                                           // Narrow stores, register and immediate, into the packet.
    let p = prog(&[&[
        x(0x61, 2, 1, 0, 0),      // r2 = ctx->data
        x(0x72, 2, 0, 0, 0x11),   // *(u8 *)(r2 + 0) = 0x11
        x(0x6a, 2, 0, 1, 0x2233), // *(u16 *)(r2 + 1) = 0x2233
        x(0xb7, 3, 0, 0, 0x4455_6677),
        x(0x63, 2, 3, 3, 0),  // *(u32 *)(r2 + 3) = r3
        x(0x7b, 2, 3, 7, 0),  // *(u64 *)(r2 + 7) = r3
        x(0x73, 2, 3, 15, 0), // *(u8 *)(r2 + 15) = r3
        EXIT,
    ]]);
    let mut f = XdpBuff::new(&[0; 20]);
    run_on(&p, &mut f).unwrap();
    assert_eq!(
        f.data(),
        &[
            0x11, 0x33, 0x22, 0x77, 0x66, 0x55, 0x44, 0x77, 0x66, 0x55, 0x44, 0, 0, 0, 0, 0x77, 0,
            0, 0, 0
        ]
    );
}

#[test]
fn atomics_on_the_stack() {
    let run = |insns: &[[u8; 8]]| {
        let setup = [x(0x7a, 10, 0, -8, 10), x(0xb7, 1, 0, 0, 3)]; // *(u64 *)(r10 - 8) = 10; r1 = 3
        r0(&[
            &setup,
            insns,
            &[
                x(0x79, 2, 10, -8, 0),
                x(0x27, 0, 0, 0, 1000),
                x(0x0f, 0, 2, 0, 0),
                EXIT,
            ],
        ])
    };
    // r0 * 1000 + memory afterwards
    assert_eq!(
        run(&[x(0xdb, 10, 1, -8, 0x00), x(0xbf, 0, 1, 0, 0)]),
        3 * 1000 + 13
    ); // add
    assert_eq!(
        run(&[x(0xdb, 10, 1, -8, 0x01), x(0xbf, 0, 1, 0, 0)]),
        10 * 1000 + 13
    ); // fetch_add
    assert_eq!(
        run(&[x(0xdb, 10, 1, -8, 0x41), x(0xbf, 0, 1, 0, 0)]),
        10 * 1000 + 11
    ); // fetch_or
    assert_eq!(
        run(&[x(0xdb, 10, 1, -8, 0x51), x(0xbf, 0, 1, 0, 0)]),
        10 * 1000 + 2
    ); // fetch_and
    assert_eq!(
        run(&[x(0xdb, 10, 1, -8, 0xa1), x(0xbf, 0, 1, 0, 0)]),
        10 * 1000 + 9
    ); // fetch_xor
    assert_eq!(
        run(&[x(0xdb, 10, 1, -8, 0xe1), x(0xbf, 0, 1, 0, 0)]),
        10 * 1000 + 3
    ); // xchg
    assert_eq!(
        run(&[x(0xb7, 0, 0, 0, 10), x(0xdb, 10, 1, -8, 0xf1)]),
        10 * 1000 + 3
    ); // cmpxchg hit
    assert_eq!(
        run(&[x(0xb7, 0, 0, 0, 9), x(0xdb, 10, 1, -8, 0xf1)]),
        10 * 1000 + 10
    ); // cmpxchg miss
       // 32-bit: wraps within the word, fetch zero-extends.
    assert_eq!(
        run(&[
            x(0xb7, 1, 0, 0, -1),
            x(0xc3, 10, 1, -8, 0x01),
            x(0xbf, 0, 1, 0, 0)
        ]),
        10 * 1000 + 9
    );
}

fn fails(insns: &[[u8; 8]], frame_len: usize, why: &str) {
    let e = run_on(&prog(&[insns]), &mut XdpBuff::new(&vec![0; frame_len])).unwrap_err();
    assert!(
        matches!(e, BpfError::BadAccess { .. }) && e.to_string().contains(why),
        "{e} lacks {why:?}"
    );
}

#[test]
fn bounds_are_checked() {
    let data = x(0x61, 2, 1, 0, 0);
    let data_end = x(0x61, 3, 1, XDP_MD_DATA_END as i16, 0);
    fails(&[x(0x61, 0, 1, 24, 0), EXIT], 60, "unmapped");
    fails(&[x(0x71, 0, 1, 0, 0), EXIT], 60, "aligned __u32");
    fails(&[x(0x62, 1, 0, 0, 1), EXIT], 60, "only read field by field");
    fails(&[data_end, x(0x71, 0, 3, 0, 0), EXIT], 60, "past data_end");
    fails(&[data, x(0x61, 0, 2, 58, 0), EXIT], 60, "past data_end");
    fails(
        &[data, x(0x71, 0, 2, -1, 0), EXIT],
        60,
        "before data_meta/data",
    );
    fails(&[x(0x7a, 10, 0, -520, 0), EXIT], 60, "outside the stack");
    fails(&[x(0x7a, 10, 0, 0, 0), EXIT], 60, "outside the stack");
    fails(&[x(0x62, 10, 0, -6, 0), EXIT], 60, "misaligned");
    fails(&[x(0x79, 0, 0, 0, 0), EXIT], 60, "unmapped");
    fails(
        &[x(0xdb, 2, 0, 0, 0), data, x(0xdb, 2, 0, 1, 0), EXIT],
        60,
        "unmapped",
    );
    // The edges themselves are fine.
    let ok = prog(&[&[x(0x7a, 10, 0, -512, 1), data, x(0x71, 0, 2, 59, 0), EXIT]]);
    assert!(run_on(&ok, &mut XdpBuff::new(&[0; 60])).is_ok());
}

#[test]
fn budget_stops_runaway_loops_and_counts_instructions() {
    let spin = prog(&[&[x(0x05, 0, 0, -1, 0), EXIT]]);
    let e = Vm::with_budget(1000)
        .run_xdp(&spin, &mut XdpBuff::new(&[0; 60]), &mut BasicEnv::default())
        .unwrap_err();
    assert_eq!(
        e,
        BpfError::BudgetExhausted {
            pc: 0,
            budget: 1000
        }
    );
    let p = prog(&[&ld64(0, 3), &[x(0x07, 0, 0, 0, 1), EXIT]]);
    let run = run_on(&p, &mut XdpBuff::new(&[0; 60])).unwrap();
    assert_eq!((run.action, run.insns, run.helper_calls), (4, 3, 0));
}

#[test]
fn reused_vm_starts_each_run_with_a_clean_stack() {
    let p = prog(&[&[x(0x79, 0, 10, -8, 0), x(0x7a, 10, 0, -8, 5), EXIT]]);
    let mut vm = Vm::new();
    let mut env = BasicEnv::default();
    for _ in 0..2 {
        assert_eq!(
            vm.run_xdp(&p, &mut XdpBuff::new(&[0; 60]), &mut env)
                .unwrap()
                .r0,
            0
        );
    }
}

/// MAC swap and XDP_TX: 16 instructions executed on a 64-byte frame.
pub(crate) const MAC_SWAP: &str = "
    r2 = *(u32 *)(r1 + 4)
    r1 = *(u32 *)(r1 + 0)
    r3 = r1
    r3 += 14
    if r3 > r2 goto drop
    r2 = *(u32 *)(r1 + 0)
    r3 = *(u16 *)(r1 + 4)
    r4 = *(u32 *)(r1 + 6)
    r5 = *(u16 *)(r1 + 10)
    *(u32 *)(r1 + 0) = r4
    *(u16 *)(r1 + 4) = r5
    *(u32 *)(r1 + 6) = r2
    *(u16 *)(r1 + 10) = r3
    r0 = 3
    exit
drop:
    r0 = 1
    exit";

#[test]
fn mac_swap_tx() {
    let p = crate::bpf::assemble("swap", MAC_SWAP).unwrap();
    let mut f: Vec<u8> = (0..64).collect();
    let mut x = XdpBuff::new(&f);
    let run = run_on(&p, &mut x).unwrap();
    assert_eq!((run.action, run.insns), (3, 15));
    f[..12].rotate_left(6);
    assert_eq!(x.data(), &f[..]);
}

/// xdp_count.c as clang -O2 compiles it (see testdata), assembled.
const COUNTED: &str = "
    .map verdicts array 4 8 5
    r2 = *(u32 *)(r1 + 4)
    r1 = *(u32 *)(r1 + 0)
    r3 = 2
    *(u32 *)(r10 - 4) = r3
    r3 = r1
    r3 += 14
    if r2 >= r3 goto +2
    r1 = 1
    goto +6
    r2 = *(u8 *)(r1 + 12)
    r1 = *(u8 *)(r1 + 13)
    r1 <<= 8
    r1 |= r2
    if r1 != 1544 goto +2
    r1 = 3
    *(u32 *)(r10 - 4) = r1
    r2 = r10
    r2 += -4
    r1 = map[verdicts] ll
    call 1
    if r0 == 0 goto +2
    r1 = 1
    lock *(u64 *)(r0 + 0) += r1
    r0 = *(u32 *)(r10 - 4)
    exit";

#[test]
fn counted_program_counts_each_verdict_in_its_map_slot() {
    let mut maps = crate::bpf::Maps::new();
    let mut p = crate::bpf::assemble("counted", COUNTED).unwrap();
    p.bind_maps(&mut maps).unwrap();
    let mut env = crate::bpf::BasicEnv::new(maps);
    let mut arp = [0u8; 60];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let ip = {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f
    };
    // ARP: XDP_TX (3); IPv4: XDP_PASS (2); a 10-byte frame: XDP_DROP (1).
    for (frame, want) in [
        (&arp[..], 3u32),
        (&ip[..], 2),
        (&arp[..10], 1),
        (&arp[..], 3),
    ] {
        let mut x = XdpBuff::new(frame);
        let run = Vm::new().run_xdp(&p, &mut x, &mut env).unwrap();
        assert_eq!(run.action, want);
    }
    let m = env.maps.by_name("verdicts").unwrap();
    let counts: Vec<u64> = (0..5).map(|k| m.read_u64(k).unwrap_or(0)).collect();
    assert_eq!(counts, vec![0, 1, 1, 2, 0]);
}
