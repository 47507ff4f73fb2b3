//! Real clients under `skbsim exec` and on the real kernel (issue 23 item 5): each run as
//! `nobody` under `skbsim exec` and as root in a private network namespace, and what both
//! see compared (docs/exec.md#clients). Every test needs root (setpriv, unshare) and is
//! `#[ignore]`d; ci/test.sh runs them as root with --include-ignored.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `skbsim exec ARGS -- PROGRAM...` as `nobody` (no capabilities, no groups).
fn exec_as_nobody(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_skbsim"))
        .arg("exec")
        .args(args)
        .current_dir(dir);
    c
}

/// `script` as root in a fresh network namespace whose new devices have IPv6 off (no
/// router solicitations or MLD reports of the kernel's own among the program's frames).
fn in_netns(dir: &Path, script: &str) -> Command {
    let mut c = Command::new("unshare");
    c.args(["-n", "sh", "-c"])
        .arg(format!(
            "echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6 && ip link set lo up && {script}"
        ))
        .current_dir(dir);
    c
}

/// A temp dir `nobody` can enter.
fn temp_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod temp dir");
    dir
}

/// tools/skbsim-exec/tests/c/NAME built with gcc into `dir`.
fn build_c(dir: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../skbsim-exec/tests/c")
        .join(name);
    let out = dir.join(name.trim_end_matches(".c"));
    let built = Command::new("gcc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&out)
        .arg(&src)
        .status();
    assert!(
        built.is_ok_and(|s| s.success()),
        "gcc could not build {}",
        src.display()
    );
    out
}

fn stdout_of(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}, stdout: {} stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `command` (a shell command line, run in `dir`) as root in a fresh network namespace
/// and as nobody under `skbsim exec`: both stdouts, after checking that `expected` lines
/// (what the kernel's rules say) are among the real kernel's and that the two are equal.
fn same_as_the_kernel(dir: &Path, command: &str, expected: &[&str]) {
    let real = stdout_of(in_netns(dir, command).output().expect("run unshare"));
    let sim = stdout_of(
        exec_as_nobody(dir, &["--", "sh", "-c", command])
            .output()
            .expect("run skbsim exec"),
    );
    for line in expected {
        assert!(
            real.lines().any(|l| l == *line),
            "real kernel: no {line:?} in\n{real}"
        );
    }
    assert_eq!(sim, real);
}

/// A program nobody here wrote doing the write the 2024 stable window refused is not at
/// hand: Debian 12's wireguard-go is 0.0.20220316, before its GSO writes (0.0.20230223),
/// and no other Debian program writes GSO with a vnet header without a guest kernel. So
/// tools/skbsim-exec/tests/c/gso_write.c makes wireguard-go's coalesced write with the
/// documented tun API: a TCPV4 NEEDS_CSUM write of two whole 100-byte segments (EINVAL in
/// the window: 240 % 100 = 40 is not > 40) and one of 201 bytes of payload (accepted by
/// all). The same binary: the host's kernel (6.18) accepts both; `--profile linux-6.18`
/// the same; `--profile linux-6.1.106` refuses the first with EINVAL.
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn gso_write_fate_follows_the_profile() {
    skbsim_kernel::require_privileges();
    let dir = temp_dir();
    let prog = build_c(dir.path(), "gso_write.c");
    let prog = prog.to_str().expect("utf-8 path");
    let real = stdout_of(in_netns(dir.path(), prog).output().expect("run unshare"));
    // 10 vnet header bytes + 240 and + 241: a tun's write returns everything written.
    let accepted = "whole=250\ntail=251\n";
    assert_eq!(real, accepted, "the host kernel");
    for (profile, want) in [
        ("linux-6.18", accepted),
        ("linux-6.1.106", "whole=EINVAL\ntail=251\n"),
        ("linux-6.1.99", accepted),
    ] {
        let out = exec_as_nobody(dir.path(), &["--profile", profile, "--", prog])
            .output()
            .expect("run skbsim exec");
        assert_eq!(stdout_of(out), want, "--profile {profile}");
    }
}

/// The AF_INET address ioctls socat's TUN address uses, answered for a simulated device
/// (src/devinet.rs) as net/ipv4/devinet.c: devinet_ioctl answers them:
/// tools/skbsim-exec/tests/c/tun_addr.c on a tun and a tap, as nobody under exec and on
/// the real kernel, line for line: EADDRNOTAVAIL before an address, EINVAL for a
/// multicast address, another sin_family and a mask with holes, /32 on the
/// point-to-point tun and the classful prefix on the tap, each new address resetting it.
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn address_ioctls_as_the_real_kernel_answers() {
    skbsim_kernel::require_privileges();
    let dir = temp_dir();
    let prog = build_c(dir.path(), "tun_addr.c");
    // devinet_ioctl: IFF_POINTOPOINT gets /32, a tap inet_abc_len (10/8, 172.16/16).
    same_as_the_kernel(
        dir.path(),
        prog.to_str().expect("utf-8 path"),
        &[
            "ad0.netmask=255.255.255.255 family=2",
            "ad1.netmask=255.0.0.0 family=2",
            "ad1.netmask=255.255.0.0 family=2",
            "ad0.addr(224.0.0.1)=EINVAL",
            "ad0.addr=EADDRNOTAVAIL",
        ],
    );
}

/// A device's hardware address, answered as net/core/dev.c answers it
/// (docs/tun-device.md#hwaddr): tools/skbsim-exec/tests/c/tun_hwaddr.c on a tap and a
/// tun, as nobody under exec and on the real kernel, line for line.
#[test]
#[ignore = "real kernel and gcc: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn hardware_address_ioctls_as_the_real_kernel_answers() {
    skbsim_kernel::require_privileges();
    let dir = temp_dir();
    let prog = build_c(dir.path(), "tun_hwaddr.c");
    // eth_hw_addr_random; dev_set_mac_address's EOPNOTSUPP (no ndo_set_mac_address on a
    // tun), EINVAL (family), EADDRNOTAVAIL (eth_prepare_mac_addr_change); an up tap.
    same_as_the_kernel(
        dir.path(),
        prog.to_str().expect("utf-8 path"),
        &[
            "tap.first=family 1 local-unicast 1",
            "tap.get.file=family 1 00:fe:98:94:d2:43 rest 00000000",
            "tap.set.up.file=0",
            "tap.set.multicast=EADDRNOTAVAIL",
            "tap.set.family-none=EINVAL",
            "tun.get=family 65534 00:00:00:00:00:00 rest 00000000",
            "tun.set.file=EOPNOTSUPP",
        ],
    );
}

