//! Classful qdiscs end to end: a `prio` whose L4S band (selected by DSCP) is capped by `tbf`,
//! the multi-AS study's "priority capped" queue at a bottleneck.

mod common;

use common::{dumbbell, run};
use l4sim_core::metrics::results::RunResult;
use serde_json::json;

#[test]
fn a_tbf_capped_priority_band_keeps_its_cap_and_the_classic_band_takes_the_rest() {
    // 200 Mbit/s bottleneck, 30 ms; DSCP 10 -> band 0 = tbf 50 Mbit/s -> pie (1 ms, ECN);
    // band 1 = pie (15 ms, ECN), as the ICNP'26 routers' tc configuration (there the cap is
    // 200 Mbit/s of 1 Gbit/s).
    let pie_l = json!({"kind": "pie", "limit": 20000, "target_ms": 1, "tupdate_ms": 16,
                       "alpha": 2, "beta": 20, "ecn": true, "bytemode": true});
    let pie_c =
        json!({"kind": "pie", "limit": 20000, "target_ms": 15, "ecn": true, "bytemode": true});
    let prio = json!({"kind": "prio", "bands": 3, "filters": [{"dscp": 10, "band": 0}],
                      "children": [{"kind": "tbf", "rate_mbps": 50, "burst": 12800, "limit": 1000000,
                                    "child": pie_l}, pie_c]});
    // 30 s: the first seconds (slow start into the 1 ms PIE behind the bucket) cost the L4S
    // flow a quarter of its cap in a 10 s run.
    let sc = dumbbell(
        30.0,
        200.0,
        30.0,
        prio,
        vec![
            json!({"name": "l4s", "cc": {"name": "prague"}, "tcp": {"ecn": "accecn"}, "dscp": 10,
                   "receiver": {"cc": {"name": "prague"}, "tcp": {"ecn": "accecn"}}}),
            json!({"name": "classic", "cc": {"name": "cubic"}}),
        ],
    );
    let r = run(&sc);
    let l4s = r.flows.iter().find(|f| f.name == "l4s").unwrap();
    let classic = r.flows.iter().find(|f| f.name == "classic").unwrap();
    // The cap holds over the run (the bucket's burst is 12.8 KB, nothing over a second) and
    // the L4S flow uses most of it (payload is 94.9 % of its frames with the AccECN option;
    // slow start and PIE's drops above 10 % included).
    assert!(
        l4s.goodput_mbps < 50.0 && l4s.goodput_mbps > 35.0,
        "l4s {}",
        l4s.goodput_mbps
    );
    assert!(
        classic.goodput_mbps > 120.0,
        "classic {}",
        classic.goodput_mbps
    );
    assert!(r.conservation_ok);
    let q = &r.qdiscs[0];
    assert_eq!(q.kind, "prio");
    // Per-class counters as `tc -s` lists them: the bands (and the tbf's child) add up to the
    // root, and the capped band carried the L4S flow's packets only.
    let class = |n: &str| r.qdisc_classes.iter().find(|c| c.name == n).unwrap();
    let names: Vec<&str> = r.qdisc_classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "bottleneck/band0",
            "bottleneck/band0/child",
            "bottleneck/band1",
            "bottleneck/band2"
        ]
    );
    let bands = ["bottleneck/band0", "bottleneck/band1", "bottleneck/band2"];
    assert_eq!(
        bands.iter().map(|b| class(b).deq_pkts).sum::<u64>(),
        q.deq_pkts
    );
    assert_eq!(bands.iter().map(|b| class(b).drops).sum::<u64>(), q.drops);
    assert_eq!(class("bottleneck/band0").kind, "tbf");
    assert_eq!(class("bottleneck/band0/child").kind, "pie");
    let l4s_pkts = r
        .classes
        .iter()
        .find(|c| c.kind == "flow" && c.name == "l4s")
        .unwrap()
        .deq_pkts;
    assert_eq!(class("bottleneck/band0").deq_pkts, l4s_pkts);
    assert_eq!(class("bottleneck/band2").enq_pkts, 0);
}

