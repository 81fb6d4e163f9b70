//! `htb` (net/sched/sch_htb.c) with leaf classes under the port's root class: several
//! rate-guaranteed classes on one egress, each borrowing unused capacity up to its ceiling.
//!
//! The port's shaper is the root class (its rate is the link's); this qdisc holds the leaves.
//! Each leaf has two token buckets kept as time, like the root (`net/shaper.rs`): `rate` with
//! `burst` (`tokens`) and `ceil` with `cburst` (`ctokens`). As `htb_class_mode`, a leaf with
//! ctokens < 0 may not send, one with tokens >= 0 sends on its own rate (level 0), and one in
//! between borrows from the root (level 1; the root lends whenever the port may send). As
//! `htb_dequeue`, level 0 is served before level 1, and within a level the lowest `prio`
//! first; leaves of one level and prio take turns by deficit round robin (`htb_dequeue_tree`:
//! a leaf sends until its deficit at that level goes negative, then gains `quantum` and the
//! turn moves on). As `htb_charge_class`, a packet costs the leaf its ctokens, and its tokens
//! only when sent at level 0 (a borrowed packet is charged to the lender). When no leaf may
//! send, the port waits for the first leaf's ceiling to allow it (HTB's event queue and
//! watchdog).
//!
//! Defaults are tc's (iproute2 `q_htb.c`, kernel `htb_change_class`): `ceil` = `rate`, bursts
//! `rate / HZ + 1600` bytes with the 1 GHz psched clock, `quantum` = rate in bytes/s / `r2q`
//! (10) clamped to 1000..200000 bytes, `prio` 0, a `pfifo` child of the device's
//! `txqueuelen` (1000 packets). Classification: a class's `dscp` list (a u32 filter on the DS
//! field), else the `default` class (tc's `default` minor id; tc's fallback without one, the
//! unshaped direct queue, is not modelled). One level of leaves: inner classes between the root
//! and the leaves are not modelled.

use serde::{Deserialize, Serialize};

use super::{Drop, Qdisc, QdiscSpec, QueueDisc};
use crate::net::shaper::{default_burst, Shaper};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Rate, SimTime, NEVER};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HtbClassSpec {
    /// Name in the results (default `class{i}`).
    #[serde(default)]
    pub name: Option<String>,
    /// Guaranteed rate, Mbit/s.
    pub rate_mbps: f64,
    /// Ceiling, Mbit/s (default: the rate, no borrowing).
    #[serde(default)]
    pub ceil_mbps: Option<f64>,
    /// Bytes (default tc's).
    #[serde(default)]
    pub burst: Option<u32>,
    #[serde(default)]
    pub cburst: Option<u32>,
    /// 0 (highest) .. 7.
    #[serde(default)]
    pub prio: u8,
    /// DRR quantum, bytes (default rate / r2q).
    #[serde(default)]
    pub quantum: Option<u32>,
    /// DSCPs classified into this class.
    #[serde(default)]
    pub dscp: Vec<u8>,
    /// The leaf qdisc (default `pfifo limit 1000`).
    #[serde(default)]
    pub child: Option<Box<QdiscSpec>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HtbParams {
    pub classes: Vec<HtbClassSpec>,
    /// Index of the class for packets no `dscp` list selects (default: the last class).
    #[serde(default)]
    pub default: Option<usize>,
    /// Rate-to-quantum divisor.
    #[serde(default = "d_r2q")]
    pub r2q: u32,
}

fn d_r2q() -> u32 {
    10
}

impl HtbParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.classes.is_empty() {
            return Err(("classes".into(), "htb needs at least one class".into()));
        }
        if let Some(d) = self.default {
            if d >= self.classes.len() {
                return Err((
                    "default".into(),
                    format!(
                        "default class {d} does not exist (classes 0..{})",
                        self.classes.len() - 1
                    ),
                ));
            }
        }
        super::check_nonzero("r2q", self.r2q as u64)?;
        for (i, c) in self.classes.iter().enumerate() {
            let at = |f: &str| format!("classes[{i}].{f}");
            super::check_pos("rate_mbps", c.rate_mbps).map_err(|(_, m)| (at("rate_mbps"), m))?;
            if let Some(ceil) = c.ceil_mbps {
                if !(ceil.is_finite() && ceil >= c.rate_mbps) {
                    return Err((
                        at("ceil_mbps"),
                        format!(
                            "the ceiling must be at least the rate ({}), got {ceil}",
                            c.rate_mbps
                        ),
                    ));
                }
            }
            if c.prio > 7 {
                return Err((at("prio"), format!("prio is 0..7, got {}", c.prio)));
            }
            if let Some(d) = c.dscp.iter().find(|d| **d > 63) {
                return Err((at("dscp"), format!("a DSCP is 0..63, got {d}")));
            }
            for (f, v) in [
                ("burst", c.burst),
                ("cburst", c.cburst),
                ("quantum", c.quantum),
            ] {
                if v == Some(0) {
                    return Err((at(f), format!("{f} must be at least 1 byte, got 0")));
                }
            }
            if let Some(child) = &c.child {
                child
                    .validate()
                    .map_err(|(f, m)| (at(&format!("child.{f}")), m))?;
            }
        }
        Ok(())
    }
}

