//! `sch_dualpi2` (RFC 9332, DualQ Coupled AQM), following the L4STeam hrtimer version
//! (`L4STeam/linux@e1ec6e79` net/sched/sch_dualpi2.c, "DPI2-hr"), the 5.15-era code.
//!
//! Modelled as Linux:
//! - classification at enqueue: `(ecn & ecn_mask) != 0` -> L-queue, else C-queue;
//! - `filters` (tc filters on the qdisc, a DSCP each, as `u32 match ip dsfield`): what the
//!   ECN mask leaves in the C-queue a filter may send to the L-queue, as mainline's
//!   `dualpi2_skb_classify` (Linux 6.17) does with a filter's `classid`: `l4s` (1:1, marked by
//!   the coupled probability and the step, a Not-ECT packet dropped where an ECT one would be
//!   marked) or `llll` (1:2, never marked or dropped by the AQM); the 5.15 code has no
//!   filters, so without any the model is that code;
//! - tail drop when the total qlen >= limit; `apply_step = (L qlen > 1)` stamped at enqueue;
//! - WRR credit scheduler: `credit <= 0` serves L; the credit only moves while both queues hold
//!   packets (+wc*len for an L packet, -wl*len for a C packet) and resets to
//!   `init = mtu*(wc - wl)` when both are empty;
//! - decisions at dequeue (`drop_early` off): no action below a 2 MTU backlog (the backlog
//!   without the packet under test); C: two independent u32 rolls `rnd <= p'` (p'^2) -> mark if
//!   ECT and not overloaded, else drop; L: `k*p'` with overload (`k*p' > 1`) handling; then
//!   the step marker for surviving L packets (`sojourn > step_thresh`, or L qlen in packets);
//! - PI2 update every `tupdate` in Linux's integer arithmetic: prob is a u32 (MAX_PROB =
//!   2^32-1), alpha/beta are tc's `Hz * 256` integers scaled to `MAX_PROB/1e9 per ns / 4` and the
//!   ns delay error times them is divided by 64; saturating at 0 and MAX_PROB; capped at
//!   MAX_PROB/k without drop_overload;
//! - qdelay fed to the PI: DPI2-hr records each queue's head sojourn at every dequeue
//!   (0 for an empty queue); `qdelay_sample = "head_at_update"` instead reads the head sojourn at
//!   timer time (DPI2-2019 and mainline 6.17+).
//!
//! One deliberate difference: Linux tests "queue non-empty" as "head sojourn != 0" (never 0 ns
//! on real hardware); with a simulated clock a packet can leave in the nanosecond it arrived,
//! so we test emptiness directly.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{check_ms, check_nonzero, check_pos_ms, Classifier, Drop, DropReason, QueueDisc};
use crate::packet::{hdr, Ecn, Packet};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

/// `MAX_PROB`: probability 1 as a u32.
pub const MAX_PROB: u32 = u32::MAX;
const MAX_WC: u8 = 100;

/// Which codepoints go to the L-queue.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EcnMask {
    /// Mask 1: ECT(1) and CE.
    Ect1,
    /// Mask 3: any ECT codepoint and CE.
    AnyEct,
}

impl EcnMask {
    pub fn bits(self) -> u8 {
        match self {
            EcnMask::Ect1 => 1,
            EcnMask::AnyEct => 3,
        }
    }
}

/// What a filter makes of a packet (`enum dualpi2_classification_results`: the minor of the
/// filter's `classid`).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FilterClass {
    /// `DUALPI2_C_CLASSIC` (classid 1:0): the C-queue.
    Classic,
    /// `DUALPI2_C_L4S` (1:1): the L-queue, with its AQM.
    L4s,
    /// `DUALPI2_C_LLLL` (1:2): the L-queue, never marked or dropped by the AQM.
    Llll,
}

/// A tc filter on the qdisc steering a DSCP to a class.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DualPi2Filter {
    pub dscp: u8,
    pub class: FilterClass,
}

/// Where the PI controller's queue delay comes from.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum QdelaySample {
    /// DPI2-hr: head sojourn of each queue recorded at the last dequeue.
    LastDequeue,
    /// DPI2-main / DPI2-2019: head sojourn of each queue at update time.
    HeadAtUpdate,
}

/// tc parameters of dualpi2 (Linux defaults).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DualPi2Params {
    /// Packets, both queues together.
    pub limit: u32,
    pub target_ms: f64,
    pub tupdate_ms: f64,
    /// Integral gain, Hz, passed to the kernel as round(alpha * 256): the default 0.16 gives
    /// the kernel's default 41. (tc truncates instead, so an explicit `alpha 0.16` on the tc
    /// command line yields 40.)
    pub alpha: f64,
    /// Proportional gain, Hz, as round(beta * 256) (default 819).
    pub beta: f64,
    pub step_thresh_ms: f64,
    /// Step threshold in packets of L-queue backlog instead of time.
    pub step_packets: Option<u32>,
    /// k (an integer in Linux).
    pub coupling_factor: f64,
    /// C-queue WRR weight, percent.
    pub c_protection: u8,
    pub ecn_mask: EcnMask,
    pub drop_overload: bool,
    pub drop_early: bool,
    /// Not a tc parameter: which kernel variant's delay sampling to model.
    pub qdelay_sample: QdelaySample,
    /// tc filters, tried in order for what the ECN mask leaves classic (mainline only).
    pub filters: Vec<DualPi2Filter>,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        DualPi2Params {
            limit: 10000,
            target_ms: 15.0,
            tupdate_ms: 16.0,
            alpha: 0.16,
            beta: 3.2,
            step_thresh_ms: 1.0,
            step_packets: None,
            coupling_factor: 2.0,
            c_protection: 10,
            ecn_mask: EcnMask::Ect1,
            drop_overload: true,
            drop_early: false,
            qdelay_sample: QdelaySample::LastDequeue,
            filters: Vec::new(),
        }
    }
}

