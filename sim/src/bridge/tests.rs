use super::*;
use crate::pipeline::frame_meta::{build_skb, SkbRecipe};
use crate::skb::SkBuff;
use crate::tun::TunConfig;

const A: Mac = [2, 0, 0, 0, 0, 0xa];
const B: Mac = [2, 0, 0, 0, 0, 0xb];

fn frame(dst: Mac, src: Mac, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn run(br: &mut Bridge, ts: u64, f: &[u8]) -> Verdict {
    let mut skb = SkBuff::default();
    let recipe = SkbRecipe {
        vlan_hwaccel: true,
        ..SkbRecipe::default()
    };
    build_skb(&mut skb, f, &recipe, false).unwrap();
    input(br, ts, f, &skb, &TunConfig::default())
}

#[test]
fn learning_drops_the_reply_half_of_a_conversation() {
    let mut br = Bridge::new(false);
    // A -> B floods (B unknown), teaching A on the uplink.
    assert_eq!(
        run(&mut br, 0, &frame(B, A, 0x88b5, &[0; 46])),
        Verdict::Deliver(None)
    );
    // B -> A: A is on the ingress port.
    assert_eq!(
        run(&mut br, 1, &frame(A, B, 0x88b5, &[0; 46])),
        Verdict::Dropped(DropReason::SamePort(A))
    );
    // A -> B again: B was learned on the uplink by the reply.
    assert_eq!(
        run(&mut br, 2, &frame(B, A, 0x88b5, &[0; 46])),
        Verdict::Dropped(DropReason::SamePort(B))
    );
}

#[test]
fn ageing_follows_the_replay_clock() {
    let mut br = Bridge::new(false);
    run(&mut br, 0, &frame(B, A, 0x88b5, &[0; 46]));
    let to_a = frame(A, B, 0x88b5, &[0; 46]);
    // Exactly the ageing time later the entry is still there (the gc races the frame;
    // the model keeps it), a nanosecond more and it is gone.
    assert_eq!(
        run(&mut br, BR_DEFAULT_AGEING_TIME_NS, &to_a),
        Verdict::Dropped(DropReason::SamePort(A))
    );
    // That frame refreshed B, not A, which was learned at 0 and has now aged out.
    assert_eq!(
        run(&mut br, BR_DEFAULT_AGEING_TIME_NS + 1, &to_a),
        Verdict::Deliver(None)
    );
}

#[test]
fn link_local_groups() {
    let mut br = Bridge::new(false);
    let stp = [0x01, 0x80, 0xc2, 0, 0, 0];
    let pause = [0x01, 0x80, 0xc2, 0, 0, 1];
    let lacp = [0x01, 0x80, 0xc2, 0, 0, 2];
    let lldp = [0x01, 0x80, 0xc2, 0, 0, 0x0e];
    let not_ll = [0x01, 0x80, 0xc2, 0, 0, 0x10];
    assert_eq!(
        run(&mut br, 0, &frame(stp, A, 0x0026, &[0; 46])),
        Verdict::Deliver(None)
    );
    assert_eq!(
        run(&mut br, 0, &frame(pause, A, 0x8808, &[0; 46])),
        Verdict::Dropped(DropReason::MacControl)
    );
    assert_eq!(
        run(&mut br, 0, &frame(lacp, B, 0x8809, &[0; 46])),
        Verdict::Dropped(DropReason::LinkLocal(lacp))
    );
    assert_eq!(
        run(&mut br, 0, &frame(lldp, A, 0x88cc, &[0; 46])),
        Verdict::Dropped(DropReason::LinkLocal(lldp))
    );
    assert_eq!(
        run(&mut br, 0, &frame(not_ll, A, 0x88b5, &[0; 46])),
        Verdict::Deliver(None)
    );
    // The LACP frame's source was learned all the same (__br_handle_local_finish).
    assert_eq!(
        run(&mut br, 0, &frame(B, A, 0x88b5, &[0; 46])),
        Verdict::Dropped(DropReason::SamePort(B))
    );
    br.group_fwd_mask = 1 << 0x0e;
    assert_eq!(
        run(&mut br, 0, &frame(lldp, A, 0x88cc, &[0; 46])),
        Verdict::Deliver(None)
    );
}

#[test]
fn local_addresses_and_bad_sources() {
    let mut br = Bridge::new(false);
    for m in [BRIDGE_MAC, TAP_MAC, UPLINK_MAC] {
        assert_eq!(
            run(&mut br, 0, &frame(m, A, 0x88b5, &[0; 46])),
            Verdict::Dropped(DropReason::Local(m))
        );
    }
    let mc = [0x01, 0, 0x5e, 0, 0, 1];
    assert_eq!(
        run(&mut br, 0, &frame(B, mc, 0x88b5, &[0; 46])),
        Verdict::Dropped(DropReason::InvalidSource(mc))
    );
    assert_eq!(
        run(&mut br, 0, &frame(B, [0; 6], 0x88b5, &[0; 46])),
        Verdict::Dropped(DropReason::InvalidSource([0; 6]))
    );
    // A frame from the tap's own address is forwarded, and does not move the local entry.
    assert_eq!(
        run(&mut br, 0, &frame(B, TAP_MAC, 0x88b5, &[0; 46])),
        Verdict::Deliver(None)
    );
    assert!(br.fdb.find(&TAP_MAC).is_some_and(|e| e.local));
}

/// IPv4 with a router-alert option (ihl 6) and IGMPv2 report, padded to 60 bytes.
fn igmp_report(bad_ip_csum: bool) -> Vec<u8> {
    use crate::wire::checksum::checksum;
    let mut ip = vec![
        0x46, 0, 0, 32, 0, 1, 0, 0, 1, 2, 0, 0, 10, 0, 0, 1, 239, 1, 1, 1,
    ];
    ip.extend_from_slice(&[0x94, 4, 0, 0]);
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    if bad_ip_csum {
        ip[11] ^= 0x80;
    }
    let mut igmp = vec![0x16, 0, 0, 0, 239, 1, 1, 1];
    let c = checksum(&igmp);
    igmp[2..4].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&igmp);
    let mut f = frame([0x01, 0, 0x5e, 1, 1, 1], A, 0x0800, &ip);
    f.resize(60, 0);
    f
}

