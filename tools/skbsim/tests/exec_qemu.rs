//! QEMU's tap backend under `skbsim exec` (issue 23 item 5): `qemu-system-x86_64 -netdev
//! tap,ifname=skb0,vnet_hdr=on -device virtio-net-pci` (TCG) boots a lab guest kernel
//! (skbsim_lab: the cached Debian 6.12 cloud kernel and QEMU, the lab's base initramfs)
//! whose script puts 10.0.0.1/24 on eth0, pings the far side (10.0.0.2) and sends 108894
//! bytes through its TCP echo (port 7) with busybox nc. QEMU probes the file
//! (TUNGETFEATURES, TUNSETVNETHDRSZ before TUNSETIFF, TUNSETIFF with IFF_VNET_HDR,
//! TUNSETOFFLOAD, TUNSETSNDBUF), runs its `script=` (`ip link set skb0 up`: rtnetlink),
//! then reads the file with read(2) and writes it with writev(2) from its main loop
//! (ppoll on the fd); the guest's TSO sends come as GSO writes (virtio_net_hdr gso_type
//! TCPV4) through tun_get_user. Under both backends (`sim`: the device model with the
//! smoltcp far side; `tap`: a real tap in a private namespace, the Linux stack with
//! `socat TCP-LISTEN:7 PIPE` as the echo) the pings and the bytes come back and QEMU
//! gets the same ioctl answers (docs/exec.md#qemu).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use skbsim_lab::{KernelChoice, Lab, Payload};

/// The guest: eth0 up with 10.0.0.1/24, three pings to the far side, then a file more
/// than a TSO burst long through the far side's TCP echo, compared with what came back.
const GUEST: &str = "ip link set eth0 up
ip addr add 10.0.0.1/24 dev eth0
ping -c 3 -W 5 10.0.0.2
seq 1 20000 > /tmp/blob
nc -w 3 10.0.0.2 7 < /tmp/blob > /tmp/back
echo \"tcp echo: $(wc -c < /tmp/back) of $(wc -c < /tmp/blob) bytes\"
cmp /tmp/blob /tmp/back && echo \"tcp echo ok\"
";

/// The tap arm's far side has no TCP echo of its own: one connection's echo in the
/// namespace (socat's PIPE), started before QEMU, killed after it if still there.
const TAP_ECHO: &str =
    "socat TCP-LISTEN:7,reuseaddr PIPE & s=$!; \"$@\"; r=$?; kill $s 2>/dev/null; wait; exit $r";

