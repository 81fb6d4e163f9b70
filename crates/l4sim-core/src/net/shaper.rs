//! An HTB class with a rate and a burst (net/sched/sch_htb.c), as the study's routers used
//! (`htb ... rate C`, the AQM as its child qdisc).
//!
//! HTB keeps tokens as time: a class may send while its tokens are >= 0, each packet costs
//! len/rate, and tokens refill with elapsed time up to the burst (`buffer`). With tc's default
//! burst (rate/HZ + 1600 bytes, where HZ is the psched clock of 10^9, so about 1600 bytes) this
//! is a constant-rate server that may send two frames back to back after an idle period.

use crate::time::{Rate, SimDuration, SimTime, TxClock};

/// tc's default HTB burst when none is given: `rate / get_hz() + mtu` with mtu 1600 and a
/// 1 GHz psched clock (iproute2 tc/q_htb.c), i.e. effectively 1600 bytes.
pub fn default_burst(rate: Rate) -> u32 {
    (rate.bytes_per_sec() / 1_000_000_000) as u32 + 1600
}

pub struct Shaper {
    /// The class's rate, with its division precomputed.
    clock: TxClock,
    /// Burst in time units (ns of transmission at `rate`).
    buffer: i64,
    tokens: i64,
    t_last: SimTime,
}

impl Shaper {
    pub fn new(rate: Rate, burst_bytes: u32) -> Shaper {
        let buffer = rate.tx_time(burst_bytes) as i64;
        Shaper {
            clock: rate.tx_clock(),
            buffer,
            tokens: buffer,
            t_last: 0,
        }
    }

    pub fn rate(&self) -> Rate {
        self.clock.rate()
    }

    fn tokens_at(&self, now: SimTime) -> i64 {
        (self.tokens + (now - self.t_last) as i64).min(self.buffer)
    }

    /// Earliest time >= now at which the class may send.
    pub fn ready_at(&self, now: SimTime) -> SimTime {
        let t = self.tokens_at(now);
        if t >= 0 {
            now
        } else {
            now + (-t) as SimDuration
        }
    }

    /// The tokens as last charged (ns; `cl->tokens`, not brought up to date: what `tc -s
    /// class show` dumps, in psched ticks of 64 ns).
    pub fn tokens(&self) -> i64 {
        self.tokens
    }

    /// Charge a packet of `len` bytes sent at `now` (`htb_charge_class`).
    pub fn charge(&mut self, now: SimTime, len: u32) {
        self.tokens = self.tokens_at(now) - self.clock.tx_time_memo(len) as i64;
        self.t_last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlogged_class_sends_at_its_rate() {
        let r = Rate::mbps(100.0);
        let mut s = Shaper::new(r, default_burst(r));
        let mut now = 0;
        let mut sent = 0u64;
        while now < 1_000_000_000 {
            now = s.ready_at(now);
            s.charge(now, 1514);
            sent += 1514;
        }
        let rate = sent as f64 * 8.0 / 1.0;
        assert!((rate - 100e6).abs() / 100e6 < 0.001, "{rate}");
    }

    #[test]
    fn idle_class_may_send_two_frames_back_to_back() {
        let r = Rate::mbps(100.0);
        let mut s = Shaper::new(r, default_burst(r));
        assert_eq!(s.ready_at(0), 0);
        s.charge(0, 1514);
        assert_eq!(s.ready_at(0), 0);
        s.charge(0, 1514);
        assert!(s.ready_at(0) > 0);
    }
}