/// Largest alpha/beta netlink value Linux accepts.
const ALPHA_BETA_MAX: u64 = (2u64 << 31) - 1;

impl DualPi2Params {
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        check_nonzero("limit", self.limit as u64)?;
        check_ms("target_ms", self.target_ms)?;
        check_pos_ms("tupdate_ms", self.tupdate_ms)?;
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v.is_finite() && v >= 0.0) || (v * 256.0).round() as u64 > ALPHA_BETA_MAX {
                return Err((
                    name.into(),
                    format!("{name} must be in [0, 2^24) Hz, got {v}"),
                ));
            }
        }
        check_ms("step_thresh_ms", self.step_thresh_ms)?;
        let k = self.coupling_factor;
        if !((1.0..=255.0).contains(&k) && k.fract() == 0.0) {
            return Err((
                "coupling_factor".into(),
                format!(
                    "coupling_factor must be a whole number in [1, 255] (u8 in Linux), got {k}"
                ),
            ));
        }
        for (i, f) in self.filters.iter().enumerate() {
            if f.dscp > 63 {
                return Err((
                    format!("filters[{i}].dscp"),
                    format!("a DSCP is 0..63, got {}", f.dscp),
                ));
            }
        }
        if self.c_protection > MAX_WC {
            return Err((
                "c_protection".into(),
                format!(
                    "c_protection must be <= 100 (percent), got {}",
                    self.c_protection
                ),
            ));
        }
        Ok(())
    }
}

/// A queued packet with its `dualpi2_skb_cb` bits.
#[derive(Clone, Copy)]
struct Entry {
    pkt: Packet,
    apply_step: bool,
    /// Its class (`l4s` or `llll` in the L-queue, `classic` in the C-queue).
    class: FilterClass,
}

/// Counters (the kernel's xstats plus per-queue splits).
#[derive(Clone, Debug, Default)]
pub struct DualPi2Stats {
    pub packets_in_c: u64,
    pub packets_in_l: u64,
    pub maxq: usize,
    /// All CE marks applied (PI and step).
    pub ecn_mark: u64,
    pub step_marks: u64,
    pub c_marks: u64,
    pub l_marks: u64,
    pub c_drops: u64,
    pub l_drops: u64,
    pub overload_drops: u64,
    pub tail_drops: u64,
}

pub struct DualPi2 {
    limit: usize,
    target: u64,
    tupdate: u64,
    /// Internal (scaled) gains.
    alpha: u32,
    beta: u32,
    step_thresh: u64,
    step_in_packets: bool,
    k: u8,
    ecn_mask: u8,
    /// Class per DSCP by the first filter that matches (None: no filters).
    by_dscp: Option<Box<[FilterClass; 64]>>,
    drop_overload: bool,
    drop_early: bool,
    sample: QdelaySample,
    mtu: u32,
    credit: i32,
    credit_init: i32,
    wc: i32,
    wl: i32,
    prob: u32,
    qdelay_c: u64,
    qdelay_l: u64,
    last_qdelay: u64,
    l_sojourn: u64,
    c_sojourn: u64,
    next_update: SimTime,
    lq: VecDeque<Entry>,
    cq: VecDeque<Entry>,
    backlog: u64,
    rng: Rng,
    pub stats: DualPi2Stats,
}

/// `dualpi2_scale_alpha_beta`: netlink units (Hz * 256) to the internal ones.
fn scale_alpha_beta(param: u32) -> u32 {
    (((param as u64 * MAX_PROB as u64) >> 2) / 1_000_000_000) as u32
}

fn us_to_ns(ms: f64) -> u64 {
    (ms * 1000.0).round() as u64 * 1000
}

impl DualPi2 {
    pub fn new(p: &DualPi2Params, rng: Rng) -> DualPi2 {
        let mtu = hdr::PSCHED_MTU;
        let wc = p.c_protection as i32;
        let wl = MAX_WC as i32 - wc;
        let init = mtu as i32 * (wc - wl);
        let (step_thresh, step_in_packets) = match p.step_packets {
            Some(n) => (n as u64, true),
            None => (us_to_ns(p.step_thresh_ms), false),
        };
        let tupdate = us_to_ns(p.tupdate_ms);
        DualPi2 {
            limit: p.limit as usize,
            target: us_to_ns(p.target_ms),
            tupdate,
            alpha: scale_alpha_beta((p.alpha * 256.0).round() as u32),
            beta: scale_alpha_beta((p.beta * 256.0).round() as u32),
            step_thresh,
            step_in_packets,
            k: p.coupling_factor as u8,
            ecn_mask: p.ecn_mask.bits(),
            by_dscp: (!p.filters.is_empty()).then(|| {
                let mut t = Box::new([FilterClass::Classic; 64]);
                for (d, c) in t.iter_mut().enumerate() {
                    if let Some(f) = p.filters.iter().find(|f| f.dscp as usize == d) {
                        *c = f.class;
                    }
                }
                t
            }),
            drop_overload: p.drop_overload,
            drop_early: p.drop_early,
            sample: p.qdelay_sample,
            mtu,
            credit: init,
            credit_init: init,
            wc,
            wl,
            prob: 0,
            qdelay_c: 0,
            qdelay_l: 0,
            last_qdelay: 0,
            l_sojourn: 0,
            c_sojourn: 0,
            next_update: tupdate,
            lq: VecDeque::with_capacity(1024),
            cq: VecDeque::with_capacity(1024),
            backlog: 0,
            rng,
            stats: DualPi2Stats::default(),
        }
    }

