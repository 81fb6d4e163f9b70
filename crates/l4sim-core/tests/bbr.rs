//! End-to-end BBR scenarios (issue 4, the BBR family): what BBRv1 and BBRv2 must show on
//! their own (full link with a small standing queue, periodic PROBE_RTT, shallow-buffer
//! dominance over CUBIC, BBRv2's ECN response at a step-marking queue) and the study's verdict
//! rows for TCP Prague against BBRv2 at 100 Mbit/s, 10 ms base RTT, 2 x BDP, 5 ms threshold
//! (docs/bbr.md has the full table). Runs are 10-22 simulated seconds; tolerances are wide
//! around the qualitative findings.

mod common;
use common::*;
use serde_json::{json, Value};

const MBPS: f64 = 100.0;
const RTT: f64 = 10.0;
const T_MS: f64 = 5.0;

fn packets(n_bdp: f64) -> u64 {
    bdp_bytes(n_bdp, MBPS, RTT) / 1500 + 1
}

fn bfifo(n_bdp: f64) -> Value {
    json!({"kind": "bfifo", "limit": bdp_bytes(n_bdp, MBPS, RTT)})
}

/// sch_fq with orphan_mask 0: one FIFO that CE-marks ECT packets whose sojourn exceeds T.
fn step_queue(n_bdp: f64, threshold_ms: f64) -> Value {
    let p = packets(n_bdp);
    json!({"kind": "fq", "orphan_mask": 0, "limit": p, "flow_limit": p,
           "ce_threshold_ms": threshold_ms})
}

/// A classic sender running `cc` with the given ECN setting on both ends (plain cubic
/// receiver, as the study's classic receiver host).
fn classic(cc: Value, ecn: &str) -> Value {
    json!({"name": "classic", "cc": cc, "tcp": {"ecn": ecn},
           "receiver": {"cc": {"name": "cubic"}, "tcp": {"ecn": ecn}}})
}

/// TCP Prague with AccECN negotiated (Prague receiver host with tcp_ecn=3).
fn prague() -> Value {
    json!({"name": "l4s", "cc": {"name": "prague"}, "tcp": {"ecn": "accecn"},
           "receiver": {"cc": {"name": "prague"}, "tcp": {"ecn": "accecn"}}})
}

fn share(r: &l4sim_core::metrics::results::RunResult) -> f64 {
    let (a, b) = (r.flows[0].goodput_mbps, r.flows[1].goodput_mbps);
    a / (a + b)
}

#[test]
fn bbrv1_alone_fills_the_link_with_a_small_standing_queue_and_probes_rtt_every_10s() {
    let f = json!({"name": "bbr", "cc": {"name": "bbr"}});
    let r = run(&dumbbell(22.0, MBPS, RTT, bfifo(5.0), vec![f]));
    let u = r.links[0].utilisation;
    let soj = r.qdiscs[0].sojourn_mean_ms;
    assert!(u > 0.9, "utilisation {u}");
    // The FIFO holds 5 x BDP = 50 ms; BBR's queue is a fraction of one BDP.
    assert!(soj < 0.2 * 5.0 * RTT, "mean sojourn {soj} ms");
    assert_eq!(r.flows[0].retrans, 0, "no loss in a deep FIFO");
    // PROBE_RTT: cwnd drops to cwnd_min_target (4) once the 10 s min_rtt filter expires,
    // i.e. around 10 s and 20 s, and not in between.
    let s = &r.series;
    let dips: Vec<f64> =
        s.t.iter()
            .zip(&s.flows[0].cwnd)
            .filter(|(t, c)| **t > 2.0 && **c <= 4.0)
            .map(|(t, _)| *t)
            .collect();
    assert!(
        dips.iter().any(|t| (9.5..11.5).contains(t)),
        "no PROBE_RTT dip near 10 s: {dips:?}"
    );
    assert!(
        dips.iter().any(|t| (19.5..21.5).contains(t)),
        "no PROBE_RTT dip near 20 s: {dips:?}"
    );
    assert!(
        dips.iter()
            .all(|t| (9.5..11.5).contains(t) || (19.5..21.5).contains(t)),
        "cwnd dips outside PROBE_RTT: {dips:?}"
    );
}

