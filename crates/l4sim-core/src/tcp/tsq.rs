//! TCP Small Queues (`tcp_small_queue_check` in 5.15 `tcp_output.c`, `tcp_wfree`): a socket
//! keeps its data out of its host's device queue beyond a small limit, so a sender whose own
//! NIC queues (a window sent faster than the NIC drains it) waits in the socket instead.
//!
//! `sk_wmem_alloc` counts the truesize of every skb handed below TCP until the device frees
//! it after transmission (`tcp_wfree`). Over the limit, `tcp_write_xmit` stops
//! (`TSQ_THROTTLED`) and the next completion resumes it (`tcp_tsq_handler` ->
//! `tcp_tsq_write`: lost segments, then new data). The limit is `max(2 x skb->truesize,
//! sk_pacing_rate >> sk_pacing_shift)` (about 1 ms at the pacing rate), at most
//! `tcp_limit_output_bytes` (1 MB) unless the socket is paced (`SK_PACING_NONE`), doubled for
//! retransmissions (`factor` 1); a socket with nothing unacknowledged always sends
//! (`tcp_rtx_queue_empty`, 5.15; later kernels also with one skb out).
//!
//! Modelled where the sending host's egress is a plain device queue (a link direction without
//! a qdisc): the simulator tells the socket when each data segment's serialization ends (its
//! transmit completion; software GSO has split the skb, so each segment is freed on its own,
//! `tcp_gso_segment` moving the charge to the segments). Behind a qdisc on the host's own
//! egress TSQ is not modelled (docs/topologies.md).

use std::collections::VecDeque;

use crate::time::{SimTime, NEVER};

/// `SKB_TRUESIZE` of a TCP skb's linear part on x86-64: `MAX_TCP_HEADER` (320 bytes, cache
/// aligned) + `struct sk_buff` (256) + `struct skb_shared_info` (320). A segment's truesize is
/// this plus its payload (page fragments count their length).
pub const SKB_HEAD_TRUESIZE: u64 = 896;
/// `sysctl_tcp_limit_output_bytes` (5.15 default).
pub const TCP_LIMIT_OUTPUT_BYTES: u64 = 1 << 20;

/// Truesize of one segment of `payload` bytes.
pub fn truesize(payload: u32) -> u64 {
    SKB_HEAD_TRUESIZE + payload as u64
}

/// The socket's bytes below TCP: charged when a segment is transmitted, freed when the host's
/// device has serialized it.
#[derive(Default)]
pub struct Tsq {
    /// The host's egress pipe, where it is a plain device queue: the simulator reports each
    /// segment's completion there. None: TSQ is not modelled for this socket.
    pub pipe: Option<u32>,
    /// Charged by `transmit`, not yet handed to the device by the simulator.
    unreported: u64,
    /// Segments in the device queue: (serialization end, truesize), in order.
    queued: VecDeque<(SimTime, u64)>,
    queued_bytes: u64,
    /// Throttled at this limit while some charged bytes were not yet reported: the time to
    /// try again is known once they are.
    wake_limit: Option<u64>,
}

impl Tsq {
    /// A segment of `truesize` bytes handed below TCP (`skb_set_owner_w`).
    pub fn charge(&mut self, truesize: u64) {
        if self.pipe.is_some() {
            self.unreported += truesize;
        }
    }

    /// The simulator put a segment of `truesize` on the device, transmitted by `done`. Returns
    /// the time a socket throttled before it was reported may try again, once every charged
    /// segment is on the device.
    pub fn queued(&mut self, done: SimTime, truesize: u64) -> Option<SimTime> {
        self.unreported = self.unreported.saturating_sub(truesize);
        self.queued.push_back((done, truesize));
        self.queued_bytes += truesize;
        if self.unreported > 0 {
            return None;
        }
        let limit = self.wake_limit.take()?;
        Some(self.below_at(limit))
    }

    /// Whether [`Tsq::throttle`] could hold anything back: the bytes below TCP, completed or
    /// not, exceed the smallest limit it can apply (a check without the queue's walk).
    #[inline]
    pub fn may_throttle(&self, pacing_rate: u64, paced: bool) -> bool {
        let mut floor = (2 * SKB_HEAD_TRUESIZE).max(pacing_rate >> super::sender::SK_PACING_SHIFT);
        if !paced {
            floor = floor.min(TCP_LIMIT_OUTPUT_BYTES);
        }
        self.pipe.is_some() && self.unreported + self.queued_bytes > floor
    }

    /// `sk_wmem_alloc` at `now`: segments transmitted by then are freed (`tcp_wfree`).
    pub fn wmem(&mut self, now: SimTime) -> u64 {
        while let Some(&(t, b)) = self.queued.front() {
            if t > now {
                break;
            }
            self.queued.pop_front();
            self.queued_bytes -= b;
        }
        self.unreported + self.queued_bytes
    }

