//! Topology builders for the study's networks.

use super::shaper::default_burst;
use super::{EgressCfg, NetBuilder, Network, NodeKind};
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
        } => Ok(dumbbell(*base_rtt, bottleneck, *nic_rate, flows, seed)),
        TopologySpec::Tree {
            base_rtt,
            pairs,
            nic_rate,
            bottlenecks,
        } => tree(*base_rtt, *pairs, *nic_rate, bottlenecks, flows, seed),
        TopologySpec::Graph(g) => super::graph::build(g, flows, seed),
    }
}

/// The testbed: each flow's sender host -> delay node (netem: half the base RTT each way,
/// modelled as the propagation delay of the sender's link) -> router, whose egress toward the
/// receivers is the HTB class + qdisc under test -> receivers. The ACK path is unshaped.
pub fn dumbbell(
    base_rtt_ms: f64,
    btl: &BottleneckSpec,
    nic_rate: f64,
    flows: &[FlowSpec],
    seed: u64,
) -> Built {
    let nic = Rate::mbps(nic_rate);
    let mut b = NetBuilder::default();
    let router = b.node("router", NodeKind::Router);
    let rx_switch = b.node("rx_switch", NodeKind::Router);
    b.link(
        router,
        rx_switch,
        shaped("bottleneck", btl, nic, seed, 0),
        EgressCfg::plain("rx_switch->router", None, 0),
    );
    let mut net = b.build();
    let mut hosts = Vec::new();
    let mut rtts = Vec::new();
    for f in flows {
        let (s, r, rtt) = attach_dumbbell_host_pair(&mut net, f, base_rtt_ms, nic);
        hosts.push((s, r));
        rtts.push(rtt);
    }
    net.compute_routes();
    Built {
        net,
        hosts,
        base_rtt: rtts,
    }
}

/// Add a flow's sender and receiver hosts to a dumbbell (nodes 0 and 1 are the router and
/// the receivers' switch): the sender's access link carries the flow's base RTT, half each
/// way. Routes must be recomputed afterwards.
pub fn attach_dumbbell_host_pair(
    net: &mut Network,
    f: &FlowSpec,
    base_rtt_ms: f64,
    nic: Rate,
) -> (u32, u32, SimDuration) {
    let (router, rx_switch) = (0, 1);
    let rtt = millis(f.base_rtt.unwrap_or(base_rtt_ms));
    let (fwd, rev) = halves(rtt);
    let s = net.add_node(format!("{}.snd", f.name), NodeKind::Host);
    let r = net.add_node(format!("{}.rcv", f.name), NodeKind::Host);
    net.add_link(
        s,
        router,
        EgressCfg::plain(format!("{}.snd->router", f.name), Some(nic), fwd),
        EgressCfg::plain(format!("router->{}.snd", f.name), Some(nic), rev),
    );
    net.add_link(
        rx_switch,
        r,
        EgressCfg::plain(format!("rx_switch->{}.rcv", f.name), None, 0),
        EgressCfg::plain(format!("{}.rcv->rx_switch", f.name), None, 0),
    );
    (s, r, rtt)
}

/// Set the base RTT of the flow whose sender host is `snd` (its access link's delays,
/// half each way) for packets sent from now on; packets already on the link keep theirs
/// and none is reordered (the link stays first in, first out).
pub fn set_host_rtt(net: &mut Network, snd: u32, rtt: SimDuration) {
    let (fwd, rev) = halves(rtt);
    let name = net.nodes[snd as usize].name.clone();
    for p in &mut net.pipes {
        if p.name == format!("{name}->router") {
            p.delay = fwd;
        } else if p.name == format!("router->{name}") {
            p.delay = rev;
        }
    }
}

