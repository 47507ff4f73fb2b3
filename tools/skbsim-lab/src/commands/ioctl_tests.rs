//! `lab ioctl`: the log's JSON round trip, and the logs the lab's Debian 6.1 and 6.12
//! guests recorded (tests/data/tun-ioctl-*.jsonl, from `skbsim lab ioctl --kernel 6.1 --out
//! ...`) replayed on the model under their profiles.

use sim::tun::ioctl::{BpfFd, IoctlAnswer, IoctlArg, SockFilter};
use skbsim_kernel::tun_ioctl_table::{cmd_name, replay, Step};

use super::conform::guest_profile;
use super::ioctl::{header, per_ioctl};
use super::ioctl_log::{parse_steps, step_json};

fn io(arg: IoctlArg, kernel: Result<IoctlAnswer, i32>) -> Step {
    Step::Io {
        file: 0,
        cmd: 0x4004_54ca,
        arg,
        what: "w".into(),
        kernel,
        user: None,
    }
}

#[test]
fn every_step_survives_its_json_line() {
    let mut name = [0u8; 16];
    name[..3].copy_from_slice(b"a\xa0b");
    let steps = vec![
        Step::Open,
        Step::Close(3),
        Step::SetUp("tap0".into()),
        io(IoctlArg::Value(u64::MAX), Ok(IoctlAnswer::Done)),
        io(IoctlArg::Int(i32::MIN), Err(77)),
        io(
            IoctlArg::Ifreq {
                name,
                flags: 0x8002,
            },
            Ok(IoctlAnswer::Ifreq {
                name: b"a\xa0b".to_vec(),
                flags: 0x1002,
            }),
        ),
        io(
            IoctlArg::TxFilter {
                flags: 1,
                addrs: vec![[1, 0, 0x5e, 0, 0, 1]],
            },
            Ok(IoctlAnswer::Returned(1)),
        ),
        io(
            IoctlArg::Fprog {
                len: 2,
                filter: 0x1000,
                insns: vec![SockFilter {
                    code: 6,
                    jt: 1,
                    jf: 2,
                    k: u32::MAX,
                }],
            },
            Ok(IoctlAnswer::Fprog {
                len: 2,
                filter: 0x1000,
            }),
        ),
        io(IoctlArg::BpfFd(BpfFd::NotProg), Ok(IoctlAnswer::NetnsFd)),
        io(
            IoctlArg::BpfFd(BpfFd::Prog {
                socket_filter: true,
            }),
            Ok(IoctlAnswer::HwAddr {
                family: 1,
                data: [2, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9],
            }),
        ),
        io(
            IoctlArg::Hwaddr {
                family: 0xfffe,
                data: [0, 0xfe, 0x98, 0x94, 0xd2, 0x43, 0, 0, 0, 0, 0, 0, 0, 1],
            },
            Ok(IoctlAnswer::Done),
        ),
        io(IoctlArg::Out, Ok(IoctlAnswer::Int(-5))),
        io(IoctlArg::Fault, Err(14)),
        Step::Io {
            file: 2,
            cmd: 0x8004_54d2,
            arg: IoctlArg::Out,
            what: "as a user".into(),
            kernel: Err(1),
            user: Some((1000, 1001)),
        },
    ];
    let text: String = std::iter::once("{\"release\":\"6.1.0-44-cloud-amd64\"}".to_string())
        .chain(steps.iter().map(|s| step_json(s).to_string()))
        .map(|l| l + "\n")
        .collect();
    assert_eq!(parse_steps(&text).unwrap(), steps);
}

#[test]
fn a_line_that_is_no_step_is_named() {
    let text = "{\"open\":true}\n{\"file\":0,\"cmd\":1}\n";
    assert_eq!(
        parse_steps(text).unwrap_err(),
        "line 2: not a tun ioctl step"
    );
}

/// A kept log (tests/data), its release and its steps.
fn recorded(file: &str) -> (String, Vec<Step>) {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let log = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let release = header(&log).0.expect("a release line");
    (release, parse_steps(&log).expect("a log of steps"))
}

