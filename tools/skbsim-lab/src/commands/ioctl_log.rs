//! The tun ioctl table's steps (`skbsim_kernel::tun_ioctl_table::Step`) as JSON lines: what
//! the guest sends back over the serial line and what `lab ioctl` keeps in its results
//! (and reads again with `--replay`). One object per step:
//! `{"release":UNAME_R}` first, then `{"open":true}`, `{"close":FILE}`, `{"up":NAME}`,
//! `{"file":FILE,"cmd":CMD,"arg":ARG,"what":TEXT,"kernel":ANSWER}` (and `"user":[EUID,EGID]`
//! for a row issued unprivileged).

use serde_json::{json, Value};
use sim::tun::ioctl::{BpfFd, IoctlAnswer, IoctlArg, SockFilter, IFNAMSIZ};
use skbsim_kernel::tun_ioctl_table::{Answer, Step};

use super::hex::{hex, unhex};

pub(super) fn step_json(s: &Step) -> Value {
    match s {
        Step::Open => json!({"open": true}),
        Step::Close(i) => json!({"close": i}),
        Step::SetUp(name) => json!({"up": name}),
        Step::Io {
            file,
            cmd,
            arg,
            what,
            kernel,
            user,
        } => {
            let mut v = json!({"file": file, "cmd": cmd, "arg": arg_json(arg), "what": what, "kernel": answer_json(kernel)});
            if let Some((u, g)) = user {
                v["user"] = json!([u, g]);
            }
            v
        }
    }
}

/// A step from its JSON line; None when it is not one.
pub(super) fn step_from(v: &Value) -> Option<Step> {
    if v.get("open").is_some() {
        return Some(Step::Open);
    }
    if let Some(i) = v.get("close") {
        return Some(Step::Close(usize::try_from(i.as_u64()?).ok()?));
    }
    if let Some(n) = v.get("up") {
        return Some(Step::SetUp(n.as_str()?.to_string()));
    }
    Some(Step::Io {
        file: usize::try_from(v.get("file")?.as_u64()?).ok()?,
        cmd: u32::try_from(v.get("cmd")?.as_u64()?).ok()?,
        arg: arg_from(v.get("arg")?)?,
        what: v.get("what")?.as_str()?.to_string(),
        kernel: answer_from(v.get("kernel")?)?,
        user: match v.get("user") {
            None => None,
            Some(u) => Some((num(u.get(0)?)?, num(u.get(1)?)?)),
        },
    })
}

/// The steps of a log's lines (lines that are not JSON, and the `{"release": ...}` header
/// and `{"error": ...}` trailer of the guest, are skipped); an object that is no step is
/// the error, naming its line (1-based).
pub(super) fn parse_steps(text: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if !v.is_object() || v.get("release").is_some() || v.get("error").is_some() {
            continue;
        }
        steps.push(step_from(&v).ok_or_else(|| format!("line {}: not a tun ioctl step", n + 1))?);
    }
    Ok(steps)
}

fn bpf_name(b: BpfFd) -> &'static str {
    match b {
        BpfFd::Detach => "detach",
        BpfFd::NotOpen => "not-open",
        BpfFd::NotProg => "not-prog",
        BpfFd::Prog {
            socket_filter: true,
        } => "socket-filter",
        BpfFd::Prog {
            socket_filter: false,
        } => "prog",
    }
}

fn arg_json(a: &IoctlArg) -> Value {
    match a {
        IoctlArg::Value(v) => json!({"value": v}),
        IoctlArg::Int(v) => json!({"int": v}),
        IoctlArg::Ifreq { name, flags } => json!({"ifreq": hex(name), "flags": flags}),
        IoctlArg::Hwaddr { family, data } => json!({"hwaddr": hex(data), "family": family}),
        IoctlArg::TxFilter { flags, addrs } => {
            json!({"txfilter": flags, "addrs": addrs.iter().map(|a| hex(a)).collect::<Vec<_>>()})
        }
        IoctlArg::Fprog { len, filter, insns } => json!({"fprog": len, "filter": filter,
            "insns": insns.iter().map(|i| json!([i.code, i.jt, i.jf, i.k])).collect::<Vec<_>>()}),
        IoctlArg::BpfFd(b) => json!({"bpf": bpf_name(*b)}),
        IoctlArg::Out => json!("out"),
        IoctlArg::Fault => json!("fault"),
    }
}

fn num<T: TryFrom<i64> + TryFrom<u64>>(v: &Value) -> Option<T> {
    if let Some(u) = v.as_u64() {
        return T::try_from(u).ok();
    }
    T::try_from(v.as_i64()?).ok()
}

