//! The general topology: the dumbbell's and the tree's graphs written out give the builders'
//! results byte for byte; policy routes pin a DSCP, a source or an ECN class to a path.

mod common;

use common::run;
use serde_json::{json, Value};

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

/// The diamond with a second sender, h3 on r1, whose CUBIC flow (DSCP 0, as h1's "classic")
/// goes to h2 too.
fn diamond_two_senders(routes: Value) -> Value {
    let mut sc = diamond(routes);
    let topo = &mut sc["topology"];
    topo["nodes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "h3", "kind": "host"}));
    let h3 = json!({"a": "h3", "b": "r1", "rate": 1000, "delay_ms": 1});
    topo["links"].as_array_mut().unwrap().push(h3);
    let f = json!({"name": "h3", "cc": {"name": "cubic"}, "from": "h3", "to": "h2"});
    sc["flows"].as_array_mut().unwrap().push(f);
    sc
}

#[test]
fn a_policy_route_selects_by_source_by_dscp_or_both_and_the_first_that_matches_wins() {
    // `ip rule from H3 lookup T`: h3's packets take r3, h1's classic flow (same DSCP 0) the
    // shortest path over r2, and the DSCP 10 flow from h1 its own route, listed first.
    let r = run(&diamond_two_senders(json!([
        {"dscp": 10, "from": "h1", "path": ["h1", "r1", "r2", "r4", "h2"]},
        {"from": "h3", "path": ["h3", "r1", "r3", "r4", "h2"]},
        {"dscp": 10, "path": ["r1", "r3", "r4", "h2"]}])));
    let per_flow = |q: &str, flow: &str| {
        r.classes
            .iter()
            .find(|c| c.qdisc == q && c.kind == "flow" && c.name == flow)
            .map_or(0, |c| c.deq_pkts)
    };
    for (flow, via, not) in [
        ("h3", "r1->r3", "r1->r2"),
        ("classic", "r1->r2", "r1->r3"),
        ("l4s", "r1->r2", "r1->r3"),
    ] {
        assert!(per_flow(via, flow) > 500, "{flow} over {via}");
        assert_eq!(per_flow(not, flow), 0, "{flow} over {not}");
    }
    let base = |n: &str| r.flows.iter().find(|f| f.name == n).unwrap().base_rtt_ms;
    assert!((base("h3") - 28.0).abs() < 1e-9, "{}", base("h3"));
    assert!((base("l4s") - 12.0).abs() < 1e-9, "{}", base("l4s"));
    // Without the first route, h1's DSCP 10 packets reach r1 and follow the DSCP route to r3.
    let r = run(&diamond_two_senders(json!([
        {"from": "h3", "path": ["h3", "r1", "r3", "r4", "h2"]},
        {"dscp": 10, "path": ["r1", "r3", "r4", "h2"]}])));
    let l4s = r.flows.iter().find(|f| f.name == "l4s").unwrap();
    assert!((l4s.base_rtt_ms - 28.0).abs() < 1e-9, "{}", l4s.base_rtt_ms);
    // The receiver's packets (ACKs, DSCP 0) are its own: a route from h2 pins them.
    let r = run(&diamond(
        json!([{"from": "h2", "path": ["h2", "r4", "r3", "r1", "h1"]}]),
    ));
    let classic = r.flows.iter().find(|f| f.name == "classic").unwrap();
    assert!(
        (classic.base_rtt_ms - 28.0).abs() < 1e-9,
        "{}",
        classic.base_rtt_ms
    );
    // and the packets take it: the flow's smoothed RTT is never below it.
    assert!(classic.mean_srtt_ms > 28.0, "{}", classic.mean_srtt_ms);
}

/// The diamond with a DualPI2 at 40 Mbit/s on r4 -> h2, a Prague flow with AccECN (ECT(1),
/// "l4s") and a CUBIC flow with RFC 3168 ECN (ECT(0), "classic"), both from h1.
fn diamond_ecn(routes: Value) -> Value {
    let mut sc = diamond(routes);
    sc["topology"]["links"][5]["ab"] =
        json!({"rate": 40, "qdisc": {"kind": "dualpi2", "limit": 1000}});
    let ecn = |cc: &str, ecn: &str| {
        json!({"cc": {"name": cc}, "tcp": {"ecn": ecn},
               "receiver": {"cc": {"name": cc}, "tcp": {"ecn": ecn}}})
    };
    for (f, (cc, mode)) in [("prague", "accecn"), ("cubic", "classic")]
        .iter()
        .enumerate()
    {
        for (k, v) in ecn(cc, mode).as_object().unwrap() {
            sc["flows"][f][k] = v.clone();
        }
        sc["flows"][f].as_object_mut().unwrap().remove("dscp");
    }
    sc
}

/// Packets of `flow` that qdisc `q` sent.
fn deq_of_flow(r: &l4sim_core::metrics::results::RunResult, q: &str, flow: &str) -> u64 {
    r.classes
        .iter()
        .find(|c| c.qdisc == q && c.kind == "flow" && c.name == flow)
        .map_or(0, |c| c.deq_pkts)
}

#[test]
fn a_policy_route_by_ecn_takes_what_the_studys_ip6tables_rules_mark() {
    // The multi-AS study's SRv6 rule (`-m ecn`: ECT(1), CE, TCP ECE, TCP CWR -> fwmark ->
    // table 100): the Prague flow's packets all take r3, the classic flow's data takes the
    // shortest path over r2, except its ECN set-up SYN (ECE|CWR) and the segment with CWR
    // after each of its ECN responses.
    let r = run(&diamond_ecn(json!([
        {"ecn": ["ect1", "ce", "tcp_ece", "tcp_cwr"], "path": ["h1", "r1", "r3", "r4", "h2"]}])));
    let per_flow = |q: &str, flow: &str| deq_of_flow(&r, q, flow);
    let flow = |n: &str| r.flows.iter().find(|f| f.name == n).unwrap();
    assert!(per_flow("r1->r3", "l4s") > 1000);
    assert_eq!(per_flow("r1->r2", "l4s"), 0);
    let classic = flow("classic");
    assert!(classic.cwr_count > 0, "the DualPI2 marks the classic flow");
    assert!(per_flow("r1->r2", "classic") > 1000);
    // A segment with CWR follows each cwnd reduction of an RFC 3168 sender
    // (`tcp_init_cwnd_reduction` and `tcp_enter_loss` queue one): the ECN responses, and the
    // recoveries begun outside one (here the CWR segments' own detour reorders them).
    let (cwr_sent, c) = (per_flow("r1->r3", "classic"), classic);
    let most = 1 + c.cwr_count + c.fast_recoveries + c.rto_count;
    assert!(
        (1 + c.cwr_count..=most).contains(&cwr_sent),
        "{cwr_sent} {} {} {}",
        c.cwr_count,
        c.fast_recoveries,
        c.rto_count
    );
    // The base RTT is that of the route the data's codepoint takes: over r3 for ECT(1).
    assert!(
        (flow("l4s").base_rtt_ms - 28.0).abs() < 1e-9,
        "{}",
        flow("l4s").base_rtt_ms
    );
    assert!(
        (classic.base_rtt_ms - 12.0).abs() < 1e-9,
        "{}",
        classic.base_rtt_ms
    );
    // A route by ECT(0) takes the classic data.
    let r = run(&diamond_ecn(json!([
        {"ecn": ["ect0"], "path": ["h1", "r1", "r3", "r4", "h2"]}])));
    let on = |q: &str, flow: &str| deq_of_flow(&r, q, flow);
    assert!(on("r1->r3", "classic") > 1000 && on("r1->r2", "classic") < 20);
    // Of the Prague flow only its SYN, ECT(0) as `tcp_ecn_send_syn` sends it for a CC that
    // needs ECN.
    assert_eq!(on("r1->r3", "l4s"), 1);
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
    // A router has one next hop per DSCP and destination: no path through a node twice, no
    // second route sending the same packets elsewhere (it would never be followed).
    check(
        diamond(json!([{"dscp": 10, "path": ["h1", "r1", "r2", "r1", "r3", "r4", "h2"]}])),
        "topology.routes[0].path",
    );
    check(
        diamond(json!([{"dscp": 10, "path": ["h1", "r1", "r3", "r4", "h2"]},
                       {"dscp": 10, "path": ["h1", "r1", "r2", "r4", "h2"]}])),
        "topology.routes[1].path",
    );
    // `from` names a host; routes for the same source toward the same host agree too.
    check(
        diamond(json!([{"from": "r2", "path": ["h1", "r1", "r3", "r4", "h2"]}])),
        "topology.routes[0].from",
    );
    check(
        diamond(
            json!([{"from": "h1", "path": ["h1", "r1", "r3", "r4", "h2"]},
                       {"from": "h1", "path": ["r1", "r2", "r4", "h2"]}]),
        ),
        "topology.routes[1].path",
    );
    // An ECN test list names at least one test, each a known one.
    check(
        diamond(json!([{"ecn": [], "path": ["h1", "r1", "r3", "r4", "h2"]}])),
        "topology.routes[0].ecn",
    );
    let e = Scenario::from_json(
        &diamond(json!([{"ecn": ["ect2"], "path": ["h1", "r1", "r3", "r4", "h2"]}])).to_string(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("ect2"), "{e}");
    // Routes that test the ECN differently are different routes.
    check(
        diamond(
            json!([{"ecn": ["ect1"], "path": ["h1", "r1", "r3", "r4", "h2"]},
                       {"ecn": ["ect1"], "path": ["h1", "r1", "r2", "r4", "h2"]}]),
        ),
        "topology.routes[1].path",
    );
    let ecn_apart = json!([{"ecn": ["ect1"], "path": ["h1", "r1", "r3", "r4", "h2"]},
                           {"ecn": ["ce"], "path": ["h1", "r1", "r2", "r4", "h2"]}]);
    assert!(Scenario::from_json(&diamond(ecn_apart).to_string()).is_ok());
    let agree = json!([{"dscp": 10, "path": ["h1", "r1", "r3", "r4", "h2"]},
                       {"dscp": 10, "path": ["r2", "r1", "r3", "r4", "h2"]},
                       {"dscp": 12, "path": ["h1", "r1", "r2", "r4", "h2"]}]);
    assert!(Scenario::from_json(&diamond(agree).to_string()).is_ok());
    let mut sc = diamond(json!([]));
    sc["flows"][0]["to"] = json!("r4");
    check(sc, "flows[0].to");
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][1]["b"] = json!("nowhere");
    check(sc, "topology.links[1].b");
    // A rate that rounds to 0 bit/s would divide by zero at the first packet.
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][0]["rate"] = json!(1e-9);
    check(sc, "topology.links[0].rate");
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][0]["rate_ba"] = json!(1e-9);
    check(sc, "topology.links[0].rate_ba");
    // rate_ba = 0 (no serialization) leaves a shaped reverse direction without a line rate.
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][1]["ba"] = sc["topology"]["links"][1]["ab"].clone();
    sc["topology"]["links"][1]["rate_ba"] = json!(0);
    check(sc, "topology.links[1].rate_ba");
    let mut sc = diamond(json!([]));
    sc["flows"][1].as_object_mut().unwrap().remove("from");
    check(sc, "flows[1].from");
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][2]["name_ab"] = json!("r1->r2");
    check(sc, "topology.links[2].name_ab");
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][0]["delay_ba_ms"] = json!(-1);
    check(sc, "topology.links[0].delay_ba_ms");
    // Shaping above the line rate: Linux's busy driver would push the excess back into the
    // qdisc, the model's line would queue it unmanaged.
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][1]["ab"]["rate"] = json!(1500);
    check(sc, "topology.links[1].ab.rate");
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][1]["ba"] = sc["topology"]["links"][1]["ab"].clone();
    sc["topology"]["links"][1]["rate_ba"] = json!(40);
    check(sc, "topology.links[1].ba.rate");
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][1]["ab"]["rate"] = json!(1000);
    assert!(Scenario::from_json(&sc.to_string()).is_ok());
}