/// The rows of `file` that differ from the model under `profile`, as (ioctl, argument,
/// what).
fn differing(file: &str, profile: &str) -> Vec<(String, String, String)> {
    let (_, steps) = recorded(file);
    let p = guest_profile("", Some(profile)).unwrap();
    replay(&p, &steps)
        .unwrap()
        .into_iter()
        .filter(|r| !r.agrees())
        .map(|r| (cmd_name(r.cmd), format!("{:?}", r.arg), r.what))
        .collect()
}

/// Each guest's every row agrees with the profile `lab ioctl` picks for its release (the
/// 6.18 host's log too: tests/tun_ioctl.rs in skbsim-kernel records it afresh).
#[test]
fn each_recorded_kernel_answers_as_its_profile_says() {
    for (file, release, profile, rows) in [
        (
            "tun-ioctl-6.1.jsonl",
            "6.1.0-57-cloud-amd64",
            "linux-6.1",
            1383,
        ),
        (
            "tun-ioctl-6.12.jsonl",
            "6.12.118+deb12-cloud-amd64",
            "linux-6.12",
            1379,
        ),
        (
            "tun-ioctl-6.18-host.jsonl",
            "6.18.44-fc-v1252",
            "linux-6.18",
            1383,
        ),
    ] {
        recorded_kernel_agrees(file, release, profile, rows);
    }
}

/// `n` rows: 4 fewer where the user may not attach to a device with neither owner nor
/// group (the rows after an attach are not issued).
fn recorded_kernel_agrees(file: &str, release: &str, profile: &str, n: usize) {
    let (r, steps) = recorded(file);
    assert_eq!(r, release);
    let p = guest_profile(&r, None).unwrap();
    assert_eq!(p.name, profile);
    let rows = replay(&p, &steps).unwrap();
    assert_eq!(rows.len(), n, "the whole sequence was recorded");
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| !r.agrees())
        .map(|r| r.describe())
        .collect();
    assert!(
        bad.is_empty(),
        "{file} under {profile}:\n{}",
        bad.join("\n")
    );
    let table = per_ioctl(&rows);
    assert!(table.len() >= 30, "every ioctl has rows: {table:?}");
}

/// The check tells the kernels apart where their rules differ: 6.1 refuses USO
/// (TUN_F_USO4|TUN_F_USO6, v6.2) that linux-6.12 accepts, 6.12 refuses the UDP tunnel GSO
/// bits (v6.17) that linux-6.18 accepts, and a user without CAP_NET_ADMIN attaches to a
/// device with neither owner nor group on 6.1 and 6.18 (tun_not_capable) but not on 6.12
/// (tun_permitted); nothing else differs.
#[test]
fn the_recorded_kernels_differ_only_in_their_rules() {
    let value = |arg: &str| -> u64 {
        arg.strip_prefix("Value(")
            .and_then(|a| a.strip_suffix(')'))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("{arg}"))
    };
    let d = differing("tun-ioctl-6.1.jsonl", "linux-6.12");
    let (offload, user): (Vec<_>, Vec<_>) = d.iter().partition(|r| r.0 == "TUNSETOFFLOAD");
    assert_eq!(offload.len(), 14, "{offload:?}");
    for (_, arg, _) in &offload {
        assert_eq!(value(arg) & 0x61, 0x61, "USO4|USO6 with CSUM: {arg}");
    }
    // The attach the model refuses, and the 4 rows on the file it would have had.
    assert_eq!(user.len(), 5, "{user:?}");
    assert!(user
        .iter()
        .all(|r| r.2 == "user attaches, neither set" || r.2.starts_with("user ")));
    assert_eq!(user[0].2, "user attaches, neither set");

    let d = differing("tun-ioctl-6.12.jsonl", "linux-6.18");
    let (offload, user): (Vec<_>, Vec<_>) = d.iter().partition(|r| r.0 == "TUNSETOFFLOAD");
    assert!(
        offload.iter().any(|r| r.1 == "Value(131)"),
        "0x83: CSUM|TSO4|UDP_TUNNEL_GSO"
    );
    for (_, arg, _) in &offload {
        assert_ne!(value(arg) & 0x80, 0, "UDP_TUNNEL_GSO: {arg}");
    }
    let user: Vec<&str> = user.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(user, ["user attaches, neither set"]);
}
