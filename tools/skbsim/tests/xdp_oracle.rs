//! The kernel as the oracle of skbsim's eBPF VM: for every program in scenarios/xdp/*.o
//! (one test each) and every input frame of the tap-write scenarios' pcaps, the very
//! instruction bytes the simulator runs (skbsim's ELF loader, map references patched
//! with kernel map fds) are run once by `BPF_PROG_TEST_RUN` and once by
//! `sim::bpf::Vm::run_xdp`, and must give the same return value and the same output
//! bytes. Maps are fresh per program and compared after the last frame.
//!
//! The simulator's buffer mirrors the test run's: `XdpBuff::new` puts the frame behind
//! `XDP_PACKET_HEADROOM` (256) bytes in a 4096-byte buffer with the 320-byte shared-info
//! tailroom, metadata supported, and `ingress_ifindex` is the namespace's loopback (1),
//! whose rx queue the test run uses when no context is given. The output compared is
//! `data_meta .. data_end`, what `bpf_test_finish` copies out.
//!
//! Programs with a devmap run the frames twice: with the devmap empty (a
//! `bpf_redirect_map` miss returns its flags argument) and with key 0 = loopback's
//! ifindex (XDP_REDIRECT; the test run does not need the target to transmit).
//!
//! Root only: without it the tests print `skipped: <reason>`; in CI (`CI` set, root) that
//! is a failure instead.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use rstest::rstest;
use sim::bpf::{load_elf_file, BasicEnv, Maps, Program, Vm, XdpBuff};
use sim::pcap::PcapReader;
use sim::pipeline::tap_write::fill_devmaps;
use sim::scenario::Scenario;
use skbsim_kernel::bpf::{LoadedXdp, MapEntries};
use skbsim_kernel::{Errno, Netns};

mod common;
use common::repo;

/// The namespace's loopback device, the test run's default rx queue.
const LO_IFINDEX: u32 = 1;
/// ETH_HLEN: BPF_PROG_TEST_RUN refuses shorter XDP input with EINVAL.
const MIN_FRAME: usize = 14;
/// The largest linear test-run packet: PAGE_SIZE - headroom - shared info.
const MAX_LINEAR: usize = 4096 - 256 - 320;

/// One input frame: where it comes from, and its bytes.
struct InputFrame {
    label: String,
    data: Vec<u8>,
}