#[test]
fn bbrv1_dominates_cubic_in_a_half_bdp_fifo() {
    let bbr = json!({"name": "bbr", "cc": {"name": "bbr"}});
    let cubic = json!({"name": "cubic", "cc": {"name": "cubic"}});
    let r = run(&dumbbell(20.0, MBPS, RTT, bfifo(0.5), vec![bbr, cubic]));
    let s = share(&r);
    assert!(s > 0.75, "BBRv1 share {s}");
    assert!(r.links[0].utilisation > 0.9);
}

/// Two BBRv2 flows through a single queue that CE-marks above 5 ms.
fn two_bbr2_through_a_step_queue(cc: Value, ecn: &str, rx_cc: Value) -> (f64, f64, f64, u64) {
    let f = |name: &str| {
        json!({"name": name, "cc": cc, "tcp": {"ecn": ecn},
               "receiver": {"cc": rx_cc, "tcp": {"ecn": ecn}}})
    };
    let r = run(&dumbbell(
        10.0,
        MBPS,
        RTT,
        step_queue(10.0, T_MS),
        vec![f("a"), f("b")],
    ));
    let q = &r.qdiscs[0];
    assert!(q.marks > 0, "the step queue marked nothing");
    (
        r.links[0].utilisation,
        q.sojourn_mean_ms,
        q.sojourn_p90_ms,
        q.drops,
    )
}

#[test]
fn bbrv2_with_accecn_keeps_a_step_marking_queue_below_the_threshold() {
    // L4STeam BBRv2: ECN on at any RTT, ECT(1) with AccECN.
    let l4s = json!({"name": "bbr2", "variant": "l4s"});
    let (u, mean, p90, drops) = two_bbr2_through_a_step_queue(l4s.clone(), "accecn", l4s);
    assert!(u > 0.9, "utilisation {u}");
    assert!(
        mean < T_MS && p90 < T_MS,
        "sojourn mean {mean} / p90 {p90} ms vs {T_MS} ms"
    );
    assert_eq!(drops, 0);
}

#[test]
fn bbrv2_v2alpha_with_ecn_enable_and_dctcp_echo_keeps_the_queue_below_the_threshold() {
    // google v2alpha with bbr_ecn_enable=1 and ecn_max_rtt_us=0 (the default 5 ms cap would
    // exclude a 10 ms path); the bbr2 receiver echoes CE DCTCP-style (precise_ece_ack).
    let cc = json!({"name": "bbr2", "ecn_enable": true, "ecn_max_rtt_us": 0});
    let rx = json!({"name": "bbr2", "ecn_enable": true});
    let (u, mean, p90, drops) = two_bbr2_through_a_step_queue(cc, "classic", rx);
    assert!(u > 0.9, "utilisation {u}");
    assert!(
        mean < T_MS && p90 < T_MS,
        "sojourn mean {mean} / p90 {p90} ms"
    );
    assert_eq!(drops, 0);
}

#[test]
fn bbrv2_v2alpha_by_default_ignores_ce_and_queues_above_the_threshold() {
    // Stock v2alpha (bbr_ecn_enable=0): ECN negotiated, CE marks change nothing.
    let (_, mean, _, _) =
        two_bbr2_through_a_step_queue(json!({"name": "bbr2"}), "classic", json!({"name": "cubic"}));
    assert!(mean > T_MS, "mean sojourn {mean} ms");
}

// ---- The study's verdict rows, Prague (AccECN) vs BBRv2 (v2alpha defaults) ----

fn prague_vs_bbr2(qdisc: Value, bbr2_ecn: &str) -> (f64, f64, f64) {
    let r = run(&dumbbell(
        20.0,
        MBPS,
        RTT,
        qdisc,
        vec![prague(), classic(json!({"name": "bbr2"}), bbr2_ecn)],
    ));
    (share(&r), r.flows[0].qdelay_ms, r.flows[1].qdelay_ms)
}

#[test]
fn verdict_prague_is_harmful_to_bbrv2_in_a_non_ecn_fifo() {
    let (s, _, _) = prague_vs_bbr2(bfifo(2.0), "none");
    assert!(s > 0.7, "Prague share {s}");
}

