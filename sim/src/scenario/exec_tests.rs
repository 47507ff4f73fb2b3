//! Tests of `[exec]` and `pipeline = "exec"`.

use std::path::Path;

use super::super::{Pipeline, Scenario, ScenarioError};
use super::ExecFarSide;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(Path::new("scenarios/exec/x.toml"), text)
}

const HEAD: &str = "description = \"d\"\npipeline = \"exec\"\n";

/// The one-line error for `text`, which must name the file and contain `what`.
fn refused(text: &str, what: &str) {
    let msg = parse(text).unwrap_err().to_string();
    assert!(msg.starts_with("scenarios/exec/x.toml: "), "{msg}");
    assert!(msg.contains(what), "{what}: {msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn an_exec_scenario_names_its_program_and_reads_no_capture() {
    let s = parse(&format!(
        "{HEAD}profile = \"linux-6.1\"\n[exec]\nbuild = \"../c/p.c\"\nargs = [\"tap\"]\n"
    ))
    .unwrap();
    assert_eq!(s.pipeline, Pipeline::Exec);
    assert_eq!(s.name, "exec/x");
    assert_eq!(s.profile.name, "linux-6.1");
    let e = s.exec.as_ref().unwrap();
    assert_eq!(
        e.build.as_deref(),
        Some(Path::new("scenarios/exec/../c/p.c"))
    );
    assert_eq!(e.args, ["tap"]);
    assert_eq!(e.far_side, ExecFarSide::Stack);
    assert_eq!(e.far_addr, ["10.0.0.2/24", "fd00::2/64"]);
    assert_eq!(e.shown(), "p.c tap");
    assert!(s.input.as_os_str().is_empty());
}

#[test]
fn a_program_by_name_is_left_to_path_and_a_path_is_resolved() {
    let prog = |p: &str| {
        let s = parse(&format!(
            "{HEAD}[exec]\nprogram = \"{p}\"\nfar_side = \"sink\"\n"
        ))
        .unwrap();
        let e = s.exec.unwrap();
        assert_eq!(e.far_side, ExecFarSide::Sink);
        e.program.unwrap()
    };
    assert_eq!(prog("socat"), Path::new("socat"));
    assert_eq!(prog("./bin/x"), Path::new("scenarios/exec/./bin/x"));
    assert_eq!(prog("/usr/bin/socat"), Path::new("/usr/bin/socat"));
}

#[test]
fn bad_exec_scenarios_are_one_line_naming_the_key() {
    refused(HEAD, "needs an [exec] table");
    refused(
        &format!("{HEAD}[exec]\n"),
        "exec.program: an exec scenario needs build",
    );
    refused(
        &format!("{HEAD}[exec]\nbuild = \"a.c\"\nprogram = \"b\"\n"),
        "exec.build: give either",
    );
    refused(&format!("{HEAD}[exec]\nbuild = \"a.go\"\n"), "not a C file");
    refused(
        &format!("{HEAD}[exec]\nprogram = \"b\"\nfar_addr = []\n"),
        "exec.far_addr",
    );
    refused(
        &format!("{HEAD}[exec]\nprogram = \"b\"\nfar_side = \"tap\"\n"),
        "far_side",
    );
    refused(
        &format!("{HEAD}[exec]\nprogram = \"b\"\nprogam = 1\n"),
        "progam",
    );
    refused(
        &format!("{HEAD}[exec]\nprogram = \"b\"\n[device]\nkind = \"tun\"\n"),
        "[device] is not used by pipeline exec",
    );
    // Every other pipeline still needs its capture, and has no [exec].
    refused(
        "description = \"d\"\npipeline = \"tun-read\"\n",
        "missing field `input`",
    );
    refused(
        "description = \"d\"\ninput = \"a.pcap\"\npipeline = \"tap-write\"\n[exec]\nprogram = \"b\"\n",
        "[exec] is not used by pipeline tap-write",
    );
}
