//! Queueing disciplines, one file each, behind Linux's enqueue/dequeue interface.
//!
//! A qdisc sees packets with `enq_ts` already set to the enqueue time (the wrapper [`Qdisc`]
//! does that, as Linux qdiscs stamp `skb->tstamp` or their private enqueue time). It may drop
//! at enqueue or at dequeue (CoDel, DualPI2) and may mark CE at either point; every drop is
//! pushed to `drops` with its reason so the wrapper can count it per reason and per codepoint.
//!
//! Qdiscs (one file each, following the Linux file named in its module doc): `fifo` (bfifo,
//! pfifo), `fq` (sch_fq on a router), `codel` (codel_impl.h core + sch_codel), `fq_codel`,
//! `pie`, `dualpi2` (L4STeam hrtimer version), `red`, `netem` (a link's impairments), and the
//! classful `tbf` (a token bucket over a child), `prio` (strict-priority bands of children),
//! `htb` (rate/ceil leaf classes) and `wifi` (a Wi-Fi transmitter's aggregates over a child),
//! which nest any of them. Periodic controllers (PIE, DualPI2,
//! adaptive RED) expose their update times through `next_timer`/`on_timer`; PIE's and RED's
//! are `timer_list`s, run by the timer wheel of a kernel at [`KERNEL_HZ`], DualPI2's an hrtimer. Like Linux
//! under an HTB parent, they expect `dequeue` only while they hold packets; a dequeue on an
//! empty qdisc is the root-qdisc case (it starts RED's idle period and zeroes DualPI2's
//! sampled delays).

use serde::{Deserialize, Serialize};

use crate::metrics::hist::Histogram;
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{Jiffies, SimDuration, SimTime, NEVER};

/// CONFIG_HZ of the kernel a qdisc runs in (Ubuntu's, and the testbed's 5.15 build's):
/// PIE's and adaptive RED's update timers count in its jiffies.
pub const KERNEL_HZ: u32 = 250;

/// The jiffies of a node at [`KERNEL_HZ`] with `tick_phase`.
pub fn kernel_jiffies(tick_phase: SimDuration) -> Jiffies {
    Jiffies::with_phase(KERNEL_HZ, tick_phase)
}

pub mod codel;
pub mod dualpi2;
pub mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod htb;
pub mod netem;
pub mod pie;
pub mod prio;
pub mod red;
pub mod tbf;
pub mod wifi;

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

