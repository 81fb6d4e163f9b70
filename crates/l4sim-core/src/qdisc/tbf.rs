//! `tbf` (net/sched/sch_tbf.c): a token bucket filter in front of a child qdisc.
//!
//! As `tbf_change`: the bucket holds `buffer` = the time to send `burst` bytes at `rate`;
//! `limit` (bytes, or from `latency`: `rate * latency + burst`) sizes the default child, a
//! `bfifo`. `tbf_enqueue` drops a packet longer than the bucket (`max_size`; Linux would
//! first try to segment a GSO packet, ours are single segments). `tbf_dequeue` peeks the
//! child's head, adds the time since the last send to the tokens (capped at `buffer`),
//! and sends only if the tokens cover the packet's transmission time at `rate`; otherwise it
//! arms its watchdog for when they will (here [`QueueDisc::ready_at`]) and the parent tries
//! again then. The peak rate (`peakrate`, `mtu`) is not modelled.
//!
//! The child's head is taken with the child's own `dequeue` and held until the tokens allow
//! it (`qdisc_peek_dequeued`, which Linux uses for children without a `peek` of their own
//! such as PIE); an AQM child therefore decides on a packet when tbf first looks at it. Out of
//! the child, the held packet no longer counts against the child's limit, where Linux keeps
//! it counted (`qdisc_peek_head` leaves it queued, `qdisc_peek_dequeued` keeps it in the
//! child's qlen and backlog): one packet more than `limit` can wait.

use serde::{Deserialize, Serialize};

use super::{Drop, DropReason, Qdisc, QdiscSpec, QueueDisc};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TbfParams {
    /// `rate`, Mbit/s.
    pub rate_mbps: f64,
    /// `burst` (bucket size), bytes.
    pub burst: u32,
    /// `limit`, bytes queued in the default child; or give `latency_ms`.
    #[serde(default)]
    pub limit: Option<u64>,
    /// `latency`: limit = rate x latency + burst.
    #[serde(default)]
    pub latency_ms: Option<f64>,
    /// The child qdisc (default: `bfifo limit LIMIT`).
    #[serde(default)]
    pub child: Option<Box<QdiscSpec>>,
}

impl TbfParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        super::check_mbps("rate_mbps", self.rate_mbps)?;
        // tbf_change accepts a smaller bucket with a kernel warning ("burst is lower than
        // device mtu"), and tbf_enqueue then drops every packet longer than it.
        if self.burst < crate::packet::hdr::PSCHED_MTU {
            return Err((
                "burst".into(),
                format!(
                    "tbf burst {} bytes is below one MTU (1514 bytes): every full-size packet \
                     would be dropped",
                    self.burst
                ),
            ));
        }
        match (self.limit, self.latency_ms, &self.child) {
            (Some(_), Some(_), _) => {
                return Err((
                    "latency_ms".into(),
                    "give limit or latency_ms, not both".into(),
                ))
            }
            (None, None, None) => {
                return Err((
                    "limit".into(),
                    "tbf needs limit (bytes) or latency_ms".into(),
                ))
            }
            (_, Some(l), _) => super::check_ms("latency_ms", l)?,
            _ => {}
        }
        if let Some(c) = &self.child {
            c.validate().map_err(|(f, m)| (format!("child.{f}"), m))?;
        }
        Ok(())
    }

    /// Bytes the default child may hold.
    fn limit_bytes(&self) -> u64 {
        self.limit.unwrap_or_else(|| {
            let l = self.latency_ms.unwrap_or(0.0);
            Rate::mbps(self.rate_mbps).bytes_in((l * 1e6) as SimDuration) + self.burst as u64
        })
    }
}

pub struct Tbf {
    rate: Rate,
    /// Bucket depth as transmission time at `rate`, ns (`q->buffer`).
    buffer: i64,
    /// `q->tokens`, ns, and `q->t_c`, the last time they were updated.
    tokens: i64,
    t_c: SimTime,
    /// Largest packet that can ever pass (`q->max_size`).
    max_size: u32,
    child: Box<Qdisc>,
    /// The child's head, dequeued and waiting for tokens.
    held: Option<Packet>,
    /// When the tokens cover `held` (the watchdog).
    wake: SimTime,
}

impl Tbf {
    pub fn new(p: &TbfParams, rng: Rng) -> Tbf {
        let rate = Rate::mbps(p.rate_mbps);
        let child = match &p.child {
            Some(c) => Qdisc::child(c, rng),
            None => Qdisc::child(
                &QdiscSpec::Bfifo {
                    limit: p.limit_bytes(),
                },
                rng,
            ),
        };
        let buffer = rate.tx_time(p.burst) as i64;
        Tbf {
            rate,
            buffer,
            tokens: buffer,
            t_c: 0,
            max_size: p.burst,
            child: Box::new(child),
            held: None,
            wake: 0,
        }
    }
}

