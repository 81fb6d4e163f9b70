//! CoDel (RFC 8289) as Linux implements it: the reusable core of `include/net/codel.h` and
//! `include/net/codel_impl.h`, and the single-FIFO qdisc `net/sched/sch_codel.c`.
//!
//! Modelled as Linux does:
//! - Time unit: Linux's `codel_time_t` is `ns >> 10` (about 1.024 us) of the kernel's
//!   monotonic clock, a wrapping u32 compared by signed differences (`codel_time_before/after`).
//!   Enqueue stamps, target, interval and ce_threshold are all kept in that unit, so rounding
//!   and wrapping are Linux's. The clock's value at the start of a run is the host's uptime,
//!   which the experiment does not control: `clock_offset_s`, random per run unless set. It
//!   matters: `drop_next` starts at 0, so whether the first entry to the dropping state counts
//!   as "within 16 intervals of the last drop" (and restores `count` with one Newton step from
//!   `rec_inv_sqrt` = 0, which then stays 0: a mark or drop at every dequeue while dropping)
//!   depends on it, for a queue whose `count` grew before (fq_codel's overlimit drops).
//! - `rec_inv_sqrt` is Q0.16 (a u16), widened to Q0.32 for one Newton step per change of
//!   `count`, and the control law is `t + reciprocal_scale(interval, rec_inv_sqrt << 16)`.
//! - The backlog used by the "backlog <= mtu" check is the qdisc's byte backlog *after* the
//!   packet under test was removed (as `dequeue_func` updates `sch->qstats.backlog` first).
//! - `ce_threshold`: step CE at dequeue on `ldelay > ce_threshold`, optionally restricted to
//!   packets whose `(tos & mask) == selector` (fq_codel only, Linux 5.16+). Our packets carry no
//!   DSCP, so the tos byte is the ECN field.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Drop, DropReason, QueueDisc};
use crate::packet::{hdr, Packet};
use crate::time::SimTime;

/// `CODEL_SHIFT`: codel time is ns >> 10.
pub const CODEL_SHIFT: u32 = 10;
/// Codel time: ns >> 10, wrapping (`codel_time_t`).
pub type CodelTime = u32;
/// Codel time wraps after 2^32 units of 1024 ns (about 73 minutes).
pub const CODEL_WRAP_NS: u64 = 1 << (32 + CODEL_SHIFT);
const REC_INV_SQRT_BITS: u32 = 16;
const REC_INV_SQRT_SHIFT: u32 = 32 - REC_INV_SQRT_BITS;

