//! The study's networks, the dumbbell and the tree, as generators of the general form
//! ([`graph::GraphSpec`]): each lays out its nodes and links and the graph builder builds them.

use super::graph::{self, GraphSpec, LinkSpec, NodeKindSpec, NodeSpec};
use super::shaper::default_burst;
use super::{EgressCfg, Network, NodeKind};
use crate::qdisc::{self, Qdisc};
use crate::rng::{stream, Rng};
use crate::scenario::{BottleneckSpec, FlowSpec, ScenarioError, TopologySpec};
use crate::time::{millis, Rate, SimDuration};

/// A built network and where each flow (scenario `flows[i]`) attaches.
pub struct Built {
    pub net: Network,
    /// (sender host, receiver host) per flow spec.
    pub hosts: Vec<(u32, u32)>,
    /// Base RTT per flow spec, ns.
    pub base_rtt: Vec<SimDuration>,
}

pub(crate) fn shaped(
    name: &str,
    spec: &BottleneckSpec,
    nic: Rate,
    seed: u64,
    idx: u64,
) -> EgressCfg {
    let rate = Rate::mbps(spec.rate);
    let burst = spec.burst.unwrap_or_else(|| default_burst(rate));
    let q = qdisc::build(&spec.qdisc, Rng::new(seed, stream::QDISC + idx));
    EgressCfg {
        name: name.into(),
        rate: Some(nic),
        delay: 0,
        mtu: crate::packet::hdr::MTU,
        shaped: Some((rate, burst, Qdisc::new(q))),
    }
}

/// Split a base RTT into the two one-way netem delays (half each way).
fn halves(rtt: SimDuration) -> (SimDuration, SimDuration) {
    (rtt / 2, rtt - rtt / 2)
}

pub fn build(topo: &TopologySpec, flows: &[FlowSpec], seed: u64) -> Result<Built, ScenarioError> {
    match topo {
        TopologySpec::Dumbbell {
            base_rtt,
            bottleneck,
            nic_rate,
        } => dumbbell(*base_rtt, bottleneck, *nic_rate, flows, seed),
        TopologySpec::Tree {
            base_rtt,
            pairs,
            nic_rate,
            bottlenecks,
        } => tree(*base_rtt, *pairs, *nic_rate, bottlenecks, flows, seed),
        TopologySpec::Graph(g) => super::graph::build(g, flows, seed),
    }
}

fn node(name: impl Into<String>, kind: NodeKindSpec) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        kind,
    }
}

/// An unshaped link: `rate` both ways (`rate_ba` 0: none back), delays in ns each way.
fn link(a: &str, b: &str, rate: Option<f64>, rate_ba: Option<f64>, delays: (u64, u64)) -> LinkSpec {
    LinkSpec {
        a: a.into(),
        b: b.into(),
        rate,
        rate_ba,
        delay_ms: delays.0 as f64 / 1e6,
        delay_ba_ms: (delays.1 != delays.0).then_some(delays.1 as f64 / 1e6),
        ab: None,
        ba: None,
        name_ab: None,
        name_ba: None,
        mtu: None,
    }
}

/// The testbed as a graph: each flow's sender host -> delay node (netem: half the base RTT
/// each way, modelled as the propagation delay of the sender's link) -> `router`, whose egress
/// toward the receivers (`bottleneck`) is the HTB class + qdisc under test -> `rx_switch` ->
/// receivers. The ACK path is unshaped. Nodes and links in this order: the two routers and
/// the bottleneck link, then each flow's hosts and links ([`dumbbell_hosts`]).
pub fn dumbbell_graph(
    base_rtt_ms: f64,
    btl: &BottleneckSpec,
    nic_rate: f64,
    flows: &[FlowSpec],
) -> GraphSpec {
    let mut core = link("router", "rx_switch", Some(nic_rate), Some(0.0), (0, 0));
    core.ab = Some(btl.clone());
    core.name_ab = Some("bottleneck".into());
    let mut g = GraphSpec {
        nodes: vec![
            node("router", NodeKindSpec::Router),
            node("rx_switch", NodeKindSpec::Router),
        ],
        links: vec![core],
        routes: Vec::new(),
    };
    for f in flows {
        let (nodes, links) = dumbbell_hosts(f, base_rtt_ms, nic_rate);
        g.nodes.extend(nodes);
        g.links.extend(links);
    }
    g
}

