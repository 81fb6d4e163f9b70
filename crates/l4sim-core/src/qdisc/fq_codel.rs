//! `sch_fq_codel` (net/sched/sch_fq_codel.c, RFC 8290): stochastic flow queueing with DRR over
//! new/old flow lists and one CoDel instance per bucket.
//!
//! Modelled as Linux:
//! - bucket = `reciprocal_scale(hash, flows)` (no tc filters, no skb->priority override);
//! - a bucket not on a list joins the new_flows tail with `deficit = quantum`;
//! - overflow (qlen > limit or memory > memory_limit, checked after queueing the packet) runs
//!   `fq_codel_drop`: the bucket with the largest byte backlog (first on ties) loses packets
//!   from its head until half its backlog or `drop_batch` packets are gone; its CoDel count
//!   grows by the number dropped;
//! - dequeue: DRR with the new->old anti-starvation move, CoDel per bucket whose mtu check
//!   uses the whole qdisc's byte backlog;
//! - ce_threshold with selector/mask (Linux 5.16+; without them every ECT packet qualifies, the
//!   5.15 behaviour).
//!
//! Memory accounting uses an estimate of `skb->truesize` ([`truesize`]), as Linux charges
//! truesize, not the wire length.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::codel::{clock_offset_ns, ms_to_codel, CodelConfig, CodelQueue, CodelStats, CodelVars};
use super::{check_ms, check_nonzero, check_pos_ms, Drop, DropReason, QueueDisc};
use crate::packet::{hdr, Packet};
use crate::time::SimTime;

/// tc parameters of fq_codel (Linux defaults).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FqCodelParams {
    /// Packets in the whole qdisc.
    pub limit: u32,
    /// Number of buckets.
    pub flows: u32,
    /// DRR quantum, bytes (default the device's `psched_mtu`, 1514; Linux 5.15 accepts
    /// 1..=2^20, older kernels raised it to >= 256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    pub target_ms: f64,
    pub interval_ms: f64,
    pub ecn: bool,
    pub ce_threshold_ms: Option<f64>,
    /// `ce_threshold_selector`: with `ce_threshold_mask`, only packets with
    /// `(tos & mask) == selector` get the step mark (1 and 3: ECT(1) only).
    pub ce_threshold_selector: Option<u8>,
    pub ce_threshold_mask: Option<u8>,
    /// Packets dropped at most per `fq_codel_drop` call.
    pub drop_batch: u32,
    /// Bytes of truesize.
    pub memory_limit: u64,
    /// The kernel clock (uptime) at the run's start, s; unset: random per run (see codel.rs).
    pub clock_offset_s: Option<f64>,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            limit: 10240,
            flows: 1024,
            quantum: None,
            target_ms: 5.0,
            interval_ms: 100.0,
            ecn: true,
            ce_threshold_ms: None,
            ce_threshold_selector: None,
            ce_threshold_mask: None,
            drop_batch: 64,
            memory_limit: 32 << 20,
            clock_offset_s: None,
        }
    }
}

impl FqCodelParams {
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        check_nonzero("limit", self.limit as u64)?;
        check_nonzero("flows", self.flows as u64)?;
        if self.flows > 65536 {
            return Err((
                "flows".into(),
                format!("flows must be at most 65536 (Linux), got {}", self.flows),
            ));
        }
        if let Some(q) = self.quantum.filter(|&q| q == 0 || q > 1 << 20) {
            return Err((
                "quantum".into(),
                format!("quantum must be in [1, 1048576] bytes, got {q}"),
            ));
        }
        check_ms("target_ms", self.target_ms)?;
        check_pos_ms("interval_ms", self.interval_ms)?;
        if let Some(v) = self.ce_threshold_ms {
            check_ms("ce_threshold_ms", v)?;
        }
        if let (Some(s), None) = (self.ce_threshold_selector, self.ce_threshold_mask) {
            return Err((
                "ce_threshold_selector".into(),
                format!("ce_threshold_selector {s} needs ce_threshold_mask"),
            ));
        }
        if let (Some(s), Some(m)) = (self.ce_threshold_selector, self.ce_threshold_mask) {
            if s & !m != 0 {
                return Err((
                    "ce_threshold_selector".into(),
                    format!("ce_threshold_selector {s} has bits outside ce_threshold_mask {m}"),
                ));
            }
        }
        check_nonzero("drop_batch", self.drop_batch as u64)?;
        check_nonzero("memory_limit", self.memory_limit)?;
        Ok(())
    }
}

