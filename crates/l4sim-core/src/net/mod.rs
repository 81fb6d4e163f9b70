//! The network: hosts and routers joined by links with static routes.
//!
//! Each direction of a link is an egress: either a plain [`pipe::Pipe`] (line rate +
//! propagation delay, unlimited queue, as an unshaped NIC) or a shaped [`Port`]: an HTB class
//! ([`shaper::Shaper`]) with the qdisc under test as its child, feeding the line pipe.

pub mod graph;
pub mod pipe;
pub mod shaper;
pub mod topology;

use std::collections::VecDeque;

use crate::packet::{flags, hdr, Dir, Ecn, Packet};
use crate::qdisc::Qdisc;
use crate::time::{SimTime, NEVER};
use pipe::Pipe;
use shaper::Shaper;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Router,
}

/// Where a node sends a packet next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Egress {
    Pipe(u32),
    Port(u32),
}

pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    /// Egress toward each destination node, indexed by node id (None: unreachable/self);
    /// empty for a single-homed host, which sends everything over `default`.
    pub routes: Vec<Option<Egress>>,
    /// A host with links to one neighbour only: its default route, the first of them (so a
    /// host costs no routing table, and hosts added to a running simulation no re-routing).
    pub default: Option<Egress>,
    /// Policy routes, tried before `routes`: (selector, egress) pairs indexed by destination
    /// node id, the first one added whose selector matches winning (empty where the node has
    /// none).
    pub policy: Vec<Vec<(Selector, Egress)>>,
}

/// The packets a policy route takes, as an `ip rule`'s `dsfield` and `from` select them, and
/// an `fwmark` set by ip6tables' `-m ecn` rules: those with this DSCP, from this source host
/// (None: any), and passing any of the `ecn` tests (bits of
/// [`crate::packet::ecn_test`]; 0: no test).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    pub dscp: Option<u8>,
    pub src: Option<u32>,
    pub ecn: u8,
}

impl Selector {
    #[inline]
    fn matches(&self, pkt: &Packet) -> bool {
        self.dscp.is_none_or(|d| d == pkt.dscp)
            && self.src.is_none_or(|s| s == pkt.src)
            && (self.ecn == 0 || self.ecn & pkt.ecn_tests() != 0)
    }
    /// Every packet (a static route).
    #[inline]
    fn is_any(&self) -> bool {
        self.dscp.is_none() && self.src.is_none() && self.ecn == 0
    }
}

/// The first of `rules` that selects `pkt`. Out of line, so that the forwarding loop does
/// not compute a packet's ECN tests (LLVM hoisted them out of the loop, into every
/// forwarding: 1.2 % more instructions for the CUBIC dumbbell, which has no policy route).
#[inline(never)]
fn policy_hop(rules: &[(Selector, Egress)], pkt: &Packet) -> Option<Egress> {
    rules.iter().find(|r| r.0.matches(pkt)).map(|r| r.1)
}

/// A packet from host `src` to `dst` with `dscp`, Not-ECT and without TCP flags, to find
/// its route.
pub fn probe(src: u32, dst: u32, dscp: u8) -> Packet {
    let mut p = Packet::new(0, Dir::Fwd, src, dst);
    p.dscp = dscp;
    p
}

/// A shaped egress: HTB class + child qdisc, transmitting into `line`.
pub struct Port {
    pub name: String,
    pub qdisc: Qdisc,
    pub shaper: Shaper,
    /// The pipe carrying dequeued packets to the next node.
    pub line: u32,
    /// Time of the pending wake event, NEVER when idle.
    pub wake_at: SimTime,
    /// The pending wake waits for the qdisc (a tbf's tokens), not for the HTB class.
    pub qdisc_wait: bool,
    /// Packets and bytes dequeued (sent on the link).
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Data packets inside the qdisc (for packet conservation).
    pub data_inside: u64,
    /// Whether this port counts as a bottleneck in the run's summary.
    pub bottleneck: bool,
}