/// `codel_time_after(a, b)`.
#[inline]
pub fn time_after(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `codel_time_after_eq(a, b)`.
#[inline]
pub fn time_after_eq(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// `codel_time_before(a, b)`.
#[inline]
pub fn time_before(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// A tc time given in ms (as our specs do) to codel time, the way tc and the kernel convert it:
/// tc sends whole microseconds, the kernel turns them into `(us * 1000) >> 10`.
pub fn ms_to_codel(ms: f64) -> CodelTime {
    let us = (ms * 1000.0).round() as u64;
    ((us * 1000) >> CODEL_SHIFT) as CodelTime
}

/// The kernel clock at simulated time 0, in ns: `clock_offset_s` if given, else drawn
/// uniformly over one wrap of codel time from the qdisc's random stream.
pub fn clock_offset_ns(clock_offset_s: Option<f64>, rng: Option<&mut crate::rng::Rng>) -> u64 {
    match (clock_offset_s, rng) {
        (Some(s), _) => (s.max(0.0) * 1e9) as u64 % CODEL_WRAP_NS,
        (None, Some(r)) => r.next_u64() % CODEL_WRAP_NS,
        (None, None) => 0,
    }
}

/// CoDel parameters (`struct codel_params`), in codel time.
#[derive(Clone, Debug)]
pub struct CodelConfig {
    pub target: CodelTime,
    pub interval: CodelTime,
    /// `None` = CODEL_DISABLED_THRESHOLD.
    pub ce_threshold: Option<CodelTime>,
    /// `(tos & ce_threshold_mask) == ce_threshold_selector`; mask 0 = every packet qualifies.
    pub ce_threshold_selector: u8,
    pub ce_threshold_mask: u8,
    /// Bytes: no drop while the qdisc backlog is at most this.
    pub mtu: u32,
    pub ecn: bool,
    /// The kernel's monotonic clock at simulated time 0, ns.
    pub clock_offset_ns: u64,
}

impl CodelConfig {
    /// `codel_get_time()` at simulated time `ns`.
    #[inline]
    pub fn time(&self, ns: SimTime) -> CodelTime {
        ((ns + self.clock_offset_ns) >> CODEL_SHIFT) as CodelTime
    }
}

/// Per-queue CoDel state (`struct codel_vars`).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// Packets dropped (or marked) since entering the dropping state.
    pub count: u32,
    /// `count` at the previous entry to the dropping state.
    pub lastcount: u32,
    pub dropping: bool,
    /// 1/sqrt(count) in Q0.16.
    pub rec_inv_sqrt: u16,
    /// When the sojourn time first stayed above target (0 = not above).
    pub first_above_time: CodelTime,
    /// Next time to drop (or mark) while dropping.
    pub drop_next: CodelTime,
    /// Sojourn time of the last packet tested.
    pub ldelay: CodelTime,
}

/// Counters (`struct codel_stats` plus the ce_mark counter of the qdiscs).
#[derive(Clone, Debug, Default)]
pub struct CodelStats {
    pub maxpacket: u32,
    pub drop_count: u64,
    pub ecn_mark: u64,
    pub ce_mark: u64,
}

/// What CoDel needs from the queue it controls (Linux passes `dequeue_func`, `drop_func` and
/// a pointer to the backlog that decides the mtu check).
pub trait CodelQueue {
    /// Remove the head packet, updating the backlog counters.
    fn dequeue(&mut self) -> Option<Packet>;
    /// Byte backlog tested against `mtu` (fq_codel: the whole qdisc).
    fn backlog(&self) -> u64;
}

impl CodelVars {
    /// `codel_vars_init`.
    pub fn new() -> CodelVars {
        CodelVars::default()
    }

    /// One Newton-Raphson step: rec_inv_sqrt = rec_inv_sqrt/2 * (3 - count * rec_inv_sqrt^2),
    /// computed in Q0.32 and stored back in Q0.16 with Linux's truncations.
    pub fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
        let mut val = (3u64 << 32).wrapping_sub((self.count as u64).wrapping_mul(invsqrt2 as u64));
        val >>= 2; // as Linux, to keep the next product in range
        val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }

    /// `codel_control_law`: t + interval / sqrt(count).
    pub fn control_law(&self, t: CodelTime, interval: CodelTime) -> CodelTime {
        let scale = ((self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT) as u64;
        t.wrapping_add(((interval as u64 * scale) >> 32) as CodelTime)
    }

    /// `codel_should_drop`.
    fn should_drop(
        &mut self,
        pkt: Option<&Packet>,
        cfg: &CodelConfig,
        stats: &mut CodelStats,
        backlog: u64,
        now: CodelTime,
    ) -> bool {
        let Some(p) = pkt else {
            self.first_above_time = 0;
            return false;
        };
        self.ldelay = now.wrapping_sub(cfg.time(p.enq_ts));
        if p.len > stats.maxpacket {
            stats.maxpacket = p.len;
        }
        if time_before(self.ldelay, cfg.target) || backlog <= cfg.mtu as u64 {
            // Went below: stay below for at least one interval.
            self.first_above_time = 0;
            return false;
        }
        if self.first_above_time == 0 {
            self.first_above_time = now.wrapping_add(cfg.interval);
            false
        } else {
            time_after(now, self.first_above_time)
        }
    }

    /// `codel_dequeue`: the control law around `q.dequeue()`. Dropped packets go to `drops`.
    pub fn dequeue<Q: CodelQueue>(
        &mut self,
        q: &mut Q,
        cfg: &CodelConfig,
        stats: &mut CodelStats,
        now_ns: SimTime,
        drops: &mut Vec<Drop>,
    ) -> Option<Packet> {
        let now = cfg.time(now_ns);
        let Some(first) = q.dequeue() else {
            self.dropping = false;
            return None;
        };
        let mut skb = Some(first);
        let drop = self.should_drop(skb.as_ref(), cfg, stats, q.backlog(), now);
        if self.dropping {
            if !drop {
                self.dropping = false;
            } else if time_after_eq(now, self.drop_next) {
                while self.dropping && time_after_eq(now, self.drop_next) {
                    self.count = self.count.wrapping_add(1);
                    self.newton_step();
                    let p = skb.as_mut().expect("dropping with a packet");
                    if cfg.ecn && p.ecn.set_ce() {
                        stats.ecn_mark += 1;
                        self.drop_next = self.control_law(self.drop_next, cfg.interval);
                        break;
                    }
                    stats.drop_count += 1;
                    drops.push(Drop {
                        pkt: skb.take().unwrap(),
                        reason: DropReason::Aqm,
                    });
                    skb = q.dequeue();
                    if !self.should_drop(skb.as_ref(), cfg, stats, q.backlog(), now) {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next, cfg.interval);
                    }
                }
            }
        } else if drop {
            let p = skb.as_mut().unwrap();
            if cfg.ecn && p.ecn.set_ce() {
                stats.ecn_mark += 1;
            } else {
                stats.drop_count += 1;
                drops.push(Drop {
                    pkt: skb.take().unwrap(),
                    reason: DropReason::Aqm,
                });
                skb = q.dequeue();
                // Linux re-evaluates here for its side effects (ldelay, first_above_time).
                self.should_drop(skb.as_ref(), cfg, stats, q.backlog(), now);
            }
            self.dropping = true;
            let delta = self.count.wrapping_sub(self.lastcount);
            if delta > 1 && time_before(now.wrapping_sub(self.drop_next), 16 * cfg.interval) {
                self.count = delta;
                self.newton_step();
            } else {
                self.count = 1;
                self.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
            }
            self.lastcount = self.count;
            self.drop_next = self.control_law(now, cfg.interval);
        }
        if let (Some(p), Some(ce)) = (skb.as_mut(), cfg.ce_threshold) {
            if time_after(self.ldelay, ce) {
                let selected = cfg.ce_threshold_mask == 0
                    || (p.ecn.bits() & cfg.ce_threshold_mask) == cfg.ce_threshold_selector;
                if selected && p.ecn.set_ce() {
                    stats.ce_mark += 1;
                }
            }
        }
        skb
    }
}

/// `tc qdisc add ... codel` parameters (defaults as sch_codel).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CodelParams {
    /// Packets: tail drop at enqueue when qlen >= limit.
    pub limit: u32,
    pub target_ms: f64,
    pub interval_ms: f64,
    pub ecn: bool,
    pub ce_threshold_ms: Option<f64>,
    /// Bytes (`psched_mtu` of the device).
    pub mtu: u32,
    /// The kernel clock (uptime) at the run's start, s; unset: random per run.
    pub clock_offset_s: Option<f64>,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            limit: 1000,
            target_ms: 5.0,
            interval_ms: 100.0,
            ecn: false,
            ce_threshold_ms: None,
            mtu: hdr::PSCHED_MTU,
            clock_offset_s: None,
        }
    }
}