/// Estimated `skb->truesize` of a received linear skb of `len` bytes: the kmalloc'ed head
/// (`SKB_DATA_ALIGN(len + NET_SKB_PAD)` plus the aligned `skb_shared_info`, 320 B, rounded up to
/// its power-of-two slab) plus the aligned `struct sk_buff` (256 B). A 1514-byte frame costs
/// 2304 B and a 66-byte ACK 768 B. Real drivers differ (page frags); with the default limits
/// the packet limit binds long before the 32 MB memory limit either way.
pub fn truesize(len: u32) -> u64 {
    const NET_SKB_PAD: u64 = 64;
    const SHINFO: u64 = 320;
    const SKB: u64 = 256;
    let data = (len as u64 + NET_SKB_PAD).div_ceil(64) * 64 + SHINFO;
    data.next_power_of_two() + SKB
}

/// One bucket's queue (`struct fq_codel_flow` minus its CoDel vars).
#[derive(Default)]
struct Bucket {
    q: VecDeque<Packet>,
    deficit: i32,
    /// On new_flows or old_flows (Linux: `!list_empty(&flow->flowchain)`).
    on_list: bool,
    /// `q->backlogs[idx]`, bytes.
    backlog: u64,
}

#[derive(Default)]
struct Totals {
    qlen: usize,
    bytes: u64,
    memory: u64,
}

/// What CoDel sees when it runs on one bucket: that bucket's queue, the whole qdisc's backlog.
struct BucketCtx<'a> {
    b: &'a mut Bucket,
    t: &'a mut Totals,
}

impl CodelQueue for BucketCtx<'_> {
    fn dequeue(&mut self) -> Option<Packet> {
        let p = self.b.q.pop_front()?;
        let l = p.len as u64;
        self.b.backlog -= l;
        self.t.bytes -= l;
        self.t.qlen -= 1;
        self.t.memory -= truesize(p.len);
        Some(p)
    }
    fn backlog(&self) -> u64 {
        self.t.bytes
    }
}

/// Counters as `tc -s qdisc show` reports them.
#[derive(Clone, Debug, Default)]
pub struct FqCodelStats {
    pub drop_overlimit: u64,
    pub drop_overmemory: u64,
    pub new_flow_count: u64,
}

pub struct FqCodel {
    limit: u32,
    quantum: i32,
    /// Whether `quantum` is the device-derived default.
    default_quantum: bool,
    drop_batch: u32,
    memory_limit: u64,
    cfg: CodelConfig,
    buckets: Vec<Bucket>,
    cvars: Vec<CodelVars>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    t: Totals,
    pub cstats: CodelStats,
    pub stats: FqCodelStats,
}

impl FqCodel {
    /// An fq_codel whose clock starts at `clock_offset_s`, or 0 if unset.
    pub fn new(p: &FqCodelParams) -> FqCodel {
        Self::with_rng(p, None)
    }

    /// An fq_codel whose clock starts at `clock_offset_s`, or at a random point if unset.
    pub fn with_rng(p: &FqCodelParams, rng: Option<&mut crate::rng::Rng>) -> FqCodel {
        let n = p.flows as usize;
        FqCodel {
            limit: p.limit,
            quantum: p.quantum.unwrap_or(hdr::PSCHED_MTU) as i32,
            default_quantum: p.quantum.is_none(),
            drop_batch: p.drop_batch,
            // Linux caps memory_limit at 2^31 bytes.
            memory_limit: p.memory_limit.min(1 << 31),
            cfg: CodelConfig {
                target: ms_to_codel(p.target_ms),
                interval: ms_to_codel(p.interval_ms),
                ce_threshold: p.ce_threshold_ms.map(ms_to_codel),
                ce_threshold_selector: p.ce_threshold_selector.unwrap_or(0),
                ce_threshold_mask: p.ce_threshold_mask.unwrap_or(0),
                mtu: hdr::PSCHED_MTU,
                ecn: p.ecn,
                clock_offset_ns: clock_offset_ns(p.clock_offset_s, rng),
            },
            buckets: (0..n).map(|_| Bucket::default()).collect(),
            cvars: vec![CodelVars::new(); n],
            new_flows: VecDeque::with_capacity(n),
            old_flows: VecDeque::with_capacity(n),
            t: Totals::default(),
            cstats: CodelStats::default(),
            stats: FqCodelStats::default(),
        }
    }

