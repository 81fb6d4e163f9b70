//! A link direction: a serializer at the line rate followed by a propagation delay line.
//!
//! Packets leave in FIFO order, each at `max(arrival, previous departure) + len/rate + delay`,
//! so the pipe needs one pending event (its head packet), not one per packet. A pipe with no
//! rate and no delay is "instant": packets cross it without an event.

use std::collections::VecDeque;

use crate::packet::Packet;
use crate::time::{Rate, SimDuration, SimTime, TxClock};

/// Packets a device queues in front of its line when no qdisc is configured: its
/// `txqueuelen` (1000, as Linux's default `pfifo_fast` uses it).
pub const TXQUEUELEN: u64 = 1000;

pub struct Pipe {
    pub name: String,
    /// Line rate with its division precomputed; None: no serialization delay.
    clock: Option<TxClock>,
    /// Propagation delay (netem `delay` where the dumbbell's delay node sits); change it
    /// with [`Pipe::set_delay`].
    delay: SimDuration,
    /// Node at the far end.
    pub to: u32,
    /// IP MTU of the link (the device's `mtu`, bytes).
    pub mtu: u32,
    /// The device is a router's: its full device queue drops every packet. A host's drops
    /// only UDP: Linux's TCP keeps a socket's data out of a full queue with TSQ, which the
    /// model does not have (docs/topologies.md).
    pub router: bool,
    busy_until: SimTime,
    /// No packet leaves before this: the last exit queued when the delay was lowered.
    exit_floor: SimTime,
    /// Wait behind [`TXQUEUELEN`] minimum-size (42-byte) frames: a shorter wait is never a
    /// full device queue.
    full_wait: SimDuration,
    q: VecDeque<(SimTime, Packet)>,
    /// Data packets currently inside (for packet conservation).
    pub data_inside: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
}

impl Pipe {
    pub fn new(name: String, rate: Option<Rate>, delay: SimDuration, to: u32) -> Pipe {
        Pipe {
            name,
            clock: rate.map(Rate::tx_clock),
            delay,
            to,
            mtu: crate::packet::hdr::MTU,
            router: false,
            busy_until: 0,
            exit_floor: 0,
            full_wait: rate.map_or(SimDuration::MAX, |r| TXQUEUELEN * r.tx_time(42)),
            q: VecDeque::new(),
            data_inside: 0,
            tx_pkts: 0,
            tx_bytes: 0,
        }
    }

    pub fn delay(&self) -> SimDuration {
        self.delay
    }

    /// Change the propagation delay for packets sent from now on. The line stays FIFO: after
    /// a lower delay, packets leave no earlier than those already on it (netem's `tfifo`
    /// would let them overtake; the model's delay line keeps one pending event per pipe).
    pub fn set_delay(&mut self, delay: SimDuration) {
        self.exit_floor = self.q.back().map_or(0, |&(t, _)| t);
        self.delay = delay;
    }

    /// When the line would have serialized a packet of `len` bytes accepted at `now`.
    pub fn sent_by(&self, len: u32, now: SimTime) -> SimTime {
        now.max(self.busy_until) + self.clock.as_ref().map_or(0, |c| c.tx_time(len))
    }

    /// The line rate (None: no serialization).
    pub fn line_rate(&self) -> Option<Rate> {
        self.clock.as_ref().map(TxClock::rate)
    }

    pub fn is_instant(&self) -> bool {
        self.clock.is_none() && self.delay == 0
    }

    /// Accept a packet at `now`. Returns its exit time if the pipe was empty, i.e. when the
    /// caller must schedule the pipe's exit event. (The simulator uses
    /// [`Pipe::push_unless_full`]; this is the tests' shorthand.)
    #[cfg(test)]
    pub fn push(&mut self, pkt: Packet, now: SimTime) -> Option<SimTime> {
        self.push_unless_full(pkt, now, |_| false)
            .expect("never refused")
    }

