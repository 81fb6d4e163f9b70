//! Running a scenario: build the topology and endpoints, run the engine to the end time,
//! collect the results.

use std::collections::BTreeMap;

use crate::cc::{self, CcSpec, CongestionControl};
use crate::engine::{Event, Scheduler};
use crate::metrics::results::{
    jain_index, FlowResult, FlowSeries, LinkResult, QdiscResult, QdiscSeries, RunResult, Series,
};
use crate::net::{topology, Egress, Network, NodeKind};
use crate::packet::{Dir, Ecn, Packet};
use crate::qdisc::{DropReason, QueueDisc};
use crate::rng::{stream, Rng};
use crate::scenario::{Scenario, ScenarioError};
use crate::tcp::{ConnParams, TcpReceiver, TcpSender};
use crate::time::{secs, to_secs, SimTime, NEVER, SEC};

/// Version of the model, recorded with every result (part of the results-store key).
pub const MODEL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One TCP connection (a stream of a flow): its two endpoints and their pending timers.
struct Stream {
    sender: TcpSender,
    receiver: TcpReceiver,
    /// Scheduled wake-up of the sender [0] and receiver [1] (NEVER: none pending).
    armed: [SimTime; 2],
    data_dropped: u64,
}

/// Per-flow bookkeeping for metrics.
struct FlowState {
    streams: Vec<usize>,
    start: SimTime,
    base_rtt: u64,
    rtt_samples: Vec<f64>,
    last_bytes: u64,
    series: FlowSeries,
}

struct QdiscTrack {
    last_sum: u128,
    last_n: u64,
    series: QdiscSeries,
}

/// The simulated world: network, endpoints, scheduler and collectors.
pub struct World {
    now: SimTime,
    end: SimTime,
    sched: Scheduler,
    net: Network,
    streams: Vec<Stream>,
    flows: Vec<FlowState>,
    qtrack: Vec<QdiscTrack>,
    sample_interval: SimTime,
    series_t: Vec<f64>,
    bufs: Vec<Vec<Packet>>,
    drops: Vec<crate::qdisc::Drop>,
    obs: Vec<(&'static str, f64)>,
    data_sent_net: u64,
    data_rcvd_net: u64,
    data_dropped: u64,
}

impl World {
    pub fn new(sc: &Scenario) -> Result<World, ScenarioError> {
        sc.validate()?;
        let built = topology::build(&sc.topology, &sc.flows, sc.seed)?;
        let mut streams = Vec::new();
        let mut flows = Vec::new();
        let mut sched = Scheduler::new();
        for (fi, f) in sc.flows.iter().enumerate() {
            let (snd, rcv) = built.hosts[fi];
            let mut ids = Vec::new();
            let rcv_cc_spec = f
                .receiver
                .cc
                .clone()
                .unwrap_or_else(|| CcSpec::Cubic(Default::default()));
            for _ in 0..f.streams {
                let id = streams.len() as u32;
                let mut hrng = Rng::new(sc.seed, stream::TCP + 2 * id as u64);
                let params = ConnParams {
                    flow: id,
                    sender: snd,
                    receiver: rcv,
                    hash_fwd: hrng.next_u32(),
                    hash_rev: hrng.next_u32(),
                    size: f.size,
                };
                let cc = cc::build(&f.cc, Rng::new(sc.seed, stream::CC + 2 * id as u64));
                let rcc = cc::build(
                    &rcv_cc_spec,
                    Rng::new(sc.seed, stream::CC + 2 * id as u64 + 1),
                );
                let sender = TcpSender::new(
                    &params,
                    &f.tcp,
                    cc,
                    Rng::new(sc.seed, stream::TCP + 2 * id as u64 + 1),
                );
                let receiver = TcpReceiver::new(
                    &params,
                    &f.receiver.tcp,
                    &rcc,
                    Rng::new(sc.seed, stream::TCP + (1 << 31) + id as u64),
                );
                streams.push(Stream {
                    sender,
                    receiver,
                    armed: [NEVER; 2],
                    data_dropped: 0,
                });
                sched.schedule(secs(f.start), Event::StreamStart(id));
                ids.push(id as usize);
            }
            let start = secs(f.start);
            sched.schedule(start + SEC, Event::RttSample(fi as u32));
            flows.push(FlowState {
                streams: ids,
                start,
                base_rtt: built.base_rtt[fi],
                rtt_samples: Vec::new(),
                last_bytes: 0,
                series: FlowSeries {
                    name: f.name.clone(),
                    ..Default::default()
                },
            });
        }
        let net = built.net;
        let qtrack = net
            .ports
            .iter()
            .map(|p| QdiscTrack {
                last_sum: 0,
                last_n: 0,
                series: QdiscSeries {
                    name: p.name.clone(),
                    ..Default::default()
                },
            })
            .collect();
        for (i, p) in net.ports.iter().enumerate() {
            let t = p.qdisc.inner.next_timer();
            if t != NEVER {
                sched.schedule(t, Event::QdiscTimer(i as u32));
            }
        }
        let sample_interval = secs(sc.sample_interval).max(1);
        sched.schedule(sample_interval, Event::Sample);
        Ok(World {
            now: 0,
            end: secs(sc.duration),
            sched,
            net,
            streams,
            flows,
            qtrack,
            sample_interval,
            series_t: Vec::new(),
            bufs: Vec::new(),
            drops: Vec::with_capacity(64),
            obs: Vec::new(),
            data_sent_net: 0,
            data_rcvd_net: 0,
            data_dropped: 0,
        })
    }

