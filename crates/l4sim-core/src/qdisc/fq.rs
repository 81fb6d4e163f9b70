//! `sch_fq` (net/sched/sch_fq.c, 5.15 semantics) as it behaves on a router.
//!
//! Forwarded packets have no socket, so each one is keyed to the pseudo-socket
//! `((hash & orphan_mask) << 1) | 1`, and none is paced (no `sk_pacing_rate`, no EDT
//! timestamp, `maxrate` unlimited): fq is then DRR over those flows plus `ce_threshold`.
//! With `orphan_mask = 0` there is one flow: a tail-drop FIFO (at `min(limit, flow_limit)`)
//! with step CE marking, the study's "single queue FQ".
//!
//! Modelled as Linux:
//! - drop at enqueue if qlen >= limit, or the flow's qlen >= flow_limit;
//! - a new flow starts with `credit = initial_quantum`; a detached flow that gets a packet joins
//!   the new_flows tail and, if it was detached for more than `flow_refill_delay`, gets
//!   `credit = max_t(u32, credit, quantum)` (a negative credit, seen as a huge u32, is kept);
//! - dequeue: head of new_flows else old_flows; `credit <= 0` earns one quantum and moves the
//!   flow to the old tail; an empty flow (found empty on a later pass, as Linux peeks) leaving
//!   new_flows goes to the old tail if old_flows is non-empty, else is detached;
//! - CE mark (any ECT, `INET_ECN_set_ce`) when `now - enqueue_time > ce_threshold`;
//! - garbage collection: Linux only collects when there are at least `2 * buckets` flows and more
//!   than half are inactive; a detached flow idle for more than 3 s is then freed, and is
//!   re-created with `initial_quantum`. We apply that to the flow being looked up only.
//!
//! Not modelled: pacing, horizon, the TC_PRIO_CONTROL internal queue, 6.x bands and fast path.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

use super::{check_ms, check_nonzero, Drop, DropReason, QueueDisc};
use crate::packet::{hdr, Packet};
use crate::time::{millis, SimTime, SEC};

/// tc parameters of fq (Linux defaults). `buckets` only sets Linux's rb-tree count, which
/// matters here only for the garbage-collection threshold.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FqParams {
    /// Packets in the whole qdisc.
    pub limit: u32,
    /// Packets per flow.
    pub flow_limit: u32,
    /// Bytes of credit per DRR round (default 2 x the device's `psched_mtu`, 3028).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    /// Bytes of credit of a new flow (default 10 x `psched_mtu`, 15140).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_quantum: Option<u32>,
    /// Mask applied to the packet hash of forwarded traffic (0 = a single flow).
    pub orphan_mask: u32,
    pub buckets: u32,
    pub ce_threshold_ms: Option<f64>,
    pub flow_refill_delay_ms: f64,
}

impl Default for FqParams {
    fn default() -> Self {
        FqParams {
            limit: 10000,
            flow_limit: 100,
            quantum: None,
            initial_quantum: None,
            orphan_mask: 1023,
            buckets: 1024,
            ce_threshold_ms: None,
            flow_refill_delay_ms: 40.0,
        }
    }
}

impl FqParams {
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        check_nonzero("limit", self.limit as u64)?;
        check_nonzero("flow_limit", self.flow_limit as u64)?;
        if let Some(q) = self.quantum {
            check_nonzero("quantum", q as u64)?;
            if q > 1 << 20 {
                return Err((
                    "quantum".into(),
                    format!("quantum {q} is above Linux's 1048576-byte maximum"),
                ));
            }
        }
        if let Some(q) = self.initial_quantum.filter(|&q| q > i32::MAX as u32) {
            return Err((
                "initial_quantum".into(),
                format!("initial_quantum {q} does not fit Linux's int credit"),
            ));
        }
        if !self.buckets.is_power_of_two() || self.buckets > 1 << 18 {
            return Err((
                "buckets".into(),
                format!(
                    "buckets must be a power of two in [1, 262144], got {}",
                    self.buckets
                ),
            ));
        }
        if let Some(v) = self.ce_threshold_ms {
            check_ms("ce_threshold_ms", v)?;
        }
        check_ms("flow_refill_delay_ms", self.flow_refill_delay_ms)?;
        Ok(())
    }
}

/// The packet hash is already uniform: use it (scrambled once) as the map hash.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    Detached,
    New,
    Old,
}

