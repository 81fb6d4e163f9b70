//! Running a scenario: build the topology, the traffic sources and their connections, run
//! the engine, collect the results.
//!
//! [`World`] is the simulation. [`run`] builds it and runs it to the scenario's end in one
//! go; the steppable form ([`World::run_until`], [`World::drain`] and the `add_flow` /
//! `remove_flow` / `set_flow` / `set_link` changes) serves live use (the `Simulation` of the
//! Python package, the web demo). Both process exactly the same events, so stepping to the
//! end gives byte-identical results.

pub mod conn;
mod results;

use serde_json::{json, Value};

use crate::cc::{self, CcSpec, CongestionControl};
use crate::engine::{Event, Scheduler};
use crate::metrics::results::{ConnRecord, FlowSeries, QdiscSeries, RunResult};
use crate::net::shaper::{default_burst, Shaper};
use crate::net::{topology, Egress, Network, NodeKind};
use crate::packet::{flags, hdr, skb, Dir, Ecn, Packet};
use crate::qdisc::{self, Class, QueueDisc};
use crate::rng::{stream, Rng};
use crate::scenario::{FlowSpec, Scenario, ScenarioError, TopologySpec};
use crate::tcp::metrics::MetricsCache;
use crate::tcp::{tsq, ConnParams, TcpReceiver, TcpSender};
use crate::time::{millis, secs, to_secs, Jiffies, Rate, SimDuration, SimTime, NEVER, SEC};
use crate::traffic::udp::{UdpParams, UdpReceiver, UdpSender};
use crate::traffic::udp_prague::{UdpPragueReceiver, UdpPragueSender};
use crate::traffic::{Source, SourceSpec, Transfer};
use conn::{Conn, Pending, Request, Session, Stream};

/// Version of the model, recorded with every result (part of the results-store key).
pub const MODEL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Counters of a flow's retired connections.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    retrans: u64,
    rto_count: u64,
    fast_recoveries: u64,
    rwnd_limited: u64,
    undos: u64,
    spurious_rtos: u64,
    cwr_count: u64,
    ce_received: u64,
    ce_fed_back: u64,
    data_pkts_sent: u64,
    pkts_dropped: u64,
}

impl Totals {
    fn add(&mut self, st: &Stream) {
        self.data_pkts_sent += st.conn.data_sent();
        self.pkts_dropped += st.data_dropped;
        match &st.conn {
            Conn::Tcp(c) => {
                let (s, r) = (&c.0, &c.1);
                self.retrans += s.stats.retrans;
                self.rto_count += s.stats.rto_count;
                self.fast_recoveries += s.stats.fast_recoveries;
                self.rwnd_limited += s.stats.rwnd_limited;
                self.undos += s.stats.undos;
                self.spurious_rtos += s.stats.spurious_rtos;
                self.cwr_count += s.stats.cwr_count;
                self.ce_received += r.stats.ce_received;
                self.ce_fed_back += s.sk.delivered_ce;
            }
            Conn::Udp(c) => self.ce_received += c.1.ce_received,
            Conn::UdpPrague(c) => {
                self.ce_received += c.1.ce_received();
                self.ce_fed_back += c.0.ce_fed_back();
            }
        }
    }
}

/// A scenario flow: its spec, hosts, traffic source and metrics.
struct FlowState {
    spec: FlowSpec,
    hosts: (u32, u32),
    /// MSS of its path (`Network::path_mss`), for its TCP connections.
    mss: u32,
    /// Bulk flows: their streams, alive for the whole run (the first one is sampled, as a
    /// persistent source's connection is).
    streams: Vec<usize>,
    source: Option<Box<dyn Source>>,
    rng: Rng,
    /// The live connection of a persistent source.
    persistent: Option<usize>,
    start: SimTime,
    base_rtt: u64,
    rtt_samples: Vec<f64>,
    last_bytes: u64,
    series: FlowSeries,
    /// Payload bytes delivered in order over all its connections.
    delivered: u64,
    retired: Totals,
    conns_opened: u64,
    /// ECN mode and data codepoint of its first connection, once known.
    ecn: Option<(String, String)>,
    /// udp_prague: the receiver's 100 ms records.
    udp_records: Vec<crate::traffic::udp_prague::UdpRecord>,
    removed_at: Option<SimTime>,
}

impl FlowState {
    /// The connection whose state the flow's series and RTT samples show: a bulk flow's first
    /// stream, or a persistent source's connection.
    fn sampled(&self) -> Option<usize> {
        self.streams.first().copied().or(self.persistent)
    }
}

struct QdiscTrack {
    last_sum: u128,
    last_n: u64,
    /// Cumulative (enqueued, marked, dropped) per class at the last sample.
    last_class: [[u64; 3]; 2],
    last_tx: u64,
    series: QdiscSeries,
    /// Per-flow sojourn histograms as of the last drain.
    drained_groups: Vec<crate::metrics::hist::Histogram>,
}

/// The simulated world: network, endpoints, scheduler and collectors.
pub struct World {
    now: SimTime,
    end: SimTime,
    seed: u64,
    topology: TopologySpec,
    sched: Scheduler,
    net: Network,
    conns: Vec<Option<Stream>>,
    free: Vec<usize>,
    next_conn_id: u64,
    flows: Vec<FlowState>,
    qtrack: Vec<QdiscTrack>,
    sample_interval: SimTime,
    series_t: Vec<f64>,
    bufs: Vec<Vec<Packet>>,
    drops: Vec<qdisc::Drop>,
    obs: Vec<(&'static str, f64)>,
    transfers: Vec<Transfer>,
    data_sent_net: u64,
    data_rcvd_net: u64,
    data_dropped: u64,
    /// Data packets sent and received by connections already retired.
    retired_sent: u64,
    retired_rcvd: u64,
    /// Data packets that arrived for a closing connection (its flow removed).
    data_orphaned: u64,
    /// Data packets copied by netem `duplicate` (each copy is one more packet in the network).
    data_duplicated: u64,
    /// Scratch for the copies a port's qdisc made in one enqueue.
    dups: Vec<Packet>,
    /// Scratch for the packets a netem orphans (TSQ).
    orphans: Vec<crate::qdisc::Orphan>,
    /// What finished TCP connections left for the next ones between the same hosts.
    tcp_metrics: MetricsCache,
    records: Vec<ConnRecord>,
    drained: Drained,
    /// Per host, the first TCP flow on it and its side (0 sender, 1 receiver): whose `hz`
    /// and tick phase the host's other flows must share ([`World::claim_host_clocks`]).
    host_clocks: std::collections::HashMap<u32, (usize, usize)>,
    /// Per port whose rate `set_link` changed: the bits its earlier rates could carry, and
    /// since when its present rate applies (a link's utilisation is over what it could carry).
    reshaped: std::collections::HashMap<usize, (f64, SimTime)>,
}

/// How far [`World::drain`] has read.
#[derive(Default)]
struct Drained {
    samples: usize,
    records: usize,
    udp: std::collections::HashMap<String, usize>,
}

impl World {
    pub fn new(sc: &Scenario) -> Result<World, ScenarioError> {
        sc.validate()?;
        let built = topology::build(&sc.topology, &sc.flows, sc.seed)?;
        let qtrack = built.net.ports.iter().map(new_track).collect();
        let mut w = World {
            now: 0,
            end: secs(sc.duration),
            seed: sc.seed,
            topology: sc.topology.clone(),
            sched: Scheduler::new(),
            net: built.net,
            conns: Vec::new(),
            free: Vec::new(),
            next_conn_id: 0,
            flows: Vec::new(),
            qtrack,
            sample_interval: secs(sc.sample_interval).max(1),
            series_t: Vec::new(),
            bufs: Vec::new(),
            drops: Vec::with_capacity(64),
            obs: Vec::new(),
            transfers: Vec::new(),
            data_sent_net: 0,
            data_rcvd_net: 0,
            data_dropped: 0,
            retired_sent: 0,
            retired_rcvd: 0,
            data_orphaned: 0,
            data_duplicated: 0,
            dups: Vec::new(),
            orphans: Vec::new(),
            tcp_metrics: MetricsCache::default(),
            records: Vec::new(),
            drained: Drained::default(),
            host_clocks: std::collections::HashMap::new(),
            reshaped: std::collections::HashMap::new(),
        };
        for (fi, f) in sc.flows.iter().enumerate() {
            w.claim_host_clocks(f, built.hosts[fi], &format!("flows[{fi}]."))?;
            w.start_flow(
                f.clone(),
                built.hosts[fi],
                built.base_rtt[fi],
                secs(f.start),
            );
        }
        for q in 0..w.net.ports.len() {
            let phase = w.node_tick_phase(w.net.port_node(q as u32));
            w.net.ports[q].qdisc.start(0, phase);
        }
        for (i, p) in w.net.ports.iter().enumerate() {
            let t = p.qdisc.inner.next_timer();
            if t != NEVER {
                w.sched.schedule(t, Event::QdiscTimer(i as u32));
            }
        }
        w.sched.schedule(w.sample_interval, Event::Sample);
        Ok(w)
    }

    /// The tick phase of node `node`'s kernel, for its qdiscs' timers ([`qdisc::KERNEL_HZ`]).
    fn node_tick_phase(&self, node: u32) -> SimDuration {
        tick_phase(self.seed, node, qdisc::KERNEL_HZ, None)
    }

