//! What a run returns: per-flow, per-qdisc and per-link summaries plus time series.
//! Serialized to JSON for Python, where each table becomes a DataFrame.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Summary of one flow (a sender with all its parallel streams).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct FlowResult {
    pub name: String,
    pub cc: String,
    pub streams: u32,
    /// Negotiated ECN mode of the first stream: "none", "rfc3168", "acc_ecn".
    pub ecn_mode: String,
    /// Codepoint of the first stream's new data: "not_ect", "ect0", "ect1".
    pub data_ecn: String,
    /// iperf3 receiver-side goodput: payload bytes over the flow's whole run, Mbit/s.
    pub goodput_mbps: f64,
    pub bytes_delivered: u64,
    /// Mean of the once-per-second srtt samples (tcpi_rtt) of the first stream, ms.
    pub mean_srtt_ms: f64,
    /// `mean_srtt_ms - base_rtt_ms`: the study's queueing delay.
    pub qdelay_ms: f64,
    pub base_rtt_ms: f64,
    pub retrans: u64,
    pub rto_count: u64,
    pub fast_recoveries: u64,
    /// Times new data waited for the receiver's window (the sender was rwnd-limited).
    pub rwnd_limited: u64,
    /// Reductions undone as spurious (DSACKs, timestamps, F-RTO; Linux's TCP*UNDO counters).
    #[serde(default)]
    pub undos: u64,
    /// Timeouts F-RTO showed spurious (TCPSpuriousRTOs), among `undos`.
    #[serde(default)]
    pub spurious_rtos: u64,
    /// ECN-triggered reductions (CWR entries).
    pub cwr_count: u64,
    /// CE-marked data segments that reached the receiver.
    pub ce_received: u64,
    /// CE marks the sender learnt of through feedback (delivered_ce).
    pub ce_fed_back: u64,
    pub data_pkts_sent: u64,
    pub pkts_dropped: u64,
    pub start_s: f64,
    /// Completion time of a sized transfer (s after its start), None for bulk flows.
    pub completion_s: Option<f64>,
}

/// Summary of one qdisc.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct QdiscResult {
    /// Where it sits, e.g. "bottleneck".
    pub name: String,
    pub kind: String,
    pub enq_pkts: u64,
    pub deq_pkts: u64,
    pub drops: u64,
    pub drops_by_reason: BTreeMap<String, u64>,
    pub drops_by_ecn: BTreeMap<String, u64>,
    pub marks: u64,
    pub marks_by_ecn: BTreeMap<String, u64>,
    pub sojourn_mean_ms: f64,
    pub sojourn_p50_ms: f64,
    pub sojourn_p90_ms: f64,
    pub sojourn_p99_ms: f64,
    pub sojourn_p999_ms: f64,
    pub max_backlog_pkts: u64,
    pub max_backlog_bytes: u64,
    /// Qdisc-specific summaries (e.g. DualPI2 L and C sojourn, mean p').
    pub extra: BTreeMap<String, f64>,
}

/// Summary of one shaped link.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LinkResult {
    pub name: String,
    /// Its rate at the end of the run (`set_link` may have changed it).
    pub rate_mbps: f64,
    /// Fraction of the run's capacity (rate x duration, or each rate over its time when
    /// `set_link` changed it) that carried frames.
    pub utilisation: f64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
}

/// Time series of one flow, one value per sample interval.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct FlowSeries {
    pub name: String,
    /// Receiver goodput over the interval, Mbit/s (all streams).
    pub tput_mbps: Vec<f64>,
    /// First stream's cwnd, segments.
    pub cwnd: Vec<f64>,
    /// First stream's srtt, ms.
    pub srtt_ms: Vec<f64>,
    /// First stream's pacing rate, Mbit/s (0 = unpaced).
    pub pacing_mbps: Vec<f64>,
    /// Cumulative CE marks fed back to the sender (first stream).
    pub ce_fed_back: Vec<f64>,
    /// CC internals (e.g. Prague "alpha", "classic_ecn").
    pub extra: BTreeMap<String, Vec<f64>>,
}

/// Time series of one qdisc.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct QdiscSeries {
    pub name: String,
    pub backlog_pkts: Vec<f64>,
    pub backlog_bytes: Vec<f64>,
    /// Mean sojourn of packets dequeued during the interval, ms.
    pub sojourn_ms: Vec<f64>,
    /// Cumulative drops and marks.
    pub drops: Vec<f64>,
    pub marks: Vec<f64>,
    /// Link throughput over the interval (frames sent), Mbit/s.
    pub tx_mbps: Vec<f64>,
    /// Packets enqueued, marked and dropped during the interval, per traffic class.
    pub l4s: ClassSeries,
    pub classic: ClassSeries,
    pub extra: BTreeMap<String, Vec<f64>>,
}

/// Per-interval counts of one traffic class at a qdisc.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClassSeries {
    pub pkts: Vec<f64>,
    pub marks: Vec<f64>,
    pub drops: Vec<f64>,
}

