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
//! The simulator tells the socket when each data segment's serialization on its host's line
//! ends (its transmit completion; software GSO has split the skb, so each segment is freed on
//! its own, `tcp_gso_segment` moving the charge to the segments):
//!
//! - where the host's egress is a plain device queue (a link direction without a qdisc), as
//!   the segment enters it, its serialization end being known then ([`Tsq::queued`]);
//! - behind a qdisc on the host's own egress, as the qdisc hands the segment to the line
//!   ([`Tsq::queued`] then); a segment the qdisc drops is freed at once (`kfree_skb` runs the
//!   destructor), and so is one a delaying netem orphans on entry (`skb_orphan_partial`)
//!   ([`Tsq::freed`]).

use std::collections::VecDeque;

use crate::packet::skb;
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

/// Where the host sends a socket's segments first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// A plain device queue: this pipe (the simulator reports each segment as it is emitted).
    Queue(u32),
    /// A qdisc on the host's egress (segments are marked `skb::WFREE` and reported as the
    /// qdisc lets them go).
    Qdisc,
}

/// The socket's bytes below TCP: charged when a segment is transmitted, freed when the host's
/// device has serialized it.
#[derive(Default)]
pub struct Tsq {
    /// The host's egress. None: TSQ is not modelled for this socket (an instant first hop).
    device: Option<Device>,
    /// `skb::WFREE` behind a qdisc, else 0: what the socket's segments carry.
    skb: u8,
    /// Charged by `transmit`, not yet on the line (with a qdisc, still in it).
    unreported: u64,
    /// Segments in the device queue: (serialization end, truesize), in order.
    queued: VecDeque<(SimTime, u64)>,
    queued_bytes: u64,
    /// Throttled at this limit while some charged bytes were not yet reported: the time to
    /// try again is known once enough of them are.
    wake_limit: Option<u64>,
}

impl Tsq {
    /// Where the host sends the socket's segments first (see [`Device`]).
    pub fn set_device(&mut self, device: Option<Device>) {
        self.device = device;
        self.skb = if device == Some(Device::Qdisc) {
            skb::WFREE
        } else {
            0
        };
    }

    pub fn device(&self) -> Option<Device> {
        self.device
    }

    /// The sk_buff flags of the socket's data segments (`Packet::skb`).
    #[inline]
    pub fn skb_flags(&self) -> u8 {
        self.skb
    }

    /// A segment of `truesize` bytes handed below TCP (`skb_set_owner_w`).
    pub fn charge(&mut self, truesize: u64) {
        if self.device.is_some() {
            self.unreported += truesize;
        }
    }

    /// The simulator put a segment of `truesize` on the line, transmitted by `done` (after
    /// every segment reported before). Returns the time a throttled socket may try again, once
    /// the reported segments tell it.
    #[inline]
    pub fn queued(&mut self, done: SimTime, truesize: u64) -> Option<SimTime> {
        debug_assert!(self.unreported >= truesize, "a segment reported twice");
        self.unreported = self.unreported.saturating_sub(truesize);
        self.queued.push_back((done, truesize));
        self.queued_bytes += truesize;
        self.wake()
    }

    /// A charged segment of `truesize` was freed before the line sent it (dropped, or
    /// orphaned by netem). Returns the time a throttled socket may try again, as `queued`.
    pub fn freed(&mut self, truesize: u64) -> Option<SimTime> {
        debug_assert!(self.unreported >= truesize, "a segment freed twice");
        self.unreported = self.unreported.saturating_sub(truesize);
        self.wake()
    }

    /// For a socket throttled at `wake_limit`: the completion that brings it under, once the
    /// reported segments determine it. (Segments reported later complete later, so the answer
    /// does not change as more are reported.)
    #[inline]
    fn wake(&mut self) -> Option<SimTime> {
        let at = self.below_at(self.wake_limit?);
        if at == NEVER {
            return None;
        }
        self.wake_limit = None;
        Some(at)
    }

