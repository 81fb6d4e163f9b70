//! Queueing disciplines, one file each, behind Linux's enqueue/dequeue interface.
//!
//! A qdisc sees packets with `enq_ts` already set to the enqueue time (the wrapper [`Qdisc`]
//! does that, as Linux qdiscs stamp `skb->tstamp` or their private enqueue time). It may drop
//! at enqueue or at dequeue (CoDel, DualPI2) and may mark CE at either point; every drop is
//! pushed to `drops` with its reason so the wrapper can count it per reason and per codepoint.

use serde::{Deserialize, Serialize};

use crate::metrics::hist::Histogram;
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{SimTime, NEVER};

pub mod fifo;

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Queue limit (packets or bytes) exceeded at enqueue: tail drop.
    Overlimit,
    /// Per-flow limit (sch_fq flow_limit).
    FlowLimit,
    /// Memory limit (fq_codel memory_limit, dualpi2 memory_limit).
    Memory,
    /// Dropped by the AQM's control law (CoDel, PIE, DualPI2, RED).
    Aqm,
    /// DualPI2 overload drop.
    Overload,
    /// sch_fq horizon.
    Horizon,
}

impl DropReason {
    pub const ALL: [DropReason; 6] = [
        DropReason::Overlimit,
        DropReason::FlowLimit,
        DropReason::Memory,
        DropReason::Aqm,
        DropReason::Overload,
        DropReason::Horizon,
    ];
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Overlimit => "overlimit",
            DropReason::FlowLimit => "flow_limit",
            DropReason::Memory => "memory",
            DropReason::Aqm => "aqm",
            DropReason::Overload => "overload",
            DropReason::Horizon => "horizon",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A dropped packet and why.
#[derive(Clone, Copy, Debug)]
pub struct Drop {
    pub pkt: Packet,
    pub reason: DropReason,
}

/// The Linux qdisc interface.
pub trait QueueDisc {
    /// Linux's qdisc name ("fq_codel", "dualpi2", ...).
    fn kind(&self) -> &'static str;
    /// Queue `pkt` (whose `enq_ts` is `now`), or push it (or other packets) to `drops`.
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>);
    /// Next packet to send, with any dequeue-time drops pushed to `drops`.
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet>;
    /// Packets queued.
    fn len(&self) -> usize;
    /// Bytes queued.
    fn bytes(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Time of the next periodic update (PIE, DualPI2), `NEVER` if none.
    fn next_timer(&self) -> SimTime {
        NEVER
    }
    fn on_timer(&mut self, _now: SimTime) {}
    /// Internal variables for time series and summaries (e.g. ("p_c", 0.01)).
    fn observe(&self, _out: &mut Vec<(&'static str, f64)>) {}
}

/// Qdisc configuration: `kind` picks the qdisc, the other keys are its tc parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscSpec {
    /// `bfifo limit BYTES`.
    Bfifo { limit: u64 },
    /// `pfifo limit PACKETS`.
    Pfifo { limit: u32 },
}

impl QdiscSpec {
    /// Check parameters; Err(field, message) names the offending parameter.
    pub fn validate(&self) -> Result<(), (String, String)> {
        match self {
            QdiscSpec::Bfifo { limit } => {
                if *limit < crate::packet::hdr::PSCHED_MTU as u64 {
                    return Err((
                        "limit".into(),
                        format!("bfifo limit {limit} bytes is below one MTU (1514 bytes)"),
                    ));
                }
            }
            QdiscSpec::Pfifo { limit } => {
                if *limit == 0 {
                    return Err((
                        "limit".into(),
                        "pfifo limit must be at least 1 packet".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Static dispatch over the qdiscs.
pub enum AnyQdisc {
    Fifo(fifo::Fifo),
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            AnyQdisc::Fifo($q) => $e,
        }
    };
}

impl QueueDisc for AnyQdisc {
    fn kind(&self) -> &'static str {
        dispatch!(self, q => q.kind())
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        dispatch!(self, q => q.enqueue(pkt, now, drops))
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        dispatch!(self, q => q.dequeue(now, drops))
    }
    fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    fn bytes(&self) -> u64 {
        dispatch!(self, q => q.bytes())
    }
    fn next_timer(&self) -> SimTime {
        dispatch!(self, q => q.next_timer())
    }
    fn on_timer(&mut self, now: SimTime) {
        dispatch!(self, q => q.on_timer(now))
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        dispatch!(self, q => q.observe(out))
    }
}

/// Build a qdisc from its spec. `rng` is the qdisc's private random stream.
pub fn build(spec: &QdiscSpec, _rng: Rng) -> AnyQdisc {
    match spec {
        QdiscSpec::Bfifo { limit } => AnyQdisc::Fifo(fifo::Fifo::bytes(*limit)),
        QdiscSpec::Pfifo { limit } => AnyQdisc::Fifo(fifo::Fifo::packets(*limit)),
    }
}

/// Counters kept for every qdisc, whatever its kind.
#[derive(Clone, Debug, Default)]
pub struct QdiscStats {
    pub enq_pkts: u64,
    pub enq_bytes: u64,
    pub deq_pkts: u64,
    pub deq_bytes: u64,
    /// Drops by [`DropReason`] index.
    pub drops_by_reason: [u64; 6],
    /// Drops by the packet's codepoint (index = ECN bits).
    pub drops_by_ecn: [u64; 4],
    /// CE marks applied here, by the codepoint the packet arrived with.
    pub marks_by_ecn: [u64; 4],
    /// Enqueues by codepoint.
    pub enq_by_ecn: [u64; 4],
    /// Sojourn time of dequeued packets, ns.
    pub sojourn: Histogram,
    /// Largest backlog seen, packets and bytes.
    pub max_len: usize,
    pub max_bytes: u64,
}

impl QdiscStats {
    pub fn drops(&self) -> u64 {
        self.drops_by_reason.iter().sum()
    }
    pub fn marks(&self) -> u64 {
        self.marks_by_ecn.iter().sum()
    }
}

/// A qdisc plus its counters: what a router port holds.
pub struct Qdisc {
    pub inner: AnyQdisc,
    pub stats: QdiscStats,
    drops: Vec<Drop>,
}

impl Qdisc {
    pub fn new(inner: AnyQdisc) -> Qdisc {
        Qdisc {
            inner,
            stats: QdiscStats::default(),
            drops: Vec::with_capacity(64),
        }
    }

    /// Enqueue; returns the packets dropped by this call (the caller accounts them per flow).
    pub fn enqueue(&mut self, mut pkt: Packet, now: SimTime) -> &[Drop] {
        pkt.enq_ts = now;
        pkt.ecn_in = pkt.ecn;
        self.stats.enq_pkts += 1;
        self.stats.enq_bytes += pkt.len as u64;
        self.stats.enq_by_ecn[pkt.ecn.index()] += 1;
        self.drops.clear();
        self.inner.enqueue(pkt, now, &mut self.drops);
        for d in &self.drops {
            self.stats.drops_by_reason[d.reason.index()] += 1;
            self.stats.drops_by_ecn[d.pkt.ecn_in.index()] += 1;
        }
        let len = self.inner.len();
        if len > self.stats.max_len {
            self.stats.max_len = len;
        }
        let bytes = self.inner.bytes();
        if bytes > self.stats.max_bytes {
            self.stats.max_bytes = bytes;
        }
        &self.drops
    }

    /// Dequeue; `drops` receives the packets dropped at dequeue.
    pub fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        let start = drops.len();
        let pkt = self.inner.dequeue(now, drops);
        for d in &drops[start..] {
            self.stats.drops_by_reason[d.reason.index()] += 1;
            self.stats.drops_by_ecn[d.pkt.ecn_in.index()] += 1;
        }
        if let Some(p) = &pkt {
            self.stats.deq_pkts += 1;
            self.stats.deq_bytes += p.len as u64;
            self.stats.sojourn.record(now.saturating_sub(p.enq_ts));
            if p.ecn == Ecn::Ce && p.ecn_in != Ecn::Ce {
                self.stats.marks_by_ecn[p.ecn_in.index()] += 1;
            }
        }
        pkt
    }
}
