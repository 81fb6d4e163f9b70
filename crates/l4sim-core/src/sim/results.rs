//! Turning the world's state into a [`RunResult`].

use std::collections::BTreeMap;

use super::conn::Conn;
use super::{ecn_of, Totals, World};
use crate::metrics::results::{
    jain_index, ClassResult, FlowResult, FlowSeries, LinkResult, QdiscResult, RunResult, Series,
};
use crate::packet::Ecn;
use crate::qdisc::{Class, ClassStats, DropReason, Qdisc, QueueDisc};
use crate::time::{to_secs, NEVER};
use crate::traffic::SourceSpec;

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn class_result(qdisc: &str, kind: &str, name: &str, cs: &ClassStats) -> ClassResult {
    let h = &cs.sojourn;
    ClassResult {
        qdisc: qdisc.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        enq_pkts: cs.enq_pkts,
        deq_pkts: cs.deq_pkts,
        marks: cs.marks,
        drops: cs.drops,
        mark_prob: cs.marks as f64 / (cs.deq_pkts as f64).max(1.0),
        drop_prob: cs.drops as f64 / (cs.enq_pkts as f64).max(1.0),
        sojourn_mean_ms: ms(h.mean()),
        sojourn_p50_ms: ms(h.quantile(0.5)),
        sojourn_p90_ms: ms(h.quantile(0.9)),
        sojourn_p99_ms: ms(h.quantile(0.99)),
        sojourn_p999_ms: ms(h.quantile(0.999)),
        cdf_ms: h.cdf().into_iter().map(ms).collect(),
    }
}

/// Counters and queue delay of one qdisc (a port's root or a class's child).
fn qdisc_result(name: &str, q: &Qdisc) -> QdiscResult {
    let st = &q.stats;
    let sojourn = st.sojourn();
    let mut extra = BTreeMap::new();
    let mut obs = Vec::new();
    q.inner.observe(&mut obs);
    for (k, v) in obs {
        extra.insert(k.to_string(), v);
    }
    QdiscResult {
        name: name.to_string(),
        kind: q.inner.kind().to_string(),
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
        sojourn_mean_ms: ms(sojourn.mean()),
        sojourn_p50_ms: ms(sojourn.quantile(0.5)),
        sojourn_p90_ms: ms(sojourn.quantile(0.9)),
        sojourn_p99_ms: ms(sojourn.quantile(0.99)),
        sojourn_p999_ms: ms(sojourn.quantile(0.999)),
        max_backlog_pkts: st.max_len as u64,
        max_backlog_bytes: st.max_bytes,
        extra,
    }
}

/// The classes below `q`, depth first, named by their path from the port: first those without
/// a qdisc of their own (HTB's inner classes: counters only), then each class's qdisc with the
/// class's own counters added to its `extra`.
fn class_tree(path: &str, q: &Qdisc, out: &mut Vec<QdiscResult>) {
    let counters = q.inner.class_counters();
    for c in counters.iter().filter(|c| !c.has_qdisc) {
        out.push(class_only_result(
            &format!("{path}/{}", c.name),
            q,
            &c.values,
        ));
    }
    for (name, c) in q.inner.classes() {
        let path = format!("{path}/{name}");
        let mut row = qdisc_result(&path, c);
        if let Some(k) = counters.iter().find(|k| k.name == name) {
            row.extra
                .extend(k.values.iter().map(|&(key, v)| (key.to_string(), v)));
        }
        out.push(row);
        class_tree(&path, c, out);
    }
}

