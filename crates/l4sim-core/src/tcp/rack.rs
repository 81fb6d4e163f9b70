//! RACK-TLP loss detection state (RFC 8985; Linux tcp_recovery.c): the most recently delivered
//! segment's send time and the reordering window.

use crate::cc::CaState;
use crate::time::SimTime;

/// Linux default `tp->reordering` (TCP_FASTRETRANS_THRESH / sysctl_tcp_reordering).
pub const REORDERING: u32 = 3;

#[derive(Clone, Copy, Debug, Default)]
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
    /// `tcp_rack_reo_wnd`: min_rtt/4 (capped by srtt); 0 in recovery or once `sacked_out`
    /// reaches the DUPACK threshold, when no reordering has been seen.
    pub fn reo_wnd(&self, state: CaState, sacked_out: u32, min_rtt: u64, srtt: u64) -> u64 {
        if self.reord_seen == 0 && (state >= CaState::Recovery || sacked_out >= REORDERING) {
            return 0;
        }
        if min_rtt == u64::MAX {
            return 0;
        }
        (min_rtt / 4).min(srtt)
    }
}