/// One class's counters beyond its qdisc's (see [`QueueDisc::class_counters`]).
pub struct ClassCounters {
    pub name: String,
    /// Whether the class has a qdisc of its own (is listed by `classes`).
    pub has_qdisc: bool,
    pub values: Vec<(&'static str, f64)>,
}

/// A dropped packet and why.
#[derive(Clone, Copy, Debug)]
pub struct Drop {
    pub pkt: Packet,
    pub reason: DropReason,
}

/// A TCP segment a qdisc freed from its socket's `sk_wmem_alloc` before sending it (netem's
/// `skb_orphan_partial`): the simulator tells the socket (TCP Small Queues).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Orphan {
    /// The packet's connection (`Packet::flow`) and payload bytes.
    pub flow: u32,
    pub payload: u32,
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
    /// The qdisc is created at `now` (its `init`, as `tc qdisc replace` runs it) on a node
    /// whose jiffies (at [`KERNEL_HZ`]) have `tick_phase`: a periodic controller arms its first
    /// update from then. A new qdisc is as if created at time 0 on a node ticking from 0.
    fn start(&mut self, now: SimTime, tick_phase: SimDuration) {
        for c in self.children_mut() {
            c.start(now, tick_phase);
        }
    }
    /// Internal variables for time series and summaries (e.g. ("p_c", 0.01)).
    fn observe(&self, _out: &mut Vec<(&'static str, f64)>) {}
    /// For a qdisc that holds packets it may not send yet (`tbf` without tokens): when it
    /// may, after a `dequeue` that returned nothing (Linux: the qdisc watchdog).
    fn ready_at(&self, now: SimTime) -> SimTime {
        now
    }
    /// Whether unclassified packets go to a queue outside every class (an `htb` without a
    /// `default`: its direct queue). At a port's root, such packets skip the port's shaper.
    fn has_direct_queue(&self) -> bool {
        false
    }
    /// Whether the next dequeue takes from that queue.
    fn direct_head(&self) -> bool {
        false
    }
    /// What makes a packet L4S in the per-class statistics: DualPI2's own classifier (its
    /// `ecn_mask` and filters); ECT(1) and CE (RFC 9331's identifier) for every other qdisc.
    fn classifier(&self) -> Classifier {
        Classifier::new(Ecn::Ect1.bits(), 0)
    }
    /// A classful qdisc's classes, each a child qdisc with its own counters (what
    /// `tc -s class show` and `tc -s qdisc show` list below the root).
    fn classes(&self) -> Vec<(String, &Qdisc)> {
        Vec::new()
    }
    /// Counters a classful qdisc keeps per class beyond the class's own qdisc, as `tc -s class
    /// show` lists them (HTB: packets and bytes sent, lends, borrows), named as `classes`
    /// names them. A class without a qdisc of its own (an HTB inner class) appears only here.
    fn class_counters(&self) -> Vec<ClassCounters> {
        Vec::new()
    }
    /// The child qdiscs of those classes, for the hooks below: by default a classful qdisc
    /// passes them on to its children.
    fn children_mut(&mut self) -> Vec<&mut Qdisc> {
        Vec::new()
    }
    /// The device's `psched_mtu` (its MTU plus the link-layer header) where it is not the
    /// 1514 bytes the qdiscs assume: what they derive from it follows (fq's and fq_codel's
    /// default quanta, CoDel's, PIE's and DualPI2's MTU checks).
    fn set_dev_mtu(&mut self, psched_mtu: u32) {
        for c in self.children_mut() {
            c.set_dev_mtu(psched_mtu);
        }
    }
    /// Whether this qdisc (or one below it) may make copies of packets: `netem duplicate`.
    fn may_duplicate(&self) -> bool {
        self.classes().iter().any(|(_, c)| c.may_duplicate())
    }
    /// Move the copies made by the last enqueue to `out`: Linux enqueues them at the root
    /// qdisc of the device (see `netem`), which is the caller's to do.
    fn take_duplicates(&mut self, out: &mut Vec<Packet>) {
        for c in self.children_mut() {
            c.take_duplicates(out);
        }
    }
    /// Whether this qdisc (or one below it) may orphan socket-charged packets on entry: a
    /// netem that delays.
    fn may_orphan(&self) -> bool {
        self.classes().iter().any(|(_, c)| c.may_orphan())
    }
    /// Move the packets the last enqueue orphaned to `out`.
    fn take_orphans(&mut self, out: &mut Vec<Orphan>) {
        for c in self.children_mut() {
            c.take_orphans(out);
        }
    }
}

/// Qdisc configuration: `kind` picks the qdisc, the other keys are its tc parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscSpec {
    /// `bfifo limit BYTES` (tc's default, `fifo_init` without options: the device's
    /// `txqueuelen` times its `psched_mtu`, 1000 x 1514 bytes).
    Bfifo {
        #[serde(default = "txqueuelen_bytes")]
        limit: u64,
    },
    /// `pfifo limit PACKETS` (tc's default: the device's `txqueuelen`, 1000).
    Pfifo {
        #[serde(default = "txqueuelen")]
        limit: u32,
    },
    /// `fq` (sch_fq) on a router: DRR over hashed pseudo-flows plus ce_threshold.
    Fq(fq::FqParams),
    /// `codel` (sch_codel).
    Codel(codel::CodelParams),
    /// `fq_codel` (sch_fq_codel).
    FqCodel(fq_codel::FqCodelParams),
    /// `pie` (sch_pie).
    Pie(pie::PieParams),
    /// `dualpi2` (sch_dualpi2).
    Dualpi2(dualpi2::DualPi2Params),
    /// `red` (sch_red).
    Red(red::RedParams),
    /// `tbf` (sch_tbf) with a child qdisc.
    Tbf(tbf::TbfParams),
    /// `prio` (sch_prio): strict-priority bands, each a child qdisc.
    Prio(prio::PrioParams),
    /// `netem` (sch_netem): delay, jitter and its distribution, loss, ECN marking, duplication,
    /// corruption, reordering, rate and slots.
    Netem(Box<netem::NetemParams>),
    /// A Wi-Fi transmitter: EDCA channel access and A-MPDU aggregates over a child qdisc.
    Wifi(wifi::WifiParams),
    /// `htb` (sch_htb) leaf classes under the port's root class: rate, ceil, prio, DSCP.
    Htb(htb::HtbParams),
}

fn txqueuelen() -> u32 {
    crate::net::pipe::TXQUEUELEN as u32
}

fn txqueuelen_bytes() -> u64 {
    crate::net::pipe::TXQUEUELEN * crate::packet::hdr::PSCHED_MTU as u64
}

type SpecError = (String, String);

fn bad(field: &str, msg: String) -> SpecError {
    (field.to_string(), msg)
}

/// A time in ms that must be finite and >= 0.
fn check_ms(field: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(bad(
            field,
            format!("{field} must be a finite time >= 0 ms, got {v}"),
        ))
    }
}

/// A quantity that must be finite and > 0.
fn check_pos(field: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(bad(
            field,
            format!("{field} must be a positive number, got {v}"),
        ))
    }
}

/// A rate in Mbit/s a link may have too ([`crate::time::Rate::usable_mbps`]).
fn check_mbps(field: &str, v: f64) -> Result<(), SpecError> {
    if crate::time::Rate::usable_mbps(v) {
        Ok(())
    } else {
        Err(bad(
            field,
            format!("{field} must be a rate of 1e-6 (1 bit/s) to 1e6 Mbit/s, got {v:?}"),
        ))
    }
}

/// A time in ms that must be finite and > 0.
fn check_pos_ms(field: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(bad(
            field,
            format!("{field} must be a finite time > 0 ms, got {v}"),
        ))
    }
}

fn check_nonzero(field: &str, v: u64) -> Result<(), SpecError> {
    if v == 0 {
        Err(bad(field, format!("{field} must be at least 1, got 0")))
    } else {
        Ok(())
    }
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
            QdiscSpec::Fq(p) => p.validate()?,
            QdiscSpec::Codel(p) => {
                check_nonzero("limit", p.limit as u64)?;
                check_ms("target_ms", p.target_ms)?;
                check_pos_ms("interval_ms", p.interval_ms)?;
                if let Some(v) = p.ce_threshold_ms {
                    check_ms("ce_threshold_ms", v)?;
                }
                check_nonzero("mtu", p.mtu as u64)?;
            }
            QdiscSpec::FqCodel(p) => p.validate()?,
            QdiscSpec::Pie(p) => p.validate()?,
            QdiscSpec::Dualpi2(p) => p.validate()?,
            QdiscSpec::Red(p) => p.validate()?,
            QdiscSpec::Tbf(p) => p.validate()?,
            QdiscSpec::Prio(p) => p.validate()?,
            QdiscSpec::Netem(p) => p.validate()?,
            QdiscSpec::Wifi(p) => p.validate()?,
            QdiscSpec::Htb(p) => p.validate()?,
        }
        Ok(())
    }
}

