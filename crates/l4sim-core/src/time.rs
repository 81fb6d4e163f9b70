//! Simulated time and link rates.
//!
//! Time is an integer count of nanoseconds since the start of the run, so event ordering
//! is exact and runs are reproducible bit for bit. Linux keeps TCP clocks in microseconds
//! (`tcp_mstamp`) and some timers in jiffies; models that depend on that granularity round
//! explicitly where they use it.

use serde::{Deserialize, Serialize};

/// A point in simulated time, in nanoseconds since the start of the run.
pub type SimTime = u64;
/// A span of simulated time, in nanoseconds.
pub type SimDuration = u64;

pub const NS: SimDuration = 1;
pub const US: SimDuration = 1_000;
pub const MS: SimDuration = 1_000_000;
pub const SEC: SimDuration = 1_000_000_000;
/// "Never": used for disarmed timers.
pub const NEVER: SimTime = u64::MAX;

/// Seconds (as used in scenario files) to nanoseconds, rounded to the nearest ns.
pub fn secs(s: f64) -> SimDuration {
    (s * 1e9).round() as SimDuration
}

/// Milliseconds (as used in scenario files) to nanoseconds, rounded to the nearest ns.
pub fn millis(ms: f64) -> SimDuration {
    (ms * 1e6).round() as SimDuration
}

/// Nanoseconds to seconds, for reporting.
pub fn to_secs(t: SimDuration) -> f64 {
    t as f64 / 1e9
}

/// A bit rate. `tx_time` is exact to the nanosecond (rounded up), as a serializer needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Rate {
    pub bps: u64,
}

impl Rate {
    pub const fn bps(bps: u64) -> Rate {
        Rate { bps }
    }
    /// Whether `m` Mbit/s is a rate a link or qdisc may have: at least 1 bit/s once rounded by
    /// [`Rate::mbps`] (below, serialisation times divide by zero) and at most 1 Tbit/s.
    pub fn usable_mbps(m: f64) -> bool {
        m.is_finite() && m * 1e6 >= 1.0 && m <= 1e6
    }
    pub fn mbps(m: f64) -> Rate {
        Rate {
            bps: (m * 1e6).round() as u64,
        }
    }
    /// Time to serialize `bytes` at this rate, rounded up to the next nanosecond.
    pub fn tx_time(&self, bytes: u32) -> SimDuration {
        // Any packet's bytes x 8e9 fits in 64 bits (up to 2^31 bytes); the same value without
        // a 128-bit division on the per-packet path.
        if bytes < 1 << 31 {
            return (bytes as u64 * 8_000_000_000).div_ceil(self.bps);
        }
        let num = bytes as u128 * 8 * 1_000_000_000u128;
        num.div_ceil(self.bps as u128) as SimDuration
    }
    /// The same `tx_time` for a per-packet path: the division by the rate precomputed.
    pub fn tx_clock(self) -> TxClock {
        TxClock {
            rate: self,
            div: Divisor::new(self.bps),
            last: (0, 0),
        }
    }
    /// Bytes that this rate carries in `d` (rounded down).
    pub fn bytes_in(&self, d: SimDuration) -> u64 {
        (self.bps as u128 * d as u128 / 8_000_000_000u128) as u64
    }
    pub fn bytes_per_sec(&self) -> u64 {
        self.bps / 8
    }
    /// This rate in Mbit/s.
    pub fn as_mbps(&self) -> f64 {
        self.bps as f64 / 1e6
    }
}

/// A fixed divisor applied without a division instruction (a multiply by its precomputed
/// reciprocal and one correction step; exact for every 64-bit dividend). Serialization times
/// and jiffy rounding divide by the same number for every packet; a 64-bit `div` costs tens
/// of cycles there.
#[derive(Clone, Copy, Debug)]
pub struct Divisor {
    d: u64,
    /// floor((2^64 - 1) / d): the quotient it gives is the exact one or one less.
    m: u64,
}

impl Divisor {
    pub fn new(d: u64) -> Divisor {
        assert!(d > 0, "division by zero");
        Divisor { d, m: u64::MAX / d }
    }
    /// `(n / d, n % d)`.
    #[inline]
    pub fn div_rem(&self, n: u64) -> (u64, u64) {
        let mut q = ((n as u128 * self.m as u128) >> 64) as u64;
        let mut r = n - q * self.d;
        if r >= self.d {
            q += 1;
            r -= self.d;
        }
        (q, r)
    }
    /// `n.div_ceil(d)`.
    #[inline]
    pub fn div_ceil(&self, n: u64) -> u64 {
        let (q, r) = self.div_rem(n);
        q + (r != 0) as u64
    }
}

/// [`Rate::tx_time`] with the division precomputed, for a serializer's per-packet path.
#[derive(Clone, Copy, Debug)]
pub struct TxClock {
    rate: Rate,
    div: Divisor,
    /// The last length asked for and its time: a link carries a few lengths (full segments,
    /// ACKs), mostly in runs, so most packets skip the division.
    last: (u32, SimDuration),
}

