//! `netem` (net/sched/sch_netem.c, Linux 5.15): a link's impairments as the qdisc Linux uses
//! for them. `netem_enqueue` applies, in this order: duplication, loss (or an ECN mark),
//! corruption, the `limit`, then reordering or the packet's delay.
//!
//! - `duplicate` (`netem_enqueue`): with this probability the packet is cloned and the clone
//!   is enqueued at the ROOT qdisc of the device, with this netem's duplication switched off
//!   for that enqueue (`q->duplicate = 0` around `rootq->enqueue`), so a copy is never copied
//!   again; the clone then goes through every other step here on its own (it may be lost,
//!   delayed differently, ...). Here netem keeps its clones in a list the simulator takes after
//!   the enqueue ([`QueueDisc::take_duplicates`]) and enqueues at the port's root, counted like
//!   any packet; Linux enqueues the clone before the original finishes its enqueue, here just
//!   after (same packets, the two swap places when both get the same send time). A packet that
//!   is both duplicated and lost goes out once (Linux's `count` goes 1 + 1 - 1): no clone.
//! - Loss (`loss_event`): independent (`loss`, a probability) or the Gilbert-Elliott model
//!   (`loss gemodel p r 1-h 1-k`, `loss_gilb_ell`: in the good state the next packet moves to
//!   the bad state with probability p and is lost with 1-k; in the bad state it moves back with
//!   probability r and is lost with 1-h), or the 4-state model (`loss state p13 p31 p32 p23
//!   p14`, `loss_4state`: transmitted in a gap (1) or a burst (2), lost in a burst (3) or
//!   isolated (4). One uniform number per packet picks the transition out of the current state:
//!   1 -> 4 with p14 and 1 -> 3 with p13, 2 -> 3 with p23, 3 -> 2 with p32 and 3 -> 1 with
//!   p31, 4 -> 1 always; the packet is lost when it enters or stays in 3, or enters 4. Start in
//!   1; tc's defaults for the omitted ones: p31 = 1 - p13, p32 = 0, p23 = 1, p14 = 0, which is
//!   independent loss with probability p13). A lost packet counts as an AQM drop.
//! - `ecn`: a lost packet that is ECT or CE is marked CE instead (`INET_ECN_set_ce`) and goes
//!   on; a Not-ECT one is still dropped. (Linux's `tc -s` counts such a mark in netem's
//!   `dropped`; here it is a mark, as with every AQM.) As in tc, `ecn` needs a loss model.
//! - `corrupt` (`netem_enqueue`): with this probability one bit of the packet is flipped. The
//!   packet goes on and is discarded at its destination host, whose checksum fails (counted as
//!   a drop of its connection, not of a qdisc). In Linux the bit is one of `skb_headlen`
//!   bytes: a flip in the IP header is caught by the next router instead, one in the source
//!   MAC address does no harm; both are rare next to the TCP/UDP checksum case and not told
//!   apart here. Only the original is corrupted, not its clone (Linux unshares the skb).
//! - A netem that delays (`delay_ms`, `jitter_ms` or `rate_mbps`) orphans each packet it
//!   keeps (`skb_orphan_partial`: "as if they were already TX completed"): a TCP segment
//!   charged to its socket's TCP Small Queues budget is freed on entry
//!   ([`QueueDisc::take_orphans`]), so a netem on a sender's own egress does not hold its
//!   socket back.
//! - Delay and jitter (`tabledist`): each packet's delay is `delay_ms` plus jitter. Without a
//!   table (tc's default, `distribution = "uniform"`) the jitter is uniform in
//!   [-jitter, +jitter); with one, `mu + sigma * t / 8192` for a random entry `t` of the table
//!   (`NETEM_DIST_SCALE` = 8192, the kernel's integer rounding). The tables are iproute2's,
//!   computed here by their generators' formulas (netem/normal.c, pareto.c, paretonormal.c;
//!   4096 entries each, as tc loads them) instead of read from the `.dist` files:
//!   - `normal`: the normal quantile function at the table's 4096 points, on the generator's
//!     grid of 0.00005;
//!   - `pareto`: Pareto with alpha 3 (`(1-p)^(-1/3)`), shifted by its mean 1.5 and scaled by
//!     4/3, clipped at 32767 (4 sigma): its mean is -0.033 sigma and its standard deviation
//!     0.82 sigma, not 0 and 1 (the top 1.1 % of the tail sits at the clip);
//!   - `paretonormal`: per table point `(normal + 3 * pareto) / 4`, the two quantile functions
//!     averaged point by point (iproute2's comment says .25 normal + .75 pareto), not a mixture
//!     of the two distributions.
//!
//!   - a table of your own (`dist_table`, what tc reads from `NAME.dist`: entries in sigma /
//!     8192, at most `NETEM_DIST_MAX` 16384), drawn like the others.
//!
//!   Packets wait in a queue ordered by their send time (`tfifo_enqueue`), so jitter reorders
//!   them, as Linux does. Without correlation, `uniform` and `normal` draw from the continuous
//!   distributions (what the table approximates); `pareto` and `paretonormal` always use the
//!   table.
//! - Correlation (`delay D J CORR`, `loss P CORR`, `duplicate P CORR`, `reorder P CORR`,
//!   `corrupt P CORR`; `get_crandom`): each random number is `(1-rho) * fresh + rho * previous`
//!   in 32-bit fixed point, so successive numbers have correlation rho. Its known flaws are
//!   modelled as the kernel has them: the mixed value is no longer uniform (its variance is
//!   (1-rho)/(1+rho) of a uniform's, its values crowd the middle), so a correlated probability
//!   is not the one asked for: `loss 10% 25%` loses about 1.8 % of the packets and `loss 1%
//!   25%` almost none (tc-netem(8): "deprecated due to the noticed bad behavior"; `gemodel` is
//!   the bursty loss that keeps its rate); and `tabledist` takes the number modulo 2 * jitter
//!   (in ns) or modulo the table size, keeping only its low bits, so delay correlation changes
//!   nothing visible unless 1 - rho is below about (2 * jitter in ns, or 4096) / 2^32.
//! - Reordering (`reorder P gap G`): with probability P, every G-th packet is sent at once
//!   (put at the head of the queue) instead of after its delay.
//!   Reordered packets wait in a queue of their own that goes first (`sch->q`,
//!   `__qdisc_enqueue_head`), untouched by slots.
//! - `rate_mbps` (`packet_time_ns`): a packet's send time is after the previous packet's plus
//!   its transmission time at that rate (the queue's last send time replaces `now`).
//! - Slots (`get_slot_next`, `netem_dequeue`): packets leave only in slots, each carrying at
//!   most N packets / B bytes (Wi-Fi-like or DOCSIS-like bursts). The next slot opens after a
//!   uniform time in [MIN, MAX) (`slot MIN MAX`), or after `tabledist(DELAY, JITTER)` drawn
//!   from a table (`slot distribution NAME DELAY JITTER`: normal, pareto, paretonormal or a
//!   table of your own; a negative draw opens it at once). The first slot opens when the
//!   qdisc is set up (`get_slot`). A slot serves only packets that were due when it opened:
//!   a dequeue that finds the head packet due after the slot's opening draws a new slot from
//!   that moment (`slot_next < time_to_send` in `netem_dequeue`), so a packet arriving at an
//!   idle netem waits for a fresh slot and a slot left unused is lost.
//! - `limit` (packets, default 1000): tail drop.
//!
//! Random numbers are drawn only for the options in use, so adding an option never changes
//! what a netem without it draws. Not modelled: `rate`'s packet and cell overheads and GSO
//! segmentation of corrupted packets.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Drop, DropReason, Orphan, QueueDisc};
use crate::packet::{skb, Packet};
use crate::rng::Rng;
use crate::time::{Rate, SimTime, MS};

/// The delay distribution (tc's `distribution`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// No table: uniform jitter.
    #[default]
    Uniform,
    Normal,
    Pareto,
    Paretonormal,
}

/// `loss gemodel p r 1-h 1-k` (probabilities 0..1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliott {
    /// Good -> bad transition probability.
    pub p: f64,
    /// Bad -> good (default 1 - p).
    #[serde(default)]
    pub r: Option<f64>,
    /// Loss probability in the bad state (1-h, default 1).
    #[serde(default = "one")]
    pub loss_bad: f64,
    /// Loss probability in the good state (1-k, default 0).
    #[serde(default)]
    pub loss_good: f64,
}

fn one() -> f64 {
    1.0
}

/// `loss state p13 [p31 [p32 [p23 [p14]]]]` (probabilities 0..1, tc's defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FourState {
    /// Gap -> burst loss (1 -> 3).
    pub p13: f64,
    /// Burst loss -> gap (3 -> 1), default 1 - p13.
    #[serde(default)]
    pub p31: Option<f64>,
    /// Burst loss -> burst transmission (3 -> 2).
    #[serde(default)]
    pub p32: f64,
    /// Burst transmission -> burst loss (2 -> 3).
    #[serde(default = "one")]
    pub p23: f64,
    /// Gap -> isolated loss (1 -> 4).
    #[serde(default)]
    pub p14: f64,
}

