//! `htb` (net/sched/sch_htb.c): a class tree under the port's root class. Rate-guaranteed
//! classes share one egress, and each borrows unused capacity from its ancestors up to its
//! ceiling.
//!
//! The port's shaper is the root class (tc's `1:1`, at the link's rate, level 7). This qdisc
//! holds the classes below it. A class sits under the root or under an earlier class
//! (`parent`). A class with children is inner (no qdisc, no DSCPs); the others are leaves
//! (level 0) with a child qdisc. An inner class's level is its parent's minus one
//! (`htb_change_class`), so at most six inner levels fit (`TC_HTB_MAXDEPTH` 8).
//!
//! Each class has two token buckets kept as time, like the root (`net/shaper.rs`): `rate` with
//! `burst` (`tokens`) and `ceil` with `cburst` (`ctokens`). As `htb_class_mode`, a class with
//! ctokens < 0 may not send, one with tokens >= 0 may, and one in between may borrow. A
//! backlogged leaf is served at the level of the first class, walking up from itself, that may
//! send (the root always may: the port gates it), unless a class on the way may not send.
//! Since the port gates every packet, leaves whose rates add up to more than the root's share
//! it; Linux's leaves in `HTB_CAN_SEND` send their own rates whatever `1:1` has (not modelled).
//!
//! As `htb_dequeue`: lower levels first, within a level the lowest leaf `prio` first. At level
//! 0 the leaves that send on their own rate take turns. Above it, the lenders of the level keep
//! the turn until they leave the row, and a lender's turn passes down the tree through each
//! class's pointer (`htb_lookup_leaf`) to a leaf. That leaf sends until its deficit at the level
//! goes negative; then it gains `quantum` and its parent's pointer moves on
//! (`htb_dequeue_tree`). A pointer whose class dropped out resumes at the next class.
//!
//! As `htb_charge_class`, a packet costs every class on its path its ctokens, and its tokens
//! only to the classes at or above the lending level (a borrowed packet is charged to the
//! lender, not to the classes below it). When no leaf may send, the port waits for the
//! ceilings on the first backlogged leaf's path to allow it (HTB's event queue and watchdog).
//!
//! Defaults are tc's (iproute2 `q_htb.c`, kernel `htb_change_class`): `ceil` = `rate`, bursts
//! `rate / HZ + 1600` bytes with the 1 GHz psched clock, `quantum` = rate in bytes/s / `r2q`
//! (10) clamped to 1000..200000 bytes, `prio` 0, a `pfifo` child of the device's
//! `txqueuelen` (1000 packets). Classification (`htb_classify`): a leaf's `dscp` list (a u32
//! filter on the DS field), else the `default` leaf (tc's `default` minor id). Without a
//! `default` (tc's is 0, no class) the rest goes to the direct queue (`htb_enqueue`'s
//! `HTB_DIRECT`: a FIFO of `direct_qlen` packets, the device's `txqueuelen` by default,
//! `htb_init`), which `htb_dequeue` empties before any class and charges to no class, the root
//! `1:1` included: at the port's root its packets go out at the line's rate, unshaped.

use serde::{Deserialize, Serialize};

use std::collections::VecDeque;

use super::{ClassCounters, Drop, DropReason, Qdisc, QdiscSpec, QueueDisc};
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
    /// Index of the class this one sits under, an earlier one (default: the root class).
    #[serde(default)]
    pub parent: Option<usize>,
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
    /// DSCPs classified into this class (leaves only).
    #[serde(default)]
    pub dscp: Vec<u8>,
    /// The leaf qdisc (default `pfifo limit 1000`; leaves only).
    #[serde(default)]
    pub child: Option<Box<QdiscSpec>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HtbParams {
    pub classes: Vec<HtbClassSpec>,
    /// Index of the leaf for packets no `dscp` list selects (tc's `default`); without it
    /// they go to the unshaped direct queue.
    #[serde(default)]
    pub default: Option<usize>,
    /// The direct queue's limit, packets (tc's `direct_qlen`; default the device's
    /// `txqueuelen`, 1000).
    #[serde(default = "d_direct_qlen")]
    pub direct_qlen: u32,
    /// Rate-to-quantum divisor.
    #[serde(default = "d_r2q")]
    pub r2q: u32,
}