/// The multi-bottleneck tree: senders in pairs behind `pair{j}` routers, pairs in groups of
/// four behind `agg{k}` routers, a root, and the mirror image toward the receivers. Data
/// egresses are named `up_pair{j}` (pair router -> agg), `up_agg{k}` (agg -> root),
/// `down_agg{k}` (root -> receiver-side agg) and `down_pair{j}` (receiver-side agg -> pair
/// router); a bottleneck may be placed on any of them. The base RTT sits on the senders'
/// access links, half each way.
pub fn tree(
    base_rtt_ms: f64,
    pairs: u32,
    nic_rate: f64,
    bottlenecks: &[crate::scenario::TreeBottleneck],
    flows: &[FlowSpec],
    seed: u64,
) -> Result<Built, ScenarioError> {
    let nic = Rate::mbps(nic_rate);
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
    let mut idx = 0u64;
    let mut egress = |name: String| -> EgressCfg {
        match bottlenecks.iter().find(|bn| bn.link == name) {
            Some(bn) => {
                idx += 1;
                shaped(&name, &bn.spec, nic, seed, idx)
            }
            None => EgressCfg::plain(name, Some(nic), 0),
        }
    };
    let mut b = NetBuilder::default();
    let root = b.node("root", NodeKind::Router);
    let mut s_agg = Vec::new();
    let mut r_agg = Vec::new();
    for k in 0..n_agg {
        let sa = b.node(format!("agg{k}.snd"), NodeKind::Router);
        let ra = b.node(format!("agg{k}.rcv"), NodeKind::Router);
        b.link(
            sa,
            root,
            egress(format!("up_agg{k}")),
            EgressCfg::plain(format!("root->agg{k}.snd"), Some(nic), 0),
        );
        b.link(
            root,
            ra,
            egress(format!("down_agg{k}")),
            EgressCfg::plain(format!("agg{k}.rcv->root"), Some(nic), 0),
        );
        s_agg.push(sa);
        r_agg.push(ra);
    }
    let mut s_pair = Vec::new();
    let mut r_pair = Vec::new();
    for j in 0..n_pair {
        let sp = b.node(format!("pair{j}.snd"), NodeKind::Router);
        let rp = b.node(format!("pair{j}.rcv"), NodeKind::Router);
        let k = (j / 2) as usize;
        b.link(
            sp,
            s_agg[k],
            egress(format!("up_pair{j}")),
            EgressCfg::plain(format!("agg{k}.snd->pair{j}.snd"), Some(nic), 0),
        );
        b.link(
            r_agg[k],
            rp,
            egress(format!("down_pair{j}")),
            EgressCfg::plain(format!("pair{j}.rcv->agg{k}.rcv"), Some(nic), 0),
        );
        s_pair.push(sp);
        r_pair.push(rp);
    }
    // Hosts of pair i, created on demand with the RTT of the first flow using them.
    let mut pair_hosts: Vec<Option<(u32, u32, SimDuration)>> = vec![None; pairs as usize];
    let mut hosts = Vec::new();
    let mut rtts = Vec::new();
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
        let (s, r, rtt) = match pair_hosts[i as usize] {
            Some(h) => h,
            None => {
                let rtt = millis(f.base_rtt.unwrap_or(base_rtt_ms));
                let (fwd, rev) = halves(rtt);
                let s = b.node(format!("snd{i}"), NodeKind::Host);
                let r = b.node(format!("rcv{i}"), NodeKind::Host);
                let j = (i / 2) as usize;
                b.link(
                    s,
                    s_pair[j],
                    EgressCfg::plain(format!("snd{i}->pair{j}"), Some(nic), fwd),
                    EgressCfg::plain(format!("pair{j}->snd{i}"), Some(nic), rev),
                );
                b.link(
                    r_pair[j],
                    r,
                    EgressCfg::plain(format!("pair{j}->rcv{i}"), Some(nic), 0),
                    EgressCfg::plain(format!("rcv{i}->pair{j}"), None, 0),
                );
                pair_hosts[i as usize] = Some((s, r, rtt));
                (s, r, rtt)
            }
        };
        hosts.push((s, r));
        rtts.push(rtt);
    }
    Ok(Built {
        net: b.build(),
        hosts,
        base_rtt: rtts,
    })
}
