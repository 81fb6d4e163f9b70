//! netem end to end: duplication (copies enqueued at the port's root, the TCP receiver's
//! duplicate-data path), corruption (discarded at the receiving host) and ECN marking instead
//! of loss, with packets conserved; and copied, reordered ACKs on the way back.

mod common;

use common::{dumbbell, max_goodput, run, two_hops};
use serde_json::{json, Value};

/// A CUBIC transfer of `mb` MB over a 50 Mbit/s, 20 ms dumbbell whose bottleneck qdisc is
/// `qdisc`, for at most 20 s.
fn transfer(qdisc: Value, tcp: Value, mb: u64) -> l4sim_core::metrics::results::RunResult {
    let flow = json!({"name": "f", "cc": {"name": "cubic"}, "size": mb * 1_000_000, "tcp": tcp,
                      "receiver": {"tcp": tcp}});
    run(&dumbbell(20.0, 50.0, 20.0, qdisc, vec![flow]))
}

#[test]
fn a_cubic_flow_through_a_duplicating_link_completes_with_packets_conserved() {
    let r = transfer(json!({"kind": "netem", "duplicate": 0.05}), json!({}), 20);
    let f = &r.flows[0];
    assert!(f.completion_s.is_some(), "the transfer did not complete");
    assert!(f.goodput_mbps <= max_goodput(50.0), "{}", f.goodput_mbps);
    // Each copy is one more enqueue at the bottleneck: about 5 % more than were sent.
    let q = &r.qdiscs[0];
    let extra = q.enq_pkts as f64 / f.data_pkts_sent as f64 - 1.0;
    assert!((extra - 0.05).abs() < 0.01, "copies {extra}");
    assert_eq!(q.enq_pkts, q.deq_pkts + q.drops);
}

#[test]
fn a_netem_below_a_classful_qdisc_puts_its_copies_at_the_root() {
    let netem = json!({"kind": "netem", "duplicate": 0.1});
    let tbf = json!({"kind": "tbf", "rate_mbps": 40, "burst": 12800, "limit": 1000000,
                     "child": netem});
    let r = transfer(tbf, json!({}), 20);
    let f = &r.flows[0];
    assert!(f.completion_s.is_some(), "the transfer did not complete");
    let (root, child) = (&r.qdiscs[0], &r.qdisc_classes[0]);
    assert_eq!(child.name, "bottleneck/child");
    // The copies went through the tbf (the root) and then the netem again.
    let extra = root.enq_pkts as f64 / f.data_pkts_sent as f64 - 1.0;
    assert!((extra - 0.1).abs() < 0.015, "copies {extra}");
    assert_eq!(child.enq_pkts, root.enq_pkts);
}

#[test]
fn corrupted_packets_are_discarded_by_the_receiver_and_sent_again() {
    let r = transfer(json!({"kind": "netem", "corrupt": 0.01}), json!({}), 5);
    let f = &r.flows[0];
    assert!(f.completion_s.is_some(), "the transfer did not complete");
    // Not a qdisc drop: the packets left the bottleneck and died at the receiver.
    assert_eq!(r.qdiscs[0].drops, 0);
    let lost = f.pkts_dropped as f64 / f.data_pkts_sent as f64;
    assert!((lost - 0.01).abs() < 0.004, "corrupted {lost}");
    assert!(
        f.retrans >= f.pkts_dropped,
        "{} < {}",
        f.retrans,
        f.pkts_dropped
    );
}

#[test]
fn with_ecn_netem_marks_ect_packets_instead_of_losing_them() {
    let netem = json!({"kind": "netem", "loss": 0.01, "ecn": true});
    let r = transfer(netem.clone(), json!({"ecn": "classic"}), 5);
    let f = &r.flows[0];
    assert!(f.completion_s.is_some(), "the transfer did not complete");
    assert_eq!((f.data_ecn.as_str(), r.qdiscs[0].drops), ("ect0", 0));
    let marked = r.qdiscs[0].marks as f64 / r.qdiscs[0].deq_pkts as f64;
    assert!((marked - 0.01).abs() < 0.004, "marked {marked}");
    assert!(f.cwr_count > 0);
    // Without ECN the same netem drops.
    let r = transfer(netem, json!({}), 5);
    assert!(r.qdiscs[0].drops > 0 && r.qdiscs[0].marks == 0);
}

#[test]
fn duplicated_and_reordered_acks_cause_no_retransmission() {
    // netem on the receiver's side of the last link, toward the sender: 20 % of the ACKs
    // copied, and all jittered by 1 ms so they also arrive out of order.
    let shaped = |q: Value| json!({"rate": 50, "qdisc": q});
    let netem = json!({"kind": "netem", "duplicate": 0.2, "delay_ms": 1, "jitter_ms": 1});
    let sc = json!({
        "duration": 20.0, "seed": 1,
        "topology": two_hops(
            json!({"rate": 1000, "delay_ms": 5}),
            json!({"rate": 1000, "delay_ms": 5,
                   "ab": shaped(json!({"kind": "pfifo", "limit": 1000})), "ba": shaped(netem)})),
        "flows": [{"name": "f", "cc": {"name": "cubic"}, "size": 20_000_000,
                   "from": "h1", "to": "h2"}],
    });
    let r = run(&sc);
    let f = &r.flows[0];
    assert!(f.completion_s.is_some(), "the transfer did not complete");
    // With SACK, an ACK that acknowledges nothing new is no duplicate-ACK signal (Linux
    // counts SACKed segments, not duplicate ACKs) and RACK sees no segment lost.
    assert_eq!((f.retrans, f.pkts_dropped), (0, 0));
    assert!(f.goodput_mbps > 40.0, "{}", f.goodput_mbps);
}

#[test]
fn reordered_data_makes_fast_retransmits_that_are_undone_and_reported() {
    // netem sends 1 % of the data at once, ahead of packets held 5 ms: RACK, with no
    // reordering seen yet, retransmits the held ones; their DSACKs and timestamp echoes show
    // the retransmissions spurious, and the reductions are undone (the flow's `undos`).
    let r = transfer(
        json!({"kind": "netem", "delay_ms": 5, "reorder": 0.01}),
        json!({}),
        20,
    );
    let f = &r.flows[0];
    assert!(f.completion_s.is_some(), "the transfer did not complete");
    assert_eq!(f.pkts_dropped, 0);
    assert!(f.retrans > 0 && f.fast_recoveries > 0);
    assert!(f.undos > 0, "no undo in {} recoveries", f.fast_recoveries);
    assert!(f.undos <= f.fast_recoveries + f.rto_count);
    assert_eq!(f.spurious_rtos, 0);
}