    /// A host runs one kernel, with one HZ and one tick phase: a TCP flow `f` on `hosts` must
    /// give its endpoints the `tcp.hz` and `tcp.jiffies_phase_us` of the first TCP flow on
    /// each (a UDP source reads no jiffies). The flow about to start becomes the reference of
    /// a host it is the first on.
    fn claim_host_clocks(
        &mut self,
        f: &FlowSpec,
        hosts: (u32, u32),
        prefix: &str,
    ) -> Result<(), ScenarioError> {
        if !f.source.is_tcp() {
            return Ok(());
        }
        let sides = [
            ("tcp", hosts.0, &f.tcp),
            ("receiver.tcp", hosts.1, &f.receiver.tcp),
        ];
        for &(side, node, t) in &sides {
            let Some(&(gi, g_side)) = self.host_clocks.get(&node) else {
                continue;
            };
            let g = &self.flows[gi];
            let (g_side, u) = match g_side {
                0 => ("tcp", &g.spec.tcp),
                _ => ("receiver.tcp", &g.spec.receiver.tcp),
            };
            let host = &self.net.nodes[node as usize].name;
            let other = |key: &str| format!("flow {:?}'s {g_side}.{key}", g.spec.name);
            if t.hz != u.hz {
                return Err(ScenarioError {
                    field: format!("{prefix}{side}.hz"),
                    message: format!(
                        "host {host:?} runs at HZ {} ({}); a host's flows share its kernel, \
                         got {}",
                        u.hz,
                        other("hz"),
                        t.hz
                    ),
                });
            }
            if t.jiffies_phase_us != u.jiffies_phase_us {
                let show =
                    |v: Option<f64>| v.map_or("unset (drawn)".to_string(), |v| v.to_string());
                return Err(ScenarioError {
                    field: format!("{prefix}{side}.jiffies_phase_us"),
                    message: format!(
                        "host {host:?} ticks with phase {} ({}); a host's flows share its \
                         kernel's clock, got {}",
                        show(u.jiffies_phase_us),
                        other("jiffies_phase_us"),
                        show(t.jiffies_phase_us)
                    ),
                });
            }
        }
        let fi = self.flows.len();
        for (side, &(_, node, _)) in sides.iter().enumerate() {
            self.host_clocks.entry(node).or_insert((fi, side));
        }
        Ok(())
    }

    /// Set up flow `f` on its hosts, starting at `start`.
    fn start_flow(&mut self, f: FlowSpec, hosts: (u32, u32), base_rtt: u64, start: SimTime) {
        let fi = self.flows.len();
        let mut rng = Rng::new(self.seed, stream::TRAFFIC + fi as u64);
        let source = f.source.build(start, f.streams, f.size, &mut rng);
        let bulk = f.source.is_bulk();
        self.flows.push(FlowState {
            // A flow added while running has no values for the samples before it.
            series: FlowSeries {
                name: f.name.clone(),
                tput_mbps: vec![f64::NAN; self.series_t.len()],
                cwnd: vec![f64::NAN; self.series_t.len()],
                srtt_ms: vec![f64::NAN; self.series_t.len()],
                pacing_mbps: vec![f64::NAN; self.series_t.len()],
                ce_fed_back: vec![f64::NAN; self.series_t.len()],
                ..Default::default()
            },
            mss: self.net.path_mss(hosts.0, hosts.1, f.dscp),
            spec: f,
            hosts,
            streams: Vec::new(),
            source,
            rng,
            persistent: None,
            start,
            base_rtt,
            rtt_samples: Vec::new(),
            last_bytes: 0,
            delivered: 0,
            retired: Totals::default(),
            conns_opened: 0,
            ecn: None,
            udp_records: Vec::new(),
            removed_at: None,
        });
        if let Some(stop) = self.flows[fi].spec.stop {
            self.sched
                .schedule(secs(stop).max(start), Event::FlowStop(fi as u32));
        }
        if !self.flows[fi].spec.source.is_tcp() {
            let (slot, p) = self.udp_params(fi);
            let conn = match &self.flows[fi].spec.source {
                SourceSpec::Udp(spec) => {
                    Conn::Udp(Box::new((UdpSender::new(&p, spec), UdpReceiver::default())))
                }
                SourceSpec::UdpPrague(spec) => Conn::UdpPrague(Box::new((
                    UdpPragueSender::new(&p, spec),
                    UdpPragueReceiver::new(&p),
                ))),
                _ => unreachable!("TCP sources are handled below"),
            };
            let prague = matches!(conn, Conn::UdpPrague(_));
            self.insert_conn(slot, conn, fi, start);
            self.flows[fi].streams.push(slot);
            self.sched.schedule(start, Event::StreamStart(slot as u32));
            if prague {
                // its sender's srtt once a second, as a TCP flow's
                self.sched
                    .schedule(start + SEC, Event::RttSample(fi as u32));
            }
            return;
        }
        // Bulk streams are created now and open at `start`; other sources wake when due.
        let mut initial = std::mem::take(&mut self.transfers);
        initial.clear();
        if let Some(src) = self.flows[fi].source.as_mut() {
            src.initial(&mut initial);
        }
        for size in initial.drain(..) {
            let slot = self.new_tcp(fi, size, start);
            self.flows[fi].streams.push(slot);
            self.sched.schedule(start, Event::StreamStart(slot as u32));
        }
        self.transfers = initial;
        // a bulk flow's first stream and a persistent source's connection are sampled
        let persistent = self.flows[fi]
            .source
            .as_ref()
            .is_some_and(|s| s.persistent());
        if bulk || persistent {
            self.sched
                .schedule(start + SEC, Event::RttSample(fi as u32));
        }
        if !bulk {
            self.schedule_source(fi);
        }
    }

    fn schedule_source(&mut self, fi: usize) {
        if let Some(src) = &self.flows[fi].source {
            let t = src.next_wake();
            if t != NEVER {
                self.sched
                    .schedule(t.max(self.now), Event::SourceWake(fi as u32));
            }
        }
    }