    /// Accept a packet at `now`; `Ok` holds its exit time if the pipe was empty (the caller
    /// then schedules the pipe's exit event). A packet finding the device queue full (at
    /// least [`TXQUEUELEN`] packets, of any size, waiting for the line: `pfifo_fast_enqueue`
    /// compares its qlen with `tx_queue_len`; the one on the wire and those propagating do
    /// not count) is refused if `droppable` says so: `Err` returns it to the caller.
    #[inline]
    pub fn push_unless_full(
        &mut self,
        pkt: Packet,
        now: SimTime,
        droppable: impl FnOnce(&Packet) -> bool,
    ) -> Result<Option<SimTime>, Packet> {
        let start = now.max(self.busy_until);
        let tx = self.clock.as_mut().map_or(0, |c| c.tx_time_memo(pkt.len));
        // `full_wait` (the smallest packets') rules out almost every packet at one compare.
        if start - now >= self.full_wait && droppable(&pkt) && self.waiting(now) >= TXQUEUELEN {
            return Err(pkt);
        }
        let end = start + tx;
        self.busy_until = end;
        let exit = (end + self.delay).max(self.exit_floor);
        self.tx_pkts += 1;
        self.tx_bytes += pkt.len as u64;
        if pkt.is_data() {
            self.data_inside += 1;
        }
        let was_empty = self.q.is_empty();
        self.q.push_back((exit, pkt));
        Ok(was_empty.then_some(exit))
    }

    /// Packets waiting for the line at `now`, while it is busy: those not yet serialized
    /// (exit later than `now` plus the delay), less the one on the wire. Right after the delay
    /// was lowered, packets held back by the exit floor count as waiting a little longer.
    #[cold]
    fn waiting(&self, now: SimTime) -> u64 {
        let serialized = self
            .q
            .partition_point(|&(exit, _)| exit <= now + self.delay);
        (self.q.len() - serialized).saturating_sub(1) as u64
    }

    /// When the line is done with what it was given (the last packet's serialization end).
    pub fn busy_until(&self) -> SimTime {
        self.busy_until
    }

    /// The packet pushed last, while it is in the pipe.
    pub fn last_mut(&mut self) -> Option<&mut Packet> {
        self.q.back_mut().map(|(_, p)| p)
    }

    /// Remove the head packet if it has arrived by `now`.
    pub fn pop_due(&mut self, now: SimTime) -> Option<Packet> {
        match self.q.front() {
            Some(&(t, _)) if t <= now => {
                let (_, p) = self.q.pop_front().unwrap();
                if p.is_data() {
                    self.data_inside -= 1;
                }
                Some(p)
            }
            _ => None,
        }
    }

    pub fn head_time(&self) -> Option<SimTime> {
        self.q.front().map(|&(t, _)| t)
    }

    /// Record a packet that crossed an instant pipe (no queueing).
    pub fn count_instant(&mut self, pkt: &Packet) {
        self.tx_pkts += 1;
        self.tx_bytes += pkt.len as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::US;

    #[test]
    fn back_to_back_packets_are_spaced_by_serialization() {
        let mut p = Pipe::new("l".into(), Some(Rate::mbps(100.0)), 5 * US, 1);
        assert_eq!(p.push(Packet::full_segment(), 0), Some(121_120 + 5_000));
        assert_eq!(p.push(Packet::full_segment(), 0), None);
        assert!(p.pop_due(126_119).is_none());
        assert!(p.pop_due(126_120).is_some());
        assert_eq!(p.head_time(), Some(2 * 121_120 + 5_000));
    }

    /// pfifo_fast counts packets: behind 999 full-size packets waiting for the line (and one
    /// on it) a 60-byte packet still gets in, and the next packet of any size does not.
    #[test]
    fn the_device_queue_holds_txqueuelen_packets_whatever_their_size() {
        let mut p = Pipe::new("l".into(), Some(Rate::mbps(50.0)), 5 * US, 1);
        p.router = true;
        for _ in 0..1000 {
            assert!(p
                .push_unless_full(Packet::full_segment(), 0, |_| true)
                .is_ok());
        }
        let mut small = Packet::full_segment();
        small.len = 60;
        assert!(p.push_unless_full(small.clone(), 0, |_| true).is_ok());
        assert!(p.push_unless_full(small.clone(), 0, |_| true).is_err());
        assert!(p
            .push_unless_full(Packet::full_segment(), 0, |_| true)
            .is_err());
        // Once the first packet has left the line, one more fits.
        let first_sent = 242_240;
        assert!(p.push_unless_full(small, first_sent, |_| true).is_ok());
    }

    #[test]
    fn idle_pipe_starts_serializing_at_arrival() {
        let mut p = Pipe::new("l".into(), Some(Rate::mbps(1000.0)), 0, 1);
        p.push(Packet::full_segment(), 0);
        p.pop_due(20_000);
        assert_eq!(
            p.push(Packet::full_segment(), 1_000_000),
            Some(1_000_000 + 12_112)
        );
    }
}