/// `ip addr add` (iproute2's RTM_NEWADDR) on a simulated tun and tap, as
/// net/ipv4/devinet.c: inet_rtm_newaddr answers it (tools/skbsim-exec/src/rtnl.rs): the
/// devices made persistent by `ip tuntap add`, the addresses added and replaced, a zero
/// address accepted, then read back with SIOCGIFADDR / SIOCGIFNETMASK from Python; as
/// nobody under exec and as root on the real kernel, line for line.
#[test]
#[ignore = "real kernel, iproute2 and python3: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn rtnetlink_addresses_as_the_real_kernel_answers() {
    skbsim_kernel::require_privileges();
    let dir = temp_dir();
    let read_addr = "import fcntl, socket, struct, sys\n\
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
        for name in sys.argv[1:]:\n\
        \x20   for key, req in ((\"addr\", 0x8915), (\"netmask\", 0x891b)):\n\
        \x20       try:\n\
        \x20           r = fcntl.ioctl(s.fileno(), req, struct.pack(\"16s16s\", name.encode(), b\"\"))\n\
        \x20           print(f\"{name}.{key}={socket.inet_ntoa(r[20:24])}\")\n\
        \x20       except OSError as e:\n\
        \x20           print(f\"{name}.{key}=E{e.errno}\")\n";
    std::fs::write(dir.path().join("read_addr.py"), read_addr).expect("write read_addr.py");
    let script = "ip tuntap add dev ad0 mode tun; echo tuntap0=$?\n\
        ip tuntap add dev ad1 mode tap; echo tuntap1=$?\n\
        ip addr add 10.9.0.1/24 dev ad0; echo add0=$?\n\
        ip addr add 172.16.5.9/20 dev ad1; echo add1=$?\n\
        ip addr replace 10.9.0.1/24 dev ad0; echo replace0=$?\n\
        ip addr add 0.0.0.0/8 dev ad1; echo zero=$?\n\
        python3 read_addr.py ad0 ad1\n";
    std::fs::write(dir.path().join("script.sh"), script).expect("write script.sh");
    same_as_the_kernel(
        dir.path(),
        "sh script.sh",
        &[
            "add0=0",
            "replace0=0",
            "ad0.addr=10.9.0.1",
            "ad0.netmask=255.255.255.0",
            "ad1.netmask=255.255.240.0",
        ],
    );
}

/// RFC 1071 checksum of `b`.
fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An IPv4 packet (no options, ID 1, TTL 64) with `flags` (0x40: DF) and a valid checksum.
fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, flags: u8, body: &[u8]) -> Vec<u8> {
    let len = (20 + body.len()) as u16;
    let mut p = vec![0x45, 0];
    p.extend(len.to_be_bytes());
    p.extend([0, 1, flags, 0, 64, proto, 0, 0]);
    p.extend(src);
    p.extend(dst);
    let c = csum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend(body);
    p
}

