//! The load-time check (`sim::bpf::verifier`) against the kernel's verifier: every
//! program in scenarios/xdp (objects and assembly) is accepted by both, and every
//! program in scenarios/xdp/rejected is refused by both, at the same instruction and
//! with the kernel's own message line.
//!
//! Root only: without it the tests print `skipped: <reason>` (in CI, a failure).

mod common;

use std::path::{Path, PathBuf};

use sim::bpf::{assemble, verifier, BpfError, ElfObject, Maps, Program};
use skbsim_kernel::bpf::LoadedXdp;
use skbsim_kernel::Netns;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let d = repo().join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no *.{ext} in {}", d.display());
    v
}

/// What the simulator says about the program in section xdp of `obj`: Ok, or the
/// refusing instruction and reason (from the decoder or the verifier).
fn sim_verdict(obj: &ElfObject) -> Result<Program, (usize, String)> {
    let mut prog = match obj.program("xdp") {
        Ok(p) => p,
        Err(BpfError::Elf { msg, .. }) => {
            // "program NAME: invalid program at insn N: REASON"
            let rest = msg
                .split("invalid program at insn ")
                .nth(1)
                .unwrap_or_else(|| panic!("{msg}"));
            let (pc, reason) = rest.split_once(": ").unwrap_or_else(|| panic!("{msg}"));
            return Err((pc.parse().expect("insn number"), reason.to_string()));
        }
        Err(e) => panic!("{}: {e}", obj.file),
    };
    let mut maps = Maps::new();
    prog.bind_maps(&mut maps).expect("maps bind");
    match verifier::verify_bound(&prog, &maps) {
        Ok(_) => Ok(prog),
        Err(BpfError::Rejected { pc, reason }) => Err((pc, reason)),
        Err(e) => panic!("{}: {e}", obj.file),
    }
}