#[test]
fn without_the_filter_the_same_dscp_follows_the_priomap() {
    // No filter: DSCP 10 (AF11) is TC_PRIO_BULK -> band 2 (pfifo), below the classic band 1:
    // strict priority then starves it while CUBIC fills the link.
    let prio = json!({"kind": "prio"});
    let sc = dumbbell(
        10.0,
        50.0,
        10.0,
        prio,
        vec![
            json!({"name": "bulk-class", "cc": {"name": "cubic"}, "dscp": 10}),
            json!({"name": "best-effort", "cc": {"name": "cubic"}}),
        ],
    );
    let r = run(&sc);
    let low = r.flows.iter().find(|f| f.name == "bulk-class").unwrap();
    let be = r.flows.iter().find(|f| f.name == "best-effort").unwrap();
    assert!(
        be.goodput_mbps > 5.0 * low.goodput_mbps,
        "be {} low {}",
        be.goodput_mbps,
        low.goodput_mbps
    );
}

#[test]
fn a_saturated_wifi_hop_delivers_full_aggregates_at_their_airtime_efficiency() {
    // A 300 Mbit/s PHY behind a 1 Gbit/s HTB class (so airtime, not the class, limits), CUBIC
    // filling the default 1000-packet child: aggregates of 43 full frames (65,535 bytes), each
    // costing AIFS 43 us + mean backoff 67.5 us + header 40 us + 1,736 us of frames + SIFS and
    // block ack 48 us.
    let wifi = json!({"kind": "wifi", "phy_rate_mbps": 300});
    let sc = dumbbell(
        10.0,
        1000.0,
        20.0,
        wifi,
        vec![json!({"name": "bulk", "cc": {"name": "cubic"}})],
    );
    let r = run(&sc);
    let frames = 43.0 * 1514.0 * 8.0 / 300.0;
    let want = 43.0 * 1448.0 * 8.0 / (43.0 + 67.5 + 40.0 + frames + 48.0);
    let got = r.flows[0].goodput_mbps;
    assert!(
        got > 0.9 * want && got < 1.01 * want,
        "goodput {got}, airtime bound {want}"
    );
    let q = &r.qdiscs[0];
    assert_eq!(q.kind, "wifi");
    assert!(q.extra["mean_aggregate_pkts"] > 35.0, "{:?}", q.extra);
}

#[test]
fn htb_without_a_default_class_sends_what_no_class_takes_unshaped() {
    // A 20 Mbit/s port (the root class 1:1, over the dumbbell's 10 Gbit/s line) whose one
    // class takes DSCP 10. Without `default` the unclassified 50 Mbit/s UDP stream goes to the
    // direct queue: htb_dequeue sends it first and charges no class, so it leaves at its own
    // 50 Mbit/s and the class still gets its 20. With `default` 0 both share the 20.
    let gold = json!({"name": "gold", "rate_mbps": 20, "dscp": [10]});
    let flows = vec![
        json!({"name": "gold", "cc": {"name": "cubic"}, "dscp": 10}),
        json!({"name": "udp", "source": {"kind": "udp", "rate_mbps": 50, "packet_size": 1472}}),
    ];
    let r = run(&dumbbell(
        5.0,
        20.0,
        10.0,
        json!({"kind": "htb", "classes": [gold]}),
        flows.clone(),
    ));
    let good = |r: &RunResult, n: &str| r.flows.iter().find(|f| f.name == n).unwrap().goodput_mbps;
    assert!(good(&r, "udp") > 45.0, "udp {}", good(&r, "udp"));
    assert!(good(&r, "gold") > 15.0, "gold {}", good(&r, "gold"));
    let q = &r.qdiscs[0];
    assert_eq!(q.drops, 0);
    let direct = q.extra["direct_packets_stat"];
    let udp_sent = r.flows.iter().find(|f| f.name == "udp").unwrap();
    assert!(direct > 0.0 && direct + 100.0 >= udp_sent.goodput_mbps * 1e6 * 5.0 / 8.0 / 1472.0);
    let htb = json!({"kind": "htb", "classes": [gold], "default": 0});
    let r = run(&dumbbell(5.0, 20.0, 10.0, htb, flows));
    assert!(
        good(&r, "udp") + good(&r, "gold") < 20.0,
        "udp {} gold {}",
        good(&r, "udp"),
        good(&r, "gold")
    );
    assert_eq!(r.qdiscs[0].extra["direct_packets_stat"], 0.0);
}

