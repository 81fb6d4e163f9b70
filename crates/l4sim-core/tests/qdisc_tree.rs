//! Classful qdiscs end to end: a `prio` whose L4S band (selected by DSCP) is capped by `tbf`,
//! the multi-AS study's "priority capped" queue at a bottleneck.

mod common;

use common::{dumbbell, run};
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
    let sc = dumbbell(
        10.0,
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
    // The cap holds over the run (the bucket's burst is 12.8 KB, nothing over a second).
    assert!(
        l4s.goodput_mbps < 50.0 && l4s.goodput_mbps > 40.0,
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