/// The dumbbell and the tree builders produce the general form: that graph, written out as a
/// scenario, runs to the builder's result byte for byte.
#[test]
fn the_builders_graphs_written_out_give_the_builders_results() {
    use l4sim_core::net::topology::{dumbbell_graph, tree_graph};
    use l4sim_core::scenario::{Scenario, TopologySpec};
    for file in ["dualpi2_prague_cubic", "tree_two_bottlenecks"] {
        let text = std::fs::read_to_string(format!("tests/golden/{file}.scenario.json")).unwrap();
        let sc = Scenario::from_json(&text).unwrap();
        let (g, hosts) = match &sc.topology {
            TopologySpec::Dumbbell {
                base_rtt,
                bottleneck,
                nic_rate,
            } => {
                let g = dumbbell_graph(*base_rtt, bottleneck, *nic_rate, &sc.flows);
                let hosts = (0..sc.flows.len() as u32)
                    .map(|i| (2 + 2 * i, 3 + 2 * i))
                    .collect();
                (g, hosts)
            }
            TopologySpec::Tree {
                base_rtt,
                pairs,
                nic_rate,
                bottlenecks,
            } => tree_graph(*base_rtt, *pairs, *nic_rate, bottlenecks, &sc.flows).unwrap(),
            _ => unreachable!(),
        };
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["topology"] = serde_json::to_value(&g).unwrap();
        v["topology"]["kind"] = json!("graph");
        for (f, (s, r)) in v["flows"].as_array_mut().unwrap().iter_mut().zip(hosts) {
            f["from"] = json!(g.nodes[s as usize].name);
            f["to"] = json!(g.nodes[r as usize].name);
            // the builder placed the flow (its pair) and gave its links their delays
            let f = f.as_object_mut().unwrap();
            f.remove("pair");
            f.remove("base_rtt");
        }
        let canon = |r: &l4sim_core::metrics::results::RunResult| {
            let mut v = serde_json::to_value(r).unwrap();
            v["wall_seconds"] = json!(0);
            v.to_string()
        };
        let (built, graph) = (run(&serde_json::from_str(&text).unwrap()), run(&v));
        assert_eq!(canon(&built), canon(&graph), "{file}");
    }
}