fn icmp_echo(kind: u8, id: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let mut m = vec![kind, 0, 0, 0];
    m.extend(id.to_be_bytes());
    m.extend(seq.to_be_bytes());
    m.extend(data);
    let c = csum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let len = (8 + data.len()) as u16;
    let mut u = Vec::new();
    u.extend(sport.to_be_bytes());
    u.extend(dport.to_be_bytes());
    u.extend(len.to_be_bytes());
    u.extend([0, 0]);
    u.extend(data);
    let mut pseudo = Vec::from(src);
    pseudo.extend(dst);
    pseudo.extend([0, 17]);
    pseudo.extend(len.to_be_bytes());
    pseudo.extend(&u);
    let c = csum(&pseudo);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

/// What is compared of a reply: everything but the IP ID and the header checksum, which
/// covers it (the kernel's ID is not deterministic); the checksum must be valid.
fn comparable(reply: &[u8]) -> Vec<u8> {
    assert!(reply.len() >= 20, "short reply {reply:02x?}");
    assert_eq!(csum(&reply[..20]), 0, "IP header checksum of {reply:02x?}");
    let mut r = reply.to_vec();
    r[4..6].fill(0);
    r[10..12].fill(0);
    r
}

/// Writes each packet on the child's stdin and reads the same number of bytes back from
/// its stdout: the answer socat read from the tun.
fn converse(mut cmd: Command, packets: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut replies = Vec::new();
    for p in packets {
        stdin.write_all(p).expect("write to socat");
        let mut r = vec![0u8; p.len()];
        if let Err(e) = stdout.read_exact(&mut r) {
            let out = child.wait_with_output().expect("wait");
            panic!(
                "no answer to {p:02x?} ({e}); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        replies.push(r);
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    replies
}

/// socat's TUN address (Debian `socat`, unmodified): `TUN:10.0.0.1/24,tun-type=tun,
/// iff-no-pi,up` opens /dev/net/tun, names the device with TUNSETIFF, sets 10.0.0.1 and
/// /24 with SIOCSIFADDR / SIOCSIFNETMASK and IFF_UP with SIOCSIFFLAGS on an AF_INET
/// socket, then copies between the tun and its stdio. Through it, from 10.0.0.3 (a host
/// behind the tun): an ICMP echo to 10.0.0.1 (the address socat gave the device: the
/// kernel's own on the far side) and a UDP datagram to 10.0.0.2:7.
///
/// Real kernel: 10.0.0.2/32 on lo and a UDP echo bound to it (socat UDP4-RECVFROM:7,fork
/// PIPE); under exec: the stack far side (--far-addr 10.0.0.2/24). Both replies, read
/// back through socat's stdout, must be the requests mirrored as written here (addresses
/// and ports swapped, ICMP type 0 with its checksum, DF as the kernel sets it: none on
/// ICMP, set on UDP), byte for byte but for the IP ID.
#[test]
#[ignore = "real kernel and socat: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn socat_tun_two_way_traffic_to_the_far_side() {
    skbsim_kernel::require_privileges();
    let dir = temp_dir();
    let (me, tun_addr, far) = ([10, 0, 0, 3], [10, 0, 0, 1], [10, 0, 0, 2]);
    let ping = ipv4(
        me,
        tun_addr,
        1,
        0,
        &icmp_echo(8, 0x1234, 1, b"to socat's 10.0.0.1"),
    );
    let dgram = ipv4(
        me,
        far,
        17,
        0x40,
        &udp(me, far, 4000, 7, b"skbsim socat echo"),
    );
    let want = [
        ipv4(
            tun_addr,
            me,
            1,
            0,
            &icmp_echo(0, 0x1234, 1, b"to socat's 10.0.0.1"),
        ),
        ipv4(
            far,
            me,
            17,
            0x40,
            &udp(far, me, 7, 4000, b"skbsim socat echo"),
        ),
    ];
    let socat = "socat TUN:10.0.0.1/24,tun-type=tun,iff-no-pi,up STDIO";
    // The echo server is up before the tun carries anything; it goes when socat does.
    let real = in_netns(
        dir.path(),
        &format!(
            "ip addr add 10.0.0.2/32 dev lo && \
             {{ socat UDP4-RECVFROM:7,bind=10.0.0.2,fork PIPE </dev/null >/dev/null & }} && \
             srv=$! && until grep -q ':0007 ' /proc/net/udp; do sleep 0.05; done && \
             timeout 60 {socat}; rc=$?; kill $srv; exit $rc"
        ),
    );
    let mut sim = exec_as_nobody(dir.path(), &["--"]);
    sim.arg("timeout").arg("60").args(socat.split(' '));
    let packets = [ping, dgram];
    for (arm, cmd) in [("real kernel", real), ("skbsim exec", sim)] {
        let got = converse(cmd, &packets);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(comparable(g), comparable(w), "{arm}");
        }
    }
}

/// The lines of wireguard-go's debug log without their timestamps and without the
/// goroutines' start/stop lines (`Routine: ...`), whose order and number vary.
fn wg_events(log: &str) -> std::collections::BTreeSet<String> {
    log.lines()
        .filter_map(|l| l.strip_prefix("DEBUG: (wga) "))
        .map(|l| l.splitn(3, ' ').nth(2).unwrap_or(l).to_string())
        .filter(|l| !l.contains("Routine:"))
        .collect()
}

/// wireguard-go (Debian 12's 0.0.20220316, a Go program issuing raw syscalls,
/// unmodified) as peer A: its device up under `skbsim exec` as nobody, as on a real tun,
/// and its first packets exchanged with a second wireguard-go (peer B, real tun) across
/// a veth: tests/exec_clients/wg_pair.sh. B pings 10.0.0.2 behind A three times; A
/// decrypts each echo and writes it to its device, the far side (the kernel's stack on
/// the real tun, the stack far side under exec) answers, A reads the answer and sends it
/// back. Compared: B's ping (3 answered, from 10.0.0.2, TTL 64) and the set of things A
/// logs (its interface brought up, the handshake answered, no failure), which must be the
/// same on both arms.
///
/// Before pidfd_open's ENOENT for a non-leader thread was retried with PIDFD_THREAD
/// (src/sys.rs: steal_fd), the readiness token of A's device could not be taken back from
/// the Go thread that last read it: the next answer made no new edge for Go's
/// edge-triggered epoll, and only the first ping was answered.
#[test]
#[ignore = "real kernel and wireguard-go: needs root (setpriv to nobody, unshare -nm, veth); ci/test.sh runs it as root with --include-ignored"]
fn wireguard_go_device_up_and_first_packets() {
    skbsim_kernel::require_privileges();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/exec_clients/wg_pair.sh");
    let run = |arm: &str| {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777))
            .expect("chmod temp dir");
        let out = Command::new("timeout")
            .args(["-k", "5", "90", "unshare", "-nm", "sh"])
            .arg(&script)
            .env("ARM", arm)
            .env("WORK", dir.path())
            .env("SKBSIM", env!("CARGO_BIN_EXE_skbsim"))
            .output()
            .expect("run unshare");
        if !out.status.success() {
            // What each side had written when it stopped.
            for f in ["a.out", "A.log", "B.log", "ping.out"] {
                let text = std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
                eprintln!("--- {arm}: {f}\n{text}");
            }
        }
        let text = stdout_of(out);
        let (ping, log) = text.split_once("--- A.log\n").expect("A.log in the output");
        let ping: Vec<String> = ping
            .lines()
            .filter(|l| l.starts_with("64 bytes") || l.contains("packets transmitted"))
            .map(|l| l.split(" time").next().unwrap_or(l).to_string())
            .collect();
        (ping, wg_events(log))
    };
    let (real_ping, real_log) = run("real");
    let (sim_ping, sim_log) = run("exec");
    let want_ping: Vec<String> = (1..=3)
        .map(|s| format!("64 bytes from 10.0.0.2: icmp_seq={s} ttl=64"))
        .chain(["3 packets transmitted, 3 received, 0% packet loss,".to_string()])
        .collect();
    assert_eq!(real_ping, want_ping, "real kernel");
    assert_eq!(sim_ping, want_ping, "skbsim exec");
    // wireguard-go names a peer by its public key's base64, first and last four
    // characters: RFC 7748's Bob, 3p7bfXt9...FG+IK08=.
    for line in [
        "Interface state was Down, requested Up, now Up",
        "peer(3p7b…IK08) - Received handshake initiation",
        "peer(3p7b…IK08) - Sending handshake response",
    ] {
        assert!(
            real_log.contains(line),
            "real kernel: no {line:?} in {real_log:#?}"
        );
    }
    assert_eq!(sim_log, real_log);
}