    /// Whether [`Tsq::throttle`] could hold anything back: the bytes below TCP, completed or
    /// not, exceed the smallest limit it can apply (a check without the queue's walk).
    #[inline]
    pub fn may_throttle(&self, pacing_rate: u64, paced: bool) -> bool {
        let mut floor = (2 * SKB_HEAD_TRUESIZE).max(pacing_rate >> super::sender::SK_PACING_SHIFT);
        if !paced {
            floor = floor.min(TCP_LIMIT_OUTPUT_BYTES);
        }
        self.device.is_some() && self.unreported + self.queued_bytes > floor
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
    /// (0 if no more than that is left now; NEVER if the reported ones are not enough: see
    /// [`Tsq::queued`]).
    pub fn below_at(&self, limit: u64) -> SimTime {
        let mut left = self.unreported + self.queued_bytes;
        if left <= limit {
            return 0;
        }
        for &(t, b) in &self.queued {
            left -= b;
            if left <= limit {
                return t;
            }
        }
        NEVER
    }

    /// `tcp_should_autocork`'s test of the bytes below TCP: `sk_wmem_alloc` (which counts
    /// from 1) above the tail skb's `skb_truesize` at `now`. Returns the time to try again,
    /// the next transmit completion (`tcp_wfree` finds `TSQ_THROTTLED` set; NEVER until the
    /// simulator reports one), or None to send now.
    pub fn autocork(&mut self, now: SimTime, skb_truesize: u64) -> Option<SimTime> {
        self.device?;
        let wmem = self.wmem(now);
        // Corked while 1 + wmem > skb_truesize.
        if wmem == 0 || wmem < skb_truesize {
            return None;
        }
        let limit = wmem - 1;
        self.wake_limit = (self.unreported > 0).then_some(limit);
        Some(self.below_at(limit))
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
        self.device?;
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
        let mut q = Tsq::default();
        q.set_device(Some(Device::Queue(0)));
        q
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
    fn behind_a_qdisc_the_wake_is_known_once_enough_segments_left_it() {
        let mut q = Tsq::default();
        q.set_device(Some(Device::Qdisc));
        assert_eq!(q.skb_flags(), skb::WFREE);
        // Ten segments of 2,344 bytes waiting in the qdisc; the limit is two of them.
        for _ in 0..10 {
            q.charge(truesize(1448));
        }
        let skb = truesize(1448);
        assert_eq!(q.throttle(0, skb, 0, false, 0, false), Some(NEVER));
        // The qdisc sends them one by one; the wake is the completion that leaves two below.
        for i in 1..=7 {
            assert_eq!(q.queued(i * 1000, truesize(1448)), None, "{i}");
        }
        assert_eq!(q.queued(8000, truesize(1448)), Some(8000));
        // Dropped or orphaned segments are freed at once: three in the qdisc, one dropped,
        // and the socket is under its limit now (0: at once).
        let mut q = Tsq::default();
        q.set_device(Some(Device::Qdisc));
        for _ in 0..3 {
            q.charge(truesize(1448));
        }
        assert_eq!(q.throttle(0, skb, 0, false, 0, false), Some(NEVER));
        assert_eq!(q.freed(truesize(1448)), Some(0));
    }

    #[test]
    fn a_small_write_is_corked_while_more_than_it_is_below_tcp() {
        let mut q = tsq();
        q.charge(truesize(1000));
        q.queued(800, truesize(1000));
        // sk_wmem_alloc counts from 1: one equal skb below is more than the new one.
        assert_eq!(q.autocork(0, truesize(1000)), Some(800));
        // A larger tail skb goes now; so does anything once the device has sent it.
        assert_eq!(q.autocork(0, truesize(1448)), None);
        assert_eq!(q.autocork(800, truesize(1000)), None);
        // Behind a qdisc the first completion is known once the segment leaves it.
        let mut q = Tsq::default();
        q.set_device(Some(Device::Qdisc));
        q.charge(truesize(1000));
        assert_eq!(q.autocork(0, truesize(1000)), Some(NEVER));
        assert_eq!(q.queued(500, truesize(1000)), Some(500));
    }

    #[test]
    fn a_socket_whose_device_is_not_tracked_never_waits() {
        let mut q = Tsq::default();
        q.charge(1 << 30);
        assert_eq!(q.throttle(0, 3000, 0, false, 0, false), None);
    }
}