/// Mean wire length of the packets that left egress `link` (data, and one SYN, where no ACKs
/// pass).
/// The mean frame size on `link` is `bytes` (within 0.1 %).
fn assert_wire_size(r: &l4sim_core::metrics::results::RunResult, link: &str, bytes: f64) {
    let l = r.links.iter().find(|l| l.name == link).unwrap();
    let size = l.tx_bytes as f64 / l.tx_pkts as f64;
    assert!(
        (size / bytes - 1.0).abs() < 1e-3,
        "{link}: {size} bytes, want {bytes}"
    );
}

#[test]
fn a_connection_uses_the_smallest_mtu_on_its_path_and_tcp_maxseg_lowers_it() {
    // l4s is pinned over r3, whose link has a 1280-byte MTU: its segments carry
    // 1280 - 20 - 32 = 1228 bytes, 1294 on the wire with Ethernet; classic keeps 1448.
    let pinned = json!([{"dscp": 10, "path": ["h1", "r1", "r3", "r4", "h2"]}]);
    let mut sc = diamond(pinned.clone());
    sc["topology"]["links"][2]["mtu"] = json!(1280);
    let r = run(&sc);
    assert_wire_size(&r, "r1->r3", 1294.0);
    assert_wire_size(&r, "r1->r2", 1514.0);
    assert!(r.conservation_ok);
    // Jumbo frames everywhere: 9000 - 52 = 8948; a socket's TCP_MAXSEG 1000 caps it.
    let mut sc = diamond(pinned);
    for l in sc["topology"]["links"].as_array_mut().unwrap() {
        l["mtu"] = json!(9000);
    }
    sc["flows"][1]["tcp"] = json!({"mss": 1000});
    let r = run(&sc);
    assert_wire_size(&r, "r1->r3", 9014.0);
    assert_wire_size(&r, "r1->r2", 1066.0);
}

