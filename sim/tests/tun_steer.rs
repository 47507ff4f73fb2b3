//! TUNSETSTEERINGEBPF in the tun-read pipeline (issue 22 item 2; docs/tun-read.md#multiqueue):
//! the socket filter run by the eBPF VM over `struct __sk_buff`
//! (sim/src/bpf/skb.rs), tun_ebpf_select_queue's u16 truncation and modulo, and the
//! multiqueue tap of a `[queues]` table without events. The expected queues come from
//! the frames' headers and the programs' C sources (scenarios/sockfilter/sock_steer_*.c);
//! `skbsim conform scenarios/tun-read/mq-steer-*.toml` checks them against this host.

mod common;

use common::{frames, path};
use sim::bpf::{load_socket_filter, run_socket_filter, BasicEnv, SkbCtx, Vm};
use sim::pipeline::tun_read::Event;
use sim::scenario::Scenario;

/// (frame, file) of every read of the scenario.
fn reads(rel: &str) -> Vec<(u64, usize)> {
    let (_, events) = common::run(rel);
    events
        .iter()
        .filter_map(|e| match e {
            Event::Read(r) => Some((r.frame.expect("a frame").0, r.queue.expect("a file"))),
            _ => None,
        })
        .collect()
}

/// The program's return for an Ethernet frame, skb->protocol its type field.
fn run_on(obj: &str, frame: &[u8]) -> u32 {
    let prog = load_socket_filter(&path(obj), "socket").expect("the program loads");
    let mut ctx = SkbCtx {
        len: frame.len() as u32,
        protocol: u16::from_be_bytes([frame[12], frame[13]]),
        ..SkbCtx::default()
    };
    let mut env = BasicEnv::default();
    run_socket_filter(&mut Vm::new(), &prog, frame, &mut ctx, &mut env)
        .expect("the program runs")
        .action
}

#[test]
fn the_l4_program_returns_the_destination_port_read_through_skb_load_bytes() {
    let s = Scenario::load(&path("tun-read/mq-steer-l4-port.toml")).unwrap();
    let f = frames(&s);
    // xdp-mixed.pcap: TCP to 80, UDP to 9, TCP to 443, an ARP-typed frame, IPv6/UDP to 5001.
    let got: Vec<u32> = f
        .iter()
        .map(|(_, _, d)| run_on("sockfilter/sock_steer_l4.o", d))
        .collect();
    assert_eq!(got, [80, 9, 443, 0x10001, 5001]);
}

#[test]
fn steering_picks_the_return_truncated_to_u16_modulo_the_queues() {
    // 80 % 3, 9 % 3, 443 % 3, (u16)0x10001 % 3 (not 65537 % 3 = 2), 5001 % 3.
    let files: Vec<usize> = [80u32, 9, 443, 0x10001, 5001]
        .iter()
        .map(|&r| usize::from(r as u16) % 3)
        .collect();
    assert_eq!(files, [2, 0, 2, 1, 0]);
    let want: Vec<(u64, usize)> = (0..5).zip(files).collect();
    assert_eq!(reads("tun-read/mq-steer-l4-port.toml"), want);
}

#[test]
fn steering_by_protocol_sends_each_flow_to_its_file_without_queue_events() {
    // mq-flows.pcap: IPv4/TCP, IPv4/UDP, IPv6/TCP, twice; sock_steer_proto.c: 0, 1, 2.
    assert_eq!(
        reads("tun-read/mq-steer-proto.toml"),
        [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1), (5, 2)]
    );
}

#[test]
fn socket_filters_see_only_the_modelled_sk_buff_fields() {
    use sim::bpf::assemble;
    let run = |text: &str| {
        let prog = assemble("t", text).unwrap();
        let mut ctx = SkbCtx {
            len: 60,
            protocol: 0x0800,
            ..SkbCtx::default()
        };
        run_socket_filter(
            &mut Vm::new(),
            &prog,
            &[0; 60],
            &mut ctx,
            &mut BasicEnv::default(),
        )
        .map(|r| r.action)
    };
    // __sk_buff.len at 0, protocol (big-endian as stored) at 16.
    assert_eq!(run("r0 = *(u32 *)(r1 + 0)\nexit"), Ok(60));
    assert_eq!(run("r0 = *(u32 *)(r1 + 16)\nexit"), Ok(0x0008));
    // cb[] is cleared and writable; data (76) is refused as the kernel refuses it.
    assert_eq!(
        run("r2 = 7\n*(u32 *)(r1 + 48) = r2\nr0 = *(u32 *)(r1 + 48)\nexit"),
        Ok(7)
    );
    assert!(run("r0 = *(u32 *)(r1 + 76)\nexit").is_err());
    // An XDP helper is not a socket filter's.
    assert!(run("r2 = 0\ncall bpf_xdp_adjust_head\nexit").is_err());
}

#[test]
fn the_xdp_load_check_refuses_skb_load_bytes() {
    let prog = sim::bpf::assemble(
        "x",
        "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes\nr0 = 2\nexit",
    )
    .unwrap();
    let err = sim::bpf::verifier::verify(&prog, &[]).unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown func bpf_skb_load_bytes#26"),
        "{err}"
    );
}
