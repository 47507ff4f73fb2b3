//! The trace of a vhost-tx run: the worker's kicks, batches, used-ring updates and
//! requeues; each packet's path and fate; what the host saw; the op counts.

use crate::scenario::{GuestFill, Scenario};
use crate::vhost::{VhostEvent, VhostOps, Via};

use super::record::{At, Field, Part, Record, Seen, Value};
use super::write::{action_line, fate_line};

/// The record of one worker event. Only the kicks and the used-ring returns are seen by
/// the guest (the avail and used rings' idx); the batches, each packet's path and fate,
/// the weight requeues and the put-back stalls are the model's (drivers/vhost/net.c:
/// handle_tx_copy, vhost_tx_batch, vhost_net_tx_get_vq_desc).
pub fn worker_record(e: &VhostEvent) -> Record<'static> {
    match e {
        VhostEvent::Kick { available, queue } => {
            let mut rec = Record::new("kick");
            rec.result = Some(Value::Parts(vec![
                Part::bare("available", Value::Int(*available as u64)),
                Part::word("descriptors available"),
            ]));
            if let Some(q) = queue {
                rec.push(Field::both("queue", Value::text(format!("file {q}"))));
            }
            rec
        }
        VhostEvent::Batch {
            batch,
            packets,
            reason,
            xdp_flushes,
        } => {
            let mut rec = Record::new("batch");
            rec.seen = Seen::ModelOnly;
            rec.index = Some(*batch as u64);
            rec.result = Some(Value::Parts(vec![
                Part::bare("packets", Value::Int(packets.len() as u64)),
                Part::word("packets in one TUN_MSG_PTR sendmsg"),
            ]));
            rec.push(Field::model(
                "packets",
                Value::text(super::gro::ranges(packets)),
            ));
            rec.push(Field::model("reason", Value::Word(reason.name())));
            rec.push(Field::model(
                "xdp_do_flush",
                Value::Int(*xdp_flushes as u64),
            ));
            rec
        }
        VhostEvent::Packet(p) => {
            let mut rec = Record::new("packet");
            rec.seen = Seen::ModelOnly;
            rec.index = Some(p.packet);
            rec.at = Some(At::Ts(p.ts_ns));
            rec.result = Some(match p.result {
                Ok(()) => Value::Word("ok"),
                Err(e) => Value::Word(e.name()),
            });
            let via = match p.via {
                Via::Batch(b) => Value::Parts(vec![Part::named("batch", Value::Int(b as u64))]),
                Via::Single { more: true } => Value::Word("sendmsg alone (MSG_MORE)"),
                Via::Single { more: false } => Value::Word("sendmsg alone"),
            };
            rec.push(Field::model("via", via));
            if let Some(x) = &p.xdp {
                rec.push(Field::model("xdp", Value::text(action_line(x))));
            }
            rec.push(Field::model("fate", Value::text(fate_line(&p.fate))));
            rec
        }
        VhostEvent::Used { heads } => {
            let mut rec = Record::new("used");
            rec.sums = true;
            rec.result = Some(Value::Parts(vec![
                Part::bare("heads", Value::Int(*heads as u64)),
                Part::word("heads, one vhost_add_used_and_signal_n"),
            ]));
            rec
        }
        VhostEvent::Requeue { packets, bytes } => {
            let mut rec = Record::new("requeue");
            rec.seen = Seen::ModelOnly;
            rec.result = Some(Value::text(format!(
                "weight reached after {packets} packets, {bytes} bytes"
            )));
            rec
        }
        VhostEvent::Stall { packet, errno } => {
            let mut rec = Record::new("stall");
            rec.seen = Seen::ModelOnly;
            rec.result = Some(Value::text(format!(
                "packet {packet} put back after {errno}"
            )));
            rec
        }
    }
}

/// The worker's op counts in the totals, and per packet (model-only).
pub fn ops_fields(rec: &mut Record<'_>, o: &VhostOps, packets: u64) {
    rec.push(Field::model("ops", Value::text(format!(
        "sendmsg batched {} single {}, xdp_do_flush {}, used updates {}, signals {}, requeues {}, handle_tx runs {}, bytes copied {}, page puts {}",
        o.sendmsg_batched, o.sendmsg_single, o.xdp_flushes, o.used_updates, o.signals, o.requeues,
        o.handle_tx_runs, o.bytes_copied, o.page_puts
    ))));
    if packets > 0 {
        let per = |x: u64| x as f64 / packets as f64;
        rec.push(Field::model(
            "per_packet",
            Value::text(format!(
                "sendmsg {:.4}, xdp_do_flush {:.4}, used updates {:.4}",
                per(o.sendmsg_batched + o.sendmsg_single),
                per(o.xdp_flushes),
                per(o.used_updates)
            )),
        ));
    }
}