/// All nodes, pipes and shaped ports of a run.
#[derive(Default)]
pub struct Network {
    pub nodes: Vec<Node>,
    pub pipes: Vec<Pipe>,
    pub ports: Vec<Port>,
    /// Every egress as (from, to, egress), for computing routes.
    adj: Vec<(u32, u32, Egress)>,
}

/// One direction of a link as the builder describes it.
pub struct EgressCfg {
    pub name: String,
    pub rate: Option<crate::time::Rate>,
    pub delay: crate::time::SimDuration,
    /// IP MTU of the link, bytes.
    pub mtu: u32,
    /// Shaper rate, burst and qdisc for a shaped egress.
    pub shaped: Option<(crate::time::Rate, u32, Qdisc)>,
}

impl EgressCfg {
    pub fn plain(name: impl Into<String>, rate: Option<crate::time::Rate>, delay: u64) -> Self {
        EgressCfg {
            name: name.into(),
            rate,
            delay,
            mtu: hdr::MTU,
            shaped: None,
        }
    }
}

/// Builds a [`Network`]: nodes, then links, then static routes.
#[derive(Default)]
pub struct NetBuilder {
    net: Network,
}

impl NetBuilder {
    pub fn node(&mut self, name: impl Into<String>, kind: NodeKind) -> u32 {
        self.net.add_node(name, kind)
    }

    /// A bidirectional link: `ab` is the egress of `a` toward `b`, `ba` the reverse.
    pub fn link(&mut self, a: u32, b: u32, ab: EgressCfg, ba: EgressCfg) {
        self.net.add_link(a, b, ab, ba);
    }

    /// Compute the routes and finish.
    pub fn build(mut self) -> Network {
        self.net.compute_routes();
        self.net
    }
}

impl Network {
    /// A node; routes are stale until [`Network::compute_routes`].
    pub fn add_node(&mut self, name: impl Into<String>, kind: NodeKind) -> u32 {
        self.nodes.push(Node {
            name: name.into(),
            kind,
            routes: Vec::new(),
            default: None,
            policy: Vec::new(),
        });
        (self.nodes.len() - 1) as u32
    }

    fn egress(&mut self, from: u32, to: u32, cfg: EgressCfg) {
        let pipe = self.pipes.len() as u32;
        let mut line = Pipe::new(cfg.name.clone(), cfg.rate, cfg.delay, to);
        line.mtu = cfg.mtu;
        line.router = self.nodes[from as usize].kind == NodeKind::Router;
        self.pipes.push(line);
        let e = match cfg.shaped {
            None => Egress::Pipe(pipe),
            Some((rate, burst, qdisc)) => {
                self.ports.push(Port {
                    name: cfg.name,
                    qdisc,
                    shaper: Shaper::new(rate, burst),
                    line: pipe,
                    wake_at: NEVER,
                    qdisc_wait: false,
                    tx_pkts: 0,
                    tx_bytes: 0,
                    data_inside: 0,
                    bottleneck: true,
                });
                Egress::Port((self.ports.len() - 1) as u32)
            }
        };
        self.adj.push((from, to, e));
    }

    /// A bidirectional link: `ab` is the egress of `a` toward `b`, `ba` the reverse.
    pub fn add_link(&mut self, a: u32, b: u32, ab: EgressCfg, ba: EgressCfg) {
        self.egress(a, b, ab);
        self.egress(b, a, ba);
    }

    /// Shortest-hop static routes (BFS from every destination over reversed edges). Ties go
    /// to the node found first (the lower-numbered among those with a link into the node
    /// visited), and between parallel links to the one added first.
    pub fn compute_routes(&mut self) {
        let out = self.out_links();
        self.route_from(0, &out);
    }