fn arg_from(v: &Value) -> Option<IoctlArg> {
    match v.as_str() {
        Some("out") => return Some(IoctlArg::Out),
        Some("fault") => return Some(IoctlArg::Fault),
        Some(_) => return None,
        None => {}
    }
    if let Some(x) = v.get("value") {
        return Some(IoctlArg::Value(x.as_u64()?));
    }
    if let Some(x) = v.get("int") {
        return Some(IoctlArg::Int(num(x)?));
    }
    if let Some(x) = v.get("hwaddr") {
        return Some(IoctlArg::Hwaddr {
            data: unhex(x.as_str()?)?.try_into().ok()?,
            family: num(v.get("family")?)?,
        });
    }
    if let Some(x) = v.get("ifreq") {
        let name: [u8; IFNAMSIZ] = unhex(x.as_str()?)?.try_into().ok()?;
        return Some(IoctlArg::Ifreq {
            name,
            flags: num(v.get("flags")?)?,
        });
    }
    if let Some(x) = v.get("txfilter") {
        let addrs = v.get("addrs")?.as_array()?.iter();
        return Some(IoctlArg::TxFilter {
            flags: num(x)?,
            addrs: addrs
                .map(|a| unhex(a.as_str()?)?.try_into().ok())
                .collect::<Option<_>>()?,
        });
    }
    if let Some(x) = v.get("fprog") {
        let insn = |i: &Value| {
            let i = i.as_array()?;
            Some(SockFilter {
                code: num(i.first()?)?,
                jt: num(i.get(1)?)?,
                jf: num(i.get(2)?)?,
                k: num(i.get(3)?)?,
            })
        };
        return Some(IoctlArg::Fprog {
            len: num(x)?,
            filter: v.get("filter")?.as_u64()?,
            insns: v
                .get("insns")?
                .as_array()?
                .iter()
                .map(insn)
                .collect::<Option<_>>()?,
        });
    }
    let b = v.get("bpf")?.as_str()?;
    [
        BpfFd::Detach,
        BpfFd::NotOpen,
        BpfFd::NotProg,
        BpfFd::Prog {
            socket_filter: true,
        },
        BpfFd::Prog {
            socket_filter: false,
        },
    ]
    .into_iter()
    .find(|x| bpf_name(*x) == b)
    .map(IoctlArg::BpfFd)
}

fn answer_json(a: &Answer) -> Value {
    match a {
        Err(e) => json!({"errno": e}),
        Ok(IoctlAnswer::Done) => json!("done"),
        Ok(IoctlAnswer::NetnsFd) => json!("netns-fd"),
        Ok(IoctlAnswer::HwAddr { family, data }) => json!({"hwaddr": hex(data), "family": family}),
        Ok(IoctlAnswer::Returned(n)) => json!({"returned": n}),
        Ok(IoctlAnswer::Int(n)) => json!({"int": n}),
        Ok(IoctlAnswer::Ifreq { name, flags }) => json!({"ifreq": hex(name), "flags": flags}),
        Ok(IoctlAnswer::Fprog { len, filter }) => json!({"fprog": len, "filter": filter}),
    }
}

fn answer_from(v: &Value) -> Option<Answer> {
    match v.as_str() {
        Some("done") => return Some(Ok(IoctlAnswer::Done)),
        Some("netns-fd") => return Some(Ok(IoctlAnswer::NetnsFd)),
        Some(_) => return None,
        None => {}
    }
    if let Some(e) = v.get("errno") {
        return Some(Err(num(e)?));
    }
    if let Some(n) = v.get("returned") {
        return Some(Ok(IoctlAnswer::Returned(num(n)?)));
    }
    if let Some(n) = v.get("int") {
        return Some(Ok(IoctlAnswer::Int(num(n)?)));
    }
    if let Some(n) = v.get("hwaddr") {
        return Some(Ok(IoctlAnswer::HwAddr {
            data: unhex(n.as_str()?)?.try_into().ok()?,
            family: num(v.get("family")?)?,
        }));
    }
    if let Some(n) = v.get("ifreq") {
        return Some(Ok(IoctlAnswer::Ifreq {
            name: unhex(n.as_str()?)?,
            flags: num(v.get("flags")?)?,
        }));
    }
    let len = num(v.get("fprog")?)?;
    Some(Ok(IoctlAnswer::Fprog {
        len,
        filter: v.get("filter")?.as_u64()?,
    }))
}