#[test]
fn htb_leaf_classes_on_one_egress_give_each_flow_its_guaranteed_rate() {
    // 100 Mbit/s port; DSCP 10 -> 30 Mbit/s class, the rest -> 70 Mbit/s, both ceil 100:
    // two CUBIC flows each get their class's rate (nothing is left over to borrow).
    let htb = json!({"kind": "htb", "classes": [
        {"name": "gold", "rate_mbps": 30, "ceil_mbps": 100, "dscp": [10],
         "child": {"kind": "pfifo", "limit": 100}},
        {"name": "rest", "rate_mbps": 70, "ceil_mbps": 100, "child": {"kind": "pfifo", "limit": 100}}],
        "default": 1});
    let flows = vec![
        json!({"name": "gold", "cc": {"name": "cubic"}, "dscp": 10}),
        json!({"name": "rest", "cc": {"name": "cubic"}}),
    ];
    let r = run(&dumbbell(20.0, 100.0, 10.0, htb, flows));
    let good = |n: &str| r.flows.iter().find(|f| f.name == n).unwrap().goodput_mbps;
    let link = common::max_goodput(100.0);
    assert!(
        (good("gold") / link - 0.3).abs() < 0.03,
        "gold {}",
        good("gold")
    );
    assert!(
        (good("rest") / link - 0.7).abs() < 0.03,
        "rest {}",
        good("rest")
    );
    let names: Vec<&str> = r.qdisc_classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["bottleneck/gold", "bottleneck/rest"]);
}

#[test]
fn an_htb_inner_class_caps_the_flows_of_its_leaves_together() {
    // 100 Mbit/s port; inner "customer" (40, ceil 40) over two leaves (DSCP 10 and 12, 10
    // each, ceil 100), and "rest" (60, ceil 100). The customer's two CUBIC flows share its
    // 40 (they borrow from it, not from the root), the third flow gets the rest.
    let htb = json!({"kind": "htb", "classes": [
        {"name": "customer", "rate_mbps": 40, "ceil_mbps": 40},
        {"name": "a", "parent": 0, "rate_mbps": 10, "ceil_mbps": 100, "dscp": [10],
         "child": {"kind": "pfifo", "limit": 100}},
        {"name": "b", "parent": 0, "rate_mbps": 10, "ceil_mbps": 100, "dscp": [12],
         "child": {"kind": "pfifo", "limit": 100}},
        {"name": "rest", "rate_mbps": 60, "ceil_mbps": 100, "child": {"kind": "pfifo", "limit": 100}}],
        "default": 3});
    let flows = vec![
        json!({"name": "a", "cc": {"name": "cubic"}, "dscp": 10}),
        json!({"name": "b", "cc": {"name": "cubic"}, "dscp": 12}),
        json!({"name": "rest", "cc": {"name": "cubic"}}),
    ];
    let r = run(&dumbbell(20.0, 100.0, 10.0, htb, flows));
    let share = |n: &str| {
        r.flows.iter().find(|f| f.name == n).unwrap().goodput_mbps / common::max_goodput(100.0)
    };
    assert!(
        (share("a") + share("b") - 0.4).abs() < 0.03,
        "a {} b {}",
        share("a"),
        share("b")
    );
    assert!(
        (share("a") - share("b")).abs() < 0.05,
        "a {} b {}",
        share("a"),
        share("b")
    );
    assert!((share("rest") - 0.6).abs() < 0.03, "rest {}", share("rest"));
    // tc -s class: the inner class has a row of its own (sent, lends, borrows, no queue); the
    // leaves are named below it. The customer's leaves borrow only from it (level 6), so it
    // lends what they send beyond their own 10 + 10, and borrows nothing from the root.
    let names: Vec<&str> = r.qdisc_classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "bottleneck/customer",
            "bottleneck/customer/a",
            "bottleneck/customer/b",
            "bottleneck/rest"
        ]
    );
    let row = |n: &str| r.qdisc_classes.iter().find(|c| c.name == n).unwrap();
    let (cust, a, b) = (
        row("bottleneck/customer"),
        row("bottleneck/customer/a"),
        row("bottleneck/customer/b"),
    );
    assert_eq!(cust.kind, "htb class");
    assert_eq!(
        cust.extra["sent_pkts"],
        a.extra["sent_pkts"] + b.extra["sent_pkts"]
    );
    assert_eq!(cust.extra["borrows"], 0.0);
    assert_eq!(cust.extra["lends"], a.extra["borrows"] + b.extra["borrows"]);
    assert!(
        cust.extra["lends"] > 0.2 * cust.extra["sent_pkts"],
        "{:?}",
        cust.extra
    );
    assert_eq!(a.extra["sent_pkts"], a.deq_pkts as f64);
}
