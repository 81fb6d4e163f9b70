//! A general topology (`topology.kind = "graph"`): named hosts and routers, links with a line
//! rate and a one-way propagation delay, each direction optionally shaped (an HTB class at a
//! rate with any qdisc tree as its child, as `tc` configures a router's egress), static
//! shortest-hop routes, and policy routes that pin the packets toward one host that have a
//! DSCP, come from a source host, or pass an ECN test (the IP-ECN field, TCP's ECE and CWR),
//! or several of these, to a path (Linux policy routing, `ip rule` by `dsfield`, `from` and an
//! ip6tables `-m ecn` fwmark; SRv6 path separation as the multi-AS study uses it).
//!
//! The egress from `a` toward `b` is named `"a->b"` unless the link names it (`name_ab`,
//! `name_ba`): that is the name in the results and in `Simulation.set_link`. The dumbbell and
//! the tree are generators of this form (`topology.rs`). Flows name their endpoints with `from` and `to`. A policy route by
//! DSCP pins the forward (data) direction; the reverse path (ACKs, DSCP 0) follows the shortest
//! route unless a route toward the sender selects the receiving host's packets.

use serde::{Deserialize, Serialize};

use super::topology::{shaped, Built};
use super::{probe, EgressCfg, NetBuilder, Network, NodeKind, Selector};
use crate::packet::{hdr, Ecn, Packet};
use crate::qdisc::QueueDisc;
use crate::scenario::{BottleneckSpec, FlowSpec, ScenarioError};
use crate::time::{millis, Rate, SimDuration};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphSpec {
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    /// Policy routes, tried in order: one next hop per router, selector and destination
    /// (routes that select the same packets toward the same host agree where they meet;
    /// validated).
    #[serde(default)]
    pub routes: Vec<PolicyRoute>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKindSpec {
    Host,
    #[default]
    Router,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub kind: NodeKindSpec,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    /// Line rate of both directions, Mbit/s; absent: no serialization delay (a switch fabric).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Line rate of `b -> a` where it differs, Mbit/s; 0: no serialization delay.
    #[serde(default)]
    pub rate_ba: Option<f64>,
    /// One-way propagation delay of each direction, ms.
    #[serde(default)]
    pub delay_ms: f64,
    /// Delay of `b -> a` where it differs, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ba_ms: Option<f64>,
    /// IP MTU of both directions, bytes (the interfaces' `mtu`; default 1500). TCP
    /// connections use the smallest on their path (`Network::path_mss`), UDP sources size
    /// their datagrams to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Names of the two egresses in the results and `Simulation.set_link` (default "a->b"
    /// and "b->a").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_ab: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_ba: Option<String>,
    /// The egress of `a` toward `b` shaped (HTB rate, burst) with a qdisc.
    #[serde(default)]
    pub ab: Option<BottleneckSpec>,
    /// The egress of `b` toward `a`, likewise.
    #[serde(default)]
    pub ba: Option<BottleneckSpec>,
}

impl LinkSpec {
    /// Line rates of `a -> b` and `b -> a` (None: no serialization delay).
    fn line_rates(&self) -> (Option<Rate>, Option<Rate>) {
        let ab = self.rate.map(Rate::mbps);
        let ba = match self.rate_ba {
            Some(r) if r > 0.0 => Some(Rate::mbps(r)),
            Some(_) => None,
            None => ab,
        };
        (ab, ba)
    }

    /// The egresses `a -> b` and `b -> a`; shaped ones draw random streams `*stream`,
    /// `*stream + 1`, ...
    pub(crate) fn egresses(&self, seed: u64, stream: &mut u64) -> (EgressCfg, EgressCfg) {
        let (line_ab, line_ba) = self.line_rates();
        let (name_ab, name_ba) = self.names();
        let delay_ab = millis(self.delay_ms);
        let delay_ba = self.delay_ba_ms.map_or(delay_ab, millis);
        let mut egress =
            |name: String, line: Option<Rate>, delay, spec: &Option<BottleneckSpec>| {
                let mut cfg = match spec {
                    None => EgressCfg::plain(name, line, delay),
                    Some(s) => {
                        let mut cfg = shaped(&name, s, line.expect("validated"), seed, *stream);
                        *stream += 1;
                        cfg.delay = delay;
                        cfg
                    }
                };
                cfg.mtu = self.mtu.unwrap_or(hdr::MTU);
                if let Some((_, _, q)) = cfg.shaped.as_mut().filter(|_| cfg.mtu != hdr::MTU) {
                    q.set_dev_mtu(cfg.mtu + hdr::ETH);
                }
                cfg
            };
        let ab = egress(name_ab, line_ab, delay_ab, &self.ab);
        let ba = egress(name_ba, line_ba, delay_ba, &self.ba);
        (ab, ba)
    }

    /// Names of the egresses `a -> b` and `b -> a`.
    pub fn names(&self) -> (String, String) {
        let ab = self.name_ab.clone();
        let ba = self.name_ba.clone();
        (
            ab.unwrap_or_else(|| format!("{}->{}", self.a, self.b)),
            ba.unwrap_or_else(|| format!("{}->{}", self.b, self.a)),
        )
    }
}

/// Packets toward the last node of `path` (a host) follow it: those with `dscp`, those from
/// host `from`, those passing any of the `ecn` tests, or those meeting several of these
/// (Linux policy routing: `ip rule ... dsfield` / `from` / `fwmark`, a table per path, the
/// fwmark set by ip6tables `-m ecn` rules); none: every packet toward that host (a static
/// route).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRoute {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<Vec<EcnTest>>,
    pub path: Vec<String>,
}