/// The `guest` header field of a vhost-tx trace.
pub fn guest_field(rec: &mut Record<'_>, scenario: &Scenario) {
    if let Some(g) = &scenario.guest {
        let fill = match g.fill {
            GuestFill::All => "all at once".to_string(),
            GuestFill::Burst(n) => format!("bursts of {n}"),
            GuestFill::Trickle => "one packet per kick".to_string(),
        };
        rec.push(Field::both(
            "guest",
            Value::text(format!("virtio_net_hdr {} bytes, fills {fill}", g.hdr_len)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::vhost::VhostEvent;

    /// The records of a trace: the worker's, then a read and the totals.
    fn records(worker: &[VhostEvent], ops: u64) -> Vec<crate::trace::record::Record<'static>> {
        use crate::trace::record::{Field, Part, Record, Value};
        let mut out: Vec<Record<'static>> = worker.iter().map(super::worker_record).collect();
        let mut read = Record::new("read A");
        read.index = Some(0);
        read.result = Some(Value::Word("60"));
        read.push(Field::both("counters", Value::Word("tx_packets 1")));
        out.push(read);
        let mut totals = Record::new("totals");
        totals.push(Field::both("counters A", Value::Word("tx_packets 1")));
        let batched = Value::Parts(vec![Part::named("batched", Value::Int(ops))]);
        totals.push(Field::model("ops", batched));
        out.push(totals);
        out
    }

    fn packet(packet: u64, via: crate::vhost::Via) -> VhostEvent {
        VhostEvent::Packet(crate::vhost::PacketFate {
            packet,
            ts_ns: 1_000_000_000 + packet * 1000,
            via,
            result: Ok(()),
            xdp: None,
            fate: crate::tun::write::Fate::Stack,
        })
    }

    #[test]
    fn records_compare_the_guest_s_view_batches_and_packets_are_the_model_s() {
        use crate::trace::record_diff::first_record_divergence;
        use crate::vhost::{FlushReason, Via};
        let sim = records(
            &[
                VhostEvent::Kick {
                    available: 3,
                    queue: None,
                },
                VhostEvent::Batch {
                    batch: 0,
                    packets: vec![0, 1],
                    reason: FlushReason::RingEmpty,
                    xdp_flushes: 0,
                },
                packet(0, Via::Batch(0)),
                packet(1, Via::Batch(0)),
                VhostEvent::Used { heads: 2 },
                packet(2, Via::Single { more: false }),
                VhostEvent::Used { heads: 1 },
            ],
            1,
        );
        // The guest sees one move of the used index per kick, 3 descriptors.
        let real = |heads: usize| {
            records(
                &[
                    VhostEvent::Kick {
                        available: 3,
                        queue: None,
                    },
                    VhostEvent::Used { heads },
                ],
                0,
            )
        };
        assert_eq!(first_record_divergence(&sim, &real(3)), None);
        let d = first_record_divergence(&sim, &real(2)).expect("2 of 3 returned");
        assert_eq!(
            (
                d.event.as_str(),
                d.field.as_str(),
                d.left.as_str(),
                d.right.as_str()
            ),
            (
                "used",
                "result",
                "3 heads, one vhost_add_used_and_signal_n",
                "2 heads, one vhost_add_used_and_signal_n"
            )
        );
        // A kick with nothing returned has no used record on either side.
        let stalled = records(
            &[
                VhostEvent::Kick {
                    available: 1,
                    queue: None,
                },
                VhostEvent::Stall {
                    packet: 0,
                    errno: crate::errno::Errno::EAGAIN,
                },
            ],
            0,
        );
        let real = records(
            &[VhostEvent::Kick {
                available: 1,
                queue: None,
            }],
            0,
        );
        assert_eq!(first_record_divergence(&stalled, &real), None);
    }

    #[test]
    fn a_batch_lists_its_packets_in_the_one_range_format() {
        let e = VhostEvent::Batch {
            batch: 4,
            packets: vec![1, 2, 5],
            reason: crate::vhost::FlushReason::RingEmpty,
            xdp_flushes: 0,
        };
        let mut t = String::new();
        super::worker_record(&e).write_text(&mut t);
        assert!(t.contains("\n  packets: 1-2 5\n"), "{t}");
    }
}