fn d_r2q() -> u32 {
    10
}

fn d_direct_qlen() -> u32 {
    crate::net::pipe::TXQUEUELEN as u32
}

impl HtbParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.classes.is_empty() {
            return Err(("classes".into(), "htb needs at least one class".into()));
        }
        if self.classes.len() >= DIRECT as usize {
            let n = self.classes.len();
            return Err((
                "classes".into(),
                format!("{n} classes; tc's 16-bit minor ids allow 65,534"),
            ));
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
        // A DSCP goes to one class (tc's filters would take the first match; the model took
        // the last, silently), and a class is named by its path, so siblings differ.
        let mut dscp_class = [None; 64];
        for (i, c) in self.classes.iter().enumerate() {
            let at = |f: &str| format!("classes[{i}].{f}");
            if let Some(name) = &c.name {
                let twin = self.classes[..i]
                    .iter()
                    .position(|o| o.parent == c.parent && o.name.as_ref() == Some(name));
                if let Some(j) = twin {
                    return Err((
                        at("name"),
                        format!("class {j} of the same parent is already named {name:?}"),
                    ));
                }
            }
            for &d in c.dscp.iter().filter(|d| **d < 64) {
                if let Some(j) = dscp_class[d as usize] {
                    return Err((at("dscp"), format!("DSCP {d} already goes to class {j}")));
                }
                dscp_class[d as usize] = Some(i);
            }
            super::check_mbps("rate_mbps", c.rate_mbps).map_err(|(_, m)| (at("rate_mbps"), m))?;
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
            if let Some(parent) = c.parent {
                if parent >= i {
                    return Err((
                        at("parent"),
                        format!("the parent must be an earlier class (0..{i}), got {parent}"),
                    ));
                }
                if self.depth(parent) >= MAX_INNER_DEPTH {
                    return Err((
                        at("parent"),
                        format!(
                            "HTB has {LEVELS} levels (TC_HTB_MAXDEPTH), so at most \
                             {MAX_INNER_DEPTH} inner classes above a leaf; class {parent} is \
                             the {MAX_INNER_DEPTH}th"
                        ),
                    ));
                }
                let inner = &self.classes[parent];
                if let Some(f) = [
                    ("child", inner.child.is_some()),
                    ("dscp", !inner.dscp.is_empty()),
                ]
                .into_iter()
                .find_map(|(f, set)| set.then_some(f))
                {
                    return Err((
                        format!("classes[{parent}].{f}"),
                        format!(
                            "class {parent} has child classes, so it is an inner class, \
                             which has no {f} (give it to a leaf)"
                        ),
                    ));
                }
            }
        }
        if let Some(d) = self
            .default
            .filter(|&d| self.classes.iter().any(|c| c.parent == Some(d)))
        {
            return Err((
                "default".into(),
                format!("class {d} is an inner class; the default must be a leaf"),
            ));
        }
        Ok(())
    }

    /// Number of classes above class `i` (0 for a class under the root).
    fn depth(&self, mut i: usize) -> usize {
        let mut d = 0;
        while let Some(p) = self.classes[i].parent {
            (d, i) = (d + 1, p);
        }
        d
    }
}

/// `TC_HTB_MAXDEPTH`: leaves at level 0 .. the root class at level 7.
const LEVELS: usize = 8;
const ROOT_LEVEL: usize = LEVELS - 1;
/// Inner classes between the root and a leaf (levels 6 down to 1).
const MAX_INNER_DEPTH: usize = LEVELS - 2;

/// `htb_class_mode`.
#[derive(PartialEq)]
enum Mode {
    CantSend,
    MayBorrow,
    CanSend,
}

struct Class {
    name: String,
    /// None: under the root.
    parent: Option<usize>,
    level: usize,
    rate: Shaper,
    ceil: Shaper,
    prio: u8,
    quantum: i64,
    deficit: [i64; LEVELS],
    /// The leaf qdisc; None for an inner class.
    child: Option<Qdisc>,
    /// An inner class's children, and per leaf prio the position of the one whose turn it is.
    children: Vec<usize>,
    ptr: [usize; 8],
    /// `tc -s class` counters: sent (`bstats`), lends and borrows (`xstats`).
    sent_pkts: u64,
    sent_bytes: u64,
    lends: u64,
    borrows: u64,
}

