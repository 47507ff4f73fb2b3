//! Outputs are written to what is there (devices, FIFOs, stdout, a file in place, a
//! symlink's target), goldens are blessed as a unit, and inputs must be bounded regular
//! files — each checked on the built binary, with a deadline wherever the old behaviour
//! was a hang.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::fs::{mknodat, FileType, Mode, CWD};

mod common;
use common::{assert_bad_input, repo, scratch, skbsim_deadline};

/// Long enough for a debug build replaying a small capture, short enough to fail a hang.
const DEADLINE: Duration = Duration::from_secs(60);

/// A pid above PID_MAX_LIMIT (2^22): never a live process.
const DEAD_PID: u32 = (1 << 22) + 1;

/// A capture of the repository's (tun-read replays it through a tap as is).
fn input_pcap() -> PathBuf {
    repo().join("scenarios/pcaps/gro-tcp-50x1400.pcap")
}

/// Run skbsim in `cwd`, failing if it outlives [`DEADLINE`].
fn skbsim(args: &[&str], cwd: &Path) -> Output {
    skbsim_deadline(args, cwd, DEADLINE)
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Byte-equal, reported by length and first difference (not a dump of both).
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    assert!(
        got == want,
        "{what}: {} bytes, want {}; first difference at {first:?}",
        got.len(),
        want.len()
    );
}

fn mkfifo(p: &Path) {
    mknodat(CWD, p, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
}

/// Read a FIFO to its end on a thread; the bytes arrive on the returned channel.
fn drain(fifo: &Path) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    let p = fifo.to_path_buf();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Ok(mut f) = fs::File::open(&p) {
            let _ = f.read_to_end(&mut bytes);
        }
        let _ = tx.send(bytes);
    });
    rx
}

/// The replay's output pcap and trace written to regular files: the reference the other
/// kinds of output must match byte for byte.
fn reference(d: &Path) -> (Vec<u8>, Vec<u8>) {
    let input = input_pcap();
    let out = skbsim(
        &[
            "replay",
            input.to_str().expect("utf-8 path"),
            "-o",
            "ref.pcap",
            "--trace",
            "ref.txt",
        ],
        d,
    );
    assert_ok(&out);
    let pcap = fs::read(d.join("ref.pcap")).expect("ref pcap");
    let frames = sim::pcap::read_all(d.join("ref.pcap")).expect("ref pcap parses");
    assert!(!frames.is_empty(), "the reference replay read frames");
    (pcap, fs::read(d.join("ref.txt")).expect("ref trace"))
}

fn replay_to(d: &Path, flag: &str, target: &str) -> Output {
    let input = input_pcap();
    skbsim(
        &["replay", input.to_str().expect("utf-8 path"), flag, target],
        d,
    )
}

#[test]
#[ignore = "needs root (mknod of a private null device); ci/test.sh runs it as root with --include-ignored"]
fn replay_to_a_char_device_writes_through_and_keeps_the_device() {
    skbsim_kernel::require_privileges();
    let d = scratch("chardev");
    // A private null device (1:3) first, so a regression cannot break the machine's.
    let null = d.join("null");
    mknodat(
        CWD,
        &null,
        FileType::CharacterDevice,
        Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    )
    .expect("mknod (needs root)");
    assert_ok(&replay_to(&d, "-o", null.to_str().expect("utf-8 path")));
    let m = fs::symlink_metadata(&null).expect("stat");
    assert!(m.file_type().is_char_device(), "{null:?} was replaced");
    assert_eq!(m.rdev(), rustix::fs::makedev(1, 3));
    assert_eq!(fs::read_dir(&d).expect("list").count(), 1, "no temp left");

    let out = replay_to(&d, "-o", "/dev/null");
    let kept = fs::symlink_metadata("/dev/null").is_ok_and(|m| m.file_type().is_char_device());
    if !kept {
        // Put the machine's /dev/null back before failing.
        let _ = fs::remove_file("/dev/null");
        let _ = mknodat(
            CWD,
            "/dev/null",
            FileType::CharacterDevice,
            Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 3),
        );
    }
    assert_ok(&out);
    assert!(kept, "replay -o /dev/null replaced /dev/null");
}