/// A flow's sender and receiver hosts on the dumbbell: the sender's access link carries the
/// flow's base RTT, half each way; the receiver sits behind the unshaped switch.
fn dumbbell_hosts(f: &FlowSpec, base_rtt_ms: f64, nic_rate: f64) -> ([NodeSpec; 2], [LinkSpec; 2]) {
    let (snd, rcv) = (format!("{}.snd", f.name), format!("{}.rcv", f.name));
    let rtt = halves(millis(f.base_rtt.unwrap_or(base_rtt_ms)));
    (
        [
            node(&snd, NodeKindSpec::Host),
            node(&rcv, NodeKindSpec::Host),
        ],
        [
            link(&snd, "router", Some(nic_rate), None, rtt),
            link("rx_switch", &rcv, None, None, (0, 0)),
        ],
    )
}

fn dumbbell(
    base_rtt_ms: f64,
    btl: &BottleneckSpec,
    nic_rate: f64,
    flows: &[FlowSpec],
    seed: u64,
) -> Result<Built, ScenarioError> {
    let g = dumbbell_graph(base_rtt_ms, btl, nic_rate, flows);
    let hosts = (0..flows.len() as u32)
        .map(|i| (2 + 2 * i, 3 + 2 * i))
        .collect();
    // every flow is routed; what can fail is a UDP source's datagram over the path's MTU
    graph::attach(graph::network(&g, seed, 0), &g, flows, hosts)
}

/// Add a flow's sender and receiver hosts to a running dumbbell (as [`dumbbell_graph`] lays
/// them out); routes must be recomputed afterwards. Returns the hosts and the base RTT.
pub fn attach_dumbbell_host_pair(
    net: &mut Network,
    f: &FlowSpec,
    base_rtt_ms: f64,
    nic_rate: f64,
) -> (u32, u32, SimDuration) {
    let (nodes, links) = dumbbell_hosts(f, base_rtt_ms, nic_rate);
    let ids = nodes.map(|n| net.add_node(n.name, NodeKind::Host));
    let (router, rx_switch) = (0, 1);
    for (l, (a, b)) in links.iter().zip([(ids[0], router), (rx_switch, ids[1])]) {
        let (ab, ba) = l.egresses(0, &mut 0);
        net.add_link(a, b, ab, ba);
    }
    (ids[0], ids[1], millis(f.base_rtt.unwrap_or(base_rtt_ms)))
}

/// Set the base RTT of the flow whose sender host is `snd` (its access link's delays,
/// half each way) for packets sent from now on; packets already on the link keep theirs
/// and none is reordered (the link stays first in, first out).
pub fn set_host_rtt(net: &mut Network, snd: u32, rtt: SimDuration) {
    let (fwd, rev) = halves(rtt);
    let name = net.nodes[snd as usize].name.clone();
    for p in &mut net.pipes {
        if p.name == format!("{name}->router") {
            p.set_delay(fwd);
        } else if p.name == format!("router->{name}") {
            p.set_delay(rev);
        }
    }
}

