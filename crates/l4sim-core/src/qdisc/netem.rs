//! `netem` (net/sched/sch_netem.c): a link's impairments as the qdisc Linux uses for them.
//!
//! - Delay and jitter (`netem_enqueue` -> `tabledist`): each packet's delay is `delay_ms`
//!   plus jitter, uniform in [-jitter, +jitter) without a distribution table (tc's default)
//!   or normal with `distribution = "normal"` (iproute2's `normal` table is this distribution
//!   quantised). Packets wait in a queue ordered by their send time (`tfifo_enqueue`), so
//!   jitter reorders them, as Linux does.
//! - `rate_mbps` (`packet_time_ns`): a packet's send time is after the previous packet's plus
//!   its transmission time at that rate (the queue's last send time replaces `now`).
//! - Loss (`loss_event`): independent (`loss`, a probability) or the Gilbert-Elliott model
//!   (`loss gemodel p r 1-h 1-k`, `loss_gilb_ell`: in the good state the next packet moves to
//!   the bad state with probability p and is lost with 1-k; in the bad state it moves back with
//!   probability r and is lost with 1-h). A lost packet counts as an AQM drop.
//! - Reordering (`reorder P gap G`): with probability P, every G-th packet is sent at once
//!   (put at the head of the queue) instead of after its delay.
//! - `slot MIN MAX [packets N] [bytes B]` (`get_slot`): packets leave only in slots; a slot
//!   opens after a uniform random time in [MIN, MAX) and carries at most N packets / B bytes
//!   (Wi-Fi-like or DOCSIS-like bursts).
//! - `limit` (packets, default 1000): tail drop.
//!
//! Not modelled: duplication and corruption (they would create or alter packets of a
//! connection), delay correlation, the `pareto` tables, `ecn` marking instead of loss.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Drop, DropReason, QueueDisc};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Rate, SimTime, MS};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    #[default]
    Uniform,
    Normal,
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

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetemParams {
    pub limit: Option<u32>,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    pub distribution: Distribution,
    /// Independent loss probability.
    pub loss: f64,
    pub gemodel: Option<GilbertElliott>,
    /// Reorder probability and gap (default gap 1 when reordering).
    pub reorder: f64,
    pub gap: Option<u32>,
    pub rate_mbps: Option<f64>,
    /// Slot: min and max time between slots, ms; packets and bytes per slot.
    pub slot_min_ms: Option<f64>,
    pub slot_max_ms: Option<f64>,
    pub slot_packets: Option<u32>,
    pub slot_bytes: Option<u64>,
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
        super::check_ms("delay_ms", self.delay_ms)?;
        super::check_ms("jitter_ms", self.jitter_ms)?;
        prob("loss", self.loss)?;
        prob("reorder", self.reorder)?;
        if let Some(g) = &self.gemodel {
            prob("gemodel.p", g.p)?;
            prob("gemodel.r", g.r.unwrap_or(0.0))?;
            prob("gemodel.loss_bad", g.loss_bad)?;
            prob("gemodel.loss_good", g.loss_good)?;
        }
        if let Some(r) = self.rate_mbps {
            super::check_pos("rate_mbps", r)?;
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
        Ok(())
    }
}

pub struct Netem {
    p: NetemParams,
    rng: Rng,
    /// Packets with their send time, in send-time order (`tfifo`).
    q: VecDeque<(SimTime, Packet)>,
    bytes: u64,
    /// Send time of the last packet queued (`q->t_last`, for `rate`).
    t_last: SimTime,
    counter: u32,
    bad_state: bool,
    slot_next: SimTime,
    slot_packets: i64,
    slot_bytes: i64,
}

impl Netem {
    pub fn new(p: &NetemParams, rng: Rng) -> Netem {
        let mut n = Netem {
            p: p.clone(),
            rng,
            q: VecDeque::new(),
            bytes: 0,
            t_last: 0,
            counter: 0,
            bad_state: false,
            slot_next: 0,
            slot_packets: 0,
            slot_bytes: 0,
        };
        if p.slot_min_ms.is_some() {
            n.next_slot(0);
        }
        n
    }

    /// `get_slot`: the next slot opens after a uniform time in [min, max).
    fn next_slot(&mut self, now: SimTime) {
        let lo = self.p.slot_min_ms.unwrap_or(0.0);
        let hi = self.p.slot_max_ms.unwrap_or(lo);
        let d = lo + (hi - lo) * self.rng.uniform();
        self.slot_next = now + (d * MS as f64) as SimTime;
        self.slot_packets = self.p.slot_packets.map_or(i64::MAX, i64::from);
        self.slot_bytes = self.p.slot_bytes.map_or(i64::MAX, |b| b as i64);
    }

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
        self.p.loss > 0.0 && self.rng.uniform() < self.p.loss
    }

    /// `tabledist`: the delay of one packet, ns.
    fn delay(&mut self) -> i64 {
        let mu = self.p.delay_ms * MS as f64;
        let sigma = self.p.jitter_ms * MS as f64;
        let d = if sigma == 0.0 {
            mu
        } else {
            match self.p.distribution {
                Distribution::Uniform => mu - sigma + 2.0 * sigma * self.rng.uniform(),
                Distribution::Normal => {
                    let (u1, u2) = (self.rng.uniform().max(1e-300), self.rng.uniform());
                    mu + sigma * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
                }
            }
        };
        d as i64
    }
}

impl QueueDisc for Netem {
    fn kind(&self) -> &'static str {
        "netem"
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        if self.lost() {
            drops.push(Drop {
                pkt,
                reason: DropReason::Aqm,
            });
            return;
        }
        if self.q.len() >= self.p.limit.unwrap_or(1000) as usize {
            drops.push(Drop {
                pkt,
                reason: DropReason::Overlimit,
            });
            return;
        }
        self.bytes += pkt.len as u64;
        let gap = self.p.gap.unwrap_or(1);
        let reorder_now =
            self.p.reorder > 0.0 && self.counter + 1 >= gap && self.rng.uniform() < self.p.reorder;
        if reorder_now {
            // "Do re-ordering by putting one out of N packets at the front of the queue."
            self.counter = 0;
            self.q.push_front((now, pkt));
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
        let &(t, _) = self.q.front()?;
        if t > now || self.slot_next > now {
            return None;
        }
        let (_, p) = self.q.pop_front().unwrap();
        self.bytes -= p.len as u64;
        if self.p.slot_min_ms.is_some() {
            self.slot_packets -= 1;
            self.slot_bytes -= p.len as i64;
            if self.slot_packets <= 0 || self.slot_bytes <= 0 {
                self.next_slot(now);
            }
        }
        Some(p)
    }
    fn ready_at(&self, now: SimTime) -> SimTime {
        self.q
            .front()
            .map_or(now, |&(t, _)| t.max(self.slot_next).max(now))
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Dir;

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
        assert!(gaps.iter().all(|&g| g >= 5.0 - 1e-9 && g < 15.0));
        let mut per_slot = std::collections::HashMap::new();
        for &(_, t) in &out {
            *per_slot.entry(t).or_insert(0) += 1;
        }
        assert!(per_slot.values().all(|&n| n <= 4));
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
}