impl QueueDisc for Tbf {
    fn kind(&self) -> &'static str {
        "tbf"
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        if pkt.len > self.max_size {
            drops.push(Drop {
                pkt,
                reason: DropReason::Overlimit,
            });
            return;
        }
        QueueDisc::enqueue(&mut *self.child, pkt, now, drops);
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        if self.held.is_none() {
            self.held = self.child.dequeue(now, drops);
        }
        let len = self.held.as_ref()?.len;
        let elapsed = now.saturating_sub(self.t_c).min(self.buffer as u64) as i64;
        let toks = (elapsed + self.tokens).min(self.buffer) - self.rate.tx_time(len) as i64;
        if toks >= 0 {
            self.t_c = now;
            self.tokens = toks;
            self.held.take()
        } else {
            self.wake = now + (-toks) as u64;
            None
        }
    }
    fn ready_at(&self, now: SimTime) -> SimTime {
        if self.held.is_some() {
            self.wake.max(now)
        } else {
            self.child.ready_at(now)
        }
    }
    fn len(&self) -> usize {
        self.child.len() + self.held.is_some() as usize
    }
    fn bytes(&self) -> u64 {
        self.child.bytes() + self.held.map_or(0, |p| p.len as u64)
    }
    fn next_timer(&self) -> SimTime {
        self.child.next_timer()
    }
    fn on_timer(&mut self, now: SimTime) {
        self.child.on_timer(now)
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push((
            "tokens_bytes",
            self.rate.bytes_in(self.tokens.max(0) as u64) as f64,
        ));
    }
    fn classifier(&self) -> super::Classifier {
        self.child.classifier()
    }
    fn classes(&self) -> Vec<(String, &Qdisc)> {
        vec![("child".into(), &*self.child)]
    }
    fn children_mut(&mut self) -> Vec<&mut Qdisc> {
        vec![&mut *self.child]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Dir;
    use crate::time::{MS, SEC};

    fn pkt(len: u32) -> Packet {
        let mut p = Packet::new(0, Dir::Fwd, 0, 1);
        p.len = len;
        p.payload = len - 66;
        p
    }

    fn tbf(rate_mbps: f64, burst: u32, limit: u64) -> Tbf {
        let p = TbfParams {
            rate_mbps,
            burst,
            limit: Some(limit),
            latency_ms: None,
            child: None,
        };
        Tbf::new(&p, Rng::new(1, 1))
    }

    /// Drain as the parent does: dequeue whenever the qdisc is ready.
    fn drain(q: &mut Tbf, until: SimTime) -> Vec<SimTime> {
        let mut t = 0;
        let mut out = Vec::new();
        let mut drops = Vec::new();
        while t <= until && !q.is_empty() {
            match q.dequeue(t, &mut drops) {
                Some(_) => out.push(t),
                None => t = q.ready_at(t),
            }
        }
        out
    }

    #[test]
    fn a_full_bucket_passes_a_burst_then_the_rate_holds() {
        // 10 Mbit/s, 15,000-byte bucket: ten 1500-byte packets at once, then one per 1.2 ms.
        let mut q = tbf(10.0, 15_000, 1_000_000);
        for _ in 0..100 {
            q.enqueue(pkt(1500), 0, &mut Vec::new());
        }
        let sent = drain(&mut q, SEC);
        assert_eq!(sent.len(), 100);
        assert!(sent[..10].iter().all(|&t| t == 0));
        let gap = sent[50] - sent[49];
        assert!((gap as i64 - 1_200_000).abs() <= 1, "gap {gap}");
        // Long-run rate: 90 packets after the burst in 90 x 1.2 ms.
        assert!((sent[99] as i64 - 108 * MS as i64).abs() < 10_000);
    }

    #[test]
    fn packets_longer_than_the_bucket_are_dropped_and_the_limit_holds() {
        let mut q = tbf(10.0, 1000, 3000);
        let mut drops = Vec::new();
        q.enqueue(pkt(1500), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        drops.clear();
        for _ in 0..5 {
            q.enqueue(pkt(900), 0, &mut drops);
        }
        assert_eq!(q.len(), 3);
        assert_eq!(drops.len(), 2);
    }

    #[test]
    fn latency_sets_the_default_limit() {
        let p = TbfParams {
            rate_mbps: 8.0,
            burst: 2000,
            limit: None,
            latency_ms: Some(10.0),
            child: None,
        };
        assert_eq!(p.limit_bytes(), 10_000 + 2000);
    }
}
