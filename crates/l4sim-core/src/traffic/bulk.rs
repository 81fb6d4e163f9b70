//! `bulk`: an iperf3 client. `streams` connections (iperf3 `-P`) open when the flow starts and
//! send for the whole run, or `size` bytes each (iperf3 `-n`). The ANRW'24 study's traffic.

use super::{Source, Transfer};
use crate::rng::Rng;
use crate::time::{SimTime, NEVER};

pub struct Bulk {
    streams: u32,
    size: Option<u64>,
}

impl Bulk {
    pub fn new(streams: u32, size: Option<u64>) -> Bulk {
        Bulk { streams, size }
    }
}

impl Source for Bulk {
    fn initial(&mut self, out: &mut Vec<Transfer>) {
        out.extend((0..self.streams).map(|_| self.size));
    }
    fn next_wake(&self) -> SimTime {
        NEVER
    }
    fn wake(&mut self, _now: SimTime, _rng: &mut Rng, _out: &mut Vec<Transfer>) {}
}