/// rtnetlink requests whose answer is data about a simulated device (src/rtnl_get.rs,
/// rtnl_answer.rs): iproute2's `ip link show dev`, `ip -d link show dev` (RTM_GETLINK by
/// name and by index: rtnl_fill_ifinfo, tun_fill_info), `ip addr show dev` (a strict
/// RTM_GETADDR dump filtered by the device's index: inet_fill_ifaddr), the link dump of
/// `ip -o link show` and an unfiltered RTM_GETADDR dump (python3, the messages' own
/// names: the host's devices, which exec's program also sees, may share an ifindex with a
/// simulated one) print the same lines as nobody under exec as on this host's kernel. A
/// tap's random address is masked. Before: `Device "ad0" does not exist.`
#[test]
#[ignore = "real kernel: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn rtnetlink_link_and_address_queries_as_the_real_kernel_answers() {
    skbsim_kernel::require_privileges();
    let dir = temp_dir();
    let dump_addr = "import socket, struct\n\
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\n\
        s.bind((0, 0))\n\
        s.send(struct.pack('IHHII', 24, 22, 0x301, 7, 0) + struct.pack('BBBBI', 2, 0, 0, 0, 0))\n\
        done = False\n\
        while not done:\n\
        \x20   d = s.recv(65536)\n\
        \x20   at = 0\n\
        \x20   while at < len(d):\n\
        \x20       ln, t, fl, seq, pid = struct.unpack_from('IHHII', d, at)\n\
        \x20       if t == 3:\n\
        \x20           print('done', seq, struct.unpack_from('i', d, at + 16)[0])\n\
        \x20           done = True\n\
        \x20           break\n\
        \x20       fam, plen, fla, scope, idx = struct.unpack_from('BBBBI', d, at + 16)\n\
        \x20       attrs, a = {}, at + 24\n\
        \x20       while a < at + ln:\n\
        \x20           al, ty = struct.unpack_from('HH', d, a)\n\
        \x20           attrs[ty] = d[a + 4:a + al]\n\
        \x20           a += (al + 3) & ~3\n\
        \x20       label = attrs.get(3, b'').rstrip(b'\\0').decode()\n\
        \x20       if label.startswith('ad'):\n\
        \x20           print(label, socket.inet_ntoa(attrs[2]), plen, hex(fla), scope, fl, attrs[8].hex(), attrs[6][:8].hex())\n\
        \x20       at += (ln + 3) & ~3\n";
    std::fs::write(dir.path().join("dump_addr.py"), dump_addr).expect("write dump_addr.py");
    let mac = "sed 's/link\\/ether [0-9a-f:]*/link\\/ether MAC/'";
    let script = format!(
        "ip tuntap add dev ad0 mode tun; echo tuntap0=$?\n\
        ip tuntap add dev ad1 mode tap; echo tuntap1=$?\n\
        ip link show dev ad0; echo show0=$?\n\
        ip link show dev ad1 | {mac}\n\
        ip link set ad0 up; ip link set ad1 mtu 1400\n\
        ip -d link show dev ad0\n\
        ip -d link show dev ad1 | {mac}\n\
        ip addr add 10.9.0.1/24 dev ad0; echo add=$?\n\
        ip addr add 172.16.5.9/20 dev ad1\n\
        ip addr show dev ad0\n\
        ip -o link show | grep ' ad[01]:' | {mac}\n\
        python3 dump_addr.py\n"
    );
    std::fs::write(dir.path().join("script.sh"), script).expect("write script.sh");
    same_as_the_kernel(
        dir.path(),
        "sh script.sh",
        &[
            "show0=0",
            "2: ad0: <POINTOPOINT,MULTICAST,NOARP> mtu 1500 qdisc noop state DOWN mode DEFAULT group default qlen 500",
            "    tun type tun pi off vnet_hdr off persist on addrgenmode eui64 numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535 tso_max_size 65536 tso_max_segs 65535 gro_max_size 65536 ",
            "    inet 10.9.0.1/24 scope global ad0",
            "ad1 172.16.5.9 20 0x80 0 2 80000000 ffffffffffffffff",
        ],
    );
}

