//! RED as `net/sched/sch_red.c` + `include/net/red.h` implement it, configured as
//! `tc qdisc add ... red limit L min A max B avpkt P probability X [burst N] [ecn] [harddrop]
//! [adaptive] [bandwidth R]` (iproute2 `q_red.c` computes Wlog and the other constants).
//!
//! Modelled as Linux:
//! - EWMA average `qavg` of the byte backlog at each enqueue, kept in fixed point scaled by
//!   `2^Wlog`; Wlog from tc's `tc_red_eval_ewma(min, burst, avpkt)` with tc's default burst
//!   `(2*min + max) / (3*avpkt)`;
//! - thresholds in bytes; `max_P = probability * 2^32`; between the thresholds the mark
//!   decision is Linux's count-based spacing: mark when `(qavg - min) * qcount >= qR`, with
//!   `qR` uniform in `[0, 2^32 / (max_P / (max - min)))` redrawn after each mark;
//! - above max: "hard mark" = drop, or CE-mark with `ecn` unless `harddrop`; between: "prob
//!   mark" = drop, or CE-mark with `ecn` (Not-ECT packets are dropped);
//! - the queue is a bfifo of `limit` bytes;
//! - adaptive RED (Floyd 2001 as in red.h): every HZ/2 jiffies (`red_adaptative_timer`, a
//!   `timer_list` the timer wheel runs every 512 ms at HZ 250, the first 500-532 ms after
//!   creation) max_P grows by min(1%, max_P/4) when qavg is above `min + 0.6 (max - min)`
//!   and max_P <= 50%, or shrinks to 0.9 max_P when qavg is below `min + 0.4 (max - min)` and
//!   max_P >= 1%.
//! - idle time: an idle period starts when a dequeue finds the queue empty (as Linux, so under
//!   a classful parent that never dequeues an empty child, it rarely starts) and ends at the
//!   next enqueue. Linux approximates the decay `qavg * (1 - W)^(idle / xmit_time(avpkt))`
//!   with tc's 256-entry Stab table; we compute that decay exactly (in f64), using
//!   `bandwidth` (tc's default 10 Mbit/s when absent).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{check_nonzero, Drop, DropReason, QueueDisc};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Jiffies, SimDuration, SimTime, MS};

fn default_avpkt() -> u32 {
    1000
}
fn default_probability() -> f64 {
    0.02
}

/// tc parameters of red. `limit`, `min` and `max` are bytes and required.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedParams {
    pub limit: u64,
    pub min: u64,
    pub max: u64,
    #[serde(default = "default_avpkt")]
    pub avpkt: u32,
    #[serde(default = "default_probability")]
    pub probability: f64,
    /// Packets; None = tc's `(2*min + max) / (3*avpkt)`.
    #[serde(default)]
    pub burst: Option<u32>,
    #[serde(default)]
    pub ecn: bool,
    #[serde(default)]
    pub harddrop: bool,
    #[serde(default)]
    pub adaptive: bool,
    /// Link rate for the idle-time decay; None = tc's 10 Mbit/s.
    #[serde(default)]
    pub bandwidth_mbps: Option<f64>,
}

impl RedParams {
    /// A spec with the given byte thresholds and every other parameter at its default.
    pub fn new(limit: u64, min: u64, max: u64) -> RedParams {
        RedParams {
            limit,
            min,
            max,
            avpkt: default_avpkt(),
            probability: default_probability(),
            burst: None,
            ecn: false,
            harddrop: false,
            adaptive: false,
            bandwidth_mbps: None,
        }
    }

