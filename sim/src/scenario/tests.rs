//! Tests of scenario.rs.

use super::*;
use crate::skb::IpSummed;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(Path::new("scenarios/tun-read/x.toml"), text)
}

const MINIMAL: &str = "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"tun-read\"\n";

#[test]
fn minimal_scenario_gets_kernel_defaults() {
    let s = parse(MINIMAL).unwrap();
    assert_eq!(s.name, "tun-read/x");
    assert_eq!(s.input, Path::new("scenarios/tun-read/../pcaps/a.pcap"));
    assert_eq!(s.profile.name, "linux-6.18");
    assert_eq!(s.device, TunConfig::default());
    assert!(s.skb.vlan_hwaccel);
    assert_eq!(s.reader.buffer(7), 65536);
}

#[test]
fn unknown_key_names_file_and_key() {
    let e = parse(&format!("{MINIMAL}[device]\nno_pii = true\n")).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("scenarios/tun-read/x.toml: "), "{msg}");
    assert!(msg.contains("no_pii"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn bad_values_are_explained() {
    let cases = [
        (
            "[device]\nvnet_hdr = true\nvnet_hdr_sz = 8\n",
            "8 is outside 10..=",
        ),
        ("profile = \"linux-2.4\"\n", "unknown kernel profile"),
        ("[reader]\nbuffers = [100, 0]\n", "must be > 0"),
        (
            "[skb]\ngso = \"tcp\"\ngso_size = 1000\n",
            "CHECKSUM_PARTIAL",
        ),
        ("[skb]\nheadlen = \"some\"\n", "headlen"),
        ("[device]\noffloads = [\"tso4\"]\n", "csum"),
        ("[device]\noffloads = [\"csum\", \"uso4\"]\n", "go together"),
        ("pipeline2 = 1\n", "pipeline2"),
    ];
    for (extra, want) in cases {
        // Keys before any table header belong to the root table.
        let text = if extra.starts_with('[') {
            format!("{MINIMAL}{extra}")
        } else {
            format!("{extra}{MINIMAL}")
        };
        let msg = parse(&text).unwrap_err().to_string();
        assert!(msg.contains(want), "{extra:?}: {msg}");
    }
}

#[test]
fn per_frame_overrides_inherit_the_scenario_recipe() {
    let s = parse(&format!(
        "{MINIMAL}[skb]\nvlan = \"inband\"\n[[skb.frame]]\nindex = 2\nchecksum = \"unnecessary\"\n"
    ))
    .unwrap();
    assert!(!s.recipe_for(0).vlan_hwaccel);
    assert!(!s.recipe_for(2).vlan_hwaccel);
    assert_eq!(s.recipe_for(2).checksum, IpSummed::Unnecessary);
}

/// `text` (a root-key prefix, then tables) parsed as `scenarios/<pipeline>/x.toml`.
fn parse_as(pipeline: &str, tables: &str) -> Result<Scenario, String> {
    let text = format!(
        "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"{pipeline}\"\n{tables}"
    );
    Scenario::parse(Path::new(&format!("scenarios/{pipeline}/x.toml")), &text)
        .map_err(|e| e.to_string())
}

/// Each numeric bound: the limit itself accepted, one past it refused with a one-line
/// message naming the file, the key and the range.
#[test]
fn numeric_keys_are_bounded_at_the_kernel_limits() {
    let vhost = "[vhost]\nfill = \"burst\"\n";
    // (pipeline, table text with {} for the value, key, accepted, refused, range)
    let cases: [(&str, &str, &str, u64, u64, &str); 13] = [
        (
            "tun-read",
            "[device]\nvnet_hdr = true\nvnet_hdr_sz = {}\n",
            "device.vnet_hdr_sz",
            10,
            9,
            "10..=16777216",
        ),
        (
            "tun-read",
            "[device]\nvnet_hdr = true\nvnet_hdr_sz = {}\n",
            "device.vnet_hdr_sz",
            16 << 20,
            (16 << 20) + 1,
            "10..=16777216",
        ),
        (
            "tun-read",
            "[device]\nmtu = {}\n",
            "device.mtu",
            68,
            67,
            "68..=65521",
        ),
        (
            "tun-read",
            "[device]\nmtu = {}\n",
            "device.mtu",
            65521,
            65522,
            "68..=65521",
        ),
        (
            "tun-read",
            "[device]\nkind = \"tun\"\nmtu = {}\n",
            "device.mtu",
            65535,
            65536,
            "68..=65535",
        ),
        (
            "tun-read",
            "[device]\ntx_queue_len = {}\n",
            "device.tx_queue_len",
            1,
            0,
            "1..=524288",
        ),
        (
            "tun-read",
            "[device]\ntx_queue_len = {}\n",
            "device.tx_queue_len",
            524288,
            524289,
            "1..=524288",
        ),
        (
            "tun-read",
            "[reader]\nbuffers = [{}]\n",
            "reader.buffers[0]",
            16 << 20,
            (16 << 20) + 1,
            "0..=16777216",
        ),
        (
            "tun-read",
            "[reader]\nread_every = {}\n",
            "reader.read_every",
            1,
            0,
            "1..=",
        ),
        (
            "tun-read",
            "[skb]\nheadlen = {}\n",
            "skb.headlen",
            u32::MAX.into(),
            u64::from(u32::MAX) + 1,
            "0..=4294967295",
        ),
        (
            "tap-write",
            "[writer]\n[[writer.write]]\nindex = 0\ntruncate = {}\n",
            "writer.write[0].truncate",
            0x7fff_f000,
            0x7fff_f001,
            "0..=2147479552",
        ),
        (
            "vhost-tx",
            "[vhost]\nfill = \"burst\"\nburst = {}\n",
            "vhost.burst",
            32768,
            32769,
            "1..=32768",
        ),
        (
            "tap-gro",
            "[gro]\nburst = {}\n",
            "gro.burst",
            65,
            66,
            "1..=65",
        ),
    ];
    for (pipeline, table, key, ok, bad, range) in cases {
        let at = |v: u64| parse_as(pipeline, &table.replace("{}", &v.to_string()));
        if let Err(e) = at(ok) {
            panic!("{key} = {ok} refused: {e}");
        }
        let msg = at(bad).unwrap_err();
        let want = format!("scenarios/{pipeline}/x.toml: {key}: {bad} is outside {range}");
        assert!(msg.starts_with(&want), "{key} = {bad}: {msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }
    // KTIME_MAX is also the largest TOML integer: one past it is refused by the parser.
    let t = |v: u64| parse_as("tap-gro", &format!("[gro]\nflush_timeout_ns = {v}\n"));
    t(i64::MAX as u64).unwrap();
    let msg = t(i64::MAX as u64 + 1).unwrap_err();
    assert!(
        msg.starts_with("scenarios/tap-gro/x.toml: gro.flush_timeout_ns: ")
            && msg.contains("line 5"),
        "{msg}"
    );
    assert_eq!(
        limits::in_range("k", i64::MAX as u64 + 1, limits::GRO_FLUSH_TIMEOUT_NS, "w"),
        Err("k: 9223372036854775808 is outside 0..=9223372036854775807 (w)".to_string())
    );
    // The redirect target is a device too, named as such.
    let msg = parse_as("tap-write", "[redirect]\nmtu = 40\n").unwrap_err();
    assert!(
        msg.contains(": redirect.mtu: 40 is outside 68..=65521"),
        "{msg}"
    );
    let msg = parse_as("vhost-tx", &format!("{vhost}burst = 0\n")).unwrap_err();
    assert!(msg.contains("vhost.burst: 0 is outside 1..=32768"), "{msg}");
}

#[test]
fn kernel_widths_are_checked_by_type_with_the_key_and_position() {
    // gso_size is skb_shared_info's unsigned short; pi_proto a __be16; fill one byte.
    let cases = [
        (
            "tun-read",
            "[skb]\ngso_size = 65536\n",
            "skb.gso_size: ",
            "line 5, column 12",
        ),
        (
            "tap-write",
            "[writer]\npi_proto = -1\n",
            "writer.pi_proto: ",
            "line 5, column 12",
        ),
        (
            "tun-read",
            "[reader]\nfill = 256\n",
            "reader.fill: ",
            "line 5",
        ),
        (
            "tun-read",
            "[device]\nmtu = \"big\"\n",
            "device.mtu: invalid type: string",
            "line 5, column 7",
        ),
        (
            "tap-write",
            "[writer]\n[writer.vnet]\ngso_type = 300\n",
            "writer.vnet.gso_type: ",
            "line 6",
        ),
    ];
    for (pipeline, table, want, at) in cases {
        let msg = parse_as(pipeline, table).unwrap_err();
        let prefix = format!("scenarios/{pipeline}/x.toml: {want}");
        assert!(msg.starts_with(&prefix), "{table:?}: {msg}");
        assert!(msg.contains(at), "{table:?}: {msg}");
        assert!(!msg.contains('\n') && !msg.contains("at byte"), "{msg}");
    }
}

#[test]
fn tables_a_pipeline_does_not_read_are_errors() {
    let cases = [
        (
            "tap-gro",
            "[reader]\n",
            "[reader] is not used by pipeline tap-gro (it reads [device], [writer], [xdp], [redirect], [gro])",
        ),
        (
            "tap-gro",
            "[[skb.frame]]\nindex = 1\n",
            "[skb] is not used by pipeline tap-gro",
        ),
        ("tap-gro", "[vhost]\n", "[vhost] is not used"),
        (
            "tun-read",
            "[writer]\n",
            "[writer] is not used by pipeline tun-read (it reads [device], [reader], [skb], [queues])",
        ),
        (
            "tun-read",
            "[gro]\n",
            "[gro] is not used by pipeline tun-read",
        ),
        (
            "tap-write",
            "[skb]\n",
            "[skb] is not used by pipeline tap-write",
        ),
        (
            "tap-write",
            "[vhost]\n",
            "[vhost] is not used by pipeline tap-write",
        ),
        (
            "vhost-tx",
            "[vhost]\n[writer]\n",
            "[writer] is not used by pipeline vhost-tx",
        ),
    ];
    for (pipeline, tables, want) in cases {
        let msg = parse_as(pipeline, tables).unwrap_err();
        assert!(
            msg.starts_with(&format!("scenarios/{pipeline}/x.toml: {want}")),
            "{msg}"
        );
    }
    // What each reads is accepted.
    parse_as("tap-gro", "[gro]\nburst = 2\n").unwrap();
    // tap-gro is the tap datapath with IFF_NAPI: a PI, a vnet header, a program.
    let sc = parse_as(
        "tap-gro",
        "[device]\nno_pi = false\nvnet_hdr = true\n[writer]\nnonblocking = true\n[xdp]\nprogram = \"p.o\"\nmode = \"native\"\n",
    )
    .unwrap();
    assert!(sc.device.napi && !sc.device.no_pi && sc.device.vnet_hdr && sc.writer.nonblocking);
    // Without [device] it is IFF_TAP | IFF_NO_PI | IFF_NAPI; never without IFF_NAPI.
    let sc = parse_as("tap-gro", "").unwrap();
    assert!(sc.device.napi && sc.device.no_pi);
    let msg = parse_as("tap-gro", "[device]\nnapi = false\n").unwrap_err();
    assert!(msg.contains("IFF_NAPI"), "{msg}");
    let msg = parse_as("tap-gro", "[device]\nkind = \"tun\"\n").unwrap_err();
    // tun_set_iff allows IFF_NAPI on a tun; the error says why the model does not.
    assert!(msg.contains("GRO on a tun device is not modelled"), "{msg}");
    // [gro] for vhost-tx (an IFF_NAPI tap under vhost); not for tap-write.
    parse_as("vhost-tx", "[vhost]\n[gro]\nburst = 2\n").unwrap();
    let msg = parse_as("vhost-tx", "[vhost]\n[gro]\nrx_gro_list = true\n").unwrap_err();
    assert!(msg.contains("plain UDP GRO is a tap-gro setting"), "{msg}");
    parse_as(
        "tap-gro",
        "[gro]\nudp_gro_socket = [6001]\nrx_gro_list = true\n",
    )
    .unwrap();
    let msg = parse_as("tap-write", "[gro]\n").unwrap_err();
    assert!(msg.contains("[gro] is not used"), "{msg}");
    parse_as("tun-read", "[device]\n[reader]\n[skb]\n").unwrap();
    parse_as("tap-write", "[device]\n[reader]\n[writer]\n[redirect]\n").unwrap();
    parse_as("vhost-tx", "[device]\n[reader]\n[vhost]\n[redirect]\n").unwrap();
    let msg = parse_as("vhost-tx", "").unwrap_err();
    assert!(msg.contains("needs a [vhost] table"), "{msg}");
}

/// `[queues]` in tap-write: each frame's file from `write_on`; what the multiqueue write
/// model leaves out is refused with the reason (docs/tap-write.md#multiqueue).
#[test]
fn tap_write_queues_take_write_on_and_refuse_what_is_not_modelled() {
    let s = parse_as("tap-write", "[queues]\ncount = 3\nwrite_on = [2, 0]\n").unwrap();
    let plan = s.queues.unwrap();
    let files: Vec<usize> = (0..5).map(|i| plan.write_file(i)).collect();
    assert_eq!(files, [2, 0, 2, 0, 2]);
    let s = parse_as("tap-write", "[queues]\ncount = 2\n").unwrap();
    assert_eq!(s.queues.unwrap().write_file(7), 0);
    let cases = [
        (
            "tap-write",
            "[queues]\ncount = 2\nwrite_on = [2]\n",
            "write_on[0]: 2 is not one of the 2 files (0 ..2)",
        ),
        (
            "tap-write",
            "[redirect]\n[queues]\ncount = 2\n",
            "[redirect] beside a multiqueue tap",
        ),
        (
            "tap-write",
            "[queues]\ncount = 2\n[[queues.event]]\nbefore_frame = 0\nfile = 1\nop = \"write\"\ndata = \"00\"\n",
            "op = \"write\" is tun-read's",
        ),
        (
            "tun-read",
            "[queues]\ncount = 2\nwrite_on = [1]\n",
            "queues.write_on: only tap-write and vhost-tx send frames on files, not tun-read",
        ),
    ];
    for (pipeline, tables, want) in cases {
        let err = parse_as(pipeline, tables).unwrap_err();
        assert!(err.contains(want), "{tables}: {err}");
    }
}