/// Static dispatch over the qdiscs.
pub enum AnyQdisc {
    Fifo(fifo::Fifo),
    Fq(Box<fq::Fq>),
    Codel(codel::Codel),
    FqCodel(Box<fq_codel::FqCodel>),
    Pie(pie::Pie),
    Dualpi2(dualpi2::DualPi2),
    Red(red::Red),
    Tbf(Box<tbf::Tbf>),
    Prio(Box<prio::Prio>),
    Netem(Box<netem::Netem>),
    Wifi(Box<wifi::Wifi>),
    Htb(Box<htb::Htb>),
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            AnyQdisc::Fifo($q) => $e,
            AnyQdisc::Fq($q) => $e,
            AnyQdisc::Codel($q) => $e,
            AnyQdisc::FqCodel($q) => $e,
            AnyQdisc::Pie($q) => $e,
            AnyQdisc::Dualpi2($q) => $e,
            AnyQdisc::Red($q) => $e,
            AnyQdisc::Tbf($q) => $e,
            AnyQdisc::Prio($q) => $e,
            AnyQdisc::Netem($q) => $e,
            AnyQdisc::Wifi($q) => $e,
            AnyQdisc::Htb($q) => $e,
        }
    };
}

impl QueueDisc for AnyQdisc {
    fn kind(&self) -> &'static str {
        dispatch!(self, q => q.kind())
    }
    #[inline]
    fn classifier(&self) -> Classifier {
        dispatch!(self, q => q.classifier())
    }
    #[inline]
    fn ready_at(&self, now: SimTime) -> SimTime {
        dispatch!(self, q => q.ready_at(now))
    }
    fn has_direct_queue(&self) -> bool {
        dispatch!(self, q => q.has_direct_queue())
    }
    fn direct_head(&self) -> bool {
        dispatch!(self, q => q.direct_head())
    }
    fn classes(&self) -> Vec<(String, &Qdisc)> {
        dispatch!(self, q => q.classes())
    }
    fn class_counters(&self) -> Vec<ClassCounters> {
        dispatch!(self, q => q.class_counters())
    }
    fn children_mut(&mut self) -> Vec<&mut Qdisc> {
        dispatch!(self, q => q.children_mut())
    }
    fn set_dev_mtu(&mut self, psched_mtu: u32) {
        dispatch!(self, q => q.set_dev_mtu(psched_mtu))
    }
    fn start(&mut self, now: SimTime, tick_phase: SimDuration) {
        dispatch!(self, q => q.start(now, tick_phase))
    }
    fn may_duplicate(&self) -> bool {
        dispatch!(self, q => q.may_duplicate())
    }
    fn take_duplicates(&mut self, out: &mut Vec<Packet>) {
        dispatch!(self, q => q.take_duplicates(out))
    }
    fn may_orphan(&self) -> bool {
        dispatch!(self, q => q.may_orphan())
    }
    fn take_orphans(&mut self, out: &mut Vec<Orphan>) {
        dispatch!(self, q => q.take_orphans(out))
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        dispatch!(self, q => q.enqueue(pkt, now, drops))
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        dispatch!(self, q => q.dequeue(now, drops))
    }
    #[inline]
    fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    #[inline]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    #[inline]
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
pub fn build(spec: &QdiscSpec, mut rng: Rng) -> AnyQdisc {
    match spec {
        QdiscSpec::Bfifo { limit } => AnyQdisc::Fifo(fifo::Fifo::bytes(*limit)),
        QdiscSpec::Pfifo { limit } => AnyQdisc::Fifo(fifo::Fifo::packets(*limit)),
        QdiscSpec::Fq(p) => AnyQdisc::Fq(Box::new(fq::Fq::new(p))),
        QdiscSpec::Codel(p) => AnyQdisc::Codel(codel::Codel::with_rng(p, Some(&mut rng))),
        QdiscSpec::FqCodel(p) => {
            AnyQdisc::FqCodel(Box::new(fq_codel::FqCodel::with_rng(p, Some(&mut rng))))
        }
        QdiscSpec::Pie(p) => AnyQdisc::Pie(pie::Pie::new(p, rng)),
        QdiscSpec::Dualpi2(p) => AnyQdisc::Dualpi2(dualpi2::DualPi2::new(p, rng)),
        QdiscSpec::Red(p) => AnyQdisc::Red(red::Red::new(p, rng)),
        QdiscSpec::Tbf(p) => AnyQdisc::Tbf(Box::new(tbf::Tbf::new(p, rng))),
        QdiscSpec::Prio(p) => AnyQdisc::Prio(Box::new(prio::Prio::new(p, rng))),
        QdiscSpec::Netem(p) => AnyQdisc::Netem(Box::new(netem::Netem::new(p, rng))),
        QdiscSpec::Wifi(p) => AnyQdisc::Wifi(Box::new(wifi::Wifi::new(p, rng))),
        QdiscSpec::Htb(p) => AnyQdisc::Htb(Box::new(htb::Htb::new(p, rng))),
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
    /// Largest backlog seen, packets and bytes.
    pub max_len: usize,
    pub max_bytes: u64,
    /// Per (scenario flow, class) cell, index `2 * group + class`: each packet is counted
    /// in exactly one cell, and the per-class and per-flow views below are sums of cells.
    cells: Vec<ClassStats>,
}

/// The L4S class (on arrival, `ecn & mask != 0`: ECT(1) or CE with DualPI2's default
/// classifier, or a DSCP DualPI2's filters send to its L-queue; see
/// [`QueueDisc::classifier`]) or the classic one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    L4s = 0,
    Classic = 1,
}

