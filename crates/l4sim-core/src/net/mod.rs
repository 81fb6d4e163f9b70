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

use crate::packet::hdr;
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
    /// Egress toward each destination node, indexed by node id (None: unreachable/self).
    pub routes: Vec<Option<Egress>>,
    /// Policy routes, tried before `routes`: (dscp, egress) pairs indexed by destination node
    /// id, the first one added for a DSCP winning (empty where the node has none).
    pub policy: Vec<Vec<(u8, Egress)>>,
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

    /// Shortest-hop static routes (BFS from every destination over reversed edges).
    pub fn compute_routes(&mut self) {
        let n = self.nodes.len();
        let mut out: Vec<Vec<(u32, Egress)>> = vec![Vec::new(); n];
        for &(from, to, e) in &self.adj {
            out[from as usize].push((to, e));
        }
        for node in &mut self.nodes {
            node.routes = vec![None; n];
        }
        for d in 0..n {
            let mut dist = vec![usize::MAX; n];
            dist[d] = 0;
            let mut q = VecDeque::from([d]);
            while let Some(v) = q.pop_front() {
                // Every node u with an edge u -> v is one hop further from d.
                for (u, edges) in out.iter().enumerate() {
                    if dist[u] != usize::MAX {
                        continue;
                    }
                    if let Some(&(_, e)) = edges.iter().find(|(to, _)| *to as usize == v) {
                        dist[u] = dist[v] + 1;
                        self.nodes[u].routes[d] = Some(e);
                        q.push_back(u);
                    }
                }
            }
        }
    }

    /// Route packets with `dscp` toward `dst` from `from` over its link to `to` (which must
    /// exist).
    pub fn add_policy(&mut self, from: u32, dscp: u8, dst: u32, to: u32) {
        let e = self
            .adj
            .iter()
            .find(|(f, t, _)| *f == from && *t == to)
            .map(|&(_, _, e)| e)
            .expect("policy route over a link that exists");
        let n_nodes = self.nodes.len();
        let policy = &mut self.nodes[from as usize].policy;
        policy.resize_with(n_nodes, Vec::new);
        policy[dst as usize].push((dscp, e));
    }

    /// The node whose egress shaped port `q` is.
    pub fn port_node(&self, q: u32) -> u32 {
        self.adj
            .iter()
            .find(|&&(_, _, e)| e == Egress::Port(q))
            .map(|&(from, _, _)| from)
            .expect("every port is some node's egress")
    }

    /// Where `node` sends a packet with `dscp` toward `dst`.
    #[inline]
    pub fn next_hop(&self, node: u32, dst: u32, dscp: u8) -> Option<Egress> {
        let n = &self.nodes[node as usize];
        if let Some(by_dscp) = n.policy.get(dst as usize) {
            if let Some(&(_, e)) = by_dscp.iter().find(|p| p.0 == dscp) {
                return Some(e);
            }
        }
        n.routes[dst as usize]
    }

    /// The pipes (lines) a packet with `dscp` crosses from `src` to `dst`, in order; None
    /// if there is no route (or it loops).
    pub fn route(&self, src: u32, dst: u32, dscp: u8) -> Option<Vec<u32>> {
        let mut at = src;
        let mut pipes = Vec::new();
        for _ in 0..=self.nodes.len() {
            if at == dst {
                return Some(pipes);
            }
            let pipe = match self.next_hop(at, dst, dscp)? {
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
        let back = self.route(dst, src, 0).unwrap_or_default();
        let advertised = back
            .first()
            .map_or(hdr::MTU, |&p| self.pipes[p as usize].mtu);
        self.path_mtu(src, dst, dscp).min(advertised) - hdr::IP - hdr::TCP_TS
    }

    /// The smallest IP MTU on the route from `src` to `dst` (1500 without a route).
    pub fn path_mtu(&self, src: u32, dst: u32, dscp: u8) -> u32 {
        let fwd = self.route(src, dst, dscp).unwrap_or_default();
        fwd.iter()
            .map(|&p| self.pipes[p as usize].mtu)
            .min()
            .unwrap_or(hdr::MTU)
    }

    /// The shaped port named `name`.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }
}