/// A test of ip6tables' `-m ecn` match (net/netfilter/xt_ecn.c): the IP-ECN field is this
/// codepoint (`--ecn-ip-ect 0..3`), or a TCP segment has ECE / CWR set (`-p tcp
/// --ecn-tcp-ece` / `--ecn-tcp-cwr`; a UDP datagram never does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnTest {
    NotEct,
    Ect1,
    Ect0,
    Ce,
    TcpEce,
    TcpCwr,
}

impl EcnTest {
    fn bit(self) -> u8 {
        use crate::packet::ecn_test as t;
        match self {
            EcnTest::NotEct => t::NOT_ECT,
            EcnTest::Ect1 => t::ECT1,
            EcnTest::Ect0 => t::ECT0,
            EcnTest::Ce => t::CE,
            EcnTest::TcpEce => t::TCP_ECE,
            EcnTest::TcpCwr => t::TCP_CWR,
        }
    }
    fn name(self) -> &'static str {
        match self {
            EcnTest::NotEct => "not_ect",
            EcnTest::Ect1 => "ect1",
            EcnTest::Ect0 => "ect0",
            EcnTest::Ce => "ce",
            EcnTest::TcpEce => "tcp_ece",
            EcnTest::TcpCwr => "tcp_cwr",
        }
    }
}

impl PolicyRoute {
    /// The `ecn` tests as the selector's bits (0: none).
    fn ecn_bits(&self) -> u8 {
        self.ecn.iter().flatten().fold(0, |m, t| m | t.bit())
    }
    /// The packets it takes, in words: `DSCP 10 from "h1"`, `ECN ect1|ce`, `every packet`.
    fn selects(&self) -> String {
        let mut parts = Vec::new();
        if let Some(d) = self.dscp {
            parts.push(format!("DSCP {d}"));
        }
        if let Some(f) = &self.from {
            parts.push(format!("from {f:?}"));
        }
        if let Some(ts) = &self.ecn {
            let names: Vec<&str> = ts.iter().map(|t| t.name()).collect();
            parts.push(format!("ECN {}", names.join("|")));
        }
        if parts.is_empty() {
            return "every packet".into();
        }
        if self.dscp.is_none() && self.ecn.is_none() {
            return format!("packets {}", parts[0]);
        }
        parts.join(" ")
    }
}

fn err(field: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        field: field.into(),
        message: message.into(),
    }
}

/// Checks a shaped egress (the field's path, its spec) against its line rate (Mbit/s).
pub type LineRateCheck<'a> =
    &'a dyn Fn(&str, &BottleneckSpec, Option<f64>) -> Result<(), ScenarioError>;