impl TxClock {
    pub fn rate(&self) -> Rate {
        self.rate
    }
    /// [`TxClock::tx_time`], remembering the last length.
    #[inline]
    pub fn tx_time_memo(&mut self, bytes: u32) -> SimDuration {
        if bytes != self.last.0 {
            self.last = (bytes, self.tx_time(bytes));
        }
        self.last.1
    }
    /// [`Rate::tx_time`], the same value.
    #[inline]
    pub fn tx_time(&self, bytes: u32) -> SimDuration {
        if bytes < 1 << 31 {
            return self.div.div_ceil(bytes as u64 * 8_000_000_000);
        }
        self.rate.tx_time(bytes)
    }
}

/// A host's jiffies at `hz` ticks per second, and when its `timer_list` timers run. Tick k
/// begins at `k * jiffy - phase`: a host's tick phase is its own (set by when it booted), so
/// hosts' ticks do not line up.
#[derive(Clone, Copy, Debug)]
pub struct Jiffies {
    jiffy: SimDuration,
    div: Divisor,
    /// The clock's time is simulated time plus `phase` (less than a jiffy).
    phase: SimDuration,
}

impl Jiffies {
    /// Ticks at time 0 and every 1/`hz` s.
    pub fn new(hz: u32) -> Jiffies {
        Jiffies::with_phase(hz, 0)
    }
    /// Ticks `phase` (taken modulo one jiffy) ahead of simulated time.
    pub fn with_phase(hz: u32, phase: SimDuration) -> Jiffies {
        let jiffy = SEC / hz.max(1) as u64;
        Jiffies {
            jiffy,
            div: Divisor::new(jiffy),
            phase: phase % jiffy,
        }
    }
    /// One tick, ns.
    #[inline]
    pub fn jiffy(&self) -> SimDuration {
        self.jiffy
    }
    /// The tick phase, ns.
    pub fn phase(&self) -> SimDuration {
        self.phase
    }
    /// `jiffies` at time `t`.
    #[inline]
    pub fn at(&self, t: SimTime) -> u64 {
        self.div.div_rem(t + self.phase).0
    }
    /// `usecs_to_jiffies` / `nsecs_to_jiffies` rounding up: `d` in whole jiffies.
    #[inline]
    pub fn ceil(&self, d: SimDuration) -> u64 {
        self.div.div_ceil(d)
    }
    /// `nsecs_to_jiffies`, truncating: the whole jiffies in `d`.
    #[inline]
    pub fn floor(&self, d: SimDuration) -> u64 {
        self.div.div_rem(d).0
    }
    /// When a `timer_list` armed at jiffy `clk` (the host's `jiffies` then, [`Jiffies::at`])
    /// to expire at jiffy `expires` runs: the start
    /// of the tick at which the timer wheel (kernel/time/timer.c, `calc_wheel_index` and
    /// `calc_index`, LVL_DEPTH 9 for HZ > 100) finds it. Level n holds the timers due
    /// [LVL_START(n), LVL_START(n + 1)) jiffies from the wheel's clock (LVL_START(n) =
    /// 63 << 3(n - 1), LVL_START(0) = 0) in buckets of 8^n jiffies, and a timer goes into the
    /// bucket after the one its expiry falls in, so that it never runs early even when armed
    /// at the end of a tick: one jiffy after `expires` at level 0 (under 63 jiffies, 252 ms at
    /// HZ 250), up to 8 jiffies after at level 1, and so on. The wheel's clock is taken to be
    /// `jiffies` (`forward_timer_base`); an expiry already past runs at the next tick.
    #[inline]
    pub fn timer_runs(&self, clk: u64, expires: u64) -> SimTime {
        let delta = expires.saturating_sub(clk);
        let mut lvl = 0;
        while lvl < 8 && delta >= 63 << (3 * lvl) {
            lvl += 1;
        }
        let shift = 3 * lvl;
        (((expires.max(clk) >> shift) + 1) << shift) * self.jiffy - self.phase
    }
    /// [`Jiffies::timer_runs`] for a timer armed at `now` for `when`, rounded up to whole
    /// jiffies (`usecs_to_jiffies`, `msecs_to_jiffies`).
    #[inline]
    pub fn timer_in(&self, now: SimTime, when: SimDuration) -> SimTime {
        let clk = self.at(now);
        self.timer_runs(clk, clk + self.ceil(when))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact_for_full_frames() {
        // 1514 B at 100 Mbit/s = 121.12 us exactly.
        assert_eq!(Rate::mbps(100.0).tx_time(1514), 121_120);
        assert_eq!(Rate::mbps(1000.0).tx_time(1514), 12_112);
    }

    #[test]
    fn tx_time_and_tx_clock_are_the_128_bit_value_on_both_sides_of_the_64_bit_path() {
        for rate in [
            Rate::bps(1),
            Rate::bps(3),
            Rate::mbps(100.0),
            Rate::mbps(4000.0),
        ] {
            let mut clock = rate.tx_clock();
            // Lengths repeated back to back and after others, so some answers come from the memo.
            for bytes in [
                0,
                0,
                1,
                42,
                42,
                66,
                1514,
                1514,
                66,
                9014,
                65_535,
                (1 << 31) - 1,
                1 << 31,
                u32::MAX,
                u32::MAX,
                0,
            ] {
                let wide = (bytes as u128 * 8_000_000_000).div_ceil(rate.bps as u128) as u64;
                let at = format!("{bytes} bytes at {} bit/s", rate.bps);
                assert_eq!(rate.tx_time(bytes), wide, "{at}");
                assert_eq!(clock.tx_time(bytes), wide, "{at}, precomputed");
                assert_eq!(clock.tx_time_memo(bytes), wide, "{at}, remembered");
            }
        }
    }

    #[test]
    fn divisor_gives_the_exact_quotient_and_remainder() {
        let mut rng = crate::rng::Rng::new(7, 7);
        let mut ds = vec![
            1,
            2,
            3,
            7,
            1000,
            4_000_000,
            100_000_000,
            u64::MAX / 3,
            u64::MAX,
        ];
        let mut ns = vec![0, 1, 2, 999, u64::MAX - 1, u64::MAX];
        for _ in 0..2000 {
            let (a, b) = (rng.below(u32::MAX) as u64, rng.below(u32::MAX) as u64);
            ds.push((a << 32 | b) >> rng.below(64));
            ns.push((b << 32 | a) >> rng.below(64));
        }
        for &d in ds.iter().filter(|&&d| d > 0) {
            let div = Divisor::new(d);
            for &n in &ns {
                assert_eq!(div.div_rem(n), (n / d, n % d), "{n} / {d}");
                assert_eq!(div.div_ceil(n), n.div_ceil(d), "{n} / {d} rounded up");
            }
        }
    }

    #[test]
    fn tx_time_rounds_up() {
        assert_eq!(Rate::bps(3).tx_time(1), 2_666_666_667);
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Rate::mbps(100.0);
        assert_eq!(r.bytes_in(SEC), 12_500_000);
    }

    #[test]
    fn a_timer_runs_on_the_wheels_tick_after_its_expiry_never_early() {
        // kernel/time/timer.c: at HZ 100, schedule_timeout(5) from jiffy 0 sleeps until the
        // tick of jiffy 6 (60 ms), the "off by one" tglx explains (lkml, 2021-05-12).
        assert_eq!(Jiffies::new(100).timer_runs(0, 5), 60 * MS);
        let j = Jiffies::new(250);
        // Level 0 (under 63 jiffies): the tick after the expiry, wherever in its tick the
        // timer was armed: a 10-jiffy timeout runs 40-44 ms later.
        assert_eq!(j.timer_runs(0, 10), 44 * MS);
        assert_eq!(j.timer_runs(j.at(3_999_999), 10), 44 * MS);
        assert_eq!(j.timer_runs(1, 11), 48 * MS);
        assert_eq!(j.timer_runs(0, 62), 63 * 4 * MS);
        // Level 1 (63-503 jiffies): 8-jiffy buckets, the one after the expiry's.
        assert_eq!(j.timer_runs(0, 63), 64 * 4 * MS);
        assert_eq!(j.timer_runs(0, 70), 72 * 4 * MS);
        assert_eq!(j.timer_runs(0, 72), 80 * 4 * MS);
        // Level 2 (504-4031): 64-jiffy buckets. TCP_TIMEOUT_INIT (1 s, 250 jiffies) is level 1.
        assert_eq!(j.timer_runs(0, 504), 512 * 4 * MS);
        assert_eq!(j.timer_runs(0, 250), 256 * 4 * MS);
        // The level is chosen by the distance from the clock, the bucket by the expiry.
        assert_eq!(j.timer_runs(100, 150), 151 * 4 * MS);
        // A host whose clock is 1 ms ahead ticks at 3 ms, 7 ms, ...: jiffy 1 begins at 3 ms.
        let h = Jiffies::with_phase(250, MS);
        assert_eq!((h.at(0), h.at(3 * MS - 1), h.at(3 * MS)), (0, 0, 1));
        assert_eq!(h.timer_runs(h.at(3 * MS), 11), 47 * MS);
        assert_eq!(Jiffies::with_phase(250, 9 * MS).phase(), MS);
        let mut rng = crate::rng::Rng::new(5, 1);
        for _ in 0..10_000 {
            let now = rng.below(1 << 30) as u64 * 1000;
            let when = 1 + rng.below(5000) as u64;
            let expires = j.at(now) + when;
            let runs = j.timer_runs(j.at(now), expires);
            assert_eq!(runs % (4 * MS), 0, "on a tick");
            assert!(runs > expires * 4 * MS, "after the expiry's tick");
            // At most one bucket of the level late: 12.5 % of the timeout, or one jiffy.
            assert!(runs <= (expires + 1 + when / 8) * 4 * MS, "{now} {when}");
        }
    }
}