#[test]
fn a_datagram_larger_than_its_path_mtu_is_a_scenario_error() {
    use l4sim_core::scenario::Scenario;
    let mut sc = diamond(json!([]));
    sc["topology"]["links"][0]["mtu"] = json!(1280);
    sc["flows"][0]["source"] = json!({"kind": "udp", "rate_mbps": 1, "packet_size": 1400});
    let sc_ok = Scenario::from_json(&sc.to_string()).unwrap();
    let e = l4sim_core::sim::World::new(&sc_ok)
        .err()
        .expect("1400 bytes cannot cross a 1280-byte MTU");
    assert_eq!(e.field, "flows[0].source.packet_size", "{e}");
    sc["topology"]["links"][0]["mtu"] = json!(100);
    let e = Scenario::from_json(&sc.to_string()).unwrap_err();
    assert_eq!(e.field, "topology.links[0].mtu", "{e}");
    // The dumbbell builder's links (MTU 1500) say the same, not a panic.
    let db = json!({
        "duration": 1.0, "seed": 1,
        "topology": {"kind": "dumbbell", "base_rtt": 10,
                     "bottleneck": {"rate": 100, "qdisc": {"kind": "pfifo"}}},
        "flows": [{"name": "u", "source": {"kind": "udp", "rate_mbps": 1, "packet_size": 2000}}]
    });
    let db = Scenario::from_json(&db.to_string()).unwrap();
    let e = l4sim_core::sim::World::new(&db)
        .err()
        .expect("2000 bytes cannot cross the dumbbell's 1500-byte MTU");
    assert_eq!(e.field, "flows[0].source.packet_size", "{e}");
}