    fn alloc_slot(&mut self) -> usize {
        self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        })
    }

    fn insert_conn(&mut self, slot: usize, conn: Conn, fi: usize, now: SimTime) {
        let id = self.next_conn_id;
        self.next_conn_id += 1;
        self.conns[slot] = Some(Stream::new(conn, fi as u32, id, now));
        self.flows[fi].conns_opened += 1;
    }

    fn udp_params(&mut self, fi: usize) -> (usize, UdpParams) {
        let slot = self.alloc_slot();
        let id = self.next_conn_id;
        let mut hrng = Rng::new(self.seed, stream::TCP + 2 * id);
        let (snd, rcv) = self.flows[fi].hosts;
        let p = UdpParams {
            flow: slot as u32,
            group: fi as u16,
            dscp: self.flows[fi].spec.dscp,
            sender: snd,
            receiver: rcv,
            hash_fwd: hrng.next_u32(),
            hash_rev: hrng.next_u32(),
        };
        (slot, p)
    }

    /// A TCP connection of flow `fi` carrying `size` bytes (None: bulk), not yet open.
    #[cold]
    fn new_tcp(&mut self, fi: usize, size: Option<u64>, now: SimTime) -> usize {
        let slot = self.alloc_slot();
        let id = self.next_conn_id;
        let seed = self.seed;
        let f = &self.flows[fi];
        let mut hrng = Rng::new(seed, stream::TCP + 2 * id);
        let (hz, rhz) = (f.spec.tcp.hz, f.spec.receiver.tcp.hz);
        let tick_phases = (
            tick_phase(seed, f.hosts.0, hz, f.spec.tcp.jiffies_phase_us),
            tick_phase(seed, f.hosts.1, rhz, f.spec.receiver.tcp.jiffies_phase_us),
        );
        let rcv_cc_spec = f.spec.receiver.cc.clone().unwrap_or_default();
        let clocks = (
            Jiffies::with_phase(hz, tick_phases.0),
            Jiffies::with_phase(rhz, tick_phases.1),
        );
        let cc = cc::build(&f.spec.cc, clocks.0, Rng::new(seed, stream::CC + 2 * id));
        let rcc = cc::build(
            &rcv_cc_spec,
            clocks.1,
            Rng::new(seed, stream::CC + 2 * id + 1),
        );
        // A requested transfer's client (the data receiver) opens its connection.
        let requested = f.source.as_ref().is_some_and(|s| s.requested());
        let client_opened = requested.then(|| {
            let (t, r) = (&f.spec.tcp, &f.spec.receiver.tcp);
            crate::tcp::ecn::client_opened(
                (r.ecn, rcc.flags()),
                (t.ecn, cc.flags(), t.accecn_accept),
            )
        });
        let params = ConnParams {
            flow: slot as u32,
            group: fi as u16,
            dscp: f.spec.dscp,
            sender: f.hosts.0,
            receiver: f.hosts.1,
            hash_fwd: hrng.next_u32(),
            hash_rev: hrng.next_u32(),
            size,
            mss: f.mss,
            tick_phases,
            client_opened,
        };
        let mut sender = TcpSender::new(&params, &f.spec.tcp, cc);
        // TSQ: at a plain device queue emit reports each data segment's transmit completion;
        // behind a qdisc, the port does as it sends the segment (or frees it).
        sender.tsq.set_device(
            match self.net.next_hop(
                params.sender,
                &crate::net::probe(params.sender, params.receiver, params.dscp),
            ) {
                Some(Egress::Pipe(p)) if !self.net.pipes[p as usize].is_instant() => {
                    Some(tsq::Device::Queue(p))
                }
                Some(Egress::Port(q))
                    if !self.net.pipes[self.net.ports[q as usize].line as usize].is_instant() =>
                {
                    Some(tsq::Device::Qdisc)
                }
                _ => None,
            },
        );
        let receiver = TcpReceiver::new(&params, &f.spec.receiver.tcp, &rcc);
        self.insert_conn(slot, Conn::Tcp(Box::new((sender, receiver))), fi, now);
        // A sized transfer (a bulk stream's too: its row in the connections) is recorded when
        // the receiver has its last byte.
        if let Some(b) = size {
            self.conns[slot]
                .as_mut()
                .unwrap()
                .pending
                .push_back(Pending {
                    until: b,
                    size: b,
                    start: now,
                    retrans: 0,
                });
        }
        slot
    }

    /// Run until the scenario's end time.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    /// Process every event up to and including time `t` (ns); `now` becomes `t`.
    pub fn run_until(&mut self, t: SimTime) {
        while let Some((et, ev)) = self.sched.pop_until(t) {
            self.now = et;
            self.handle(ev);
        }
        self.now = self.now.max(t);
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The scenario's end time.
    pub fn end(&self) -> SimTime {
        self.end
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::PipeExit(p) => {
                let pipe = &mut self.net.pipes[p as usize];
                let to = pipe.to;
                let pkt = pipe
                    .pop_due(self.now)
                    .expect("pipe exit event without a due packet");
                if let Some(t) = pipe.head_time() {
                    self.sched.schedule(t, Event::PipeExit(p));
                }
                self.arrive(to, pkt);
            }
            Event::PortWake(q) => {
                let port = &mut self.net.ports[q as usize];
                if port.wake_at != self.now {
                    return; // superseded
                }
                port.wake_at = NEVER;
                self.port_send(q as usize);
            }
            Event::QdiscTimer(q) => {
                let qd = &mut self.net.ports[q as usize].qdisc.inner;
                qd.on_timer(self.now);
                let t = qd.next_timer();
                if t != NEVER {
                    self.sched
                        .schedule(t.max(self.now + 1), Event::QdiscTimer(q));
                }
            }
            Event::Endpoint(id) => {
                let (s, side) = ((id / 2) as usize, (id % 2) as usize);
                let now = self.now;
                let Some(st) = self.conns[s].as_mut() else {
                    return;
                };
                if st.armed[side] != now || st.closing {
                    return; // stale
                }
                st.armed[side] = NEVER;
                let mut out = self.bufs.pop().unwrap_or_default();
                st.conn.on_timer(side, now, &mut out);
                self.emit(&mut out);
                self.bufs.push(out);
                self.after_endpoint(s, side);
            }
            Event::StreamStart(id) => {
                let s = id as usize;
                let now = self.now;
                let Some(st) = self.conns[s].as_mut() else {
                    return;
                };
                if st.closing {
                    return;
                }
                let mut out = self.bufs.pop().unwrap_or_default();
                match &mut st.conn {
                    Conn::Tcp(c) => c.0.connect(now, &mut out),
                    Conn::Udp(c) => c.0.start(now, &mut out),
                    Conn::UdpPrague(c) => c.0.start(now, &mut out),
                }
                self.emit(&mut out);
                self.bufs.push(out);
                self.arm(s, 0);
            }
            Event::RttSample(fi) => {
                let f = &mut self.flows[fi as usize];
                if f.removed_at.is_some() {
                    return;
                }
                let sampled = f.sampled();
                let bulk = f.spec.source.is_bulk();
                let srtt = match sampled
                    .and_then(|s| self.conns[s].as_ref())
                    .map(|s| &s.conn)
                {
                    // A sized transfer's samples end with it, as iperf3's test does: its
                    // frozen srtt would weigh on the mean for the rest of the run.
                    Some(Conn::Tcp(c)) if bulk && c.0.stats.completed_at != NEVER => return,
                    Some(Conn::Tcp(c)) => c.0.sk.srtt,
                    Some(Conn::UdpPrague(c)) => c.0.srtt(),
                    _ => 0,
                };
                if srtt > 0 {
                    f.rtt_samples.push(srtt as f64 / 1e6);
                }
                self.sched.schedule(self.now + SEC, Event::RttSample(fi));
            }
            Event::SourceWake(fi) => self.source_wake(fi as usize),
            Event::RequestRetry(s) => {
                let s = s as usize;
                let Some(st) = self.conns[s].as_mut() else {
                    return;
                };
                if st.request_retry_at != self.now || st.closing {
                    return; // stale: the slot was reused, or the flow removed
                }
                st.request_retry_at = NEVER;
                for _ in 0..std::mem::take(&mut st.requests_lost) {
                    self.send_request(s);
                }
            }
            Event::SessionWrite(s) => self.session_write(s as usize),
            Event::FlowStop(fi) => {
                if self.flows[fi as usize].removed_at.is_none() {
                    self.stop_flow(fi as usize);
                }
            }
            Event::Sample => {
                self.sample();
                self.sched
                    .schedule(self.now + self.sample_interval, Event::Sample);
            }
        }
    }

    /// A source's transfers fall due: open connections (or write on the persistent one).
    #[cold]
    fn source_wake(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let Some(src) = f.source.as_mut() else {
            return;
        };
        if src.next_wake() > now {
            return; // rescheduled (rate change)
        }
        let mut tr = std::mem::take(&mut self.transfers);
        tr.clear();
        src.wake(now, &mut f.rng, &mut tr);
        let (persistent, requested) = (src.persistent(), src.requested());
        let session = src.session().map(|se| secs(se.duration));
        for size in tr.drain(..) {
            let bytes = size.unwrap_or(u64::MAX);
            if let Some(duration) = session {
                self.open_session(fi, bytes, duration);
                continue;
            }
            let (s, what) = match (persistent, self.flows[fi].persistent) {
                (true, Some(s)) => {
                    self.push_pending(s, bytes);
                    (s, Request::Write(bytes))
                }
                _ => {
                    let s = self.new_tcp(fi, Some(bytes), now);
                    if persistent {
                        self.flows[fi].persistent = Some(s);
                        if let Conn::Tcp(c) = &mut self.conns[s].as_mut().unwrap().conn {
                            c.0.keep_open();
                        }
                    }
                    self.conns[s].as_mut().unwrap().requested = requested;
                    (s, Request::Open)
                }
            };
            if requested {
                self.request(s, what);
            } else {
                self.write(s, what);
            }
        }
        self.transfers = tr;
        self.schedule_source(fi);
    }

    /// A `messages` session opens: a connection that writes `size` bytes now and again at the
    /// session's rate until `duration` has passed, then closes after its last message.
    #[cold]
    fn open_session(&mut self, fi: usize, size: u64, duration: SimDuration) {
        let now = self.now;
        let s = self.new_tcp(fi, Some(size), now);
        let end = now + duration;
        let f = &mut self.flows[fi];
        let fraction = f
            .source
            .as_ref()
            .and_then(|src| src.session())
            .map_or(0.0, |se| se.poisson_fraction);
        // A draw only where the fraction leaves a choice (MGEN's POISSON or PERIODIC).
        let poisson = fraction >= 1.0 || (fraction > 0.0 && f.rng.uniform() < fraction);
        let next = self.session_gap(fi, now, poisson);
        if next < end {
            if let Conn::Tcp(c) = &mut self.conns[s].as_mut().unwrap().conn {
                c.0.keep_open();
            }
            let se = Session {
                next,
                end,
                size,
                poisson,
            };
            self.conns[s].as_mut().unwrap().session = Some(se);
            self.sched.schedule(next, Event::SessionWrite(s as u32));
        }
        self.write(s, Request::Open);
    }

    /// When a session of flow `fi` writes its next message after one at `t`: a period of
    /// 1/rate, or an exponential gap (`poisson`), drawn from the flow's random stream.
    fn session_gap(&mut self, fi: usize, t: SimTime, poisson: bool) -> SimTime {
        let f = &mut self.flows[fi];
        let Some(se) = f.source.as_ref().and_then(|src| src.session()) else {
            return NEVER;
        };
        let mean = 1.0 / se.rate;
        let gap = if poisson {
            f.rng.exponential(mean)
        } else {
            mean
        };
        t + secs(gap).max(1)
    }

    /// Session connection `s` writes its next message; the last one (the next would come at
    /// or after the session's end) also lets the FIN ride on its last segment.
    #[cold]
    fn session_write(&mut self, s: usize) {
        let now = self.now;
        let Some(st) = self.conns[s].as_mut() else {
            return;
        };
        let Some(se) = st.session.filter(|se| se.next == now && !st.closing) else {
            return; // stale: the slot was reused, or the flow removed
        };
        let fi = st.flow as usize;
        let next = self.session_gap(fi, now, se.poisson);
        let st = self.conns[s].as_mut().unwrap();
        if next < se.end {
            st.session = Some(Session { next, ..se });
            self.sched.schedule(next, Event::SessionWrite(s as u32));
        } else {
            st.session = None;
            if let Conn::Tcp(c) = &mut st.conn {
                c.0.close_after_writes();
            }
        }
        self.push_pending(s, se.size);
        self.write(s, Request::Write(se.size));
    }

    /// A transfer of `bytes` more on the persistent connection in slot `s`, asked for now.
    fn push_pending(&mut self, s: usize, bytes: u64) {
        let st = self.conns[s].as_mut().unwrap();
        let Conn::Tcp(c) = &mut st.conn else { return };
        let until = st
            .pending
            .back()
            .map_or(c.1.stats.bytes_delivered, |p| p.until)
            + bytes;
        st.pending.push_back(Pending {
            until,
            size: bytes,
            start: self.now,
            retrans: c.0.stats.retrans,
        });
    }

    /// The data sender of connection `s` acts on a transfer: opens its connection, or writes
    /// the bytes on it.
    fn write(&mut self, s: usize, what: Request) {
        let now = self.now;
        let st = self.conns[s].as_mut().unwrap();
        let Conn::Tcp(c) = &mut st.conn else { return };
        let mut out = self.bufs.pop().unwrap_or_default();
        match what {
            Request::Open => c.0.connect(now, &mut out),
            Request::Write(bytes) => c.0.append(bytes, now, &mut out),
        }
        self.emit(&mut out);
        self.bufs.push(out);
        self.arm(s, 0);
    }

    /// A request/response transfer: the receiving host (the client) sends its request, a
    /// SYN-sized packet through the network to the data sender, who acts on it when it
    /// arrives. This puts the client's half round trip before the response, as an HTTP
    /// download has it: client SYN, server SYN/ACK, client ACK with the request, then data
    /// (here: request, SYN, SYN/ACK, data: the same crossings in the same directions, with
    /// the handshake's roles, and so the ECN negotiation, the data sender's as for bulk
    /// flows). A lost request is sent again after the client's timeout: 1 s doubling for
    /// a SYN (`TCP_TIMEOUT_INIT`), its RTO for a request on an open connection.
    fn request(&mut self, s: usize, what: Request) {
        self.conns[s].as_mut().unwrap().requests.push_back(what);
        self.send_request(s);
    }

    fn send_request(&mut self, s: usize) {
        let st = self.conns[s].as_mut().unwrap();
        let Conn::Tcp(c) = &st.conn else { return };
        let mut out = self.bufs.pop().unwrap_or_default();
        out.push(c.1.request_syn(self.now));
        self.emit(&mut out);
        self.bufs.push(out);
    }

    /// A request reached the data sender of connection `s` (a copy netem made of one already
    /// served finds none left).
    #[cold]
    fn request_arrived(&mut self, s: usize) {
        let st = self.conns[s].as_mut().unwrap();
        let Some(what) = st.requests.pop_front() else {
            return;
        };
        if st.requests.is_empty() {
            st.request_retries = 0;
        }
        self.write(s, what);
    }

    /// A request of connection `s`, sent at `sent`, was lost: the client sends it again when
    /// its timer armed at that send runs on its host's timer wheel (the SYN timer,
    /// `TCP_TIMEOUT_INIT`, for a new connection; its RTO for a request on an open one), backed
    /// off by the requests already lost (`icsk_rto << retransmits`, at most `TCP_RTO_MAX`).
    #[cold]
    fn request_lost(&mut self, s: usize, sent: SimTime) {
        let now = self.now;
        let st = self.conns[s].as_mut().unwrap();
        let Conn::Tcp(c) = &st.conn else { return };
        let base = if st.requests.front() == Some(&Request::Open) {
            crate::tcp::TCP_TIMEOUT_INIT
        } else {
            c.1.rto()
        };
        let clock = c.1.clock();
        let timeout = (clock.ceil(base) << st.request_retries.min(7))
            .min(clock.ceil(crate::tcp::TCP_RTO_MAX));
        let clk = clock.at(sent);
        let t = clock.timer_runs(clk, clk + timeout).max(now);
        st.requests_lost += 1;
        st.request_retries += 1;
        if t < st.request_retry_at {
            st.request_retry_at = t;
            self.sched.schedule(t, Event::RequestRetry(s as u32));
        }
    }

    /// Ask an endpoint when it next needs to run and schedule that if it is earlier than
    /// what is already pending.
    fn arm(&mut self, s: usize, side: usize) {
        let Some(st) = self.conns[s].as_mut() else {
            return;
        };
        let t = st.conn.next_timer(side);
        if t < st.armed[side] {
            let t = t.max(self.now);
            st.armed[side] = t;
            self.sched
                .schedule(t, Event::Endpoint((2 * s + side) as u32));
        }
    }

    /// After an endpoint ran: re-arm it, record completed transfers, retire a finished
    /// connection.
    fn after_endpoint(&mut self, s: usize, side: usize) {
        self.arm(s, side);
        let st = self.conns[s].as_mut().unwrap();
        if st.pending.is_empty() {
            return;
        }
        let Conn::Tcp(c) = &st.conn else { return };
        let (snd, rcv) = (&c.0, &c.1);
        let fi = st.flow as usize;
        while let Some(p) = st.pending.front() {
            if rcv.stats.bytes_delivered < p.until {
                break;
            }
            let p = st.pending.pop_front().unwrap();
            let new_conn = p.size == p.until && p.start == st.opened_at;
            // Without the handshake: from when the data could be asked for, the end of the
            // handshake at the data sender, or, for a requested transfer, when the client
            // would have sent its request (its ACK of the SYN/ACK; here the SYN/ACK).
            let established = if st.requested {
                rcv.synack_sent_at()
            } else {
                snd.stats.established_at
            };
            let from = if new_conn && established != NEVER {
                established
            } else {
                p.start
            };
            self.records.push(ConnRecord {
                flow: self.flows[fi].spec.name.clone(),
                id: st.id,
                size: p.size,
                start_s: to_secs(p.start),
                fct_s: to_secs(self.now - p.start),
                fct_no_handshake_s: to_secs(self.now.saturating_sub(from)),
                retrans: snd.stats.retrans - p.retrans,
                new_connection: new_conn,
                requested: st.requested,
            });
        }
        // A persistent connection stays open; a bulk stream stays in its flow's streams.
        let kept = self.flows[fi].persistent == Some(s)
            || self.flows[fi].spec.source.is_bulk()
            || st.session.is_some();
        if st.pending.is_empty() && !kept {
            self.close_finished(s);
        }
    }

    /// The receiver of connection `s` has every byte: it closes (the FIN rode on the last
    /// segment), and its slot is reused once its packets have left the network. It ended
    /// well: `tcp_update_metrics` with the data sender's state.
    #[cold]
    fn close_finished(&mut self, s: usize) {
        let st = self.conns[s].as_mut().unwrap();
        if let Conn::Tcp(c) = &st.conn {
            let (local, remote) = c.0.hosts();
            self.tcp_metrics
                .update(local, remote, &c.0.metrics_ending());
        }
        st.closing = true;
        self.try_free(s);
    }

    /// Free a closing connection's slot once none of its packets is in the network.
    #[cold]
    fn try_free(&mut self, s: usize) {
        let st = self.conns[s].as_ref().unwrap();
        if !st.closing || st.in_net > 0 {
            return;
        }
        let st = self.conns[s].take().unwrap();
        let f = &mut self.flows[st.flow as usize];
        f.retired.add(&st);
        if f.ecn.is_none() {
            f.ecn = ecn_of(&st.conn);
        }
        self.retired_sent += st.conn.data_sent();
        self.retired_rcvd += st.conn.data_received();
        self.free.push(s);
    }

    /// One of connection `s`'s packets left the network (delivered or dropped).
    fn left_net(&mut self, s: usize) {
        let st = self.conns[s]
            .as_mut()
            .expect("packet of a freed connection");
        st.in_net -= 1;
        if st.closing && st.in_net == 0 {
            self.try_free(s);
        }
    }

    /// Send the packets an endpoint produced, in order, from its host.
    fn emit(&mut self, out: &mut Vec<Packet>) {
        for pkt in out.drain(..) {
            if pkt.dir == Dir::Fwd {
                self.data_sent_net += pkt.is_data() as u64;
            }
            let st = self.conns[pkt.flow as usize].as_mut().unwrap();
            st.in_net += 1;
            // A TCP data segment onto its host's plain device queue (the first hop, where TCP
            // is never dropped): TSQ frees it when the line has serialized it.
            if let Conn::Tcp(c) = &mut st.conn {
                if let (Some(tsq::Device::Queue(p)), true) =
                    (c.0.tsq.device(), pkt.payload > 0 && pkt.dir == Dir::Fwd)
                {
                    let done = self.net.pipes[p as usize].sent_by(pkt.len, self.now);
                    c.0.tsq_queued(self.now, done, pkt.payload);
                }
            }
            self.forward(pkt.src, pkt);
        }
    }

    /// A packet arrives at `node`: a router (or a host it is not for) sends it on; its
    /// destination host hands it to the endpoint.
    fn arrive(&mut self, node: u32, pkt: Packet) {
        if self.is_destination(node, &pkt) {
            self.deliver(pkt);
        } else {
            self.forward(node, pkt);
        }
    }

    /// Whether `node` is the host `pkt` is for (a router never is).
    fn is_destination(&self, node: u32, pkt: &Packet) -> bool {
        pkt.dst == node && self.net.nodes[node as usize].kind == NodeKind::Host
    }

    /// `pkt` reached its destination host.
    fn deliver(&mut self, pkt: Packet) {
        let s = pkt.flow as usize;
        if pkt.skb & skb::CORRUPT != 0 {
            // netem flipped a bit: the host's TCP/UDP checksum fails and it discards the packet.
            self.dropped(&pkt);
            return;
        }
        let st = self.conns[s].as_mut().unwrap();
        if st.closing {
            if pkt.is_data() && pkt.dir == Dir::Fwd {
                self.data_orphaned += 1;
            }
            self.left_net(s);
            return;
        }
        st.in_net -= 1;
        if pkt.is_request() {
            self.request_arrived(s);
            return;
        }
        let mut out = self.bufs.pop().unwrap_or_default();
        let side = match pkt.dir {
            Dir::Fwd => {
                if pkt.is_data() {
                    self.data_rcvd_net += 1;
                }
                let before = st.conn.delivered();
                st.conn.on_packet(1, &pkt, self.now, &mut out);
                self.flows[st.flow as usize].delivered += st.conn.delivered() - before;
                1
            }
            Dir::Rev => {
                if pkt.has(flags::SYN) {
                    init_metrics(&mut st.conn, &self.tcp_metrics);
                }
                st.conn.on_packet(0, &pkt, self.now, &mut out);
                0
            }
        };
        self.emit(&mut out);
        self.bufs.push(out);
        self.after_endpoint(s, side);
    }

    /// Count a dropped packet against its connection.
    #[cold]
    fn dropped(&mut self, pkt: &Packet) {
        let s = pkt.flow as usize;
        if pkt.skb & skb::WFREE != 0 {
            self.tsq_freed(s, None, pkt.payload);
        }
        if pkt.is_data() {
            self.data_dropped += 1;
            self.conns[s].as_mut().unwrap().data_dropped += 1;
        }
        if pkt.is_request() && !self.conns[s].as_ref().unwrap().closing {
            self.request_lost(s, pkt.ts_val);
        }
        self.left_net(s);
    }

    /// Send `pkt` out of `node` toward its destination: across instant pipes (no rate, no
    /// delay) at once, hop after hop, until a pipe or a shaped port holds it or it reaches its
    /// host. A loop rather than a recursion through [`World::arrive`], so the packet is not
    /// copied at every hop.
    fn forward(&mut self, mut node: u32, pkt: Packet) {
        loop {
            let eg = self
                .net
                .next_hop(node, &pkt)
                .unwrap_or_else(|| panic!("no route from node {node} to {}", pkt.dst));
            match eg {
                Egress::Pipe(p) => {
                    let pipe = &mut self.net.pipes[p as usize];
                    if !pipe.is_instant() {
                        self.pipe_push(p, pkt);
                        return;
                    }
                    pipe.count_instant(&pkt);
                    node = pipe.to;
                    if self.is_destination(node, &pkt) {
                        self.deliver(pkt);
                        return;
                    }
                }
                Egress::Port(q) => {
                    self.port_enqueue(q as usize, pkt);
                    // Linux runs the qdisc after every enqueue; only the HTB class's own wait
                    // (no tokens for anything) makes that pointless.
                    let port = &self.net.ports[q as usize];
                    if port.wake_at == NEVER || port.qdisc_wait || port.qdisc.unshaped_head() {
                        self.port_send(q as usize);
                    }
                    return;
                }
            }
        }
    }

    /// Enqueue `pkt` at port `q`'s root qdisc, then the copies a netem in it made (Linux's
    /// `rootq->enqueue` of the clone in `netem_enqueue`), each counted as one more packet.
    fn port_enqueue(&mut self, q: usize, pkt: Packet) {
        let now = self.now;
        let port = &mut self.net.ports[q];
        if pkt.is_data() {
            port.data_inside += 1;
        }
        let n = port.qdisc.enqueue(pkt, now).len();
        // Take the copies before the drops are counted: a drop may retire the connection
        // if its packets were all gone, and the copies are its packets too.
        let dup = port.qdisc.may_duplicate();
        let mut dups = Vec::new();
        if dup {
            dups = std::mem::take(&mut self.dups);
            port.qdisc.take_duplicates(&mut dups);
            for d in &dups {
                self.data_duplicated += d.is_data() as u64;
                self.conns[d.flow as usize].as_mut().unwrap().in_net += 1;
            }
        }
        if port.qdisc.may_orphan() {
            let mut orphans = std::mem::take(&mut self.orphans);
            self.net.ports[q].qdisc.take_orphans(&mut orphans);
            for o in orphans.drain(..) {
                self.tsq_freed(o.flow as usize, None, o.payload);
            }
            self.orphans = orphans;
        }
        for i in 0..n {
            let d = self.net.ports[q].qdisc.last_drops()[i];
            if d.pkt.is_data() {
                self.net.ports[q].data_inside -= 1;
            }
            self.dropped(&d.pkt);
        }
        if dup {
            for d in dups.drain(..) {
                self.port_enqueue(q, d);
            }
            self.dups = dups;
        }
    }

    /// TCP Small Queues behind a qdisc on the sender's egress: one of connection `s`'s data
    /// segments left that qdisc, on the line until `done` (None: freed now, dropped or
    /// orphaned). A socket this lets send again is re-armed.
    #[cold]
    fn tsq_freed(&mut self, s: usize, done: Option<SimTime>, payload: u32) {
        let now = self.now;
        let Some(Conn::Tcp(c)) = self.conns[s].as_mut().map(|st| &mut st.conn) else {
            return;
        };
        match done {
            Some(t) => c.0.tsq_queued(now, t, payload),
            None => c.0.tsq_freed(now, payload),
        }
        self.arm(s, 0);
    }

    /// A charged segment went from the qdisc on its sender's egress onto `line` (a pipe with
    /// a rate): `tcp_wfree` when the line has sent it. (Refused there, it was freed as a drop.)
    #[cold]
    #[inline(never)]
    fn wfree_on_line(&mut self, line: u32) {
        let pipe = &mut self.net.pipes[line as usize];
        let done = pipe.busy_until();
        let Some(pkt) = pipe.last_mut().filter(|p| p.skb & skb::WFREE != 0) else {
            return;
        };
        pkt.skb &= !skb::WFREE;
        let (s, payload) = (pkt.flow as usize, pkt.payload);
        self.tsq_freed(s, Some(done), payload);
    }

    /// Put `pkt` on pipe `p` (instant pipes carry it on at once, [`World::forward`]).
    #[inline(always)]
    fn pipe_push(&mut self, p: u32, pkt: Packet) {
        let pipe = &mut self.net.pipes[p as usize];
        if pipe.is_instant() {
            pipe.count_instant(&pkt);
            let to = pipe.to;
            self.arrive(to, pkt);
            return;
        }
        // A link without a qdisc still has its device's queue (txqueuelen 1000, Linux's
        // default pfifo_fast): a router's drops what finds it full, instead of growing the
        // link's backlog without end. A host's drops only UDP: TCP Small Queues keep a
        // socket's data out of its host's device queue beyond a few skbs (tcp/tsq.rs).
        let conns = &self.conns;
        let router = pipe.router;
        let droppable = |pkt: &Packet| {
            router
                || matches!(
                    conns[pkt.flow as usize].as_ref().map(|s| &s.conn),
                    Some(Conn::Udp(_) | Conn::UdpPrague(_))
                )
        };
        match pipe.push_unless_full(pkt, self.now, droppable) {
            Ok(Some(t)) => self.sched.schedule(t, Event::PipeExit(p)),
            Ok(None) => {}
            Err(pkt) => self.dropped(&pkt),
        }
    }

    /// Dequeue and transmit from a shaped port as long as the HTB class may send now; then
    /// schedule the next wake-up if packets remain.
    fn port_send(&mut self, q: usize) {
        if self.net.ports[q].qdisc.has_direct_queue() {
            self.port_send_through::<true>(q)
        } else {
            self.port_send_through::<false>(q)
        }
    }

    /// [`World::port_send`], for a root qdisc with a direct queue or (`DIRECT` false, the
    /// usual case, compiled without its tests) without.
    fn port_send_through<const DIRECT: bool>(&mut self, q: usize) {
        loop {
            let now = self.now;
            let port = &mut self.net.ports[q];
            if port.qdisc.is_empty() {
                return;
            }
            // An htb's direct queue goes first and past the root class (`htb_dequeue`).
            let unshaped = DIRECT && port.qdisc.unshaped_head();
            let ready = port.shaper.ready_at(now);
            if ready > now && !unshaped {
                // (Direct packets sent while the wake was pending leave it pending.)
                if !DIRECT || port.wake_at != ready {
                    self.sched.schedule(ready, Event::PortWake(q as u32));
                }
                port.wake_at = ready;
                port.qdisc_wait = false;
                return;
            }
            self.drops.clear();
            let pkt = port.qdisc.dequeue(now, &mut self.drops);
            let mut drops = std::mem::take(&mut self.drops);
            for d in &drops {
                if d.pkt.is_data() {
                    self.net.ports[q].data_inside -= 1;
                }
                self.dropped(&d.pkt);
            }
            drops.clear();
            self.drops = drops;
            let Some(pkt) = pkt else {
                // A qdisc that holds packets it may not send yet (tbf): come back then.
                let port = &mut self.net.ports[q];
                let ready = port.qdisc.inner.ready_at(now);
                if ready > now && !port.qdisc.is_empty() {
                    port.wake_at = ready;
                    port.qdisc_wait = true;
                    self.sched.schedule(ready, Event::PortWake(q as u32));
                }
                return;
            };
            let port = &mut self.net.ports[q];
            if pkt.is_data() {
                port.data_inside -= 1;
            }
            if !unshaped {
                port.shaper.charge(now, pkt.len);
            }
            port.tx_pkts += 1;
            port.tx_bytes += pkt.len as u64;
            let line = port.line;
            let wfree = pkt.skb & skb::WFREE != 0;
            self.pipe_push(line, pkt);
            if wfree {
                self.wfree_on_line(line);
            }
        }
    }

    #[cold]
    fn sample(&mut self) {
        let dt = to_secs(self.sample_interval);
        self.series_t.push(to_secs(self.now));
        for f in &mut self.flows {
            let sampled = f.sampled();
            let ser = &mut f.series;
            let n = self.series_t.len();
            // Removed, or not started yet (nothing to show until its start, as after a stop).
            if f.removed_at.is_some() || self.now <= f.start {
                for col in [
                    &mut ser.tput_mbps,
                    &mut ser.cwnd,
                    &mut ser.srtt_ms,
                    &mut ser.pacing_mbps,
                    &mut ser.ce_fed_back,
                ] {
                    col.resize(n, f64::NAN);
                }
                f.last_bytes = f.delivered;
                continue;
            }
            ser.tput_mbps
                .push((f.delivered - f.last_bytes) as f64 * 8.0 / dt / 1e6);
            f.last_bytes = f.delivered;
            let first = sampled.and_then(|s| self.conns[s].as_mut());
            if let Some(Conn::UdpPrague(c)) = first.as_ref().map(|s| &s.conn) {
                ser.cwnd.resize(n, f64::NAN);
                ser.ce_fed_back.resize(n, f64::NAN);
                ser.srtt_ms.push(c.0.srtt() as f64 / 1e6);
                ser.pacing_mbps.push(c.0.pacing_rate_bps() / 1e6);
            }
            if let Some(Conn::UdpPrague(c)) = first.map(|s| &mut s.conn) {
                f.udp_records.extend(c.1.take_records());
                continue;
            }
            let first = sampled.and_then(|s| self.conns[s].as_ref());
            let Some(Conn::Tcp(c)) = first.map(|s| &s.conn) else {
                for col in [
                    &mut ser.cwnd,
                    &mut ser.srtt_ms,
                    &mut ser.pacing_mbps,
                    &mut ser.ce_fed_back,
                ] {
                    col.resize(n, f64::NAN);
                }
                continue;
            };
            let s0 = &c.0;
            ser.cwnd.resize(n - 1, f64::NAN);
            ser.cwnd.push(s0.sk.snd_cwnd as f64);
            ser.srtt_ms.resize(n - 1, f64::NAN);
            ser.srtt_ms.push(s0.sk.srtt as f64 / 1e6);
            ser.pacing_mbps.resize(n - 1, f64::NAN);
            ser.pacing_mbps.push(s0.sk.pacing_rate as f64 * 8.0 / 1e6);
            ser.ce_fed_back.resize(n - 1, f64::NAN);
            ser.ce_fed_back.push(s0.sk.delivered_ce as f64);
            self.obs.clear();
            s0.cc.observe(&mut self.obs);
            for &(k, v) in &self.obs {
                let col = ser.extra.entry(k.to_string()).or_default();
                col.resize(n - 1, f64::NAN);
                col.push(v);
            }
        }
        for (p, tr) in self.net.ports.iter().zip(&mut self.qtrack) {
            let st = &p.qdisc.stats;
            let ser = &mut tr.series;
            ser.backlog_pkts.push(p.qdisc.len() as f64);
            ser.backlog_bytes.push(p.qdisc.bytes() as f64);
            let (sum, n) = st.sojourn_totals();
            let dn = n - tr.last_n;
            ser.sojourn_ms.push(if dn > 0 {
                (sum - tr.last_sum) as f64 / dn as f64 / 1e6
            } else {
                0.0
            });
            tr.last_sum = sum;
            tr.last_n = n;
            ser.drops.push(st.drops() as f64);
            ser.marks.push(st.marks() as f64);
            ser.tx_mbps
                .push((p.tx_bytes - tr.last_tx) as f64 * 8.0 / dt / 1e6);
            tr.last_tx = p.tx_bytes;
            for c in Class::ALL {
                let now = st.class_counts(c);
                let last = &mut tr.last_class[c as usize];
                let col = match c {
                    Class::L4s => &mut ser.l4s,
                    Class::Classic => &mut ser.classic,
                };
                col.pkts.push((now[0] - last[0]) as f64);
                col.marks.push((now[1] - last[1]) as f64);
                col.drops.push((now[2] - last[2]) as f64);
                *last = now;
            }
            self.obs.clear();
            p.qdisc.inner.observe(&mut self.obs);
            let len = ser.drops.len();
            for &(k, v) in &self.obs {
                let col = ser.extra.entry(k.to_string()).or_default();
                col.resize(len - 1, f64::NAN);
                col.push(v);
            }
        }
    }

    /// Packet conservation: every data packet sent or copied (netem `duplicate`) is delivered,
    /// dropped, or still inside a pipe or a qdisc; and every qdisc holds exactly what was
    /// enqueued less what left it, as its wrapper's own count of packets and bytes says.
    pub fn conservation_ok(&self) -> bool {
        let in_pipes: u64 = self.net.pipes.iter().map(|p| p.data_inside).sum();
        let in_ports: u64 = self.net.ports.iter().map(|p| p.data_inside).sum();
        let live = self.conns.iter().flatten();
        let sent: u64 = self.retired_sent + live.clone().map(|s| s.conn.data_sent()).sum::<u64>();
        let rcvd: u64 = self.retired_rcvd + live.map(|s| s.conn.data_received()).sum::<u64>();
        let qdiscs_ok = self.net.ports.iter().all(|p| {
            let st = &p.qdisc.stats;
            let q = &p.qdisc;
            st.enq_pkts == st.deq_pkts + st.drops() + q.inner.len() as u64
                && (q.len(), q.bytes()) == (q.inner.len(), q.inner.bytes())
        });
        sent == self.data_sent_net
            && rcvd == self.data_rcvd_net
            && sent + self.data_duplicated
                == rcvd + self.data_orphaned + self.data_dropped + in_pipes + in_ports
            && qdiscs_ok
    }

    pub fn events(&self) -> u64 {
        self.sched.events()
    }

    /// Connection slots allocated (live plus free): bounded by the connections open at
    /// once, not by the number that have finished.
    pub fn conn_slots(&self) -> usize {
        self.conns.len()
    }

    /// Connections open now.
    pub fn live_conns(&self) -> usize {
        self.conns.iter().flatten().count()
    }

    // ------------------------------------------------------------- changes while running

    fn flow_index(&self, name: &str) -> Result<usize, ScenarioError> {
        self.flows
            .iter()
            .position(|f| f.spec.name == name && f.removed_at.is_none())
            .ok_or_else(|| ScenarioError {
                field: "name".into(),
                message: format!("no running flow named {name:?}"),
            })
    }

    /// Add a flow (a scenario `[[flows]]` table) starting now, or at its `start` if later.
    /// Dumbbell: it gets its own sender and receiver hosts; tree: its pair's hosts.
    pub fn add_flow(&mut self, mut f: FlowSpec) -> Result<(), ScenarioError> {
        if self.flows.iter().any(|g| g.spec.name == f.name) {
            return Err(ScenarioError {
                field: "name".into(),
                message: format!(
                    "a flow named {:?} exists already (names stay taken after removal)",
                    f.name
                ),
            });
        }
        let mut probe = Scenario {
            name: String::new(),
            seed: self.seed,
            duration: f64::MAX,
            sample_interval: 1.0,
            topology: self.topology.clone(),
            flows: vec![f.clone()],
        };
        probe.flows[0].start = 0.0;
        probe.validate().map_err(|e| ScenarioError {
            field: e.field.trim_start_matches("flows[0].").to_string(),
            message: e.message,
        })?;
        let running: u64 = (self.flows.iter())
            .filter(|g| g.removed_at.is_none())
            .map(|g| g.spec.streams as u64)
            .sum();
        if running + f.streams as u64 > crate::scenario::MAX_STREAMS {
            return Err(ScenarioError {
                field: "streams".into(),
                message: format!(
                    "{} streams bring the running flows to {}; at most {} parallel streams in all",
                    f.streams,
                    running + f.streams as u64,
                    crate::scenario::MAX_STREAMS
                ),
            });
        }
        if self.flows.len() >= u16::MAX as usize {
            return Err(ScenarioError {
                field: "name".into(),
                message: "too many flows in one simulation".into(),
            });
        }
        let start = secs(f.start).max(self.now);
        f.start = to_secs(start);
        let (hosts, rtt) = match &self.topology {
            TopologySpec::Dumbbell {
                base_rtt, nic_rate, ..
            } => {
                let (s, r, rtt) =
                    topology::attach_dumbbell_host_pair(&mut self.net, &f, *base_rtt, *nic_rate);
                self.net.route_new_hosts(s.min(r));
                ((s, r), rtt)
            }
            TopologySpec::Graph(g) => {
                let (s, r) =
                    crate::net::graph::endpoints(g, &f, "").map_err(|e| ScenarioError {
                        field: e.field.trim_start_matches('.').to_string(),
                        message: e.message,
                    })?;
                let rtt = crate::net::graph::base_rtt(&self.net, s, r, f.dscp, Ecn::NotEct);
                let Some(rtt) = rtt else {
                    return Err(ScenarioError {
                        field: "to".into(),
                        message: format!("no route between {:?} and {:?}", f.from, f.to),
                    });
                };
                ((s, r), rtt)
            }
            TopologySpec::Tree { .. } => {
                let pair = f.pair.unwrap_or(0);
                let g = self
                    .flows
                    .iter()
                    .find(|g| g.spec.pair.unwrap_or(u32::MAX) == pair)
                    .ok_or_else(|| ScenarioError {
                        field: "pair".into(),
                        message: format!(
                            "pair {pair} has no hosts yet; a tree gains flows only on pairs in use"
                        ),
                    })?;
                (g.hosts, g.base_rtt)
            }
        };
        crate::net::graph::datagram_fits(&self.net, &f, hosts.0, hosts.1, "")?;
        self.claim_host_clocks(&f, hosts, "")?;
        self.start_flow(f, hosts, rtt, start);
        Ok(())
    }

    /// Stop a flow: its source starts nothing more and its connections close at once
    /// (packets in flight are discarded on arrival).
    pub fn remove_flow(&mut self, name: &str) -> Result<(), ScenarioError> {
        let fi = self.flow_index(name)?;
        self.stop_flow(fi);
        Ok(())
    }

    /// End flow `fi` now (its `stop` time, or [`World::remove_flow`]).
    #[cold]
    fn stop_flow(&mut self, fi: usize) {
        self.flows[fi].removed_at = Some(self.now);
        self.flows[fi].source = None;
        self.flows[fi].persistent = None;
        for s in 0..self.conns.len() {
            if let Some(st) = self.conns[s].as_mut() {
                if st.flow as usize == fi && !st.closing {
                    st.closing = true;
                    self.try_free(s);
                }
            }
        }
    }

    /// Change a flow for what it does from now on: `rate` (its source's offered load),
    /// `cc`, `tcp`, `receiver` (for connections opened from now on), `base_rtt` (its access
    /// link's delay, ms, for packets sent from now on). `patch` is a JSON object.
    pub fn set_flow(&mut self, name: &str, patch: &Value) -> Result<(), ScenarioError> {
        let fi = self.flow_index(name)?;
        let bad = |field: &str, message: String| ScenarioError {
            field: field.into(),
            message,
        };
        let obj = patch
            .as_object()
            .ok_or_else(|| bad("", "changes must be a table".into()))?;
        let mut spec = self.flows[fi].spec.clone();
        let mut rate = None;
        for (k, v) in obj {
            let parse = |v: &Value| -> Result<Value, ScenarioError> { Ok(v.clone()) };
            match k.as_str() {
                "cc" => {
                    spec.cc = serde_json::from_value::<CcSpec>(parse(v)?)
                        .map_err(|e| bad("cc", e.to_string()))?
                }
                "tcp" => {
                    spec.tcp =
                        serde_json::from_value(parse(v)?).map_err(|e| bad("tcp", e.to_string()))?
                }
                "receiver" => {
                    spec.receiver = serde_json::from_value(parse(v)?)
                        .map_err(|e| bad("receiver", e.to_string()))?
                }
                "base_rtt" => {
                    let ms = v
                        .as_f64()
                        .filter(|x| x.is_finite() && *x >= 0.0 && *x <= 10_000.0);
                    spec.base_rtt =
                        Some(ms.ok_or_else(|| {
                            bad("base_rtt", format!("must be 0..10000 ms, got {v}"))
                        })?);
                }
                "rate" => {
                    // Only the sources that draw arrivals at a rate can change it; elsewhere
                    // the change would be accepted and do nothing.
                    let fixed = match &spec.source {
                        SourceSpec::Web(w) if w.trace.is_some() => {
                            Some("a web source with a trace")
                        }
                        SourceSpec::Web(_)
                        | SourceSpec::Messages(_)
                        | SourceSpec::Chunks(_)
                        | SourceSpec::Udp(_) => None,
                        SourceSpec::Bulk {} => Some("a bulk source"),
                        SourceSpec::UdpPrague(_) => {
                            Some("a udp_prague source (its controller sets its rate)")
                        }
                    };
                    if let Some(what) = fixed {
                        let have = "web, messages, chunks and udp sources have";
                        return Err(bad(
                            "rate",
                            format!("{what} has no rate to change ({have})"),
                        ));
                    }
                    let r = v.as_f64().filter(|x| x.is_finite() && *x >= 0.0);
                    let r =
                        r.ok_or_else(|| bad("rate", format!("must be zero or positive, got {v}")))?;
                    if let SourceSpec::Udp(u) = &mut spec.source {
                        u.rate_mbps = r;
                        u.validate().map_err(|(_, m)| bad("rate", m))?;
                    }
                    rate = Some(r);
                }
                _ => {
                    return Err(bad(
                        k,
                        "cannot be changed while running (cc, tcp, receiver, base_rtt, rate can)"
                            .into(),
                    ))
                }
            }
        }
        spec.validate_source("")
            .map_err(|e| bad(e.field.trim_start_matches('.'), e.message))?;
        if let Some(ms) = spec.base_rtt {
            if matches!(self.topology, TopologySpec::Dumbbell { .. }) {
                topology::set_host_rtt(&mut self.net, self.flows[fi].hosts.0, millis(ms));
                self.flows[fi].base_rtt = millis(ms);
            }
        }
        self.flows[fi].spec = spec;
        if let Some(r) = rate {
            let now = self.now;
            let f = &mut self.flows[fi];
            if let Some(src) = f.source.as_mut() {
                src.set_rate(r, now, &mut f.rng);
            }
            for s in f.streams.clone() {
                if let Some(Conn::Udp(c)) = self.conns[s].as_mut().map(|st| &mut st.conn) {
                    c.0.set_rate(r, now);
                    self.arm(s, 0);
                }
            }
            self.schedule_source(fi);
        }
        Ok(())
    }

    /// Change a shaped link (`name`; None: the bottleneck of a dumbbell): its `rate` (Mbit/s,
    /// the HTB class rate; the bucket starts full) and/or its `qdisc` (`tc qdisc replace`:
    /// the old qdisc's packets are dropped, see [`qdisc::Qdisc::replace`]).
    pub fn set_link(
        &mut self,
        name: Option<&str>,
        rate: Option<f64>,
        qdisc_spec: Option<qdisc::QdiscSpec>,
    ) -> Result<(), ScenarioError> {
        let name = name.unwrap_or("bottleneck");
        let q = self.net.port_index(name).ok_or_else(|| ScenarioError {
            field: "link".into(),
            message: format!("no shaped link named {name:?}"),
        })?;
        if let Some(r) = rate {
            if !(r.is_finite() && r > 0.0 && r <= 1e6) {
                return Err(ScenarioError {
                    field: "rate".into(),
                    message: format!("must be a positive rate up to 1e6 Mbit/s, got {r}"),
                });
            }
            // As a scenario's shaped link: no faster than its line.
            let line = self.net.pipes[self.net.ports[q].line as usize].line_rate();
            crate::scenario::check_shaping_rate("rate", r, line.map(|l| l.as_mbps()))?;
        }
        if let Some(spec) = &qdisc_spec {
            spec.validate().map_err(|(f, m)| ScenarioError {
                field: format!("qdisc.{f}"),
                message: m,
            })?;
        }
        let now = self.now;
        if let Some(r) = rate {
            let old = self.net.ports[q].shaper.rate().bps as f64;
            let (bits, since) = self.reshaped.entry(q).or_insert((0.0, 0));
            *bits += old * to_secs(now - *since);
            *since = now;
            let rate = Rate::mbps(r);
            self.net.ports[q].shaper = Shaper::new(rate, default_burst(rate));
        }
        if let Some(spec) = qdisc_spec {
            let idx = self.next_conn_id ^ (q as u64) << 40;
            let mut inner = qdisc::build(&spec, Rng::new(self.seed, stream::QDISC + 0x1000 + idx));
            inner.start(now, self.node_tick_phase(self.net.port_node(q as u32)));
            let mtu = self.net.pipes[self.net.ports[q].line as usize].mtu;
            if mtu != hdr::MTU {
                inner.set_dev_mtu(mtu + hdr::ETH);
            }
            let mut drops = Vec::new();
            self.net.ports[q].qdisc.replace(inner, now, &mut drops);
            for d in &drops {
                if d.pkt.is_data() {
                    self.net.ports[q].data_inside -= 1;
                }
                self.dropped(&d.pkt);
            }
            let t = self.net.ports[q].qdisc.inner.next_timer();
            if t != NEVER {
                self.sched.schedule(t.max(now), Event::QdiscTimer(q as u32));
            }
        }
        self.net.ports[q].wake_at = NEVER;
        self.port_send(q);
        Ok(())
    }

    /// What happened since the previous drain: samples, completed transfers and the
    /// per-flow queue-delay distributions at each qdisc (see the Python `Simulation`).
    pub fn drain(&mut self) -> Value {
        let from = self.drained.samples;
        let n = self.series_t.len();
        let slice = |v: &Vec<f64>| v.get(from..).map_or_else(Vec::new, |s| s.to_vec());
        let mut flows = serde_json::Map::new();
        let mut udp = serde_json::Map::new();
        for f in &self.flows {
            if f.removed_at
                .is_some_and(|t| to_secs(t) < self.series_t.get(from).copied().unwrap_or(f64::MAX))
            {
                continue;
            }
            let s = &f.series;
            flows.insert(
                f.spec.name.clone(),
                json!({"tput_mbps": slice(&s.tput_mbps), "cwnd": slice(&s.cwnd),
                       "srtt_ms": slice(&s.srtt_ms), "kind": f.spec.source.kind()}),
            );
            if !f.udp_records.is_empty() {
                let k = self.drained.udp.get(&f.spec.name).copied().unwrap_or(0);
                udp.insert(f.spec.name.clone(), json!(f.udp_records[k..]));
            }
        }
        let mut qdiscs = serde_json::Map::new();
        for (p, tr) in self.net.ports.iter().zip(&mut self.qtrack) {
            let s = &tr.series;
            let mut hists = serde_json::Map::new();
            let st = &p.qdisc.stats;
            tr.drained_groups
                .resize_with(st.n_groups(), Default::default);
            for g in 0..st.n_groups() {
                if st.group_sojourn_count(g) == tr.drained_groups[g].count() {
                    continue; // nothing new (a removed flow's, say): no histograms merged
                }
                let cs = st.group(g);
                let h = cs.sojourn.since(&tr.drained_groups[g]);
                if h.count() > 0 {
                    hists.insert(
                        self.flows[g].spec.name.clone(),
                        json!({"n": h.count(), "mean_ms": h.mean() / 1e6,
                               "cdf_ms": h.cdf().iter().map(|v| v / 1e6).collect::<Vec<_>>()}),
                    );
                }
                tr.drained_groups[g] = cs.sojourn;
            }
            let rate = p.shaper.rate().bps as f64;
            qdiscs.insert(
                p.name.clone(),
                json!({"kind": p.qdisc.inner.kind(), "rate_mbps": rate / 1e6,
                       "backlog_pkts": slice(&s.backlog_pkts), "sojourn_ms": slice(&s.sojourn_ms),
                       "tx_mbps": slice(&s.tx_mbps),
                       "classes": {"l4s": {"pkts": slice(&s.l4s.pkts), "marks": slice(&s.l4s.marks), "drops": slice(&s.l4s.drops)},
                                   "classic": {"pkts": slice(&s.classic.pkts), "marks": slice(&s.classic.marks), "drops": slice(&s.classic.drops)}},
                       "delay": hists}),
            );
        }
        let recs = &self.records[self.drained.records..];
        let out = json!({
            "now": to_secs(self.now),
            "t": self.series_t[from.min(n)..].to_vec(),
            "flows": flows,
            "qdiscs": qdiscs,
            "connections": recs,
            "udp_prague": udp,
        });
        self.drained.samples = n;
        self.drained.records = self.records.len();
        for f in &self.flows {
            self.drained
                .udp
                .insert(f.spec.name.clone(), f.udp_records.len());
        }
        out
    }

    /// Forget what [`World::drain`] has returned: time series, completed-transfer records and
    /// UDP Prague records, so a simulation that runs indefinitely (the live demo) keeps its
    /// memory flat. Totals, histograms and per-flow counters stay whole-run; [`World::result`]
    /// then holds only the samples since.
    pub fn forget_drained(&mut self) {
        self.series_t.clear();
        for f in &mut self.flows {
            f.series.clear();
            f.udp_records.clear();
        }
        for tr in &mut self.qtrack {
            tr.series.clear();
        }
        self.records.clear();
        self.drained.samples = 0;
        self.drained.records = 0;
        self.drained.udp.clear();
    }

    /// The results so far (the whole run once it reached its end).
    pub fn result(&self, name: &str, wall: f64) -> RunResult {
        results::collect(self, name, wall)
    }
}