/// Serve a leaf on its own rate (level 0) or borrowing from the root (level 1).
const LEVELS: usize = 2;

struct Leaf {
    name: String,
    rate: Shaper,
    ceil: Shaper,
    prio: u8,
    quantum: i64,
    deficit: [i64; LEVELS],
    child: Qdisc,
}

impl Leaf {
    /// The level the leaf may send at now, if any (`htb_class_mode`).
    fn level(&self, now: SimTime) -> Option<usize> {
        if self.ceil.ready_at(now) > now {
            None
        } else if self.rate.ready_at(now) == now {
            Some(0)
        } else {
            Some(1)
        }
    }
}

pub struct Htb {
    leaves: Vec<Leaf>,
    /// Leaf per DSCP.
    class_of: [u8; 64],
    /// Round-robin position per level and prio: the leaf whose turn it is.
    turn: [[usize; 8]; LEVELS],
    borrowed: u64,
}

impl Htb {
    pub fn new(p: &HtbParams, mut rng: Rng) -> Htb {
        let default = p.default.unwrap_or(p.classes.len() - 1);
        let mut class_of = [default as u8; 64];
        for (i, c) in p.classes.iter().enumerate() {
            for &d in &c.dscp {
                class_of[d as usize] = i as u8;
            }
        }
        let leaves = p
            .classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let rate = Rate::mbps(c.rate_mbps);
                let ceil = Rate::mbps(c.ceil_mbps.unwrap_or(c.rate_mbps));
                let quantum = c.quantum.map_or_else(
                    || (rate.bytes_per_sec() / p.r2q as u64).clamp(1000, 200_000),
                    |q| q as u64,
                );
                let spec = c
                    .child
                    .as_deref()
                    .cloned()
                    .unwrap_or(QdiscSpec::Pfifo { limit: 1000 });
                Leaf {
                    name: c.name.clone().unwrap_or_else(|| format!("class{i}")),
                    rate: Shaper::new(rate, c.burst.unwrap_or_else(|| default_burst(rate))),
                    ceil: Shaper::new(ceil, c.cburst.unwrap_or_else(|| default_burst(ceil))),
                    prio: c.prio,
                    quantum: quantum as i64,
                    deficit: [0; LEVELS],
                    child: Qdisc::child(&spec, Rng::new(rng.next_u64(), i as u64)),
                }
            })
            .collect();
        Htb {
            leaves,
            class_of,
            turn: [[0; 8]; LEVELS],
            borrowed: 0,
        }
    }

    /// The leaves that hold packets and may send at `level` now, lowest prio first, each
    /// prio's leaves from the one whose turn it is.
    fn candidates(&self, now: SimTime, level: usize) -> Vec<usize> {
        let n = self.leaves.len();
        let mut out = Vec::new();
        for prio in 0..8u8 {
            let start = self.turn[level][prio as usize];
            for k in 0..n {
                let i = (start + k) % n;
                let l = &self.leaves[i];
                if l.prio == prio && !l.child.is_empty() && l.level(now) == Some(level) {
                    out.push(i);
                }
            }
        }
        out
    }
}