/// h1 - r1 - h2 with the 100 Mbit/s r1 -> h2 link unshaped (no qdisc), one CUBIC flow
/// h1 -> h2 whose window (up to the receive buffer's 3 MB) far exceeds the path's 33-packet BDP.
fn unshaped_bottleneck(slow: &str) -> Value {
    let link = |a: &str, b: &str| {
        let rate = if a == slow { 100 } else { 10_000 };
        json!({"a": a, "b": b, "rate": rate, "delay_ms": 1})
    };
    json!({
        "duration": 20.0, "seed": 1,
        "topology": {"kind": "graph",
            "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"},
                      {"name": "r1"}],
            "links": [link("h1", "r1"), link("r1", "h2")]},
        "flows": [{"name": "f", "cc": {"name": "cubic"}, "from": "h1", "to": "h2"}],
    })
}

#[test]
fn a_routers_unshaped_egress_tail_drops_tcp_at_its_device_queue() {
    // r1's device queue (txqueuelen 1000 under pfifo_fast) holds at most 1000 packets:
    // 1000 x 121 us = 121 ms of queueing over the 4 ms base RTT, and CUBIC loses packets there.
    let r = run(&unshaped_bottleneck("r1"));
    assert!(r.conservation_ok);
    let f = &r.flows[0];
    assert!(f.pkts_dropped > 0 && f.fast_recoveries > 0, "{f:?}");
    let max_srtt = r.rtt_samples["f"].iter().copied().fold(0.0, f64::max);
    assert!(
        max_srtt > 60.0 && max_srtt < 4.0 + 122.0 + 5.0,
        "{max_srtt}"
    );
    assert!(
        f.goodput_mbps > 0.9 * 100.0 * 1448.0 / 1514.0,
        "{}",
        f.goodput_mbps
    );
}