/// The lab (QEMU and the 6.12 guest kernel, fetched into the cache on first use, as
/// `skbsim lab` does) and a run's initrd: the base archive, virtio_net, `script`.
fn initrd(dir: &Path, script: &str) -> (Lab, PathBuf) {
    let cache = skbsim_lab::default_cache_dir();
    let lab = Lab::open(&cache, &KernelChoice::Debian("6.12".into()), &|_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let payload = Payload {
        script: script.to_string(),
        modules: vec!["virtio_net".into()],
        cwd: PathBuf::from("/root"),
        files: Vec::new(),
        skbsim: None,
    };
    let out = dir.join("initrd.cpio");
    skbsim_lab::image::build_initrd(&lab.base, lab.modules(), &lab.kernel.kver, &payload, &out)
        .unwrap_or_else(|e| panic!("{e}"));
    (lab, out)
}

/// What one boot under `skbsim exec --backend BACKEND` left: the guest script's stdout
/// (the lab's data channel, ttyS1), the record's events, the wall clock.
struct Boot {
    output: String,
    events: Vec<Value>,
    took: Duration,
}

/// Boots the guest under `skbsim exec --backend BACKEND --json`, QEMU's console on its
/// stdout, killed (the whole process group, QEMU with it) after two minutes.
fn boot(dir: &Path, backend: &str, script: &str) -> Boot {
    let (lab, initrd) = initrd(dir, script);
    let t = &lab.tools;
    let data = dir.join(format!("data.{backend}.txt"));
    // QEMU runs its `script=` with the device's name once TUNSETIFF made it: `ip link set
    // skb0 up`, an rtnetlink request the supervisor answers for the simulated device.
    let ifup = dir.join("ifup");
    std::fs::write(&ifup, "#!/bin/sh\nexec ip link set \"$1\" up\n").expect("write ifup");
    std::fs::set_permissions(&ifup, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod ifup");
    let json = dir.join(format!("record.{backend}.jsonl"));
    let mut qemu: Vec<OsString> = vec![t.qemu.clone().into()];
    for fw in &t.firmware {
        qemu.extend(["-L".into(), fw.clone().into()]);
    }
    qemu.extend(
        [
            "-accel",
            "tcg",
            "-m",
            "256",
            "-nographic",
            "-monitor",
            "none",
            "-no-reboot",
            "-serial",
            "stdio",
            "-serial",
        ]
        .map(OsString::from),
    );
    qemu.push(format!("file:{}", data.display()).into());
    qemu.extend(["-kernel".into(), lab.kernel.vmlinuz.clone().into()]);
    qemu.extend(["-initrd".into(), initrd.into()]);
    let netdev = format!(
        "tap,id=n0,ifname=skb0,script={},downscript=no,vnet_hdr=on",
        ifup.display()
    );
    qemu.extend(
        [
            "-append",
            "console=ttyS0 panic=-1 loglevel=5 8250.nr_uarts=2 rdinit=/init",
            "-netdev",
            // No option ROM: the guest boots the kernel directly (iPXE only costs time).
        ]
        .map(OsString::from),
    );
    qemu.push(netdev.into());
    qemu.extend(
        [
            "-device",
            "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,romfile=",
        ]
        .map(OsString::from),
    );
    let start = Instant::now();
    let program: Vec<OsString> = if backend == "tap" {
        ["sh", "-c", TAP_ECHO, "sh"]
            .map(OsString::from)
            .into_iter()
            .chain(qemu)
            .collect()
    } else {
        qemu
    };
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(env!("CARGO_BIN_EXE_skbsim"))
        .args(["exec", "--backend", backend, "--json"])
        .arg(&json)
        .arg("--")
        .args(&program)
        .env("LD_LIBRARY_PATH", &t.lib_path)
        .env("QEMU_MODULE_DIR", &t.qemu_module_dir)
        .output()
        .expect("run skbsim exec");
    let took = start.elapsed();
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{backend}: exit {:?} after {took:?}; stderr {}; console:\n{console}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
    );
    let output = std::fs::read_to_string(&data).unwrap_or_default();
    let text = std::fs::read_to_string(&json).expect("the record");
    let mut events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(events[0]["backend"], backend);
    events.remove(0);
    eprintln!("{backend}: {took:?}, {} events", events.len());
    Boot {
        output,
        events,
        took,
    }
}

/// The ioctls QEMU made on its tap file, each with what it got: command, argument,
/// return, what was copied back.
/// The ioctls QEMU made, in order, each call that repeats the one before it (same
/// command, argument and answer) kept once: how many times QEMU re-applies the same
/// offloads (TUNSETOFFLOAD from virtio_net_apply_guest_offloads / tap_set_offload on each
/// feature write of the guest driver) depends on the guest's timing, and differed between
/// two runs on the same kernel (17 once or twice); what each call answers does not.
fn ioctls(events: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for e in events.iter().filter(|e| e["event"] == "ioctl") {
        let mut e = e.clone();
        if let Some(o) = e.as_object_mut() {
            o.remove("index");
            o.remove("model");
        }
        if out.last() != Some(&e) {
            out.push(e);
        }
    }
    out
}

/// The writes whose skb the stack got: (length, gso_type).
fn written_skbs(events: &[Value]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter(|e| e["event"] == "write")
        .filter_map(|e| {
            let skb = &e["skb"];
            Some((skb["len"].as_u64()?, skb["gso_type"].as_str()?.to_string()))
        })
        .collect()
}

#[test]
#[ignore = "real kernel, QEMU and the lab's guest kernel: needs root (a private network namespace, /dev/net/tun); ci/test.sh runs it as root with --include-ignored"]
fn qemu_guest_pings_and_tcp_echoes_under_both_backends() {
    skbsim_kernel::require_privileges();
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = boot(dir.path(), "sim", GUEST);
    let tap = boot(dir.path(), "tap", GUEST);
    for (name, b) in [("sim", &sim), ("tap", &tap)] {
        for want in [
            "3 packets transmitted, 3 packets received",
            "tcp echo: 108894 of 108894 bytes",
            "tcp echo ok",
        ] {
            assert!(
                b.output.contains(want),
                "{name}: no {want:?} from the guest ({:?}):\n{}",
                b.took,
                b.output
            );
        }
    }
    let (s, t) = (ioctls(&sim.events), ioctls(&tap.events));
    let first = |v: &[Value], name: &str| {
        v.iter()
            .position(|e| e["result"]["op"] == name)
            .unwrap_or_else(|| panic!("no {name} in {v:#?}"))
    };
    // QEMU's probe: TUNGETFEATURES, TUNSETVNETHDRSZ without a device (EBADFD), then
    // TUNSETIFF with IFF_TAP | IFF_NO_PI | IFF_VNET_HDR (0x0002 | 0x1000 | 0x4000).
    assert!(first(&t, "TUNGETFEATURES") < first(&t, "TUNSETVNETHDRSZ"));
    assert_eq!(
        t[first(&t, "TUNSETVNETHDRSZ")]["result"]["result"],
        "EBADFD"
    );
    let setiff = &t[first(&t, "TUNSETIFF")];
    assert_eq!(
        setiff["answer"]["flags"].as_u64().map(|f| f & 0x7002),
        Some(0x7002)
    );
    assert_eq!(s, t);
    // The guest's TSO: both stacks got GSO skbs longer than the 1514-byte frame the MTU
    // allows, SKB_GSO_TCPV4 from the write's virtio_net_hdr: the model's skb says
    // TCPV4|DODGY, the real one's (its packet socket's PACKET_VNET_HDR,
    // virtio_net_hdr_from_skb) TCPV4, which carries no DODGY.
    for (name, b, want) in [("sim", &sim, "TCPV4|DODGY"), ("tap", &tap, "TCPV4")] {
        let gso: Vec<_> = written_skbs(&b.events)
            .into_iter()
            .filter(|(_, g)| g != "0")
            .collect();
        assert!(!gso.is_empty(), "{name}: no GSO write");
        assert!(
            gso.iter().all(|(len, g)| *len > 1514 && g == want),
            "{name}: {gso:?}"
        );
    }
}
