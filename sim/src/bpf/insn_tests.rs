//! Tests of insn.rs.

use super::*;

fn ins(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}
const EXIT: Insn = Insn {
    code: BPF_JMP | BPF_EXIT,
    dst: 0,
    src: 0,
    off: 0,
    imm: 0,
};

#[test]
fn bytes_round_trip() {
    // llvm-objdump: "61 12 04 00 00 00 00 00  r2 = *(u32 *)(r1 + 4)"
    let i = Insn::from_bytes([0x61, 0x12, 0x04, 0, 0, 0, 0, 0]);
    assert_eq!(i, ins(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 4, 0));
    assert_eq!(i.to_bytes(), [0x61, 0x12, 0x04, 0, 0, 0, 0, 0]);
    // "07 02 00 00 fc ff ff ff  r2 += -4"
    let j = Insn::from_bytes([0x07, 0x02, 0, 0, 0xfc, 0xff, 0xff, 0xff]);
    assert_eq!((j.class(), j.dst, j.imm), (BPF_ALU64, 2, -4));
    assert!(parse_insns(&[0; 12]).is_err());
    assert_eq!(parse_insns(&insns_to_bytes(&[i, j])).unwrap(), vec![i, j]);
}

#[test]
fn decodes_every_class() {
    let p = [
        ins(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, -1),
        ins(BPF_ALU | BPF_ADD | BPF_X, 0, 1, 0, 0),
        ins(BPF_ALU64 | BPF_DIV | BPF_X, 0, 1, 1, 0),
        ins(BPF_ALU64 | BPF_MOV | BPF_X, 0, 1, 16, 0),
        ins(BPF_ALU | BPF_END | BPF_TO_BE, 0, 0, 0, 16),
        ins(BPF_ALU64 | BPF_END, 0, 0, 0, 64),
        ins(BPF_ALU64 | BPF_NEG, 0, 0, 0, 0),
        ins(BPF_LD | BPF_IMM | BPF_DW, 3, 0, 0, 1),
        ins(0, 0, 0, 0, 2),
        ins(BPF_LDX | BPF_MEMSX | BPF_H, 2, 10, -2, 0),
        ins(BPF_ST | BPF_MEM | BPF_B, 10, 0, -1, 7),
        ins(
            BPF_STX | BPF_ATOMIC | BPF_DW,
            10,
            1,
            -8,
            i32::from(BPF_ADD) | BPF_FETCH,
        ),
        ins(BPF_JMP32 | BPF_JSLT | BPF_K, 0, 0, 1, 5),
        ins(BPF_JMP | BPF_CALL, 0, 0, 0, 5),
        EXIT,
    ];
    let ops = decode(&p, 0).unwrap();
    assert_eq!(
        ops[0],
        Op::Alu64 {
            op: AluOp::Mov,
            dst: 0,
            src: Src::Imm(-1)
        }
    );
    assert_eq!(
        ops[1],
        Op::Alu32 {
            op: AluOp::Add,
            dst: 0,
            src: Src::Reg(1)
        }
    );
    assert_eq!(
        ops[2],
        Op::Alu64 {
            op: AluOp::SDiv,
            dst: 0,
            src: Src::Reg(1)
        }
    );
    assert_eq!(
        ops[3],
        Op::MovSx {
            wide: true,
            dst: 0,
            src: 1,
            bits: 16
        }
    );
    assert_eq!(
        ops[4],
        Op::End {
            order: ByteOrder::Be,
            dst: 0,
            bits: 16
        }
    );
    assert_eq!(
        ops[5],
        Op::End {
            order: ByteOrder::Swap,
            dst: 0,
            bits: 64
        }
    );
    assert_eq!(
        ops[7],
        Op::LdImm64 {
            dst: 3,
            imm: 0x2_0000_0001
        }
    );
    assert_eq!(ops[8], Op::Pad);
    assert_eq!(
        ops[9],
        Op::Ldx {
            size: MemSize::H,
            sx: true,
            dst: 2,
            src: 10,
            off: -2
        }
    );
    assert_eq!(
        ops[11],
        Op::Atomic {
            size: MemSize::DW,
            op: AtomicOp::Add,
            fetch: true,
            dst: 10,
            src: 1,
            off: -8
        }
    );
    assert_eq!(
        ops[12],
        Op::Jmp {
            cond: Cond::Slt,
            wide: false,
            dst: 0,
            src: Src::Imm(5),
            target: 14
        }
    );
    assert_eq!(ops[13], Op::Call { helper: 5 });
}

fn refused(p: &[Insn], why: &str) {
    match decode(p, 1) {
        Err(BpfError::Invalid { reason, .. }) => {
            assert!(reason.contains(why), "{reason:?} lacks {why:?}")
        }
        other => panic!("expected refusal ({why}), got {other:?}"),
    }
}

#[test]
fn refuses_what_the_verifier_refuses() {
    refused(&[ins(0xff, 0, 0, 0, 0), EXIT], "unknown");
    refused(
        &[ins(BPF_ALU64 | BPF_MOV | BPF_K, 11, 0, 0, 0), EXIT],
        "invalid register",
    );
    refused(
        &[ins(BPF_ALU64 | BPF_MOV | BPF_K, 10, 0, 0, 0), EXIT],
        "read-only",
    );
    refused(
        &[ins(BPF_ALU64 | BPF_DIV | BPF_K, 0, 0, 0, 0), EXIT],
        "division by zero",
    );
    refused(
        &[ins(BPF_ALU | BPF_LSH | BPF_K, 0, 0, 0, 32), EXIT],
        "invalid shift",
    );
    refused(&[ins(BPF_JMP | BPF_JA, 0, 0, 5, 0), EXIT], "out of range");
    refused(
        &[
            ins(BPF_JMP | BPF_JA, 0, 0, 1, 0),
            ins(BPF_LD | BPF_DW, 0, 0, 0, 0),
            ins(0, 0, 0, 0, 0),
            EXIT,
        ],
        "into the middle of ld_imm64",
    );
    refused(&[ins(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0)], "last insn");
    refused(
        &[ins(BPF_LD | BPF_DW, 1, 1, 0, 3), ins(0, 0, 0, 0, 0), EXIT],
        "map slot 3",
    );
    refused(
        &[ins(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 0), EXIT],
        "BPF_ABS",
    );
    refused(
        &[ins(BPF_JMP | BPF_CALL, 0, 0, 0, 9999), EXIT],
        "helper #9999",
    );
    refused(
        &[ins(BPF_STX | BPF_ATOMIC | BPF_B, 10, 1, -1, 0), EXIT],
        "unknown store",
    );
    refused(
        &[ins(BPF_ALU | BPF_END | BPF_TO_LE, 0, 0, 0, 8), EXIT],
        "byte swap of 8",
    );
    refused(&[], "empty");
}

#[test]
fn program_reports_unbound_maps() {
    let p = Program::new(
        "t",
        vec![
            ins(BPF_LD | BPF_DW, 1, BPF_PSEUDO_MAP_FD, 0, 0),
            ins(0, 0, 0, 0, 0),
            EXIT,
        ],
        vec![MapRef::named("counters")],
    )
    .unwrap();
    assert_eq!(p.len(), 3);
    assert_eq!(
        p.bound_map(0),
        Err(BpfError::Unbound {
            map: "counters".into()
        })
    );
    assert_eq!(p.to_bytes().len(), 24);
}