impl Class {
    fn mode(&self, now: SimTime) -> Mode {
        if self.ceil.ready_at(now) > now {
            Mode::CantSend
        } else if self.rate.ready_at(now) == now {
            Mode::CanSend
        } else {
            Mode::MayBorrow
        }
    }
    fn backlogged(&self) -> bool {
        self.child.as_ref().is_some_and(|q| !q.is_empty())
    }
}

/// Who serves a backlogged leaf now: the level and the lending class (None: the root).
type Lender = (usize, Option<usize>);

/// The leaf `pick` chose, at which level, through which lender, and the leaves that were
/// waiting at that level and prio (with their lenders).
struct Turn {
    leaf: usize,
    level: usize,
    lender: Option<usize>,
    waiting: Vec<(usize, Option<usize>)>,
}

/// `class_of`'s mark for the direct queue.
const DIRECT: u16 = u16::MAX;

pub struct Htb {
    classes: Vec<Class>,
    /// Leaf per DSCP, or [`DIRECT`].
    class_of: [u16; 64],
    /// The direct queue, its bytes, limit and `direct_pkts` (tc's `direct_packets_stat`:
    /// packets it took).
    direct: VecDeque<Packet>,
    direct_bytes: u64,
    direct_qlen: usize,
    direct_pkts: u64,
    /// The root's children and, per prio, the position of the one whose turn it is.
    top: Vec<usize>,
    top_ptr: [usize; 8],
    /// Per level and prio, the class holding the turn in the level's row (level 0: a leaf
    /// sending on its own rate; above: a lender).
    row: [[usize; 8]; LEVELS],
}

impl Htb {
    pub fn new(p: &HtbParams, mut rng: Rng) -> Htb {
        let mut class_of = [p.default.map_or(DIRECT, |d| d as u16); 64];
        for (i, c) in p.classes.iter().enumerate() {
            for &d in &c.dscp {
                class_of[d as usize] = i as u16;
            }
        }
        let mut classes: Vec<Class> = Vec::with_capacity(p.classes.len());
        let mut top = Vec::new();
        for (i, c) in p.classes.iter().enumerate() {
            let rate = Rate::mbps(c.rate_mbps);
            let ceil = Rate::mbps(c.ceil_mbps.unwrap_or(c.rate_mbps));
            let quantum = c.quantum.map_or_else(
                || (rate.bytes_per_sec() / p.r2q as u64).clamp(1000, 200_000),
                |q| q as u64,
            );
            let inner = p.classes.iter().any(|k| k.parent == Some(i));
            let child = (!inner).then(|| {
                let spec = c.child.as_deref().cloned();
                let spec = spec.unwrap_or(QdiscSpec::Pfifo { limit: 1000 });
                Qdisc::child(&spec, Rng::new(rng.next_u64(), i as u64))
            });
            // htb_change_class: a class turning inner takes its parent's level minus one.
            let level = match (inner, c.parent) {
                (false, _) => 0,
                (true, None) => ROOT_LEVEL - 1,
                (true, Some(q)) => classes[q].level - 1,
            };
            match c.parent {
                Some(q) => classes[q].children.push(i),
                None => top.push(i),
            }
            classes.push(Class {
                name: c.name.clone().unwrap_or_else(|| format!("class{i}")),
                parent: c.parent,
                level,
                rate: Shaper::new(rate, c.burst.unwrap_or_else(|| default_burst(rate))),
                ceil: Shaper::new(ceil, c.cburst.unwrap_or_else(|| default_burst(ceil))),
                prio: c.prio,
                quantum: quantum as i64,
                deficit: [0; LEVELS],
                child,
                children: Vec::new(),
                ptr: [0; 8],
                sent_pkts: 0,
                sent_bytes: 0,
                lends: 0,
                borrows: 0,
            });
        }
        Htb {
            classes,
            class_of,
            direct: VecDeque::new(),
            direct_bytes: 0,
            direct_qlen: p.direct_qlen as usize,
            direct_pkts: 0,
            top,
            top_ptr: [0; 8],
            row: [[0; 8]; LEVELS],
        }
    }

    /// A class's name with its ancestors', as in the results: `parent/child`.
    fn path(&self, i: usize) -> String {
        let c = &self.classes[i];
        match c.parent {
            Some(p) => format!("{}/{}", self.path(p), c.name),
            None => c.name.clone(),
        }
    }