    /// The base probability p' as a u32 fraction of MAX_PROB.
    pub fn prob(&self) -> u32 {
        self.prob
    }
    /// Force p' (tests and experiments that pin the controller).
    #[cfg(test)]
    pub fn set_prob(&mut self, p: u32) {
        self.prob = p;
    }
    #[cfg(test)]
    pub fn l_len(&self) -> usize {
        self.lq.len()
    }
    #[cfg(test)]
    pub fn c_len(&self) -> usize {
        self.cq.len()
    }

    #[inline]
    fn roll(&mut self, prob: u32) -> bool {
        self.rng.next_u32() <= prob
    }

    #[inline]
    fn squared_roll(&mut self) -> bool {
        let p = self.prob;
        self.roll(p) && self.roll(p)
    }

    /// `dualpi2_skb_classify`: the ECN mask, then the filters (first match), else classic.
    #[inline]
    fn classify(&self, pkt: &Packet) -> FilterClass {
        if pkt.ecn.bits() & self.ecn_mask != 0 {
            return FilterClass::L4s;
        }
        match &self.by_dscp {
            Some(t) => t[pkt.dscp as usize & 63],
            None => FilterClass::Classic,
        }
    }

    /// `must_drop`: Some(reason) to drop; may CE-mark `pkt`, of class `class`.
    fn must_drop(&mut self, pkt: &mut Packet, class: FilterClass) -> Option<DropReason> {
        if class == FilterClass::Llll || self.backlog < 2 * self.mtu as u64 {
            return None;
        }
        let local_l_prob = self.prob as u64 * self.k as u64;
        let overloaded = local_l_prob > MAX_PROB as u64;
        if class == FilterClass::L4s {
            if overloaded {
                if self.drop_overload && self.squared_roll() {
                    return Some(DropReason::Overload);
                }
                self.mark(pkt, true);
            } else if self.roll(local_l_prob as u32) {
                // a Not-ECT packet a filter put here (mainline's `dualpi2_scalable_marking`)
                if pkt.ecn == Ecn::NotEct {
                    return Some(DropReason::Aqm);
                }
                self.mark(pkt, true);
            }
        } else if self.squared_roll() {
            if pkt.ecn.is_ect() && !overloaded {
                self.mark(pkt, false);
            } else if overloaded {
                return Some(DropReason::Overload);
            } else {
                return Some(DropReason::Aqm);
            }
        }
        None
    }

    fn mark(&mut self, pkt: &mut Packet, l4s: bool) -> bool {
        if pkt.ecn.set_ce() {
            self.stats.ecn_mark += 1;
            if l4s {
                self.stats.l_marks += 1;
            } else {
                self.stats.c_marks += 1;
            }
            true
        } else {
            false
        }
    }

    /// `calculate_probability`.
    fn calculate_probability(&mut self) -> u32 {
        let qdelay = self.qdelay_c.max(self.qdelay_l);
        let mut delta: i64 = (qdelay as i64 - self.target as i64) * self.alpha as i64;
        delta += (qdelay as i64 - self.last_qdelay as i64) * self.beta as i64;
        let new_prob = if delta > 0 {
            let (v, o) = self.prob.overflowing_add((delta as u64 / 64) as u32);
            if o || (delta as u64 / 64) > u32::MAX as u64 {
                MAX_PROB
            } else {
                v
            }
        } else {
            let d = (delta.unsigned_abs()) / 64;
            if d > self.prob as u64 {
                0
            } else {
                self.prob - d as u32
            }
        };
        self.last_qdelay = qdelay;
        if !self.drop_overload {
            return new_prob.min(MAX_PROB / self.k as u32);
        }
        new_prob
    }
}