#[test]
fn small_packets_get_into_a_routers_device_queue_while_it_holds_fewer_than_1000() {
    // Beside the bulk flow that keeps r1's device queue near its 1000 packets (121 ms), web
    // transfers' SYNs and short segments get in whenever a packet has left it (pfifo_fast
    // counts packets): model 0.9.32 dropped any packet finding 1000 of its own size waiting,
    // 8 ms of queue for a SYN, and about one web transfer in 200 completed.
    let mut sc = unshaped_bottleneck("r1");
    sc["duration"] = json!(10.0);
    sc["flows"].as_array_mut().unwrap().push(json!({
        "name": "w", "cc": {"name": "cubic"}, "from": "h1", "to": "h2",
        "source": {"kind": "web", "rate": 20, "stop": 8,
                   "size": {"dist": "fixed", "bytes": 10000}}}));
    let r = run(&sc);
    assert!(r.conservation_ok);
    assert!(r.flows[0].pkts_dropped > 0, "{:?}", r.flows[0]);
    // Poisson(160) arrivals: 4 standard deviations is 51.
    let done = r.connections.iter().filter(|c| c.flow == "w").count();
    assert!(done > 110, "{done} web transfers completed");
}

/// The run's one flow lost nothing and filled its 100 Mbit/s bottleneck.
fn lossless_at_100_mbits(r: &l4sim_core::metrics::results::RunResult) {
    let f = &r.flows[0];
    assert_eq!(f.pkts_dropped, 0);
    let line = 100.0 * 1448.0 / 1514.0;
    assert!(f.goodput_mbps > 0.9 * line, "{}", f.goodput_mbps);
}

#[test]
fn a_sending_hosts_own_slow_nic_holds_tcp_in_the_socket() {
    // The host's 100 Mbit/s NIC is the bottleneck and nothing drops or marks: TSQ keeps all
    // but about 1 ms of the pacing rate (at most 1 MB) of CUBIC's data in the socket, where
    // without it the window (up to 3 MB) queued at the NIC (260 ms before model 0.9.2).
    // Held back by TSQ, not by cwnd, CUBIC stops growing (tcp_is_cwnd_limited), and the NIC
    // queue stays at a few ms (7 ms RTT over the 4 ms path).
    let r = run(&unshaped_bottleneck("h1"));
    lossless_at_100_mbits(&r);
    let max_srtt = r.rtt_samples["f"].iter().copied().fold(0.0, f64::max);
    assert!(max_srtt < 10.0, "{max_srtt}");
}

/// h1 - r1 - h2 (10 ms base RTT), h1's egress shaped to 100 Mbit/s with `qdisc`: the qdisc on
/// the sending host's own egress.
fn qdisc_at_the_sender(qdisc: Value) -> Value {
    json!({
        "duration": 20.0, "seed": 1,
        "topology": {"kind": "graph",
            "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"},
                      {"name": "r1"}],
            "links": [{"a": "h1", "b": "r1", "rate": 1000, "delay_ms": 2.5,
                       "ab": {"rate": 100, "qdisc": qdisc}},
                      {"a": "r1", "b": "h2", "rate": 1000, "delay_ms": 2.5}]},
        "flows": [{"name": "f", "cc": {"name": "cubic"}, "from": "h1", "to": "h2"}],
    })
}

#[test]
fn a_qdisc_on_the_senders_own_egress_holds_tcp_in_the_socket() {
    // TSQ counts a segment until the line has sent it, qdisc or not (tcp_wfree): the
    // 10,000-packet pfifo holds about 1 ms of the pacing rate, not CUBIC's window.
    let r = run(&qdisc_at_the_sender(
        json!({"kind": "pfifo", "limit": 10000}),
    ));
    lossless_at_100_mbits(&r);
    let q = r.qdiscs.iter().find(|q| q.name == "h1->r1").unwrap();
    // 1 ms at CUBIC's pacing rate (1.2 x cwnd / srtt in congestion avoidance, 2 x in slow
    // start): tens of packets at most, where the window is hundreds.
    assert!(q.max_backlog_pkts < 60, "{}", q.max_backlog_pkts);
    // So the RTT stays below the 10 ms path plus those 60 packets at 100 Mbit/s (7.3 ms).
    let max_srtt = r.rtt_samples["f"].iter().copied().fold(0.0, f64::max);
    assert!(max_srtt < 17.3, "{max_srtt}");
}