/// The kernel's refusal: the log line equal to `reason` and the instruction the log
/// printed last before it (`N: (op) ...`), if any and if the message does not name its
/// instruction itself ("infinite loop detected at insn 0" follows the jump at insn 1).
fn kernel_insn_before(log: &str, reason: &str) -> Result<Option<usize>, String> {
    let lines: Vec<&str> = log.lines().map(str::trim).collect();
    let at = lines
        .iter()
        .position(|l| *l == reason)
        .ok_or_else(|| format!("the kernel's log has no line {reason:?}:\n{log}"))?;
    if reason.contains("insn ") {
        return Ok(None);
    }
    Ok(lines[..at].iter().rev().find_map(|l| {
        let (n, rest) = l.split_once(": (")?;
        let _ = rest;
        n.parse().ok()
    }))
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn every_scenario_program_is_accepted_by_both() {
    skbsim_kernel::require_privileges();
    let mut progs = Vec::new();
    for p in files("scenarios/xdp", "o") {
        let bytes = std::fs::read(&p).expect("read object");
        let obj = ElfObject::parse(&p.display().to_string(), &bytes).expect("object parses");
        let prog = sim_verdict(&obj)
            .unwrap_or_else(|(pc, r)| panic!("{}: sim refuses insn {pc}: {r}", p.display()));
        progs.push((p, prog));
    }
    for p in files("scenarios/xdp", "s") {
        let text = std::fs::read_to_string(&p).expect("read asm");
        let mut prog = assemble("asm", &text).expect("assembles");
        let mut maps = Maps::new();
        prog.bind_maps(&mut maps).expect("maps bind");
        if let Err(e) = verifier::verify_bound(&prog, &maps) {
            panic!("{}: sim refuses: {e}", p.display());
        }
        progs.push((p, prog));
    }
    Netns::run(|_| {
        for (p, prog) in &progs {
            if let Err(e) = LoadedXdp::load(prog) {
                panic!(
                    "{}: the kernel refuses what the simulator accepts: {e}",
                    p.display()
                );
            }
        }
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn every_rejected_program_is_refused_by_both_at_the_same_insn() {
    skbsim_kernel::require_privileges();
    for p in files("scenarios/xdp/rejected", "o") {
        let bytes = std::fs::read(&p).expect("read object");
        let obj = ElfObject::parse(&p.display().to_string(), &bytes).expect("object parses");
        let (pc, reason) = match sim_verdict(&obj) {
            Ok(_) => panic!("{}: the simulator accepts it", p.display()),
            Err(v) => v,
        };
        let raw = &obj
            .programs
            .iter()
            .find(|q| q.section == "xdp")
            .expect("section xdp")
            .insns;
        let load = Netns::run(|_| match obj.program("xdp") {
            Ok(mut prog) => {
                prog.bind_maps(&mut Maps::new()).expect("maps bind");
                LoadedXdp::load(&prog).map(|_| ())
            }
            Err(_) => LoadedXdp::load_insns("rejected", "GPL", raw).map(|_| ()),
        });
        let log = match load {
            Ok(()) => panic!(
                "{}: the kernel accepts it; the simulator refuses insn {pc}: {reason}",
                p.display()
            ),
            Err(e) => e.to_string(),
        };
        let kinsn =
            kernel_insn_before(&log, &reason).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if let Some(k) = kinsn {
            assert_eq!(
                k,
                pc,
                "{}: kernel refuses at insn {k}, simulator at {pc}: {reason}\n{log}",
                p.display()
            );
        }
        eprintln!("{}: both refuse insn {pc}: {reason}", p.display());
    }
}

/// Hand-written programs on both sides of each modelled rule (the cases of
/// sim/src/bpf/verifier/tests.rs): the kernel must accept exactly those the simulator
/// accepts, and refuse the others at the same instruction with the same message.
#[test]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn hand_written_edge_cases_agree_with_the_kernel() {
    skbsim_kernel::require_privileges();
    const PKT: &str = "r2 = *(u32 *)(r1 + 0)\nr3 = *(u32 *)(r1 + 4)\nr4 = r2\nr4 += 14\n";
    let lookup = |map: &str, key: i32| {
        format!(
            ".map m {map} 4 8 4\n*(u32 *)(r10 - 8) = {key}\nr2 = r10\nr2 += -8\nr1 = map[m] ll\n\
             call bpf_map_lookup_elem\nr0 = *(u64 *)(r0 + 0)\nexit"
        )
    };
    let cases = [
        format!("{PKT}if r4 > r3 goto out\nr0 = *(u8 *)(r2 + 13)\nout:\nr0 = 2\nexit"),
        format!("{PKT}if r4 > r3 goto out\nr0 = *(u8 *)(r2 + 14)\nout:\nr0 = 2\nexit"),
        format!("{PKT}if r4 < r3 goto ok\nr0 = 2\nexit\nok:\nr0 = *(u8 *)(r2 + 14)\nexit"),
        format!("{PKT}if r4 < r3 goto ok\nr0 = 2\nexit\nok:\nr0 = *(u8 *)(r2 + 15)\nexit"),
        format!("{PKT}if r3 >= r4 goto ok\nr0 = 2\nexit\nok:\nr0 = *(u16 *)(r4 - 2)\nexit"),
        format!("{PKT}r6 = r2\nif r4 > r3 goto out\nr2 = 4\ncall bpf_xdp_adjust_head\nr0 = *(u8 *)(r6 + 0)\nout:\nr0 = 2\nexit"),
        format!("{PKT}if r4 > r3 goto out\n*(u64 *)(r10 - 8) = r2\nr5 = *(u64 *)(r10 - 8)\nr0 = *(u8 *)(r5 + 13)\nout:\nr0 = 2\nexit"),
        "r6 = *(u32 *)(r1 + 0)\ncall bpf_get_prandom_u32\nr6 += r0\nr0 = 2\nexit".to_string(),
        "r0 = 0\ncall bpf_ktime_get_ns\nr0 = r1\nexit".to_string(),
        "r0 = *(u64 *)(r10 - 512)\nexit".to_string(),
        "r0 = *(u64 *)(r10 - 520)\nexit".to_string(),
        "r0 = 0\n*(u32 *)(r10 - 6) = r0\nexit".to_string(),
        "r0 = 0\n*(u32 *)(r1 + 0) = r0\nexit".to_string(),
        "r0 = *(u32 *)(r1 + 20)\nexit".to_string(),
        "r0 = *(u32 *)(r1 + 4)\nr0 += 1\nexit".to_string(),
        "r0 = 2\nexit\nr0 = 1\nexit".to_string(),
        "l:\nr0 = 0\ngoto l".to_string(),
        "r1 = 0\nl:\nr1 += 1\nif r1 < 10 goto l\nr0 = 2\nexit".to_string(),
        "exit".to_string(),
        lookup("hash", 0),
        lookup("array", 3),
        lookup("array", 4),
    ];
    let (mut accepted, mut refused) = (0, 0);
    for src in &cases {
        let mut prog = assemble("edge", src).expect("assembles");
        let mut maps = Maps::new();
        prog.bind_maps(&mut maps).expect("maps bind");
        let sim = verifier::verify_bound(&prog, &maps);
        let kernel = Netns::run(|_| LoadedXdp::load(&prog).map(|_| ()));
        match (sim, kernel) {
            (Ok(_), Ok(())) => accepted += 1,
            (Err(BpfError::Rejected { pc, reason }), Err(e)) => {
                let log = e.to_string();
                let k = kernel_insn_before(&log, &reason).unwrap_or_else(|e| panic!("{src}\n{e}"));
                if let Some(k) = k {
                    assert_eq!(
                        k, pc,
                        "{src}\nkernel insn {k}, simulator {pc}: {reason}\n{log}"
                    );
                }
                refused += 1;
            }
            (sim, kernel) => panic!("{src}\nsimulator: {sim:?}\nkernel: {kernel:?}"),
        }
    }
    assert_eq!((accepted, refused), (7, 15), "accepted, refused");
}