    /// [`Network::compute_routes`] after nodes `first..` were added as single-homed hosts
    /// (a dumbbell's flow added while it runs): no earlier route changes (a host leads the
    /// search nowhere), so only the routes toward the new hosts are searched. Anything else
    /// added re-routes everything.
    pub fn route_new_hosts(&mut self, first: u32) {
        let out = self.out_links();
        let first = first as usize;
        let hosts = (first..self.nodes.len()).all(|u| self.single_homed(u, &out[u]).is_some());
        self.route_from(if hosts { first } else { 0 }, &out);
    }

    /// For each node, the nodes it links to and the egresses, in the order added.
    fn out_links(&self) -> Vec<Vec<(u32, Egress)>> {
        let mut out: Vec<Vec<(u32, Egress)>> = vec![Vec::new(); self.nodes.len()];
        for &(from, to, e) in &self.adj {
            out[from as usize].push((to, e));
        }
        out
    }

    /// A host's first egress if all its links (`out`, its out-links) lead to one neighbour.
    fn single_homed(&self, u: usize, out: &[(u32, Egress)]) -> Option<Egress> {
        let &(to, e) = out.first()?;
        let host = self.nodes[u].kind == NodeKind::Host;
        (host && out.iter().all(|&(t, _)| t == to)).then_some(e)
    }

    /// Set up nodes `first..` (their default route or an empty table), size every table to
    /// the nodes, and search the routes toward destinations `first..`, each by a BFS over
    /// in-links (linear in the links, where scanning every node at each step was n^2).
    fn route_from(&mut self, first: usize, out: &[Vec<(u32, Egress)>]) {
        let n = self.nodes.len();
        // into[v]: each node u with a link u -> v (ascending u) and its first such egress.
        let mut into: Vec<Vec<(u32, Egress)>> = vec![Vec::new(); n];
        for (u, edges) in out.iter().enumerate() {
            for &(v, e) in edges {
                let from_u = &mut into[v as usize];
                if from_u.last().is_none_or(|&(w, _)| w as usize != u) {
                    from_u.push((u as u32, e));
                }
            }
        }
        for u in 0..n {
            if u >= first {
                let default = self.single_homed(u, &out[u]);
                self.nodes[u].default = default;
                self.nodes[u].routes.clear();
            }
            let node = &mut self.nodes[u];
            if node.default.is_none() {
                node.routes.resize(n, None);
            }
        }
        let mut seen = vec![false; n];
        let mut q = VecDeque::new();
        for d in first..n {
            seen.fill(false);
            seen[d] = true;
            q.push_back(d);
            while let Some(v) = q.pop_front() {
                // Every node u with an edge u -> v is one hop further from d.
                for &(u, e) in &into[v] {
                    let u = u as usize;
                    if !seen[u] {
                        seen[u] = true;
                        if let Some(r) = self.nodes[u].routes.get_mut(d) {
                            *r = Some(e);
                        }
                        q.push_back(u);
                    }
                }
            }
        }
    }

    /// Route the packets `sel` selects toward `dst` from `from` over its link to `to` (which
    /// must exist).
    pub fn add_policy(&mut self, from: u32, sel: Selector, dst: u32, to: u32) {
        let e = self
            .adj
            .iter()
            .find(|(f, t, _)| *f == from && *t == to)
            .map(|&(_, _, e)| e)
            .expect("policy route over a link that exists");
        let n_nodes = self.nodes.len();
        let policy = &mut self.nodes[from as usize].policy;
        policy.resize_with(n_nodes, Vec::new);
        policy[dst as usize].push((sel, e));
    }

    /// The node whose egress shaped port `q` is.
    pub fn port_node(&self, q: u32) -> u32 {
        self.adj
            .iter()
            .find(|&&(_, _, e)| e == Egress::Port(q))
            .map(|&(from, _, _)| from)
            .expect("every port is some node's egress")
    }

