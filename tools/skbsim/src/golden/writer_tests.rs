use super::*;

/// A pid above PID_MAX_LIMIT (2^22): never a live process.
const DEAD_PID: u32 = (1 << 22) + 1;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("skbsim-golden-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(d)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn old_goldens(root: &Path) -> PathBuf {
    let dir = root.join("area/s");
    fs::create_dir_all(&dir).expect("golden dir");
    fs::write(dir.join(TRACE_FILE), b"old trace").expect("trace");
    fs::write(dir.join(PCAP_FILE), b"old pcap").expect("pcap");
    dir
}

fn read(p: &Path) -> Vec<u8> {
    fs::read(p).expect("read")
}

#[test]
fn commit_replaces_both_goldens() {
    let root = scratch("commit");
    let dir = old_goldens(&root);
    let mut w = GoldenWriter::begin(&dir).expect("begin");
    w.trace().write_all(b"new trace").expect("write");
    w.pcap().write_all(b"new pcap").expect("write");
    w.commit().expect("commit");
    assert_eq!(read(&dir.join(TRACE_FILE)), b"new trace");
    assert_eq!(read(&dir.join(PCAP_FILE)), b"new pcap");
    assert_eq!(names(&root.join("area")), ["s"], "no temp left beside");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn commit_creates_a_missing_golden_dir() {
    let root = scratch("fresh");
    let dir = root.join("area/new");
    let mut w = GoldenWriter::begin(&dir).expect("begin");
    w.trace().write_all(b"t").expect("write");
    w.pcap().write_all(b"p").expect("write");
    w.commit().expect("commit");
    assert_eq!(names(&dir), [PCAP_FILE, TRACE_FILE]);
    assert_eq!(names(&root.join("area")), ["new"]);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn drop_without_commit_keeps_the_old_pair_and_removes_the_temp() {
    let root = scratch("drop");
    let dir = old_goldens(&root);
    let mut w = GoldenWriter::begin(&dir).expect("begin");
    w.trace().write_all(&vec![b'x'; 1 << 20]).expect("write");
    assert_eq!(
        names(&root.join("area")).len(),
        2,
        "the temp dir while writing"
    );
    drop(w);
    assert_eq!(read(&dir.join(TRACE_FILE)), b"old trace");
    assert_eq!(read(&dir.join(PCAP_FILE)), b"old pcap");
    assert_eq!(names(&root.join("area")), ["s"]);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn a_kill_mid_bless_leaves_the_old_pair_and_the_next_run_cleans_up() {
    let root = scratch("kill");
    let dir = old_goldens(&root);
    let mut w = GoldenWriter::begin(&dir).expect("begin");
    w.trace().write_all(b"new trace").expect("write");
    w.trace().flush().expect("flush");
    // A kill runs no destructor.
    std::mem::forget(w);
    assert_eq!(read(&dir.join(TRACE_FILE)), b"old trace");
    assert_eq!(read(&dir.join(PCAP_FILE)), b"old pcap");
    // The temp carries this (live) pid: a later process sees it dead; this one treats
    // its own pid as stale (see may_be_running).
    assert_eq!(remove_stale_temps(&root).expect("clean"), 1);
    assert_eq!(names(&root.join("area")), ["s"]);
    assert_eq!(names(&dir), [PCAP_FILE, TRACE_FILE]);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn stale_temps_of_dead_pids_go_live_ones_and_other_names_stay() {
    let root = scratch("stale");
    let dir = old_goldens(&root);
    let area = root.join("area");
    fs::create_dir(area.join(format!(".s.bless-{DEAD_PID}"))).expect("dead temp");
    fs::write(
        area.join(format!(".s.bless-{DEAD_PID}/trace.snap")),
        b"half",
    )
    .expect("half");
    // pid 1 is always alive: a bless still running.
    fs::create_dir(area.join(".s.bless-1")).expect("live temp");
    fs::write(dir.join(format!(".trace.snap.tmp-{DEAD_PID}")), b"x").expect("file temp");
    for keep in [
        ".s.bless-",
        ".s.bless-12a",
        "s.bless-7",
        ".notes.tmp-7",
        "notes",
    ] {
        fs::write(area.join(keep), b"keep").expect("other");
    }
    assert_eq!(remove_stale_temps(&root).expect("clean"), 2);
    assert_eq!(
        names(&area),
        [
            ".notes.tmp-7",
            ".s.bless-",
            ".s.bless-1",
            ".s.bless-12a",
            "notes",
            "s",
            "s.bless-7"
        ]
    );
    assert_eq!(names(&dir), [PCAP_FILE, TRACE_FILE]);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn old_goldens_moved_aside_are_restored_when_their_dir_is_missing() {
    let root = scratch("restore");
    let dir = old_goldens(&root);
    let aside = root.join(format!("area/.s.bless-{DEAD_PID}-old"));
    fs::rename(&dir, &aside).expect("move aside");
    assert_eq!(remove_stale_temps(&root).expect("clean"), 1);
    assert_eq!(read(&dir.join(TRACE_FILE)), b"old trace");
    assert!(!aside.exists());
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn other_files_in_a_golden_dir_survive_the_swap() {
    let root = scratch("others");
    let dir = old_goldens(&root);
    fs::write(dir.join("NOTES"), b"why").expect("notes");
    let mut w = GoldenWriter::begin(&dir).expect("begin");
    w.trace().write_all(b"t").expect("write");
    w.pcap().write_all(b"p").expect("write");
    w.commit().expect("commit");
    assert_eq!(read(&dir.join("NOTES")), b"why");
    assert_eq!(read(&dir.join(PCAP_FILE)), b"p");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn temp_names_parse() {
    assert_eq!(parse_temp(".s.bless-42"), Some(("s", 42, Temp::Bless)));
    assert_eq!(
        parse_temp(".a.b.bless-42-old"),
        Some(("a.b", 42, Temp::Old))
    );
    assert_eq!(
        parse_temp(".read.pcap.tmp-9"),
        Some((PCAP_FILE, 9, Temp::File))
    );
    for n in [
        "s.bless-1",
        ".bless-1",
        ".s.bless-",
        ".s.bless-1x",
        ".x.tmp-1",
        ".s.bless--old",
    ] {
        assert_eq!(parse_temp(n), None, "{n}");
    }
}
