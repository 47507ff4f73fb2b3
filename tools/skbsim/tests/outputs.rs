//! Issue 20, items 4-6 and part of 9, on the built binary: a failed replay leaves no file
//! it made, a missing directory is an error (not created), an output that is an input or
//! another output is refused before anything is written, and the errors say what is
//! wrong once, naming the flag or argument.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::{assert_bad_input, repo, scratch, skbsim};

/// 50 TCP frames of 1400 bytes (classic pcap, little-endian).
fn input_pcap() -> Vec<u8> {
    fs::read(repo().join("scenarios/pcaps/gro-tcp-50x1400.pcap")).expect("repo capture")
}

fn run(args: &[&str], cwd: &Path, stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skbsim"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("run skbsim")
}

/// The names in `d`, sorted (hidden temporary files included).
fn entries(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(d)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The repository capture with its 21st record's caplen made absurd: 20 frames replay,
/// then the reader fails.
fn corrupt_21st_record() -> Vec<u8> {
    let mut b = input_pcap();
    let mut off = 24;
    for _ in 0..20 {
        let caplen = u32::from_le_bytes(b[off + 8..off + 12].try_into().expect("4 bytes"));
        off += 16 + caplen as usize;
    }
    b[off + 8..off + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    b
}

#[test]
fn a_replay_failing_at_the_21st_record_leaves_no_file_behind() {
    let d = scratch("corrupt");
    fs::write(d.join("bad.pcap"), corrupt_21st_record()).expect("write");
    // The old leak was a race with the output thread: several runs per pipeline.
    for pipeline in ["tun-read", "vhost-tx"] {
        for _ in 0..4 {
            let out = skbsim(
                &[
                    "replay",
                    "bad.pcap",
                    "--pipeline",
                    pipeline,
                    "-o",
                    "a.pcap",
                    "--trace",
                    "t.txt",
                ],
                &d,
            );
            assert_bad_input(&out, &["bad.pcap", "frame 20"]);
            assert_eq!(entries(&d), ["bad.pcap"], "{pipeline}");
        }
    }
    // An output that was there is left as it was (the run failed before writing it).
    fs::write(d.join("a.pcap"), b"old").expect("write");
    let out = skbsim(&["replay", "bad.pcap", "-o", "a.pcap"], &d);
    assert_bad_input(&out, &["bad.pcap"]);
    assert_eq!(fs::read(d.join("a.pcap")).expect("read"), b"old");
    assert_eq!(entries(&d), ["a.pcap", "bad.pcap"]);
}

#[test]
fn a_missing_directory_is_an_error_and_is_not_created() {
    let d = scratch("nodir");
    fs::write(d.join("in.pcap"), input_pcap()).expect("write");
    for flag in ["-o", "--trace"] {
        let out = skbsim(&["replay", "in.pcap", flag, "nodir/x.out"], &d);
        assert_bad_input(&out, &["nodir/x.out: cannot create", "No such file"]);
        assert_eq!(entries(&d), ["in.pcap"], "{flag}");
    }
    // An earlier output is not created either when a later one cannot be.
    let out = skbsim(
        &[
            "replay",
            "in.pcap",
            "--trace",
            "t.txt",
            "-o",
            "nodir/x.pcap",
        ],
        &d,
    );
    assert_bad_input(&out, &["nodir/x.pcap"]);
    assert_eq!(entries(&d), ["in.pcap"]);
    let out = skbsim(
        &["bench", "--make-capture", "nodir/x.pcap", "--frames", "10"],
        &d,
    );
    assert_bad_input(&out, &["nodir/x.pcap: cannot create"]);
    assert_eq!(entries(&d), ["in.pcap"]);
}

#[test]
fn an_output_that_is_the_input_is_refused_and_the_input_kept() {
    let d = scratch("is-input");
    let want = input_pcap();
    fs::write(d.join("in.pcap"), &want).expect("write");
    fs::hard_link(d.join("in.pcap"), d.join("hard.pcap")).expect("hard link");
    std::os::unix::fs::symlink("in.pcap", d.join("sym.pcap")).expect("symlink");
    for name in ["in.pcap", "./in.pcap", "hard.pcap", "sym.pcap"] {
        for flag in ["-o", "--trace"] {
            // tap-write's output differs from its input, so a replaced input would show.
            let out = skbsim(
                &["replay", "in.pcap", "--pipeline", "tap-write", flag, name],
                &d,
            );
            assert_bad_input(&out, &[name, flag, "input"]);
            assert!(
                fs::read(d.join("in.pcap")).expect("read") == want,
                "{flag} {name}"
            );
        }
    }
    // The input read through the link, the output named directly.
    let out = skbsim(&["replay", "sym.pcap", "-o", "in.pcap"], &d);
    assert_bad_input(&out, &["in.pcap", "input"]);
    // stdout appended to the input (`--trace - >> in.pcap`).
    let append = fs::OpenOptions::new()
        .append(true)
        .open(d.join("in.pcap"))
        .expect("open");
    let out = run(&["replay", "in.pcap", "--trace", "-"], &d, append.into());
    assert_bad_input(&out, &["--trace", "input"]);
    assert!(fs::read(d.join("in.pcap")).expect("read") == want);
    assert_eq!(entries(&d), ["hard.pcap", "in.pcap", "sym.pcap"]);
}

#[test]
fn two_outputs_naming_one_file_are_refused() {
    let d = scratch("same");
    fs::write(d.join("in.pcap"), input_pcap()).expect("write");
    let out = skbsim(&["replay", "in.pcap", "-o", "same", "--trace", "same"], &d);
    assert_bad_input(&out, &["same", "-o and --trace"]);
    assert_eq!(entries(&d), ["in.pcap"]);
    fs::write(d.join("a"), b"old").expect("write");
    fs::hard_link(d.join("a"), d.join("b")).expect("hard link");
    let out = skbsim(&["replay", "in.pcap", "-o", "a", "--trace", "b"], &d);
    assert_bad_input(&out, &["-o and --trace"]);
    assert_eq!(fs::read(d.join("a")).expect("read"), b"old");
    // A character device may take several outputs.
    let out = skbsim(
        &[
            "replay",
            "in.pcap",
            "-o",
            "/dev/null",
            "--trace",
            "/dev/null",
        ],
        &d,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_existing_output_is_written_in_place() {
    let d = scratch("in-place");
    fs::write(d.join("in.pcap"), input_pcap()).expect("write");
    fs::write(d.join("out.pcap"), b"old").expect("write");
    fs::hard_link(d.join("out.pcap"), d.join("link.pcap")).expect("hard link");
    let ino = fs::metadata(d.join("out.pcap")).expect("stat").ino();
    let out = skbsim(&["replay", "in.pcap", "-o", "out.pcap"], &d);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frames = sim::pcap::read_all(d.join("link.pcap")).expect("the link reads the new pcap");
    assert_eq!(frames.len(), 50);
    assert_eq!(fs::metadata(d.join("out.pcap")).expect("stat").ino(), ino);
    assert_eq!(entries(&d), ["in.pcap", "link.pcap", "out.pcap"]);
}

#[test]
fn errors_name_the_thing_once() {
    let d = scratch("wording");
    fs::write(d.join("in.pcap"), input_pcap()).expect("write");
    let err = assert_bad_input(&skbsim(&["replay", "in.pcap", "-o", "/dev/full"], &d), &[]);
    assert_eq!(
        err.matches("/dev/full: cannot write").count(),
        1,
        "said twice: {err}"
    );
    assert_bad_input(&skbsim(&["replay"], &d), &["<INPUT>"]);
    let err = assert_bad_input(
        &skbsim(&["replay", "in.pcap", "--gro-burst", "3"], &d),
        &["--gro-burst", "--pipeline tun-read", "tap-gro"],
    );
    assert!(
        !err.contains("[gro]"),
        "a TOML table instead of the flag: {err}"
    );
}