#[test]
fn br_netfilter_trims_to_the_ip_length_and_drops_bad_headers() {
    let mut plain = Bridge::new(false);
    assert_eq!(
        run(&mut plain, 0, &igmp_report(false)),
        Verdict::Deliver(None)
    );
    let mut nf = Bridge::new(true);
    assert_eq!(
        run(&mut nf, 0, &igmp_report(false)),
        Verdict::Deliver(Some(46))
    );
    assert_eq!(
        run(&mut nf, 0, &igmp_report(true)),
        Verdict::Dropped(DropReason::Netfilter(
            "bad IPv4 header checksum (ip_fast_csum)"
        ))
    );
    // Without br_netfilter the same bad header is still dropped by snooping, since the
    // frame is IPv4 multicast.
    assert_eq!(
        run(&mut plain, 0, &igmp_report(true)),
        Verdict::Dropped(DropReason::Snooping(
            "bad IPv4 header checksum (ip_mc_check_iphdr)"
        ))
    );
}

fn scenario(extra: &str) -> Result<crate::scenario::Scenario, crate::scenario::ScenarioError> {
    crate::scenario::Scenario::parse(
        std::path::Path::new("scenarios/tun-read/x.toml"),
        &format!(
            "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"tun-read\"\n{extra}"
        ),
    )
}