    fn burst_or_default(&self) -> u32 {
        self.burst
            .unwrap_or_else(|| ((2 * self.min + self.max) / (3 * self.avpkt.max(1) as u64)) as u32)
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        // the child bfifo's limit, as bfifo's own
        if self.limit < crate::packet::hdr::PSCHED_MTU as u64 {
            return Err((
                "limit".into(),
                format!(
                    "red limit {} bytes is below one MTU (1514 bytes)",
                    self.limit
                ),
            ));
        }
        check_nonzero("avpkt", self.avpkt as u64)?;
        if self.min > self.max {
            return Err((
                "min".into(),
                format!(
                    "min ({} bytes) must not exceed max ({} bytes)",
                    self.min, self.max
                ),
            ));
        }
        if !(self.probability.is_finite() && self.probability > 0.0 && self.probability <= 1.0) {
            return Err((
                "probability".into(),
                format!("probability must be in (0, 1], got {}", self.probability),
            ));
        }
        if let Some(b) = self.bandwidth_mbps {
            if !(b.is_finite() && b > 0.0) {
                return Err((
                    "bandwidth_mbps".into(),
                    format!("bandwidth_mbps must be > 0, got {b}"),
                ));
            }
        }
        let burst = self.burst_or_default();
        let Some(wlog) = eval_ewma(self.min, burst, self.avpkt) else {
            return Err((
                "burst".into(),
                format!(
                    "burst {burst} is too small for min {} and avpkt {} (tc: try burst {})",
                    self.min,
                    self.avpkt,
                    1 + self.min / self.avpkt as u64
                ),
            ));
        };
        // Linux red_check_params: qth_min and qth_max shifted by Wlog must fit in 32 bits.
        for (name, v) in [("min", self.min), ("max", self.max)] {
            let fls = 64 - v.leading_zeros();
            if fls + wlog >= 32 {
                return Err((
                    name.into(),
                    format!(
                        "{name} {v} bytes is too large for Wlog {wlog} (Linux red_check_params)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// iproute2 `tc_red_eval_ewma`: the smallest Wlog such that a burst of `burst` packets
/// arriving to an empty queue does not push qavg past `min`.
pub fn eval_ewma(qmin: u64, burst: u32, avpkt: u32) -> Option<u32> {
    let a = burst as f64 + 1.0 - qmin as f64 / avpkt as f64;
    if a < 1.0 {
        return None;
    }
    let mut w = 0.5f64;
    for wlog in 1..32 {
        if a <= (1.0 - (1.0 - w).powf(burst as f64)) / w {
            return Some(wlog);
        }
        w /= 2.0;
    }
    None
}

const RED_ONE_PERCENT: u32 = 42_949_673; // round(2^32 / 100)
const MAX_P_MIN: u32 = RED_ONE_PERCENT;
const MAX_P_MAX: u32 = 50 * RED_ONE_PERCENT;
/// `red_adaptative_timer`'s period, HZ/2 jiffies.
const ADAPT_PERIOD: SimTime = 500 * MS;

/// When `red_adaptative_timer`, a `timer_list` re-armed HZ/2 jiffies on at `now` by a node
/// whose jiffies are `clock`, runs: on the timer wheel's level 1 (8-jiffy buckets), 512 ms
/// later at HZ 250.
fn next_adapt(clock: &Jiffies, now: SimTime) -> SimTime {
    clock.timer_in(now, ADAPT_PERIOD)
}

/// `reciprocal_value`.
fn reciprocal_value(d: u32) -> u32 {
    (1u64 << 32).div_ceil(d as u64) as u32
}

/// Counters of `struct red_stats`.
#[derive(Clone, Debug, Default)]
pub struct RedStats {
    pub prob_drop: u64,
    pub prob_mark: u64,
    pub forced_drop: u64,
    pub forced_mark: u64,
    /// Drops by the byte limit of the child bfifo.
    pub pdrop: u64,
}

pub struct Red {
    limit: u64,
    // red_parms
    qth_min: u64,
    qth_max: u64,
    qth_delta: u32,
    target_min: u64,
    target_max: u64,
    max_p: u32,
    max_p_reciprocal: u32,
    wlog: u32,
    ecn: bool,
    harddrop: bool,
    adaptive: bool,
    /// ns to send one `avpkt` at the configured bandwidth.
    xmit_ns: f64,
    // red_vars
    qcount: i32,
    qr: u32,
    qavg: u64,
    qidle_start: Option<SimTime>,
    q: VecDeque<Packet>,
    bytes: u64,
    next_adapt: SimTime,
    /// The node's jiffies, for the adaptive timer.
    clock: Jiffies,
    rng: Rng,
    pub stats: RedStats,
}

impl Red {
    /// Build from a validated spec.
    pub fn new(p: &RedParams, rng: Rng) -> Red {
        let wlog = eval_ewma(p.min, p.burst_or_default(), p.avpkt).unwrap_or(1);
        let delta = ((p.max - p.min) as u32).max(1);
        let max_p = (p.probability * 4_294_967_296.0).min(u32::MAX as f64) as u32;
        let bw = p.bandwidth_mbps.unwrap_or(10.0) * 1e6;
        let d5 = delta / 5;
        Red {
            limit: p.limit,
            qth_min: p.min << wlog,
            qth_max: p.max << wlog,
            qth_delta: delta,
            target_min: p.min + 2 * d5 as u64,
            target_max: p.min + 3 * d5 as u64,
            max_p,
            max_p_reciprocal: reciprocal_value((max_p / delta).max(1)),
            wlog,
            ecn: p.ecn,
            harddrop: p.harddrop,
            adaptive: p.adaptive,
            xmit_ns: p.avpkt as f64 * 8.0 / bw * 1e9,
            qcount: -1,
            qr: 0,
            qavg: 0,
            qidle_start: None,
            q: VecDeque::with_capacity(1024),
            bytes: 0,
            next_adapt: if p.adaptive {
                // red_init: mod_timer(jiffies + HZ / 2) at creation, time 0.
                next_adapt(&super::kernel_jiffies(0), 0)
            } else {
                crate::time::NEVER
            },
            clock: super::kernel_jiffies(0),
            rng,
            stats: RedStats::default(),
        }
    }

    /// Average queue in bytes.
    pub fn qavg_bytes(&self) -> f64 {
        self.qavg as f64 / (1u64 << self.wlog) as f64
    }
    pub fn wlog(&self) -> u32 {
        self.wlog
    }
    /// Current max_P as a fraction.
    pub fn max_p(&self) -> f64 {
        self.max_p as f64 / 4_294_967_296.0
    }

    /// `red_random`: uniform in [0, 2^32 / (max_P / delta)).
    fn red_random(&mut self) -> u32 {
        ((self.rng.next_u32() as u64 * self.max_p_reciprocal as u64) >> 32) as u32
    }

    /// qavg after an idle period that started at `start` (see the module doc).
    fn qavg_from_idle(&self, start: SimTime, now: SimTime) -> u64 {
        let m = now.saturating_sub(start) as f64 / self.xmit_ns;
        let w = 1.0 / (1u64 << self.wlog) as f64;
        (self.qavg as f64 * (1.0 - w).powf(m)) as u64
    }

    /// `red_calc_qavg_no_idle_time`.
    fn qavg_no_idle(&self, backlog: u64) -> u64 {
        self.qavg
            .wrapping_add(backlog.wrapping_sub(self.qavg >> self.wlog))
    }

    fn set_max_p_reciprocal(&mut self) {
        // DIV_ROUND_CLOSEST(max_P, qth_delta)
        let d = self.qth_delta;
        let v = ((self.max_p as u64 + d as u64 / 2) / d as u64) as u32;
        self.max_p_reciprocal = reciprocal_value(v.max(1));
    }
}

/// `red_action` outcomes (RED_DONT_MARK, RED_PROB_MARK, RED_HARD_MARK).
#[derive(PartialEq, Eq, Debug)]
#[allow(clippy::enum_variant_names)]
enum Action {
    DontMark,
    ProbMark,
    HardMark,
}

impl QueueDisc for Red {
    fn kind(&self) -> &'static str {
        "red"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        self.qavg = match self.qidle_start {
            Some(start) => self.qavg_from_idle(start, now),
            None => self.qavg_no_idle(self.bytes),
        };
        self.qidle_start = None;
        // red_action
        let action = if self.qavg < self.qth_min {
            self.qcount = -1;
            Action::DontMark
        } else if self.qavg >= self.qth_max {
            self.qcount = -1;
            Action::HardMark
        } else {
            self.qcount += 1;
            if self.qcount != 0 {
                // red_mark_probability
                let above = (self.qavg - self.qth_min) >> self.wlog;
                if above * self.qcount as u64 >= self.qr as u64 {
                    self.qcount = 0;
                    self.qr = self.red_random();
                    Action::ProbMark
                } else {
                    Action::DontMark
                }
            } else {
                self.qr = self.red_random();
                Action::DontMark
            }
        };
        match action {
            Action::DontMark => {}
            Action::ProbMark => {
                if self.ecn && pkt.ecn.set_ce() {
                    self.stats.prob_mark += 1;
                } else {
                    self.stats.prob_drop += 1;
                    drops.push(Drop {
                        pkt,
                        reason: DropReason::Aqm,
                    });
                    return;
                }
            }
            Action::HardMark => {
                if !self.harddrop && self.ecn && pkt.ecn.set_ce() {
                    self.stats.forced_mark += 1;
                } else {
                    self.stats.forced_drop += 1;
                    drops.push(Drop {
                        pkt,
                        reason: DropReason::Aqm,
                    });
                    return;
                }
            }
        }
        // Child bfifo.
        if self.bytes + pkt.len as u64 <= self.limit {
            self.bytes += pkt.len as u64;
            self.q.push_back(pkt);
        } else {
            self.stats.pdrop += 1;
            drops.push(Drop {
                pkt,
                reason: DropReason::Overlimit,
            });
        }
    }

    fn dequeue(&mut self, now: SimTime, _drops: &mut Vec<Drop>) -> Option<Packet> {
        match self.q.pop_front() {
            Some(p) => {
                self.bytes -= p.len as u64;
                Some(p)
            }
            None => {
                if self.qidle_start.is_none() {
                    self.qidle_start = Some(now);
                }
                None
            }
        }
    }

    fn len(&self) -> usize {
        self.q.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn next_timer(&self) -> SimTime {
        self.next_adapt
    }
    /// `red_init`: mod_timer(jiffies + HZ / 2) when adaptive.
    fn start(&mut self, now: SimTime, tick_phase: SimDuration) {
        self.clock = super::kernel_jiffies(tick_phase);
        if self.adaptive {
            self.next_adapt = next_adapt(&self.clock, now);
        }
    }

    /// `red_adaptative_algo`, every HZ/2 jiffies when adaptive.
    fn on_timer(&mut self, now: SimTime) {
        if !self.adaptive || now < self.next_adapt {
            return;
        }
        let qavg = match self.qidle_start {
            Some(start) => self.qavg_from_idle(start, now),
            None => self.qavg,
        } >> self.wlog;
        if qavg > self.target_max && self.max_p <= MAX_P_MAX {
            self.max_p += RED_ONE_PERCENT.min(self.max_p / 4);
        } else if qavg < self.target_min && self.max_p >= MAX_P_MIN {
            self.max_p = (self.max_p / 10) * 9;
        }
        self.set_max_p_reciprocal();
        self.next_adapt = next_adapt(&self.clock, now);
    }

    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("qavg_bytes", self.qavg_bytes()));
        out.push(("max_p", self.max_p()));
        out.push(("prob_mark", self.stats.prob_mark as f64));
        out.push(("prob_drop", self.stats.prob_drop as f64));
        out.push(("forced_mark", self.stats.forced_mark as f64));
        out.push(("forced_drop", self.stats.forced_drop as f64));
        out.push(("pdrop", self.stats.pdrop as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Dir, Ecn};
    use crate::rng::{stream, Rng};

    fn red(p: RedParams) -> Red {
        p.validate().unwrap();
        Red::new(&p, Rng::new(3, stream::QDISC))
    }

    fn pkt(ecn: Ecn) -> Packet {
        let mut p = Packet::new(0, Dir::Fwd, 0, 1);
        p.len = 1000;
        p.ecn = ecn;
        p
    }

    /// Hold the instantaneous backlog at `depth` packets for `n` arrivals; returns
    /// (marked, dropped) among those arrivals.
    fn hold(q: &mut Red, depth: usize, ecn: Ecn, n: usize) -> (usize, usize) {
        let mut d = Vec::new();
        let mut marks = 0;
        for _ in 0..n {
            let before = d.len();
            q.enqueue(pkt(ecn), 0, &mut d);
            if d.len() == before && q.q.back().unwrap().ecn == Ecn::Ce && ecn != Ecn::Ce {
                marks += 1;
                q.q.back_mut().unwrap().ecn = ecn;
            }
            while q.len() > depth {
                q.dequeue(0, &mut d);
            }
            while q.len() < depth {
                q.q.push_back(pkt(ecn));
                q.bytes += 1000;
            }
        }
        (marks, d.len())
    }

    #[test]
    fn red_tc_constants_match_iproute2() {
        // tc red limit 400000 min 30000 max 90000 avpkt 1000: burst = (60000+90000)/3000 = 50;
        // a = 50 + 1 - 30 = 21 and (1 - (1-W)^50)/W first reaches 21 at W = 1/32 (25.5; 15.4
        // at W = 1/16), so Wlog = 5.
        let p = RedParams::new(400_000, 30_000, 90_000);
        assert_eq!(p.burst_or_default(), 50);
        assert_eq!(eval_ewma(30_000, 50, 1000), Some(5));
        assert!(eval_ewma(30_000, 10, 1000).is_none());
    }

    #[test]
    fn red_does_nothing_below_min() {
        let mut q = red(RedParams::new(400_000, 30_000, 90_000));
        let (m, d) = hold(&mut q, 20, Ecn::NotEct, 5000);
        assert_eq!((m, d), (0, 0));
        assert!((q.qavg_bytes() - 20_000.0).abs() < 1000.0);
    }

    #[test]
    fn red_marks_or_drops_between_min_and_max_with_linear_probability() {
        // qavg ~ 60000: halfway, p_b = 0.5 * max_p = 0.01; with count spacing the marked
        // fraction is about p_b / (1 + p_b) / ... ~ 2 p_b / (1 + p_b) for uniform spacing.
        let mut p = RedParams::new(400_000, 30_000, 90_000);
        p.probability = 0.1;
        let mut q = red(p.clone());
        let (m, d) = hold(&mut q, 60, Ecn::NotEct, 40_000);
        assert_eq!(m, 0);
        let frac = d as f64 / 40_000.0;
        // p_b = 0.05; RED's uniform inter-drop spacing gives 1 drop per ~(1/p_b + 1)/2 arrivals.
        assert!(frac > 0.07 && frac < 0.12, "{frac}");
        // With ecn the ECT packets are marked instead.
        p.ecn = true;
        let mut q = red(p);
        let (m, d) = hold(&mut q, 60, Ecn::Ect0, 40_000);
        assert_eq!(d, 0);
        let frac = m as f64 / 40_000.0;
        assert!(frac > 0.07 && frac < 0.12, "{frac}");
    }

    #[test]
    fn red_above_max_drops_or_marks_unless_harddrop() {
        let mut p = RedParams::new(400_000, 30_000, 90_000);
        p.ecn = true;
        let mut q = red(p.clone());
        let (m, d) = hold(&mut q, 150, Ecn::Ect0, 10_000);
        assert_eq!(d, 0);
        assert!(m > 9_000, "{m}");
        p.harddrop = true;
        let mut q = red(p.clone());
        let (_, d) = hold(&mut q, 150, Ecn::Ect0, 10_000);
        assert!(d > 9_000);
        // Not-ECT are dropped in ecn mode.
        p.harddrop = false;
        let mut q = red(p);
        let (_, d) = hold(&mut q, 150, Ecn::NotEct, 10_000);
        assert!(d > 9_000);
    }

    #[test]
    fn red_idle_time_decays_the_average() {
        let mut q = red(RedParams::new(400_000, 30_000, 90_000));
        hold(&mut q, 50, Ecn::NotEct, 5000);
        let before = q.qavg_bytes();
        let mut d = Vec::new();
        while q.dequeue(0, &mut d).is_some() {}
        // 10 Mbit/s, avpkt 1000: 0.8 ms per packet; 10 ms idle = 12.5 packet times,
        // (1 - 1/32)^12.5 = 0.672.
        assert_eq!(q.wlog(), 5);
        q.enqueue(pkt(Ecn::NotEct), 10 * MS, &mut d);
        let ratio = q.qavg_bytes() / before;
        assert!((ratio - 0.672).abs() < 0.01, "{ratio}");
        // Without an empty dequeue no idle period starts (as Linux): only the EWMA step.
        let mut q = red(RedParams::new(400_000, 30_000, 90_000));
        hold(&mut q, 50, Ecn::NotEct, 5000);
        while q.len() > 0 {
            q.dequeue(0, &mut d);
        }
        let before = q.qavg_bytes();
        q.enqueue(pkt(Ecn::NotEct), 10 * MS, &mut d);
        assert!((q.qavg_bytes() / before - 31.0 / 32.0).abs() < 0.001);
    }

    #[test]
    fn red_adaptive_raises_max_p_when_average_is_above_target_range() {
        let mut p = RedParams::new(400_000, 30_000, 90_000);
        p.adaptive = true;
        p.ecn = true;
        let mut q = red(p);
        // Every HZ/2 = 125 jiffies, run by the timer wheel at the next multiple of 8 jiffies
        // after the expiry: 512 ms at HZ 250.
        assert_eq!(q.next_timer(), 512 * MS);
        hold(&mut q, 80, Ecn::Ect0, 5000);
        let p0 = q.max_p();
        q.on_timer(512 * MS);
        assert!(
            (q.max_p() - (p0 + p0 / 4.0)).abs() < 1e-6,
            "{} {p0}",
            q.max_p()
        );
        assert_eq!(q.next_timer(), 1024 * MS);
        hold(&mut q, 10, Ecn::Ect0, 5000);
        let p1 = q.max_p();
        q.on_timer(1024 * MS);
        assert!((q.max_p() - p1 * 0.9).abs() < 1e-6);
    }
}