#[test]
fn a_delaying_netem_on_the_senders_egress_frees_the_socket_at_once() {
    // netem orphans what it delays (skb_orphan_partial, "as if already TX completed"), so TSQ
    // does not hold the socket to 1 ms of data in a 20 ms delay line: the flow fills the
    // 100 Mbit/s class over the 30 ms path.
    let r = run(&qdisc_at_the_sender(
        json!({"kind": "netem", "delay_ms": 20, "limit": 100000}),
    ));
    assert!(r.conservation_ok);
    let f = &r.flows[0];
    assert!(
        f.goodput_mbps > 0.9 * 100.0 * 1448.0 / 1514.0,
        "{}",
        f.goodput_mbps
    );
    let min_srtt = r.rtt_samples["f"].iter().copied().fold(f64::MAX, f64::min);
    assert!(min_srtt >= 30.0, "{min_srtt}");
}

#[test]
fn drops_at_the_senders_own_qdisc_free_the_socket() {
    // A 3-packet pfifo is shorter than what TSQ lets through: it drops, and each drop frees
    // its charge (kfree_skb runs tcp_wfree). Charges never freed would leave the socket over
    // its limit for good, sending only when nothing is unacknowledged: one skb per RTT.
    let r = run(&qdisc_at_the_sender(json!({"kind": "pfifo", "limit": 3})));
    assert!(r.conservation_ok);
    let f = &r.flows[0];
    assert!(f.pkts_dropped > 0, "{f:?}");
    assert!(f.goodput_mbps > 10.0, "{}", f.goodput_mbps);
}

#[test]
fn replacing_the_senders_own_qdisc_frees_what_it_held() {
    // `tc qdisc replace` frees every packet the old qdisc held (kfree_skb: tcp_wfree for those
    // still charged): a socket must not stay over its TSQ limit for charges that were dropped
    // with the qdisc, whatever the old and the new one orphan.
    use l4sim_core::scenario::Scenario;
    use l4sim_core::sim::World;
    use l4sim_core::time::SEC;
    let sc = qdisc_at_the_sender(json!({"kind": "pfifo", "limit": 10000}));
    let mut w = World::new(&Scenario::from_json(&sc.to_string()).unwrap()).unwrap();
    let mut delivered = 0;
    for (i, next) in [
        json!({"kind": "netem", "delay_ms": 20, "limit": 100000}),
        json!({"kind": "tbf", "rate_mbps": 100, "burst": 20000, "limit": 1000000}),
        json!({"kind": "pfifo", "limit": 5}),
        json!({"kind": "fq_codel"}),
    ]
    .into_iter()
    .enumerate()
    {
        w.run_until((4 * i as u64 + 4) * SEC);
        let spec = serde_json::from_value(next.clone()).unwrap();
        w.set_link(Some("h1->r1"), None, Some(spec)).unwrap();
        assert!(w.result("x", 0.0).conservation_ok, "{next}");
        // Mbit/s over the 4 s before the swap.
        let total = w.result("x", 0.0).flows[0].bytes_delivered;
        let mbps = (total - delivered) as f64 * 8.0 / 4e6;
        delivered = total;
        // (Under the 5-packet pfifo CUBIC loses packets at its own qdisc; a socket stuck over
        // its limit would send one skb per RTT, under 3 Mbit/s.)
        let floor = if i == 3 { 10.0 } else { 50.0 };
        assert!(mbps > floor, "{i}: {mbps} Mbit/s before {next}");
    }
    w.run_until(20 * SEC);
    let r = w.result("x", 0.0);
    assert!(r.conservation_ok);
    let mbps = (r.flows[0].bytes_delivered - delivered) as f64 * 8.0 / 4e6;
    assert!(mbps > 80.0, "{mbps} Mbit/s under fq_codel");
}

