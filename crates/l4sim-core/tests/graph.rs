//! The general topology: a dumbbell written as a graph gives the dumbbell's result byte for
//! byte; policy routes pin a DSCP to a path.

mod common;

use common::{dumbbell, run};
use serde_json::{json, Value};

fn flows() -> Vec<Value> {
    vec![
        json!({"name": "l4s", "cc": {"name": "prague"}, "tcp": {"ecn": "accecn"},
               "receiver": {"cc": {"name": "prague"}, "tcp": {"ecn": "accecn"}}}),
        json!({"name": "classic", "cc": {"name": "cubic"}}),
    ]
}

#[test]
fn a_dumbbell_written_as_a_graph_gives_the_same_result() {
    let qdisc = json!({"kind": "dualpi2", "target_ms": 5});
    let built = run(&dumbbell(5.0, 100.0, 10.0, qdisc.clone(), flows()));
    // The dumbbell builder's network, node by node and link by link in its order.
    let mut nodes = vec![json!({"name": "router"}), json!({"name": "rx_switch"})];
    let mut links = vec![
        json!({"a": "router", "b": "rx_switch", "rate": 10000, "rate_ba": 0,
                                "ab": {"rate": 100, "qdisc": qdisc}}),
    ];
    let mut gflows = Vec::new();
    for f in flows() {
        let name = f["name"].as_str().unwrap().to_string();
        nodes.push(json!({"name": format!("{name}.snd"), "kind": "host"}));
        nodes.push(json!({"name": format!("{name}.rcv"), "kind": "host"}));
        links
            .push(json!({"a": format!("{name}.snd"), "b": "router", "rate": 10000, "delay_ms": 5}));
        links.push(json!({"a": "rx_switch", "b": format!("{name}.rcv")}));
        let mut f = f.clone();
        f["from"] = json!(format!("{name}.snd"));
        f["to"] = json!(format!("{name}.rcv"));
        gflows.push(f);
    }
    let sc = json!({"duration": 5.0, "seed": 1, "sample_interval": 0.1,
                    "topology": {"kind": "graph", "nodes": nodes, "links": links},
                    "flows": gflows});
    let graph = run(&sc);
    let canon = |r: &l4sim_core::metrics::results::RunResult| {
        let mut v = serde_json::to_value(r).unwrap();
        v["wall_seconds"] = json!(0);
        v.to_string().replace("router->rx_switch", "bottleneck")
    };
    let (g, b) = (canon(&graph), canon(&built));
    if g != b {
        let at = g
            .bytes()
            .zip(b.bytes())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        panic!(
            "results differ at byte {at}: graph {:?} vs dumbbell {:?}",
            &g[at.saturating_sub(80)..(at + 40).min(g.len())],
            &b[at.saturating_sub(80)..(at + 40).min(b.len())]
        );
    }
}

/// h1 - r1 = (r2 | r3) = r4 - h2, every r1 egress shaped so its packets are counted.
fn diamond(routes: Value) -> Value {
    let shaped = json!({"rate": 50, "qdisc": {"kind": "pfifo", "limit": 1000}});
    json!({
        "duration": 3.0, "seed": 1,
        "topology": {"kind": "graph",
            "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"},
                      {"name": "r1"}, {"name": "r2"}, {"name": "r3"}, {"name": "r4"}],
            "links": [{"a": "h1", "b": "r1", "rate": 1000, "delay_ms": 1},
                      {"a": "r1", "b": "r2", "rate": 1000, "delay_ms": 2, "ab": shaped},
                      {"a": "r1", "b": "r3", "rate": 1000, "delay_ms": 10, "ab": shaped},
                      {"a": "r2", "b": "r4", "rate": 1000, "delay_ms": 2},
                      {"a": "r3", "b": "r4", "rate": 1000, "delay_ms": 10},
                      {"a": "r4", "b": "h2", "rate": 1000, "delay_ms": 1}],
            "routes": routes},
        "flows": [{"name": "l4s", "cc": {"name": "cubic"}, "dscp": 10, "from": "h1", "to": "h2"},
                  {"name": "classic", "cc": {"name": "cubic"}, "from": "h1", "to": "h2"}],
    })
}

#[test]
fn a_policy_route_pins_its_dscp_to_its_path_and_the_rest_takes_the_shortest() {
    let r = run(&diamond(
        json!([{"dscp": 10, "path": ["h1", "r1", "r3", "r4", "h2"]}]),
    ));
    let deq = |name: &str| r.qdiscs.iter().find(|q| q.name == name).unwrap().deq_pkts;
    let per_flow = |q: &str, flow: &str| {
        r.classes
            .iter()
            .find(|c| c.qdisc == q && c.kind == "flow" && c.name == flow)
            .map_or(0, |c| c.deq_pkts)
    };
    assert!(deq("r1->r3") > 1000 && deq("r1->r2") > 1000);
    assert_eq!(per_flow("r1->r2", "l4s"), 0);
    assert_eq!(per_flow("r1->r3", "classic"), 0);
    let base = |n: &str| r.flows.iter().find(|f| f.name == n).unwrap().base_rtt_ms;
    // Forward over r3 (1 + 10 + 10 + 1 ms), back over the shortest route (r2: 6 ms).
    assert!((base("l4s") - 28.0).abs() < 1e-9, "{}", base("l4s"));
    assert!((base("classic") - 12.0).abs() < 1e-9, "{}", base("classic"));
}

#[test]
fn bad_graphs_name_the_field() {
    use l4sim_core::scenario::Scenario;
    let check = |sc: Value, field: &str| {
        let e = Scenario::from_json(&sc.to_string()).unwrap_err();
        assert_eq!(e.field, field, "{e}");
    };
    check(
        diamond(json!([{"dscp": 10, "path": ["h1", "r2", "r4", "h2"]}])),
        "topology.routes[0].path",
    );
    check(
        diamond(json!([{"dscp": 10, "path": ["h1", "r1", "r2"]}])),
        "topology.routes[0].path",
    );
    let mut sc = diamond(json!([]));
    sc["flows"][0]["to"] = json!("r4");
    check(sc, "flows[0].to");
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][1]["b"] = json!("nowhere");
    check(sc, "topology.links[1].b");
    let mut sc = diamond(json!([]));
    sc["flows"][1].as_object_mut().unwrap().remove("from");
    check(sc, "flows[1].from");
}
