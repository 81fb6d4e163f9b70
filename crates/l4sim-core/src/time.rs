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
}