    /// Where `node` sends `pkt` (toward its `dst`).
    #[inline]
    pub fn next_hop(&self, node: u32, pkt: &Packet) -> Option<Egress> {
        let n = &self.nodes[node as usize];
        let dst = pkt.dst;
        if let Some(rules) = n.policy.get(dst as usize).filter(|r| !r.is_empty()) {
            // A static route first needs nothing of the packet.
            if rules[0].0.is_any() {
                return Some(rules[0].1);
            }
            if let Some(e) = policy_hop(rules, pkt) {
                return Some(e);
            }
        }
        match n.routes.get(dst as usize) {
            Some(&r) => r,
            None => n.default,
        }
    }

    /// Whether some policy route tests the ECN field or the TCP flags.
    pub fn routes_by_ecn(&self) -> bool {
        let mut rules = self.nodes.iter().flat_map(|n| n.policy.iter().flatten());
        rules.any(|(sel, _)| sel.ecn != 0)
    }

    /// The pipes (lines) `pkt` crosses from its host `src` to `dst`, in order; None if there is
    /// no route (or it loops).
    pub fn route(&self, pkt: &Packet) -> Option<Vec<u32>> {
        let (src, dst) = (pkt.src, pkt.dst);
        let mut at = src;
        let mut pipes = Vec::new();
        for _ in 0..=self.nodes.len() {
            if at == dst {
                return Some(pipes);
            }
            let pipe = match self.next_hop(at, pkt)? {
                Egress::Pipe(p) => p,
                Egress::Port(q) => self.ports[q as usize].line,
            };
            pipes.push(pipe);
            at = self.pipes[pipe as usize].to;
        }
        None
    }

    /// The MSS a TCP connection from `src` to `dst` settles on (`tcp_sync_mss` after path
    /// MTU discovery): the smallest IP MTU on its forward route and of the receiver's own
    /// egress back (the MSS option it advertises, `dst_metric_advmss`), less the IP and TCP
    /// headers with timestamps. The discovery itself (a first oversize segment dropped with
    /// ICMP "fragmentation needed") is not modelled: connections start with the result.
    pub fn path_mss(&self, src: u32, dst: u32, dscp: u8) -> u32 {
        let back = self.route(&probe(dst, src, 0)).unwrap_or_default();
        let advertised = back
            .first()
            .map_or(hdr::MTU, |&p| self.pipes[p as usize].mtu);
        self.path_mtu(src, dst, dscp).min(advertised) - hdr::IP - hdr::TCP_TS
    }

    /// The smallest IP MTU on the route from `src` to `dst` of packets with `dscp` (1500
    /// without a route); where policy routes test the ECN field or the TCP flags, the smallest
    /// over the routes of every ECN codepoint with and without ECE or CWR.
    pub fn path_mtu(&self, src: u32, dst: u32, dscp: u8) -> u32 {
        let mut probes = vec![probe(src, dst, dscp)];
        if self.routes_by_ecn() {
            for ecn in Ecn::ALL {
                for f in [0, flags::ECE, flags::CWR] {
                    let mut p = probe(src, dst, dscp);
                    (p.ecn, p.flags) = (ecn, f);
                    probes.push(p);
                }
            }
        }
        let routes = probes.iter().map(|p| self.route(p).unwrap_or_default());
        let pipes: Vec<u32> = routes.flatten().collect();
        pipes
            .iter()
            .map(|&p| self.pipes[p as usize].mtu)
            .min()
            .unwrap_or(hdr::MTU)
    }

    /// The shaped port named `name`.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random network of `n` nodes, every third a host, with parallel and one-way links.
    fn random_net(rng: &mut crate::rng::Rng, n: u32) -> NetBuilder {
        let mut b = NetBuilder::default();
        for i in 0..n {
            let kind = if i % 3 == 2 {
                NodeKind::Host
            } else {
                NodeKind::Router
            };
            b.node(format!("n{i}"), kind);
        }
        for _ in 0..rng.below(3 * n) {
            let (a, c) = (rng.below(n) as u32, rng.below(n) as u32);
            if a != c {
                let cfg = || EgressCfg::plain("l", None, 1);
                if rng.below(3) == 0 {
                    b.net.egress(a, c, cfg()); // one way
                } else {
                    b.link(a, c, cfg(), cfg());
                }
            }
        }
        b
    }