    fn leaves(&self) -> impl Iterator<Item = &Class> {
        self.classes.iter().filter(|c| c.child.is_some())
    }

    /// Packets sent on borrowed rate: every leaf's `borrows`.
    fn borrowed(&self) -> u64 {
        self.leaves().map(|c| c.borrows).sum()
    }

    /// The level and lender a leaf may send through now, if any: walking up from the leaf,
    /// the first class that may send, unless one on the way may not.
    fn lender(&self, leaf: usize, now: SimTime) -> Option<Lender> {
        let mut c = leaf;
        loop {
            let cl = &self.classes[c];
            match cl.mode(now) {
                Mode::CantSend => return None,
                Mode::CanSend => return Some((cl.level, Some(c))),
                Mode::MayBorrow => match cl.parent {
                    Some(p) => c = p,
                    None => return Some((ROOT_LEVEL, None)),
                },
            }
        }
    }

    /// Whether class `c` is `leaf` or one of its ancestors.
    fn holds(&self, c: usize, mut leaf: usize) -> bool {
        loop {
            if leaf == c {
                return true;
            }
            match self.classes[leaf].parent {
                Some(p) => leaf = p,
                None => return false,
            }
        }
    }

    /// The first position at or after `ptr` (cyclically) whose entry satisfies `ok`.
    fn turn_from(ptr: usize, len: usize, ok: impl Fn(usize) -> bool) -> Option<usize> {
        (0..len).map(|k| (ptr + k) % len).find(|&k| ok(k))
    }

    /// The leaf to serve and its level (`htb_dequeue`: the lowest level, then the lowest prio
    /// with a waiting leaf; then `htb_lookup_leaf`), given each leaf's lender (None: not
    /// backlogged or may not send).
    fn pick(&mut self, lenders: &[Option<Lender>]) -> Option<Turn> {
        let n = self.classes.len();
        let prio_of = |i: usize| self.classes[i].prio;
        let (level, prio) = (0..n)
            .filter_map(|i| lenders[i].map(|(l, _)| (l, prio_of(i))))
            .min()?;
        let waiting: Vec<(usize, Option<usize>)> = (0..n)
            .filter_map(|i| match lenders[i] {
                Some((l, by)) if l == level && prio_of(i) == prio => Some((i, by)),
                _ => None,
            })
            .collect();
        let row = &mut self.row[level][prio as usize];
        if level == 0 {
            let leaf = Self::turn_from(*row, n, |i| waiting.iter().any(|w| w.0 == i))?;
            *row = leaf;
            let lender = Some(leaf);
            return Some(Turn {
                leaf,
                level,
                lender,
                waiting,
            });
        }
        let lender = if level == ROOT_LEVEL {
            None
        } else {
            let c = Self::turn_from(*row, n, |c| waiting.iter().any(|w| w.1 == Some(c)))?;
            *row = c;
            Some(c)
        };
        // Pass the lender's turn down to a leaf that borrows from it.
        let mut node = lender;
        loop {
            let (kids, ptr) = match node {
                None => (&self.top, self.top_ptr[prio as usize]),
                Some(leaf) if self.classes[leaf].children.is_empty() => {
                    return Some(Turn {
                        leaf,
                        level,
                        lender,
                        waiting,
                    });
                }
                Some(c) => (
                    &self.classes[c].children,
                    self.classes[c].ptr[prio as usize],
                ),
            };
            let k = Self::turn_from(ptr, kids.len(), |k| {
                waiting
                    .iter()
                    .any(|&(i, by)| by == lender && self.holds(kids[k], i))
            })?;
            let next = kids[k];
            match node {
                None => self.top_ptr[prio as usize] = k,
                Some(c) => self.classes[c].ptr[prio as usize] = k,
            }
            node = Some(next);
        }
    }

