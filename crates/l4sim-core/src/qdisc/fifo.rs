//! `bfifo` and `pfifo` (net/sched/sch_fifo.c): tail drop when the byte or packet limit
//! would be exceeded. No ECN.

use std::collections::VecDeque;

use super::{Drop, DropReason, QueueDisc};
use crate::packet::Packet;
use crate::time::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// bfifo: drop if backlog + len > limit bytes.
    Bytes(u64),
    /// pfifo: drop if qlen >= limit packets.
    Packets(u32),
}

pub struct Fifo {
    limit: Limit,
    q: VecDeque<Packet>,
    bytes: u64,
}

impl Fifo {
    pub fn bytes(limit: u64) -> Fifo {
        Fifo {
            limit: Limit::Bytes(limit),
            q: VecDeque::with_capacity(1024),
            bytes: 0,
        }
    }
    pub fn packets(limit: u32) -> Fifo {
        Fifo {
            limit: Limit::Packets(limit),
            q: VecDeque::with_capacity(1024),
            bytes: 0,
        }
    }
}

impl QueueDisc for Fifo {
    fn kind(&self) -> &'static str {
        match self.limit {
            Limit::Bytes(_) => "bfifo",
            Limit::Packets(_) => "pfifo",
        }
    }
    fn enqueue(&mut self, pkt: Packet, _now: SimTime, drops: &mut Vec<Drop>) {
        let fits = match self.limit {
            Limit::Bytes(b) => self.bytes + pkt.len as u64 <= b,
            Limit::Packets(n) => (self.q.len() as u64) < n as u64,
        };
        if fits {
            self.bytes += pkt.len as u64;
            self.q.push_back(pkt);
        } else {
            drops.push(Drop {
                pkt,
                reason: DropReason::Overlimit,
            });
        }
    }
    fn dequeue(&mut self, _now: SimTime, _drops: &mut Vec<Drop>) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len as u64;
        Some(p)
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{hdr, Dir};

    fn pkt(len: u32) -> Packet {
        let mut p = Packet::new(0, Dir::Fwd, 0, 1);
        p.len = len;
        p
    }

    #[test]
    fn bfifo_tail_drops_when_bytes_would_exceed_limit() {
        let mut q = Fifo::bytes(3000);
        let mut d = Vec::new();
        q.enqueue(pkt(1514), 0, &mut d);
        q.enqueue(pkt(1514), 0, &mut d);
        assert_eq!(q.len(), 1);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].reason, DropReason::Overlimit);
        q.enqueue(pkt(hdr::wire_len(0, 0)), 0, &mut d);
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn pfifo_counts_packets_not_bytes() {
        let mut q = Fifo::packets(2);
        let mut d = Vec::new();
        for _ in 0..3 {
            q.enqueue(pkt(66), 0, &mut d);
        }
        assert_eq!(q.len(), 2);
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn fifo_preserves_order() {
        let mut q = Fifo::packets(10);
        let mut d = Vec::new();
        for i in 0..5 {
            let mut p = pkt(100);
            p.seq = i;
            q.enqueue(p, 0, &mut d);
        }
        for i in 0..5 {
            assert_eq!(q.dequeue(0, &mut d).unwrap().seq, i);
        }
        assert!(q.dequeue(0, &mut d).is_none());
        assert_eq!(q.bytes(), 0);
    }
}