#[test]
fn attach_key_defaults_and_errors() {
    assert_eq!(scenario("").unwrap().attach, Attach::Bridge);
    assert_eq!(
        scenario("[device]\nkind = \"tun\"\n").unwrap().attach,
        Attach::Direct
    );
    assert_eq!(
        scenario("attach = \"bridge-nf\"\n").unwrap().attach,
        Attach::BridgeNf
    );
    assert_eq!(
        scenario("attach = \"direct\"\n").unwrap().attach,
        Attach::Direct
    );
    let e = scenario("attach = \"hub\"\n").unwrap_err().to_string();
    assert!(e.contains("hub") && !e.contains('\n'), "{e}");
    let e = scenario("attach = \"bridge\"\n[device]\nkind = \"tun\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("attach:") && e.contains("br_add_if"), "{e}");
    let e = crate::scenario::Scenario::parse(
        std::path::Path::new("scenarios/tap-write/x.toml"),
        "description = \"d\"\ninput = \"a.pcap\"\npipeline = \"tap-write\"\nattach = \"direct\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("attach: only the tun-read pipeline"), "{e}");
}

#[test]
fn the_pipeline_reports_undelivered_frames_and_reads_carry_the_right_index() {
    use crate::pipeline::drive::{DriveError, Frames};
    use crate::pipeline::tun_read::{Event, TunReadRun};
    use crate::pipeline::{drive, Input, Schedule};
    let s = scenario("[device]\nno_pi = true\n").unwrap();
    let mut run = TunReadRun::new(&s);
    let mut events = Vec::new();
    let frames = [
        frame(B, A, 0x88b5, &[0; 46]),
        frame(A, B, 0x88b5, &[0; 46]),
        frame([0xff; 6], B, 0x88b5, &[0; 46]),
    ];
    let inputs = frames.iter().enumerate().map(|(i, f)| Input::Frame {
        index: i as u64,
        ts_ns: 10 + i as u64,
        bytes: f,
    });
    let schedule = Schedule::for_scenario(&s);
    drive(&mut run, schedule, &mut Frames::new(inputs), &mut events)
        .map_err(DriveError::pipeline)
        .unwrap();
    let shape: Vec<String> = events
        .iter()
        .map(|e| match e {
            Event::Read(r) => format!("read {:?}", r.frame),
            Event::BridgeDropped { frame, reason, .. } => {
                format!(
                    "drop {frame} {}",
                    reason.as_ref().map(|r| r.to_string()).unwrap_or_default()
                )
            }
            Event::XmitDropped { frame, .. } => format!("xmit-drop {frame}"),
            Event::Queue { file, .. } => format!("queue {file}"),
        })
        .collect();
    assert_eq!(
        shape,
        [
            "read Some((0, 10))".to_string(),
            format!("drop 1 {}", DropReason::SamePort(A)),
            "read Some((2, 12))".to_string(),
        ]
    );
    assert_eq!(run.stats().tx_packets, 2);
}

#[test]
fn bridge_nf_trims_the_skb_the_tap_reads() {
    use crate::pipeline::tun_read::{Event, TunReadRun};
    use crate::pipeline::{Driver, Input, Schedule};
    let s = scenario("attach = \"bridge-nf\"\n[device]\nno_pi = true\n").unwrap();
    let mut run = TunReadRun::new(&s);
    let mut lens = Vec::new();
    let frame = igmp_report(false);
    let input = Input::Frame {
        index: 0,
        ts_ns: 0,
        bytes: &frame,
    };
    let mut driver = Driver::new(Schedule::for_scenario(&s));
    let mut read_lens = |e: &Event| {
        if let Event::Read(r) = e {
            lens.push(r.result);
        }
    };
    driver.feed(&mut run, input, &mut read_lens).unwrap();
    assert_eq!(lens, [Ok(46)]);
    assert_eq!(run.stats().tx_bytes, 46);
}

#[test]
fn bridge_drop_renders_with_a_model_only_reason() {
    use crate::pipeline::tun_read::Event;
    use crate::pipeline::tun_read_trace::event_record;
    use crate::trace::record::Seen;
    let e = Event::BridgeDropped {
        frame: 7,
        ts_ns: 1_500_000_000,
        reason: Some(DropReason::LinkLocal([0x01, 0x80, 0xc2, 0, 0, 2])),
        stats: Default::default(),
    };
    let mut out = String::new();
    let rec = event_record(&e, &TunConfig::default());
    rec.write_text(&mut out);
    assert!(out.starts_with("\nbridge-drop (frame 7, ts 1.500000000): not delivered\n  why: link-local 01:80:c2:00:00:02 not forwarded"), "{out}");
    assert!(out.contains("  counters: tx_packets 0"), "{out}");
    let why = rec.fields.iter().find(|f| f.name == "why").expect("why");
    assert_eq!(why.seen, Seen::ModelOnly);
    let j = rec.to_json();
    assert_eq!(j["event"], "bridge-drop");
    assert_eq!(j["frame"], 7);
    assert!(j["model"]["why"]
        .as_str()
        .is_some_and(|w| w.contains("01:80:c2:00:00:02")));
    let real = Event::BridgeDropped {
        frame: 7,
        ts_ns: 1_500_000_000,
        reason: None,
        stats: Default::default(),
    };
    let mut out = String::new();
    event_record(&real, &TunConfig::default()).write_text(&mut out);
    assert!(!out.contains("why"), "{out}");
}

#[test]
fn egress_length_counts_the_ethernet_header_but_not_a_hwaccel_tag() {
    let mut br = Bridge::new(false);
    assert_eq!(
        run(&mut br, 0, &frame(B, A, 0x88b5, &[0; 1504])),
        Verdict::Deliver(None)
    );
    assert_eq!(
        run(&mut br, 0, &frame(B, A, 0x88b5, &[0; 1505])),
        Verdict::Dropped(DropReason::TooBig {
            len: 1519,
            limit: 1518
        })
    );
    // 802.1Q tag + 1504 bytes: 1522 on the wire, 1518 in the skb once untagged.
    let mut tagged = vec![0x00, 0x05, 0x88, 0xb5];
    tagged.extend_from_slice(&[0; 1504]);
    assert_eq!(
        run(&mut br, 0, &frame(B, A, 0x8100, &tagged)),
        Verdict::Deliver(None)
    );
    let down = TunConfig {
        up: false,
        ..TunConfig::default()
    };
    let f = frame(B, A, 0x88b5, &[0; 46]);
    let mut skb = SkBuff::default();
    build_skb(&mut skb, &f, &SkbRecipe::default(), false).unwrap();
    assert_eq!(
        input(&mut br, 0, &f, &skb, &down),
        Verdict::Dropped(DropReason::PortDown)
    );
}

#[test]
fn an_8023_length_field_is_received_as_llc_or_raw_8023() {
    let skb_of = |f: &[u8], hwaccel: bool| {
        let mut skb = SkBuff::default();
        let r = SkbRecipe {
            vlan_hwaccel: hwaccel,
            ..SkbRecipe::default()
        };
        build_skb(&mut skb, f, &r, false).unwrap();
        skb
    };
    let llc = frame(B, A, 0x0026, &[0x42, 0x42, 3, 0, 0, 0]);
    assert_eq!(received_protocol(&llc, &skb_of(&llc, true)), 0x0004);
    let ipx = frame(B, A, 0x0026, &[0xff, 0xff, 0, 0]);
    assert_eq!(received_protocol(&ipx, &skb_of(&ipx, true)), 0x0001);
    let eth2 = frame(B, A, 0x88b5, &[0; 4]);
    assert_eq!(received_protocol(&eth2, &skb_of(&eth2, true)), 0x88b5);
    // Behind a tag taken out of band, vlan_set_encap_proto applies the same rule.
    let tagged = frame(B, A, 0x8100, &[0, 5, 0x00, 0x26, 0x42, 0x42, 3, 0]);
    assert_eq!(received_protocol(&tagged, &skb_of(&tagged, true)), 0x0004);
    // A tag left in-band keeps skb->protocol the TPID.
    assert_eq!(received_protocol(&tagged, &skb_of(&tagged, false)), 0x8100);
}

#[test]
fn a_tag_without_two_bytes_after_it_is_freed_by_the_receive_path() {
    let mut br = Bridge::new(false);
    // 802.1Q vid 60, inner EtherType 0x8808 and nothing after: 18 bytes.
    let short = frame(B, A, 0x8100, &[0, 60, 0x88, 0x08]);
    assert_eq!(
        run(&mut br, 0, &short),
        Verdict::Dropped(DropReason::ShortTag(18))
    );
    let mut ok = short.clone();
    ok.extend_from_slice(&[0, 0]);
    assert_eq!(run(&mut br, 0, &ok), Verdict::Deliver(None));
}