    /// The routes as a plain breadth-first search from each destination finds them, scanning
    /// every node for links into the node it visits (ascending, each node's first-added link),
    /// on random graphs: the in-link lists give the same. A single-homed host sends everything
    /// to its one neighbour (also what nothing reaches: the neighbour has no route then).
    #[test]
    fn routes_are_a_breadth_first_search_from_each_destination() {
        let mut rng = crate::rng::Rng::new(5, 6);
        let mut defaults = 0;
        for _ in 0..60 {
            let n = 2 + rng.below(14) as usize;
            let net = random_net(&mut rng, n as u32).build();
            for d in 0..n {
                let mut want = vec![None; n];
                let mut seen = vec![false; n];
                seen[d] = true;
                let mut q = VecDeque::from([d]);
                while let Some(v) = q.pop_front() {
                    for u in 0..n {
                        let first =
                            (net.adj.iter()).find(|&&(f, t, _)| f as usize == u && t as usize == v);
                        if let (false, Some(&(_, _, e))) = (seen[u], first) {
                            seen[u] = true;
                            want[u] = Some(e);
                            q.push_back(u);
                        }
                    }
                }
                for (u, want) in want.into_iter().enumerate() {
                    let got = net.next_hop(u as u32, &probe(u as u32, d as u32, 0));
                    let host = net.nodes[u].default;
                    defaults += host.is_some() as u32;
                    match (want, host) {
                        (None, Some(e)) if u != d => {
                            assert_eq!(got, Some(e), "default route of host {u}")
                        }
                        _ => assert!(
                            u == d || got == want,
                            "route from {u} to {d}: {got:?}, not {want:?}"
                        ),
                    }
                }
            }
        }
        assert!(defaults > 100, "single-homed hosts tested: {defaults}");
    }

    /// Hosts added one pair at a time to a running dumbbell (`route_new_hosts`) route as a
    /// network built with all of them at once; a host with two neighbours re-routes it all.
    #[test]
    fn hosts_added_later_route_as_if_built_together() {
        let cfg = || EgressCfg::plain("l", None, 1);
        let build = |pairs: u32, incremental: bool| {
            let mut b = NetBuilder::default();
            let (router, switch) = (
                b.node("router", NodeKind::Router),
                b.node("switch", NodeKind::Router),
            );
            b.link(router, switch, cfg(), cfg());
            let mut net = if incremental { b.build() } else { b.net };
            for i in 0..pairs {
                let s = net.add_node(format!("s{i}"), NodeKind::Host);
                let r = net.add_node(format!("r{i}"), NodeKind::Host);
                net.add_link(s, router, cfg(), cfg());
                net.add_link(switch, r, cfg(), cfg());
                if i == 3 {
                    net.add_link(s, switch, cfg(), cfg()); // two neighbours
                }
                if incremental {
                    net.route_new_hosts(s);
                }
            }
            if !incremental {
                net.compute_routes();
            }
            net
        };
        let (a, b) = (build(8, true), build(8, false));
        let n = a.nodes.len() as u32;
        assert!(a.nodes[2].default.is_some() && a.nodes[8].default.is_none());
        for u in 0..n {
            for d in 0..n {
                assert_eq!(
                    a.next_hop(u, &probe(u, d, 0)),
                    b.next_hop(u, &probe(u, d, 0)),
                    "route from {u} to {d}"
                );
            }
            assert_eq!(
                a.nodes[u as usize].routes.len(),
                b.nodes[u as usize].routes.len()
            );
        }
    }
}