/// A class with no qdisc of its own: what passed through it, no queue.
fn class_only_result(name: &str, parent: &Qdisc, values: &[(&'static str, f64)]) -> QdiscResult {
    let sent = values
        .iter()
        .find(|v| v.0 == "sent_pkts")
        .map_or(0, |v| v.1 as u64);
    QdiscResult {
        name: name.to_string(),
        kind: format!("{} class", parent.inner.kind()),
        enq_pkts: sent,
        deq_pkts: sent,
        drops_by_reason: DropReason::ALL
            .iter()
            .map(|r| (r.name().to_string(), 0))
            .collect(),
        drops_by_ecn: Ecn::ALL.iter().map(|e| (e.name().to_string(), 0)).collect(),
        marks_by_ecn: Ecn::ALL.iter().map(|e| (e.name().to_string(), 0)).collect(),
        sojourn_mean_ms: f64::NAN,
        sojourn_p50_ms: f64::NAN,
        sojourn_p90_ms: f64::NAN,
        sojourn_p99_ms: f64::NAN,
        sojourn_p999_ms: f64::NAN,
        extra: values.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
        ..Default::default()
    }
}

pub(super) fn collect(w: &World, name: &str, wall: f64) -> RunResult {
    let dur = to_secs(w.now);
    let mut flows = Vec::new();
    let mut rtt_samples = BTreeMap::new();
    let mut udp_records = BTreeMap::new();
    // the goodputs of the flows that were active for a while, for Jain's index
    let mut goodputs = Vec::new();
    let by_ecn = w.net.routes_by_ecn();
    for f in &w.flows {
        let spec = &f.spec;
        let end = f.removed_at.map_or(dur, to_secs);
        let live: Vec<&super::conn::Stream> = w
            .conns
            .iter()
            .flatten()
            .filter(|s| w.flows[s.flow as usize].spec.name == spec.name)
            .collect();
        let mut t: Totals = f.retired;
        for s in &live {
            t.add(s);
        }
        let bulk = spec.source.is_bulk();
        let first = f.streams.first().and_then(|&s| w.conns[s].as_ref());
        let (ecn_mode, data_ecn) = match first.map(|s| &s.conn) {
            Some(Conn::Tcp(c)) => (
                serde_json::to_value(c.0.stats.ecn_mode)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                c.0.stats.data_ecn.name().to_string(),
            ),
            _ => f
                .ecn
                .clone()
                .or_else(|| live.iter().find_map(|s| ecn_of(&s.conn)))
                .unwrap_or_else(|| match &spec.source {
                    SourceSpec::Udp(u) => ("none".into(), Ecn::from(u.ecn).name().into()),
                    SourceSpec::UdpPrague(_) => ("prague_feedback".into(), "ect1".into()),
                    _ => (String::new(), String::new()),
                }),
        };
        let completion = if bulk && spec.size.is_some() {
            let done = f
                .streams
                .iter()
                .filter_map(|&s| w.conns[s].as_ref())
                .filter_map(|s| s.conn.tcp().map(|c| c.0.stats.completed_at))
                .max()
                .unwrap_or(NEVER);
            (done != NEVER).then(|| to_secs(done - f.start))
        } else {
            None
        };
        let span = completion.unwrap_or(end - to_secs(f.start));
        let mean_srtt = if f.rtt_samples.is_empty() {
            f64::NAN
        } else {
            f.rtt_samples.iter().sum::<f64>() / f.rtt_samples.len() as f64
        };
        // Where routes test the ECN field, the data's route is that of the codepoint it
        // carried (known once a connection has negotiated ECN).
        let codepoint = Ecn::ALL.into_iter().find(|e| e.name() == data_ecn);
        let base_rtt = match codepoint.filter(|_| by_ecn) {
            Some(e) => crate::net::graph::base_rtt(&w.net, f.hosts.0, f.hosts.1, spec.dscp, e)
                .unwrap_or(f.base_rtt),
            None => f.base_rtt,
        };
        let base = base_rtt as f64 / 1e6;
        // a UDP flow's rate is its source's (UDP Prague's own controller), not the flow's `cc`
        let cc = if spec.source.is_tcp() {
            spec.cc.name().to_string()
        } else {
            spec.source.kind().to_string()
        };
        // A flow removed the instant it was added (or a result taken then) was never active:
        // nothing delivered over no time is no rate, and it has no share to be fair about.
        let goodput_mbps = if span > 0.0 {
            f.delivered as f64 * 8.0 / span / 1e6
        } else {
            0.0
        };
        if span > 0.0 {
            goodputs.push(goodput_mbps);
        }
        flows.push(FlowResult {
            name: spec.name.clone(),
            cc,
            streams: if bulk {
                spec.streams
            } else {
                f.conns_opened as u32
            },
            ecn_mode,
            data_ecn,
            goodput_mbps,
            bytes_delivered: f.delivered,
            mean_srtt_ms: mean_srtt,
            qdelay_ms: mean_srtt - base,
            base_rtt_ms: base,
            retrans: t.retrans,
            rto_count: t.rto_count,
            fast_recoveries: t.fast_recoveries,
            rwnd_limited: t.rwnd_limited,
            undos: t.undos,
            spurious_rtos: t.spurious_rtos,
            cwr_count: t.cwr_count,
            ce_received: t.ce_received,
            ce_fed_back: t.ce_fed_back,
            data_pkts_sent: t.data_pkts_sent,
            pkts_dropped: t.pkts_dropped,
            start_s: to_secs(f.start),
            completion_s: completion,
        });
        rtt_samples.insert(spec.name.clone(), f.rtt_samples.clone());
        // and those completed since the last sample (the one ending with the run: its
        // receiver's timer runs after the sample at the same instant)
        let mut recs = f.udp_records.clone();
        if let Some(Conn::UdpPrague(c)) = f
            .sampled()
            .and_then(|s| w.conns[s].as_ref())
            .map(|s| &s.conn)
        {
            recs.extend_from_slice(c.1.records());
        }
        if !recs.is_empty() {
            udp_records.insert(spec.name.clone(), recs);
        }
    }
    let mut qdiscs = Vec::new();
    let mut qdisc_classes = Vec::new();
    let mut links = Vec::new();
    let mut classes = Vec::new();
    let mut bottleneck_pkts = 0;
    for (i, p) in w.net.ports.iter().enumerate() {
        let st = &p.qdisc.stats;
        qdiscs.push(qdisc_result(&p.name, &p.qdisc));
        class_tree(&p.name, &p.qdisc, &mut qdisc_classes);
        for c in Class::ALL {
            classes.push(class_result(&p.name, "class", c.name(), &st.class(c)));
        }
        for g in 0..st.n_groups() {
            let cs = st.group(g);
            if cs.enq_pkts > 0 {
                classes.push(class_result(&p.name, "flow", &w.flows[g].spec.name, &cs));
            }
        }
        let rate = p.shaper.rate().bps as f64;
        // What it could carry: its rate over the run, or each rate `set_link` gave it over
        // its time.
        let capacity = match w.reshaped.get(&i) {
            Some(&(bits, since)) => bits + rate * to_secs(w.now - since),
            None => rate * dur,
        };
        links.push(LinkResult {
            name: p.name.clone(),
            rate_mbps: rate / 1e6,
            utilisation: p.tx_bytes as f64 * 8.0 / capacity,
            tx_pkts: p.tx_pkts,
            tx_bytes: p.tx_bytes,
        });
        if p.bottleneck {
            bottleneck_pkts += p.tx_pkts;
        }
    }
    let n = w.series_t.len();
    let fseries: Vec<FlowSeries> = w
        .flows
        .iter()
        .map(|f| {
            let mut s = f.series.clone();
            for col in [
                &mut s.tput_mbps,
                &mut s.cwnd,
                &mut s.srtt_ms,
                &mut s.pacing_mbps,
                &mut s.ce_fed_back,
            ] {
                col.resize(n, f64::NAN);
            }
            for col in s.extra.values_mut() {
                col.resize(n, f64::NAN);
            }
            s
        })
        .collect();
    let qseries = w
        .qtrack
        .iter()
        .map(|t| {
            let mut s = t.series.clone();
            for col in s.extra.values_mut() {
                col.resize(n, f64::NAN);
            }
            s
        })
        .collect();
    RunResult {
        name: name.to_string(),
        seed: w.seed,
        model_version: super::MODEL_VERSION.to_string(),
        sim_seconds: dur,
        wall_seconds: wall,
        events: w.events(),
        bottleneck_pkts,
        jain_index: jain_index(&goodputs),
        flows,
        qdiscs,
        links,
        rtt_samples,
        series: Series {
            t: w.series_t.clone(),
            flows: fseries,
            qdiscs: qseries,
        },
        conservation_ok: w.conservation_ok(),
        connections: w.records.clone(),
        classes,
        qdisc_classes,
        udp_records,
    }
}