/// Every frame of every pcap the tap-write scenarios replay, each pcap once.
fn tap_write_frames() -> Vec<InputFrame> {
    let dir = repo().join("scenarios/tap-write");
    let mut pcaps = BTreeSet::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.extension().is_some_and(|x| x == "toml") {
            let s = Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
            pcaps.insert(s.input.canonicalize().unwrap_or(s.input));
        }
    }
    assert!(
        !pcaps.is_empty(),
        "no tap-write scenarios in {}",
        dir.display()
    );
    let mut out = Vec::new();
    for p in pcaps {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let reader = PcapReader::open(&p).unwrap_or_else(|e| panic!("{e}"));
        for f in reader {
            let f = f.unwrap_or_else(|e| panic!("{e}"));
            out.push(InputFrame {
                label: format!("{name} frame {}", f.index),
                data: f.data.to_vec(),
            });
        }
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The first differing byte of two outputs, as a readable field.
fn bytes_mismatch(sim: &[u8], real: &[u8]) -> Option<String> {
    if sim == real {
        return None;
    }
    Some(
        match sim.iter().zip(real.iter()).position(|(a, b)| a != b) {
            Some(o) => format!(
                "field `bytes[{o}]`: sim {:#04x}, kernel {:#04x} (sim {} bytes, kernel {} bytes)",
                sim[o],
                real[o],
                sim.len(),
                real.len()
            ),
            None => format!(
                "field `length`: sim {}, kernel {}\n  sim:    {}\n  kernel: {}",
                sim.len(),
                real.len(),
                hex(sim),
                hex(real)
            ),
        },
    )
}

/// A non-devmap map's contents, for comparing sim and kernel after the frames.
fn map_contents(maps: &Maps) -> Vec<(String, MapEntries)> {
    maps.iter()
        .filter(|m| !m.spec().map_type.is_devmap())
        .map(|m| (m.name().to_string(), m.dump()))
        .collect()
}

/// What one pass over the frames found.
struct PassResult {
    /// Frames both ran.
    compared: usize,
    /// How often the kernel returned each verdict.
    verdicts: BTreeMap<u32, usize>,
    mismatches: Vec<String>,
}

/// Run every frame through both.
fn compare_pass(
    file: &str,
    pass: &str,
    prog: &Program,
    devmap_target: Option<u32>,
    frames: &[InputFrame],
) -> Result<PassResult, skbsim_kernel::KernelError> {
    let mut maps = Maps::new();
    let mut prog = prog.clone();
    prog.bind_maps(&mut maps)
        .unwrap_or_else(|e| panic!("{file}: bind maps: {e}"));
    let kernel = LoadedXdp::load(&prog)?;
    if let Some(ifindex) = devmap_target {
        fill_devmaps(&mut maps, ifindex).unwrap_or_else(|e| panic!("{file}: {e}"));
        kernel.fill_devmaps(ifindex)?;
    }
    let mut env = BasicEnv::new(maps);
    let mut vm = Vm::new();
    let mut bad = Vec::new();
    let mut compared = 0;
    let mut verdicts = BTreeMap::new();
    for (i, f) in frames.iter().enumerate() {
        let at = format!(
            "{file} ({pass}), frame {i} ({}, {} bytes)",
            f.label,
            f.data.len()
        );
        let real = kernel.test_run(&f.data);
        if f.data.len() < MIN_FRAME || f.data.len() > MAX_LINEAR {
            // Not a single linear XDP buffer in the kernel: it must refuse, and the
            // simulator has nothing to be compared with.
            match real {
                Err(e) if e.is_errno(Errno::EINVAL) => continue,
                other => bad.push(format!(
                    "{at}: expected EINVAL from the kernel for this length, got {other:?}"
                )),
            }
            continue;
        }
        let real = real?;
        *verdicts.entry(real.retval).or_insert(0) += 1;
        let mut buff = XdpBuff::new(&f.data);
        buff.ingress_ifindex = LO_IFINDEX;
        let run = match vm.run_xdp(&prog, &mut buff, &mut env) {
            Ok(r) => r,
            Err(e) => {
                bad.push(format!(
                    "{at}: field `retval`: the simulator failed ({e}), kernel {}",
                    real.retval
                ));
                continue;
            }
        };
        compared += 1;
        if run.action != real.retval {
            bad.push(format!(
                "{at}: field `retval`: sim {}, kernel {}",
                run.action, real.retval
            ));
            continue;
        }
        let mut out = buff.meta().to_vec();
        out.extend_from_slice(buff.data());
        if let Some(m) = bytes_mismatch(&out, &real.data) {
            bad.push(format!("{at}: {m}"));
        }
    }
    let sim_maps = map_contents(&env.maps);
    let real_maps = map_contents(&kernel.sim_maps()?);
    if sim_maps != real_maps {
        for ((name, s), (_, r)) in sim_maps.iter().zip(real_maps.iter()) {
            for ((k, sv), (_, rv)) in s.iter().zip(r.iter()) {
                if sv != rv {
                    bad.push(format!(
                        "{file} ({pass}), after all frames: field `map {name}[{}]`: sim {}, kernel {}",
                        hex(k),
                        hex(sv),
                        hex(rv)
                    ));
                }
            }
            if s.len() != r.len() {
                bad.push(format!(
                    "{file} ({pass}), after all frames: field `map {name} entries`: sim {}, kernel {}",
                    s.len(),
                    r.len()
                ));
            }
        }
        if sim_maps.len() != real_maps.len() {
            bad.push(format!(
                "{file} ({pass}): maps: sim {:?}, kernel {:?}",
                sim_maps.iter().map(|m| &m.0).collect::<Vec<_>>(),
                real_maps.iter().map(|m| &m.0).collect::<Vec<_>>()
            ));
        }
    }
    Ok(PassResult {
        compared,
        verdicts,
        mismatches: bad,
    })
}

#[rstest]
#[ignore = "real kernel: needs root and /dev/net/tun; ci/test.sh runs it as root with --include-ignored"]
fn kernel_and_vm_agree(#[files("../../scenarios/xdp/*.o")] path: PathBuf) {
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    skbsim_kernel::require_privileges();
    let prog = load_elf_file(&path, "xdp").unwrap_or_else(|e| panic!("{e}"));
    let frames = tap_write_frames();
    let has_devmap = prog
        .map_refs()
        .iter()
        .any(|r| r.spec.as_ref().is_some_and(|s| s.map_type.is_devmap()));
    let mut passes = vec![("maps fresh", None)];
    if has_devmap {
        passes = vec![
            ("devmap empty", None),
            ("devmap key 0 = lo", Some(LO_IFINDEX)),
        ];
    }
    let result = Netns::run(|_ns| {
        let mut all = Vec::new();
        for (pass, target) in &passes {
            all.push((*pass, compare_pass(&file, pass, &prog, *target, &frames)?));
        }
        Ok(all)
    })
    .unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut bad = Vec::new();
    for (pass, r) in result {
        eprintln!(
            "{file} ({pass}): {} of {} frames compared, kernel verdicts {:?}, {} mismatches",
            r.compared,
            frames.len(),
            r.verdicts,
            r.mismatches.len()
        );
        assert!(r.compared > 0, "{file} ({pass}): no frame was compared");
        bad.extend(r.mismatches);
    }
    assert!(
        bad.is_empty(),
        "{file}: the kernel and skbsim's VM disagree:\n{}",
        bad.join("\n")
    );
}
