//! Tests of asm.rs.

use super::*;

fn bytes(p: &Program) -> Vec<u8> {
    p.to_bytes()
}

#[test]
fn matches_clang_objdump() {
    // llvm-objdump -d of sim/src/bpf/testdata/xdp_count.c built by clang 14,
    // with the relocated "r1 = 0 ll" written as a map reference.
    let src = "
        r2 = *(u32 *)(r1 + 4)
        r1 = *(u32 *)(r1 + 0)
        r3 = 2
        *(u32 *)(r10 - 4) = r3
        r3 = r1
        r3 += 14
        if r2 >= r3 goto +2 <LBB0_2>
        r1 = 1
        goto +6 <LBB0_4>
    LBB0_2:
        r2 = *(u8 *)(r1 + 12)
        r1 = *(u8 *)(r1 + 13)
        r1 <<= 8
        r1 |= r2
        if r1 != 1544 goto LBB0_5
        r1 = 3
    LBB0_4: *(u32 *)(r10 - 4) = r1
    LBB0_5:
        r2 = r10
        r2 += -4
        r1 = map[verdicts] ll
        call 1
        if r0 == 0 goto +2
        r1 = 1
        lock *(u64 *)(r0 + 0) += r1
        r0 = *(u32 *)(r10 - 4)  // the verdict
        exit";
    let p = assemble("xdp_count", src).unwrap();
    let want: [[u8; 8]; 26] = [
        [0x61, 0x12, 0x04, 0, 0, 0, 0, 0],
        [0x61, 0x11, 0, 0, 0, 0, 0, 0],
        [0xb7, 0x03, 0, 0, 0x02, 0, 0, 0],
        [0x63, 0x3a, 0xfc, 0xff, 0, 0, 0, 0],
        [0xbf, 0x13, 0, 0, 0, 0, 0, 0],
        [0x07, 0x03, 0, 0, 0x0e, 0, 0, 0],
        [0x3d, 0x32, 0x02, 0, 0, 0, 0, 0],
        [0xb7, 0x01, 0, 0, 0x01, 0, 0, 0],
        [0x05, 0, 0x06, 0, 0, 0, 0, 0],
        [0x71, 0x12, 0x0c, 0, 0, 0, 0, 0],
        [0x71, 0x11, 0x0d, 0, 0, 0, 0, 0],
        [0x67, 0x01, 0, 0, 0x08, 0, 0, 0],
        [0x4f, 0x21, 0, 0, 0, 0, 0, 0],
        [0x55, 0x01, 0x02, 0, 0x08, 0x06, 0, 0],
        [0xb7, 0x01, 0, 0, 0x03, 0, 0, 0],
        [0x63, 0x1a, 0xfc, 0xff, 0, 0, 0, 0],
        [0xbf, 0xa2, 0, 0, 0, 0, 0, 0],
        [0x07, 0x02, 0, 0, 0xfc, 0xff, 0xff, 0xff],
        [0x18, 0x11, 0, 0, 0, 0, 0, 0], // src_reg 1 = BPF_PSEUDO_MAP_FD, slot 0
        [0, 0, 0, 0, 0, 0, 0, 0],
        [0x85, 0, 0, 0, 0x01, 0, 0, 0],
        [0x15, 0, 0x02, 0, 0, 0, 0, 0],
        [0xb7, 0x01, 0, 0, 0x01, 0, 0, 0],
        [0xdb, 0x10, 0, 0, 0, 0, 0, 0],
        [0x61, 0xa0, 0xfc, 0xff, 0, 0, 0, 0],
        [0x95, 0, 0, 0, 0, 0, 0, 0],
    ];
    assert_eq!(bytes(&p), want.concat());
    assert_eq!(p.map_refs(), &[MapRef::named("verdicts")]);
}

