//! Proportional Rate Reduction (RFC 6937) as Linux `tcp_cwnd_reduction` (tcp_input.c since 5.11,
//! so the study's 5.15, with 7e901ee7b6ab's slow-start reduction bound that stops on new losses):
//! during CWR/Recovery cwnd = in_flight + sndcnt.

use crate::cc::Sock;

/// PRR state of one reduction episode (`prr_delivered`, `prr_out`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Prr {
    pub delivered: u32,
    pub out: u32,
}

impl Prr {
    /// `tcp_cwnd_reduction(sk, newly_acked_sacked, newly_lost, flag)`.
    pub fn reduce(
        &mut self,
        sk: &mut Sock,
        newly_acked_sacked: u32,
        newly_lost: u32,
        una_advanced: bool,
    ) {
        if newly_acked_sacked == 0 || sk.prior_cwnd == 0 {
            return;
        }
        let in_flight = sk.packets_in_flight() as i64;
        let delta = sk.snd_ssthresh as i64 - in_flight;
        self.delivered += newly_acked_sacked;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend =
                sk.snd_ssthresh as u64 * self.delivered as u64 + sk.prior_cwnd as u64 - 1;
            (dividend / sk.prior_cwnd as u64) as i64 - self.out as i64
        } else {
            // Slow-start reduction bound: conservation, +1 on progress without new loss.
            let mut s = (self.delivered as i64 - self.out as i64).max(newly_acked_sacked as i64);
            if una_advanced && newly_lost == 0 {
                s += 1;
            }
            delta.min(s)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        sk.snd_cwnd = (in_flight + sndcnt).max(1) as u32;
    }
}