/// `struct fq_flow`.
struct FqFlow {
    q: VecDeque<Packet>,
    credit: i32,
    /// Time the flow was detached (Linux `age`, jiffies there).
    age: SimTime,
    at: Where,
}

/// Counters of `tc -s qdisc show dev X` for fq.
#[derive(Clone, Debug, Default)]
pub struct FqStats {
    pub flows_plimit: u64,
    pub ce_mark: u64,
    pub gc_flows: u64,
    pub allocation: u64,
}

pub struct Fq {
    limit: u32,
    flow_limit: u32,
    quantum: i32,
    initial_quantum: i32,
    /// Whether `quantum` and `initial_quantum` are the device-derived defaults.
    default_quanta: (bool, bool),
    orphan_mask: u32,
    gc_threshold: u32,
    ce_threshold: SimTime,
    flow_refill_delay: SimTime,
    map: HashMap<u32, u32, BuildHasherDefault<KeyHasher>>,
    flows: Vec<FqFlow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    inactive_flows: u32,
    qlen: usize,
    bytes: u64,
    pub stats: FqStats,
}

/// FQ_GC_AGE: 3 s.
const FQ_GC_AGE: SimTime = 3 * SEC;

impl Fq {
    pub fn new(p: &FqParams) -> Fq {
        Fq {
            limit: p.limit,
            flow_limit: p.flow_limit,
            quantum: p.quantum.unwrap_or(2 * hdr::PSCHED_MTU) as i32,
            initial_quantum: p.initial_quantum.unwrap_or(10 * hdr::PSCHED_MTU) as i32,
            default_quanta: (p.quantum.is_none(), p.initial_quantum.is_none()),
            orphan_mask: p.orphan_mask,
            gc_threshold: 2 * p.buckets,
            // tc sends ce_threshold in us; the default is ~0U us.
            ce_threshold: match p.ce_threshold_ms {
                Some(ms) => (ms * 1000.0).round() as u64 * 1000,
                None => u32::MAX as u64 * 1000,
            },
            flow_refill_delay: millis(p.flow_refill_delay_ms),
            map: HashMap::with_capacity_and_hasher(64, Default::default()),
            flows: Vec::with_capacity(64),
            new_flows: VecDeque::with_capacity(64),
            old_flows: VecDeque::with_capacity(64),
            inactive_flows: 0,
            qlen: 0,
            bytes: 0,
            stats: FqStats::default(),
        }
    }

    /// `fq_classify` for a forwarded packet: the flow of `(hash & orphan_mask)`, allocated on
    /// first use with `initial_quantum` and detached.
    fn classify(&mut self, hash: u32, now: SimTime) -> usize {
        let key = hash & self.orphan_mask;
        if let Some(&i) = self.map.get(&key) {
            let i = i as usize;
            let n = self.flows.len() as u32;
            let f = &mut self.flows[i];
            if n >= self.gc_threshold
                && self.inactive_flows > n / 2
                && f.at == Where::Detached
                && f.q.is_empty()
                && now > f.age + FQ_GC_AGE
            {
                // Freed by fq_gc and allocated again.
                self.stats.gc_flows += 1;
                self.stats.allocation += 1;
                f.credit = self.initial_quantum;
                f.age = now;
            }
            return i;
        }
        let i = self.flows.len();
        self.flows.push(FqFlow {
            q: VecDeque::new(),
            credit: self.initial_quantum,
            age: now,
            at: Where::Detached,
        });
        self.map.insert(key, i as u32);
        self.inactive_flows += 1;
        self.stats.allocation += 1;
        i
    }

    /// Number of flows allocated and how many are detached.
    #[cfg(test)]
    pub fn flow_counts(&self) -> (usize, u32) {
        (self.flows.len(), self.inactive_flows)
    }
}