/// Which packets a qdisc counts as L4S ([`QueueDisc::classifier`]): ECN bits, and DSCPs (a
/// bit per DSCP) its filters send to the L4S class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classifier {
    mask: u8,
    dscp: u64,
}

impl Classifier {
    pub fn new(mask: u8, dscp: u64) -> Classifier {
        Classifier { mask, dscp }
    }
    #[inline]
    pub fn class(self, ecn: Ecn, dscp: u8) -> Class {
        if ecn.bits() & self.mask != 0 || (self.dscp != 0 && (self.dscp >> (dscp & 63)) & 1 != 0) {
            Class::L4s
        } else {
            Class::Classic
        }
    }
}

impl Class {
    pub const ALL: [Class; 2] = [Class::L4s, Class::Classic];
    pub fn name(self) -> &'static str {
        match self {
            Class::L4s => "l4s",
            Class::Classic => "classic",
        }
    }
}

/// Counters and sojourn distribution of one traffic class or one flow at a qdisc.
#[derive(Clone, Debug, Default)]
pub struct ClassStats {
    pub enq_pkts: u64,
    pub deq_pkts: u64,
    pub drops: u64,
    pub marks: u64,
    pub sojourn: Histogram,
}

impl ClassStats {
    fn add(&mut self, o: &ClassStats) {
        self.enq_pkts += o.enq_pkts;
        self.deq_pkts += o.deq_pkts;
        self.drops += o.drops;
        self.marks += o.marks;
        self.sojourn.merge(&o.sojourn);
    }
}

impl QdiscStats {
    fn cell(&mut self, group: u16, c: Class) -> &mut ClassStats {
        let i = 2 * group as usize + c as usize;
        if self.cells.len() <= i {
            self.cells.resize_with(i + 1, ClassStats::default);
        }
        &mut self.cells[i]
    }
    fn count_drop(&mut self, p: &Packet, cl: Classifier) {
        self.cell(p.group, cl.class(p.ecn_in, p.dscp)).drops += 1;
    }
    pub fn drops(&self) -> u64 {
        self.drops_by_reason.iter().sum()
    }
    pub fn marks(&self) -> u64 {
        self.marks_by_ecn.iter().sum()
    }
    /// Traffic class `c` ([`Class`]): what DualPI2 separates into its L and C queues.
    pub fn class(&self, c: Class) -> ClassStats {
        let mut s = ClassStats::default();
        for cs in self.cells.iter().skip(c as usize).step_by(2) {
            s.add(cs);
        }
        s
    }
    /// (enqueued, marked, dropped) packets of class `c`, without merging histograms.
    pub fn class_counts(&self, c: Class) -> [u64; 3] {
        let cells = self.cells.iter().skip(c as usize).step_by(2);
        cells.fold([0; 3], |a, cs| {
            [a[0] + cs.enq_pkts, a[1] + cs.marks, a[2] + cs.drops]
        })
    }
    /// Number of scenario flows (groups) with a cell here; those never seen are empty.
    pub fn n_groups(&self) -> usize {
        self.cells.len().div_ceil(2)
    }
    /// Packets of scenario flow `g` in its sojourn distribution (both classes), without
    /// merging histograms.
    pub fn group_sojourn_count(&self, g: usize) -> u64 {
        let cells = self.cells.iter().skip(2 * g).take(2);
        cells.map(|cs| cs.sojourn.count()).sum()
    }
    /// Scenario flow `g`: both its classes.
    pub fn group(&self, g: usize) -> ClassStats {
        let mut s = ClassStats::default();
        for cs in self.cells.iter().skip(2 * g).take(2) {
            s.add(cs);
        }
        s
    }
    /// Sojourn time of every dequeued packet, ns: all cells merged (exact, as each packet
    /// is in exactly one cell).
    pub fn sojourn(&self) -> Histogram {
        let mut h = Histogram::default();
        for cs in &self.cells {
            h.merge(&cs.sojourn);
        }
        h
    }
    /// (sum ns, count) of the sojourn times so far, without building the merged histogram.
    pub fn sojourn_totals(&self) -> (u128, u64) {
        let h = self.cells.iter().map(|cs| &cs.sojourn);
        h.fold((0, 0), |(s, n), h| (s + h.sum(), n + h.count()))
    }
}

/// A qdisc plus its counters: what a router port holds.
pub struct Qdisc {
    pub inner: AnyQdisc,
    pub stats: QdiscStats,
    drops: Vec<Drop>,
    /// `inner.classifier()`, fixed for the qdisc's life (looked up once, not per packet).
    classifier: Classifier,
    /// `inner.may_duplicate()` and `inner.may_orphan()`, likewise.
    dup: bool,
    orphan: bool,
    /// `inner.has_direct_queue()`.
    direct: bool,
    /// Packets and bytes inside (`inner.len()`, `inner.bytes()`), kept here as they enter
    /// and leave: the port asks on every packet, and a classful qdisc would sum its children.
    qlen: usize,
    backlog: u64,
}

impl Qdisc {
    pub fn new(inner: AnyQdisc) -> Qdisc {
        Qdisc {
            classifier: inner.classifier(),
            dup: inner.may_duplicate(),
            orphan: inner.may_orphan(),
            direct: inner.has_direct_queue(),
            inner,
            stats: QdiscStats::default(),
            drops: Vec::with_capacity(64),
            qlen: 0,
            backlog: 0,
        }
    }

    /// Packets inside (`tc -s`'s backlog in packets).
    #[inline]
    pub fn len(&self) -> usize {
        self.qlen
    }

