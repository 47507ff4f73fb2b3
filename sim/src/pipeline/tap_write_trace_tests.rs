//! `replay -o` builds a host event's packet comment without its record
//! ([`host_event_comment_into`], into one reused buffer); it must be the comment the
//! record gives.

use super::*;
use crate::pipeline::drive::{drive, DriveError, Frames};
use crate::pipeline::tap_write::TapWriteRun;
use crate::pipeline::{Input, Schedule};

fn scenario() -> Scenario {
    Scenario::parse(
        std::path::Path::new("scenarios/tap-write/x.toml"),
        "description = \"d\"\ninput = \"../pcaps/a.pcap\"\npipeline = \"tap-write\"\n",
    )
    .expect("scenario")
}

/// A 64-byte Ethernet frame of EtherType 0x88b5, 802.1Q-tagged (VID 5, PCP 3) or not.
fn frame(tagged: bool) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    if tagged {
        f.extend_from_slice(&[0x81, 0x00, 0x60, 0x05]);
    }
    f.extend_from_slice(&[0x88, 0xb5]);
    f.resize(64, 0xab);
    f
}

#[test]
fn the_comment_alone_is_the_records_comment() {
    let s = scenario();
    let mut run = TapWriteRun::new(&s).expect("run");
    let mut events = Vec::new();
    let frames = [frame(false), frame(true)];
    let inputs = frames.iter().enumerate().map(|(i, f)| Input::Frame {
        index: i as u64,
        ts_ns: 1_000,
        bytes: f,
    });
    drive(
        &mut run,
        Schedule::for_scenario(&s),
        &mut Frames::new(inputs),
        &mut events,
    )
    .map_err(DriveError::pipeline)
    .expect("frames");
    let mut stack = Vec::new();
    // One buffer for every event, as `replay -o` uses it: what an earlier frame left
    // in it must not show in the next comment.
    let mut alone = String::from("left over");
    for e in &events {
        let some = host_event_comment_into(&s, e, &mut alone);
        match e {
            WriteEvent::Write(_) => assert!(!some && alone.is_empty(), "{alone:?}"),
            _ => {
                let full = host_event_record(&s, e).comment();
                assert!(some, "{e:?}");
                assert_eq!(alone, full, "{e:?}");
                stack.push(full);
            }
        }
        alone.push_str(" left over");
    }
    // Both frames reach the stack as skb->protocol 0x88b5 (tun_get_user: eth_type_trans
    // after the tag is taken off into the skb, __vlan_hwaccel_put_tag).
    assert_eq!(stack.len(), 2, "{events:?}");
    assert_eq!(stack[0], "protocol 0x88b5");
    assert!(
        stack[1].starts_with("protocol 0x88b5 vlan "),
        "{}",
        stack[1]
    );
}