    /// Move the turn on after a leaf used up its quantum (`htb_dequeue_tree`'s
    /// `htb_next_rb_node`). Level 0: the row's next leaf. Above: the leaf's parent's next child
    /// with a waiting leaf; when there is none the parent's pointer rewinds and its own parent's
    /// moves on, up to the lender, whose rewinding moves the row on (`htb_lookup_leaf`'s
    /// "rewind & go up").
    fn pass_turn(&mut self, t: &Turn) {
        let prio = self.classes[t.leaf].prio as usize;
        let n = self.classes.len();
        if t.level == 0 {
            self.row[0][prio] = (t.leaf + 1) % n;
            return;
        }
        let mut node = t.leaf;
        loop {
            let parent = self.classes[node].parent;
            let kids = parent.map_or(&self.top, |p| &self.classes[p].children);
            let k = kids
                .iter()
                .position(|&c| c == node)
                .expect("a child of its parent");
            let waits = |c: usize| {
                t.waiting
                    .iter()
                    .any(|&(i, by)| by == t.lender && self.holds(c, i))
            };
            let next = (k + 1..kids.len()).find(|&j| waits(kids[j]));
            let ptr = match parent {
                None => &mut self.top_ptr[prio],
                Some(p) => &mut self.classes[p].ptr[prio],
            };
            *ptr = next.unwrap_or(0);
            if next.is_some() || parent == t.lender {
                if next.is_none() {
                    if let Some(l) = t.lender {
                        self.row[t.level][prio] = (l + 1) % n;
                    }
                }
                return;
            }
            node = parent.expect("the root lends at the top");
        }
    }
}