    /// Bytes inside.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.backlog
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.qlen == 0
    }

    /// A packet left the qdisc, sent or dropped.
    #[inline]
    fn left(&mut self, pkt: &Packet) {
        self.qlen -= 1;
        self.backlog -= pkt.len as u64;
    }

    /// Enqueue; returns the packets dropped by this call (the caller accounts them per flow).
    pub fn enqueue(&mut self, mut pkt: Packet, now: SimTime) -> &[Drop] {
        pkt.enq_ts = now;
        pkt.ecn_in = pkt.ecn;
        self.stats.enq_pkts += 1;
        self.stats.enq_bytes += pkt.len as u64;
        self.stats.enq_by_ecn[pkt.ecn.index()] += 1;
        let cl = self.classifier;
        self.stats
            .cell(pkt.group, cl.class(pkt.ecn, pkt.dscp))
            .enq_pkts += 1;
        self.drops.clear();
        self.qlen += 1;
        self.backlog += pkt.len as u64;
        self.inner.enqueue(pkt, now, &mut self.drops);
        for d in &self.drops {
            self.stats.drops_by_reason[d.reason.index()] += 1;
            self.stats.drops_by_ecn[d.pkt.ecn_in.index()] += 1;
            self.stats.count_drop(&d.pkt, cl);
            self.qlen -= 1;
            self.backlog -= d.pkt.len as u64;
        }
        if self.qlen > self.stats.max_len {
            self.stats.max_len = self.qlen;
        }
        if self.backlog > self.stats.max_bytes {
            self.stats.max_bytes = self.backlog;
        }
        &self.drops
    }

    /// The packets dropped by the last `enqueue`.
    pub fn last_drops(&self) -> &[Drop] {
        &self.drops
    }

    /// Whether a netem in this qdisc may duplicate packets (then the port's owner takes the
    /// copies after each enqueue, [`QueueDisc::take_duplicates`], and enqueues them here).
    pub fn may_duplicate(&self) -> bool {
        self.dup
    }

    /// Whether a netem in this qdisc may orphan packets (then the port's owner takes them
    /// after each enqueue, [`QueueDisc::take_orphans`], and frees their sockets' charge).
    pub fn may_orphan(&self) -> bool {
        self.orphan
    }

    /// Whether unclassified packets go to a queue outside every class (an `htb`'s direct
    /// queue), which the port sends without asking its shaper (the root class).
    #[inline]
    pub fn has_direct_queue(&self) -> bool {
        self.direct
    }

    /// Whether the next packet comes from that queue.
    #[inline]
    pub fn unshaped_head(&self) -> bool {
        self.direct && self.inner.direct_head()
    }

    /// Dequeue; `drops` receives the packets dropped at dequeue.
    pub fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        let start = drops.len();
        let cl = self.classifier;
        let pkt = self.inner.dequeue(now, drops);
        for d in &drops[start..] {
            self.stats.drops_by_reason[d.reason.index()] += 1;
            self.stats.drops_by_ecn[d.pkt.ecn_in.index()] += 1;
            self.stats.count_drop(&d.pkt, cl);
            self.left(&d.pkt);
        }
        if let Some(p) = &pkt {
            self.left(p);
            let sojourn = now.saturating_sub(p.enq_ts);
            self.stats.deq_pkts += 1;
            self.stats.deq_bytes += p.len as u64;
            let marked = p.ecn == Ecn::Ce && p.ecn_in != Ecn::Ce;
            if marked {
                self.stats.marks_by_ecn[p.ecn_in.index()] += 1;
            }
            let cs = self.stats.cell(p.group, cl.class(p.ecn_in, p.dscp));
            cs.deq_pkts += 1;
            cs.marks += marked as u64;
            cs.sojourn.record(sojourn);
        }
        pkt
    }

    /// A child of a classful qdisc: built from `spec`, with its own counters.
    pub fn child(spec: &QdiscSpec, rng: Rng) -> Qdisc {
        Qdisc::new(build(spec, rng))
    }

    /// Replace the qdisc (`tc qdisc replace`): Linux grafts the new qdisc and resets and
    /// destroys the old one, freeing every packet it held. Those packets are returned as
    /// drops (reason `overlimit`, the closest of the tc counters); the counters carry on.
    pub fn replace(&mut self, inner: AnyQdisc, now: SimTime, drops: &mut Vec<Drop>) {
        let mut old = std::mem::replace(&mut self.inner, inner);
        let cl = std::mem::replace(&mut self.classifier, self.inner.classifier());
        self.dup = self.inner.may_duplicate();
        self.orphan = self.inner.may_orphan();
        self.direct = self.inner.has_direct_queue();
        let start = drops.len();
        let mut scratch = Vec::new();
        // Drain the old qdisc (`qdisc_reset` purges every queue): whatever comes out, sent or
        // dropped by its AQM on the way, is a drop. A shaped one (tbf or htb without tokens,
        // netem's delay, wifi's airtime) holds packets it may not send yet: take them at the
        // time it would, on the old qdisc's own clock.
        let mut at = now;
        while !old.is_empty() {
            scratch.clear();
            match old.dequeue(at, &mut scratch) {
                Some(p) => drops.push(Drop {
                    pkt: p,
                    reason: DropReason::Overlimit,
                }),
                None if scratch.is_empty() => match old.ready_at(at) {
                    t if t != NEVER && t > at => at = t,
                    _ => panic!("a {} qdisc holds packets it will never send", old.kind()),
                },
                None => {}
            }
            drops.extend(scratch.iter().copied());
        }
        for d in &drops[start..] {
            self.stats.drops_by_reason[DropReason::Overlimit.index()] += 1;
            self.stats.drops_by_ecn[d.pkt.ecn_in.index()] += 1;
            self.stats.count_drop(&d.pkt, cl);
        }
        self.qlen = self.inner.len();
        self.backlog = self.inner.bytes();
    }
}

