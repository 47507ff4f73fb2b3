//! A scenario whose XDP program the kernel's verifier refuses fails at load, before any
//! frame is replayed: one line naming the program file, its section, the instruction
//! and the verifier's reason, exit 2 (issue 20 item 9). Before the load-time check,
//! scenarios/xdp/rejected/pkt_unchecked.o replayed every frame of xdp-mixed.pcap.

use std::process::Command;

mod common;
use common::repo;

#[test]
fn a_program_the_verifier_refuses_fails_the_run_at_load() {
    let root = std::env::temp_dir().join(format!("skbsim-verifier-load-{}", std::process::id()));
    let dir = root.join("scenarios/tap-write");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let prog = repo().join("scenarios/xdp/rejected/pkt_unchecked.o");
    let pcap = repo().join("scenarios/pcaps/xdp-mixed.pcap");
    let toml = dir.join("bad.toml");
    std::fs::write(
        &toml,
        format!(
            "description = \"an unchecked packet read\"\ninput = {:?}\npipeline = \"tap-write\"\n\
             [device]\nno_pi = true\n[xdp]\nprogram = {:?}\nmode = \"native\"\n",
            pcap.display().to_string(),
            prog.display().to_string()
        ),
    )
    .expect("write scenario");
    for cmd in ["run", "bless"] {
        let out = Command::new(env!("CARGO_BIN_EXE_skbsim"))
            .args([cmd, &toml.display().to_string()])
            .output()
            .expect("runs skbsim");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{cmd}: {stderr}");
        let want = format!(
            "{}: section xdp: insn 1: invalid access to packet, off=12 size=1, R1(id=0,off=12,r=0)",
            prog.display()
        );
        assert!(stderr.trim_end().ends_with(&want), "{cmd}: {stderr}");
        assert!(stderr.starts_with("skbsim: "), "{cmd}: {stderr}");
        assert!(
            !stdout.contains("frames"),
            "{cmd}: a frame was replayed: {stdout}"
        );
    }
    assert!(
        !root.join("golden").exists(),
        "bless wrote a golden for a refused program"
    );
    std::fs::remove_dir_all(&root).ok();
}