    /// Run until the end time.
    pub fn run(&mut self) {
        while let Some(t) = self.sched.peek_time() {
            if t > self.end {
                break;
            }
            let (t, ev) = self.sched.pop().unwrap();
            self.now = t;
            self.handle(ev);
        }
        self.now = self.end;
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
                if self.streams[s].armed[side] != self.now {
                    return; // stale
                }
                self.streams[s].armed[side] = NEVER;
                let mut out = self.bufs.pop().unwrap_or_default();
                let st = &mut self.streams[s];
                if side == 0 {
                    st.sender.on_timer(self.now, &mut out);
                } else {
                    st.receiver.on_timer(self.now, &mut out);
                }
                self.emit(&mut out);
                self.bufs.push(out);
                self.arm(s, side);
            }
            Event::StreamStart(id) => {
                let s = id as usize;
                let mut out = self.bufs.pop().unwrap_or_default();
                self.streams[s].sender.connect(self.now, &mut out);
                self.emit(&mut out);
                self.bufs.push(out);
                self.arm(s, 0);
            }
            Event::RttSample(fi) => {
                let f = &mut self.flows[fi as usize];
                let srtt = self.streams[f.streams[0]].sender.sk.srtt;
                if srtt > 0 {
                    f.rtt_samples.push(srtt as f64 / 1e6);
                }
                self.sched.schedule(self.now + SEC, Event::RttSample(fi));
            }
            Event::Sample => {
                self.sample();
                self.sched
                    .schedule(self.now + self.sample_interval, Event::Sample);
            }
        }
    }

    /// Ask an endpoint when it next needs to run and schedule that if it is earlier than
    /// what is already pending.
    fn arm(&mut self, s: usize, side: usize) {
        let st = &mut self.streams[s];
        let t = if side == 0 {
            st.sender.next_timer()
        } else {
            st.receiver.next_timer()
        };
        if t < st.armed[side] {
            let t = t.max(self.now);
            st.armed[side] = t;
            self.sched
                .schedule(t, Event::Endpoint((2 * s + side) as u32));
        }
    }

    /// Send the packets an endpoint produced, in order, from its host.
    fn emit(&mut self, out: &mut Vec<Packet>) {
        for pkt in out.drain(..) {
            if pkt.is_data() && pkt.dir == Dir::Fwd {
                self.data_sent_net += 1;
            }
            self.forward(pkt.src, pkt);
        }
    }

    /// A packet arrives at `node`.
    fn arrive(&mut self, node: u32, pkt: Packet) {
        if self.net.nodes[node as usize].kind == NodeKind::Router || pkt.dst != node {
            self.forward(node, pkt);
            return;
        }
        let s = pkt.flow as usize;
        let mut out = self.bufs.pop().unwrap_or_default();
        let side = match pkt.dir {
            Dir::Fwd => {
                if pkt.is_data() {
                    self.data_rcvd_net += 1;
                }
                self.streams[s].receiver.on_packet(&pkt, self.now, &mut out);
                1
            }
            Dir::Rev => {
                self.streams[s].sender.on_packet(&pkt, self.now, &mut out);
                0
            }
        };
        self.emit(&mut out);
        self.bufs.push(out);
        self.arm(s, side);
        // Sending may have changed the other endpoint's timers only through packets, which
        // arrive later; the ACKing side's own timers are re-armed above.
    }

    /// Send `pkt` out of `node` toward its destination.
    fn forward(&mut self, node: u32, pkt: Packet) {
        let eg = self.net.nodes[node as usize].routes[pkt.dst as usize]
            .unwrap_or_else(|| panic!("no route from node {node} to {}", pkt.dst));
        match eg {
            Egress::Pipe(p) => self.pipe_push(p, pkt),
            Egress::Port(q) => {
                let now = self.now;
                let port = &mut self.net.ports[q as usize];
                if pkt.is_data() {
                    port.data_inside += 1;
                }
                let dropped = port.qdisc.enqueue(pkt, now);
                for d in dropped {
                    if d.pkt.is_data() {
                        port.data_inside -= 1;
                        self.data_dropped += 1;
                        self.streams[d.pkt.flow as usize].data_dropped += 1;
                    }
                }
                if port.wake_at == NEVER {
                    self.port_send(q as usize);
                }
            }
        }
    }

    fn pipe_push(&mut self, p: u32, pkt: Packet) {
        let pipe = &mut self.net.pipes[p as usize];
        if pipe.is_instant() {
            pipe.count_instant(&pkt);
            let to = pipe.to;
            self.arrive(to, pkt);
        } else if let Some(t) = pipe.push(pkt, self.now) {
            self.sched.schedule(t, Event::PipeExit(p));
        }
    }

    /// Dequeue and transmit from a shaped port as long as the HTB class may send now; then
    /// schedule the next wake-up if packets remain.
    fn port_send(&mut self, q: usize) {
        loop {
            let now = self.now;
            let port = &mut self.net.ports[q];
            if port.qdisc.inner.is_empty() {
                return;
            }
            let ready = port.shaper.ready_at(now);
            if ready > now {
                port.wake_at = ready;
                self.sched.schedule(ready, Event::PortWake(q as u32));
                return;
            }
            self.drops.clear();
            let pkt = port.qdisc.dequeue(now, &mut self.drops);
            for d in &self.drops {
                if d.pkt.is_data() {
                    port.data_inside -= 1;
                    self.data_dropped += 1;
                    self.streams[d.pkt.flow as usize].data_dropped += 1;
                }
            }
            let Some(pkt) = pkt else { return };
            if pkt.is_data() {
                port.data_inside -= 1;
            }
            port.shaper.charge(now, pkt.len);
            port.tx_pkts += 1;
            port.tx_bytes += pkt.len as u64;
            let line = port.line;
            self.pipe_push(line, pkt);
        }
    }

    fn sample(&mut self) {
        let dt = to_secs(self.sample_interval);
        self.series_t.push(to_secs(self.now));
        for f in &mut self.flows {
            let bytes: u64 = f
                .streams
                .iter()
                .map(|&s| self.streams[s].receiver.stats.bytes_delivered)
                .sum();
            let s0 = &self.streams[f.streams[0]].sender;
            let ser = &mut f.series;
            ser.tput_mbps
                .push((bytes - f.last_bytes) as f64 * 8.0 / dt / 1e6);
            f.last_bytes = bytes;
            ser.cwnd.push(s0.sk.snd_cwnd as f64);
            ser.srtt_ms.push(s0.sk.srtt as f64 / 1e6);
            ser.pacing_mbps.push(s0.sk.pacing_rate as f64 * 8.0 / 1e6);
            ser.ce_fed_back.push(s0.sk.delivered_ce as f64);
            self.obs.clear();
            s0.cc.observe(&mut self.obs);
            let n = ser.tput_mbps.len();
            for &(k, v) in &self.obs {
                let col = ser.extra.entry(k.to_string()).or_default();
                col.resize(n - 1, f64::NAN);
                col.push(v);
            }
        }
        for (p, tr) in self.net.ports.iter().zip(&mut self.qtrack) {
            let st = &p.qdisc.stats;
            let ser = &mut tr.series;
            ser.backlog_pkts.push(p.qdisc.inner.len() as f64);
            ser.backlog_bytes.push(p.qdisc.inner.bytes() as f64);
            let (sum, n) = (st.sojourn.sum(), st.sojourn.count());
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

    /// Packet conservation: every data packet sent is delivered, dropped, or still inside a
    /// pipe or a qdisc; and every qdisc holds exactly what was enqueued less what left it.
    pub fn conservation_ok(&self) -> bool {
        let in_pipes: u64 = self.net.pipes.iter().map(|p| p.data_inside).sum();
        let in_ports: u64 = self.net.ports.iter().map(|p| p.data_inside).sum();
        let sent: u64 = self
            .streams
            .iter()
            .map(|s| s.sender.stats.data_pkts_sent)
            .sum();
        let rcvd: u64 = self
            .streams
            .iter()
            .map(|s| s.receiver.stats.data_pkts_received)
            .sum();
        let qdiscs_ok = self.net.ports.iter().all(|p| {
            let st = &p.qdisc.stats;
            st.enq_pkts == st.deq_pkts + st.drops() + p.qdisc.inner.len() as u64
        });
        sent == self.data_sent_net
            && rcvd == self.data_rcvd_net
            && sent == rcvd + self.data_dropped + in_pipes + in_ports
            && qdiscs_ok
    }

    pub fn events(&self) -> u64 {
        self.sched.events()
    }

    fn results(self, sc: &Scenario, wall: f64) -> RunResult {
        let dur = to_secs(self.end);
        let mut flows = Vec::new();
        let mut rtt_samples = BTreeMap::new();
        for (fi, f) in self.flows.iter().enumerate() {
            let spec = &sc.flows[fi];
            let ss: Vec<&Stream> = f.streams.iter().map(|&s| &self.streams[s]).collect();
            let s0 = ss[0];
            let bytes: u64 = ss.iter().map(|s| s.receiver.stats.bytes_delivered).sum();
            let completion = if spec.size.is_some() {
                let done = ss
                    .iter()
                    .map(|s| s.sender.stats.completed_at)
                    .max()
                    .unwrap_or(NEVER);
                (done != NEVER).then(|| to_secs(done - f.start))
            } else {
                None
            };
            let span = completion.unwrap_or(dur - to_secs(f.start));
            let mean_srtt = if f.rtt_samples.is_empty() {
                f64::NAN
            } else {
                f.rtt_samples.iter().sum::<f64>() / f.rtt_samples.len() as f64
            };
            let base = f.base_rtt as f64 / 1e6;
            let sum = |g: &dyn Fn(&Stream) -> u64| ss.iter().map(|s| g(s)).sum::<u64>();
            flows.push(FlowResult {
                name: spec.name.clone(),
                cc: s0.sender.cc.name().to_string(),
                streams: spec.streams,
                ecn_mode: serde_json::to_value(s0.sender.stats.ecn_mode)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                data_ecn: s0.sender.stats.data_ecn.name().to_string(),
                goodput_mbps: bytes as f64 * 8.0 / span / 1e6,
                bytes_delivered: bytes,
                mean_srtt_ms: mean_srtt,
                qdelay_ms: mean_srtt - base,
                base_rtt_ms: base,
                retrans: sum(&|s| s.sender.stats.retrans),
                rto_count: sum(&|s| s.sender.stats.rto_count),
                fast_recoveries: sum(&|s| s.sender.stats.fast_recoveries),
                cwr_count: sum(&|s| s.sender.stats.cwr_count),
                ce_received: sum(&|s| s.receiver.stats.ce_received),
                ce_fed_back: sum(&|s| s.sender.sk.delivered_ce),
                data_pkts_sent: sum(&|s| s.sender.stats.data_pkts_sent),
                pkts_dropped: sum(&|s| s.data_dropped),
                start_s: to_secs(f.start),
                completion_s: completion,
            });
            rtt_samples.insert(spec.name.clone(), f.rtt_samples.clone());
        }
        let mut qdiscs = Vec::new();
        let mut links = Vec::new();
        let mut bottleneck_pkts = 0;
        for p in &self.net.ports {
            let st = &p.qdisc.stats;
            let ms = |ns: f64| ns / 1e6;
            let mut extra = BTreeMap::new();
            let mut obs = Vec::new();
            p.qdisc.inner.observe(&mut obs);
            for (k, v) in obs {
                extra.insert(k.to_string(), v);
            }
            qdiscs.push(QdiscResult {
                name: p.name.clone(),
                kind: p.qdisc.inner.kind().to_string(),
                enq_pkts: st.enq_pkts,
                deq_pkts: st.deq_pkts,
                drops: st.drops(),
                drops_by_reason: DropReason::ALL
                    .iter()
                    .map(|r| (r.name().to_string(), st.drops_by_reason[r.index()]))
                    .collect(),
                drops_by_ecn: Ecn::ALL
                    .iter()
                    .map(|e| (e.name().to_string(), st.drops_by_ecn[e.index()]))
                    .collect(),
                marks: st.marks(),
                marks_by_ecn: Ecn::ALL
                    .iter()
                    .map(|e| (e.name().to_string(), st.marks_by_ecn[e.index()]))
                    .collect(),
                sojourn_mean_ms: ms(st.sojourn.mean()),
                sojourn_p50_ms: ms(st.sojourn.quantile(0.5)),
                sojourn_p90_ms: ms(st.sojourn.quantile(0.9)),
                sojourn_p99_ms: ms(st.sojourn.quantile(0.99)),
                sojourn_p999_ms: ms(st.sojourn.quantile(0.999)),
                max_backlog_pkts: st.max_len as u64,
                max_backlog_bytes: st.max_bytes,
                extra,
            });
            let rate = p.shaper.rate.bps as f64;
            links.push(LinkResult {
                name: p.name.clone(),
                rate_mbps: rate / 1e6,
                utilisation: p.tx_bytes as f64 * 8.0 / (rate * dur),
                tx_pkts: p.tx_pkts,
                tx_bytes: p.tx_bytes,
            });
            if p.bottleneck {
                bottleneck_pkts += p.tx_pkts;
            }
        }
        let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_mbps).collect();
        let conservation_ok = self.conservation_ok();
        let events = self.events();
        let mut fseries: Vec<FlowSeries> = Vec::new();
        let n = self.series_t.len();
        for f in self.flows {
            let mut s = f.series;
            for col in s.extra.values_mut() {
                col.resize(n, f64::NAN);
            }
            fseries.push(s);
        }
        let qseries = self
            .qtrack
            .into_iter()
            .map(|t| {
                let mut s = t.series;
                for col in s.extra.values_mut() {
                    col.resize(n, f64::NAN);
                }
                s
            })
            .collect();
        RunResult {
            name: sc.name.clone(),
            seed: sc.seed,
            model_version: MODEL_VERSION.to_string(),
            sim_seconds: dur,
            wall_seconds: wall,
            events,
            bottleneck_pkts,
            jain_index: jain_index(&goodputs),
            flows,
            qdiscs,
            links,
            rtt_samples,
            series: Series {
                t: self.series_t,
                flows: fseries,
                qdiscs: qseries,
            },
            conservation_ok,
        }
    }
}

/// Run a validated scenario to completion.
pub fn run(sc: &Scenario) -> Result<RunResult, ScenarioError> {
    let t0 = std::time::Instant::now();
    let mut w = World::new(sc)?;
    w.run();
    Ok(w.results(sc, t0.elapsed().as_secs_f64()))
}

/// Parse, validate and run a JSON scenario; returns the JSON result.
pub fn run_json(json: &str) -> Result<String, ScenarioError> {
    let sc = Scenario::from_json(json)?;
    let r = run(&sc)?;
    Ok(serde_json::to_string(&r).expect("results serialize"))
}