/// A counted qdisc as the child of a classful one: enqueue and dequeue count as the root's
/// wrapper does, everything else is the inner qdisc's.
impl QueueDisc for Qdisc {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        drops.extend_from_slice(Qdisc::enqueue(self, pkt, now));
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        Qdisc::dequeue(self, now, drops)
    }
    fn ready_at(&self, now: SimTime) -> SimTime {
        self.inner.ready_at(now)
    }
    fn len(&self) -> usize {
        self.qlen
    }
    fn bytes(&self) -> u64 {
        self.backlog
    }
    fn next_timer(&self) -> SimTime {
        self.inner.next_timer()
    }
    fn on_timer(&mut self, now: SimTime) {
        self.inner.on_timer(now)
    }
    fn set_dev_mtu(&mut self, psched_mtu: u32) {
        self.inner.set_dev_mtu(psched_mtu)
    }
    fn start(&mut self, now: SimTime, tick_phase: SimDuration) {
        self.inner.start(now, tick_phase)
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        self.inner.observe(out)
    }
    fn classifier(&self) -> Classifier {
        self.classifier
    }
    fn classes(&self) -> Vec<(String, &Qdisc)> {
        self.inner.classes()
    }
    fn class_counters(&self) -> Vec<ClassCounters> {
        self.inner.class_counters()
    }
    fn may_duplicate(&self) -> bool {
        self.dup
    }
    fn take_duplicates(&mut self, out: &mut Vec<Packet>) {
        if self.dup {
            self.inner.take_duplicates(out)
        }
    }
    fn may_orphan(&self) -> bool {
        self.orphan
    }
    fn take_orphans(&mut self, out: &mut Vec<Orphan>) {
        if self.orphan {
            self.inner.take_orphans(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<QdiscSpec, String> {
        serde_json::from_str::<QdiscSpec>(s).map_err(|e| e.to_string())
    }

    #[test]
    fn spec_kind_alone_gives_linux_defaults() {
        assert_eq!(
            parse(r#"{"kind":"fq"}"#).unwrap(),
            QdiscSpec::Fq(fq::FqParams::default())
        );
        assert_eq!(
            parse(r#"{"kind":"codel"}"#).unwrap(),
            QdiscSpec::Codel(codel::CodelParams::default())
        );
        assert_eq!(
            parse(r#"{"kind":"fq_codel"}"#).unwrap(),
            QdiscSpec::FqCodel(fq_codel::FqCodelParams::default())
        );
        assert_eq!(
            parse(r#"{"kind":"pie"}"#).unwrap(),
            QdiscSpec::Pie(pie::PieParams::default())
        );
        assert_eq!(
            parse(r#"{"kind":"dualpi2"}"#).unwrap(),
            QdiscSpec::Dualpi2(dualpi2::DualPi2Params::default())
        );
        let d = fq::FqParams::default();
        assert_eq!(
            (d.limit, d.flow_limit, d.quantum, d.initial_quantum),
            (10000, 100, None, None)
        );
        let d = dualpi2::DualPi2Params::default();
        assert_eq!(
            (d.limit, d.c_protection, d.ecn_mask),
            (10000, 10, dualpi2::EcnMask::Ect1)
        );
        // fifo_init without options: the device's txqueuelen (1000), in bytes for bfifo times
        // its psched_mtu (1514).
        assert_eq!(
            parse(r#"{"kind":"pfifo"}"#).unwrap(),
            QdiscSpec::Pfifo { limit: 1000 }
        );
        assert_eq!(
            parse(r#"{"kind":"bfifo"}"#).unwrap(),
            QdiscSpec::Bfifo { limit: 1_514_000 }
        );
        for s in [
            r#"{"kind":"fq"}"#,
            r#"{"kind":"dualpi2"}"#,
            r#"{"kind":"pie"}"#,
            r#"{"kind":"pfifo"}"#,
            r#"{"kind":"bfifo"}"#,
        ] {
            assert!(parse(s).unwrap().validate().is_ok());
        }
    }

    #[test]
    fn spec_serializes_with_kind_tag_and_round_trips() {
        let specs = [
            QdiscSpec::Fq(fq::FqParams::default()),
            QdiscSpec::Codel(codel::CodelParams::default()),
            QdiscSpec::FqCodel(fq_codel::FqCodelParams::default()),
            QdiscSpec::Pie(pie::PieParams::default()),
            QdiscSpec::Dualpi2(dualpi2::DualPi2Params::default()),
            QdiscSpec::Red(red::RedParams::new(400_000, 30_000, 90_000)),
        ];
        for s in specs {
            let j = serde_json::to_string(&s).unwrap();
            assert!(j.starts_with(r#"{"kind":""#), "{j}");
            assert_eq!(parse(&j).unwrap(), s, "{j}");
        }
    }

    #[test]
    fn spec_parses_parameters_by_their_tc_names() {
        let s = parse(
            r#"{"kind":"fq_codel","target_ms":1.5,"ce_threshold_ms":1,
                "ce_threshold_selector":1,"ce_threshold_mask":3}"#,
        )
        .unwrap();
        let QdiscSpec::FqCodel(p) = &s else { panic!() };
        assert_eq!(
            (p.target_ms, p.ce_threshold_selector, p.ce_threshold_mask),
            (1.5, Some(1), Some(3))
        );
        assert!(p.ecn);
        let s = parse(r#"{"kind":"dualpi2","ecn_mask":"any_ect","step_packets":5}"#).unwrap();
        let QdiscSpec::Dualpi2(p) = &s else { panic!() };
        assert_eq!(p.ecn_mask, dualpi2::EcnMask::AnyEct);
        assert_eq!(p.step_packets, Some(5));
        let s =
            parse(r#"{"kind":"red","limit":400000,"min":30000,"max":90000,"ecn":true}"#).unwrap();
        let QdiscSpec::Red(p) = &s else { panic!() };
        assert_eq!((p.avpkt, p.probability, p.ecn), (1000, 0.02, true));
        assert!(s.validate().is_ok());
    }

    #[test]
    fn spec_rejects_unknown_keys_naming_them() {
        for (s, key) in [
            (r#"{"kind":"fq","quantom":3000}"#, "quantom"),
            (r#"{"kind":"codel","traget_ms":5}"#, "traget_ms"),
            (r#"{"kind":"dualpi2","alfa":0.1}"#, "alfa"),
            (
                r#"{"kind":"red","limit":1,"min":1,"max":1,"burstt":3}"#,
                "burstt",
            ),
        ] {
            let e = parse(s).unwrap_err();
            assert!(e.contains(key), "{s}: {e}");
        }
        assert!(parse(r#"{"kind":"red","min":1,"max":2}"#)
            .unwrap_err()
            .contains("limit"));
        assert!(parse(r#"{"kind":"dualpi2","ecn_mask":"ect0"}"#).is_err());
    }

    #[test]
    fn spec_validate_names_the_bad_field_and_value() {
        let cases = [
            (r#"{"kind":"fq","limit":0}"#, "limit", "0"),
            (
                r#"{"kind":"fq","ce_threshold_ms":-1}"#,
                "ce_threshold_ms",
                "-1",
            ),
            (r#"{"kind":"codel","target_ms":-5}"#, "target_ms", "-5"),
            (
                r#"{"kind":"fq_codel","ce_threshold_selector":1}"#,
                "ce_threshold_selector",
                "1",
            ),
            (r#"{"kind":"fq_codel","flows":0}"#, "flows", "0"),
            (r#"{"kind":"pie","tupdate_ms":0}"#, "tupdate_ms", "0"),
            (r#"{"kind":"pie","alpha":40}"#, "alpha", "40"),
            (
                r#"{"kind":"dualpi2","c_protection":120}"#,
                "c_protection",
                "120",
            ),
            (
                r#"{"kind":"dualpi2","coupling_factor":0}"#,
                "coupling_factor",
                "0",
            ),
            (r#"{"kind":"dualpi2","tupdate_ms":-1}"#, "tupdate_ms", "-1"),
            (
                r#"{"kind":"red","limit":400000,"min":90000,"max":30000}"#,
                "min",
                "90000",
            ),
            (
                r#"{"kind":"red","limit":400000,"min":30000,"max":90000,"burst":5}"#,
                "burst",
                "5",
            ),
            // Rates that round to 0 bit/s would divide by zero at the first packet.
            (
                r#"{"kind":"tbf","rate_mbps":1e-9,"burst":3000,"limit":100000}"#,
                "rate_mbps",
                "1e-9",
            ),
            // A bucket smaller than a full-size packet would drop every one of them.
            (
                r#"{"kind":"tbf","rate_mbps":10,"burst":1000,"limit":100000}"#,
                "burst",
                "1000",
            ),
            (r#"{"kind":"netem","rate_mbps":1e-9}"#, "rate_mbps", "1e-9"),
            (
                r#"{"kind":"wifi","phy_rate_mbps":1e-9}"#,
                "phy_rate_mbps",
                "1e-9",
            ),
            (
                r#"{"kind":"htb","classes":[{"rate_mbps":1e-9}],"default":0}"#,
                "classes[0].rate_mbps",
                "1e-9",
            ),
        ];
        for (s, field, value) in cases {
            let (f, m) = parse(s).unwrap().validate().unwrap_err();
            assert_eq!(f, field, "{s}");
            assert!(m.contains(value), "{s}: {m}");
        }
    }

    /// The per-class counters follow the qdisc's classifier: a Not-ECT packet a DualPI2
    /// filter sends to the L queue counts as L4S; under a tbf too (its child's classifier).
    #[test]
    fn per_class_counters_follow_dualpi2_filters() {
        let dualpi2 = r#"{"kind":"dualpi2","filters":[{"dscp":10,"class":"llll"}]}"#;
        let tbf = format!(
            r#"{{"kind":"tbf","rate_mbps":10,"burst":3000,"limit":100000,"child":{dualpi2}}}"#
        );
        for spec in [dualpi2.to_string(), tbf] {
            let mut q = Qdisc::new(build(&parse(&spec).unwrap(), Rng::new(1, 2)));
            for (ecn, dscp) in [
                (Ecn::NotEct, 10),
                (Ecn::NotEct, 0),
                (Ecn::Ect1, 0),
                (Ecn::Ect0, 10),
            ] {
                let mut p = Packet::full_segment();
                (p.ecn, p.dscp) = (ecn, dscp);
                q.enqueue(p, 0);
            }
            let enq = |c| q.stats.class_counts(c)[0];
            assert_eq!((enq(Class::L4s), enq(Class::Classic)), (3, 1), "{spec}");
        }
    }

    #[test]
    fn a_qdisc_created_mid_run_arms_its_first_update_from_then() {
        // `tc qdisc replace` at 10.001 s: PIE's and adaptive RED's timer_list HZ/2 on (125
        // jiffies, run at the next multiple of 8 jiffies: 10.528 s at HZ 250), DualPI2's
        // hrtimer tupdate (16 ms) on; under a prio band as at the root.
        let now = 10 * crate::time::SEC + crate::time::MS;
        let ms = crate::time::MS;
        for (spec, first) in [
            (r#"{"kind":"pie"}"#, 10_528 * ms),
            (r#"{"kind":"dualpi2"}"#, now + 16 * ms),
            (
                r#"{"kind":"red","min":30000,"max":90000,"limit":400000,"adaptive":true}"#,
                10_528 * ms,
            ),
            (
                r#"{"kind":"prio","bands":2,"children":[{"kind":"pfifo","limit":100},{"kind":"pie"}]}"#,
                10_528 * ms,
            ),
        ] {
            let mut q = build(&parse(spec).unwrap(), Rng::new(1, 2));
            assert!(q.next_timer() < now, "{spec}: set up as at time 0");
            q.start(now, 0);
            assert_eq!(q.next_timer(), first, "{spec}");
            // On a node whose clock is 1 ms ahead the timer_lists run 1 ms earlier.
            q.start(now, crate::time::MS);
            let shift = if spec.contains("dualpi2") {
                0
            } else {
                crate::time::MS
            };
            assert_eq!(q.next_timer(), first - shift, "{spec}");
        }
    }

    #[test]
    fn build_makes_every_kind_and_they_pass_packets() {
        use crate::packet::{Dir, Packet};
        for s in [
            r#"{"kind":"fq"}"#,
            r#"{"kind":"codel"}"#,
            r#"{"kind":"fq_codel"}"#,
            r#"{"kind":"pie"}"#,
            r#"{"kind":"dualpi2"}"#,
            r#"{"kind":"red","limit":400000,"min":30000,"max":90000}"#,
            r#"{"kind":"pfifo","limit":10}"#,
        ] {
            let spec = parse(s).unwrap();
            let mut q = Qdisc::new(build(&spec, Rng::new(1, crate::rng::stream::QDISC)));
            for i in 0..5 {
                let mut p = Packet::new(i, Dir::Fwd, 0, 1);
                p.hash = i * 7919;
                p.len = 1514;
                assert!(q.enqueue(p, 0).is_empty());
            }
            let mut d = Vec::new();
            let n = (0..10).filter_map(|_| q.dequeue(1000, &mut d)).count();
            assert_eq!(n, 5, "{s}");
            assert_eq!(q.inner.kind(), s.split('"').nth(3).unwrap());
        }
    }

    /// Every qdisc under 120% unresponsive overload from 40 flows of mixed codepoints and
    /// packet sizes, driven like the simulator's port (dequeue only while non-empty, timers
    /// at next_timer): no panic, packets conserved, backlog bounded.
    #[test]
    fn every_qdisc_conserves_packets_under_overload() {
        use crate::packet::{Dir, Ecn, Packet};
        use crate::time::{MS, NEVER};
        for s in [
            r#"{"kind":"fq","flow_limit":10000,"ce_threshold_ms":5}"#,
            r#"{"kind":"fq","orphan_mask":0,"flow_limit":10000,"ce_threshold_ms":5}"#,
            r#"{"kind":"codel","ecn":true}"#,
            r#"{"kind":"fq_codel","limit":2000}"#,
            r#"{"kind":"fq_codel","ce_threshold_ms":1,"ce_threshold_selector":1,"ce_threshold_mask":3}"#,
            r#"{"kind":"pie","ecn":true}"#,
            r#"{"kind":"pie","dq_rate_estimator":true,"bytemode":true}"#,
            r#"{"kind":"dualpi2"}"#,
            r#"{"kind":"dualpi2","drop_overload":false,"limit":3000}"#,
            r#"{"kind":"red","limit":400000,"min":30000,"max":90000,"ecn":true,"adaptive":true}"#,
        ] {
            let spec = parse(s).unwrap();
            spec.validate().unwrap();
            let mut q = Qdisc::new(build(&spec, Rng::new(5, crate::rng::stream::QDISC)));
            let mut gen = Rng::new(9, 0);
            let tx = 121_120u64; // 1514 B at 100 Mbit/s
            let (mut t_arr, mut t_dep) = (0u64, NEVER);
            let mut t_tim = q.inner.next_timer();
            let end = 3000 * MS;
            let mut d = Vec::new();
            let mut deq = 0u64;
            let mut max_len = 0;
            loop {
                let t = t_arr.min(t_dep).min(t_tim);
                if t >= end {
                    break;
                }
                if t == t_tim {
                    q.inner.on_timer(t);
                    t_tim = q.inner.next_timer().max(t + 1);
                } else if t == t_arr {
                    let f = gen.below(40);
                    let mut p = Packet::new(f, Dir::Fwd, 0, 1);
                    p.hash = f.wrapping_mul(0x9E37_79B9);
                    p.len = if gen.below(4) == 0 { 66 } else { 1514 };
                    p.ecn = Ecn::from_bits(f as u8);
                    q.enqueue(p, t);
                    if t_dep == NEVER && !q.inner.is_empty() {
                        t_dep = t + tx;
                    }
                    t_arr += gen.below(2 * 79_000) as u64 + 1;
                } else {
                    d.clear();
                    if q.dequeue(t, &mut d).is_some() {
                        deq += 1;
                    }
                    t_dep = if q.inner.is_empty() { NEVER } else { t + tx };
                }
                max_len = max_len.max(q.inner.len());
            }
            let st = &q.stats;
            assert_eq!(
                st.enq_pkts,
                st.deq_pkts + st.drops() + q.inner.len() as u64,
                "{s}"
            );
            assert_eq!(st.deq_pkts, deq, "{s}");
            assert_eq!(
                (q.len(), q.bytes()),
                (q.inner.len(), q.inner.bytes()),
                "{s}"
            );
            assert!(st.drops() + st.marks() > 0, "{s}: the AQM never acted");
            assert!(max_len <= 10_240, "{s}: backlog {max_len}");
            let mut out = Vec::new();
            q.inner.observe(&mut out);
            assert!(out.iter().all(|(_, v)| v.is_finite()), "{s}: {out:?}");
        }
    }
}