#[test]
fn a_hosts_tcp_flows_share_its_kernels_hz_and_tick_phase() {
    // One kernel per host: a TCP flow whose sender or receiver sits on a host another TCP
    // flow already uses must give it that flow's `hz` and `jiffies_phase_us`; the error names
    // the later flow's field. A UDP source reads no jiffies, so its settings do not count.
    use l4sim_core::scenario::Scenario;
    use l4sim_core::sim::World;
    let base = || {
        json!({
            "duration": 1.0,
            "topology": common::two_hops(json!({"rate": 100}), json!({"rate": 100})),
            "flows": [{"name": "a", "cc": {"name": "cubic"}, "from": "h1", "to": "h2",
                       "tcp": {"hz": 1000, "jiffies_phase_us": 300}},
                      {"name": "b", "cc": {"name": "cubic"}, "from": "h1", "to": "h2",
                       "tcp": {"hz": 1000, "jiffies_phase_us": 300}}],
        })
    };
    let world = |sc: &Value| World::new(&Scenario::from_json(&sc.to_string()).unwrap());
    assert!(world(&base()).is_ok());
    let refused = |sc: Value, field: &str| {
        let e = world(&sc).err().unwrap_or_else(|| panic!("{sc} accepted"));
        assert_eq!(e.field, field, "{e}");
        assert!(e.message.contains("\"h"), "names the host: {e}");
    };
    let mut sc = base();
    sc["flows"][1]["tcp"]["hz"] = json!(100);
    refused(sc, "flows[1].tcp.hz");
    let mut sc = base();
    sc["flows"][1]["tcp"] = json!({"hz": 1000});
    refused(sc, "flows[1].tcp.jiffies_phase_us");
    // b runs the other way: its receiver is on a's sending host.
    let mut sc = base();
    sc["flows"][1]["from"] = json!("h2");
    sc["flows"][1]["to"] = json!("h1");
    sc["flows"][1]["tcp"] = json!({});
    refused(sc.clone(), "flows[1].receiver.tcp.hz");
    sc["flows"][1]["tcp"] = json!({"hz": 250});
    sc["flows"][1]["receiver"] = json!({"tcp": {"hz": 1000}});
    refused(sc, "flows[1].receiver.tcp.jiffies_phase_us");
    let mut sc = base();
    sc["flows"][1]["tcp"] = json!({"hz": 100});
    sc["flows"][1]["source"] = json!({"kind": "udp", "rate_mbps": 1});
    assert!(world(&sc).is_ok());
    // A flow added while running is held to the same rule.
    let mut w = world(&base()).unwrap();
    w.run_until(500_000_000);
    let mut c: l4sim_core::scenario::FlowSpec =
        serde_json::from_value(base()["flows"][1].clone()).unwrap();
    c.name = "c".into();
    c.tcp.hz = 300;
    let e = w.add_flow(c).unwrap_err();
    assert_eq!(e.field, "tcp.hz", "{e}");
}

#[test]
fn a_graph_flows_base_rtt_is_an_error_since_its_links_give_the_rtt() {
    use l4sim_core::scenario::Scenario;
    let mut sc = diamond(json!([]));
    sc["flows"][0]["base_rtt"] = json!(30);
    let e = Scenario::from_json(&sc.to_string()).unwrap_err();
    assert_eq!(e.field, "flows[0].base_rtt", "{e}");
}

#[test]
fn a_second_link_between_two_nodes_is_named_as_such() {
    use l4sim_core::scenario::Scenario;
    let mut sc = diamond(json!([]));
    let first = sc["topology"]["links"][0].clone();
    sc["topology"]["links"].as_array_mut().unwrap().push(first);
    let e = Scenario::from_json(&sc.to_string()).unwrap_err();
    assert!(e.message.contains("a second link between"), "{e}");
    // Named egresses of their own make it a parallel link.
    let n = sc["topology"]["links"].as_array().unwrap().len() - 1;
    sc["topology"]["links"][n]["name_ab"] = json!("second-ab");
    sc["topology"]["links"][n]["name_ba"] = json!("second-ba");
    let e = Scenario::from_json(&sc.to_string()).err();
    assert!(
        e.as_ref().is_none_or(|e| !e.message.contains("name")),
        "{e:?}"
    );
}
