//! RACK-TLP loss detection state (RFC 8985; Linux tcp_recovery.c): the most recently delivered
//! segment's send time and the reordering window.

use crate::cc::CaState;
use crate::time::SimTime;

/// Linux default `tp->reordering` (TCP_FASTRETRANS_THRESH / sysctl_tcp_reordering).
pub const REORDERING: u32 = 3;

/// `TCP_RACK_RECOVERY_THRESH`: recoveries a widened reordering window outlives.
pub const RECOVERY_THRESH: u32 = 16;

#[derive(Clone, Copy, Debug)]
pub struct Rack {
    /// Send time and end sequence of the most recently sent segment that was (S)ACKed.
    pub mstamp: SimTime,
    pub end_seq: u32,
    /// RTT of that segment, ns.
    pub rtt: u64,
    /// Set when `mstamp` advanced since the last loss scan.
    pub advanced: bool,
    /// Reordering events seen (`tp->reord_seen`).
    pub reord_seen: u32,
    /// The reordering window in quarters of min_rtt (`reo_wnd_steps`, 1..255), widened by
    /// DSACKs (RFC 8985 section 6.2 step 4).
    pub reo_wnd_steps: u32,
    /// Recoveries left before the window falls back to one step (`reo_wnd_persist`).
    pub reo_wnd_persist: u32,
    /// A DSACK that may come from reordering arrived (`dsack_seen`).
    pub dsack_seen: bool,
    /// `tp->delivered` when the window last widened (`last_delivered`).
    pub last_delivered: u64,
}

impl Default for Rack {
    fn default() -> Rack {
        Rack {
            mstamp: 0,
            end_seq: 0,
            rtt: 0,
            advanced: false,
            reord_seen: 0,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
        }
    }
}

/// `tcp_skb_sent_after` / `tcp_rack_sent_after`: t1 (seq1) sent after t2 (seq2).
pub fn sent_after(t1: SimTime, t2: SimTime, seq1: u32, seq2: u32) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// `tcp_rack_advance`: a segment sent at `xmit` with end `end_seq` was newly (S)ACKed.
    /// A retransmitted segment ACKed sooner than min_rtt probably was the original: ignored.
    pub fn advance(
        &mut self,
        ever_retrans: bool,
        end_seq: u32,
        xmit: SimTime,
        now: SimTime,
        min_rtt: u64,
    ) {
        let rtt = now.saturating_sub(xmit);
        if ever_retrans && rtt < min_rtt {
            return;
        }
        self.rtt = rtt;
        if sent_after(xmit, self.mstamp, end_seq, self.end_seq) {
            self.mstamp = xmit;
            self.end_seq = end_seq;
        }
        self.advanced = true;
    }
    /// `tcp_rack_reo_wnd`: min_rtt/4 per step (capped by srtt); 0 in recovery or once
    /// `sacked_out` reaches the DUPACK threshold, when no reordering has been seen.
    pub fn reo_wnd(&self, state: CaState, sacked_out: u32, min_rtt: u64, srtt: u64) -> u64 {
        if self.reord_seen == 0 && (state >= CaState::Recovery || sacked_out >= REORDERING) {
            return 0;
        }
        if min_rtt == u64::MAX {
            return 0;
        }
        (min_rtt / 4 * self.reo_wnd_steps as u64).min(srtt)
    }
    /// `tcp_rack_update_reo_wnd`, once per ACK that delivered something (`prior_delivered`
    /// is its rate sample's): a DSACK widens the window by a step, at most once per round
    /// trip, for [`RECOVERY_THRESH`] recoveries; without one it falls back to a step.
    pub fn update_reo_wnd(&mut self, prior_delivered: u64, delivered: u64) {
        if prior_delivered == 0 {
            return;
        }
        if prior_delivered < self.last_delivered {
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xFF);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsacks_widen_the_window_once_per_round_trip_and_it_falls_back_after_recoveries() {
        let mut r = Rack {
            reord_seen: 1,
            ..Rack::default()
        };
        let (min_rtt, srtt) = (40_000_000, 100_000_000);
        assert_eq!(r.reo_wnd(CaState::Open, 0, min_rtt, srtt), 10_000_000);
        r.dsack_seen = true;
        r.update_reo_wnd(100, 200);
        assert_eq!(r.reo_wnd_steps, 2);
        assert_eq!(r.reo_wnd(CaState::Open, 0, min_rtt, srtt), 20_000_000);
        // Another DSACK within the same round trip (an ACK of data sent before delivered
        // reached 200) does not widen it again.
        r.dsack_seen = true;
        r.update_reo_wnd(150, 260);
        assert_eq!(r.reo_wnd_steps, 2);
        r.dsack_seen = true;
        r.update_reo_wnd(200, 300);
        assert_eq!(r.reo_wnd_steps, 3);
        // Capped by srtt.
        r.reo_wnd_steps = 20;
        assert_eq!(r.reo_wnd(CaState::Open, 0, min_rtt, srtt), srtt);
        // Persisting while recoveries remain; then back to one step.
        r.update_reo_wnd(400, 500);
        assert_eq!(r.reo_wnd_steps, 20);
        r.reo_wnd_persist = 0;
        r.update_reo_wnd(500, 600);
        assert_eq!(r.reo_wnd_steps, 1);
    }
}