/// One completed transfer of a `web`, `messages` or `chunks` source, or one stream of a
/// sized bulk flow (`size`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ConnRecord {
    /// The scenario flow (source) it belongs to.
    pub flow: String,
    /// Connection number within the run.
    pub id: u64,
    /// Bytes transferred.
    pub size: u64,
    /// When the application started it, s.
    pub start_s: f64,
    /// Completion time: start until the receiver has the last byte, s.
    pub fct_s: f64,
    /// The same from the end of the handshake (data could flow), s.
    pub fct_no_handshake_s: f64,
    /// Retransmissions while it was sent.
    pub retrans: u64,
    /// Whether it opened its own connection (false: written on a persistent one).
    pub new_connection: bool,
    /// Whether the receiver asked for it (`web`): its request's trip to the sender is in
    /// the completion time.
    #[serde(default)]
    pub requested: bool,
}

/// Queue-delay distribution and counters of one traffic class, or one flow, at a qdisc.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClassResult {
    pub qdisc: String,
    /// "class" (`name` is "l4s" or "classic": ECT(1)/CE or not, as DualPI2 classifies)
    /// or "flow" (`name` is the scenario flow).
    pub kind: String,
    pub name: String,
    pub enq_pkts: u64,
    pub deq_pkts: u64,
    pub marks: u64,
    pub drops: u64,
    /// Marks per dequeued packet and drops per enqueued packet.
    pub mark_prob: f64,
    pub drop_prob: f64,
    pub sojourn_mean_ms: f64,
    pub sojourn_p50_ms: f64,
    pub sojourn_p90_ms: f64,
    pub sojourn_p99_ms: f64,
    pub sojourn_p999_ms: f64,
    /// Sojourn at quantiles 0, 0.01, ..., 1, ms (empty if nothing was dequeued).
    pub cdf_ms: Vec<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Series {
    /// Sample times, s.
    pub t: Vec<f64>,
    pub flows: Vec<FlowSeries>,
    pub qdiscs: Vec<QdiscSeries>,
}

/// Everything a run produced.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    pub name: String,
    pub seed: u64,
    pub model_version: String,
    pub sim_seconds: f64,
    /// Wall-clock seconds the run took (not part of determinism checks).
    pub wall_seconds: f64,
    pub events: u64,
    /// Packets that left the bottleneck qdisc(s).
    pub bottleneck_pkts: u64,
    pub flows: Vec<FlowResult>,
    pub qdiscs: Vec<QdiscResult>,
    pub links: Vec<LinkResult>,
    /// Jain's fairness index over the flows' goodputs.
    pub jain_index: f64,
    /// The once-per-second srtt samples (ms) of each flow's first stream, iperf3 style (a UDP
    /// Prague flow's: its sender's `m_srtt`; other UDP and web sources have none).
    pub rtt_samples: BTreeMap<String, Vec<f64>>,
    pub series: Series,
    /// Packet conservation per stream: sent = delivered + dropped + in flight.
    pub conservation_ok: bool,
    /// Completed transfers of the web, messages and chunks sources.
    #[serde(default)]
    pub connections: Vec<ConnRecord>,
    /// Per qdisc: queue delay and counters per traffic class and per flow.
    #[serde(default)]
    pub classes: Vec<ClassResult>,
    /// The classes of classful qdiscs (prio bands, a tbf's or wifi's child), each with its
    /// own counters as `tc -s` shows them, named `PORT/band0`, `PORT/band0/child`, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qdisc_classes: Vec<QdiscResult>,
    /// udp_prague flows: the receiver's records every 100 ms.
    #[serde(default)]
    pub udp_records: BTreeMap<String, Vec<crate::traffic::udp_prague::UdpRecord>>,
}

/// Jain's fairness index: (sum x)^2 / (n * sum x^2); 1 for equal shares.
pub fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if n == 0.0 || s2 == 0.0 {
        return 0.0;
    }
    s * s / (n * s2)
}

impl FlowSeries {
    /// Drop every sample (the name stays).
    pub fn clear(&mut self) {
        for v in [
            &mut self.tput_mbps,
            &mut self.cwnd,
            &mut self.srtt_ms,
            &mut self.pacing_mbps,
            &mut self.ce_fed_back,
        ] {
            v.clear();
        }
        self.extra.values_mut().for_each(Vec::clear);
    }
}

impl QdiscSeries {
    /// Drop every sample (the name stays).
    pub fn clear(&mut self) {
        for v in [
            &mut self.backlog_pkts,
            &mut self.backlog_bytes,
            &mut self.sojourn_ms,
            &mut self.drops,
            &mut self.marks,
            &mut self.tx_mbps,
            &mut self.l4s.pkts,
            &mut self.l4s.marks,
            &mut self.l4s.drops,
            &mut self.classic.pkts,
            &mut self.classic.marks,
            &mut self.classic.drops,
        ] {
            v.clear();
        }
        self.extra.values_mut().for_each(Vec::clear);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_is_one_for_equal_shares_and_one_over_n_for_one_hog() {
        assert!((jain_index(&[5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[10.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    }
}