impl QueueDisc for DualPi2 {
    fn classifier(&self) -> Classifier {
        let dscp = self.by_dscp.as_ref().map_or(0, |t| {
            t.iter()
                .enumerate()
                .filter(|(_, c)| **c != FilterClass::Classic)
                .fold(0u64, |m, (d, _)| m | 1 << d)
        });
        Classifier::new(self.ecn_mask, dscp)
    }
    fn set_dev_mtu(&mut self, psched_mtu: u32) {
        self.mtu = psched_mtu;
        self.credit_init = psched_mtu as i32 * (self.wc - self.wl);
        self.credit = self.credit_init;
    }
    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        if self.lq.len() + self.cq.len() >= self.limit {
            self.stats.tail_drops += 1;
            drops.push(Drop {
                pkt,
                reason: DropReason::Overlimit,
            });
            return;
        }
        let class = self.classify(&pkt);
        let l4s = class != FilterClass::Classic;
        if self.drop_early {
            if let Some(reason) = self.must_drop(&mut pkt, class) {
                if l4s {
                    self.stats.l_drops += 1;
                } else {
                    self.stats.c_drops += 1;
                }
                drops.push(Drop { pkt, reason });
                return;
            }
        }
        pkt.enq_ts = now;
        let total = self.lq.len() + self.cq.len();
        if total > self.stats.maxq {
            self.stats.maxq = total;
        }
        self.backlog += pkt.len as u64;
        if l4s {
            let apply_step = class == FilterClass::L4s && self.lq.len() > 1;
            self.stats.packets_in_l += 1;
            self.lq.push_back(Entry {
                pkt,
                apply_step,
                class,
            });
        } else {
            self.stats.packets_in_c += 1;
            self.cq.push_back(Entry {
                pkt,
                apply_step: false,
                class,
            });
        }
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        loop {
            // dequeue_packet: record head sojourns, then pick by WRR credit.
            self.qdelay_l = self
                .lq
                .front()
                .map_or(0, |e| now.saturating_sub(e.pkt.enq_ts));
            self.qdelay_c = self
                .cq
                .front()
                .map_or(0, |e| now.saturating_sub(e.pkt.enq_ts));
            let l_busy = !self.lq.is_empty();
            let c_busy = !self.cq.is_empty();
            let (mut e, l4s, mut credit_change) = if l_busy && (!c_busy || self.credit <= 0) {
                let e = self.lq.pop_front().unwrap();
                (e, true, if c_busy { self.wc } else { 0 })
            } else if c_busy {
                let e = self.cq.pop_front().unwrap();
                (e, false, if l_busy { -self.wl } else { 0 })
            } else {
                self.credit = self.credit_init;
                return None;
            };
            credit_change *= e.pkt.len as i32;
            self.backlog -= e.pkt.len as u64;
            if !self.drop_early {
                if let Some(reason) = self.must_drop(&mut e.pkt, e.class) {
                    if l4s {
                        self.stats.l_drops += 1;
                    } else {
                        self.stats.c_drops += 1;
                    }
                    if reason == DropReason::Overload {
                        self.stats.overload_drops += 1;
                    }
                    drops.push(Drop { pkt: e.pkt, reason });
                    continue;
                }
            }
            let sojourn = now.saturating_sub(e.pkt.enq_ts);
            if l4s {
                // do_step_aqm
                let delay = if self.step_in_packets {
                    self.lq.len() as u64
                } else {
                    sojourn
                };
                if e.apply_step && delay > self.step_thresh {
                    // a Not-ECT packet a filter put here is dropped (mainline's `do_step_aqm`)
                    if e.pkt.ecn == Ecn::NotEct {
                        self.stats.l_drops += 1;
                        drops.push(Drop {
                            pkt: e.pkt,
                            reason: DropReason::Aqm,
                        });
                        continue;
                    }
                    if self.mark(&mut e.pkt, true) {
                        self.stats.step_marks += 1;
                    }
                }
                self.l_sojourn = sojourn;
            } else {
                self.c_sojourn = sojourn;
            }
            self.credit += credit_change;
            return Some(e.pkt);
        }
    }

    fn len(&self) -> usize {
        self.lq.len() + self.cq.len()
    }
    fn bytes(&self) -> u64 {
        self.backlog
    }

    fn next_timer(&self) -> SimTime {
        self.next_update
    }

    /// `dualpi2_init`: the hrtimer starts `tupdate` from now.
    fn start(&mut self, now: SimTime, _tick_phase: SimDuration) {
        self.next_update = now + self.tupdate;
    }

    fn on_timer(&mut self, now: SimTime) {
        if now < self.next_update {
            return;
        }
        if self.sample == QdelaySample::HeadAtUpdate {
            self.qdelay_l = self
                .lq
                .front()
                .map_or(0, |e| now.saturating_sub(e.pkt.enq_ts));
            self.qdelay_c = self
                .cq
                .front()
                .map_or(0, |e| now.saturating_sub(e.pkt.enq_ts));
        }
        self.prob = self.calculate_probability();
        self.next_update = now + self.tupdate;
    }

    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        let p = self.prob as f64 / MAX_PROB as f64;
        out.push(("p_prime", p));
        out.push(("p_c", p * p));
        out.push(("p_l", (p * self.k as f64).min(1.0)));
        out.push(("l_sojourn_ms", self.l_sojourn as f64 / 1e6));
        out.push(("c_sojourn_ms", self.c_sojourn as f64 / 1e6));
        out.push(("qdelay_l_ms", self.qdelay_l as f64 / 1e6));
        out.push(("qdelay_c_ms", self.qdelay_c as f64 / 1e6));
        out.push(("l_qlen", self.lq.len() as f64));
        out.push(("c_qlen", self.cq.len() as f64));
        out.push(("credit", self.credit as f64));
        out.push(("ecn_marks", self.stats.ecn_mark as f64));
        out.push(("step_marks", self.stats.step_marks as f64));
        out.push(("c_marks", self.stats.c_marks as f64));
        out.push(("l_marks", self.stats.l_marks as f64));
        out.push(("c_drops", self.stats.c_drops as f64));
        out.push(("l_drops", self.stats.l_drops as f64));
        out.push(("overload_drops", self.stats.overload_drops as f64));
        out.push(("packets_in_c", self.stats.packets_in_c as f64));
        out.push(("packets_in_l", self.stats.packets_in_l as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Dir, Ecn};
    use crate::rng::{stream, Rng};
    use crate::time::MS;

    fn q(p: DualPi2Params) -> DualPi2 {
        DualPi2::new(&p, Rng::new(42, stream::QDISC))
    }

    fn pkt(ecn: Ecn, len: u32) -> Packet {
        let mut p = Packet::new(0, Dir::Fwd, 0, 1);
        p.len = len;
        p.ecn = ecn;
        p
    }

    #[test]
    fn dualpi2_classifies_ect1_and_ce_to_l_by_default() {
        let mut d = Vec::new();
        let mut x = q(DualPi2Params::default());
        for (e, l) in [
            (Ecn::Ect1, 1),
            (Ecn::Ce, 2),
            (Ecn::Ect0, 2),
            (Ecn::NotEct, 2),
        ] {
            x.enqueue(pkt(e, 1514), 0, &mut d);
            assert_eq!(x.l_len(), l, "{e:?}");
        }
        assert_eq!(x.c_len(), 2);
    }

    #[test]
    fn dualpi2_coupling_gives_classic_the_square_of_half_the_l_probability() {
        // Pin p' = 0.2: p_L = k p' = 0.4, p_C = p'^2 = 0.04 = (p_L/k)^2.
        let mut x = q(DualPi2Params {
            step_thresh_ms: 1e6,
            ..Default::default()
        });
        x.set_prob((0.2 * MAX_PROB as f64) as u32);
        let mut d = Vec::new();
        for _ in 0..40_000 {
            while x.len() < 8 {
                x.enqueue(pkt(Ecn::Ect1, 1514), 0, &mut d);
                x.enqueue(pkt(Ecn::Ect0, 1514), 0, &mut d);
            }
            x.dequeue(0, &mut d).unwrap();
        }
        let l_n = (x.stats.packets_in_l - x.l_len() as u64) as f64;
        let c_n = (x.stats.packets_in_c - x.c_len() as u64) as f64;
        let l_m = x.stats.l_marks as f64;
        let c_m = x.stats.c_marks as f64;
        assert!(d.is_empty(), "ECT packets are marked, not dropped");
        let pl = l_m / l_n;
        let pc = c_m / c_n;
        assert!((pl - 0.4).abs() < 0.015, "p_L {pl}");
        assert!((pc - 0.04).abs() < 0.006, "p_C {pc}");
        assert!((pc - (pl / 2.0).powi(2)).abs() < 0.008);
    }

    #[test]
    fn dualpi2_drops_not_ect_classic_with_probability_p_squared() {
        let mut x = q(DualPi2Params::default());
        x.set_prob((0.3 * MAX_PROB as f64) as u32);
        let mut d = Vec::new();
        let mut out = 0u32;
        for _ in 0..20_000 {
            while x.len() < 4 {
                x.enqueue(pkt(Ecn::NotEct, 1514), 0, &mut d);
            }
            if x.dequeue(0, &mut d).is_some() {
                out += 1;
            }
        }
        let pd = d.len() as f64 / (d.len() as f64 + out as f64);
        assert!((pd - 0.09).abs() < 0.01, "{pd}");
        assert!(d.iter().all(|x| x.reason == DropReason::Aqm));
    }

    #[test]
    fn dualpi2_wrr_gives_classic_ten_percent_under_overload_of_both() {
        let mut x = q(DualPi2Params::default());
        let mut d = Vec::new();
        let mut bytes = [0u64; 2];
        let mut order = Vec::new();
        for _ in 0..2000 {
            while x.l_len() < 5 {
                x.enqueue(pkt(Ecn::Ect1, 1514), 0, &mut d);
            }
            while x.c_len() < 5 {
                x.enqueue(pkt(Ecn::NotEct, 1514), 0, &mut d);
            }
            let p = x.dequeue(0, &mut d).unwrap();
            let l = (p.ecn != Ecn::NotEct) as usize;
            bytes[l] += p.len as u64;
            if order.len() < 20 {
                order.push(l);
            }
        }
        let share = bytes[0] as f64 / (bytes[0] + bytes[1]) as f64;
        assert!((share - 0.1).abs() < 0.005, "{share}");
        // From the initial credit -80 MTU: 9 L packets, then 1 C packet, and again.
        assert_eq!(&order[..10], &[1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
        assert_eq!(&order[10..20], &[1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    }

    #[test]
    fn dualpi2_pi_update_follows_alpha_error_plus_beta_change() {
        let mut x = q(DualPi2Params::default());
        let mut d = Vec::new();
        let unit = MAX_PROB as f64;
        // Dequeue a C packet with a 25 ms head sojourn (and one left so qdelay_c stays set).
        for _ in 0..3 {
            x.enqueue(pkt(Ecn::NotEct, 1514), 0, &mut d);
        }
        x.dequeue(25 * MS, &mut d).unwrap();
        x.on_timer(16 * MS);
        let p1 = x.prob() as f64 / unit;
        let a = 41.0 / 256.0;
        let b = 819.0 / 256.0;
        let want1 = a * 0.010 + b * 0.025;
        assert!((p1 - want1).abs() < 1e-4, "{p1} vs {want1}");
        // Next: the head sojourn falls to 20 ms: integral +a*5ms, proportional -b*5ms.
        let mut y = pkt(Ecn::NotEct, 1514);
        y.enq_ts = 12 * MS;
        x.enqueue(y, 12 * MS, &mut d);
        x.dequeue(32 * MS, &mut d).unwrap();
        assert_eq!(x.qdelay_c, 32 * MS);
        // Force the sample to 20 ms to check the proportional term's sign.
        x.qdelay_c = 20 * MS;
        x.on_timer(32 * MS);
        let p2 = x.prob() as f64 / unit;
        let want2 = want1 + a * 0.005 + b * (0.020 - 0.025);
        assert!((p2 - want2).abs() < 1e-4, "{p2} vs {want2}");
        assert_eq!(x.next_timer(), 48 * MS);
        // Below target with an empty queue: p' decreases and saturates at 0.
        x.qdelay_c = 0;
        x.qdelay_l = 0;
        for i in 0..10 {
            x.on_timer(48 * MS + i * 16 * MS);
        }
        assert_eq!(x.prob(), 0);
    }

    #[test]
    fn dualpi2_l_step_marks_above_one_ms_sojourn_with_two_packets_ahead() {
        let mut x = q(DualPi2Params::default());
        let mut d = Vec::new();
        for _ in 0..4 {
            x.enqueue(pkt(Ecn::Ect1, 1514), 0, &mut d);
        }
        // The first two arrived with < 2 packets ahead: never step-marked.
        assert_eq!(x.dequeue(5 * MS, &mut d).unwrap().ecn, Ecn::Ect1);
        assert_eq!(x.dequeue(5 * MS, &mut d).unwrap().ecn, Ecn::Ect1);
        // Third: exactly 1 ms is not above the threshold; fourth at 1 ms + 1 ns is.
        assert_eq!(x.dequeue(MS, &mut d).unwrap().ecn, Ecn::Ect1);
        assert_eq!(x.dequeue(MS + 1, &mut d).unwrap().ecn, Ecn::Ce);
        assert_eq!(x.stats.step_marks, 1);
        // Not-ECT never goes to L and is never step-marked.
        assert!(d.is_empty());
    }

    #[test]
    fn dualpi2_step_in_packets_uses_l_queue_length() {
        let mut x = q(DualPi2Params {
            step_packets: Some(2),
            ..Default::default()
        });
        let mut d = Vec::new();
        for _ in 0..6 {
            x.enqueue(pkt(Ecn::Ect1, 1514), 0, &mut d);
        }
        let got: Vec<Ecn> = (0..6).map(|_| x.dequeue(0, &mut d).unwrap().ecn).collect();
        // Remaining L qlen after each dequeue: 5,4,3,2,1,0; apply_step false for the first two.
        assert_eq!(
            got,
            vec![
                Ecn::Ect1,
                Ecn::Ect1,
                Ecn::Ce,
                Ecn::Ect1,
                Ecn::Ect1,
                Ecn::Ect1
            ]
        );
    }

    #[test]
    fn dualpi2_two_mtu_floor_disables_marking_and_dropping() {
        let mut x = q(DualPi2Params::default());
        x.set_prob(MAX_PROB);
        let mut d = Vec::new();
        for _ in 0..200 {
            // Two packets queued: after removing one, the backlog is 1 MTU < 2 MTU.
            x.enqueue(pkt(Ecn::Ect0, 1514), 0, &mut d);
            x.enqueue(pkt(Ecn::NotEct, 1514), 0, &mut d);
            assert_eq!(x.dequeue(0, &mut d).unwrap().ecn, Ecn::Ect0);
            assert_eq!(x.dequeue(0, &mut d).unwrap().ecn, Ecn::NotEct);
        }
        assert!(d.is_empty());
        assert_eq!(x.stats.ecn_mark, 0);
    }

    #[test]
    fn dualpi2_overload_drops_classic_ect_and_marks_surviving_l() {
        let mut x = q(DualPi2Params::default());
        x.set_prob((0.8 * MAX_PROB as f64) as u32); // k p' = 1.6 > 1
        let mut d = Vec::new();
        let mut ce_out = 0;
        for _ in 0..5000 {
            while x.len() < 200 {
                x.enqueue(pkt(Ecn::Ect1, 1514), 0, &mut d);
                x.enqueue(pkt(Ecn::Ect0, 1514), 0, &mut d);
            }
            if let Some(p) = x.dequeue(0, &mut d) {
                ce_out += (p.ecn == Ecn::Ce) as u32;
                assert!(p.ecn == Ecn::Ce || p.ecn == Ecn::Ect0);
            }
        }
        assert_eq!(x.stats.c_marks, 0, "overloaded: no classic marks");
        assert!(d.iter().all(|x| x.reason == DropReason::Overload));
        let l_drop = x.stats.l_drops as f64 / (x.stats.l_drops as f64 + x.stats.l_marks as f64);
        assert!((l_drop - 0.64).abs() < 0.03, "{l_drop}");
        assert_eq!(
            ce_out as u64, x.stats.l_marks,
            "every surviving L packet is marked"
        );
    }

    #[test]
    fn dualpi2_without_drop_overload_caps_p_prime_at_one_over_k() {
        let mut x = q(DualPi2Params {
            drop_overload: false,
            ..Default::default()
        });
        x.qdelay_c = 2000 * MS;
        x.on_timer(16 * MS);
        assert_eq!(x.prob(), MAX_PROB / 2);
    }

    #[test]
    fn dualpi2_tail_drops_at_total_limit() {
        let mut x = q(DualPi2Params {
            limit: 3,
            ..Default::default()
        });
        let mut d = Vec::new();
        for e in [Ecn::Ect1, Ecn::NotEct, Ecn::Ect1, Ecn::NotEct] {
            x.enqueue(pkt(e, 1514), 0, &mut d);
        }
        assert_eq!(x.len(), 3);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].reason, DropReason::Overlimit);
    }

    /// Closed loop: unresponsive Not-ECT traffic at 110% of a 1 Gbit/s link. The PI2 loop must
    /// settle where the drop rate p'^2 removes the 9.1% excess, with the queue delay around
    /// the 15 ms target.
    #[test]
    fn dualpi2_pi_loop_settles_overload_at_target_delay() {
        let mut x = q(DualPi2Params::default());
        let mut d = Vec::new();
        let tx = 12_112u64; // 1514 B at 1 Gbit/s
        let ia = tx * 10 / 11;
        let (mut t_arr, mut t_dep) = (0u64, u64::MAX);
        let end = 8_000 * MS;
        let (mut arrived, mut soj_sum, mut soj_n) = (0u64, 0u64, 0u64);
        let mut drops_late = 0usize;
        loop {
            let t_tim = x.next_timer();
            let t = t_arr.min(t_dep).min(t_tim);
            if t >= end {
                break;
            }
            if t == t_tim {
                x.on_timer(t);
            } else if t == t_arr {
                let late = t > end - 3_000 * MS;
                let before = d.len();
                x.enqueue(pkt(Ecn::NotEct, 1514), t, &mut d);
                if late {
                    arrived += 1;
                    drops_late += d.len() - before;
                }
                if t_dep == u64::MAX {
                    t_dep = t + tx;
                }
                t_arr += ia;
            } else {
                let before = d.len();
                match x.dequeue(t, &mut d) {
                    Some(p) => {
                        if t > end - 3_000 * MS {
                            soj_sum += t - p.enq_ts;
                            soj_n += 1;
                            drops_late += d.len() - before;
                        }
                        t_dep = t + tx;
                    }
                    None => t_dep = u64::MAX,
                }
            }
        }
        let drop_frac = drops_late as f64 / arrived as f64;
        let mean_ms = soj_sum as f64 / soj_n as f64 / 1e6;
        assert!(
            (drop_frac - 1.0 / 11.0).abs() < 0.01,
            "drop fraction {drop_frac}"
        );
        assert!((mean_ms - 15.0).abs() < 3.0, "mean sojourn {mean_ms} ms");
        let p = x.prob() as f64 / MAX_PROB as f64;
        assert!((p - (1.0f64 / 11.0).sqrt()).abs() < 0.06, "p' {p}");
    }

    #[test]
    fn dualpi2_drop_early_decides_at_enqueue_on_the_backlog_before_the_packet() {
        let mut x = q(DualPi2Params {
            drop_early: true,
            ..Default::default()
        });
        x.set_prob(MAX_PROB);
        let mut d = Vec::new();
        // First two arrivals see a backlog below 2 MTU: accepted.
        x.enqueue(pkt(Ecn::NotEct, 1514), 0, &mut d);
        x.enqueue(pkt(Ecn::NotEct, 1514), 0, &mut d);
        assert!(d.is_empty());
        // Third: p' = 1, Not-ECT classic: dropped at enqueue.
        x.enqueue(pkt(Ecn::NotEct, 1514), 0, &mut d);
        assert_eq!(d.len(), 1);
        // ECT(1) with k p' > 1 and drop_overload: dropped with p'^2 = 1.
        x.enqueue(pkt(Ecn::Ect1, 1514), 0, &mut d);
        assert_eq!(d.len(), 2);
        // Dequeue makes no further decision.
        assert_eq!(x.dequeue(0, &mut d).unwrap().ecn, Ecn::NotEct);
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn dualpi2_any_ect_mask_puts_ect0_in_l() {
        let mut x = q(DualPi2Params {
            ecn_mask: EcnMask::AnyEct,
            ..Default::default()
        });
        let mut d = Vec::new();
        x.enqueue(pkt(Ecn::Ect0, 1514), 0, &mut d);
        x.enqueue(pkt(Ecn::NotEct, 1514), 0, &mut d);
        assert_eq!((x.l_len(), x.c_len()), (1, 1));
    }

    fn filtered(filters: &[(u8, FilterClass)]) -> DualPi2 {
        q(DualPi2Params {
            filters: filters
                .iter()
                .map(|&(dscp, class)| DualPi2Filter { dscp, class })
                .collect(),
            ..Default::default()
        })
    }

    fn with_dscp(ecn: Ecn, dscp: u8) -> Packet {
        let mut p = pkt(ecn, 1514);
        p.dscp = dscp;
        p
    }

    /// mainline `dualpi2_skb_classify`: the ECN mask first, then the first filter matching.
    #[test]
    fn dualpi2_filters_steer_what_the_ecn_mask_leaves_by_dscp_first_match_wins() {
        let mut x = filtered(&[
            (10, FilterClass::L4s),
            (10, FilterClass::Classic),
            (12, FilterClass::Llll),
            (14, FilterClass::Classic),
        ]);
        let mut d = Vec::new();
        for (ecn, dscp, l) in [
            (Ecn::NotEct, 10, 1), // the first filter for DSCP 10
            (Ecn::Ect0, 12, 2),
            (Ecn::NotEct, 14, 2),
            (Ecn::NotEct, 0, 2), // no filter: classic
            (Ecn::Ect1, 14, 3),  // the ECN mask before any filter
        ] {
            x.enqueue(with_dscp(ecn, dscp), 0, &mut d);
            assert_eq!(x.l_len(), l, "{ecn:?} DSCP {dscp}");
        }
        assert_eq!(x.c_len(), 2);
        let cl = x.classifier();
        assert_eq!(cl.class(Ecn::NotEct, 10), crate::qdisc::Class::L4s);
        assert_eq!(cl.class(Ecn::NotEct, 12), crate::qdisc::Class::L4s);
        assert_eq!(cl.class(Ecn::NotEct, 14), crate::qdisc::Class::Classic);
        assert_eq!(cl.class(Ecn::Ect1, 0), crate::qdisc::Class::L4s);
    }

    /// Enqueue `arrivals` (ECN, DSCP) at 0, dequeue everything at `at`: what left, and the drops.
    fn pass(x: &mut DualPi2, arrivals: &[(Ecn, u8)], at: SimTime) -> (Vec<(Ecn, u8)>, Vec<Drop>) {
        let mut d = Vec::new();
        for &(ecn, dscp) in arrivals {
            x.enqueue(with_dscp(ecn, dscp), 0, &mut d);
        }
        let sent = std::iter::from_fn(|| x.dequeue(at, &mut d))
            .map(|p| (p.ecn, p.dscp))
            .collect();
        (sent, d)
    }

    /// At k p' = 1 - 2^-32 (every roll hits, no overload) a filtered Not-ECT L4S packet is
    /// dropped where an ECT one is marked (`dualpi2_scalable_marking`); LLLL is never touched.
    #[test]
    fn dualpi2_filtered_l4s_not_ect_is_dropped_where_ect_is_marked_and_llll_never() {
        let mut x = filtered(&[(10, FilterClass::L4s), (12, FilterClass::Llll)]);
        x.set_prob(MAX_PROB / 2);
        let arrivals = [
            (Ecn::Ect1, 0),
            (Ecn::NotEct, 10),
            (Ecn::Ect0, 10),
            (Ecn::NotEct, 12),
            (Ecn::Ect1, 0),
            (Ecn::Ect1, 0),
        ];
        let (sent, d) = pass(&mut x, &arrivals, 0);
        // The last two leave below the 2-MTU floor, untouched.
        let want = [
            (Ecn::Ce, 0),
            (Ecn::Ce, 10),
            (Ecn::NotEct, 12),
            (Ecn::Ect1, 0),
            (Ecn::Ect1, 0),
        ];
        assert_eq!(sent, want);
        let dropped: Vec<_> = d
            .iter()
            .map(|d| (d.pkt.ecn, d.pkt.dscp, d.reason))
            .collect();
        assert_eq!(dropped, [(Ecn::NotEct, 10, DropReason::Aqm)]);
        assert_eq!(x.stats.l_drops, 1);
    }

    /// `do_step_aqm`: above the step threshold a filtered Not-ECT packet is dropped, an ECT
    /// one marked; LLLL packets never get the step.
    #[test]
    fn dualpi2_step_drops_filtered_not_ect_and_spares_llll() {
        let mut x = filtered(&[(10, FilterClass::L4s), (12, FilterClass::Llll)]);
        let arrivals = [
            (Ecn::Ect1, 0),
            (Ecn::Ect1, 0),
            (Ecn::NotEct, 10),
            (Ecn::NotEct, 12),
            (Ecn::Ect1, 0),
        ];
        let (sent, d) = pass(&mut x, &arrivals, 2 * MS);
        assert_eq!(
            sent,
            [
                (Ecn::Ect1, 0),
                (Ecn::Ect1, 0),
                (Ecn::NotEct, 12),
                (Ecn::Ce, 0)
            ]
        );
        let dropped: Vec<_> = d.iter().map(|d| (d.pkt.ecn, d.pkt.dscp)).collect();
        assert_eq!(dropped, [(Ecn::NotEct, 10)]);
        assert_eq!(x.stats.step_marks, 1);
    }

    #[test]
    fn dualpi2_filter_dscp_above_63_is_refused() {
        let p = DualPi2Params {
            filters: vec![DualPi2Filter {
                dscp: 64,
                class: FilterClass::L4s,
            }],
            ..Default::default()
        };
        assert_eq!(p.validate().unwrap_err().0, "filters[0].dscp");
    }
}