    /// `fq_codel_classify` without filters: `reciprocal_scale(skb_get_hash(skb), flows)`.
    #[inline]
    pub fn bucket_of(&self, hash: u32) -> usize {
        ((hash as u64 * self.buckets.len() as u64) >> 32) as usize
    }

    /// `fq_codel_drop`: drop from the head of the fattest bucket. Returns its index.
    fn fq_codel_drop(&mut self, reason: DropReason, drops: &mut Vec<Drop>) -> usize {
        let mut idx = 0;
        let mut max = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            if b.backlog > max {
                max = b.backlog;
                idx = i;
            }
        }
        let threshold = max >> 1;
        let b = &mut self.buckets[idx];
        let mut len = 0u64;
        let mut i = 0u32;
        while let Some(p) = b.q.pop_front() {
            len += p.len as u64;
            self.t.memory -= truesize(p.len);
            drops.push(Drop { pkt: p, reason });
            i += 1;
            if i >= self.drop_batch || len >= threshold {
                break;
            }
        }
        self.cvars[idx].count = self.cvars[idx].count.wrapping_add(i);
        b.backlog -= len;
        self.t.bytes -= len;
        self.t.qlen -= i as usize;
        idx
    }
}

impl QueueDisc for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }
    fn set_dev_mtu(&mut self, psched_mtu: u32) {
        // fq_codel_init: quantum and CoDel's mtu are psched_mtu unless tc gave the quantum.
        if self.default_quantum {
            self.quantum = psched_mtu as i32;
        }
        self.cfg.mtu = psched_mtu;
    }

    fn enqueue(&mut self, pkt: Packet, _now: SimTime, drops: &mut Vec<Drop>) {
        let idx = self.bucket_of(pkt.hash);
        let b = &mut self.buckets[idx];
        let len = pkt.len as u64;
        b.q.push_back(pkt);
        b.backlog += len;
        self.t.bytes += len;
        if !b.on_list {
            b.on_list = true;
            b.deficit = self.quantum;
            self.new_flows.push_back(idx as u32);
            self.stats.new_flow_count += 1;
        }
        self.t.memory += truesize(pkt.len);
        let memory_limited = self.t.memory > self.memory_limit;
        self.t.qlen += 1;
        if self.t.qlen <= self.limit as usize && !memory_limited {
            return;
        }
        let reason = if memory_limited {
            DropReason::Memory
        } else {
            DropReason::Overlimit
        };
        let before = self.t.qlen;
        self.fq_codel_drop(reason, drops);
        let dropped = (before - self.t.qlen) as u64;
        self.stats.drop_overlimit += dropped;
        if memory_limited {
            self.stats.drop_overmemory += dropped;
        }
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        loop {
            let (idx, from_new) = if let Some(&i) = self.new_flows.front() {
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
            let b = &mut self.buckets[idx];
            if b.deficit <= 0 {
                b.deficit += self.quantum;
                head.pop_front();
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let mut ctx = BucketCtx { b, t: &mut self.t };
            let skb = self.cvars[idx].dequeue(&mut ctx, &self.cfg, &mut self.cstats, now, drops);
            match skb {
                None => {
                    head.pop_front();
                    // Force a pass through old_flows to prevent starvation.
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx as u32);
                    } else {
                        self.buckets[idx].on_list = false;
                    }
                }
                Some(p) => {
                    self.buckets[idx].deficit -= p.len as i32;
                    return Some(p);
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.t.qlen
    }
    fn bytes(&self) -> u64 {
        self.t.bytes
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("new_flows", self.new_flows.len() as f64));
        out.push(("old_flows", self.old_flows.len() as f64));
        out.push(("memory_usage", self.t.memory as f64));
        out.push(("drops_aqm", self.cstats.drop_count as f64));
        out.push(("ecn_marks", self.cstats.ecn_mark as f64));
        out.push(("ce_marks", self.cstats.ce_mark as f64));
        out.push(("drop_overlimit", self.stats.drop_overlimit as f64));
        out.push(("drop_overmemory", self.stats.drop_overmemory as f64));
        out.push(("new_flow_count", self.stats.new_flow_count as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_quantum_and_codels_mtu_follow_the_devices_mtu() {
        let mut q = FqCodel::new(&FqCodelParams::default());
        assert_eq!((q.quantum, q.cfg.mtu), (1514, 1514));
        q.set_dev_mtu(9014);
        assert_eq!((q.quantum, q.cfg.mtu), (9014, 9014));
        let mut q = FqCodel::new(&FqCodelParams {
            quantum: Some(300),
            ..Default::default()
        });
        q.set_dev_mtu(9014);
        assert_eq!((q.quantum, q.cfg.mtu), (300, 9014));
    }
    use crate::packet::{Dir, Ecn};
    use crate::time::MS;

    /// A hash that lands in bucket `b` of 1024.
    fn hash_for(b: u32) -> u32 {
        b << 22
    }

    fn pkt(bucket: u32, ecn: Ecn, len: u32, seq: u32) -> Packet {
        let mut p = Packet::new(bucket, Dir::Fwd, 0, 1);
        p.len = len;
        p.ecn = ecn;
        p.hash = hash_for(bucket);
        p.seq = seq;
        p
    }

    #[test]
    fn fq_codel_classifies_by_reciprocal_scale_of_hash() {
        let q = FqCodel::new(&FqCodelParams::default());
        assert_eq!(q.bucket_of(0), 0);
        assert_eq!(q.bucket_of(u32::MAX), 1023);
        assert_eq!(q.bucket_of(hash_for(17)), 17);
        let q = FqCodel::new(&FqCodelParams {
            flows: 3,
            ..Default::default()
        });
        assert_eq!(q.bucket_of(0x8000_0000), 1);
    }

    #[test]
    fn fq_codel_ce_threshold_selector_marks_ect1_but_not_ect0() {
        let p = FqCodelParams {
            ce_threshold_ms: Some(1.0),
            ce_threshold_selector: Some(1),
            ce_threshold_mask: Some(3),
            ..Default::default()
        };
        let mut q = FqCodel::new(&p);
        let mut d = Vec::new();
        for (ecn, soj, want) in [
            (Ecn::Ect1, 2 * MS, Ecn::Ce),
            (Ecn::Ect0, 2 * MS, Ecn::Ect0),
            (Ecn::NotEct, 2 * MS, Ecn::NotEct),
            (Ecn::Ect1, MS / 2, Ecn::Ect1),
        ] {
            q.enqueue(pkt(1, ecn, 1514, 0), 0, &mut d);
            assert_eq!(q.dequeue(soj, &mut d).unwrap().ecn, want, "{ecn:?}");
        }
        // Without selector (Linux 5.15), ECT(0) is marked too.
        let p = FqCodelParams {
            ce_threshold_ms: Some(1.0),
            ..Default::default()
        };
        let mut q = FqCodel::new(&p);
        q.enqueue(pkt(1, Ecn::Ect0, 1514, 0), 0, &mut d);
        assert_eq!(q.dequeue(2 * MS, &mut d).unwrap().ecn, Ecn::Ce);
        assert!(d.is_empty());
    }

    #[test]
    fn fq_codel_drop_drops_from_the_fattest_flows_head() {
        let p = FqCodelParams {
            limit: 10,
            ..Default::default()
        };
        let mut q = FqCodel::new(&p);
        let mut d = Vec::new();
        for s in 0..3 {
            q.enqueue(pkt(1, Ecn::NotEct, 1514, s), 0, &mut d);
        }
        for s in 0..7 {
            q.enqueue(pkt(2, Ecn::NotEct, 1514, s), 0, &mut d);
        }
        assert!(d.is_empty());
        // The 11th packet (to the thin flow) overflows: flow 2 is the fattest (7 x 1514 =
        // 10598 B); drop from its head until >= 5299 B are gone, i.e. 4 packets.
        q.enqueue(pkt(1, Ecn::NotEct, 1514, 3), 0, &mut d);
        assert_eq!(d.len(), 4);
        for (i, x) in d.iter().enumerate() {
            assert_eq!(x.pkt.flow, 2);
            assert_eq!(x.pkt.seq, i as u32);
            assert_eq!(x.reason, DropReason::Overlimit);
        }
        assert_eq!(q.len(), 7);
        assert_eq!(q.cvars[q.bucket_of(hash_for(2))].count, 4);
        assert_eq!(q.stats.drop_overlimit, 4);
    }

    #[test]
    fn fq_codel_drop_stops_at_drop_batch() {
        let p = FqCodelParams {
            limit: 200,
            drop_batch: 5,
            ..Default::default()
        };
        let mut q = FqCodel::new(&p);
        let mut d = Vec::new();
        for s in 0..201 {
            q.enqueue(pkt(3, Ecn::NotEct, 100, s), 0, &mut d);
        }
        assert_eq!(d.len(), 5);
        assert_eq!(q.len(), 196);
    }

    #[test]
    fn fq_codel_drr_shares_bytes_and_serves_new_flows_first() {
        let mut q = FqCodel::new(&FqCodelParams::default());
        let mut d = Vec::new();
        for s in 0..50 {
            q.enqueue(pkt(1, Ecn::NotEct, 1514, s), 0, &mut d);
            q.enqueue(pkt(2, Ecn::NotEct, 500, s), 0, &mut d);
        }
        // Both are new: flow 1 first (one quantum = 1 packet), then flow 2 (4 x 500 B > 1514),
        let order: Vec<u32> = (0..10)
            .map(|_| q.dequeue(MS / 10, &mut d).unwrap().flow)
            .collect();
        assert_eq!(order, vec![1, 2, 2, 2, 2, 1, 2, 2, 2, 1]);
        let mut bytes = [0u64; 3];
        for _ in 0..40 {
            let p = q.dequeue(MS / 10, &mut d).unwrap();
            bytes[p.flow as usize] += p.len as u64;
        }
        let r = bytes[1] as f64 / bytes[2] as f64;
        assert!((r - 1.0).abs() < 0.2, "{bytes:?}");
        // A sparse new flow is served before the backlogged old ones.
        q.enqueue(pkt(7, Ecn::NotEct, 66, 0), 0, &mut d);
        assert_eq!(q.dequeue(MS / 10, &mut d).unwrap().flow, 7);
    }

    #[test]
    fn fq_codel_codel_uses_whole_qdisc_backlog_for_mtu_check() {
        // Flow 1 has one packet at a time with a 50 ms sojourn; flow 2 keeps the qdisc
        // backlog above one MTU. Flow 1's CoDel must then drop (ecn off, Not-ECT).
        let p = FqCodelParams {
            ecn: false,
            ..Default::default()
        };
        let mut q = FqCodel::new(&p);
        let mut d = Vec::new();
        let mut drops1 = 0;
        for i in 0..4000u64 {
            let t = 50 * MS + i * MS / 10;
            for _ in 0..2 {
                if q.buckets[q.bucket_of(hash_for(2))].q.len() < 3 {
                    q.enqueue(pkt(2, Ecn::NotEct, 1514, 0), t, &mut d);
                }
            }
            if q.buckets[q.bucket_of(hash_for(1))].q.is_empty() {
                let mut x = pkt(1, Ecn::NotEct, 1514, 0);
                x.enq_ts = t - 50 * MS;
                q.enqueue(x, t - 50 * MS, &mut d);
            }
            d.clear();
            q.dequeue(t, &mut d);
            drops1 += d.iter().filter(|x| x.pkt.flow == 1).count();
        }
        assert!(drops1 > 0);
    }

    #[test]
    fn truesize_of_full_frame_and_ack() {
        assert_eq!(truesize(1514), 2304);
        assert_eq!(truesize(66), 768);
    }
}