#[test]
fn verdict_prague_is_degraded_against_an_ecn_capable_bbrv2_in_dualpi2() {
    // BBRv2's ECT(0) packets get CE from the classic queue instead of drops, which v2alpha
    // ignores: the PI controller raises p' until Prague's coupled marking (2p') starves it.
    // (Prague's srtt is not asserted: at its window of a few segments it includes the
    // receiver's delayed-ACK wait for the second segment, docs/validation.md.)
    let (s, _, q_bbr2) = prague_vs_bbr2(json!({"kind": "dualpi2", "target_ms": T_MS}), "classic");
    assert!(s < 0.3, "Prague share {s}");
    // The classic queue is held near the PI2 target.
    assert!(q_bbr2 < 2.0 * T_MS, "BBRv2 queueing delay {q_bbr2} ms");
}

#[test]
fn verdict_prague_is_degraded_sharing_a_single_ecn_queue_with_bbrv2() {
    let (s, _, _) = prague_vs_bbr2(step_queue(2.0, T_MS), "none");
    assert!(s < 0.35, "Prague share {s}");
}

#[test]
fn verdict_fq_gives_prague_and_bbrv2_about_even_shares() {
    let p = packets(2.0);
    let q = json!({"kind": "fq", "limit": p, "flow_limit": p, "ce_threshold_ms": T_MS});
    let (s, _, _) = prague_vs_bbr2(q, "none");
    assert!((s - 0.5).abs() < 0.1, "Prague share {s}");
}

#[test]
fn verdict_bbrv1_dominates_prague_in_a_half_bdp_fifo() {
    let r = run(&dumbbell(
        20.0,
        MBPS,
        RTT,
        bfifo(0.5),
        vec![prague(), classic(json!({"name": "bbr"}), "none")],
    ));
    let s = share(&r);
    assert!(s < 0.25, "Prague share {s}");
}

// ---- The study kernel's BBRv2 (L4STeam tcp_bbr2.c, `variant = "l4s"`) as an L4S flow ----

#[test]
fn l4s_bbrv2_with_accecn_sends_ect1_and_gets_dualpi2s_l_queue() {
    // L4STeam tcp_bbr2.c `bbr2_init`: with AccECN negotiated it sets TCP_ECN_ECT_1, so
    // DualPI2 classifies it into the L queue (1 ms step): sub-millisecond queueing there.
    let bbr2 = json!({"name": "l4s", "cc": {"name": "bbr2", "variant": "l4s"},
                      "tcp": {"ecn": "accecn"},
                      "receiver": {"cc": {"name": "bbr2", "variant": "l4s"}, "tcp": {"ecn": "accecn"}}});
    let r = run(&dumbbell(
        20.0,
        MBPS,
        RTT,
        json!({"kind": "dualpi2", "target_ms": T_MS}),
        vec![bbr2, classic(json!({"name": "cubic"}), "classic")],
    ));
    assert_eq!(r.flows[0].data_ecn, "ect1", "L4S BBRv2 codepoint");
    let class = |name: &str| {
        r.classes
            .iter()
            .find(|c| c.kind == "class" && c.name == name)
            .unwrap_or_else(|| panic!("no {name} class"))
    };
    let flow = r
        .classes
        .iter()
        .find(|c| c.kind == "flow" && c.name == "l4s")
        .expect("per-flow stats of the BBRv2 flow");
    let (l, c) = (class("l4s"), class("classic"));
    // Every BBRv2 data packet went through the L queue (the Not-ECT SYN goes to C).
    assert!(
        l.deq_pkts + 1 >= flow.deq_pkts,
        "L {} vs BBRv2 flow {}",
        l.deq_pkts,
        flow.deq_pkts
    );
    assert!(
        flow.sojourn_mean_ms < 1.0,
        "BBRv2 sojourn {} ms",
        flow.sojourn_mean_ms
    );
    assert!(
        c.sojourn_mean_ms > 2.0,
        "classic sojourn {} ms",
        c.sojourn_mean_ms
    );
    assert!(
        r.flows[0].goodput_mbps > 10.0,
        "BBRv2 goodput {}",
        r.flows[0].goodput_mbps
    );
}