    /// The first transmit completion after which at most `limit` bytes remain below TCP
    /// (NEVER if the reported ones are not enough: the rest is reported before the next
    /// event, see [`Tsq::queued`]).
    pub fn below_at(&self, limit: u64) -> SimTime {
        let mut left = self.unreported + self.queued_bytes;
        for &(t, b) in &self.queued {
            left -= b;
            if left <= limit {
                return t;
            }
        }
        NEVER
    }

    /// `tcp_small_queue_check`: whether an skb of `skb_truesize` must wait. `pacing_rate` in
    /// bytes/s; `paced`: the socket's pacing status is not `SK_PACING_NONE`; `factor` 1 for
    /// retransmissions; `rtx_empty`: nothing is unacknowledged. Returns the time to try again
    /// (a transmit completion), or None to send now.
    pub fn throttle(
        &mut self,
        now: SimTime,
        skb_truesize: u64,
        pacing_rate: u64,
        paced: bool,
        factor: u32,
        rtx_empty: bool,
    ) -> Option<SimTime> {
        if self.pipe.is_none() {
            return None;
        }
        let mut limit = (2 * skb_truesize).max(pacing_rate >> super::sender::SK_PACING_SHIFT);
        if !paced {
            limit = limit.min(TCP_LIMIT_OUTPUT_BYTES);
        }
        limit <<= factor;
        if self.wmem(now) <= limit || rtx_empty {
            return None;
        }
        let at = self.below_at(limit);
        self.wake_limit = (self.unreported > 0).then_some(limit);
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tsq() -> Tsq {
        Tsq {
            pipe: Some(0),
            ..Tsq::default()
        }
    }

    #[test]
    fn bytes_leave_the_count_when_their_serialization_ends() {
        let mut q = tsq();
        for i in 1..=3 {
            q.charge(1000);
            q.queued(i * 10, 1000);
        }
        assert_eq!(q.wmem(0), 3000);
        assert_eq!(q.wmem(10), 2000);
        assert_eq!(q.wmem(29), 1000);
        assert_eq!(q.wmem(30), 0);
    }

    #[test]
    fn over_the_limit_it_waits_for_the_completion_that_brings_it_under() {
        let mut q = tsq();
        // 10 segments of 2,344 bytes (1448 + 896) in the device, one done every 1.2 us.
        for i in 1..=10 {
            q.charge(truesize(1448));
            q.queued(i * 1200, truesize(1448));
        }
        let skb = truesize(1448) * 2; // a two-segment skb
                                      // Unpaced at a low rate: 2 x truesize (9,376 bytes) is the limit; 23,440 are below.
        assert_eq!(
            q.throttle(0, skb, 1_000_000, false, 0, false),
            Some(6 * 1200)
        );
        // Nothing unacknowledged: always sent.
        assert_eq!(q.throttle(0, skb, 1_000_000, false, 0, true), None);
        // Retransmissions get twice the limit (18,752): under it after the third completion.
        assert_eq!(
            q.throttle(0, skb, 1_000_000, false, 1, false),
            Some(2 * 1200)
        );
        // About 1 ms at the pacing rate: 25.6 MB/s >> 10 = 25,000 bytes, not over.
        assert_eq!(q.throttle(0, skb, 25_600_000, false, 0, false), None);
        // The 1 MB cap binds an unpaced socket only.
        let mut q = tsq();
        q.charge(2 << 20);
        assert!(q.throttle(0, skb, 4_000_000_000, false, 0, false).is_some());
        assert_eq!(q.throttle(0, skb, 4_000_000_000, true, 0, false), None);
    }

    #[test]
    fn segments_sent_in_the_same_burst_set_the_wake_once_reported() {
        let mut q = tsq();
        // A 40-segment skb charged, then checked before the simulator placed it.
        for _ in 0..40 {
            q.charge(truesize(1448));
        }
        let skb = truesize(1448) * 2;
        assert_eq!(q.throttle(0, skb, 0, false, 0, false), Some(NEVER));
        let mut wake = None;
        for i in 1..=40 {
            wake = wake.or(q.queued(i * 1200, truesize(1448)));
        }
        // 93,760 bytes below; under 2 x 4,688 = 9,376 after the 36th completion.
        assert_eq!(wake, Some(36 * 1200));
    }

    #[test]
    fn a_socket_whose_device_is_not_tracked_never_waits() {
        let mut q = Tsq::default();
        q.charge(1 << 30);
        assert_eq!(q.throttle(0, 3000, 0, false, 0, false), None);
    }
}
