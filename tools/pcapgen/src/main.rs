//! pcapgen: builds skbsim's input pcaps from readable frame descriptions (see
//! `desc.rs` for the format), checks that committed pcaps match their descriptions,
//! and writes large deterministic captures for benchmarks.

mod bench;
mod build;
mod desc;
mod ipv6_ext;
mod locate;
mod tunnel;

use std::ffi::OsString;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use sim::pcap::{PcapFormat, PcapWriter};

const USAGE: &str = "\
usage:
  pcapgen DESC.toml -o OUT.pcap        build a capture from a frame description
  pcapgen --check DESC.toml OUT.pcap   exit 1 if OUT.pcap differs from what DESC.toml builds
  pcapgen --all [--check] DIR          build (or verify) every DIR/*.toml into its sibling
                                       .pcap (.pcapng when the description says format = \"pcapng\")
  pcapgen bench --frames N -o OUT.pcap [--seed S] [--format pcap|pcapng]
                                       N frames of a mixed realistic profile, deterministic
exit status: 0 ok, 1 --check found a difference, 2 error";

#[derive(Debug, PartialEq, Eq)]
enum Cmd {
    Help,
    Build {
        desc: PathBuf,
        out: PathBuf,
    },
    Check {
        desc: PathBuf,
        pcap: PathBuf,
    },
    All {
        dir: PathBuf,
        check: bool,
    },
    Bench {
        frames: u64,
        out: PathBuf,
        seed: u64,
        format: PcapFormat,
    },
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let result = parse_args(args).and_then(run);
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(msg) => {
            eprintln!("pcapgen: {msg}");
            ExitCode::from(2)
        }
    }
}

fn parse_args(args: Vec<OsString>) -> Result<Cmd, String> {
    let mut args: Vec<String> = args
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not UTF-8"))
        })
        .collect::<Result<_, _>>()?;
    if args.is_empty() || args.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(Cmd::Help);
    }
    let bench = args[0] == "bench";
    if bench {
        args.remove(0);
    }
    let (mut check, mut all) = (false, false);
    let (mut out, mut frames, mut seed, mut format) = (None, None, None, None);
    let mut positional = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--check" if !bench => check = true,
            "--all" if !bench => all = true,
            "-o" | "--output" => out = Some(PathBuf::from(value(&a)?)),
            "--frames" if bench => frames = Some(number(&a, &value(&a)?)?),
            "--seed" if bench => seed = Some(number(&a, &value(&a)?)?),
            "--format" if bench => {
                format = Some(match value(&a)?.as_str() {
                    "pcap" => PcapFormat::Pcap,
                    "pcapng" => PcapFormat::PcapNg,
                    f => return Err(format!("--format {f:?}: expected pcap or pcapng")),
                })
            }
            s if s.starts_with('-') && s != "-" => {
                return Err(format!("unknown option {s:?}\n{USAGE}"))
            }
            _ => positional.push(PathBuf::from(a)),
        }
    }
    let wrong = |what: &str| Err(format!("{what}\n{USAGE}"));
    match (bench, all, check, positional.len(), out) {
        (true, _, _, _, out) => {
            if !positional.is_empty() {
                return wrong("bench takes no positional arguments");
            }
            let Some(out) = out else {
                return wrong("bench needs -o OUT.pcap");
            };
            let Some(frames) = frames else {
                return wrong("bench needs --frames N");
            };
            Ok(Cmd::Bench {
                frames,
                out,
                seed: seed.unwrap_or(bench::DEFAULT_SEED),
                format: format.unwrap_or_default(),
            })
        }
        (false, true, check, 1, None) => Ok(Cmd::All {
            dir: positional.remove(0),
            check,
        }),
        (false, true, ..) => wrong("--all takes one directory and no -o"),
        (false, false, true, 2, None) => Ok(Cmd::Check {
            pcap: positional.remove(1),
            desc: positional.remove(0),
        }),
        (false, false, true, ..) => wrong("--check takes DESC.toml OUT.pcap and no -o"),
        (false, false, false, 1, Some(out)) => Ok(Cmd::Build {
            desc: positional.remove(0),
            out,
        }),
        _ => wrong("expected DESC.toml -o OUT.pcap"),
    }
}

fn number(flag: &str, v: &str) -> Result<u64, String> {
    let digits = v.replace('_', "");
    let parsed = match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse(),
    };
    parsed.map_err(|_| format!("{flag} {v:?}: not a non-negative integer"))
}

/// Runs a command; `Ok(false)` means a check found a difference.
fn run(cmd: Cmd) -> Result<bool, String> {
    match cmd {
        Cmd::Help => {
            println!("{USAGE}");
            Ok(true)
        }
        Cmd::Build { desc, out } => {
            let (bytes, _) = generate(&desc)?;
            write(&out, &bytes)?;
            Ok(true)
        }
        Cmd::Check { desc, pcap } => {
            let (bytes, _) = generate(&desc)?;
            check(&desc, &pcap, &bytes)
        }
        Cmd::All { dir, check: verify } => {
            let mut descs: Vec<PathBuf> = fs::read_dir(&dir)
                .map_err(|e| format!("{}: cannot list: {e}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            descs.sort();
            if descs.is_empty() {
                return Err(format!("{}: no *.toml descriptions", dir.display()));
            }
            let mut same = true;
            for desc in &descs {
                let (bytes, format) = generate(desc)?;
                let pcap = desc.with_extension(format.extension());
                if verify {
                    same &= check(desc, &pcap, &bytes)?;
                } else {
                    write(&pcap, &bytes)?;
                }
            }
            if verify && same {
                eprintln!("pcapgen: {} captures match their descriptions", descs.len());
            }
            Ok(same)
        }
        Cmd::Bench {
            frames,
            out,
            seed,
            format,
        } => run_bench(frames, &out, seed, format).map(|()| true),
    }
}

/// Builds the capture `desc` describes, in memory.
fn generate(desc: &Path) -> Result<(Vec<u8>, PcapFormat), String> {
    let r = desc::load(desc)?;
    let mut w = PcapWriter::with_name(Vec::new(), r.format, desc).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    for f in &r.frames {
        let data: &[u8] = match &f.body {
            desc::Body::Raw(bytes) => bytes,
            desc::Body::Built(spec) => {
                build::build(spec, &mut buf)
                    .map_err(|m| format!("{}: [[frame]] {}: {m}", desc.display(), f.entry))?;
                &buf
            }
        };
        w.write_frame(f.ts_ns, data).map_err(|e| e.to_string())?;
    }
    Ok((w.finish().map_err(|e| e.to_string())?, r.format))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    fs::write(path, bytes).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

/// Compares `pcap` with freshly built `bytes`; reports a difference on stderr.
fn check(desc: &Path, pcap: &Path, bytes: &[u8]) -> Result<bool, String> {
    let old = match fs::read(pcap) {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            eprintln!(
                "pcapgen: {}: missing; build it from {}",
                pcap.display(),
                desc.display()
            );
            return Ok(false);
        }
        Err(e) => return Err(format!("{}: cannot read: {e}", pcap.display())),
    };
    if old == bytes {
        return Ok(true);
    }
    let at = old.iter().zip(bytes).take_while(|(a, b)| a == b).count();
    eprintln!(
        "pcapgen: {}: differs from what {} builds at byte {at} ({} bytes on disk, {} built); \
         regenerate it",
        pcap.display(),
        desc.display(),
        old.len(),
        bytes.len()
    );
    Ok(false)
}

fn run_bench(frames: u64, out: &Path, seed: u64, format: PcapFormat) -> Result<(), String> {
    let t0 = Instant::now();
    let mut w = PcapWriter::create(out, format).map_err(|e| e.to_string())?;
    let mut rng = bench::Lcg::new(seed);
    let mut buf = Vec::with_capacity(2048);
    let mut bytes = 0u64;
    for k in 0..frames {
        let spec = bench::next_frame(&mut rng);
        build::build(&spec, &mut buf).map_err(|m| format!("bench frame {k}: {m}"))?;
        let ts = desc::DEFAULT_START_NS.saturating_add(k.saturating_mul(desc::DEFAULT_INTERVAL_NS));
        w.write_frame(ts, &buf).map_err(|e| e.to_string())?;
        bytes += buf.len() as u64;
    }
    w.finish().map_err(|e| e.to_string())?;
    eprintln!(
        "pcapgen: wrote {frames} frames ({bytes} bytes of frames) to {} in {:.2} s",
        out.display(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Cmd, String> {
        parse_args(s.split_whitespace().map(OsString::from).collect())
    }

    #[test]
    fn command_lines() {
        assert_eq!(
            args("d.toml -o o.pcap"),
            Ok(Cmd::Build {
                desc: "d.toml".into(),
                out: "o.pcap".into()
            })
        );
        assert_eq!(
            args("--check d.toml o.pcap"),
            Ok(Cmd::Check {
                desc: "d.toml".into(),
                pcap: "o.pcap".into()
            })
        );
        assert_eq!(
            args("--all --check dir"),
            Ok(Cmd::All {
                dir: "dir".into(),
                check: true
            })
        );
        assert_eq!(
            args("bench --frames 1_000 -o b.pcap --format pcapng"),
            Ok(Cmd::Bench {
                frames: 1000,
                out: "b.pcap".into(),
                seed: bench::DEFAULT_SEED,
                format: PcapFormat::PcapNg
            })
        );
        assert_eq!(args(""), Ok(Cmd::Help));
        for bad in [
            "d.toml",
            "--all",
            "--check d.toml",
            "bench -o x",
            "d.toml -o",
            "--bogus",
        ] {
            assert!(args(bad).is_err(), "{bad}");
        }
    }
}