/// The tick phase of host `node`'s jiffies at `hz`: as its TCP settings fix it, or drawn from
/// the run's seed for the node, so every connection of a host shares its clock.
fn tick_phase(seed: u64, node: u32, hz: u32, fixed_us: Option<f64>) -> SimDuration {
    let jiffy = SEC / hz.max(1) as u64;
    match fixed_us {
        Some(us) => (us * 1000.0) as u64 % jiffy,
        None => (Rng::new(seed, stream::TICK + node as u64).uniform() * jiffy as f64) as u64,
    }
}

fn new_track(p: &crate::net::Port) -> QdiscTrack {
    QdiscTrack {
        last_sum: 0,
        last_n: 0,
        last_class: [[0; 3]; 2],
        last_tx: 0,
        series: QdiscSeries {
            name: p.name.clone(),
            ..Default::default()
        },
        drained_groups: Vec::new(),
    }
}

/// `tcp_init_metrics` for a data sender whose SYN/ACK arrives: the cache's entry for its hosts.
#[cold]
fn init_metrics(conn: &mut Conn, cache: &MetricsCache) {
    if let Conn::Tcp(c) = conn {
        let (local, remote) = c.0.hosts();
        c.0.set_cached_metrics(cache.get(local, remote));
    }
}

/// ECN mode and data codepoint names of a connection, once it is established.
fn ecn_of(c: &Conn) -> Option<(String, String)> {
    match c {
        Conn::Tcp(c) if c.0.stats.established_at != NEVER => Some((
            serde_json::to_value(c.0.stats.ecn_mode)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            c.0.stats.data_ecn.name().to_string(),
        )),
        _ => None,
    }
}