impl QueueDisc for Htb {
    fn kind(&self) -> &'static str {
        "htb"
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        let i = self.class_of[pkt.dscp as usize & 63] as usize;
        QueueDisc::enqueue(&mut self.leaves[i].child, pkt, now, drops);
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        let n = self.leaves.len();
        for level in 0..LEVELS {
            for i in self.candidates(now, level) {
                let l = &mut self.leaves[i];
                let Some(p) = l.child.dequeue(now, drops) else {
                    continue;
                };
                l.deficit[level] -= p.len as i64;
                if l.deficit[level] < 0 {
                    l.deficit[level] += l.quantum;
                    self.turn[level][l.prio as usize] = (i + 1) % n;
                }
                if level == 0 {
                    l.rate.charge(now, p.len);
                } else {
                    self.borrowed += 1;
                }
                l.ceil.charge(now, p.len);
                return Some(p);
            }
        }
        None
    }
    fn ready_at(&self, now: SimTime) -> SimTime {
        let backlogged = self.leaves.iter().filter(|l| !l.child.is_empty());
        let at = backlogged.map(|l| l.ceil.ready_at(now).max(l.child.ready_at(now)));
        at.min().unwrap_or(now)
    }
    fn len(&self) -> usize {
        self.leaves.iter().map(|l| l.child.len()).sum()
    }
    fn bytes(&self) -> u64 {
        self.leaves.iter().map(|l| l.child.bytes()).sum()
    }
    fn next_timer(&self) -> SimTime {
        let t = self.leaves.iter().map(|l| l.child.next_timer());
        t.min().unwrap_or(NEVER)
    }
    fn on_timer(&mut self, now: SimTime) {
        for l in &mut self.leaves {
            if l.child.next_timer() <= now {
                l.child.on_timer(now);
            }
        }
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("borrowed_pkts", self.borrowed as f64));
    }
    fn classes(&self) -> Vec<(String, &Qdisc)> {
        self.leaves
            .iter()
            .map(|l| (l.name.clone(), &l.child))
            .collect()
    }
    fn children_mut(&mut self) -> Vec<&mut Qdisc> {
        self.leaves.iter_mut().map(|l| &mut l.child).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;

    fn pkt(dscp: u8) -> Packet {
        let mut p = Packet::full_segment();
        p.dscp = dscp;
        p
    }

    fn htb(classes: serde_json::Value) -> Htb {
        let p: HtbParams =
            serde_json::from_value(serde_json::json!({ "classes": classes })).unwrap();
        p.validate().unwrap();
        Htb::new(&p, Rng::new(1, 1))
    }

    /// Run the qdisc under a root class of `root_mbps` for one second with the classes whose
    /// DSCPs are in `backlogged` kept full; Mbit/s sent per DSCP.
    fn serve(q: &mut Htb, root_mbps: f64, backlogged: &[u8]) -> Vec<f64> {
        let rate = Rate::mbps(root_mbps);
        let mut root = Shaper::new(rate, default_burst(rate));
        let (mut now, mut drops) = (0, Vec::new());
        let mut sent = vec![0u64; backlogged.len()];
        while now < SEC {
            for &d in backlogged {
                while q.leaves[q.class_of[d as usize] as usize].child.len() < 10 {
                    q.enqueue(pkt(d), now, &mut drops);
                }
            }
            now = root.ready_at(now);
            match q.dequeue(now, &mut drops) {
                Some(p) => {
                    root.charge(now, p.len);
                    sent[backlogged.iter().position(|&d| d == p.dscp).unwrap()] += p.len as u64;
                }
                None => now = q.ready_at(now).max(now + 1),
            }
        }
        sent.iter().map(|b| *b as f64 * 8.0 / 1e6).collect()
    }

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() / want < 0.02
    }

    /// Within one DRR quantum (200,000 bytes = 1.6 Mbit) of `want` over the second.
    fn within_a_quantum(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1.6
    }

    #[test]
    fn backlogged_classes_get_their_rates_and_share_the_rest_by_quantum() {
        let mut q = htb(serde_json::json!([
            {"rate_mbps": 20, "ceil_mbps": 100, "dscp": [10]},
            {"rate_mbps": 40, "ceil_mbps": 100},
        ]));
        let got = serve(&mut q, 100.0, &[10, 0]);
        // Each sends its rate at level 0; the 40 Mbit/s left over is borrowed in turns of one
        // quantum each (rate / r2q: 250,000 and 500,000 bytes, both clamped to 200,000).
        assert!(
            within_a_quantum(got[0], 40.0) && within_a_quantum(got[1], 60.0),
            "{got:?}"
        );
    }

    #[test]
    fn a_class_alone_borrows_up_to_its_ceiling_and_no_further() {
        let mut q = htb(serde_json::json!([
            {"rate_mbps": 10, "ceil_mbps": 60, "dscp": [10]},
            {"rate_mbps": 90},
        ]));
        let got = serve(&mut q, 100.0, &[10]);
        assert!(close(got[0], 60.0), "{got:?}");
        assert!(q.borrowed > 0);
    }

    #[test]
    fn the_lower_prio_number_takes_all_it_can_borrow_first() {
        let mut q = htb(serde_json::json!([
            {"rate_mbps": 10, "ceil_mbps": 100, "prio": 1, "dscp": [10]},
            {"rate_mbps": 10, "ceil_mbps": 100, "prio": 0},
        ]));
        let got = serve(&mut q, 100.0, &[10, 0]);
        assert!(close(got[0], 10.0) && close(got[1], 90.0), "{got:?}");
    }

    #[test]
    fn unlisted_dscps_go_to_the_default_class() {
        let p: HtbParams = serde_json::from_value(serde_json::json!({
            "classes": [{"rate_mbps": 10, "dscp": [46]}, {"rate_mbps": 10}], "default": 0 }))
        .unwrap();
        let q = Htb::new(&p, Rng::new(1, 1));
        assert_eq!((q.class_of[46], q.class_of[0], q.class_of[10]), (0, 0, 0));
        let q = htb(serde_json::json!([{"rate_mbps": 10, "dscp": [46]}, {"rate_mbps": 10}]));
        assert_eq!((q.class_of[46], q.class_of[0]), (0, 1));
    }

    #[test]
    fn bad_classes_name_their_field() {
        let check = |v: serde_json::Value, field: &str| {
            let p: HtbParams = serde_json::from_value(v).unwrap();
            assert_eq!(p.validate().unwrap_err().0, field);
        };
        check(serde_json::json!({"classes": []}), "classes");
        check(
            serde_json::json!({"classes": [{"rate_mbps": 10, "ceil_mbps": 5}]}),
            "classes[0].ceil_mbps",
        );
        check(
            serde_json::json!({"classes": [{"rate_mbps": 10, "prio": 8}]}),
            "classes[0].prio",
        );
        check(
            serde_json::json!({"classes": [{"rate_mbps": 10}], "default": 1}),
            "default",
        );
    }
}