/// The multi-bottleneck tree as a graph: senders in pairs behind `pair{j}` routers, pairs in
/// groups of four behind `agg{k}` routers, a root, and the mirror image toward the receivers.
/// Data egresses are named `up_pair{j}` (pair router -> agg), `up_agg{k}` (agg -> root),
/// `down_agg{k}` (root -> receiver-side agg) and `down_pair{j}` (receiver-side agg -> pair
/// router); a bottleneck may be placed on any of them. The base RTT sits on the senders'
/// access links, half each way. Returns the graph and each flow's (sender, receiver) nodes.
pub fn tree_graph(
    base_rtt_ms: f64,
    pairs: u32,
    nic_rate: f64,
    bottlenecks: &[crate::scenario::TreeBottleneck],
    flows: &[FlowSpec],
) -> Result<(GraphSpec, Vec<(u32, u32)>), ScenarioError> {
    let n_pair = pairs / 2;
    let n_agg = pairs / 4;
    let mut names: Vec<String> = Vec::new();
    for j in 0..n_pair {
        names.push(format!("up_pair{j}"));
        names.push(format!("down_pair{j}"));
    }
    for k in 0..n_agg {
        names.push(format!("up_agg{k}"));
        names.push(format!("down_agg{k}"));
    }
    for (i, bn) in bottlenecks.iter().enumerate() {
        if !names.contains(&bn.link) {
            return Err(ScenarioError {
                field: format!("topology.bottlenecks[{i}].link"),
                message: format!(
                    "unknown tree link {:?}; expected one of up_pair0..up_pair{}, up_agg0..up_agg{}, down_agg*, down_pair*",
                    bn.link,
                    n_pair - 1,
                    n_agg - 1
                ),
            });
        }
    }
    // A data link named `name` from `a` to `b`, shaped where a bottleneck names it.
    let data = |a: &str, b: &str, name: String| {
        let mut l = link(a, b, Some(nic_rate), None, (0, 0));
        l.ab = bottlenecks
            .iter()
            .find(|bn| bn.link == name)
            .map(|bn| bn.spec.clone());
        l.name_ab = Some(name);
        l
    };
    let mut g = GraphSpec {
        nodes: vec![node("root", NodeKindSpec::Router)],
        links: Vec::new(),
        routes: Vec::new(),
    };
    for k in 0..n_agg {
        let (sa, ra) = (format!("agg{k}.snd"), format!("agg{k}.rcv"));
        g.nodes.push(node(&sa, NodeKindSpec::Router));
        g.nodes.push(node(&ra, NodeKindSpec::Router));
        g.links.push(data(&sa, "root", format!("up_agg{k}")));
        g.links.push(data("root", &ra, format!("down_agg{k}")));
    }
    for j in 0..n_pair {
        let k = j / 2;
        let (sp, rp) = (format!("pair{j}.snd"), format!("pair{j}.rcv"));
        g.nodes.push(node(&sp, NodeKindSpec::Router));
        g.nodes.push(node(&rp, NodeKindSpec::Router));
        g.links
            .push(data(&sp, &format!("agg{k}.snd"), format!("up_pair{j}")));
        g.links
            .push(data(&format!("agg{k}.rcv"), &rp, format!("down_pair{j}")));
    }
    // Hosts of pair i, created on demand with the RTT of the first flow using them (and
    // which flow that was): the pair's access links carry it, so another flow on the pair
    // must not ask for a different one.
    let mut pair_rtt: Vec<Option<(f64, usize)>> = vec![None; pairs as usize];
    let mut pair_hosts: Vec<Option<(u32, u32)>> = vec![None; pairs as usize];
    let mut hosts = Vec::new();
    for (fi, f) in flows.iter().enumerate() {
        let i = f.pair.unwrap_or(fi as u32);
        if i >= pairs {
            return Err(ScenarioError {
                field: format!("flows[{fi}].pair"),
                message: format!(
                    "pair {i} does not exist: the tree has {pairs} pairs (0..{})",
                    pairs - 1
                ),
            });
        }
        let rtt_ms = f.base_rtt.unwrap_or(base_rtt_ms);
        match pair_rtt[i as usize] {
            Some((first, k)) if first != rtt_ms => {
                return Err(ScenarioError {
                    field: format!("flows[{fi}].base_rtt"),
                    message: format!(
                        "{rtt_ms} ms, but pair {i}'s hosts have {first} ms (flows[{k}], the first \
                         on the pair): flows on one pair share its access links; give them the \
                         same base_rtt or another pair"
                    ),
                });
            }
            Some(_) => {}
            None => pair_rtt[i as usize] = Some((rtt_ms, fi)),
        }
        let h = *pair_hosts[i as usize].get_or_insert_with(|| {
            let j = i / 2;
            let (s, r) = (format!("snd{i}"), format!("rcv{i}"));
            let id = g.nodes.len() as u32;
            g.nodes.push(node(&s, NodeKindSpec::Host));
            g.nodes.push(node(&r, NodeKindSpec::Host));
            let rtt = halves(millis(rtt_ms));
            let mut up = link(&s, &format!("pair{j}.snd"), Some(nic_rate), None, rtt);
            up.name_ab = Some(format!("snd{i}->pair{j}"));
            up.name_ba = Some(format!("pair{j}->snd{i}"));
            let mut down = link(
                &format!("pair{j}.rcv"),
                &r,
                Some(nic_rate),
                Some(0.0),
                (0, 0),
            );
            down.name_ab = Some(format!("pair{j}->rcv{i}"));
            down.name_ba = Some(format!("rcv{i}->pair{j}"));
            g.links.push(up);
            g.links.push(down);
            (id, id + 1)
        });
        hosts.push(h);
    }
    Ok((g, hosts))
}

fn tree(
    base_rtt_ms: f64,
    pairs: u32,
    nic_rate: f64,
    bottlenecks: &[crate::scenario::TreeBottleneck],
    flows: &[FlowSpec],
    seed: u64,
) -> Result<Built, ScenarioError> {
    let (g, hosts) = tree_graph(base_rtt_ms, pairs, nic_rate, bottlenecks, flows)?;
    // Random streams numbered as a graph's, so the tree written out as one runs the same.
    graph::attach(graph::network(&g, seed, 0), &g, flows, hosts)
}