#[test]
fn encodes_the_rest_of_the_syntax() {
    let src = "
        .map tx devmap 4 4 8
        w1 = w2
        w1 s>>= 3
        r1 s/= r2
        r1 s%= -3
        r1 = -r1
        w1 = (s8)w2
        r1 = (s32)r2
        be16 r1
        r1 = le32 r1
        bswap64 r1
        r1 = *(s16 *)(r10 - 2)
        *(u8 *)(r10 - 1) = -1
        r1 = 0x1122334455667788 ll
        r1 = map_value[tx] + 8 ll
        r3 = atomic_fetch_add((u64 *)(r10 - 8), r3)
        w3 = xchg32_32(r10 - 8, w3)
        r0 = cmpxchg_64(r10 - 8, r0, r3)
        lock *(u32 *)(r10 - 8) ^= w3
        if w1 s<= -1 goto +0
        if r1 & r2 goto out
        call bpf_xdp_adjust_head
        call sub
        goto out
    sub: r0 = 2
        exit
    out: exit";
    let p = assemble("t", src).unwrap();
    let i = p.insns();
    let want = [
        Insn::new(0xbc, 1, 2, 0, 0),
        Insn::new(0xc4, 1, 0, 0, 3),
        Insn::new(0x3f, 1, 2, 1, 0),
        Insn::new(0x97, 1, 0, 1, -3),
        Insn::new(0x87, 1, 0, 0, 0),
        Insn::new(0xbc, 1, 2, 8, 0),
        Insn::new(0xbf, 1, 2, 32, 0),
        Insn::new(0xdc, 1, 0, 0, 16),
        Insn::new(0xd4, 1, 0, 0, 32),
        Insn::new(0xd7, 1, 0, 0, 64),
        Insn::new(0x89, 1, 10, -2, 0),
        Insn::new(0x72, 10, 0, -1, -1),
        Insn::new(0x18, 1, 0, 0, 0x5566_7788),
        Insn::new(0, 0, 0, 0, 0x1122_3344),
        Insn::new(0x18, 1, 2, 0, 0),
        Insn::new(0, 0, 0, 0, 8),
        Insn::new(0xdb, 10, 3, -8, 0x01),
        Insn::new(0xc3, 10, 3, -8, 0xe1),
        Insn::new(0xdb, 10, 3, -8, 0xf1),
        Insn::new(0xc3, 10, 3, -8, 0xa0),
        Insn::new(0xd6, 1, 0, 0, -1),
        Insn::new(0x4d, 1, 2, 5, 0),
        Insn::new(0x85, 0, 0, 0, 44),
        Insn::new(0x85, 0, 1, 0, 1),
        Insn::new(0x05, 0, 0, 2, 0),
        Insn::new(0xb7, 0, 0, 0, 2),
        Insn::new(0x95, 0, 0, 0, 0),
        Insn::new(0x95, 0, 0, 0, 0),
    ];
    for (n, (got, want)) in i.iter().zip(want.iter()).enumerate() {
        assert_eq!(got, want, "insn {n}");
    }
    assert_eq!(i.len(), want.len());
    assert_eq!(p.map_refs()[0], MapRef::defined("tx", MapSpec::devmap(8)));
}

#[test]
fn errors_name_the_line() {
    let cases = [
        ("r0 = 1\nr0 ?= 2\nexit", 2, "unexpected character"),
        ("r0 = 1\nr11 = 2\nexit", 2, "expected a register"),
        ("goto nowhere\nexit", 1, "unknown label"),
        ("call no_such_helper\nexit", 1, "unknown helper or label"),
        ("r0 = 1\nr0 = 0x1ffffffff\nexit", 2, "does not fit 32 bits"),
        ("r0 = *(u24 *)(r1 + 0)\nexit", 1, "unknown access size"),
        ("x:\nx:\nexit", 2, "defined twice"),
        ("\n\n.map m queue 4 4 4\nexit", 3, "unknown map type"),
        ("r0 = 1 2\nexit", 1, "unexpected 2"),
    ];
    for (src, line, msg) in cases {
        match assemble("t", src) {
            Err(BpfError::Asm { line: l, msg: m }) => {
                assert_eq!(l, line, "{src:?}: {m}");
                assert!(m.contains(msg), "{src:?}: {m:?} lacks {msg:?}");
            }
            other => panic!("{src:?}: {other:?}"),
        }
    }
    // Structural errors found by the decoder still surface as assembler errors.
    assert!(
        matches!(assemble("t", "r0 = 1"), Err(BpfError::Asm { msg, .. }) if msg.contains("last insn"))
    );
}