#[test]
fn replay_to_a_fifo_streams_a_valid_pcap_and_trace() {
    let d = scratch("fifo");
    let (want_pcap, want_trace) = reference(&d);
    for (flag, want) in [("-o", &want_pcap), ("--trace", &want_trace)] {
        let fifo = d.join("out.fifo");
        let _ = fs::remove_file(&fifo);
        mkfifo(&fifo);
        let got = drain(&fifo);
        assert_ok(&replay_to(&d, flag, "out.fifo"));
        let got = got.recv_timeout(DEADLINE).expect("the reader got EOF");
        assert_same(&got, want, &format!("{flag} to a FIFO"));
        assert!(fs::symlink_metadata(&fifo)
            .expect("stat")
            .file_type()
            .is_fifo());
    }
}

#[test]
fn replay_o_dash_writes_the_pcap_to_stdout() {
    let d = scratch("stdout");
    let (want, _) = reference(&d);
    let out = replay_to(&d, "-o", "-");
    assert_ok(&out);
    assert_same(&out.stdout, &want, "-o - on stdout");
    assert!(!d.join("-").exists(), "no file named -");
    let both = skbsim(
        &[
            "replay",
            input_pcap().to_str().expect("utf-8 path"),
            "-o",
            "-",
            "--trace",
            "-",
        ],
        &d,
    );
    assert_bad_input(&both, &["stdout"]);
}

#[test]
fn replay_through_a_symlink_writes_the_target_and_keeps_the_link() {
    let d = scratch("symlink");
    let (want, _) = reference(&d);
    fs::create_dir(d.join("real")).expect("dir");
    fs::write(d.join("real/out.pcap"), b"old").expect("old target");
    std::os::unix::fs::symlink("real/out.pcap", d.join("link.pcap")).expect("symlink");
    let before = fs::metadata(d.join("real/out.pcap")).expect("stat").ino();
    assert_ok(&replay_to(&d, "-o", "link.pcap"));
    let link = fs::symlink_metadata(d.join("link.pcap")).expect("stat link");
    assert!(link.file_type().is_symlink(), "the link was replaced");
    assert_eq!(
        fs::read_link(d.join("link.pcap")).expect("readlink"),
        Path::new("real/out.pcap")
    );
    assert_same(
        &fs::read(d.join("real/out.pcap")).expect("target"),
        &want,
        "the link's target",
    );
    // Written in place (the same inode), not replaced by a rename.
    assert_eq!(
        fs::metadata(d.join("real/out.pcap")).expect("stat").ino(),
        before
    );
    assert_eq!(
        fs::read_dir(d.join("real")).expect("list").count(),
        1,
        "no temp left"
    );
}

#[test]
fn replay_to_a_directory_is_refused_naming_it() {
    let d = scratch("dir");
    fs::create_dir(d.join("outdir")).expect("dir");
    assert_bad_input(&replay_to(&d, "-o", "outdir"), &["outdir", "directory"]);
    assert_bad_input(
        &replay_to(&d, "--trace", "outdir"),
        &["outdir", "directory"],
    );
    assert_eq!(fs::read_dir(d.join("outdir")).expect("list").count(), 0);
}

/// `<d>/scenarios/t/s.toml` replaying the repository capture, goldens blessed.
fn blessed_workspace(d: &Path) -> PathBuf {
    fs::create_dir_all(d.join("scenarios/t")).expect("scenarios");
    let toml = format!(
        "description = \"t\"\ninput = {:?}\npipeline = \"tun-read\"\n",
        input_pcap().to_str().expect("utf-8 path")
    );
    fs::write(d.join("scenarios/t/s.toml"), toml).expect("scenario");
    assert_ok(&skbsim(&["bless", "scenarios"], d));
    d.join("golden/t/s")
}

#[test]
fn a_killed_bless_is_cleaned_by_the_next_run_and_never_mixes_goldens() {
    let d = scratch("killed-bless");
    let golden = blessed_workspace(&d);
    let trace = fs::read(golden.join("trace.snap")).expect("trace");
    let pcap = fs::read(golden.join("read.pcap")).expect("pcap");
    // What a bless killed mid-write leaves: its temp dir with a new trace, no pcap yet.
    let stale = d.join(format!("golden/t/.s.bless-{DEAD_PID}"));
    fs::create_dir(&stale).expect("stale dir");
    fs::write(stale.join("trace.snap"), b"half a new trace").expect("half");
    let stale_file = golden.join(format!(".trace.snap.tmp-{DEAD_PID}"));
    fs::write(&stale_file, b"an older bless's temp").expect("stale file");

    let out = skbsim(&["run", "scenarios"], &d);
    assert_ok(&out);
    assert!(!stale.exists(), "the stale bless dir is gone");
    assert!(!stale_file.exists(), "the stale temp file is gone");
    assert_eq!(fs::read(golden.join("trace.snap")).expect("trace"), trace);
    assert_eq!(fs::read(golden.join("read.pcap")).expect("pcap"), pcap);

    // A bless that is still running (pid 1 is alive) is left alone.
    let live = d.join("golden/t/.s.bless-1");
    fs::create_dir(&live).expect("live dir");
    assert_ok(&skbsim(&["bless", "scenarios"], &d));
    assert!(live.exists());
    let mut names: Vec<String> = fs::read_dir(d.join("golden/t"))
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".s.bless-1", "s"]);
}