/// `loss_4state`'s states (enum `TX_IN_GAP_PERIOD` ..).
#[derive(Clone, Copy, PartialEq)]
enum GiState {
    TxInGap,
    TxInBurst,
    LostInGap,
    LostInBurst,
}

/// tc's netem options. Probabilities and correlations are fractions 0..1 (tc's percentages
/// divided by 100).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetemParams {
    pub limit: Option<u32>,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    /// Correlation of successive delays (`delay D J CORR`).
    pub delay_corr: f64,
    pub distribution: Distribution,
    /// A custom table instead (`distribution NAME` with `NAME.dist` a table of your own, e.g.
    /// made by iproute2's `maketable` from measured delays): its entries, in sigma / 8192.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dist_table: Option<Vec<i16>>,
    /// Independent loss probability (`loss random P`) and its correlation.
    pub loss: f64,
    pub loss_corr: f64,
    pub gemodel: Option<GilbertElliott>,
    pub loss_state: Option<FourState>,
    /// Mark ECT packets CE instead of losing them.
    pub ecn: bool,
    /// Duplication probability (`duplicate P CORR`).
    pub duplicate: f64,
    pub duplicate_corr: f64,
    /// Corruption probability (`corrupt P CORR`).
    pub corrupt: f64,
    pub corrupt_corr: f64,
    /// Reorder probability, its correlation and gap (default gap 1 when reordering).
    pub reorder: f64,
    pub reorder_corr: f64,
    pub gap: Option<u32>,
    pub rate_mbps: Option<f64>,
    /// Slot: min and max time between slots, ms; packets and bytes per slot.
    pub slot_min_ms: Option<f64>,
    pub slot_max_ms: Option<f64>,
    pub slot_packets: Option<u32>,
    pub slot_bytes: Option<u64>,
    /// `slot distribution NAME DELAY JITTER` instead of MIN MAX: the time to the next slot is
    /// `slot_delay_ms` plus jitter drawn from the table `slot_distribution` (normal, pareto,
    /// paretonormal) or `slot_dist_table` (entries in sigma / 8192, like `dist_table`).
    pub slot_delay_ms: Option<f64>,
    pub slot_jitter_ms: Option<f64>,
    pub slot_distribution: Option<Distribution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot_dist_table: Option<Vec<i16>>,
}

impl NetemParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        let prob = |f: &str, v: f64| -> Result<(), (String, String)> {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err((f.into(), format!("{f} is a probability 0..1, got {v}")))
            }
        };
        let bad = |f: &str, m: &str| Err((f.to_string(), m.to_string()));
        super::check_ms("delay_ms", self.delay_ms)?;
        super::check_ms("jitter_ms", self.jitter_ms)?;
        prob("delay_corr", self.delay_corr)?;
        prob("loss", self.loss)?;
        prob("loss_corr", self.loss_corr)?;
        prob("duplicate", self.duplicate)?;
        prob("duplicate_corr", self.duplicate_corr)?;
        prob("corrupt", self.corrupt)?;
        prob("corrupt_corr", self.corrupt_corr)?;
        prob("reorder", self.reorder)?;
        prob("reorder_corr", self.reorder_corr)?;
        if let Some(g) = &self.gemodel {
            prob("gemodel.p", g.p)?;
            prob("gemodel.r", g.r.unwrap_or(0.0))?;
            prob("gemodel.loss_bad", g.loss_bad)?;
            prob("gemodel.loss_good", g.loss_good)?;
            if self.loss_corr > 0.0 {
                return bad(
                    "loss_corr",
                    "loss_corr belongs to independent loss (tc: loss random P CORR), not gemodel",
                );
            }
        }
        if let Some(g) = &self.loss_state {
            prob("loss_state.p13", g.p13)?;
            prob("loss_state.p31", g.p31.unwrap_or(0.0))?;
            prob("loss_state.p32", g.p32)?;
            prob("loss_state.p23", g.p23)?;
            prob("loss_state.p14", g.p14)?;
            if g.p13 + g.p14 > 1.0 {
                return bad(
                    "loss_state.p14",
                    "p13 + p14 leave the gap state: at most 1 together",
                );
            }
            if g.p31.unwrap_or(1.0 - g.p13) + g.p32 > 1.0 {
                return bad(
                    "loss_state.p32",
                    "p31 + p32 leave the burst state: at most 1 together",
                );
            }
            let other = [
                ("loss", self.loss > 0.0),
                ("gemodel", self.gemodel.is_some()),
            ];
            if let Some((f, _)) = other.iter().find(|(_, set)| *set) {
                return bad(f, "one loss model per netem (tc: duplicate loss argument)");
            }
            if self.loss_corr > 0.0 {
                return bad(
                    "loss_corr",
                    "loss_corr belongs to independent loss (tc: loss random P CORR), not \
                     loss_state",
                );
            }
        }
        if self.gemodel.is_some() && self.loss > 0.0 {
            return bad(
                "gemodel",
                "one loss model per netem (tc: duplicate loss argument)",
            );
        }
        if self.delay_corr > 0.0 && self.jitter_ms == 0.0 {
            return bad(
                "delay_corr",
                "delay_corr correlates the jitter: it needs jitter_ms > 0 (tc: delay D J CORR)",
            );
        }
        if self.distribution != Distribution::Uniform
            && (self.delay_ms == 0.0 || self.jitter_ms == 0.0)
        {
            return bad(
                "distribution",
                "a distribution needs delay_ms and jitter_ms > 0 (tc: distribution specified \
                 but no latency and jitter values)",
            );
        }
        for (field, table) in [
            ("dist_table", &self.dist_table),
            ("slot_dist_table", &self.slot_dist_table),
        ] {
            match table {
                Some(t) if t.is_empty() => {
                    return Err((
                        field.into(),
                        "a table needs at least one entry (tc refuses an empty NAME.dist: \
                         get_dist_table)"
                            .into(),
                    ))
                }
                Some(t) if t.len() > DIST_MAX => {
                    return Err((
                        field.into(),
                        format!(
                            "a table holds at most {DIST_MAX} entries (NETEM_DIST_MAX), got {}",
                            t.len()
                        ),
                    ))
                }
                _ => {}
            }
        }
        if self.dist_table.is_some() {
            if self.distribution != Distribution::Uniform {
                return bad(
                    "dist_table",
                    "dist_table is a distribution of its own: give it or \
                    distribution, not both",
                );
            }
            if self.delay_ms == 0.0 || self.jitter_ms == 0.0 {
                return bad(
                    "dist_table",
                    "a distribution needs delay_ms and jitter_ms > 0 (tc: \
                    distribution specified but no latency and jitter values)",
                );
            }
        }
        if self.reorder > 0.0 && self.delay_ms == 0.0 {
            return bad(
                "reorder",
                "reordering sends some packets ahead of the delayed ones: it needs delay_ms > 0 \
                 (tc: reordering not possible without specifying some delay)",
            );
        }
        if self.gap.is_some() && self.reorder == 0.0 {
            return bad(
                "gap",
                "gap spaces the reordered packets: it needs reorder > 0 (tc: gap specified \
                 without reorder probability)",
            );
        }
        if self.ecn && self.loss == 0.0 && self.gemodel.is_none() && self.loss_state.is_none() {
            return bad(
                "ecn",
                "ecn marks instead of losing: it needs loss, gemodel or loss_state (tc: ecn \
                 requested without loss model)",
            );
        }
        if let Some(r) = self.rate_mbps {
            super::check_mbps("rate_mbps", r)?;
        }
        if self.limit == Some(0) {
            return Err(("limit".into(), "limit must be at least 1 packet".into()));
        }
        match (self.slot_min_ms, self.slot_max_ms) {
            (None, Some(_)) => {
                return Err(("slot_min_ms".into(), "a slot needs slot_min_ms".into()))
            }
            (Some(lo), hi) => {
                super::check_ms("slot_min_ms", lo)?;
                if hi.is_some_and(|h| !(h.is_finite() && h >= lo)) {
                    return Err((
                        "slot_max_ms".into(),
                        "slot_max_ms must be >= slot_min_ms".into(),
                    ));
                }
            }
            _ => {}
        }
        self.validate_slot_distribution()?;
        let slots = self.slot_min_ms.is_some() || self.slot_jitter_ms.is_some();
        if !slots {
            if self.slot_packets.is_some() {
                return bad(
                    "slot_packets",
                    "slot_packets bounds a slot: it needs slot_min_ms or slot_jitter_ms",
                );
            }
            if self.slot_bytes.is_some() {
                return bad(
                    "slot_bytes",
                    "slot_bytes bounds a slot: it needs slot_min_ms or slot_jitter_ms",
                );
            }
        }
        if self.slot_packets == Some(0) {
            return bad("slot_packets", "slot_packets must be at least 1");
        }
        if self.slot_bytes == Some(0) {
            return bad("slot_bytes", "slot_bytes must be at least 1");
        }
        Ok(())
    }

    /// `slot distribution NAME DELAY JITTER` (tc's q_netem.c checks, plus a table to draw from).
    fn validate_slot_distribution(&self) -> Result<(), (String, String)> {
        let dist = self.slot_delay_ms.is_some()
            || self.slot_jitter_ms.is_some()
            || self.slot_distribution.is_some()
            || self.slot_dist_table.is_some();
        if !dist {
            return Ok(());
        }
        let err = |f: &str, m: String| Err((f.to_string(), m));
        if self.slot_min_ms.is_some() || self.slot_max_ms.is_some() {
            return err(
                "slot_distribution",
                "a slot is either slot_min_ms/slot_max_ms or a distribution (slot_delay_ms, slot_jitter_ms and a table), not both"
                    .into(),
            );
        }
        let Some(delay) = self.slot_delay_ms else {
            return err(
                "slot_delay_ms",
                "a slot distribution needs slot_delay_ms".into(),
            );
        };
        super::check_ms("slot_delay_ms", delay)?;
        match self.slot_jitter_ms {
            Some(j) if j.is_finite() && j > 0.0 => {}
            Some(j) => {
                return err(
                    "slot_jitter_ms",
                    format!("slot_jitter_ms must be > 0 (tc: Non-positive jitter), got {j}"),
                )
            }
            None => {
                return err(
                    "slot_jitter_ms",
                    "a slot distribution needs slot_jitter_ms".into(),
                )
            }
        }
        match (self.slot_distribution, self.slot_dist_table.is_none()) {
            (Some(Distribution::Uniform), _) => err(
                "slot_distribution",
                "a slot distribution is a table: normal, pareto or paretonormal (or slot_dist_table), got uniform (use slot_min_ms and slot_max_ms for uniform slots)"
                    .into(),
            ),
            (Some(_), false) => err(
                "slot_dist_table",
                "slot_dist_table is a distribution of its own: give it or slot_distribution, not both"
                    .into(),
            ),
            (None, true) => err(
                "slot_distribution",
                "a slot distribution needs a table: slot_distribution (normal, pareto, paretonormal) or slot_dist_table"
                    .into(),
            ),
            _ => Ok(()),
        }
    }
}