/// A request the simulated device refuses is answered with its own error, as the kernel
/// acks it (netlink_ack: the errno, the request echoed, and for iproute2's NETLINK_EXT_ACK
/// socket the handler's message), and RTM_DELADDR removes the address inet_rtm_deladdr
/// matches, and IFLA_ADDRESS sets a tap's hardware address (src/rtnl.rs): the same lines
/// under exec as nobody as on this host's kernel.
/// Before: `RTNETLINK answers: Operation not permitted` (the host kernel's answer to
/// nobody) for each.
#[test]
#[ignore = "real kernel: needs root (setpriv to nobody, unshare -n); ci/test.sh runs it as root with --include-ignored"]
fn rtnetlink_refusals_and_deladdr_as_the_real_kernel_answers() {
    skbsim_kernel::require_privileges();
    let dir = temp_dir();
    let script = "ip tuntap add dev ad0 mode tun\n\
        ip addr add 10.9.0.1/24 dev ad0; echo add=$?\n\
        ip addr add 10.9.0.1/24 dev ad0 2>&1; echo add_again=$?\n\
        ip link set ad0 mtu 40 2>&1; echo mtu40=$?\n\
        ip link set ad0 mtu 70000 2>&1; echo mtu70000=$?\n\
        ip addr del 10.9.1.1/24 dev ad0 2>&1; echo del_other=$?\n\
        ip addr del 10.9.0.1/16 dev ad0 2>&1; echo del_prefix=$?\n\
        ip addr del 10.9.0.1/24 dev ad0 2>&1; echo del=$?\n\
        ip addr del 10.9.0.1/24 dev ad0 2>&1; echo del_again=$?\n\
        ip addr show dev ad0\n\
        ip tuntap add dev ad1 mode tap\n\
        ip link set dev ad1 address 02:11:22:33:44:55; echo mac=$?\n\
        ip link show dev ad1\n\
        ip link set dev ad1 address 01:00:5e:00:00:01 2>&1; echo mcast=$?\n\
        ip link set dev ad1 address 00:00:00:00:00:00 2>&1; echo zero=$?\n\
        ip link set dev ad0 address 02:11:22:33:44:66 2>&1; echo tun=$?\n\
        ip link set dev ad1 up; ip link set dev ad1 address 02:11:22:33:44:77; echo up_mac=$?\n\
        ip link show dev ad1\n";
    std::fs::write(dir.path().join("script.sh"), script).expect("write script.sh");
    same_as_the_kernel(
        dir.path(),
        "sh script.sh",
        &[
            "Error: ipv4: Address already assigned.",
            "Error: mtu less than device minimum.",
            "Error: mtu greater than device maximum.",
            "del_prefix=2",
            "del=0",
            "Error: ipv4: Address not found.",
            "del_again=2",
            // do_setlink's IFLA_ADDRESS: eth_prepare_mac_addr_change's EADDRNOTAVAIL for a
            // multicast or zero address, a tun's EOPNOTSUPP (no ndo_set_mac_address), a
            // running tap takes it (IFF_LIVE_ADDR_CHANGE).
            "    link/ether 02:11:22:33:44:55 brd ff:ff:ff:ff:ff:ff",
            "mcast=2",
            "RTNETLINK answers: Operation not supported",
            "    link/ether 02:11:22:33:44:77 brd ff:ff:ff:ff:ff:ff",
        ],
    );
}
