//! End-to-end L4S scenarios (issue: ECN and L4S): the study's findings 2, 3, 4 and 6 at
//! 100 Mbit/s, 10 ms base RTT, 2 x BDP, 5 ms threshold, TCP Prague (AccECN) vs CUBIC, and
//! the delay-utilisation dilemma. Runs are shorter than the study's 60 s to keep the suite
//! fast; tolerances are deliberately wide around the qualitative findings.

mod common;
use common::*;
use serde_json::{json, Value};

const MBPS: f64 = 100.0;
const RTT: f64 = 10.0;
const T_MS: f64 = 5.0;

fn packets(n_bdp: f64) -> u64 {
    bdp_bytes(n_bdp, MBPS, RTT) / 1500 + 1
}

fn prague(rx_ecn: &str) -> Value {
    let rx_cc = if rx_ecn == "accecn" {
        json!({"name": "prague"})
    } else {
        json!({"name": "cubic"})
    };
    json!({"name": "l4s", "cc": {"name": "prague"}, "tcp": {"ecn": "accecn"},
           "receiver": {"cc": rx_cc, "tcp": {"ecn": rx_ecn}}})
}

fn cubic(ecn: &str) -> Value {
    json!({"name": "classic", "cc": {"name": "cubic"}, "tcp": {"ecn": ecn},
           "receiver": {"cc": {"name": "cubic"}, "tcp": {"ecn": ecn}}})
}

fn pair(qdisc: Value, l4s: Value, classic: Value, duration: f64) -> (f64, f64, f64, f64) {
    let r = run(&dumbbell(duration, MBPS, RTT, qdisc, vec![l4s, classic]));
    let (p, c) = (&r.flows[0], &r.flows[1]);
    (
        p.goodput_mbps / (p.goodput_mbps + c.goodput_mbps),
        p.qdelay_ms,
        c.qdelay_ms,
        p.goodput_mbps + c.goodput_mbps,
    )
}

fn single_queue_fq() -> Value {
    let p = packets(2.0);
    json!({"kind": "fq", "orphan_mask": 0, "limit": p, "flow_limit": p, "ce_threshold_ms": T_MS})
}

#[test]
fn single_queue_fq_prague_dominates_an_ecn_cubic() {
    let (share, _, _, total) = pair(single_queue_fq(), prague("accecn"), cubic("classic"), 20.0);
    assert!(share > 0.8, "Prague share {share}");
    assert!(total > 0.9 * max_goodput(MBPS), "total {total}");
}

#[test]
fn single_queue_fq_prague_starves_against_a_non_ecn_cubic() {
    let (share, _, _, _) = pair(single_queue_fq(), prague("accecn"), cubic("none"), 20.0);
    assert!(share < 0.2, "Prague share {share}");
}

#[test]
fn fq_codel_shares_are_close_to_even() {
    let q = json!({"kind": "fq_codel", "limit": packets(2.0), "target_ms": T_MS, "interval_ms": 100.0, "ecn": true});
    let (share, _, _, _) = pair(q, prague("accecn"), cubic("classic"), 20.0);
    assert!((share - 0.5).abs() < 0.1, "Prague share {share}");
}

#[test]
fn dualpi2_is_roughly_fair_and_gives_prague_sub_ms_queueing() {
    let q = json!({"kind": "dualpi2", "target_ms": T_MS});
    let (share, qp, qc, _) = pair(q, prague("accecn"), cubic("classic"), 20.0);
    assert!(share > 0.3 && share < 0.7, "Prague share {share}");
    assert!(qp < 1.0, "Prague queueing delay {qp} ms");
    assert!(
        qc > 2.5 && qc < 10.0,
        "CUBIC queueing delay {qc} ms, classic target {T_MS}"
    );
}

#[test]
fn dualpi2_without_accecn_gives_prague_no_latency_benefit() {
    let q = json!({"kind": "dualpi2", "target_ms": T_MS});
    let (_, qp, qc, _) = pair(q, prague("classic"), cubic("classic"), 20.0);
    assert!(qp > 0.5 * qc, "Prague {qp} ms vs CUBIC {qc} ms");
}

fn step_queue(threshold_ms: f64) -> Value {
    let p = packets(10.0);
    json!({"kind": "fq", "orphan_mask": 0, "limit": p, "flow_limit": p, "ce_threshold_ms": threshold_ms})
}

fn alone(cc: &str, ecn: &str, rx_cc: &str) -> (f64, f64) {
    let f = json!({"name": cc, "cc": {"name": cc}, "tcp": {"ecn": ecn},
                   "receiver": {"cc": {"name": rx_cc}, "tcp": {"ecn": ecn}}});
    let r = run(&dumbbell(10.0, MBPS, RTT, step_queue(1.0), vec![f]));
    (r.links[0].utilisation, r.qdiscs[0].sojourn_mean_ms)
}

#[test]
fn scalable_flows_keep_a_1ms_step_queue_full_where_cubic_cannot() {
    let (u_prague, q_prague) = alone("prague", "accecn", "prague");
    let (u_dctcp, _) = alone("dctcp", "classic", "dctcp");
    let (u_cubic, _) = alone("cubic", "classic", "cubic");
    assert!(u_prague > 0.9, "Prague utilisation {u_prague}");
    assert!(u_dctcp > 0.9, "DCTCP utilisation {u_dctcp}");
    assert!(
        q_prague < 2.0,
        "Prague mean sojourn {q_prague} ms at a 1 ms step"
    );
    assert!(
        u_cubic < u_prague - 0.05,
        "CUBIC utilisation {u_cubic} vs Prague {u_prague}"
    );
}

#[test]
fn dctcp_with_a_dctcp_receiver_starves_a_non_ecn_cubic_in_an_ecn_codel() {
    // Single-queue ECN CoDel, 100 Mbit/s, 10 ms: CoDel marks DCTCP's ECT packets where it
    // drops CUBIC's; DCTCP halves at most per alpha, CUBIC by 30% per drop. A real kernel
    // (DCTCP receiver: `dctcp_ece_ack_update`'s precise echo) gives DCTCP ~94%.
    let q = json!({"kind": "codel", "limit": packets(2.0), "target_ms": T_MS, "interval_ms": 100.0, "ecn": true});
    let dctcp = json!({"name": "dctcp", "cc": {"name": "dctcp"}, "tcp": {"ecn": "classic"},
                       "receiver": {"cc": {"name": "dctcp"}, "tcp": {"ecn": "classic"}}});
    let (share, _, _, total) = pair(q, dctcp, cubic("none"), 20.0);
    assert!(share > 0.85, "DCTCP share {share}");
    assert!(total > 0.9 * max_goodput(MBPS), "total {total}");
}
