//! The event scheduler: a binary heap ordered by (time, insertion sequence), so events at
//! the same instant run in the order they were scheduled and runs are deterministic.
//!
//! Components keep at most one pending event each (a pipe its head packet, a shaper its next
//! dequeue, an endpoint its earliest timer), so the heap stays small whatever the number of
//! packets in flight. Timers are cancelled lazily: a popped event that no longer matches its
//! component's schedule is skipped by the caller.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::SimTime;

/// What happens when an event fires. Indices refer to the simulator's component tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The head packet of pipe `i` reaches the far end.
    PipeExit(u32),
    /// Shaped port `i` may dequeue its next packet.
    PortWake(u32),
    /// Periodic work of the qdisc on shaped port `i` (PIE, DualPI2 probability updates).
    QdiscTimer(u32),
    /// A timer of endpoint `i` (2 x stream + 0 for the sender, + 1 for the receiver).
    Endpoint(u32),
    /// Stream `i` opens its connection.
    StreamStart(u32),
    /// iperf3-style once-per-second srtt sample of flow `i`.
    RttSample(u32),
    /// The traffic source of flow `i` starts its next transfers.
    SourceWake(u32),
    /// Time-series sample of every flow and qdisc.
    Sample,
    /// Flow `i` reaches its `stop` time.
    FlowStop(u32),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: SimTime,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .cmp(&self.time)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
pub struct Scheduler {
    heap: BinaryHeap<Entry>,
    seq: u64,
    popped: u64,
}

impl Scheduler {
    pub fn new() -> Scheduler {
        Scheduler {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            popped: 0,
        }
    }
    pub fn schedule(&mut self, time: SimTime, event: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            time,
            seq: self.seq,
            event,
        });
    }
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        Some((e.time, e.event))
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.popped
    }
    pub fn pending(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_in_time_order() {
        let mut s = Scheduler::new();
        s.schedule(30, Event::Sample);
        s.schedule(10, Event::PipeExit(1));
        s.schedule(20, Event::PortWake(2));
        let times: Vec<_> = std::iter::from_fn(|| s.pop()).map(|(t, _)| t).collect();
        assert_eq!(times, vec![10, 20, 30]);
    }

    #[test]
    fn simultaneous_events_keep_insertion_order() {
        let mut s = Scheduler::new();
        for i in 0..100 {
            s.schedule(5, Event::PipeExit(i));
        }
        for i in 0..100 {
            assert_eq!(s.pop(), Some((5, Event::PipeExit(i))));
        }
    }
}
