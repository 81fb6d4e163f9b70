//! The event scheduler: a 4-ary min-heap ordered by (time, insertion sequence), so events at
//! the same instant run in the order they were scheduled and runs are deterministic (the
//! order is total, so any correct priority queue pops the same sequence; four children per
//! node halve the depth of a binary heap, which matters once a network holds thousands of
//! pending events).
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

#[derive(Default)]
pub struct Scheduler {
    heap: Vec<Entry>,
    seq: u64,
    popped: u64,
}

impl Scheduler {
    pub fn new() -> Scheduler {
        Scheduler {
            heap: Vec::with_capacity(1024),
            seq: 0,
            popped: 0,
        }
    }
    pub fn schedule(&mut self, time: SimTime, event: Event) {
        self.seq += 1;
        let e = Entry {
            time,
            seq: self.seq,
            event,
        };
        // Sift up: move parents down into the hole until `e` fits.
        let mut i = self.heap.len();
        self.heap.push(e);
        while i > 0 {
            let parent = (i - 1) / D;
            if !e.before(&self.heap[parent]) {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = e;
    }
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let last = self.heap.pop()?;
        let top = match self.heap.first() {
            None => last,
            Some(&top) => {
                // Sift `last` down from the root: move the earliest child up into the hole.
                let n = self.heap.len();
                let mut i = 0;
                loop {
                    let first = D * i + 1;
                    if first >= n {
                        break;
                    }
                    let mut m = first;
                    for c in first + 1..(first + D).min(n) {
                        if self.heap[c].before(&self.heap[m]) {
                            m = c;
                        }
                    }
                    if !self.heap[m].before(&last) {
                        break;
                    }
                    self.heap[i] = self.heap[m];
                    i = m;
                }
                self.heap[i] = last;
                top
            }
        };
        self.popped += 1;
        Some((top.time, top.event))
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| e.time)
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.popped
    }
    pub fn debug_events(&self) -> Vec<Event> {
        self.heap.iter().map(|e| e.event).collect()
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
    fn pops_the_same_order_as_a_sort_of_time_then_insertion() {
        // Interleaved schedules and pops, as a run does; a sorted list is the reference.
        let mut rng = crate::rng::Rng::new(3, 4);
        let (mut s, mut reference) = (Scheduler::new(), Vec::new());
        let mut seq = 0;
        for round in 0..2000u64 {
            for _ in 0..rng.below(4) {
                let t = round + rng.below(50) as u64;
                seq += 1;
                s.schedule(t, Event::PipeExit(seq));
                reference.push((t, seq));
            }
            reference.sort();
            if !reference.is_empty() && rng.below(2) == 0 {
                let (t, q) = reference.remove(0);
                assert_eq!(s.pop(), Some((t, Event::PipeExit(q))));
            }
        }
        reference.sort();
        for (t, q) in reference {
            assert_eq!(s.pop(), Some((t, Event::PipeExit(q))));
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
