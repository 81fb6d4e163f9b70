//! The event scheduler: 4-ary min-heaps ordered by (time, insertion sequence), so events at
//! the same instant run in the order they were scheduled and runs are deterministic (the
//! order is total, so any correct priority queue pops the same sequence; four children per
//! node halve the depth of a binary heap). Endpoint timers have a heap of their own (see
//! [`Scheduler`]).
//!
//! Components keep at most one pending event each (a pipe its head packet, a shaper its next
//! dequeue, an endpoint its earliest timer), so the heap stays small whatever the number of
//! packets in flight. Timers are cancelled lazily: a popped event that no longer matches its
//! component's schedule is skipped by the caller.

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
    /// Connection `i` sends its lost requests again (a `web` client's SYN or request).
    RequestRetry(u32),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: SimTime,
    seq: u64,
    event: Event,
}

impl Entry {
    fn before(&self, other: &Entry) -> bool {
        (self.time, self.seq) < (other.time, other.seq)
    }
}

/// Children per heap node.
const D: usize = 4;

/// A D-ary min-heap of entries by (time, seq).
#[derive(Default)]
struct Heap(Vec<Entry>);

impl Heap {
    fn push(&mut self, e: Entry) {
        // Sift up: move parents down into the hole until `e` fits.
        let h = &mut self.0;
        let mut i = h.len();
        h.push(e);
        while i > 0 {
            let parent = (i - 1) / D;
            if !e.before(&h[parent]) {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = e;
    }
    fn pop(&mut self) -> Option<Entry> {
        let h = &mut self.0;
        let last = h.pop()?;
        let Some(&top) = h.first() else {
            return Some(last);
        };
        // Sift `last` down from the root: move the earliest child up into the hole.
        let n = h.len();
        let mut i = 0;
        loop {
            let first = D * i + 1;
            if first >= n {
                break;
            }
            let mut m = first;
            for c in first + 1..(first + D).min(n) {
                if h[c].before(&h[m]) {
                    m = c;
                }
            }
            if !h[m].before(&last) {
                break;
            }
            h[i] = h[m];
            i = m;
        }
        h[i] = last;
        Some(top)
    }
    fn peek(&self) -> Option<&Entry> {
        self.0.first()
    }
}

/// Two heaps popped as one: endpoint timers, which pile up (a timer moved earlier leaves its
/// old event behind, skipped when it pops), apart from the few pipe, port and qdisc events
/// that every packet needs, so those stay cheap.
#[derive(Default)]
pub struct Scheduler {
    main: Heap,
    timers: Heap,
    seq: u64,
    popped: u64,
}

impl Scheduler {
    pub fn new() -> Scheduler {
        Scheduler::default()
    }
    pub fn schedule(&mut self, time: SimTime, event: Event) {
        self.seq += 1;
        let e = Entry {
            time,
            seq: self.seq,
            event,
        };
        match event {
            Event::Endpoint(_) => self.timers.push(e),
            _ => self.main.push(e),
        }
    }
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let from_timers = match (self.main.peek(), self.timers.peek()) {
            (Some(m), Some(t)) => t.before(m),
            (None, Some(_)) => true,
            _ => false,
        };
        let e = if from_timers {
            self.timers.pop()
        } else {
            self.main.pop()
        }?;
        self.popped += 1;
        Some((e.time, e.event))
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        match (self.main.peek(), self.timers.peek()) {
            (Some(m), Some(t)) => Some(m.time.min(t.time)),
            (m, t) => m.or(t).map(|e| e.time),
        }
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.popped
    }
    pub fn pending(&self) -> usize {
        self.main.0.len() + self.timers.0.len()
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
    fn pops_the_same_order_as_a_sort_of_time_then_insertion() {
        // Interleaved schedules and pops, as a run does; a sorted list is the reference.
        let mut rng = crate::rng::Rng::new(3, 4);
        let (mut s, mut reference) = (Scheduler::new(), Vec::new());
        let mut seq = 0;
        for round in 0..2000u64 {
            for _ in 0..rng.below(4) {
                let t = round + rng.below(50) as u64;
                seq += 1;
                let e = if seq % 3 == 0 {
                    Event::Endpoint(seq)
                } else {
                    Event::PipeExit(seq)
                };
                s.schedule(t, e);
                reference.push((t, e));
            }
            reference.sort_by_key(|&(t, _)| t);
            if !reference.is_empty() && rng.below(2) == 0 {
                assert_eq!(s.peek_time(), Some(reference[0].0));
                assert_eq!(s.pop(), Some(reference.remove(0)));
            }
        }
        reference.sort_by_key(|&(t, _)| t);
        for e in reference {
            assert_eq!(s.pop(), Some(e));
        }
        assert_eq!(s.pop(), None);
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
