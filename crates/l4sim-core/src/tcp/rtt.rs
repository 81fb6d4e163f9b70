//! RTT estimation as Linux `tcp_rtt_estimator` / `tcp_set_rto` (tcp_input.c) and the windowed
//! minimum RTT (`tcp_update_rtt_min` over `lib/win_minmax.c`, 300 s window).
//!
//! Linux keeps `srtt_us` scaled by 8 and `mdev_us` scaled by 4, in microseconds; this module
//! does the same integer arithmetic so srtt/rttvar/RTO match the kernel's for a sample sequence.
//! `rto()` is exact in us; the sender rounds it up to whole jiffies (`usecs_to_jiffies`).

use crate::time::{SimDuration, SimTime, US};

/// The srtt / mdev / rttvar state of `struct tcp_sock`.
#[derive(Clone, Debug, Default)]
pub struct RttEstimator {
    /// Smoothed RTT << 3, us (0 = no sample yet).
    pub srtt_us: u64,
    /// Mean deviation << 2, us.
    pub mdev_us: u64,
    /// Maximal mdev over the last RTT, us.
    pub mdev_max_us: u64,
    /// Smoothed mdev_max (the "rttvar" of RFC 6298 as Linux keeps it), us.
    pub rttvar_us: u64,
    /// snd_nxt when the rttvar period started.
    pub rtt_seq: u32,
}

impl RttEstimator {
    /// `tcp_rtt_estimator(sk, mrtt_us)`. `rto_min_us` is `tcp_rto_min_us`.
    pub fn sample(&mut self, mrtt_us: u64, snd_una: u32, snd_nxt: u32, rto_min_us: u64) {
        let mut m = mrtt_us as i64;
        let mut srtt = self.srtt_us as i64;
        if srtt != 0 {
            m -= srtt >> 3;
            srtt += m; // srtt = 7/8 srtt + 1/8 new
            if m < 0 {
                m = -m;
                m -= (self.mdev_us >> 2) as i64;
                if m > 0 {
                    m >>= 3; // shrink mdev 8x slower when the RTT falls
                }
            } else {
                m -= (self.mdev_us >> 2) as i64;
            }
            self.mdev_us = (self.mdev_us as i64 + m) as u64; // mdev = 3/4 mdev + 1/4 new
            if self.mdev_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us;
                if self.mdev_max_us > self.rttvar_us {
                    self.rttvar_us = self.mdev_max_us;
                }
            }
            if snd_una > self.rtt_seq {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = rto_min_us;
            }
        } else {
            srtt = m << 3;
            self.mdev_us = (m as u64) << 1; // so that the first RTO is 3 x RTT
            self.rttvar_us = self.mdev_us.max(rto_min_us);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
        self.srtt_us = (srtt.max(1)) as u64;
    }
    /// `__tcp_set_rto`: srtt + rttvar (rttvar already floors at rto_min), capped at 120 s.
    pub fn rto(&self) -> SimDuration {
        (((self.srtt_us >> 3) + self.rttvar_us) * US).min(super::TCP_RTO_MAX)
    }
    /// Smoothed RTT in ns.
    pub fn srtt_ns(&self) -> SimDuration {
        self.srtt_us * US / 8
    }
}

/// A running windowed minimum (Kathleen Nichols' algorithm as in `lib/win_minmax.c`): keeps
/// the best, second-best and third-best samples of the window so the minimum expires in O(1).
#[derive(Clone, Copy, Debug)]
pub struct MinMax {
    s: [(SimTime, u64); 3],
}

impl Default for MinMax {
    fn default() -> Self {
        MinMax {
            s: [(0, u64::MAX); 3],
        }
    }
}

impl MinMax {
    pub fn get(&self) -> u64 {
        self.s[0].1
    }
    fn reset(&mut self, t: SimTime, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }
    /// `minmax_running_min`: add sample `v` at time `t`, window `win`.
    pub fn running_min(&mut self, win: SimDuration, t: SimTime, v: u64) -> u64 {
        if self.s[0].1 == u64::MAX || v <= self.s[0].1 || t.saturating_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v <= self.s[1].1 {
            self.s[2] = (t, v);
            self.s[1] = (t, v);
        } else if v <= self.s[2].1 {
            self.s[2] = (t, v);
        }
        self.subwin_update(win, t, v)
    }
    /// `minmax_subwin_update`: age the kept samples through the window's quarters.
    fn subwin_update(&mut self, win: SimDuration, t: SimTime, v: u64) -> u64 {
        let dt = t.saturating_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = (t, v);
            if t.saturating_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = (t, v);
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = (t, v);
            self.s[1] = (t, v);
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = (t, v);
        }
        self.s[0].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srtt_and_rttvar_follow_linux_estimator_for_known_samples() {
        let mut e = RttEstimator::default();
        let rto_min = 200_000;
        // First sample 100 ms: srtt = 100 ms, mdev = 2 x 100 ms (scaled), rttvar = max(mdev, rto_min).
        e.sample(100_000, 0, 10, rto_min);
        assert_eq!(e.srtt_us, 800_000);
        assert_eq!(e.mdev_us, 200_000);
        assert_eq!(e.rttvar_us, 200_000);
        assert_eq!(e.rto(), 300 * crate::time::MS);
        // Second sample 60 ms (RTT fell): m = 60000 - 100000 = -40000; srtt += m.
        // |m| - mdev/4 = 40000 - 50000 < 0, so mdev += -10000 (not shrunk by 8).
        e.sample(60_000, 5, 20, rto_min);
        assert_eq!(e.srtt_us, 760_000);
        assert_eq!(e.mdev_us, 190_000);
        // Third sample 180 ms in a new rtt_seq period: m = 180000 - 95000 = 85000;
        // srtt = 845000; m - mdev/4 = 85000 - 47500 = 37500; mdev = 227500 > mdev_max
        // (200000) so rttvar = 227500; then the period ends (snd_una 11 > rtt_seq 10):
        // mdev_max >= rttvar, no decay; mdev_max resets to rto_min.
        e.sample(180_000, 21, 30, rto_min);
        assert_eq!(e.srtt_us, 845_000);
        assert_eq!(e.mdev_us, 227_500);
        assert_eq!(e.rttvar_us, 227_500);
        assert_eq!(e.mdev_max_us, rto_min);
        assert_eq!(e.rto(), (105_625 + 227_500) * US);
    }

    #[test]
    fn windowed_min_rtt_expires_after_the_window() {
        let mut m = MinMax::default();
        let w = 300 * crate::time::SEC;
        m.running_min(w, 0, 50);
        // A later-quarter sample is kept as the next candidate...
        m.running_min(w, 100 * crate::time::SEC, 80);
        assert_eq!(m.get(), 50);
        m.running_min(w, 301 * crate::time::SEC, 90);
        assert_eq!(m.get(), 80);
    }
}
