//! The TCP metrics cache (`net/ipv4/tcp_metrics.c`, 5.15, default sysctls): what a connection
//! that finished leaves for the next one between the same two hosts.
//!
//! `tcp_update_metrics` runs when a connection ends well (TIME-WAIT, or LAST-ACK to CLOSE;
//! here when its receiver has the last byte, with the data sender's state then). With
//! `tcp_nometrics_save` = 0 it keeps, per (local, remote) address pair:
//! - the RTT (`srtt_us`, scaled by 8): a larger srtt is taken whole, a smaller one moves the
//!   cache down by an eighth of the difference; a connection that ended with its RTO backed
//!   off or without a sample (`icsk_backoff || !srtt_us`) clears it instead;
//! - the reordering degree, when the connection ended outside the initial slow start and not in
//!   congestion avoidance in Open, and its degree is above the cache's and not the sysctl's
//!   default (3).
//!
//! `tcp_init_metrics` (at `tcp_init_transfer`, once the handshake is over) hands a new
//! connection the cached reordering degree and, when the cached RTT is above the handshake's
//! sample, seeds its first RTO from it: `crtt + max(2 crtt, rto_min)` in whole jiffies; the
//! estimator keeps the handshake's sample, and the first data sample sets the RTO again.
//!
//! Not kept, as 5.15's defaults have it: the slow-start threshold
//! (`tcp_no_ssthresh_metrics_save` = 1), the window (used only when locked by a route), and
//! the RTT variance (stored, but `tcp_init_metrics` no longer reads it). Entries never age out
//! (`TCP_METRICS_TIMEOUT` is an hour).

use std::collections::HashMap;

use super::rack::REORDERING;

/// One cache entry (`struct tcp_metrics_block`'s values used here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpMetrics {
    /// `TCP_METRIC_RTT`: srtt scaled by 8, us (0: none).
    pub rtt_us8: u64,
    /// `TCP_METRIC_REORDERING` (0: none).
    pub reordering: u32,
}

/// A data sender's state when its connection ends, as `tcp_update_metrics` reads it.
#[derive(Clone, Copy, Debug)]
pub struct Ending {
    /// `tp->srtt_us` (scaled by 8, us; 0: no sample).
    pub srtt_us8: u64,
    /// `icsk_backoff` > 0: the RTO was backed off and no RTT sample came since.
    pub backed_off: bool,
    /// `tcp_in_initial_slowstart`: the slow-start threshold was never set.
    pub initial_slow_start: bool,
    /// In congestion avoidance (`!tcp_in_slow_start`) in the Open state.
    pub open_avoidance: bool,
    /// `tp->reordering`.
    pub reordering: u32,
}

/// The cache of one simulation, by (local host, remote host).
#[derive(Default)]
pub struct MetricsCache {
    by_pair: HashMap<(u32, u32), TcpMetrics>,
}

impl MetricsCache {
    /// What `tcp_init_metrics` reads for a connection from `local` to `remote`.
    pub fn get(&self, local: u32, remote: u32) -> Option<TcpMetrics> {
        self.by_pair.get(&(local, remote)).copied()
    }

    /// Every entry, as `ip tcp_metrics show` lists them.
    pub fn pairs(&self) -> impl Iterator<Item = ((u32, u32), TcpMetrics)> + '_ {
        self.by_pair.iter().map(|(k, v)| (*k, *v))
    }

    /// `tcp_update_metrics` for a connection from `local` to `remote` that ended as `e`.
    pub fn update(&mut self, local: u32, remote: u32, e: &Ending) {
        if e.backed_off || e.srtt_us8 == 0 {
            // "This session failed to estimate rtt": only an existing entry is touched.
            if let Some(m) = self.by_pair.get_mut(&(local, remote)) {
                m.rtt_us8 = 0;
            }
            return;
        }
        let m = self.by_pair.entry((local, remote)).or_default();
        m.rtt_us8 = if m.rtt_us8 <= e.srtt_us8 {
            e.srtt_us8
        } else {
            m.rtt_us8 - ((m.rtt_us8 - e.srtt_us8) >> 3)
        };
        if !e.initial_slow_start
            && !e.open_avoidance
            && m.reordering < e.reordering
            && e.reordering != REORDERING
        {
            m.reordering = e.reordering;
        }
    }
}