/// A probability or correlation as tc sends it: `rint(p * UINT32_MAX)` (`set_percent`).
fn scaled(p: f64) -> u32 {
    (p * u32::MAX as f64).round_ties_even() as u32
}

/// `struct crndstate` with `init_crandom` / `get_crandom`: random 32-bit numbers, each
/// `(1 - rho) * fresh + rho * previous` in fixed point.
#[derive(Clone, Copy, Debug, Default)]
struct Crandom {
    rho: u32,
    last: u32,
}

impl Crandom {
    /// `init_crandom`: the first `last` is a fresh random number. It is drawn only when
    /// correlated, so an uncorrelated netem draws what it drew before correlation existed.
    fn new(corr: f64, rng: &mut Rng) -> Crandom {
        let rho = scaled(corr);
        let last = if rho > 0 { rng.next_u32() } else { 0 };
        Crandom { rho, last }
    }

    /// `get_crandom`.
    fn next(&mut self, rng: &mut Rng) -> u32 {
        let value = rng.next_u32() as u64;
        if self.rho == 0 {
            return value as u32;
        }
        let rho = self.rho as u64 + 1;
        let answer = (value * ((1u64 << 32) - rho) + self.last as u64 * rho) >> 32;
        self.last = answer as u32;
        self.last
    }
}

/// Entries of iproute2's tables (TABLESIZE 16384, every 4th point).
const DIST_SIZE: u32 = 4096;
/// `NETEM_DIST_SCALE`: a table entry is in units of sigma / 8192.
const DIST_SCALE: i64 = 8192;
/// `NETEM_DIST_MAX`: the largest table the kernel accepts.
const DIST_MAX: usize = 16384;

/// Standard normal quantile function (Wichura's AS 241, about 1e-16 relative accuracy).
/// The coefficients are the published ones, digit for digit.
#[allow(clippy::excessive_precision)]
fn normal_quantile(p: f64) -> f64 {
    fn poly(c: &[f64; 8], x: f64) -> f64 {
        c.iter().rev().fold(0.0, |acc, &k| acc * x + k)
    }
    const A: [f64; 8] = [
        3.387_132_872_796_366_6,
        1.331_416_678_917_843_8e2,
        1.971_590_950_306_551_4e3,
        1.373_169_376_550_946_1e4,
        4.592_195_393_154_987_1e4,
        6.726_577_092_700_870_1e4,
        3.343_057_558_358_812_8e4,
        2.509_080_928_730_122_7e3,
    ];
    const B: [f64; 8] = [
        1.0,
        4.231_333_070_160_091_1e1,
        6.871_870_074_920_579e2,
        5.394_196_021_424_751e3,
        2.121_379_430_158_659_7e4,
        3.930_789_580_009_271e4,
        2.872_908_573_572_194_3e4,
        5.226_495_278_852_854_5e3,
    ];
    const C: [f64; 8] = [
        1.423_437_110_749_683_6,
        4.630_337_846_156_545_3,
        5.769_497_221_460_691,
        3.647_848_324_763_204_6,
        1.270_458_252_452_368_4,
        2.417_807_251_774_506e-1,
        2.272_384_498_926_918_4e-2,
        7.745_450_142_783_414e-4,
    ];
    const D: [f64; 8] = [
        1.0,
        2.053_191_626_637_758_8,
        1.676_384_830_183_803_8,
        6.897_673_349_851e-1,
        1.481_039_764_274_800_7e-1,
        1.519_866_656_361_645_7e-2,
        5.475_938_084_995_345e-4,
        1.050_750_071_644_416_8e-9,
    ];
    const E: [f64; 8] = [
        6.657_904_643_501_103_8,
        5.463_784_911_164_114,
        1.784_826_539_917_291_3,
        2.965_605_718_285_048_9e-1,
        2.653_218_952_657_612_3e-2,
        1.242_660_947_388_078_4e-3,
        2.711_555_568_743_487_6e-5,
        2.010_334_399_292_288_1e-7,
    ];
    const F: [f64; 8] = [
        1.0,
        5.998_322_065_558_879_5e-1,
        1.369_298_809_227_358e-1,
        1.487_536_129_085_061_5e-2,
        7.868_691_311_456_133e-4,
        1.846_318_317_510_054_7e-5,
        1.421_511_758_316_445_9e-7,
        2.044_263_103_389_939_8e-15,
    ];
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180_625 - q * q;
        return q * poly(&A, r) / poly(&B, r);
    }
    let r = (-(if q < 0.0 { p } else { 1.0 - p })
        .max(f64::MIN_POSITIVE)
        .ln())
    .sqrt();
    let x = if r <= 5.0 {
        poly(&C, r - 1.6) / poly(&D, r - 1.6)
    } else {
        poly(&E, r - 5.0) / poly(&F, r - 5.0)
    };
    if q < 0.0 {
        -x
    } else {
        x
    }
}

/// iproute2 netem/pareto.c and paretonormal.c (`paretovalue`): the Pareto (alpha 3) value
/// at point `i` of 16384, shifted by its mean 1.5, scaled by 4/3 sigma, clipped at 32767.
fn pareto_entry(i: u32) -> i32 {
    let u = (65536 - 4 * i) as f64 / 65536.0;
    let v = (u.powf(-1.0 / 3.0) - 1.5) * (4.0 / 3.0) * DIST_SCALE as f64;
    v.min(32767.0).round_ties_even() as i32
}

/// iproute2 netem/normal.c: entry `i` of its 16384-point table is the largest x of the grid
/// -10, -10 + 0.00005, ... with `rint(16384 * Phi(x)) == i`: the grid point below the
/// quantile at (i + 0.5) / 16384.
fn normal_entry(i: u32) -> i32 {
    const STEP: f64 = 0.00005;
    let q = normal_quantile((i as f64 + 0.5) / 16384.0);
    let x = -10.0 + ((q + 10.0) / STEP).ceil().mul_add(STEP, -STEP);
    (x * DIST_SCALE as f64).round_ties_even() as i32
}

/// `tabledist` with a table: `mu + sigma * t / 8192` for the entry `t` that `rnd` picks, in
/// the kernel's integer arithmetic (ns).
fn table_draw(mu: i64, sigma: i64, rnd: u32, table: &[i16]) -> i64 {
    let t = table[(rnd % table.len() as u32) as usize] as i64;
    let mut x = (sigma % DIST_SCALE) * t;
    let half = DIST_SCALE / 2;
    x += if x >= 0 { half } else { -half };
    x / DIST_SCALE + (sigma / DIST_SCALE) * t + mu
}

/// The 4096-entry table tc loads for `d` (empty for uniform: no table).
fn dist_table(d: Distribution) -> Vec<i16> {
    let clip = |v: i32| v.clamp(i16::MIN as i32, i16::MAX as i32) as i16;
    let points = (0..DIST_SIZE).map(|n| 4 * n);
    match d {
        Distribution::Uniform => Vec::new(),
        Distribution::Normal => points.map(|i| clip(normal_entry(i))).collect(),
        Distribution::Pareto => points.map(|i| clip(pareto_entry(i))).collect(),
        // C's int division truncates toward zero, as Rust's does.
        Distribution::Paretonormal => points
            .map(|i| clip((normal_entry(i) + 3 * pareto_entry(i)) / 4))
            .collect(),
    }
}

