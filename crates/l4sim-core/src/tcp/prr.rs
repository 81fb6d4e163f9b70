//! Proportional Rate Reduction (RFC 6937) as Linux 5.15's `tcp_cwnd_reduction` (tcp_input.c from
//! 5.11, with 7e901ee7b6ab's slow-start reduction bound that stops on new losses, and before
//! 5.19's "tcp: improve PRR loss recovery", which 5.15.y never took): during CWR/Recovery
//! cwnd = in_flight + sndcnt.

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
        } else if una_advanced && newly_lost == 0 {
            // Slow-start reduction bound: what the reduction held back, and one more.
            let s = (self.delivered as i64 - self.out as i64).max(newly_acked_sacked as i64);
            delta.min(s + 1)
        } else {
            // Packet conservation: as much as this ACK delivered.
            delta.min(newly_acked_sacked as i64)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        sk.snd_cwnd = (in_flight + sndcnt).max(1) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reduction from cwnd 100 to ssthresh 70 that has delivered 40 and sent 28, with 60
    /// in flight (below ssthresh) when `newly` more are delivered: the window it leaves.
    fn after_ack(newly: u32, newly_lost: u32, una_advanced: bool) -> u32 {
        let mut sk = Sock::new(1448);
        sk.prior_cwnd = 100;
        sk.snd_ssthresh = 70;
        sk.packets_out = 60;
        let mut prr = Prr {
            delivered: 40,
            out: 28,
        };
        prr.reduce(&mut sk, newly, newly_lost, una_advanced);
        sk.snd_cwnd
    }

    #[test]
    fn below_ssthresh_only_progress_without_new_loss_sends_what_the_reduction_held_back() {
        // 5.15: a cumulative ACK without new losses may send the 13 held back plus one (up to
        // ssthresh); a SACK-only ACK, or one that marked losses, only what it delivered
        // (5.19's "tcp: improve PRR loss recovery" would send the 13 there too).
        assert_eq!(after_ack(1, 0, true), 70);
        assert_eq!(after_ack(1, 0, false), 61);
        assert_eq!(after_ack(2, 1, true), 62);
    }
}
