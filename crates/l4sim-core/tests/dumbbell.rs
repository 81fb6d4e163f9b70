//! End-to-end dumbbell scenarios (issue: foundation). Tolerances are wide enough for the
//! randomness of phases, tight enough to fail when the model is wrong.

mod common;
use common::*;
use l4sim_core::scenario::Scenario;
use serde_json::json;

#[test]
fn standard_scenario_cubic_flows_share_the_link_and_fill_it() {
    let q = json!({"kind": "bfifo", "limit": bdp_bytes(2.0, 100.0, 10.0)});
    let r = run(&dumbbell(
        20.0,
        100.0,
        10.0,
        q,
        vec![
            flow("a", json!({"name": "cubic"})),
            flow("b", json!({"name": "cubic"})),
        ],
    ));
    let (a, b) = (r.flows[0].goodput_mbps, r.flows[1].goodput_mbps);
    let total = a + b;
    assert!(total > 0.93 * max_goodput(100.0), "total goodput {total}");
    assert!(
        total <= max_goodput(100.0) + 0.01,
        "goodput {total} above the link's payload rate"
    );
    assert!(a > 15.0 && b > 15.0, "both flows get a share: {a} {b}");
    assert!(
        r.links[0].utilisation > 0.95,
        "utilisation {}",
        r.links[0].utilisation
    );
}

#[test]
fn single_reno_flow_keeps_a_one_bdp_fifo_nearly_full() {
    let q = json!({"kind": "bfifo", "limit": bdp_bytes(1.0, 100.0, 20.0)});
    let r = run(&dumbbell(
        20.0,
        100.0,
        20.0,
        q,
        vec![flow("reno", json!({"name": "reno"}))],
    ));
    let g = r.flows[0].goodput_mbps;
    assert!(g > 0.9 * max_goodput(100.0), "reno goodput {g}");
}

#[test]
fn deeper_fifo_gives_several_times_the_queueing_delay() {
    let run_nbdp = |n: f64| {
        let q = json!({"kind": "bfifo", "limit": bdp_bytes(n, 100.0, 20.0)});
        run(&dumbbell(
            20.0,
            100.0,
            20.0,
            q,
            vec![flow("reno", json!({"name": "reno"}))],
        ))
    };
    let q1 = run_nbdp(1.0).flows[0].qdelay_ms;
    let q8 = run_nbdp(8.0).flows[0].qdelay_ms;
    assert!(q1 > 0.5, "1 BDP queueing delay {q1}");
    assert!(q8 > 3.0 * q1, "8 BDP {q8} ms vs 1 BDP {q1} ms");
}

#[test]
fn same_scenario_and_seed_give_identical_results() {
    let q = json!({"kind": "bfifo", "limit": bdp_bytes(2.0, 100.0, 10.0)});
    let sc = dumbbell(
        5.0,
        100.0,
        10.0,
        q,
        vec![
            flow("a", json!({"name": "cubic"})),
            flow("b", json!({"name": "reno"})),
        ],
    );
    let mut r1 = run(&sc);
    let mut r2 = run(&sc);
    r1.wall_seconds = 0.0;
    r2.wall_seconds = 0.0;
    assert_eq!(
        serde_json::to_string(&r1).unwrap(),
        serde_json::to_string(&r2).unwrap()
    );
}

#[test]
fn different_seeds_change_flow_hashes_but_not_validity() {
    let q = json!({"kind": "pfifo", "limit": 100});
    let mut sc = dumbbell(3.0, 50.0, 10.0, q, vec![flow("a", json!({"name": "reno"}))]);
    sc["seed"] = json!(7);
    let r = run(&sc);
    assert!(r.flows[0].goodput_mbps > 10.0);
}

#[test]
fn per_flow_base_rtt_is_honoured() {
    let q = json!({"kind": "bfifo", "limit": 10_000_000});
    let mut f = flow("far", json!({"name": "reno"}));
    f["base_rtt"] = json!(50.0);
    let r = run(&dumbbell(
        5.0,
        10.0,
        10.0,
        q,
        vec![flow("near", json!({"name": "reno"})), f],
    ));
    assert!((r.flows[0].base_rtt_ms - 10.0).abs() < 1e-9);
    assert!((r.flows[1].base_rtt_ms - 50.0).abs() < 1e-9);
    assert!(r.flows[1].mean_srtt_ms >= 50.0);
}

#[test]
fn parallel_streams_sum_their_goodput() {
    let q = json!({"kind": "bfifo", "limit": bdp_bytes(2.0, 100.0, 10.0)});
    let mut f = flow("multi", json!({"name": "cubic"}));
    f["streams"] = json!(3);
    let r = run(&dumbbell(10.0, 100.0, 10.0, q, vec![f]));
    assert_eq!(r.flows[0].streams, 3);
    assert!(r.flows[0].goodput_mbps > 0.9 * max_goodput(100.0));
}

#[test]
fn sized_flow_reports_its_completion_time() {
    let q = json!({"kind": "bfifo", "limit": 1_000_000});
    let mut f = flow("short", json!({"name": "cubic"}));
    f["size"] = json!(1_000_000);
    let r = run(&dumbbell(5.0, 100.0, 10.0, q, vec![f]));
    let c = r.flows[0].completion_s.expect("completed");
    // 1 MB at 100 Mbit/s is 80 ms of transmission plus slow start over a 10 ms RTT.
    assert!(c > 0.08 && c < 0.5, "completion {c}");
    assert_eq!(r.flows[0].bytes_delivered, 1_000_000);
}

#[test]
fn tree_with_a_root_bottleneck_carries_all_pairs() {
    let sc = json!({
        "duration": 5.0,
        "topology": {"kind": "tree", "base_rtt": 10.0, "pairs": 4,
                     "bottlenecks": [{"link": "down_agg0", "rate": 100.0,
                                      "qdisc": {"kind": "bfifo", "limit": 250000}}]},
        "flows": [
            {"name": "p0", "cc": {"name": "cubic"}, "pair": 0},
            {"name": "p3", "cc": {"name": "cubic"}, "pair": 3}
        ]
    });
    let r = run(&sc);
    let total: f64 = r.flows.iter().map(|f| f.goodput_mbps).sum();
    assert!(total > 0.85 * max_goodput(100.0), "{total}");
    assert_eq!(r.links.len(), 1);
}

#[test]
fn flows_on_one_tree_pair_must_agree_on_its_base_rtt() {
    // The pair's access links carry the first flow's RTT: a second flow's other base_rtt
    // was silently that of the first.
    let sc = |rtt: f64| {
        json!({
            "duration": 1.0,
            "topology": {"kind": "tree", "base_rtt": 10.0, "pairs": 4,
                         "bottlenecks": [{"link": "up_pair0", "rate": 100.0,
                                          "qdisc": {"kind": "bfifo", "limit": 250000}}]},
            "flows": [
                {"name": "a", "cc": {"name": "cubic"}, "pair": 0},
                {"name": "b", "cc": {"name": "cubic"}, "pair": 0, "base_rtt": rtt}
            ]
        })
    };
    let e = l4sim_core::sim::World::new(&Scenario::from_json(&sc(50.0).to_string()).unwrap())
        .err()
        .expect("a second base RTT on pair 0 is refused");
    assert_eq!(e.field, "flows[1].base_rtt");
    assert!(
        e.message.contains("pair 0's hosts have 10 ms (flows[0]"),
        "{e}"
    );
    assert_eq!(run(&sc(10.0)).flows[1].base_rtt_ms, 10.0);
}