fn xdp_scenario(d: &Path, program: &str) -> PathBuf {
    let p = d.join("x.toml");
    let input = repo().join("scenarios/pcaps/xdp-mixed.pcap");
    fs::write(
        &p,
        format!(
            "description = \"x\"\ninput = {:?}\npipeline = \"tap-write\"\n[device]\nno_pi = true\n[xdp]\nprogram = {program:?}\nmode = \"native\"\n",
            input.to_str().expect("utf-8 path")
        ),
    )
    .expect("scenario");
    p
}

#[test]
fn dev_zero_as_an_xdp_program_is_refused_at_once() {
    let d = scratch("dev-zero");
    // As assembly (no .o) and through the ELF loader (a .o link to it).
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.o")).expect("symlink");
    for program in ["/dev/zero", "zero.o"] {
        let s = xdp_scenario(&d, program);
        let t = Instant::now();
        let out = skbsim(
            &["run", s.to_str().expect("utf-8 path"), "--golden", "g"],
            &d,
        );
        assert_bad_input(&out, &[program, "XDP program", "character device"]);
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "took {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn fifos_as_inputs_are_refused_instead_of_blocking() {
    let d = scratch("fifo-in");
    for name in ["a.txt", "b.txt", "a.pcap", "b.pcap", "s.toml", "in.pcap"] {
        mkfifo(&d.join(name));
    }
    assert_bad_input(&skbsim(&["diff", "a.txt", "b.txt"], &d), &["a.txt", "FIFO"]);
    assert_bad_input(
        &skbsim(&["diff", "a.pcap", "b.pcap"], &d),
        &["a.pcap", "FIFO"],
    );
    assert_bad_input(
        &skbsim(&["run", "s.toml"], &d),
        &["s.toml", "scenario", "FIFO"],
    );
    // A scenario whose input capture is a FIFO.
    fs::create_dir(d.join("sc")).expect("dir");
    fs::write(
        d.join("sc/t.toml"),
        "description = \"t\"\ninput = \"../in.pcap\"\npipeline = \"tun-read\"\n",
    )
    .expect("scenario");
    assert_bad_input(
        &skbsim(&["run", "sc", "--golden", "g"], &d),
        &["in.pcap", "FIFO"],
    );
    assert_bad_input(
        &skbsim(&["replay", "in.pcap", "-o", "out.pcap"], &d),
        &["in.pcap", "FIFO"],
    );
}

#[test]
fn oversize_inputs_are_refused_naming_the_limit() {
    let d = scratch("oversize");
    // Sparse: the size is checked before anything is read.
    let big = |name: &str, len: u64| {
        let f = fs::File::create(d.join(name)).expect("create");
        f.set_len(len).expect("set_len");
    };
    big("big.txt", (1 << 30) + 1);
    fs::write(d.join("small.txt"), "scenario: x\n").expect("small");
    // Traces stream, so size is no limit; a "line" of a GiB of zeros is no trace line,
    // and reading stops at the line bound instead of holding it.
    assert_bad_input(
        &skbsim(&["diff", "big.txt", "small.txt"], &d),
        &["big.txt", "not a text trace", "longer than"],
    );
    big("s.toml", (1 << 20) + 1);
    assert_bad_input(
        &skbsim(&["run", "s.toml"], &d),
        &["s.toml", "scenario", "over the 1 MiB limit"],
    );
    big("huge.s", (64 << 20) + 1);
    let s = xdp_scenario(&d, "huge.s");
    assert_bad_input(
        &skbsim(
            &["run", s.to_str().expect("utf-8 path"), "--golden", "g"],
            &d,
        ),
        &["huge.s", "XDP program", "over the 64 MiB limit"],
    );
}
