//! Exec scenarios (`pipeline = "exec"`, `[exec]`: sim::scenario::ExecPlan;
//! docs/exec.md#scenarios): the scenario's program, unmodified, run under the
//! supervisor of `skbsim exec` (skbsim_exec) on the profile's device model (`sim`) or on
//! real tun/tap files in a private network namespace (`tap`, [`crate::exec_tap`]). Its
//! record is the scenario's trace (the text `exec --trace` writes, under a header naming
//! the scenario, then the program's exit code as an event both arms see) and its capture
//! (`exec -o`'s pcapng) the scenario's `read.pcap`, so `run`, `bless`, `diff` and
//! `conform` treat it as any scenario's.
//!
//! A `build` source is compiled with `cc -O1 -Wall` into a fresh temporary directory for
//! each run (a few hundred ms; no cache that could go stale or be planted). The program
//! runs with stdin, stdout and stderr on /dev/null (its stdout would mix with `run`'s);
//! what it does on the device is in the record, and its exit code ends it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sim::pcap::{linktype::LINKTYPE_RAW, PcapFormat, PcapWriter, LINKTYPE_ETHERNET};
use sim::profile::KernelProfile;
use sim::scenario::{ExecFarSide, ExecPlan, Scenario};
use sim::trace::record::{Field, Record, Value, HEADER};
use sim::tun::ioctl::Caller;
use sim::tun::DeviceKind;
use skbsim_exec::record::{Captured, Point};
use skbsim_exec::{
    parse_cidr, DeviceTun, ExecError, ExecRecord, FarInput, IpCidr, LoopbackTun, Recorder, SimTun,
    Sink, Stack,
};

use crate::cli_error::CliError;
use crate::exec_tap::TapTun;
use crate::runner::{Backend, ScenarioOutput};

/// Who the program is on the simulated device: root of a user namespace owning the
/// simulated network namespace (as under `unshare -rn`): CAP_NET_ADMIN there, none in
/// the initial namespace.
pub fn caller() -> Caller {
    Caller {
        init_net_admin: false,
        ..Caller::root()
    }
}

/// Runs `cmd` on `tun`, recorded when `record` (the program's exit code, the record).
pub fn run_on<T: SimTun + Send + 'static>(
    tun: T,
    cmd: Command,
    record: bool,
) -> Result<(i32, Option<ExecRecord>), ExecError> {
    if record {
        let (code, r) = skbsim_exec::run(Recorder::new(tun), cmd)?;
        Ok((code, Some(r.finish().1)))
    } else {
        skbsim_exec::run(tun, cmd).map(|r| (r.0, None))
    }
}

/// The text trace of a record: the header's lines, then every event.
pub fn trace_text(header: &Record<'_>, records: &[Record<'_>]) -> String {
    let mut text = String::new();
    header.write_text(&mut text);
    for r in records {
        r.write_text(&mut text);
    }
    text
}

/// A pcapng of `frames` into `out`: an interface `DEV tun_get_user` / `DEV
/// tun_put_user` for each device and point, added as its first frame comes (raw IP for
/// an IFF_TUN device, Ethernet for a tap), each packet commented with its event's
/// metadata. `name` names `out` in errors.
pub fn write_capture<W: Write>(out: W, name: PathBuf, frames: &[Captured]) -> Result<W, CliError> {
    let mut w = PcapWriter::begin(out, PcapFormat::PcapNg, name)?;
    let mut ifaces: Vec<(Vec<u8>, Point)> = Vec::new();
    for c in frames {
        let key = (c.dev.clone(), c.point);
        let id = match ifaces.iter().position(|k| *k == key) {
            Some(i) => i as u32,
            None => {
                let link_type = match c.kind {
                    DeviceKind::Tun => LINKTYPE_RAW,
                    DeviceKind::Tap => LINKTYPE_ETHERNET,
                };
                let ifname = format!("{} {}", String::from_utf8_lossy(&c.dev), c.point.name());
                ifaces.push(key);
                w.add_interface(&ifname, link_type, sim::pcap::WRITER_SNAPLEN)?
            }
        };
        let len = u32::try_from(c.data.len()).unwrap_or(u32::MAX);
        w.write_packet(id, c.ts_ns, &c.data, len, Some(&c.comment))?;
    }
    Ok(w.finish()?)
}

/// The `--far-addr` strings as addresses (`what` names their origin in errors).
pub fn far_addrs(addrs: &[String], what: &str) -> Result<Vec<IpCidr>, CliError> {
    addrs
        .iter()
        .map(|a| parse_cidr(a).map_err(|e| CliError(format!("{what} {e}"))))
        .collect()
}

/// The program on the simulated device. As root (CI runs the suite as root) it runs in a
/// fresh private network namespace (skbsim_kernel::Netns): whatever it does that the
/// supervisor does not intercept then cannot reach the host's interfaces. As any other
/// user it runs where it is: it cannot change them anyway.
fn sim_contained(
    profile: KernelProfile,
    side: ExecFarSide,
    addrs: Vec<IpCidr>,
    input: FarInput,
    cmd: Command,
) -> Result<Result<(i32, Option<ExecRecord>), ExecError>, CliError> {
    let run = move || match side {
        ExecFarSide::Stack => run_on(
            DeviceTun::new(profile, caller(), Stack::new(addrs)).with_input(input),
            cmd,
            true,
        ),
        ExecFarSide::Sink => run_on(
            DeviceTun::new(profile, caller(), Sink::default()).with_input(input),
            cmd,
            true,
        ),
        ExecFarSide::Loopback => run_on(LoopbackTun::new(profile, caller()), cmd, true),
    };
    if !rustix::process::geteuid().is_root() {
        return Ok(run());
    }
    skbsim_kernel::Netns::run(move |_ns| Ok(run())).map_err(|e| {
        CliError(format!(
            "exec: a private network namespace for the program: {e}"
        ))
    })
}