impl QueueDisc for Fq {
    fn kind(&self) -> &'static str {
        "fq"
    }
    fn set_dev_mtu(&mut self, psched_mtu: u32) {
        // fq_init: quantum 2 x, initial_quantum 10 x psched_mtu, unless tc gave them.
        if self.default_quanta.0 {
            self.quantum = 2 * psched_mtu as i32;
        }
        if self.default_quanta.1 {
            self.initial_quantum = 10 * psched_mtu as i32;
        }
    }

    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        if self.qlen >= self.limit as usize {
            drops.push(Drop {
                pkt,
                reason: DropReason::Overlimit,
            });
            return;
        }
        let i = self.classify(pkt.hash, now);
        let f = &mut self.flows[i];
        if f.q.len() >= self.flow_limit as usize {
            self.stats.flows_plimit += 1;
            drops.push(Drop {
                pkt,
                reason: DropReason::FlowLimit,
            });
            return;
        }
        if f.at == Where::Detached {
            f.at = Where::New;
            self.new_flows.push_back(i as u32);
            if now > f.age + self.flow_refill_delay && (f.credit as u32) < self.quantum as u32 {
                f.credit = self.quantum;
            }
            self.inactive_flows -= 1;
        }
        self.bytes += pkt.len as u64;
        f.q.push_back(pkt);
        self.qlen += 1;
    }

    fn dequeue(&mut self, now: SimTime, _drops: &mut Vec<Drop>) -> Option<Packet> {
        if self.qlen == 0 {
            return None;
        }
        loop {
            let (i, from_new) = if let Some(&i) = self.new_flows.front() {
                (i as usize, true)
            } else if let Some(&i) = self.old_flows.front() {
                (i as usize, false)
            } else {
                return None;
            };
            let head = if from_new {
                &mut self.new_flows
            } else {
                &mut self.old_flows
            };
            let f = &mut self.flows[i];
            if f.credit <= 0 {
                f.credit += self.quantum;
                head.pop_front();
                f.at = Where::Old;
                self.old_flows.push_back(i as u32);
                continue;
            }
            match f.q.pop_front() {
                Some(mut p) => {
                    // time_next_packet = time_to_send = enqueue time (no pacing here).
                    if now.wrapping_sub(p.enq_ts) as i64 - self.ce_threshold as i64 > 0 {
                        p.ecn.set_ce();
                        self.stats.ce_mark += 1;
                    }
                    f.credit -= p.len as i32;
                    self.qlen -= 1;
                    self.bytes -= p.len as u64;
                    return Some(p);
                }
                None => {
                    head.pop_front();
                    // Force a pass through old_flows to prevent starvation.
                    if from_new && !self.old_flows.is_empty() {
                        f.at = Where::Old;
                        self.old_flows.push_back(i as u32);
                    } else {
                        f.at = Where::Detached;
                        f.age = now;
                        self.inactive_flows += 1;
                    }
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.qlen
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("flows", self.flows.len() as f64));
        out.push(("inactive_flows", self.inactive_flows as f64));
        out.push(("new_flows", self.new_flows.len() as f64));
        out.push(("old_flows", self.old_flows.len() as f64));
        out.push(("ce_marks", self.stats.ce_mark as f64));
        out.push(("flows_plimit", self.stats.flows_plimit as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_quanta_follow_the_devices_mtu_and_tc_values_stay() {
        let mut q = Fq::new(&FqParams::default());
        assert_eq!((q.quantum, q.initial_quantum), (3028, 15140));
        q.set_dev_mtu(9014);
        assert_eq!((q.quantum, q.initial_quantum), (18028, 90140));
        let mut q = Fq::new(&FqParams {
            quantum: Some(1000),
            ..Default::default()
        });
        q.set_dev_mtu(9014);
        assert_eq!((q.quantum, q.initial_quantum), (1000, 90140));
    }
    use crate::packet::{Dir, Ecn};
    use crate::time::MS;

    fn pkt(flow: u32, ecn: Ecn, len: u32, seq: u32) -> Packet {
        let mut p = Packet::new(flow, Dir::Fwd, 0, 1);
        p.len = len;
        p.ecn = ecn;
        p.hash = flow.wrapping_mul(0x9E37_79B9) | 1;
        p.seq = seq;
        p
    }

    fn enq(q: &mut Fq, mut p: Packet, t: SimTime, d: &mut Vec<Drop>) {
        p.enq_ts = t;
        q.enqueue(p, t, d);
    }

    #[test]
    fn fq_with_orphan_mask_zero_is_one_fifo_across_flows() {
        let p = FqParams {
            orphan_mask: 0,
            flow_limit: 10000,
            ..Default::default()
        };
        let mut q = Fq::new(&p);
        let mut d = Vec::new();
        for s in 0..300u32 {
            enq(&mut q, pkt(s % 3, Ecn::NotEct, 1514, s), 0, &mut d);
        }
        assert_eq!(q.flow_counts().0, 1);
        for s in 0..300u32 {
            assert_eq!(q.dequeue(0, &mut d).unwrap().seq, s);
        }
        assert!(d.is_empty());
    }

    #[test]
    fn fq_single_queue_marks_ect_above_ce_threshold_but_not_not_ect() {
        let p = FqParams {
            orphan_mask: 0,
            ce_threshold_ms: Some(1.0),
            ..Default::default()
        };
        let mut q = Fq::new(&p);
        let mut d = Vec::new();
        for (i, e) in [Ecn::Ect1, Ecn::Ect0, Ecn::NotEct, Ecn::Ce, Ecn::Ect1]
            .iter()
            .enumerate()
        {
            enq(&mut q, pkt(i as u32, *e, 1514, i as u32), 0, &mut d);
        }
        // Sojourn exactly 1 ms: not above the threshold.
        assert_eq!(q.dequeue(MS, &mut d).unwrap().ecn, Ecn::Ect1);
        let got: Vec<Ecn> = (0..4)
            .map(|_| q.dequeue(MS + 1, &mut d).unwrap().ecn)
            .collect();
        assert_eq!(got, vec![Ecn::Ce, Ecn::NotEct, Ecn::Ce, Ecn::Ce]);
    }

    #[test]
    fn fq_tail_drops_at_limit_and_flow_limit() {
        let p = FqParams {
            limit: 5,
            flow_limit: 3,
            ..Default::default()
        };
        let mut q = Fq::new(&p);
        let mut d = Vec::new();
        for s in 0..4 {
            enq(&mut q, pkt(1, Ecn::NotEct, 100, s), 0, &mut d);
        }
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].reason, DropReason::FlowLimit);
        for s in 0..3 {
            enq(&mut q, pkt(2, Ecn::NotEct, 100, s), 0, &mut d);
        }
        assert_eq!(q.len(), 5);
        assert_eq!(d.last().unwrap().reason, DropReason::Overlimit);
    }

    #[test]
    fn fq_new_flow_gets_initial_quantum_then_drr_shares_bytes_equally() {
        let mut q = Fq::new(&FqParams::default());
        let mut d = Vec::new();
        for s in 0..100 {
            enq(&mut q, pkt(1, Ecn::NotEct, 1514, s), 0, &mut d);
            enq(&mut q, pkt(2, Ecn::NotEct, 1514, s), 0, &mut d);
        }
        let order: Vec<u32> = (0..28)
            .map(|_| q.dequeue(MS, &mut d).unwrap().flow)
            .collect();
        // 10 x 1514 = initial_quantum for each new flow, then 2 x 1514 = quantum per round.
        let mut want = vec![1; 10];
        want.extend([2; 10]);
        want.extend([1, 1, 2, 2, 1, 1, 2, 2]);
        assert_eq!(order, want);
        // Unequal packet sizes: bytes still shared equally.
        let mut q = Fq::new(&FqParams {
            flow_limit: 1000,
            ..Default::default()
        });
        for s in 0..100 {
            enq(&mut q, pkt(1, Ecn::NotEct, 1514, s), 0, &mut d);
        }
        for s in 0..600 {
            enq(&mut q, pkt(2, Ecn::NotEct, 300, s), 0, &mut d);
        }
        let mut bytes = [0u64; 3];
        for _ in 0..200 {
            let p = q.dequeue(MS, &mut d).unwrap();
            bytes[p.flow as usize] += p.len as u64;
        }
        let r = bytes[1] as f64 / bytes[2] as f64;
        assert!((r - 1.0).abs() < 0.1, "{bytes:?}");
    }

    /// As Linux, a flow is detached only when a dequeue pass (with the qdisc non-empty)
    /// finds it empty; flow 2 keeps the qdisc busy so that flow 1 gets detached.
    #[test]
    fn fq_detached_flow_is_refilled_only_after_flow_refill_delay() {
        let mut q = Fq::new(&FqParams::default());
        let mut d = Vec::new();
        let detach = |q: &mut Fq, t: SimTime, d: &mut Vec<Drop>| {
            for _ in 0..40 {
                q.dequeue(t, d).unwrap();
                if q.flows[0].at == Where::Detached {
                    return;
                }
            }
            panic!("flow 1 never detached");
        };
        enq(&mut q, pkt(1, Ecn::NotEct, 1514, 0), 0, &mut d);
        for s in 0..100 {
            enq(&mut q, pkt(2, Ecn::NotEct, 1514, s), 0, &mut d);
        }
        detach(&mut q, 0, &mut d);
        assert_eq!(q.flows[0].age, 0);
        // Back after 10 ms: no refill.
        q.flows[0].credit = 100;
        enq(&mut q, pkt(1, Ecn::NotEct, 1514, 1), 10 * MS, &mut d);
        assert_eq!(q.flows[0].credit, 100);
        detach(&mut q, 10 * MS, &mut d);
        // Back 50 ms after detaching (> 40 ms): credit = max(credit, quantum).
        q.flows[0].credit = 100;
        enq(&mut q, pkt(1, Ecn::NotEct, 1514, 2), 60 * MS, &mut d);
        assert_eq!(q.flows[0].credit, 3028);
        // Linux's max_t(u32, ...) keeps a negative credit.
        detach(&mut q, 60 * MS, &mut d);
        q.flows[0].credit = -500;
        enq(&mut q, pkt(1, Ecn::NotEct, 1514, 3), 200 * MS, &mut d);
        assert_eq!(q.flows[0].credit, -500);
        assert!(d.is_empty());
    }

    #[test]
    fn fq_flow_is_not_detached_by_a_dequeue_on_an_empty_qdisc() {
        let mut q = Fq::new(&FqParams::default());
        let mut d = Vec::new();
        enq(&mut q, pkt(1, Ecn::NotEct, 1514, 0), 0, &mut d);
        q.dequeue(0, &mut d).unwrap();
        assert!(q.dequeue(0, &mut d).is_none());
        assert_eq!(q.flows[0].at, Where::New);
        assert_eq!(q.flow_counts(), (1, 0));
    }

    #[test]
    fn fq_gc_recreates_long_idle_flows_with_initial_quantum_only_with_many_flows() {
        // buckets 1: GC may run once there are >= 2 flows and more than half are inactive.
        let p = FqParams {
            buckets: 1,
            ..Default::default()
        };
        let mut q = Fq::new(&p);
        let mut d = Vec::new();
        for f in 1..=3 {
            enq(&mut q, pkt(f, Ecn::NotEct, 1514, 0), 0, &mut d);
        }
        // Serve all and detach all three (the last is found empty by a pass on a non-empty
        // qdisc only if something is queued, so queue one more packet of flow 3).
        for _ in 0..3 {
            q.dequeue(0, &mut d).unwrap();
        }
        enq(&mut q, pkt(3, Ecn::NotEct, 1514, 1), 0, &mut d);
        q.dequeue(0, &mut d).unwrap();
        assert_eq!(q.flow_counts(), (3, 2));
        q.flows[0].credit = -700;
        q.flows[1].credit = -700;
        // Flow 2, idle 4 s (> 3 s) while 2 of 3 flows are inactive: collected, re-created.
        enq(&mut q, pkt(2, Ecn::NotEct, 1514, 1), 4 * SEC, &mut d);
        assert_eq!(q.flows[1].credit, 15140);
        assert_eq!(q.stats.gc_flows, 1);
        // Flow 1 is as old, but now only 1 of 3 flows is inactive: no GC.
        enq(&mut q, pkt(1, Ecn::NotEct, 1514, 1), 5 * SEC, &mut d);
        assert_eq!(q.flows[0].credit, -700);
        // With the default 1024 buckets no GC happens for a handful of flows.
        let mut q = Fq::new(&FqParams::default());
        enq(&mut q, pkt(1, Ecn::NotEct, 1514, 0), 0, &mut d);
        enq(&mut q, pkt(2, Ecn::NotEct, 1514, 0), 0, &mut d);
        for _ in 0..2 {
            q.dequeue(0, &mut d).unwrap();
        }
        enq(&mut q, pkt(2, Ecn::NotEct, 1514, 1), 0, &mut d);
        q.dequeue(0, &mut d).unwrap();
        q.flows[0].credit = -700;
        enq(&mut q, pkt(1, Ecn::NotEct, 1514, 1), 10 * SEC, &mut d);
        assert_eq!(q.flows[0].credit, -700);
    }
}