/// The queue of sch_codel: a FIFO with its byte backlog.
struct CodelFifo {
    q: VecDeque<Packet>,
    bytes: u64,
}

impl CodelQueue for CodelFifo {
    fn dequeue(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len as u64;
        Some(p)
    }
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

/// `sch_codel`: one FIFO under CoDel, tail drop at `limit` packets.
pub struct Codel {
    limit: u32,
    cfg: CodelConfig,
    vars: CodelVars,
    pub stats: CodelStats,
    fifo: CodelFifo,
}

impl Codel {
    /// A sch_codel whose clock starts at `clock_offset_s`, or 0 if unset.
    pub fn new(p: &CodelParams) -> Codel {
        Self::with_rng(p, None)
    }

    /// A sch_codel whose clock starts at `clock_offset_s`, or at a random point if unset.
    pub fn with_rng(p: &CodelParams, rng: Option<&mut crate::rng::Rng>) -> Codel {
        Codel {
            limit: p.limit,
            cfg: CodelConfig {
                target: ms_to_codel(p.target_ms),
                interval: ms_to_codel(p.interval_ms),
                ce_threshold: p.ce_threshold_ms.map(ms_to_codel),
                ce_threshold_selector: 0,
                ce_threshold_mask: 0,
                mtu: p.mtu,
                ecn: p.ecn,
                clock_offset_ns: clock_offset_ns(p.clock_offset_s, rng),
            },
            vars: CodelVars::new(),
            stats: CodelStats::default(),
            fifo: CodelFifo {
                q: VecDeque::with_capacity(1024),
                bytes: 0,
            },
        }
    }
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl QueueDisc for Codel {
    fn kind(&self) -> &'static str {
        "codel"
    }
    fn set_dev_mtu(&mut self, psched_mtu: u32) {
        self.cfg.mtu = psched_mtu; // codel_init: `q->params.mtu = psched_mtu(qdisc_dev(sch))`
    }
    fn enqueue(&mut self, pkt: Packet, _now: SimTime, drops: &mut Vec<Drop>) {
        if (self.fifo.q.len() as u64) < self.limit as u64 {
            self.fifo.bytes += pkt.len as u64;
            self.fifo.q.push_back(pkt);
        } else {
            drops.push(Drop {
                pkt,
                reason: DropReason::Overlimit,
            });
        }
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        self.vars
            .dequeue(&mut self.fifo, &self.cfg, &mut self.stats, now, drops)
    }
    fn len(&self) -> usize {
        self.fifo.q.len()
    }
    fn bytes(&self) -> u64 {
        self.fifo.bytes
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("count", self.vars.count as f64));
        out.push(("dropping", self.vars.dropping as u8 as f64));
        out.push((
            "ldelay_ms",
            ((self.vars.ldelay as u64) << CODEL_SHIFT) as f64 / 1e6,
        ));
        out.push(("drops_aqm", self.stats.drop_count as f64));
        out.push(("ecn_marks", self.stats.ecn_mark as f64));
        out.push(("ce_marks", self.stats.ce_mark as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Dir, Ecn};
    use crate::time::MS;

    fn pkt(ecn: Ecn, t: SimTime) -> Packet {
        let mut p = Packet::new(0, Dir::Fwd, 0, 1);
        p.len = 1514;
        p.ecn = ecn;
        p.enq_ts = t;
        p
    }

    /// Keep a standing queue of 20 packets whose sojourn is `sojourn` whenever they are looked
    /// at (every queued stamp is re-set before each dequeue), dequeue every `gap`.
    /// Returns (time, dropped?) events: a drop, or a CE mark when `false`.
    fn drive(
        q: &mut Codel,
        ecn: Ecn,
        sojourn: SimTime,
        gap: SimTime,
        n: usize,
    ) -> Vec<(SimTime, bool)> {
        let mut out = Vec::new();
        let mut d = Vec::new();
        let mut t = sojourn;
        for _ in 0..n {
            while q.len() < 20 {
                let e = t - sojourn;
                q.enqueue(pkt(ecn, e), e, &mut d);
            }
            for p in q.fifo.q.iter_mut() {
                p.enq_ts = t - sojourn;
            }
            d.clear();
            let p = q.dequeue(t, &mut d).unwrap();
            for _ in &d {
                out.push((t, true));
            }
            if p.ecn == Ecn::Ce {
                out.push((t, false));
            }
            t += gap;
        }
        out
    }

    /// Linux runs one Newton step per increment of count, starting from ~1.0 at count 1, so
    /// the value lags 1/sqrt(count) at small counts (0.5 at count 2) and converges after.
    #[test]
    fn newton_step_tracks_one_step_per_count_recurrence() {
        let mut v = CodelVars::new();
        v.count = 1;
        v.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
        let mut x = 1.0f64;
        for c in 2..400u32 {
            v.count = c;
            v.newton_step();
            x = x / 2.0 * (3.0 - c as f64 * x * x);
            let got = v.rec_inv_sqrt as f64 / 65536.0;
            assert!((got - x).abs() < 2e-4, "count {c}: {got} vs recurrence {x}");
            if c >= 10 {
                let exact = 1.0 / (c as f64).sqrt();
                assert!(
                    (got - exact).abs() / exact < 0.01,
                    "count {c}: {got} vs {exact}"
                );
            }
        }
        assert_eq!(v.control_law(0, 1000), (1000.0 * x) as u32);
    }

    #[test]
    fn codel_drop_spacing_follows_interval_over_sqrt_count() {
        let mut q = Codel::new(&CodelParams::default());
        // Sojourn 20 ms > target, dequeue every 0.1 ms.
        let ev = drive(&mut q, Ecn::NotEct, 20 * MS, MS / 10, 10000);
        let times: Vec<SimTime> = ev.iter().filter(|e| e.1).map(|e| e.0).collect();
        assert!(times.len() >= 13, "{times:?}");
        // First drop: one interval after first exceeding target (first dequeue at t = 20 ms).
        let first = times[0] as f64 / 1e6;
        assert!((first - 120.0).abs() < 0.3, "first drop at {first} ms");
        // Gap after the n-th drop: interval * rec_inv_sqrt(n+1), Linux's Newton values
        // (1, 0.5, 0.5625, 0.4877, 0.4415, ...), converging to interval/sqrt(count).
        let mut x = 1.0f64;
        for (i, w) in times.windows(2).enumerate().take(12) {
            let count = (i + 1) as f64;
            if i > 0 {
                x = x / 2.0 * (3.0 - count * x * x);
            }
            let gap = (w[1] - w[0]) as f64 / 1e6;
            assert!(
                (gap - 100.0 * x).abs() < 0.3,
                "gap {i}: {gap} ms, expected {}",
                100.0 * x
            );
            if i >= 8 {
                let ideal = 100.0 / count.sqrt();
                assert!(
                    (gap - ideal).abs() / ideal < 0.02,
                    "gap {i}: {gap} vs {ideal}"
                );
            }
        }
    }

    fn codel_at(offset_s: f64, ecn: bool) -> Codel {
        Codel::new(&CodelParams {
            ecn,
            clock_offset_s: Some(offset_s),
            ..CodelParams::default()
        })
    }

    #[test]
    fn codel_time_wraps_like_linux_u32() {
        // The same run with the kernel clock just before the 2^32-unit wrap, or far from it,
        // drops at the same simulated times (within the 0.1 ms dequeue spacing: the ns >> 10
        // rounding has another phase): comparisons are on signed differences.
        let wrap_s = CODEL_WRAP_NS as f64 / 1e9;
        let times = |offset_s: f64| -> Vec<SimTime> {
            let mut q = codel_at(offset_s, false);
            drive(&mut q, Ecn::NotEct, 20 * MS, MS / 10, 5000)
                .iter()
                .map(|e| e.0)
                .collect()
        };
        let base = times(0.0);
        assert!(base.len() > 5);
        for other in [times(wrap_s - 0.2), times(1000.0)] {
            assert_eq!(other.len(), base.len());
            for (a, b) in other.iter().zip(&base) {
                assert!(a.abs_diff(*b) <= MS / 10, "{other:?} vs {base:?}");
            }
        }
        assert!(time_after(5, u32::MAX - 5) && time_before(u32::MAX - 5, 5));
    }

    #[test]
    fn restoring_count_from_a_zero_rec_inv_sqrt_marks_every_packet() {
        // fq_codel_drop adds overlimit drops to count before CoDel ever entered dropping, while
        // rec_inv_sqrt is still 0 (codel_vars_init). Whether the first entry restores that
        // count depends on `now - drop_next(0)` being within 16 intervals, i.e. on the
        // kernel clock (in s32 arithmetic: true for about half of all uptimes, e.g. 0.5 s
        // or one hour), and one Newton step from 0 leaves 0, so drop_next never advances and
        // every dequeue while dropping is marked.
        let marks = |offset_s: f64| -> (usize, u16) {
            let mut q = codel_at(offset_s, true);
            q.vars.count = 50;
            let ev = drive(&mut q, Ecn::Ect0, 20 * MS, MS / 10, 3000);
            (ev.iter().filter(|e| !e.1).count(), q.vars.rec_inv_sqrt)
        };
        let (stuck, ris) = marks(0.5);
        assert_eq!(ris, 0);
        // Dequeues every 0.1 ms from 120 ms (first entry) to 300 ms: all marked.
        assert!(stuck > 1700, "{stuck} marks");
        assert_eq!(marks(3600.0).1, 0);
        // 1000 s of uptime: the first entry starts from count 1 as RFC 8289 intends.
        let (healthy, ris) = marks(1000.0);
        assert!(ris > 0);
        assert!(healthy < 20, "{healthy} marks");
    }

    #[test]
    fn codel_does_nothing_below_target() {
        let mut q = Codel::new(&CodelParams::default());
        let ev = drive(&mut q, Ecn::NotEct, 4 * MS, MS / 10, 5000);
        assert!(ev.is_empty());
        assert_eq!(q.vars().count, 0);
    }

    #[test]
    fn codel_does_nothing_with_backlog_at_most_one_mtu() {
        let mut q = Codel::new(&CodelParams::default());
        let mut d = Vec::new();
        // One packet at a time, each with a 50 ms sojourn: backlog after removal is 0.
        for i in 0..3000u64 {
            let t = i * MS / 10 + 50 * MS;
            q.enqueue(pkt(Ecn::NotEct, t - 50 * MS), t - 50 * MS, &mut d);
            assert!(q.dequeue(t, &mut d).is_some());
        }
        assert!(d.is_empty());
        assert!(!q.vars().dropping);
    }

    #[test]
    fn codel_ecn_marks_instead_of_dropping() {
        let p = CodelParams {
            ecn: true,
            ..Default::default()
        };
        let mut q = Codel::new(&p);
        let ev = drive(&mut q, Ecn::Ect0, 20 * MS, MS / 10, 8000);
        assert!(ev.iter().all(|e| !e.1), "no drops for ECT");
        let marks: Vec<SimTime> = ev.iter().map(|e| e.0).collect();
        assert!(marks.len() >= 6);
        let gap1 = (marks[1] - marks[0]) as f64 / 1e6;
        let gap2 = (marks[2] - marks[1]) as f64 / 1e6;
        assert!(
            (gap1 - 100.0).abs() < 0.3 && (gap2 - 50.0).abs() < 0.3,
            "{gap1} {gap2}"
        );
        // Not-ECT packets are still dropped.
        let mut q = Codel::new(&p);
        let ev = drive(&mut q, Ecn::NotEct, 20 * MS, MS / 10, 3000);
        assert!(ev.iter().any(|e| e.1));
    }

    #[test]
    fn codel_ce_threshold_marks_ect_above_threshold_only() {
        let p = CodelParams {
            ce_threshold_ms: Some(1.0),
            ..Default::default()
        };
        let mut q = Codel::new(&p);
        let mut d = Vec::new();
        for (ecn, soj, want) in [
            (Ecn::Ect0, 2 * MS, Ecn::Ce),
            (Ecn::Ect1, 2 * MS, Ecn::Ce),
            (Ecn::NotEct, 2 * MS, Ecn::NotEct),
            (Ecn::Ect1, MS / 2, Ecn::Ect1),
        ] {
            q.enqueue(pkt(ecn, 0), 0, &mut d);
            assert_eq!(q.dequeue(soj, &mut d).unwrap().ecn, want);
        }
    }

    #[test]
    fn codel_tail_drops_at_limit() {
        let p = CodelParams {
            limit: 3,
            ..Default::default()
        };
        let mut q = Codel::new(&p);
        let mut d = Vec::new();
        for _ in 0..5 {
            q.enqueue(pkt(Ecn::NotEct, 0), 0, &mut d);
        }
        assert_eq!(q.len(), 3);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|x| x.reason == DropReason::Overlimit));
    }
}