/// Runs an exec scenario on `backend` and returns its trace, capture and records.
pub fn run(s: &Scenario, backend: Backend) -> Result<ScenarioOutput, CliError> {
    let plan = s
        .exec
        .as_ref()
        .ok_or_else(|| CliError(format!("{}: pipeline exec needs [exec]", s.path.display())))?;
    let addrs = far_addrs(&plan.far_addr, "exec.far_addr:")?;
    let input = far_input(s, plan)?;
    let built = tempfile::tempdir()
        .map_err(|e| CliError(format!("cannot make a directory to build in: {e}")))?;
    let program = program(plan, built.path())?;
    let mut cmd = Command::new(&program);
    cmd.args(&plan.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let profile = s.profile;
    let (code, rec) = match (backend, plan.far_side) {
        (Backend::Sim, side) => sim_contained(profile, side, addrs, input, cmd)?,
        (Backend::Tap, ExecFarSide::Stack) => {
            let far: Vec<(std::net::IpAddr, u8)> = addrs
                .iter()
                .map(|c| (c.address().into(), c.prefix_len()))
                .collect();
            skbsim_kernel::Netns::run(move |_ns| Ok(run_on(TapTun::new(far, input)?, cmd, true)))
                .map_err(|e| CliError(format!("exec on a real tap: {e}")))?
        }
        (Backend::Tap, side) => {
            return Err(CliError(format!(
                "exec.far_side: \"{}\" has no real arm (on the real kernel the far side is the Linux stack)",
                side.name()
            )))
        }
    }
    .map_err(|e| CliError(format!("exec {}: {e}", program.display())))?;
    let rec = rec.unwrap_or_default();
    let mut h = Record::new(HEADER);
    h.push(Field::label("scenario", Value::text(s.name.clone())));
    let fields = skbsim_exec::record::header(
        backend.name(),
        s.profile.name,
        plan.far_side.name(),
        &plan.shown(),
    )
    .fields;
    h.fields.extend(fields);
    let mut records = rec.records;
    records.push(exit_record(code));
    let trace = trace_text(&h, &records);
    let name = PathBuf::from(format!("({} capture)", backend.name()));
    let pcap = write_capture(Vec::new(), name, &rec.frames)?;
    records.insert(0, h);
    Ok(ScenarioOutput {
        trace,
        json: serde_json::Value::Array(records.iter().map(Record::to_json).collect()),
        pcap,
        frames: rec.frames.len() as u64,
        notes: Vec::new(),
        records,
    })
}

/// The scenario's `input`, if it names one: its Ethernet frames (LINKTYPE_ETHERNET
/// only: they are sent as they are), which the far side sends when the program's
/// device first comes up (skbsim_exec::inject). The loopback far side has no stack to
/// send them.
fn far_input(s: &Scenario, plan: &ExecPlan) -> Result<FarInput, CliError> {
    if s.input.as_os_str().is_empty() {
        return Ok(FarInput::default());
    }
    if plan.far_side == ExecFarSide::Loopback {
        return Err(CliError(format!(
            "{}: input: the loopback far side sends no capture; use far_side = \"stack\" or \"sink\"",
            s.path.display()
        )));
    }
    read_far_input(&s.input, &format!("{}: input", s.path.display()))
}

/// The capture the far side sends when the program's device first comes up (an exec
/// scenario's `input`, `skbsim exec --input`): its frames as they are, so Ethernet only
/// (sim::pcap::read_all refuses another link type). An error is one line starting with
/// `what`.
pub fn read_far_input(path: &Path, what: &str) -> Result<FarInput, CliError> {
    let frames = sim::pcap::read_all(path).map_err(|e| CliError(format!("{what}: {e}")))?;
    Ok(FarInput::new(frames.into_iter().map(|f| f.data).collect()))
}

/// `exit: N`: how the program ended (its exit code, or 128 + the signal), which both
/// arms see.
fn exit_record(code: i32) -> Record<'static> {
    let mut r = Record::new("exit");
    r.result = Some(Value::Int(code.max(0) as u64));
    r
}

/// The program to run: `build` compiled into `dir`, or `program` as resolved.
fn program(plan: &ExecPlan, dir: &Path) -> Result<PathBuf, CliError> {
    match (&plan.build, &plan.program) {
        (Some(src), _) => build(src, dir),
        (None, Some(p)) => Ok(p.clone()),
        (None, None) => Err(CliError("exec: neither build nor program".into())),
    }
}

/// `cc -O1 -Wall -o DIR/STEM SRC`; a failure is one line naming the source and the
/// compiler's first error.
fn build(src: &Path, dir: &Path) -> Result<PathBuf, CliError> {
    if !src.is_file() {
        return Err(CliError(format!(
            "exec.build: {}: no such C file",
            src.display()
        )));
    }
    let stem = src.file_stem().unwrap_or_default();
    let out = dir.join(stem);
    let ran = Command::new("cc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&out)
        .arg(src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            CliError(format!(
                "exec.build: cannot run cc for {}: {e}",
                src.display()
            ))
        })?;
    if !ran.status.success() {
        let err = String::from_utf8_lossy(&ran.stderr);
        let first = err
            .lines()
            .find(|l| l.contains("error"))
            .or_else(|| err.lines().next())
            .unwrap_or("no message");
        return Err(CliError(format!(
            "exec.build: cc could not build {}: {first}",
            src.display()
        )));
    }
    Ok(out)
}