pub struct Netem {
    p: NetemParams,
    rng: Rng,
    /// Packets with their send time, in send-time order (`tfifo`).
    q: VecDeque<(SimTime, Packet)>,
    /// Reordered packets (`sch->q`): sent before the others, slots or not.
    direct: VecDeque<Packet>,
    bytes: u64,
    /// Send time of the last packet queued (`q->t_last`, for `rate`).
    t_last: SimTime,
    counter: u32,
    bad_state: bool,
    gi_state: GiState,
    /// Whether slots are configured, when the current one opens and what it has left.
    slots: bool,
    slot_next: SimTime,
    slot_packets: i64,
    slot_bytes: i64,
    /// `q->slot_dist`: the table of `slot distribution` (empty: uniform in [MIN, MAX)).
    slot_table: Vec<i16>,
    /// Probabilities as the kernel holds them (`q->loss`, `q->duplicate`, ...).
    loss: u32,
    duplicate: u32,
    corrupt: u32,
    reorder: u32,
    delay_cor: Crandom,
    loss_cor: Crandom,
    dup_cor: Crandom,
    reorder_cor: Crandom,
    corrupt_cor: Crandom,
    /// `q->delay_dist`, when a draw goes through the table.
    table: Vec<i16>,
    /// Clones made by `enqueue`, for the root qdisc to take.
    dups: Vec<Packet>,
    /// `q->latency || q->jitter || q->rate`: packets are orphaned on entry.
    orphans_delayed: bool,
    /// Socket-charged packets orphaned by `enqueue`, for the simulator to take.
    orphaned: Vec<Orphan>,
}

impl Netem {
    pub fn new(p: &NetemParams, rng: Rng) -> Netem {
        let mut n = Netem {
            p: p.clone(),
            rng,
            q: VecDeque::new(),
            direct: VecDeque::new(),
            bytes: 0,
            t_last: 0,
            counter: 0,
            bad_state: false,
            gi_state: GiState::TxInGap,
            slots: p.slot_min_ms.is_some() || p.slot_jitter_ms.is_some(),
            slot_next: 0,
            slot_packets: 0,
            slot_bytes: 0,
            slot_table: match &p.slot_dist_table {
                Some(t) => t.clone(),
                None => p.slot_distribution.map_or_else(Vec::new, dist_table),
            },
            loss: scaled(p.loss),
            duplicate: scaled(p.duplicate),
            corrupt: scaled(p.corrupt),
            reorder: scaled(p.reorder),
            delay_cor: Crandom::default(),
            loss_cor: Crandom::default(),
            dup_cor: Crandom::default(),
            reorder_cor: Crandom::default(),
            corrupt_cor: Crandom::default(),
            table: Vec::new(),
            dups: Vec::new(),
            orphans_delayed: p.delay_ms > 0.0 || p.jitter_ms > 0.0 || p.rate_mbps.is_some(),
            orphaned: Vec::new(),
        };
        // get_slot: the first slot opens when the qdisc is set up, with its full quota.
        n.slot_packets = p.slot_packets.map_or(i64::MAX, i64::from);
        n.slot_bytes = p.slot_bytes.map_or(i64::MAX, |b| b as i64);
        // netem_change: get_correlation (delay, loss, duplicate), get_reorder, get_corrupt.
        n.delay_cor = Crandom::new(p.delay_corr, &mut n.rng);
        n.loss_cor = Crandom::new(p.loss_corr, &mut n.rng);
        n.dup_cor = Crandom::new(p.duplicate_corr, &mut n.rng);
        n.reorder_cor = Crandom::new(p.reorder_corr, &mut n.rng);
        n.corrupt_cor = Crandom::new(p.corrupt_corr, &mut n.rng);
        let continuous = matches!(p.distribution, Distribution::Normal) && p.delay_corr == 0.0;
        if let Some(t) = &p.dist_table {
            n.table = t.clone();
        } else if !continuous {
            n.table = dist_table(p.distribution);
        }
        n
    }

    /// `get_slot_next`: the next slot opens after a uniform time in [min, max), or after
    /// `tabledist(delay, jitter)` from the slot table (no correlation: `get_crandom(NULL)`).
    fn next_slot(&mut self, now: SimTime) {
        if self.slot_table.is_empty() {
            let lo = self.p.slot_min_ms.unwrap_or(0.0);
            let hi = self.p.slot_max_ms.unwrap_or(lo);
            let d = lo + (hi - lo) * self.rng.uniform();
            self.slot_next = now + (d * MS as f64) as SimTime;
        } else {
            let mu = (self.p.slot_delay_ms.unwrap_or(0.0) * MS as f64) as i64;
            let sigma =
                ((self.p.slot_jitter_ms.unwrap_or(0.0) * MS as f64) as i64).min(i32::MAX as i64);
            let d = table_draw(mu, sigma, self.rng.next_u32(), &self.slot_table);
            self.slot_next = (now as i64 + d).max(0) as SimTime;
        }
        self.slot_packets = self.p.slot_packets.map_or(i64::MAX, i64::from);
        self.slot_bytes = self.p.slot_bytes.map_or(i64::MAX, |b| b as i64);
    }

    /// `loss_event`.
    fn lost(&mut self) -> bool {
        if let Some(g) = &self.p.gemodel {
            let (p, r) = (g.p, g.r.unwrap_or(1.0 - g.p));
            let (lb, lg) = (g.loss_bad, g.loss_good);
            if !self.bad_state {
                if self.rng.uniform() < p {
                    self.bad_state = true;
                }
                return self.rng.uniform() < lg;
            }
            if self.rng.uniform() < r {
                self.bad_state = false;
            }
            return self.rng.uniform() < lb;
        }
        if let Some(g) = &self.p.loss_state {
            let (a1, a2, a3, a4, a5) = (g.p13, g.p31.unwrap_or(1.0 - g.p13), g.p32, g.p14, g.p23);
            let rnd = self.rng.uniform();
            let (next, lost) = match self.gi_state {
                GiState::TxInGap if rnd < a4 => (GiState::LostInGap, true),
                GiState::TxInGap if rnd < a1 + a4 => (GiState::LostInBurst, true),
                GiState::TxInGap => (GiState::TxInGap, false),
                GiState::TxInBurst if rnd < a5 => (GiState::LostInBurst, true),
                GiState::TxInBurst => (GiState::TxInBurst, false),
                GiState::LostInBurst if rnd < a3 => (GiState::TxInBurst, false),
                GiState::LostInBurst if rnd < a2 + a3 => (GiState::TxInGap, false),
                GiState::LostInBurst => (GiState::LostInBurst, true),
                GiState::LostInGap => (GiState::TxInGap, false),
            };
            self.gi_state = next;
            return lost;
        }
        if self.loss_cor.rho > 0 {
            return self.loss > 0 && self.loss >= self.loss_cor.next(&mut self.rng);
        }
        self.p.loss > 0.0 && self.rng.uniform() < self.p.loss
    }

    /// `tabledist`: the delay of one packet, ns.
    fn delay(&mut self) -> i64 {
        let mu = self.p.delay_ms * MS as f64;
        let sigma = self.p.jitter_ms * MS as f64;
        if sigma == 0.0 {
            return mu as i64;
        }
        if self.delay_cor.rho == 0 && self.p.dist_table.is_none() {
            match self.p.distribution {
                Distribution::Uniform => {
                    return (mu - sigma + 2.0 * sigma * self.rng.uniform()) as i64
                }
                Distribution::Normal => {
                    let (u1, u2) = (self.rng.uniform().max(1e-300), self.rng.uniform());
                    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    return (mu + sigma * z) as i64;
                }
                _ => {}
            }
        }
        // The kernel's integer arithmetic: jitter capped to an s32 of ns.
        let (mu, sigma) = (mu as i64, (sigma as i64).min(i32::MAX as i64));
        if sigma == 0 {
            return mu;
        }
        let rnd = self.delay_cor.next(&mut self.rng);
        if self.table.is_empty() {
            return (rnd % (2 * sigma as u32)) as i64 + mu - sigma;
        }
        table_draw(mu, sigma, rnd, &self.table)
    }

    /// Draw for an option with probability `p` (scaled) and correlation state `cor`:
    /// `p >= get_crandom(cor)`.
    fn event(p: u32, cor: &mut Crandom, rng: &mut Rng) -> bool {
        p > 0 && p >= cor.next(rng)
    }
}