/// `tcp_init_metrics`'s first RTO from a cached RTT `crtt_us8` above the handshake's srtt, in
/// jiffies: `crtt /= 8 * USEC_PER_SEC / HZ`, then `crtt + max(2 crtt, rto_min)`.
pub fn seeded_rto_jiffies(crtt_us8: u64, hz: u32, rto_min_jiffies: u64) -> u64 {
    let crtt = crtt_us8 / (8 * 1_000_000 / hz.max(1) as u64);
    crtt + (2 * crtt).max(rto_min_jiffies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ending(srtt_ms: u64) -> Ending {
        Ending {
            srtt_us8: srtt_ms * 8000,
            backed_off: false,
            initial_slow_start: true,
            open_avoidance: false,
            reordering: REORDERING,
        }
    }

    #[test]
    fn a_larger_rtt_is_taken_whole_and_a_smaller_one_moves_the_cache_an_eighth() {
        let mut c = MetricsCache::default();
        assert_eq!(c.get(1, 2), None);
        c.update(1, 2, &ending(40));
        assert_eq!(c.get(1, 2).unwrap().rtt_us8, 40 * 8000);
        c.update(1, 2, &ending(80));
        assert_eq!(c.get(1, 2).unwrap().rtt_us8, 80 * 8000);
        c.update(1, 2, &ending(16));
        assert_eq!(c.get(1, 2).unwrap().rtt_us8, 80 * 8000 - 64 * 1000);
        // Per pair, one way.
        assert_eq!(c.get(2, 1), None);
    }

    #[test]
    fn a_backed_off_end_clears_the_rtt_but_creates_no_entry() {
        let mut c = MetricsCache::default();
        c.update(
            1,
            2,
            &Ending {
                backed_off: true,
                ..ending(40)
            },
        );
        assert_eq!(c.get(1, 2), None);
        c.update(1, 2, &ending(40));
        c.update(
            1,
            2,
            &Ending {
                srtt_us8: 0,
                ..ending(40)
            },
        );
        assert_eq!(c.get(1, 2).unwrap().rtt_us8, 0);
    }

    #[test]
    fn the_reordering_degree_is_kept_only_outside_slow_start_and_open_avoidance() {
        let mut c = MetricsCache::default();
        let e = Ending {
            reordering: 9,
            ..ending(40)
        };
        c.update(1, 2, &e);
        assert_eq!(c.get(1, 2).unwrap().reordering, 0, "initial slow start");
        c.update(
            1,
            2,
            &Ending {
                initial_slow_start: false,
                open_avoidance: true,
                ..e
            },
        );
        assert_eq!(c.get(1, 2).unwrap().reordering, 0, "avoidance in Open");
        c.update(
            1,
            2,
            &Ending {
                initial_slow_start: false,
                ..e
            },
        );
        assert_eq!(c.get(1, 2).unwrap().reordering, 9);
        c.update(
            1,
            2,
            &Ending {
                initial_slow_start: false,
                reordering: 5,
                ..e
            },
        );
        assert_eq!(c.get(1, 2).unwrap().reordering, 9, "only raised");
    }

    #[test]
    fn the_seeded_rto_is_three_cached_rtts_or_one_plus_rto_min() {
        // HZ 250: 4 ms jiffies, rto_min 200 ms = 50 jiffies.
        assert_eq!(seeded_rto_jiffies(40 * 8000, 250, 50), 10 + 50);
        assert_eq!(seeded_rto_jiffies(400 * 8000, 250, 50), 100 + 200);
        // The division truncates: 39 ms is 9 jiffies.
        assert_eq!(seeded_rto_jiffies(39 * 8000, 250, 50), 9 + 50);
    }
}