impl QueueDisc for Htb {
    fn kind(&self) -> &'static str {
        "htb"
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        let i = self.class_of[pkt.dscp as usize & 63];
        if i == DIRECT {
            if self.direct.len() < self.direct_qlen {
                self.direct_bytes += pkt.len as u64;
                self.direct_pkts += 1;
                self.direct.push_back(pkt);
            } else {
                drops.push(Drop {
                    pkt,
                    reason: DropReason::Overlimit,
                });
            }
            return;
        }
        let leaf = self.classes[i as usize]
            .child
            .as_mut()
            .expect("DSCPs map to leaves");
        QueueDisc::enqueue(leaf, pkt, now, drops);
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        if let Some(p) = self.direct.pop_front() {
            self.direct_bytes -= p.len as u64;
            return Some(p);
        }
        let mut lenders: Vec<Option<Lender>> = (0..self.classes.len())
            .map(|i| {
                let backlogged = self.classes[i].backlogged();
                backlogged.then(|| self.lender(i, now)).flatten()
            })
            .collect();
        loop {
            let turn = self.pick(&lenders)?;
            let (leaf, level) = (turn.leaf, turn.level);
            let cl = &mut self.classes[leaf];
            let Some(p) = cl.child.as_mut().and_then(|q| q.dequeue(now, drops)) else {
                // A non-work-conserving child (e.g. tbf) with nothing to give: try the others.
                lenders[leaf] = None;
                continue;
            };
            let len = p.len;
            cl.deficit[level] -= len as i64;
            if cl.deficit[level] < 0 {
                cl.deficit[level] += cl.quantum;
                self.pass_turn(&turn);
            }
            // htb_charge_class up the path (and the leaf's bstats, htb_dequeue_tree).
            let mut c = Some(leaf);
            while let Some(i) = c {
                let cl = &mut self.classes[i];
                if cl.level >= level {
                    cl.lends += (cl.level == level) as u64;
                    cl.rate.charge(now, len);
                } else {
                    cl.borrows += 1;
                }
                cl.ceil.charge(now, len);
                cl.sent_pkts += 1;
                cl.sent_bytes += len as u64;
                c = cl.parent;
            }
            return Some(p);
        }
    }
    fn ready_at(&self, now: SimTime) -> SimTime {
        if !self.direct.is_empty() {
            return now;
        }
        // A backlogged leaf may send once every ceiling on its path allows it.
        let path_ready = |mut i: usize, q: &Qdisc| {
            let mut t = q.ready_at(now);
            loop {
                let cl = &self.classes[i];
                t = t.max(cl.ceil.ready_at(now));
                match cl.parent {
                    Some(p) => i = p,
                    None => return t,
                }
            }
        };
        let at = self.classes.iter().enumerate().filter_map(|(i, c)| {
            let q = c.child.as_ref().filter(|q| !q.is_empty())?;
            Some(path_ready(i, q))
        });
        at.min().unwrap_or(now)
    }
    fn len(&self) -> usize {
        let leaves = self
            .leaves()
            .map(|c| c.child.as_ref().map_or(0, |q| q.len()));
        self.direct.len() + leaves.sum::<usize>()
    }
    fn bytes(&self) -> u64 {
        let leaves = self
            .leaves()
            .map(|c| c.child.as_ref().map_or(0, |q| q.bytes()));
        self.direct_bytes + leaves.sum::<u64>()
    }
    fn has_direct_queue(&self) -> bool {
        self.class_of.contains(&DIRECT)
    }
    fn direct_head(&self) -> bool {
        !self.direct.is_empty()
    }
    fn next_timer(&self) -> SimTime {
        let t = self
            .leaves()
            .filter_map(|c| c.child.as_ref().map(|q| q.next_timer()));
        t.min().unwrap_or(NEVER)
    }
    fn on_timer(&mut self, now: SimTime) {
        for q in self.classes.iter_mut().filter_map(|c| c.child.as_mut()) {
            if q.next_timer() <= now {
                q.on_timer(now);
            }
        }
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("borrowed_pkts", self.borrowed() as f64));
        out.push(("direct_packets_stat", self.direct_pkts as f64));
    }
    fn classes(&self) -> Vec<(String, &Qdisc)> {
        let leaves = self.classes.iter().enumerate();
        leaves
            .filter_map(|(i, c)| Some((self.path(i), c.child.as_ref()?)))
            .collect()
    }
    fn class_counters(&self) -> Vec<ClassCounters> {
        let row = |(i, c): (usize, &Class)| ClassCounters {
            name: self.path(i),
            has_qdisc: c.child.is_some(),
            values: vec![
                ("sent_pkts", c.sent_pkts as f64),
                ("sent_bytes", c.sent_bytes as f64),
                ("lends", c.lends as f64),
                ("borrows", c.borrows as f64),
                // htb_dump_class_stats: PSCHED_NS2TICKS of the stored tokens (64 ns ticks).
                ("tokens", (c.rate.tokens() >> 6) as f64),
                ("ctokens", (c.ceil.tokens() >> 6) as f64),
            ],
        };
        self.classes.iter().enumerate().map(row).collect()
    }
    fn children_mut(&mut self) -> Vec<&mut Qdisc> {
        self.classes
            .iter_mut()
            .filter_map(|c| c.child.as_mut())
            .collect()
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

    /// An htb whose last class is the `default` (the class for DSCPs no list names).
    fn htb(classes: serde_json::Value) -> Htb {
        let last = classes.as_array().unwrap().len() - 1;
        let p: HtbParams =
            serde_json::from_value(serde_json::json!({ "classes": classes, "default": last }))
                .unwrap();
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
                while q.classes[q.class_of[d as usize] as usize]
                    .child
                    .as_ref()
                    .unwrap()
                    .len()
                    < 10
                {
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
    fn tokens_are_dumped_in_psched_ticks_as_tc_shows_them() {
        // tc's default burst at 40 Mbit/s: 1600 bytes = 320 us = 5000 ticks of 64 ns; the
        // ceiling's (100 Mbit/s) 128 us = 2000 ticks. One 1514-byte frame costs 302.8 us at
        // 40 Mbit/s: 17.2 us of tokens are left, 268 ticks (the shift rounds down).
        let mut q = htb(serde_json::json!([{"rate_mbps": 40, "ceil_mbps": 100}]));
        let value = |q: &Htb, k: &str| {
            let c = &q.class_counters()[0];
            c.values.iter().find(|(n, _)| *n == k).unwrap().1
        };
        assert_eq!(
            (value(&q, "tokens"), value(&q, "ctokens")),
            (5000.0, 2000.0)
        );
        let mut drops = Vec::new();
        q.enqueue(pkt(0), 0, &mut drops);
        assert!(q.dequeue(0, &mut drops).is_some());
        assert_eq!(value(&q, "tokens"), 268.0);
    }

    #[test]
    fn a_class_alone_borrows_up_to_its_ceiling_and_no_further() {
        let mut q = htb(serde_json::json!([
            {"rate_mbps": 10, "ceil_mbps": 60, "dscp": [10]},
            {"rate_mbps": 90},
        ]));
        let got = serve(&mut q, 100.0, &[10]);
        assert!(close(got[0], 60.0), "{got:?}");
        assert!(q.borrowed() > 0);
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
    fn leaves_borrow_from_their_inner_class_before_the_root() {
        // Root 100: inner A (60) over a1 and a2 (10 each), leaf b (40). a1 and a2 send their
        // 10 on their own rate and borrow A's other 40 in turns; b keeps its 40. Flat, the
        // same leaves would share the 40 left over three ways (b about 53).
        let mut q = htb(serde_json::json!([
            {"name": "A", "rate_mbps": 60, "ceil_mbps": 100},
            {"name": "a1", "parent": 0, "rate_mbps": 10, "ceil_mbps": 100, "dscp": [10]},
            {"name": "a2", "parent": 0, "rate_mbps": 10, "ceil_mbps": 100, "dscp": [12]},
            {"name": "b", "rate_mbps": 40, "ceil_mbps": 100},
        ]));
        assert_eq!(
            q.classes.iter().map(|c| c.level).collect::<Vec<_>>(),
            [6, 0, 0, 0]
        );
        let got = serve(&mut q, 100.0, &[10, 12, 0]);
        assert!(
            within_a_quantum(got[0], 30.0)
                && within_a_quantum(got[1], 30.0)
                && within_a_quantum(got[2], 40.0),
            "{got:?}"
        );
        assert!(q.borrowed() > 0);
    }

    #[test]
    fn an_inner_ceiling_caps_its_whole_subtree() {
        let mut q = htb(serde_json::json!([
            {"rate_mbps": 20, "ceil_mbps": 50},
            {"parent": 0, "rate_mbps": 10, "ceil_mbps": 100, "dscp": [10]},
            {"parent": 0, "rate_mbps": 10, "ceil_mbps": 100, "dscp": [12]},
            {"rate_mbps": 10, "ceil_mbps": 100},
        ]));
        let got = serve(&mut q, 100.0, &[10, 12]);
        assert!(close(got[0] + got[1], 50.0), "{got:?}");
        assert!(within_a_quantum(got[0], got[1]), "{got:?}");
    }

    #[test]
    fn a_borrowed_packet_is_charged_to_the_lender_not_the_classes_between() {
        // A (level 6, 40, ceil 40) over B (level 5, 20) over leaf c (5), and leaf e (5) under
        // A. c sends its 5 and borrows B's other 15 (B pays tokens for both); A pays for all
        // 25 and lends the 15 it has left to c and e in turns. Were B charged for what A lends
        // c, B would lend c less and c would end near 20 instead of 27.5.
        let mut q = htb(serde_json::json!([
            {"rate_mbps": 40, "ceil_mbps": 40},
            {"parent": 0, "rate_mbps": 20, "ceil_mbps": 40},
            {"parent": 1, "rate_mbps": 5, "ceil_mbps": 40, "dscp": [10]},
            {"parent": 0, "rate_mbps": 5, "ceil_mbps": 40, "dscp": [12]},
            {"rate_mbps": 10},
        ]));
        assert_eq!(
            q.classes.iter().map(|c| c.level).collect::<Vec<_>>(),
            [6, 5, 0, 0, 0]
        );
        let got = serve(&mut q, 100.0, &[10, 12]);
        assert!(
            within_a_quantum(got[0], 27.5) && within_a_quantum(got[1], 12.5),
            "{got:?}"
        );
    }

    fn params(v: serde_json::Value) -> HtbParams {
        let p: HtbParams = serde_json::from_value(v).unwrap();
        p.validate().unwrap();
        p
    }

    #[test]
    fn unlisted_dscps_go_to_the_default_class_or_without_one_to_the_direct_queue() {
        let classes = serde_json::json!([{"rate_mbps": 10, "dscp": [46]}, {"rate_mbps": 10}]);
        let p = params(serde_json::json!({"classes": classes, "default": 0}));
        let q = Htb::new(&p, Rng::new(1, 1));
        assert_eq!((q.class_of[46], q.class_of[0], q.class_of[10]), (0, 0, 0));
        assert!(!q.has_direct_queue());
        // htb_classify: no filter and no default class -> HTB_DIRECT.
        let q = Htb::new(
            &params(serde_json::json!({ "classes": classes })),
            Rng::new(1, 1),
        );
        assert_eq!((q.class_of[46], q.class_of[0]), (0, DIRECT));
        assert!(q.has_direct_queue());
        // Every DSCP listed: nothing can go direct.
        let all: Vec<u8> = (0..64).collect();
        let p = params(serde_json::json!({"classes": [{"rate_mbps": 10, "dscp": all}]}));
        assert!(!Htb::new(&p, Rng::new(1, 1)).has_direct_queue());
    }

    #[test]
    fn the_direct_queue_goes_first_up_to_direct_qlen_and_counts_what_it_took() {
        // htb_enqueue: HTB_DIRECT packets join the direct queue while it holds fewer than
        // direct_qlen (else qdisc_drop); htb_dequeue takes them before any class, even one
        // that may send, and charges no class.
        let p = params(serde_json::json!({
            "classes": [{"rate_mbps": 10, "dscp": [10]}], "direct_qlen": 2}));
        let mut q = Htb::new(&p, Rng::new(1, 1));
        let mut drops = Vec::new();
        q.enqueue(pkt(10), 0, &mut drops);
        for _ in 0..3 {
            q.enqueue(pkt(0), 0, &mut drops);
        }
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].reason, DropReason::Overlimit);
        assert_eq!((q.len(), q.bytes()), (3, 3 * pkt(0).len as u64));
        assert!(q.direct_head());
        let order: Vec<u8> = (0..3)
            .map(|_| q.dequeue(0, &mut drops).unwrap().dscp)
            .collect();
        assert_eq!(order, [0, 0, 10]);
        assert!(!q.direct_head() && q.is_empty());
        let mut seen = Vec::new();
        q.observe(&mut seen);
        assert!(seen.contains(&("direct_packets_stat", 2.0)), "{seen:?}");
        let sent: Vec<f64> = q.class_counters().iter().map(|c| c.values[0].1).collect();
        assert_eq!(sent, [1.0], "the class sent only its own packet");
    }

    #[test]
    fn bad_classes_name_their_field() {
        let check = |v: serde_json::Value, field: &str| {
            let p: HtbParams = serde_json::from_value(v).unwrap();
            assert_eq!(p.validate().unwrap_err().0, field);
        };
        check(serde_json::json!({"classes": []}), "classes");
        // One class per DSCP, and one name per parent's children.
        check(
            serde_json::json!({"classes": [
                {"rate_mbps": 10, "dscp": [10, 12]}, {"rate_mbps": 10, "dscp": [12]}]}),
            "classes[1].dscp",
        );
        check(
            serde_json::json!({"classes": [
                {"name": "a", "rate_mbps": 10}, {"name": "a", "rate_mbps": 10}]}),
            "classes[1].name",
        );
        let p: HtbParams = serde_json::from_value(serde_json::json!({"classes": [
            {"name": "x", "rate_mbps": 50}, {"name": "a", "parent": 0, "rate_mbps": 20},
            {"name": "a", "rate_mbps": 10}]}))
        .unwrap();
        assert!(p.validate().is_ok(), "x/a and a are different classes");
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
        check(
            serde_json::json!({"classes": [{"rate_mbps": 10, "parent": 0}]}),
            "classes[0].parent",
        );
        check(
            serde_json::json!({"classes": [
                {"rate_mbps": 10, "child": {"kind": "pfifo", "limit": 10}},
                {"rate_mbps": 10, "parent": 0}]}),
            "classes[0].child",
        );
        check(
            serde_json::json!({"classes": [
                {"rate_mbps": 10, "dscp": [10]}, {"rate_mbps": 10, "parent": 0}]}),
            "classes[0].dscp",
        );
        check(
            serde_json::json!({"classes": [
                {"rate_mbps": 10}, {"rate_mbps": 10, "parent": 0}], "default": 0}),
            "default",
        );
        // Six inner levels fit (6 .. 1) above a leaf; a seventh does not.
        let chain = |n: usize| {
            let classes: Vec<_> = (0..n)
                .map(|i| match i {
                    0 => serde_json::json!({"rate_mbps": 10}),
                    _ => serde_json::json!({"rate_mbps": 10, "parent": i - 1}),
                })
                .collect();
            serde_json::json!({ "classes": classes })
        };
        let p: HtbParams = serde_json::from_value(chain(7)).unwrap();
        assert_eq!(p.validate(), Ok(()));
        check(chain(8), "classes[7].parent");
    }
}