impl QueueDisc for Netem {
    fn kind(&self) -> &'static str {
        "netem"
    }
    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        // A clone of ours coming back from the root: this netem does not duplicate it.
        let ours = pkt.skb & skb::NETEM_DUP != 0;
        pkt.skb &= !skb::NETEM_DUP;
        let mut count = 1;
        if !ours && Self::event(self.duplicate, &mut self.dup_cor, &mut self.rng) {
            count += 1;
        }
        if self.lost() {
            if self.p.ecn && pkt.ecn.set_ce() {
                // marked instead of lost
            } else {
                count -= 1;
            }
        }
        if count == 0 {
            drops.push(Drop {
                pkt,
                reason: DropReason::Aqm,
            });
            return;
        }
        // "If a delay is expected, orphan the skb": `skb_orphan_partial` runs the socket's
        // `tcp_wfree` now, as a transmit completion would, so TSQ lets it send more.
        if self.orphans_delayed && pkt.skb & skb::WFREE != 0 {
            pkt.skb &= !skb::WFREE;
            self.orphaned.push(Orphan {
                flow: pkt.flow,
                payload: pkt.payload,
            });
        }
        if count > 1 {
            // `skb_clone`: the copy is not charged to the socket.
            let mut clone = pkt;
            clone.skb = (clone.skb | skb::NETEM_DUP) & !skb::WFREE;
            self.dups.push(clone);
        }
        if Self::event(self.corrupt, &mut self.corrupt_cor, &mut self.rng) {
            pkt.skb |= skb::CORRUPT;
        }
        if self.len() >= self.p.limit.unwrap_or(1000) as usize {
            drops.push(Drop {
                pkt,
                reason: DropReason::Overlimit,
            });
            return;
        }
        self.bytes += pkt.len as u64;
        let gap = self.p.gap.unwrap_or(1);
        let reorder_now = self.p.reorder > 0.0
            && self.counter + 1 >= gap
            && if self.reorder_cor.rho > 0 {
                self.reorder >= self.reorder_cor.next(&mut self.rng)
            } else {
                self.rng.uniform() < self.p.reorder
            };
        if reorder_now {
            // "Do re-ordering by putting one out of N packets at the front of the queue."
            self.counter = 0;
            self.direct.push_front(pkt);
            return;
        }
        self.counter += 1;
        let mut delay = self.delay().max(0);
        let mut base = now;
        if let Some(r) = self.p.rate_mbps {
            if self.t_last > now {
                delay = (delay - (self.t_last - now) as i64).max(0);
                base = self.t_last;
            }
            delay += Rate::mbps(r).tx_time(pkt.len) as i64;
        }
        let t = base + delay as u64;
        self.t_last = self.t_last.max(t);
        let at = self.q.partition_point(|&(u, _)| u <= t);
        self.q.insert(at, (t, pkt));
    }
    fn dequeue(&mut self, now: SimTime, _drops: &mut Vec<Drop>) -> Option<Packet> {
        if let Some(p) = self.direct.pop_front() {
            self.bytes -= p.len as u64;
            return Some(p);
        }
        let &(t, _) = self.q.front()?;
        if self.slots && self.slot_next < t {
            // The slot opened before this packet was due: it is not this packet's.
            self.next_slot(now);
        }
        if t > now || self.slot_next > now {
            return None;
        }
        let (_, p) = self.q.pop_front().unwrap();
        self.bytes -= p.len as u64;
        if self.slots {
            self.slot_packets -= 1;
            self.slot_bytes -= p.len as i64;
            if self.slot_packets <= 0 || self.slot_bytes <= 0 {
                self.next_slot(now);
            }
        }
        Some(p)
    }
    fn ready_at(&self, now: SimTime) -> SimTime {
        if !self.direct.is_empty() {
            return now;
        }
        self.q
            .front()
            .map_or(now, |&(t, _)| t.max(self.slot_next).max(now))
    }
    fn len(&self) -> usize {
        self.q.len() + self.direct.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn may_duplicate(&self) -> bool {
        self.duplicate > 0
    }
    fn take_duplicates(&mut self, out: &mut Vec<Packet>) {
        out.append(&mut self.dups);
    }
    fn may_orphan(&self) -> bool {
        self.orphans_delayed
    }
    fn take_orphans(&mut self, out: &mut Vec<Orphan>) {
        out.append(&mut self.orphaned);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Dir, Ecn};

    fn pkt(i: u32) -> Packet {
        let mut p = Packet::new(0, Dir::Fwd, 0, 1);
        p.len = 1000;
        p.payload = 934;
        p.seq = i;
        p
    }

    fn netem(p: NetemParams) -> Netem {
        Netem::new(&p, Rng::new(7, 3))
    }

    /// Enqueue `n` packets 1 ms apart and drain as a parent port would: (seq, departure).
    fn run(q: &mut Netem, n: u32) -> (Vec<(u32, SimTime)>, usize) {
        let mut out = Vec::new();
        let mut drops = Vec::new();
        let mut t = 0;
        let mut next = 0;
        while next < n || !q.is_empty() {
            if next < n && (q.is_empty() || next as u64 * MS <= q.ready_at(t)) {
                t = t.max(next as u64 * MS);
                q.enqueue(pkt(next), t, &mut drops);
                next += 1;
                continue;
            }
            t = q.ready_at(t);
            while let Some(p) = q.dequeue(t, &mut drops) {
                out.push((p.seq, t));
            }
        }
        (out, drops.len())
    }

    #[test]
    fn jitter_is_uniform_around_the_delay_and_reorders() {
        let mut q = netem(NetemParams {
            delay_ms: 20.0,
            jitter_ms: 5.0,
            limit: Some(100_000),
            ..Default::default()
        });
        let (out, _) = run(&mut q, 20_000);
        let d: Vec<f64> = out
            .iter()
            .map(|&(s, t)| (t - s as u64 * MS) as f64 / 1e6)
            .collect();
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / d.len() as f64;
        assert!((mean - 20.0).abs() < 0.1, "mean {mean}");
        // uniform on [15, 25): standard deviation 10 / sqrt(12)
        assert!(
            (var.sqrt() - 10.0 / 12f64.sqrt()).abs() < 0.05,
            "sd {}",
            var.sqrt()
        );
        assert!(d.iter().all(|&x| (15.0..25.0).contains(&x)));
        assert!(out.windows(2).any(|w| w[1].0 < w[0].0), "jitter reorders");
    }

    #[test]
    fn independent_and_gilbert_elliott_loss_match_their_parameters() {
        let mut q = netem(NetemParams {
            loss: 0.02,
            limit: Some(100_000),
            ..Default::default()
        });
        let (_, lost) = run(&mut q, 50_000);
        assert!((lost as f64 / 50_000.0 - 0.02).abs() < 0.003, "{lost}");
        // Gilbert-Elliott p = 1 %, r = 10 %, all lost in the bad state: stationary loss
        // p / (p + r) = 9.1 %, mean burst length 1 / r = 10 packets.
        let mut q = netem(NetemParams {
            gemodel: Some(GilbertElliott {
                p: 0.01,
                r: Some(0.1),
                loss_bad: 1.0,
                loss_good: 0.0,
            }),
            limit: Some(200_000),
            ..Default::default()
        });
        let mut drops = Vec::new();
        let mut lost = Vec::new();
        for i in 0..200_000 {
            let before = drops.len();
            q.enqueue(pkt(i), 0, &mut drops);
            lost.push(drops.len() > before);
            q.q.clear();
        }
        let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        assert!((rate - 0.0909).abs() < 0.01, "loss {rate}");
        let bursts = lost.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let mean_burst = lost.iter().filter(|&&l| l).count() as f64 / bursts;
        assert!((mean_burst - 10.0).abs() < 1.0, "mean burst {mean_burst}");
    }

    /// Whether each of `n` packets was lost, one enqueue each.
    fn loss_pattern(q: &mut Netem, n: u32) -> Vec<bool> {
        let mut drops = Vec::new();
        (0..n)
            .map(|i| {
                let before = drops.len();
                q.enqueue(pkt(i), 0, &mut drops);
                q.q.clear();
                drops.len() > before
            })
            .collect()
    }

    #[test]
    fn four_state_loss_matches_its_stationary_rate_and_burst_length() {
        // p13 5 %, p31 50 %, p32 20 %, p23 30 %, p14 1 %. Stationary: pi3 = pi1 p13 / p31,
        // pi2 = pi3 p32 / p23, pi4 = pi1 p14; loss = pi3 + pi4 = 9.35 %. A run of losses in the
        // burst state lasts 1 / (p31 + p32) = 1.43 packets on average.
        let (p13, p31, p32, p23, p14) = (0.05, 0.5, 0.2, 0.3, 0.01);
        let mut q = netem(NetemParams {
            loss_state: Some(FourState {
                p13,
                p31: Some(p31),
                p32,
                p23,
                p14,
            }),
            limit: Some(100_000),
            ..Default::default()
        });
        let lost = loss_pattern(&mut q, 400_000);
        let pi1 = 1.0 / (1.0 + p14 + p13 / p31 + p13 * p32 / (p31 * p23));
        let want = pi1 * (p13 / p31 + p14);
        let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        assert!((rate - want).abs() < 0.004, "loss {rate}, want {want}");
        // tc's defaults with p13 alone: independent loss with probability p13.
        let mut q = netem(NetemParams {
            loss_state: Some(FourState {
                p13: 0.03,
                p31: None,
                p32: 0.0,
                p23: 1.0,
                p14: 0.0,
            }),
            limit: Some(100_000),
            ..Default::default()
        });
        let lost = loss_pattern(&mut q, 200_000);
        let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        let runs = lost.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let mean_run = lost.iter().filter(|&&l| l).count() as f64 / runs;
        assert!((rate - 0.03).abs() < 0.002, "loss {rate}");
        assert!((mean_run - 1.0 / 0.97).abs() < 0.02, "mean run {mean_run}");
    }

    #[test]
    fn a_custom_table_gives_delays_from_its_entries() {
        // Two entries, -8192 and +8192 (minus and plus one sigma): every delay is 10 +- 2 ms,
        // half of each.
        let mut q = netem(NetemParams {
            delay_ms: 10.0,
            jitter_ms: 2.0,
            dist_table: Some(vec![-8192, 8192]),
            limit: Some(100_000),
            ..Default::default()
        });
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..10_000 {
            *seen.entry(q.delay()).or_insert(0) += 1;
        }
        let keys: Vec<i64> = seen.keys().copied().collect();
        assert_eq!(keys, [8 * MS as i64, 12 * MS as i64]);
        assert!((seen[&(8 * MS as i64)] as f64 / 10_000.0 - 0.5).abs() < 0.02);
    }

    #[test]
    fn slots_release_bounded_bursts_at_their_spacing() {
        let mut q = netem(NetemParams {
            slot_min_ms: Some(5.0),
            slot_max_ms: Some(15.0),
            slot_packets: Some(4),
            limit: Some(100_000),
            ..Default::default()
        });
        let (out, _) = run(&mut q, 5000);
        let mut times: Vec<SimTime> = out.iter().map(|&(_, t)| t).collect();
        times.dedup();
        let gaps: Vec<f64> = times
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e6)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        // one slot per 10 ms on average, never more than 4 packets in one
        assert!((mean - 10.0).abs() < 0.5, "mean slot gap {mean}");
        assert!(gaps.iter().all(|&g| (5.0 - 1e-9..15.0).contains(&g)));
        let mut per_slot = std::collections::HashMap::new();
        for &(_, t) in &out {
            *per_slot.entry(t).or_insert(0) += 1;
        }
        assert!(per_slot.values().all(|&n| n <= 4));
    }

    /// Departure gaps of a netem whose queue never runs dry (one packet per slot).
    fn slot_gaps_ms(p: NetemParams) -> Vec<f64> {
        let mut q = netem(NetemParams {
            slot_packets: Some(1),
            limit: Some(100_000),
            ..p
        });
        let (out, _) = run(&mut q, 20_000);
        let times: Vec<SimTime> = out.iter().map(|&(_, t)| t).collect();
        times[1..]
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e6)
            .take(1500)
            .collect()
    }

    #[test]
    fn slot_distribution_draws_the_gaps_from_its_table() {
        let dist = |d: Distribution| NetemParams {
            slot_delay_ms: Some(10.0),
            slot_jitter_ms: Some(2.0),
            slot_distribution: Some(d),
            ..Default::default()
        };
        let (m, sd) = mean_sd(&slot_gaps_ms(dist(Distribution::Normal)));
        assert!(
            (m - 10.0).abs() < 0.15 && (sd - 2.0).abs() < 0.15,
            "normal {m} {sd}"
        );
        // iproute2's pareto table: mean -0.033 sigma, sd 0.82 sigma
        let (m, sd) = mean_sd(&slot_gaps_ms(dist(Distribution::Pareto)));
        assert!(
            (m - 9.93).abs() < 0.15 && (sd - 1.64).abs() < 0.15,
            "pareto {m} {sd}"
        );
        // a table of your own: two entries, -1 and +1 sigma
        let own = slot_gaps_ms(NetemParams {
            slot_delay_ms: Some(10.0),
            slot_jitter_ms: Some(2.0),
            slot_dist_table: Some(vec![-8192, 8192]),
            ..Default::default()
        });
        assert!(own.iter().all(|&g| g == 8.0 || g == 12.0), "{own:?}");
        let (m, _) = mean_sd(&own);
        assert!((m - 10.0).abs() < 0.2, "own table {m}");
    }

    #[test]
    fn a_slot_serves_only_packets_due_when_it_opened() {
        // One packet every 50 ms, slots 5-15 ms apart: the slot that opened while the netem
        // was idle is not the packet's (netem_dequeue draws a new one), so every packet waits
        // for a fresh slot; the first slot opens at set-up and serves the first packet.
        let mut q = netem(NetemParams {
            slot_min_ms: Some(5.0),
            slot_max_ms: Some(15.0),
            ..Default::default()
        });
        let mut drops = Vec::new();
        let mut waits = Vec::new();
        for i in 0..400u64 {
            let now = i * 50 * MS;
            q.enqueue(pkt(i as u32), now, &mut drops);
            // Linux runs the qdisc after the enqueue, then when its watchdog fires.
            let mut t = now;
            let p = loop {
                if let Some(p) = q.dequeue(t, &mut drops) {
                    break p;
                }
                t = q.ready_at(t);
            };
            assert_eq!(p.seq, i as u32);
            waits.push((t - now) as f64 / 1e6);
        }
        assert_eq!(waits[0], 0.0);
        assert!(
            waits[1..].iter().all(|&w| (5.0..15.0).contains(&w)),
            "{waits:?}"
        );
        let (m, _) = mean_sd(&waits[1..]);
        assert!((m - 10.0).abs() < 0.5, "mean wait {m}");
    }

    #[test]
    fn reordered_packets_skip_the_slots() {
        // Every packet reordered (sent at once through sch->q) while slots are 100 ms apart.
        let mut q = netem(NetemParams {
            delay_ms: 10.0,
            reorder: 1.0,
            slot_min_ms: Some(100.0),
            slot_max_ms: Some(100.0),
            ..Default::default()
        });
        let mut drops = Vec::new();
        for i in 0..10 {
            q.enqueue(pkt(i), i as u64 * MS, &mut drops);
            assert_eq!(q.ready_at(i as u64 * MS), i as u64 * MS);
            assert_eq!(q.dequeue(i as u64 * MS, &mut drops).map(|p| p.seq), Some(i));
        }
    }

    #[test]
    fn a_rate_spaces_packets_and_reordering_sends_some_at_once() {
        let mut q = netem(NetemParams {
            rate_mbps: Some(4.0),
            limit: Some(100_000),
            ..Default::default()
        });
        // 1000-byte packets every 1 ms at 4 Mbit/s: each takes 2 ms, so they leave 2 ms apart.
        let (out, _) = run(&mut q, 100);
        assert!(out.windows(2).skip(10).all(|w| w[1].1 - w[0].1 == 2 * MS));
        let mut q = netem(NetemParams {
            delay_ms: 10.0,
            reorder: 0.25,
            gap: Some(5),
            limit: Some(100_000),
            ..Default::default()
        });
        let (out, _) = run(&mut q, 10_000);
        let early = out
            .iter()
            .filter(|&&(s, t)| t - s as u64 * MS < 10 * MS)
            .count() as f64;
        // at most one packet in five, and then with probability 1/4: about 1/20 .. 1/5
        assert!(early > 10_000.0 / 25.0 && early < 10_000.0 / 4.0, "{early}");
    }

    fn mean_sd(x: &[f64]) -> (f64, f64) {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        let v = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n;
        (m, v.sqrt())
    }

    fn quantile(x: &[f64], p: f64) -> f64 {
        let mut s = x.to_vec();
        s.sort_by(f64::total_cmp);
        s[(p * s.len() as f64) as usize]
    }

    /// Lag-1 autocorrelation.
    fn lag1(x: &[f64]) -> f64 {
        let (m, sd) = mean_sd(x);
        let c = x.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>();
        c / (x.len() - 1) as f64 / (sd * sd)
    }

    /// `n` delays drawn by `tabledist`, in units of the jitter around the delay.
    fn draws(p: NetemParams, n: usize) -> Vec<f64> {
        let (mu, sigma) = (p.delay_ms * MS as f64, p.jitter_ms * MS as f64);
        let mut q = netem(p);
        (0..n).map(|_| (q.delay() as f64 - mu) / sigma).collect()
    }

    fn jittered(d: Distribution, corr: f64) -> NetemParams {
        NetemParams {
            delay_ms: 100.0,
            jitter_ms: 10.0,
            distribution: d,
            delay_corr: corr,
            ..Default::default()
        }
    }

    /// Drive a netem as the root of a port: after each enqueue the simulator takes the
    /// clones and enqueues them at the root again. Returns (packets out, drops, clones).
    fn run_root(q: &mut Netem, pkts: impl Iterator<Item = Packet>) -> (Vec<Packet>, usize, usize) {
        let (mut out, mut drops, mut dups) = (Vec::new(), Vec::new(), Vec::new());
        let mut clones = 0;
        for p in pkts {
            q.enqueue(p, 0, &mut drops);
            q.take_duplicates(&mut dups);
            for d in dups.drain(..) {
                assert!(d.skb & skb::NETEM_DUP != 0);
                clones += 1;
                q.enqueue(d, 0, &mut drops);
            }
            let mut again = Vec::new();
            q.take_duplicates(&mut again);
            assert!(again.is_empty(), "a clone was duplicated again");
            while let Some(p) = q.dequeue(0, &mut drops) {
                out.push(p);
            }
        }
        (out, drops.len(), clones)
    }

    #[test]
    fn the_normal_quantile_function_is_accurate() {
        // Reference values: Python's statistics.NormalDist().inv_cdf.
        for (p, x) in [
            (0.5, 0.0),
            (0.9, 1.2815515655446008),
            (0.975, 1.9599639845400536),
            (0.01, -2.3263478740408408),
            (3.0517578125e-05, -4.008772594168585),
            (1e-12, -7.034483825301132),
        ] {
            let got = normal_quantile(p);
            assert!(
                (got - x).abs() < 1e-12 * x.abs().max(1.0),
                "{p}: {got} vs {x}"
            );
        }
    }

    #[test]
    fn tables_are_iproute2s() {
        // Entries as iproute2's netem/normal, pareto and paretonormal print them (all 3 x 4096
        // entries were compared with the generators built from its source).
        let pareto = dist_table(Distribution::Pareto);
        assert_eq!(pareto.len(), 4096);
        assert_eq!((pareto[0], pareto[1], pareto[2048]), (-5461, -5460, -2622));
        assert!(pareto.windows(2).all(|w| w[0] <= w[1]));
        // the last 1.1 % clipped at 32767
        let clipped = pareto.iter().filter(|&&v| v == 32767).count();
        assert_eq!(clipped, 44, "{clipped}");
        let normal = dist_table(Distribution::Normal);
        assert_eq!((normal[0], normal[2048], normal[4095]), (-32768, 0, 28858));
        let pn = dist_table(Distribution::Paretonormal);
        assert_eq!((pn[0], pn[2048], pn[4095]), (-12305, -1966, 31789));
    }

    #[test]
    fn a_delaying_netem_orphans_socket_charged_packets_and_clones_are_never_charged() {
        let charged = |i| {
            let mut p = pkt(i);
            p.skb |= skb::WFREE;
            p
        };
        let mut orphans = Vec::new();
        // Delay (or jitter, or a rate): every charged packet is orphaned on entry.
        for params in [
            NetemParams {
                delay_ms: 5.0,
                ..Default::default()
            },
            NetemParams {
                rate_mbps: Some(10.0),
                ..Default::default()
            },
        ] {
            let mut q = netem(params);
            assert!(q.may_orphan());
            let (out, _, _) = run_root(&mut q, (0..10).map(charged));
            q.take_orphans(&mut orphans);
            assert_eq!(orphans.len(), 10);
            assert_eq!(
                orphans[3],
                Orphan {
                    flow: 0,
                    payload: 934
                }
            );
            assert!(out.iter().all(|p| p.skb & skb::WFREE == 0));
            orphans.clear();
        }
        // Loss and duplication alone delay nothing: packets stay charged, their copies not.
        let mut q = netem(NetemParams {
            duplicate: 0.5,
            limit: Some(1000),
            ..Default::default()
        });
        assert!(!q.may_orphan());
        let (out, _, clones) = run_root(&mut q, (0..100).map(charged));
        q.take_orphans(&mut orphans);
        assert!(orphans.is_empty() && clones > 0);
        assert_eq!(out.iter().filter(|p| p.skb & skb::WFREE != 0).count(), 100);
    }

    #[test]
    fn duplication_matches_its_probability_and_clones_are_not_duplicated_again() {
        let n = 100_000;
        let mut q = netem(NetemParams {
            duplicate: 0.05,
            limit: Some(100_000),
            ..Default::default()
        });
        let (out, dropped, clones) = run_root(&mut q, (0..n).map(pkt));
        let rate = clones as f64 / n as f64;
        assert!((rate - 0.05).abs() < 0.003, "duplicated {rate}");
        assert_eq!((out.len(), dropped), (n as usize + clones, 0));
        // every packet leaves with the flag cleared: a later netem may duplicate it
        assert!(out.iter().all(|p| p.skb & skb::NETEM_DUP == 0));
        // each packet at most twice
        let mut seen = vec![0u8; n as usize];
        for p in &out {
            seen[p.seq as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c == 1 || c == 2));
        // Duplicated and lost: Linux's count is 1 + 1 - 1, the packet goes out once.
        let mut q = netem(NetemParams {
            duplicate: 1.0,
            loss: 1.0,
            ..Default::default()
        });
        let (out, dropped, clones) = run_root(&mut q, (0..100).map(pkt));
        assert_eq!((out.len(), dropped, clones), (100, 0, 0));
        // With loss 1/2 every original goes out (a loss only cancels its clone), a clone is
        // made for the other half, and each clone is on its own: half of them are lost.
        let mut q = netem(NetemParams {
            duplicate: 1.0,
            loss: 0.5,
            limit: Some(100_000),
            ..Default::default()
        });
        let (out, dropped, clones) = run_root(&mut q, (0..20_000).map(pkt));
        assert_eq!(out.len() + dropped, 20_000 + clones);
        let (c, o) = (clones as f64 / 20_000.0, out.len() as f64 / 20_000.0);
        assert!((c - 0.5).abs() < 0.02 && (o - 1.25).abs() < 0.02, "{c} {o}");
    }

    #[test]
    fn get_crandom_has_the_lag1_correlation_and_the_shrunk_variance_of_its_formula() {
        for rho in [0.25, 0.5, 0.9] {
            let mut rng = Rng::new(3, 1);
            let mut c = Crandom::new(rho, &mut rng);
            let x: Vec<f64> = (0..200_000)
                .map(|_| c.next(&mut rng) as f64 / 4294967296.0)
                .collect();
            let (m, sd) = mean_sd(&x);
            // A_n = (1 - rho) U_n + rho A_{n-1}: mean 1/2, lag-1 correlation rho,
            // variance (1 - rho) / (1 + rho) of the uniform's 1/12.
            let want_sd = ((1.0 - rho) / (1.0 + rho) / 12.0).sqrt();
            assert!((m - 0.5).abs() < 0.01, "{rho}: mean {m}");
            assert!(
                (sd - want_sd).abs() < 0.01 * want_sd.max(0.1),
                "{rho}: sd {sd}"
            );
            assert!((lag1(&x) - rho).abs() < 0.01, "{rho}: lag1 {}", lag1(&x));
        }
    }

    #[test]
    fn delay_correlation_does_what_the_kernel_does() {
        // Uniform jitter: tabledist takes the correlated number modulo 2 * jitter (1e7 ns),
        // its low bits: successive delays stay uncorrelated and uniform.
        let d = draws(jittered(Distribution::Uniform, 0.5), 100_000);
        let (m, sd) = mean_sd(&d);
        assert!(lag1(&d).abs() < 0.02, "lag1 {}", lag1(&d));
        assert!(
            m.abs() < 0.01 && (sd - 1.0 / 3f64.sqrt()).abs() < 0.01,
            "{m} {sd}"
        );
        // So does a table (modulo 4096).
        let d = draws(jittered(Distribution::Normal, 0.5), 100_000);
        let (m, sd) = mean_sd(&d);
        assert!(lag1(&d).abs() < 0.02, "lag1 {}", lag1(&d));
        assert!(m.abs() < 0.01 && (sd - 1.0).abs() < 0.01, "{m} {sd}");
        // Only with rho within 2 * jitter / 2^32 of 1 does the correlation show.
        let d = draws(jittered(Distribution::Uniform, 0.99999), 100_000);
        assert!(lag1(&d) > 0.9, "lag1 {}", lag1(&d));
    }

    #[test]
    fn correlated_loss_is_bursty_and_rarer_than_its_probability() {
        let mut q = netem(NetemParams {
            loss: 0.1,
            loss_corr: 0.25,
            ..Default::default()
        });
        let lost: Vec<bool> = (0..200_000).map(|_| q.lost()).collect();
        let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        let after_loss = lost.windows(2).filter(|w| w[0]).count() as f64;
        let both = lost.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        // The mixed number is not uniform: far fewer than 10 % of the packets are lost
        // (tc-netem(8) deprecates correlated random loss for this), and losses cluster.
        assert!(rate < 0.05, "loss {rate}");
        assert!(
            both / after_loss > 1.5 * rate,
            "{} vs {rate}",
            both / after_loss
        );
    }

    #[test]
    fn pareto_and_paretonormal_jitter_match_their_tables_distributions() {
        // The pareto table's value at quantile p: 4/3 ((1-p)^(-1/3) - 1.5), clipped at
        // c = 32767/8192. With s = 1 - p_c the tail above the clip, its moments are
        // closed-form integrals of (1-p)^(-1/3) and (1-p)^(-2/3).
        let c = 32767.0 / 8192.0;
        let pareto = |p: f64| (4.0 / 3.0 * ((1.0 - p).powf(-1.0 / 3.0) - 1.5)).min(c);
        let qc = 1.5 + 0.75 * c;
        let s = qc.powi(-3);
        let pc = 1.0 - s;
        let int_q = 1.5 * (1.0 - s.powf(2.0 / 3.0));
        let int_q2 = 3.0 * (1.0 - s.powf(1.0 / 3.0));
        let mean_p = 4.0 / 3.0 * (int_q - 1.5 * pc) + s * c;
        let m2_p = 16.0 / 9.0 * (int_q2 - 3.0 * int_q + 2.25 * pc) + s * c * c;
        let sd_p = (m2_p - mean_p * mean_p).sqrt();
        assert!((mean_p + 0.0329).abs() < 1e-3 && (sd_p - 0.821).abs() < 1e-3);
        let d = draws(jittered(Distribution::Pareto, 0.0), 400_000);
        let (m, sd) = mean_sd(&d);
        assert!((m - mean_p).abs() < 0.01, "pareto mean {m} vs {mean_p}");
        assert!((sd - sd_p).abs() < 0.01, "pareto sd {sd} vs {sd_p}");
        for p in [0.1, 0.5, 0.9, 0.99] {
            let (got, want) = (quantile(&d, p), pareto(p));
            assert!((got - want).abs() < 0.02, "pareto q{p}: {got} vs {want}");
        }
        assert!(d.iter().all(|&x| (-0.67..=c + 1e-6).contains(&x)));

        // paretonormal: at each quantile p, (normal(p) + 3 pareto(p)) / 4. Its mean is
        // 3/4 of the pareto's; its variance needs E[normal(p) pareto(p)], integrated over
        // x = normal(p) with an erf of its own (Abramowitz-Stegun 7.1.26).
        let erf = |x: f64| {
            let t = 1.0 / (1.0 + 0.3275911 * x.abs());
            let y = 1.0
                - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
                    + 0.254829592)
                    * t
                    * (-x * x).exp();
            y.copysign(x)
        };
        let phi = |x: f64| 0.5 * (1.0 + erf(x / 2f64.sqrt()));
        let (mut e_np, h) = (0.0, 1e-3_f64);
        let mut x = -8.0_f64;
        while x < 8.0 {
            let xm = x + h / 2.0;
            let dens = (-xm * xm / 2.0).exp() / (std::f64::consts::TAU).sqrt();
            e_np += xm * pareto(phi(xm)) * dens * h;
            x += h;
        }
        let mean_pn = 0.75 * mean_p;
        let var_pn = (1.0 + 9.0 * m2_p + 6.0 * e_np) / 16.0 - mean_pn * mean_pn;
        let d = draws(jittered(Distribution::Paretonormal, 0.0), 400_000);
        let (m, sd) = mean_sd(&d);
        assert!(
            (m - mean_pn).abs() < 0.01,
            "paretonormal mean {m} vs {mean_pn}"
        );
        assert!(
            (sd - var_pn.sqrt()).abs() < 0.01,
            "paretonormal sd {sd} vs {}",
            var_pn.sqrt()
        );
        for (p, z) in [
            (0.1, -1.2815515655446008),
            (0.5, 0.0),
            (0.9, 1.2815515655446008),
        ] {
            let (got, want) = (quantile(&d, p), (z + 3.0 * pareto(p)) / 4.0);
            assert!(
                (got - want).abs() < 0.02,
                "paretonormal q{p}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn ecn_marks_ect_packets_instead_of_losing_them() {
        let mut q = netem(NetemParams {
            loss: 0.1,
            ecn: true,
            limit: Some(100_000),
            ..Default::default()
        });
        let mut drops = Vec::new();
        let mut out = Vec::new();
        for (i, ecn) in (0..30_000).zip([Ecn::Ect1, Ecn::NotEct, Ecn::Ce].into_iter().cycle()) {
            let mut p = pkt(i);
            p.ecn = ecn;
            q.enqueue(p, 0, &mut drops);
            while let Some(p) = q.dequeue(0, &mut drops) {
                out.push(p);
            }
        }
        // Not-ECT packets are lost, ECT(1) ones marked, CE ones go through as they are.
        assert!(drops.iter().all(|d| d.pkt.ecn == Ecn::NotEct));
        let lost = drops.len() as f64 / 10_000.0;
        let marked = out
            .iter()
            .filter(|p| p.seq % 3 == 0 && p.ecn == Ecn::Ce)
            .count();
        let marked = marked as f64 / 10_000.0;
        assert!(
            (lost - 0.1).abs() < 0.01 && (marked - 0.1).abs() < 0.01,
            "{lost} {marked}"
        );
        assert_eq!(out.iter().filter(|p| p.seq % 3 == 2).count(), 10_000);
    }

    #[test]
    fn corruption_flags_packets_at_its_probability() {
        let mut q = netem(NetemParams {
            corrupt: 0.02,
            duplicate: 0.1,
            limit: Some(100_000),
            ..Default::default()
        });
        let (out, dropped, _) = run_root(&mut q, (0..100_000).map(pkt));
        let rate =
            out.iter().filter(|p| p.skb & skb::CORRUPT != 0).count() as f64 / out.len() as f64;
        assert_eq!(dropped, 0);
        assert!((rate - 0.02).abs() < 0.002, "corrupted {rate}");
    }

    #[test]
    fn options_without_their_companions_are_refused_naming_the_field() {
        let parse = |s: &str| serde_json::from_str::<NetemParams>(s).map_err(|e| e.to_string());
        for (s, field) in [
            (r#"{"duplicate":1.5}"#, "duplicate"),
            (r#"{"corrupt":-0.1}"#, "corrupt"),
            (r#"{"loss":0.1,"loss_corr":2}"#, "loss_corr"),
            (r#"{"ecn":true}"#, "ecn"),
            (r#"{"delay_ms":10,"delay_corr":0.5}"#, "delay_corr"),
            (r#"{"delay_ms":10,"distribution":"pareto"}"#, "distribution"),
            (r#"{"gemodel":{"p":0.1},"loss_corr":0.2}"#, "loss_corr"),
            (
                r#"{"delay_ms":10,"jitter_ms":1,"dist_table":[1],"distribution":"normal"}"#,
                "dist_table",
            ),
            (r#"{"delay_ms":10,"dist_table":[1]}"#, "dist_table"),
            (
                r#"{"delay_ms":10,"jitter_ms":1,"dist_table":[]}"#,
                "dist_table",
            ),
            (
                r#"{"slot_delay_ms":5,"slot_jitter_ms":1,"slot_dist_table":[]}"#,
                "slot_dist_table",
            ),
            (r#"{"loss_state":{"p13":1.5}}"#, "loss_state.p13"),
            (r#"{"loss_state":{"p13":0.6,"p14":0.6}}"#, "loss_state.p14"),
            (
                r#"{"loss_state":{"p13":0.1,"p31":0.9,"p32":0.2}}"#,
                "loss_state.p32",
            ),
            (r#"{"loss_state":{"p13":0.1},"loss":0.01}"#, "loss"),
            (
                r#"{"loss_state":{"p13":0.1},"gemodel":{"p":0.1}}"#,
                "gemodel",
            ),
            (r#"{"gemodel":{"p":0.1},"loss":0.01}"#, "gemodel"),
            (r#"{"reorder":0.1}"#, "reorder"),
            (r#"{"delay_ms":10,"gap":5}"#, "gap"),
            (r#"{"slot_packets":4}"#, "slot_packets"),
            (r#"{"slot_bytes":4000}"#, "slot_bytes"),
            (r#"{"slot_min_ms":1,"slot_packets":0}"#, "slot_packets"),
            (
                r#"{"slot_delay_ms":5,"slot_jitter_ms":1,"slot_distribution":"uniform"}"#,
                "slot_distribution",
            ),
            (
                r#"{"slot_delay_ms":5,"slot_jitter_ms":1}"#,
                "slot_distribution",
            ),
            (
                r#"{"slot_delay_ms":5,"slot_jitter_ms":0,"slot_distribution":"normal"}"#,
                "slot_jitter_ms",
            ),
            (
                r#"{"slot_jitter_ms":1,"slot_distribution":"normal"}"#,
                "slot_delay_ms",
            ),
            (
                r#"{"slot_min_ms":1,"slot_delay_ms":5,"slot_jitter_ms":1,"slot_distribution":"normal"}"#,
                "slot_distribution",
            ),
            (
                r#"{"slot_delay_ms":5,"slot_jitter_ms":1,"slot_distribution":"normal","slot_dist_table":[1]}"#,
                "slot_dist_table",
            ),
        ] {
            let (f, m) = parse(s).unwrap().validate().unwrap_err();
            assert_eq!(f, field, "{s}: {m}");
        }
        let p = parse(
            r#"{"delay_ms":10,"jitter_ms":2,"delay_corr":0.25,"distribution":"paretonormal",
                "loss":0.01,"ecn":true,"duplicate":0.01,"corrupt":0.001,"reorder":0.1,
                "reorder_corr":0.5}"#,
        )
        .unwrap();
        assert_eq!(p.distribution, Distribution::Paretonormal);
        assert!(p.validate().is_ok());
        assert!(parse(r#"{"duplicat":0.1}"#)
            .unwrap_err()
            .contains("duplicat"));
    }
}