/// Run a validated scenario to completion.
pub fn run(sc: &Scenario) -> Result<RunResult, ScenarioError> {
    let t0 = std::time::Instant::now();
    let mut w = World::new(sc)?;
    w.run();
    Ok(w.result(&sc.name, t0.elapsed().as_secs_f64()))
}

/// Parse, validate and run a JSON scenario; returns the JSON result.
pub fn run_json(json: &str) -> Result<String, ScenarioError> {
    let sc = Scenario::from_json(json)?;
    let r = run(&sc)?;
    Ok(serde_json::to_string(&r).expect("results serialize"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_tick_phase_is_its_own_and_the_same_for_all_its_connections() {
        // Drawn from the run's seed per node: the same for every call (every connection of
        // the host, the qdiscs of the node), different between nodes and between seeds,
        // within one jiffy; a phase the scenario sets wins, modulo one jiffy.
        let jiffy = 4 * crate::time::MS;
        assert_eq!(tick_phase(7, 3, 250, None), tick_phase(7, 3, 250, None));
        let phases: Vec<SimDuration> = (0..20).map(|n| tick_phase(7, n, 250, None)).collect();
        assert!(phases.iter().all(|&p| p < jiffy));
        assert!(phases.windows(2).all(|w| w[0] != w[1]));
        assert_ne!(tick_phase(7, 3, 250, None), tick_phase(8, 3, 250, None));
        assert_eq!(tick_phase(7, 3, 250, Some(1500.0)), 1_500_000);
        assert_eq!(tick_phase(7, 3, 250, Some(5000.0)), 1_000_000);
        // At HZ 1000 the same draw within a 1 ms jiffy.
        assert!(tick_phase(7, 3, 1000, None) < crate::time::MS);
    }

    #[test]
    fn finished_connections_leave_their_rtt_for_the_next_between_the_same_hosts() {
        // 50 web transfers of 10 KB over a 20 ms idle path: each ends well and updates the
        // cache of its (data sender, client) pair, which then holds about one base RTT.
        let sc = Scenario::from_json(
            &json!({
                "duration": 2.0, "seed": 1,
                "topology": {"kind": "dumbbell", "base_rtt": 20,
                             "bottleneck": {"rate": 100, "qdisc": {"kind": "pfifo", "limit": 1000}}},
                "flows": [{"name": "w", "cc": {"name": "cubic"},
                           "source": {"kind": "web", "rate": 25, "size": {"dist": "fixed", "bytes": 10000}}}],
            })
            .to_string(),
        )
        .unwrap();
        let mut w = World::new(&sc).unwrap();
        w.run();
        assert!(w.records.len() > 20);
        let pairs: Vec<_> = w.tcp_metrics.pairs().collect();
        assert_eq!(pairs.len(), 1);
        let rtt_ms = pairs[0].1.rtt_us8 as f64 / 8000.0;
        assert!((20.0..25.0).contains(&rtt_ms), "{rtt_ms}");
    }
}