impl GraphSpec {
    fn node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Names, links and routes refer to what exists; `check_btl` checks a shaped egress against
    /// its line rate.
    pub fn validate(&self, check_btl: LineRateCheck) -> Result<(), ScenarioError> {
        let mut seen = std::collections::HashSet::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.name.is_empty() || n.name.contains("->") {
                return Err(err(
                    format!("topology.nodes[{i}].name"),
                    format!("a node needs a name without \"->\", got {:?}", n.name),
                ));
            }
            if !seen.insert(n.name.as_str()) {
                return Err(err(
                    format!("topology.nodes[{i}].name"),
                    format!("duplicate node {:?}", n.name),
                ));
            }
        }
        let mut egresses = std::collections::HashSet::new();
        for (i, l) in self.links.iter().enumerate() {
            let p = format!("topology.links[{i}]");
            for (end, name) in [("a", &l.a), ("b", &l.b)] {
                if self.node(name).is_none() {
                    return Err(err(format!("{p}.{end}"), format!("unknown node {name:?}")));
                }
            }
            if l.a == l.b {
                return Err(err(format!("{p}.b"), "a link joins two different nodes"));
            }
            if let Some(r) = l.rate {
                if !Rate::usable_mbps(r) {
                    return Err(err(
                        format!("{p}.rate"),
                        format!("must be 1e-6 <= rate <= 1e6 Mbit/s, got {r:?}"),
                    ));
                }
            }
            if let Some(r) = l.rate_ba {
                if r != 0.0 && !Rate::usable_mbps(r) {
                    return Err(err(
                        format!("{p}.rate_ba"),
                        format!(
                            "must be 0 (no serialization) or 1e-6 <= rate <= 1e6 Mbit/s, got {r:?}"
                        ),
                    ));
                }
            }
            if l.rate.is_none() && (l.ab.is_some() || l.ba.is_some()) {
                return Err(err(
                    format!("{p}.rate"),
                    "a shaped link needs its line rate",
                ));
            }
            if l.rate_ba == Some(0.0) && l.ba.is_some() {
                return Err(err(
                    format!("{p}.rate_ba"),
                    "a shaped direction (ba) needs its line rate, got 0 (no serialization)",
                ));
            }
            for (f, d) in [
                ("delay_ms", Some(l.delay_ms)),
                ("delay_ba_ms", l.delay_ba_ms),
            ] {
                if let Some(d) = d.filter(|d| !(d.is_finite() && (0.0..=10_000.0).contains(d))) {
                    return Err(err(
                        format!("{p}.{f}"),
                        format!("must be 0..10000 ms, got {d}"),
                    ));
                }
            }
            if let Some(m) = l.mtu.filter(|m| !(576..=hdr::MAX_MTU).contains(m)) {
                return Err(err(
                    format!("{p}.mtu"),
                    format!("must be 576..={} bytes, got {m}", hdr::MAX_MTU),
                ));
            }
            let (ab, ba) = l.names();
            for (f, name, given) in [("name_ab", ab, &l.name_ab), ("name_ba", ba, &l.name_ba)] {
                if name.is_empty() || !egresses.insert(name.clone()) {
                    let m = if given.is_none() {
                        // the default name: this is a second link between the same nodes
                        format!(
                            "a second link between {} and {}: give its egresses names of their own \
                             (name_ab, name_ba; the default {name:?} is taken)",
                            l.a, l.b
                        )
                    } else {
                        format!("an egress needs a name of its own, got {name:?}")
                    };
                    return Err(err(format!("{p}.{f}"), m));
                }
            }
            let line_ba = l.rate_ba.or(l.rate);
            for (dir, b, line) in [("ab", &l.ab, l.rate), ("ba", &l.ba, line_ba)] {
                if let Some(b) = b {
                    check_btl(&format!("{p}.{dir}"), b, line)?;
                }
            }
        }
        // A router keeps one next hop per selector and destination: a path through a node
        // twice cannot be followed, and a later route that sends the same packets elsewhere
        // would never be (the first one wins).
        type Key<'a> = (Option<u8>, Option<&'a str>, u8, &'a str, &'a str);
        let mut hops: std::collections::HashMap<Key, (&str, usize)> =
            std::collections::HashMap::new();
        for (i, r) in self.routes.iter().enumerate() {
            let p = format!("topology.routes[{i}]");
            if let Some(d) = r.dscp.filter(|&d| d > 63) {
                return Err(err(
                    format!("{p}.dscp"),
                    format!("a DSCP is 0..63, got {d}"),
                ));
            }
            if r.ecn.as_ref().is_some_and(|ts| ts.is_empty()) {
                return Err(err(
                    format!("{p}.ecn"),
                    "lists at least one test (not_ect, ect0, ect1, ce, tcp_ece, tcp_cwr)",
                ));
            }
            if let Some(f) = &r.from {
                if self.node(f).map(|n| self.nodes[n].kind) != Some(NodeKindSpec::Host) {
                    return Err(err(
                        format!("{p}.from"),
                        format!("{f:?} is not a host of the topology"),
                    ));
                }
            }
            if r.path.len() < 2 {
                return Err(err(format!("{p}.path"), "a path names at least two nodes"));
            }
            for w in r.path.windows(2) {
                let linked = self
                    .links
                    .iter()
                    .any(|l| (l.a == w[0] && l.b == w[1]) || (l.a == w[1] && l.b == w[0]));
                if !linked {
                    return Err(err(
                        format!("{p}.path"),
                        format!("no link {} -> {}", w[0], w[1]),
                    ));
                }
            }
            let last = r.path.last().unwrap();
            if self.node(last).map(|n| self.nodes[n].kind) != Some(NodeKindSpec::Host) {
                return Err(err(
                    format!("{p}.path"),
                    format!("a path ends at a host, not {last:?}"),
                ));
            }
            let twice = (1..r.path.len()).find(|&k| r.path[..k].contains(&r.path[k]));
            if let Some(n) = twice.map(|k| &r.path[k]) {
                return Err(err(
                    format!("{p}.path"),
                    format!(
                        "the path goes through {n:?} twice (a router has one next hop per route)"
                    ),
                ));
            }
            for w in r.path.windows(2) {
                let key = (
                    r.dscp,
                    r.from.as_deref(),
                    r.ecn_bits(),
                    last.as_str(),
                    w[0].as_str(),
                );
                let (prev, j) = *hops.entry(key).or_insert((w[1].as_str(), i));
                if prev != w[1] {
                    return Err(err(
                        format!("{p}.path"),
                        format!(
                            "sends {} toward {last:?} from {:?} to {:?}, but routes[{j}] sends \
                             them to {prev:?} (one next hop per router)",
                            r.selects(),
                            w[0],
                            w[1]
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A flow's endpoints on a graph (validated: both named hosts).
pub fn endpoints(g: &GraphSpec, f: &FlowSpec, p: &str) -> Result<(u32, u32), ScenarioError> {
    let host = |field: &str, name: &Option<String>| -> Result<u32, ScenarioError> {
        let name = name
            .as_ref()
            .ok_or_else(|| err(format!("{p}.{field}"), "a flow on a graph names its host"))?;
        match g.node(name) {
            Some(i) if g.nodes[i].kind == NodeKindSpec::Host => Ok(i as u32),
            Some(_) => Err(err(
                format!("{p}.{field}"),
                format!("{name:?} is a router, not a host"),
            )),
            None => Err(err(
                format!("{p}.{field}"),
                format!("unknown node {name:?}"),
            )),
        }
    };
    let (s, r) = (host("from", &f.from)?, host("to", &f.to)?);
    if s == r {
        return Err(err(format!("{p}.to"), "a flow needs two different hosts"));
    }
    Ok((s, r))
}

/// Build the network (node ids are the spec's indices) and attach the flows.
pub fn build(g: &GraphSpec, flows: &[FlowSpec], seed: u64) -> Result<Built, ScenarioError> {
    // Random streams of the shaped egresses in link order, from 0 as the dumbbell numbers
    // its one bottleneck.
    let net = network(g, seed, 0);
    let mut hosts = Vec::new();
    for (i, f) in flows.iter().enumerate() {
        hosts.push(endpoints(g, f, &format!("flows[{i}]"))?);
    }
    attach(net, g, flows, hosts)
}

/// The network of a (validated) graph: nodes in order, then each link's two egresses, the
/// shaped ones' qdiscs drawing random streams `first_stream`, `first_stream + 1`, ... in link
/// order; static and policy routes.
pub fn network(g: &GraphSpec, seed: u64, first_stream: u64) -> Network {
    let mut b = NetBuilder::default();
    for n in &g.nodes {
        let kind = match n.kind {
            NodeKindSpec::Host => NodeKind::Host,
            NodeKindSpec::Router => NodeKind::Router,
        };
        b.node(n.name.clone(), kind);
    }
    let mut idx = first_stream;
    for l in &g.links {
        let (a, z) = (g.node(&l.a).unwrap() as u32, g.node(&l.b).unwrap() as u32);
        let (ab, ba) = l.egresses(seed, &mut idx);
        b.link(a, z, ab, ba);
    }
    let mut net = b.build();
    for r in &g.routes {
        let dst = g.node(r.path.last().unwrap()).unwrap() as u32;
        let src = r.from.as_ref().map(|f| g.node(f).unwrap() as u32);
        let sel = Selector {
            dscp: r.dscp,
            src,
            ecn: r.ecn_bits(),
        };
        for w in r.path.windows(2) {
            let (from, to) = (g.node(&w[0]).unwrap() as u32, g.node(&w[1]).unwrap() as u32);
            net.add_policy(from, sel, dst, to);
        }
    }
    net
}

/// `flows` between their (sender, receiver) node ids of `net`: their base RTT is the
/// propagation delay of the routes there (with the flow's DSCP, Not-ECT: where routes test
/// the ECN field, the results take the route of the codepoint the data carried, see
/// [`base_rtt`]) and back.
pub fn attach(
    net: Network,
    g: &GraphSpec,
    flows: &[FlowSpec],
    hosts: Vec<(u32, u32)>,
) -> Result<Built, ScenarioError> {
    let mut rtts = Vec::new();
    for (i, (&(s, r), f)) in hosts.iter().zip(flows).enumerate() {
        let p = format!("flows[{i}]");
        let name = |n: u32| &g.nodes[n as usize].name;
        let fwd = path_delay(&net, &probe(s, r, f.dscp)).ok_or_else(|| {
            err(
                format!("{p}.to"),
                format!("no route from {} to {}", name(s), name(r)),
            )
        })?;
        let rev = path_delay(&net, &probe(r, s, 0)).ok_or_else(|| {
            err(
                format!("{p}.from"),
                format!("no route back from {} to {}", name(r), name(s)),
            )
        })?;
        rtts.push(fwd + rev);
        datagram_fits(&net, f, s, r, &p)?;
    }
    Ok(Built {
        net,
        hosts,
        base_rtt: rtts,
    })
}

/// A UDP source's datagrams fit the MTU of their path (IP fragmentation is not modelled).
pub fn datagram_fits(
    net: &Network,
    f: &FlowSpec,
    s: u32,
    r: u32,
    p: &str,
) -> Result<(), ScenarioError> {
    let Some(size) = f.source.max_datagram() else {
        return Ok(());
    };
    let max = net.path_mtu(s, r, f.dscp) - hdr::IP - crate::traffic::udp::UDP_HDR;
    if size > max {
        let p = if p.is_empty() {
            String::new()
        } else {
            format!("{p}.")
        };
        return Err(err(
            format!("{p}source.packet_size"),
            format!("{size} bytes do not fit the path's MTU (at most {max} bytes of UDP payload)"),
        ));
    }
    Ok(())
}

/// Propagation delay along the routes `pkt` takes from its source host to its destination;
/// None if there is no route (or it loops).
pub fn path_delay(net: &Network, pkt: &Packet) -> Option<SimDuration> {
    let pipes = net.route(pkt)?;
    Some(pipes.iter().map(|&p| net.pipes[p as usize].delay()).sum())
}

/// The base RTT of a flow from `s` to `r` whose data packets carry `dscp` and `ecn`: the
/// propagation delay of their route and of the route back of a pure ACK (DSCP 0, Not-ECT,
/// neither ECE nor CWR); None without a route either way.
pub fn base_rtt(net: &Network, s: u32, r: u32, dscp: u8, ecn: Ecn) -> Option<SimDuration> {
    let mut data = probe(s, r, dscp);
    data.ecn = ecn;
    Some(path_delay(net, &data)? + path_delay(net, &probe(r, s, 0))?)
}
